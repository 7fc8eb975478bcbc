"""A PostgreSQL server for development and tests, with ``wal_level=logical``, on its own port and
data directory (never the machine's system cluster).

Binaries come from Debian's ``postgresql`` package (15 or newer). When they are missing and we
are root, ``ensure_binaries`` installs the package with apt-get. PostgreSQL refuses to run as
root, so as root the server runs as the ``postgres`` system user that the package creates.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from devtools.processes import ServiceStartError, port_open, tail, wait_until_bindable
from devtools.settings import StackSettings
from signaller.errors import TerminalError

MIN_MAJOR = 15
SERVER_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "unix_socket_directories": "''",
    "wal_level": "logical",
    "max_wal_senders": "20",
    "max_replication_slots": "20",
    "max_connections": "200",
    "shared_buffers": "256MB",
    "wal_sender_timeout": "60s",
    "max_slot_wal_keep_size": "4GB",
    "log_min_messages": "warning",
    "logging_collector": "off",
}


class PostgresSetupError(TerminalError):
    """PostgreSQL binaries are missing and could not be installed."""


@dataclass(frozen=True)
class PostgresPaths:
    bin_dir: Path
    data_dir: Path
    log_file: Path


def find_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<major>/bin`` with major >= 15 holding ``postgres``."""
    root = Path("/usr/lib/postgresql")
    majors = sorted((int(p.name) for p in root.glob("*") if p.name.isdigit()), reverse=True) if root.exists() else []
    for major in majors:
        candidate = root / str(major) / "bin"
        if major >= MIN_MAJOR and (candidate / "postgres").exists():
            return candidate
    return None


def ensure_binaries() -> Path:
    """Return the PostgreSQL bin directory, installing Debian's package first if needed."""
    found = find_bin_dir()
    if found is not None:
        return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        msg = (
            f"PostgreSQL {MIN_MAJOR}+ server binaries not found under /usr/lib/postgresql; "
            "install Debian's 'postgresql' package (apt-get install postgresql)"
        )
        raise PostgresSetupError(msg)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=False, env=env, capture_output=True)
    result = subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", "postgresql", "postgresql-contrib"],
        check=False, env=env, capture_output=True, text=True,
    )
    found = find_bin_dir()
    if found is None:
        msg = f"apt-get install postgresql failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        raise PostgresSetupError(msg)
    return found


def _traversable_by_others(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents] if p.exists())


def paths_for(settings: StackSettings, bin_dir: Path) -> PostgresPaths:
    """Data directory and log file. As root, the ``postgres`` user must reach the data directory;
    if the cache sits under a private directory (``/root``), the data goes to ``/var/tmp``."""
    base = settings.home / "postgres"
    if os.geteuid() == 0 and not _traversable_by_others(settings.home.parent):
        digest = hashlib.sha256(str(settings.home).encode()).hexdigest()[:10]
        base = Path("/var/tmp") / f"signaller-postgres-{digest}"
    return PostgresPaths(bin_dir=bin_dir, data_dir=base / "data", log_file=settings.home / "logs" / "postgres.log")


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


def _chown_to_server_user(path: Path) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam("postgres")
        os.chown(path, entry.pw_uid, entry.pw_gid)


def init_cluster(settings: StackSettings, paths: PostgresPaths) -> None:
    """``initdb`` the data directory once, with a password for the superuser and logical WAL."""
    if (paths.data_dir / "PG_VERSION").exists():
        return
    paths.data_dir.mkdir(parents=True, exist_ok=True)
    for path in (paths.data_dir.parent, paths.data_dir):
        path.chmod(0o700 if path == paths.data_dir else 0o755)
        _chown_to_server_user(path)
    pwfile = paths.data_dir.parent / "pwfile"
    pwfile.write_text(settings.pg_password + "\n")
    _chown_to_server_user(pwfile)
    argv = [
        str(paths.bin_dir / "initdb"), "-D", str(paths.data_dir), "-U", settings.pg_user,
        f"--pwfile={pwfile}", "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8",
    ]
    result = subprocess.run(_as_server_user(argv), capture_output=True, text=True, check=False)
    pwfile.unlink()
    if result.returncode != 0:
        msg = f"initdb failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        raise PostgresSetupError(msg)
    conf = "\n".join(f"{key} = {value}" for key, value in SERVER_SETTINGS.items())
    with (paths.data_dir / "postgresql.conf").open("a") as handle:
        handle.write(f"\n# signaller local stack\nport = {settings.pg_port}\n{conf}\n")
    (paths.data_dir / "pg_hba.conf").write_text(
        "host all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\n"
    )


def start(settings: StackSettings, paths: PostgresPaths, timeout_s: float = 60.0) -> bool:
    """Start the server if its port is closed. Returns True if this call started it."""
    if port_open(settings.pg_port):
        return False
    init_cluster(settings, paths)
    wait_until_bindable(settings.pg_port, "PostgreSQL", paths.log_file)
    paths.log_file.parent.mkdir(parents=True, exist_ok=True)
    paths.log_file.touch()
    _chown_to_server_user(paths.log_file)
    argv = [
        str(paths.bin_dir / "pg_ctl"), "-D", str(paths.data_dir), "-l", str(paths.log_file),
        "-o", f"-p {settings.pg_port}", "-w", "-t", str(int(timeout_s)), "start",
    ]
    result = subprocess.run(_as_server_user(argv), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ServiceStartError("PostgreSQL", f"pg_ctl start failed: {result.stderr.strip()}", paths.log_file)
    ensure_database(settings, settings.pg_db)
    return True


def ensure_database(settings: StackSettings, dbname: str) -> None:
    """Create the database ``dbname`` on the running server unless it exists (waiting up to 10 s for the
    server to accept connections)."""
    env = {**os.environ, "PGPASSWORD": settings.pg_password}
    base = ["psql", "-h", "127.0.0.1", "-p", str(settings.pg_port), "-U", settings.pg_user, "-d", "postgres", "-tAc"]
    for _ in range(50):
        probe = subprocess.run(
            [*base, f"SELECT 1 FROM pg_database WHERE datname = '{dbname}'"],
            capture_output=True, text=True, env=env, check=False,
        )
        if probe.returncode == 0:
            break
        time.sleep(0.2)
    if probe.stdout.strip() != "1":
        subprocess.run([*base, f'CREATE DATABASE "{dbname}"'], check=True, env=env, capture_output=True)


def stop(paths: PostgresPaths) -> bool:
    """Stop the server (fast shutdown) if running. Returns True if it was running."""
    if not (paths.data_dir / "postmaster.pid").exists():
        return False
    argv = [str(paths.bin_dir / "pg_ctl"), "-D", str(paths.data_dir), "-m", "fast", "-w", "stop"]
    result = subprocess.run(_as_server_user(argv), capture_output=True, text=True, check=False)
    return result.returncode == 0


def describe(paths: PostgresPaths) -> str:
    return f"data {paths.data_dir}, log {paths.log_file}\n{tail(paths.log_file, 5)}"
