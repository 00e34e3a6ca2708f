"""What a run carries besides its state: the run's choices, its changes to the retrieval
policy, and the services it uses.

The graph declares this as ``context_schema`` and every node reads it through
``Runtime.context``. Only ``thread_id`` travels in ``configurable``. ``services`` is the
run's dependency injection: the composition root (:func:`convrag.services.open_services`)
builds one :class:`~convrag.services.Services` and each surface passes it here, so two
assistants in one process never share stores by accident. It is hidden from the JSON
schema that Studio and the SDK see, and cannot be set from a mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Annotated, Any, Literal, get_type_hints

from pydantic import PlainSerializer, PlainValidator
from pydantic.json_schema import SkipJsonSchema

from convrag.config import (
    DEFAULT_LLM_TIMEOUT_S,
    DEFAULT_REWRITE_TIMEOUT_S,
    DEFAULT_WEB_SEARCH_TIMEOUT_S,
)
from convrag.ids import DEFAULT_WORKSPACE
from convrag.knobs import KnobTypeError, read_knob
from convrag.llm import resolve_model
from convrag.retrieval.policy import (
    PolicyError,
    RetrievalPolicy,
    default_policy,
    field_types,
    read_value,
    read_values,
)
from convrag.retrieval.quoting import DEFAULT_ANSWER_SENTENCES
from convrag.rewriting.gate import check_switches
from convrag.services import Services


def _described(value: object) -> str:
    """``value`` as an error message shows what was sent."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, bool | int | float):
        return repr(value)
    return type(value).__name__


#: ``Services`` passes through pydantic untouched (it is not data) and stays out of the
#: context's JSON schema. It serialises as nothing: without a serializer of its own, pydantic
#: builds one from the ``Services`` type, which fails on its protocol-typed fields (under
#: ``langgraph dev``, every ``/schemas`` call logged "Failed to get config schema").
InjectedServices = Annotated[
    Services | None,
    PlainValidator(lambda v: v),
    PlainSerializer(lambda _: None),
    SkipJsonSchema(),
]


@dataclass(kw_only=True)
class Context:
    """Knobs of one run, validated when the context is built."""

    workspace_id: str = field(
        default=DEFAULT_WORKSPACE, metadata={"description": "Workspace to search."}
    )
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
    create_conversation: bool = field(
        default=True,
        metadata={
            "description": "Start an unknown conversation id as a new conversation. When "
            "false, an unknown id fails the turn (the HTTP service creates conversations "
            "through its own route)."
        },
    )
    top_k: int = field(default=5, metadata={"description": "Sources given to synthesis."})
    answer_sentences: int = field(
        default=DEFAULT_ANSWER_SENTENCES,
        metadata={
            "description": "Most sentences an extractive answer (no LLM, or the LLM's "
            "fallback) quotes from the sources."
        },
    )
    score_threshold: float = field(
        default=0.0,
        metadata={
            "description": "Minimum relevance of a vector hit: its cosine similarity to the "
            "standalone query (comparable across queries). 0 keeps every hit."
        },
    )
    context_budget_chars: int = field(
        default=4000, metadata={"description": "Maximum characters of source text."}
    )
    rewrite_rules_off: str = field(
        default="",
        metadata={
            "description": "Comma-separated rewrite rules to switch off (convrag.rewriting."
            "RULES), to measure what each one earns; empty runs them all."
        },
    )
    repetition_threshold: float = field(
        default=0.7, metadata={"description": "Entity overlap above which to regenerate."}
    )
    max_regenerations: int = 2
    web_search: Literal["auto", "on", "off"] = "auto"
    rewrite_temperature: float = 0.2
    answer_temperature: float = 0.3
    rewrite_timeout_s: float = DEFAULT_REWRITE_TIMEOUT_S
    answer_timeout_s: float = DEFAULT_LLM_TIMEOUT_S
    retrieval_timeout_s: float = 3.5
    web_timeout_s: float = DEFAULT_WEB_SEARCH_TIMEOUT_S
    policy: dict[str, float | int | bool] = field(
        default_factory=dict,
        metadata={
            "description": "This run's changes to the retrieval policy, by field name "
            "(convrag.retrieval.policy.RetrievalPolicy: fusion weights, the 'not found' "
            "floor...); the rest come from the service's policy file."
        },
    )
    services: InjectedServices = field(default=None, repr=False, compare=False)
    """The run's stores, embedder, searcher and web tool; see :attr:`deps`."""

    @property
    def deps(self) -> Services:
        """The run's services, or a clear error when the caller gave none."""
        if self.services is None:
            raise RuntimeError(
                "this run has no services: open them with convrag.services.open_services() "
                "and pass Context(services=...), or use convrag.assistant.open_assistant()"
            )
        return self.services

    @property
    def retrieval_policy(self) -> RetrievalPolicy:
        """The service's retrieval policy with this run's changes (:attr:`policy`)."""
        return self.deps.policy.with_values(self.policy)

    def rewrite_model_name(self) -> str | None:
        """The model the rewrite gate calls (``rewrite_model``, else ``llm_model``, else
        the environment's), or None when the rules rewrite instead."""
        return resolve_model(self.rewrite_model or self.llm_model, self.deps.settings)

    def __post_init__(self) -> None:
        self._read_types()
        self.policy = _policy_values(self.policy)
        problems = [
            problem
            for name, check in _CHECKS
            if (problem := check(name, getattr(self, name))) is not None
        ]
        if problems:
            raise ValueError("invalid context: " + "; ".join(problems))

    def _read_types(self) -> None:
        """Each knob read as its type (:func:`read_knob`), or one ``ValueError`` naming
        every knob of the wrong type: a context may come from untrusted JSON (the SDK's,
        which LangGraph hands over as keyword arguments), where ``"false"`` must not
        count as true nor ``"3"`` fail deep inside a node."""
        problems = []
        for name, hint in _knob_types().items():
            value = getattr(self, name)
            try:
                read = read_knob(hint, value)
            except KnobTypeError as exc:
                problems.append(f"{name}: expected {exc.expected}, got {_described(value)}")
                continue
            if read is not value:
                setattr(self, name, read)
        if problems:
            raise ValueError("invalid context: " + "; ".join(problems))

    @classmethod
    def parse_overrides(cls, pairs: Sequence[str]) -> dict[str, Any]:
        """``NAME=VALUE`` pairs (the CLI's ``--set``) as typed knob values, checked now.

        Each name must be a knob of this class (not ``workspace_id``, which the caller
        owns, nor ``services``) or a field of the retrieval policy (gathered under
        ``policy``); each value is read as the knob's or the field's type. The combination is
        validated as a whole by building a context from it, so a bad value fails before
        any work starts, with the same message a run would give.
        """
        knobs = {name: hint for name, hint in _knob_types().items() if name != "workspace_id"}
        fitted = field_types()
        out: dict[str, Any] = {}
        policy: dict[str, Any] = {}
        for pair in pairs:
            name, sep, raw = pair.partition("=")
            name, raw = name.strip(), raw.strip()
            if not sep:
                raise ValueError(f"--set {pair!r}: expected NAME=VALUE, e.g. feedback_weight=0.2")
            if name not in knobs and name not in fitted:
                raise ValueError(
                    f"--set {name}: not a context knob; one of "
                    f"{', '.join(sorted([*knobs, *fitted]))}"
                )
            try:
                if name in fitted:
                    policy[name] = read_value(name, fitted[name], raw)
                else:
                    out[name] = read_knob(knobs[name], raw)
            except PolicyError:
                raise ValueError(f"--set {name}={raw}: expected {fitted[name].__name__}") from None
            except KnobTypeError as exc:
                raise ValueError(f"--set {name}={raw}: expected {exc.expected}") from None
        if policy:
            out["policy"] = policy
        cls(**out)
        return out

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> Context:
        """Build from a mapping (e.g. the SDK's ``context``), checked now: an unknown key
        (or ``services``, which no mapping may set) is refused with the knobs' names, and
        each value is read as its knob's type (:func:`read_knob`)."""
        known = [*_knob_types(), "policy"]
        unknown = sorted(str(k) for k in (data or {}) if k not in known)
        if unknown:
            raise ValueError(
                f"invalid context: unknown key {', '.join(map(repr, unknown))}; "
                f"the knobs are {', '.join(sorted(known))}"
            )
        return cls(**dict(data or {}))


_Check = Callable[[str, Any], str | None]
"""A knob's check: given its name and value, the problem to report, or None."""


def _at_least(low: float, *, strict: bool = False) -> _Check:
    """The check of a knob that must be ``low`` or more (more than ``low`` when
    ``strict``)."""

    def check(name: str, value: Any) -> str | None:
        if value <= low if strict else value < low:
            return f"{name} must be {'>' if strict else '>='} {low:g}"
        return None

    return check


def _within(low: float, high: float) -> _Check:
    """The check of a knob that must lie from ``low`` to ``high`` (both included; not a
    number is outside)."""

    def check(name: str, value: Any) -> str | None:
        return None if low <= value <= high else f"{name} must be within [{low:g}, {high:g}]"

    return check


def _policy_values(values: object) -> dict[str, Any]:
    """A run's changes to the retrieval policy, read as the fields' types and checked
    against the policy's ranges (on the packaged policy: the ranges are the same for
    any), or ``ValueError`` naming the problem."""
    if not isinstance(values, Mapping):
        raise ValueError(f"invalid context: policy: expected an object, got {_described(values)}")
    try:
        read = read_values(values)
        default_policy().with_values(read)
    except PolicyError as exc:
        raise ValueError(f"invalid context: policy: {exc}") from None
    return read


def _rule_switches(name: str, value: str) -> str | None:
    """The check of ``rewrite_rules_off``: each comma-separated name a rewrite rule."""
    try:
        check_switches(r.strip() for r in value.split(",") if r.strip())
    except ValueError as exc:
        return f"{name}: {exc}"
    return None


#: Each knob's check, in the order a context's problems are reported.
_CHECKS: tuple[tuple[str, _Check], ...] = (
    ("history_turns", _at_least(1)),
    ("top_k", _at_least(1)),
    ("answer_sentences", _at_least(1)),
    ("context_budget_chars", _at_least(1)),
    ("max_regenerations", _at_least(0)),
    ("rewrite_rules_off", _rule_switches),
    ("score_threshold", _within(0, 1)),
    ("repetition_threshold", _within(0, 1)),
    ("rewrite_timeout_s", _at_least(0, strict=True)),
    ("answer_timeout_s", _at_least(0, strict=True)),
    ("retrieval_timeout_s", _at_least(0, strict=True)),
    ("web_timeout_s", _at_least(0, strict=True)),
)


@cache
def _knob_types() -> dict[str, Any]:
    """Each knob of :class:`Context` (every field but ``services`` and ``policy``, which
    has its own reading) and its type."""
    hints = get_type_hints(Context)
    return {f.name: hints[f.name] for f in fields(Context) if f.name not in ("services", "policy")}
