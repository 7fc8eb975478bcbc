"""``python -m devtools demo --source mariadb``: the demo's story on the stack's MariaDB (issue 16).

1. start the stack (MariaDB, Kafka, Spark's jars);
2. recreate ``<mariadb_db>.demo_orders`` (and its signal table), seed it, start the sidecar with Debezium's
   MariaDB connector properties (binlog capture, ``snapshot.mode=no_data``) and the Spark apply job;
3. write continuously (inserts, updates, deletes; primary-key changes only with :data:`PRIMARY_KEY_CHANGES`)
   while an incremental snapshot backfills the seed;
4. stop writing, wait until the sidecar's stored offset holds the writer's last GTID (Kafka acknowledged
   every change) and Spark applied every record;
5. compare the MariaDB table with the Delta table (row count and content checksum, as the PostgreSQL demo):
   ``DEMO OK ...`` or exit 1 with the reason.

Backfill: as in the PostgreSQL demo, the seed predates the sidecar and an ``execute-snapshot`` signal
(``POST /signals``) backfills it with an incremental snapshot while the writer runs; the MariaDB source writes
its watermarks into the signal table ``<db>.demo_orders_signal``. :data:`INCREMENTAL_SNAPSHOT` False is the
fallback the demo had before MariaDB snapshots were wired: the seed is written after the binlog stream opened
(the rows arrive as streamed inserts) and the demo says so.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from devtools.demo import TABLE, DemoFailed, api, console, delta_state, show, shut_down, snapshot_backfill
from devtools.env import sidecar_env
from devtools.settings import StackSettings
from devtools.spark import jars_dir
from devtools.stack import Stack

INCREMENTAL_SNAPSHOT = True
"""Whether the seed predates the sidecar and an incremental snapshot backfills it (needs MariaDB incremental
snapshots in the sidecar); False: the seed is written while the sidecar streams (see the module docstring)."""
PRIMARY_KEY_CHANGES = True
"""Whether the writer changes primary keys (``UPDATE ... SET id``), as the PostgreSQL demo's does (the source
emits a key change as Debezium does: delete, tombstone, create)."""
KEY_CHANGE_AS_UPDATE = (
    "no primary-key changes: the MariaDB source emits one update under the new key where Debezium emits a delete "
    "of the old key, its tombstone and a create of the new one (what the apply job applies); "
    "devtools.demo_mariadb.PRIMARY_KEY_CHANGES turns them on once the source splits them"
)
PREFIX = "demomdb"
SIGNAL_TABLE = f"{TABLE}_signal"
"""The signal table (``signal.data.collection``): signals and the snapshot's watermark rows."""
SERVER_ID = 5987
"""``database.server.id`` of the demo's sidecar (a replica id no test uses)."""


def _connect(settings: StackSettings, autocommit: bool = True) -> Any:
    import pymysql

    return pymysql.connect(host="127.0.0.1", port=settings.mariadb_port, user=settings.mariadb_user,
                           password=settings.mariadb_password, database=settings.mariadb_db, autocommit=autocommit)


def connector_config(settings: StackSettings, work: Path) -> dict[str, Any]:
    """The Debezium MariaDB connector JSON the demo starts the sidecar with (JSON records with schemas)."""
    config: dict[str, str] = {
        "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "database.hostname": "127.0.0.1", "database.port": str(settings.mariadb_port),
        "database.user": settings.mariadb_user, "database.password": settings.mariadb_password,
        "database.server.id": str(SERVER_ID), "topic.prefix": PREFIX,
        "database.include.list": settings.mariadb_db,
        "table.include.list": f"{settings.mariadb_db}.{TABLE},{settings.mariadb_db}.{SIGNAL_TABLE}",
        "signal.data.collection": f"{settings.mariadb_db}.{SIGNAL_TABLE}", "read.only": "false",
        "snapshot.mode": "no_data", "incremental.snapshot.chunk.size": "2048",
        "bootstrap.servers": settings.bootstrap_servers,
        "offset.storage": "file", "offset.storage.file.filename": str(work / "offsets.json"),
        "offset.flush.interval.ms": "200", "signaller.http.port": api(settings).rsplit(":", 1)[1],
        "notification.enabled.channels": "log",
    }
    return {"name": "demo-mariadb-connector", "config": config}


def _topic(settings: StackSettings) -> str:
    return f"{PREFIX}.{settings.mariadb_db}.{TABLE}"


def _reset(settings: StackSettings, work: Path) -> None:
    with _connect(settings) as conn, conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {TABLE}, {SIGNAL_TABLE}")
        cur.execute(f"CREATE TABLE {SIGNAL_TABLE} (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, "
                    "data VARCHAR(2048))")
        cur.execute(f"CREATE TABLE {TABLE} (id INT PRIMARY KEY, customer VARCHAR(64) NOT NULL, qty INT, "
                    "price DECIMAL(10,2), note VARCHAR(64), updated TIMESTAMP(6) DEFAULT CURRENT_TIMESTAMP(6))")
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    if _topic(settings) in admin.list_topics(timeout=10).topics:
        for future in admin.delete_topics([_topic(settings)]).values():
            future.result(30)
        time.sleep(1)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)


def _seed(settings: StackSettings, rows: int) -> None:
    """``rows`` rows in one statement (MariaDB's sequence engine), like the PostgreSQL demo's seed."""
    with _connect(settings) as conn, conn.cursor() as cur:
        cur.execute(f"INSERT INTO {TABLE} (id, customer, qty, price, note) SELECT seq, CONCAT('customer-', seq % 37), "
                    f"1 + seq % 9, ROUND(seq % 500 + 0.25, 2), 'seed' FROM seq_1_to_{int(rows)}")


def _start_sidecar(settings: StackSettings, work: Path) -> subprocess.Popen[bytes]:
    config = work / "connector.json"
    config.write_text(json.dumps(connector_config(settings, work), indent=2))
    log_path = settings.home / "logs" / "demo-mariadb-sidecar.log"
    log = log_path.open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "signaller.runtime.cli", "run", "--config", str(config)],
                            stdout=log, stderr=subprocess.STDOUT, env=sidecar_env(SIGNALLER_LOG_FORMAT="text"),
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if "streaming the MariaDB binlog" in log_path.read_text(errors="replace"):
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise DemoFailed(f"the sidecar did not start streaming the binlog; see {log_path}")


class Writer(threading.Thread):
    """Continuous small transactions: inserts, updates, primary-key changes and deletes; ``last_gtid`` is the
    GTID of the last one committed (``@@last_gtid``)."""

    def __init__(self, settings: StackSettings, first_new_id: int) -> None:
        super().__init__(daemon=True)
        self.settings = settings
        self.next_id = first_new_id
        self.stop_event = threading.Event()
        self.transactions = 0
        self.last_gtid = ""
        self.error: Exception | None = None

    def run(self) -> None:
        rng = random.Random(7)
        try:
            with _connect(self.settings, autocommit=False) as conn, conn.cursor() as cur:
                while not self.stop_event.is_set():
                    target = rng.randint(1, self.next_id)
                    action = rng.random()
                    if action < 0.45:
                        cur.execute(f"UPDATE {TABLE} SET qty = qty + 1, note = 'updated', "
                                    "updated = CURRENT_TIMESTAMP(6) WHERE id = %s", (target,))
                    elif action < 0.75:
                        self.next_id += 1
                        cur.execute(f"INSERT INTO {TABLE} (id, customer, qty, price, note) VALUES "
                                    "(%s, 'new-customer', 1, 9.99, 'inserted')", (self.next_id,))
                    elif action < 0.9 or not PRIMARY_KEY_CHANGES:
                        cur.execute(f"DELETE FROM {TABLE} WHERE id = %s", (target,))
                    else:
                        self.next_id += 1
                        cur.execute(f"UPDATE {TABLE} SET id = %s WHERE id = %s", (self.next_id, target))
                    conn.commit()
                    if cur.rowcount:
                        cur.execute("SELECT @@last_gtid")
                        self.last_gtid = str(cur.fetchone()[0])
                    self.transactions += 1
                    time.sleep(0.004)
        except Exception as exc:
            self.error = exc


def _gtid_sequence(gtids: str, domain: int) -> int:
    """The sequence number of ``domain`` in a GTID set text (``0-1-74,1-2-9``); 0 if absent."""
    for part in gtids.split(","):
        pieces = part.strip().split("-")
        if len(pieces) == 3 and pieces[0] == str(domain):
            return int(pieces[2])
    return 0


def _wait_for_offsets(work: Path, last_gtid: str, proc: subprocess.Popen[bytes]) -> None:
    """Until the stored offsets' GTID set includes ``last_gtid`` (``domain-server-sequence``; GTIDs of one
    domain grow with the binlog): every change before it is in Kafka."""
    domain, _, sequence = (int(p) for p in last_gtid.split("-"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            stored = str(json.loads((work / "offsets.json").read_text()).get("gtids") or "")
        except (OSError, ValueError):
            stored = ""
        if _gtid_sequence(stored, domain) >= sequence:
            return
        if proc.poll() is not None:
            raise DemoFailed("the sidecar exited; see .cache/logs/demo-mariadb-sidecar.log")
        time.sleep(0.2)
    raise DemoFailed(f"the sidecar did not acknowledge the changes up to GTID {last_gtid} within 120 s")


def _source_state(settings: StackSettings) -> tuple[int, str]:
    """Row count and checksum of the MariaDB table, computed as the demo computes Delta's."""
    import hashlib

    with _connect(settings) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT id, customer, qty, price, note FROM {TABLE} ORDER BY id")
        rows = cur.fetchall()
    text = ",".join("|".join(str(v) for v in row) for row in rows)
    return len(rows), hashlib.md5(text.encode()).hexdigest() if rows else ""


def run_mariadb_demo(rows: int) -> int:
    """Run the MariaDB demo (JSON records); return the process exit code."""
    stack = Stack()
    settings = stack.settings
    work = settings.home / "demo-mariadb"
    table = f"{settings.mariadb_db}.{TABLE}"
    proc: subprocess.Popen[bytes] | None = None
    writer: Writer | None = None
    spark: Any = None
    try:
        with console.status("starting MariaDB, Kafka and Spark's jars"):
            stack.up(with_spark=True)
        _reset(settings, work)
        if INCREMENTAL_SNAPSHOT:
            _seed(settings, rows)
            console.print(f"seeded {table} with {rows} rows (before the sidecar: only a snapshot can bring them)")
        proc = _start_sidecar(settings, work)
        console.print(f"sidecar streaming the binlog of {table} → topic {_topic(settings)} (json records); "
                      f"API on {api(settings)}")
        from spark_jobs.apply_changes import start_query
        from spark_jobs.job_config import ApplyJobConfig
        from spark_jobs.session import build_session

        with console.status("starting Spark"):
            spark = build_session("signaller-demo-mariadb", jars_dir=str(jars_dir(settings)))
            cfg = ApplyJobConfig(
                bootstrap_servers=settings.bootstrap_servers, subscribe=_topic(settings), topic_prefix=PREFIX,
                target_root=str(work / "delta"), checkpoint_location=str(work / "checkpoint"),
                trigger_interval="2 seconds",
            )
            query = start_query(spark, cfg)
        console.print("Spark apply job running (foreachBatch MERGE into Delta every 2 s)")
        if not INCREMENTAL_SNAPSHOT:
            _seed(settings, rows)
            console.print(f"seeded {table} with {rows} rows while the sidecar streams: MariaDB incremental "
                          "snapshots are off (devtools.demo_mariadb.INCREMENTAL_SNAPSHOT), so the seed arrives as "
                          "streamed inserts instead of a backfill")
        if not PRIMARY_KEY_CHANGES:
            console.print(f"writer: {KEY_CHANGE_AS_UPDATE}")
        writer = Writer(settings, rows)
        writer.start()
        started = time.monotonic()
        if INCREMENTAL_SNAPSHOT:
            snapshot_backfill(settings, table)
        else:
            time.sleep(8)
        time.sleep(2)
        writer.stop_event.set()
        writer.join()
        if writer.error is not None:
            raise DemoFailed(f"the writer failed: {writer.error}")
        if not writer.last_gtid:
            raise DemoFailed("the writer committed no change")
        console.print(f"{writer.transactions} concurrent transactions written (last GTID {writer.last_gtid}); "
                      "waiting for Kafka and Spark")
        _wait_for_offsets(work, writer.last_gtid, proc)
        with console.status("waiting for the apply job to catch up"):
            query.processAllAvailable()
        if query.exception() is not None:
            raise DemoFailed(f"the apply job failed: {query.exception()}")
        console.print(f"converged {time.monotonic() - started:.1f}s after the writes started")
        expected = _source_state(settings)
        count, digest, applied = delta_state(spark, work / "delta" / settings.mariadb_db / TABLE)
        show(applied, table)
        if (count, digest) != expected:
            raise DemoFailed(f"Delta has {count} rows (checksum {digest}); MariaDB has {expected[0]} "
                             f"(checksum {expected[1]})")
        how = "backfilled by an incremental snapshot" if INCREMENTAL_SNAPSHOT else "streamed: snapshots off"
        print(f"DEMO OK: {count} rows in MariaDB and Delta (seeded {rows}, {how}, {writer.transactions} live "
              f"transactions), content checksum {digest} matches", flush=True)
        return 0
    except DemoFailed as exc:
        print(f"DEMO FAILED: {exc}", flush=True)
        return 1
    finally:
        shut_down(writer, spark, proc)
