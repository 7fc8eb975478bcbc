"""Incremental snapshots of MariaDB end to end (issue 16): the sidecar as a subprocess on the stack's MariaDB
and Kafka, signals on the signal table (``<db>.<table>``) and ``POST /signals``.

* READ values equal, value for value and with the same schema, what streaming emits for the same rows, for
  every column type of the stream's type test;
* tables with an integer key, a composite ``(int, varchar)`` key and a text key (MariaDB's collation orders
  it), read while a writer inserts, updates, deletes and changes keys: every topic replays into its table,
  no READ is older than a change streamed before it (DBLog window deduplication) and, without restarts, no
  streamed change older than a READ follows it;
* a filter (``additional-conditions`` in MariaDB's dialect), pause/resume/stop, notifications;
* ``kill -9`` mid-snapshot resumes after the last stored chunk;
* ``read.only=true`` without a signal table (nothing written to MariaDB).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from devtools import StackSettings
from tests.integration.capture_helpers import Record, Sidecar, TopicReader, closed_port, replay, wait_until
from tests.integration.mariadb_helpers import MariaEnv
from tests.integration.snapshot_helpers import (
    _text_key,
    check_notification_fields,
    reads,
    reads_older_than_streamed,
    stale_after_read,
    start,
)

pytestmark = pytest.mark.integration

TIMEOUT_S = 90.0
SHAPES = {
    "int": ("id INT PRIMARY KEY, val VARCHAR(64) NOT NULL, n BIGINT NOT NULL", ("id",), lambda n: (n,)),
    "comp": ("a INT NOT NULL, b VARCHAR(32) NOT NULL, val VARCHAR(64) NOT NULL, n BIGINT NOT NULL, "
             "PRIMARY KEY (a, b)", ("a", "b"), lambda n: (n % 37, f"b{n // 37}")),
    "text": ("k VARCHAR(64) PRIMARY KEY, val VARCHAR(64) NOT NULL, n BIGINT NOT NULL", ("k",), _text_key),
}
ALL_TYPES = (
    "id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, su SMALLINT UNSIGNED, iu INT UNSIGNED, "
    "bu BIGINT UNSIGNED, de DECIMAL(10,2), f FLOAT, d DOUBLE, b1 BIT(1), b10 BIT(10), y YEAR, dt DATE, "
    "tm TIME(6), tm2 TIME(6), dt3 DATETIME(3), dt6 DATETIME(6), ts TIMESTAMP(6) NULL, e ENUM('a','b'), "
    "s SET('x','y','z'), j JSON, l1 VARCHAR(10) CHARACTER SET latin1, u8 TEXT CHARACTER SET utf8mb4, "
    "bn BINARY(3), bl BLOB, g GEOMETRY, p POINT")
ALL_TYPES_ROWS = (
    "(1, -5, 255, 65535, 4294967295, 18446744073709551615, -12.50, 1.5, 2.25, b'1', b'1000000011', 2024, "
    "'2024-02-29', '-01:00:00', '01:02:03.000005', '2024-01-02 03:04:05.678', '2024-01-02 03:04:05.678901', "
    "'2024-01-02 03:04:05.120000', 'b', 'z,x', '{\"a\": [1, 2]}', 'été', '日本', x'01', x'00ff', "
    "ST_GeomFromText('POINT(1 2)', 4326), POINT(3, 4))",
    "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(3, 127, 0, 0, 0, 9223372036854775807, 99999999.99, 3.4e38, -1.7976931348623157e308, b'0', b'0', 1901, "
    "'1000-01-01', '838:59:59', '-838:59:59', '1000-01-01 00:00:00', '9999-12-31 23:59:59.999999', "
    "'1970-01-01 00:00:01', 'a', '', '[]', '', '', x'000000', x'', "
    "ST_GeomFromText('LINESTRING(0 0, 1 1)'), POINT(-1.5, 0.1))",
    "(4, -128, 1, 1, 1, 0, 0.01, 0.1, 0.1, b'1', b'1111111111', 2155, '2024-12-31', '00:00:00.5', '12:00:00', "
    "'2024-06-30 12:00:00.001', '2024-06-30 12:00:00.000001', '2038-01-19 03:14:07.999999', 'a', 'x,y,z', "
    "'{\"k\": \"v\\\\\"q\"}', 'a''b', 'tab\\tnew\\nline \\\\ \U0001F600', x'ffffff', x'0102030405', "
    "ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))'), POINT(0, 0))",
)


class Tables:
    """One table per shape (``<env.table>_<tag>``) in MariaDB, filled and read back as topics replay them."""

    def __init__(self, env: MariaEnv, rows: dict[str, int]) -> None:
        self.env = env
        self.names = {tag: f"{env.table}_{tag}" for tag in SHAPES}
        for tag, (columns, _key, make_key) in SHAPES.items():
            env.create_table(columns, self.names[tag])
            values = [(*make_key(n), f"init-{n}", n) for n in range(rows.get(tag, 0))]
            with env.conn.cursor() as cur:
                for start_at in range(0, len(values), 500):
                    batch = values[start_at:start_at + 500]
                    marks = ", ".join(["(" + ", ".join(["%s"] * len(batch[0])) + ")"] * len(batch))
                    cur.execute(f"INSERT INTO `{self.names[tag]}` VALUES {marks}", [v for row in batch for v in row])

    def qualified(self, tag: str) -> str:
        return f"{self.env.db}.{self.names[tag]}"

    def rows(self, tag: str) -> dict[str, dict[str, Any]]:
        key = SHAPES[tag][1]
        with self.env.conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute(f"SELECT * FROM `{self.names[tag]}`")
            return {json.dumps({k: row[k] for k in key}, sort_keys=True): dict(row) for row in cur.fetchall()}


class Writer(threading.Thread):
    """Autocommit single-change transactions (inserts, updates, deletes, key changes; value ``n`` = the change's
    serial) on the shape tables at about ``rate`` per second until ``stop()``."""

    def __init__(self, stack: StackSettings, tables: Tables, key_space: dict[str, int], seed: int,
                 rate: float = 120.0) -> None:
        super().__init__(name="mariadb-writer", daemon=True)
        self.stack, self.tables, self.key_space = stack, tables, key_space
        self.rng, self.rate = random.Random(seed), rate
        self.halt = threading.Event()
        self.error: BaseException | None = None
        self.changes = 0

    def stop(self) -> None:
        self.halt.set()
        self.join(30)
        assert not self.is_alive() and self.error is None, self.error

    def run(self) -> None:
        try:
            conn = pymysql.connect(host="127.0.0.1", port=self.stack.mariadb_port, user=self.stack.mariadb_user,
                                   password=self.stack.mariadb_password, database=self.stack.mariadb_db,
                                   autocommit=True, charset="utf8mb4")
            started = time.monotonic()
            serial = 0
            with conn:
                while not self.halt.is_set():
                    serial += 1
                    self._change(conn, serial)
                    ahead = serial / self.rate - (time.monotonic() - started)
                    if ahead > 0:
                        self.halt.wait(ahead)
        except BaseException as exc:
            self.error = exc

    def _change(self, conn: Any, serial: int) -> None:
        tag = self.rng.choice(list(self.key_space))
        _columns, key_columns, make_key = SHAPES[tag]
        name = self.tables.names[tag]
        key = make_key(self.rng.randrange(self.key_space[tag]))
        where = " AND ".join(f"`{c}` = %s" for c in key_columns)
        kind = self.rng.choices(["insert", "update", "delete", "rekey"], [3, 4, 2, 1])[0]
        with conn.cursor() as cur:
            try:
                if kind == "insert":
                    marks = ", ".join(["%s"] * (len(key_columns) + 2))
                    cur.execute(f"INSERT IGNORE INTO `{name}` VALUES ({marks})", (*key, f"ins-{serial}", serial))
                elif kind == "update":
                    cur.execute(f"UPDATE `{name}` SET val = %s, n = %s WHERE {where}", (f"upd-{serial}", serial, *key))
                elif kind == "delete":
                    cur.execute(f"DELETE FROM `{name}` WHERE {where}", key)
                else:
                    new_key = make_key(self.rng.randrange(self.key_space[tag]))
                    sets = ", ".join(f"`{c}` = %s" for c in key_columns)
                    cur.execute(f"UPDATE `{name}` SET {sets}, val = %s, n = %s WHERE {where}",
                                (*new_key, f"key-{serial}", serial, *key))
                self.changes += 1
            except pymysql.err.IntegrityError:
                pass  # a key change onto an existing key


@pytest.fixture
def env(stack: StackSettings, mariadb: Any, unique_name: str, tmp_path: Path) -> Iterator[MariaEnv]:
    environment = MariaEnv(stack, mariadb, unique_name, tmp_path)
    try:
        yield environment
    finally:
        environment.close()


def signal_table(env: MariaEnv) -> str:
    return env.create_table("id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048)",
                            f"{env.table}_signal")


def snapshot_config(env: MariaEnv, tables: list[str], signal: str | None, chunk_size: int = 100,
                    **overrides: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {
        "incremental_snapshot_chunk_size": str(chunk_size),
        "notification_enabled_channels": "sink",
        "notification_sink_topic_name": f"{env.prefix}-notifications",
        "signaller_http_port": str(closed_port()),
        "heartbeat_interval_ms": "500",
        "snapshot_mode": "no_data",
    }
    if signal is not None:
        extra["signal_data_collection"] = f"{env.db}.{signal}"
        extra["read_only"] = "false"
        tables = [*tables, signal]
    extra.update(overrides)
    return env.connector_config(tables=tables, **extra)


def send_signal(env: MariaEnv, signal: str, signal_id: str, signal_type: str, data: dict[str, Any]) -> None:
    env.sql(f"INSERT INTO `{signal}` VALUES (%s, %s, %s)", params=(signal_id, signal_type, json.dumps(data)))


def notifications(env: MariaEnv) -> TopicReader:
    reader = TopicReader(env.stack.bootstrap_servers, f"{env.prefix}-notifications")
    env.readers.append(reader)
    return reader


def wait_notification(reader: TopicReader, kind: str, car: Sidecar, after: int = 0) -> dict[str, Any]:
    """The first incremental-snapshot notification of ``kind`` from record ``after`` on (the start-up schema
    snapshot's Initial Snapshot STARTED/COMPLETED are not the signals' snapshots)."""
    def probe() -> dict[str, Any] | None:
        reader.read_available(0.1)
        found = [r.payload for r in reader.records[after:]
                 if r.payload["type"] == kind and r.payload["aggregate_type"] == "Incremental Snapshot"]
        return found[0] if found else None

    return wait_until(probe, TIMEOUT_S, f"a {kind} notification", interval_s=0.1,
                      describe=lambda: f"{[r.payload['type'] for r in reader.records]}\n{car.log_tail()}")


def check_reads(records: list[Record], env: MariaEnv) -> None:
    for record in reads(records):
        source = record.payload["source"]
        assert record.payload["before"] is None and source["snapshot"] == "incremental", record.payload
        assert source["connector"] == "mariadb" and source["db"] == env.db and source["gtid"] is None, source


def test_read_values_equal_streamed_values_for_every_type(env: MariaEnv) -> None:
    """Rows inserted while streaming, then snapshotted: each READ equals the row's streamed create, value for
    value, with the same value schema and key."""
    env.create_table(ALL_TYPES)
    signal = signal_table(env)
    car = env.sidecar(snapshot_config(env, [env.table], signal))
    api = start(car)
    reader = env.reader()
    with env.conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
    for row in ALL_TYPES_ROWS:
        env.sql(f"INSERT INTO `{env.table}` VALUES {row}")
    streamed = list(reader.wait_for_count(len(ALL_TYPES_ROWS), TIMEOUT_S, car.log_tail))
    send_signal(env, signal, "types-1", "execute-snapshot", {"data-collections": [f"{env.db}\\.{env.table}"]})
    records = reader.wait_for_count(2 * len(ALL_TYPES_ROWS), TIMEOUT_S, car.log_tail)
    api.close()
    assert [r.op for r in streamed] == ["c"] * len(ALL_TYPES_ROWS)
    read = reads(records)
    assert len(read) == len(ALL_TYPES_ROWS)
    check_reads(records, env)
    by_key = {json.dumps(r.key_payload, sort_keys=True): r for r in streamed}
    for record in read:
        create = by_key[json.dumps(record.key_payload, sort_keys=True)]
        assert record.payload["after"] == create.payload["after"], record.key_payload
        assert record.value["schema"] == create.value["schema"]
        assert record.key == create.key


def test_a_negative_time_with_a_fraction_reads_as_it_streams(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, tm TIME(6)")
    signal = signal_table(env)
    car = env.sidecar(snapshot_config(env, [env.table], signal))
    api = start(car)
    reader = env.reader()
    env.sql(f"INSERT INTO `{env.table}` VALUES (1, '-838:59:59.999999')")
    reader.wait_for_count(1, TIMEOUT_S, car.log_tail)
    send_signal(env, signal, "time-1", "execute-snapshot", {"data-collections": [f"{env.db}\\.{env.table}"]})
    records = reader.wait_for_count(2, TIMEOUT_S, car.log_tail)
    api.close()
    assert records[1].op == "r" and records[1].payload["after"]["tm"] == -3_020_399_999_999
    assert records[0].payload["after"] == records[1].payload["after"]


def test_snapshots_under_concurrent_writes_replay_into_the_tables(env: MariaEnv) -> None:
    """Integer, composite and text keys, chunk size 50, a writer racing the chunks: the signal table starts the
    snapshot; every topic replays into its table, and the DBLog window leaves no stale READ."""
    rows = {"int": 1500, "comp": 900, "text": 700}
    tables = Tables(env, rows)
    signal = signal_table(env)
    car = env.sidecar(snapshot_config(env, list(tables.names.values()), signal, chunk_size=50))
    api = start(car)
    notes = notifications(env)
    writer = Writer(env.stack, tables, {tag: count + 100 for tag, count in rows.items()}, seed=16)
    writer.start()
    time.sleep(1.0)
    send_signal(env, signal, "all-1", "execute-snapshot",
                {"data-collections": [tables.qualified(tag).replace(".", "\\.") for tag in SHAPES]})
    completed = wait_notification(notes, "COMPLETED", car)
    writer.stop()
    api.wait_idle(TIMEOUT_S)
    assert writer.changes > 100
    for tag in SHAPES:
        reader = env.reader(tables.names[tag])
        expected = tables.rows(tag)
        reader.wait_for(lambda records, expected=expected: replay(records) == expected, TIMEOUT_S,
                        f"{tag} to replay into its table", describe=car.log_tail)
        check_reads(reader.records, env)
        assert reads(reader.records), tag
        older = reads_older_than_streamed(reader.records)
        assert not older, f"{tag}: READ(s) older than a change streamed before them: {older[:5]}"
        stale = stale_after_read(reader.records)
        assert not stale, f"{tag}: streamed change(s) older than an earlier READ: {stale[:5]}"
    check_notification_fields(completed, env.prefix)
    kinds = [r.payload["type"] for r in notes.records if r.payload["aggregate_type"] == "Incremental Snapshot"]
    assert kinds[0] == "STARTED" and kinds.count("TABLE_SCAN_COMPLETED") == 3, kinds
    api.close()


def test_filter_pause_resume_and_stop_over_post_signals(env: MariaEnv) -> None:
    """A MariaDB-dialect filter selects exactly its rows; pause holds the snapshot, resume finishes it; stop
    ends a running one; a filter naming no column of the table is rejected."""
    tables = Tables(env, {"int": 3000, "text": 400})
    signal = signal_table(env)
    car = env.sidecar(snapshot_config(env, [tables.names["int"], tables.names["text"]], signal, chunk_size=20))
    api = start(car)
    notes = notifications(env)
    api.accepted("execute-snapshot", {"data-collections": [tables.qualified("text")], "additional-conditions": [
        {"data-collection": tables.qualified("text"), "filter": "n % 7 = 3 and val like 'init-%'"}]}, "f-1")
    wait_notification(notes, "COMPLETED", car)
    text_reader = env.reader(tables.names["text"])
    expected = {k: v for k, v in tables.rows("text").items() if v["n"] % 7 == 3}
    text_reader.wait_for(lambda records: replay(records) == expected, TIMEOUT_S, "the filtered rows",
                         describe=car.log_tail)
    text_reader.read_available(1.0)
    assert replay(text_reader.records) == expected

    bad = api.signal("execute-snapshot", {"data-collections": [tables.qualified("int")], "additional-conditions": [
        {"data-collection": tables.qualified("int"), "filter": "nope = 1"}]}, "f-bad")
    assert bad.status_code in (400, 422), bad.text
    assert "nope" in bad.text

    after = len(notes.records)
    api.accepted("execute-snapshot", {"data-collections": [tables.qualified("int")]}, "p-1")
    wait_notification(notes, "STARTED", car, after)
    api.accepted("pause-snapshot", {}, "p-2")
    wait_notification(notes, "PAUSED", car, after)
    int_reader = env.reader(tables.names["int"])
    int_reader.read_available(2.0)
    held = len(int_reader.records)
    int_reader.read_available(2.0)
    assert len(int_reader.records) == held < 3000
    api.accepted("resume-snapshot", {}, "p-3")
    wait_notification(notes, "COMPLETED", car, after)
    int_reader.wait_for(lambda records: replay(records) == tables.rows("int"), TIMEOUT_S, "every int row")

    after = len(notes.records)
    api.accepted("execute-snapshot", {"data-collections": [tables.qualified("int")]}, "s-1")
    wait_notification(notes, "STARTED", car, after)
    api.accepted("stop-snapshot", {"data-collections": [tables.qualified("int")]}, "s-2")
    wait_notification(notes, "ABORTED", car, after)
    api.wait_idle(TIMEOUT_S)
    api.close()


def test_kill_9_mid_snapshot_resumes_after_the_last_stored_chunk(env: MariaEnv) -> None:
    # Enough chunks that a 200 ms offset flush sees the snapshot in the middle of the table even when it runs
    # fast (6,000 rows took 0.5 s on an idle machine: the stored state could skip from the start to the end).
    tables = Tables(env, {"int": 20000})
    signal = signal_table(env)
    car = env.sidecar(snapshot_config(env, [tables.names["int"]], signal, chunk_size=100))
    api = start(car)
    send_signal(env, signal, "k-1", "execute-snapshot", {"data-collections": [tables.qualified("int")]})

    def mid() -> dict[str, Any] | None:
        state = (env.stored_offsets() if env.offsets_file.exists() else {}).get("snapshot") or {}
        queue = state.get("queue") or []
        return state if queue and queue[0]["rows"] >= 500 and state.get("last_key") else None

    state = wait_until(mid, TIMEOUT_S, "a stored state in the middle of the table", interval_s=0.02,
                       describe=car.log_tail)
    car.kill()
    stored = env.stored_offsets()["snapshot"]
    assert stored["queue"], stored
    resumed_after = int(stored["last_key"][0])
    assert resumed_after >= int(state["last_key"][0])
    reader = env.reader(tables.names["int"])
    reader.read_available(2.0)
    before_kill = len(reader.records)
    api.close()
    api = start(car)
    api.wait_idle(TIMEOUT_S * 2)
    expected = tables.rows("int")
    stored_ids = sorted(json.loads(key)["id"] for key in expected)
    after_stored = [i for i in stored_ids if i > resumed_after]
    assert after_stored, "the kill came after the last chunk was stored: nothing left to resume"

    def later(records: list[Any]) -> list[int]:
        return sorted(r.key_payload["id"] for r in reads(records[before_kill:]))

    # Read until the resumed snapshot's READs arrived (every row was in the topic before the kill already, so a
    # replay alone would not wait for them).
    reader.wait_for(lambda records: len(later(records)) >= len(after_stored), TIMEOUT_S,
                    "the resumed snapshot's READs", describe=car.log_tail)
    assert replay(reader.records) == expected
    # After the restart, exactly the rows after the stored chunk, each once: nothing acknowledged is read again
    # (how many chunks went out between the last stored offset and the kill is timing, not a property).
    assert later(reader.records) == after_stored, (resumed_after, later(reader.records)[:5])
    api.close()


def test_read_only_snapshots_without_a_signal_table(env: MariaEnv) -> None:
    """``read.only=true``: no signal table, nothing written; the consistent-snapshot GTID position closes each
    window; concurrent writes leave no READ older than a change streamed before it."""
    rows = {"int": 1200, "comp": 500}
    tables = Tables(env, rows)
    car = env.sidecar(snapshot_config(env, [tables.names["int"], tables.names["comp"]], None, chunk_size=60))
    api = start(car)
    writer = Writer(env.stack, tables, {"int": 1300, "comp": 600}, seed=61)
    writer.start()
    api.accepted("execute-snapshot", {"data-collections": [tables.qualified("int"), tables.qualified("comp")]},
                 "ro-1")
    time.sleep(1.0)
    api.wait_idle(TIMEOUT_S * 2)
    writer.stop()
    for tag in ("int", "comp"):
        reader = env.reader(tables.names[tag])
        expected = tables.rows(tag)
        reader.wait_for(lambda records, expected=expected: replay(records) == expected, TIMEOUT_S,
                        f"{tag} to replay into its table", describe=car.log_tail)
        check_reads(reader.records, env)
        assert reads(reader.records), tag
        older = reads_older_than_streamed(reader.records)
        assert not older, f"{tag}: READ(s) older than a change streamed before them: {older[:5]}"
    assert "signal.data.collection" not in car.config["config"]
    api.close()


def test_a_signal_written_by_signal_send_starts_a_snapshot(env: MariaEnv) -> None:
    """The registry's MariaDB signal writer (``signaller signal send --channel source``) inserts the row the
    running sidecar reads from the binlog."""
    from signaller.config import load_config
    from signaller.model import TableId
    from signaller.sources.registry import write_signal

    tables = Tables(env, {"int": 50})
    signal = signal_table(env)
    config = snapshot_config(env, [tables.names["int"]], signal)
    car = env.sidecar(config)
    api = start(car)
    notes = notifications(env)
    write_signal(load_config(str(car.config_path), {}), TableId(env.db, signal),
                 {"id": "w-1", "type": "execute-snapshot", "data": {"data-collections": [tables.qualified("int")]}})
    wait_notification(notes, "COMPLETED", car)
    reader = env.reader(tables.names["int"])
    reader.wait_for(lambda records: replay(records) == tables.rows("int"), TIMEOUT_S, "every row")
    api.close()


def test_reads_of_zero_dates_and_their_server_id_are_as_streamed(env: MariaEnv) -> None:
    """A zero date in a ``NOT NULL`` column READs as Debezium's fallback, as it streams (a nullable one as null),
    and READs carry the server's ``@@server_id`` as streamed changes do."""
    env.create_table("id INT PRIMARY KEY, d DATE NULL, d_nn DATE NOT NULL, dt_nn DATETIME(3) NOT NULL")
    signal = signal_table(env)
    car = env.sidecar(snapshot_config(env, [env.table], signal))
    api = start(car)
    reader = env.reader()
    env.sql(f"INSERT INTO `{env.table}` VALUES (1, '0000-00-00', '0000-00-00', '0000-00-00 00:00:00')")
    streamed = reader.wait_for_count(1, TIMEOUT_S, car.log_tail)[0]
    send_signal(env, signal, "zero-1", "execute-snapshot", {"data-collections": [f"{env.db}\\.{env.table}"]})
    read = reader.wait_for_count(2, TIMEOUT_S, car.log_tail)[1]
    api.close()
    with env.conn.cursor() as cur:
        cur.execute("SELECT @@server_id")
        (server_id,) = cur.fetchone()
    assert streamed.op == "c" and read.op == "r"
    assert streamed.payload["after"] == {"id": 1, "d": None, "d_nn": 0, "dt_nn": 0}, streamed.payload
    assert read.payload["after"] == streamed.payload["after"]
    assert read.payload["source"]["server_id"] == streamed.payload["source"]["server_id"] == int(server_id) != 0


def test_an_api_signal_is_taken_at_once_on_a_quiet_binlog(env: MariaEnv) -> None:
    """``POST /signals`` wakes the binlog reader's wait: the answer does not wait out ``poll.interval.ms``."""
    tables = Tables(env, {"int": 30})
    car = env.sidecar(snapshot_config(env, [tables.names["int"]], None, heartbeat_interval_ms="0",
                                      poll_interval_ms="20000"))
    api = start(car)
    time.sleep(1.0)  # nothing is written: the loop settles into its wait for the binlog
    started = time.monotonic()
    api.accepted("execute-snapshot", {"data-collections": [tables.qualified("int")]}, "wake-m")
    answered_s = time.monotonic() - started
    assert answered_s < 5, f"the loop took {answered_s:.1f}s to take the signal\n{car.log_tail()}"
    api.wait_idle(TIMEOUT_S)
    api.close()
