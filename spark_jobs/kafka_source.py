"""The apply job's reads of change records (Spark's Kafka source).

:func:`consumer_options` is what every read of change records passes to Spark's Kafka source: the
brokers, :data:`FETCH_DEFAULTS`, then the job's own ``kafka.*`` properties (which win); pure, no
Spark session needed. :func:`change_stream` is the job's streaming read (lazy: nothing is read
until the query starts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # job_config imports MANAGED_BY_SPARK from here
    from spark_jobs.job_config import ApplyJobConfig

FETCH_DEFAULTS: dict[str, str] = {
    # Spark reads only offset ranges that exist, so a fetch has nothing to wait for. With Kafka's
    # default (500 ms) a task that reads up to the end of its partition (every streaming batch
    # does) waits for the consumer's prefetch past the end: measured on 100,000 records of the
    # bench's topic, 0.85 s to read them with the default, 0.35 s with 10 ms.
    "kafka.fetch.max.wait.ms": "10",
}
"""Consumer settings the job sets unless its configuration names them (``kafka.<setting>``)."""
MANAGED_BY_SPARK = ("kafka.auto.offset.reset", "kafka.enable.auto.commit", "kafka.key.deserializer",
                    "kafka.value.deserializer", "kafka.interceptor.classes")
"""``kafka.*`` settings Spark's Kafka source refuses (it sets them itself)."""
# Not set: a larger ``max.partition.fetch.bytes``. 8 MiB read the same 100,000 records in 0.27 s,
# but a 1,000,000-row re-snapshot (bench, 100,000-row batches, 1g driver heap) then ran at 5,320
# rows/s instead of 16,122, its phases all slower batch after batch; most likely the heap: Spark
# pools up to 64 idle consumers, and each may hold a prefetch of that size.


def consumer_options(bootstrap_servers: str, kafka_options: dict[str, str]) -> dict[str, Any]:
    """The ``kafka.*`` options of a read: ``kafka.bootstrap.servers``, then :data:`FETCH_DEFAULTS`,
    then ``kafka_options`` (the job's ``kafka.*`` properties) over them."""
    return {"kafka.bootstrap.servers": bootstrap_servers, **FETCH_DEFAULTS, **kafka_options}


def min_partitions(spark: Any, cfg: ApplyJobConfig) -> int:
    """Spark tasks per batch read (Kafka's ``minPartitions``): ``cfg.min_partitions``, else the
    session's default parallelism. Change topics often have one partition per table; without this a
    table's whole batch is read, parsed and decoded by one task, on one core."""
    return cfg.min_partitions or int(spark.sparkContext.defaultParallelism)


def change_stream(spark: Any, cfg: ApplyJobConfig) -> Any:
    """The streaming DataFrame of the job's topics (``subscribe`` or ``subscribePattern``), from
    ``starting_offsets``, at most ``max_offsets_per_trigger`` records a batch, in at least
    :func:`min_partitions` tasks."""
    reader = (
        spark.readStream.format("kafka")
        .options(**consumer_options(cfg.bootstrap_servers, cfg.kafka_options))
        .option("startingOffsets", cfg.starting_offsets)
        .option("failOnDataLoss", str(cfg.fail_on_data_loss).lower())
    )
    reader = reader.option("subscribe", cfg.subscribe) if cfg.subscribe else reader.option(
        "subscribePattern", cfg.subscribe_pattern
    )
    if cfg.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(cfg.max_offsets_per_trigger))
    return reader.option("minPartitions", str(min_partitions(spark, cfg))).load()
