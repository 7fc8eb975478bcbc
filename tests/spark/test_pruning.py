"""The batch's key range in the MERGE condition: files whose keys lie outside it are not even
read (a MERGE that read them would fail here: they are moved away), and the result is the same
as without it (batches handed to ``BatchApplier`` directly)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from signaller.model import Column
from spark_jobs.apply_changes import BatchApplier
from spark_jobs.job_config import ApplyJobConfig
from tests.spark.cdc_events import Record, SourceTable

pytestmark = pytest.mark.spark


def batch(spark: Any, topic: str, records: list[Record], first_offset: int) -> Any:
    rows = [(topic, 0, first_offset + i, key, value) for i, (key, value) in enumerate(records)]
    return spark.createDataFrame(rows, "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY")


def test_merge_and_tombstones_skip_the_files_outside_the_batch_key_range(spark: Any, tmp_path: Path) -> None:
    columns = [Column("id", 0, "int8", optional=False, is_key=True), Column("v", 0, "text")]
    table = SourceTable("prune", "items", columns)
    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                         checkpoint_location=str(tmp_path / "cp"), subscribe=table.topic)
    applier = BatchApplier(cfg)
    low = [table.event("c", 100, 1000 + i, after={"id": str(i), "v": "low"}) for i in range(1, 51)]
    high = [table.event("c", 200, 2000 + i, after={"id": str(10_000 + i), "v": "high"}) for i in range(1, 51)]
    applier(batch(spark, table.topic, low, 0), 0)
    applier(batch(spark, table.topic, high, 50), 1)
    path = tmp_path / "delta" / "public" / "items"
    import pyarrow.parquet as pq

    low_files = [f for f in path.glob("*.parquet") if pq.read_table(f, columns=["id"])["id"].to_pylist()[0] < 10_000]
    assert low_files
    for file in low_files:  # a MERGE that reads them fails: the batch's key range must skip them
        file.rename(file.with_suffix(".away"))
    update = [table.event("u", 300, 3000, after={"id": "10007", "v": "new"}),
              table.event("d", 300, 3001, before={"id": "10008", "v": "high"}),
              table.event("c", 300, 3002, after={"id": "10051", "v": "added"})]
    applier(batch(spark, table.topic, update, 100), 2)
    # one MERGE of all three (the new key folded in), its source's size as the batch counted it
    merge = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first()
    assert merge.operation == "MERGE"
    assert {k: int(merge.operationMetrics[k]) for k in ("numSourceRows", "numTargetRowsInserted",
                                                         "numTargetRowsUpdated", "numTargetRowsDeleted")} == {
        "numSourceRows": 3, "numTargetRowsInserted": 1, "numTargetRowsUpdated": 1, "numTargetRowsDeleted": 1}

    def high_rows() -> dict[int, str]:
        return {r.id: r.v for r in spark.read.format("delta").load(str(path)).where("id > 10000").collect()}

    expected = {10_000 + i: "high" for i in range(1, 51)}
    del expected[10008]
    assert high_rows() == {**expected, 10007: "new", 10051: "added"}
    # a late, older event of the deleted key stays out (its tombstone is inside the range read)
    applier(batch(spark, table.topic, [table.event("u", 250, 2500, after={"id": "10008", "v": "late"})], 103), 3)
    assert 10008 not in high_rows()
    for file in low_files:
        file.with_suffix(".away").rename(file)
    rows = {r.id: r.v for r in spark.read.format("delta").load(str(path)).collect()}
    assert rows == {**{i: "low" for i in range(1, 51)}, **expected, 10007: "new", 10051: "added"}
