"""The events of a turn's stream, typed, and the server-sent events they are written as:
the bytes clients read are those of the untyped events they replaced. Fast: no server."""

from __future__ import annotations

import asyncio

from convrag.api.schemas import AnswerOut, CitationOut
from convrag.api.turn_replies import done_event, state_done
from convrag.api.turn_stream import Event, TurnEvents, error_event, keep_alive, sse, sse_data
from convrag.events import SourcesEvent, TokenEvent
from tests.samples import cited

ANSWER = "Paid [1]."

SOURCE, CITATION = cited(ANSWER, id="c1", document_id="d1", text="Meals abroad are paid…")

#: A run's state as it ends: what its ``done`` event is written from.
STATE = {
    "turn_id": "t1",
    "answer": ANSWER,
    "citations": [CITATION],
    "timings": {"synthesize": 12.5},
    "flags": {"no_answer": False},
}


def wire(event: Event) -> str:
    """The text ``event`` is sent as."""
    return sse(event).encode().decode()


def _events(*parts: SourcesEvent | TokenEvent) -> list[Event]:
    queue: asyncio.Queue[Event | None] = asyncio.Queue()
    events = TurnEvents(queue)
    for part in parts:
        events.custom(part)
    return [e for e in (queue.get_nowait() for _ in range(queue.qsize())) if e is not None]


def test_a_token_before_any_sources_is_preceded_by_an_empty_sources_event() -> None:
    events = _events(TokenEvent(event="token", text="Hello", node="synthesize"))
    assert [wire(e) for e in events] == [
        'event: sources\ndata: {"sources": []}\n\n',
        'event: token\ndata: {"text": "Hello", "node": "synthesize"}\n\n',
    ]


def test_a_marker_that_names_a_source_is_cited_once_as_it_first_appears() -> None:
    events = _events(
        SourcesEvent(event="sources", sources=[SOURCE]),
        TokenEvent(event="token", text="Paid [", node="synthesize"),
        TokenEvent(event="token", text="1] and [1] again [2].", node="synthesize"),
    )
    citations = [e for e in events if e["event"] == "citation"]
    assert citations == [{"event": "citation", "marker": "[1]", "source": SOURCE}]
    assert wire(citations[0]) == (
        'event: citation\ndata: {"marker": "[1]", "source": {"n": 1, "id": "c1", '
        '"type": "chunk", "document_id": "d1", "title": "Travel policy", "url": null, '
        '"score": 0.8125, "snippet": "Meals abroad are paid\\u2026", "page": 3, '
        '"section": "Meals \\u203a Abroad"}}\n\n'
    )


def test_the_done_event_is_written_with_its_citations_as_the_api_shows_them() -> None:
    done = state_done(STATE)
    assert done["citations"] == [CitationOut.model_validate(CITATION)]
    assert wire(done) == (
        'event: done\ndata: {"turn_id": "t1", "answer": "Paid [1].", "citations": '
        '[{"marker": "[1]", "position": 5, "source_type": "chunk", "source_id": "c1", '
        '"document_id": "d1", "url": null, "relevance_score": 0.8125, '
        '"content_snippet": "Meals abroad are paid\\u2026", "page": 3}], '
        '"timings_ms": {"synthesize": 12.5}, "repetition_detected": false, '
        '"no_answer": false, "confidence": "high", "flags": {"no_answer": false}}\n\n'
    )


def test_a_stored_answer_ends_its_stream_with_the_done_event_a_run_would_send() -> None:
    answer = AnswerOut(
        conversation_id="c",
        turn_id="t1",
        answer=ANSWER,
        classification="standalone",
        rewritten_query="meals",
        sources=[SOURCE],
        citations=[CitationOut.model_validate(CITATION)],
        repetition_detected=False,
        flags={"no_answer": False},
        timings_ms={"synthesize": 12.5},
    )
    assert wire(done_event(answer)) == wire(state_done(STATE))


def test_an_error_event_is_its_code_and_message_cut_to_500_characters() -> None:
    event = error_event("turn_failed", "x" * 600)
    assert wire(error_event("stopped", "stopped")) == (
        'event: error\ndata: {"code": "stopped", "message": "stopped"}\n\n'
    )
    assert len(event["message"]) == 500


def test_keep_alives_openai_chunks_and_done_are_written_with_bare_newlines() -> None:
    assert keep_alive().encode() == b": keep-alive\n\n"
    assert sse_data('{"id": "x"}').encode() == b'data: {"id": "x"}\n\n'
    assert sse_data("[DONE]").encode() == b"data: [DONE]\n\n"


def test_a_shutdown_signal_leaves_open_streams_to_the_apps_own_shutdown() -> None:
    """sse-starlette would cut every stream at SIGTERM, before the app's shutdown ends
    them with an ``error`` event (``shutting_down``); importing the stream turns that off."""
    from sse_starlette.sse import AppStatus

    assert not AppStatus.enable_automatic_graceful_drain
