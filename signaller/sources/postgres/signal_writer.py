"""Writing one signal row into PostgreSQL's signal table (``signaller signal send --channel source``).

:func:`write_signal` runs one committed ``INSERT INTO <signal.data.collection> (id, type, data)`` on a
connection of its own and closes it; the running sidecar reads the row when it reaches it in the change
stream. Failures raise :class:`~signaller.errors.SourceError`: transient (PostgreSQL could not be
reached, or the connection was lost while writing: the signal was not delivered) or terminal
(PostgreSQL, or the quoting, refused the row). Keeps no state.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg2

from signaller.config import SignallerConfig
from signaller.errors import SourceError, TerminalSourceError, TransientSourceError
from signaller.model import TableId
from signaller.sources.postgres.sqltext import quote_ident, quote_literal

__all__ = ["write_signal"]


def write_signal(settings: SignallerConfig, table: TableId, signal: dict[str, Any]) -> None:
    """INSERT ``signal``'s ``id``, ``type`` and ``data`` (as JSON text) into ``table``, committed."""
    # Written whole and run without parameters: psycopg2 would read a '%' in the table's name as a placeholder.
    try:
        values = ", ".join(quote_literal(value) for value in (signal["id"], signal["type"], json.dumps(signal["data"])))
        target = f"{quote_ident(table.schema)}.{quote_ident(table.table)}"
    except SourceError as exc:
        raise TerminalSourceError(f"cannot write the signal to {table}: {exc}") from exc
    statement = f"INSERT INTO {target} (id, type, data) VALUES ({values})"
    try:
        connection = psycopg2.connect(settings.database.libpq_dsn(connect_timeout="10"))
    except psycopg2.Error as exc:
        raise TransientSourceError(f"cannot connect to PostgreSQL at {settings.database.hostname}:"
                                   f"{settings.database.port}: {str(exc).strip()}") from exc
    try:
        with connection, connection.cursor() as cursor:
            cursor.execute(statement)
    except psycopg2.OperationalError as exc:
        raise TransientSourceError(f"lost PostgreSQL while writing to {table}: {str(exc).strip()}") from exc
    except psycopg2.Error as exc:
        raise TerminalSourceError(f"PostgreSQL refused the row in {table}: {str(exc).strip()}") from exc
    finally:
        connection.close()
