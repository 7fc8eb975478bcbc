"""``spark_jobs.dv_merge``: the job's MERGE written from one join, against Delta's own MERGE.

The apply scenario (``test_apply_changes``) runs the whole job both ways; these tests hand
``DeltaWriter.merge`` the same batches directly: a two-column key, stale and newer events,
unchanged-TOAST values, a replayed batch id, a table whose deletion vectors are off, and the
compaction a MERGE makes due (``spark_jobs.compaction``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.batch_cache import BatchCache
from spark_jobs.checksum_listing import checksum_listing
from spark_jobs.dv_merge import Outcome, merge_with_deletion_vectors
from spark_jobs.tables import META_COLUMNS
from tests.spark.merge_cases import (
    COLUMNS,
    DDL,
    KEYS,
    SOURCE_DDL,
    contents,
    live_files,
    make_batch,
    make_table,
    make_writer,
    seq,
)

pytestmark = pytest.mark.spark

def test_the_one_join_merge_writes_what_deltas_merge_writes(spark: Any, tmp_path: Path) -> None:
    cow = make_table(spark, tmp_path / "cow", deletion_vectors=False)
    dv = make_table(spark, tmp_path / "dv", deletion_vectors=True)
    batch = make_batch(spark)
    make_writer(tmp_path, False, delta_merge=True).merge(spark, batch, COLUMNS, KEYS, cow, "public.t", 7, [])
    make_writer(tmp_path, False, delta_merge=True).clear_txn(spark)
    make_writer(tmp_path, True).merge(spark, batch, COLUMNS, KEYS, dv, "public.t", 7, [])

    expected_rows = {("eu", 1, "a2", "long note"), ("us", 1, "c", "n3"), ("us", 2, "d", "n4"), ("us", 3, "new", "n5")}
    expected_feed = {("update_preimage", "eu", 1, "a", "long note"), ("update_postimage", "eu", 1, "a2", "long note"),
                     ("delete", "eu", 2, "b", "n2"), ("insert", "us", 3, "new", "n5")}
    assert contents(spark, cow) == (expected_rows, expected_feed)
    assert contents(spark, dv) == (expected_rows, expected_feed)
    last = spark.sql(f"DESCRIBE HISTORY delta.`{dv}` LIMIT 1").first()
    assert last.operation == "MERGE"
    metrics = {k: int(v) for k, v in last.operationMetrics.items()}
    assert (metrics["numSourceRows"], metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"],
            metrics["numTargetRowsInserted"], metrics["numTargetRowsCopied"]) == (5, 1, 1, 1, 0)
    assert metrics["numTargetDeletionVectorsAdded"] >= 1


def test_a_replayed_batch_id_writes_nothing(spark: Any, tmp_path: Path) -> None:
    dv = make_table(spark, tmp_path / "dv", deletion_vectors=True)
    batch = make_batch(spark)
    checkpoint = BatchCache().checkpoint
    first = merge_with_deletion_vectors(spark, batch, COLUMNS, KEYS, META_COLUMNS, dv, "app:merge:t", 3, None,
                                        checkpoint)
    version = spark.sql(f"DESCRIBE HISTORY delta.`{dv}` LIMIT 1").first().version
    again = merge_with_deletion_vectors(spark, batch, COLUMNS, KEYS, META_COLUMNS, dv, "app:merge:t", 3, None,
                                        checkpoint)
    assert (first.outcome, again.outcome) == (Outcome.MERGED, Outcome.ALREADY_APPLIED)
    assert first.deleted_share == pytest.approx(2 / 6)  # 4 stored rows, 2 marked, 2 written
    assert spark.sql(f"DESCRIBE HISTORY delta.`{dv}` LIMIT 1").first().version == version


def test_a_table_without_deletion_vectors_gets_the_copy_on_write_merge(spark: Any, tmp_path: Path) -> None:
    """Spark gives no row indexes for a table whose deletion vectors are off: the one-join MERGE
    declines, and the writer rewrites the touched files instead (``spark_jobs.cow_merge``: same
    result, no deletion vector)."""
    path = make_table(spark, tmp_path / "plain", deletion_vectors=False)
    declined = merge_with_deletion_vectors(spark, make_batch(spark), COLUMNS, KEYS, META_COLUMNS, path,
                                           "app:merge:t", 1, None, BatchCache().checkpoint)
    assert declined.outcome is Outcome.NOT_ENABLED
    make_writer(tmp_path, True).merge(spark, make_batch(spark), COLUMNS, KEYS, path, "public.t", 1, [])
    rows, _ = contents(spark, path)
    assert ("eu", 1, "a2", "long note") in rows and ("us", 3, "new", "n5") in rows and len(rows) == 4
    metrics = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first().operationMetrics
    assert int(metrics["numTargetDeletionVectorsAdded"]) == 0


@pytest.mark.parametrize(("threshold", "compacted"), [(0.3, True), (0.34, False)])
def test_a_merge_that_leaves_the_share_of_deleted_rows_compacts_the_table(
    spark: Any, tmp_path: Path, threshold: float, compacted: bool,
) -> None:
    """The batch marks 2 of 4 stored rows and writes 2: a third of the rows are marked deleted."""
    dv = make_table(spark, tmp_path / "dv", deletion_vectors=True)
    writer = make_writer(tmp_path, True, compact_deleted_share=threshold)
    writer.merge(spark, make_batch(spark), COLUMNS, KEYS, dv, "public.t", 7, [])
    writer.clear_txn(spark)
    before = contents(spark, dv)
    assert any(f.get("deletionVector") for f in live_files(dv))

    assert writer.compact(spark, dv) is compacted
    assert writer.compact(spark, dv) is False  # done: due again only after another MERGE
    last = spark.sql(f"DESCRIBE HISTORY delta.`{dv}` LIMIT 1").first().operation
    assert last == ("OPTIMIZE" if compacted else "MERGE")
    assert any(f.get("deletionVector") for f in live_files(dv)) is not compacted
    assert contents(spark, dv) == before  # same rows, same change data feed


def test_the_share_is_counted_from_the_tables_state_when_its_checksum_does_not_list_the_files(
    spark: Any, tmp_path: Path,
) -> None:
    """Delta lists a table's files in its checksum up to 50 files; a larger table's MERGE reads its
    files from its state instead, and the share comes from there, the same."""
    key = "spark.databricks.delta.allFilesInCrc.enabled"
    spark.conf.set(key, "false")
    try:
        dv = make_table(spark, tmp_path / "dv", deletion_vectors=True)
        listed = [json.loads(c.read_text()).get("allFiles") for c in (Path(dv) / "_delta_log").glob("0*.crc")]
        assert listed and not any(listed)
        result = merge_with_deletion_vectors(spark, make_batch(spark), COLUMNS, KEYS, META_COLUMNS, dv,
                                             "app:merge:t", 1, None, BatchCache().checkpoint)
    finally:
        spark.conf.unset(key)
    assert result.deleted_share == pytest.approx(2 / 6)


def test_a_file_whose_rows_are_all_replaced_is_removed(spark: Any, tmp_path: Path) -> None:
    """The checksum's files carry their row counts: Delta removes a file whose every row the batch
    replaces instead of keeping it with all rows marked, and the share counts no dead row."""
    dv = make_table(spark, tmp_path / "dv", deletion_vectors=True)
    spark.sql(f"DELETE FROM delta.`{dv}` WHERE region = 'us'")  # rewrites the file: eu 1 and eu 2 left
    result = merge_with_deletion_vectors(spark, make_batch(spark), COLUMNS, KEYS, META_COLUMNS, dv, "app:merge:t", 1,
                                         None, BatchCache().checkpoint)
    last = spark.sql(f"DESCRIBE HISTORY delta.`{dv}` LIMIT 1").first()
    metrics = {k: int(v) for k, v in last.operationMetrics.items()}
    assert (metrics["numTargetFilesRemoved"], metrics["numTargetDeletionVectorsAdded"]) == (1, 0)
    assert result.deleted_share == 0.0
    assert not any(f.get("deletionVector") for f in live_files(dv))
    assert contents(spark, dv)[0] == {("eu", 1, "a2", "long note"), ("us", 3, "new", "n5"), ("us", 1, "stale", "x")}


def test_the_checksum_and_the_table_state_give_the_same_merges(spark: Any, tmp_path: Path) -> None:
    """Two batches, the second over rows the first marked deleted: read from the checksum's files
    (with their deletion vectors) and from the table's state, the same rows and change data feed."""
    listed, state = (make_table(spark, tmp_path / name, deletion_vectors=True) for name in ("listed", "state"))
    log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, listed)
    assert checksum_listing(log.startTransaction()) is not None  # the checksum lists files and write ids
    again = spark.createDataFrame([("eu", 2, "back", "n6", seq(30), "u", 2, []),  # deleted by batch 1: inserted
                                   ("us", 2, "d2", "n7", seq(30), "u", 2, [])], SOURCE_DDL).localCheckpoint(eager=True)
    shares = []
    for path, use in ((listed, True), (state, False)):
        for batch_id, batch in ((1, make_batch(spark)), (2, again)):
            result = merge_with_deletion_vectors(spark, batch, COLUMNS, KEYS, META_COLUMNS, path, "app:merge:t",
                                                 batch_id, None, BatchCache().checkpoint, use_checksum=use)
            shares.append(result.deleted_share)
    rows, feed = contents(spark, listed)
    assert (rows, feed) == contents(spark, state)
    assert rows == {("eu", 1, "a2", "long note"), ("eu", 2, "back", "n6"), ("us", 1, "c", "n3"), ("us", 2, "d2", "n7"),
                    ("us", 3, "new", "n5")}
    assert ("insert", "eu", 2, "back", "n6") in feed
    assert shares == [pytest.approx(2 / 6), pytest.approx(3 / 8)] * 2


def _commit_write_id(spark: Any, txn: Any, app_id: str, batch_id: int) -> None:
    """Commit ``txn`` with only an idempotent-write id."""
    jvm = spark._jvm
    delta = jvm.org.apache.spark.sql.delta
    actions = jvm.java.util.ArrayList()
    actions.add(delta.actions.SetTransaction(app_id, batch_id, jvm.scala.Option.empty()))
    manual_update = getattr(getattr(delta, "DeltaOperations$ManualUpdate$"), "MODULE$")
    txn.commit(jvm.org.apache.spark.api.python.PythonUtils.toSeq(actions), manual_update)


def _listed_transaction(spark: Any, tmp_path: Path) -> tuple[str, Any, Any, Any]:
    """A deletion-vector table, its Delta log, a transaction on it and that transaction's
    checksum listing (which the table's checksum has)."""
    dv = make_table(spark, tmp_path / "dv", deletion_vectors=True)
    log = spark._jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, dv)
    txn = log.startTransaction()
    listing = checksum_listing(txn)
    assert listing is not None
    return dv, log, txn, listing


@pytest.mark.parametrize("recorded", [True, False])
def test_what_the_checksum_gives_is_recorded_as_read_so_concurrent_commits_conflict(
    spark: Any, tmp_path: Path, recorded: bool,
) -> None:
    """Files and write ids taken from the checksum are recorded in the transaction as Delta's own
    reads record them: a concurrent append then fails the commit, as it fails Delta's MERGE (and,
    not recorded, it would not)."""
    dv, _, txn, listing = _listed_transaction(spark, tmp_path)
    if recorded:
        assert listing.applied_version(txn, "app:merge:t") == -1
        listing.read_all(spark, txn)
        assert txn.readFiles().size() == 1
    spark.createDataFrame([("eu", 9, "x", "y", seq(5), "c", 0)], DDL).write.format("delta").mode("append").save(dv)
    if recorded:
        with pytest.raises(Exception, match=r"DELTA_CONCURRENT_APPEND|ConcurrentAppendException"):
            _commit_write_id(spark, txn, "app:merge:t", 1)
    else:
        _commit_write_id(spark, txn, "app:merge:t", 1)


@pytest.mark.parametrize("recorded", [True, False])
def test_a_write_id_taken_from_the_checksum_conflicts_with_a_concurrent_commit_of_it(
    spark: Any, tmp_path: Path, recorded: bool,
) -> None:
    """Two transactions of the same app id (a batch run twice at once): the one that read the id
    from the checksum fails, as after ``txnVersion`` (and, not recorded, it would not)."""
    _, log, txn, listing = _listed_transaction(spark, tmp_path)
    if recorded:
        assert listing.applied_version(txn, "app:merge:t") == -1
    _commit_write_id(spark, log.startTransaction(), "app:merge:t", 1)
    if recorded:
        with pytest.raises(Exception, match=r"DELTA_CONCURRENT_TRANSACTION|ConcurrentTransactionException"):
            _commit_write_id(spark, txn, "app:merge:t", 1)
    else:
        _commit_write_id(spark, txn, "app:merge:t", 1)
