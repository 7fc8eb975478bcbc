"""MariaDB's table schema provider for snapshots, from ``information_schema``.

``MariaDbSchemaProvider`` implements :class:`signaller.sources.base.TableSchemaProvider`: it lists the user
tables (every database but the server's own), describes one (columns in ordinal order with their
``COLUMN_TYPE``, NOT NULL, the primary key in key order, the columns with a single-column unique index, the
row estimate of ``information_schema.TABLES``, and the schema version of the columns,
``chunk_sql.schema_version_sql``, read with them: the chunk reads check it), and makes the
:class:`MariaDbTableRows` that turn a chunk row (the server's text) into the row values the stream produces:
each value parsed into the Python value the binlog client gives (``row_text.binlog_value``), then through the
same values conversion as streamed rows (``convert_for``, which the source bundle passes in: the stream's
value-to-Debezium functions of the table's plan; without it, ``convert``, by default :func:`unconverted`: the
binlog client's values as they are).

Call it on the capture loop's thread; it raises ``SourceError`` when the catalog cannot be read and
reconnects at the next call. It keeps no state: on restart a new session builds a new one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic

import pymysql

from signaller.config import CaptureSection
from signaller.model import ChangeEvent, TableId
from signaller.sources.base import ChangeT, TableDescription, TableRows, TableSchemaProvider
from signaller.sources.mariadb.chunk_sql import schema_version_sql
from signaller.sources.mariadb.connection import Endpoint, connect, translate
from signaller.sources.mariadb.row_text import MariaDbColumn, binlog_value

__all__ = ["SYSTEM_DATABASES", "MariaDbSchemaProvider", "MariaDbTableInfo", "MariaDbTableRows", "unconverted"]

SYSTEM_DATABASES = ("mysql", "information_schema", "performance_schema", "sys")
"""The server's own databases, never listed as user tables."""

ValueConversion = Callable[[MariaDbColumn, Any], Any]
"""The stream's values conversion: a column and the binlog client's Python value → the event's value."""
ConversionFor = Callable[["MariaDbTableInfo"], ValueConversion]
"""The stream's values conversion of one described table (``SourceError`` when it has none)."""
ReadWrapper = Callable[[ChangeEvent, "MariaDbTableInfo"], ChangeT]
"""How a READ event of a described table becomes the stream's change type."""

_TABLES = ("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
           f"AND TABLE_SCHEMA NOT IN ({', '.join(['%s'] * len(SYSTEM_DATABASES))}) ORDER BY 1, 2")
_TABLE = "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s " \
         "AND TABLE_TYPE = 'BASE TABLE'"
_COLUMNS = ("SELECT COLUMN_NAME, ORDINAL_POSITION, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, "
            f"NUMERIC_SCALE, DATETIME_PRECISION, {schema_version_sql('%s', '%s')} FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION")
"""The columns, each row with the table's schema version computed in the same statement (the version of
exactly these columns; its parameters: the database and table twice)."""
_INDEXES = ("SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY INDEX_NAME, SEQ_IN_INDEX")


def unconverted(column: MariaDbColumn, value: Any) -> Any:
    """Stands in for the stream's values conversion until the source bundle passes it: the binlog
    client's value unchanged."""
    del column
    return value


@dataclass(frozen=True)
class MariaDbTableInfo(TableDescription):
    """A table as ``information_schema`` describes it now, with its columns in ordinal order."""

    columns: tuple[MariaDbColumn, ...] = ()


@dataclass(frozen=True)
class MariaDbTableRows(TableRows[ChangeT], Generic[ChangeT]):
    """Chunk rows of one table, as described at one moment, turned into change-event rows."""

    info: MariaDbTableInfo
    captured: tuple[MariaDbColumn, ...]
    convert: ValueConversion
    wrap: ReadWrapper[ChangeT]

    @property
    def table_id(self) -> TableId:
        """The table the rows belong to."""
        return self.info.table_id

    @property
    def columns(self) -> tuple[str, ...]:
        """The captured columns in table order: what a chunk query selects, in this order."""
        return tuple(c.name for c in self.captured)

    @property
    def emitted_columns(self) -> tuple[str, ...]:
        """The captured columns (every MariaDB type is converted)."""
        return self.columns

    @property
    def placeholders(self) -> Mapping[str, Any]:
        """Empty: a binlog row image carries every value it logs (no placeholder)."""
        return {}

    @property
    def rendering(self) -> None:
        """None: MariaDB's chunk query does not render READs (each row is converted with :meth:`row`)."""
        return None

    def row(self, values: Sequence[str | None]) -> dict[str, Any]:
        """The row values of one chunk row's text values (in :attr:`columns` order)."""
        return {column.name: self.convert(column, binlog_value(column, text))
                for column, text in zip(self.captured, values, strict=False)}

    def read_change(self, event: ChangeEvent) -> ChangeT:
        """``event`` as the stream's change type, as the capture loop sends streamed ones."""
        return self.wrap(event, self.info)


class MariaDbSchemaProvider(TableSchemaProvider[ChangeT], Generic[ChangeT]):
    """Tables as ``information_schema`` describes them now (see the module docstring)."""

    def __init__(self, endpoint: Endpoint, capture: CaptureSection, wrap: ReadWrapper[ChangeT],
                 convert: ValueConversion = unconverted, convert_for: ConversionFor | None = None) -> None:
        """Read the catalog at ``endpoint``; select the columns ``capture`` captures; READ events become
        the stream's changes with ``wrap``; values go through ``convert_for(table)`` (the stream's conversion of
        that table) when given, else through ``convert``."""
        self._endpoint = endpoint
        self._capture = capture
        self._wrap = wrap
        self._convert = convert
        self._convert_for = convert_for
        self._conn: Any = None

    def close(self) -> None:
        """Close the catalog connection; never raises (the next call connects again)."""
        with contextlib.suppress(Exception):
            if self._conn is not None:
                self._conn.close()
        self._conn = None

    def _rows(self, sql: str, params: Sequence[Any], doing: str) -> list[tuple[Any, ...]]:
        """Rows of a constant statement with ``params``; ``SourceError`` naming ``doing``."""
        if self._conn is None or not self._conn.open:
            self._conn = connect(self._endpoint, "connecting for catalog queries")
        try:
            with self._conn.cursor() as cur:
                cur.execute(sql, tuple(params))
                return list(cur.fetchall())
        except pymysql.MySQLError as exc:
            self.close()
            raise translate(exc, doing) from exc

    def tables(self) -> list[TableId]:
        """Every user table (``BASE TABLE``) of every database but the server's own, sorted."""
        return [TableId(db, name) for db, name in self._rows(_TABLES, SYSTEM_DATABASES, "listing tables")]

    def describe(self, table: TableId) -> MariaDbTableInfo | None:
        """The table as ``information_schema`` has it now, or None if it does not exist."""
        head = self._rows(_TABLE, (table.schema, table.table), f"describing {table}")
        if not head:
            return None
        params = (table.schema, table.table)
        found = self._rows(_COLUMNS, params * 2, f"describing {table}")
        columns = tuple(
            MariaDbColumn(name, int(position), data_type.lower(), column_type, nullable == "YES", charset,
                          None if scale is None else int(scale), None if precision is None else int(precision))
            for name, position, data_type, column_type, nullable, charset, scale, precision, _ in found)
        indexes: dict[str, list[str]] = {}
        unique: set[str] = set()
        for index, non_unique, column in self._rows(_INDEXES, params, f"reading the indexes of {table}"):
            indexes.setdefault(index, []).append(column)
            if int(non_unique) == 0:
                unique.add(index)
        rows = head[0][0]
        return MariaDbTableInfo(
            table_id=table,
            sql_types={c.name: c.column_type for c in columns},
            not_null=frozenset(c.name for c in columns if not c.nullable),
            primary_key=tuple(indexes.get("PRIMARY", ())),
            unique_columns=frozenset(cols[0] for name, cols in indexes.items() if name in unique and len(cols) == 1),
            estimated_rows=None if rows is None else int(rows),
            columns=columns,
            schema_version=str(found[0][8]) if found and found[0][8] is not None else None,
        )

    def rows_for(self, table: TableDescription) -> MariaDbTableRows[ChangeT]:
        """How chunk rows of ``table`` (a ``MariaDbTableInfo`` from :meth:`describe`; ``TypeError`` for any
        other description) become change-event rows: its captured columns, in table order; ``SourceError`` when
        ``convert_for`` refuses the table."""
        if not isinstance(table, MariaDbTableInfo):
            msg = f"{type(table).__name__} is not a description of a MariaDB table (MariaDbTableInfo)"
            raise TypeError(msg)
        db, name = table.table_id.schema, table.table_id.table
        captured = tuple(c for c in table.columns if self._capture.is_column_captured(db, name, c.name))
        convert = self._convert if self._convert_for is None else self._convert_for(table)
        return MariaDbTableRows(table, captured, convert, self._wrap)
