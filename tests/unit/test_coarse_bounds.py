"""Key bounds rounded outward (spark_jobs.coarse_bounds): always a superset, stable over batches."""

from __future__ import annotations

import datetime
import random

import pytest

from spark_jobs.coarse_bounds import LIMITS, coarsen, coarsen_values


def test_the_bench_batches_share_their_bounds() -> None:
    # Random keys of a 1,000,000-row table, each batch's range a little different.
    ranges = [(3, 1_030_213), (9, 1_040_202), (1, 1_020_337), (12, 1_045_000)]
    assert {coarsen(low, high, "BIGINT") for low, high in ranges} == {(0, 1_048_575)}


def test_a_streams_recent_keys_keep_their_bounds_for_many_batches() -> None:
    # 500 new keys a batch at the top of a 5,000,000-key table.
    seen = {coarsen(5_000_000 + 500 * i, 5_000_499 + 500 * i, "BIGINT") for i in range(40)}
    assert len(seen) <= 3
    low, high = coarsen(5_000_000, 5_000_499, "BIGINT")
    assert high - low + 1 <= 2 * 32_768  # under 1 % of the magnitude either side


def test_small_keys_stay_exact() -> None:
    assert coarsen(5, 9, "INT") == (5, 9)
    assert coarsen(42, 42, "BIGINT") == (42, 42)


@pytest.mark.parametrize("ddl", sorted(LIMITS))
def test_always_a_clamped_superset(ddl: str) -> None:
    floor, ceiling = LIMITS[ddl]
    rng = random.Random(ddl)
    for _ in range(2_000):
        a = rng.randint(floor, ceiling) >> rng.randint(0, 62)
        b = rng.randint(floor, ceiling) >> rng.randint(0, 62)
        low, high = max(min(a, b), floor), min(max(a, b), ceiling)
        got_low, got_high = coarsen(low, high, ddl)
        assert floor <= got_low <= low <= high <= got_high <= ceiling
        width = high - low
        # never more than a quarter of the width plus 1 % of the magnitude wider
        assert (got_high - got_low) - width <= width // 4 + max(abs(low), abs(high)) // 64 + 2


def test_extreme_and_negative_values() -> None:
    assert coarsen(-(1 << 63), (1 << 63) - 1, "BIGINT") == (-(1 << 63), (1 << 63) - 1)
    assert coarsen(-128, 127, "TINYINT") == (-128, 127)
    low, high = coarsen(-1_000_003, -999_001, "INT")
    assert low <= -1_000_003 and high >= -999_001 and low % 4096 == 0 and (high + 1) % 4096 == 0


def test_an_empty_range_is_refused() -> None:
    with pytest.raises(ValueError, match="empty range: 9 > 3"):
        coarsen(9, 3, "INT")


def test_dates_are_coarsened_as_days() -> None:
    low, high = coarsen_values(datetime.date(2026, 3, 1), datetime.date(2026, 11, 24), "DATE")
    assert low <= datetime.date(2026, 3, 1) and high >= datetime.date(2026, 11, 24)
    assert (high - low).days < 400
    assert coarsen_values(datetime.date(2026, 3, 2), datetime.date(2026, 11, 20), "DATE") == (low, high)
    assert coarsen_values(datetime.date(1, 1, 1), datetime.date(9999, 12, 31), "DATE") == (
        datetime.date(1, 1, 1), datetime.date(9999, 12, 31))
    assert coarsen_values(7, 7.0, "INT") == (7, 7)
