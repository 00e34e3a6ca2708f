"""The stubs' server: an ``aiohttp`` app served in the current event loop or from a
thread with its own, on an ephemeral port, and the foreground loop of their CLIs.

Why apart: :mod:`convrag.testing.openai_stub` and :mod:`convrag.testing.serper_stub`
fake different APIs on the same machinery, which knows nothing of either.
:mod:`~convrag.testing.openai_stub`, where it was first, still exports both names.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Self

from aiohttp import web

__all__ = ["StubServer", "run_forever_cli"]


class StubServer:
    """Base class: an ``aiohttp.web`` app that runs in the current loop or in a thread.

    Subclasses implement :meth:`_setup_routes`. The server binds ``host`` and ``port``
    (``0`` = an ephemeral port, the default, so parallel test runs never collide); the
    chosen port is available as :attr:`port` once started.

    In-loop: ``async with server:`` or ``await server.start()`` / ``await server.stop()``.
    In-thread: ``with server:``, ``with Cls.in_thread(...)`` or
    ``server.start_in_thread()`` / ``server.stop_in_thread()``. The thread owns its own
    event loop, so synchronous code (``llm.invoke``) and other event loops can use it.
    """

    #: Seconds that ``stop()`` waits for in-flight handlers before cancelling them.
    shutdown_timeout: float = 0.2

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._thread_stop: asyncio.Event | None = None
        # Guards rules/recordings shared between the server thread and test code.
        self._lock = threading.Lock()

    # -- subclass hook ------------------------------------------------------------------
    def _setup_routes(self, app: web.Application) -> None:
        """Register the stub's routes on ``app``."""
        raise NotImplementedError

    # -- addresses ----------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound TCP port (only valid while running)."""
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return self._port

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT`` without any path."""
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server is currently accepting connections."""
        return self._runner is not None

    # -- in-loop mode -------------------------------------------------------------------
    async def start(self) -> Self:
        """Start serving inside the *running* event loop; returns ``self``."""
        if self._runner is not None:
            raise RuntimeError(f"{type(self).__name__} already running")
        app = web.Application(client_max_size=64 * 1024 * 1024)
        self._setup_routes(app)
        # access_log=None: logging every request costs real time in benchmarks.
        # handler_cancellation=True: a client that gives up (timeout) cancels the
        # handler's scripted sleep instead of leaving it running.
        runner = web.AppRunner(
            app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=self.shutdown_timeout,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        addresses = runner.addresses
        self._port = int(addresses[0][1])
        self._runner = runner
        return self

    async def stop(self) -> None:
        """Stop serving (in-loop mode). Idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        self._port = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- in-thread mode -----------------------------------------------------------------
    def start_in_thread(self, timeout: float = 10.0) -> Self:
        """Start serving from a daemon thread with its own event loop; returns ``self``.

        Blocks until the port is bound (or raises what ``start()`` raised).
        """
        if self._thread is not None:
            raise RuntimeError(f"{type(self).__name__} already running in a thread")
        ready = threading.Event()
        failure: list[BaseException] = []

        async def serve() -> None:
            self._thread_loop = asyncio.get_running_loop()
            self._thread_stop = asyncio.Event()
            try:
                await self.start()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            try:
                await self._thread_stop.wait()
            finally:
                await self.stop()

        thread = threading.Thread(
            target=asyncio.run, args=(serve(),), name=f"{type(self).__name__}", daemon=True
        )
        thread.start()
        if not ready.wait(timeout):
            raise TimeoutError(f"{type(self).__name__} did not start within {timeout}s")
        if failure:
            thread.join(timeout)
            raise failure[0]
        self._thread = thread
        return self

    def stop_in_thread(self, timeout: float = 10.0) -> None:
        """Stop a server started with :meth:`start_in_thread`. Idempotent."""
        thread, self._thread = self._thread, None
        loop, stop_event = self._thread_loop, self._thread_stop
        if thread is None or loop is None or stop_event is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(stop_event.set)
        thread.join(timeout)
        self._thread_loop = None
        self._thread_stop = None

    @classmethod
    @contextlib.contextmanager
    def in_thread(cls, *args: Any, **kwargs: Any) -> Iterator[Self]:
        """``with Cls.in_thread(**ctor_kwargs) as stub:`` — construct and run in a thread."""
        server = cls(*args, **kwargs)
        server.start_in_thread()
        try:
            yield server
        finally:
            server.stop_in_thread()

    def __enter__(self) -> Self:
        return self.start_in_thread()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_in_thread()


def run_forever_cli(server: StubServer, banner: Callable[[StubServer], str]) -> None:
    """Run ``server`` in the foreground until SIGINT/SIGTERM (used by the CLIs).

    Prints ``banner(server)`` (which contains the bound port) on one flushed stdout
    line, so a parent process that passed ``--port 0`` can read the chosen port.
    """

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        async with server:
            print(banner(server), flush=True)
            await stop.wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
