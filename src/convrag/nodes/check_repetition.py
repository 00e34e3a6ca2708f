"""check_repetition: does the current draft repeat what the last answers said?

The overlap is the share of the draft's entities already named by the last 3 answers.
Entities the user's own question names are left out: asking again about Prasad must not
count as the answer repeating Prasad.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from langgraph.runtime import Runtime

from convrag.answering.replies import CHIT_CHAT_ANSWERS
from convrag.citations import has_marker
from convrag.context import Context
from convrag.state import Repetition, RepetitionUpdate, State
from convrag.text.entities import extract_entities


def detect_repetition(
    entities: Iterable[str],
    previous: Sequence[Iterable[str]],
    *,
    threshold: float,
    asked: Iterable[str] = (),
) -> Repetition:
    """The share of ``entities`` that the last 3 answers named, against ``threshold``."""
    asked_keys = {a.lower() for a in asked}
    # Names (people, companies, products) repeat; figures like "$80,000" are facts, not
    # examples, and may be restated.
    current = {
        e.lower(): e
        for e in entities
        if e.lower() not in asked_keys and not e[:1].isdigit() and e[:1] not in "$€£¥"
    }
    seen = {e.lower() for answer in previous[-3:] for e in answer}
    if not current:
        return Repetition(is_repetitive=False, repeated_entities=[], overlap_ratio=0.0)
    repeated = [v for k, v in current.items() if k in seen]
    ratio = len(repeated) / len(current)
    return Repetition(
        is_repetitive=ratio > threshold, repeated_entities=repeated, overlap_ratio=round(ratio, 4)
    )


async def check_repetition(state: State, runtime: Runtime[Context]) -> RepetitionUpdate:
    """The verdict on the current draft, also recorded on the draft itself."""
    history = state.get("history") or []
    asked = extract_entities(f"{state['question']} {state.get('rewritten_query', '')}")
    verdict = detect_repetition(
        state.get("entities", []),
        [t["entities"] for t in history],
        threshold=runtime.context.repetition_threshold,
        asked=asked,
    )
    if state.get("regenerations") and not has_marker(state.get("draft", "")):
        # A regeneration with nothing new to cite: stop here, persist keeps the best draft.
        verdict = Repetition(is_repetitive=False, repeated_entities=[], overlap_ratio=1.0)
    elif state.get("flags", {}).get("no_answer") or state.get("draft") in CHIT_CHAT_ANSWERS:
        # A fixed reply ("not found", a greeting) says the same each time by design.
        verdict = Repetition(is_repetitive=False, repeated_entities=[], overlap_ratio=0.0)
    drafts = list(state.get("drafts", []))
    if drafts:
        drafts[-1] = {**drafts[-1], "overlap_ratio": verdict["overlap_ratio"]}
    return RepetitionUpdate(repetition=verdict, drafts=drafts)
