"""A single-node Apache Kafka broker in KRaft mode, its jars resolved from Maven Central by
``compose/local/kafka/pom.xml`` and run with the machine's ``java``."""

from __future__ import annotations

import base64
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from devtools import maven
from devtools.processes import port_open, read_pid, start_detached, stop_pid, wait_for_port, wait_until_bindable
from devtools.settings import REPO_ROOT, StackSettings
from signaller.errors import TerminalError

POM = REPO_ROOT / "compose" / "local" / "kafka" / "pom.xml"
HEAP = "-Xmx768m"


class KafkaSetupError(TerminalError):
    """Java is missing or the storage directory could not be formatted."""


@dataclass(frozen=True)
class KafkaPaths:
    libs: Path
    data_dir: Path
    config: Path
    log_file: Path
    pid_file: Path


def paths_for(settings: StackSettings) -> KafkaPaths:
    base = settings.home / "kafka"
    return KafkaPaths(
        libs=base / "libs",
        data_dir=base / "data",
        config=base / "server.properties",
        log_file=settings.home / "logs" / "kafka.log",
        pid_file=base / "kafka.pid",
    )


def server_properties(settings: StackSettings, data_dir: Path) -> str:
    """The broker+controller configuration: one node, loopback only, replication factor 1."""
    return f"""\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{settings.kafka_controller_port}
listeners=PLAINTEXT://127.0.0.1:{settings.kafka_port},CONTROLLER://127.0.0.1:{settings.kafka_controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{settings.kafka_port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs={data_dir}
num.partitions=1
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=168
log.segment.bytes=268435456
message.max.bytes=16777216
"""


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        msg = "java not found on PATH: the Kafka broker needs Java 17+ (apt-get install openjdk-17-jre-headless)"
        raise KafkaSetupError(msg)
    return java


def _classpath(paths: KafkaPaths) -> str:
    return f"{paths.libs}/*"


def new_cluster_id() -> str:
    """A random KRaft cluster id: 22 URL-safe base64 characters, never starting with ``-``.

    Kafka's own ``Uuid.randomUuid`` avoids a leading dash because command-line parsers read such a
    value as an option (``kafka-storage format -t -abc`` fails with "expected one argument"); one id
    in 64 would otherwise break a fresh ``stack up``.
    """
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def prepare(settings: StackSettings, paths: KafkaPaths) -> None:
    """Copy the jars (once per pom version) and format the KRaft storage (once)."""
    maven.copy_dependencies(POM, paths.libs)
    paths.config.parent.mkdir(parents=True, exist_ok=True)
    paths.config.write_text(server_properties(settings, paths.data_dir))
    if (paths.data_dir / "meta.properties").exists():
        return
    argv = [_java(), "-cp", _classpath(paths), "kafka.tools.StorageTool", "format",
            f"--cluster-id={new_cluster_id()}", "-c", str(paths.config)]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        msg = f"formatting Kafka storage failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        raise KafkaSetupError(msg)


def start(settings: StackSettings, paths: KafkaPaths, timeout_s: float = 90.0) -> bool:
    """Start the broker unless its port is already open. Returns True if this call started it."""
    if port_open(settings.kafka_port):
        return False
    prepare(settings, paths)
    for port in (settings.kafka_port, settings.kafka_controller_port):
        wait_until_bindable(port, "Kafka", paths.log_file)
    argv = [
        _java(), HEAP, "-XX:+UseG1GC", "-Djava.awt.headless=true",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info",
        "-cp", _classpath(paths), "kafka.Kafka", str(paths.config),
    ]
    pid = start_detached(argv, paths.log_file, paths.pid_file)
    wait_for_port(settings.kafka_port, "Kafka", paths.log_file, pid, timeout_s)
    return True


def stop(paths: KafkaPaths) -> bool:
    """Stop the broker started by ``start`` (by pid file). Returns True if it was running."""
    pid = read_pid(paths.pid_file)
    if pid is None:
        return False
    stop_pid(pid)
    paths.pid_file.unlink(missing_ok=True)
    return True
