"""MariaDB's chunk reader for incremental snapshots: max keys, chunks, and the watermarks.

``MariaDbChunkReader`` implements :class:`signaller.sources.base.ChunkReader` on PyMySQL, with the SQL of
``chunk_sql`` (keyset pages compared and ordered by the server under the key's collation). Values come
back as the server's text (bytes as their hex text), the :data:`~signaller.sources.base.RawRow` the schema
provider's ``TableRows.row`` parses.

Watermarks are rows of the signal table (``signal.data.collection``, ``<database>.<table>``), as
Debezium's MySQL and MariaDB connectors write them: ``INSERT`` of ``<chunk>-open`` /
``snapshot-window-open`` and ``<chunk>-close`` / ``snapshot-window-close`` (``insert_insert``), or the
close as a ``DELETE`` of the open row (``insert_delete``); each commits (autocommit) before returning. The
``data`` of a watermark row holds the keys of the Debezium release being reproduced
(:data:`WATERMARK_KEYS_BEFORE_3_7` for the MariaDB connector's 3.5.0.Final: the window timestamps only;
3.7.0.Alpha1 added ``correlationId`` and ``dataCollectionId``, which the MySQL connector's rows keep).
MariaDB has no transactional log message, so without a signal table only the read-only mode works.

Read-only mode (``read.only=true``, nothing written): :meth:`MariaDbChunkReader.read_chunk_visible` reads
the chunk in ``START TRANSACTION WITH CONSISTENT SNAPSHOT``, whose binlog position MariaDB reports
exactly (``binlog_snapshot_file``/``_position``: every transaction committed before it is visible, none
after), and maps it to a GTID position with ``BINLOG_GTID_POS``. That position is both the visibility
(:class:`GtidVisibility`) and the high watermark: once the stream has passed it, every change the chunk
saw has been streamed. Debezium's MySQL read-only mode reads ``Executed_Gtid_Set`` before and after the
chunk instead, which brackets the snapshot; MariaDB's consistent-snapshot position is exact, so no
second read and no re-read are needed.

Watermark mode reads each chunk in such a snapshot too (:meth:`MariaDbChunkReader.read_chunk_seen`): MariaDB
writes a transaction to the binlog (where the stream may read it) before InnoDB commits it, so a transaction
before the open watermark in the binlog may still be invisible to the chunk; its GTID position tells the
engine which streamed changes the chunk did not see (``signaller.snapshot.visibility``).

A table altered since it was described (its ``ChunkTable.schema_version``) is never read with stale columns:
each consistent-snapshot read takes the table's metadata lock in its transaction before anything else reads
it (an ALTER then waits for the chunk's commit) and compares the version in the same statement; a changed
version, or a chunk statement refused for a dropped column (1054) or a table rebuilt after the snapshot
(1412), raises ``ChunkSchemaChanged`` (the engine describes the table again and reads the chunk again).

Large chunks (:meth:`MariaDbChunkReader.read_chunk_streaming`) are read through an unbuffered cursor
(PyMySQL ``SSCursor``) on a second connection, whose ``net_write_timeout`` is long enough for the
engine to fetch the rest in slices between stream batches. Not thread-safe; keeps no state a restart needs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pymysql
import pymysql.cursors

from signaller.errors import SignallerError, SourceError, TerminalSourceError
from signaller.model import TableId
from signaller.sources.base import (
    ChunkQueryError,
    ChunkReader,
    ChunkRest,
    ChunkSchemaChanged,
    ChunkTable,
    Key,
    RawRow,
    chunk_query_error,
)
from signaller.sources.mariadb.chunk_sql import (
    chunk_query,
    count_query,
    max_key_query,
    quote_ident,
    quote_literal,
    version_probe,
)
from signaller.sources.mariadb.connection import Endpoint, connect, translate
from signaller.sources.mariadb.positions import GtidSet, gtid_domain, gtid_sequence, position, transaction_number
from signaller.sources.watermarks import debezium_metadata_text

__all__ = ["GtidVisibility", "MariaDbChunkReader", "transaction_number"]

WATERMARK_KEYS_BEFORE_3_7 = ("openWindowTimestamp", "closeWindowTimestamp")
"""The keys of a watermark row's ``data`` before Debezium 3.7.0.Alpha1 (dbz#2236 added ``correlationId`` and
``dataCollectionId``): what Debezium's MariaDB connector 3.5.0.Final writes."""

SCHEMA_CHANGED_CODES = frozenset({1054, 1412})
"""Unknown column; table definition changed (rebuilt after the transaction's snapshot): a chunk read of a
table altered since it was described (see ``_query_error``)."""

CURSOR_WRITE_TIMEOUT_S = 3600
"""``net_write_timeout`` of the streaming connection: how long the server waits for the engine to fetch
the next slice of a chunk (MariaDB's default, 60 s, would end the read between slow stream batches)."""


@dataclass(frozen=True)
class GtidVisibility:
    """The transactions a consistent-snapshot read saw: those at or before its GTID position, per domain
    (the :class:`~signaller.sources.base.TransactionVisibility` of MariaDB's read-only snapshots)."""

    position: dict[int, int]

    @classmethod
    def of(cls, text: str) -> GtidVisibility:
        """The visibility of a read at GTID position ``text`` (``0-1-100,1-2-7``); ``StateError`` if malformed."""
        return cls({domain: sequence for domain, _server, sequence in GtidSet.parse(text).domains})

    def sees(self, tx_id: int) -> bool:
        """Whether transaction ``tx_id`` (the stream's :func:`~signaller.sources.mariadb.positions.gtid_number`)
        committed before the read's snapshot (the server part of the number is not compared)."""
        return gtid_sequence(tx_id) <= self.position.get(gtid_domain(tx_id), 0)


def _consistent_snapshot(cur: Any, table: ChunkTable) -> tuple[str, int, Any]:
    """Start a read-only transaction WITH CONSISTENT SNAPSHOT on ``cur``'s connection; its exact binlog file and
    offset (every transaction before them visible, none after) and their GTID position (``BINLOG_GTID_POS``;
    None when MariaDB has none). When ``table`` has a ``schema_version``, the same statement takes the table's
    metadata lock (held until the transaction ends) and checks the version (``chunk_sql.version_probe``):
    :class:`ChunkSchemaChanged` if the table was altered since it was described. ``TerminalSourceError``
    without a binary log."""
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
    cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('binlog_snapshot_file', 'binlog_snapshot_position')")
    status = {name.lower(): value for name, value in cur.fetchall()}
    file, offset = status.get("binlog_snapshot_file"), status.get("binlog_snapshot_position")
    if not file or offset is None:
        raise TerminalSourceError("MariaDB reports no binlog snapshot position: incremental snapshots need the "
                                  "binary log (log_bin)")
    probe = "NULL, NULL" if table.schema_version is None else version_probe(table)
    cur.execute(f"SELECT BINLOG_GTID_POS({quote_literal(file)}, {int(offset)}), {probe}")
    gtid, version, _ = cur.fetchone()
    if table.schema_version is not None and version != table.schema_version:
        raise ChunkSchemaChanged(f"the columns of {table.schema}.{table.name} changed since they were described "
                                 f"(schema version {table.schema_version} -> {version}): the chunk is read again")
    return str(file), int(offset), gtid


def _query_error(exc: pymysql.MySQLError, table: ChunkTable, doing: str) -> ChunkQueryError:
    """The error a failed chunk statement raises: :class:`ChunkSchemaChanged` when the server refused a column
    the description named (1054, a column dropped or renamed by an ALTER that committed before the chunk's
    metadata lock) or the table was rebuilt after the chunk's snapshot (1412), else ``ChunkQueryError``."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    if table.schema_version is not None and code in SCHEMA_CHANGED_CODES:
        return ChunkSchemaChanged(f"{translate(exc, doing)}: the table changed since it was described, the chunk "
                                  "is read again")
    return chunk_query_error(translate(exc, doing))


def _visibility(gtid: Any, doing: str) -> GtidVisibility | None:
    """What a watermark-mode chunk's snapshot at GTID position ``gtid`` saw; None (the engine then matches only
    changes after the open watermark, as before) when MariaDB has no GTID for it."""
    if gtid is None:
        return None
    try:
        return GtidVisibility.of(str(gtid))
    except SignallerError as exc:
        raise ChunkQueryError(f"{doing}: {exc}") from exc


def _raw(rows: Iterable[Sequence[Any]]) -> list[RawRow]:
    """Rows with bytes as their hex text (the server sends binary columns as bytes)."""
    return [tuple(v.hex() if isinstance(v, bytes) else v for v in row) for row in rows]


class MariaDbChunkReader(ChunkReader):
    """Chunk reads and watermark writes on one autocommit connection (see the module docstring and
    :class:`~signaller.sources.base.ChunkReader` for the contract)."""

    def __init__(self, endpoint: Endpoint, signal_table: TableId | None, strategy: str,
                 position_of: Callable[[str, int], int] = position,
                 watermark_keys: tuple[str, ...] | None = None) -> None:
        """Connect (at the first call) to ``endpoint``; watermarks go to ``signal_table`` with Debezium's
        ``incremental.snapshot.watermarking.strategy`` ``strategy``; ``position_of`` maps a binlog file and
        offset to the stream's integer position (the read-only high watermark; by default the stream's own
        :func:`~signaller.sources.mariadb.positions.position`); ``watermark_keys``: the metadata keys a
        watermark row's ``data`` keeps (None: every key the engine gives)."""
        self._endpoint = endpoint
        self._watermark_keys = watermark_keys
        self._signal_table = signal_table
        self._strategy = strategy
        self._position_of = position_of
        self._conn: Any = None
        self._cursor_conn: Any = None

    def _connection(self) -> Any:
        if self._conn is None or not self._conn.open:
            self._conn = connect(self._endpoint, "connecting for incremental snapshots")
        return self._conn

    def close(self) -> None:
        """Close the connections if open; never raises, and the next call connects again."""
        for conn in (self._conn, self._cursor_conn):
            with contextlib.suppress(Exception):
                if conn is not None:
                    conn.close()
        self._conn = self._cursor_conn = None

    def _run(self, doing: str, sql: str) -> list[tuple[Any, ...]]:
        """Run ``sql`` (no parameter list: statements are written whole) and return its rows;
        ``SourceError`` naming ``doing``."""
        try:
            with self._connection().cursor() as cur:
                cur.execute(sql)
                return list(cur.fetchall()) if cur.description else []
        except pymysql.MySQLError as exc:
            if self._conn is not None and not self._conn.open:
                self._conn = None
            raise translate(exc, doing) from exc

    # -- reads ----------------------------------------------------------------------------
    def max_key(self, table: ChunkTable) -> Key | None:
        """The chunk key of the table's last row in the server's key order (within its filter), None if
        no row matches; ``ChunkQueryError`` if the query fails."""
        try:
            rows = self._run(f"reading the maximum key of {table.schema}.{table.name}", max_key_query(table))
        except SourceError as exc:
            raise chunk_query_error(exc) from exc
        return _raw(rows)[0] if rows else None

    def count_rows(self, table: ChunkTable, upper: Key) -> int:
        """The rows with ``key <= upper`` within the table's filter (an exact count)."""
        try:
            rows = self._run(f"counting the rows of {table.schema}.{table.name}", count_query(table, upper))
        except SourceError as exc:
            raise chunk_query_error(exc) from exc
        return int(rows[0][0])

    def read_chunk(self, table: ChunkTable, lower: Key | None, upper: Key | None, limit: int) -> list[RawRow]:
        """At most ``limit`` rows with ``lower < key <= upper`` in key order: the table's columns then the
        chunk key, every value as the server's text; ``ChunkQueryError`` if the query fails."""
        sql = chunk_query(table, lower, upper, limit)
        try:
            return _raw(self._run(f"reading a chunk of {table.schema}.{table.name}", sql))
        except SourceError as exc:
            raise chunk_query_error(exc) from exc

    def read_chunk_seen(self, table: ChunkTable, lower: Key | None, upper: Key | None,
                        limit: int) -> tuple[list[RawRow], GtidVisibility | None]:
        """The chunk :meth:`read_chunk` reads, in one consistent snapshot, and what that snapshot saw (its GTID
        position; None if MariaDB has none for it): MariaDB writes a transaction to the binlog before InnoDB
        commits it, so one streamed before the open watermark may still be invisible to the chunk (see
        ``signaller.snapshot.visibility``). ``ChunkQueryError`` if the query fails."""
        doing = f"reading a chunk of {table.schema}.{table.name}"
        rows, _file, _offset, gtid = self._read_consistent(table, lower, upper, limit, doing)
        return rows, _visibility(gtid, doing)

    def read_chunk_streaming(self, table: ChunkTable, lower: Key | None, upper: Key | None, limit: int,
                             first: int) -> tuple[list[RawRow], ChunkRest | None, GtidVisibility | None]:
        """The chunk :meth:`read_chunk_seen` reads, through an unbuffered cursor on a second connection: its first
        ``first`` rows now, when there may be more the rest to fetch later, and what the snapshot saw. The
        consistent snapshot is taken before the statement starts (before this returns), so rows fetched later
        are as of now and the close watermark may be written once this returns; its transaction ends with the
        chunk. ``ChunkQueryError`` if the query fails."""
        doing = f"reading a chunk of {table.schema}.{table.name}"
        cursor: Any = None
        try:
            sql = chunk_query(table, lower, upper, limit)
            if self._cursor_conn is None or not self._cursor_conn.open:
                self._cursor_conn = connect(self._endpoint, "connecting for incremental snapshot chunks",
                                            net_write_timeout=CURSOR_WRITE_TIMEOUT_S)
            with self._cursor_conn.cursor() as cur:
                _file, _offset, gtid = _consistent_snapshot(cur, table)
            cursor = self._cursor_conn.cursor(pymysql.cursors.SSCursor)
            cursor.execute(sql)
            rows = _raw(cursor.fetchmany(first))
        except ChunkSchemaChanged:
            self._abandon_cursor(cursor)
            raise
        except pymysql.MySQLError as exc:
            self._abandon_cursor(cursor)
            raise _query_error(exc, table, doing) from exc
        except SourceError as exc:
            self._abandon_cursor(cursor)
            raise chunk_query_error(exc, doing) from exc
        visible = _visibility(gtid, doing)
        if len(rows) < first:
            self._end_cursor(cursor)  # the result is complete: closing reads nothing more
            return rows, None, visible
        return rows, _CursorRest(self, cursor, doing), visible

    def _end_cursor(self, cursor: Any) -> None:
        """A complete result: close ``cursor`` and end its snapshot's transaction; never raises."""
        with contextlib.suppress(Exception):
            cursor.close()
            self._cursor_conn.commit()

    def _abandon_cursor(self, cursor: Any = None) -> None:
        """Drop the streaming connection (an unfinished unbuffered result cannot be left on it), and tell
        ``cursor``'s result it has nothing more to read (else PyMySQL would read it from the closed socket)."""
        result = getattr(cursor, "_result", None)
        if result is not None:
            result.unbuffered_active = False
        conn, self._cursor_conn = self._cursor_conn, None
        with contextlib.suppress(Exception):
            if conn is not None:
                conn.close()

    def read_chunk_visible(self, table: ChunkTable, lower: Key | None, upper: Key | None,
                           limit: int) -> tuple[list[RawRow], GtidVisibility, int]:
        """Read-only watermarking (nothing is written): the chunk read in one consistent snapshot, the GTID
        position of that snapshot (what it saw) and the snapshot's binlog position as the high watermark
        (see the module docstring); ``ChunkQueryError`` if the read fails or the server has no GTIDs."""
        doing = f"reading a chunk of {table.schema}.{table.name}"
        rows, file, offset, gtid = self._read_consistent(table, lower, upper, limit, doing)
        if gtid is None:
            raise ChunkQueryError(f"{doing}: MariaDB has no GTID for binlog position {file}:{offset} "
                                  "(BINLOG_GTID_POS is NULL): read-only snapshots need GTIDs")
        try:
            return rows, GtidVisibility.of(str(gtid)), self._position_of(file, offset)
        except SignallerError as exc:
            raise ChunkQueryError(f"{doing}: {exc}") from exc

    def _read_consistent(self, table: ChunkTable, lower: Key | None, upper: Key | None, limit: int,
                         doing: str) -> tuple[list[RawRow], str, int, str | None]:
        """The chunk read in one consistent snapshot, with that snapshot's binlog file, offset and GTID
        position (None if MariaDB has none); the transaction is always ended. ``ChunkQueryError`` (naming
        ``doing``) if the read fails."""
        try:
            sql = chunk_query(table, lower, upper, limit)
            with self._connection().cursor() as cur:
                try:
                    file, offset, gtid = _consistent_snapshot(cur, table)
                    cur.execute(sql)
                    rows = _raw(cur.fetchall())
                finally:
                    with contextlib.suppress(pymysql.MySQLError):
                        cur.execute("COMMIT")
        except pymysql.MySQLError as exc:
            if self._conn is not None and not self._conn.open:
                self._conn = None
            raise _query_error(exc, table, doing) from exc
        except SourceError as exc:
            raise chunk_query_error(exc, doing) from exc
        return rows, file, offset, gtid

    # -- watermarks -----------------------------------------------------------------------
    def write_marker(self, chunk_id: str, is_open: bool, metadata: dict[str, Any]) -> None:
        """Write and commit the open or close watermark of ``chunk_id`` into the signal table (``DELETE`` of
        the open row for an ``insert_delete`` close), its ``data`` the ``metadata`` keys this reader keeps
        (see ``__init__``); ``SourceError`` without a signal table or on failure."""
        if self._signal_table is None:
            raise TerminalSourceError("incremental snapshots of MariaDB write their watermarks into the signal "
                                      "table: set signal.data.collection (<database>.<table>), or read.only=true")
        kind = "open" if is_open else "close"
        target = f"{quote_ident(self._signal_table.schema)}.{quote_ident(self._signal_table.table)}"
        if not is_open and self._strategy == "insert_delete":
            opened = quote_literal(f"{chunk_id}-open")
            self._run("closing a snapshot window", f"DELETE FROM {target} WHERE id = {opened}")
            return
        if self._watermark_keys is not None:
            metadata = {key: value for key, value in metadata.items() if key in self._watermark_keys}
        values = (f"{chunk_id}-{kind}", f"snapshot-window-{kind}", debezium_metadata_text(metadata))
        self._run("writing a watermark", f"INSERT INTO {target} VALUES ({', '.join(map(quote_literal, values))})")


class _CursorRest(ChunkRest):
    """The rest of a chunk on ``MariaDbChunkReader``'s streaming connection (see ``read_chunk_streaming``)."""

    def __init__(self, reader: MariaDbChunkReader, cursor: Any, doing: str) -> None:
        self._reader = reader
        self._cursor: Any = cursor
        self._doing = doing

    def fetch(self, count: int) -> list[RawRow]:
        """The next ``count`` rows at most; fewer means the chunk is complete (the cursor is closed then)."""
        if self._cursor is None:
            return []
        try:
            rows = _raw(self._cursor.fetchmany(count))
        except pymysql.MySQLError as exc:
            cursor, self._cursor = self._cursor, None
            self._reader._abandon_cursor(cursor)
            raise chunk_query_error(translate(exc, self._doing)) from exc
        if len(rows) < count:
            cursor, self._cursor = self._cursor, None
            self._reader._end_cursor(cursor)
        return rows

    def close(self) -> None:
        """Abandon the rest: an unfinished result is dropped with its connection; never raises."""
        cursor, self._cursor = self._cursor, None
        if cursor is not None:
            self._reader._abandon_cursor(cursor)
