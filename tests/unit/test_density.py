"""``spark_jobs.density``: when a batch is taken to touch every file its key range selects (pure logic)."""

from __future__ import annotations

import json
import math

import pytest

from spark_jobs.density import FileRange, dense, estimate_column, expected_hits, file_ranges, wasted_share


def _stats(low: object, high: object, rows: object, column: str = "id") -> str:
    return json.dumps({"numRecords": rows, "minValues": {column: low}, "maxValues": {column: high}})


def test_the_estimate_reads_the_first_integer_key_column() -> None:
    types = {"region": "string", "id": "long", "day": "date", "small": "short"}
    assert estimate_column(["region", "id", "small"], types) == "id"
    assert estimate_column(["small", "id"], types) == "small"
    assert estimate_column(["region", "day"], types) is None


def test_file_ranges_come_from_the_statistics_and_need_all_of_them() -> None:
    assert file_ranges([_stats(1, 500, 500), _stats(501, 900, 400)], "id") == [
        FileRange(1, 500, 500), FileRange(501, 900, 400)]
    assert file_ranges([_stats(1, 500, 500), None], "id") is None  # a file without statistics
    assert file_ranges([_stats(1, 500, 500, column="other")], "id") is None
    assert file_ranges([_stats("a", "b", 3)], "id") is None  # not an integer range
    assert file_ranges([json.dumps({"minValues": {"id": 1}, "maxValues": {"id": 2}})], "id") is None  # no row count


def test_disjoint_files_expect_the_keys_in_their_range() -> None:
    ranges = [FileRange(1, 500, 500), FileRange(501, 1000, 500)]
    assert expected_hits(ranges, [40, 7]) == [40.0, 7.0]


def test_overlapping_files_share_the_keys_in_proportion_to_their_rows() -> None:
    """Files written in no key order all span the whole range: each holds its share of the keys."""
    ranges = [FileRange(1, 1000, 600), FileRange(1, 1000, 300), FileRange(1, 1000, 100)]
    assert expected_hits(ranges, [1000, 1000, 1000]) == pytest.approx([600.0, 300.0, 100.0])


def test_a_small_file_of_recent_keys_inside_a_wide_file_keeps_its_keys() -> None:
    """A rewrite packs the few rows of recent keys with a large file's: the wide file holds one row
    in two of its range, the recent file every key of its own; a key there is twice as likely
    the recent file's."""
    ranges = [FileRange(1, 1_001_000, 500_500), FileRange(1_000_001, 1_001_000, 1000)]
    hits = expected_hits(ranges, [90_000, 90])
    assert hits[1] == pytest.approx(90 * 1 / 1.5)
    assert hits[0] == pytest.approx(90_000 * 0.5 / 1.5)


def test_the_waste_is_the_rows_of_files_expected_to_hold_no_batch_key() -> None:
    ranges = [FileRange(1, 500, 500), FileRange(501, 1000, 500)]
    assert wasted_share(ranges, [100, 0]) == pytest.approx(0.5 * (math.exp(-100) + 1.0))
    assert wasted_share(ranges, [2, 2]) == pytest.approx(math.exp(-2))
    assert wasted_share([], []) == 1.0  # no file: nothing to rewrite


@pytest.mark.parametrize(("in_range", "max_waste", "expected"), [
    ([100, 100], 0.02, True),
    ([100, 3], 0.02, False),  # half the rows in a file expected to hold ~3 keys: e^-3 / 2 = 2.5 %
    ([100, 4], 0.02, True),  # e^-4 / 2 = 0.9 %
    ([0, 0], 1.0, True),
])
def test_a_batch_is_dense_when_little_would_be_rewritten_for_nothing(
    in_range: list[int], max_waste: float, expected: bool,
) -> None:
    ranges = [FileRange(1, 500, 500), FileRange(501, 1000, 500)]
    assert dense(ranges, in_range, max_waste) is expected


def test_a_small_file_few_keys_reach_does_not_stop_a_dense_batch() -> None:
    """The few rows of the last batch's inserts, reached by one key, beside two large files every
    key reaches: rewriting them for nothing would cost little."""
    ranges = [FileRange(1, 500_000, 500_000), FileRange(500_001, 1_000_000, 500_000),
              FileRange(1_000_001, 1_000_099, 99)]
    assert dense(ranges, [45_000, 45_000, 1])
    assert not dense([*ranges[:2], FileRange(1_000_001, 1_100_000, 100_000)], [45_000, 45_000, 1])


def test_hot_recent_keys_with_a_few_old_ones_are_not_dense() -> None:
    """A batch of updates to the newest rows with a handful to old ones: the old files keep
    their first join (rewriting them all would cost far more)."""
    ranges = [FileRange(i * 250_000 + 1, (i + 1) * 250_000, 250_000) for i in range(40)]
    in_range = [2] * 38 + [50_000, 49_924]
    assert not dense(ranges, in_range)
    assert dense(ranges[-2:], in_range[-2:])
