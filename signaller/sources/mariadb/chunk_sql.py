"""MariaDB SQL for chunked reads: keyset pagination on the chunk key, compared and ordered by the server.

Bounds are written as literals of the key column's type (numbers bare, bytes as ``X'..'``, everything else
a quoted string), so the server compares them under the column's own collation: a text key under
``utf8mb4_general_ci`` pages in the server's order (``'a' < 'B' < 'c'``), never Python's. A composite bound
is the expanded form ``(a > ?) OR (a = ? AND b > ?)`` and not a row value ``(a, b) > (?, ?)``: MariaDB
10.11 reads a row-value comparison as a full index scan (``EXPLAIN``: ``access_type`` ``index``, every row
examined for the last chunk of a table), the expanded form as a range on the primary key (``range``,
only the chunk's rows examined); ``tests/integration/test_mariadb_chunks.py`` checks both with EXPLAIN.

Pure functions: each builds a complete statement, to be run without a parameter list (PyMySQL then
never reads a ``%`` in a filter or a name as a placeholder). String literals are written for the
session ``sql_mode`` the chunk connection sets (:data:`SESSION_SQL_MODE`: backslash escapes on,
``"`` a string quote, ``||`` OR), the same dialect checked filters are written in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from signaller.errors import SourceError
from signaller.sources.base import ChunkTable, Key

__all__ = [
    "SESSION_SQL_MODE",
    "binary_type",
    "chunk_query",
    "count_query",
    "key_literal",
    "max_key_query",
    "qualified_name",
    "quote_ident",
    "quote_literal",
    "schema_version_sql",
    "version_probe",
]

SESSION_SQL_MODE = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
"""The ``sql_mode`` every chunk and signal connection sets, whatever the server's: without
``ANSI_QUOTES``, ``NO_BACKSLASH_ESCAPES`` and ``PIPES_AS_CONCAT``, the dialect :func:`quote_literal` and the
filter checker (``signals/mariadb_filters.py``) write for."""

_INTEGER_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year"})
_DECIMAL_TYPES = frozenset({"decimal", "numeric", "dec", "fixed"})
_FLOAT_TYPES = frozenset({"float", "double", "real", "double precision"})
_BINARY_TYPES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "geometry", "point",
                           "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
                           "geometrycollection"})
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?")
_FLOAT = re.compile(r"-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?")
_HEX = re.compile(r"[0-9a-fA-F]*")
_ESCAPES = {"\\": "\\\\", "'": "\\'", "\x00": "\\0", "\n": "\\n", "\r": "\\r", "\x1a": "\\Z"}


def base_type(sql_type: str) -> str:
    """The type's name without its length, attributes or values: ``int(11) unsigned`` → ``int``."""
    return re.split(r"[\s(]", sql_type.strip().lower(), maxsplit=1)[0]


def binary_type(sql_type: str) -> bool:
    """Whether the server sends values of ``sql_type`` (an ``information_schema`` ``COLUMN_TYPE``) as bytes,
    which the chunk reader carries as their hex text (bit strings, binary strings, blobs, spatial values)."""
    return base_type(sql_type) in _BINARY_TYPES or base_type(sql_type) == "bit"


def quote_ident(name: str) -> str:
    """``name`` as a backquoted identifier (`````` doubled): any characters but NUL, matched exactly."""
    if "\x00" in name:
        raise SourceError(f"identifier {name!r} contains a NUL character, which MariaDB does not accept")
    return "`" + name.replace("`", "``") + "`"


def quote_literal(value: str | None) -> str:
    """``value`` as a string literal (``NULL`` for None) for :data:`SESSION_SQL_MODE`: quotes, backslashes,
    NUL, newlines and Ctrl-Z escaped with a backslash."""
    if value is None:
        return "NULL"
    return "'" + "".join(_ESCAPES.get(char, char) for char in value) + "'"


def key_literal(value: str | None, sql_type: str) -> str:
    """The key value ``value`` (the server's text of a ``sql_type`` column; hex for a binary type) as a
    literal the server compares with the column without a conversion that loses order or index use:
    integers and decimals bare (a quoted number would be compared as a double), bit strings as their
    integer, binary strings as ``X'..'``, everything else a quoted string (compared under the column's
    collation). ``SourceError`` if ``value`` is not the text such a column has."""
    if value is None:
        return "NULL"
    kind = base_type(sql_type)
    checks = ((_INTEGER_TYPES, _INTEGER), (_DECIMAL_TYPES, _DECIMAL), (_FLOAT_TYPES, _FLOAT))
    for kinds, pattern in checks:
        if kind in kinds:
            if not pattern.fullmatch(value):
                raise SourceError(f"key value {value[:40]!r} is not the text of a {sql_type} column")
            return value
    if kind == "bit" or kind in _BINARY_TYPES:
        if not _HEX.fullmatch(value) or len(value) % 2:
            raise SourceError(f"key value {value[:40]!r} of a {sql_type} column is not hex text")
        return str(int(value or "0", 16)) if kind == "bit" else f"X'{value}'"
    return quote_literal(value)


def qualified_name(table: ChunkTable) -> str:
    """The table's database-qualified name, each part backquoted."""
    return f"{quote_ident(table.schema)}.{quote_ident(table.name)}"


def _select(names: Sequence[str]) -> str:
    """Select list with positional aliases: an output column never carries a table column's name, so
    ``ORDER BY `id``` sorts by the column. No conversions: the reader keeps the server's text (and the
    hex text of bytes)."""
    return ", ".join(f"{quote_ident(name)} AS c{index}" for index, name in enumerate(names))


def _key_condition(table: ChunkTable, key: Key, last: str, before: str) -> str:
    """``(k1 before v1) OR (k1 = v1 AND k2 before v2) ... OR (k1 = v1 AND ... AND kn last vn)``: the keys
    after (``>``) or up to (``<``, ``<=``) ``key`` in key order, in the form MariaDB's range optimizer uses."""
    refs = [quote_ident(name) for name, _ in table.key]
    values = [key_literal(value, sql_type) for value, (_, sql_type) in zip(key, table.key, strict=True)]
    terms = []
    for index, ref in enumerate(refs):
        op = last if index == len(refs) - 1 else before
        equal = [f"{refs[i]} = {values[i]}" for i in range(index)]
        terms.append(" AND ".join([*equal, f"{ref} {op} {values[index]}"]))
    if len(terms) == 1:
        return terms[0]
    return "(" + " OR ".join(f"({term})" for term in terms) + ")"


def _where(table: ChunkTable, lower: Key | None, upper: Key | None) -> str:
    conditions: list[str] = []
    if lower is not None:
        conditions.append(_key_condition(table, lower, ">", ">"))
    if upper is not None:
        conditions.append(_key_condition(table, upper, "<=", "<"))
    if table.filter:
        conditions.append(f"({table.filter})")
    return " WHERE " + " AND ".join(conditions) if conditions else ""


def max_key_query(table: ChunkTable) -> str:
    """The chunk key of the last row in key order (within the filter), as the server orders the key."""
    keys = [name for name, _ in table.key]
    where = f" WHERE ({table.filter})" if table.filter else ""
    order = ", ".join(f"{quote_ident(k)} DESC" for k in keys)
    return f"SELECT {_select(keys)} FROM {qualified_name(table)}{where} ORDER BY {order} LIMIT 1"


def chunk_query(table: ChunkTable, lower: Key | None, upper: Key | None, limit: int) -> str:
    """Rows with ``lower < key <= upper`` (None: open) within the filter, in key order, at most ``limit``:
    the table's columns, then the chunk key columns."""
    names = [*table.columns, *(name for name, _ in table.key)]
    order = ", ".join(quote_ident(name) for name, _ in table.key)
    return (f"SELECT {_select(names)} FROM {qualified_name(table)}{_where(table, lower, upper)} "
            f"ORDER BY {order} LIMIT {int(limit)}")


def count_query(table: ChunkTable, upper: Key) -> str:
    """Debezium's bounded row count: rows with ``key <= upper`` (the maximum key) within the filter."""
    return f"SELECT COUNT(*) FROM {qualified_name(table)}{_where(table, None, upper)}"


def schema_version_sql(schema: str, table: str) -> str:
    """A scalar subquery: the md5 of the name, ``COLUMN_TYPE``, ``IS_NULLABLE`` and ordinal position of every
    column of the table named by the SQL expressions ``schema`` and ``table`` (literals or placeholders), in
    ordinal order, from ``information_schema.COLUMNS`` (NULL if it has none). Any ALTER TABLE that adds, drops,
    renames, moves or retypes a column (or changes its nullability) changes it. The one definition both sides
    use: the schema provider reads it in the statement that reads the columns, a chunk read with
    :func:`version_probe`."""
    return ("(SELECT MD5(GROUP_CONCAT(JSON_ARRAY(v.COLUMN_NAME, v.COLUMN_TYPE, v.IS_NULLABLE, v.ORDINAL_POSITION) "
            "ORDER BY v.ORDINAL_POSITION SEPARATOR ',')) FROM information_schema.COLUMNS v "
            f"WHERE v.TABLE_SCHEMA = {schema} AND v.TABLE_NAME = {table})")


def version_probe(table: ChunkTable) -> str:
    """Two select-list items for a statement inside a chunk read's transaction: the table's current
    :func:`schema_version_sql`, and ``(SELECT 1 FROM <table> LIMIT 0)`` (always NULL). Naming the table makes
    the statement take its metadata lock when it opens its tables, before the version is computed, and an
    explicit transaction holds that lock until it ends: no ALTER TABLE can change the table between the check
    and the end of the chunk's read (an ALTER waits for the commit)."""
    version = schema_version_sql(quote_literal(table.schema), quote_literal(table.name))
    return f"{version}, (SELECT 1 FROM {qualified_name(table)} LIMIT 0)"
