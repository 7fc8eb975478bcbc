"""The statements :func:`~signaller.sources.mariadb.ddl.parse_ddl` returns: what one DDL statement of a MariaDB
binlog says about tables and databases (columns as written, defaults as the catalog prints them). Immutable
values; no logic.
"""

from __future__ import annotations

from dataclasses import dataclass


class DdlSyntaxError(ValueError):
    """A statement the parser cannot read; the message names the token and its character offset."""


@dataclass(frozen=True, slots=True)
class TableName:
    """A table as a statement names it: ``database`` None when unqualified (the statement's default database)."""

    database: str | None
    name: str


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    """One column definition: ``type_name`` lower-case (``int``, ``varchar``, ``enum``...), ``params`` the
    type's arguments as written (lengths, precision/scale, ``enum``/``set`` values unquoted), ``nullable``
    None when the definition says neither ``NULL`` nor ``NOT NULL``, ``default`` as the catalog prints it."""

    name: str
    type_name: str
    params: tuple[str, ...] = ()
    unsigned: bool = False
    zerofill: bool = False
    charset: str | None = None
    collation: str | None = None
    nullable: bool | None = None
    default: str | None = None
    auto_increment: bool = False
    primary_key: bool = False
    comment: str | None = None
    generated: bool = False
    is_json: bool = False


@dataclass(frozen=True, slots=True)
class CreateTable:
    """``CREATE TABLE``: ``columns`` and ``primary_key`` (table-level or inline), ``charset`` the table's
    default character set when named, or ``like`` the table it copies. ``replace``: ``CREATE OR REPLACE``."""

    table: TableName
    columns: tuple[ColumnSpec, ...] = ()
    primary_key: tuple[str, ...] = ()
    charset: str | None = None
    like: TableName | None = None
    if_not_exists: bool = False
    replace: bool = False


@dataclass(frozen=True, slots=True)
class AddColumn:
    """``ADD COLUMN``: placed ``FIRST`` (``after`` ``""``), ``AFTER`` a column, or last (``after`` None)."""

    column: ColumnSpec
    after: str | None = None
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True)
class DropColumn:
    """``DROP COLUMN``."""

    name: str
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class ChangeColumn:
    """``MODIFY`` (``old`` = the new definition's name) or ``CHANGE old new-definition``, optionally moved."""

    old: str
    column: ColumnSpec
    after: str | None = None
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class RenameColumn:
    """``RENAME COLUMN old TO new``."""

    old: str
    new: str


@dataclass(frozen=True, slots=True)
class SetDefault:
    """``ALTER COLUMN name SET DEFAULT value`` (``default`` as the catalog prints it) or ``DROP DEFAULT``
    (``default`` None)."""

    name: str
    default: str | None


@dataclass(frozen=True, slots=True)
class SetPrimaryKey:
    """``ADD PRIMARY KEY (columns)``, or ``DROP PRIMARY KEY`` (empty ``columns``)."""

    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RenameTo:
    """``ALTER TABLE ... RENAME TO new``."""

    table: TableName


@dataclass(frozen=True, slots=True)
class SetCharset:
    """The table's default character set; ``convert``: ``CONVERT TO`` (every text column takes it too)."""

    charset: str
    convert: bool = False


AlterAction = AddColumn | DropColumn | ChangeColumn | RenameColumn | SetDefault | SetPrimaryKey | RenameTo | SetCharset


@dataclass(frozen=True, slots=True)
class AlterTable:
    """``ALTER TABLE``: its actions in order (index, constraint and option clauses left out)."""

    table: TableName
    actions: tuple[AlterAction, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class RenameTable:
    """``RENAME TABLE a TO b[, c TO d]``."""

    pairs: tuple[tuple[TableName, TableName], ...]


@dataclass(frozen=True, slots=True)
class DropTable:
    """``DROP TABLE``."""

    tables: tuple[TableName, ...]
    if_exists: bool = False


@dataclass(frozen=True, slots=True)
class TruncateTable:
    """``TRUNCATE [TABLE]``: the rows go, the columns stay."""

    table: TableName


@dataclass(frozen=True, slots=True)
class CreateDatabase:
    """``CREATE DATABASE``/``SCHEMA`` (``charset`` when named), or ``ALTER DATABASE`` (``alter``)."""

    name: str
    charset: str | None = None
    alter: bool = False


@dataclass(frozen=True, slots=True)
class DropDatabase:
    """``DROP DATABASE``/``SCHEMA``."""

    name: str


@dataclass(frozen=True, slots=True)
class OtherStatement:
    """A statement that changes no table definition (DML, ``GRANT``, indexes, views, routines, ``SET``...)."""

    keyword: str


@dataclass(frozen=True, slots=True)
class UnreadableStatement:
    """A table statement the parser cannot follow: ``tables`` it names (when its head was read) and why."""

    tables: tuple[TableName, ...]
    reason: str


Statement = (CreateTable | AlterTable | RenameTable | DropTable | TruncateTable | CreateDatabase | DropDatabase
             | OtherStatement | UnreadableStatement)
