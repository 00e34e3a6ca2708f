"""Chat models: any LangChain model named ``provider:model`` through ``init_chat_model``.

OpenAI-compatible servers are reached through ``OPENAI_BASE_URL``. With no model
configured, :func:`resolve_model` returns None and the graph runs its no-LLM path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from functools import lru_cache
from typing import Any, TypeVar

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from convrag.config import Settings

T = TypeVar("T")


def resolve_model(requested: str | None, settings: Settings) -> str | None:
    """The model to use: the run's choice, else the environment's; 'none' disables LLMs."""
    if requested is not None:
        return None if requested.strip().lower() in ("", "none") else requested
    return settings.effective_llm_model


@lru_cache(maxsize=32)
def _chat_model(
    model: str, temperature: float, timeout: float, base_url: str | None, api_key: str | None
) -> BaseChatModel:
    kwargs: dict[str, Any] = {"temperature": temperature, "timeout": timeout, "max_retries": 0}
    if model.startswith("openai:") or ":" not in model:
        if base_url:
            kwargs["base_url"] = base_url
        if api_key:
            kwargs["api_key"] = api_key
        kwargs["stream_usage"] = True
    chat: BaseChatModel = init_chat_model(model, **kwargs)
    return chat


def chat_model(
    model: str, settings: Settings, *, temperature: float, timeout: float
) -> BaseChatModel:
    """A cached chat model client. Retries are off: callers fall back instead of waiting."""
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return _chat_model(model, temperature, timeout, settings.openai_base_url, key)


def failure_text(exc: BaseException) -> str:
    """A failure as recorded in ``errors`` and flags: ``timeout`` or ``error: Type: message``."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    return f"error: {type(exc).__name__}: {exc}"[:300]


async def attempt(call: Awaitable[T], timeout: float) -> tuple[T, None] | tuple[None, str]:
    """Await an LLM call within ``timeout``: ``(result, None)`` or ``(None, why it failed)``.

    Callers keep a fallback (the original question, the extractive answer) instead of
    failing the turn, so any provider error counts as a failure here.
    """
    try:
        async with asyncio.timeout(timeout):
            return await call, None
    except Exception as exc:
        return None, failure_text(exc)
