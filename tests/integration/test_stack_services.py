"""The local stack's services are the real thing: PostgreSQL with logical decoding and a Kafka
broker that stores and returns records."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psycopg2
import psycopg2.extras
import pytest

from devtools import StackSettings
from tests.kafka_helpers import create_topic, produce, read_all

pytestmark = pytest.mark.integration


def test_postgres_streams_pgoutput_changes_from_a_replication_slot(stack: StackSettings, unique_name: str) -> None:
    slot, pub, table = f"slot_{unique_name}", f"pub_{unique_name}", f"t_{unique_name}"
    conn = psycopg2.connect(stack.pg_dsn())
    conn.autocommit = True
    repl = psycopg2.connect(stack.pg_dsn(), connection_factory=psycopg2.extras.LogicalReplicationConnection)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW wal_level")
            assert cur.fetchone() == ("logical",)
            cur.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, note text)")
            cur.execute(f"CREATE PUBLICATION {pub} FOR TABLE {table}")
        rcur = repl.cursor()
        rcur.create_replication_slot(slot, output_plugin="pgoutput")
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {table} VALUES (1, 'hello'), (2, 'world')")
        rcur.start_replication(slot_name=slot, decode=False,
                               options={"proto_version": "1", "publication_names": pub})
        kinds: list[str] = []
        while kinds.count("I") < 2:
            msg = rcur.read_message()
            if msg is None:
                continue
            kinds.append(chr(msg.payload[0]))
            if kinds[-1] == "I":
                assert b"hello" in msg.payload or b"world" in msg.payload
            msg.cursor.send_feedback(flush_lsn=msg.data_start)
        assert kinds[:2] == ["B", "R"]
    finally:
        repl.close()
        with conn.cursor() as cur:
            # The walsender exits shortly after the connection closes; the slot is in use until then.
            deadline = time.monotonic() + 15
            while True:
                cur.execute("SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,))
                row = cur.fetchone()
                if row is None or not row[0] or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            cur.execute("SELECT pg_drop_replication_slot(%s) FROM pg_replication_slots WHERE slot_name = %s",
                        (slot, slot))
            cur.execute(f"DROP PUBLICATION IF EXISTS {pub}")
            cur.execute(f"DROP TABLE IF EXISTS {table}")
        conn.close()


def test_kafka_broker_round_trips_records(stack: StackSettings, unique_name: str) -> None:
    topic = f"roundtrip-{unique_name}"
    create_topic(stack.bootstrap_servers, topic, partitions=3)
    sent = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(300)] + [(b"gone", None)]
    produce(stack.bootstrap_servers, topic, sent)
    got = read_all(stack.bootstrap_servers, topic)
    assert sorted((k, v) for k, v, _, _ in got) == sorted(sent)
    by_key: dict[bytes | None, set[int]] = {}
    for key, _, partition, _ in got:
        by_key.setdefault(key, set()).add(partition)
    assert all(len(parts) == 1 for parts in by_key.values()), "a key landed in two partitions"


def test_the_dev_entry_point_reports_the_running_stack(stack: StackSettings, schema_registry: str) -> None:
    """``python -m devtools stack status`` (``make stack-status``) sees the services the tests use."""
    done = subprocess.run([sys.executable, "-m", "devtools", "stack", "status"], cwd=Path(__file__).parents[2],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert any(line.startswith("postgres") and " up " in line and f":{stack.pg_port} " in line for line in lines)
    assert any(line.startswith("kafka") and " up " in line and stack.bootstrap_servers in line for line in lines)
    assert any(line.startswith("registry") and " up " in line and f"{schema_registry} compatibility=BACKWARD" in line
               for line in lines)


def test_mariadb_writes_a_row_based_binlog_with_gtids(stack: StackSettings, unique_name: str) -> None:
    """The stack's MariaDB is reachable over TCP with the stack's password and logs full row images
    under GTIDs: what binlog capture needs."""
    table = f"t_{unique_name}"
    base = ["mariadb", "-h", "127.0.0.1", "-P", str(stack.mariadb_port), f"-u{stack.mariadb_user}",
            f"-p{stack.mariadb_password}", "--batch", "--skip-column-names", stack.mariadb_db, "-e"]

    def sql(statement: str) -> str:
        return subprocess.run([*base, statement], capture_output=True, text=True, check=True).stdout.strip()

    settings = sql("SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@gtid_strict_mode")
    assert settings.split("\t") == ["1", "ROW", "FULL", "1"]
    before = sql("SELECT @@gtid_binlog_pos")
    sql(f"CREATE TABLE {table} (id INT PRIMARY KEY, note TEXT); INSERT INTO {table} VALUES (1, 'hello')")
    after = sql("SELECT @@gtid_binlog_pos")
    assert after != before and after.startswith("0-1-")
    events = sql(f"SHOW BINLOG EVENTS IN '{sql('SHOW MASTER STATUS').split()[0]}'")
    assert "Write_rows" in events
