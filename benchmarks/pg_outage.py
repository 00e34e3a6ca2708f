"""PostgreSQL outages under load: what do clients get, and how soon does the service recover?

`convrag serve` runs on a fresh data directory holding the sample documents, with the
OpenAI stub as its LLM. ``--clients`` clients send requests in a loop (list documents,
create a conversation, ask a question as JSON, read the conversation, `/healthz`). For
each outage of ``--outages`` seconds, the embedded postmaster is stopped behind the
service's back (``pg_ctl stop -m fast``), kept down (the data directory's lock is held,
so the service's supervisor, which would start it within seconds, waits) and started
again the way another convrag command would start it (it joins the data directory,
then leaves it to the service).
Figures per outage:

* replies by status during the whole run; a 5xx other than 503 is a failure, and every
  503 must carry ``Retry-After``;
* recovery: from the moment PostgreSQL accepts connections again to the first success
  of each kind of request sent after it (the slowest kind is the figure; bar 3 s);
* at the end, the service gets SIGTERM: the postmaster it ran on, the restarted one,
  must be gone with it (no leaked postmaster).

With ``--freeze`` the server is frozen instead (every PostgreSQL process gets SIGSTOP,
then SIGCONT: nothing is closed or refused, every wait just waits), and the figures add,
per kind of request, the slowest reply to a request sent while the freeze lasted (the
time to its 503), the slowest reply to one already in flight when it began, and the
turns answered (a 200 to a message) that are not stored ``done`` afterwards (lost).

With ``--kill`` it is killed instead (every PostgreSQL process gets SIGKILL, as from the
OOM killer: every connection breaks, the socket refuses new ones, and the next start
runs crash recovery) while ``--streams`` streaming turns are in flight (started
:data:`STAGGER_S` apart, the kill as long after the last, so that each is at another
step of its turn; the stub streams each answer over a few seconds). The lock
is held for the outage's length (``0``: not at all), then the service's own supervisor
starts the server again; the outage ends (``up``) when it accepts connections. The
figures are the freeze's, plus per streaming turn how it ended (``done``, ``error``,
or a broken stream), the slowest time from the kill to its end and from its last token
to its end (the time it waited on the database), and the ``done`` ones among the lost.

    python benchmarks/pg_outage.py --outages 5,35 --out bench-out/pg-outage.json
    python benchmarks/pg_outage.py --freeze --outages 10,40 --out bench-out/pg-freeze.json
    python benchmarks/pg_outage.py --kill --outages 0,5,35 --out bench-out/pg-kill.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import signal
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
from bench_common import log, report, server_process, stack_pids, stub_process
from kill_restart import QUESTIONS, prepare_samples

from convrag.stores.embedded import pid_alive
from convrag.testing.faults import PostgresFreeze, PostgresKill, PostgresOutage

KINDS = ("documents", "conversation", "message", "read", "healthz")
#: Seconds between the stub's streamed answer chunks in ``--kill`` mode: an answer of
#: about 14 pieces streams for about 3 s, so the streaming turns are in flight at the kill.
KILL_TOKEN_DELAY_S = 0.2
#: Seconds between the starts of the streaming turns in ``--kill`` mode (the kill comes
#: as long after the last one's): the turns are at different steps at the kill.
STAGGER_S = 0.25


class Load:
    """Clients in a loop; every reply is recorded as (sent, done, kind, status, retry_after)."""

    def __init__(self, base: str, key: str) -> None:
        self.base = base
        self.headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
        self.replies: list[tuple[float, float, str, int, str | None]] = []
        self.answered: list[tuple[str, str]] = []
        """(conversation, turn) of every message answered 200."""
        self.stopping = False

    async def _one(
        self,
        http: httpx.AsyncClient,
        kind: str,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
    ) -> httpx.Response | None:
        sent = time.monotonic()
        try:
            resp = await http.request(method, f"{self.base}{path}", json=body, headers=self.headers)
        except httpx.HTTPError:
            self.replies.append((sent, time.monotonic(), kind, 0, None))
            await asyncio.sleep(0.2)
            return None
        self.replies.append(
            (sent, time.monotonic(), kind, resp.status_code, resp.headers.get("retry-after"))
        )
        if resp.status_code >= 500:
            await asyncio.sleep(0.1)  # a client backing off a little, not hammering
        return resp

    async def client(self, i: int) -> None:
        conv: str | None = None
        n = i
        async with httpx.AsyncClient(timeout=60) as http:
            while not self.stopping:
                await self._one(http, "documents", "GET", "/v1/documents")
                made = await self._one(http, "conversation", "POST", "/v1/conversations")
                if made is not None and made.status_code in (200, 201):
                    conv = made.json()["conversation_id"]
                if conv is not None:
                    asked = await self._one(
                        http,
                        "message",
                        "POST",
                        f"/v1/conversations/{conv}/messages",
                        {"content": QUESTIONS[n % len(QUESTIONS)]},
                    )
                    if asked is not None and asked.status_code == 200:
                        self.answered.append((conv, asked.json()["turn_id"]))
                    await self._one(http, "read", "GET", f"/v1/conversations/{conv}")
                await self._one(http, "healthz", "GET", "/healthz")
                n += 1


class Stream:
    """One streaming turn: when it began, streamed its first and last token, and ended,
    and how (``done``, ``error``, ``broken``: the stream ended without either, or
    ``status <code>``)."""

    def __init__(self, conv: str) -> None:
        self.conv = conv
        self.sent = time.monotonic()
        self.first_token: float | None = None
        self.last_token: float | None = None
        self.ended: float | None = None
        self.outcome = "broken"
        self.message = ""
        self.turn_id: str | None = None


async def _stream_turn(
    http: httpx.AsyncClient, base: str, key: str, conv: str, question: str, turn: Stream
) -> None:
    """Ask ``question`` in ``conv`` over SSE, recording on ``turn`` as it goes."""
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    url = f"{base}/v1/conversations/{conv}/messages"
    try:
        async with http.stream("POST", url, json={"content": question}, headers=headers) as r:
            if r.status_code != 200:
                turn.outcome = f"status {r.status_code}"
                return
            name = ""
            async for line in r.aiter_lines():
                if line.startswith("event:"):
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("data:") and name:
                    if name == "token":
                        turn.last_token = time.monotonic()
                        if turn.first_token is None:
                            turn.first_token = turn.last_token
                    elif name in ("done", "error"):
                        turn.outcome = name
                        data = json.loads(line.split(":", 1)[1])
                        turn.message = str(data.get("message", ""))
                        turn.turn_id = data.get("turn_id")
                    name = ""
    except httpx.HTTPError as exc:
        turn.message = type(exc).__name__
    finally:
        turn.ended = time.monotonic()


def _streams_figures(streams: list[Stream], down: float) -> dict[str, Any]:
    """The streaming turns in flight at ``down`` (begun before, ended after): how they
    ended, the slowest time from ``down`` and from each one's last token to its end."""
    in_flight = [t for t in streams if t.ended is not None and t.sent < down < t.ended]
    return {
        "streams_in_flight": len(in_flight),
        "streams_outcomes": dict(
            sorted(Counter(f"{t.outcome} {t.message}".strip() for t in in_flight).items())
        ),
        "streams_streaming_at_kill": sum(
            1 for t in in_flight if t.first_token is not None and t.first_token < down
        ),
        "streams_slowest_end_s_from_kill": max(
            (round(t.ended - down, 3) for t in in_flight if t.ended is not None), default=None
        ),
        "streams_slowest_end_s_from_last_token": max(
            (
                round(t.ended - max(t.last_token or down, down), 3)
                for t in in_flight
                if t.ended is not None
            ),
            default=None,
        ),
    }


def _accepts_connections(data_dir: Path) -> bool:
    """Whether the embedded PostgreSQL of ``data_dir`` takes a connection and a query."""
    try:
        lines = (data_dir / "pg" / "postmaster.pid").read_text().splitlines()
        with psycopg.connect(
            f"postgresql://postgres:@/postgres?host={lines[4]}", connect_timeout=2
        ) as conn:
            conn.execute("SELECT 1")
    except (OSError, IndexError, psycopg.Error):
        return False
    return True


def _recovery(
    replies: list[tuple[float, float, str, int, str | None]], up: float
) -> dict[str, float | None]:
    """Per kind: seconds from ``up`` to the first success of a request sent after it."""
    out: dict[str, float | None] = {}
    for kind in KINDS:
        done = [d for s, d, k, status, _ in replies if k == kind and s >= up and status < 400]
        out[kind] = round(min(done) - up, 3) if done else None
    return out


def _during(
    replies: list[tuple[float, float, str, int, str | None]], down: float, up: float
) -> dict[str, Any]:
    """Per kind, the slowest reply to a request sent while the server was frozen (its
    time to a 503), and to one in flight when the freeze began."""
    sent = Counter[str]()
    slowest: dict[str, float] = {}
    in_flight: dict[str, float] = {}
    for s, d, kind, _, _ in replies:
        if down <= s < up:
            sent[kind] += 1
            slowest[kind] = max(slowest.get(kind, 0.0), round(d - s, 3))
        elif s < down < d:
            in_flight[kind] = max(in_flight.get(kind, 0.0), round(d - down, 3))
    return {
        "sent_while_frozen": dict(sent),
        "slowest_reply_s_sent_while_frozen": slowest,
        "slowest_reply_s_in_flight_from_freeze": in_flight,
    }


async def _lost(base: str, key: str, answered: list[tuple[str, str]]) -> list[str]:
    """The turns answered 200 that are not stored ``done``."""
    headers = {"Authorization": f"Bearer {key}"}
    lost: list[str] = []
    async with httpx.AsyncClient(timeout=60) as http:
        for conv in sorted({c for c, _ in answered}):
            turns = (await http.get(f"{base}/v1/conversations/{conv}", headers=headers)).json()
            done = {t["id"] for t in turns["turns"] if t["status"] == "done"}
            lost += [t for c, t in answered if c == conv and t not in done]
    return lost


async def run(
    data_dir: Path,
    outages: list[float],
    clients: int,
    *,
    freeze: bool = False,
    kill: bool = False,
    streams: int = 8,
    server_src: str | None = None,
) -> dict[str, Any]:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        key = await asyncio.get_running_loop().run_in_executor(pool, prepare_samples, data_dir)
    results: list[dict[str, Any]] = []
    server_env = {"PYTHONPATH": server_src} if server_src else None
    with (
        stub_process(data_dir, token_delay_s=KILL_TOKEN_DELAY_S if kill else 0.0) as stub_url,
        server_process(data_dir, stub_url, extra_env=server_env) as handle,
    ):
        load = Load(handle.base_url, key)
        tasks = [asyncio.create_task(load.client(i)) for i in range(clients)]
        streamed: list[Stream] = []
        stream_http = httpx.AsyncClient(timeout=120)
        await asyncio.sleep(3.0)
        for seconds in outages:
            first = len(load.replies)
            in_flight: list[Stream] = []
            stream_tasks: list[asyncio.Task[None]] = []
            if kill:
                for i in range(streams):
                    made = await stream_http.post(
                        f"{handle.base_url}/v1/conversations", headers=load.headers
                    )
                    conv = made.json()["conversation_id"]
                    turn = Stream(conv)
                    in_flight.append(turn)
                    question = QUESTIONS[i % len(QUESTIONS)]
                    stream_tasks.append(
                        asyncio.create_task(
                            _stream_turn(stream_http, handle.base_url, key, conv, question, turn)
                        )
                    )
                    # Staggered: at the kill, each is at another step of its turn
                    # (loading its history, retrieving, streaming, storing its answer).
                    await asyncio.sleep(STAGGER_S)
            verb = "killing" if kill else "freezing" if freeze else "stopping"
            log(f"outage of {seconds:.0f} s: {verb} PostgreSQL")
            down = time.monotonic()
            # Held down: the service's supervisor would start it again within seconds.
            outage: PostgresOutage | PostgresFreeze | PostgresKill = (
                PostgresKill(data_dir, hold=seconds > 0)
                if kill
                else PostgresFreeze(data_dir)
                if freeze
                else PostgresOutage(data_dir)
            )
            await asyncio.to_thread(outage.begin)
            await asyncio.sleep(max(0.0, seconds - (time.monotonic() - down)))
            await asyncio.to_thread(outage.end)
            if kill:  # the supervisor starts it: up once it accepts connections
                while not await asyncio.to_thread(_accepts_connections, data_dir):
                    await asyncio.sleep(0.05)
            up = time.monotonic()
            log(f"PostgreSQL back after {up - down:.1f} s; waiting for every kind of request")
            deadline = up + 60.0
            while time.monotonic() < deadline and None in _recovery(load.replies, up).values():
                await asyncio.sleep(0.1)
            await asyncio.sleep(2.0)
            async with asyncio.timeout(120):
                await asyncio.gather(*stream_tasks)
            streamed += in_flight
            load.answered += [
                (t.conv, t.turn_id) for t in in_flight if t.outcome == "done" and t.turn_id
            ]
            window = load.replies[first:]
            statuses = Counter(str(status) for _, _, _, status, _ in window)
            by_kind = Counter(
                f"{kind} {status}"
                for _, _, kind, status, _ in window
                if status != 200 and status != 201
            )
            recovery = _recovery(load.replies, up)
            slowest = max((v for v in recovery.values() if v is not None), default=None)
            results.append(
                {
                    "outage_s": round(up - down, 2),
                    "replies": dict(sorted(statuses.items())),
                    "failed_replies_by_kind": dict(sorted(by_kind.items())),
                    "server_errors_not_503": sum(1 for *_, s, _ in window if s >= 500 and s != 503),
                    "connection_errors": statuses.get("0", 0),
                    "503_without_retry_after": sorted(
                        k for _, _, k, s, ra in window if s == 503 and not (ra or "").isdigit()
                    ),
                    "recovery_s": recovery,
                    "recovery_s_slowest": slowest,
                    **_during(window, down, up),
                    **(_streams_figures(in_flight, down) if kill else {}),
                }
            )
            log(f"recovered in {slowest} s; replies {dict(statuses)}")
        load.stopping = True
        for failed in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(failed, Exception):
                raise failed
        await stream_http.aclose()
        lost = await _lost(handle.base_url, key, load.answered)
        done_streams = {t.turn_id for t in streamed if t.outcome == "done"}
        pids = stack_pids(data_dir)
        server = psutil.Process(handle.pid)
        t0 = time.perf_counter()
        server.send_signal(signal.SIGTERM)
        with contextlib.suppress(psutil.TimeoutExpired):
            await asyncio.to_thread(server.wait, 30)
        sigterm_s = time.perf_counter() - t0
        settle = time.monotonic() + 10.0
        while any(p and pid_alive(p) for p in pids.values()) and time.monotonic() < settle:
            await asyncio.sleep(0.1)
        leaked = {name: bool(p and pid_alive(p)) for name, p in pids.items()}
    return {
        "clients": clients,
        "outages": results,
        "sigterm_exit_s": round(sigterm_s, 2),
        "stores_left_running_after_sigterm": leaked,
        "total_replies": len(load.replies),
        "mode": "kill (SIGKILL)"
        if kill
        else "freeze (SIGSTOP)"
        if freeze
        else "stop (pg_ctl stop -m fast)",
        "turns_answered": len(load.answered),
        "answered_turns_lost": len(lost),
        **(
            {
                "streamed_turns_done": len(done_streams),
                "streamed_done_turns_lost": len(done_streams & set(lost)),
            }
            if kill
            else {}
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--outages",
        default="5,35",
        help="outage lengths in seconds, comma-separated (default 5,35)",
    )
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument(
        "--freeze", action="store_true", help="freeze PostgreSQL (SIGSTOP) instead of stopping it"
    )
    parser.add_argument(
        "--kill",
        action="store_true",
        help="kill PostgreSQL (SIGKILL) with streaming turns in flight; the outage's "
        "length is how long its restart is held off (0: not at all)",
    )
    parser.add_argument(
        "--streams", type=int, default=8, help="streaming turns in flight at each kill"
    )
    parser.add_argument(
        "--server-src",
        help="the src directory the service runs from (say an older checkout's, for a "
        "baseline); default: this interpreter's",
    )
    parser.add_argument(
        "--data-dir", type=Path, help="a fresh directory for the stack (default: a temporary one)"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    outages = [float(x) for x in args.outages.split(",") if x.strip()]
    with tempfile.TemporaryDirectory(prefix="cv-pg-outage-") as tmp:
        data_dir = args.data_dir or Path(tmp)
        report(
            asyncio.run(
                run(
                    data_dir,
                    outages,
                    args.clients,
                    freeze=args.freeze,
                    kill=args.kill,
                    streams=args.streams,
                    server_src=args.server_src,
                )
            ),
            args.out,
        )


if __name__ == "__main__":
    main()
