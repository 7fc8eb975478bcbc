"""``make demo``: the whole path on the local stack, ending in a one-line verdict.

1. start PostgreSQL, Kafka and Spark's jars (``Stack.up``);
2. create ``public.demo_orders`` and start the sidecar (``signaller run``) on it;
3. write: inserts, updates (including a primary-key change) and deletes, while it streams;
4. wait until the sidecar's stored offset passes the last commit (Kafka acknowledged all);
5. run the Spark apply job (``availableNow``) from the change topic into a Delta table;
6. read the Delta table back, print it, and compare row count and content checksum with the
   source table: ``DEMO OK ...`` or exit 1 with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg2
from rich.console import Console
from rich.table import Table

from signaller.devstack.processes import stop_pid
from signaller.devstack.settings import StackSettings
from signaller.devstack.spark import jars_dir
from signaller.devstack.stack import Stack
from signaller.model import parse_lsn

console = Console()
PREFIX = "demo"
TABLE = "demo_orders"


class DemoFailed(Exception):
    """The demo could not reach its verdict; the message says why."""


def _sql(dsn: str, statements: list[str]) -> None:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


def _fetch(cur: Any) -> tuple[Any, ...]:
    row = cur.fetchone()
    if row is None:
        raise DemoFailed("a query returned no row")
    return tuple(row)


def _one(dsn: str, query: str) -> Any:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(query)
        return _fetch(cur)[0]


def connector_config(settings: StackSettings, work: Path) -> dict[str, Any]:
    """The Debezium connector JSON the demo starts the sidecar with."""
    return {
        "name": "demo-connector",
        "config": {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1", "database.port": str(settings.pg_port),
            "database.user": settings.pg_user, "database.password": settings.pg_password,
            "database.dbname": settings.pg_db, "topic.prefix": PREFIX,
            "table.include.list": f"public.{TABLE}", "plugin.name": "pgoutput",
            "slot.name": "demo_slot", "publication.name": "demo_pub", "publication.autocreate.mode": "filtered",
            "bootstrap.servers": settings.bootstrap_servers,
            "offset.storage": "file", "offset.storage.file.filename": str(work / "offsets.json"),
            "offset.flush.interval.ms": "200",
        },
    }


def _reset(settings: StackSettings, work: Path) -> None:
    dsn = settings.pg_dsn()
    _sql(dsn, [
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'demo_slot'",
        "DROP PUBLICATION IF EXISTS demo_pub",
        f"DROP TABLE IF EXISTS {TABLE}",
        f"CREATE TABLE {TABLE} (id int PRIMARY KEY, customer text NOT NULL, qty int, price numeric(10,2), "
        "note text, updated timestamptz DEFAULT now())",
    ])
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


def _start_sidecar(settings: StackSettings, work: Path) -> subprocess.Popen[bytes]:
    config = work / "connector.json"
    config.write_text(json.dumps(connector_config(settings, work), indent=2))
    log = (settings.home / "logs" / "demo-sidecar.log").open("wb")
    env = {**os.environ, "SIGNALLER_LOG_FORMAT": "text"}
    proc = subprocess.Popen([sys.executable, "-m", "signaller.runtime.cli", "run", "--config", str(config)],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        active = _one(settings.pg_dsn(), "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'demo_slot' "
                                         "AND active")
        if active:
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise DemoFailed(f"the sidecar did not start streaming; see {log.name}")


def _write(settings: StackSettings, rows: int) -> int:
    """Inserts, then random updates, key changes and deletes, in many transactions."""
    rng = random.Random(7)
    ids = list(range(1, rows + 1))
    with psycopg2.connect(settings.pg_dsn()) as conn, conn.cursor() as cur:
        for start in range(0, rows, 100):
            batch = ids[start:start + 100]
            cur.executemany(
                f"INSERT INTO {TABLE} (id, customer, qty, price, note) VALUES (%s, %s, %s, %s, %s)",
                [(i, f"customer-{i % 37}", rng.randint(1, 9), f"{rng.uniform(1, 500):.2f}", "new") for i in batch],
            )
            conn.commit()
        for _ in range(rows // 2):
            cur.execute(f"UPDATE {TABLE} SET qty = qty + 1, note = 'updated', updated = now() WHERE id = %s",
                        (rng.choice(ids),))
        conn.commit()
        for victim in rng.sample(ids, rows // 10):
            cur.execute(f"DELETE FROM {TABLE} WHERE id = %s", (victim,))
        cur.execute(f"UPDATE {TABLE} SET id = id + 1000000 WHERE id IN (SELECT id FROM {TABLE} ORDER BY id LIMIT 5)")
        conn.commit()
        cur.execute("SELECT pg_current_wal_lsn()::text")
        return parse_lsn(_fetch(cur)[0])


def _wait_for_offsets(work: Path, target_lsn: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    with console.status("waiting for Kafka to acknowledge every change"):
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


def _apply_and_read(settings: StackSettings, work: Path) -> tuple[int, str, list[Any]]:
    from spark_jobs.apply_changes import start_query
    from spark_jobs.job_config import ApplyJobConfig
    from spark_jobs.session import build_session

    spark = build_session("signaller-demo", jars_dir=str(jars_dir(settings)))
    try:
        cfg = ApplyJobConfig(
            bootstrap_servers=settings.bootstrap_servers, subscribe=f"{PREFIX}.public.{TABLE}",
            topic_prefix=PREFIX, target_root=str(work / "delta"), checkpoint_location=str(work / "checkpoint"),
            available_now=True,
        )
        with console.status("Spark: applying the change topic to Delta with MERGE"):
            query = start_query(spark, cfg)
            query.awaitTermination()
        if query.exception() is not None:
            raise DemoFailed(f"the apply job failed: {query.exception()}")
        rows = sorted(spark.read.format("delta").load(str(work / "delta" / "public" / TABLE)).collect(),
                      key=lambda r: r.id)
    finally:
        spark.stop()
    text = ",".join("|".join(str(v) for v in (r.id, r.customer, r.qty, r.price, r.note)) for r in rows)
    return len(rows), hashlib.md5(text.encode()).hexdigest() if rows else "", rows


def _show(rows: list[Any]) -> None:
    table = Table(title=f"Delta table public.{TABLE} (first 8 of {len(rows)} rows)")
    for name in ("id", "customer", "qty", "price", "note"):
        table.add_column(name)
    for row in rows[:8]:
        table.add_row(str(row.id), row.customer, str(row.qty), str(row.price), row.note)
    console.print(table)


def run_demo(rows: int = 2000) -> int:
    """Run the demo; return the process exit code."""
    stack = Stack()
    settings = stack.settings
    work = settings.home / "demo"
    proc: subprocess.Popen[bytes] | None = None
    try:
        with console.status("starting PostgreSQL, Kafka and Spark's jars"):
            stack.up(with_spark=True)
        _reset(settings, work)
        proc = _start_sidecar(settings, work)
        console.print(f"sidecar streaming public.{TABLE} → topic {PREFIX}.public.{TABLE}")
        started = time.monotonic()
        target = _write(settings, rows)
        _wait_for_offsets(work, target, proc)
        console.print(f"captured every change in {time.monotonic() - started:.1f}s")
        expected_count, expected_digest = _source_state(settings)
        count, digest, applied = _apply_and_read(settings, work)
        _show(applied)
        if (count, digest) != (expected_count, expected_digest):
            raise DemoFailed(f"Delta has {count} rows (checksum {digest}); PostgreSQL has {expected_count} "
                             f"(checksum {expected_digest})")
        print(f"DEMO OK: {count} rows in PostgreSQL and Delta, content checksum {digest} matches", flush=True)
        return 0
    except DemoFailed as exc:
        print(f"DEMO FAILED: {exc}", flush=True)
        return 1
    finally:
        if proc is not None and proc.poll() is None:
            stop_pid(proc.pid, timeout_s=10)
