"""Every operation of the live server's OpenAPI document, fuzzed by schemathesis.

Each operation gets a few schema-conforming (positive) and schema-violating (negative)
requests with a workspace API key: with random ids, and with the ids of a real
conversation, answer and document, so that the routes' own code runs and not only
their 404. Every answer must have a documented status code that is not a 5xx, a
documented content type and headers, and a body that matches its schema. The run is
bounded (a few examples per operation) and derandomized, so it is quick and sends the
same requests on every run.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import requests
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.services import Services
from tests.graph.conftest import EMPLOYEES

#: Examples per operation and pass: enough to reach odd input on every parameter, few
#: enough for the whole run to take well under a minute on two cores.
EXAMPLES_PER_OPERATION = 8

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]

FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    derandomize=True,
    database=None,
    # No shrinking: a failure is reported as found, which keeps a failing run bounded.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)

Ids = dict[str, str]

#: RFC 9110 field names are tokens; the framing headers belong to the HTTP client.
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
FRAMING = {"content-length", "transfer-encoding", "host", "connection"}


def _sendable(headers: dict[str, Any] | None) -> bool:
    """Whether a case's headers form a valid HTTP request. Negative generation can
    name a header ``*.expect.json;`` or set ``Content-Length: o;``; the HTTP server
    answers those with its own 400 before the application is reached, so they test
    the server's parser, not this API."""
    return all(TOKEN.fullmatch(name) and name.lower() not in FRAMING for name in (headers or {}))


def _fuzz(
    operation: schemathesis.APIOperation,
    mode: GenerationMode,
    base: str,
    key: str,
    path_parameters: Ids | None,
) -> str | None:
    """Run one pass of an operation's examples; the first failure found, or None."""
    session = requests.Session()
    headers = {"Authorization": f"Bearer {key}"}
    strategy = operation.as_strategy(generation_mode=mode, path_parameters=path_parameters)

    @FUZZ_SETTINGS
    @given(case=strategy)
    def run(case: schemathesis.Case) -> None:
        if not _sendable(case.headers):
            reject()
        case.call_and_validate(
            base_url=base, session=session, headers=headers, checks=CHECKS, timeout=60
        )

    ids = "known ids" if path_parameters else "random ids"
    try:
        run()
    except Unsatisfiable:
        return None  # nothing to negate: no parameters or body besides fixed path ids
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis raises a FailureGroup
        return f"{operation.label} [{mode.value}, {ids}]: {exc}"
    finally:
        session.close()
    return None


def _operations(base: str, *, security_parameters: bool) -> list[schemathesis.APIOperation]:
    """The live schema's operations, deletions last (so that the others find the known
    resources). With ``security_parameters``, negative cases also send no key or a
    malformed one (401); without, they send the key and spoil a parameter or the body."""
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json", timeout=30)
    schema.config.generation.update(with_security_parameters=security_parameters)
    operations = [result.ok() for result in schema.get_all_operations()]
    return sorted(operations, key=lambda op: op.method.upper() == "DELETE")


def _fuzz_all(base: str, new_key: Callable[[], str], known: Ids) -> list[str]:
    """Every operation of the live schema: positive with random path ids and with
    ``known`` ones, negative with known ids (a bad parameter or body) and without a
    valid key. Each pass has its own key, so that the per-key rate limit does not turn
    later passes into 429s."""
    failures: list[str] = []
    keyed = _operations(base, security_parameters=False)
    unkeyed = _operations(base, security_parameters=True)
    for operation, bad_auth in zip(keyed, unkeyed, strict=True):
        fixed = {p.name: known[p.name] for p in operation.path_parameters} or None
        passes: list[tuple[schemathesis.APIOperation, GenerationMode, Ids | None]] = [
            (operation, GenerationMode.POSITIVE, None),
            (operation, GenerationMode.NEGATIVE, fixed),
            (bad_auth, GenerationMode.NEGATIVE, fixed),
        ]
        if fixed:
            passes.insert(1, (operation, GenerationMode.POSITIVE, fixed))
        for op, mode, path_parameters in passes:
            failure = _fuzz(op, mode, base, new_key(), path_parameters)
            if failure is not None:
                failures.append(failure)
    return failures


async def _known_ids(services: Services, workspace: str, key: str, base: str, tmp: Path) -> Ids:
    """A ready document, a conversation with one answered turn, in ``workspace``, and
    the served model."""
    path = tmp / "employee_data.txt"
    path.write_text(EMPLOYEES)
    await ingest_documents(services, workspace, load_path(path, max_bytes=10**6))
    auth = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=auth, timeout=60) as client:
        document = (await client.get("/v1/documents")).json()[0]
        conversation = (await client.post("/v1/conversations")).json()["conversation_id"]
        reply = await client.post(
            f"/v1/conversations/{conversation}/messages",
            json={"content": "What is John Doe's basic salary?"},
            headers={"Accept": "application/json"},
        )
    assert document["status"] == "ready" and reply.status_code == 200, reply.text
    return {
        "conversation_id": conversation,
        "message_id": reply.json()["turn_id"],
        "document_id": document["id"],
        "model": "convrag",  # the one model of GET /v1/models/{model}
    }


async def test_every_operation_answers_documented_statuses_and_schemas(
    app_server: tuple[str, FastAPI], services: Services, tmp_path: Path
) -> None:
    base, _ = app_server
    workspace = f"ws-{uuid.uuid4().hex[:10]}"
    loop = asyncio.get_running_loop()

    def new_key() -> str:
        future = asyncio.run_coroutine_threadsafe(
            services.db.workspaces.create_api_key(workspace), loop
        )
        key: Any = future.result(timeout=30)
        return str(key)

    known = await _known_ids(
        services, workspace, await services.db.workspaces.create_api_key(workspace), base, tmp_path
    )
    # Schemathesis's calls block; the server runs on this event loop, so they run in a
    # worker thread.
    failures = await asyncio.to_thread(_fuzz_all, base, new_key, known)
    assert not failures, "\n\n".join(failures)


async def test_an_unparsable_body_is_refused_saying_what_is_wrong_with_it(
    base_url: str, services: Services
) -> None:
    key = await services.db.workspaces.create_api_key(f"ws-{uuid.uuid4().hex[:10]}")
    auth = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base_url, headers=auth, timeout=30) as client:
        not_utf8 = await client.post(
            "/v1/chat/completions",
            content=b'{"messages": "\xff"}',
            headers={"Content-Type": "application/json"},
        )
        not_multipart = await client.post(
            "/v1/documents",
            content=b"--x\r\n[]--x--\r\n",
            headers={"Content-Type": "multipart/form-data; boundary=y"},
        )
    assert not_utf8.status_code == 400, not_utf8.text  # as OpenAI answers a bad body
    assert "not UTF-8" in not_utf8.json()["detail"]
    assert "not UTF-8" in not_utf8.json()["error"]["message"]
    assert not_utf8.json()["errors"][0]["type"] == "json_invalid"
    assert not_multipart.status_code == 422, not_multipart.text
    assert "not valid multipart/form-data" in not_multipart.json()["detail"]
