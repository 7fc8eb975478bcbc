"""Parsing a JSON text column once per record, however many of its fields a plan reads.

Spark's optimizer rule ``OptimizeCsvJsonExprs`` (on by default) rewrites every field access
``from_json(text, <struct>).f`` into a parse of its own, with a schema pruned to ``f``, when the
``from_json`` has no options. Each of those parses tokenizes the whole text, and common
subexpression elimination cannot share them (their schemas differ): decoding the five envelope
members a change event needs parsed each payload five times. The rule leaves a ``from_json`` with
options alone, so :func:`parse_json` passes one (``mode``, at its default ``PERMISSIVE``: a text
that is not JSON gives null fields, as before); the one parse is then shared by every field.

Measured in the apply job on 100,000-change batches of the bench (``bench/apply.py``), the decode
phase took about 1.1 s with the rule and 0.65-1.0 s without it.
"""

from __future__ import annotations

from typing import Any

PARSE_ONCE = {"mode": "PERMISSIVE"}
"""``from_json``'s options: its default mode, given explicitly so the optimizer keeps one parse."""


def parse_json(column: Any, ddl: str, failed_field: str | None = None) -> Any:
    """``from_json(column, ddl)``, parsed once per row whatever fields are read from it (see the
    module docstring). ``column``: a column name or ``Column``. Lazy, like any column expression.

    ``failed_field``: the name of a STRING field added to ``ddl`` (a ``STRUCT<...>``) that holds
    the whole text when any value of the record did not parse into its field's type (that value
    is then null, the others kept); null when every value parsed (JSON nulls included). Spark's
    corrupt-record column, named per call so that a session's own setting cannot move it."""
    from pyspark.sql import functions as F

    if failed_field is None:
        return F.from_json(column, ddl, PARSE_ONCE)
    if not (ddl.startswith("STRUCT<") and ddl.endswith(">")):
        msg = f"a parse that reports failed values needs a STRUCT<...> type, got {ddl!r}"
        raise ValueError(msg)
    with_failed = f"{ddl[:-1]}, {failed_field}: STRING>"
    return F.from_json(column, with_failed, {**PARSE_ONCE, "columnNameOfCorruptRecord": failed_field})
