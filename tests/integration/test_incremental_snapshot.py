"""Incremental snapshots end to end: the sidecar as a subprocess on the real PostgreSQL and Kafka.

Tables with an integer key, a composite ``(int, text)`` key and a text key hold a few thousand rows
while a writer thread keeps inserting, updating, deleting and changing keys. Snapshots are driven
over the HTTP API (and the signal table), paused, resumed, re-sized, stopped, filtered, and the
sidecar is killed with SIGKILL mid-snapshot. In the end every table's topic, replayed in order
(``r``/``c``/``u`` set the row, ``d`` removes it), must equal the table exactly.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.integration.capture_helpers import CaptureEnv, Record, Sidecar, wait_until
from tests.integration.snapshot_helpers import (
    Api,
    HotSpot,
    Notifications,
    RandomWriter,
    SnapshotTables,
    assert_replays_to,
    check_notification_fields,
    create_signal_table,
    current_wal_lsn,
    read_to_end,
    reads,
    reads_older_than_streamed,
    snapshot_config,
    stale_after_read,
    start,
    stored_offsets,
    sync_point,
    wait_caught_up,
)

pytestmark = pytest.mark.integration

TAGS = ("int", "comp", "text")
INCREMENTAL = "Incremental Snapshot"


def check_reads(records: list[Record]) -> None:
    """Every READ looks like Debezium's incremental snapshot READ."""
    for record in reads(records):
        payload = record.payload
        assert payload["before"] is None and payload["after"] is not None, payload
        assert payload["source"]["snapshot"] == "incremental", payload["source"]


def kill_and_restart(capture: CaptureEnv, car: Sidecar) -> Api:
    car.kill()
    capture.wait_slot_inactive(car.slot)
    return start(car)


def wait_mid_snapshot(capture: CaptureEnv, car: Sidecar, table: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """Until the *stored* snapshot state (what a restart resumes from) is in the middle of ``table``:
    running, not paused, some rows of the table emitted."""
    def probe() -> dict[str, Any] | None:
        state = stored_offsets(capture).get("snapshot") or {}
        queue = state.get("queue") or []
        if queue and queue[0]["table"] == table and queue[0]["rows"] > 0 and not state.get("paused"):
            return state
        return None

    return wait_until(probe, timeout_s, f"a stored snapshot state in the middle of {table}", interval_s=0.05,
                      describe=lambda: f"{stored_offsets(capture)}\n{car.log_tail()}")


def finish_and_compare(capture: CaptureEnv, car: Sidecar, api: Api, tables: SnapshotTables,
                       writer: RandomWriter | None, tags: tuple[str, ...] = TAGS,
                       restarted: bool = False) -> dict[str, list[Record]]:
    """Stop the writer, wait until no snapshot runs and the sidecar caught up, and compare every topic;
    check that no READ is older than a change streamed before it and, without restarts, that no
    streamed change older than a READ follows it."""
    if writer is not None:
        writer.stop()
    api.wait_idle(120)
    wait_caught_up(capture, car, current_wal_lsn(capture), 60)
    out = {}
    for tag in tags:
        reader = capture.reader(tables.topic(tag))
        assert_replays_to(reader, tables.rows(tag), 60, car.log_tail)
        check_reads(reader.records)
        older = reads_older_than_streamed(reader.records)
        assert not older, f"{len(older)} READ(s) older than a change streamed before them: {older[:5]}"
        if not restarted:
            stale = stale_after_read(reader.records)
            assert not stale, f"{len(stale)} streamed change(s) older than an earlier READ: {stale[:5]}"
        out[tag] = reader.records
    return out


def test_snapshots_under_concurrent_writes_with_pause_resize_stop_filter_and_kills(capture: CaptureEnv) -> None:
    seed = random.randrange(2**32)
    print(f"writer seed {seed}")
    # The first table must still be running when the pause arrives (a few round trips after IN_PROGRESS):
    # large enough that a fast snapshot cannot finish it in that time.
    tables = SnapshotTables(capture, {"int": 12000, "comp": 2500, "text": 2500})
    signal_table = create_signal_table(capture)
    car = capture.sidecar(snapshot_config(capture, tables.names.values(), signal_table=signal_table, chunk_size=40))
    api = start(car)
    notes = Notifications(capture)
    hot = HotSpot(api.url, tables)
    hot.start()
    writer = RandomWriter(capture.stack.pg_dsn(), tables, TAGS, {"int": 3600, "comp": 3000, "text": 3000}, seed,
                          hot=hot)
    writer.start()
    int_table, comp_table, text_table = (tables.qualified(tag) for tag in TAGS)

    # Execute (HTTP), then change the chunk size while it runs.
    api.accepted("execute-snapshot", {"data-collections": [tables.pattern("int"), tables.pattern("comp")],
                                      "type": "incremental"}, "snap-1")
    started = notes.wait_for("STARTED", 30, car.log_tail)
    assert started["id"] == "snap-1"
    assert started["additional_data"]["data_collections"] == f"{int_table},{comp_table}"
    notes.wait_for("IN_PROGRESS", 30, car.log_tail, current_collection_in_progress=int_table)
    resized = api.chunk_size(15)
    assert (resized.status_code, resized.json()) == (200, {"chunk_size": 15})
    wait_until(lambda: api.snapshots()["chunk_size"] == 15, 10, "GET /snapshots to show chunk size 15")

    # Pause: the window in flight is flushed, then nothing more is read until the resume.
    api.accepted("pause-snapshot", {}, "pause-1")
    paused = notes.wait_for("PAUSED", 30, car.log_tail)
    assert paused["id"] == "snap-1"
    wait_until(lambda: api.snapshots()["paused"], 10, "GET /snapshots to show the pause")
    readers = {tag: capture.reader(tables.topic(tag)) for tag in TAGS}
    sync_point(capture, car, f"INSERT INTO {tables.names['int']} VALUES (1000001, 'sync', 0)")
    before = {tag: len(reads(read_to_end(reader))) for tag, reader in readers.items()}
    sync_point(capture, car, f"INSERT INTO {tables.names['int']} VALUES (1000002, 'sync', 0)")
    after = {tag: len(reads(read_to_end(reader))) for tag, reader in readers.items()}
    assert after == before, "READs were emitted while the snapshot was paused"
    body = api.snapshots()
    assert body["paused"] and [t["state"] for t in body["tables"]] == ["paused", "queued"], body

    # While paused: a second execute appends its table (no second STARTED); a stop removes a queued one.
    api.accepted("execute-snapshot", {"data-collections": [tables.pattern("text")]}, "snap-2")
    api.accepted("stop-snapshot", {"data-collections": [tables.pattern("comp")], "type": "incremental"}, "stop-1")
    aborted = notes.wait_for("ABORTED", 30, car.log_tail)
    assert aborted["additional_data"]["data_collections"] == comp_table
    api.accepted("resume-snapshot", {}, "resume-1")
    resumed = notes.wait_for("RESUMED", 30, car.log_tail)
    assert resumed["id"] == "snap-2"  # notifications carry the latest execute-snapshot id
    assert resumed["additional_data"]["data_collections"] == f"{int_table},{text_table}"

    # kill -9 in the middle of a table, twice; the snapshot goes on from its stored position.
    wait_mid_snapshot(capture, car, int_table)
    api = kill_and_restart(capture, car)
    wait_mid_snapshot(capture, car, text_table)
    api = kill_and_restart(capture, car)
    done = notes.wait_for("COMPLETED", 90, car.log_tail)
    assert done["id"] == "snap-2"
    api.wait_idle(60)

    # A filtered snapshot of the integer table: only rows matching the filter are read.
    int_reader = readers["int"]
    sync_point(capture, car, f"INSERT INTO {tables.names['int']} VALUES (1000003, 'sync', 0)")
    first_filtered = len(read_to_end(int_reader))
    condition = {"data-collection": tables.pattern("int"), "filter": "id < 500 AND val <> 'nothing'"}
    api.accepted("execute-snapshot", {"data-collections": [tables.pattern("int")],
                                      "additional-conditions": [condition]}, "snap-filtered")
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "snap-filtered", 60, "the filtered snapshot")
    # The comparison needs the composite table whole again after its stop: snapshot it completely.
    api.accepted("execute-snapshot", {"data-collections": [tables.pattern("comp")]}, "snap-3")
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "snap-3", 90, "the second composite snapshot",
               car.log_tail)

    hot.stop()
    records = finish_and_compare(capture, car, api, tables, writer, restarted=True)
    print(f"writer: {writer.transactions} transactions {writer.changes} ({writer.hot_changes} next to the chunk "
          f"being read); sidecar runs: {car.runs}")
    assert writer.hot_changes > 50
    assert car.runs == 3
    assert sum(writer.changes.values()) > 300 and all(writer.changes.values()), writer.changes

    for tag, rows in (("int", 3000), ("text", 2500)):  # resumed after the kills, not started over
        keys = [json.dumps(r.key_payload, sort_keys=True) for r in reads(records[tag][:first_filtered]
                                                                        if tag == "int" else records[tag])]
        assert len(keys) - len(set(keys)) < rows // 2, f"{tag}: {len(keys) - len(set(keys))} READs repeated"
    filtered = reads(records["int"][first_filtered:])
    assert filtered and all(r.payload["after"]["id"] < 500 for r in filtered)
    filtered_scans = [n for n in notes.of("TABLE_SCAN_COMPLETED") if n["id"] == "snap-filtered"]
    assert filtered_scans and int(filtered_scans[-1]["additional_data"]["total_rows_scanned"]) == len(filtered)
    finished = {(t["table"], t["correlation_id"]): t for t in api.snapshots()["tables"]}
    assert finished[(int_table, "snap-filtered")]["filter"] == "(id < 500 AND val <> 'nothing')"

    # Notifications: every kind, Debezium's fields.
    all_notes = [n for n in notes.all() if n["aggregate_type"] == INCREMENTAL]
    kinds = {n["type"] for n in all_notes}
    assert {"STARTED", "PAUSED", "RESUMED", "IN_PROGRESS", "TABLE_SCAN_COMPLETED", "COMPLETED", "ABORTED"} <= kinds
    for notification in all_notes:
        check_notification_fields(notification, capture.prefix)
    assert not [n for n in notes.of("STARTED") if n["id"] == "snap-2"], "an execute while running starts nothing"
    progress = notes.of("IN_PROGRESS")
    assert all({"data_collections", "current_collection_in_progress", "maximum_key", "last_processed_key"}
               <= set(n["additional_data"]) for n in progress)
    scans = notes.of("TABLE_SCAN_COMPLETED")
    assert {(n["additional_data"]["scanned_collection"], n["additional_data"]["status"]) for n in scans} >= {
        (int_table, "SUCCEEDED"), (text_table, "SUCCEEDED"), (comp_table, "SUCCEEDED")}
    assert all(n["additional_data"]["total_rows_scanned"].isdigit() for n in scans)


def test_insert_delete_watermarks_leave_the_signal_table_empty(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 2000, "comp": 0, "text": 0})
    signal_table = create_signal_table(capture)
    car = capture.sidecar(snapshot_config(
        capture, [tables.names["int"]], signal_table=signal_table, chunk_size=50,
        extra={"incremental.snapshot.watermarking.strategy": "insert_delete"}))
    api = start(car)
    notes = Notifications(capture)
    writer = RandomWriter(capture.stack.pg_dsn(), tables, ["int"], {"int": 2400}, random.randrange(2**32))
    writer.start()
    api.accepted("execute-snapshot", {"data-collections": [tables.pattern("int")]}, "snap-id")
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "snap-id", 90, "the snapshot", car.log_tail)
    finish_and_compare(capture, car, api, tables, writer, ("int",))

    assert capture.sql(f"SELECT count(*) FROM {signal_table}") == [(0,)]
    markers = read_to_end(capture.reader(capture.topic(signal_table)))
    created = [r.payload["after"]["id"] for r in markers if not r.tombstone and r.op == "c"]
    deleted = [r.payload["before"]["id"] for r in markers if not r.tombstone and r.op == "d"]
    assert len(created) >= 2000 // 50 and all(i.endswith("-open") for i in created)
    assert sorted(created) == sorted(deleted)


def test_without_a_signal_table_watermarks_are_logical_messages(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 1500, "comp": 1500, "text": 0})
    car = capture.sidecar(snapshot_config(capture, [tables.names["int"], tables.names["comp"]], signal_table=None,
                                          chunk_size=60))
    api = start(car)
    notes = Notifications(capture)
    writer = RandomWriter(capture.stack.pg_dsn(), tables, ["int", "comp"], {"int": 1800, "comp": 1800},
                          random.randrange(2**32))
    writer.start()
    api.accepted("execute-snapshot", {"data-collections": [f"public\\.{capture.table}_(int|comp)"]}, "snap-lm")
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "snap-lm", 90, "the snapshot", car.log_tail)
    finish_and_compare(capture, car, api, tables, writer, ("int", "comp"))
    assert not capture.sql("SELECT 1 FROM pg_tables WHERE tablename LIKE %s", (f"%{capture.suffix}%signal%",))


def test_read_only_snapshots_write_nothing(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 2000, "comp": 0, "text": 1500})
    signal_table = create_signal_table(capture)
    car = capture.sidecar(snapshot_config(capture, [tables.names["int"], tables.names["text"]],
                                          signal_table=signal_table, chunk_size=50, extra={"read.only": "true"}))
    api = start(car)
    notes = Notifications(capture)
    writer = RandomWriter(capture.stack.pg_dsn(), tables, ["int", "text"], {"int": 2400, "text": 1800},
                          random.randrange(2**32))
    writer.start()
    api.accepted("execute-snapshot", {"data-collections": [tables.pattern("int"), tables.pattern("text")]}, "ro-1")
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "ro-1", 90, "the snapshot", car.log_tail)
    finish_and_compare(capture, car, api, tables, writer, ("int", "text"))
    # Again on an idle database (the windows close on the log position alone: keepalives, heartbeats),
    # with a kill -9 in the middle: small chunks, so the snapshot outlasts a few offset flushes (200 ms; a
    # read-only window can close within a few ms) and a stored state in the middle of the table is seen.
    api.chunk_size(5)
    api.accepted("execute-snapshot", {"data-collections": [tables.pattern("text")]}, "ro-2")
    wait_mid_snapshot(capture, car, tables.qualified("text"))
    api = kill_and_restart(capture, car)
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "ro-2", 60, "the idle snapshot", car.log_tail)
    records = finish_and_compare(capture, car, api, tables, None, ("text",), restarted=True)
    assert len(reads(records["text"])) >= 2 * 1500 - 300
    assert capture.sql(f"SELECT count(*) FROM {signal_table}") == [(0,)]
    assert not [r for r in capture.reader(capture.topic(signal_table)).read_available(0.5)]


def test_initial_mode_snapshots_every_table_at_first_start_while_streaming(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 2000, "comp": 0, "text": 1500})
    writer = RandomWriter(capture.stack.pg_dsn(), tables, ["int", "text"], {"int": 2400, "text": 1800},
                          random.randrange(2**32))
    writer.start()
    car = capture.sidecar(snapshot_config(capture, [tables.names["int"], tables.names["text"]], signal_table=None,
                                          chunk_size=80, snapshot_mode="initial"))
    api = start(car)
    notes = Notifications(capture)
    started = notes.wait_for("STARTED", 30, car.log_tail)
    assert set(started["additional_data"]["data_collections"].split(",")) == {
        tables.qualified("int"), tables.qualified("text")}
    notes.wait_for("COMPLETED", 90, car.log_tail)
    records = finish_and_compare(capture, car, api, tables, writer, ("int", "text"))
    streamed = [r for r in records["int"] if not r.tombstone and r.op in ("c", "u", "d")]
    assert streamed, "changes are streamed while the initial snapshot runs"

    # The next start resumes from the stored offsets: no second initial snapshot.
    assert car.stop() == 0, car.log_tail()
    api = start(car)
    sync_point(capture, car, f"INSERT INTO {tables.names['int']} VALUES (1000001, 'sync', 0)")
    assert len(notes.of("STARTED")) == 1
    assert not api.snapshots()["running"]


def test_a_paused_snapshot_stays_paused_after_a_restart(capture: CaptureEnv) -> None:
    tables = SnapshotTables(capture, {"int": 3000, "comp": 0, "text": 0})
    signal_table = create_signal_table(capture)
    car = capture.sidecar(snapshot_config(capture, [tables.names["int"]], signal_table=signal_table, chunk_size=10))
    api = start(car)
    notes = Notifications(capture)
    reader = capture.reader(tables.topic("int"))
    # Through the signal table this time (the source channel).
    capture.sql(f"INSERT INTO {signal_table} VALUES ('snap-p', 'execute-snapshot', %s)",
                ('{"data-collections": ["' + tables.pattern("int").replace("\\", "\\\\") + '"]}',))
    notes.wait_for("IN_PROGRESS", 30, car.log_tail)
    capture.sql(f"INSERT INTO {signal_table} VALUES ('pause-p', 'pause-snapshot', '{{}}')")
    notes.wait_for("PAUSED", 30, car.log_tail)
    wait_until(lambda: (stored_offsets(capture).get("snapshot") or {}).get("paused"), 20,
               "the pause to be stored with the offsets")
    sync_point(capture, car, f"INSERT INTO {tables.names['int']} VALUES (1000001, 'sync', 0)")
    car.kill()
    emitted = len(reads(read_to_end(reader)))
    assert 0 < emitted < 3000

    capture.wait_slot_inactive(car.slot)
    api = start(car)
    wait_until(lambda: api.snapshots()["running"], 10, "the restored snapshot to be published")
    body = api.snapshots()
    assert body["running"] and body["paused"], body
    assert [t["state"] for t in body["tables"] if t["table"] == tables.qualified("int")] == ["paused"]
    sync_point(capture, car, f"INSERT INTO {tables.names['int']} VALUES (1000002, 'sync', 0)")
    assert len(reads(read_to_end(reader))) == emitted, "READs were emitted while paused"

    api.accepted("resume-snapshot", {}, "resume-p")
    notes.wait_for("RESUMED", 30, car.log_tail)
    notes.wait_for("COMPLETED", 90, car.log_tail)
    finish_and_compare(capture, car, api, tables, None, ("int",), restarted=True)
