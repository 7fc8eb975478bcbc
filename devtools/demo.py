"""``make demo``: the whole path on the local stack, ending in a one-line verdict.

1. start PostgreSQL, Kafka and Spark's jars (``Stack.up``);
2. seed ``public.demo_orders`` with rows the sidecar will not stream (they predate it);
3. start the sidecar (``signaller run``, ``snapshot.mode=no_data``) and the Spark apply job
   (a streaming query MERGEing the change topic into Delta);
4. write continuously (inserts, updates, primary-key changes, deletes) and, meanwhile, trigger an
   incremental snapshot with ``POST /signals``, showing its progress from ``GET /snapshots``;
5. stop writing, wait until Kafka acknowledged every change and Spark applied every record;
6. compare the source table with the Delta table (row count and content checksum): print
   ``DEMO OK ...`` or exit 1 with the reason.

``format="avro"`` (``python -m devtools demo --format avro``) tells the same story in Avro: the sidecar
runs with Debezium's Avro converter properties (:data:`AVRO_CONVERTER`, the stack's schema registry), the
apply job reads the topic with ``format: avro`` (writer schemas fetched by id from the same registry), and
before the verdict the demo checks that the topic's first record is in the Confluent wire format with a
schema id the registry knows. The checks of the verdict are the same.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg2
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from devtools.env import sidecar_env
from devtools.processes import stop_pid
from devtools.settings import StackSettings
from devtools.spark import jars_dir
from devtools.stack import Stack
from signaller.model import parse_lsn

console = Console()
PREFIX = "demo"
TABLE = "demo_orders"
SLOT = "demo_slot"
FORMATS = ("json", "avro")
"""What ``run_demo`` accepts as ``format``: the sidecar's and the apply job's record format."""
AVRO_CONVERTER = "io.confluent.connect.avro.AvroConverter"
SOURCES = ("postgres", "mariadb")
"""What ``run_demo`` accepts as ``source``: the database the story runs on."""


def source_format_error(source: str, record_format: str) -> str | None:
    """Why the demo cannot run on ``source`` with ``record_format``; None when it can."""
    if source not in SOURCES:
        return f"source {source!r} is not one of {', '.join(SOURCES)}"
    if record_format not in FORMATS:
        return f"format {record_format!r} is not one of {', '.join(FORMATS)}"
    if source == "mariadb" and record_format != "json":
        return f"format {record_format!r} is not available with source mariadb yet (json only)"
    return None


class DemoFailed(Exception):
    """The demo could not reach its verdict; the message says why."""


def _fetch(cur: Any) -> tuple[Any, ...]:
    row = cur.fetchone()
    if row is None:
        raise DemoFailed("a query returned no row")
    return tuple(row)


def _one(dsn: str, query: str) -> Any:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(query)
        return _fetch(cur)[0]


def connector_config(settings: StackSettings, work: Path, record_format: str = "json") -> dict[str, Any]:
    """The Debezium connector JSON the demo starts the sidecar with; ``record_format="avro"`` adds Debezium's
    Avro converter properties naming the stack's schema registry (JSON with schemas otherwise)."""
    config: dict[str, str] = {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "database.hostname": "127.0.0.1", "database.port": str(settings.pg_port),
        "database.user": settings.pg_user, "database.password": settings.pg_password,
        "database.dbname": settings.pg_db, "topic.prefix": PREFIX,
        "table.include.list": f"public.{TABLE}", "plugin.name": "pgoutput",
        "slot.name": SLOT, "publication.name": "demo_pub", "publication.autocreate.mode": "filtered",
        "snapshot.mode": "no_data", "incremental.snapshot.chunk.size": "2048",
        "bootstrap.servers": settings.bootstrap_servers,
        "offset.storage": "file", "offset.storage.file.filename": str(work / "offsets.json"),
        "offset.flush.interval.ms": "200", "signaller.http.port": api(settings).rsplit(":", 1)[1],
        "notification.enabled.channels": "log",
    }
    if record_format == "avro":
        config.update({
            "key.converter": AVRO_CONVERTER, "value.converter": AVRO_CONVERTER,
            "key.converter.schema.registry.url": settings.registry_url,
            "value.converter.schema.registry.url": settings.registry_url,
        })
    return {"name": "demo-connector", "config": config}


def _reset(settings: StackSettings, work: Path, rows: int) -> None:
    with psycopg2.connect(settings.pg_dsn()) as conn, conn.cursor() as cur:
        cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                    (SLOT,))
        cur.execute("DROP PUBLICATION IF EXISTS demo_pub")
        cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
        cur.execute(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, customer text NOT NULL, qty int, "
                    "price numeric(10,2), note text, updated timestamptz DEFAULT now())")
        cur.execute(f"INSERT INTO {TABLE} (id, customer, qty, price, note) SELECT g, 'customer-' || (g %% 37), "
                    "1 + g %% 9, round((g %% 500)::numeric + 0.25, 2), 'seed' FROM generate_series(1, %s) g", (rows,))
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    topic = f"{PREFIX}.public.{TABLE}"
    if topic in admin.list_topics(timeout=10).topics:
        for future in admin.delete_topics([topic]).values():
            future.result(30)
        time.sleep(1)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)


def _start_sidecar(settings: StackSettings, work: Path, record_format: str) -> subprocess.Popen[bytes]:
    config = work / "connector.json"
    config.write_text(json.dumps(connector_config(settings, work, record_format), indent=2))
    log = (settings.home / "logs" / "demo-sidecar.log").open("wb")
    env = sidecar_env(SIGNALLER_LOG_FORMAT="text")
    proc = subprocess.Popen([sys.executable, "-m", "signaller.runtime.cli", "run", "--config", str(config)],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _one(settings.pg_dsn(), f"SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{SLOT}' AND active"):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise DemoFailed(f"the sidecar did not start streaming; see {log.name}")


class Writer(threading.Thread):
    """Continuous small transactions: inserts, updates, primary-key changes and deletes."""

    def __init__(self, settings: StackSettings, first_new_id: int) -> None:
        super().__init__(daemon=True)
        self.settings = settings
        self.next_id = first_new_id
        self.stop_event = threading.Event()
        self.transactions = 0
        self.error: Exception | None = None

    def run(self) -> None:
        rng = random.Random(7)
        try:
            with psycopg2.connect(self.settings.pg_dsn()) as conn, conn.cursor() as cur:
                while not self.stop_event.is_set():
                    target = rng.randint(1, self.next_id)
                    action = rng.random()
                    if action < 0.45:
                        cur.execute(f"UPDATE {TABLE} SET qty = qty + 1, note = 'updated', updated = now() "
                                    "WHERE id = %s", (target,))
                    elif action < 0.75:
                        self.next_id += 1
                        cur.execute(f"INSERT INTO {TABLE} (id, customer, qty, price, note) VALUES "
                                    "(%s, 'new-customer', 1, 9.99, 'inserted')", (self.next_id,))
                    elif action < 0.9:
                        cur.execute(f"DELETE FROM {TABLE} WHERE id = %s", (target,))
                    else:
                        self.next_id += 1
                        cur.execute(f"UPDATE {TABLE} SET id = %s WHERE id = %s", (self.next_id, target))
                    conn.commit()
                    self.transactions += 1
                    time.sleep(0.004)
        except Exception as exc:
            self.error = exc


def _free_port(preferred: int) -> int:
    """``preferred`` if nothing listens there, else an ephemeral port."""
    import socket

    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", preferred))
            return preferred
        except OSError:
            probe.bind(("127.0.0.1", 0))
            return int(probe.getsockname()[1])


API_PORT: dict[str, int] = {}


def api(settings: StackSettings) -> str:
    port = API_PORT.setdefault("port", _free_port(settings.http_port))
    return f"http://127.0.0.1:{port}"


def snapshot_backfill(settings: StackSettings, table: str = f"public.{TABLE}") -> None:
    """Trigger the incremental snapshot of ``table`` (``schema.table``, or ``database.table`` on MariaDB) over
    HTTP and show its progress until it completes."""
    signal = {"id": "demo-backfill", "type": "execute-snapshot",
              "data": {"data-collections": [table.replace(".", "\\.")], "type": "incremental"}}
    answer = httpx.post(f"{api(settings)}/signals", json=signal, timeout=30)
    if answer.status_code != 202:
        raise DemoFailed(f"POST /signals answered {answer.status_code}: {answer.text}")
    console.print(f"POST /signals → {answer.status_code} {answer.json()}")
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[rows]} rows"),
                  console=console) as progress:
        task = progress.add_task(f"snapshot {table}", total=None, rows=0)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = httpx.get(f"{api(settings)}/snapshots", timeout=10).json()
            tables = [t for t in status["tables"] if t["table"] == table]
            if tables:
                latest = tables[-1]
                progress.update(task, total=latest["estimated_rows"] or None, completed=latest["rows_emitted"],
                                rows=latest["rows_emitted"])
                if latest["state"] in ("completed", "skipped", "aborted") and not status["running"]:
                    progress.update(task, total=latest["rows_emitted"], completed=latest["rows_emitted"])
                    return
            time.sleep(0.3)
    raise DemoFailed("the incremental snapshot did not complete within 300 s")


def _wait_for_offsets(work: Path, target_lsn: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            stored = json.loads((work / "offsets.json").read_text())["lsn"]
        except (OSError, ValueError, KeyError):
            stored = 0
        if stored >= target_lsn:
            return
        if proc.poll() is not None:
            raise DemoFailed("the sidecar exited; see .cache/logs/demo-sidecar.log")
        time.sleep(0.2)
    raise DemoFailed("the sidecar did not acknowledge all changes within 120 s")


SOURCE_CHECKSUM = (
    "SELECT count(*), coalesce(md5(string_agg(concat_ws('|', id, customer, qty, price::text, note), ',' "
    f"ORDER BY id)), '') FROM {TABLE}"
)


def _source_state(settings: StackSettings) -> tuple[int, str]:
    with psycopg2.connect(settings.pg_dsn()) as conn, conn.cursor() as cur:
        cur.execute(SOURCE_CHECKSUM)
        count, digest = _fetch(cur)
        return int(count), str(digest)


def shut_down(writer: Any, spark: Any, proc: subprocess.Popen[bytes] | None) -> None:
    """Stop what a demo started, whichever of them exist: the writer thread (``stop_event``), the Spark
    streaming queries and session, then the sidecar process."""
    if writer is not None:
        writer.stop_event.set()
    if spark is not None:
        for active in spark.streams.active:
            active.stop()
        spark.stop()
    if proc is not None and proc.poll() is None:
        stop_pid(proc.pid, timeout_s=10)


def delta_state(spark: Any, path: Path) -> tuple[int, str, list[Any]]:
    rows = sorted(spark.read.format("delta").load(str(path)).collect(), key=lambda r: r.id)
    text = ",".join("|".join(str(v) for v in (r.id, r.customer, r.qty, r.price, r.note)) for r in rows)
    return len(rows), hashlib.md5(text.encode()).hexdigest() if rows else "", rows


def _avro_evidence(settings: StackSettings) -> str:
    """Check that the topic's first record is Avro in the Confluent wire format (magic byte 0, 4-byte schema
    id) with a key and value schema the registry knows; return a line saying so, else raise ``DemoFailed``."""
    from confluent_kafka import Consumer, TopicPartition

    from signaller.sinks.registry import SchemaRegistryClient

    topic = f"{PREFIX}.public.{TABLE}"
    consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": "signaller-demo-check",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        record = consumer.poll(30)
    finally:
        consumer.close()
    if record is None or record.error() is not None:
        raise DemoFailed(f"no record could be read back from {topic}: {record.error() if record else 'timeout'}")
    registry = SchemaRegistryClient(settings.registry_url)
    names = []
    for part, body in (("key", record.key()), ("value", record.value())):
        if body is None or len(body) < 5 or body[0] != 0:
            raise DemoFailed(f"the first {part} of {topic} is not in the Confluent wire format: {body!r:.60}")
        schema_id = int.from_bytes(body[1:5], "big")
        schema = json.loads(registry.schema_by_id(schema_id))
        full_name = ".".join(piece for piece in (schema.get("namespace"), schema.get("name")) if piece)
        names.append(f"{part} schema id {schema_id} ({full_name})")
    return f"{topic} holds Avro records in the Confluent wire format: {', '.join(names)} in {settings.registry_url}"


def show(rows: list[Any], table_name: str = f"public.{TABLE}") -> None:
    """Print the first rows of the Delta table ``table_name``."""
    from rich.table import Table

    table = Table(title=f"Delta table {table_name} (first 6 of {len(rows)} rows)")
    for name in ("id", "customer", "qty", "price", "note"):
        table.add_column(name)
    for row in rows[:6]:
        table.add_row(str(row.id), row.customer, str(row.qty), str(row.price), row.note)
    console.print(table)


def run_demo(rows: int = 20000, record_format: str = "json", source: str = "postgres") -> int:
    """Run the PostgreSQL demo with ``record_format`` (one of :data:`FORMATS`) records; return the process exit
    code. A format or source it cannot run (``mariadb``: ``devtools.demo_mariadb.run_mariadb_demo``) is refused
    (exit 2) before anything starts."""
    refused = source_format_error(source, record_format)
    if refused:
        print(f"DEMO FAILED: {refused}", flush=True)
        return 2
    if source == "mariadb":  # run by devtools.cli with devtools.demo_mariadb.run_mariadb_demo
        print("DEMO FAILED: the MariaDB demo is devtools.demo_mariadb.run_mariadb_demo", flush=True)
        return 2
    stack = Stack()
    settings = stack.settings
    work = settings.home / "demo"
    proc: subprocess.Popen[bytes] | None = None
    writer: Writer | None = None
    spark: Any = None
    try:
        with console.status("starting PostgreSQL, Kafka and Spark's jars"):
            stack.up(with_spark=True)
        _reset(settings, work, rows)
        console.print(f"seeded public.{TABLE} with {rows} rows (before the sidecar: only a snapshot can bring them)")
        proc = _start_sidecar(settings, work, record_format)
        console.print(f"sidecar streaming public.{TABLE} → topic {PREFIX}.public.{TABLE} ({record_format} records"
                      f"{f', schemas in {settings.registry_url}' if record_format == 'avro' else ''}); "
                      f"API on {api(settings)}")
        from spark_jobs.apply_changes import start_query
        from spark_jobs.job_config import ApplyJobConfig
        from spark_jobs.session import build_session

        with console.status("starting Spark"):
            spark = build_session("signaller-demo", jars_dir=str(jars_dir(settings)))
            cfg = ApplyJobConfig(
                bootstrap_servers=settings.bootstrap_servers, subscribe_pattern=f"{PREFIX}\\.public\\..*",
                topic_prefix=PREFIX, target_root=str(work / "delta"), checkpoint_location=str(work / "checkpoint"),
                trigger_interval="2 seconds",
                format="avro" if record_format == "avro" else "auto",
                schema_registry_url=settings.registry_url if record_format == "avro" else None,
            )
            query = start_query(spark, cfg)
        console.print("Spark apply job running (foreachBatch MERGE into Delta every 2 s)")
        writer = Writer(settings, rows)
        writer.start()
        started = time.monotonic()
        snapshot_backfill(settings)
        time.sleep(2)
        writer.stop_event.set()
        writer.join()
        if writer.error is not None:
            raise DemoFailed(f"the writer failed: {writer.error}")
        target = parse_lsn(_one(settings.pg_dsn(), "SELECT pg_current_wal_lsn()::text"))
        console.print(f"{writer.transactions} concurrent transactions written; waiting for Kafka and Spark")
        _wait_for_offsets(work, target, proc)
        with console.status("waiting for the apply job to catch up"):
            query.processAllAvailable()
        if query.exception() is not None:
            raise DemoFailed(f"the apply job failed: {query.exception()}")
        console.print(f"converged {time.monotonic() - started:.1f}s after the snapshot started")
        if record_format == "avro":
            console.print(_avro_evidence(settings))
        expected = _source_state(settings)
        count, digest, applied = delta_state(spark, work / "delta" / "public" / TABLE)
        show(applied)
        if (count, digest) != expected:
            raise DemoFailed(f"Delta has {count} rows (checksum {digest}); PostgreSQL has {expected[0]} "
                             f"(checksum {expected[1]})")
        print(f"DEMO OK: {count} rows in PostgreSQL and Delta (seeded {rows}, {writer.transactions} live "
              f"transactions, backfilled by an incremental snapshot), content checksum {digest} matches", flush=True)
        return 0
    except DemoFailed as exc:
        print(f"DEMO FAILED: {exc}", flush=True)
        return 1
    finally:
        shut_down(writer, spark, proc)
