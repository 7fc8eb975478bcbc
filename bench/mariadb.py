"""The MariaDB section: binlog streaming throughput and incremental-snapshot speed of the sidecar's MariaDB
source and of Debezium's MariaDB connector (``DebeziumConnect(source="mariadb")``), on the same workloads,
against the stack's MariaDB and Kafka.

Both sides are measured from the outside, the same way (neither is instrumented):

* ``streaming_max_changes_per_s``: the side starts (``snapshot.mode=no_data``), streams, is stopped;
  ``changes`` single-row INSERTs are committed in transactions of ``tx_rows`` while it is down; it is
  started again and catches up from its stored offset. Rate = (changes − 1) ÷ (broker append time of the last
  record − that of the first) on a data topic created with :data:`bench.scratch.LOG_APPEND_TIME` (the binlog
  backlog read at full speed; the process start is left out, as the PostgreSQL section leaves it out).
* ``snapshot_rows_per_s``: a table of ``snapshot_rows`` rows loaded before the side starts, one
  ``execute-snapshot`` signal row in the side's signal table (chunk ``chunk_size``); rate = rows ÷ (append
  time of the last READ − the instant just before the signal row was inserted).

The sidecar's figures need its MariaDB source (``io.debezium.connector.mariadb.MariaDbConnector`` in
``signaller.sources.registry``); until it is registered they are reported as ``null`` with the reason
(:func:`unavailable`), and Debezium's figures alone are measured.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pymysql
from confluent_kafka.admin import AdminClient, NewTopic

from bench.scratch import LOG_APPEND_TIME
from bench.stats import Figure, per_run_ratio, summarize
from bench.topics import TopicReader, rate_between
from devtools import StackSettings
from devtools.debezium import MARIADB_CONNECTOR_CLASS, DebeziumConnect, free_port, unique_server_id
from devtools.env import sidecar_env

STREAMING_LINE = "streaming the MariaDB binlog from"
"""What the sidecar logs once its binlog stream is open."""
SIDECAR_MISSING = (f"the sidecar has no MariaDB source yet (signaller.sources.registry does not know "
                   f"{MARIADB_CONNECTOR_CLASS})")


@dataclass
class MariaDbOptions:
    runs: int = 3
    changes: int = 100_000
    tx_rows: int = 1_000
    snapshot_rows: int = 200_000
    chunk_size: int = 1024
    debezium: bool = True


def sidecar_available() -> bool:
    """Whether the sidecar's registry knows Debezium's MariaDB connector class."""
    from signaller.sources.registry import SOURCES

    return MARIADB_CONNECTOR_CLASS in SOURCES


def unavailable(unit: str, reason: str) -> Figure:
    """A figure that could not be measured: ``null`` median/min/max, no values, and why."""
    return {"median": None, "min": None, "max": None, "values": [], "unit": unit, "note": reason}


def section(sidecar: dict[str, list[float]] | None, debezium: dict[str, list[float]] | None,
            parameters: dict[str, Any], sidecar_reason: str = SIDECAR_MISSING) -> dict[str, Any]:
    """The ``mariadb`` section from per-run rates (``{"streaming": [...], "snapshot": [...]}`` per side;
    None: that side was not measured). Ratios are per run, only when both sides ran."""
    body: dict[str, Any] = {}
    for figure, key, unit in (("streaming_max_changes_per_s", "streaming", "changes/s"),
                              ("snapshot_rows_per_s", "snapshot", "rows/s")):
        body[figure] = (summarize(sidecar[key], unit, digits=0) if sidecar is not None
                        else unavailable(unit, sidecar_reason))
        if debezium is not None:
            body[f"debezium_{figure}"] = summarize(debezium[key], unit, digits=0)
        if sidecar is not None and debezium is not None:
            body[f"vs_debezium_{key}"] = summarize(per_run_ratio(sidecar[key], debezium[key]), "ratio", digits=2)
    body["parameters"] = parameters
    return body


# --------------------------------------------------------------------------------------------
# The sides
# --------------------------------------------------------------------------------------------


class Side(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


class DebeziumSide:
    def __init__(self, settings: StackSettings, properties: dict[str, str], workdir: Path, name: str) -> None:
        self.connect = DebeziumConnect(settings, properties, workdir / "connect", name=name, source="mariadb")

    def start(self) -> None:
        self.connect.start()
        self.connect.wait_streaming()

    def stop(self) -> None:
        self.connect.stop()


class SidecarSide:
    """``signaller run --config`` in a process of its own (offsets in a file of the work directory)."""

    def __init__(self, settings: StackSettings, properties: dict[str, str], workdir: Path, name: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        config = {**properties, "database.hostname": "127.0.0.1", "database.port": str(settings.mariadb_port),
                  "database.user": settings.mariadb_user, "database.password": settings.mariadb_password,
                  "schema.history.internal.kafka.bootstrap.servers": settings.bootstrap_servers,
                  "kafka.bootstrap.servers": settings.bootstrap_servers, "offset.storage": "file",
                  "offset.storage.file.filename": str(workdir / "offsets.json")}
        self.offsets_path = workdir / "offsets.json"
        self.config_path = workdir / "connector.json"
        self.config_path.write_text(json.dumps({"name": name, "config": config}))
        self.log_path = workdir / "sidecar.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 120.0) -> None:
        """Start the sidecar and wait until it streams with its start position stored (a first start stores the
        server's current position; changes written while it is stopped afterwards are then caught up)."""
        signaller = Path(sys.executable).with_name("signaller")
        streams_before = self._log_count(STREAMING_LINE)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([str(signaller), "run", "--config", str(self.config_path)], stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=sidecar_env(SIGNALLER_HTTP_PORT=str(free_port())), start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while self._log_count(STREAMING_LINE) <= streams_before or not self.offsets_path.exists():
            if self.proc.poll() is not None:
                msg = f"the sidecar exited with {self.proc.returncode} before streaming; log: {self.log_path}"
                raise RuntimeError(msg)
            if time.monotonic() > deadline:
                msg = f"the sidecar did not stream within {timeout_s:.0f}s; log: {self.log_path}"
                raise RuntimeError(msg)
            time.sleep(0.1)

    def _log_count(self, text: str) -> int:
        return self.log_path.read_text(errors="replace").count(text) if self.log_path.exists() else 0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


# --------------------------------------------------------------------------------------------
# One run of the workloads on one side
# --------------------------------------------------------------------------------------------


class Workload:
    """A database of its own with the streamed table ``t``, the snapshotted table ``s`` and a signal table."""

    def __init__(self, settings: StackSettings, options: MariaDbOptions) -> None:
        self.settings = settings
        self.options = options
        self.name = f"bmdb_{uuid.uuid4().hex[:8]}"
        self.prefix = self.name.replace("_", "")
        self.conn = pymysql.connect(host="127.0.0.1", port=settings.mariadb_port, user=settings.mariadb_user,
                                    password=settings.mariadb_password, autocommit=True)
        self.sql(f"CREATE DATABASE {self.name}")
        self.sql(f"USE {self.name}")
        self.sql("CREATE TABLE t (id BIGINT PRIMARY KEY, a INT, b VARCHAR(64), c DOUBLE, d DATETIME(6))")
        self.sql("CREATE TABLE s (id BIGINT PRIMARY KEY, a INT, b VARCHAR(64), c DOUBLE, d DATETIME(6))")
        self.sql("CREATE TABLE signals (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))")
        self.sql(f"INSERT INTO s SELECT seq, seq % 1000, CONCAT('row ', seq), seq / 7, '2024-01-01 00:00:00' "
                 f"FROM seq_1_to_{options.snapshot_rows}")
        self.admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
        self.topics = [f"{self.prefix}.{self.name}.t", f"{self.prefix}.{self.name}.s"]
        futures = self.admin.create_topics([NewTopic(t, num_partitions=1, replication_factor=1,
                                                     config=dict(LOG_APPEND_TIME)) for t in self.topics])
        for future in futures.values():
            future.result(30)

    def sql(self, statement: str, params: Any = None) -> None:
        with self.conn.cursor() as cur:
            cur.execute(statement, params)

    def properties(self) -> dict[str, str]:
        return {
            "connector.class": MARIADB_CONNECTOR_CLASS, "topic.prefix": self.prefix,
            "database.server.id": str(unique_server_id()), "database.include.list": self.name,
            "table.include.list": f"{self.name}.t,{self.name}.s", "snapshot.mode": "no_data",
            "schema.history.internal.kafka.topic": f"{self.prefix}.schema-history",
            "schema.history.internal.store.only.captured.databases.ddl": "true",
            "signal.data.collection": f"{self.name}.signals",
            "incremental.snapshot.chunk.size": str(self.options.chunk_size),
        }

    def write_changes(self) -> None:
        rows = self.options.changes
        with self.conn.cursor() as cur:
            for start in range(1, rows + 1, self.options.tx_rows):
                batch = [(i, i % 1000, f"change {i}", i / 3, "2024-01-01 00:00:00")
                         for i in range(start, min(rows, start + self.options.tx_rows - 1) + 1)]
                self.conn.begin()
                cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s, %s)", batch)
                self.conn.commit()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.sql(f"DROP DATABASE IF EXISTS {self.name}")
        self.conn.close()
        topics = [n for n in self.admin.list_topics(timeout=10).topics if n == self.prefix
                  or n.startswith(self.prefix + ".")]
        if topics:
            for future in self.admin.delete_topics(topics, operation_timeout=10).values():
                with contextlib.suppress(Exception):
                    future.result(15)


def measure(settings: StackSettings, options: MariaDbOptions, make_side: Callable[..., Side],
            workdir: Path, log: Callable[[str], None], label: str, timeout_s: float = 1200) -> dict[str, float]:
    """One run of both workloads on one side: ``{"streaming": changes/s, "snapshot": rows/s}``."""
    work = Workload(settings, options)
    side = make_side(settings, work.properties(), workdir / work.name, work.name)
    try:
        side.start()
        side.stop()
        work.write_changes()
        with TopicReader(settings) as reader:
            side.start()
            topic = work.topics[0]
            reader.wait_for_count(topic, options.changes, timeout_s)
            streaming = rate_between(options.changes - 1, reader.append_time(topic, 0),
                                     reader.append_time(topic, options.changes - 1))
            began = time.time()
            work.sql("INSERT INTO signals VALUES ('bench-snap', 'execute-snapshot', %s)",
                     (json.dumps({"data-collections": [f"{work.name}.s"], "type": "incremental"}),))
            topic = work.topics[1]
            reader.wait_for_count(topic, options.snapshot_rows, timeout_s)
            snapshot = rate_between(options.snapshot_rows, began,
                                    reader.append_time(topic, options.snapshot_rows - 1))
        log(f"  {label}: streaming {streaming:,.0f} changes/s, snapshot {snapshot:,.0f} rows/s")
        return {"streaming": streaming, "snapshot": snapshot}
    finally:
        side.stop()
        work.close()


def run_mariadb(settings: StackSettings, options: MariaDbOptions, log: Callable[[str], None],
                workdir: Path) -> dict[str, Any]:
    """The ``mariadb`` section (see the module docstring)."""
    ours = sidecar_available()
    sidecar: dict[str, list[float]] | None = {"streaming": [], "snapshot": []} if ours else None
    debezium: dict[str, list[float]] | None = {"streaming": [], "snapshot": []} if options.debezium else None
    if not ours:
        log(f"  sidecar: not measured, {SIDECAR_MISSING}")
    for run in range(options.runs):
        for label, results, make_side in (("signaller", sidecar, SidecarSide), ("Debezium", debezium, DebeziumSide)):
            if results is None:
                continue
            figures = measure(settings, options, make_side, workdir, log, f"run {run + 1} {label}")
            for key, value in figures.items():
                results[key].append(value)
    parameters = {"changes": options.changes, "tx_rows": options.tx_rows, "snapshot_rows": options.snapshot_rows,
                  "chunk_size": options.chunk_size, "debezium_version": "3.5.0.Final"}
    return {"mariadb": section(sidecar, debezium, parameters)}
