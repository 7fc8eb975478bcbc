"""A batch split by shape: provably new keys are appended, the rest MERGEd (``spark_jobs.split``).

Batches are handed to ``BatchApplier`` directly (as ``foreachBatch`` would). The append path must
never bring back a key whose delete is newer (the tombstone wins), never overwrite a stored row,
and a backfill into an empty table must equal the source without a single MERGE.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from signaller.model import Column
from spark_jobs.apply_changes import BatchApplier
from spark_jobs.job_config import ApplyJobConfig
from tests.spark.cdc_events import Record, SourceTable

pytestmark = pytest.mark.spark

COLUMNS = [Column("id", 0, "int8", optional=False, is_key=True), Column("v", 0, "text")]


def batch(spark: Any, topic: str, records: list[Record], first_offset: int) -> Any:
    rows = [(topic, 0, first_offset + i, key, value) for i, (key, value) in enumerate(records)]
    return spark.createDataFrame(rows, "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY")


def setup(tmp_path: Path, name: str) -> tuple[SourceTable, ApplyJobConfig, Path]:
    table = SourceTable("split", name, COLUMNS)
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                         checkpoint_location=str(tmp_path / "cp"), subscribe=table.topic)
    return table, cfg, tmp_path / "delta" / "public" / name


def rows(spark: Any, path: Path) -> dict[int, str]:
    return {r.id: r.v for r in spark.read.format("delta").load(str(path)).collect()}


def operations(spark: Any, path: Path) -> list[str]:
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()
    return [r.operation for r in history]


def test_a_read_never_resurrects_a_key_whose_delete_is_newer(spark: Any, tmp_path: Path) -> None:
    table, cfg, path = setup(tmp_path, "resurrect")
    first = [table.event("c", 100, 100 + i, after={"id": str(i), "v": "c"}) for i in range(1, 11)]
    # key 50 is created and deleted in the same batch: it never reaches the table, only a tombstone
    first += [table.event("c", 100, 150, after={"id": "50", "v": "c"}),
              table.event("d", 200, 250, before={"id": "50", "v": "c"}),
              table.event("d", 200, 260, before={"id": "8", "v": "c"}),
              table.event("d", 200, 270, before={"id": "9", "v": "c"})]
    BatchApplier(cfg)(batch(spark, table.topic, first, 0), 0)
    assert rows(spark, path) == {i: "c" for i in (1, 2, 3, 4, 5, 6, 7, 10)}
    # A new applier (the job restarted): the stored key range is 1..10, so 50 and 51 are outside
    # it and would be appended if the tombstone did not stop the older read of 50 first.
    reads = [
        table.event("r", 150, 150, after={"id": "50", "v": "old read"}),  # older than its delete
        table.event("r", 300, 300, after={"id": "51", "v": "new"}),
        table.event("r", 90, 90, after={"id": "5", "v": "old read"}),  # older than the stored row
        table.event("r", 300, 301, after={"id": "7", "v": "read"}),  # newer: an update
        table.event("r", 150, 151, after={"id": "8", "v": "old read"}),  # older than its delete
        table.event("r", 300, 302, after={"id": "9", "v": "read"}),  # newer than its delete
    ]
    BatchApplier(cfg)(batch(spark, table.topic, reads, 100), 1)
    assert rows(spark, path) == {1: "c", 2: "c", 3: "c", 4: "c", 5: "c", 6: "c", 7: "read", 9: "read", 10: "c",
                                 51: "new"}
    ops = operations(spark, path)
    assert ops[-2:] == ["WRITE", "MERGE"], ops  # 51 (and 9: not in the table) appended; 7 merged


def test_random_late_reads_and_deletes_converge_to_the_newest_event_per_key(spark: Any, tmp_path: Path) -> None:
    """Property over a seeded random history: whatever the arrival order across batches, the
    table holds per key the event with the largest position, and nothing when that is a delete."""
    table, cfg, path = setup(tmp_path, "random")
    rng = random.Random(20261)
    events: list[tuple[int, str, int, Record]] = []  # (lsn, op, key, record)
    lsn = 1000
    for _ in range(160):
        lsn += 10
        key = rng.randint(1, 40)
        op = rng.choice(["c", "u", "r", "r", "d"])
        row = {"id": str(key), "v": f"{op}{lsn}"}
        record = table.event(op, lsn - 5, lsn, before=row) if op == "d" else table.event(op, lsn - 5, lsn, after=row)
        events.append((lsn, op, key, record))
    rng.shuffle(events)  # late, out of order, reads older and newer than the stored rows
    applier = BatchApplier(cfg)
    offset = 0
    for number, part in enumerate((events[:50], events[50:60], events[60:120], events[120:])):
        applier(batch(spark, table.topic, [e[3] for e in part], offset), number)
        offset += len(part)
        if number == 1:
            applier = BatchApplier(cfg)  # a restart: the key range is read from the table again
    newest: dict[int, tuple[int, str]] = {}
    for lsn_, op, key, _ in events:
        if key not in newest or lsn_ > newest[key][0]:
            newest[key] = (lsn_, op)
    expected = {key: f"{op}{n}" for key, (n, op) in newest.items() if op != "d"}
    assert rows(spark, path) == expected


def test_a_backfill_into_an_empty_table_is_appended_and_equals_the_source(
    spark: Any, tmp_path: Path, delta_writer_appends: list[str],
) -> None:
    table, cfg, path = setup(tmp_path, "backfill")
    source = {i: f"row {i}" for i in range(1, 2001)}
    reads = [table.event("r", 500, 500 + i, after={"id": str(i), "v": v}) for i, v in source.items()]
    applier = BatchApplier(cfg)
    applier(batch(spark, table.topic, reads[:1000], 0), 0)  # creates the table
    applier(batch(spark, table.topic, reads[1000:], 1000), 1)  # keys above the stored range
    assert rows(spark, path) == source
    ops = operations(spark, path)
    assert "MERGE" not in ops and ops.count("WRITE") == 2, ops
    assert delta_writer_appends == []  # the appends had the table's schema: the job's own transaction
    # The same snapshot again (a re-snapshot: newer positions) goes through the MERGE, changing nothing.
    again = [table.event("r", 900, 900 + i, after={"id": str(i), "v": v}) for i, v in source.items()]
    applier(batch(spark, table.topic, again, 2000), 2)
    assert rows(spark, path) == source
    assert operations(spark, path)[-1] == "MERGE"
    assert len(spark.read.format("delta").load(str(path)).collect()) == len(source)


def test_a_streams_inserts_just_above_the_stored_keys_are_appended(spark: Any, tmp_path: Path) -> None:
    """A sequence key's inserts land just above the stored maximum: every one is provably new and
    appended (a WRITE, no MERGE), the first of them the maximum plus one. Keys inside the range
    cannot be proven new and go to the MERGE, which inserts them."""
    table, cfg, path = setup(tmp_path, "sequence")
    applier = BatchApplier(cfg)
    first = [table.event("c", 100, 100 + i, after={"id": str(i), "v": "first"}) for i in range(1, 1001)]
    applier(batch(spark, table.topic, first, 0), 0)  # creates the table: keys 1..1000
    above = [table.event("c", 2000, 2000 + i, after={"id": str(i), "v": "above"}) for i in range(1001, 1101)]
    applier(batch(spark, table.topic, above, 1000), 1)
    ops = operations(spark, path)
    assert ops[-1] == "WRITE" and "MERGE" not in ops, ops
    # A restarted job reads the stored range (1..1100) from the table: the next key is appended too.
    BatchApplier(cfg)(batch(spark, table.topic, [table.event("c", 3000, 3001, after={"id": "1101", "v": "next"})],
                            1100), 2)
    ops = operations(spark, path)
    assert ops[-1] == "WRITE" and "MERGE" not in ops, ops
    # A gap inside the range (a key deleted long ago, re-inserted) is not provably new: the MERGE.
    inside = [table.event("d", 4000, 4000, before={"id": "500", "v": "first"})]
    applier(batch(spark, table.topic, inside, 1101), 3)
    applier(batch(spark, table.topic, [table.event("c", 5000, 5000, after={"id": "500", "v": "again"})], 1102), 4)
    assert operations(spark, path)[-1] == "MERGE"
    expected = {i: "first" for i in range(1, 1001)} | {i: "above" for i in range(1001, 1101)} | {1101: "next",
                                                                                                  500: "again"}
    assert rows(spark, path) == expected
