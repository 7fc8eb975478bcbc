"""The job's SparkSession (``spark_jobs.session``)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from devtools import StackSettings

pytestmark = pytest.mark.spark
MEMORY_DELETE = "m\nd\n"
"""Py4J's command that frees a JVM object whose Python proxy was garbage-collected."""


def test_building_a_column_does_not_record_its_call_site_in_the_jvm(spark: Any) -> None:
    """DataFrame debugging is off: a pyspark Column function no longer records its Python call site
    in the JVM around the call that builds the expression (five more round trips each)."""
    from pyspark.errors.utils import is_debugging_enabled
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    assert is_debugging_enabled() is False
    calls: list[str] = []
    gateway = spark.sparkContext._gateway
    client = gateway._gateway_client
    original = client.send_command

    def counting(command: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(command)
        return original(command, *args, **kwargs)

    gc.collect()  # proxies of earlier tests' JVM objects, freed now rather than during the call
    client.send_command = counting
    try:
        F.upper(F.col("a"))
    finally:
        client.send_command = original
    # Py4J's own garbage collection ("m", "d", object id: a Python proxy of a JVM object was freed) runs whenever
    # Python's collector frees one, also inside the call: not a round trip the Column function makes.
    made = [command for command in calls if not command.startswith(MEMORY_DELETE)]
    # Three calls per function (two reflection lookups and the call); 16 for these two with
    # debugging on.
    assert len(made) <= 6, calls


def test_a_cdf_merge_writes_data_and_change_files_without_sorting_them(spark: Any, tmp_path: Any) -> None:
    """Concurrent output writers: at least two (data files and change files), so the MERGE's rewrite
    is not sorted by Delta's ``__is_cdc`` first; and the MERGE still writes both correctly."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    assert int(spark.conf.get("spark.sql.maxConcurrentOutputFileWriters")) >= 2
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING DELTA "
              "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    spark.range(1000).select("id", F.lit("a").alias("v")).repartition(2).write.format("delta").mode("append").save(path)
    source = spark.range(0, 1100, 10).select("id", F.lit("b").alias("v"))
    (DeltaTable.forPath(spark, path).alias("t").merge(source.alias("s"), "t.id = s.id")
     .whenMatchedDelete(condition="s.id % 20 = 0").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    stored = {r.id: r.v for r in spark.read.format("delta").load(path).collect()}
    assert len(stored) == 1000 - 50 + 10 and stored[10] == "b" and stored[11] == "a" and 20 not in stored
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2).load(path)
    kinds = {r._change_type: r["count"] for r in changes.groupBy("_change_type").count().collect()}
    assert kinds == {"delete": 50, "update_preimage": 50, "update_postimage": 50, "insert": 10}


def _fetched_data_pool(spark: Any) -> Any:
    """Spark's pool of Kafka polls kept for a next task (``KafkaDataConsumer.fetchedDataPool``, private)."""
    jvm = spark.sparkContext._jvm
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()  # the one with spark.jars
    consumers = jvm.java.lang.Class.forName("org.apache.spark.sql.kafka010.consumer.KafkaDataConsumer$", True, loader)
    field = consumers.getDeclaredField("fetchedDataPool")
    field.setAccessible(True)
    return field.get(None)


def test_kafka_polls_returned_to_spark_s_pool_are_dropped_within_seconds(spark: Any, stack: StackSettings,
                                                                       unique_name: str) -> None:
    """A read of change records in several tasks per partition returns each task's last poll to Spark's pool;
    the job drops them after 10 s idle instead of Spark's 5 minutes (they held ~1,000 records a batch)."""
    import time

    from spark_jobs.kafka_source import consumer_options
    from tests.kafka_helpers import create_topic, produce

    topic = f"pool_{unique_name}"
    create_topic(stack.bootstrap_servers, topic)
    produce(stack.bootstrap_servers, topic, ((f"k{i}".encode(), b"v" * 200) for i in range(3_000)))
    read = (spark.read.format("kafka").options(**consumer_options(stack.bootstrap_servers, {}))
            .option("subscribe", topic).option("startingOffsets", "earliest").option("minPartitions", "3").load())
    assert read.count() == 3_000
    pool = _fetched_data_pool(spark)
    assert pool.numTotal() >= 1, "the read's tasks returned their polls to the pool"
    deadline = time.monotonic() + 40
    while pool.numTotal() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert pool.numTotal() == 0, "polls still pooled 40 s after the read (Spark's default keeps them 5 minutes)"
