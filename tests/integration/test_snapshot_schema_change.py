"""A table altered mid-snapshot: every READ after the ALTER carries the table's columns as of its read
(real PostgreSQL and Kafka).

The chaos run's loss: an incremental snapshot described its table once, so after ``ALTER TABLE ADD
COLUMN`` every later chunk still selected the old columns; an UPDATE setting the new column, streamed
before the chunk's window opened, was followed by that chunk's READ without the column, the key's last
event: the topic (and the Delta table) lost the value. A DROP COLUMN made the next chunk query fail (the
table ended ``SQL_EXCEPTION``, its other rows never read). The snapshot here (one row per chunk) is paused
mid-table, the table altered, every row updated (the stream passes the updates), the snapshot resumed:
every READ after the pause has the new columns, the table is scanned to the end (``SUCCEEDED``), and the
topic's last event per key equals the table. A direct test checks the PostgreSQL chunk reader: each of
its three chunk reads refuses a stale description (``ChunkSchemaChanged``) and leaves its connection usable.
"""

from __future__ import annotations

from typing import Any

import pytest

from signaller.model import TableId
from signaller.sources.base import ChunkSchemaChanged, ChunkTable
from signaller.sources.postgres.catalog import Catalog
from signaller.sources.postgres.chunks import PostgresChunkReader
from tests.integration.capture_helpers import CaptureEnv
from tests.integration.schema_change_checks import check_reads_after_alter
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

ROWS = 100
CHANGES = {
    "add": ("ALTER TABLE {t} ADD COLUMN extra text", "UPDATE {t} SET n = n + 1, extra = 'x' || id"),
    "drop": ("ALTER TABLE {t} DROP COLUMN gone", "UPDATE {t} SET n = n + 1"),
}



@pytest.mark.parametrize(("change", "read_only"), [("add", False), ("add", True), ("drop", False)],
                         ids=["add-column", "add-column-read-only", "drop-column"])
def test_reads_after_an_alter_mid_snapshot_carry_the_new_columns(capture: CaptureEnv, change: str,
                                                                  read_only: bool) -> None:
    table = capture.create_table("id integer PRIMARY KEY, n integer NOT NULL, val text, gone text")
    capture.sql(f"INSERT INTO {table} SELECT g, 0, 'v' || g, 'g' || g FROM generate_series(1, %s) g", (ROWS,))
    signal_table = create_signal_table(capture)
    car = capture.sidecar(snapshot_config(capture, [table], signal_table=signal_table, chunk_size=1,
                                          extra={"read.only": str(read_only).lower()}))
    api = start(car)
    notes = Notifications(capture)
    reader = capture.reader(capture.topic(table))
    api.accepted("execute-snapshot", {"data-collections": [f"public\\.{table}"]}, "alter-1")
    # Paused at once, not after its first IN_PROGRESS notification: the API wakes the loop, and the
    # one-row windows could end before that notification has made the round trip through Kafka. The pause
    # may come before the first window (the table's maximum key is read on the chunk worker first): then
    # nothing was sent to the topic yet.
    api.accepted("pause-snapshot", {}, "alter-pause")
    notes.wait_for("PAUSED", 30, car.log_tail)
    wait_caught_up(capture, car, current_wal_lsn(capture))
    before = {(r.partition, r.offset) for r in read_to_end(reader, missing_ok=True)}

    alter, update = (statement.format(t=table) for statement in CHANGES[change])
    capture.sql(alter)
    capture.sql(update)
    wait_caught_up(capture, car, current_wal_lsn(capture))  # the updates are streamed before the rest is read
    api.accepted("resume-snapshot", {}, "alter-resume")
    notes.wait(lambda n: n["type"] == "COMPLETED" and n["id"] == "alter-1", 120, "the snapshot to complete",
               car.log_tail)
    wait_caught_up(capture, car, current_wal_lsn(capture))

    scans = [n["additional_data"] for n in notes.of("TABLE_SCAN_COMPLETED") if n["id"] == "alter-1"]
    assert [s["status"] for s in scans] == ["SUCCEEDED"], scans
    records = read_to_end(reader)
    later_reads = [r.payload["after"] for r in records
                   if (r.partition, r.offset) not in before and not r.tombstone and r.payload["op"] == "r"]
    with capture.conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {table}")
        names = [d[0] for d in cur.description]
        expected = {row[0]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}
    expected_columns = {"id", "n", "val"} | ({"gone", "extra"} if change == "add" else set())
    check_reads_after_alter(records, later_reads, ROWS, expected_columns, expected, car.log_tail)
    assert car.alive(), car.log_tail()


def test_the_chunk_reads_refuse_a_stale_description_and_stay_usable(capture: CaptureEnv) -> None:
    table = capture.create_table("id integer PRIMARY KEY, val text")
    capture.sql(f"INSERT INTO {table} SELECT g, 'v' || g FROM generate_series(1, 5) g")
    dsn = capture.stack.pg_dsn()
    catalog = Catalog(dsn)
    reader = PostgresChunkReader(dsn, None, "insert_insert")
    try:
        def described() -> ChunkTable:
            info = catalog.describe_table(TableId("public", table))
            assert info is not None and info.schema_version is not None
            return ChunkTable("public", table, tuple(info.sql_types), (("id", "integer"),), None,
                              info.schema_version)

        old = described()
        assert described() == old, "the schema version is stable while the table is unchanged"
        assert reader.read_chunk_seen(old, None, None, 2)[0] == [("1", "v1", "1"), ("2", "v2", "2")]
        capture.sql(f"ALTER TABLE {table} ADD COLUMN extra text")
        new = described()
        assert new.schema_version != old.schema_version and new.columns == ("id", "val", "extra")
        def streamed(chunk: ChunkTable) -> list[Any]:
            rows, rest, _ = reader.read_chunk_streaming(chunk, None, None, 2, 1)
            assert rest is not None
            rest.close()  # ends the cursor's transaction (and its lock on the table)
            return rows

        for read in (lambda t: reader.read_chunk_seen(t, None, None, 2)[0],
                     lambda t: reader.read_chunk_visible(t, None, None, 2)[0], streamed):
            with pytest.raises(ChunkSchemaChanged):
                read(old)
            reader.write_marker("stale-chunk", True, {})  # the connection is not left inside the failed read
            assert read(new)[0] == ("1", "v1", None, "1")
        capture.sql(f"ALTER TABLE {table} ALTER COLUMN val TYPE varchar(10)")
        assert described().schema_version != new.schema_version, "a type change changes the version"
        capture.sql(f"ALTER TABLE {table} DROP COLUMN extra")
        assert described().schema_version not in (new.schema_version, None)
    finally:
        reader.close()
        catalog.close()
