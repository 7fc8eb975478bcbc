"""Snapshots no signal can stop, freeze or fool (issue 10, findings 1, 4, 10 and 11), end to end on the real
PostgreSQL and Kafka with the sidecar as a subprocess.

* A keyless table snapshotted with a ``surrogate-key`` emits every row once and reports the true count.
* A blocking snapshot whose ``additional-conditions[0].data-collection`` is not a regular expression is
  rejected with the reason, and the sidecar keeps streaming.
* A catastrophic-backtracking pattern in ``data-collections`` is answered at once, and the sidecar keeps
  streaming.
* A blocking snapshot of tables several chunks long emits every row once with Debezium's snapshot flags.
* A blocking snapshot whose chunk read the database interrupts reads it again and emits every row once.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg2
import pytest

from tests.integration.capture_helpers import CaptureEnv, Record, Sidecar
from tests.integration.snapshot_helpers import (
    Api,
    Notifications,
    create_signal_table,
    read_to_end,
    reads,
    snapshot_config,
    start,
)

pytestmark = pytest.mark.integration


def _fill(capture: CaptureEnv, table: str, rows: int, key: str) -> None:
    capture.sql(f"INSERT INTO {table} ({key}, val) SELECT n * 7 + 3, 'row-' || n FROM generate_series(0, %s) n",
                (rows - 1,))


def _still_streams(capture: CaptureEnv, car: Sidecar, table: str, key: str, marker: int) -> None:
    """An insert made now reaches the table's topic: the sidecar did not stop or freeze."""
    capture.sql(f"INSERT INTO {table} ({key}, val) VALUES (%s, 'still streaming')", (marker,))
    reader = capture.reader(capture.topic(table))
    reader.wait_for(lambda records: any(r.op == "c" and r.payload["after"][key] == marker for r in records
                                        if not r.tombstone), 30, "the insert after the signal", car.log_tail)
    assert car.alive(), car.log_tail()


def _signal_row(capture: CaptureEnv, signal_table: str, signal_id: str, signal_type: str,
                data: dict[str, Any]) -> None:
    capture.sql(f"INSERT INTO {signal_table} VALUES (%s, %s, %s)", (signal_id, signal_type, json.dumps(data)))


def test_surrogate_key_snapshot_of_a_keyless_table_emits_every_row(capture: CaptureEnv) -> None:
    table = capture.create_table("uid bigint NOT NULL UNIQUE, val text NOT NULL")
    _fill(capture, table, 3000, "uid")
    car = capture.sidecar(snapshot_config(capture, [table], signal_table=None, chunk_size=100))
    api = start(car)
    notes = Notifications(capture)
    api.accepted("execute-snapshot", {"data-collections": [f"public\\.{table}"], "surrogate-key": "uid"}, "sk-1")
    done = notes.wait_for("TABLE_SCAN_COMPLETED", 120, car.log_tail, scanned_collection=f"public.{table}")
    notes.wait_for("COMPLETED", 30, car.log_tail)
    records = reads(read_to_end(capture.reader(capture.topic(table))))
    uids = [record.payload["after"]["uid"] for record in records]
    assert len(uids) == 3000 and len(set(uids)) == 3000, f"{len(uids)} READs, {len(set(uids))} distinct uids"
    assert set(uids) == {n * 7 + 3 for n in range(3000)}
    assert done["additional_data"]["status"] == "SUCCEEDED", done
    assert done["additional_data"]["total_rows_scanned"] == "3000", done
    api.close()


def test_blocking_snapshot_with_an_invalid_condition_pattern_is_rejected_and_streaming_goes_on(
        capture: CaptureEnv) -> None:
    table = capture.create_table("id integer PRIMARY KEY, val text NOT NULL")
    _fill(capture, table, 10, "id")
    signal_table = create_signal_table(capture)
    car = capture.sidecar(snapshot_config(capture, [table], signal_table=signal_table))
    api = start(car)
    notes = Notifications(capture)
    _signal_row(capture, signal_table, "bad-cond", "execute-snapshot", {
        "data-collections": [f"public\\.{table}"], "type": "blocking",
        "additional-conditions": [{"data-collection": "(", "filter": "id > 1"}]})
    rejected = notes.wait_for("REJECTED", 30, car.log_tail, aggregate="Signal", channel="source")
    assert rejected["id"] == "bad-cond", rejected
    reason = rejected["additional_data"]["reason"]
    assert reason.startswith("data.additional-conditions[0].data-collection: '(' is not a valid regular expression "
                             "(missing ): (); accepted: an RE2 regular expression"), reason
    _still_streams(capture, car, table, "id", 424242)
    assert not notes.of("STARTED", aggregate="Initial Snapshot")
    api.close()


def test_a_catastrophic_pattern_is_answered_at_once_and_streaming_goes_on(capture: CaptureEnv) -> None:
    # Python's re needs about a minute for (?:.|.|.)*X against 'public.' + 12 characters; this name has more.
    table = capture.create_table("id integer PRIMARY KEY, val text NOT NULL", f"{capture.table}_regional_orders")
    assert len(f"public.{table}") >= 23
    signal_table = create_signal_table(capture)
    car = capture.sidecar(snapshot_config(capture, [table], signal_table=signal_table))
    api = start(car)
    notes = Notifications(capture)
    started = time.monotonic()
    _signal_row(capture, signal_table, "redos", "execute-snapshot", {"data-collections": ["(?:.|.|.)*X"]})
    rejected = notes.wait_for("REJECTED", 30, car.log_tail, aggregate="Signal", channel="source")
    elapsed = time.monotonic() - started
    assert rejected["id"] == "redos", rejected
    assert "data-collections[0] '(?:.|.|.)*X' matches no captured table" in rejected["additional_data"]["reason"]
    assert elapsed < 3.0, f"the signal was answered after {elapsed:.1f}s"
    _still_streams(capture, car, table, "id", 424242)
    api.close()


def _flags(records: list[Record], key: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for record in reads(records):
        row = record.payload["after"][key]
        assert row not in out, f"row {row} emitted twice"
        out[row] = record.payload["source"]["snapshot"]
    return out


def test_blocking_snapshot_of_tables_several_chunks_long_emits_every_row_once_with_flags(
        capture: CaptureEnv) -> None:
    first = capture.create_table("id integer PRIMARY KEY, val text NOT NULL", f"{capture.table}_a")
    second = capture.create_table("id integer PRIMARY KEY, val text NOT NULL", f"{capture.table}_b")
    _fill(capture, first, 250, "id")
    _fill(capture, second, 300, "id")  # a multiple of the chunk size: the last chunk is full
    car = capture.sidecar(snapshot_config(capture, [first, second], signal_table=None, chunk_size=100))
    api: Api = start(car)
    notes = Notifications(capture)
    api.accepted("execute-snapshot", {"data-collections": [f"public\\.{first}", f"public\\.{second}"],
                                      "type": "blocking"}, "blk-1")
    notes.wait_for("COMPLETED", 120, car.log_tail, aggregate="Initial Snapshot")
    scans = [(n["additional_data"]["scanned_collection"], n["additional_data"]["total_rows_scanned"],
              n["additional_data"]["status"]) for n in notes.of("TABLE_SCAN_COMPLETED", aggregate="Initial Snapshot")]
    assert scans == [(f"public.{first}", "250", "SUCCEEDED"), (f"public.{second}", "300", "SUCCEEDED")]
    for table, rows, first_flag, last_flag in ((first, 250, "first", "last_in_data_collection"),
                                               (second, 300, "first_in_data_collection", "last")):
        flags = _flags(read_to_end(capture.reader(capture.topic(table))), "id")
        keys = [n * 7 + 3 for n in range(rows)]
        assert sorted(flags) == keys, f"{table}: {len(flags)} rows emitted of {rows}"
        expected = {key: "true" for key in keys} | {keys[0]: first_flag, keys[-1]: last_flag}
        wrong = {key: (flags[key], want) for key, want in expected.items() if flags[key] != want}
        assert not wrong, f"{table}: wrong snapshot flags (got, expected): {dict(list(wrong.items())[:5])}"
    _still_streams(capture, car, first, "id", 424242)
    api.close()



def test_blocking_snapshot_reads_a_chunk_the_database_interrupted_again_and_emits_every_row_once(
        capture: CaptureEnv) -> None:
    """PostgreSQL ends the sidecar's connection while a blocking snapshot reads a chunk (a restart, a failover,
    an administrator): the chunk is read again from the same key on a new connection, and the table ends
    ``SUCCEEDED`` with every row once. It used to end ``SQL_EXCEPTION`` at the first interruption. To end the
    read at a known point, the test holds a lock the read waits for, ends the waiting session, and lets go."""
    rows = 2_000
    table = capture.create_table("id integer PRIMARY KEY, val text NOT NULL")
    _fill(capture, table, rows, "id")
    car = capture.sidecar(snapshot_config(capture, [table], signal_table=None, chunk_size=500))
    api: Api = start(car)
    notes = Notifications(capture)
    holder = psycopg2.connect(capture.stack.pg_dsn())
    sender = ThreadPoolExecutor(1)
    try:
        with holder.cursor() as cur:
            cur.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            # Answered once the blocking snapshot is over, after the lock is let go.
            answer = sender.submit(api.signal, "execute-snapshot",
                                   {"data-collections": [f"public\\.{table}"], "type": "blocking"}, "blk-int")
            waiting: list[tuple[Any, ...]] = []
            deadline = time.monotonic() + 30
            while not waiting:
                assert time.monotonic() < deadline, "the snapshot's read never waited for the lock\n" + car.log_tail()
                time.sleep(0.05)
                waiting = capture.sql("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                      "AND datname = current_database() AND query ILIKE %s", (f"%{table}%",))
            capture.sql("SELECT pg_terminate_backend(%s, 5000)", (waiting[0][0],))
            deadline = time.monotonic() + 30
            while not any("was interrupted" in str(r.get("msg", "")) for r in car.log_records()):
                assert time.monotonic() < deadline, "no interrupted read was logged\n" + car.log_tail()
                time.sleep(0.05)
        holder.rollback()  # lets go of the lock: the read again goes on
        assert answer.result(60).status_code == 202, answer.result().text
    finally:
        holder.close()
        sender.shutdown(wait=False)
    notes.wait_for("COMPLETED", 60, car.log_tail, aggregate="Initial Snapshot")
    scans = [(n["additional_data"]["total_rows_scanned"], n["additional_data"]["status"])
             for n in notes.of("TABLE_SCAN_COMPLETED", aggregate="Initial Snapshot")]
    assert scans == [(str(rows), "SUCCEEDED")], car.log_tail()
    keys = [r.payload["after"]["id"] for r in read_to_end(capture.reader(capture.topic(table)))
            if not r.tombstone and r.op == "r"]
    assert sorted(keys) == [n * 7 + 3 for n in range(rows)]
    _still_streams(capture, car, table, "id", 424243)
    api.close()
