"""An LLM that rewrites as MTRAG's reference does: the service's LLM path, measured here.

No LLM runs on the machines this project is measured on, so nothing measured the graph's
LLM path: the LLM's rewrite and its checks, the plan of queries an LLM-rewritten follow-up
searches, their fusion. This stand-in is an OpenAI-compatible stub whose reply to the
rewrite prompt is MTRAG's own ``rewrite_llm`` for the turn it asks about (written by
Mixtral), found by the latest question and the history's last question in the prompt; a
turn whose reference is the question as asked is "standalone". It measures an LLM as good
as Mixtral at MTRAG's rewrites, no better: a real model's rewrites, and the mistakes the
checks refuse, are not measured.

``convrag eval mtrag`` runs it as the strategy ``convrag_llm_reference``;
``benchmarks/reference_rewriter.py`` serves it for other commands (``eval answers --llm``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from pydantic import SecretStr

from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub, Reply, last_message_text

REFERENCE_MODEL = "openai:reference-rewriter"
"""The model name the stand-in answers to (any name would do: it answers every request)."""

_LATEST = re.compile(r"^Latest user question: (.*)$", re.MULTILINE)
_USER = re.compile(r"^User: (.*)$", re.MULTILINE)

Key = tuple[str, str]
"""A turn: its question and the previous user question, whitespace folded."""


class ReferenceTurn(Protocol):
    """What the stand-in needs of a turn (an MTRAG turn has it)."""

    @property
    def question(self) -> str: ...
    @property
    def rewrite_llm(self) -> str | None: ...
    @property
    def history(self) -> list[dict[str, str]]: ...


def _folded(text: str) -> str:
    return " ".join(text.split())


def turn_key(question: str, previous: str) -> Key:
    """The key of a turn asked after ``previous``."""
    return _folded(question), _folded(previous)


def reference_rewrites(turns: Iterable[ReferenceTurn]) -> dict[Key, str]:
    """Each later turn's reference rewrite (the question itself where it has none)."""
    out: dict[Key, str] = {}
    for turn in turns:
        users = [h["text"] for h in turn.history if h["speaker"] == "user"]
        if users:
            out[turn_key(turn.question, users[-1])] = turn.rewrite_llm or turn.question
    return out


def is_rewrite_request(body: dict[str, Any]) -> bool:
    """Whether a chat request is the rewrite prompt (``prompts.REWRITE_PROMPT``)."""
    text = last_message_text(body)
    return '"classification"' in text and "Latest user question:" in text


def rewrite_reply(rewrites: dict[Key, str]) -> Callable[[dict[str, Any]], str]:
    """The reply to a rewrite request: the turn's reference rewrite as the prompt's JSON
    verdict, "standalone" when it is the question as asked."""

    def reply(body: dict[str, Any]) -> str:
        text = last_message_text(body)
        latest = _LATEST.search(text)
        users = _USER.findall(text)
        question = latest.group(1).strip() if latest else ""
        query = rewrites.get(turn_key(question, users[-1] if users else ""), question)
        same = _folded(query).lower() == _folded(question).lower()
        return json.dumps({"classification": "standalone" if same else "follow_up", "query": query})

    return reply


def reference_stub(turns: Iterable[ReferenceTurn], **stub_args: Any) -> OpenAIStub:
    """The stand-in, not yet started."""
    stub = OpenAIStub(model=REFERENCE_MODEL.removeprefix("openai:"), **stub_args)
    stub.add_rule(is_rewrite_request, Reply(content=rewrite_reply(reference_rewrites(turns))))
    return stub


@contextmanager
def reference_llm(services: Services, turns: Iterable[ReferenceTurn]) -> Iterator[str]:
    """Serve the stand-in for ``turns`` in a thread, and point ``services``' OpenAI
    settings at it for the block; yields the model name to run the graph with."""
    saved = services.settings
    with reference_stub(turns) as stub:
        services.settings = saved.model_copy(
            update={"openai_base_url": f"{stub.root_url}/v1", "openai_api_key": SecretStr("stub")}
        )
        try:
            yield REFERENCE_MODEL
        finally:
            services.settings = saved
