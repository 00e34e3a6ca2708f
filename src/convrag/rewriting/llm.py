"""The LLM strategy: one JSON call classifies the message and makes it standalone.

:class:`LlmRewriter` asks the model (prompt: :data:`convrag.prompts.REWRITE_PROMPT`) for an
object ``{"classification": ..., "query": ...}``, at a low temperature and within a time
limit: the model reads pronouns and topic shifts better than rules do. The reply's contract
lives here too: :func:`parse_decision` reads the object, :func:`check_decision` rejects a
query that cannot replace the message (empty, too long, an answer, off the subject). A call
that fails or a reply that is rejected raises :class:`~convrag.rewriting.rewriter.RewriteFailed`
saying why; :class:`~convrag.rewriting.fallback.FallbackRewriter` then asks the rules.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from convrag import prompts
from convrag.config import Settings
from convrag.llm import attempt, chat_model
from convrag.records import HistoryTurn
from convrag.rewriting.classify import Classification
from convrag.rewriting.rewriter import Rewrite, RewriteFailed
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


@dataclass(frozen=True, slots=True)
class LlmRewriter:
    """Classify and rewrite by one call to ``model_name``."""

    model_name: str
    settings: Settings
    temperature: float
    timeout_s: float

    async def rewrite(self, message: str, history: Sequence[HistoryTurn]) -> Rewrite:
        """The model's classification and query, checked; :class:`RewriteFailed` when the
        call fails, times out or its reply is rejected. A ``no_retrieval`` verdict keeps
        the message as the query."""
        start = time.perf_counter()
        decision = await self._decide(message, history)
        # Model time, which the service's own latency figures count apart.
        llm_ms = round((time.perf_counter() - start) * 1000.0, 3)
        if isinstance(decision, str):
            raise RewriteFailed(decision, llm_ms)
        query = message
        if decision.classification != "no_retrieval":
            query = clean(decision.query or "")
        return Rewrite(decision.classification, query, "llm", llm_ms=llm_ms)

    async def _decide(self, message: str, history: Sequence[HistoryTurn]) -> RewriteDecision | str:
        """The reply's decision, checked, or why there is none."""
        fence = prompts.Fence.new()
        prompt = prompts.REWRITE_PROMPT.format(
            history=prompts.format_history(history, fence=fence),
            question=message,
            boundary=fence.boundary,
        )

        async def call() -> BaseMessage:
            model = chat_model(
                self.model_name, self.settings, temperature=self.temperature, timeout=self.timeout_s
            )
            return await model.ainvoke(
                [HumanMessage(prompt)], config={"tags": [TAG_NOSTREAM, "rewrite"]}
            )

        reply, failure = await attempt(call(), self.timeout_s, what="the rewrite LLM call")
        if reply is None:
            return failure or "error"
        text = storable(reply.content) if isinstance(reply.content, str) else ""
        if not text.strip():
            return "empty"
        decision, invalid = parse_decision(text)
        if decision is None:
            return invalid or "invalid"
        invalid = check_decision(decision, message, history)
        return decision if invalid is None else invalid


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
