"""Parent side of :mod:`bench.sidecar`: start the sidecar process, follow its reports, stop it."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devtools.env import sidecar_env

REPO_ROOT = Path(__file__).resolve().parents[1]


def process_cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds ``pid`` has used so far (``/proc/<pid>/stat``); NaN if unknown."""
    if pid is None:
        return math.nan
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_between(samples: list[dict[str, Any]], start: float, end: float, thread: str | None = None) -> float:
    """Sidecar CPU seconds (of one kind of ``thread``: ``main``, ``librdkafka`` or ``other``, else all) from the
    last of its ``sample`` reports at or before ``start`` to the first at or after ``end``; NaN without both."""
    before = [s for s in samples if s["t"] <= start]
    after = [s for s in samples if s["t"] >= end]
    if not before or not after:
        return math.nan
    if thread is None:
        return float(after[0]["cpu_s"] - before[-1]["cpu_s"])
    return float(after[0]["threads"][thread] - before[-1]["threads"][thread])


class SidecarFailed(RuntimeError):
    """The sidecar (or another reporting process) exited with an error or did not reach a state in time."""


class ReportingProcess:
    """A child process printing JSON-lines reports on stdout (stderr goes to ``stderr_path``), and
    the reports it printed so far. With ``stdin=True`` its stdin is a pipe for :meth:`send`."""

    def __init__(self, args: list[str], stderr_path: Path, stdin: bool = False,
                 env: dict[str, str] | None = None) -> None:
        self.stderr_path = stderr_path
        self._stderr = self.stderr_path.open("wb")
        self.spawned_at = time.time()
        self.proc = subprocess.Popen(args, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=self._stderr,
                                     env=env or dict(os.environ), stdin=subprocess.PIPE if stdin else None)
        self.reports: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            with self._changed:
                self.reports.append(item)
                self._changed.notify_all()
        with self._changed:
            self.reports.append({"event": "eof", "t": time.time()})
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout_s: float, what: str,
                 start: int = 0) -> dict[str, Any]:
        """The first report (from index ``start`` on) satisfying ``predicate``; SidecarFailed on exit
        or timeout."""
        deadline = time.monotonic() + timeout_s
        index = start
        with self._changed:
            while True:
                while index < len(self.reports):
                    item = self.reports[index]
                    index += 1
                    if predicate(item):
                        return item
                    if item["event"] in ("exit", "eof"):
                        raise SidecarFailed(f"process exited while waiting for {what}: {item}\n{self.log_tail()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SidecarFailed(f"timed out after {timeout_s:.0f}s waiting for {what}\n{self.log_tail()}")
                self._changed.wait(remaining)

    def send(self, command: dict[str, Any]) -> int:
        """Write one command line on stdin (``--control`` sidecars, :mod:`bench.spark_worker`); returns
        the number of reports received so far, for :meth:`wait_for`'s ``start``."""
        assert self.proc.stdin is not None, "started without a stdin pipe"
        with self._changed:
            seen = len(self.reports)
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        self.proc.stdin.flush()
        return seen

    def events(self, kind: str) -> list[dict[str, Any]]:
        with self._changed:
            return [r for r in self.reports if r["event"] == kind]

    def stop(self, timeout_s: float = 30.0) -> dict[str, Any]:
        """SIGTERM, wait for the exit report; kill if it does not come."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(10)
        self._stderr.close()
        exits = self.events("exit")
        if not exits:
            raise SidecarFailed(f"process gave no exit report (code {self.proc.returncode})\n{self.log_tail()}")
        return exits[-1]

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class Sidecar(ReportingProcess):
    """One ``python -m bench.sidecar`` process (``control=True``: with ``--control``, commands on stdin)."""

    def __init__(self, properties: dict[str, object], workdir: Path, profile: Path | None = None,
                 control: bool = False) -> None:
        config_path = workdir / "connector.json"
        config_path.write_text(json.dumps(properties))
        args = [sys.executable, "-m", "bench.sidecar", str(config_path)]
        if profile is not None:
            args.append(str(profile))
        if control:
            args.append("--control")
        env = sidecar_env(SIGNALLER_LOG_FORMAT="text")
        super().__init__(args, workdir / "sidecar.log", stdin=control, env=env)
