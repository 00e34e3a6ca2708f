"""Indirect prompt injection: injected documents reach the LLM fenced and inert, and an
answer that leaks the system prompt's canary is replaced."""

from __future__ import annotations

from convrag.evaluation.injection import INJECTIONS, escapes


def test_the_audit_catches_an_unfenced_prompt() -> None:
    for case in INJECTIONS:
        raw = f"RETRIEVED INFORMATION:\n[1] notes.md\n{case.text}"
        assert escapes(raw, case), case.name
