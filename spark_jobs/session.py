"""Build a SparkSession with Delta Lake and the Kafka connector.

Jars come from a local directory when one is given (``SIGNALLER_SPARK_JARS_DIR``, filled by
``python -m devtools stack up`` from Maven Central), else from ``spark.jars.packages`` coordinates, which
Spark resolves from Maven Central itself (for clusters and spark-submit users).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from spark_jobs import driver_jvm

SPARK_PACKAGES = (
    "io.delta:delta-spark_4.1_2.13:4.4.0",
    "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1",
    "org.apache.spark:spark-avro_2.13:4.1.1",
)
JVM_OPTIONS = "-XX:-DontCompileHugeMethods -XX:+UseParallelGC"
"""JVM options of the driver and executors (see ``DEFAULT_CONF``)."""
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
DRIVER_CLASSPATH = "spark.driver.extraClassPath"
DEFAULT_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # Cluster masters; a local master gets one per core (local_shuffle_partitions).
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.session.timeZone": "UTC",
    # INT96 (Spark's default) cannot hold dates past 2262 for readers that map it to nanoseconds.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.driver.memory": "2g",
    # Every MERGE source of the job is a local checkpoint (deterministic, already materialized):
    # Delta's own copy of it ("auto") would only repeat that work.
    "spark.databricks.delta.merge.materializeSource": "none",
    # Compiled generated code is cached by its source text, 100 classes by default: fewer than one
    # batch of the job generates (Kafka read, decode, dedup, tombstones, Delta's MERGE and its
    # snapshot jobs), so every batch compiled them all again, and the JVM then JIT-compiled the
    # new classes again. Measured on 100,000-change batches into the bench's 1 M-row table (with
    # spark_jobs.coarse_bounds): compiler threads ~6 s of CPU a batch at the default, under 2 s
    # with this. A few MB of class metadata.
    "spark.sql.codegen.cache.maxEntries": "1000",
    # The framed batch of the general road (spark_jobs.frame: positions, keys, hashes, payload
    # texts) is cached for one batch and read once or twice:
    # compressing its columns cost more than it saved (measured on the framed batch). In-process, 100,000-change
    # batches: the read phase's task CPU 1.25 -> 1.06 s, its wall time ~1.55 -> ~1.3 s.
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    # PySpark's DataFrame debugging records the Python call site of every Column function for
    # error messages: five calls into the JVM (active session, a conf lookup, origin set and clear)
    # around the one that builds the expression. A batch builds a few hundred expressions (framing,
    # decode, sequence, dedup, split): py-spy of the driver on 2,500-insert batches into the
    # bench's 1 M-row table found ~0.55 s of each batch (~1.9 s under the profiler) in building
    # plans, 0.38 s of it in the one-pass decode plan alone; without the profiler, batches took
    # ~1.65 s with debugging and ~1.45 s without (time outside the phases 0.5 -> 0.3 s). Errors
    # keep Spark's message and the JVM's stack.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # JVM options, measured on 100,000-change batches into the bench's 1 M-row table (driver CPU):
    # Delta's MERGE with the change data feed generates an output projection too large for
    # HotSpot's JIT (HugeMethodLimit, 8,000 bytecodes), which then ran interpreted for every target
    # row rewritten: compiling it anyway saved ~2.4 s a batch (merge 12.6 -> 11.1). The parallel
    # collector instead of G1 (a batch job: throughput, not pause times; G1's concurrent cycles ran
    # all the time) saved another ~3 s (22.3 -> 19.1) and ~200 MB of resident memory. Executors
    # need them where the tasks run (clusters); a job that sets its own extraJavaOptions should
    # keep them.
    DRIVER_OPTIONS: JVM_OPTIONS,
    "spark.executor.extraJavaOptions": JVM_OPTIONS,
    # A MERGE into a table with the change data feed writes its data files and its change files in
    # one job, a partitioned write (by Delta's internal ``__is_cdc`` column). With Spark's default (0)
    # every task first sorts all its output rows by that column (the 1 M rows a copy-on-write MERGE
    # rewrites, spilling to disk) so that one file writer is open at a time; with concurrent writers
    # each task keeps one writer per partition value open (here two: data and changes) and sorts
    # nothing unless it meets more than this many values (a user's partition_by). JFR on the bench's
    # 100,000-change batches: the sort and its spill were ~15 % of the tasks' CPU; in-process, five
    # batches each way in one fresh worker each, the merge phase of batches 2-5 4.16 / 4.07 / 3.90 /
    # 4.69 s -> 3.78 / 3.51 / 3.56 / 3.89 s. Open writers buffer what they have been given until
    # their row group is full, which the sort held in memory anyway.
    "spark.sql.maxConcurrentOutputFileWriters": "4",
    # Spark's Kafka source returns each task's last poll (up to max.poll.records: 500 records, the
    # ones already read included) to a pool, for a next task that starts where this one ended, and
    # drops it after this long idle (default 5 minutes). Batches read in minPartitions tasks, and only
    # the poll of a partition's last task can ever be taken again: the others are kept for nothing.
    # In-process on the bench's 10,000-change batches, the live heap held ~1,000 more Kafka records
    # (~2.6 KB each) after every batch: 2,000 -> 43,533 records over 40 batches, and the heap's live
    # data after a full collection 251 -> 746 MB (jmap -histo:live), until the 5 minutes passed.
    "spark.kafka.consumer.fetchedData.cache.timeout": "10s",
    "spark.kafka.consumer.fetchedData.cache.evictorThreadRunInterval": "5s",
}
MALLOC_ARENA_MAX = "2"
"""glibc malloc arenas of a local JVM (``local[*]`` masters; an existing ``MALLOC_ARENA_MAX`` wins).
In-process on the bench's 1,000,000-row table, three 100,000-change batches: the driver's RSS
1,676 -> 1,632 MB with a 1g heap, batch times unchanged. Clusters set it with
``spark.executorEnv.MALLOC_ARENA_MAX``."""
_LOCAL_MASTER = re.compile(r"local(?:\[(\*|[0-9]+)(?:,[0-9]+)?\])?")


def local_shuffle_partitions(master: str) -> int | None:
    """Shuffle partitions for a local master: one per core it runs tasks on (``local`` 1,
    ``local[N]`` and ``local[N,F]`` N, ``local[*]`` the machine's); None for any other master.

    Why not more: adaptive execution packs adjacent shuffle partitions into at least as many
    tasks as there are cores, each up to 1/cores of the shuffle. Four nearly equal partitions on
    two cores do not pack into two (a hash split is never exact) but into three, one holding
    two of them: the task that runs alone last doubles the stage. That was the copy-on-write
    MERGE's rewrite of the bench's 1 M-row table, every batch (task rows 254k / 509k / 254k,
    1.96 s where two equal halves would take ~1.3 s). Measured with every MERGE of a batch alternating
    between the two settings in one JVM (``DeltaWriter.merge``, the bench's 1 M-row table):
    median 4.20 -> 3.59 s per 100,000-change MERGE, 3.27 -> 2.80 s per 10,000-change one."""
    match = _LOCAL_MASTER.fullmatch(master.strip())
    if match is None:
        return None
    cores = match.group(1)
    if cores is None:
        return 1
    return (os.cpu_count() or 1) if cores == "*" else max(1, int(cores))


def local_jars(jars_dir: Path) -> list[str]:
    """The jars in ``jars_dir`` that pyspark does not already bundle (by artifact name), so the
    bundled Jackson, Scala and logging versions win over older transitive copies."""
    import pyspark

    bundled = {driver_jvm.artifact(p) for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return sorted(str(p) for p in jars_dir.glob("*.jar") if driver_jvm.artifact(p) not in bundled)


def build_session(
    app_name: str,
    master: str | None = "local[2]",
    jars_dir: str | None = None,
    conf: dict[str, str] | None = None,
) -> Any:
    """Create (or return the running) SparkSession with Delta and Kafka ready.

    ``master=None`` leaves the master to spark-submit. A local master gets one shuffle partition
    per core (:func:`local_shuffle_partitions`). ``conf`` overrides both and ``DEFAULT_CONF``.
    The driver JVM runs the Java ``spark_jobs.driver_jvm`` chooses, with the options that Java
    accepts before the driver's own; with a jars directory, its Hadoop client comes first on the
    driver's classpath (before any ``spark.driver.extraClassPath`` of ``conf``). Raises
    JobConfigError for a ``SIGNALLER_SPARK_JAVA_HOME`` that is not a JDK.
    """
    from pyspark.sql import SparkSession

    if master and master.startswith("local"):
        # Python workers (schema inference of schemaless records) run this interpreter, which can
        # import spark_jobs; Spark's default is whatever "python3" is on the PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # The JVM pyspark starts inherits this environment: glibc's malloc keeps one arena per
        # thread (up to 8 x cores), which a JVM with Spark's dozens of threads leaves mostly
        # empty but resident (see MALLOC_ARENA_MAX).
        os.environ.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENA_MAX)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    partitions = local_shuffle_partitions(master) if master else None
    local = {"spark.sql.shuffle.partitions": str(partitions)} if partitions else {}
    settings = {**DEFAULT_CONF, **local, **(conf or {})}
    java_home = driver_jvm.chosen_java_home()
    settings[DRIVER_OPTIONS] = driver_jvm.driver_options(settings[DRIVER_OPTIONS], driver_jvm.java_feature(java_home))
    directory = jars_dir or os.environ.get("SIGNALLER_SPARK_JARS_DIR")
    if directory:
        settings["spark.jars"] = ",".join(local_jars(Path(directory)))
        first = driver_jvm.driver_classpath(Path(directory))
        if first:
            own = settings.get(DRIVER_CLASSPATH)
            settings[DRIVER_CLASSPATH] = os.pathsep.join([first, own]) if own else first
    else:
        settings["spark.jars.packages"] = ",".join(SPARK_PACKAGES)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with driver_jvm.launching_with(java_home):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
