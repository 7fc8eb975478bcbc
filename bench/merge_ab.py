"""The job's MERGEs side by side: Delta's own MERGE, the job's copy-on-write MERGE, the job's
MERGE with deletion vectors.

Run: ``python -m bench.merge_ab [--changes 100000] [--batches 8] [--modes delta-merge,copy-on-write]``
after one ``make bench`` (it reads the apply section's cached 1,000,000-row table,
``.cache/bench/apply-...``; it never writes to it). Dev-only: not part of ``make bench``'s results
file.

One copy of the table per mode (``deletion-vectors``: with deletion vectors on). Every batch (90 %
updates and deletes of stored keys, drawn at random, 10 % inserts of new keys, tagged ``_dest`` as
the job's split tags them: provably new, folded into the MERGE) goes through
``DeltaWriter.merge`` into each, the order rotating per batch, in one JVM, so the machine's slow
and fast phases hit all. Prints the seconds per MERGE, then checks that every table holds the
same rows and the same change data feed as the first mode's.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from devtools import StackSettings


def _batch(spark: Any, target: Any, columns: list[str], changes: int, rows: int, i: int) -> Any:
    from pyspark.sql import functions as F

    stored = target.select("id").sample(0.09 * changes / 100_000 * 1_000_000 / rows, seed=11 + i)
    stored = stored.limit(changes * 9 // 10).select(
        "id", F.when(F.rand(3) < 1 / 9, F.lit("d")).otherwise(F.lit("u")).alias("_cdc_op"),
        F.lit("merge").alias("_dest"))
    first_new = rows + 10_000_000 + changes // 10 * i
    new = spark.range(first_new, first_new + changes // 10).select("id", F.lit("c").alias("_cdc_op"),
                                                                   F.lit("append").alias("_dest"))
    seq = F.struct(F.lit((1 << 50) + i).cast("bigint").alias("commit_lsn"), F.col("id").alias("lsn"),
                   F.lit(0).cast("bigint").alias("kafka_offset"))
    values = [(F.col("id") % 1000 + i).cast(target.schema[c].dataType).alias(c) for c in columns if c != "id"]
    return stored.unionByName(new).select(
        "id", *values, seq.alias("_cdc_seq"), "_cdc_op", F.lit(1_700_000_000_000).alias("_cdc_ts_ms"),
        F.array().cast("array<string>").alias("_cdc_unchanged"), "_dest").localCheckpoint(eager=True)


MODES = ("delta-merge", "copy-on-write", "scan-first", "deletion-vectors")
"""Delta's own MERGE (``DeltaWriter(delta_merge=True)``), ``spark_jobs.cow_merge``, the same with its
dense road off (``spark_jobs.density``: the touched files always found by a join first),
``spark_jobs.dv_merge``."""


def _same(a: Any, b: Any) -> bool:
    return bool(a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty())


def main(argv: list[str] | None = None) -> int:
    from bench.apply import cached_table_path
    from devtools.spark import jars_dir
    from spark_jobs import density
    from spark_jobs.batch_cache import BatchCache
    from spark_jobs.connect_schema import ColumnSpec
    from spark_jobs.job_config import ApplyJobConfig
    from spark_jobs.session import build_session
    from spark_jobs.writes import DeltaWriter

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=100_000, help="changes per batch (default 100,000)")
    parser.add_argument("--batches", type=int, default=8, help="batches, the first one untimed (default 8)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the cached table (default 1,000,000)")
    parser.add_argument("--modes", default="copy-on-write,deletion-vectors",
                        help=f"comma-separated, of {', '.join(MODES)} (default copy-on-write,deletion-vectors)")
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown or len(modes) < 2:
        parser.error(f"--modes: two or more of {', '.join(MODES)}, got {args.modes!r}")
    settings = StackSettings()
    source, complete = cached_table_path(settings, args.rows)
    if not complete:
        print(f"no cached table at {source}: run `make bench` (its apply section builds it) first", file=sys.stderr)
        return 2
    spark = build_session("merge-ab", master="local[2]", jars_dir=str(jars_dir(settings)),
                          conf={"spark.driver.memory": "1g"})
    work = Path(tempfile.mkdtemp(prefix="merge_ab_"))
    paths = {mode: str(work / mode) for mode in modes}
    for path in paths.values():
        shutil.copytree(source, path)
    if "deletion-vectors" in paths:  # what the job's table set-up does for deletion_vectors: true (spark_jobs.tables)
        spark.sql(f"ALTER TABLE delta.`{paths['deletion-vectors']}` SET TBLPROPERTIES "
                  "(delta.enableDeletionVectors = true)")
    target = spark.read.format("delta").load(str(source))
    columns = [c for c in target.columns if not c.startswith("_cdc")]
    specs = [ColumnSpec(c, target.schema[c].dataType.simpleString(), c, target.schema[c].dataType.simpleString(),
                        c != "id") for c in columns]
    cache = BatchCache()
    writers = {mode: DeltaWriter(ApplyJobConfig(
        bootstrap_servers="unused:9092", target_root=str(work), checkpoint_location=str(work / "cp"), subscribe="x",
        deletion_vectors=mode == "deletion-vectors"), lambda _name: contextlib.nullcontext(), cache.checkpoint,
        delta_merge=mode == "delta-merge") for mode in paths}
    first = {p: int(spark.sql(f"DESCRIBE HISTORY delta.`{p}` LIMIT 1").first().version) + 1 for p in paths.values()}
    seconds: dict[str, list[float]] = {mode: [] for mode in paths}
    dense_waste = density.MAX_WASTE
    try:
        for i in range(args.batches):
            # stored keys drawn from the tables as they are (all alike): no update of a key deleted before
            batch = _batch(spark, spark.read.format("delta").load(paths[modes[0]]), columns, args.changes, args.rows, i)
            low, high = batch.selectExpr("min(id)", "max(id)").first()
            order = modes[i % len(modes):] + modes[:i % len(modes)]
            for mode in order:
                started = time.perf_counter()
                density.MAX_WASTE = -1.0 if mode == "scan-first" else dense_waste
                writers[mode].merge(spark, batch, specs, ["id"], paths[mode], "bench", i, [("id", str(low), str(high))])
                density.MAX_WASTE = dense_waste
                writers[mode].clear_txn(spark)
                cache.release()
                seconds[mode].append(time.perf_counter() - started)
                print(f"batch {i} {mode}: {seconds[mode][-1]:.2f} s", flush=True)
        for mode, values in seconds.items():
            warm = values[1:]
            print(f"{mode}: median {statistics.median(warm):.2f} s per MERGE of {args.changes:,} changes "
                  f"(batches 2-{args.batches}: {', '.join(f'{v:.2f}' for v in sorted(warm))})")
        tables = [spark.read.format("delta").load(p).drop("_metadata") for p in paths.values()]
        feeds = [spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", first[p])
                 .load(p).drop("_commit_version", "_commit_timestamp") for p in paths.values()]
        same = all(_same(tables[0], t) for t in tables[1:])
        same_feed = all(_same(feeds[0], f) for f in feeds[1:])
        for mode, path in paths.items():
            detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
            merges = [r.operationMetrics for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
                      if r.operation == "MERGE" and r.version > first[path]]  # batch 1 not counted
            split = {m: statistics.median(int(r.get(m, 0)) for r in merges)
                     for m in ("scanTimeMs", "rewriteTimeMs", "executionTimeMs")} if merges else {}
            print(f"{mode}: {detail.numFiles} files, {detail.sizeInBytes / 1e6:.1f} MB; "
                  f"median of Delta's MERGE metrics, ms: {split}")
        print(f"same rows: {same}; same change data feed: {same_feed}")
        return 0 if same and same_feed else 1
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
