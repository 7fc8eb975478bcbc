"""The MariaDB tables as they are at one binlog position: each table's columns and primary key, kept by
applying the DDL statements of the binlog in order (Debezium's in-memory schema of its schema history).

:class:`SchemaModel` starts from the tables of a schema snapshot (``SHOW CREATE TABLE`` texts) or of the
schema history, then takes each DDL statement of the stream (:meth:`SchemaModel.apply`), so rows logged
before an ``ALTER TABLE`` decode with the columns they were written with. :meth:`SchemaModel.apply` returns
the :class:`TableChange` of each table a statement created, altered or dropped (what Debezium's schema change
topic and schema history record). A statement that contradicts the model (altering a table it does not
know, dropping a column the table does not have) raises :class:`ModelError`; the caller decides whether that
matters (only for captured tables).

:func:`column_of` gives a column as the value converters take it
(:class:`~signaller.sources.mariadb.values.MariaDbColumn`, what ``information_schema.COLUMNS`` would say):
character sets resolved (column, else table, else database, else server default), implicit ``NOT NULL`` of
primary-key columns, MariaDB's default display widths left as written. Pure; not thread-safe; nothing here
survives a restart (the schema history does).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

from signaller.model import TableId
from signaller.sources.mariadb.ddl_statements import (
    AddColumn,
    AlterTable,
    ChangeColumn,
    ColumnSpec,
    CreateDatabase,
    CreateTable,
    DropColumn,
    DropDatabase,
    DropTable,
    RenameColumn,
    RenameTable,
    RenameTo,
    SetCharset,
    SetDefault,
    SetPrimaryKey,
    Statement,
    TableName,
)
from signaller.sources.mariadb.values import MariaDbColumn

__all__ = ["ModelError", "SchemaModel", "TableChange", "TableDef", "column_of"]

TEXT_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"})
"""Column types with a character set."""
_TEMPORAL = frozenset({"time", "datetime", "timestamp"})


class ModelError(ValueError):
    """A statement the model cannot apply (it names a table or column the model does not have)."""


@dataclass(frozen=True, slots=True)
class TableDef:
    """One table: its columns in table order, primary key in key order and default character set."""

    table_id: TableId
    columns: tuple[ColumnSpec, ...]
    primary_key: tuple[str, ...]
    charset: str

    def index_of(self, name: str) -> int:
        """The position of column ``name`` (case-insensitive, as MariaDB's column names); ``ModelError`` if absent."""
        lowered = name.lower()
        for index, column in enumerate(self.columns):
            if column.name.lower() == lowered:
                return index
        msg = f"{self.table_id} has no column {name!r} (its columns: {[c.name for c in self.columns]})"
        raise ModelError(msg)

    def has(self, name: str) -> bool:
        """Whether the table has column ``name`` (case-insensitive)."""
        return any(column.name.lower() == name.lower() for column in self.columns)


@dataclass(frozen=True, slots=True)
class TableChange:
    """What one statement did to one table: ``CREATE``, ``ALTER`` or ``DROP`` (``table`` None for a drop)."""

    kind: Literal["CREATE", "ALTER", "DROP"]
    table_id: TableId
    table: TableDef | None


def column_of(table: TableDef, spec: ColumnSpec) -> MariaDbColumn:
    """``spec`` of ``table`` as the value converters take it (see the module docstring)."""
    kind = spec.type_name
    params = spec.params
    if kind in ("enum", "set"):
        column_type = kind + "(" + ",".join("'" + p.replace("'", "''") + "'" for p in params) + ")"
    else:
        column_type = kind + (f"({','.join(params)})" if params else "")
    if spec.unsigned:
        column_type += " unsigned"
    if spec.zerofill:
        column_type += " zerofill"
    in_key = any(name.lower() == spec.name.lower() for name in table.primary_key)
    nullable = spec.nullable if spec.nullable is not None else not in_key
    precision = scale = datetime_precision = length = None
    if kind == "decimal":
        precision = int(params[0]) if params else 10
        scale = int(params[1]) if len(params) > 1 else 0
    elif kind in _TEMPORAL:
        datetime_precision = int(params[0]) if params else 0
    elif kind in ("char", "varchar", "binary", "varbinary"):
        length = int(params[0]) if params else 1
    charset = (spec.charset or table.charset) if kind in TEXT_TYPES else None
    return MariaDbColumn(spec.name, kind, column_type, nullable and not in_key, precision, scale, datetime_precision,
                         length, charset, spec.is_json, spec.default)


def _placed(columns: list[ColumnSpec], column: ColumnSpec, after: str | None, table: TableDef) -> list[ColumnSpec]:
    if after is None:
        return [*columns, column]
    if after == "":
        return [column, *columns]
    lowered = after.lower()
    for index, existing in enumerate(columns):
        if existing.name.lower() == lowered:
            return [*columns[: index + 1], column, *columns[index + 1:]]
    msg = f"{table.table_id} has no column {after!r} to place {column.name!r} after"
    raise ModelError(msg)


class SchemaModel:
    """The tables at one binlog position (see the module docstring)."""

    def __init__(self, server_charset: str = "utf8mb4") -> None:
        self.server_charset = server_charset
        self.tables: dict[TableId, TableDef] = {}
        self.database_charsets: dict[str, str] = {}

    def table(self, table: TableId) -> TableDef | None:
        """The definition of ``table``, None if the model does not have it."""
        return self.tables.get(table)

    def _id(self, name: TableName, default_db: str) -> TableId:
        database = name.database or default_db
        if not database:
            msg = f"table {name.name!r} is not qualified and the statement has no default database"
            raise ModelError(msg)
        return TableId(database, name.name)

    def _require(self, table: TableId) -> TableDef:
        found = self.tables.get(table)
        if found is None:
            msg = f"{table} is not known to the schema (no CREATE TABLE of it was seen)"
            raise ModelError(msg)
        return found

    def apply(self, statement: Statement, default_db: str) -> list[TableChange]:
        """Apply one statement run with default database ``default_db``; the tables it changed."""
        if isinstance(statement, CreateTable):
            return self._create(statement, default_db)
        if isinstance(statement, AlterTable):
            return self._alter(statement, default_db)
        if isinstance(statement, RenameTable):
            changes: list[TableChange] = []
            for old, new in statement.pairs:
                table = self._require(self._id(old, default_db))
                new_id = self._id(new, default_db)
                del self.tables[table.table_id]
                self.tables[new_id] = replace(table, table_id=new_id)
                changes += [TableChange("DROP", table.table_id, None),
                            TableChange("CREATE", new_id, self.tables[new_id])]
            return changes
        if isinstance(statement, DropTable):
            dropped = [self._id(name, default_db) for name in statement.tables]
            for table_id in dropped:
                self.tables.pop(table_id, None)
            return [TableChange("DROP", table_id, None) for table_id in dropped]
        if isinstance(statement, CreateDatabase):
            if statement.charset:
                self.database_charsets[statement.name] = statement.charset
            return []
        if isinstance(statement, DropDatabase):
            gone = [table_id for table_id in self.tables if table_id.schema == statement.name]
            for table_id in gone:
                del self.tables[table_id]
            self.database_charsets.pop(statement.name, None)
            return [TableChange("DROP", table_id, None) for table_id in gone]
        return []  # TRUNCATE and statements without effect on columns

    def _create(self, statement: CreateTable, default_db: str) -> list[TableChange]:
        table_id = self._id(statement.table, default_db)
        if statement.if_not_exists and table_id in self.tables:
            return []
        if statement.like is not None:
            source = self._require(self._id(statement.like, default_db))
            table = replace(source, table_id=table_id)
        else:
            charset = statement.charset or self.database_charsets.get(table_id.schema) or self.server_charset
            table = TableDef(table_id, statement.columns, statement.primary_key, charset)
        self.tables[table_id] = table
        return [TableChange("CREATE", table_id, table)]

    def _alter(self, statement: AlterTable, default_db: str) -> list[TableChange]:
        table_id = self._id(statement.table, default_db)
        if statement.if_exists and table_id not in self.tables:
            return []
        table = self._require(table_id)
        start = table
        changes: list[TableChange] = []
        for action in statement.actions:
            if isinstance(action, RenameTo):
                new_id = self._id(action.table, default_db)
                changes.append(TableChange("DROP", table.table_id, None))
                table = replace(table, table_id=new_id)
                continue
            table = _altered(table, action)
        if table.table_id != start.table_id:
            del self.tables[start.table_id]
            self.tables[table.table_id] = table
            return [*changes, TableChange("CREATE", table.table_id, table)]
        self.tables[table_id] = table
        return [TableChange("ALTER", table_id, table)]

    def load(self, tables: Iterable[TableDef]) -> None:
        """Put ``tables`` in the model (a schema snapshot), replacing what it had of them."""
        for table in tables:
            self.tables[table.table_id] = table


def _altered(table: TableDef, action: object) -> TableDef:
    columns = list(table.columns)
    if isinstance(action, AddColumn):
        if table.has(action.column.name):
            if action.if_not_exists:
                return table
            msg = f"{table.table_id} already has a column {action.column.name!r}"
            raise ModelError(msg)
        key = (*table.primary_key, action.column.name) if action.column.primary_key else table.primary_key
        return replace(table, columns=tuple(_placed(columns, action.column, action.after, table)), primary_key=key)
    if isinstance(action, DropColumn):
        if action.if_exists and not table.has(action.name):
            return table
        del columns[table.index_of(action.name)]
        lowered = action.name.lower()
        return replace(table, columns=tuple(columns),
                       primary_key=tuple(k for k in table.primary_key if k.lower() != lowered))
    if isinstance(action, ChangeColumn):
        if action.if_exists and not table.has(action.old):
            return table
        index = table.index_of(action.old)
        column = action.column
        old = action.old.lower()
        key = tuple(column.name if k.lower() == old else k for k in table.primary_key)
        if column.primary_key and not any(k.lower() == column.name.lower() for k in key):
            key = (*key, column.name)
        if action.after is None:
            columns[index] = column
        else:
            del columns[index]
            columns = _placed(columns, column, action.after, table)
        return replace(table, columns=tuple(columns), primary_key=key)
    if isinstance(action, RenameColumn):
        index = table.index_of(action.old)
        columns[index] = replace(columns[index], name=action.new)
        old = action.old.lower()
        return replace(table, columns=tuple(columns),
                       primary_key=tuple(action.new if k.lower() == old else k for k in table.primary_key))
    if isinstance(action, SetDefault):
        index = table.index_of(action.name)
        columns[index] = replace(columns[index], default=action.default)
        return replace(table, columns=tuple(columns))
    if isinstance(action, SetPrimaryKey):
        for name in action.columns:
            table.index_of(name)
        return replace(table, primary_key=action.columns)
    if isinstance(action, SetCharset):
        if action.convert:
            columns = [replace(c, charset=None, collation=None) if c.type_name in TEXT_TYPES else c
                       for c in columns]
        return replace(table, columns=tuple(columns), charset=action.charset)
    return table
