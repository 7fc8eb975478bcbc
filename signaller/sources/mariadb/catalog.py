"""The MariaDB catalog connection of a capture session: the server's binlog settings and position, the
tables, and each table's columns and primary key as ``information_schema`` describes them now.

One PyMySQL connection (autocommit), opened by :class:`Catalog`; every call re-reads the catalog (an
ALTER since the last call is seen). Driver errors become ``TransientSourceError`` (connection lost,
server gone: worth a new session) or ``TerminalSourceError`` (refused). Nothing here survives a restart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import pymysql

from signaller.config import SignallerConfig
from signaller.config.binlog import DEFAULT_BINLOG_PORT
from signaller.errors import SourceError, TerminalSourceError, TransientSourceError
from signaller.model import TableId
from signaller.sources.mariadb.values import MariaDbColumn

SYSTEM_DATABASES = frozenset({"mysql", "information_schema", "performance_schema", "sys"})
"""Databases Debezium's binlog connectors never capture (``table.ignore.builtin``)."""
REQUIRED_SETTINGS = {"log_bin": "1", "binlog_format": "ROW", "binlog_row_image": "FULL",
                     "binlog_row_metadata": "FULL"}
"""Server settings the binlog source needs, with the value it needs (``binlog_row_metadata=FULL`` gives the
binlog client column names, signedness, charsets and enum/set values)."""

_CONNECTION_LOST = (2003, 2006, 2013, 2055)


def connection_settings(config: SignallerConfig) -> dict[str, Any]:
    """PyMySQL ``connect`` keywords of ``config``'s database (password included: never log them)."""
    database = config.database
    port = database.port if "database.port" in config.raw else DEFAULT_BINLOG_PORT
    return {"host": database.hostname, "port": port, "user": database.user,
            "password": database.password.reveal() if database.password else "", "charset": "utf8mb4",
            "connect_timeout": 10}


def source_error(exc: BaseException, what: str) -> SourceError:
    """A PyMySQL error while doing ``what``, as a ``TransientSourceError`` (lost or refused connection) or a
    ``TerminalSourceError`` (anything the server refused)."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    msg = f"MariaDB {what} failed: {exc}"
    if isinstance(exc, pymysql.err.OperationalError) and (code in _CONNECTION_LOST or code is None):
        return TransientSourceError(msg)
    if isinstance(exc, pymysql.err.InterfaceError | ConnectionError | OSError):
        return TransientSourceError(msg)
    return TerminalSourceError(msg)


class Catalog:
    """The catalog queries of one session (see the module docstring). Not thread-safe."""

    def __init__(self, config: SignallerConfig) -> None:
        self._settings = connection_settings(config)
        self._conn: Any = None

    def _query(self, sql: str, args: Sequence[Any] = (), what: str = "catalog query") -> list[tuple[Any, ...]]:
        try:
            if self._conn is None:
                self._conn = pymysql.connect(autocommit=True, **self._settings)
            with self._conn.cursor() as cursor:
                cursor.execute(sql, args)
                return list(cursor.fetchall())
        except pymysql.err.Error as exc:
            self.close()
            raise source_error(exc, what) from exc

    def variables(self, *names: str) -> dict[str, str]:
        """The global values of server variables ``names`` (lower-case names; missing ones left out)."""
        marks = ",".join(["%s"] * len(names))
        rows = self._query(f"SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
                           f"WHERE LOWER(VARIABLE_NAME) IN ({marks})", names, "reading server variables")
        return {str(name): str(value) for name, value in rows}

    def server_id(self) -> int:
        """The server's ``@@server_id`` (0 if the server reports none)."""
        return _int(self.variables("server_id").get("server_id")) or 0

    def check_binlog(self) -> None:
        """``TerminalSourceError`` for a server that is not MariaDB (the binlog reader speaks MariaDB's dialect:
        its GTIDs and replication commands), and naming each server setting the binlog source needs and the
        server lacks."""
        version = str(self._query("SELECT VERSION()", what="reading the server version")[0][0])
        if "mariadb" not in version.lower():
            msg = (f"the server is not MariaDB (VERSION() = {version!r}): signaller's binlog source reads MariaDB's "
                   "binlog (MariaDB GTIDs and replication commands); MySQL servers are not supported yet (the "
                   "MySqlConnector class is accepted for MariaDB servers); capture MySQL with Debezium's MySQL "
                   "connector")
            raise TerminalSourceError(msg)
        found = self.variables(*REQUIRED_SETTINGS)
        wrong = [f"{name}={found.get(name, 'unset')} (needs {value})" for name, value in REQUIRED_SETTINGS.items()
                 if found.get(name, "").upper() not in (value, "ON" if value == "1" else value)]
        if wrong:
            msg = ("MariaDB cannot be captured: " + ", ".join(wrong)
                   + "; set them in the server's configuration (binlog_row_metadata can be set with SET GLOBAL)")
            raise TerminalSourceError(msg)

    def binary_logs(self) -> list[str]:
        """The binlog files the server still has, oldest first."""
        return [str(row[0]) for row in self._query("SHOW BINARY LOGS", what="listing the binlog files")]

    def binlog_status(self) -> tuple[str, int, str]:
        """The server's current binlog file, position and ``@@gtid_binlog_pos``."""
        rows = self._query("SHOW MASTER STATUS", what="reading the binlog position")
        gtid = self._query("SELECT @@gtid_binlog_pos", what="reading the GTID position")
        if not rows:
            msg = "MariaDB has no binlog (log_bin is off): set log_bin in the server's configuration"
            raise TerminalSourceError(msg)
        return str(rows[0][0]), int(rows[0][1]), str(gtid[0][0] or "")

    def tables(self) -> list[TableId]:
        """Every base table outside the system databases, sorted."""
        rows = self._query("SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = "
                           "'BASE TABLE'", what="listing tables")
        return sorted(TableId(str(db), str(name)) for db, name in rows if str(db).lower() not in SYSTEM_DATABASES)

    def columns(self, table: TableId) -> list[MariaDbColumn]:
        """The table's columns in ordinal order (empty if it does not exist)."""
        rows = self._query(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, NUMERIC_PRECISION, NUMERIC_SCALE, "
            "DATETIME_PRECISION, CHARACTER_MAXIMUM_LENGTH, CHARACTER_SET_NAME, COLUMN_DEFAULT "
            "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (table.schema, table.table), f"describing {table}")
        checks = self._query(
            "SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = %s "
            "AND TABLE_NAME = %s", (table.schema, table.table), f"reading the checks of {table}")
        clauses = " ".join(str(row[0]).lower() for row in checks)
        return [MariaDbColumn(str(name), str(data_type).lower(), str(column_type), nullable == "YES",
                              _int(precision), _int(scale), _int(datetime_precision), _int(length),
                              None if charset is None else str(charset),
                              f"json_valid(`{str(name).lower()}`)" in clauses,
                              None if default is None else str(default))
                for name, data_type, column_type, nullable, precision, scale, datetime_precision, length, charset,
                default in rows]

    def primary_key(self, table: TableId) -> tuple[str, ...]:
        """The table's primary key columns in key order (empty without one)."""
        rows = self._query("SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = %s AND "
                           "TABLE_NAME = %s AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX",
                           (table.schema, table.table), f"reading the primary key of {table}")
        return tuple(str(row[0]) for row in rows)

    def show_create(self, table: TableId) -> str | None:
        """``SHOW CREATE TABLE`` of ``table`` (the text Debezium's schema snapshot records), None if it does not
        exist or is a view."""
        try:
            rows = self._query(f"SHOW CREATE TABLE {quote_name(table.schema)}.{quote_name(table.table)}",
                               what=f"reading the definition of {table}")
        except TerminalSourceError as exc:
            if "1146" in str(exc):  # ER_NO_SUCH_TABLE: dropped since it was listed
                return None
            raise
        if not rows or len(rows[0]) != 2:
            return None
        return str(rows[0][1])

    def database_charsets(self) -> dict[str, str]:
        """Each database's default character set."""
        rows = self._query("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA",
                           what="reading the databases' character sets")
        return {str(name): str(charset) for name, charset in rows}

    def database_collations(self) -> dict[str, tuple[str, str]]:
        """Each database's default character set and collation."""
        rows = self._query("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM "
                           "information_schema.SCHEMATA", what="reading the databases' collations")
        return {str(name): (str(charset), str(collation)) for name, charset, collation in rows}

    def close(self) -> None:
        """Close the connection if open; never raises (the next call reconnects)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


def quote_name(name: str) -> str:
    """``name`` as a backquoted MariaDB identifier."""
    return "`" + name.replace("`", "``") + "`"


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
