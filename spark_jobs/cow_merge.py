"""The job's MERGE into a copy-on-write table (deletion vectors off), in a transaction of its own.

Delta's own MERGE asks the table's state for the files and the write id, and for a version this
process has not read yet that is a replay of the table's log in Spark jobs (~0.4-0.7 s on the
bench's table): every batch paid it, since every batch commits a new version. Here the files and
write id come from the read version's checksum file (``spark_jobs.checksum_listing``), and the
commit is written from

- one materialized join of the batch with the target rows in its key range
  (``spark_jobs.merge_parts.stored_join``): it finds the stored rows newer events replace and the
  files holding them (the touched files). For a batch small enough to broadcast
  (``merge_parts.BROADCAST_ROWS``) it reads the keys and ``_cdc_seq`` only;
- the touched files read again, each row joined with its key's event (the batch, broadcast):
  replaced rows become their update (or nothing, for a delete), the others are copied, and with
  the change data feed on a replaced row also gives its feed rows (``update_preimage``/
  ``update_postimage``, ``delete``; copied rows are no change), all in that one read. The
  inserted rows (and their ``insert`` feed rows) are written with them. A larger batch is not
  broadcast: the first join keeps the whole stored rows it matched (the updates and feed rows come
  from it) and the touched files are read again without the replaced rows;
- the touched files removed in the same commit.

A batch *dense* over the files in its key range (``spark_jobs.density``: one small job counts the
batch's keys inside each file's key statistics; rewriting every file would rewrite at most 2 % of
their rows for nothing) skips the first join: every one of those files whose key range holds a key
of the batch is rewritten as above (the others cannot hold a row it replaces, and stay), and
what the MERGE replaced is counted while it writes (an ``Observation`` on the join: stored rows,
rows updated and deleted, rows an upsert matched). The batch's provably new rows (``_dest``
``append``, folded into the MERGE) are inserted as they are; only when the batch's other upserts
outnumber the stored rows they matched (keys inside the range that are not stored) does the first
join run after all, to find those and insert them in the same commit; the caller then keeps the
first join for the table's next batches (``spark_jobs.writes``), since such keys tend to recur
(keys not assigned in order, re-inserted keys). ``python -m bench.merge_ab --modes
copy-on-write,scan-first`` (one JVM, alternating, the bench's 1 M-row table): median MERGE 2.43 s
against 2.94 s per 100,000-change batch of stored keys (scan 208 against 601 ms, rewrite the
same: the observation costs nothing measurable, 1.635 s median write with and without it), and
3.09 s against 2.82 s when every batch also upserted thousands of keys deleted before (the dense
road taken every batch, before the caller's join-first rule).

Measured against the road of a larger batch on 100,000-change batches into the bench's table
(alternating runs of the dev harness): the narrow first join is ~70 ms shorter, and the one read's
left join and ``explode`` cost what the second read did; the batch is no faster beyond the noise,
but an update no longer adds a small file.

That is what Delta's copy-on-write MERGE commits (the sequence-guarded three-clause MERGE of
``spark_jobs.writes``, tested against it in ``tests/spark``); the inserted rows (and, for a batch
not broadcast, the updates and feed rows) go to one file per :data:`SMALL_ROWS_PER_FILE` rows, the
rewritten rows keep the scan's split.

It declines (``NOT_TAKEN``, nothing written; the caller runs Delta's MERGE) a table whose checksum
does not list its files (more than 50, a writer that writes no checksum: the state must be read
anyway) and a table with deletion vectors on (Delta's MERGE marks rows there, and so does
``spark_jobs.dv_merge``). Call on the driver, inside a batch; it uses Delta's internal Scala API,
pinned with the Delta version in ``spark_jobs.session``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from spark_jobs import density
from spark_jobs.checksum_listing import iterate
from spark_jobs.connect_schema import ColumnSpec, quote
from spark_jobs.key_range import MAPPING_PROPERTY, Bounds
from spark_jobs.merge_parts import (
    BROADCAST_ROWS,
    CHANGE_TYPE,
    DV_PROPERTY,
    STORED,
    Checkpoint,
    MergeResult,
    OpenMerge,
    Outcome,
    as_inserted,
    clause_rows,
    commit_merge,
    feed_enabled,
    files_dataframe,
    inserted_rows,
    listed_files_in_range,
    newer_rows,
    of_kind,
    open_merge,
    replaced_counts,
    rows_in,
    same_key,
    scala_seq,
    split_written,
    stored_join,
    update_clause,
)

SMALL_ROWS_PER_FILE = 250_000
"""The MERGE's own rows (inserted; for a batch not broadcast, updated and change data feed too) go
to one file per this many source rows: a batch adds one small file to the table, not one per split
of the scan."""


def merge_by_rewrite(
    spark: Any, source: Any, columns: list[ColumnSpec], keys: list[str], meta: tuple[str, ...], path: str,
    app_id: str, batch_id: int, bounds: Bounds | None, checkpoint: Checkpoint, source_rows: int | None = None,
    dense: bool = True,
) -> MergeResult:
    """MERGE ``source`` (the batch's newest event per key, materialized; ``columns`` and ``meta``)
    into the Delta table at ``path`` as the module docstring says. ``bounds``: the key range every
    source key lies in (``spark_jobs.key_range``: the files outside it are not read), or None.
    Writes nothing when the table already holds ``batch_id`` for ``app_id`` (``ALREADY_APPLIED``)
    or when it declines (``NOT_TAKEN``). ``source_rows``: ``source``'s row count if the caller knows it
    (else counted here: a Spark job). ``dense``: False keeps the first join even for a dense batch
    (see ``MergeResult.unstored_upserts``)."""
    from pyspark.sql import functions as F

    merge = open_merge(spark, path, app_id, batch_id, True)
    if merge is None:
        return MergeResult(Outcome.ALREADY_APPLIED)
    if merge.listed is None or (merge.option(DV_PROPERTY) or "").lower() == "true":
        return MergeResult(Outcome.NOT_TAKEN)
    files = listed_files_in_range(spark, merge, bounds)
    target = files_dataframe(spark, merge, files)
    stored = list(target.columns)
    types = {f.name: f.dataType for f in target.schema.fields}
    n_source = source.count() if source_rows is None else source_rows
    one_read = n_source <= BROADCAST_ROWS
    plan = _dense_plan(merge, files, source, n_source, keys, types) if one_read and dense else None
    if plan is not None:
        return _rewrite_every_file(spark, merge, plan, source, n_source, stored, types, columns, keys, meta, bounds,
                                   checkpoint, app_id, batch_id)
    matched = stored_join(spark, merge, target, source, n_source, keys, bounds, checkpoint, False, narrow=one_read)
    counts = replaced_counts(matched)
    scanned = time.monotonic()

    by_path = spark._jvm.org.apache.spark.sql.delta.commands.DMLWithDeletionVectorsHelper.generateCandidateFileMap(
        merge.log.dataPath(), files)
    touched = [by_path.apply(p) for p in counts.files]
    small_parts = max(1, -(-n_source // SMALL_ROWS_PER_FILE))
    if one_read:
        feed = feed_enabled(spark, merge)
        inserted = inserted_rows(source, matched, stored, types, columns, keys, meta)
        out = _inserted_written(inserted, feed, small_parts)
        if touched:
            out = _touched_rewritten(spark, merge, touched, source, stored, types, columns, keys, meta,
                                     feed).unionByName(out)
    else:
        rows = clause_rows(source, matched, stored, types, columns, keys, meta)
        inserted = rows.inserted
        out = rows.written(spark, merge, small_parts)
        if touched:
            copied = _copied_rows(spark, merge, touched, newer_rows(matched), keys).select(*[quote(c) for c in stored])
            if CHANGE_TYPE in out.columns:
                copied = copied.select("*", F.lit(None).cast("string").alias(CHANGE_TYPE))
            out = copied.unionByName(out)
    written_files, data_files, _ = split_written(merge.txn.writeFiles(out._jdf))
    rewritten = time.monotonic()

    live = [f.numLogicalRecords() for f in touched]
    n_copied = (sum(int(n.get()) for n in live) - counts.updated - counts.deleted
                if all(n.isDefined() for n in live) else None)
    n_inserted = inserted.count() if n_copied is None else rows_in(data_files) - counts.updated - n_copied
    _commit(spark, merge, touched, written_files, n_source, counts.updated, counts.deleted, n_inserted,
            (scanned, rewritten), app_id, batch_id)
    return MergeResult(Outcome.MERGED)


def _commit(
    spark: Any, merge: OpenMerge, touched: list[Any], written: list[Any], n_source: int, updated: int, deleted: int,
    inserted: int, clock: tuple[float, float], app_id: str, batch_id: int,
) -> None:
    """Commit the rewrite: the ``touched`` files (``AddFile``s) removed, the ``written`` actions
    added, with Delta's MERGE metrics (``clock``: when the scan and the rewrite ended)."""
    data_files, change_files = of_kind(written, "AddFile"), of_kind(written, "AddCDCFile")
    now_ms = int(time.time() * 1000)
    removed = [f.removeWithTimestamp(now_ms, True) for f in touched]
    rows_out = rows_in(data_files)
    scanned, rewritten = clock
    commit_merge(spark, merge, [*removed, *written], {
        "numSourceRows": n_source, "operationNumSourceRows": n_source,
        "numTargetRowsUpdated": updated, "numTargetRowsMatchedUpdated": updated,
        "numTargetRowsDeleted": deleted, "numTargetRowsMatchedDeleted": deleted,
        "numTargetRowsInserted": inserted, "numOutputRows": rows_out,
        "numTargetRowsCopied": rows_out - updated - inserted,
        "numTargetFilesAdded": len(data_files), "numTargetChangeFilesAdded": len(change_files),
        "numTargetFilesRemoved": len(touched),
        "numTargetBytesAdded": sum(int(a.size()) for a in data_files),
        "numTargetBytesRemoved": sum(int(f.size()) for f in touched),
        "scanTimeMs": int((scanned - merge.started) * 1000), "rewriteTimeMs": int((rewritten - scanned) * 1000),
    }, app_id, batch_id)


@dataclass(frozen=True)
class _Dense:
    """A batch dense over its files (``spark_jobs.density``): the ``files`` (``AddFile``s) to
    rewrite and the rows they hold (``stored_rows``), and of the batch's rows ``upserts`` (not
    deletes, not known new: they insert where no stored row matches) and ``new`` (``_dest``
    ``append``: keys provably not stored)."""

    files: list[Any]
    stored_rows: int
    upserts: int
    new: int


def _dense_plan(
    merge: OpenMerge, files: Any, source: Any, n_source: int, keys: list[str], types: dict[str, Any],
) -> _Dense | None:
    """The rewrite of every file of ``files`` (a Scala ``Seq[AddFile]``) whose key range holds a key of
    ``source`` (``n_source`` rows) when ``source`` is dense over those (``spark_jobs.density``; one
    Spark job over the batch, none when the files' statistics alone rule it out), else None: also
    when no file's range holds a key, and for a table whose statistics use physical names (column
    mapping) or lack a key column's range."""
    from pyspark.sql import functions as F

    column = density.estimate_column(keys, {name: t.typeName() for name, t in types.items()})
    if column is None or (merge.option(MAPPING_PROPERTY) or "none") != "none":
        return None
    listed = iterate(files)
    ranges = density.file_ranges([f.stats() for f in listed], column)
    if not ranges or not density.dense(ranges, [n_source] * len(ranges)):  # not even if every key were in each
        return None
    merged = F.col("_dest") == "merge" if "_dest" in source.columns else F.lit(True)
    row = source.agg(F.count(F.when(merged & (F.col("_cdc_op") != "d"), 1)), F.count(F.when(~merged, 1)),
                     *density.in_range_counts(column, ranges, merged)).first()
    # a file whose key range holds none of the batch's keys cannot hold a row the batch replaces:
    # it stays, whatever the rest (the batch's key range, rounded outward, selects such neighbours)
    reached = [(f, r, int(n)) for f, r, n in zip(listed, ranges, row[2:], strict=True) if n]
    if not reached or not density.dense([r for _, r, _ in reached], [n for _, _, n in reached]):
        return None
    return _Dense([f for f, _, _ in reached], sum(r.rows for _, r, _ in reached), int(row[0]), int(row[1]))


def _rewrite_every_file(
    spark: Any, merge: OpenMerge, plan: _Dense, source: Any, n_source: int, stored: list[str], types: dict[str, Any],
    columns: list[ColumnSpec], keys: list[str], meta: tuple[str, ...], bounds: Bounds | None,
    checkpoint: Checkpoint, app_id: str, batch_id: int,
) -> MergeResult:
    """The MERGE of a dense batch (:func:`_dense_plan`): every planned file rewritten in one read
    joined with the batch (:func:`_touched_rewritten`), the provably new rows written beside them,
    what it replaced counted as it writes (an ``Observation``). Only when the batch's upserts
    outnumber the stored rows they matched (keys inside the range that are not stored) are those
    found by joining the batch with the target's keys, and inserted in the same commit."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    feed = feed_enabled(spark, merge)
    scanned = time.monotonic()
    merging = source.where(F.col("_dest") == "merge") if "_dest" in source.columns else source
    observation = Observation(f"signaller_rewrite_{batch_id}_{time.monotonic_ns()}")
    out = _touched_rewritten(spark, merge, plan.files, merging, stored, types, columns, keys, meta, feed, observation)
    parts = max(1, -(-n_source // SMALL_ROWS_PER_FILE))
    if plan.new:
        known = as_inserted(source.where(F.col("_dest") == "append"), stored, types, columns, meta)
        out = out.unionByName(_inserted_written(known, feed, parts))
    written = iterate(merge.txn.writeFiles(out._jdf))

    def key_join() -> Any:  # the first join, after all
        return stored_join(spark, merge, files_dataframe(spark, merge, scala_seq(spark, plan.files)), merging,
                           n_source, keys, bounds, checkpoint, False, narrow=True)

    matched = None
    seen = _observed(observation)
    if seen is None:  # not reported (not seen here): counted from the target's keys instead
        matched = key_join()
        counts = replaced_counts(matched)
        seen = {"updated": counts.updated, "deleted": counts.deleted,
                "matched_upserts": matched.where(F.col("_cdc_op") != "d").count()}
    unstored = plan.upserts != seen["matched_upserts"]
    if unstored:  # upserts of keys not stored: the insert clause
        inserted = inserted_rows(merging, key_join() if matched is None else matched, stored, types, columns, keys,
                                 meta)
        written += iterate(merge.txn.writeFiles(_inserted_written(inserted, feed, parts)._jdf))
    rewritten = time.monotonic()
    updated, deleted = int(seen["updated"]), int(seen["deleted"])
    kept = plan.stored_rows - updated - deleted
    data_rows = rows_in(of_kind(written, "AddFile"))
    _commit(spark, merge, plan.files, written, n_source, updated, deleted, data_rows - updated - kept,
            (scanned, rewritten), app_id, batch_id)
    return MergeResult(Outcome.MERGED, unstored_upserts=unstored)


OBSERVED_WAIT_S = 30.0
"""How long :func:`_observed` waits for Spark to report an observation after its write returned."""


def _observed(observation: Any, wait_s: float = OBSERVED_WAIT_S) -> dict[str, Any] | None:
    """The metrics of ``observation`` (attached to a DataFrame whose write has returned), or None
    if Spark has not reported them within ``wait_s`` (the caller counts otherwise; never blocks
    for good, as ``Observation.get`` would)."""
    deadline = time.monotonic() + wait_s
    while not observation._jo.future().isCompleted():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)
    return dict(observation.get)


def _copied_rows(spark: Any, merge: OpenMerge, touched: list[Any], newer: Any, keys: list[str]) -> Any:
    """The rows of the ``touched`` files (``AddFile``s) that no row of ``newer`` (the stored rows the
    batch replaces, :func:`spark_jobs.merge_parts.newer_rows`) replaces."""
    from pyspark.sql import functions as F

    rows = files_dataframe(spark, merge, scala_seq(spark, touched))
    replaced = F.broadcast(newer.select(*[F.col(STORED + k) for k in keys]))
    return rows.join(replaced, same_key(keys), "left_anti")


def _touched_rewritten(
    spark: Any, merge: OpenMerge, touched: list[Any], source: Any, stored: list[str], types: dict[str, Any],
    columns: list[ColumnSpec], keys: list[str], meta: tuple[str, ...], feed: bool, observation: Any = None,
) -> Any:
    """The rows the ``touched`` files (``AddFile``s) hold after the MERGE, from one read of them,
    each row joined with its key's event in ``source`` (broadcast): a row a newer event replaces
    becomes its update (nothing, for a delete), any other is copied. With the change data
    ``feed``, a replaced row also gives its preimage (``delete`` or ``update_preimage``) and an
    updated one its ``update_postimage``, in a :data:`CHANGE_TYPE` column (null for data rows).
    ``observation`` (a ``pyspark.sql.Observation``): counts, as the rows are written, the stored
    rows (``rows``), those an upsert event matched (``matched_upserts``), and those updated and
    deleted (``updated``, ``deleted``)."""
    from pyspark.sql import functions as F

    rows = files_dataframe(spark, merge, scala_seq(spark, touched))
    joined = rows.select(*[F.col(quote(c)).alias(STORED + c) for c in stored]).join(
        F.broadcast(source), same_key(keys), "left")
    # never null (a stored row without _cdc_seq is not replaced, as in Delta's MERGE): a null here
    # would drop the row from the data and give it a preimage
    replaced = F.coalesce(F.col("_cdc_op").isNotNull() & (F.col("_cdc_seq") > F.col(STORED + "_cdc_seq")),
                          F.lit(False))
    deleted = F.col("_cdc_op") == "d"
    if observation is not None:
        joined = joined.observe(
            observation, F.count(F.lit(1)).alias("rows"),
            F.count(F.when(F.col("_cdc_op").isNotNull() & ~deleted, 1)).alias("matched_upserts"),
            F.count(F.when(replaced & ~deleted, 1)).alias("updated"),
            F.count(F.when(replaced & deleted, 1)).alias("deleted"))
    updated = update_clause(stored, types, columns, meta)
    after = [F.when(replaced, updated[c]).otherwise(F.col(STORED + c)).alias(c) for c in stored]
    if not feed:
        return joined.where(~(replaced & deleted)).select(*after)
    no_change = F.lit(None).cast("string").alias(CHANGE_TYPE)
    data = F.struct(*after, no_change)
    pre = F.struct(*[F.col(STORED + c).alias(c) for c in stored],
                   F.when(deleted, F.lit("delete")).otherwise(F.lit("update_preimage")).alias(CHANGE_TYPE))
    post = F.struct(*[updated[c].alias(c) for c in stored], F.lit("update_postimage").alias(CHANGE_TYPE))
    images = F.when(~replaced, F.array(data)).when(deleted, F.array(pre)).otherwise(F.array(data, pre, post))
    return joined.select(F.explode(images).alias("_row")).select("_row.*")


def _inserted_written(inserted: Any, feed: bool, parts: int) -> Any:
    """The ``inserted`` rows as written: with the change data ``feed`` each also as an ``insert``
    (:data:`CHANGE_TYPE`, null for the data rows), in ``parts`` partitions."""
    from pyspark.sql import functions as F

    if feed:
        inserted = inserted.select("*", F.lit(None).cast("string").alias(CHANGE_TYPE)).unionByName(
            inserted.select("*", F.lit("insert").alias(CHANGE_TYPE)))
    return inserted.coalesce(parts)
