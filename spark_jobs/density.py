"""Whether a batch reaches every file it may touch: then the copy-on-write MERGE need not look.

``spark_jobs.cow_merge`` first joins the batch with the target's keys to learn which files hold a
row the batch replaces (the touched files), and rewrites only those. A batch of random keys as
large as the bench's (100,000 changes into a 1,000,000-row table in a few files) touches every
file anyway, and that first join was ~0.5-0.7 s of a ~5 s batch. When the batch is *dense* over
the files its key range selects, the MERGE rewrites them all without the first join
(``cow_merge``: what it replaces and inserts is counted while it rewrites).

Dense is judged from the files' key statistics and the batch's keys, per file: the batch keys
inside the file's ``[min, max]`` of the first integer key column, shared among the files whose
ranges overlap that file's in proportion to their rows per key value (files written in key order
do not overlap, and a key in range then lies in that file if it is stored at all). From that, the
share of the rows that rewriting every file would rewrite for nothing (files expected to hold no
batch key); above :data:`MAX_WASTE` the batch is not dense: a batch of updates to recent rows
with a few to old ones keeps the first join, which spares the old files.
The estimate only decides how much is rewritten, never what the table holds: a dense batch that
misses a file rewrites that file's rows unchanged. Pure functions.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

MAX_WASTE = 0.02
"""A batch is dense when rewriting every file would rewrite at most this share of their rows in
files it does not touch (expected): a file of recent rows that few keys reach is small, and
rewriting it for nothing costs little; a large file that few keys reach keeps the first join."""

INTEGER_TYPES = ("byte", "short", "integer", "long")
"""Spark type names (``DataType.typeName``) of the key columns the estimate reads statistics of."""


@dataclass(frozen=True)
class FileRange:
    """A file's ``[low, high]`` of the estimated key column and its row count (statistics)."""

    low: int
    high: int
    rows: int


def estimate_column(keys: list[str], type_names: dict[str, str]) -> str | None:
    """The key column the estimate uses: the first of ``keys`` whose type (``type_names``: Spark's
    type name per column) is an integer; None when there is none."""
    return next((k for k in keys if type_names.get(k) in INTEGER_TYPES), None)


def file_ranges(stats: list[str | None], column: str) -> list[FileRange] | None:
    """Each file's :class:`FileRange` from its Delta statistics JSON (``stats``, in file order);
    None when a file lacks them (row count, or an integer ``min``/``max`` of ``column``)."""
    out = []
    for text in stats:
        parsed = json.loads(text) if text else {}
        low = (parsed.get("minValues") or {}).get(column)
        high = (parsed.get("maxValues") or {}).get(column)
        rows = parsed.get("numRecords")
        if type(low) is not int or type(high) is not int or type(rows) is not int:
            return None
        out.append(FileRange(low, high, rows))
    return out


def expected_hits(ranges: list[FileRange], in_range: list[int]) -> list[float]:
    """Per file, the batch keys expected in it: the ``in_range`` keys (per file, the batch keys
    inside its range) times its share of the key density (rows per key value of its range) of the
    files whose ranges overlap its own, itself included. A small file of recent keys inside the
    wide range of a large file keeps its own keys; files spanning one range share its keys by
    rows."""
    def per_key(file: FileRange) -> float:
        return file.rows / (file.high - file.low + 1)

    out = []
    for file, keys in zip(ranges, in_range, strict=True):
        sharing = sum(per_key(o) for o in ranges if o.low <= file.high and file.low <= o.high)
        out.append(keys * per_key(file) / sharing if sharing else 0.0)
    return out


def wasted_share(ranges: list[FileRange], in_range: list[int]) -> float:
    """The share of the files' rows expected in files the batch does not touch: per file, its rows
    times the chance it holds none of its :func:`expected_hits` (``e^-hits``, for keys spread
    evenly over its rows); 1.0 without rows."""
    rows = sum(r.rows for r in ranges)
    if not rows:
        return 1.0
    hits = expected_hits(ranges, in_range)
    return sum(r.rows * math.exp(-h) for r, h in zip(ranges, hits, strict=True)) / rows


def dense(ranges: list[FileRange], in_range: list[int], max_waste: float | None = None) -> bool:
    """Whether rewriting every file of ``ranges`` is expected to rewrite at most ``max_waste``
    (default :data:`MAX_WASTE`) of their rows needlessly (:func:`wasted_share`)."""
    return wasted_share(ranges, in_range) <= (MAX_WASTE if max_waste is None else max_waste)


def in_range_counts(column: str, ranges: list[FileRange], where: Any) -> list[Any]:
    """Aggregate expressions: per file of ``ranges``, the rows (of those ``where``, a Column, holds
    for) whose ``column`` lies in its range (for one ``agg`` over the batch)."""
    from pyspark.sql import functions as F

    from spark_jobs.connect_schema import quote

    key = F.col(quote(column))
    return [F.count(F.when(where & key.between(F.lit(r.low), F.lit(r.high)), 1)) for r in ranges]
