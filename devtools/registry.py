"""Apicurio Registry, the local stack's schema registry: its distribution copied from Maven Central by
Maven and unpacked into the cache, run with the machine's ``java`` (17), its data in the stack's
PostgreSQL (database ``StackSettings.registry_db``) so that a restart keeps every schema and id.

Clients use its Confluent-compatible API, ``StackSettings.registry_url``. Apicurio's global default
compatibility is NONE (Confluent's is BACKWARD): ``await_ready`` sets BACKWARD once the server answers.
3.0.x is the newest line that runs on Java 17 (3.3 needs Java 21).
"""

from __future__ import annotations

import shutil
import tarfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from devtools import maven, postgres
from devtools.processes import (
    ServiceStartError,
    port_open,
    read_pid,
    start_detached,
    stop_pid,
    wait_for_port,
    wait_until_bindable,
)
from devtools.settings import StackSettings
from signaller.errors import TerminalError
from signaller.sinks.registry import Compatibility, SchemaRegistryClient, SchemaRegistryError

VERSION = "3.0.9"
ARTIFACT = f"io.apicurio:apicurio-registry-app:{VERSION}:tar.gz:all"
HEAP = "-Xmx384m"
POOL_SIZE = 4
"""JDBC connections it keeps to PostgreSQL (Apicurio's default is 20, of the server's 200)."""
DEFAULT_COMPATIBILITY = Compatibility.BACKWARD


class RegistrySetupError(TerminalError):
    """Java is missing or the distribution could not be unpacked."""


@dataclass(frozen=True)
class RegistryPaths:
    """Where the distribution is unpacked, the download lands, and the log and pid file live."""

    app_dir: Path
    download_dir: Path
    log_file: Path
    pid_file: Path

    @property
    def runner_jar(self) -> Path:
        return self.app_dir / f"apicurio-registry-app-{VERSION}-runner.jar"


def paths_for(settings: StackSettings) -> RegistryPaths:
    base = settings.home / "registry"
    return RegistryPaths(
        app_dir=base / f"apicurio-registry-{VERSION}",
        download_dir=base / "download",
        log_file=settings.home / "logs" / "registry.log",
        pid_file=base / "registry.pid",
    )


def ensure_distribution(paths: RegistryPaths) -> Path:
    """Copy the distribution from Maven Central (through ``~/.m2``) and unpack it, once per version;
    return the runner jar. The archive is deleted once unpacked."""
    stamp = paths.app_dir / ".unpacked"
    if stamp.exists():
        return paths.runner_jar
    archive = maven.copy_artifact(ARTIFACT, paths.download_dir)
    if paths.app_dir.exists():
        shutil.rmtree(paths.app_dir)
    paths.app_dir.mkdir(parents=True)
    try:
        with tarfile.open(archive) as tar:
            unpack(tar, paths.app_dir)
    except (OSError, tarfile.TarError) as exc:
        msg = f"unpacking {archive} into {paths.app_dir} failed: {exc}"
        raise RegistrySetupError(msg) from exc
    if not paths.runner_jar.exists():
        msg = f"{archive} holds no {paths.runner_jar.name}"
        raise RegistrySetupError(msg)
    stamp.write_text(ARTIFACT)
    shutil.rmtree(paths.download_dir)
    return paths.runner_jar


def unpack(tar: tarfile.TarFile, target: Path) -> None:
    """Unpack ``tar`` under ``target`` with Python's ``data`` extraction filter (no member outside
    ``target``, no device files, no absolute or escaping links). Pythons without it (before 3.11.4:
    Debian 12's 3.11.2) get the same checks here, and a refused member raises ``tarfile.TarError``
    naming it."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(target, filter="data")
        return
    root = target.resolve()
    for member in tar.getmembers():
        destination = (root / member.name).resolve()
        link_target = (destination.parent / member.linkname).resolve() if member.issym() else (
            (root / member.linkname).resolve() if member.islnk() else destination)
        if (member.isdev() or Path(member.name).is_absolute() or not destination.is_relative_to(root)
                or not link_target.is_relative_to(root)):
            msg = f"refusing archive member {member.name!r}: it would land outside {target} or is a device"
            raise tarfile.TarError(msg)
    tar.extractall(target)  # every member was checked above


def server_properties(settings: StackSettings) -> dict[str, str]:
    """The system properties of the server: loopback only, SQL storage in the stack's PostgreSQL."""
    return {
        "quarkus.http.host": "127.0.0.1",
        "quarkus.http.port": str(settings.registry_port),
        "apicurio.storage.kind": "sql",
        "apicurio.storage.sql.kind": "postgresql",
        "apicurio.datasource.url": (
            f"jdbc:postgresql://127.0.0.1:{settings.pg_port}/{settings.registry_db}"
        ),
        "apicurio.datasource.username": settings.pg_user,
        "apicurio.datasource.password": settings.pg_password,
        "apicurio.datasource.jdbc.initial-size": "1",
        "apicurio.datasource.jdbc.min-size": "1",
        "apicurio.datasource.jdbc.max-size": str(POOL_SIZE),
        # Every request in the log at INFO is noise for a test stack; warnings and errors stay.
        "quarkus.http.access-log.enabled": "false",
    }


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        msg = "java not found on PATH: Apicurio Registry needs Java 17+ (apt-get install openjdk-17-jre-headless)"
        raise RegistrySetupError(msg)
    return java


def launch(settings: StackSettings, paths: RegistryPaths) -> int | None:
    """Start the server in the background unless its port is open (then None); return its pid at once.
    PostgreSQL must be running: the registry's database is created here if missing. ``await_ready``
    waits for it."""
    if port_open(settings.registry_port):
        return None
    runner = ensure_distribution(paths)
    postgres.ensure_database(settings, settings.registry_db)
    wait_until_bindable(settings.registry_port, "Apicurio Registry", paths.log_file)
    argv = [
        _java(), HEAP, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
        *(f"-D{key}={value}" for key, value in server_properties(settings).items()),
        "-jar", str(runner),
    ]
    paths.pid_file.parent.mkdir(parents=True, exist_ok=True)
    return start_detached(argv, paths.log_file, paths.pid_file)


def await_ready(settings: StackSettings, paths: RegistryPaths, pid: int | None, timeout_s: float = 120.0) -> None:
    """Block until the server reports ready (``/health/ready``), then set its global compatibility to
    BACKWARD. Raises ``ServiceStartError`` if it exits or ``timeout_s`` passes first."""
    deadline = time.monotonic() + timeout_s
    wait_for_port(settings.registry_port, "Apicurio Registry", paths.log_file, pid, timeout_s)
    while not _ready(settings):
        if time.monotonic() > deadline:
            raise ServiceStartError("Apicurio Registry", f"not ready after {timeout_s:.0f}s", paths.log_file)
        if pid is not None and read_pid(paths.pid_file) is None:
            raise ServiceStartError("Apicurio Registry", "the process exited", paths.log_file)
        time.sleep(0.2)
    try:
        SchemaRegistryClient(settings.registry_url).set_compatibility(DEFAULT_COMPATIBILITY)
    except SchemaRegistryError as exc:
        reason = f"setting the compatibility failed: {exc}"
        raise ServiceStartError("Apicurio Registry", reason, paths.log_file) from exc


def _ready(settings: StackSettings) -> bool:
    url = f"http://127.0.0.1:{settings.registry_port}/health/ready"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def start(settings: StackSettings, paths: RegistryPaths, timeout_s: float = 120.0) -> bool:
    """Start the server unless its port is already open and wait until it is ready. Returns True if this
    call started it."""
    pid = launch(settings, paths)
    if pid is None:
        return False
    await_ready(settings, paths, pid, timeout_s)
    return True


def stop(paths: RegistryPaths) -> bool:
    """Stop the server started by ``launch`` (by pid file). Returns True if it was running."""
    pid = read_pid(paths.pid_file)
    if pid is None:
        return False
    stop_pid(pid)
    paths.pid_file.unlink(missing_ok=True)
    return True


def compatibility(settings: StackSettings) -> Compatibility | None:
    """The registry's global compatibility, or None if it does not answer."""
    try:
        return SchemaRegistryClient(settings.registry_url, timeout_s=2).compatibility()
    except SchemaRegistryError:
        return None
