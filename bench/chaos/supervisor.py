"""A process restarted whenever it exits, as an operator's supervisor (systemd ``Restart=always``, a
Kubernetes pod) would: the chaos run's sidecar and apply job each run under one.

The process runs in its own session (process group), so :meth:`Supervised.kill9` reaches the whole group (the
apply job's Python driver and its JVM). Every exit is recorded with its time and code; the supervisor waits
``restart_delay_s`` and starts the process again, with the argv ``argv_for()`` returns at that moment (a run may
switch the sidecar's configuration between restarts).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Exit:
    """One exit of the supervised process: when (``time.time()``), its code, and whether we killed it."""

    at: float
    code: int
    killed_by_us: bool


@dataclass
class Supervised:
    """``argv_for()`` under supervision, output appended to ``log``; ``start()`` once, ``stop()`` at the end."""

    name: str
    argv_for: Callable[[], list[str]]
    log: Path
    env: dict[str, str]
    cwd: Path
    restart_delay_s: float = 1.0
    exits: list[Exit] = field(default_factory=list)
    starts: int = 0
    _proc: subprocess.Popen[bytes] | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _killing: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._launch()
        self._thread = threading.Thread(target=self._watch, name=f"supervise-{self.name}", daemon=True)
        self._thread.start()

    def _launch(self) -> None:
        with self._lock, self.log.open("ab") as out:
            self.starts += 1
            out.write(f"\n--- {self.name} start {self.starts} at {time.strftime('%H:%M:%S')} ---\n".encode())
            out.flush()
            self._proc = subprocess.Popen(self.argv_for(), stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=self.env, cwd=self.cwd,
                                          start_new_session=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            proc = self._proc
            if proc is None:
                return
            code = proc.wait()
            with self._lock:
                self.exits.append(Exit(time.time(), code, self._killing))
                self._killing = False
            if self._stop.is_set():
                return
            self._stop.wait(self.restart_delay_s)
            if not self._stop.is_set():
                self._launch()

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def alive(self) -> bool:
        return self.pid is not None

    def kill9(self) -> bool:
        """``kill -9`` of the process group; False if the process was not running."""
        return self._signal(signal.SIGKILL)

    def restart(self) -> bool:
        """SIGTERM (an orderly stop, as for a configuration change); the supervisor starts it again. False if
        the process was not running. The exit is recorded as caused by us."""
        return self._signal(signal.SIGTERM)

    def _signal(self, sig: signal.Signals) -> bool:
        """Send ``sig`` to the process group, its exit recorded as caused by us; False if it was not running."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                return False
            self._killing = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            return True

    def stop(self, timeout_s: float = 60.0) -> int | None:
        """SIGTERM the process group (SIGKILL after ``timeout_s``), stop supervising; the exit code."""
        self._stop.set()
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(30)
        if self._thread is not None:
            self._thread.join(10)
        return proc.returncode

    def unexpected_exits(self) -> list[Exit]:
        """Exits we did not cause with :meth:`kill9` or :meth:`restart` (the process gave up on its own)."""
        return [e for e in self.exits if not e.killed_by_us]
