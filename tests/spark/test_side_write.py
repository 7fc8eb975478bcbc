"""A write beside the MERGE (``spark_jobs.side_write``): its own thread, the batch thread's Spark
local properties, its jobs tagged as its phase, its error handed back by ``wait`` only; and the
tombstone append it runs keeps its idempotent-write id while the MERGE's id is in the session."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.batch_cache import BatchCache
from spark_jobs.connect_schema import ColumnSpec
from spark_jobs.job_config import ApplyJobConfig
from spark_jobs.phases import PhaseClock
from spark_jobs.side_write import SideWrite
from spark_jobs.writes import DeltaWriter

pytestmark = pytest.mark.spark


def test_runs_on_another_thread_with_the_batch_threads_job_group_and_tags_its_jobs(spark: Any) -> None:
    sc = spark.sparkContext
    clock = PhaseClock(spark, 3)
    seen: dict[str, Any] = {}

    def work() -> None:
        seen["thread"] = threading.get_ident()
        seen["group"] = sc.getLocalProperty("spark.jobGroup.id")
        spark.range(10).count()

    sc.setJobGroup("the-batch", "a streaming batch")
    try:
        side = SideWrite(work, clock, "beside")
        side.wait()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert seen["thread"] != threading.get_ident()
    assert seen["group"] == "the-batch"
    time.sleep(0.5)  # the status tracker is fed asynchronously
    assert clock.spark_work()["beside"]["jobs"] == 1
    assert "signaller-apply" not in ",".join(sc.getJobTags())


def test_wait_raises_the_error_and_join_does_not(spark: Any) -> None:
    def fails() -> None:
        raise ValueError("the side write failed")

    side = SideWrite(fails, None, "beside")
    side.join()  # for a finally: never raises
    with pytest.raises(ValueError, match="the side write failed"):
        side.wait()
    SideWrite(lambda: None, None, "beside").wait()


def test_tombstones_beside_a_merge_keep_their_own_idempotent_write_id(spark: Any, tmp_path: Path) -> None:
    """The session's idempotent-write id is the MERGE's (set on the batch thread) while the tombstones
    are appended beside it: the append must use its own, so that a replay skips exactly it."""
    from pyspark.sql import functions as F

    cfg = ApplyJobConfig(bootstrap_servers="unused:9092", target_root=str(tmp_path / "delta"),
                         checkpoint_location=str(tmp_path / "cp"), subscribe="x")
    writer = DeltaWriter(cfg, lambda _name: contextlib.nullcontext(), BatchCache().checkpoint)
    path = str(tmp_path / "delta" / "_tombstones" / "public" / "t")
    columns = [ColumnSpec("id", "BIGINT", "id", "BIGINT", optional=False)]
    deletes = spark.range(5).select(F.col("id"), F.struct(F.lit(1).cast("bigint").alias("commit_lsn"), F.col(
        "id").alias("lsn"), F.lit(0).cast("bigint").alias("kafka_offset")).alias("_cdc_seq"))
    writer._txn(spark, "merge", "public.t", 41)  # what the MERGE on the batch thread has set
    try:
        writer.tombstones_beside(spark, deletes, columns, ["id"], path, "public.t", 7, False, None).wait()
        writer.tombstones_beside(spark, deletes, columns, ["id"], path, "public.t", 7, True, None).wait()  # replay
        assert spark.read.format("delta").load(path).count() == 5
        writer.tombstones_beside(spark, deletes, columns, ["id"], path, "public.t", 8, True, None).wait()
        assert spark.read.format("delta").load(path).count() == 10
    finally:
        writer.clear_txn(spark)
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").where("operation = 'WRITE'").count()
    assert history == 2
