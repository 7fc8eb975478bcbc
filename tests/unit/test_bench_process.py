"""``bench.process.cpu_between``: a sidecar's CPU between two instants, from its 100 ms samples."""

from __future__ import annotations

import math

import pytest

from bench.process import cpu_between

pytestmark = pytest.mark.unit


def sample(t: float, main: float, librdkafka: float, other: float) -> dict[str, object]:
    return {"event": "sample", "t": t, "cpu_s": main + librdkafka + other,
            "threads": {"main": main, "librdkafka": librdkafka, "other": other}}


SAMPLES = [sample(10.0, 1.0, 0.5, 0.1), sample(10.1, 1.2, 0.6, 0.1), sample(10.2, 1.5, 0.7, 0.2),
           sample(10.3, 1.9, 0.9, 0.2), sample(10.4, 2.0, 0.9, 0.2)]


def test_it_spans_the_last_sample_before_the_start_to_the_first_after_the_end() -> None:
    assert cpu_between(SAMPLES, 10.15, 10.25) == pytest.approx((1.9 + 0.9 + 0.2) - (1.2 + 0.6 + 0.1))
    assert cpu_between(SAMPLES, 10.1, 10.3, "main") == pytest.approx(1.9 - 1.2)
    assert cpu_between(SAMPLES, 10.05, 10.35, "librdkafka") == pytest.approx(0.9 - 0.5)


def test_without_a_sample_on_either_side_it_is_nan() -> None:
    assert math.isnan(cpu_between(SAMPLES, 9.0, 10.2))
    assert math.isnan(cpu_between(SAMPLES, 10.1, 11.0, "main"))
