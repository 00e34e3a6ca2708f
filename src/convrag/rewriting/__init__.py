"""Deterministic, LLM-free query rewriting for conversational retrieval.

Used when no LLM is configured (and by the CANARD evaluation): :func:`classify` decides
whether a message needs no retrieval, depends on the conversation or stands alone, and
:func:`contextualize` rewrites a follow-up into a standalone query. With an LLM, the rewrite
node still uses the rules to skip chit-chat without a call, and falls back to them (their
classification and rewrite) when the LLM fails or its reply is unusable. Both take the earlier
exchanges as :class:`Turn` objects, oldest first.

* :mod:`~convrag.rewriting.history`: ``Turn`` and the salience model of who and what the
  conversation is about, built from the names :mod:`~convrag.rewriting.mentions` reads;
  :mod:`~convrag.rewriting.anaphora` finds the pronouns that point outside a message.
* :mod:`~convrag.rewriting.classify`: the ``no_retrieval`` / ``follow_up`` / ``standalone``
  decision.
* :mod:`~convrag.rewriting.resolve`: pronoun and ellipsis resolution (``contextualize`` and
  its rule tables), in steps: :mod:`~convrag.rewriting.referents` (what the history offers:
  :mod:`~convrag.rewriting.people` for "he/she/they", :mod:`~convrag.rewriting.topic` for
  "it/that/there"), :mod:`~convrag.rewriting.pronouns` (resolution by kind) and
  :mod:`~convrag.rewriting.fragments` (the fragment rules).
* :mod:`~convrag.rewriting.gate`: the checks a rewrite passes before retrieval uses it.

Entity extraction, which synthesis and the repetition check also need, lives in
:mod:`convrag.text.entities`.
"""

from convrag.rewriting.classify import Classification, classify
from convrag.rewriting.history import Turn
from convrag.rewriting.resolve import contextualize

__all__ = ["Classification", "Turn", "classify", "contextualize"]
