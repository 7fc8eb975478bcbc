"""``compact_max_files``: a table that a MERGE leaves with more data files than that is compacted
by the job (``OPTIMIZE``, ``spark_jobs.compaction``), without changing its rows or its change
data feed; appends alone do not compact it, and at 0 nothing does (batches handed to
``BatchApplier`` directly)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from signaller.model import Column
from spark_jobs.apply_changes import BatchApplier
from spark_jobs.compaction import file_count
from spark_jobs.job_config import ApplyJobConfig
from tests.spark.cdc_events import SourceTable
from tests.spark.test_pruning import batch

pytestmark = pytest.mark.spark


def _apply_new_keys(spark: Any, tmp_path: Path, limit: int) -> tuple[str, list[int]]:
    """Six batches of ten new keys each, then one update: the table's path and its file count
    after each batch."""
    columns = [Column("id", 0, "int8", optional=False, is_key=True), Column("v", 0, "text")]
    table = SourceTable("files", "items", columns)
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                         checkpoint_location=str(tmp_path / "cp"), subscribe=table.topic, compact_max_files=limit)
    applier = BatchApplier(cfg)
    path = str(tmp_path / "delta" / "public" / "items")
    counts = []
    for number in range(6):
        records = [table.event("c", 100 + number, 1000 * number + i, after={"id": str(10 * number + i), "v": "a"})
                   for i in range(10)]
        applier(batch(spark, table.topic, records, 10 * number), number)
        counts.append(file_count(spark, path))
    update = [table.event("u", 200, 9000, after={"id": "3", "v": "b"})]
    applier(batch(spark, table.topic, update, 60), 6)
    counts.append(file_count(spark, path))
    rows = {r.id: r.v for r in spark.read.format("delta").load(path).collect()}
    assert rows == {**{i: "a" for i in range(60)}, 3: "b"}
    return path, counts


def _operations(spark: Any, path: str) -> list[str]:
    return [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()]


def test_a_table_past_compact_max_files_is_optimized_without_a_data_change(spark: Any, tmp_path: Path) -> None:
    path, counts = _apply_new_keys(spark, tmp_path, limit=3)
    assert counts[5] > 3 and counts[6] <= 3, counts  # the appends grew it; after the MERGE it was compacted
    assert _operations(spark, path)[-1] == "OPTIMIZE"
    assert "OPTIMIZE" in _operations(spark, path)
    feed = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
            .load(path).where("_change_type != 'update_preimage'").collect())
    # every key inserted once and the one update: OPTIMIZE adds no change
    assert sorted((r.id, r._change_type) for r in feed) == sorted(
        [(i, "insert") for i in range(60)] + [(3, "update_postimage")])


def test_compact_max_files_0_never_compacts(spark: Any, tmp_path: Path) -> None:
    path, counts = _apply_new_keys(spark, tmp_path, limit=0)
    assert counts[6] > 3, counts
    assert "OPTIMIZE" not in _operations(spark, path)



def test_file_count_after_a_commit_comes_from_its_checksum_without_a_spark_job(spark: Any, tmp_path: Path) -> None:
    """Every MERGE asks for the count: reconstructing the table's state for it cost ~0.5 s a batch
    (a commit made outside the job stands for the job's own, whose count the job asks for itself)."""
    columns = [Column("id", 0, "int8", optional=False, is_key=True), Column("v", 0, "text")]
    table = SourceTable("count", "items", columns)
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                         checkpoint_location=str(tmp_path / "cp"), subscribe=table.topic, compact_max_files=0)
    applier = BatchApplier(cfg)
    path = str(tmp_path / "delta" / "public" / "items")
    for number, op in enumerate(["c", "u", "u"]):
        records = [table.event(op, 100 + number, 1000 * number + i, after={"id": str(i), "v": op}) for i in range(10)]
        applier(batch(spark, table.topic, records, 10 * number), number)
    # a commit after the job's last look at the table: its state is not computed yet
    spark.createDataFrame([(99, "x")], "id BIGINT, v STRING").write.format("delta").mode("append").save(path)
    spark.sparkContext.setJobGroup("file-count", "file_count after the job's own commit")
    try:
        count = file_count(spark, path)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert list(spark.sparkContext.statusTracker().getJobIdsForGroup("file-count")) == []
    assert count == len(spark.read.format("delta").load(path).inputFiles())
