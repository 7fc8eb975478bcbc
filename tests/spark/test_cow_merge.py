"""``spark_jobs.cow_merge``: the job's copy-on-write MERGE in its own transaction, against Delta's.

The apply scenario (``test_apply_changes``) runs the whole job through it; these tests hand it the
batches of ``merge_cases`` directly and compare with Delta's own MERGE (``DeltaWriter`` with
``delta_merge``): rows, change data feed, history metrics, the files it removes and keeps, a
replayed batch id, and the tables it leaves to Delta's MERGE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from spark_jobs import cow_merge, density
from spark_jobs.batch_cache import BatchCache
from spark_jobs.cow_merge import merge_by_rewrite
from spark_jobs.key_range import Bounds
from spark_jobs.merge_parts import Outcome
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

EXPECTED_ROWS = {("eu", 1, "a2", "long note"), ("us", 1, "c", "n3"), ("us", 2, "d", "n4"), ("us", 3, "new", "n5")}
EXPECTED_FEED = {("update_preimage", "eu", 1, "a", "long note"), ("update_postimage", "eu", 1, "a2", "long note"),
                 ("delete", "eu", 2, "b", "n2"), ("insert", "us", 3, "new", "n5")}
COMPARED = ("numSourceRows", "numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsInserted",
            "numTargetRowsCopied", "numTargetFilesRemoved", "numTargetDeletionVectorsAdded")


def _merge(spark: Any, path: str, batch_id: int = 7, bounds: Bounds | None = None, source: Any = None) -> Any:
    return merge_by_rewrite(spark, make_batch(spark) if source is None else source, COLUMNS, KEYS, META_COLUMNS, path,
                            "app:merge:public.t", batch_id, bounds, BatchCache().checkpoint)


def _last(spark: Any, path: str) -> Any:
    return spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first()


@pytest.fixture(params=["one read", "batch not broadcast", "dense"])
def road(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every road of the rewrite: the touched files read once, joined with the broadcast batch;
    (a batch over ``BROADCAST_ROWS``) the stored rows matched kept whole, the touched files read
    again for the copied rows; and (a batch dense over its files, ``spark_jobs.density``: here
    every batch) every file in the key range rewritten without first finding the touched ones."""
    if request.param == "batch not broadcast":
        monkeypatch.setattr(cow_merge, "BROADCAST_ROWS", 0)
    if request.param == "dense":
        monkeypatch.setattr(density, "MAX_WASTE", 1.0)
    return str(request.param)


def test_the_rewrite_merge_commits_what_deltas_merge_commits(spark: Any, tmp_path: Path, road: str) -> None:
    ours, theirs = (make_table(spark, tmp_path / name, deletion_vectors=False) for name in ("ours", "delta"))
    assert _merge(spark, ours).outcome is Outcome.MERGED
    reference = make_writer(tmp_path, False, delta_merge=True)
    reference.merge(spark, make_batch(spark), COLUMNS, KEYS, theirs, "public.t", 7, [])
    reference.clear_txn(spark)

    assert contents(spark, ours) == contents(spark, theirs) == (EXPECTED_ROWS, EXPECTED_FEED)
    mine, delta = _last(spark, ours), _last(spark, theirs)
    assert mine.operation == delta.operation == "MERGE"
    assert {k: int(mine.operationMetrics[k]) for k in COMPARED} == {k: int(delta.operationMetrics[k]) for k in COMPARED}
    assert {k: int(mine.operationMetrics[k]) for k in COMPARED} == {
        "numSourceRows": 5, "numTargetRowsUpdated": 1, "numTargetRowsDeleted": 1, "numTargetRowsInserted": 1,
        "numTargetRowsCopied": 2, "numTargetFilesRemoved": 1, "numTargetDeletionVectorsAdded": 0}
    assert not any(f.get("deletionVector") for f in live_files(ours))


@pytest.mark.parametrize("feed", [True, False])
def test_a_stored_row_without_a_sequence_is_kept_as_deltas_merge_keeps_it(
    spark: Any, tmp_path: Path, road: str, feed: bool,
) -> None:
    """A row written outside the job (no ``_cdc_seq``) is never "older" than an event: Delta's MERGE
    neither updates nor deletes it, and no feed row names it."""
    from pyspark.sql import functions as F

    def stored_without_sequence(name: str) -> str:
        path = make_table(spark, tmp_path / name, deletion_vectors=False, feed=feed)
        # in one file with a row the batch replaces: the file is rewritten
        spark.createDataFrame([("eu", 9, "outside", "n9", None, "c", 0), ("eu", 8, "h", "n8", seq(10), "c", 0)],
                              DDL).coalesce(1).write.format("delta").mode("append").save(path)
        return path

    ours, theirs = stored_without_sequence("ours"), stored_without_sequence("delta")
    events = [("eu", 9, None, None, seq(99), "d", 1, []), ("eu", 8, "h2", "n", seq(99), "u", 1, [])]
    batch = spark.createDataFrame(events, SOURCE_DDL).localCheckpoint(eager=True)
    assert _merge(spark, ours, source=batch).outcome is Outcome.MERGED
    reference = make_writer(tmp_path, False, delta_merge=True)
    reference.merge(spark, batch, COLUMNS, KEYS, theirs, "public.t", 7, [])
    reference.clear_txn(spark)

    def state(path: str) -> tuple[set[Any], set[Any]]:
        rows = {tuple(r) for r in spark.read.format("delta").load(path).select("region", "id", "name").collect()}
        if not feed:
            return rows, set()
        changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 3).load(path)
        return rows, {tuple(r) for r in changes.where(F.col("id") == 9).select("_change_type", "id").collect()}

    assert state(ours) == state(theirs)
    assert ("eu", 9, "outside") in state(ours)[0] and ("eu", 8, "h2") in state(ours)[0]
    assert state(ours)[1] == set()


def test_a_table_without_change_data_feed_gets_the_same_rows_and_no_change_files(
    spark: Any, tmp_path: Path, road: str,
) -> None:
    path = make_table(spark, tmp_path / "plain", deletion_vectors=False, feed=False)
    assert _merge(spark, path).outcome is Outcome.MERGED
    rows = {tuple(r) for r in spark.read.format("delta").load(path).select("region", "id", "name", "note").collect()}
    assert rows == EXPECTED_ROWS
    assert int(_last(spark, path).operationMetrics["numTargetChangeFilesAdded"]) == 0
    assert not (Path(path) / "_change_data").exists()


def test_only_files_holding_replaced_rows_are_rewritten_and_rows_outside_the_range_are_copied(
    spark: Any, tmp_path: Path, road: str,
) -> None:
    """A second file the batch's newer events do not reach stays as it is (outside the batch's key
    range: not even opened); the touched file's rows outside the range (not scanned for matches)
    are copied, not lost."""
    path = make_table(spark, tmp_path / "t", deletion_vectors=False)
    spark.createDataFrame([("zz", 9, "other", "n9", seq(10), "c", 0)], DDL).coalesce(1).write.format("delta").mode(
        "append").save(path)
    before = {f["path"] for f in live_files(path)}
    update = spark.createDataFrame([("eu", 1, "a2", "n1", seq(20), "u", 1, [])],
                                   SOURCE_DDL).localCheckpoint(eager=True)
    away = next(Path(path, f["path"]) for f in live_files(path) if f["path"] in before and "zz" in f["stats"])
    away.rename(away.with_suffix(".away"))  # a MERGE that opens it fails
    bounds = [("region", "'eu'", "'eu'"), ("id", "1", "1")]
    assert _merge(spark, path, bounds=bounds, source=update).outcome is Outcome.MERGED
    away.with_suffix(".away").rename(away)

    after = {f["path"] for f in live_files(path)}
    assert len(before - after) == 1  # the file holding eu/1 removed
    assert {f["path"] for f in live_files(path) if f["path"] in before} == before - (before - after)
    rows = {tuple(r) for r in spark.read.format("delta").load(path).select("region", "id", "name").collect()}
    assert rows == {("eu", 1, "a2"), ("eu", 2, "b"), ("us", 1, "c"), ("us", 2, "d"), ("zz", 9, "other")}
    assert int(_last(spark, path).operationMetrics["numTargetRowsCopied"]) == 3


def test_a_batch_replacing_nothing_removes_no_file(spark: Any, tmp_path: Path) -> None:
    path = make_table(spark, tmp_path / "t", deletion_vectors=False)
    before = {f["path"] for f in live_files(path)}
    stale_and_new = spark.createDataFrame([("us", 1, "stale", "x", seq(40), "u", 1, []),
                                           ("us", 7, "new", "n7", seq(40), "c", 1, [])],
                                          SOURCE_DDL).localCheckpoint(eager=True)
    assert _merge(spark, path, source=stale_and_new).outcome is Outcome.MERGED
    assert before <= {f["path"] for f in live_files(path)}
    metrics = _last(spark, path).operationMetrics
    assert (int(metrics["numTargetFilesRemoved"]), int(metrics["numTargetRowsInserted"])) == (0, 1)
    assert contents(spark, path)[1] == {("insert", "us", 7, "new", "n7")}


def test_a_replayed_batch_id_writes_nothing(spark: Any, tmp_path: Path) -> None:
    path = make_table(spark, tmp_path / "t", deletion_vectors=False)
    assert _merge(spark, path, batch_id=3).outcome is Outcome.MERGED
    version = _last(spark, path).version
    assert _merge(spark, path, batch_id=3).outcome is Outcome.ALREADY_APPLIED
    assert _merge(spark, path, batch_id=2).outcome is Outcome.ALREADY_APPLIED
    assert _last(spark, path).version == version


def test_ids_written_by_deltas_merge_are_honoured(spark: Any, tmp_path: Path) -> None:
    """A batch committed by Delta's MERGE (an older version of the job) is not applied again."""
    path = make_table(spark, tmp_path / "t", deletion_vectors=False)
    reference = make_writer(tmp_path, False, delta_merge=True)
    reference.merge(spark, make_batch(spark), COLUMNS, KEYS, path, "public.t", 7, [])
    reference.clear_txn(spark)
    app_id = f"{reference.cfg.effective_app_id}:merge:public.t"  # the id the writer gives Delta's MERGE
    assert merge_by_rewrite(spark, make_batch(spark), COLUMNS, KEYS, META_COLUMNS, path, app_id, 7, None,
                            BatchCache().checkpoint).outcome is Outcome.ALREADY_APPLIED


@pytest.mark.parametrize("why", ["deletion vectors on", "checksum without files"])
def test_tables_it_declines_get_deltas_merge(spark: Any, tmp_path: Path, why: str) -> None:
    key = "spark.databricks.delta.allFilesInCrc.enabled"
    if why == "checksum without files":
        spark.conf.set(key, "false")
    try:
        path = make_table(spark, tmp_path / "t", deletion_vectors=why == "deletion vectors on")
        assert _merge(spark, path).outcome is Outcome.NOT_TAKEN
        assert _last(spark, path).operation != "MERGE"
        make_writer(tmp_path, False).merge(spark, make_batch(spark), COLUMNS, KEYS, path, "public.t", 7, [])
        make_writer(tmp_path, False).clear_txn(spark)
    finally:
        spark.conf.unset(key)
    assert contents(spark, path) == (EXPECTED_ROWS, EXPECTED_FEED)
    assert _last(spark, path).operation == "MERGE"


def _dense_batch(spark: Any) -> Any:
    """:func:`make_batch` tagged as the job tags it (``_dest``), with two provably new rows folded in."""
    from pyspark.sql import functions as F

    new = spark.createDataFrame([("us", 30, "n30", "x", seq(20), "c", 1, []), ("eu", 31, "n31", None, seq(20), "r", 1,
                                                                                []),], SOURCE_DDL)
    return make_batch(spark).withColumn("_dest", F.lit("merge")).unionByName(
        new.withColumn("_dest", F.lit("append"))).localCheckpoint(eager=True)


@pytest.mark.parametrize("observed", [True, False])
def test_a_dense_batch_rewrites_every_file_and_commits_what_deltas_merge_commits(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, observed: bool,
) -> None:
    """Every file whose key range holds a key of the batch rewritten, the replaced rows counted as
    they are written (or, when Spark does not report the observation, from a join), the provably
    new rows inserted as they are and the upsert of a key not stored (us/3) found and inserted:
    rows, feed and metrics are Delta's MERGE's. A file whose key range holds no key of the batch
    stays as it is."""
    monkeypatch.setattr(density, "MAX_WASTE", 1.0)
    if not observed:
        monkeypatch.setattr(cow_merge, "_observed", lambda observation: None)
    ours, theirs = (make_table(spark, tmp_path / name, deletion_vectors=False) for name in ("ours", "delta"))
    for path in (ours, theirs):
        for row in [("zz", 2, "other", "n9", seq(10), "c", 0),  # id 2 is in the batch: read, copied
                    ("zz", 50, "far", "n50", seq(10), "c", 0)]:  # no id of the batch: not read
            spark.createDataFrame([row], DDL).coalesce(1).write.format("delta").mode("append").save(path)
    far = {f["path"] for f in live_files(ours) if '"id":50' in f["stats"]}
    assert len(far) == 1
    before = {f["path"] for f in live_files(ours)} - far
    result = _merge(spark, ours, source=_dense_batch(spark))
    last_result = {"unstored_upserts": result.unstored_upserts}
    assert result.outcome is Outcome.MERGED
    reference = make_writer(tmp_path, False, delta_merge=True)
    reference.merge(spark, _dense_batch(spark), COLUMNS, KEYS, theirs, "public.t", 7, [])
    reference.clear_txn(spark)

    mine, delta = contents(spark, ours), contents(spark, theirs)
    assert mine == delta
    assert last_result["unstored_upserts"] is True  # us/3: inside the range, not stored
    assert mine[0] == EXPECTED_ROWS | {("us", 30, "n30", "x"), ("eu", 31, "n31", None), ("zz", 2, "other", "n9"),
                                       ("zz", 50, "far", "n50")}
    after = {f["path"] for f in live_files(ours)}
    assert after.isdisjoint(before)  # both files rewritten, the one zz/2 alone in too
    assert far <= after
    metrics = _last(spark, ours).operationMetrics
    assert {k: int(metrics[k]) for k in COMPARED[:4]} == {k: int(_last(spark, theirs).operationMetrics[k])
                                                          for k in COMPARED[:4]}
    assert {k: int(metrics[k]) for k in COMPARED} == {
        "numSourceRows": 7, "numTargetRowsUpdated": 1, "numTargetRowsDeleted": 1, "numTargetRowsInserted": 3,
        "numTargetRowsCopied": 3, "numTargetFilesRemoved": 2, "numTargetDeletionVectorsAdded": 0}


def test_a_batch_not_dense_over_its_files_rewrites_only_the_touched_ones(spark: Any, tmp_path: Path) -> None:
    """With the real threshold, a batch of a few keys is not dense: the file it does not touch stays."""
    path = make_table(spark, tmp_path / "t", deletion_vectors=False)
    spark.createDataFrame([("eu", 9, "other", "n9", seq(10), "c", 0)], DDL).coalesce(1).write.format("delta").mode(
        "append").save(path)
    before = {f["path"] for f in live_files(path)}
    assert _merge(spark, path, source=_dense_batch(spark)).outcome is Outcome.MERGED
    assert len(before - {f["path"] for f in live_files(path)}) == 1


def test_after_a_dense_batch_upserted_keys_not_stored_the_next_merges_join_first(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The dense road had to join after its rewrite to find us/3: the table's next
    ``JOIN_FIRST_AFTER_UNSTORED`` MERGEs take the first join; then the dense road again. A dense
    batch of stored keys only finds none."""
    from pyspark.sql import functions as F

    from spark_jobs import writes

    monkeypatch.setattr(density, "MAX_WASTE", 1.0)
    monkeypatch.setattr(writes, "JOIN_FIRST_AFTER_UNSTORED", 2)
    asked: list[bool] = []
    found: list[bool] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        asked.append(bool(kwargs["dense"]))
        result = merge_by_rewrite(*args, **kwargs)
        found.append(result.unstored_upserts)
        return result

    monkeypatch.setattr(writes, "merge_by_rewrite", spy)
    path = make_table(spark, tmp_path / "t", deletion_vectors=False)
    writer = make_writer(tmp_path, False)
    stored_only = spark.createDataFrame([("eu", 1, "a3", "x", seq(90), "u", 1, [])], SOURCE_DDL).withColumn(
        "_dest", F.lit("merge"))
    for batch_id, batch in enumerate([_dense_batch(spark), stored_only, stored_only, stored_only], start=1):
        writer.merge(spark, batch.localCheckpoint(eager=True), COLUMNS, KEYS, path, "public.t", batch_id, [])
        writer.clear_txn(spark)
    assert asked == [True, False, False, True]
    assert found == [True, False, False, False]
