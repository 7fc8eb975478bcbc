"""Starting, finding and stopping the stack's background processes (pid files, port probes)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from signaller.errors import TransientError


class ServiceStartError(TransientError):
    """A service did not come up; the message names its log file and shows its last lines."""

    def __init__(self, service: str, reason: str, log_file: Path) -> None:
        self.service = service
        self.log_file = log_file
        super().__init__(f"{service} did not start: {reason}; see {log_file}\n{tail(log_file)}")


def tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of ``path`` (empty if it does not exist)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join("    " + line for line in text.splitlines()[-lines:])


def port_open(port: int, host: str = "127.0.0.1", timeout_s: float = 0.5) -> bool:
    """True if something accepts TCP connections on ``host:port``."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout_s):
        return True
    return False


def read_pid(pid_file: Path) -> int | None:
    """The pid in ``pid_file`` if that process is alive, else None."""
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def start_detached(argv: Sequence[str], log_file: Path, pid_file: Path, env: dict[str, str] | None = None) -> int:
    """Start ``argv`` in its own session (it outlives the caller), output appended to ``log_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("ab") as log:
        proc = subprocess.Popen(
            list(argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
    pid_file.write_text(f"{proc.pid}\n")
    return proc.pid


def stop_pid(pid: int, timeout_s: float = 30.0) -> None:
    """SIGTERM the process group of ``pid``, then SIGKILL it if it is still alive after ``timeout_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            _reap(pid)
            time.sleep(0.1)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def wait_for_port(port: int, service: str, log_file: Path, pid: int | None, timeout_s: float) -> None:
    """Block until ``port`` accepts connections; raise ``ServiceStartError`` if the process dies
    or ``timeout_s`` passes first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if port_open(port):
            return
        if pid is not None:
            _reap(pid)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                raise ServiceStartError(service, "the process exited", log_file) from None
        time.sleep(0.2)
    raise ServiceStartError(service, f"port {port} not open after {timeout_s:.0f}s", log_file)
