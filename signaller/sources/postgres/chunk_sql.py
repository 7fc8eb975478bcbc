"""PostgreSQL SQL for chunked reads, keyset pagination on the chunk key with row-value comparison.

Every column is read as the text of its output function so snapshot rows go through the same
converters as pgoutput's text tuples and produce byte-identical values and keys. Bounds are written as
quoted string literals cast to the key column's type, so any orderable key type works (integers, text,
uuid, timestamps, composites). Pure functions: they build complete statements, to be run without a
parameter list, so a ``%`` in a filter, a table or a column name is never read as a driver placeholder.
"""

from __future__ import annotations

from collections.abc import Sequence

from signaller.sources.base import ChunkTable, Key
from signaller.sources.postgres.sqltext import quote_ident, quote_literal

__all__ = ["chunk_query", "count_query", "lock_and_version", "max_key_query", "qualified_name", "schema_version_sql"]


def qualified_name(table: ChunkTable) -> str:
    """The table's schema-qualified name, each part quoted as a SQL identifier."""
    return f"{quote_ident(table.schema)}.{quote_ident(table.name)}"


def _as_text(refs: Sequence[str]) -> str:
    """Select list with positional aliases (an output column must never carry a table column's name,
    or ``ORDER BY "id"`` could sort by the output column). No casts: the source reads these with a
    typecaster that keeps the server's text (``col::text`` would change booleans and ``char(n)``)."""
    return ", ".join(f"{ref} AS c{index}" for index, ref in enumerate(refs))


def _row(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else "ROW(" + ", ".join(items) + ")"


def _key_refs(table: ChunkTable) -> list[str]:
    return [quote_ident(name) for name, _ in table.key]


def _bound(table: ChunkTable, key: Key) -> str:
    """The key value ``key`` as a row of literals, each cast to its key column's type."""
    return _row([f"{quote_literal(value)}::{sql_type}" for value, (_, sql_type) in zip(key, table.key, strict=True)])


def max_key_query(table: ChunkTable) -> str:
    """The chunk key of the last row in key order (optionally within the filter)."""
    keys = _key_refs(table)
    where = f" WHERE ({table.filter})" if table.filter else ""
    select = _as_text(keys)
    order = ", ".join(f"{k} DESC" for k in keys)
    return f"SELECT {select} FROM {qualified_name(table)}{where} ORDER BY {order} LIMIT 1"


def chunk_query(table: ChunkTable, lower: Key | None, upper: Key | None, limit: int) -> str:
    """Rows with ``lower < key <= upper`` in key order, at most ``limit``; every column as text,
    then the chunk key columns as text (so the caller can read the chunk position even when a
    surrogate key is not a captured column), then the table's ``rendered`` expressions."""
    keys = _key_refs(table)
    select = _as_text([quote_ident(c) for c in table.columns] + keys + list(table.rendered))
    conditions: list[str] = []
    if lower is not None:
        conditions.append(f"{_row(keys)} > {_bound(table, lower)}")
    if upper is not None:
        conditions.append(f"{_row(keys)} <= {_bound(table, upper)}")
    if table.filter:
        conditions.append(f"({table.filter})")
    where = " WHERE " + " AND ".join(conditions) if conditions else ""
    order = ", ".join(keys)
    return f"SELECT {select} FROM {qualified_name(table)}{where} ORDER BY {order} LIMIT {int(limit)}"


def count_query(table: ChunkTable, upper: Key) -> str:
    """Debezium's bounded row count: rows with ``key <= upper`` (the maximum key) within the filter.
    Used for the ``total_rows`` of a filtered snapshot, or when the planner has no estimate."""
    keys = _key_refs(table)
    conditions = [f"{_row(keys)} <= {_bound(table, upper)}"]
    if table.filter:
        conditions.append(f"({table.filter})")
    return f"SELECT count(*) FROM {qualified_name(table)} WHERE {' AND '.join(conditions)}"


def schema_version_sql(relid: str) -> str:
    """A scalar subquery: the md5 of the name, type, type modifier and NOT NULL flag of every live column of
    the table ``relid`` (an SQL expression of its oid), in ``attnum`` order. Any ALTER TABLE that adds, drops,
    renames or retypes a column (or changes its nullability) changes it; read in MVCC, it is the value as of
    the statement's snapshot. The one definition both sides use: ``Catalog.describe_table`` reads it in the
    statement that reads the columns, and a chunk read in its transaction (``lock_and_version``)."""
    return ("(SELECT md5(string_agg(quote_ident(v.attname) || ' ' || v.atttypid || ' ' || v.atttypmod || ' ' "
            "|| v.attnotnull, ',' ORDER BY v.attnum)) FROM pg_catalog.pg_attribute v "
            f"WHERE v.attrelid = {relid} AND v.attnum > 0 AND NOT v.attisdropped)")


def lock_and_version(table: ChunkTable) -> str:
    """The statements that open a chunk read's transaction (after its BEGIN, before any query, so before its
    snapshot is taken): ``LOCK TABLE`` in ACCESS SHARE mode (what the chunk query takes anyway, now held from
    before the snapshot: no ALTER TABLE can commit between the check and the read, nor until the transaction
    ends), then ``pg_current_snapshot()`` and the table's :func:`schema_version_sql`."""
    name = qualified_name(table)
    version = schema_version_sql(f"{quote_literal(name)}::regclass")
    return f"LOCK TABLE {name} IN ACCESS SHARE MODE; SELECT pg_current_snapshot()::text, {version}"
