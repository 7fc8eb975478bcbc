"""The thread-safe face of the running sidecar that the HTTP API and the CLI talk to.

The capture loop owns the engine and runs on one thread; ``SidecarControl`` is how other threads
(the uvicorn server) reach it: ``submit`` queues a signal and returns a future resolved by the
loop once the signal was validated and applied (or rejected); ``status`` returns the latest
immutable ``SidecarStatus`` the loop published; ``set_chunk_size`` queues a change of
``incremental.snapshot.chunk.size`` that applies from the next chunk.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Literal

from signaller.signals.model import Signal, SignalOutcome

TableState = Literal["queued", "running", "paused", "completed", "skipped", "aborted"]


@dataclass(frozen=True)
class TableProgress:
    """One table of an incremental snapshot, as ``GET /snapshots`` reports it.

    ``chunk_from``/``chunk_to`` are the current chunk's exclusive lower and inclusive upper key
    bounds as text (None before the first chunk); ``estimated_rows`` is PostgreSQL's estimate
    (``pg_class.reltuples``, None if unknown); times are epoch seconds.
    """

    table: str
    state: TableState
    rows_emitted: int = 0
    estimated_rows: int | None = None
    chunk_from: str | None = None
    chunk_to: str | None = None
    maximum_key: str | None = None
    status: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    correlation_id: str | None = None
    filter: str | None = None


@dataclass(frozen=True)
class SidecarStatus:
    """Everything the API reports, published by the capture loop after each change."""

    running: bool = False
    paused: bool = False
    chunk_size: int = 1024
    correlation_id: str | None = None
    tables: tuple[TableProgress, ...] = ()
    streaming: bool = False
    committed_lsn: int = 0
    events: int = 0
    last_error: str | None = None
    extra: dict[str, float] = field(default_factory=dict)


class SidecarControl:
    """Queue between other threads and the capture loop (see the module docstring)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[Signal | int, Future[SignalOutcome]]] = queue.Queue()
        self._status = SidecarStatus()
        self._lock = threading.Lock()
        self._wake: Callable[[], None] | None = None

    # -- called by other threads ----------------------------------------------------------
    def submit(self, signal: Signal) -> Future[SignalOutcome]:
        """Queue ``signal`` for the capture loop (any thread; never blocks); the future resolves to its
        ``SignalOutcome`` once the loop has applied or rejected it."""
        future: Future[SignalOutcome] = Future()
        self._queue.put((signal, future))
        self._wake_loop()
        return future

    def set_chunk_size(self, size: int) -> Future[SignalOutcome]:
        """Queue a change of ``incremental.snapshot.chunk.size`` (any thread; never blocks); the future resolves to the
        engine's answer, and an accepted size applies from the next chunk."""
        future: Future[SignalOutcome] = Future()
        self._queue.put((size, future))
        self._wake_loop()
        return future

    def status(self) -> SidecarStatus:
        """The status the capture loop published last (any thread)."""
        with self._lock:
            return self._status

    def _wake_loop(self) -> None:
        wake = self._wake
        if wake is not None:
            wake()

    # -- called by the capture loop -------------------------------------------------------
    def wake_with(self, wake: Callable[[], None] | None) -> None:
        """What ``submit`` and ``set_chunk_size`` call after queueing, so that a loop waiting for a quiet
        log takes the request at once instead of after up to ``poll.interval.ms`` (the loop's reader's
        ``wake`` while a session runs, None between sessions)."""
        self._wake = wake

    def report_error(self, error: str) -> None:
        """The capture session failed: ``/health`` reports it until the next ``publish``."""
        from dataclasses import replace

        with self._lock:
            self._status = replace(self._status, streaming=False, last_error=error)

    def publish(self, status: SidecarStatus) -> None:
        """Make ``status`` what ``status()`` returns from now on (capture loop only; replaces a reported error)."""
        with self._lock:
            self._status = status

    def drain(self) -> list[tuple[Signal | int, Future[SignalOutcome]]]:
        """Everything queued so far (never blocks)."""
        items = []
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                return items
