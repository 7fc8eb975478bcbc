"""PostgreSQL's chunk reader for incremental snapshots: max keys, chunks, and the watermarks.

``PostgresChunkReader`` implements :class:`signaller.sources.base.ChunkReader`. Watermarks go to the
signal table (``signal.data.collection``) as Debezium writes them (``<chunk>-open``/``-close`` rows,
``insert_insert`` or ``insert_delete``); without a signal table they are transactional
logical-decoding messages (``pg_logical_emit_message``), which need no table and no write privilege
on user tables. Every write commits before returning, so its position in the log is fixed before the
chunk SELECT (open) or after it (close).

The connection sets the output formats the value converters expect (ISO dates, ``postgres``
intervals, hex bytea) so ``::text`` values match pgoutput's text tuples.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import orjson
import psycopg2

from signaller.model import TableId, parse_lsn
from signaller.sources.base import (
    ChunkReader,
    ChunkRest,
    ChunkSchemaChanged,
    ChunkTable,
    Key,
    RawRow,
    chunk_query_error,
)
from signaller.sources.postgres.catalog import connect, translate
from signaller.sources.postgres.chunk_sql import chunk_query, count_query, lock_and_version, max_key_query
from signaller.sources.postgres.reader import MESSAGE_PREFIX
from signaller.sources.postgres.sqltext import quote_ident, quote_literal
from signaller.sources.watermarks import debezium_metadata_text

RAW_TEXT = psycopg2.extensions.new_type(
    tuple(oid for oid, caster in psycopg2.extensions.string_types.items() if caster is not psycopg2.STRING),
    "SIGNALLER_RAW_TEXT", lambda value, _cursor: value)
"""A typecaster returning every value as PostgreSQL sent it (its output function's text). Casting in
SQL instead (``col::text``) is not the same: booleans become ``true``/``false`` instead of ``t``/``f``,
``char(n)`` loses its padding and ``inet`` gains a netmask. The string types (``text``, ``varchar``,
``char(n)``, ``name``, ``"char"``) keep psycopg2's own caster, which returns that text as it is, without a
Python call per value: the chunk query's rendered JSON is ``text``, and a fetch of the bench's rows took
0.65 -> 0.52 µs of CPU per row."""

SESSION_SETUP = ("SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres'; SET bytea_output = 'hex'; "
                 "SET standard_conforming_strings = on")
"""Output formats the value converters expect, and the string syntax checked filters are written for
(``'a\\b'`` is a, backslash, b: PostgreSQL's default, set here whatever the server's configuration)."""

BEGIN_SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
"""A chunk read's transaction: its one snapshot, taken at its first query (``pg_current_snapshot()``), is the
chunk query's too."""


@dataclass(frozen=True)
class VisibleSnapshot:
    """``pg_current_snapshot()``: ``xmin:xmax:xip,...`` (64-bit transaction ids); PostgreSQL's
    :class:`~signaller.sources.base.TransactionVisibility`."""

    xmin: int
    xmax: int
    xip: frozenset[int]

    @classmethod
    def parse(cls, text: str) -> VisibleSnapshot:
        """Parse ``pg_current_snapshot()``'s text ``xmin:xmax:xip,...``; ``ValueError`` if it has another form."""
        xmin, xmax, xip = text.split(":")
        return cls(int(xmin), int(xmax), frozenset(int(x) for x in xip.split(",") if x))

    def widen(self, xid32: int) -> int:
        """A 32-bit xid from the log as the 64-bit xid nearest below ``xmax``'s epoch."""
        epoch = self.xmax >> 32
        candidate = (epoch << 32) | xid32
        if candidate > self.xmax + (1 << 31):
            candidate -= 1 << 32
        return candidate

    def sees(self, xid32: int) -> bool:
        """Whether the snapshot saw the effects of transaction ``xid32`` (committed before it)."""
        xid = self.widen(xid32)
        return xid < self.xmin or (xid < self.xmax and xid not in self.xip)


def snapshot_statement(table: ChunkTable) -> str:
    """A chunk read's first statement(s) in its transaction, returning ``pg_current_snapshot()`` (and, when the
    table has a ``schema_version`` to check, the table locked first and its current version:
    ``chunk_sql.lock_and_version``)."""
    if table.schema_version is None:
        return "SELECT pg_current_snapshot()::text, NULL"
    return lock_and_version(table)


def checked_snapshot(table: ChunkTable, row: tuple[Any, ...]) -> VisibleSnapshot:
    """The snapshot of :func:`snapshot_statement`'s row; :class:`ChunkSchemaChanged` when the table's schema
    version is not the one its columns were described with."""
    text, version = row
    if table.schema_version is not None and version != table.schema_version:
        raise ChunkSchemaChanged(f"the columns of {table.schema}.{table.name} changed since they were described "
                                 f"(schema version {table.schema_version} -> {version}): the chunk is read again")
    return VisibleSnapshot.parse(text)


class PostgresChunkReader(ChunkReader):
    """Chunk reads and watermark writes on one autocommit connection (see
    :class:`~signaller.sources.base.ChunkReader` for the contract). Not thread-safe."""

    def __init__(self, dsn: str, signal_table: TableId | None, strategy: str) -> None:
        self._dsn = dsn
        self._signal_table = signal_table
        self._strategy = strategy
        self._conn: Any = None
        self._cursor_conn: Any = None

    def _cursor(self, raw: bool = False) -> Any:
        """A cursor; with ``raw``, every value comes back as the text of the type's output function
        (what pgoutput sends), so snapshot rows decode exactly like streamed ones."""
        if self._conn is None or self._conn.closed:
            self._conn = connect(self._dsn, "connecting for incremental snapshots")
            with self._conn.cursor() as cur:
                cur.execute(SESSION_SETUP)
        cursor = self._conn.cursor()
        if raw:
            psycopg2.extensions.register_type(RAW_TEXT, cursor)
        return cursor

    def close(self) -> None:
        """Close the connections if open; never raises, and the next query connects again."""
        for conn in (self._conn, self._cursor_conn):
            with contextlib.suppress(Exception):
                if conn is not None:
                    conn.close()

    def _run(self, doing: str, sql: str, params: Any = None, raw: bool = False) -> list[tuple[Any, ...]]:
        """Run ``sql`` and return its rows. ``params`` only with constant statement text: psycopg2 then reads
        every ``%`` as a placeholder, so statements that carry names or filters are written whole (see
        ``signaller.sources.postgres.sqltext``) and run without parameters."""
        try:
            with self._cursor(raw) as cur:
                cur.execute(sql, params)
                return list(cur.fetchall()) if cur.description else []
        except psycopg2.Error as exc:
            if self._conn is not None and self._conn.closed:
                self._conn = None
            raise translate(exc, doing) from exc

    # -- reads ----------------------------------------------------------------------------
    def max_key(self, table: ChunkTable) -> Key | None:
        """The chunk key of the table's last row in key order (within its filter), None if no row matches;
        ``ChunkQueryError`` if the query fails."""
        try:
            rows = self._run(f"reading the maximum key of {table.schema}.{table.name}", max_key_query(table),
                             raw=True)
        except Exception as exc:
            raise chunk_query_error(exc) from exc
        return tuple(rows[0]) if rows else None

    def count_rows(self, table: ChunkTable, upper: Key) -> int:
        """Rows up to the maximum key ``upper`` within the table's filter (an exact count)."""
        sql = count_query(table, upper)
        try:
            rows = self._run(f"counting the rows of {table.schema}.{table.name}", sql)
        except Exception as exc:
            raise chunk_query_error(exc) from exc
        return int(rows[0][0])

    def read_chunk(self, table: ChunkTable, lower: Key | None, upper: Key | None,
                   limit: int) -> list[RawRow]:
        """At most ``limit`` rows with ``lower < key <= upper`` (a None bound is open) in key order, every value as its
        type's text: the table's columns, then the chunk-key values; ``ChunkQueryError`` if the query fails."""
        sql = chunk_query(table, lower, upper, limit)
        try:
            return self._run(f"reading a chunk of {table.schema}.{table.name}", sql, raw=True)
        except Exception as exc:
            raise chunk_query_error(exc) from exc

    def read_chunk_seen(self, table: ChunkTable, lower: Key | None, upper: Key | None,
                        limit: int) -> tuple[list[RawRow], VisibleSnapshot]:
        """The chunk :meth:`read_chunk` reads and ``pg_current_snapshot()`` of the snapshot it was read in (one
        REPEATABLE READ transaction): a commit logical decoding sent before the open watermark may still be
        invisible to it (see ``signaller.snapshot.visibility``). ``ChunkQueryError`` if the query fails."""
        sql = chunk_query(table, lower, upper, limit)
        try:
            cur = self._cursor(raw=True)
            try:
                cur.execute(f"{BEGIN_SNAPSHOT}; {snapshot_statement(table)}")
                snapshot = checked_snapshot(table, cur.fetchone())
                cur.execute(sql)
                rows = list(cur.fetchall())
                cur.execute("COMMIT")
            finally:
                cur.close()
        except ChunkSchemaChanged:
            self._rollback()
            raise
        except psycopg2.Error as exc:
            self._rollback()
            if self._conn is not None and self._conn.closed:
                self._conn = None
            raise chunk_query_error(translate(exc, f"reading a chunk of {table.schema}.{table.name}")) from exc
        return rows, snapshot

    def read_chunk_streaming(self, table: ChunkTable, lower: Key | None, upper: Key | None, limit: int,
                             first: int) -> tuple[list[RawRow], ChunkRest | None, VisibleSnapshot]:
        """The chunk :meth:`read_chunk_seen` reads, through a server-side cursor on a second connection: its first
        ``first`` rows now, (when there may be more) the rest to fetch in slices later, and the snapshot's
        visibility. The cursor's query runs in a REPEATABLE READ transaction on the snapshot taken before it was
        declared (now, before this returns), so rows fetched later are as of now: the close watermark may be
        written once this returns. ``ChunkQueryError`` if the query fails."""
        sql = chunk_query(table, lower, upper, limit)
        doing = f"reading a chunk of {table.schema}.{table.name}"
        try:
            conn = self._cursor_conn
            if conn is None or conn.closed:
                conn = self._cursor_conn = connect(self._dsn, "connecting for incremental snapshot chunks")
                conn.autocommit = True
                with conn.cursor() as cur:
                    cur.execute(SESSION_SETUP)
                conn.set_session(isolation_level="REPEATABLE READ", readonly=True, autocommit=False)
            with conn.cursor() as cur:
                cur.execute(snapshot_statement(table))
                snapshot = checked_snapshot(table, cur.fetchone())
            cursor = conn.cursor(name="signaller_chunk")
            psycopg2.extensions.register_type(RAW_TEXT, cursor)
            cursor.execute(sql)
            rows = cursor.fetchmany(first)
        except ChunkSchemaChanged:
            self._abandon_cursor()
            raise
        except psycopg2.Error as exc:
            self._abandon_cursor()
            raise chunk_query_error(translate(exc, doing)) from exc
        rest = _CursorRest(self, cursor, doing)
        if len(rows) < first:
            rest.close()
            return rows, None, snapshot
        return rows, rest, snapshot

    def _rollback(self) -> None:
        """End the explicit transaction of a chunk read that failed (the connection is in autocommit mode, where
        ``connection.rollback()`` sends nothing), so the next statement (the close watermark) runs; never raises."""
        with contextlib.suppress(Exception), self._conn.cursor() as cur:
            cur.execute("ROLLBACK")

    def _abandon_cursor(self) -> None:
        conn = self._cursor_conn
        with contextlib.suppress(Exception):
            if conn is not None and not conn.closed:
                conn.rollback()
        if conn is not None and conn.closed:
            self._cursor_conn = None

    def read_chunk_visible(self, table: ChunkTable, lower: Key | None, upper: Key | None,
                           limit: int) -> tuple[list[RawRow], VisibleSnapshot, int]:
        """Read-only watermarking: the chunk, the MVCC snapshot it was read with, and a WAL
        position (the high watermark) taken after the read, from one REPEATABLE READ transaction.
        Nothing is written."""
        sql = chunk_query(table, lower, upper, limit)
        try:
            cur = self._cursor(raw=True)
            try:
                cur.execute(f"{BEGIN_SNAPSHOT}; {snapshot_statement(table)}")
                snapshot = checked_snapshot(table, cur.fetchone())
                cur.execute(sql)
                rows = list(cur.fetchall())
                cur.execute("COMMIT")
                # The insert location, not pg_current_wal_lsn() (the write location): a commit with
                # synchronous_commit=off is visible once its record is inserted, possibly before it is
                # written, and the high watermark must not be below any commit the snapshot saw.
                cur.execute("SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
                            "ELSE pg_current_wal_insert_lsn() END)::text")
                high = parse_lsn(cur.fetchone()[0])
            finally:
                cur.close()
        except ChunkSchemaChanged:
            self._rollback()
            raise
        except psycopg2.Error as exc:
            self._rollback()
            raise chunk_query_error(translate(exc, f"reading a chunk of {table.schema}.{table.name}")) from exc
        return rows, snapshot, high

    # -- watermarks -----------------------------------------------------------------------
    def write_marker(self, chunk_id: str, is_open: bool, metadata: dict[str, Any]) -> None:
        """Write and commit the open or close watermark of ``chunk_id``."""
        kind = "open" if is_open else "close"
        if self._signal_table is None:
            body = orjson.dumps({"id": f"{chunk_id}-{kind}", "type": f"snapshot-window-{kind}", "data": metadata})
            self._run("writing a watermark", "SELECT pg_logical_emit_message(true, "
                      f"{quote_literal(MESSAGE_PREFIX)}, {quote_literal(body.decode())})")
            return
        # Written whole and run without parameters: the signal table's name may hold a '%'.
        target = f"{quote_ident(self._signal_table.schema)}.{quote_ident(self._signal_table.table)}"
        if not is_open and self._strategy == "insert_delete":
            self._run("closing a snapshot window",
                      f"DELETE FROM {target} WHERE id = {quote_literal(f'{chunk_id}-open')}")
            return
        values = (f"{chunk_id}-{kind}", f"snapshot-window-{kind}", debezium_metadata_text(metadata))
        self._run("writing a watermark", f"INSERT INTO {target} VALUES ({', '.join(map(quote_literal, values))})")


class _CursorRest(ChunkRest):
    """The rest of a chunk on ``PostgresChunkReader``'s cursor connection (see ``read_chunk_streaming``)."""

    def __init__(self, reader: PostgresChunkReader, cursor: Any, doing: str) -> None:
        self._reader = reader
        self._cursor: Any = cursor
        self._doing = doing

    def fetch(self, count: int) -> list[RawRow]:
        """The next ``count`` rows at most; fewer means the chunk is complete (the cursor is closed then)."""
        if self._cursor is None:
            return []
        try:
            rows: list[RawRow] = self._cursor.fetchmany(count)
        except psycopg2.Error as exc:
            self.close()
            raise chunk_query_error(translate(exc, self._doing)) from exc
        if len(rows) < count:
            self.close()
        return rows

    def close(self) -> None:
        """End the cursor's transaction; never raises."""
        cursor, self._cursor = self._cursor, None
        if cursor is not None:
            with contextlib.suppress(Exception):
                cursor.close()
            self._reader._abandon_cursor()

