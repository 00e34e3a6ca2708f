"""`langgraph dev` serves the graph from langgraph.json; the SDK drives a two-turn chat.

The dev server joins the test session's embedded Postgres and Milvus Lite through the
shared data directory, and checkpoints into our Postgres through langgraph.json's
``checkpointer.path``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from convrag.assistant import STOPPED_TURN
from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub, Reply
from tests.conftest import checkpoint_count, thread_rows
from tests.graph.conftest import EMPLOYEES

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def dev_llm() -> Iterator[OpenAIStub]:
    """An OpenAI-compatible stub the dev server reaches (``OPENAI_BASE_URL``): a run's
    context picks it with ``llm_model``; without, runs take the no-LLM path."""
    with OpenAIStub.in_thread() as stub:
        yield stub


@pytest.fixture
def dev_server(settings: object, services: Services, dev_llm: OpenAIStub) -> Iterator[str]:
    port = _free_port()
    assert port != 2024
    env = {
        **os.environ,
        "CONVRAG_DATA_DIR": str(services.settings.data_dir),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        "OPENAI_BASE_URL": dev_llm.base_url,
    }
    exe = Path(sys.executable).with_name("langgraph")
    log = open(services.settings.data_dir / "langgraph-dev.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            str(exe),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError((services.settings.data_dir / "langgraph-dev.log").read_text())
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


async def _run_errors(
    client: Any, thread_id: str, payload: dict[str, Any], context: dict[str, Any]
) -> list[Any]:
    """The ``error`` events of one streamed run of the graph on the thread."""
    return [
        part.data
        async for part in client.runs.stream(thread_id, "convrag", input=payload, context=context)
        if part.event == "error"
    ]


async def test_sdk_drives_a_two_turn_follow_up_through_langgraph_dev(
    services: Services, workspace: str, tmp_path: Path, dev_server: str
) -> None:
    from langgraph_sdk import get_client

    path = tmp_path / "employee_data.txt"
    path.write_text(EMPLOYEES)
    await ingest_documents(services, workspace, load_path(path, max_bytes=10**6))
    client = get_client(url=dev_server)
    # What Studio renders: the graph of langgraph.json, with every node.
    assistant = (await client.assistants.search(graph_id="convrag"))[0]
    drawn = await client.assistants.get_graph(assistant["assistant_id"])
    names = {n["id"] for n in drawn["nodes"]}
    assert {
        "load_history",
        "rewrite",
        "retrieve_documents",
        "retrieve_vectors",
        "web_search",
        "synthesize",
        "check_repetition",
        "regenerate",
        "persist",
    } <= names
    thread = await client.threads.create()
    rewrites, answers = [], []
    for question in ("What is Prasad Chaudhari's salary?", "What about her basic salary?"):
        async for part in client.runs.stream(
            thread["thread_id"],
            "convrag",
            input={"message": question, "workspace_id": workspace},
            context={"workspace_id": workspace, "llm_model": "none"},
            stream_mode=["custom", "updates"],
        ):
            assert part.event != "error", part.data
            if part.event == "custom" and part.data["event"] == "rewrite":
                rewrites.append(part.data["query"])
            if part.event == "updates" and "persist" in part.data:
                answers.append(part.data["persist"]["answer"])
    assert "Prasad Chaudhari" in rewrites[1] and "basic salary" in rewrites[1].lower()
    assert "$80,000" in answers[1]
    # An input without its message (a typo) is refused, not the last question answered again.
    errors = await _run_errors(
        client,
        thread["thread_id"],
        {"mesage": "And her bonus?"},
        {"workspace_id": workspace, "llm_model": "none"},
    )
    assert errors and "no 'message'" in str(errors[0]), errors
    # A knob of the wrong type is refused by name, not read as true or failed deep inside.
    errors = await _run_errors(
        client,
        thread["thread_id"],
        {"message": "And her bonus?"},
        {"workspace_id": workspace, "llm_model": "none", "top_k": "three"},
    )
    assert errors and "top_k: expected int" in str(errors[0]), errors
    # Another workspace's run on this thread is refused before it writes there: nothing of
    # it shows in this thread's state, nor would a resume answer it here.
    before = await thread_rows(services, thread["thread_id"])
    other = f"{workspace}-b"
    errors = await _run_errors(
        client,
        thread["thread_id"],
        {"message": "INTRUDER: what is the CEO's salary?"},
        {"workspace_id": other, "llm_model": "none"},
    )
    assert errors, "the run was not refused"
    assert await thread_rows(services, thread["thread_id"]) == before
    # langgraph-api tells a client the message of only a few exception types.
    assert errors[0]["error"] == "ThreadOfAnotherWorkspace", errors
    assert errors[0]["message"].endswith(f"is not in workspace {other}"), errors
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"]["question"] != "INTRUDER: what is the CEO's salary?"
    # The dev server checkpointed into our Postgres and persisted the turns there.
    turns = await services.db.turns.all_turns(workspace, thread["thread_id"])
    assert [t.question for t in turns] == [
        "What is Prasad Chaudhari's salary?",
        "What about her basic salary?",
    ]
    assert await checkpoint_count(services, thread["thread_id"]) >= 2


async def test_a_run_cancelled_or_failing_under_langgraph_dev_stores_its_turn_failed_saying_why(
    services: Services, workspace: str, tmp_path: Path, dev_server: str, dev_llm: OpenAIStub
) -> None:
    """Studio's Cancel (SDK ``runs.cancel``) while the answer is being written, or a run
    that fails: the turn is stored failed with why, not left ``processing`` until a
    restart (as the Python API and the HTTP service store theirs)."""
    from langgraph_sdk import get_client

    path = tmp_path / "employee_data.txt"
    path.write_text(EMPLOYEES)
    await ingest_documents(services, workspace, load_path(path, max_bytes=10**6))
    dev_llm.add_rule("CURRENT QUESTION", Reply(content="Slowly. [1]", delay_s=120.0))
    client = get_client(url=dev_server)
    thread = await client.threads.create()
    run = await client.runs.create(
        thread["thread_id"],
        "convrag",
        input={"message": "What is Prasad Chaudhari's salary?"},
        context={"workspace_id": workspace, "llm_model": "openai:stub", "rewrite_model": "none"},
    )
    for _ in range(600):  # until the answer's LLM call is under way (the stub holds it)
        if any("CURRENT QUESTION" in str(r) for r in dev_llm.requests):
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the run never asked the LLM for its answer")
    await client.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    turns = await services.db.transcripts.turn_details(workspace, thread["thread_id"])
    assert [(t.question, t.status, t.error) for t in turns] == [
        ("What is Prasad Chaudhari's salary?", "failed", STOPPED_TURN)
    ]
    # A workspace embedded with another model fails the run (no fallback answers for it).
    other = f"{workspace}-m"
    await services.db.workspaces.claim_embedding_model(other, "local:some-other-model")
    thread = await client.threads.create()
    errors = await _run_errors(
        client,
        thread["thread_id"],
        {"message": "What is Prasad Chaudhari's salary?"},
        {"workspace_id": other, "llm_model": "none"},
    )
    assert errors and errors[0]["error"] == "EmbeddingMismatch", errors
    [turn] = await services.db.transcripts.turn_details(other, thread["thread_id"])
    assert turn.status == "failed" and turn.error is not None
    assert turn.error.startswith("EmbeddingMismatch: workspace"), turn.error
    assert "some-other-model" in turn.error
