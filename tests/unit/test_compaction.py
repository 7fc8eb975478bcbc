"""When a deletion-vector table is compacted (spark_jobs.compaction) and the option that says so."""

from __future__ import annotations

import pytest

from spark_jobs.compaction import deleted_share, due
from spark_jobs.job_config import JobConfigError, config_from_mapping

BASE = {"kafka.bootstrap.servers": "b:9092", "target_root": "/t", "checkpointLocation": "/c", "subscribe": "x"}


def test_the_share_counts_rows_already_marked_those_the_commit_marks_and_those_it_writes() -> None:
    # two files of 100 stored rows, 10 already marked; the commit marks 30 more and writes 50 rows
    assert deleted_share([(100, 10), (100, 0)], marked=30, written=50) == pytest.approx(40 / 250)
    assert deleted_share([], marked=0, written=0) == 0.0
    assert deleted_share([], marked=0, written=7) == 0.0


def test_a_file_without_statistics_makes_the_share_unknown() -> None:
    assert deleted_share([(100, 10), (None, 0)], marked=5, written=5) is None


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
