"""Keeps the capture running: retries transient failures with capped exponential backoff, stops
on terminal ones, and stops cleanly on SIGTERM/SIGINT.

Every retry logs the error and the wait; a failure that keeps recurring is visible in the logs
every time, never a silent stall, and never a tight loop (the wait doubles up to 60 s and resets
after a session that ran for a minute).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable

from signaller.errors import SignallerError, is_transient

log = logging.getLogger("signaller.supervisor")
INITIAL_BACKOFF_S = 1.0
MAX_BACKOFF_S = 60.0
HEALTHY_AFTER_S = 60.0


class Supervisor:
    """Runs ``session_factory().run()`` until stopped; see the module docstring."""

    def __init__(self, session_factory: Callable[[], object],
                 on_error: Callable[[str], None] | None = None) -> None:
        self._factory = session_factory
        self._on_error = on_error
        self._stop = threading.Event()
        self._session: object | None = None

    def install_signal_handlers(self) -> None:
        """Make SIGTERM and SIGINT call ``stop`` (main thread only, as Python's ``signal`` requires)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stop())

    def stop(self) -> None:
        """Ask ``run`` to return 0 (any thread, a signal handler too): the current session is stopped and no retry
        follows."""
        self._stop.set()
        stop = getattr(self._session, "stop", None)
        if callable(stop):
            stop()

    def run(self) -> int:
        """Returns the process exit code: 0 after a requested stop, 1 after a terminal error."""
        backoff = INITIAL_BACKOFF_S
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._session = self._factory()
                if self._stop.is_set():
                    # stop() ran while the session was being built, so it could not reach it.
                    return 0
                self._session.run()  # type: ignore[attr-defined]
                if self._stop.is_set():
                    return 0
            except Exception as exc:
                if not is_transient(exc):
                    if self._on_error is not None:
                        self._on_error(str(exc))
                    kind = "error" if isinstance(exc, SignallerError) else "unexpected error"
                    log.error("stopping on %s: %s", kind, exc, exc_info=not isinstance(exc, SignallerError))
                    return 1
                if self._on_error is not None:
                    self._on_error(str(exc))
                if time.monotonic() - started > HEALTHY_AFTER_S:
                    backoff = INITIAL_BACKOFF_S
                log.warning("retrying in %.0fs after: %s", backoff, exc)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
        return 0
