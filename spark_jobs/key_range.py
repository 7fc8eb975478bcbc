"""The batch's key range: as SQL, and as file skipping over a file list the job already holds.

A batch's events all have keys inside its bounds (``spark_jobs.decode.key_bounds``: per rangeable
key column, a low and a high SQL literal). In a Delta MERGE condition or a filter on a Delta read,
Delta skips the files whose key statistics lie outside them. The job's own MERGEs read files
taken from the checksum file (``spark_jobs.checksum_listing``), where Delta's skipping does not
run: :func:`files_in_range` does it for them, on the driver from the same statistics (no Spark
job), so a file outside the range is not opened at all (not even its Parquet footer).
"""

from __future__ import annotations

import json
import re
from typing import Any

from spark_jobs.connect_schema import quote

Bounds = list[tuple[str, str, str]]
"""``(column, low literal, high literal)`` per rangeable key column: the batch's key range."""

MAPPING_PROPERTY = "delta.columnMapping.mode"


def range_sql(alias: str | None, bounds: Bounds) -> str:
    """The bounds as a SQL predicate over the key columns (of ``alias``, when given)."""
    prefix = f"{alias}." if alias else ""
    return " AND ".join(f"{prefix}{quote(k)} BETWEEN {low} AND {high}" for k, low, high in bounds)


def files_in_range(files: list[Any], bounds: Bounds, mapping: str | None) -> list[Any]:
    """The files of ``files`` (Delta ``AddFile``s, or anything with a ``stats()`` giving Delta's
    statistics JSON) whose key statistics may hold a key inside ``bounds``. ``mapping``: the
    table's column mapping mode (statistics then use physical names: every file is kept). A file
    without statistics, or without them for a key column, is kept, and so is every file for a bound
    whose literal is not an integer, a string or a date. Pure: no Spark job."""
    ranges = [(k, literal_value(low), literal_value(high)) for k, low, high in bounds]
    ranges = [(k, low, high) for k, low, high in ranges if low is not None and high is not None]
    if not ranges or (mapping or "none") != "none":
        return files
    return [f for f in files if _may_hold(f.stats(), ranges)]


def _may_hold(stats: str | None, ranges: list[tuple[str, Any, Any]]) -> bool:
    """Whether a file of statistics ``stats`` may hold a key inside every range (kept when unsure)."""
    if not stats:
        return True
    parsed = json.loads(stats)
    lowest, highest = parsed.get("minValues") or {}, parsed.get("maxValues") or {}
    for k, low, high in ranges:
        first, last = lowest.get(k), highest.get(k)
        if type(first) is type(low) and first > high:
            return False
        if type(last) is type(high) and last < low:
            return False
    return True


def literal_value(literal: str) -> int | str | None:
    """The value of a bound's SQL literal as Delta's statistics JSON holds it: an integer, a string
    (``spark_jobs.sqltext.sql_string``), a date as its ISO text (``DATE'2026-01-31'``); None for any
    other literal. ISO dates compare as text in date order, and Python compares strings by code
    point, which is Spark's (UTF-8 byte) order."""
    if re.fullmatch(r"-?\d+", literal):
        return int(literal)
    date = re.fullmatch(r"DATE'(\d{4}-\d{2}-\d{2})'", literal)
    if date:
        return date.group(1)
    if len(literal) >= 2 and literal[0] == literal[-1] == "'":
        return re.sub(r"\\(.)", r"\1", literal[1:-1])
    return None
