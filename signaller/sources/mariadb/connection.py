"""Plain (non-replication) MariaDB connections for snapshots, the catalog and signal writes.

:func:`connect` opens a PyMySQL connection in autocommit with the session the chunk SQL and checked
filters are written for (:data:`~signaller.sources.mariadb.chunk_sql.SESSION_SQL_MODE`, ``utf8mb4``, UTC
``time_zone`` so ``timestamp`` text is UTC as in the binlog) and no value converters: every value comes
back as the server's text (``str``), bytes of binary columns as ``bytes``. :func:`translate` maps driver
errors to ``SourceError`` (transient: the server could not be reached or went away, lock waits,
deadlocks; terminal: everything the server refused). Keeps no state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pymysql
import pymysql.converters

from signaller.config import SignallerConfig
from signaller.errors import SourceError, TerminalSourceError, TransientSourceError
from signaller.sources.mariadb.catalog import connection_settings
from signaller.sources.mariadb.chunk_sql import SESSION_SQL_MODE, quote_literal

__all__ = ["Endpoint", "connect", "translate"]

ENCODERS: dict[Any, Any] = {k: v for k, v in pymysql.converters.conversions.items() if not isinstance(k, int)}
"""PyMySQL's conversions without its decoders (the integer keys): results stay the server's text."""
TRANSIENT_CODES = frozenset({1040, 1053, 1205, 1213, 1927, 2002, 2003, 2006, 2013, 2055})
"""Too many connections, shutdown, lock wait timeout, deadlock, connection killed, cannot connect,
server gone away, lost connection."""


@dataclass(frozen=True)
class Endpoint:
    """Where and as whom to connect. ``password`` is a secret: never log it."""

    host: str
    port: int
    user: str
    password: str
    database: str | None = None

    @classmethod
    def of(cls, config: SignallerConfig) -> Endpoint:
        """The endpoint of ``config``'s ``database.*`` settings, as the binlog stream connects
        (:func:`~signaller.sources.mariadb.catalog.connection_settings`: ``database.port`` defaults to
        3306; MariaDB has no ``database.dbname``: statements name each table's database)."""
        settings = connection_settings(config)
        return cls(settings["host"], settings["port"], settings["user"], settings["password"])


def translate(exc: Exception, doing: str) -> SourceError:
    """The ``SourceError`` a PyMySQL error while ``doing`` becomes (see the module docstring)."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    text = f"MariaDB error while {doing}: {exc.args[1] if len(exc.args) > 1 else exc}"
    if isinstance(exc, pymysql.err.InterfaceError) or code in TRANSIENT_CODES:
        return TransientSourceError(text)
    return TerminalSourceError(text)


def connect(endpoint: Endpoint, doing: str, **session: str | int) -> Any:
    """An autocommit connection with the module's session, plus ``session``'s variables (names are
    the caller's constants, values quoted); ``SourceError`` naming ``doing`` if it cannot be opened."""
    try:
        conn = pymysql.connect(host=endpoint.host, port=endpoint.port, user=endpoint.user, password=endpoint.password,
                               database=endpoint.database, charset="utf8mb4", autocommit=True, conv=ENCODERS,
                               connect_timeout=10)
    except pymysql.MySQLError as exc:
        raise TransientSourceError(f"cannot connect to MariaDB at {endpoint.host}:{endpoint.port} while {doing}: "
                                   f"{exc.args[1] if len(exc.args) > 1 else exc}") from exc
    settings = {"sql_mode": SESSION_SQL_MODE, "time_zone": "+00:00", **session}
    assignments = ", ".join(f"SESSION {name} = {value if isinstance(value, int) else quote_literal(value)}"
                            for name, value in settings.items())
    try:
        with conn.cursor() as cur:
            cur.execute(f"SET {assignments}")
    except pymysql.MySQLError as exc:
        conn.close()
        raise translate(exc, doing) from exc
    return conn
