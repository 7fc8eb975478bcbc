"""``spark_jobs.key_range.files_in_range`` over the statistics Delta writes (``tests/unit/test_key_range``
has the edge cases)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_jobs.checksum_listing import checksum_listing, iterate
from spark_jobs.key_range import files_in_range

pytestmark = pytest.mark.spark


def _append(spark: Any, path: Path, rows: list[tuple[int, str]]) -> None:
    frame = spark.createDataFrame(rows, "id BIGINT, name STRING").selectExpr("*", "DATE'2026-01-01' AS day")
    frame.coalesce(1).write.format("delta").mode("append").save(str(path))


def _files(spark: Any, path: Path) -> list[Any]:
    """A table of three files (ids 1-3 / 'a'-'c', 100-102 / 'x'-'z', and one without statistics)."""
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING, day DATE) USING DELTA")
    _append(spark, path, [(1, "a"), (3, "c")])
    _append(spark, path, [(100, "x"), (102, "z")])
    spark.conf.set("spark.databricks.delta.stats.collect", "false")
    try:
        _append(spark, path, [(50, "m")])
    finally:
        spark.conf.unset("spark.databricks.delta.stats.collect")
    log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(path))
    listing = checksum_listing(log.startTransaction())
    assert listing is not None
    files = iterate(listing.files)
    assert len(files) == 3
    return files


def _ids(files: list[Any]) -> set[str]:
    """Which files: by their smallest id (``?`` without statistics)."""
    import json

    return {str(json.loads(f.stats())["minValues"]["id"]) if f.stats() else "?" for f in files}


def test_files_outside_the_bounds_are_skipped_and_files_without_statistics_kept(spark: Any, tmp_path: Path) -> None:
    files = _files(spark, tmp_path / "t")
    assert _ids(files_in_range(files, [("id", "2", "10")], None)) == {"1", "?"}
    assert _ids(files_in_range(files, [("id", "4", "99")], None)) == {"?"}
    assert _ids(files_in_range(files, [("name", "'y'", "'zz'")], None)) == {"100", "?"}
    assert _ids(files_in_range(files, [("id", "0", "200"), ("name", "'d'", "'w'")], None)) == {"?"}
    assert _ids(files_in_range(files, [("day", "DATE'2026-01-02'", "DATE'2026-02-01'")], None)) == {"?"}
    assert _ids(files_in_range(files, [], None)) == {"1", "100", "?"}


def test_with_column_mapping_every_file_is_kept(spark: Any, tmp_path: Path) -> None:
    files = _files(spark, tmp_path / "t")
    assert _ids(files_in_range(files, [("id", "4", "99")], "name")) == {"1", "100", "?"}
