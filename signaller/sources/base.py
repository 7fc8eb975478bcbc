"""What a source implements: the interfaces the snapshot engine and the capture loop call.

A source is a database the sidecar captures. It provides three things, each a ``Protocol`` here, and
a new database (MySQL/MariaDB) is a new folder beside ``sources/postgres/`` implementing them, bundled
as a :class:`Source`, plus one entry in ``sources/registry.py`` (its ``connector.class``):

* :class:`LogReader`: the change stream, read from a position, acknowledged as Kafka confirms;
* :class:`ChunkReader`: the SQL side of an incremental snapshot (maximum key, keyset chunks,
  DBLog watermarks, and the read-only variant's transaction visibility);
* :class:`TableSchemaProvider`: what a table looks like now, and how a chunk row becomes the same
  row values the stream produces for that table (so READ events and streamed events of one row
  are byte-identical).

The log reader yields the neutral stream items declared here (:class:`TransactionBegin`, the source's
row changes, :class:`TransactionCommit`, :class:`SourceMessage`); the capture loop switches on them.

Call order in one capture session: the registry builds the :class:`Source` (the three sharing one
schema cache, so the stream and the chunks describe a table the same way), the runtime opens the log
reader at the stored
position, and hands the chunk reader and the schema provider to the snapshot engine. Everything is
called from the capture loop's thread; no implementation needs to be thread-safe.

Positions: every source numbers its log with one ``int`` that grows with the log (PostgreSQL: the
LSN; MariaDB: ``(binlog file number << 32) | byte position``): what transactions, checkpoints and
the offset record carry. What else a source needs to resume (MariaDB: the GTID set, the file name)
it keeps beside the position in its own offset keys (:meth:`Source.offset_keys`), stored with the
position and handed back to :meth:`LogReader.open`. The wire format's ``source`` block is the
source's too (:attr:`Source.source_block`; PostgreSQL's is the wire format's built-in one).

Restart: nothing here keeps state a restart needs. Resume state lives in the offset store (the
stream position, the source's offset keys and ``SnapshotState``: the queue, the maximum key and the
last key emitted); a new session builds new instances and starts from there. Errors: database failures are
:class:`~signaller.errors.SourceError` (transient or terminal by type); a failed chunk query is
:class:`ChunkQueryError`. This module holds only neutral value types and interfaces: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from signaller.errors import SnapshotError, TransientError
from signaller.model import ChangeEvent, TableId

Key = tuple[str | None, ...]
"""A chunk key: the key columns' values in key order, each as the source's text for its type (what a
bound of a chunk query is written from, and what ``SnapshotState`` stores across restarts)."""

RawRow = tuple[str | None, ...]
"""One row of a chunk query: every value as the source's text for its type (None = SQL NULL)."""


class ChunkQueryError(SnapshotError):
    """A max-key, count or chunk query failed (Debezium's ``SQL_EXCEPTION`` status); its cause is the
    ``SourceError`` the driver error became."""


class ChunkReadInterrupted(ChunkQueryError):
    """A max-key, count or chunk query was interrupted, not refused: its connection was lost, the server was
    shutting down or starting, out of connections or resources (a transient ``SourceError``). It says nothing
    about the table: the engine retries the capture session (the snapshot goes on from its stored last key,
    the chunk is read again) instead of ending the table ``SQL_EXCEPTION``."""


def chunk_query_error(failure: Exception, doing: str | None = None) -> ChunkQueryError:
    """The error a snapshot query raises when it failed with ``failure`` (a ``SourceError``: the source's
    translation of its driver error), its text the message (after ``doing:``, when given):
    :class:`ChunkReadInterrupted` when ``failure`` is transient, else :class:`ChunkQueryError`."""
    kind = ChunkReadInterrupted if isinstance(failure, TransientError) else ChunkQueryError
    return kind(str(failure) if doing is None else f"{doing}: {failure}")


class ChunkSchemaChanged(ChunkQueryError):
    """A chunk read found the table's columns no longer as described (``ChunkTable.schema_version``): an ALTER
    TABLE committed since the table was prepared. Nothing was read; the engine describes the table again and
    reads the same chunk with its current columns (no READ ever carries a stale schema)."""


@dataclass(frozen=True)
class ChunkTable:
    """What the chunk queries need to know about one table.

    ``columns`` are the captured columns in table order; ``key`` the chunk key columns with their
    source type names (PostgreSQL: ``format_type``), in key order; ``filter`` the normalized
    additional condition (already checked, safe SQL of the source's dialect) or None.
    ``schema_version``: the description's ``TableDescription.schema_version``; when set, the watermark and
    read-only chunk reads check it in their own transaction, with the table locked against ALTER TABLE until
    they end, and raise :class:`ChunkSchemaChanged` (before reading any row) when the table's columns are
    no longer these. ``rendered``: the table's :attr:`ReadRendering.select` expressions, selected after the
    chunk key columns (empty: none; only a source whose ``TableRows`` has a rendering sets them).
    """

    schema: str
    name: str
    columns: tuple[str, ...]
    key: tuple[tuple[str, str], ...]
    filter: str | None = None
    schema_version: str | None = None
    rendered: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableDescription:
    """A table as the source's catalog describes it now.

    ``sql_types`` maps every column, in table order, to its source type name (what a filter is
    checked against); ``primary_key`` is in key order (empty without one); ``unique_columns`` are
    the columns with a single-column, non-partial unique index; ``estimated_rows`` is the planner's
    estimate, None when the source has none. ``schema_version`` is a value of the source's catalog that
    changes whenever the table's columns do (names, types, nullability), read in the statement that read the
    columns; None when the source has none (its chunk reads then do not check for a changed schema). A source
    may subclass it to carry what its :meth:`TableSchemaProvider.rows_for` needs.
    """

    table_id: TableId
    sql_types: dict[str, str]
    not_null: frozenset[str]
    primary_key: tuple[str, ...]
    unique_columns: frozenset[str]
    estimated_rows: int | None
    schema_version: str | None = field(default=None, kw_only=True)


class SourceChange(Protocol):
    """A row change as a source's stream hands it to the capture loop: whatever else it carries (the
    schema its rows were decoded with), it can be read as a :class:`~signaller.model.ChangeEvent`."""

    @property
    def event(self) -> ChangeEvent:
        """The change as a ``ChangeEvent`` (its table, before and after images, transaction id)."""
        ...


ChangeT = TypeVar("ChangeT", bound=SourceChange)
"""A source's change type, for code generic over sources (the snapshot engine)."""
ChangeT_co = TypeVar("ChangeT_co", bound=SourceChange, covariant=True)
ItemT_co = TypeVar("ItemT_co", covariant=True)


class TransactionVisibility(Protocol):
    """Which transactions a chunk's read saw: a streamed change of a transaction the read saw is
    already in the chunk; a change of one it did not see must evict the chunk's row (read-only
    snapshots, no watermark writes: any such change; watermark mode: also one streamed before the
    open marker, whose commit is in the log before the read's snapshot could see it)."""

    def sees(self, tx_id: int, /) -> bool:
        """Whether the read saw the effects of transaction ``tx_id`` (as the stream numbers it), i.e.
        it committed before the read's snapshot was taken. Pure; never raises."""
        ...


class ReadRendering(Protocol):
    """A table's snapshot READ rows rendered by its chunk query: the source's SQL writes each row's ``after``
    image and Kafka key payload as JSON text, so a READ costs the sidecar no per-column conversion.

    Made with the :class:`TableRows` it belongs to (immutable). Its promise: for a chunk row the query
    returned, :meth:`render` gives exactly the JSON that rendering :meth:`TableRows.row` of the same row
    gives (members in ``value_names`` order, schema defaults in place of nulls, as Kafka's JsonConverter
    writes them), except that ``\\u00xx`` escapes may use lower-case hex digits; or None, and then the caller
    converts that row the generic way. Tested byte for byte against the generic path for every mapped type.
    """

    @property
    def select(self) -> tuple[str, ...]:
        """The SQL expressions the chunk query selects after the chunk key columns (``ChunkTable.rendered``)."""
        ...

    @property
    def value_names(self) -> tuple[str, ...]:
        """The members of the rendered ``after`` image, in order (the emitted columns)."""
        ...

    @property
    def key_names(self) -> tuple[str, ...]:
        """The members of the rendered key payload, in order; empty for a table without a message key."""
        ...

    def render(self, values: Sequence[str | None], offset: int) -> tuple[bytes, bytes | None] | None:
        """The ``after`` image and key payload (None without key columns) of one chunk row, whose ``select``
        values start at ``offset``; None when the source left this row to the generic path."""
        ...

    def render_rows(self, rows: Sequence[Sequence[str | None]], offset: int) -> list[tuple[bytes, bytes | None] | None]:
        """:meth:`render` of each of ``rows``, in order."""
        ...


class TableRows(Protocol[ChangeT_co]):
    """How the rows of one table, as described at one moment, become change-event rows.

    Made by :meth:`TableSchemaProvider.rows_for`; immutable. It stays valid after the table is
    altered (it describes the table as it was when made); the engine asks for a new one each time
    a table's snapshot starts, also after a restart.
    """

    @property
    def table_id(self) -> TableId:
        """The table the rows belong to."""
        ...

    @property
    def columns(self) -> tuple[str, ...]:
        """The captured columns in table order: what a chunk query selects, in this order."""
        ...

    @property
    def emitted_columns(self) -> tuple[str, ...]:
        """The columns whose values appear in change events (captured and of a type the source can
        convert); a chunk key column outside them could not be matched against streamed changes."""
        ...

    @property
    def placeholders(self) -> Mapping[str, Any]:
        """Each column whose streamed value may be the unavailable-value placeholder (PostgreSQL: an unchanged
        TOASTed value the log does not carry), with that placeholder as change events hold it; a column whose
        placeholder is null (indistinguishable from NULL) is left out. Empty for sources without such values."""
        ...

    def row(self, values: Sequence[str | None]) -> dict[str, Any]:
        """The row values the stream would produce for the same row: ``values`` are one chunk row's
        first ``len(columns)`` values, in :attr:`columns` order. Raises what the value converters
        raise for text the type cannot hold (never expected from the source's own output)."""
        ...

    def read_change(self, event: ChangeEvent) -> ChangeT_co:
        """``event`` (a READ of this table) wrapped as the stream wraps its changes, so the capture
        loop sends it the way it sends streamed ones. Pure."""
        ...

    @property
    def rendering(self) -> ReadRendering | None:
        """How the chunk query renders this table's READs itself, or None (the source cannot: every row is
        converted with :meth:`row`)."""
        ...


class TableSchemaProvider(Protocol[ChangeT_co]):
    """What the source's tables look like now.

    The provider shares the stream's schema cache: :meth:`rows_for` derives a table's schema with the
    same type resolution, key rule (``message.key.columns`` included) and column filters as the log
    reader, so a READ of a row and a streamed change of it carry the same schema and key. Every
    method may query the catalog (call them between log batches, not per row) and raises
    ``SourceError`` when it cannot be read. Holds no state a restart needs.
    """

    def tables(self) -> list[TableId]:
        """Every user table in the database (captured or not), sorted."""
        ...

    def describe(self, table: TableId) -> TableDescription | None:
        """The table as the catalog describes it now (re-read at every call, so an ALTER since the
        last call is seen), or None if it does not exist."""
        ...

    def rows_for(self, table: TableDescription) -> TableRows[ChangeT_co]:
        """How chunk rows of ``table`` (a description this provider made) become change-event rows;
        ``SourceError`` if a column's type cannot be resolved."""
        ...


class ChunkRest(Protocol):
    """The rest of a chunk being read through a server-side cursor (see
    :meth:`ChunkReader.read_chunk_streaming`): the same snapshot, fetched in slices."""

    def fetch(self, count: int) -> list[RawRow]:
        """The next ``count`` rows at most; fewer (possibly none) means the chunk is complete and the cursor closed.
        ``ChunkQueryError`` if the read fails (the cursor is then closed)."""
        ...

    def close(self) -> None:
        """Abandon the rest (ends the cursor's transaction); never raises."""
        ...


class ChunkReader(Protocol):
    """The SQL side of an incremental snapshot (DBLog): maximum key, keyset chunks, watermarks.

    Each method runs its statement(s) and returns once they are done; a watermark write is committed
    before it returns, so its place in the log is fixed (the open one before the chunk query, the
    close one after it). A dropped connection is opened again at the next call. Keyset bounds are
    exclusive below and inclusive above (``lower < key <= upper``), a None bound is open; rows come
    in key order. Holds no state a restart needs: the engine stores the keys it reached.
    """

    def max_key(self, table: ChunkTable) -> Key | None:
        """The chunk key of the table's last row in key order (within its filter), None if no row
        matches; ``ChunkQueryError`` if the query fails."""
        ...

    def count_rows(self, table: ChunkTable, upper: Key) -> int:
        """The rows with ``key <= upper`` within the table's filter (an exact count);
        ``ChunkQueryError`` if the query fails."""
        ...

    def read_chunk(self, table: ChunkTable, lower: Key | None, upper: Key | None, limit: int) -> list[RawRow]:
        """At most ``limit`` rows with ``lower < key <= upper``, in key order: each the table's
        ``columns`` then the chunk key's values, every value as its type's text;
        ``ChunkQueryError`` if the query fails."""
        ...

    def read_chunk_seen(self, table: ChunkTable, lower: Key | None, upper: Key | None,
                        limit: int) -> tuple[list[RawRow], TransactionVisibility | None]:
        """Watermark mode's chunk query: the chunk as :meth:`read_chunk` reads it (one query, one
        snapshot) and the visibility of that snapshot, or None if every transaction already in the
        log is visible to a query started after it (no commit is in the log before it is visible).
        An optional ``read_chunk_streaming(table, lower, upper, limit, first)`` returns the same
        through a server-side cursor: the first ``first`` rows, the :class:`ChunkRest` (None when
        complete) and the visibility. ``ChunkQueryError`` if the query fails."""
        ...

    def read_chunk_visible(self, table: ChunkTable, lower: Key | None, upper: Key | None,
                           limit: int) -> tuple[list[RawRow], TransactionVisibility, int]:
        """Read-only watermarking (nothing is written): the chunk as :meth:`read_chunk` reads it, the
        visibility of the read, and the log position (the high watermark) taken after the read, so
        every change the read saw is in the log before it; ``ChunkQueryError`` if the read fails."""
        ...

    def write_marker(self, chunk_id: str, is_open: bool, metadata: dict[str, Any]) -> None:
        """Write and commit the open or close watermark of ``chunk_id``; it comes back through the log
        as a window marker (``<chunk_id>-open`` / ``-close``). ``SourceError`` if the write fails."""
        ...

    def close(self) -> None:
        """Close the connection if one is open; never raises, and the next call connects again."""
        ...


@dataclass(frozen=True, slots=True)
class TransactionBegin:
    """A stream item: a transaction begins; its row changes follow, then its :class:`TransactionCommit`.

    Positions are the source's log positions (the model's ``*_lsn`` vocabulary; PostgreSQL: LSNs).
    ``xid`` is the source's transaction number, ``commit_lsn`` the position of its commit,
    ``commit_ts_us`` its commit time (µs since the epoch), ``last_commit_lsn`` the end position of
    the transaction before it (Debezium's ``lastCommitLsn``; None before the first one of a session
    that started from the source's own position), ``begin_lsn`` the position of this begin.
    Immutable: a streamed change refers to its transaction's begin, and the capture loop caches
    per-transaction values on it."""

    xid: int
    commit_lsn: int
    commit_ts_us: int
    last_commit_lsn: int | None = None
    begin_lsn: int = 0


@dataclass(frozen=True, slots=True)
class TransactionCommit:
    """A stream item: the transaction ``xid`` ended. Once everything before it is in Kafka,
    ``end_lsn`` is a position a restart may resume after (what the capture loop commits)."""

    xid: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(frozen=True, slots=True)
class SourceMessage:
    """A stream item: a transactional message the sidecar wrote into the log itself (its watermarks
    when no signal table is configured; PostgreSQL: a logical decoding message with the sidecar's
    prefix). ``content`` is the message body, ``lsn`` its position, ``last_commit_lsn`` as in
    :class:`TransactionBegin`."""

    prefix: str
    content: bytes
    lsn: int
    last_commit_lsn: int | None = None


@dataclass(frozen=True, slots=True)
class SchemaChangeRecords:
    """A stream item: a source's schema change records (binlog sources: a DDL statement, or the start-up schema
    snapshot), already rendered as ``(topic, key, value)`` and sent in order, outside any transaction. Once they
    are in Kafka, ``end_lsn`` is a position a restart may resume after (the source knows its offset keys)."""

    records: tuple[tuple[str, bytes | None, bytes | None], ...]
    end_lsn: int


class LogReader(Protocol[ItemT_co]):
    """The change stream: row changes and transaction boundaries, in commit order.

    Items are :class:`TransactionBegin`, the transaction's row changes (the source's
    :class:`SourceChange` type), :class:`TransactionCommit`, :class:`SourceMessage` and (binlog sources)
    :class:`SchemaChangeRecords` items.

    Lifecycle: :meth:`open` → repeated :meth:`poll` → :meth:`acknowledge` as Kafka confirms →
    :meth:`close`. Positions are the source's, as integers ordered like the log (PostgreSQL: the
    LSN). On restart the source resends every transaction that commits after the last acknowledged
    position: duplicates are possible, loss is not. Errors are ``SourceError``s (transient ones are
    worth a new session).
    """

    def open(self, start_position: int, offset_keys: Mapping[str, Any] | None = None, /) -> None:
        """Connect and start streaming after ``start_position`` (0: wherever the source's own durable
        position is); ``offset_keys`` are the source's keys stored with that position
        (:meth:`Source.offset_keys`), None when there are none (a first start, or a source without)."""
        ...

    def poll(self, max_items: int, timeout_s: float) -> Sequence[ItemT_co]:
        """Up to about ``max_items`` items, waiting at most ``timeout_s`` for the first one; whole
        transactions in commit order, across calls."""
        ...

    @property
    def stream_end(self) -> int:
        """The newest log position the source reported (PostgreSQL: the server's WAL end), 0 before
        the first poll: where an idle stream may move its offset once a heartbeat is in Kafka."""
        ...

    @property
    def last_commit(self) -> int | None:
        """The end position of the newest transaction fully read (Debezium's ``lastCommitLsn``);
        None before the first one of a session that started from the source's own position."""
        ...

    def wake(self) -> None:
        """Make a :meth:`poll` waiting for the log, or the next one, return at once with what it has
        (maybe nothing). Thread-safe: called from other threads (a signal submitted through the API);
        a wake before :meth:`open` or after :meth:`close` does nothing harmful."""
        ...

    def request_position(self) -> None:
        """Ask the source to report its log position soon (it comes through :attr:`stream_end` at a later
        :meth:`poll`), even with nothing to stream; calls closer together than the source's minimum interval
        do nothing. Moves no durable position."""
        ...

    def acknowledge(self, position: int, /) -> None:
        """Everything up to ``position`` is durable downstream: the source may release its log up to
        there. The only call that moves the source's durable position."""
        ...

    def close(self) -> None:
        """Close the stream's connection, if any; never raises, and ``open`` may be called again."""
        ...


class Source(Protocol[ChangeT_co]):
    """One capture session's source: its log reader, chunk reader and schema provider (built together,
    sharing one schema cache) and what the capture loop and the wire format need from it.

    Built by :func:`signaller.sources.registry.open_source` from the configuration (which may connect
    to the database); the capture loop calls :meth:`prepare`, opens :attr:`log`, hands :attr:`chunks`
    and :attr:`schemas` to the snapshot engine, and calls :meth:`close` last. One session only: a new
    session builds a new source. Holds no state a restart needs.
    """

    @property
    def change_type(self) -> type[ChangeT_co]:
        """The class of the row changes :attr:`log` yields (the capture loop tells items apart by
        exact type: ``type(item) is change_type``)."""
        ...

    @property
    def log(self) -> LogReader[Any]:
        """The change stream: yields :attr:`change_type` changes, :class:`TransactionBegin`,
        :class:`TransactionCommit` and :class:`SourceMessage` items."""
        ...

    @property
    def chunks(self) -> ChunkReader:
        """The snapshot's side of the source (its own connection); the snapshot coordinator closes it."""
        ...

    @property
    def schemas(self) -> TableSchemaProvider[ChangeT_co]:
        """The tables as they are now, on the log reader's schema cache."""
        ...

    def compile_filter(self, text: str, sql_types: Mapping[str, str], /) -> str:
        """An ``additional-conditions`` filter checked against a table's columns (``sql_types``: column → the
        source's type name, as :class:`TableDescription` has them) and returned as normalized SQL of the
        source's dialect, safe to run without a parameter list; ``SignalError`` saying what is wrong with
        any other text. Pure; never raises anything else."""
        ...

    def prepare(self) -> list[TableId]:
        """Check the source can be captured and set up what streaming needs (PostgreSQL: logical
        decoding, the publication, the replication slot); the captured tables, sorted. Raises
        ``SourceError`` (transient when worth a new session, e.g. a slot in use)."""
        ...

    @property
    def source_block(self) -> Any:
        """The ``source`` block of this connector's events: a
        :class:`~signaller.wire.source_block.SourceBlock` (its Connect schema and per-event values), or
        None for the wire format's built-in layout (PostgreSQL's ``io.debezium.connector.postgresql.Source``).
        Typed ``Any`` here because this module imports nothing from the wire format."""
        ...

    @property
    def schema_snapshot_taken(self) -> bool:
        """Whether opening :attr:`log` took a start-up schema snapshot (binlog sources on a first start: Debezium
        then says Initial Snapshot STARTED/COMPLETED rather than SKIPPED). Valid once the log is open."""
        return False

    @property
    def debezium_release(self) -> str | None:
        """The Debezium release whose notifications this connector writes (``3.5.0.Final``: MariaDB's), None for
        the newest the sidecar reproduces (the default). Pure."""
        return None

    def offset_keys(self, position: int, /) -> dict[str, Any] | None:
        """The source's own offset keys (Debezium's names) to store with the committed ``position`` (a
        :class:`TransactionCommit`'s ``end_lsn``, the start position, or a :attr:`LogReader.stream_end`
        this session's log reported), handed back to :meth:`LogReader.open` after a restart; None when
        the position alone resumes the source (the offset record then has the PostgreSQL keys). Pure."""
        ...

    def transaction_id(self, xid: int, position: int, /) -> str:
        """Debezium's transaction id text for transaction ``xid`` at log ``position`` (the begin's, an
        event's or the commit's end position), as this connector writes it. Pure."""
        ...

    def take_unrepresentable(self) -> dict[tuple[str, str, str], int]:
        """The values replaced by their column's fallback since the last call, counted per
        ``(table, column, kind)`` (the ``unrepresentable`` metric); resets the counts."""
        ...

    def close(self) -> None:
        """Close the source's own connections (not :attr:`log`'s or :attr:`chunks`', which their users
        close); never raises."""
        ...
