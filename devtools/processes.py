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


EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_DEFAULT_EPHEMERAL_RANGE = (32768, 60999)
TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN",
              "0B": "CLOSING"}


def ephemeral_port_range(source: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's range of client source ports (``ip_local_port_range``; Linux's default if unreadable).

    A server port inside it can be taken, between two starts, as the source port of any client connection."""
    try:
        low, high = (int(part) for part in source.read_text().split())
    except (OSError, ValueError):
        return LINUX_DEFAULT_EPHEMERAL_RANGE
    return low, high


def sockets_on_port(port: int, proc_net: tuple[str, ...] = ("/proc/net/tcp", "/proc/net/tcp6")) -> list[str]:
    """Each TCP socket whose local port is ``port``, as ``"<state> to <remote address>:<port>"`` (empty where
    ``/proc/net`` is unreadable)."""
    found: list[str] = []
    for table in proc_net:
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        found.extend(_describe_socket(fields) for fields in (line.split() for line in lines)
                     if len(fields) > 3 and int(fields[1].rsplit(":", 1)[1], 16) == port)
    return found


def _describe_socket(fields: list[str]) -> str:
    remote_host, remote_port = fields[2].rsplit(":", 1)
    state = TCP_STATES.get(fields[3].upper(), fields[3])
    if len(remote_host) == 8:
        address = ".".join(str(b) for b in reversed(bytes.fromhex(remote_host)))
    else:
        address = f"[{remote_host}]"
    return f"{state} to {address}:{int(remote_port, 16)}"


def port_bindable(port: int, host: str = "127.0.0.1") -> bool:
    """True if a server could bind ``host:port`` now (with ``SO_REUSEADDR``, as PostgreSQL, MariaDB, Kafka and
    the registry do: a TIME_WAIT leftover does not count, a live client connection from that port does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def wait_until_bindable(port: int, service: str, log_file: Path, timeout_s: float = 30.0) -> None:
    """Block until ``port`` can be bound, for at most ``timeout_s``: a client connection that took it as its
    source port usually ends within seconds. Raise ``ServiceStartError`` naming the sockets that hold it."""
    deadline = time.monotonic() + timeout_s
    while not port_bindable(port):
        if time.monotonic() >= deadline:
            holders = "; ".join(sockets_on_port(port)) or "no socket visible in /proc/net/tcp"
            low, high = ephemeral_port_range()
            hint = (f"; port {port} lies in the kernel's client port range {low}-{high} "
                    "(ip_local_port_range): choose one below it" if low <= port <= high else "")
            reason = f"port {port} is held by a socket that does not listen ({holders}) for {timeout_s:.0f}s{hint}"
            raise ServiceStartError(service, reason, log_file)
        time.sleep(0.5)


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
