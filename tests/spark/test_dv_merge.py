"""``spark_jobs.dv_merge``: the job's MERGE written from one join, against Delta's own MERGE.

The apply scenario (``test_apply_changes``) runs the whole job both ways; these tests hand
``DeltaWriter.merge`` the same batches directly: a two-column key, stale and newer events,
unchanged-TOAST values, a replayed batch id, and a table whose deletion vectors are off."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.batch_cache import BatchCache
from spark_jobs.connect_schema import ColumnSpec
from spark_jobs.dv_merge import Outcome, merge_with_deletion_vectors
from spark_jobs.job_config import ApplyJobConfig
from spark_jobs.tables import META_COLUMNS
from spark_jobs.writes import DeltaWriter

pytestmark = pytest.mark.spark

COLUMNS = [
    ColumnSpec("region", "STRING", "{col}", "STRING", optional=False),
    ColumnSpec("id", "BIGINT", "{col}", "BIGINT", optional=False),
    ColumnSpec("name", "STRING", "{col}", "STRING", optional=True),
    ColumnSpec("note", "STRING", "{col}", "STRING", optional=True, toast_test="{col} = '__toast'"),
]
KEYS = ["region", "id"]
DDL = ("region STRING, id BIGINT, name STRING, note STRING, "
       "_cdc_seq STRUCT<commit_lsn: BIGINT, lsn: BIGINT, kafka_offset: BIGINT>, _cdc_op STRING, _cdc_ts_ms BIGINT")
SOURCE_DDL = DDL + ", _cdc_unchanged ARRAY<STRING>"


def _seq(n: int) -> tuple[int, int, int]:
    return (n, n, 0)


def _table(spark: Any, path: Path, deletion_vectors: bool) -> str:
    spark.sql(f"CREATE TABLE delta.`{path}` ({DDL}) USING DELTA TBLPROPERTIES (delta.enableChangeDataFeed = true"
              f"{', delta.enableDeletionVectors = true' if deletion_vectors else ''})")
    stored = [("eu", 1, "a", "long note", _seq(10), "c", 0), ("eu", 2, "b", "n2", _seq(10), "c", 0),
              ("us", 1, "c", "n3", _seq(50), "c", 0), ("us", 2, "d", "n4", _seq(10), "c", 0)]
    spark.createDataFrame(stored, DDL).write.format("delta").mode("append").save(str(path))
    return str(path)


def _batch(spark: Any) -> Any:
    rows = [
        ("eu", 1, "a2", None, _seq(20), "u", 1, ["note"]),  # newer, note unchanged (TOAST): stored note kept
        ("eu", 2, None, None, _seq(20), "d", 1, []),  # newer delete
        ("us", 1, "stale", "x", _seq(40), "u", 1, []),  # older than the stored row: ignored
        ("us", 3, "new", "n5", _seq(20), "c", 1, []),  # not stored: inserted
        ("us", 4, None, None, _seq(20), "d", 1, []),  # delete of a key never stored: nothing
    ]
    return spark.createDataFrame(rows, SOURCE_DDL).localCheckpoint(eager=True)


def _writer(tmp_path: Path, deletion_vectors: bool) -> DeltaWriter:
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path), subscribe="x",
                         checkpoint_location=str(tmp_path / "cp"), deletion_vectors=deletion_vectors)
    return DeltaWriter(cfg, lambda _name: contextlib.nullcontext(), BatchCache().checkpoint)


def _contents(spark: Any, path: str) -> tuple[set[Any], set[Any]]:
    rows = {tuple(r) for r in spark.read.format("delta").load(path).select("region", "id", "name", "note").collect()}
    feed = {tuple(r) for r in spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2)
            .load(path).select("_change_type", "region", "id", "name", "note").collect()}
    return rows, feed


def test_the_one_join_merge_writes_what_deltas_merge_writes(spark: Any, tmp_path: Path) -> None:
    cow = _table(spark, tmp_path / "cow", deletion_vectors=False)
    dv = _table(spark, tmp_path / "dv", deletion_vectors=True)
    batch = _batch(spark)
    _writer(tmp_path, False).merge(spark, batch, COLUMNS, KEYS, cow, "public.t", 7, [])
    _writer(tmp_path, False).clear_txn(spark)
    _writer(tmp_path, True).merge(spark, batch, COLUMNS, KEYS, dv, "public.t", 7, [])

    expected_rows = {("eu", 1, "a2", "long note"), ("us", 1, "c", "n3"), ("us", 2, "d", "n4"), ("us", 3, "new", "n5")}
    expected_feed = {("update_preimage", "eu", 1, "a", "long note"), ("update_postimage", "eu", 1, "a2", "long note"),
                     ("delete", "eu", 2, "b", "n2"), ("insert", "us", 3, "new", "n5")}
    assert _contents(spark, cow) == (expected_rows, expected_feed)
    assert _contents(spark, dv) == (expected_rows, expected_feed)
    last = spark.sql(f"DESCRIBE HISTORY delta.`{dv}` LIMIT 1").first()
    assert last.operation == "MERGE"
    metrics = {k: int(v) for k, v in last.operationMetrics.items()}
    assert (metrics["numSourceRows"], metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"],
            metrics["numTargetRowsInserted"], metrics["numTargetRowsCopied"]) == (5, 1, 1, 1, 0)
    assert metrics["numTargetDeletionVectorsAdded"] >= 1


def test_a_replayed_batch_id_writes_nothing(spark: Any, tmp_path: Path) -> None:
    dv = _table(spark, tmp_path / "dv", deletion_vectors=True)
    batch = _batch(spark)
    checkpoint = BatchCache().checkpoint
    first = merge_with_deletion_vectors(spark, batch, COLUMNS, KEYS, META_COLUMNS, dv, "app:merge:t", 3, None,
                                        checkpoint)
    version = spark.sql(f"DESCRIBE HISTORY delta.`{dv}` LIMIT 1").first().version
    again = merge_with_deletion_vectors(spark, batch, COLUMNS, KEYS, META_COLUMNS, dv, "app:merge:t", 3, None,
                                        checkpoint)
    assert (first, again) == (Outcome.MERGED, Outcome.ALREADY_APPLIED)
    assert spark.sql(f"DESCRIBE HISTORY delta.`{dv}` LIMIT 1").first().version == version


def test_a_table_without_deletion_vectors_gets_deltas_merge(spark: Any, tmp_path: Path) -> None:
    """Spark gives no row indexes for a table whose deletion vectors are off: the one-join MERGE
    declines, and the writer runs Delta's MERGE instead (same result, no deletion vector)."""
    path = _table(spark, tmp_path / "plain", deletion_vectors=False)
    declined = merge_with_deletion_vectors(spark, _batch(spark), COLUMNS, KEYS, META_COLUMNS, path, "app:merge:t", 1,
                                           None, BatchCache().checkpoint)
    assert declined is Outcome.NOT_ENABLED
    _writer(tmp_path, True).merge(spark, _batch(spark), COLUMNS, KEYS, path, "public.t", 1, [])
    rows, _ = _contents(spark, path)
    assert ("eu", 1, "a2", "long note") in rows and ("us", 3, "new", "n5") in rows and len(rows) == 4
    metrics = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first().operationMetrics
    assert int(metrics["numTargetDeletionVectorsAdded"]) == 0
