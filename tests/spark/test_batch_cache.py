"""``spark_jobs.batch_cache``: what a batch checkpoints and caches is gone from the block manager
once the batch releases it, and the job releases it at the end of every batch."""

from __future__ import annotations

from typing import Any

import pytest

from spark_jobs.batch_cache import BatchCache

pytestmark = pytest.mark.spark


def _stored(spark: Any) -> dict[int, int]:
    """RDD id -> bytes held (memory and disk), for every RDD with cached blocks."""
    infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
    return {info.id(): info.memSize() + info.diskSize() for info in infos if info.numCachedPartitions() > 0}


def test_release_drops_checkpoints_and_caches(spark: Any) -> None:
    before = _stored(spark)
    cache = BatchCache()
    eager = cache.checkpoint(spark.range(50_000).selectExpr("id", "repeat('x', 40) AS pad"), eager=True)
    lazy = cache.checkpoint(spark.range(20_000).selectExpr("id * 2 AS id"), eager=False)
    cached = cache.persist(spark.range(30_000).selectExpr("id", "id % 7 AS bucket"))
    assert (eager.count(), lazy.count(), cached.count()) == (50_000, 20_000, 30_000)
    held = {k: v for k, v in _stored(spark).items() if k not in before}
    assert len(held) == 3 and all(v > 0 for v in held.values()), held
    assert cache.held == 3

    cache.release()

    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    assert {k for k in _stored(spark) if k not in before and k in held} == set()
    assert cache.held == 0
    cache.release()  # again: nothing to do


def test_drop_releases_one_cache(spark: Any) -> None:
    before = _stored(spark)
    cache = BatchCache()
    first = cache.persist(spark.range(10_000).selectExpr("id AS a"))
    second = cache.persist(spark.range(12_000).selectExpr("id + 1 AS b"))
    assert first.count() + second.count() == 22_000
    held = set(_stored(spark)) - set(before)
    assert len(held) == 2

    cache.drop(first)

    assert cache.held == 1
    assert len(set(_stored(spark)) - set(before)) == 1
    cache.release()
    assert set(_stored(spark)) - set(before) == set()


def test_drop_releases_one_checkpoint_and_keeps_the_others(spark: Any) -> None:
    """The one-pass road checkpoints its decoded events and drops them when the batch does not fit
    it (``spark_jobs.steady``): only that checkpoint's blocks go."""
    before = _stored(spark)
    cache = BatchCache()
    dropped = cache.checkpoint(spark.range(10_000).selectExpr("id AS a"), eager=False)
    kept = cache.checkpoint(spark.range(12_000).selectExpr("id + 1 AS b"), eager=False)
    assert dropped.count() + kept.count() == 22_000
    assert len(set(_stored(spark)) - set(before)) == 2

    cache.drop(dropped)

    assert cache.held == 1
    assert len(set(_stored(spark)) - set(before)) == 1
    assert kept.count() == 12_000
    cache.release()
    assert set(_stored(spark)) - set(before) == set()
