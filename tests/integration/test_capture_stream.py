"""Streaming through schema changes and through one very large transaction."""

from __future__ import annotations

import time

import pytest

from tests.integration.capture_helpers import CaptureEnv, schema_fields, value_row_schema

pytestmark = pytest.mark.integration


def _row_fields(record: object) -> list[tuple[str, str]]:
    return [(f["field"], f["type"]) for f in value_row_schema(record)["fields"]]  # type: ignore[arg-type]


def test_alter_table_mid_stream_changes_the_value_schema_of_later_events(capture: CaptureEnv) -> None:
    t = capture.table
    capture.create_table("id integer PRIMARY KEY, note text")
    car = capture.start_streaming()
    capture.sql(f"INSERT INTO {t} VALUES (1, 'before the change')")
    capture.sql(f"ALTER TABLE {t} ADD COLUMN extra bigint DEFAULT 7")
    capture.sql(f"INSERT INTO {t} VALUES (2, 'added', 42)")
    capture.sql(f"UPDATE {t} SET note = 'touched' WHERE id = 1")
    capture.sql(f"ALTER TABLE {t} DROP COLUMN note")
    capture.sql(f"INSERT INTO {t} VALUES (3, 43)")
    capture.sql(f"DELETE FROM {t} WHERE id = 2")

    records = capture.reader().wait_for_count(6, 30, describe=car.log_tail)
    first, added, touched, dropped, deleted, tombstone = records
    assert _row_fields(first) == [("id", "int32"), ("note", "string")]
    assert first.payload["after"] == {"id": 1, "note": "before the change"}

    widened = [("id", "int32"), ("note", "string"), ("extra", "int64")]
    assert _row_fields(added) == widened
    assert added.payload["after"] == {"id": 2, "note": "added", "extra": 42}
    assert _row_fields(touched) == widened
    assert touched.payload["after"] == {"id": 1, "note": "touched", "extra": 7}

    narrowed = [("id", "int32"), ("extra", "int64")]
    assert _row_fields(dropped) == narrowed
    assert dropped.payload["after"] == {"id": 3, "extra": 43}
    # before and after share the new Value schema.
    envelope = schema_fields(dropped.value["schema"])
    assert envelope["before"]["fields"] == envelope["after"]["fields"]
    # REPLICA IDENTITY DEFAULT: the delete carries only the key; JsonConverter writes the column's schema
    # default (7) for the null non-key value, as Debezium's records show (tests/compat checks it).
    assert deleted.op == "d" and deleted.payload["before"] == {"id": 2, "extra": 7}
    assert [(f["field"], f["type"]) for f in schema_fields(deleted.value["schema"])["before"]["fields"]] == narrowed
    assert tombstone.tombstone and tombstone.key_payload == {"id": 2}
    assert car.alive()


def test_one_transaction_of_100000_rows_is_captured_completely(capture: CaptureEnv) -> None:
    rows = 100_000
    t = capture.table
    capture.create_table("id integer PRIMARY KEY")
    car = capture.start_streaming()
    started = time.monotonic()
    capture.sql(f"INSERT INTO {t} SELECT g FROM generate_series(1, {rows}) AS g")
    reader = capture.reader()
    records = reader.wait_for_count(rows, 120, describe=car.log_tail)
    elapsed = time.monotonic() - started
    assert all(r.op == "c" for r in records)
    ids = [r.payload["after"]["id"] for r in records]
    assert len(ids) == rows and set(ids) == set(range(1, rows + 1))
    assert ids == sorted(ids), "events of one transaction arrive in the order PostgreSQL wrote them"
    xids = {r.payload["source"]["txId"] for r in records}
    assert len(xids) == 1, "one transaction, one txId"
    # A trailing marker proves nothing more (no duplicates) follows the big transaction.
    capture.sql(f"INSERT INTO {t} VALUES ({rows + 1})")
    reader.wait_for_count(rows + 1, 30, describe=car.log_tail)
    assert [r.payload["after"]["id"] for r in reader.records[rows:]] == [rows + 1]
    print(f"100k-row transaction captured in {elapsed:.1f}s")
