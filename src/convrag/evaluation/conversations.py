"""Conversations over real documents: is each turn answered usefully, refused or asked back?

A set is a folder: ``docs/`` (the documents) and ``conversations.jsonl`` (one conversation
a line, its turns in order; ``benchmarks/realconv/dev/README.md`` gives the format). The
documents are ingested into a workspace of the set's own (unchanged ones are skipped, so
a second run on the same data directory ingests nothing), and each conversation is played
turn by turn through the service's real graph, with its own stored history, as a user's
conversation is.

Each turn is scored from the reply, never from its wording:

* **answered**: the reply is not "not found" (its ``no_answer`` flag);
* **useful** (answerable turns with key facts): answered, and every key fact occurs in the
  answer after :func:`normalise` (NFKC, case-folded, whitespace collapsed, ``[n]`` markers
  removed). **useful_lenient** accepts a fact when at least :data:`LENIENT_SHARE` of its
  word tokens occur in the answer in the fact's order (:func:`fact_in_lenient`): markup
  and punctuation around a quoted fact do not count against it;
* **source_holds**: every key fact occurs in one of the top-5 sources' texts;
  **quoted_when_held**: useful, counted over the turns whose sources hold the facts;
* **wrong_not_found**: an answerable turn answered "not found";
* **refused**: off-topic and unanswerable turns answered "not found";
* **asked_back**: an underspecified turn whose reply says ``outcome == "ask_back"``
  (0 while the reply carries no such field).

Rates are reported over all turns, first turns and follow-ups (any turn after the
first), and by kind.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from convrag.assistant import Assistant, open_assistant
from convrag.citations import strip_markers
from convrag.context import Context
from convrag.documents.load import load_path
from convrag.ingest import IngestReport, delete_document, ingest_documents
from convrag.services import Services

KINDS = (
    "first",
    "pronoun",
    "ellipsis",
    "what_about",
    "subjectless",
    "compare",
    "topic_change",
    "underspecified",
    "unanswerable",
    "off_topic",
)
"""The kinds a turn may have (``kind`` in the set's file)."""

LENIENT_SHARE = 0.8
"""The share of a key fact's word tokens that must occur, in order, in a lenient match."""

TOP_SOURCES = 5
"""How many of a reply's sources are searched for the key facts."""

RETRIEVAL_TIMEOUT_S = 60.0
"""The evaluation's retrieval time limit: on a loaded machine a search can pass the
service's default, and the turn would fall back to "not found" for a reason that is not
the documents'. ``--set retrieval_timeout_s=...`` sets another."""

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def normalise(text: str) -> str:
    """``text`` as facts are matched: NFKC, case-folded, whitespace collapsed, without
    ``[n]`` citation markers."""
    folded = unicodedata.normalize("NFKC", strip_markers(text)).casefold()
    return _SPACE.sub(" ", folded).strip()


def fact_in(fact: str, text: str) -> bool:
    """Whether ``fact`` occurs in ``text``, both normalised."""
    return normalise(fact) in normalise(text)


def _in_order(needles: Sequence[str], haystack: Sequence[str]) -> int:
    """The length of the longest common subsequence of two token lists."""
    previous = [0] * (len(haystack) + 1)
    for token in needles:
        current = [0]
        for j, other in enumerate(haystack):
            current.append(previous[j] + 1 if token == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def fact_in_lenient(fact: str, text: str, share: float = LENIENT_SHARE) -> bool:
    """Whether at least ``share`` of ``fact``'s word tokens occur in ``text`` in the
    fact's order (their longest common subsequence), both normalised: a fact quoted with
    other markup or punctuation, or with a word changed, still counts."""
    needles = _WORD.findall(normalise(fact))
    if not needles:
        return fact_in(fact, text)
    return _in_order(needles, _WORD.findall(normalise(text))) >= share * len(needles)


@dataclass(frozen=True)
class SetTurn:
    """One turn of a conversation, as the set's file writes it."""

    question: str
    standalone: str
    follow_up: bool
    kind: str
    answerable: bool
    document: str | None = None
    section: str | None = None
    key_facts: list[str] = field(default_factory=list)
    readings: list[str] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        """Whether the turn's answer is scored for usefulness: answerable, with key
        facts (an underspecified turn has readings instead)."""
        return self.answerable and bool(self.key_facts) and self.kind != "underspecified"


@dataclass(frozen=True)
class SetConversation:
    id: str
    turns: list[SetTurn]


def _turn(raw: Mapping[str, Any], where: str) -> SetTurn:
    """One turn of the file, or ``ValueError`` naming what is wrong with it."""
    try:
        turn = SetTurn(
            question=str(raw["question"]),
            standalone=str(raw.get("standalone") or raw["question"]),
            follow_up=bool(raw["follow_up"]),
            kind=str(raw["kind"]),
            answerable=bool(raw["answerable"]),
            document=raw.get("document"),
            section=raw.get("section"),
            key_facts=[str(f) for f in raw.get("key_facts") or []],
            readings=[str(r) for r in raw.get("readings") or []],
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{where}: missing or malformed field {exc}") from exc
    if turn.kind not in KINDS:
        raise ValueError(f"{where}: kind {turn.kind!r} is not one of {', '.join(KINDS)}")
    if turn.scored and not turn.document:
        raise ValueError(f"{where}: an answerable turn names the document that answers it")
    return turn


def load_set(folder: Path) -> list[SetConversation]:
    """The conversations of the set in ``folder``; ``ValueError`` naming the first
    problem (no such folder, no documents, a malformed line or turn)."""
    path = folder / "conversations.jsonl"
    if not path.is_file():
        raise ValueError(f"{folder}: no conversations.jsonl (is it a conversation set?)")
    if not (folder / "docs").is_dir():
        raise ValueError(f"{folder}: no docs/ folder beside conversations.jsonl")
    conversations: list[SetConversation] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            raw = json.loads(line)
            turns = [_turn(t, f"{where} turn {i}") for i, t in enumerate(raw["turns"], 1)]
            conversations.append(SetConversation(id=str(raw["id"]), turns=turns))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{where}: not a conversation ({exc})") from exc
    if not conversations:
        raise ValueError(f"{path}: no conversations")
    return conversations


@dataclass(frozen=True)
class TurnReply:
    """What a turn's reply is scored on."""

    answer: str
    no_answer: bool
    sources: list[dict[str, Any]]
    """The reply's sources in rank order: title, section, text."""
    rewrite: str | None = None
    outcome: str | None = None
    """The reply's ``outcome`` field where the service sets one (e.g. ``ask_back``)."""
    signals: dict[str, float] | None = None
    """The "not found" model's signals and probability (``abstention_signals``), so that
    the decision can be refitted on the set (``benchmarks/fit_not_found.py``)."""


def score_turn(turn: SetTurn, reply: TurnReply) -> dict[str, Any]:
    """The turn's flags (see the module's docstring); a flag that does not apply to the
    turn's kind is None."""
    answered = not reply.no_answer
    flags: dict[str, Any] = {"answered": answered}
    if turn.scored:
        texts = [str(s.get("text") or "") for s in reply.sources[:TOP_SOURCES]]
        strict = [fact_in(f, reply.answer) for f in turn.key_facts]
        lenient = [fact_in_lenient(f, reply.answer) for f in turn.key_facts]
        held = all(any(fact_in(f, t) for t in texts) for f in turn.key_facts)
        flags |= {
            "facts_in_answer": strict,
            "useful": answered and all(strict),
            "useful_lenient": answered and all(lenient),
            "source_holds": held,
            "wrong_not_found": not answered,
        }
    elif turn.kind in ("off_topic", "unanswerable"):
        flags["refused"] = not answered
    elif turn.kind == "underspecified":
        flags["asked_back"] = reply.outcome == "ask_back"
    return flags


def _rate(values: Iterable[bool]) -> dict[str, Any]:
    vals = list(values)
    return {"n": len(vals), "rate": round(sum(vals) / len(vals), 4) if vals else None}


def summarise(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The rates of one group of scored turns (records as :func:`score_turn` flags them,
    with the turn's ``kind``)."""
    scored = [r for r in records if "useful" in r]
    held = [r for r in scored if r["source_holds"]]
    return {
        "turns": len(records),
        "useful": _rate(r["useful"] for r in scored),
        "useful_lenient": _rate(r["useful_lenient"] for r in scored),
        "source_holds": _rate(r["source_holds"] for r in scored),
        "quoted_when_held": _rate(r["useful"] for r in held),
        "wrong_not_found": _rate(r["wrong_not_found"] for r in scored),
        "off_topic_refused": _rate(r["refused"] for r in records if r["kind"] == "off_topic"),
        "unanswerable_refused": _rate(r["refused"] for r in records if r["kind"] == "unanswerable"),
        "underspecified_asked_back": _rate(r["asked_back"] for r in records if "asked_back" in r),
        "answered": _rate(r["answered"] for r in records),
    }


def report_groups(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`summarise` over all turns, first turns, follow-ups and each kind."""
    kinds = [k for k in KINDS if any(r["kind"] == k for r in records)]
    return {
        "all": summarise(records),
        "first_turns": summarise([r for r in records if not r["follow_up"]]),
        "follow_ups": summarise([r for r in records if r["follow_up"]]),
        "by_kind": {k: summarise([r for r in records if r["kind"] == k]) for k in kinds},
    }


def reply_of(state: Mapping[str, Any]) -> TurnReply:
    """A graph run's final state reduced to what is scored."""
    sources = [
        {
            "id": s.get("id"),
            "title": s.get("title"),
            "section": s.get("section"),
            "text": s.get("text") or "",
        }
        for s in state.get("sources") or []
    ]
    outcome = state.get("outcome")
    return TurnReply(
        answer=str(state.get("answer") or ""),
        no_answer=bool((state.get("flags") or {}).get("no_answer")),
        sources=sources,
        rewrite=state.get("rewritten_query"),
        outcome=str(outcome) if outcome is not None else None,
        signals=state.get("abstention_signals"),
    )


def turn_record(
    conversation: str, index: int, turn: SetTurn, reply: TurnReply, seconds: float
) -> dict[str, Any]:
    """One turn as the report keeps it: what was asked, what came back, how it scored."""
    return {
        "conversation": conversation,
        "turn": index,
        "kind": turn.kind,
        "follow_up": turn.follow_up,
        "question": turn.question,
        "standalone": turn.standalone,
        "rewrite": reply.rewrite,
        "answer": reply.answer,
        "no_answer": reply.no_answer,
        "outcome": reply.outcome,
        "sources": [
            {"id": s.get("id"), "title": s["title"], "section": s["section"]}
            for s in reply.sources[:TOP_SOURCES]
        ],
        "document": turn.document,
        "section": turn.section,
        "key_facts": turn.key_facts,
        "seconds": round(seconds, 3),
        "signals": reply.signals,
        **score_turn(turn, reply),
    }


Progress = Callable[[str, int, int], None]


def set_documents(folder: Path) -> list[Path]:
    """The set's document files, by name."""
    return sorted(p for p in (folder.resolve() / "docs").iterdir() if p.is_file())


def workspace_for(folder: Path) -> str:
    """The set's workspace: ``realconv-<folder name>`` (``realconv-dev``), at most the 64
    characters a workspace id may have."""
    name = re.sub(r"[^a-z0-9_-]+", "-", folder.resolve().name.lower()).strip("-")
    return f"realconv-{name or 'set'}"[:64]


class ConversationRunner:
    """Plays a set's conversations through the service's graph in one workspace."""

    def __init__(
        self, bot: Assistant, workspace: str, overrides: Mapping[str, Any] | None = None
    ) -> None:
        """``overrides``: context knobs over the evaluation's own (no web search, the
        configured LLM or none, a retrieval time limit of :data:`RETRIEVAL_TIMEOUT_S`)."""
        self.bot = bot
        self.workspace = workspace
        settings = bot.services.settings
        self.llm = settings.effective_llm_model
        knobs: dict[str, Any] = {
            **settings.time_limits,
            "llm_model": self.llm or "none",
            "web_search": "off",
            "retrieval_timeout_s": RETRIEVAL_TIMEOUT_S,
        }
        self.context = Context(workspace_id=workspace, **{**knobs, **(overrides or {})})

    async def prepare(
        self, files: Sequence[Path], progress: Progress | None = None
    ) -> IngestReport:
        """Ingest ``files`` (unchanged ones are skipped), delete the workspace's documents
        that are no longer in the set, and load the engines; what the ingest did."""
        services = self.bot.services
        documents = []
        for path in files:
            documents.extend(
                await asyncio.to_thread(load_path, path, max_bytes=services.settings.max_file_bytes)
            )
        sources = {d.source for d in documents}
        report = await ingest_documents(
            services,
            self.workspace,
            documents,
            progress=(lambda n: progress("ingest", n, len(documents))) if progress else None,
        )
        for stored in await services.db.documents.list_documents(self.workspace):
            if stored["source"] not in sources:
                await delete_document(services, self.workspace, str(stored["id"]))
        await services.searcher.warm(self.workspace)
        return report

    async def play(
        self, conversation: SetConversation
    ) -> list[tuple[int, SetTurn, TurnReply, float]]:
        """Ask the conversation's turns in order in a new conversation: each turn's index,
        the turn, the reply and the seconds it took."""
        conversation_id = await self.bot.new_conversation(self.workspace)
        played = []
        for index, turn in enumerate(conversation.turns, 1):
            started = time.perf_counter()
            state = await self.bot.ask(
                turn.question, conversation_id, workspace_id=self.workspace, context=self.context
            )
            played.append((index, turn, reply_of(state), time.perf_counter() - started))
        return played


async def evaluate_conversations(
    services: Services,
    folder: Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Play and score every conversation of the set in ``folder``; returns the report
    (its ``records`` hold every turn). ``overrides`` sets context knobs (``--set``)."""
    conversations = load_set(folder)
    records: list[dict[str, Any]] = []
    total = sum(len(c.turns) for c in conversations)
    async with open_assistant(services=services) as bot:
        runner = ConversationRunner(bot, workspace_for(folder), overrides)
        started = time.perf_counter()
        ingested = await runner.prepare(set_documents(folder), progress)
        ingest_s = time.perf_counter() - started
        for conversation in conversations:
            for index, turn, reply, seconds in await runner.play(conversation):
                records.append(turn_record(conversation.id, index, turn, reply, seconds))
                if progress:
                    progress("turns", len(records), total)
    return {
        "set": str(folder),
        "workspace": runner.workspace,
        "documents": len(set_documents(folder)),
        "ingest": ingested.as_json(),
        "conversations": len(conversations),
        "llm": runner.llm or "none",
        "context_overrides": dict(overrides or {}),
        "ingest_seconds": round(ingest_s, 1),
        "ms_per_turn": round(1000 * sum(r["seconds"] for r in records) / max(1, total), 1),
        **report_groups(records),
        "records": records,
    }
