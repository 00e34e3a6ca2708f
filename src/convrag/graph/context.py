"""Run-scoped settings, given to the graph as ``context_schema`` and read through ``Runtime``.

Only ``thread_id`` travels in ``configurable``; everything that tunes a run is here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal


@dataclass(kw_only=True)
class Context:
    """Knobs of one run. Defaults follow the seeds."""

    workspace_id: str = field(default="default", metadata={"description": "Workspace to search."})
    llm_model: str | None = field(
        default=None,
        metadata={
            "description": "'provider:model' for answers; None uses LLM_MODEL / "
            "OPENAI_API_KEY from the environment, 'none' forces the no-LLM path."
        },
    )
    rewrite_model: str | None = field(
        default=None, metadata={"description": "Model for rewriting; defaults to llm_model."}
    )
    rag_enabled: bool = True
    history_turns: int = field(default=5, metadata={"description": "Turns of history loaded."})
    top_k: int = field(default=5, metadata={"description": "Sources given to synthesis."})
    score_threshold: float = field(
        default=0.0, metadata={"description": "Minimum fused score of a vector hit."}
    )
    context_budget_chars: int = field(
        default=4000, metadata={"description": "Maximum characters of source text."}
    )
    anchor_boost: float = field(
        default=0.3,
        metadata={
            "description": "Additive boost for chunks of the previous "
            "answer's documents on a follow-up (seed 003)."
        },
    )
    repetition_threshold: float = field(
        default=0.7, metadata={"description": "Entity overlap above which to regenerate."}
    )
    max_regenerations: int = 2
    web_search: Literal["auto", "on", "off"] = "auto"
    web_confidence_threshold: float = field(
        default=0.25,
        metadata={
            "description": "Auto web search under this retrieval confidence (best dense cosine)."
        },
    )
    rewrite_temperature: float = 0.2
    answer_temperature: float = 0.3
    rewrite_timeout_s: float = 10.0
    answer_timeout_s: float = 60.0
    retrieval_timeout_s: float = 3.5
    web_timeout_s: float = 8.0

    def __post_init__(self) -> None:
        problems = []
        for name in ("history_turns", "top_k", "context_budget_chars"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1")
        if self.max_regenerations < 0:
            problems.append("max_regenerations must be >= 0")
        if not 0.0 <= self.repetition_threshold <= 1.0:
            problems.append("repetition_threshold must be within [0, 1]")
        for name in (
            "rewrite_timeout_s",
            "answer_timeout_s",
            "retrieval_timeout_s",
            "web_timeout_s",
        ):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be > 0")
        if self.web_search not in ("auto", "on", "off"):
            problems.append("web_search must be auto, on or off")
        if problems:
            raise ValueError("invalid context: " + "; ".join(problems))

    @classmethod
    def from_mapping(cls, data: dict[str, Any] | None) -> Context:
        """Build from a dict (e.g. the SDK's ``context``), ignoring unknown keys."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in known})
