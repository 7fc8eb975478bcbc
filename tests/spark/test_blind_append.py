"""``spark_jobs.blind_append.append_once``: Delta's idempotent append, written in a transaction of
its own with the write id from the checksum file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_jobs.blind_append import append_once

pytestmark = pytest.mark.spark

DDL = "id BIGINT NOT NULL, name STRING, seq STRUCT<a: BIGINT, b: BIGINT>"


def _table(spark: Any, path: Path) -> str:
    spark.sql(f"CREATE TABLE delta.`{path}` ({DDL}) USING DELTA")
    return str(path)


def _rows(spark: Any, path: str) -> list[tuple[Any, ...]]:
    return sorted((r.id, r.name, tuple(r.seq)) for r in spark.read.format("delta").load(path).collect())


def _history(spark: Any, path: str) -> list[Any]:
    return spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()


def test_an_append_is_written_once_per_write_id(spark: Any, tmp_path: Path, delta_writer_appends: list[str]) -> None:
    path = _table(spark, tmp_path / "t")
    rows = spark.createDataFrame([(1, "a", (1, 1)), (2, "b", (2, 2))], DDL)
    assert append_once(spark, rows, path, "app:append:t", 5) is True
    assert append_once(spark, rows, path, "app:append:t", 5) is False  # a replayed batch
    assert append_once(spark, rows, path, "app:append:t", 4) is False  # an older one
    assert _rows(spark, path) == [(1, "a", (1, 1)), (2, "b", (2, 2))]
    last = _history(spark, path)[-1]
    # the commit Delta's DataFrame writer makes for an append
    assert (last.operation, last.operationParameters, last.isBlindAppend) == (
        "WRITE", {"mode": "Append", "partitionBy": "[]"}, True)
    assert int(last.operationMetrics["numOutputRows"]) == 2
    # the id is the table's, as Delta's own writer records it: Delta's writer skips it too
    rows.write.format("delta").mode("append").option("txnAppId", "app:append:t").option("txnVersion", "5").save(path)
    assert len(_rows(spark, path)) == 2
    assert append_once(spark, rows.limit(1), path, "app:append:t", 6) is True
    assert len(_rows(spark, path)) == 3
    assert delta_writer_appends == []  # the table's schema: the job's own transaction every time


def test_an_id_written_by_deltas_writer_is_honoured(spark: Any, tmp_path: Path) -> None:
    path = _table(spark, tmp_path / "t")
    rows = spark.createDataFrame([(1, "a", (1, 1))], DDL)
    rows.write.format("delta").mode("append").option("txnAppId", "app:append:t").option("txnVersion", "3").save(path)
    assert append_once(spark, rows, path, "app:append:t", 3) is False
    assert len(_rows(spark, path)) == 1


def test_rows_of_another_schema_go_through_deltas_writer(
    spark: Any, tmp_path: Path, delta_writer_appends: list[str],
) -> None:
    """Columns in another order: the transaction's writer would not reconcile them, Delta's
    writer does (by name); idempotent all the same."""
    path = _table(spark, tmp_path / "t")
    reordered = spark.createDataFrame([((7, 7), "x", 7)], "seq STRUCT<a: BIGINT, b: BIGINT>, name STRING, id BIGINT")
    assert append_once(spark, reordered, path, "app:append:t", 1) is True
    assert append_once(spark, reordered, path, "app:append:t", 1) is True  # Delta's writer skipped it itself
    assert _rows(spark, path) == [(7, "x", (7, 7))]
    assert delta_writer_appends == [path, path]


def test_a_null_in_a_not_null_column_fails_the_append(spark: Any, tmp_path: Path) -> None:
    path = _table(spark, tmp_path / "t")
    rows = spark.createDataFrame([(None, "a", (1, 1))], "id BIGINT, name STRING, seq STRUCT<a: BIGINT, b: BIGINT>")
    with pytest.raises(Exception, match=r"(?i)null"):
        append_once(spark, rows, path, "app:append:t", 1)
    assert _rows(spark, path) == []
