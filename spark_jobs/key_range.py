"""The batch's key range: as SQL, and as file skipping over a file list the job already holds.

A batch's events all have keys inside its bounds (``spark_jobs.decode.key_bounds``: per rangeable
key column, a low and a high SQL literal). In a Delta MERGE condition or a filter on a Delta read,
Delta skips the files whose key statistics lie outside them. The job's own MERGEs read files
taken from the checksum file (``spark_jobs.checksum_listing``), where Delta's skipping does not
run: :func:`files_in_range` does it for them, from the same statistics, so a file outside the
range is not opened at all (not even its Parquet footer).
"""

from __future__ import annotations

from typing import Any

from spark_jobs.connect_schema import quote

Bounds = list[tuple[str, str, str]]
"""``(column, low literal, high literal)`` per rangeable key column: the batch's key range."""

MAPPING_PROPERTY = "delta.columnMapping.mode"


def range_sql(alias: str | None, bounds: Bounds) -> str:
    """The bounds as a SQL predicate over the key columns (of ``alias``, when given)."""
    prefix = f"{alias}." if alias else ""
    return " AND ".join(f"{prefix}{quote(k)} BETWEEN {low} AND {high}" for k, low, high in bounds)


def files_in_range(spark: Any, files: list[Any], schema: Any, bounds: Bounds, mapping: str | None) -> list[Any]:
    """The ``AddFile``s of ``files`` whose key statistics may hold a key inside ``bounds``.
    ``schema``: the table's schema (the key columns' types); ``mapping``: the table's column
    mapping mode (statistics then use physical names: every file is kept). A file without
    statistics, or without them for a key column, is kept. Evaluated on the driver (a local
    relation: no Spark job)."""
    from pyspark.sql import functions as F

    if not bounds or not files or (mapping or "none") != "none":
        return files
    types = {f.name: f.dataType.simpleString() for f in schema.fields}
    keys = ", ".join(f"{quote(k)}: {types[k]}" for k, _, _ in bounds)
    parsed = F.from_json("stats", f"minValues STRUCT<{keys}>, maxValues STRUCT<{keys}>")
    stats = [(i, f.stats()) for i, f in enumerate(files)]
    frame = spark.createDataFrame(stats, "i INT, stats STRING").select("i", parsed.alias("s"))
    inside = F.lit(True)
    for k, low, high in bounds:
        highest, lowest = F.col("s.maxValues").getField(k), F.col("s.minValues").getField(k)
        inside = inside & (highest.isNull() | (highest >= F.expr(low))) & (lowest.isNull() | (lowest <= F.expr(high)))
    kept = {row.i for row in frame.where(F.col("s").isNull() | inside).select("i").collect()}
    return [f for i, f in enumerate(files) if i in kept]
