"""A TOASTed value an UPDATE inside a snapshot window did not carry reaches the topic (real PostgreSQL and Kafka).

Rows with a TOASTed text column (about 12 KB of random hex each, ``REPLICA IDENTITY DEFAULT``) exist
before the sidecar starts (``snapshot.mode=no_data``): only the incremental snapshot's READs carry their
``big`` values. The snapshot (one row per chunk) is paused; a transaction takes an ``ACCESS EXCLUSIVE`` lock
on the table and updates every row's ``n`` (``big`` unchanged: the stream carries
``__debezium_unavailable_value``); the snapshot resumes, its next chunk read waits on the lock (in watermark
mode after the open watermark was committed), and the transaction commits: that window sees the UPDATE of the
very row it reads. The DBLog rule (Debezium's) drops that row's READ and the value is lost; signaller folds it
(``signaller.snapshot.toast_fold``). (A chunk read takes the table's lock before its snapshot, so in
read-only mode the read waits before its snapshot and then sees the UPDATE: nothing is superseded.) Every key's
final state in the topic (placeholders keep the stored value, as the Delta apply job does) equals the table.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.capture_helpers import CaptureEnv, Record, wait_until
from tests.integration.snapshot_helpers import (
    Notifications,
    create_signal_table,
    current_wal_lsn,
    read_to_end,
    snapshot_config,
    start,
    wait_caught_up,
)

pytestmark = pytest.mark.integration

UNAVAILABLE = "__debezium_unavailable_value"
ROWS = 60


def _replay_keeping_toast(records: list[Record]) -> dict[int, dict[str, Any]]:
    """Rows by id as a consumer keeps them: an ``after`` value that is the placeholder keeps the stored one."""
    rows: dict[int, dict[str, Any]] = {}
    for record in records:
        if record.tombstone:
            continue
        payload = record.payload
        if payload["op"] == "d":
            rows.pop(payload["before"]["id"], None)
            continue
        after = payload["after"]
        stored = rows.get(after["id"], {})
        rows[after["id"]] = {name: stored.get(name, value) if value == UNAVAILABLE else value
                             for name, value in after.items()}
    return rows


@pytest.mark.parametrize("read_only", [False, True], ids=["watermarks", "read-only"])
def test_a_window_that_streams_an_update_without_the_toasted_value_still_delivers_it(
        capture: CaptureEnv, read_only: bool) -> None:
    table = capture.create_table("id integer PRIMARY KEY, n integer NOT NULL, big text NOT NULL")
    capture.sql(f"INSERT INTO {table} SELECT g, 0, (SELECT string_agg(md5(random()::text || g || s), '') "
                "FROM generate_series(1, 400) s) FROM generate_series(1, %s) g", (ROWS,))
    assert capture.sql(f"SELECT pg_relation_size(reltoastrelid) > 0 FROM pg_class WHERE oid = '{table}'::regclass") \
        == [(True,)], "the big values must be stored out of line (TOASTed)"
    signal_table = create_signal_table(capture)
    car = capture.sidecar(snapshot_config(capture, [table], signal_table=signal_table, chunk_size=1,
                                          extra={"read.only": str(read_only).lower()}))
    api = start(car)
    notes = Notifications(capture)
    api.accepted("execute-snapshot", {"data-collections": [f"public\\.{table}"]}, "toast-1")
    # Paused at once, not after its first IN_PROGRESS notification: the API now wakes the loop, and
    # the 60 one-row windows can end before that notification has made the round trip through Kafka.
    api.accepted("pause-snapshot", {}, "toast-pause")
    notes.wait_for("PAUSED", 30, car.log_tail)
    body = api.snapshots()
    assert body["running"] and body["paused"], f"the snapshot must be paused mid-table: {body}"

    writer = capture.extra_connection()
    with writer.cursor() as cur:
        cur.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        cur.execute(f"UPDATE {table} SET n = n + 1")
    api.accepted("resume-snapshot", {}, "toast-resume")
    wait_until(lambda: capture.sql(f"SELECT count(*) FROM pg_locks WHERE relation = '{table}'::regclass "
                                   "AND NOT granted")[0][0] > 0, 30, "the next chunk query to wait on the lock",
               interval_s=0.05, describe=car.log_tail)
    writer.commit()
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "toast-1", 120, "the snapshot to complete",
               car.log_tail)
    wait_caught_up(capture, car, current_wal_lsn(capture))

    records = read_to_end(capture.reader(capture.topic(table)))
    lacking = [r for r in records if not r.tombstone and r.op == "u" and r.payload["after"]["big"] == UNAVAILABLE]
    assert len(lacking) == ROWS, "every UPDATE streams the placeholder for the unchanged TOASTed column"
    expected = {row[0]: {"id": row[0], "n": row[1], "big": row[2]} for row in capture.sql(f"SELECT * FROM {table}")}
    actual = _replay_keeping_toast(records)
    wrong = sorted(key for key in expected if actual.get(key) != expected[key])
    assert not wrong, (f"{len(wrong)} row(s) of {ROWS} differ from the table, e.g. id {wrong[0]}: big is "
                       f"{str(actual.get(wrong[0], {}).get('big'))[:40]!r}\n{car.log_tail()}")
    assert car.alive(), car.log_tail()
