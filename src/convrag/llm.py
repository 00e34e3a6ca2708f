"""Chat models: any LangChain model named ``provider:model`` through ``init_chat_model``.

OpenAI-compatible servers are reached through ``OPENAI_BASE_URL``; a local one (vLLM,
Ollama) needs no ``OPENAI_API_KEY``. With no model configured, :func:`resolve_model`
returns None and the graph runs its no-LLM path. A model that cannot be built is refused
when the process starts (:func:`check_llm_model`); one a run names that cannot be built
fails like any other LLM call, and the turn falls back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from functools import lru_cache
from typing import Any, TypeVar

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel

from convrag.config import Settings
from convrag.failures import failure_detail, failure_text

log = logging.getLogger(__name__)

T = TypeVar("T")

PLACEHOLDER_API_KEY = "unused"
"""The key sent to an ``OPENAI_BASE_URL`` server when no ``OPENAI_API_KEY`` is set: the
client refuses to start without one, and a local server ignores it."""


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
        if api_key or base_url:
            kwargs["api_key"] = api_key or PLACEHOLDER_API_KEY
        kwargs["stream_usage"] = True
    chat: BaseChatModel = init_chat_model(model, **kwargs)
    return chat


def chat_model(
    model: str, settings: Settings, *, temperature: float, timeout: float
) -> BaseChatModel:
    """A cached chat model client. Retries are off: callers fall back instead of waiting."""
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    return _chat_model(model, temperature, timeout, settings.openai_base_url, key)


def check_llm_model(settings: Settings) -> None:
    """Raise ``ValueError`` in one line naming the fix unless the configured chat model
    (``LLM_MODEL``, or the default an ``OPENAI_API_KEY`` implies) can be built: its
    provider is known and installed and it has what it needs to start. Nothing is sent
    to the provider. Without this, every turn would fail (or fall back) on it."""
    model = settings.effective_llm_model
    if model is None:
        return
    try:
        chat_model(model, settings, temperature=0.0, timeout=1.0)
    except Exception as exc:
        why = " ".join(str(exc).split("\n\n", 1)[0].split())[:300].rstrip(".")
        fix = (
            "set LLM_MODEL to 'provider:model' of an installed provider (e.g. "
            "'openai:gpt-4o-mini'), or unset it for the no-LLM path"
        )
        if "infer model provider" in why:  # init_chat_model's words for an unknown one
            provider = model.split(":", 1)[0] if ":" in model else None
            why = f"unknown provider {provider!r}" if provider else "it names no provider"
        elif model.startswith("openai:") or ":" not in model:
            why = "no OPENAI_API_KEY" if "credentials" in why or "api_key" in why else why
            fix = "set OPENAI_API_KEY, or OPENAI_BASE_URL for a local OpenAI-compatible server"
        why = why or type(exc).__name__
        raise ValueError(f"LLM_MODEL {model!r} cannot be used: {why}; {fix}") from None


async def attempt(
    call: Awaitable[T], timeout: float, *, what: str = "LLM call"
) -> tuple[T, None] | tuple[None, str]:
    """Await an LLM call within ``timeout``: ``(result, None)`` or ``(None, why it failed)``.

    Callers keep a fallback (the rules' rewrite, the extractive answer) instead of
    failing the turn, so any provider error counts as a failure here, building the model
    included (``call`` should build it inside); each is logged once, in full.
    """
    try:
        async with asyncio.timeout(timeout):
            return await call, None
    except Exception as exc:
        log.warning("%s failed, falling back: %s", what, failure_detail(exc))
        return None, failure_text(exc)
