"""The sustained-load figures of the apply bench (bench/sustained.py): the lag arithmetic, and which
streaming rate the apply section is asked to offer (bench/run.py)."""

from __future__ import annotations

import pytest

from bench import report
from bench.run import _measured_max_rate
from bench.stats import summarize
from bench.sustained import GROWTH_TOLERANCE, _at, lag_figures

pytestmark = pytest.mark.unit

START = 1_000.0


def _delivered(rate: int, seconds: int) -> list[tuple[float, int]]:
    return [(START + t, rate * t) for t in range(1, seconds + 1)]


def _batches(rate: int, seconds: int, every: int = 1) -> list[tuple[float, int]]:
    return [(START + t + 0.5, rate * every) for t in range(every, seconds + 1, every)]


def test_a_job_that_keeps_up_is_steady() -> None:
    figures = lag_figures(_delivered(1_000, 60), _batches(1_000, 60), START, START + 60)
    assert not figures.growing
    assert figures.offered_per_s == pytest.approx(1_000)
    assert figures.applied_per_s == pytest.approx(1_000 * 59 / 60)  # the last batch ends after the window
    assert abs(figures.lag_end - figures.lag_start) <= 1_000


def test_a_job_at_half_the_offered_rate_falls_behind() -> None:
    figures = lag_figures(_delivered(10_000, 60), _batches(5_000, 60), START, START + 60)
    assert figures.growing
    assert figures.growth_per_s == pytest.approx(5_000, rel=0.05)
    assert figures.lag_end > figures.lag_start > 0


def test_large_batches_that_keep_up_on_average_are_steady() -> None:
    """A backlog worked off in 10 s batches: the lag saws up and down but does not rise."""
    delivered = _delivered(2_000, 60)
    batches = _batches(2_000, 60, every=10)
    figures = lag_figures(delivered, batches, START, START + 60)
    assert not figures.growing


def test_a_small_rise_within_the_tolerance_is_not_growth() -> None:
    offered = 10_000
    applied = offered * (1 - GROWTH_TOLERANCE / 2)
    figures = lag_figures(_delivered(offered, 60), _batches(int(applied), 60), START, START + 60)
    assert figures.growth_per_s > 0
    assert not figures.growing


def test_the_batches_finished_inside_the_window_are_counted() -> None:
    """Large batches move ``applied_per_s`` in steps: the count says how many steps the figure holds."""
    batches = [(START - 5, 0), (START - 1, 7_000), *_batches(2_000, 60, every=10), (START + 61, 20_000)]
    figures = lag_figures(_delivered(2_000, 60), batches, START, START + 60)
    assert figures.batches_finished == 5  # at 10.5 ... 50.5 s; not the one before the window nor the one after
    assert lag_figures(_delivered(2_000, 60), [(START + 70, 90_000)], START, START + 60).batches_finished == 0


def test_batches_in_any_order_and_the_step_series() -> None:
    batches = list(reversed(_batches(5_000, 60)))
    assert lag_figures(_delivered(10_000, 60), batches, START, START + 60).growing
    series = [(1.0, 10), (2.0, 30)]
    assert (_at(series, 0.5), _at(series, 1.0), _at(series, 1.5), _at(series, 9.0)) == (0, 10, 10, 30)


def test_an_empty_window_is_refused() -> None:
    with pytest.raises(ValueError, match="before it starts"):
        lag_figures([], [], START, START)


def test_the_offered_rate_comes_from_the_streaming_section_when_it_ran() -> None:
    document = {"streaming": {"max_changes_per_s": summarize([80_000.0, 84_500.0, 83_000.0], "changes/s")}}
    assert _measured_max_rate(document) == 83_000
    assert _measured_max_rate({}) is None
    assert _measured_max_rate({"streaming": {"max_changes_per_s": summarize([0.0], "changes/s")}}) is None


def test_the_chart_draws_offered_and_applied() -> None:
    document = {"apply": {"sustained_offered_per_s": summarize([50_000.0], "records/s"),
                          "sustained_applied_per_s": summarize([9_000.0], "records/s")}}
    groups = [group for _, _, _, panel in report.chart_panels(document) for group in panel]
    sustained = [series for label, series in groups if label.startswith("apply, sustained")]
    assert sustained == [[("offered", "apply.sustained_offered_per_s"), ("applied", "apply.sustained_applied_per_s")]]
