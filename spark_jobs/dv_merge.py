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

The transaction, the join and the commit are ``spark_jobs.merge_parts``'s (the table's files and
write ids from its checksum file where it lists them, else from its state; one commit with the
idempotent-write id). History shows a ``MERGE`` with Delta's MERGE metrics. Call on the driver,
inside a batch; it uses Delta's internal Scala API, pinned with the Delta version in
``spark_jobs.session``.
"""

from __future__ import annotations

import time
from typing import Any

from spark_jobs.checksum_listing import iterate
from spark_jobs.compaction import deleted_share, files_after_commit
from spark_jobs.connect_schema import ColumnSpec
from spark_jobs.key_range import Bounds
from spark_jobs.merge_parts import (
    DV_PROPERTY,
    FILE,
    ROW,
    Checkpoint,
    MergeResult,
    Outcome,
    clause_rows,
    commit_merge,
    files_dataframe,
    listed_files_in_range,
    newer_rows,
    open_merge,
    replaced_counts,
    rows_in,
    split_written,
    stored_join,
)

__all__ = ["Checkpoint", "MergeResult", "Outcome", "merge_with_deletion_vectors"]

STATS_PARALLELISM = 8
"""Parallelism Delta uses to read statistics of touched files that have none in the log."""


def merge_with_deletion_vectors(
    spark: Any, source: Any, columns: list[ColumnSpec], keys: list[str], meta: tuple[str, ...], path: str,
    app_id: str, batch_id: int, bounds: Bounds | None, checkpoint: Checkpoint, use_checksum: bool = True,
    source_rows: int | None = None,
) -> MergeResult:
    """MERGE ``source`` (the batch's newest event per key, materialized; ``columns`` and ``meta``)
    into the Delta table at ``path`` as the module docstring says. ``bounds``: the key range every
    source key lies in (``spark_jobs.key_range``: prunes the target's files), or None. Writes nothing
    when the table already holds ``batch_id`` for ``app_id``, or when its deletion vectors are not
    on (``delta.enableDeletionVectors``: Spark then gives no row indexes; the caller MERGEs).
    ``use_checksum``: take the table's files and write ids from its checksum file where it lists
    them (``spark_jobs.checksum_listing``); False always reads them from the table's state.
    ``source_rows``: ``source``'s row count if the caller knows it (else counted here: a Spark job)."""
    from pyspark.sql import functions as F

    jvm, jspark = spark._jvm, spark._jsparkSession
    delta = jvm.org.apache.spark.sql.delta
    merge = open_merge(spark, path, app_id, batch_id, use_checksum)
    if merge is None:
        return MergeResult(Outcome.ALREADY_APPLIED)
    if (merge.option(DV_PROPERTY) or "").lower() != "true":
        return MergeResult(Outcome.NOT_ENABLED)
    log, txn, listed = merge.log, merge.txn, merge.listed
    if listed:
        files = listed_files_in_range(spark, merge, bounds)
        target = files_dataframe(spark, merge, files)
    else:
        files = txn.filterFiles()
        target = spark.read.format("delta").option("versionAsOf", str(txn.readVersion())).load(path)
    stored = list(target.columns)
    types = {f.name: f.dataType for f in target.schema.fields}
    n_source = source.count() if source_rows is None else source_rows
    matched = stored_join(spark, merge, target, source, n_source, keys, bounds, checkpoint)
    counts = replaced_counts(matched)
    scanned = time.monotonic()

    generator = delta.commands.DeletionVectorBitmapGenerator
    helper = delta.commands.DMLWithDeletionVectorsHelper
    marked = generator.buildRowIndexSetsForFilesMatchingCondition(
        jspark, txn, True, newer_rows(matched).select(FILE, ROW)._jdf, files,
        jvm.org.apache.spark.sql.catalyst.expressions.Literal.TrueLiteral(),
        jvm.scala.Some(F.col(FILE)._jc), jvm.scala.Some(F.col(ROW)._jc))
    touched = helper.findFilesWithMatchingRows(txn, helper.generateCandidateFileMap(log.dataPath(), files), marked)
    dv_result = helper.processUnmodifiedData(jspark, touched, txn.snapshot(), STATS_PARALLELISM)

    rows = clause_rows(source, matched, stored, types, columns, keys, meta)
    written_files, data_files, change_files = split_written(txn.writeFiles(rows.written(spark, merge)._jdf))
    rewritten = time.monotonic()

    rows_out = rows_in(data_files)
    dv_metrics = {pair._1(): int(pair._2()) for pair in iterate(dv_result._2())}
    dv_actions = iterate(dv_result._1())
    commit_merge(spark, merge, [*dv_actions, *written_files], {
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
        "scanTimeMs": int((scanned - merge.started) * 1000), "rewriteTimeMs": int((rewritten - scanned) * 1000),
    }, app_id, batch_id)
    before = iterate(listed.files) if listed else _files_with_row_counts(txn.snapshot())
    committed = [*dv_actions, *data_files]
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
