"""MariaDB binlog capture (issue 16): inserts, updates and deletes on the stack's MariaDB become Debezium
MariaDB change events in Kafka (topics ``<prefix>.<database>.<table>``, primary-key keys, tombstones, the
MariaDB ``source`` block), multi-row and multi-table transactions keep their order and GTID, a restart
resumes exactly after the stored offset (Debezium's MySQL offset keys), ``kill -9`` loses nothing, and an
offset whose binlog is gone is a terminal error saying to take a new snapshot."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools import StackSettings
from tests.integration.capture_helpers import Record, wait_until
from tests.integration.mariadb_helpers import MariaEnv

pytestmark = pytest.mark.integration

TIMEOUT_S = 60.0


@pytest.fixture
def env(stack: StackSettings, mariadb: Any, unique_name: str, tmp_path: Path) -> Iterator[MariaEnv]:
    environment = MariaEnv(stack, mariadb, unique_name, tmp_path)
    try:
        yield environment
    finally:
        environment.close()


def _changes(records: list[Record]) -> list[Record]:
    return [record for record in records if not record.tombstone]


def test_insert_update_delete_become_debezium_mariadb_events(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, name VARCHAR(40), qty INT UNSIGNED NOT NULL")
    other = env.create_table("code VARCHAR(8) PRIMARY KEY, note TEXT", table=f"o_{env.suffix}")
    car = env.start_streaming(env.sidecar(env.connector_config(tables=[env.table, other])))
    reader, other_reader = env.reader(), env.reader(other)
    env.sql(f"INSERT INTO `{env.table}` VALUES (1, 'one', 10), (2, 'two', 4294967295)")  # one event, two rows
    env.sql(f"UPDATE `{env.table}` SET name = 'uno' WHERE id = 1",
            f"INSERT INTO `{other}` VALUES ('x', 'in the same transaction')")
    env.sql(f"DELETE FROM `{env.table}` WHERE id = 2")
    records = reader.wait_for_count(5, TIMEOUT_S, car.log_tail)  # c, c, u, d, tombstone
    other_reader.wait_for_count(1, TIMEOUT_S, car.log_tail)

    changes = _changes(records)
    assert [r.op for r in changes] == ["c", "c", "u", "d"]
    assert records[4].tombstone and records[4].key_payload == {"id": 2}
    assert [r.key_payload for r in changes] == [{"id": 1}, {"id": 2}, {"id": 1}, {"id": 2}]
    assert changes[0].payload["after"] == {"id": 1, "name": "one", "qty": 10}
    assert changes[1].payload["after"] == {"id": 2, "name": "two", "qty": 4294967295}
    assert changes[2].payload["before"] == {"id": 1, "name": "one", "qty": 10}
    assert changes[2].payload["after"] == {"id": 1, "name": "uno", "qty": 10}
    assert changes[3].payload["before"]["id"] == 2 and changes[3].payload["after"] is None

    sources = [r.payload["source"] for r in changes]
    for source in sources:
        assert list(source) == ["version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us",
                                "ts_ns", "table", "server_id", "gtid", "file", "pos", "row", "thread", "query"]
        assert source["connector"] == "mariadb" and source["name"] == env.prefix
        assert source["db"] == env.db and source["table"] == env.table and source["snapshot"] == "false"
        assert source["server_id"] == 1 and re.fullmatch(r"0-1-\d+", source["gtid"])
        assert re.fullmatch(r"mariadb-bin\.\d{6}", source["file"]) and source["pos"] > 4
        assert source["ts_us"] == source["ts_ms"] * 1000 and source["ts_ms"] % 1000 == 0  # seconds precision
        assert source["sequence"] is None and source["thread"] is None and source["query"] is None
    # the two rows of one INSERT: one rows event (same pos), rows 0 and 1; then later events and GTIDs
    assert sources[0]["pos"] == sources[1]["pos"] and [sources[0]["row"], sources[1]["row"]] == [0, 1]
    assert sources[0]["gtid"] == sources[1]["gtid"]
    sequences = [int(s["gtid"].rsplit("-", 1)[1]) for s in sources]
    assert sequences[0] < sequences[2] < sequences[3]
    # the update and the other table's insert share their transaction's GTID
    assert other_reader.records[0].payload["source"]["gtid"] == sources[2]["gtid"]
    assert other_reader.records[0].key_payload == {"code": "x"}

    schema = records[0].value["schema"]
    source_schema = next(f for f in schema["fields"] if f["field"] == "source")
    assert source_schema["name"] == "io.debezium.connector.mariadb.Source"
    assert schema["name"] == f"{env.prefix}.{env.db}.{env.table}.Envelope"

    # The stored offset is Debezium's MySQL/MariaDB offset: GTID set and the binlog coordinate after the last
    # transaction.
    wait_until(lambda: (env.offsets_file.exists() and env.stored_offsets().get("gtids") == sources[3]["gtid"]) or None,
               TIMEOUT_S, "the offsets to reach the delete's GTID", describe=car.log_tail)
    stored = env.stored_offsets()
    assert stored["file"] == sources[3]["file"] and stored["pos"] > sources[3]["pos"]
    assert stored["server_id"] == 1 and isinstance(stored["ts_sec"], int)
    assert car.stop() == 0


def test_include_query_and_transaction_metadata(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, v INT")
    car = env.start_streaming(env.sidecar(env.connector_config(include_query="true",
                                                               provide_transaction_metadata="true")))
    reader = env.reader()
    statement = f"INSERT INTO `{env.table}` VALUES (7, 70)"
    env.sql(statement)
    record = reader.wait_for_count(1, TIMEOUT_S, car.log_tail)[0]
    source = record.payload["source"]
    assert source["query"] == statement
    assert record.payload["transaction"] == {"id": source["gtid"], "total_order": 1, "data_collection_order": 1}


def test_restart_resumes_after_the_stored_offset_without_loss_or_duplicates(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, v INT")
    car = env.start_streaming(env.sidecar())
    reader = env.reader()
    for i in range(1, 6):
        env.sql(f"INSERT INTO `{env.table}` VALUES ({i}, {i})")
    reader.wait_for_count(5, TIMEOUT_S, car.log_tail)
    wait_until(lambda: (env.offsets_file.exists() and env.stored_offsets().get("pos")) or None, TIMEOUT_S,
               "offsets to be stored", describe=car.log_tail)
    assert car.stop() == 0
    for i in range(6, 11):  # written while the sidecar is down
        env.sql(f"INSERT INTO `{env.table}` VALUES ({i}, {i})")
    env.start_streaming(car)
    env.sql(f"UPDATE `{env.table}` SET v = 100 WHERE id = 1")
    records = reader.wait_for_count(11, TIMEOUT_S, car.log_tail)
    reader.read_available(1.0)
    assert [(r.op, r.key_payload["id"]) for r in reader.records] == (
        [("c", i) for i in range(1, 11)] + [("u", 1)])
    assert records[10].payload["after"] == {"id": 1, "v": 100}


def test_kill_9_mid_stream_loses_nothing(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, v INT")
    car = env.start_streaming(env.sidecar())
    reader = env.reader()
    written = 0
    for _round in range(3):
        for _ in range(40):
            written += 1
            env.sql(f"INSERT INTO `{env.table}` VALUES ({written}, {written})")
        car.kill()
        env.start_streaming(car)
    reader.wait_for(lambda records: {r.key_payload["id"] for r in records} >= set(range(1, written + 1)),
                    TIMEOUT_S * 2, f"all {written} inserts", car.log_tail)
    ids = [r.key_payload["id"] for r in reader.records]
    assert set(ids) == set(range(1, written + 1))
    # at-least-once: a redelivered insert is the same event again, never a different one
    by_id: dict[int, Any] = {}
    for record in reader.records:
        assert by_id.setdefault(record.key_payload["id"], record.payload["source"]["gtid"]) == \
            record.payload["source"]["gtid"]


def test_an_offset_whose_binlog_is_gone_is_a_terminal_error(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY")
    files = env.sql("SHOW BINARY LOGS")
    first = str(files[0][0])
    base, _, number = first.rpartition(".")
    purged = f"{base}.{int(number) - 1:06d}" if int(number) > 1 else f"{base}.000000"
    env.offsets_file.write_text(json.dumps({"format_version": 1, "position": 0, "file": purged, "pos": 1234,
                                            "gtids": "0-1-1", "server_id": 1}))
    car = env.sidecar().start()
    code = car.wait_exit(TIMEOUT_S)
    log = car.log_text()
    assert code != 0
    # (the log masks the stack's password, "mariadb", wherever it appears: compare the file name's tail)
    assert purged.rpartition("-")[2] in log and "position 1234" in log and "new snapshot" in log


def test_column_types_in_the_default_modes(env: MariaEnv) -> None:
    env.create_table(
        "id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, su SMALLINT UNSIGNED, iu INT UNSIGNED, "
        "bu BIGINT UNSIGNED, de DECIMAL(10,2), f FLOAT, d DOUBLE, b1 BIT(1), b10 BIT(10), y YEAR, dt DATE, "
        "tm TIME(6), tm2 TIME(6), dt3 DATETIME(3), dt6 DATETIME(6), ts TIMESTAMP(6) NULL, e ENUM('a','b'), "
        "s SET('x','y','z'), "
        "j JSON, l1 VARCHAR(10) CHARACTER SET latin1, u8 TEXT CHARACTER SET utf8mb4, bn BINARY(3), bl BLOB, "
        "g GEOMETRY, p POINT")
    car = env.start_streaming(env.sidecar())
    reader = env.reader()
    with env.conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
    env.sql(f"INSERT INTO `{env.table}` VALUES (1, -5, 255, 65535, 4294967295, 18446744073709551615, -12.50, 1.5, "
            "2.25, b'1', b'1000000011', 2024, '2024-02-29', '-01:00:00', '01:02:03.000005', '2024-01-02 03:04:05.678', "
            "'2024-01-02 03:04:05.678901', '2024-01-02 03:04:05.120000', 'b', 'z,x', '{\"a\": [1, 2]}', 'été', "
            "'日本', x'01', x'00ff', ST_GeomFromText('POINT(1 2)', 4326), POINT(3, 4))")
    env.sql(f"INSERT INTO `{env.table}` (id) VALUES (2)")
    records = reader.wait_for_count(2, TIMEOUT_S, car.log_tail)
    after = records[0].payload["after"]
    assert after == {
        "id": 1, "ti": -5, "tu": 255, "su": 65535, "iu": 4294967295, "bu": -1, "de": "+x4=", "f": 1.5, "d": 2.25,
        "b1": True, "b10": "AwI=", "y": 2024, "dt": 19782, "tm": -3_600_000_000, "tm2": 3_723_000_005,
        "dt3": 1704164645678,
        "dt6": 1704164645678901, "ts": "2024-01-02T03:04:05.120000Z", "e": "b", "s": "x,z", "j": '{"a": [1, 2]}',
        "l1": "été", "u8": "日本", "bn": "AQAA", "bl": "AP8=",
        "g": {"wkb": "AQEAAAAAAAAAAADwPwAAAAAAAABA", "srid": 4326},  # Geometry v1, as MariaDB 3.5.0.Final
        "p": {"x": 3.0, "y": 4.0, "wkb": "AQEAAAAAAAAAAAAIQAAAAAAAABBA", "srid": None},
    }
    assert all(value is None for name, value in records[1].payload["after"].items() if name != "id")
    fields = {f["field"]: f for f in records[0].value["schema"]["fields"][1]["fields"]}
    assert fields["iu"]["type"] == "int64" and fields["su"]["type"] == "int32" and fields["f"]["type"] == "float"
    assert fields["de"]["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    # MariaDB's JSON is a longtext to Debezium's MariaDB connector: a plain string (measured, 3.5.0.Final)
    assert fields["b10"]["name"] == "io.debezium.data.Bits" and "name" not in fields["j"]
    assert fields["dt3"]["name"] == "io.debezium.time.Timestamp"
    assert fields["dt6"]["name"] == "io.debezium.time.MicroTimestamp"
    assert fields["ts"]["name"] == "io.debezium.time.ZonedTimestamp"
    assert fields["g"]["name"] == "io.debezium.data.geometry.Geometry"
    assert fields["p"]["name"] == "io.debezium.data.geometry.Point"


def test_gtid_source_excludes_skip_that_servers_transactions(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY")
    kept = env.create_table("id INT PRIMARY KEY", table=f"k_{env.suffix}")
    car = env.start_streaming(env.sidecar(env.connector_config(tables=[env.table, kept],
                                                               gtid_source_excludes="0-1")))
    reader, kept_reader = env.reader(), env.reader(kept)
    env.sql(f"INSERT INTO `{env.table}` VALUES (1)")
    kept_reader.read_available(3.0)
    reader.read_available(1.0)
    assert reader.records == [] and kept_reader.records == []
    assert car.alive()


def test_table_plans_are_safe_to_use_from_the_binlog_thread_and_the_loop_at_once(env: MariaEnv) -> None:
    """The binlog reader thread builds and forgets plans and reloads the schema (rows events, DDL) while the
    capture loop asks for them (a snapshot's READs): neither may see another's catalog packets or a plan of None
    for a captured table (a None is kept, and the table's rows would be skipped from then on)."""
    import threading

    from signaller.config import load_config
    from signaller.model import TableId
    from signaller.sources.mariadb.catalog import Catalog
    from signaller.sources.mariadb.changes import TablePlans
    from signaller.sources.mariadb.source import type_modes

    env.create_table("id INT PRIMARY KEY, name VARCHAR(20), n BIGINT UNSIGNED")
    path = env.workdir / "plans-connector.json"
    path.write_text(json.dumps(env.connector_config()))
    config = load_config(str(path), {})
    plans = TablePlans(config, Catalog(config), type_modes(config))
    table = TableId(env.db, env.table)
    plans.load_snapshot([table])
    failures: list[BaseException] = []
    seen: list[tuple[str, ...] | None] = []

    writer_done = threading.Event()

    def use(forget: bool) -> None:
        try:
            for turn in range(150):
                plan = plans.plan(table)
                seen.append(None if plan is None else plan.row_columns)
                if forget:
                    plans.forget()
                    plans.load_snapshot([table])
                    plans.apply_ddl(f"ALTER TABLE `{env.table}` COMMENT 'turn {turn}'", env.db, "test")
            while not forget and not writer_done.is_set():  # the loop keeps asking while the binlog thread works
                plan = plans.plan(table)
                seen.append(None if plan is None else plan.row_columns)
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)
        finally:
            if forget:
                writer_done.set()

    threads = [threading.Thread(target=use, args=(forget,)) for forget in (True, False)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures[:3]
    assert len(seen) >= 300 and set(seen) == {("id", "name", "n")}, set(seen)
