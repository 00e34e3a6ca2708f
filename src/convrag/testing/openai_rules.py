"""The OpenAI stub's scripting: the replies it is told to give and the rules that pick
one for a request (by the text of its last message), from code or from a JSON script.

Apart from :mod:`convrag.testing.openai_stub` (the server that applies them), which
re-exports every name here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_ANSWER",
    "JSONDict",
    "Matcher",
    "Reply",
    "Rule",
    "last_message_text",
    "message_text",
    "rules_from_script",
]

DEFAULT_ANSWER = "According to the provided sources, this is the stub answer [1]."
"""Content of the default reply: short, deterministic, and it cites ``[1]``."""

JSONDict = dict[str, Any]
Matcher = str | re.Pattern[str] | Callable[[JSONDict], bool] | None
"""How a rule selects requests.

* ``str``: case-sensitive *substring* of the last message's text;
* ``re.Pattern``: ``pattern.search(last_message_text)``;
* callable: receives the whole request JSON body, returns ``True`` to match;
* ``None``: matches every request (handy with ``times=`` for "fail once").
"""


@dataclass
class Reply:
    """What the stub answers to a chat-completion request.

    Attributes:
        content: Assistant text, or a callable ``(request_json) -> str`` for replies
            that depend on the request. ``None`` (default) means
            :data:`DEFAULT_ANSWER`, or ``""`` when ``tool_calls`` are given.
        tool_calls: ``[{"name": str, "arguments": dict | str, "id"?: str}]``; returned
            as OpenAI ``tool_calls`` (ids generated unless given) with
            ``finish_reason="tool_calls"``. A ``str`` ``arguments`` is sent verbatim
            (e.g. to test invalid JSON).
        status: HTTP status; anything but 200 returns an OpenAI-format error body.
        error_message: ``error.message`` for ``status != 200``.
        delay_s: Sleep before answering at all (no headers): for client timeouts.
        empty: Force ``content == ""`` (``content`` is ignored).
        first_token_delay_s: Streaming only: sleep after the headers/role chunk and
            before the first content chunk (simulates time-to-first-token).
        token_delay_s: Streaming only: sleep between content chunks.
        times: Use the rule at most this many times, then it falls through to the
            next rule (``None`` = unlimited). Ignored for the default reply.
        finish_reason: Override the ``finish_reason`` (default ``"stop"`` or
            ``"tool_calls"``), e.g. ``"length"``.
    """

    content: str | Callable[[JSONDict], str] | None = None
    tool_calls: list[JSONDict] | None = None
    status: int = 200
    error_message: str | None = None
    delay_s: float = 0.0
    empty: bool = False
    first_token_delay_s: float = 0.0
    token_delay_s: float = 0.0
    times: int | None = None
    finish_reason: str | None = None

    def render_content(self, body: JSONDict) -> str:
        """The assistant text for ``body`` (handles ``empty`` and callables)."""
        if self.empty:
            return ""
        if self.content is None:
            return "" if self.tool_calls else DEFAULT_ANSWER
        if callable(self.content):
            return self.content(body)
        return self.content


@dataclass
class Rule:
    """A matcher, its reply, and bookkeeping (``hits``, ``remaining`` uses)."""

    match: Matcher
    reply: Reply
    remaining: int | None = None
    hits: int = 0

    def matches(self, text: str, body: JSONDict) -> bool:
        """Whether this rule applies to a request with last-message ``text``."""
        m = self.match
        if m is None:
            return True
        if isinstance(m, str):
            return m in text
        if isinstance(m, re.Pattern):
            return m.search(text) is not None
        return bool(m(body))


def message_text(message: JSONDict) -> str:
    """Plain text of an OpenAI message (``content`` may be a string or a parts list)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return ""


def last_message_text(body: JSONDict) -> str:
    """Text of the last message of a chat-completion request (``""`` if none)."""
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        return message_text(messages[-1])
    return ""


def rules_from_script(items: Sequence[JSONDict]) -> list[tuple[Matcher, Reply]]:
    """Parse ``--script`` entries into ``(matcher, reply)`` pairs.

    Each entry: ``{"match_regex"?: str, "content"?: str, "tool_calls"?: [...],
    "status"?: int, "error_message"?: str, "delay_s"?: float, "empty"?: bool,
    "first_token_delay_s"?: float, "token_delay_s"?: float, "times"?: int}``;
    a missing ``match_regex`` matches everything.
    """
    allowed = {
        "content",
        "tool_calls",
        "status",
        "error_message",
        "delay_s",
        "empty",
        "first_token_delay_s",
        "token_delay_s",
        "times",
        "finish_reason",
    }
    out: list[tuple[Matcher, Reply]] = []
    for item in items:
        unknown = set(item) - allowed - {"match_regex"}
        if unknown:
            raise ValueError(f"unknown keys in script rule: {sorted(unknown)}")
        regex = item.get("match_regex")
        matcher: Matcher = re.compile(regex) if regex is not None else None
        out.append((matcher, Reply(**{k: v for k, v in item.items() if k in allowed})))
    return out
