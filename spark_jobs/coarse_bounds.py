"""Key bounds rounded outward to a coarse grid, so that a batch's query plans generate the same code.

Spark's whole-stage code generation writes an integer or date literal into the Java source it
compiles (``id <= 1030213L``), and caches compiled classes by that source text. The batch's key
range appears in the tombstone filter and the MERGE condition, inside the largest generated
classes of a batch (the MERGE's join and write stage is ~200 KB of source). With exact bounds
every batch compiled them again, and the JVM then compiled the new classes' hot methods again:
measured on the bench's 100,000-change batches into a 1,000,000-row table, ~3 s of
compiler-thread CPU per batch on a 2-core machine, for seven classes that differed only in those
literals.

The bounds only ever prune (files whose key statistics lie outside them, tombstones that cannot
matter), so a wider range is always correct: it merely prunes a little less. (The split's test
for provably new keys keeps the stored range's exact bounds: see ``spark_jobs.split.outside``.)
:func:`coarsen` rounds ``low`` down and ``high`` up to multiples of a power of two ``step``, at
most an eighth of the range's width and at least 1/256 of the keys' magnitude; successive batches
then share their bounds until the range crosses a grid line. Pure functions.
"""

from __future__ import annotations

import datetime
from typing import Any

WIDTH_BITS = 4
"""``step`` ≤ width / 8: the range grows by less than a quarter of its width."""
MAGNITUDE_BITS = 8
"""``step`` > magnitude / 256: a narrow range of large keys (a stream's recent rows) keeps its
bounds over many batches; it widens by under 1 % of the keys' magnitude."""

LIMITS: dict[str, tuple[int, int]] = {
    "TINYINT": (-(1 << 7), (1 << 7) - 1),
    "SMALLINT": (-(1 << 15), (1 << 15) - 1),
    "INT": (-(1 << 31), (1 << 31) - 1),
    "BIGINT": (-(1 << 63), (1 << 63) - 1),
    "DATE": (-719_162, 2_932_896),  # days since 1970-01-01: 0001-01-01 .. 9999-12-31
}
"""The values each coarsened type can hold (the rounded bounds are clamped to them)."""


def coarsen(low: int, high: int, ddl: str) -> tuple[int, int]:
    """``(low', high')`` with ``low' <= low``, ``high' >= high``, both multiples-of-``step``
    aligned (``high' + 1`` is), clamped to the limits of ``ddl`` (a key of :data:`LIMITS`)."""
    if low > high:
        msg = f"empty range: {low} > {high}"
        raise ValueError(msg)
    floor, ceiling = LIMITS[ddl]
    magnitude = max(abs(low), abs(high))
    bits = max(0, (high - low).bit_length() - WIDTH_BITS, magnitude.bit_length() - MAGNITUDE_BITS)
    step = 1 << bits
    return max((low // step) * step, floor), min((high // step + 1) * step - 1, ceiling)


_EPOCH = datetime.date(1970, 1, 1)


def coarsen_values(low: Any, high: Any, ddl: str) -> tuple[Any, Any]:
    """:func:`coarsen` for a key column's own values: ``datetime.date`` for ``DATE``, else ints."""
    if ddl != "DATE":
        return coarsen(int(low), int(high), ddl)
    first, last = coarsen((low - _EPOCH).days, (high - _EPOCH).days, ddl)
    return _EPOCH + datetime.timedelta(days=first), _EPOCH + datetime.timedelta(days=last)
