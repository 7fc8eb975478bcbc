"""When a deletion-vector table is compacted (spark_jobs.compaction) and the option that says so."""

from __future__ import annotations

import pytest

from spark_jobs.compaction import deleted_share, due, files_after_commit
from spark_jobs.job_config import JobConfigError, config_from_mapping

BASE = {"kafka.bootstrap.servers": "b:9092", "target_root": "/t", "checkpointLocation": "/c", "subscribe": "x"}


def test_the_share_counts_rows_already_marked_those_the_commit_marks_and_those_it_writes() -> None:
    # two files of 100 stored rows, 10 already marked in a; the commit marks 30 more in b (b is
    # removed and added again with its new deletion vector) and writes c, 50 rows
    before = {"a": (100, 10), "b": (100, 0)}
    after = files_after_commit(before, ["b"], {"b": (100, 30), "c": (50, 0)})
    assert sorted(after) == [(50, 0), (100, 10), (100, 30)]
    assert deleted_share(after) == pytest.approx(40 / 250)
    assert deleted_share([]) == 0.0
    assert deleted_share(files_after_commit({}, [], {"c": (7, 0)})) == 0.0


def test_a_file_whose_rows_are_all_replaced_and_removed_leaves_no_dead_rows() -> None:
    # Delta removes a file whose every row the commit deletes (it knows its row count) instead of
    # marking them all: its rows are gone, not dead
    after = files_after_commit({"a": (2, 0), "b": (2, 0)}, ["a"], {"c": (2, 0)})
    assert deleted_share(after) == 0.0


def test_a_re_added_file_without_statistics_keeps_the_row_count_it_had() -> None:
    # filterFiles() drops statistics: the re-added file then has none, the table state had them
    after = files_after_commit({"a": (100, 0)}, ["a"], {"a": (None, 25)})
    assert after == [(100, 25)]
    assert deleted_share(after) == 0.25


def test_a_file_without_statistics_makes_the_share_unknown() -> None:
    assert deleted_share([(100, 10), (None, 0)]) is None
    assert deleted_share(files_after_commit({}, [], {"new": (None, 0)})) is None


@pytest.mark.parametrize(
    ("share", "threshold", "expected"),
    [(0.3, 0.3, True), (0.29, 0.3, False), (0.9, 0.0, False), (None, 0.3, False), (0.01, 0.01, True)],
)
def test_a_table_is_due_at_the_threshold_never_with_0_or_an_unknown_share(
    share: float | None, threshold: float, expected: bool,
) -> None:
    assert due(share, threshold) is expected


def test_compact_deleted_share_defaults_to_three_tenths_and_takes_numbers_from_0_to_below_1() -> None:
    assert config_from_mapping(BASE).compact_deleted_share == 0.3
    assert config_from_mapping({**BASE, "compactDeletedShare": 0}).compact_deleted_share == 0
    assert config_from_mapping({**BASE, "compact_deleted_share": 0.5}).compact_deleted_share == 0.5
    for bad in (1, 1.5, -0.1, "0.3", True):
        with pytest.raises(JobConfigError, match=r"'compact_deleted_share' must be a number from 0 \(never\)"):
            config_from_mapping({**BASE, "compact_deleted_share": bad})


def test_compact_max_files_defaults_to_40_and_takes_whole_numbers_from_0() -> None:
    from spark_jobs.compaction import too_many_files

    assert config_from_mapping(BASE).compact_max_files == 40
    assert config_from_mapping({**BASE, "compactMaxFiles": 0}).compact_max_files == 0
    for bad in (-1, 2.5, "40", True):
        with pytest.raises(JobConfigError, match=r"'compact_max_files' must be a whole number of files"):
            config_from_mapping({**BASE, "compact_max_files": bad})
    assert [too_many_files(n, 40) for n in (0, 40, 41)] == [False, False, True]
    assert not too_many_files(10_000, 0)
