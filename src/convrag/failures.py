"""How a failure is told: to clients (a short text that quotes nothing of the provider's)
and to the server log (the provider's own message, one line)."""

from __future__ import annotations


def http_status(exc: BaseException) -> int | None:
    """The HTTP status of a provider's error (openai, httpx, aiohttp), if it has one."""
    for attr in ("status_code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    return value if isinstance(value, int) else None


def failure_text(exc: BaseException) -> str:
    """A failure as recorded in ``errors`` and flags, which clients see: ``timeout``, or
    ``error: Type`` with the HTTP status when there is one (``error: APIStatusError (HTTP
    500)``). Not the provider's message: it can quote the request, a key's prefix or an
    internal host; :func:`failure_detail` has it for the server log."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    status = http_status(exc)
    return f"error: {type(exc).__name__}" + (f" (HTTP {status})" if status else "")


def failure_detail(exc: BaseException) -> str:
    """A failure with the provider's own message, one line, for the server log."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    message = " ".join(str(exc).split())[:500]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
