"""What the job's own MERGEs share: the transaction, the one join with the target, the rows the
MERGE's clauses write, and the commit.

Both MERGEs (``spark_jobs.dv_merge``: deletion vectors, ``spark_jobs.cow_merge``: files rewritten)
write what the sequence-guarded three-clause MERGE of ``spark_jobs.writes`` writes (delete when
matched and newer; update when matched and newer; insert when not matched and not a delete), with
the same change data feed, from one materialized join of the batch with the target rows in the
batch's key range. They differ only in what becomes of the stored rows they replace.

The transaction reads the table's files and idempotent-write ids from the read version's checksum
file where it lists them (``spark_jobs.checksum_listing``), so the MERGE starts without replaying
the table's log. A batch the table already holds for the write id is skipped (a replay after a
crash), and a concurrent commit that conflicts with what the transaction read fails it, as it
fails Delta's MERGE (the batch is retried when the query restarts). Call on the driver, inside a
batch; this uses Delta's internal Scala API, pinned with the Delta version in ``spark_jobs.session``.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from spark_jobs.checksum_listing import ChecksumListing, checksum_listing, dataframe, iterate
from spark_jobs.connect_schema import ColumnSpec, quote
from spark_jobs.key_range import MAPPING_PROPERTY, Bounds, files_in_range, range_sql

FILE, ROW = "__signaller_dv_file", "__signaller_dv_row"
"""The target row's file (as ``_metadata.file_path`` gives it) and row index in that file."""
STORED = "__signaller_stored_"
"""Prefix of the stored row's columns in the join."""
BROADCAST_ROWS = 250_000
"""Up to this many source rows the batch is broadcast to the target scan (no shuffle of the
target); a larger batch is joined as Spark plans it."""
CHANGE_TYPE = "_change_type"
DV_PROPERTY = "delta.enableDeletionVectors"
"""The table property that turns a table's deletion vectors on."""
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


class Outcome(enum.Enum):
    """What one of the job's MERGEs did."""

    MERGED = "merged"
    ALREADY_APPLIED = "already applied"  # the table holds the batch id for the app id: nothing written
    NOT_ENABLED = "not enabled"  # the table does not have deletion vectors on: nothing written
    NOT_TAKEN = "not taken"  # the table is outside what this MERGE writes: nothing written, Delta's MERGE it


@dataclass(frozen=True)
class MergeResult:
    """What a MERGE did, and (``MERGED``, deletion vectors) the share of the table's stored rows
    marked deleted after the commit (None: not counted, or a file without statistics;
    ``spark_jobs.compaction.deleted_share``). ``unstored_upserts``: the copy-on-write MERGE took a
    batch as dense (``spark_jobs.density``) and then found upserts of keys inside the range that
    the table does not hold, which cost it the join it skips."""

    outcome: Outcome
    deleted_share: float | None = None
    unstored_upserts: bool = False


Checkpoint = Callable[[Any, bool], Any]
"""Materializes a DataFrame for the rest of the batch (``spark_jobs.batch_cache.BatchCache.checkpoint``)."""


@dataclass(frozen=True)
class OpenMerge:
    """A MERGE's transaction: the table's log, the transaction, the read version's checksum
    listing (None: the checksum does not list the files or write ids, or it was not asked for) and
    when the MERGE started (``time.monotonic``)."""

    log: Any
    txn: Any
    listed: ChecksumListing | None
    started: float

    def option(self, name: str) -> str | None:
        """The table property ``name`` of the read version, None if it is not set."""
        value = self.txn.metadata().configuration().get(name)
        return str(value.get()) if value.isDefined() else None


def open_merge(spark: Any, path: str, app_id: str, batch_id: int, use_checksum: bool) -> OpenMerge | None:
    """Start the MERGE's transaction on the Delta table at ``path``; None when the table already
    holds ``batch_id`` for ``app_id`` (nothing to write). ``use_checksum``: take the files and write
    ids from the checksum file where it lists them; False: from the table's state."""
    started = time.monotonic()
    log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    txn = log.startTransaction()
    listed = checksum_listing(txn) if use_checksum else None
    if (listed.applied_version(txn, app_id) if listed else txn.txnVersion(app_id)) >= batch_id:
        return None
    return OpenMerge(log, txn, listed, started)


def listed_files_in_range(spark: Any, merge: OpenMerge, bounds: Bounds | None) -> Any:
    """The files of the checksum listing (``merge.listed``, which must be set) that may hold keys
    inside ``bounds`` (``spark_jobs.key_range.files_in_range``; all of them without bounds), as a
    Scala ``Seq[AddFile]``. Every file is recorded as read (``ChecksumListing.read_all``)."""
    assert merge.listed is not None
    files = merge.listed.read_all(spark, merge.txn)
    if not bounds:
        return files
    kept = files_in_range(iterate(files), bounds, merge.option(MAPPING_PROPERTY))
    return scala_seq(spark, kept)


def scala_seq(spark: Any, items: list[Any]) -> Any:
    """``items`` (JVM objects) as a Scala ``Seq``."""
    out = spark._jvm.java.util.ArrayList()
    for item in items:
        out.add(item)
    return spark._jvm.org.apache.spark.api.python.PythonUtils.toSeq(out)


def same_key(keys: list[str]) -> Any:
    """The join condition of a stored row (its key columns prefixed :data:`STORED`) and a row of
    the same key (the batch's, or the target's).

    Plain equality, although Delta's MERGE condition is null-safe (``<=>``): every join here has a
    side whose keys are never null (the batch's good events: a null key is a dead letter; stored
    rows that matched one), and against a non-null key both conditions match the same rows. The
    plain form lets Spark build a broadcast join on one integral key as a ``LongHashedRelation``:
    ``<=>`` becomes two join keys (``coalesce(k, 0)``, ``isnull(k)``) in a generic
    ``UnsafeHashedRelation``, whose look-ups took ~12 % of the JVM's samples (JFR) in 100,000-change
    batches into the bench's table."""
    from pyspark.sql import functions as F

    condition = F.lit(True)
    for k in keys:
        condition = condition & (F.col(STORED + k) == F.col(quote(k)))
    return condition


def files_dataframe(spark: Any, merge: OpenMerge, files: Any) -> Any:
    """The rows of ``files`` (a Scala ``Seq[AddFile]`` of the read version), deletion vectors
    applied, as a DataFrame."""
    return dataframe(spark, merge.log.createDataFrame(merge.txn.snapshot(), files, False,
                                                      spark._jvm.scala.Option.empty()))


def stored_join(
    spark: Any, merge: OpenMerge, target: Any, source: Any, n_source: int, keys: list[str],
    bounds: Bounds | None, checkpoint: Checkpoint, row_index: bool = True, narrow: bool = False,
) -> Any:
    """The target rows (``target``, within ``bounds``) whose key is in ``source``, joined
    with their source row, materialized: the stored columns prefixed :data:`STORED`, each row's
    file (:data:`FILE`) and, with ``row_index`` (Delta gives it for tables with deletion vectors
    on), its row index (:data:`ROW`), then the source's columns. ``narrow``: of the stored
    columns and the source's only the keys and ``_cdc_seq`` (and the source's ``_cdc_op``): enough
    for :func:`replaced_counts` and the keys held, and Parquet reads the other columns not at all."""
    from pyspark.sql import functions as F

    if bounds:
        target = target.where(range_sql(None, bounds))
    read = [*keys, "_cdc_seq"] if narrow else target.columns
    scan = target.select(*[F.col(quote(c)).alias(STORED + c) for c in read],
                         F.col("_metadata.file_path").alias(FILE),
                         *([F.col("_metadata.row_index").alias(ROW)] if row_index else []))
    if narrow:
        source = source.select(*[quote(k) for k in keys], "_cdc_seq", "_cdc_op")
    right = F.broadcast(source) if n_source <= BROADCAST_ROWS else source
    return checkpoint(scan.join(right, same_key(keys), "inner"), True)


def newer_rows(matched: Any) -> Any:
    """The rows of :func:`stored_join` whose source event is newer than the stored row: the
    stored rows the MERGE replaces (updates and deletes)."""
    from pyspark.sql import functions as F

    return matched.where(F.col("_cdc_seq") > F.col(STORED + "_cdc_seq"))


@dataclass(frozen=True)
class ClauseRows:
    """The rows the MERGE's clauses write, in the target's columns: ``post`` (updated rows),
    ``pre`` (the stored rows replaced, with :data:`CHANGE_TYPE` ``delete`` or ``update_preimage``)
    and ``inserted`` (keys the target does not hold, not deletes)."""

    post: Any
    pre: Any
    inserted: Any

    def written(self, spark: Any, merge: OpenMerge, partitions: int | None = None) -> Any:
        """The data rows (``post`` and ``inserted``) and, when the table has its change data feed
        on, the feed's rows, as one DataFrame: with the feed, a :data:`CHANGE_TYPE` column (null for
        data rows; Delta's ``writeFiles`` writes the others to change files), else the target's
        columns only. ``partitions``: coalesced to that many."""
        from pyspark.sql import functions as F

        no_change = F.lit(None).cast("string").alias(CHANGE_TYPE)
        out = self.post.select("*", no_change).unionByName(self.inserted.select("*", no_change))
        if feed_enabled(spark, merge):
            out = (out.unionByName(self.post.select("*", F.lit("update_postimage").alias(CHANGE_TYPE)))
                   .unionByName(self.pre).unionByName(self.inserted.select("*", F.lit("insert").alias(CHANGE_TYPE))))
        else:
            out = out.drop(CHANGE_TYPE)
        return out.coalesce(partitions) if partitions else out


def feed_enabled(spark: Any, merge: OpenMerge) -> bool:
    """Whether the table has its change data feed on."""
    cdc = spark._jvm.org.apache.spark.sql.delta.commands.cdc.CDCReader
    return bool(cdc.isCDCEnabledOnTable(merge.txn.metadata(), spark._jsparkSession))


def clause_rows(
    source: Any, matched: Any, stored: list[str], types: dict[str, Any], columns: list[ColumnSpec],
    keys: list[str], meta: tuple[str, ...],
) -> ClauseRows:
    """The :class:`ClauseRows` of ``source`` (the batch's newest event per key; ``columns`` and
    ``meta``) against ``matched`` (:func:`stored_join`), in the target's columns ``stored`` of
    ``types``. Updated rows keep the stored value of an unchanged-TOAST column and of every stored
    column the batch does not have; inserted rows get null for those."""
    from pyspark.sql import functions as F

    updated = update_clause(stored, types, columns, meta)
    newer = newer_rows(matched)
    post = newer.where(F.col("_cdc_op") != "d").select(*[updated[c].alias(c) for c in stored])
    pre = newer.select(*[F.col(STORED + c).alias(c) for c in stored], F.when(
        F.col("_cdc_op") == "d", F.lit("delete")).otherwise(F.lit("update_preimage")).alias(CHANGE_TYPE))
    return ClauseRows(post, pre, inserted_rows(source, matched, stored, types, columns, keys, meta))


def update_clause(
    stored: list[str], types: dict[str, Any], columns: list[ColumnSpec], meta: tuple[str, ...],
) -> dict[str, Any]:
    """The MERGE's update clause: each stored column's new value (unaliased, cast to ``types``) in
    a row of a stored row (columns prefixed :data:`STORED`) and its source event (``columns`` and
    ``meta``): the event's value, but the stored one for an unchanged-TOAST column and for a
    stored column the batch does not have."""
    from pyspark.sql import functions as F

    given = {c.name for c in columns} | set(meta)
    toast = {c.name for c in columns if c.toast_test}

    def updated(c: str) -> Any:
        if c in toast:
            kept = F.array_contains(F.col("_cdc_unchanged"), c)
            value = F.when(kept, F.col(STORED + c)).otherwise(F.col(quote(c)))
        else:
            value = F.col(quote(c)) if c in given else F.col(STORED + c)
        return value.cast(types[c])

    return {c: updated(c) for c in stored}


def inserted_rows(
    source: Any, matched: Any, stored: list[str], types: dict[str, Any], columns: list[ColumnSpec], keys: list[str],
    meta: tuple[str, ...],
) -> Any:
    """The MERGE's insert clause: the events of ``source`` whose key ``matched``
    (:func:`stored_join`, narrow or not) does not hold, deletes left out, in the target's columns
    ``stored`` of ``types`` (null for a column the batch does not have)."""
    from pyspark.sql import functions as F

    held = matched.select(*[F.col(STORED + k) for k in keys])
    return as_inserted(source.join(held, same_key(keys), "left_anti").where(F.col("_cdc_op") != "d"), stored, types,
                       columns, meta)


def as_inserted(
    rows: Any, stored: list[str], types: dict[str, Any], columns: list[ColumnSpec], meta: tuple[str, ...],
) -> Any:
    """``rows`` (events of ``columns`` and ``meta``) as the insert clause writes them: in the target's
    columns ``stored`` of ``types``, null for a column the batch does not have."""
    from pyspark.sql import functions as F

    given = {c.name for c in columns} | set(meta)
    return rows.select(*[(F.col(quote(c)) if c in given else F.lit(None)).cast(types[c]).alias(c) for c in stored])


def replaced_counts(matched: Any) -> Any:
    """One row: ``deleted`` and ``updated``, how many stored rows newer events delete and update,
    and ``files``, the files (:data:`FILE`) that hold them."""
    from pyspark.sql import functions as F

    return newer_rows(matched).agg(
        F.count(F.when(F.col("_cdc_op") == "d", 1)).alias("deleted"),
        F.count(F.when(F.col("_cdc_op") != "d", 1)).alias("updated"),
        F.collect_set(FILE).alias("files")).first()


def split_written(written: Any) -> tuple[list[Any], list[Any], list[Any]]:
    """The actions ``writeFiles`` returned: all of them, the data files (``AddFile``), the change
    files (``AddCDCFile``)."""
    actions = iterate(written)
    return actions, of_kind(actions, "AddFile"), of_kind(actions, "AddCDCFile")


def of_kind(actions: list[Any], kind: str) -> list[Any]:
    """The Delta actions of ``actions`` whose class is ``kind`` (``AddFile``, ``AddCDCFile``, ...)."""
    return [a for a in actions if a.getClass().getSimpleName() == kind]


def rows_in(files: list[Any]) -> int:
    """The rows the data files ``files`` hold (their statistics; 0 for a file without)."""
    return sum(int(a.numPhysicalRecords().get()) for a in files if a.numPhysicalRecords().isDefined())


def commit_merge(
    spark: Any, merge: OpenMerge, actions: list[Any], values: dict[str, int], app_id: str, batch_id: int,
) -> None:
    """Commit ``actions`` with the idempotent-write id (``app_id``, ``batch_id``) as a ``MERGE``
    whose history carries Delta's MERGE metrics (``values``; ``executionTimeMs`` set here)."""
    jvm = spark._jvm
    delta = jvm.org.apache.spark.sql.delta
    values = {**values, "executionTimeMs": int((time.monotonic() - merge.started) * 1000)}
    metrics = jvm.java.util.HashMap()
    for name in METRICS:
        metric = jvm.org.apache.spark.sql.execution.metric.SQLMetrics.createMetric(spark.sparkContext._jsc.sc(), name)
        metric.set(int(values.get(name, 0)))
        metrics.put(name, metric)
    python_utils = jvm.org.apache.spark.api.python.PythonUtils
    merge.txn.registerSQLMetrics(spark._jsparkSession, python_utils.toScalaMap(metrics))
    committed = jvm.java.util.ArrayList()
    for action in [*actions, delta.actions.SetTransaction(
            app_id, batch_id, jvm.scala.Some(jvm.java.lang.Long.valueOf(int(time.time() * 1000))))]:
        committed.add(action)
    empty = python_utils.toSeq(jvm.java.util.ArrayList())
    none = jvm.scala.Option.empty()
    merge.txn.commit(python_utils.toSeq(committed), delta.DeltaOperations.Merge(none, none, none, none, empty, empty,
                                                                                 empty))
