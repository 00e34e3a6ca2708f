"""Language helpers shared by rewriting, synthesis and the repetition check.

Word lists (:mod:`~convrag.text.lexicon`), a tokeniser and small string helpers
(:mod:`~convrag.text.tokens`) and entity extraction (:mod:`~convrag.text.entities`): regex and
word-list English heuristics, cached and fast enough to run on every turn. Nothing here knows
about conversations or documents; :mod:`convrag.rewriting` and :mod:`convrag.documents` build
on it, never the other way round.
"""
