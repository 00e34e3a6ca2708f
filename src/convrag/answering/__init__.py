"""How answers are written, shared by the ``synthesize`` and ``regenerate`` nodes.

Two ways to answer, one contract (a text with inline ``[n]`` markers over ``sources``):

* :mod:`~convrag.answering.llm`: a conversation-aware prompt, streamed token by token;
* :mod:`~convrag.retrieval.quoting`: no LLM; the most relevant sentences of the
  sources, each with its marker. It is also the fallback when the LLM fails mid-turn.

Beside them: :mod:`~convrag.answering.replies` (the fixed replies: "not found", chit-chat,
reformatting), :mod:`~convrag.retrieval.ranking` (sentences ranked by the question's words)
and :mod:`~convrag.retrieval.evidence` (whether the sources say what was asked, the
"not found" decision's input).
"""
