"""Writing one signal row into MariaDB's signal table (``signaller signal send --channel source``).

:func:`write_signal` (the shape of ``SourceKind.write_signal``) runs one committed ``INSERT INTO
<database>.<table> (id, type, data)`` on a connection of its own and closes it; the running sidecar reads
the row when it reaches it in the binlog. The statement is written whole (backquoted names, escaped
literals for the connection's fixed ``sql_mode``) and run without a parameter list. Failures raise
:class:`~signaller.errors.SourceError`: transient (MariaDB could not be reached or the connection was lost:
the signal was not delivered) or terminal (MariaDB, or the quoting, refused the row). Keeps no state.
"""

from __future__ import annotations

import json
from typing import Any

import pymysql

from signaller.config import SignallerConfig
from signaller.errors import SourceError, TerminalSourceError
from signaller.model import TableId
from signaller.sources.mariadb.chunk_sql import quote_ident, quote_literal
from signaller.sources.mariadb.connection import Endpoint, connect, translate

__all__ = ["insert_signal", "write_signal"]


def insert_signal(endpoint: Endpoint, table: TableId, signal: dict[str, Any]) -> None:
    """INSERT ``signal``'s ``id``, ``type`` and ``data`` (as JSON text) into ``table`` at ``endpoint``, committed."""
    try:
        values = ", ".join(quote_literal(value) for value in (signal["id"], signal["type"], json.dumps(signal["data"])))
        target = f"{quote_ident(table.schema)}.{quote_ident(table.table)}"
    except SourceError as exc:
        raise TerminalSourceError(f"cannot write the signal to {table}: {exc}") from exc
    connection = connect(endpoint, f"writing a signal to {table}")
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {target} (id, type, data) VALUES ({values})")
    except pymysql.MySQLError as exc:
        raise translate(exc, f"writing a signal to {table}") from exc
    finally:
        connection.close()


def write_signal(settings: SignallerConfig, table: TableId, signal: dict[str, Any]) -> None:
    """INSERT ``signal`` into ``table`` of the MariaDB server ``settings`` names (see :func:`insert_signal`)."""
    insert_signal(Endpoint.of(settings), table, signal)
