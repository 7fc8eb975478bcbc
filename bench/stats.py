"""Summaries of repeated measurements: every figure is the median of its runs, with min and max."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

Figure = dict[str, Any]
"""``{"median", "min", "max", "values", "unit"}`` (plus optional ``"note"``)."""


def summarize(values: Sequence[float], unit: str, *, digits: int = 1, note: str | None = None) -> Figure:
    """Median, min and max of ``values`` (one per run), rounded to ``digits`` decimals.

    NaN values (a run that could not measure the figure) are left out of median/min/max but kept
    in ``values`` as ``None`` so the file shows that a run failed to produce it.
    """
    clean = [float(v) for v in values if v is not None and not math.isnan(v)]
    figure: Figure = {
        "median": round(statistics.median(clean), digits) if clean else None,
        "min": round(min(clean), digits) if clean else None,
        "max": round(max(clean), digits) if clean else None,
        "values": [None if v is None or math.isnan(v) else round(float(v), digits) for v in values],
        "unit": unit,
    }
    if note:
        figure["note"] = note
    return figure


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` (0..1) percentile of already sorted values, nearest-rank; NaN if empty."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return float(sorted_values[min(rank, len(sorted_values)) - 1])


def per_run_ratio(numerators: Sequence[float | None], denominators: Sequence[float | None]) -> list[float]:
    """``numerators[i] / denominators[i]`` for each run ``i`` (both measured in the same run of the
    benchmark); NaN where either is missing, NaN or the denominator is 0. The lists must be equally long."""
    if len(numerators) != len(denominators):
        raise ValueError(f"{len(numerators)} numerators for {len(denominators)} denominators")
    out: list[float] = []
    for a, b in zip(numerators, denominators, strict=True):
        if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
            out.append(math.nan)
        else:
            out.append(float(a) / float(b))
    return out
