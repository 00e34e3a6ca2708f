"""rewrite: classify the message and turn it into a standalone query for retrieval.

Chit-chat ("thanks!", "hello, who are you?") and requests to reshape the previous answer are
recognised by rules and never cost an LLM call; nor does a first turn, which has nothing to
resolve. With an LLM, every later turn is classified and rewritten by it in one call that
answers a JSON object ``{"classification": ..., "query": ...}``, at a low temperature and
within the run's time limit: the model reads pronouns and topic shifts better than rules do.
A reply that fails (error, timeout, empty) or does not pass :func:`check_decision` gets
what the no-LLM path gives (the rules' classification and, for a follow-up, their
rewrite), and records why. Without an LLM, the deterministic contextualizer resolves
pronouns and ellipsis from the previous turns.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection, Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from convrag import prompts
from convrag.context import Context
from convrag.events import RewriteEvent, emit
from convrag.llm import attempt, chat_model
from convrag.nodes.policy import ms_since
from convrag.records import HistoryTurn
from convrag.retrieval.planning import TurnQuery, plan_queries
from convrag.rewriting import Classification, Turn, classify
from convrag.rewriting.classify import is_no_retrieval, split_pleasantries
from convrag.rewriting.gate import gated_rewrite
from convrag.state import RewriteMethod, RewriteUpdate, State
from convrag.text.lexicon import AUX, WH
from convrag.text.tokens import clean, content_words, fold, storable, strip_possessive, tokenize

MAX_QUERY_CHARS = 1000
"""Upper bound of an LLM query, whatever the message's length."""

# Requests phrased as commands ("Explain ...", "I need ...") are questions too.
_REQUEST_RE = re.compile(
    r"^(?:please\s+)?(?:tell|explain|describe|list|show|give|compare|summari[sz]e|define|"
    r"find|name|provide|outline|help|recommend|suggest|identify|discuss|elaborate|clarify|"
    r"let\s+me\s+know|i\s+(?:want|need|would\s+like|wonder))\b",
    re.IGNORECASE,
)


class RewriteDecision(BaseModel):
    """The rewrite call's structured reply: how the message is classified, and its query.

    The classification is read case- and separator-insensitively ("Follow-up" is
    ``follow_up``); unknown keys are ignored.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    classification: Classification
    query: str | None = None

    @field_validator("classification", mode="before")
    @classmethod
    def _normalise(cls, value: Any) -> Any:
        if isinstance(value, str):
            return re.sub(r"[\s-]+", "_", value.strip().lower())
        return value


def rules_rewrite(message: str, history: list[HistoryTurn], without: Collection[str] = ()) -> str:
    """The deterministic contextualizer's query (see :func:`rules_query`)."""
    return rules_query(message, history, without)[0]


def rules_query(
    message: str, history: list[HistoryTurn], without: Collection[str] = ()
) -> tuple[str, str | None]:
    """The rules' standalone query, and the gate's check their rewrite failed (None when
    it passed or nothing was rewritten).

    A continuation ("Why not?", "Tell me more") is the previous standalone question; a
    rewrite that changes nothing or fails the gate leaves the message as typed, and
    retrieval still sees the topic through the history-aware query (never a glued string:
    the query is the one the page shows). ``without`` switches rules off (measurement).
    """
    # A greeting or a thanks names nothing a follow-up can point to ("Hi there!").
    history = [t for t in history if not is_no_retrieval(clean(t["question"]))]
    turns = [
        Turn(
            t["question"],
            t["answer"],
            standalone_question(t),
            tuple(t.get("cited_titles") or ()),
        )
        for t in history
    ]
    return gated_rewrite(message, turns, without=without)


def standalone_question(turn: HistoryTurn) -> str:
    """The turn's question as it was made standalone, without the previous question that
    :func:`rules_rewrite` carried along (which would otherwise nest turn after turn:
    "Tell me more (What about that? (Can you elaborate? (...)))"), and without the
    pleasantries before it ("OK thanks. Now, ")."""
    question = turn["question"].strip()
    query = (turn["contextualized_query"] or question).strip()
    carried = f"{question} ("
    if query.startswith(carried) and query.endswith(")"):
        query = query[len(carried) : -1]
    return split_pleasantries(query)[1]


def parse_decision(text: str) -> tuple[RewriteDecision, None] | tuple[None, str]:
    """The JSON object of a reply, validated, or ``(None, why it is invalid)``.

    The object may be wrapped in a code fence or a sentence; the outermost braces are
    parsed strictly, so a reply cut short is invalid rather than half-read.
    """
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None, "invalid: not JSON"
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return None, "invalid: not JSON"
    if not isinstance(data, dict):
        return None, "invalid: not JSON"
    try:
        return RewriteDecision.model_validate(data), None
    except ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        return None, f"invalid: {loc[0] if loc else 'reply'}"


def check_decision(
    decision: RewriteDecision, message: str, history: Sequence[HistoryTurn] = ()
) -> str | None:
    """Why the LLM's query cannot replace the message, or None when it can.

    A ``no_retrieval`` verdict needs no query (nothing is looked up). Otherwise the query must
    be non-empty, at most three times the message plus 200 characters and at most
    :data:`MAX_QUERY_CHARS` (a longer one is an answer or a ramble), not an answer
    instead of a question (see :func:`answer_like`), and about the conversation: it says
    a word of the message or of the history (see :func:`off_subject`).
    """
    if decision.classification == "no_retrieval":
        return None
    query = clean(decision.query or "")
    if not query:
        return "invalid: empty query"
    if len(query) > min(MAX_QUERY_CHARS, 3 * len(message) + 200):
        return "invalid: too long"
    if answer_like(query, message):
        return "invalid: an answer, not a question"
    if off_subject(query, message, history):
        return "invalid: not about the conversation"
    return None


def off_subject(query: str, message: str, history: Sequence[HistoryTurn]) -> bool:
    """Whether ``query`` says no content word of the message or of the conversation
    before it: a model that lost the thread (or invented a subject) is not followed."""
    said = " ".join(
        [
            message,
            *(
                f"{t['question']} {t.get('contextualized_query') or ''} {t['answer']}"
                for t in history
            ),
        ]
    )
    words = {strip_possessive(t.low) for t in content_words(tokenize(fold(said)))}
    asked = {strip_possessive(t.low) for t in content_words(tokenize(fold(query)))}
    return bool(asked) and not asked & words


def answer_like(query: str, message: str) -> bool:
    """Whether ``query`` reads as a statement answering ``message`` rather than asking it.

    Kept simple on purpose: a query is a question when it ends with "?" or opens with a
    question word, an auxiliary ("can", "does") or a request ("explain", "I need"). Anything
    else is accepted only as keywords that keep some of the message's content words, with
    no auxiliary verb after the first word and no closing full stop: "Prasad Chaudhari basic
    salary" is a query, "Prasad Chaudhari's basic salary is $80,000." an answer.
    """
    toks = tokenize(query)
    if not toks:
        return True
    if query.endswith("?") or toks[0].low in WH or toks[0].low in AUX or _REQUEST_RE.match(query):
        return False
    if query.endswith((".", "!")) or any(t.low in AUX for t in toks[1:]):
        return True
    asked = {t.low for t in content_words(tokenize(message))}
    return not asked & {t.low for t in content_words(toks)}


async def llm_rewrite(
    message: str, history: list[HistoryTurn], model_name: str, ctx: Context
) -> tuple[RewriteDecision, None] | tuple[None, str]:
    """The LLM's classification and standalone query, checked, or ``(None, why not)``."""
    prompt = prompts.REWRITE_PROMPT.format(
        history=prompts.format_history(history), question=message
    )

    async def call() -> BaseMessage:
        model = chat_model(
            model_name,
            ctx.deps.settings,
            temperature=ctx.rewrite_temperature,
            timeout=ctx.rewrite_timeout_s,
        )
        return await model.ainvoke(
            [HumanMessage(prompt)], config={"tags": [TAG_NOSTREAM, "rewrite"]}
        )

    reply, failure = await attempt(call(), ctx.rewrite_timeout_s, what="the rewrite LLM call")
    if reply is None:
        return None, failure or "error"
    text = storable(reply.content) if isinstance(reply.content, str) else ""
    if not text.strip():
        return None, "empty"
    decision, invalid = parse_decision(text)
    if decision is None:
        return None, invalid or "invalid"
    invalid = check_decision(decision, message, history)
    return (decision, None) if invalid is None else (None, invalid)


def _by_rules(
    message: str, history: list[HistoryTurn], ctx: Context, update: RewriteUpdate
) -> tuple[str, RewriteMethod]:
    """The rules' query and method ("unchanged" when the gate kept the message as
    typed, which ``update``'s flags then say, as ``rewrite_rejected``)."""
    off = [r.strip() for r in ctx.rewrite_rules_off.split(",") if r.strip()]
    query, rejected = rules_query(message, history, off)
    if rejected is not None:
        update["flags"] = {**update.get("flags", {}), "rewrite_rejected": rejected}
    return query, "unchanged" if query == message.strip() else "rules"


async def rewrite(state: State, runtime: Runtime[Context]) -> RewriteUpdate:
    """Classify the message and make it standalone: by the LLM on every turn after the
    first when one is configured, else (or when that call fails) by the rules."""
    ctx = runtime.context
    message = state["question"]
    history = state.get("history") or []
    turns = [Turn(t["question"], t["answer"]) for t in history]
    query = message
    method: RewriteMethod = "unchanged"
    update = RewriteUpdate()
    model_name = ctx.rewrite_model_name()
    if model_name is None or not history or is_no_retrieval(clean(message)):
        classification = classify(message, turns)
        if classification == "follow_up" and model_name is None:
            query, method = _by_rules(message, history, ctx, update)
    else:
        start = time.perf_counter()
        decision, failure = await llm_rewrite(message, history, model_name, ctx)
        # Model time, which the service's own latency figures count apart.
        update["timings"] = {"rewrite_llm": ms_since(start)}
        if decision is not None:
            classification, method = decision.classification, "llm"
            if classification != "no_retrieval":
                query = clean(decision.query or "")
        else:
            # What the no-LLM path would do: a failing LLM must not resolve follow-ups
            # worse than no LLM at all.
            classification, method = classify(message, turns), "fallback"
            if classification == "follow_up":
                query, _ = _by_rules(message, history, ctx, update)
            update["flags"] = {**update.get("flags", {}), "rewrite_fallback": failure}
            update["errors"] = {"rewrite": failure or "error"}
    if classification != "no_retrieval" and ctx.rag_enabled:
        # Embedded while the graph moves on to the search.
        turn = TurnQuery(state["workspace_id"], message, query, classification, method, history)
        ctx.deps.searcher.prefetch(*(q.text for q in plan_queries(turn, ctx.retrieval_policy)))
    emit(
        runtime,
        RewriteEvent(event="rewrite", classification=classification, query=query, method=method),
    )
    update["classification"] = classification
    update["rewritten_query"] = query
    update["rewrite_method"] = method
    return update
