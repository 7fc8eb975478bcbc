"""The incremental snapshot engine: Debezium's signal-based DBLog loop for one PostgreSQL source.

Single-threaded: the capture loop calls every method. The loop feeds it

* signals (``apply``) from any channel, answered with a ``SignalOutcome``;
* watermark markers as they come back through the log (``on_marker``), which return the READ
  events to emit at a window's close, before any later log event;
* every streamed row change (``on_stream_change``), which evicts buffered rows with the same
  chunk-key values (its before and after images) while the window is open;

and asks it to read the next chunk (``read_chunk`` when ``wants_chunk``): open watermark
(committed) → chunk SELECT → close watermark (always written, even when the query fails). The
durable state is ``state`` (immutable; a new object after each change).

Contracts: ``apply`` never raises (except a ``SinkError``, which is Kafka failing, not the signal):
every problem becomes a rejected ``SignalOutcome`` with a reason. Every regular expression of a
signal is matched with RE2 (``signaller.patterns``), in time linear in the table name. Every row a
chunk SELECT read is either emitted or superseded by a streamed change; a table whose counts do not
add up finishes ``SQL_EXCEPTION`` (with an error log), never ``SUCCEEDED``. Blocking snapshots read
and emit one chunk at a time (memory bounded by two chunks).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from signaller.config import SignallerConfig
from signaller.errors import SignalError, SinkError, SourceError
from signaller.model import ChangeEvent, Op, TableId
from signaller.patterns import PatternError, UserPattern, compile_pattern
from signaller.signals.actions import entry_for
from signaller.signals.model import (
    ExecuteSnapshot,
    LogMessage,
    PauseSnapshot,
    ResumeSnapshot,
    Signal,
    SignalOutcome,
    StopSnapshot,
    WindowMarker,
)
from signaller.snapshot import notifications as notes
from signaller.snapshot.chunks import ChunkTable
from signaller.snapshot.control import SidecarStatus, TableProgress
from signaller.snapshot.source import ChunkQueryError, PostgresChunkSource, TableInfo, VisibleSnapshot
from signaller.snapshot.state import FinishedTable, Key, QueuedTable, SnapshotState
from signaller.snapshot.window import Window
from signaller.sources.postgres.codecs import TypeModes
from signaller.sources.postgres.reader import Change, RelationPlan, make_plan, row_from_tuple
from signaller.sources.postgres.relations import RelationCache

log = logging.getLogger("signaller.snapshot")
MAX_FINISHED = 100

Emit = Callable[[Change], None]
Notify = Callable[[notes.Notification], None]
FilterCompiler = Callable[[str, dict[str, str]], str]


@dataclass
class _Prepared:
    """A table ready for chunking: its schema plan and chunk SQL description."""

    info: TableInfo
    plan: RelationPlan
    chunk: ChunkTable


@dataclass
class _Runtime:
    """Per-table figures for the status page that need not survive a restart."""

    chunk_from: str | None = None
    chunk_to: str | None = None
    estimated_rows: int | None = None
    total_rows: int | None = None
    rows_read: int = 0
    rows_emitted: int = 0
    rows_evicted: int = 0
    chunks: int = 0
    chunk_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def row_identity(row: dict[str, Any], names: Sequence[str]) -> tuple[Hashable, ...] | None:
    """The identity of a row inside a window: its chunk-key values (converted, as in change events),
    or None if the row image carries none of them (e.g. a before image without key columns)."""
    values = tuple(_hashable(row.get(name)) for name in names)
    return None if all(value is None for value in values) else values


def _hashable(value: Any) -> Hashable:
    """``value`` in a hashable form (arrays and structs as tuples), equal exactly when the values are."""
    if isinstance(value, (list, tuple)):
        return ("[]", *(_hashable(item) for item in value))
    if isinstance(value, dict):
        return ("{}", *sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, bytearray):
        return bytes(value)
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    return value  # type: ignore[no-any-return]


def _instant(ts: float) -> str:
    """Java ``Instant.toString()``: UTC, ``Z``, fraction in groups of 3 digits as needed."""
    moment = datetime.fromtimestamp(ts, UTC)
    micros = moment.microsecond
    fraction = "" if micros == 0 else (f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def _pattern(text: str, where: str, signal_id: str, *, ignore_case: bool = False) -> UserPattern:
    """``text`` (trimmed) compiled with RE2, or ``SignalError`` naming ``where`` and what is accepted."""
    try:
        return compile_pattern(text.strip(), ignore_case=ignore_case)
    except PatternError as exc:
        raise SignalError(f"{where}: {exc}", signal_id) from None


def _key_text(key: Key | None) -> str | None:
    return None if key is None else ",".join("<null>" if v is None else v for v in key)


class IncrementalSnapshotter:
    """See the module docstring. ``emit`` sends one READ change (in the current Kafka group);
    ``notify`` sends one notification; ``compile_filter`` validates and normalizes a filter."""

    def __init__(
        self,
        config: SignallerConfig,
        source: PostgresChunkSource,
        modes: TypeModes,
        relations: RelationCache,
        emit: Emit,
        notify: Notify,
        compile_filter: FilterCompiler,
    ) -> None:
        self._config = config
        self._source = source
        self._modes = modes
        self._relations = relations
        self._emit = emit
        self._notify = notify
        self._compile_filter = compile_filter
        self._state = SnapshotState()
        self._window: Window[dict[str, Any]] = Window()
        self._window_keys: tuple[str, ...] = ()
        self._window_evicted = 0
        self._chunk_end: Key | None = None
        self._pending_stops: list[tuple[str, ...]] = []
        self._need_chunk = False
        self._prepared: dict[str, _Prepared] = {}
        self._runtime: dict[str, _Runtime] = {}
        self._window_opened_at = 0.0
        self.rows_emitted = 0
        self._read_only = config.read_only
        self._visible: VisibleSnapshot | None = None
        self._high_lsn = 0

    # -- state ----------------------------------------------------------------------------
    @property
    def state(self) -> SnapshotState:
        return self._state

    @property
    def chunk_size(self) -> int:
        return self._state.chunk_size or self._config.incremental_snapshot_chunk_size

    def restore(self, state: SnapshotState | None) -> None:
        """Resume after a restart: the next chunk starts after the stored ``last_key``."""
        self._state = state or SnapshotState()
        self._chunk_end = self._state.last_key
        self._need_chunk = self._state.running and not self._state.paused
        if self._state.running:
            log.info("resuming incremental snapshot of %s after key %s%s",
                     [q.table for q in self._state.queue], _key_text(self._state.last_key),
                     " (paused)" if self._state.paused else "")

    def set_channel_position(self, channel: str, position: Any) -> None:
        positions = {**self._state.channel_positions, channel: position}
        self._state = self._state.with_changes(channel_positions=positions)

    def set_chunk_size(self, size: int) -> SignalOutcome:
        if not 1 <= size <= 1_000_000:
            return SignalOutcome("chunk-size", False, f"chunk size {size} out of range; accepted: 1..1000000")
        self._state = self._state.with_changes(chunk_size=size)
        log.info("incremental.snapshot.chunk.size is now %d (from the next chunk)", size)
        return SignalOutcome("chunk-size", True)

    @property
    def wants_chunk(self) -> bool:
        return self._need_chunk and not self._window.pending

    # -- signals --------------------------------------------------------------------------
    def apply(self, signal: Signal, action: object) -> SignalOutcome:
        """Apply a parsed user signal; rejections carry the reason and change nothing.

        Never raises but ``SinkError`` (Kafka failing while a blocking snapshot emits): a problem with
        the signal is a rejection with its reason; a database error a rejection "could not check the
        signal against the database: ..."; anything unexpected a rejection naming the signal, with the
        traceback in the log."""
        try:
            entry = entry_for(action)
            if entry is None:
                raise SignalError(f"signal type {signal.type!r} cannot be sent by users", signal.id)
            entry.handle(self, action)
        except SignalError as exc:
            return SignalOutcome(signal.id, False, exc.reason)
        except SourceError as exc:
            return SignalOutcome(signal.id, False, f"could not check the signal against the database: {exc}")
        except SinkError:
            raise
        except Exception as exc:
            log.exception("signal %s (%s) could not be applied", signal.id, signal.type)
            return SignalOutcome(signal.id, False, f"signal {signal.id!r} ({signal.type}) could not be applied: "
                                 f"internal error {type(exc).__name__}: {exc} (the sidecar logged the details)")
        return SignalOutcome(signal.id, True)

    def _captured_tables(self) -> list[TableId]:
        signal_table = self._config.signal_data_collection
        return [t for t in self._source.tables()
                if self._config.is_table_captured(t.schema, t.table) and t != signal_table]

    def _expand(self, patterns: Sequence[str], tables: list[TableId], signal_id: str) -> list[TableId]:
        chosen: list[TableId] = []
        for index, pattern in enumerate(patterns):
            regex = _pattern(pattern, f"data-collections[{index}]", signal_id)
            matched = [t for t in tables if regex.fullmatch(str(t))]
            if not matched:
                names = ", ".join(str(t) for t in tables) or "none"
                raise SignalError(f"data-collections[{index}] {pattern!r} matches no captured table; "
                                  f"captured tables: {names}", signal_id)
            chosen.extend(t for t in matched if t not in chosen)
        return chosen

    def execute_snapshot(self, action: ExecuteSnapshot) -> None:
        """The ``execute-snapshot`` action (``ActionHandler``)."""
        tables = self._expand(action.data_collections, self._captured_tables(), action.signal_id)
        queued: list[QueuedTable] = []
        for table in tables:
            info = self._source.describe(table)
            if info is None:
                raise SignalError(f"table {table} does not exist", action.signal_id)
            condition = next((c for index, c in enumerate(action.additional_conditions)
                              if _pattern(c.data_collection, f"additional-conditions[{index}].data-collection",
                                          action.signal_id, ignore_case=True).fullmatch(str(table))), None)
            normalized = None
            if condition is not None:
                try:
                    normalized = "(" + self._compile_filter(condition.filter, info.sql_types) + ")"
                except SignalError as exc:
                    raise SignalError(f"filter for {table}: {exc.reason}", action.signal_id) from None
            if action.surrogate_key is not None:
                self._check_surrogate(info, action.surrogate_key, action.signal_id)
            elif not self._key_columns(info):
                # Debezium accepts the signal and skips the table when its turn comes
                # (TABLE_SCAN_COMPLETED with status NO_PRIMARY_KEY); so does signaller, with a hint.
                log.warning("signal %s: table %s has no primary key and will be skipped (NO_PRIMARY_KEY); give a "
                            "'surrogate-key' (a unique NOT NULL column) or configure message.key.columns",
                            action.signal_id, table)
            queued.append(QueuedTable(str(table), normalized, action.surrogate_key, action.signal_id))
        if action.snapshot_type == "blocking":
            self._blocking(action, queued)
            return
        was_running = self._state.running
        self._state = self._state.with_changes(queue=self._state.queue + tuple(queued),
                                               correlation_id=action.signal_id)
        if not was_running:
            for kind in ("STARTED", "DATA_COLLECTIONS_RESOLVED"):
                self._notify(notes.make(kind, action.signal_id, self._config.topic_prefix,
                                        data_collections=self._collections()))
            if not self._state.paused:
                self._need_chunk = True
        log.info("incremental snapshot %s queued %s", action.signal_id, [q.table for q in queued])

    def _check_surrogate(self, info: TableInfo, column: str, signal_id: str) -> None:
        if column not in info.sql_types:
            raise SignalError(f"surrogate-key {column!r} is not a column of {info.table_id}; columns: "
                              f"{', '.join(info.sql_types)}", signal_id)
        if column not in info.not_null or column not in info.unique_columns:
            raise SignalError(f"surrogate-key {column!r} of {info.table_id} must be NOT NULL and have a unique "
                              "index, or chunks could skip or repeat rows", signal_id)
        if not self._config.is_column_captured(info.table_id.schema, info.table_id.table, column):
            raise SignalError(f"surrogate-key {column!r} of {info.table_id} is not a captured column (see "
                              "column.include.list/column.exclude.list): streamed changes must carry it to be "
                              "matched against the rows of a snapshot chunk; accepted: a captured unique NOT "
                              "NULL column", signal_id)

    def _key_columns(self, info: TableInfo) -> tuple[str, ...]:
        override = self._config.key_columns_for(info.table_id.schema, info.table_id.table)
        return tuple(override) if override else info.primary_key

    def stop_snapshot(self, action: StopSnapshot) -> None:
        """The ``stop-snapshot`` action (``ActionHandler``)."""
        if action.snapshot_type == "blocking":
            return
        for index, pattern in enumerate(action.data_collections):
            _pattern(pattern, f"data-collections[{index}]", action.signal_id)
        self._pending_stops.append(action.data_collections or (".*",))
        if not self._window.pending:
            self._apply_stops()

    def pause_snapshot(self, action: PauseSnapshot) -> None:
        """The ``pause-snapshot`` action (``ActionHandler``)."""
        if not self._state.running:
            raise SignalError("no incremental snapshot is running", action.signal_id)
        if not self._state.paused:
            self._state = self._state.with_changes(paused=True)
            self._notify(notes.make("PAUSED", self._state.correlation_id, self._config.topic_prefix,
                                    data_collections=self._collections()))

    def resume_snapshot(self, action: ResumeSnapshot) -> None:
        """The ``resume-snapshot`` action (``ActionHandler``)."""
        if not self._state.running:
            raise SignalError("no incremental snapshot is running", action.signal_id)
        if self._state.paused:
            self._state = self._state.with_changes(paused=False)
            self._notify(notes.make("RESUMED", self._state.correlation_id, self._config.topic_prefix,
                                    data_collections=self._collections()))
            self._need_chunk = True

    def log_message(self, action: LogMessage) -> None:
        """The ``log`` action (``ActionHandler``): ``{}`` in the message becomes the current offsets."""
        log.info("signal %s: %s", action.signal_id, action.message.replace("{}", str(self._state.to_offset())))

    def _collections(self) -> str:
        return ",".join(q.table for q in self._state.queue)

    # -- the stream -----------------------------------------------------------------------
    def on_stream_change(self, change: Change) -> None:
        """Deduplicate: a streamed change evicts the buffered rows with the chunk-key values of its
        before and of its after image (read-only mode: only a change the chunk's snapshot did not
        see). Each image supersedes at most one row: any further row it removes is counted as lost."""
        window = self._window
        if window.is_open and len(window):
            event = change.event
            if self._visible is not None and event.tx_id is not None and self._visible.sees(event.tx_id):
                return
            table = str(event.table)
            identities = {row_identity(image, self._window_keys) for image in (event.before, event.after)
                          if image is not None}
            for identity in identities - {None}:
                if window.on_stream_key(table, identity):
                    self._window_evicted += 1

    def on_position(self, lsn: int, position: tuple[int | None, int | None]) -> None:
        """Read-only mode: the log has been read up to ``lsn``; once past the chunk's high
        watermark every change the chunk saw has been streamed, so the window closes. The caller
        gives ``position`` = (commit LSN of the newest transaction read, 0): the READs then sort
        after every change already streamed and before every later one (``sequence[1] = 0``)."""
        if self._read_only and self._window.pending and self._high_lsn and lsn >= self._high_lsn:
            chunk_id = self._window.chunk_id or ""
            self.on_marker(WindowMarker(f"{chunk_id}-close", False), position)

    def on_marker(self, marker: WindowMarker, position: tuple[int | None, int | None]) -> None:
        """A watermark came back through the log at ``position`` = (last commit LSN, LSN)."""
        if marker.is_open:
            if not self._window.open(marker.signal_id):
                log.debug("ignoring window-open marker %s of another chunk", marker.signal_id)
            return
        rows = self._window.close(marker.signal_id)
        if rows is None:
            log.debug("ignoring window-close marker %s of another chunk", marker.signal_id)
            return
        self._visible, self._high_lsn = None, 0
        evicted, self._window_evicted = self._window_evicted, 0
        self._flush(rows, position, evicted)
        self._need_chunk = self._state.running
        if self._pending_stops:
            self._apply_stops()

    def _flush(self, rows: list[dict[str, Any]], position: tuple[int | None, int | None], evicted: int) -> None:
        head = self._state.queue[0] if self._state.queue else None
        prepared = self._prepared.get(head.table) if head else None
        if head is None or prepared is None:
            return
        runtime = self._runtime.setdefault(head.table, _Runtime())
        runtime.rows_emitted += len(rows)
        runtime.rows_evicted += evicted
        last_commit, lsn = position
        now_us = time.time_ns() // 1000
        table_id = prepared.info.table_id
        for row in rows:
            event = ChangeEvent(Op.READ, table_id, None, row, lsn, None, last_commit, None, now_us, "incremental")
            self._emit(Change(event, prepared.plan))
        self.rows_emitted += len(rows)
        queue = (QueuedTable(head.table, head.filter, head.surrogate_key, head.correlation_id,
                             head.rows + len(rows), head.started_at), *self._state.queue[1:])
        self._state = self._state.with_changes(queue=queue, last_key=self._chunk_end)

    # -- reading a chunk ------------------------------------------------------------------
    def read_chunk(self) -> None:
        """One window: open marker, chunk SELECT, close marker (always, even on errors)."""
        self._need_chunk = False
        self._apply_stops()
        if not self._state.running or self._state.paused:
            return
        chunk_id = str(uuid.uuid4())
        if self._read_only:
            self._read_chunk_read_only(chunk_id)
            return
        opened = time.time()
        metadata: dict[str, Any] = {"openWindowTimestamp": _instant(opened),
                                    "correlationId": self._state.correlation_id,
                                    "dataCollectionId": self._state.queue[0].table}
        self._source.write_marker(chunk_id, True, metadata)
        filled = False
        try:
            filled = self._fill_window(chunk_id)
        finally:
            if not filled:
                self._window.expect(chunk_id)
            close = {"openWindowTimestamp": metadata["openWindowTimestamp"],
                     "closeWindowTimestamp": _instant(time.time()),
                     "correlationId": metadata["correlationId"], "dataCollectionId": metadata["dataCollectionId"]}
            self._source.write_marker(chunk_id, False, close)

    def _read_chunk_read_only(self, chunk_id: str) -> None:
        """``read.only=true``: no watermark rows; the window is the chunk's MVCC snapshot plus
        the WAL position after the read (see ``source.read_chunk_visible``)."""
        self._visible, self._high_lsn = None, 0
        if self._fill_window(chunk_id):
            self._window.open(chunk_id)

    def _select(self, prepared: _Prepared, lower: Key | None) -> list[tuple[str | None, ...]]:
        if not self._read_only:
            return self._source.read_chunk(prepared.chunk, lower, self._state.max_key, self.chunk_size)
        rows, visible, high = self._source.read_chunk_visible(prepared.chunk, lower, self._state.max_key,
                                                              self.chunk_size)
        self._visible, self._high_lsn = visible, high
        return rows

    def _fill_window(self, chunk_id: str) -> bool:
        while self._state.queue:
            head = self._state.queue[0]
            try:
                prepared = self._prepare(head)
                if prepared is None:
                    continue
                started = time.monotonic()
                lower = self._chunk_end
                rows = self._select(prepared, lower)
                runtime = self._runtime.setdefault(head.table, _Runtime())
                runtime.chunks += 1
                runtime.chunk_seconds = time.monotonic() - started
            except (ChunkQueryError, SourceError) as exc:
                log.warning("incremental snapshot of %s failed: %s", head.table, exc)
                self._finish_table("SQL_EXCEPTION")
                continue
            if not rows:
                self._finish_table(self._scan_status(head.table))
                continue
            self._buffer(chunk_id, head, prepared, rows, lower)
            return True
        return False

    def _scan_status(self, table: str) -> str:
        """``SUCCEEDED`` if every row the chunk SELECTs read was emitted or superseded by a streamed
        change; else ``SQL_EXCEPTION`` (Debezium's status for a failed read), with an error log."""
        runtime = self._runtime.get(table)
        if runtime is None or runtime.rows_read == runtime.rows_emitted + runtime.rows_evicted:
            return "SUCCEEDED"
        log.error("incremental snapshot of %s lost rows: the chunk queries read %d rows but %d were emitted and %d "
                  "superseded by streamed changes (%d unaccounted for); the table is reported SQL_EXCEPTION, "
                  "snapshot it again", table, runtime.rows_read, runtime.rows_emitted, runtime.rows_evicted,
                  runtime.rows_read - runtime.rows_emitted - runtime.rows_evicted)
        return "SQL_EXCEPTION"

    def _describe(self, queued: QueuedTable) -> _Prepared | str:
        """The table's current schema plan and chunk SQL description, or the Debezium status
        (``UNKNOWN_SCHEMA``, ``NO_PRIMARY_KEY``) under which it must be skipped."""
        table_id = TableId.parse(queued.table)
        info = self._source.describe(table_id)
        if info is None:
            return "UNKNOWN_SCHEMA"
        keys = (queued.surrogate_key,) if queued.surrogate_key else self._key_columns(info)
        if not keys:
            return "NO_PRIMARY_KEY"
        self._relations.apply_relation(info.relation)
        schema = self._relations.schema(info.oid)
        plan = make_plan(schema, tuple(c.name for c in schema.columns), self._config, self._modes)
        emitted = {name for _, name, _, _ in plan.slots}
        missing = [k for k in keys if k not in emitted]
        if missing:
            log.warning("snapshot of %s skipped (NO_PRIMARY_KEY): chunk key column(s) %s are not in the change "
                        "events (column filters or an unsupported type), so streamed changes could not be "
                        "matched against a chunk's rows", table_id, ", ".join(missing))
            return "NO_PRIMARY_KEY"
        columns = tuple(c.name for c in plan.schema.columns)
        chunk = ChunkTable(table_id.schema, table_id.table, columns,
                           tuple((k, info.sql_types[k]) for k in keys), queued.filter)
        return _Prepared(info, plan, chunk)

    def _prepare(self, head: QueuedTable) -> _Prepared | None:
        """Schema and max key of the head table (once per table); None if it was skipped."""
        prepared = self._prepared.get(head.table)
        if prepared is None:
            found = self._describe(head)
            if isinstance(found, str):
                self._finish_table(found)
                return None
            prepared = found
            self._prepared[head.table] = prepared
            self._runtime.setdefault(head.table, _Runtime()).estimated_rows = prepared.info.estimated_rows
        if self._state.max_key is None:
            runtime = self._runtime.setdefault(head.table, _Runtime())
            runtime.total_rows, runtime.rows_read, runtime.rows_emitted, runtime.rows_evicted = None, 0, 0, 0
            max_key = self._source.max_key(prepared.chunk)
            if max_key is None:
                self._finish_table("EMPTY")
                return None
            runtime.total_rows = self._total_rows(prepared, head, max_key)
            started = head.started_at or time.time()
            queue = (QueuedTable(head.table, head.filter, head.surrogate_key, head.correlation_id, head.rows, started),
                     *self._state.queue[1:])
            self._state = self._state.with_changes(max_key=max_key, queue=queue)
        return prepared

    def _total_rows(self, prepared: _Prepared, head: QueuedTable, max_key: Key) -> int | None:
        """Debezium's ``total_rows``: the planner's estimate (``pg_class.reltuples``) when there is no
        filter and it is positive, else an exact count up to the maximum key; None if that fails."""
        estimate = prepared.info.estimated_rows
        if head.filter is None and estimate is not None and estimate > 0:
            return estimate
        try:
            return self._source.count_rows(prepared.chunk, max_key)
        except (ChunkQueryError, SourceError) as exc:
            log.warning("could not count the rows of %s (progress will omit totals): %s", head.table, exc)
            return None

    def _progress(self, table: str) -> dict[str, str]:
        """``total_rows``, ``total_chunks`` and ``chunk_index`` of IN_PROGRESS (as Debezium 3.7)."""
        runtime = self._runtime.get(table)
        if runtime is None or runtime.total_rows is None:
            return {}
        size = self.chunk_size
        total_chunks = -(-runtime.total_rows // size)
        index = min(-(-runtime.rows_read // size), total_chunks)
        return {"total_rows": str(runtime.total_rows), "total_chunks": str(total_chunks), "chunk_index": str(index)}

    def _buffer(self, chunk_id: str, head: QueuedTable, prepared: _Prepared, rows: list[tuple[str | None, ...]],
                lower: Key | None) -> None:
        width = len(prepared.chunk.columns)
        keys = tuple(name for name, _ in prepared.chunk.key)
        converted = []
        for values in rows:
            row = row_from_tuple(prepared.plan, values[:width])
            converted.append((row_identity(row, keys), row))
        self._window_keys = keys
        self._window_evicted = 0
        self._window.fill(chunk_id, str(prepared.info.table_id), converted)
        self._chunk_end = tuple(rows[-1][width:])
        runtime = self._runtime.setdefault(head.table, _Runtime())
        runtime.chunk_from, runtime.chunk_to = _key_text(lower), _key_text(self._chunk_end)
        runtime.rows_read += len(rows)
        self._notify(notes.make(
            "IN_PROGRESS", self._state.correlation_id, self._config.topic_prefix,
            data_collections=self._collections(), current_collection_in_progress=head.table,
            maximum_key=_key_text(self._state.max_key) or '"<null>"',
            last_processed_key=_key_text(self._chunk_end) or "", **self._progress(head.table),
        ))

    def _finish_table(self, status: str, *, announce: bool = True) -> None:
        head = self._state.queue[0]
        collections = self._collections()
        done = FinishedTable(head.table, status, head.rows, head.started_at, time.time(), head.correlation_id,
                             head.filter)
        self._state = self._state.with_changes(
            queue=self._state.queue[1:], max_key=None, last_key=None,
            finished=(*self._state.finished, done)[-MAX_FINISHED:],
        )
        self._chunk_end = None
        self._prepared.pop(head.table, None)
        runtime = self._runtime.get(head.table)
        total = {} if runtime is None or runtime.total_rows is None else {"total_rows": str(runtime.total_rows)}
        if runtime is not None:
            runtime.total_rows = None
        if announce:
            self._notify(notes.make("TABLE_SCAN_COMPLETED", self._state.correlation_id, self._config.topic_prefix,
                                    data_collections=collections, scanned_collection=head.table,
                                    total_rows_scanned=str(head.rows), status=status, **total))
        log.info("incremental snapshot of %s: %s, %d rows", head.table, status, head.rows)
        if not self._state.queue:
            self._notify(notes.make("COMPLETED", self._state.correlation_id, self._config.topic_prefix))
            self._state = self._state.with_changes(correlation_id=None, paused=False)

    def _apply_stops(self) -> None:
        while self._pending_stops and not self._window.pending:
            patterns = self._pending_stops.pop(0)
            regexes = []
            for pattern in patterns:
                try:
                    regexes.append(compile_pattern(pattern.strip()))
                except PatternError as exc:  # checked when the signal was applied; never expected here
                    log.warning("stop-snapshot pattern ignored: %s", exc)
            stopped = [q for q in self._state.queue if any(r.fullmatch(q.table) for r in regexes)]
            if not stopped:
                continue
            correlation = self._state.correlation_id
            head_stopped = bool(self._state.queue) and self._state.queue[0] in stopped
            if head_stopped:
                self._finish_table("ABORTED", announce=False)
            remaining = tuple(q for q in self._state.queue if q not in stopped)
            self._state = self._state.with_changes(queue=remaining)
            if not remaining:
                # Nothing left: the snapshot is over, as when its last table finishes (a pause does not
                # outlive it, or the next execute-snapshot would start paused).
                self._state = self._state.with_changes(max_key=None, last_key=None, correlation_id=None,
                                                       paused=False)
                self._chunk_end = None
            self._notify(notes.make("ABORTED", correlation, self._config.topic_prefix,
                                    data_collections=",".join(q.table for q in stopped)))

    # -- blocking snapshots ---------------------------------------------------------------
    def _blocking(self, action: ExecuteSnapshot, tables: list[QueuedTable]) -> None:
        """Read the tables while streaming waits (the caller does not poll the log), one chunk at a
        time: a chunk is emitted once the next one was read (to know which row is a table's last), so
        at most two chunks are in memory. A failed read ends that table with ``SQL_EXCEPTION`` and
        the snapshot goes on with the next table."""
        prefix = self._config.topic_prefix
        names = ",".join(q.table for q in tables)
        self._notify(notes.make("STARTED", None, prefix, notes.INITIAL, data_collections=names))
        for index, queued in enumerate(tables):
            try:
                found = self._describe(queued)
            except SourceError as exc:
                found = "SQL_EXCEPTION"
                log.warning("blocking snapshot of %s failed: %s", queued.table, exc)
            if isinstance(found, str):
                log.warning("blocking snapshot of %s skipped: %s", queued.table, found)
                continue
            emitted, status = self._blocking_table(found, index, len(tables))
            self.rows_emitted += emitted
            self._notify(notes.make("TABLE_SCAN_COMPLETED", None, prefix, notes.INITIAL,
                                    scanned_collection=queued.table, total_rows_scanned=str(emitted),
                                    status=status))
        self._notify(notes.make("COMPLETED", None, prefix, notes.INITIAL))

    def _blocking_table(self, prepared: _Prepared, table_index: int, tables: int) -> tuple[int, str]:
        """Emit every row of one table with Debezium's snapshot flags; (rows emitted, status)."""
        table_id, plan, width = prepared.info.table_id, prepared.plan, len(prepared.chunk.columns)
        chunks = self._blocking_chunks(prepared.chunk)
        emitted = 0
        try:
            current = next(chunks, [])
            while current:
                following = next(chunks, [])
                for offset, values in enumerate(current):
                    is_last = not following and offset == len(current) - 1
                    flag = self._blocking_flag(table_index, tables, emitted, is_last)
                    now_us = time.time_ns() // 1000
                    row = row_from_tuple(plan, values[:width])
                    event = ChangeEvent(Op.READ, table_id, None, row, None, None, None, None, now_us, flag)
                    self._emit(Change(event, plan))
                    emitted += 1
                current = following
        except (ChunkQueryError, SourceError) as exc:
            log.warning("blocking snapshot of %s failed after %d rows: %s", table_id, emitted, exc)
            return emitted, "SQL_EXCEPTION"
        return emitted, "SUCCEEDED"

    def _blocking_chunks(self, chunk: ChunkTable) -> Iterator[list[tuple[str | None, ...]]]:
        """The table's rows in chunk-key order, one non-empty chunk (raw SELECT rows) at a time."""
        width = len(chunk.columns)
        lower: Key | None = None
        while True:
            size = self.chunk_size
            batch = self._source.read_chunk(chunk, lower, None, size)
            if batch:
                yield batch
            if len(batch) < size:
                return
            lower = tuple(batch[-1][width:])

    @staticmethod
    def _blocking_flag(table_index: int, tables: int, position: int, is_last: bool) -> str:
        """Debezium's ``source.snapshot`` of a blocking/initial READ: ``first`` (first row of the first
        table), ``last`` (last row of the last table), ``first_in_data_collection``,
        ``last_in_data_collection``, else ``true``."""
        last_table = table_index == tables - 1
        if table_index == 0 and position == 0:
            return "first"
        if last_table and is_last:
            return "last"
        if position == 0:
            return "first_in_data_collection"
        if is_last:
            return "last_in_data_collection"
        return "true"

    # -- status ---------------------------------------------------------------------------
    def status(self) -> SidecarStatus:
        tables: list[TableProgress] = []
        for done in self._state.finished:
            state = {"SUCCEEDED": "completed", "EMPTY": "completed", "ABORTED": "aborted"}.get(done.status, "skipped")
            tables.append(TableProgress(done.table, state, done.rows, None, None, None, None, done.status,  # type: ignore[arg-type]
                                        done.started_at, done.ended_at, done.correlation_id, done.filter))
        for index, queued in enumerate(self._state.queue):
            runtime = self._runtime.get(queued.table, _Runtime())
            if index == 0:
                state = "paused" if self._state.paused else "running"
                tables.append(TableProgress(queued.table, state, queued.rows, runtime.estimated_rows,  # type: ignore[arg-type]
                                            runtime.chunk_from, runtime.chunk_to, _key_text(self._state.max_key),
                                            None, queued.started_at, None, queued.correlation_id, queued.filter))
            else:
                tables.append(TableProgress(queued.table, "queued", 0, runtime.estimated_rows,
                                            correlation_id=queued.correlation_id, filter=queued.filter))
        return SidecarStatus(running=self._state.running, paused=self._state.paused, chunk_size=self.chunk_size,
                             correlation_id=self._state.correlation_id, tables=tuple(tables))
