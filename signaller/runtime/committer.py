"""Storing offsets off the capture loop's thread.

An offset store returns only once its record is durable: the file store fsyncs (and its directory),
the Kafka store waits for acks=all. On a busy disk an fsync waits behind whatever else the kernel is
writing back (Kafka's own log among it): up to 27 ms measured in the bench's snapshots, on the loop,
with live changes waiting. :class:`OffsetCommitter` runs the store on a thread of its own
(``signaller-offsets``); the loop hands it records and learns later which are durable.

Contract: records are stored in the order submitted, but a record still waiting when a newer one is
submitted is replaced by it (only the newest matters: each record holds the whole position), so
``durable`` may jump. ``durable`` is the sequence number of the newest record the store made durable;
nothing is confirmed to the source, and no answer is given, before that. A store failure is kept and
raised by the next ``submit``, ``durable`` or ``flush`` on the loop's thread (the session then ends and
is retried from what the store holds); after it the thread stores nothing more. Nothing survives the
process: records submitted but not yet durable at a kill are simply not stored (the restart resumes
from the last durable one, at least once).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from signaller.errors import TransientError
from signaller.state import Offsets, OffsetStore


class OffsetCommitter:
    """Stores the records :meth:`submit` hands it on its own thread, started with the first record.

    ``submit``, ``durable``, ``flush`` and ``close`` are called from the capture loop's thread;
    ``on_durable`` (e.g. the log reader's ``wake``) is called from the committer's thread after each
    durable record, so a waiting loop takes it at once.
    """

    def __init__(self, store: OffsetStore, on_durable: Callable[[], None] | None = None) -> None:
        self._store = store
        self._on_durable = on_durable
        self._cond = threading.Condition()
        self._pending: tuple[int, Offsets] | None = None
        self._submitted = 0
        self._durable = 0
        self._error: BaseException | None = None
        self._closing = False
        self._thread: threading.Thread | None = None

    def submit(self, offsets: Offsets) -> int:
        """Hand ``offsets`` to the thread (replacing a record not yet taken); its sequence number."""
        with self._cond:
            self._raise_failure()
            self._submitted += 1
            self._pending = (self._submitted, offsets)
            self._cond.notify_all()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="signaller-offsets", daemon=True)
                self._thread.start()
            return self._submitted

    @property
    def durable(self) -> int:
        """The sequence number of the newest durable record (0: none yet); raises the store's failure."""
        with self._cond:
            self._raise_failure()
            return self._durable

    @property
    def busy(self) -> bool:
        """A submitted record is not durable yet."""
        return self._durable < self._submitted and self._error is None

    def flush(self, timeout_s: float) -> None:
        """Wait until every submitted record is durable; raises the store's failure, or ``TransientError``
        after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._durable < self._submitted and self._error is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    msg = f"offsets not stored within {timeout_s:.0f}s"
                    raise TransientError(msg)
                self._cond.wait(left)
            self._raise_failure()

    def close(self) -> None:
        """Stop the thread once it stored what it holds (call ``flush`` first to wait for that); never raises."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None:
            thread.join(30)

    def _raise_failure(self) -> None:
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closing:
                    self._cond.wait()
                if self._pending is None:
                    return
                (seq, offsets), self._pending = self._pending, None
            try:
                self._store.commit(offsets)
            except BaseException as exc:  # handed to the loop's thread, which ends the session
                with self._cond:
                    self._error = exc
                    self._cond.notify_all()
                return
            with self._cond:
                self._durable = seq
                self._cond.notify_all()
            if self._on_durable is not None:
                self._on_durable()
