"""The tombstone table is append-only: one row per applied delete, the newest per key decides
(batches handed to ``BatchApplier`` directly)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from signaller.model import Column
from spark_jobs.apply_changes import BatchApplier
from spark_jobs.batch_cache import BatchCache
from spark_jobs.connect_schema import ColumnSpec
from spark_jobs.job_config import ApplyJobConfig
from spark_jobs.writes import AUTO_COMPACT, DeltaWriter
from tests.spark.cdc_events import Record, SourceTable

pytestmark = pytest.mark.spark


def batch(spark: Any, topic: str, records: list[Record], first_offset: int) -> Any:
    rows = [(topic, 0, first_offset + i, key, value) for i, (key, value) in enumerate(records)]
    return spark.createDataFrame(rows, "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY")


def test_the_newest_of_several_tombstones_of_a_key_stops_a_late_event(spark: Any, tmp_path: Path) -> None:
    """Key 1 is deleted, created again, deleted again: two tombstones. A late create older than the
    second delete but newer than the first must stay out (taking any tombstone but the newest would
    let it in: the key has no stored row for the sequence guard to stop it)."""
    columns = [Column("id", 0, "int8", optional=False, is_key=True), Column("v", 0, "text")]
    table = SourceTable("tombs", "items", columns)
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                         checkpoint_location=str(tmp_path / "cp"), subscribe=table.topic)
    applier = BatchApplier(cfg)
    path = str(tmp_path / "delta" / "public" / "items")
    offset = 0

    def apply(batch_id: int, records: list[Record]) -> dict[int, str]:
        nonlocal offset
        applier(batch(spark, table.topic, records, offset), batch_id)
        offset += len(records)
        return {r.id: r.v for r in spark.read.format("delta").load(path).collect()}

    def one(i: int, v: str) -> dict[str, str]:
        return {"id": str(i), "v": v}

    assert apply(0, [table.event("c", 100, 1000, after=one(1, "a")), table.event("c", 100, 1001, after=one(2, "b"))]
                 ) == {1: "a", 2: "b"}
    assert apply(1, [table.event("d", 200, 2000, before=one(1, "a"))]) == {2: "b"}
    assert apply(2, [table.event("c", 300, 3000, after=one(1, "again"))]) == {1: "again", 2: "b"}
    assert apply(3, [table.event("d", 400, 4000, before=one(1, "again"))]) == {2: "b"}
    tombstones = spark.read.format("delta").load(str(tmp_path / "delta" / "_tombstones" / "public" / "items"))
    assert sorted(r._cdc_seq.commit_lsn for r in tombstones.where("id = 1").collect()) == [200, 400]
    # late: newer than the first delete (200), older than the second (400)
    assert apply(4, [table.event("u", 350, 3500, after=one(1, "zombie")),
                     table.event("u", 500, 5000, after=one(2, "b2"))]) == {2: "b2"}
    # newer than every delete: a real re-creation
    assert apply(5, [table.event("c", 600, 6000, after=one(1, "back"))]) == {1: "back", 2: "b2"}
    properties = spark.sql(f"SHOW TBLPROPERTIES delta.`{tmp_path / 'delta' / '_tombstones' / 'public' / 'items'}`")
    assert {r.key: r.value for r in properties.collect()}.get("delta.autoOptimize.autoCompact") == "true"


def test_a_tombstone_table_from_before_the_appends_gets_auto_compaction(spark: Any, tmp_path: Path) -> None:
    """A tombstone table the MERGE-era job wrote has no auto compaction; the first batch of a job run
    that reads it turns it on (else every batch with deletes would leave one more small file)."""
    columns = [Column("id", 0, "int8", optional=False, is_key=True), Column("v", 0, "text")]
    table = SourceTable("tombs", "legacy", columns)
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                         checkpoint_location=str(tmp_path / "cp"), subscribe=table.topic)
    tombs = tmp_path / "delta" / "_tombstones" / "public" / "legacy"
    one = {"id": "1", "v": "a"}
    BatchApplier(cfg)(batch(spark, table.topic, [table.event("c", 100, 1000, after=one),
                                                 table.event("d", 200, 2000, before=one)], 0), 0)
    spark.sql(f"ALTER TABLE delta.`{tombs}` UNSET TBLPROPERTIES ('{AUTO_COMPACT}')")

    def auto_compact() -> str | None:
        return {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{tombs}`").collect()}.get(AUTO_COMPACT)

    assert auto_compact() is None
    restarted = BatchApplier(cfg)
    restarted(batch(spark, table.topic, [table.event("c", 300, 3000, after={"id": "2", "v": "b"})], 2), 1)
    assert auto_compact() == "true"


def test_appended_tombstones_are_compacted(spark: Any, tmp_path: Path, delta_writer_appends: list[str]) -> None:
    """One append per batch with deletes: Delta's auto compaction (50 small files by default) keeps
    the tombstone table's files few, and every tombstone is still there."""
    from pyspark.sql import functions as F


    writer = DeltaWriter(ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                                        checkpoint_location=str(tmp_path / "cp"), subscribe="x"),
                         lambda _name: contextlib.nullcontext(), BatchCache().checkpoint)
    path = str(tmp_path / "delta" / "_tombstones" / "public" / "many")
    columns = [ColumnSpec("id", "BIGINT", "id", "BIGINT", optional=False)]
    for batch_id in range(60):
        deletes = spark.range(batch_id * 10, batch_id * 10 + 10).select(
            F.col("id"), F.struct(F.lit(1).cast("bigint").alias("commit_lsn"), F.col("id").alias("lsn"),
                                  F.lit(0).cast("bigint").alias("kafka_offset")).alias("_cdc_seq")).coalesce(1)
        writer.write_tombstones(spark, deletes, columns, ["id"], path, "public.many", batch_id, batch_id > 0)
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
    assert detail.numFiles < 20, detail.numFiles
    stored = spark.read.format("delta").load(path)
    assert stored.count() == 600
    assert stored.select("id").distinct().count() == 600
    assert delta_writer_appends == []  # every append in the job's own transaction, compacted all the same


def test_only_the_batch_keys_tombstones_are_aggregated(spark: Any, tmp_path: Path) -> None:
    """With the batch's changes given, the tombstone table is cut to the batch's keys (a broadcast
    semi-join) before the newest tombstone per key is found, when the table is large for the batch;
    the events kept are the same."""
    from pyspark.sql import functions as F

    writer = DeltaWriter(ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                                        checkpoint_location=str(tmp_path / "cp"), subscribe="x"),
                         lambda _name: contextlib.nullcontext(), BatchCache().checkpoint)
    tomb_path = str(tmp_path / "delta" / "_tombstones" / "public" / "probe")

    def seq(commit: Any) -> Any:
        return F.struct(commit.cast("bigint").alias("commit_lsn"), F.lit(1).cast("bigint").alias("lsn"),
                        F.lit(0).cast("bigint").alias("kafka_offset")).alias("_cdc_seq")

    spark.range(0, 1000).select(F.col("id"), seq(F.lit(100)), F.current_timestamp().alias("_deleted_at")).write.format(
        "delta").save(tomb_path)
    # key 5: older than its tombstone (dropped); 500: newer (kept); 5000: no tombstone (kept)
    latest = spark.createDataFrame([(5, 50), (500, 200), (5000, 10)], "id BIGINT, commit BIGINT").select(
        "id", seq(F.col("commit")))
    pruned, exists = writer.drop_tombstoned(spark, latest, ["id"], tomb_path, None, (latest, 3))
    whole, _ = writer.drop_tombstoned(spark, latest, ["id"], tomb_path, None)
    assert exists
    assert sorted(r.id for r in pruned.collect()) == sorted(r.id for r in whole.collect()) == [500, 5000]
    assert "LeftSemi" in pruned._jdf.queryExecution().optimizedPlan().toString()
    assert "LeftSemi" not in whole._jdf.queryExecution().optimizedPlan().toString()
    too_many, _ = writer.drop_tombstoned(spark, latest, ["id"], tomb_path, None, (latest, 10_000_000))
    assert "LeftSemi" not in too_many._jdf.queryExecution().optimizedPlan().toString()
    # 1,000 tombstones (a few kB) against a batch of 100,000 events: the broadcast would cost more
    small_table, _ = writer.drop_tombstoned(spark, latest, ["id"], tomb_path, None, (latest, 100_000))
    assert "LeftSemi" not in small_table._jdf.queryExecution().optimizedPlan().toString()
    assert sorted(r.id for r in small_table.collect()) == [500, 5000]
