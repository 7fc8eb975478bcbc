"""``bench.snapshot.median_result``: which of a chunk size's key-range snapshots in a session is the run's figure."""

from __future__ import annotations

import pytest

from bench.snapshot import median_result

pytestmark = pytest.mark.unit


def test_a_chunk_sizes_run_figure_is_its_median_snapshot_with_that_snapshots_cpu() -> None:
    runs = [{"rows_per_s": 150_000.0, "cpu_us_per_read": 5.0}, {"rows_per_s": 120_000.0, "cpu_us_per_read": 6.0},
            {"rows_per_s": 190_000.0, "cpu_us_per_read": 4.0}]
    assert median_result(runs) == {"rows_per_s": 150_000.0, "cpu_us_per_read": 5.0}
    assert median_result(runs[:1]) == runs[0]
    assert median_result(runs[:2])["rows_per_s"] == 150_000.0  # the upper middle of an even count


def test_the_command_line_asks_for_three_rounds_one_when_quick_and_refuses_none(
        capsys: pytest.CaptureFixture[str]) -> None:
    from bench.run import parse_args

    assert parse_args(["--sections", "snapshot"]).range_repeats == 3
    assert parse_args(["--sections", "snapshot", "--quick"]).range_repeats == 1
    with pytest.raises(SystemExit):
        parse_args(["--range-repeats", "0"])
    assert "--range-repeats 0: give at least 1" in capsys.readouterr().err
