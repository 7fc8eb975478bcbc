"""``spark_jobs.parquet_encoding`` through ``DeltaTables.ensure`` and Delta's writers: the table
properties reach the Parquet writer of the job's writes, one column at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from spark_jobs.blind_append import append_once
from spark_jobs.connect_schema import column_spec, reconcile
from spark_jobs.job_config import ApplyJobConfig
from spark_jobs.tables import DeltaTables

pytestmark = pytest.mark.spark

NODES = [{"type": "int64", "optional": False, "field": "id"}, {"type": "int32", "optional": True, "field": "v"}]
META = "_cdc_seq STRUCT<commit_lsn: BIGINT, lsn: BIGINT, kafka_offset: BIGINT>, _cdc_op STRING, _cdc_ts_ms BIGINT"


def _properties(spark: Any, path: str) -> dict[str, str]:
    return {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect()}


def _dictionary_columns(path: str) -> dict[str, bool]:
    """Per Parquet column path: whether every data file written holds it dictionary-encoded."""
    out: dict[str, bool] = {}
    files = sorted(Path(path).glob("*.parquet"))
    assert files
    for file in files:
        meta = pq.ParquetFile(file).metadata
        for group in range(meta.num_row_groups):
            for index in range(meta.num_columns):
                chunk = meta.row_group(group).column(index)
                on = chunk.has_dictionary_page
                out[chunk.path_in_schema] = out.get(chunk.path_in_schema, True) and on
    return out


def _rows(spark: Any, n: int) -> Any:
    """``n`` rows of five values per column: Parquet's dictionary pays on every column unless told
    not to try it (real keys and positions are unique, where the dictionary never pays: see
    ``spark_jobs.parquet_encoding``; here only the properties can make a column plain)."""
    return spark.range(n).selectExpr(
        "id % 5 AS id", "CAST(id % 3 AS INT) AS v",
        "named_struct('commit_lsn', CAST(7 AS BIGINT), 'lsn', 1000 + id % 5, 'kafka_offset', id % 5) AS _cdc_seq",
        "'u' AS _cdc_op", "CAST(1700000000000 AS BIGINT) AS _cdc_ts_ms")


def test_a_table_the_job_creates_writes_its_unique_columns_without_a_dictionary(spark: Any, tmp_path: Path) -> None:
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path), subscribe="x",
                         checkpoint_location=str(tmp_path / "checkpoint"))
    path = str(tmp_path / "public" / "t")
    DeltaTables(cfg).ensure(spark, path, "public.t", None, reconcile(None, [[column_spec(n) for n in NODES]]), ["id"])
    props = _properties(spark, path)
    assert {k: v for k, v in props.items() if k.startswith("parquet.")} == {
        "parquet.enable.dictionary#id": "false", "parquet.enable.dictionary#_cdc_seq.lsn": "false",
        "parquet.enable.dictionary#_cdc_seq.kafka_offset": "false"}
    without = str(tmp_path / "public" / "without")  # the same rows, a table without the properties
    spark.sql(f"CREATE TABLE delta.`{without}` (id BIGINT NOT NULL, v INT, {META}) USING DELTA")
    assert append_once(spark, _rows(spark, 500), without, "app:append:t", 0) is True
    assert set(_dictionary_columns(without).values()) == {True}
    assert append_once(spark, _rows(spark, 500), path, "app:append:t", 0) is True
    assert _dictionary_columns(path) == {
        "id": False, "v": True, "_cdc_seq.commit_lsn": True, "_cdc_seq.lsn": False, "_cdc_seq.kafka_offset": False,
        "_cdc_op": True, "_cdc_ts_ms": True}


def test_an_older_table_gets_the_missing_properties_once_and_keeps_a_users_own(spark: Any, tmp_path: Path) -> None:
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path), subscribe="x",
                         checkpoint_location=str(tmp_path / "checkpoint"))
    path = str(tmp_path / "public" / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT NOT NULL, v INT, {META}) USING DELTA "
              "TBLPROPERTIES ('parquet.enable.dictionary#id' = 'true')")
    tables = DeltaTables(cfg)
    columns = [column_spec(n) for n in NODES]
    state = tables.state(spark, path)
    assert state is not None
    tables.ensure(spark, path, "public.t", state, reconcile(state.columns, [columns]), ["id"])
    props = _properties(spark, path)
    assert props["parquet.enable.dictionary#id"] == "true"  # the user's choice
    assert props["parquet.enable.dictionary#_cdc_seq.lsn"] == "false"
    assert props["parquet.enable.dictionary#_cdc_seq.kafka_offset"] == "false"
    versions = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count()
    state = tables.state(spark, path)
    assert state is not None
    tables.ensure(spark, path, "public.t", state, reconcile(state.columns, [columns]), ["id"])
    assert spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count() == versions  # nothing more to set
    assert append_once(spark, _rows(spark, 500), path, "app:append:t", 0) is True
    encoded = _dictionary_columns(path)
    assert (encoded["id"], encoded["_cdc_seq.lsn"], encoded["_cdc_seq.kafka_offset"], encoded["v"]) == (
        True, False, False, True)
