"""The job's MERGE into a table with deletion vectors, written from one join of the target.

Delta 4.4's own MERGE with deletion vectors reads the target three times: it searches for the
touched files, joins the source LEFT OUTER the target in a sort-merge join (every target row
shuffled and sorted) to write the new rows, and reads the touched files again to write their
deletion vectors. Measured on the bench's 100,000-change batches into a 1 M-row table, it was
slower than copy-on-write (``bench/README.md``). :func:`merge_with_deletion_vectors` makes the
same commit from one pass: the target rows inside the batch's key range, each with its file and
row index (``_metadata``), are joined with the batch (broadcast when the batch is small enough),
and from that one materialized join come

- the deletion vectors: every stored row that a newer event updates or deletes is marked deleted
  in its file (Delta's own bitmap writer: ``DeletionVectorBitmapGenerator``), no file rewritten;
- the new rows: updated rows (unchanged-TOAST columns keep the stored value, other stored
  columns the batch does not have keep theirs) and inserted rows (keys the target does not hold,
  not deletes), written by the transaction (``writeFiles``) with their statistics;
- the change data feed, in the same write: ``update_preimage``/``update_postimage``, ``delete``
  and ``insert`` rows, as Delta's MERGE writes them.

It is the sequence-guarded three-clause MERGE of ``spark_jobs.writes`` (delete when matched and
newer; update when matched and newer; insert when not matched and not a delete), with the same
table contents and the same change data feed (tested against it, ``tests/spark``).

The table's files and idempotent-write ids come from Delta's checksum file of the read version
when it lists them (``spark_jobs.checksum_listing``, tables of up to 50 files): the MERGE then starts
without replaying the table's log. Otherwise they come from the table's state, as Delta's do.

The commit is one Delta transaction with the idempotent-write id (``SetTransaction``: the app id,
the batch id): a batch the table already holds for that id is skipped (a replay after a crash),
and a concurrent commit that conflicts with what it read fails it, as it fails Delta's MERGE (the
batch is then retried when the query restarts). History shows a ``MERGE`` with Delta's MERGE
metrics. Call on the driver, inside a batch; it uses Delta's internal Scala API, pinned with the
Delta version in ``spark_jobs.session``.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spark_jobs.checksum_listing import checksum_listing, dataframe, iterate
from spark_jobs.compaction import deleted_share, files_after_commit
from spark_jobs.connect_schema import ColumnSpec, quote

FILE, ROW = "__signaller_dv_file", "__signaller_dv_row"
"""The target row's file (as ``_metadata.file_path`` gives it) and row index in that file."""
STORED = "__signaller_stored_"
"""Prefix of the stored row's columns in the join."""
BROADCAST_ROWS = 250_000
"""Up to this many source rows the batch is broadcast to the target scan (no shuffle of the
target); a larger batch is joined as Spark plans it."""
STATS_PARALLELISM = 8
"""Parallelism Delta uses to read statistics of touched files that have none in the log."""
CHANGE_TYPE = "_change_type"
METRICS = (
    "numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsMatchedUpdated",
    "numTargetRowsNotMatchedBySourceUpdated", "numTargetRowsDeleted", "numTargetRowsMatchedDeleted",
    "numTargetRowsNotMatchedBySourceDeleted", "numTargetRowsCopied", "numTargetBytesAdded",
    "numTargetBytesRemoved", "numOutputRows", "numTargetFilesAdded", "numTargetFilesRemoved",
    "numTargetChangeFilesAdded", "numTargetDeletionVectorsAdded", "numTargetDeletionVectorsRemoved",
    "numTargetDeletionVectorsUpdated", "executionTimeMs", "scanTimeMs", "rewriteTimeMs", "materializeSourceTimeMs",
    "operationNumSourceRows",
)
"""The operation metrics Delta records for a MERGE (``DESCRIBE HISTORY``); Delta's MERGE operation
reads the source's row count from ``operationNumSourceRows``."""

DV_PROPERTY = "delta.enableDeletionVectors"


class Outcome(enum.Enum):
    """What :func:`merge_with_deletion_vectors` did."""

    MERGED = "merged"
    ALREADY_APPLIED = "already applied"  # the table holds the batch id for the app id: nothing written
    NOT_ENABLED = "not enabled"  # the table does not have deletion vectors on: nothing written


@dataclass(frozen=True)
class MergeResult:
    """What :func:`merge_with_deletion_vectors` did, and (``MERGED``) the share of the table's
    stored rows its deletion vectors mark deleted after the commit (None: a file without
    statistics; ``spark_jobs.compaction.deleted_share``)."""

    outcome: Outcome
    deleted_share: float | None = None


Checkpoint = Callable[[Any, bool], Any]
"""Materializes a DataFrame for the rest of the batch (``spark_jobs.batch_cache.BatchCache.checkpoint``)."""


def merge_with_deletion_vectors(
    spark: Any, source: Any, columns: list[ColumnSpec], keys: list[str], meta: tuple[str, ...], path: str,
    app_id: str, batch_id: int, range_predicate: str | None, checkpoint: Checkpoint, use_checksum: bool = True,
) -> MergeResult:
    """MERGE ``source`` (the batch's newest event per key, materialized; ``columns`` and ``meta``)
    into the Delta table at ``path`` as the module docstring says. ``range_predicate``: SQL over the
    key columns every source key satisfies (prunes the target's files), or None. Writes nothing
    when the table already holds ``batch_id`` for ``app_id``, or when its deletion vectors are not
    on (``delta.enableDeletionVectors``: Spark then gives no row indexes; the caller MERGEs).
    ``use_checksum``: take the table's files and write ids from its checksum file where it lists
    them (``spark_jobs.checksum_listing``); False always reads them from the table's state."""
    from pyspark.sql import functions as F

    jvm, jspark = spark._jvm, spark._jsparkSession
    delta = jvm.org.apache.spark.sql.delta
    started = time.monotonic()
    log = delta.DeltaLog.forTable(jspark, path)
    txn = log.startTransaction()
    listed = checksum_listing(txn) if use_checksum else None
    if (listed.applied_version(txn, app_id) if listed else txn.txnVersion(app_id)) >= batch_id:
        return MergeResult(Outcome.ALREADY_APPLIED)
    enabled = txn.metadata().configuration().get(DV_PROPERTY)
    if not enabled.isDefined() or str(enabled.get()).lower() != "true":
        return MergeResult(Outcome.NOT_ENABLED)
    if listed:
        files = listed.read_all(spark, txn)
        target = dataframe(spark, log.createDataFrame(txn.snapshot(), files, False, jvm.scala.Option.empty()))
    else:
        files = txn.filterFiles()
        target = spark.read.format("delta").option("versionAsOf", str(txn.readVersion())).load(path)
    if range_predicate:
        target = target.where(range_predicate)
    stored = list(target.columns)
    scan = target.select(*[F.col(quote(c)).alias(STORED + c) for c in stored],
                         F.col("_metadata.file_path").alias(FILE), F.col("_metadata.row_index").alias(ROW))
    n_source = source.count()
    right = F.broadcast(source) if n_source <= BROADCAST_ROWS else source
    same_key = F.lit(True)
    for k in keys:
        same_key = same_key & F.col(STORED + k).eqNullSafe(F.col(quote(k)))
    matched = checkpoint(scan.join(right, same_key, "inner"), True)
    newer = matched.where(F.col("_cdc_seq") > F.col(STORED + "_cdc_seq"))
    counts = newer.agg(F.count(F.when(F.col("_cdc_op") == "d", 1)).alias("deleted"),
                       F.count(F.when(F.col("_cdc_op") != "d", 1)).alias("updated")).first()
    scanned = time.monotonic()

    generator = delta.commands.DeletionVectorBitmapGenerator
    helper = delta.commands.DMLWithDeletionVectorsHelper
    marked = generator.buildRowIndexSetsForFilesMatchingCondition(
        jspark, txn, True, newer.select(FILE, ROW)._jdf, files,
        jvm.org.apache.spark.sql.catalyst.expressions.Literal.TrueLiteral(),
        jvm.scala.Some(F.col(FILE)._jc), jvm.scala.Some(F.col(ROW)._jc))
    touched = helper.findFilesWithMatchingRows(txn, helper.generateCandidateFileMap(log.dataPath(), files), marked)
    dv_result = helper.processUnmodifiedData(jspark, touched, txn.snapshot(), STATS_PARALLELISM)

    given = {c.name for c in columns} | set(meta)
    toast = {c.name for c in columns if c.toast_test}
    types = {f.name: f.dataType for f in target.schema.fields}

    def updated(c: str) -> Any:  # the MERGE's update clause
        if c in toast:
            kept = F.array_contains(F.col("_cdc_unchanged"), c)
            value = F.when(kept, F.col(STORED + c)).otherwise(F.col(quote(c)))
        else:
            value = F.col(quote(c)) if c in given else F.col(STORED + c)
        return value.cast(types[c]).alias(c)

    def inserted_value(c: str) -> Any:  # the MERGE's insert clause
        return (F.col(quote(c)) if c in given else F.lit(None)).cast(types[c]).alias(c)

    post = newer.where(F.col("_cdc_op") != "d").select(*[updated(c) for c in stored])
    pre = newer.select(*[F.col(STORED + c).alias(c) for c in stored], F.when(
        F.col("_cdc_op") == "d", F.lit("delete")).otherwise(F.lit("update_preimage")).alias(CHANGE_TYPE))
    held = matched.select(*[F.col(STORED + k) for k in keys])
    held_key = F.lit(True)
    for k in keys:
        held_key = held_key & F.col(quote(k)).eqNullSafe(F.col(STORED + k))
    inserted = source.join(held, held_key, "left_anti").where(F.col("_cdc_op") != "d").select(
        *[inserted_value(c) for c in stored])
    no_change = F.lit(None).cast("string").alias(CHANGE_TYPE)
    out = post.select("*", no_change).unionByName(inserted.select("*", no_change))
    if delta.commands.cdc.CDCReader.isCDCEnabledOnTable(txn.metadata(), jspark):
        out = (out.unionByName(post.select("*", F.lit("update_postimage").alias(CHANGE_TYPE)))
               .unionByName(pre).unionByName(inserted.select("*", F.lit("insert").alias(CHANGE_TYPE))))
    else:
        out = out.drop(CHANGE_TYPE)
    written = txn.writeFiles(out._jdf)
    rewritten = time.monotonic()

    written_files = iterate(written)
    data_files = [a for a in written_files if a.getClass().getSimpleName() == "AddFile"]
    change_files = [a for a in written_files if a.getClass().getSimpleName() == "AddCDCFile"]
    rows_out = sum(int(a.numPhysicalRecords().get()) for a in data_files if a.numPhysicalRecords().isDefined())
    dv_metrics = {k: int(v) for k, v in _scala_map(dv_result._2()).items()}
    values = {
        "numSourceRows": n_source, "operationNumSourceRows": n_source,
        "numTargetRowsUpdated": counts.updated, "numTargetRowsMatchedUpdated": counts.updated,
        "numTargetRowsDeleted": counts.deleted, "numTargetRowsMatchedDeleted": counts.deleted,
        "numTargetRowsInserted": rows_out - counts.updated, "numOutputRows": rows_out,
        "numTargetFilesAdded": len(data_files), "numTargetChangeFilesAdded": len(change_files),
        "numTargetFilesRemoved": dv_metrics.get("numRemovedFiles", 0),
        "numTargetBytesAdded": sum(int(a.size()) for a in data_files),
        "numTargetDeletionVectorsAdded": dv_metrics.get("numDeletionVectorsAdded", 0),
        "numTargetDeletionVectorsRemoved": dv_metrics.get("numDeletionVectorsRemoved", 0),
        "numTargetDeletionVectorsUpdated": dv_metrics.get("numDeletionVectorsUpdated", 0),
        "scanTimeMs": int((scanned - started) * 1000), "rewriteTimeMs": int((rewritten - scanned) * 1000),
    }
    values["executionTimeMs"] = int((time.monotonic() - started) * 1000)
    _register_metrics(spark, txn, values)
    actions = jvm.java.util.ArrayList()
    for action in [*iterate(dv_result._1()), *written_files, delta.actions.SetTransaction(
            app_id, batch_id, jvm.scala.Some(jvm.java.lang.Long.valueOf(int(time.time() * 1000))))]:
        actions.add(action)
    python_utils = jvm.org.apache.spark.api.python.PythonUtils
    empty = python_utils.toSeq(jvm.java.util.ArrayList())
    none = jvm.scala.Option.empty()
    operation = delta.DeltaOperations.Merge(none, none, none, none, empty, empty, empty)
    txn.commit(python_utils.toSeq(actions), operation)
    before = iterate(listed.files) if listed else _files_with_row_counts(txn.snapshot())
    committed = [*iterate(dv_result._1()), *data_files]
    after = files_after_commit(
        {str(f.path()): _stored_and_marked(f) for f in before},
        [str(a.path()) for a in committed if a.getClass().getSimpleName() == "RemoveFile"],
        {str(a.path()): _stored_and_marked(a) for a in committed if a.getClass().getSimpleName() == "AddFile"})
    return MergeResult(Outcome.MERGED, deleted_share(after))


def _files_with_row_counts(snapshot: Any) -> list[Any]:
    """The snapshot's ``AddFile`` actions with their row counts: from its checksum file when that
    lists them (Delta does up to 50 files: no Spark job), else from its state (one small job over
    the state the transaction has already read). ``filterFiles`` drops the statistics."""
    checksum = snapshot.checksumOpt()
    if checksum.isDefined() and checksum.get().allFiles().isDefined():
        return iterate(checksum.get().allFiles().get())
    return iterate(snapshot.getAllFiles(True))


def _stored_and_marked(file: Any) -> tuple[int | None, int]:
    """``(stored rows, rows marked deleted)`` of a Delta ``AddFile`` (stored rows None without
    statistics)."""
    rows = file.numPhysicalRecords()
    vector = file.deletionVector()
    return (int(rows.get()) if rows.isDefined() else None, int(vector.cardinality()) if vector else 0)


def _register_metrics(spark: Any, txn: Any, values: dict[str, int]) -> None:
    """Give the transaction Delta's MERGE metrics (:data:`METRICS`, 0 where ``values`` has none)."""
    jvm = spark._jvm
    metrics = jvm.java.util.HashMap()
    for name in METRICS:
        metric = jvm.org.apache.spark.sql.execution.metric.SQLMetrics.createMetric(spark.sparkContext._jsc.sc(), name)
        metric.set(int(values.get(name, 0)))
        metrics.put(name, metric)
    txn.registerSQLMetrics(spark._jsparkSession, jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(metrics))


def _scala_map(scala_map: Any) -> dict[str, Any]:
    """A Scala ``Map[String, _]`` as a dict."""
    return {pair._1(): pair._2() for pair in iterate(scala_map)}
