"""The reference implementation beside the sidecar: Debezium's PostgreSQL connector (or its MariaDB
connector) in Kafka Connect standalone mode, against the local stack's PostgreSQL (or MariaDB) and Kafka.

Jars: ``compose/local/debezium/pom.xml`` (Kafka's connect-runtime at the broker's version, the JSON
converter, ``io.debezium:debezium-connector-postgres``) resolved from Maven Central by Maven and copied
into ``<stack home>/debezium/libs`` once per pom version; for ``source="mariadb"``,
``compose/local/debezium-mariadb/pom.xml`` (``io.debezium:debezium-connector-mariadb``, on a classpath of
its own: see that pom for its version) into ``<stack home>/debezium/mariadb-libs``. Nothing from Debezium
is in the repository.

With ``avro_registry_url`` the worker writes Avro through Apicurio Registry's converter
(:data:`APICURIO_CONVERTER`, version :data:`APICURIO_VERSION`, the registry's) in the Confluent wire format
(magic byte 0, the 4-byte content id, which is the id the registry's Confluent-compatible API gives; no
Kafka headers), registering under ``<topic>-key``/``<topic>-value`` (``TopicIdStrategy``). Its jars: the
third-party ones from ``compose/local/debezium-avro/pom.xml`` into ``<stack home>/debezium-avro/libs``,
Apicurio's own (:data:`APICURIO_JARS`) copied one by one (their parent pom is not on Maven Central as
reachable here, so Maven cannot resolve them as dependencies; the pom explains).

Used by the compatibility suite (``tests/compat/``) and the benchmarks (``bench/``). One
:class:`DebeziumConnect` is one worker process running one connector; its offsets live in a file in
its own work directory, so a new work directory is a new connector with no history (its replication
slot and publication are the caller's to drop).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from devtools import maven
from devtools.processes import ServiceStartError, start_detached, stop_pid
from devtools.settings import REPO_ROOT, StackSettings
from signaller.errors import TerminalError

POM = REPO_ROOT / "compose" / "local" / "debezium" / "pom.xml"
AVRO_POM = REPO_ROOT / "compose" / "local" / "debezium-avro" / "pom.xml"
APICURIO_VERSION = "3.0.9"
APICURIO_CONVERTER = "io.apicurio.registry.utils.converter.AvroConverter"
APICURIO_JARS = tuple(f"io.apicurio:apicurio-registry-{module}:{APICURIO_VERSION}" for module in (
    "utils-converter", "avro-serde-kafka", "serde-kafka-common", "serde-common-avro", "serde-common",
    "schema-resolver", "common"))
"""Apicurio's converter and what it needs of Apicurio's own modules (the Avro path only: the converter jar's
JSON Schema and Protobuf converters stay unloadable, which Connect's plugin scan only logs)."""
MARIADB_POM = REPO_ROOT / "compose" / "local" / "debezium-mariadb" / "pom.xml"
CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
MARIADB_CONNECTOR_CLASS = "io.debezium.connector.mariadb.MariaDbConnector"
STREAMING_LOG_LINE = "BinlogStreamingChangeEventSource - Connected to binlog at"
"""What the MariaDB connector logs once its binlog reader is connected (after its schema snapshot)."""
Source = Literal["postgres", "mariadb"]
"""Which database the worker's connector reads: it picks the pom, the jar directory and the defaults."""
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectStandalone"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


class DebeziumConnectError(TerminalError):
    """The Connect worker or its connector failed; the message names the log file to read."""


def libs_dir(settings: StackSettings, source: Source = "postgres") -> Path:
    """Where the Connect worker's jars are copied (one directory per connector's pom)."""
    return settings.home / "debezium" / ("libs" if source == "postgres" else "mariadb-libs")


def prepare(settings: StackSettings, source: Source = "postgres") -> Path:
    """Resolve and copy the jars (a no-op when the pom has not changed); return the directory."""
    return maven.copy_dependencies(POM if source == "postgres" else MARIADB_POM, libs_dir(settings, source))


def prepare_avro(settings: StackSettings) -> list[Path]:
    """Resolve and copy the Avro worker's jars (no-ops when nothing changed); return its classpath entries."""
    base = settings.home / "debezium-avro"
    libs = maven.copy_dependencies(AVRO_POM, base / "libs", parents=(POM,))
    jars = [maven.copy_artifact(coordinates, base / "apicurio" / coordinates.split(":")[1])
            for coordinates in APICURIO_JARS]
    return [libs / "*", *jars]


def avro_converter_properties(registry_api_url: str) -> dict[str, str]:
    """Key and value converters writing Avro through Apicurio's converter, Confluent wire format, into the
    registry at ``registry_api_url`` (its v3 API: ``StackSettings.registry_api_url``)."""
    properties: dict[str, str] = {}
    for side in ("key", "value"):
        properties.update({
            f"{side}.converter": APICURIO_CONVERTER,
            f"{side}.converter.apicurio.registry.url": registry_api_url,
            f"{side}.converter.apicurio.registry.auto-register": "true",
            f"{side}.converter.apicurio.registry.headers.enabled": "false",
            f"{side}.converter.apicurio.registry.id-handler": "io.apicurio.registry.serde.Default4ByteIdHandler",
            f"{side}.converter.apicurio.registry.use-id": "contentId",
            # One self-contained schema per subject, as Confluent's converter registers it. Without it,
            # 3.0.9 registers each nested record as an artifact of its own and then fails on an envelope
            # naming its Value record twice (before, after): "content_references_pkey" in the registry.
            f"{side}.converter.apicurio.registry.dereference-schema": "true",
        })
    return properties


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def connector_defaults(settings: StackSettings) -> dict[str, str]:
    """The connection half of a connector config for the local stack's database."""
    return {
        "connector.class": CONNECTOR_CLASS,
        "database.hostname": "127.0.0.1",
        "database.port": str(settings.pg_port),
        "database.user": settings.pg_user,
        "database.password": settings.pg_password,
        "database.dbname": settings.pg_db,
        "plugin.name": "pgoutput",
        "tasks.max": "1",
    }


def unique_server_id() -> int:
    """A ``database.server.id`` for one run: random in [10 000, 2^31), so two connectors reading the same
    server's binlog at once (and the server itself, id 1) never share a replica id."""
    return 10_000 + secrets.randbelow(2**31 - 10_000)


def mariadb_connector_defaults(settings: StackSettings, topic_prefix: str) -> dict[str, str]:
    """The connection half of a MariaDB connector config for the local stack's MariaDB: a server id of its
    own, the stack's database, the schema history in the stack's Kafka (topic ``<prefix>.schema-history``),
    the signal table ``<db>.debezium_signal`` and Debezium's default chunk size; the caller's properties
    override any of them."""
    return {
        "connector.class": MARIADB_CONNECTOR_CLASS,
        "database.hostname": "127.0.0.1",
        "database.port": str(settings.mariadb_port),
        "database.user": settings.mariadb_user,
        "database.password": settings.mariadb_password,
        "database.server.id": str(unique_server_id()),
        "database.include.list": settings.mariadb_db,
        "schema.history.internal.kafka.bootstrap.servers": settings.bootstrap_servers,
        "schema.history.internal.kafka.topic": f"{topic_prefix}.schema-history",
        "signal.data.collection": f"{settings.mariadb_db}.debezium_signal",
        "incremental.snapshot.chunk.size": "1024",
        "tasks.max": "1",
    }


def worker_properties(bootstrap_servers: str, offsets_file: Path, rest_port: int,
                      value_schemas: bool = True, flush_interval_ms: int = 1000) -> dict[str, str]:
    """A standalone worker writing JSON (with embedded schemas unless ``value_schemas`` is false)."""
    enable = "true" if value_schemas else "false"
    return {
        "bootstrap.servers": bootstrap_servers,
        "key.converter": JSON_CONVERTER,
        "value.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": enable,
        "value.converter.schemas.enable": enable,
        "offset.storage.file.filename": str(offsets_file),
        "offset.flush.interval.ms": str(flush_interval_ms),
        "listeners": f"http://127.0.0.1:{rest_port}",
        "plugin.discovery": "only_scan",
    }


def render_properties(values: Mapping[str, str]) -> str:
    """``key=value`` lines; backslashes, newlines and leading blanks escaped as java.util.Properties reads them."""
    lines = []
    for key, value in values.items():
        escaped = value.replace("\\", "\\\\").replace("\n", "\\n")
        if escaped[:1] in (" ", "\t"):
            escaped = "\\" + escaped
        lines.append(f"{key}={escaped}")
    return "\n".join(lines) + "\n"


class DebeziumConnect:
    """One Kafka Connect standalone worker running one Debezium PostgreSQL (or MariaDB) connector.

    ``connector`` holds the connector's own properties (``topic.prefix``, ``slot.name``, ...) on top of
    :func:`connector_defaults` (``source="mariadb"``: :func:`mariadb_connector_defaults`, whose schema
    history topic follows ``connector["topic.prefix"]``); ``name`` is the connector name. :meth:`start`
    returns once the connector and its task are ``RUNNING`` (Debezium's PostgreSQL connector creates its
    replication slot before the task reports running, so a change committed after :meth:`start` returns is
    captured; the MariaDB connector only once :meth:`wait_streaming` returned). :meth:`stop` sends SIGTERM
    (Connect flushes offsets on a clean shutdown), then SIGKILL after the timeout. A second
    :meth:`start` with the same work directory resumes from the stored offsets. With ``avro_registry_url``
    (Apicurio's v3 API, ``StackSettings.registry_api_url``) keys and values are Avro through Apicurio's
    converter (:func:`avro_converter_properties`) instead of JSON.
    """

    def __init__(self, settings: StackSettings, connector: Mapping[str, str], work_dir: Path,
                 name: str = "debezium", heap: str = "-Xmx1g", value_schemas: bool = True,
                 avro_registry_url: str | None = None, source: Source = "postgres") -> None:
        self.settings = settings
        self.source = source
        self.name = name
        self.work_dir = work_dir
        self.heap = heap
        self.value_schemas = value_schemas
        self.avro_registry_url = avro_registry_url
        defaults = (connector_defaults(settings) if source == "postgres"
                    else mariadb_connector_defaults(settings, connector.get("topic.prefix", name)))
        self.connector = {**defaults, **connector, "name": name}
        self.log_file = work_dir / "connect.log"
        self.rest_port = 0
        self.pid: int | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self, timeout_s: float = 180.0) -> None:
        """Write the worker and connector files, start the JVM and wait until the task runs."""
        if self.avro_registry_url is None:
            classpath = [prepare(self.settings, self.source) / "*"]
        elif self.source == "postgres":
            classpath = prepare_avro(self.settings)
        else:
            msg = "the Avro worker runs Debezium's PostgreSQL connector only"
            raise DebeziumConnectError(msg)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.rest_port = free_port()
        worker = worker_properties(self.settings.bootstrap_servers, self.work_dir / "offsets.dat",
                                   self.rest_port, self.value_schemas)
        if self.avro_registry_url is not None:
            worker.update(avro_converter_properties(self.avro_registry_url))
        worker_file = self.work_dir / "worker.properties"
        connector_file = self.work_dir / "connector.properties"
        worker_file.write_text(render_properties(worker))
        connector_file.write_text(render_properties(self.connector))
        argv = ["java", self.heap, "-XX:+UseG1GC", "-Djava.awt.headless=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                "-cp", ":".join(str(entry) for entry in classpath), MAIN_CLASS, str(worker_file), str(connector_file)]
        self.pid = start_detached(argv, self.log_file, self.work_dir / "connect.pid")
        self._wait_running(timeout_s)

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the worker (SIGTERM, then SIGKILL after ``timeout_s``). Safe to call twice."""
        if self.pid is not None:
            stop_pid(self.pid, timeout_s)
            self.pid = None

    def __enter__(self) -> DebeziumConnect:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inspection ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """The connector's status from Connect's REST API (``GET /connectors/<name>/status``)."""
        url = f"http://127.0.0.1:{self.rest_port}/connectors/{self.name}/status"
        with urllib.request.urlopen(url, timeout=5) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result

    def rss_mb(self) -> float:
        """Resident set size of the worker JVM in MiB (0.0 when it is not running)."""
        if self.pid is None:
            return 0.0
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def log_text(self) -> str:
        """Everything the worker logged so far."""
        try:
            return self.log_file.read_text(errors="replace")
        except OSError:
            return ""

    def wait_streaming(self, timeout_s: float = 120.0) -> None:
        """Wait until the connector streams: for MariaDB, its binlog reader is connected (the task is
        ``RUNNING`` before its schema snapshot, and changes committed before the snapshot's binlog position
        are not captured with ``snapshot.mode=no_data``); for PostgreSQL, :meth:`start` already waited."""
        if self.source == "postgres":
            return
        deadline = time.monotonic() + timeout_s
        while STREAMING_LOG_LINE not in self.log_text():
            if not self._alive():
                raise ServiceStartError("Debezium Connect worker", "the process exited", self.log_file)
            if time.monotonic() > deadline:
                msg = f"connector {self.name} not streaming after {timeout_s:.0f}s; see {self.log_file}"
                raise DebeziumConnectError(msg)
            time.sleep(0.2)

    def _alive(self) -> bool:
        if self.pid is None:
            return False
        with contextlib.suppress(ChildProcessError, OSError):
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def _wait_running(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        last = "no answer from the REST API yet"
        while time.monotonic() < deadline:
            if not self._alive():
                raise ServiceStartError("Debezium Connect worker", "the process exited", self.log_file)
            try:
                status = self.status()
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last = str(exc)
            else:
                tasks = status.get("tasks", [])
                states = [status.get("connector", {}).get("state")] + [t.get("state") for t in tasks]
                if any(state == "FAILED" for state in states):
                    trace = next((t.get("trace", "") for t in tasks if t.get("state") == "FAILED"), "")
                    msg = f"connector {self.name} failed: {trace[:2000]}; see {self.log_file}"
                    raise DebeziumConnectError(msg)
                if tasks and all(state == "RUNNING" for state in states):
                    return
                last = json.dumps(status)
            time.sleep(0.5)
        self.stop()
        raise ServiceStartError("Debezium Connect worker", f"not RUNNING after {timeout_s:.0f}s ({last})",
                                self.log_file)
