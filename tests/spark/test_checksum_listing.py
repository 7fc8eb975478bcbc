"""``spark_jobs.checksum_listing.read_latest``: a Delta table read from its checksum file's file
list, the same rows as Delta's own read, and Delta's read where the checksum lists no files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_jobs.checksum_listing import read_latest

pytestmark = pytest.mark.spark


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def _file_index(df: Any) -> str:
    """The class of the file index the read scans (Delta's log: ``TahoeLogFileIndex``; given
    files: ``TahoeBatchFileIndex``)."""
    leaf = df._jdf.queryExecution().analyzed().collectLeaves().head()
    return str(leaf.relation().location().getClass().getSimpleName())


def _table(spark: Any, path: Path) -> str:
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING) USING DELTA "
              "TBLPROPERTIES (delta.enableDeletionVectors = true)")
    spark.createDataFrame([(i, f"n{i}") for i in range(10)], "id BIGINT, name STRING").coalesce(1) \
        .write.format("delta").mode("append").save(str(path))
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (3, 4)")  # a deletion vector on the one file
    spark.createDataFrame([(20, "n20")], "id BIGINT, name STRING").write.format("delta").mode("append").save(str(path))
    return str(path)


def test_the_latest_version_is_read_from_the_checksum_files_with_their_deletion_vectors(
    spark: Any, tmp_path: Path,
) -> None:
    path = _table(spark, tmp_path / "t")
    read = read_latest(spark, path)
    assert _file_index(read) == "TahoeBatchFileIndex"  # the checksum's files, not the log's state
    expected = _rows(spark.read.format("delta").load(path))
    assert [r[0] for r in expected] == [0, 1, 2, 5, 6, 7, 8, 9, 20]
    assert _rows(read) == expected
    assert _rows(read.where("id >= 8")) == [(8, "n8"), (9, "n9"), (20, "n20")]


def test_a_table_whose_checksum_lists_no_files_is_read_through_its_state(spark: Any, tmp_path: Path) -> None:
    key = "spark.databricks.delta.allFilesInCrc.enabled"
    spark.conf.set(key, "false")
    try:
        path = _table(spark, tmp_path / "t")
    finally:
        spark.conf.unset(key)
    read = read_latest(spark, path)
    assert _file_index(read) == "TahoeLogFileIndex"
    assert _rows(read) == _rows(spark.read.format("delta").load(path))
