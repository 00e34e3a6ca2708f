"""What the OpenAI stub sends: chat completions whole or as their stream of chunks,
OpenAI-format errors, and the embeddings' deterministic vectors.

Apart from :mod:`convrag.testing.openai_stub` (the server that sends them), which
re-exports the public names here. The shapes follow OpenAI's API closely enough for
``langchain_openai`` and the ``openai`` SDK to parse them as they would the real ones.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from convrag.testing.openai_rules import JSONDict, message_text

__all__ = [
    "Completion",
    "count_tokens",
    "error_body",
    "hashed_embedding",
    "prompt_tokens",
    "split_tokens",
]

_PIECE_RE = re.compile(r"\s*\S+|\s+$")
_WORD_RE = re.compile(r"\w+")


def split_tokens(content: str) -> list[str]:
    """Split text into word-ish pieces (leading whitespace kept) that join back exactly."""
    return _PIECE_RE.findall(content)


def count_tokens(text: str) -> int:
    """The words of ``text``, as the stub counts tokens."""
    return len(_WORD_RE.findall(text))


_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_body(status: int, message: str | None = None) -> JSONDict:
    """An OpenAI-format error body for ``status``."""
    err_type, code = _ERROR_TYPES.get(status, ("server_error", None))
    return {
        "error": {
            "message": message or f"Stub error (HTTP {status}).",
            "type": err_type,
            "param": None,
            "code": code,
        }
    }


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Deterministic unit vector for ``text``: signed feature hashing of its words.

    Texts sharing words get a positive cosine similarity, so retrieval over these
    vectors behaves sensibly in tests; text without words falls back to a hash of the
    whole string.
    """
    vec = [0.0] * dim
    words = _WORD_RE.findall(text.lower()) or [text]
    for word in words:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        vec[h % dim] += 1.0 if (h >> 63) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:  # e.g. two opposite-signed collisions
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


@dataclass(frozen=True)
class Completion:
    """One chat completion's reply: its text (and tool calls), as the whole
    ``chat.completion`` object (:meth:`whole`) or as the SSE stream of
    ``chat.completion.chunk`` events (:meth:`stream`)."""

    id: str
    model: str
    created: int
    content: str
    tool_calls: list[JSONDict]
    """OpenAI ``tool_calls``, each with its id and its arguments as a JSON string."""
    finish_reason: str
    prompt_tokens: int

    @cached_property
    def pieces(self) -> list[str]:
        """The content as the tokens it streams in (:func:`split_tokens`)."""
        return split_tokens(self.content)

    @property
    def usage(self) -> JSONDict:
        """Token counts: the prompt's words, and a token per piece of content and per
        word of a tool call's arguments (plus one per call)."""
        completion_tokens = len(self.pieces) + sum(
            count_tokens(tc["function"]["arguments"]) + 1 for tc in self.tool_calls
        )
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
        }

    def whole(self) -> JSONDict:
        """The ``chat.completion`` object of a request without ``stream``."""
        message: JSONDict = {
            "role": "assistant",
            "content": self.content if (self.content or not self.tool_calls) else None,
            "refusal": None,
            "annotations": [],
        }
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
            "usage": self.usage,
            "system_fingerprint": "stub",
        }

    def stream(
        self, *, include_usage: bool, first_token_delay_s: float, token_delay_s: float
    ) -> Iterator[bytes | float]:
        """The SSE stream: each event's bytes, with the seconds to pause between them
        (a float, 0 for none) where the reply asks for them: before the first content
        chunk, and between content chunks. The role chunk comes first, then the content
        token by token, each tool call (its arguments in two fragments, so that clients
        must join them), the finish, the usage (``include_usage``) and ``[DONE]``."""
        head = (
            f'{{"id":"{self.id}","object":"chat.completion.chunk",'
            f'"created":{self.created},"model":{json.dumps(self.model)},"system_fingerprint":"stub",'
        )
        tail = ',"usage":null}' if include_usage else "}"

        def event(delta: JSONDict, finish_reason: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            choices = json.dumps([choice], separators=(",", ":"))
            return f'data: {head}"choices":{choices}{tail}\n\n'.encode()

        yield event({"role": "assistant", "content": "", "refusal": None})
        yield first_token_delay_s
        for i, piece in enumerate(self.pieces):
            if i:
                yield token_delay_s
            yield event({"content": piece})
        for delta in self._tool_call_deltas():
            yield event(delta)
        yield event({}, self.finish_reason)
        if include_usage:
            usage = json.dumps(self.usage, separators=(",", ":"))
            yield f'data: {head}"choices":[],"usage":{usage}}}\n\n'.encode()
        yield b"data: [DONE]\n\n"

    def _tool_call_deltas(self) -> Iterator[JSONDict]:
        """Each tool call's stream deltas: its id and name, then its arguments in two
        fragments (an empty one left out)."""
        for index, tc in enumerate(self.tool_calls):
            args = tc["function"]["arguments"]
            cut = len(args) // 2  # two fragments: exercises client-side concatenation
            yield {
                "tool_calls": [
                    {
                        "index": index,
                        "id": tc["id"],
                        "type": "function",
                        "function": {"name": tc["function"]["name"], "arguments": ""},
                    }
                ]
            }
            for fragment in (args[:cut], args[cut:]):
                if fragment:
                    yield {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}


def prompt_tokens(messages: Sequence[Any]) -> int:
    """The words of a request's messages (those that are objects), as its prompt's tokens."""
    return sum(count_tokens(message_text(m)) for m in messages if isinstance(m, dict))
