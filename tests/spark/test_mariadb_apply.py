"""MariaDB-shaped events (Debezium's MariaDB ``source`` block: ``file``, ``pos``, ``row``) through the apply
job: ``_cdc_seq`` orders them by binlog file number, position and row, then Kafka offset, so duplicates,
replays split across batches, late events, tombstones, truncates and incremental-snapshot READs keep the
guarantees they have for PostgreSQL. Batches are handed to ``BatchApplier`` directly (no broker needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from signaller.model import Column
from spark_jobs import sequence
from spark_jobs.apply_changes import BatchApplier
from spark_jobs.job_config import ApplyJobConfig
from tests.spark.cdc_events import BinlogTable, Record

pytestmark = pytest.mark.spark

COLUMNS = [Column("id", 0, "int4", optional=False, is_key=True), Column("v", 0, "text")]


def batch(spark: Any, topic: str, records: list[Record], first_offset: int) -> Any:
    rows = [(topic, 0, first_offset + i, key, value) for i, (key, value) in enumerate(records)]
    return spark.createDataFrame(rows, "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY")


@pytest.mark.parametrize(("file", "pos", "row"), [
    ("mariadb-bin.000003", 1234, 2), ("mariadb-bin.000003", 1234, None), ("mysql-bin.999999", 4294967295, 0),
    ("mariadb-bin", 1234, 0), ("mariadb-bin.00x3", 5, 0), ("mariadb-bin.000003", None, 0),
])
def test_the_binlog_sequence_column_matches_the_python_reference(spark: Any, file: str, pos: int | None,
                                                                  row: int | None) -> None:
    from pyspark.sql import functions as F

    source = F.struct(F.lit(None).cast("bigint").alias("lsn"), F.lit(None).cast("string").alias("sequence"),
                      F.col("file"), F.col("pos"), F.col("row"))
    got = spark.createDataFrame([(file, pos, row, 7)], "file STRING, pos BIGINT, row BIGINT, o BIGINT").select(
        sequence.source_seq_column(source, F.col("o")).alias("seq")).first().seq
    expected = sequence.binlog_sequence(file, pos, row)
    assert (None if got is None else (got.commit_lsn, got.lsn)) == expected
    if expected is not None:
        assert got.kafka_offset == 7


def test_mariadb_events_converge_through_replays_late_events_reads_and_truncates(spark: Any, tmp_path: Path) -> None:
    table = BinlogTable("mdb", "items", COLUMNS)
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                         checkpoint_location=str(tmp_path / "cp"), subscribe=table.topic)
    applier = BatchApplier(cfg)
    path = str(tmp_path / "delta" / "inventory" / "items")
    offset = 0

    def apply(batch_id: int, records: list[Record]) -> dict[int, str]:
        nonlocal offset
        applier(batch(spark, table.topic, records, offset), batch_id)
        offset += len(records)
        return {r.id: r.v for r in spark.read.format("delta").load(path).collect()}

    def row(i: int, v: str) -> dict[str, str]:
        return {"id": str(i), "v": v}

    # one INSERT of three rows (one rows event: same pos, rows 0..2); an update; then
    # `UPDATE items SET id = id + 1 ORDER BY id DESC` on ids 2, 3 in one rows event: row 0 moves 3 → 4,
    # row 1 moves 2 → 3 (delete + tombstone + create per row); a delete; an insert in the next binlog file.
    key_change = [
        table.event("d", 3, 3000, 0, before=row(3, "c")), table.tombstone(row(3, "c")),
        table.event("c", 3, 3000, 0, after=row(4, "c")),
        table.event("d", 3, 3000, 1, before=row(2, "b")), table.tombstone(row(2, "b")),
        table.event("c", 3, 3000, 1, after=row(3, "b")),
    ]
    first = [
        table.event("c", 3, 1000, 0, after=row(1, "a")), table.event("c", 3, 1000, 1, after=row(2, "b")),
        table.event("c", 3, 1000, 2, after=row(3, "c")), table.event("u", 3, 2000, 0, after=row(1, "a2")),
        *key_change, table.event("d", 3, 4000, 0, before=row(1, "a2")), table.tombstone(row(1, "a2")),
        table.event("c", 4, 4, 0, after=row(5, "e")),
    ]
    assert apply(0, first) == {3: "b", 4: "c", 5: "e"}

    # A replay split by the batch boundary: only the key change's first row arrives again (larger offsets).
    # Its delete of key 3 is older than the create of key 3 at row 1 of the same rows event: ignored.
    # Late events: an update of 5 from the previous file (older than its create at file 4, pos 4) and a
    # create of the deleted key 1 older than its tombstone. READs of an incremental snapshot window closed
    # at (file 4, pos 100): 4 is newer than its stored create; 6 is new.
    second = [
        *key_change[:3], table.event("u", 3, 9000, 0, after=row(5, "late")),
        table.event("c", 3, 1500, 0, after=row(1, "zombie")),
        table.event("r", 4, 100, after=row(4, "c-read")), table.event("r", 4, 100, after=row(6, "f")),
    ]
    assert apply(1, second) == {3: "b", 4: "c-read", 5: "e", 6: "f"}

    # The rest of the replay; a streamed update of 4 after the window, then a READ of 4 from a window closed
    # before it (emitted after it, as the engine emits READs between stream batches: a larger offset) and a
    # READ of 5 from a window closed before 5's create: the READs never overwrite the newer streamed changes.
    third = [
        *key_change[3:], table.event("u", 4, 200, 0, after=row(4, "d")),
        table.event("r", 4, 100, after=row(4, "c-read")), table.event("r", 4, 2, after=row(5, "e-stale")),
    ]
    assert apply(2, third) == {3: "b", 4: "d", 5: "e", 6: "f"}

    # TRUNCATE at (file 4, pos 300): older rows go, in this batch and later ones; newer ones stay.
    fourth = [table.event("t", 4, 300), table.event("c", 4, 400, 0, after=row(7, "g")),
              table.event("c", 4, 250, 0, after=row(8, "before the truncate"))]
    assert apply(3, fourth) == {7: "g"}
    fifth = [table.event("c", 4, 280, 0, after=row(9, "before the truncate")),
             table.event("c", 5, 4, 0, after=row(10, "next file"))]
    assert apply(4, fifth) == {7: "g", 10: "next file"}

    tombstones = {r.id: (r._cdc_seq.commit_lsn, r._cdc_seq.lsn) for r in spark.read.format("delta").load(
        str(tmp_path / "delta" / "_tombstones" / "inventory" / "items")).collect()}
    assert tombstones[1] == sequence.binlog_sequence("mariadb-bin.000003", 4000, 0)
    assert tombstones[2] == sequence.binlog_sequence("mariadb-bin.000003", 3000, 1)
    stored = {r.id: r._cdc_seq for r in spark.read.format("delta").load(path).collect()}
    assert (stored[7].commit_lsn, stored[7].lsn) == sequence.binlog_sequence("mariadb-bin.000004", 400, 0)


def test_a_binlog_record_without_a_usable_position_is_a_dead_letter(spark: Any, tmp_path: Path) -> None:
    table = BinlogTable("mdbdl", "items", COLUMNS)
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                         checkpoint_location=str(tmp_path / "cp"), subscribe=table.topic)
    good = table.event("c", 3, 100, 0, after={"id": "1", "v": "a"})
    value = json.loads(good[1] or b"{}")
    value["payload"]["source"]["file"] = "mariadb-bin"  # no file number
    bad = (table.serializer.serialize_key({"id": 2}), json.dumps(value).encode())
    BatchApplier(cfg)(batch(spark, table.topic, [good, bad], 0), 0)
    dead = spark.read.format("delta").load(cfg.effective_dead_letter_path).collect()
    assert [(r.offset, r.reason) for r in dead] == [
        (1, "no binlog position (source.file without a number <basename>.<digits>, or no source.pos)")]
    assert {r.id for r in spark.read.format("delta").load(str(tmp_path / "delta" / "inventory" / "items")).collect()
            } == {1}
