"""A MariaDB server for development and tests, set up the way binlog capture needs it
(``binlog_format=ROW``, ``binlog_row_image=FULL``, GTIDs, annotated row events), on its own port,
socket and data directory (never the machine's system server).

Binaries come from Debian's ``mariadb-server`` package (10.11). When they are missing and we are
root, :func:`ensure_binaries` installs it with apt-get (``compose/local/install-system-deps.sh``
does the same for ``make``). As root the server runs as the package's ``mysql`` user.

The first start creates the data directory, a password-protected ``root`` reachable over TCP from
127.0.0.1 and the stack's database; later starts reuse them. :func:`stop` shuts the server down
cleanly (its binlog and GTID state survive, as a real server's do).
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from devtools.processes import (
    ServiceStartError,
    port_open,
    read_pid,
    start_detached,
    stop_pid,
    tail,
    wait_for_port,
    wait_until_bindable,
)
from devtools.settings import StackSettings
from signaller.errors import TerminalError

SERVER_USER = "mysql"
SERVER_SETTINGS: dict[str, str] = {
    "bind-address": "127.0.0.1",
    "server-id": "1",
    "log-bin": "mariadb-bin",
    "binlog_format": "ROW",
    "binlog_row_image": "FULL",
    "binlog_annotate_row_events": "ON",
    "binlog_row_metadata": "FULL",
    "gtid_domain_id": "0",
    "gtid_strict_mode": "ON",
    "binlog_expire_logs_seconds": "604800",
    "max_binlog_size": "256M",
    "character-set-server": "utf8mb4",
    "collation-server": "utf8mb4_general_ci",
    "skip-name-resolve": "ON",
    "max_connections": "200",
    "innodb_buffer_pool_size": "256M",
    "innodb_log_file_size": "64M",
    "innodb_flush_log_at_trx_commit": "2",
    "sync_binlog": "0",
}
"""The server's settings: what binlog capture needs, then sizes for a small development machine
(``innodb_flush_log_at_trx_commit=2`` and ``sync_binlog=0`` trade crash durability of the server
itself for speed; a ``kill -9`` of the sidecar is unaffected)."""


class MariaDbSetupError(TerminalError):
    """MariaDB binaries are missing and could not be installed, or the first set-up failed."""


@dataclass(frozen=True)
class MariaDbPaths:
    base: Path
    data_dir: Path
    config: Path
    socket: Path
    pid_file: Path
    log_file: Path


def _traversable_by_others(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents] if p.exists())


def paths_for(settings: StackSettings) -> MariaDbPaths:
    """Data directory, config, socket, pid and log. As root, the ``mysql`` user must reach the data
    directory; if the cache sits under a private directory, the data goes to ``/var/tmp``."""
    base = settings.home / "mariadb"
    if os.geteuid() == 0 and not _traversable_by_others(settings.home.parent):
        digest = hashlib.sha256(str(settings.home).encode()).hexdigest()[:10]
        base = Path("/var/tmp") / f"signaller-mariadb-{digest}"
    return MariaDbPaths(
        base=base, data_dir=base / "data", config=base / "my.cnf", socket=base / "mariadb.sock",
        pid_file=base / "mariadbd.pid", log_file=settings.home / "logs" / "mariadb.log",
    )


def ensure_binaries() -> Path:
    """Return the path of ``mariadbd``, installing Debian's ``mariadb-server`` first if needed."""
    found = shutil.which("mariadbd") or (Path("/usr/sbin/mariadbd") if Path("/usr/sbin/mariadbd").exists() else None)
    if found:
        return Path(found)
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        msg = "MariaDB server binaries (mariadbd) not found; install Debian's 'mariadb-server' package"
        raise MariaDbSetupError(msg)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=False, env=env, capture_output=True)
    result = subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", "mariadb-server", "mariadb-client"],
        check=False, env=env, capture_output=True, text=True,
    )
    if result.returncode != 0 or not Path("/usr/sbin/mariadbd").exists():
        msg = f"apt-get install mariadb-server failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        raise MariaDbSetupError(msg)
    return Path("/usr/sbin/mariadbd")


def server_config(settings: StackSettings, paths: MariaDbPaths) -> str:
    """The ``my.cnf`` the server starts with (``--defaults-file``: no system option file is read)."""
    lines = [
        "[mariadbd]",
        f"port = {settings.mariadb_port}",
        f"datadir = {paths.data_dir}",
        f"socket = {paths.socket}",
        f"pid-file = {paths.base / 'mariadbd-server.pid'}",
        *(f"{key} = {value}" for key, value in SERVER_SETTINGS.items()),
    ]
    if os.geteuid() == 0:
        lines.append(f"user = {SERVER_USER}")
    return "\n".join(lines) + "\n"


def _chown_to_server_user(path: Path) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _install_db(paths: MariaDbPaths) -> None:
    argv = ["mariadb-install-db", f"--defaults-file={paths.config}", "--auth-root-authentication-method=normal",
            "--skip-test-db"]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        msg = f"mariadb-install-db failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        raise MariaDbSetupError(msg)


def admin_sql(paths: MariaDbPaths, sql: str) -> str:
    """Run ``sql`` as the socket's password-less ``root@localhost``; return its tab-separated output."""
    argv = ["mariadb", f"--socket={paths.socket}", "-uroot", "--batch", "--skip-column-names", "-e", sql]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        msg = f"MariaDB statement failed ({sql[:200]}): {result.stderr.strip()}"
        raise MariaDbSetupError(msg)
    return result.stdout


def bootstrap_sql(settings: StackSettings) -> str:
    """The first start's grants: ``root`` over TCP with the stack's password, and the stack's database."""
    user, password = settings.mariadb_user, settings.mariadb_password.replace("'", "''")
    return (
        f"CREATE USER IF NOT EXISTS '{user}'@'127.0.0.1';"
        f"ALTER USER '{user}'@'127.0.0.1' IDENTIFIED BY '{password}';"
        f"GRANT ALL PRIVILEGES ON *.* TO '{user}'@'127.0.0.1' WITH GRANT OPTION;"
        f"CREATE DATABASE IF NOT EXISTS `{settings.mariadb_db}`;"
    )


def start(settings: StackSettings, paths: MariaDbPaths, timeout_s: float = 60.0) -> bool:
    """Start the server if its port is closed (creating its data directory on the first call).
    Returns True if this call started it."""
    if port_open(settings.mariadb_port):
        return False
    binary = ensure_binaries()
    paths.base.mkdir(parents=True, exist_ok=True)
    paths.base.chmod(0o755)
    _chown_to_server_user(paths.base)
    paths.config.write_text(server_config(settings, paths))
    first_start = not (paths.data_dir / "mysql").exists()
    if first_start:
        _install_db(paths)
    paths.log_file.parent.mkdir(parents=True, exist_ok=True)
    wait_until_bindable(settings.mariadb_port, "MariaDB", paths.log_file)
    pid = start_detached([str(binary), f"--defaults-file={paths.config}"], paths.log_file, paths.pid_file)
    wait_for_port(settings.mariadb_port, "MariaDB", paths.log_file, pid, timeout_s)
    try:
        admin_sql(paths, bootstrap_sql(settings))
    except MariaDbSetupError as exc:
        raise ServiceStartError("MariaDB", str(exc), paths.log_file) from exc
    return True


def stop(paths: MariaDbPaths) -> bool:
    """Shut the server started by :func:`start` down (SIGTERM: a clean shutdown). True if it ran."""
    pid = read_pid(paths.pid_file)
    if pid is None:
        return False
    stop_pid(pid, timeout_s=60.0)
    paths.pid_file.unlink(missing_ok=True)
    return True


def describe(paths: MariaDbPaths) -> str:
    return f"data {paths.data_dir}, log {paths.log_file}\n{tail(paths.log_file, 5)}"
