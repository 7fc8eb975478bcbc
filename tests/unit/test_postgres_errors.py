"""Which PostgreSQL driver errors the sidecar retries (transient) and which stop it (terminal)."""

from __future__ import annotations

import psycopg2

from signaller.errors import TerminalSourceError, TransientSourceError
from signaller.sources.postgres.catalog import translate


def test_a_server_crash_under_the_replication_stream_is_transient() -> None:
    # Found by the chaos run (issue 17): `pg_ctl restart -m immediate` while the sidecar streams makes psycopg2
    # raise a plain DatabaseError without SQLSTATE; it stopped the sidecar instead of a reconnect.
    crash = psycopg2.DatabaseError("error with status PGRES_COPY_BOTH and no message from the libpq")
    assert isinstance(translate(crash, "reading the replication stream"), TransientSourceError)
    closed = psycopg2.InterfaceError("connection already closed")
    assert isinstance(translate(closed, "acknowledging"), TransientSourceError)
    assert isinstance(translate(psycopg2.OperationalError("server closed the connection unexpectedly"), "x"),
                      TransientSourceError)


def test_a_server_shutdown_ending_the_replication_stream_is_transient() -> None:
    # Found by the full chaos run (issue 17): `pg_ctl restart -m fast` ends the COPY stream before closing the
    # connection, and the next read raises "no COPY in progress" without SQLSTATE; the sidecar stopped (exit 1)
    # instead of reconnecting.
    ended = psycopg2.DatabaseError("no COPY in progress\n")
    assert isinstance(translate(ended, "reading the replication stream"), TransientSourceError)
    assert isinstance(translate(psycopg2.ProgrammingError("no COPY in progress"), "x"), TransientSourceError)


def test_other_errors_without_a_lost_connection_stay_terminal() -> None:
    assert isinstance(translate(psycopg2.DatabaseError("invalid input syntax for type pg_lsn"), "x"),
                      TerminalSourceError)
    assert isinstance(translate(psycopg2.ProgrammingError("syntax error at or near"), "x"), TerminalSourceError)
