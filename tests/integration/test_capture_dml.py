"""Every DML kind, captured by the real sidecar from the real PostgreSQL into the real Kafka, arrives
as Debezium's envelope: topic, key, op, before/after, source block, tombstones."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.integration.capture_helpers import CaptureEnv, Record, schema_fields

pytestmark = pytest.mark.integration


class Tx:
    """One committed transaction: its xid and the WAL window its records lie in."""

    def __init__(self, env: CaptureEnv, *statements: str) -> None:
        self.lsn_before = _lsn(env)
        env.sql("BEGIN")
        for statement in statements:
            env.sql(statement)
        self.xid = int(env.sql("SELECT txid_current()")[0][0]) % 2**32
        env.sql("COMMIT")
        self.lsn_after = _lsn(env)
        self.wall_ms = int(time.time() * 1000)


def _lsn(env: CaptureEnv) -> int:
    return int(env.sql("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")[0][0])


def check_source(record: Record, env: CaptureEnv, table: str, tx: Tx, prefix: str) -> None:
    source = record.payload["source"]
    assert source["connector"] == "postgresql"
    assert source["name"] == prefix
    assert source["db"] == env.stack.pg_db
    assert (source["schema"], source["table"]) == ("public", table)
    assert source["txId"] == tx.xid
    assert isinstance(source["lsn"], int) and tx.lsn_before <= source["lsn"] <= tx.lsn_after, (source, tx.__dict__)
    assert source["snapshot"] == "false"
    assert isinstance(source["version"], str) and source["version"]
    assert abs(source["ts_ms"] - tx.wall_ms) < 60_000
    sequence = json.loads(source["sequence"])
    assert isinstance(sequence, list) and len(sequence) == 2, source["sequence"]
    assert sequence[1] == str(source["lsn"])
    # sequence[0] is the previous transaction's end LSN (Debezium's lastCommitLsn, the position of its
    # COMMIT message): at most this event's LSN, and equal when this transaction's first record follows it.
    assert sequence[0] is None or (isinstance(sequence[0], str) and int(sequence[0]) <= source["lsn"])
    assert record.payload["transaction"] is None
    assert isinstance(record.payload["ts_ms"], int)


def check_key(record: Record, prefix: str, table: str, key_id: int) -> None:
    assert record.key == {
        "schema": {"type": "struct", "fields": [{"type": "int32", "optional": False, "field": "id"}],
                   "optional": False, "name": f"{prefix}.public.{table}.Key"},
        "payload": {"id": key_id},
    }


def check_event(record: Record, env: CaptureEnv, table: str, prefix: str, tx: Tx, op: str, key_id: int,
                before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
    check_key(record, prefix, table, key_id)
    assert record.op == op, record
    assert record.payload["before"] == before
    assert record.payload["after"] == after
    check_source(record, env, table, tx, prefix)
    schema = record.value["schema"]
    assert schema["name"] == f"{prefix}.public.{table}.Envelope"
    row_schema = schema_fields(schema)["after"]
    assert row_schema["name"] == f"{prefix}.public.{table}.Value"
    assert [(f["field"], f["type"], f["optional"]) for f in row_schema["fields"]] == [
        ("id", "int32", False), ("note", "string", True), ("qty", "int32", True)]


def check_tombstone(record: Record, prefix: str, table: str, key_id: int) -> None:
    assert record.tombstone, record
    check_key(record, prefix, table, key_id)


def test_every_dml_kind_round_trips_into_the_debezium_envelope(capture: CaptureEnv) -> None:
    t = capture.table
    full = f"{t}_full"
    capture.create_table("id integer PRIMARY KEY, note text, qty integer")
    capture.create_table("id integer PRIMARY KEY, note text, qty integer", table=full)
    capture.sql(f"ALTER TABLE {full} REPLICA IDENTITY FULL")
    default_car = capture.sidecar(capture.connector_config(tables=[t, full]), label="default")
    slot, publication, prefix_all = capture.variant("all")
    all_ops_car = capture.sidecar(capture.connector_config(
        slot=slot, publication=publication, prefix=prefix_all, offsets_file=capture.workdir / "offsets-all.json",
        skipped_operations="none"), label="all-ops")
    default_car.start()
    all_ops_car.start()
    capture.wait_slot_active(default_car)
    capture.wait_slot_active(all_ops_car)

    insert = Tx(capture, f"INSERT INTO {t} VALUES (1, 'one', 10)")
    update = Tx(capture, f"UPDATE {t} SET qty = 11 WHERE id = 1")
    rekey = Tx(capture, f"UPDATE {t} SET id = 2 WHERE id = 1")
    delete = Tx(capture, f"DELETE FROM {t} WHERE id = 2")
    truncate = Tx(capture, f"INSERT INTO {t} VALUES (7, 'gone', 7)", f"TRUNCATE {t}")
    marker = Tx(capture, f"INSERT INTO {t} VALUES (99, 'marker', 0)")
    full_insert = Tx(capture, f"INSERT INTO {full} VALUES (1, 'a', 1)")
    full_update = Tx(capture, f"UPDATE {full} SET qty = 2 WHERE id = 1")
    full_delete = Tx(capture, f"DELETE FROM {full} WHERE id = 1")

    prefix = capture.prefix
    reader = capture.reader(capture.topic(t))
    got = reader.wait_for_count(9, 30, describe=default_car.log_tail)
    check_event(got[0], capture, t, prefix, insert, "c", 1, None, {"id": 1, "note": "one", "qty": 10})
    # Default replica identity: an update has no old row.
    check_event(got[1], capture, t, prefix, update, "u", 1, None, {"id": 1, "note": "one", "qty": 11})
    # A primary-key change: delete of the old key (key columns only), its tombstone, create of the new key.
    check_event(got[2], capture, t, prefix, rekey, "d", 1, {"id": 1, "note": None, "qty": None}, None)
    check_tombstone(got[3], prefix, t, 1)
    check_event(got[4], capture, t, prefix, rekey, "c", 2, None, {"id": 2, "note": "one", "qty": 11})
    check_event(got[5], capture, t, prefix, delete, "d", 2, {"id": 2, "note": None, "qty": None}, None)
    check_tombstone(got[6], prefix, t, 2)
    # Truncate is skipped by default (skipped.operations=t): the insert before it, then the marker.
    check_event(got[7], capture, t, prefix, truncate, "c", 7, None, {"id": 7, "note": "gone", "qty": 7})
    check_event(got[8], capture, t, prefix, marker, "c", 99, None, {"id": 99, "note": "marker", "qty": 0})
    assert [r.op for r in got[9:]] == []

    full_records = capture.reader(capture.topic(full)).wait_for_count(4, 30, describe=default_car.log_tail)
    row1, row2 = {"id": 1, "note": "a", "qty": 1}, {"id": 1, "note": "a", "qty": 2}
    check_event(full_records[0], capture, full, prefix, full_insert, "c", 1, None, row1)
    # REPLICA IDENTITY FULL: the whole old row in before.
    check_event(full_records[1], capture, full, prefix, full_update, "u", 1, row1, row2)
    check_event(full_records[2], capture, full, prefix, full_delete, "d", 1, row2, None)
    check_tombstone(full_records[3], prefix, full, 1)
    assert len(full_records) == 4

    # skipped.operations=none: the same stream plus the truncate event (no key, no rows).
    every = capture.reader(capture.topic(t, prefix_all)).wait_for_count(10, 30, describe=all_ops_car.log_tail)
    assert [(r.op, r.key_payload) for r in every] == [
        ("c", {"id": 1}), ("u", {"id": 1}), ("d", {"id": 1}), (None, {"id": 1}), ("c", {"id": 2}),
        ("d", {"id": 2}), (None, {"id": 2}), ("c", {"id": 7}), ("t", None), ("c", {"id": 99})]
    truncated = every[8]
    assert truncated.key is None
    assert truncated.payload["before"] is None and truncated.payload["after"] is None
    check_source(truncated, capture, t, truncate, prefix_all)
    assert truncated.value["schema"]["name"] == f"{prefix_all}.public.{t}.Envelope"

    # An orderly stop exits 0 and leaves offsets at or past the last transaction it published.
    assert default_car.stop() == 0, default_car.log_tail()
    assert all_ops_car.stop() == 0, all_ops_car.log_tail()
    stored = json.loads(capture.offsets_file.read_text())
    assert stored["lsn"] >= full_delete.lsn_before
    # Nothing more arrived after the expected records (no duplicates within one run).
    reader.read_available(1.0)
    assert len(reader.records) == 9
