"""Query rewriting for conversational retrieval: classify a message, make it standalone.

The strategies share one interface, :class:`~convrag.rewriting.rewriter.QueryRewriter`,
and one result, :class:`~convrag.rewriting.rewriter.Rewrite`:

* :mod:`~convrag.rewriting.rules`: the deterministic, LLM-free rules (used when no LLM is
  configured, by the CANARD evaluation, and as the LLM's fallback).
* :mod:`~convrag.rewriting.llm`: one JSON call to the LLM, and the reply's contract (how it
  is parsed, and the checks that reject it).
* :mod:`~convrag.rewriting.fallback`: the LLM with the rules behind it; chit-chat and first
  turns never cost a call.

The rules, bottom up (each earlier exchange a :class:`~convrag.rewriting.history.Turn`,
oldest first):

* :mod:`~convrag.rewriting.anaphora` finds the pronouns that point outside a message;
  :mod:`~convrag.rewriting.mentions` reads the names of a text;
  :mod:`~convrag.rewriting.history` holds ``Turn``, the salience model of who and what the
  conversation is about, and the ``Referents`` record a follow-up is resolved against.
* :mod:`~convrag.rewriting.classify`: the ``no_retrieval`` / ``follow_up`` / ``standalone``
  decision.
* :mod:`~convrag.rewriting.resolve`: pronoun and ellipsis resolution (``contextualize`` and
  its rule tables), in steps: :mod:`~convrag.rewriting.referents` (what the history offers:
  :mod:`~convrag.rewriting.people` for "he/she/they", :mod:`~convrag.rewriting.topic` for
  "it/that/there"), :mod:`~convrag.rewriting.pronouns` (resolution by kind) and
  :mod:`~convrag.rewriting.fragments` (the fragment rules).
* :mod:`~convrag.rewriting.gate`: the checks a rewrite passes before retrieval uses it.

Callers import each name from the module that defines it; this package exports nothing.
Entity extraction, which synthesis and the repetition check also need, lives in
:mod:`convrag.text.entities`.
"""
