"""The incremental snapshot engine: Debezium's signal-based DBLog loop for one source.

Single-threaded: the capture loop calls every method. The loop feeds it

* signals (``apply``) from any channel, answered with a ``SignalOutcome``;
* watermark markers as they come back through the log (``on_marker``); a window's close lets its
  READs go out;
* every streamed row change (``on_stream_change``), which supersedes buffered rows with the same
  chunk-key values (its before and after images) from the window's open marker until the row is
  emitted;

and asks it to read the next chunk (``read_chunk`` when ``wants_chunk``): open watermark
(committed) → chunk SELECT → close watermark (always written, even when the query fails), and to
emit a closed window's READs (``emit_pending``, a slice of at most the rows it is given, between
stream batches, so a large window never holds up the stream: a row is emitted only if no streamed
change of its key was seen since the open marker, so no READ ever follows a newer change of its
row). Chunk rows stay as the source's text until their slice is emitted (one chunk of text rows
in memory, never a chunk of decoded rows). A chunk reader with ``read_chunk_streaming`` (a
server-side cursor) hands over a large chunk's first ``FIRST_FETCH`` rows before the close
watermark and the rest in slices (``fetch_pending``, while ``fetching``), so no chunk query holds up
the stream for long either. The durable state is ``state`` (immutable; a new object
after each change); it moves to the window's last key once the window's last READ was emitted.

Contracts: ``apply`` never raises (except a ``SinkError``, which is Kafka failing, not the signal):
every problem becomes a rejected ``SignalOutcome`` with a reason. Every regular expression of a
signal is matched with RE2 (``signaller.patterns``), in time linear in the table name. Every row a
chunk SELECT read is either emitted or superseded by a streamed change; a table whose counts do not
add up finishes ``SQL_EXCEPTION`` (with an error log), never ``SUCCEEDED``. Blocking snapshots read
and emit one chunk at a time (memory bounded by two chunks).

``emit_reads`` (optional) sends a slice of READ rows of one table in one call (the runtime's bulk
path: no event object per row); without it each READ is a ``ChangeEvent`` given to ``emit``.

Its parts: ``requests`` (the tables a signal queues), ``tables`` (a queued table's rows plan and chunk
description, its row count), ``blocking`` (blocking
snapshots), ``status`` (progress figures and the status page), ``window`` (the DBLog buffer),
``state`` (what survives a restart), ``notifications``. The source is reached only through the
interfaces of ``signaller.sources.base``: a ``ChunkReader`` (the SQL side) and a
``TableSchemaProvider`` (what a table looks like, and how its chunk rows become the rows the stream
produces); the engine is generic over the source's change type (what ``emit`` receives and
``on_stream_change`` is given).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Generic

from signaller.config import CaptureSection, SnapshotSection
from signaller.errors import SignalError, SinkError, SourceError
from signaller.model import ChangeEvent, Op
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
from signaller.snapshot.blocking import BlockingSnapshot, Emit, Notify
from signaller.snapshot.control import SidecarStatus
from signaller.snapshot.requests import FilterCompiler, SnapshotRequests, signal_pattern, stopped_by
from signaller.snapshot.state import FinishedTable, Key, QueuedTable, SnapshotState
from signaller.snapshot.status import TableRuntime, build_status, key_text, progress_fields, scan_status
from signaller.snapshot.tables import PreparedTable, TableCatalog, total_rows
from signaller.snapshot.window import Window, row_identity
from signaller.sources.base import (
    ChangeT,
    ChunkQueryError,
    ChunkReader,
    ChunkRest,
    RawRow,
    TableRows,
    TableSchemaProvider,
    TransactionVisibility,
)

log = logging.getLogger("signaller.snapshot")
FIRST_FETCH = 1024
"""Rows of a chunk read before its close watermark when the chunk reader streams chunks; the rest
follows in slices."""
MAX_FINISHED = 100

ReadEmitter = Callable[[TableRows[Any], list[dict[str, Any]], int | None, int | None], object]
"""Sends READ rows of one table at window position ``(last_commit_lsn, lsn)``, in order (the runtime's
``EventDispatcher.reads``, given the table's ``TableRows``)."""


class IncrementalSnapshotter(Generic[ChangeT]):
    """See the module docstring. ``settings`` is the snapshot section (chunk size, read-only mode, signal
    table), ``capture`` the table and column filters, ``topic_prefix`` the connector's logical name in
    notifications. ``chunks`` and ``schemas`` are the source's (constructed by the runtime); ``emit``
    sends one READ change (in the current Kafka group); ``notify`` sends one notification;
    ``compile_filter`` validates and normalizes a filter."""

    def __init__(
        self,
        settings: SnapshotSection,
        capture: CaptureSection,
        topic_prefix: str,
        chunks: ChunkReader,
        schemas: TableSchemaProvider[ChangeT],
        emit: Emit[ChangeT],
        notify: Notify,
        compile_filter: FilterCompiler,
        emit_reads: ReadEmitter | None = None,
    ) -> None:
        self._settings = settings
        self._capture = capture
        self._topic_prefix = topic_prefix
        self._chunks = chunks
        self._schemas = schemas
        self._tables = TableCatalog(capture, schemas)
        self._blocking = BlockingSnapshot(chunks, self._tables.describe, emit, notify, topic_prefix)
        self._emit = emit
        self._notify = notify
        self._compile_filter = compile_filter
        self._requests = SnapshotRequests(settings, capture, schemas, self._tables, compile_filter)
        self._state = SnapshotState()
        self._emit_reads = emit_reads
        self._window: Window[RawRow] = Window()
        self._window_keys: tuple[str, ...] = ()
        self._window_emitted = 0
        self._window_position: tuple[int | None, int | None] = (None, None)
        self._rest: ChunkRest | None = None
        self._rest_lower: Key | None = None
        self._rest_last: RawRow | None = None
        self._chunk_end: Key | None = None
        self._pending_stops: list[tuple[str, ...]] = []
        self._need_chunk = False
        self._prepared: dict[str, PreparedTable[ChangeT]] = {}
        self._runtime: dict[str, TableRuntime] = {}
        self._window_opened_at = 0.0
        self.rows_emitted = 0
        self._read_only = settings.read_only
        self._visible: TransactionVisibility | None = None
        self._high_lsn = 0

    # -- state ----------------------------------------------------------------------------
    @property
    def state(self) -> SnapshotState:
        """The durable snapshot state as of now: immutable, a new object after each change, so the loop can store the
        object current at a position together with that position."""
        return self._state

    @property
    def chunk_size(self) -> int:
        """Rows per chunk SELECT: the size set by the API (kept in ``state``), else
        ``incremental.snapshot.chunk.size``."""
        return self._state.chunk_size or self._settings.chunk_size

    def restore(self, state: SnapshotState | None) -> None:
        """Resume after a restart: the next chunk starts after the stored ``last_key``."""
        self._state = state or SnapshotState()
        self._chunk_end = self._state.last_key
        self._need_chunk = self._state.running and not self._state.paused
        if self._state.running:
            log.info("resuming incremental snapshot of %s after key %s%s",
                     [q.table for q in self._state.queue], key_text(self._state.last_key),
                     " (paused)" if self._state.paused else "")

    def set_channel_position(self, channel: str, position: Any) -> None:
        """Record how far signal channel ``channel`` has been read; kept in ``state``, so a restart resumes the channel
        there."""
        positions = {**self._state.channel_positions, channel: position}
        self._state = self._state.with_changes(channel_positions=positions)

    def set_chunk_size(self, size: int) -> SignalOutcome:
        """Set the chunk size from the next chunk on (kept in ``state``); a size outside 1..1000000 is rejected and
        changes nothing."""
        if not 1 <= size <= 1_000_000:
            return SignalOutcome("chunk-size", False, f"chunk size {size} out of range; accepted: 1..1000000")
        self._state = self._state.with_changes(chunk_size=size)
        log.info("incremental.snapshot.chunk.size is now %d (from the next chunk)", size)
        return SignalOutcome("chunk-size", True)

    @property
    def wants_chunk(self) -> bool:
        """Whether the loop should call ``read_chunk`` now: a chunk is due and no window awaits its close marker."""
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

    def execute_snapshot(self, action: ExecuteSnapshot) -> None:
        """The ``execute-snapshot`` action (``ActionHandler``)."""
        queued = self._requests.queue(action)
        if action.snapshot_type == "blocking":
            self.rows_emitted += self._blocking.run(queued, self.chunk_size)
            return
        was_running = self._state.running
        self._state = self._state.with_changes(queue=self._state.queue + tuple(queued),
                                               correlation_id=action.signal_id)
        if not was_running:
            for kind in ("STARTED", "DATA_COLLECTIONS_RESOLVED"):
                self._notify(notes.make(kind, action.signal_id, self._topic_prefix,
                                        data_collections=self._collections()))
            if not self._state.paused:
                self._need_chunk = True
        log.info("incremental snapshot %s queued %s", action.signal_id, [q.table for q in queued])

    def stop_snapshot(self, action: StopSnapshot) -> None:
        """The ``stop-snapshot`` action (``ActionHandler``)."""
        if action.snapshot_type == "blocking":
            return
        for index, pattern in enumerate(action.data_collections):
            signal_pattern(pattern, f"data-collections[{index}]", action.signal_id)
        self._pending_stops.append(action.data_collections or (".*",))
        if self._window.closed:  # the closed window's READs go out first, as when they were emitted at its close
            while self.fetching:
                self.fetch_pending(self.chunk_size)
            if self.emitting:
                self.emit_pending(len(self._window))
        if not self._window.pending:
            self._apply_stops()

    def pause_snapshot(self, action: PauseSnapshot) -> None:
        """The ``pause-snapshot`` action (``ActionHandler``)."""
        if not self._state.running:
            raise SignalError("no incremental snapshot is running", action.signal_id)
        if not self._state.paused:
            self._state = self._state.with_changes(paused=True)
            self._notify(notes.make("PAUSED", self._state.correlation_id, self._topic_prefix,
                                    data_collections=self._collections()))

    def resume_snapshot(self, action: ResumeSnapshot) -> None:
        """The ``resume-snapshot`` action (``ActionHandler``)."""
        if not self._state.running:
            raise SignalError("no incremental snapshot is running", action.signal_id)
        if self._state.paused:
            self._state = self._state.with_changes(paused=False)
            self._notify(notes.make("RESUMED", self._state.correlation_id, self._topic_prefix,
                                    data_collections=self._collections()))
            self._need_chunk = True

    def log_message(self, action: LogMessage) -> None:
        """The ``log`` action (``ActionHandler``): ``{}`` in the message becomes the current offsets."""
        log.info("signal %s: %s", action.signal_id, action.message.replace("{}", str(self._state.to_offset())))

    def _collections(self) -> str:
        return ",".join(q.table for q in self._state.queue)

    # -- the stream -----------------------------------------------------------------------
    def on_stream_change(self, change: ChangeT) -> None:
        """Deduplicate: a streamed change evicts the buffered rows with the chunk-key values of its
        before and of its after image (read-only mode: only a change the chunk's snapshot did not
        see). Each image supersedes at most one row: any further row it removes is counted as lost."""
        window = self._window
        if window.watching:
            event = change.event
            table = str(event.table)
            if table != window.table:
                return
            if self._visible is not None and event.tx_id is not None and self._visible.sees(event.tx_id):
                return
            for image in (event.before, event.after):
                if image is not None:
                    identity = row_identity(image, self._window_keys)
                    if identity is not None:
                        window.on_stream_key(table, identity)

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
        if not self._window.close(marker.signal_id):
            log.debug("ignoring window-close marker %s of another chunk", marker.signal_id)
            return
        self._visible, self._high_lsn = None, 0
        self._window_position = position
        if self._window.done:
            self._end_window()

    @property
    def emitting(self) -> bool:
        """A window closed and READs of it wait for ``emit_pending`` (rows already fetched, or still to come)."""
        return self._window.closed and not self._window.done and len(self._window) > 0

    def emit_pending(self, max_rows: int) -> int:
        """Emit the next slice, at most ``max_rows`` READs, of the closed window (call between stream batches,
        while ``emitting``); the window's last slice moves ``state`` to its last key and lets the next chunk be
        read. Returns the rows the slice covered (emitted or superseded)."""
        window = self._window
        if not window.closed:
            return 0
        head = self._state.queue[0] if self._state.queue else None
        prepared = self._prepared.get(head.table) if head else None
        if head is None or prepared is None:
            window.finish()
            self._after_window()
            return 0
        taken = window.take(max_rows)
        width, decode = len(prepared.chunk.columns), prepared.rows.row
        rows = [decode(values[:width]) for values in taken]
        if window.any_superseded:
            keys = self._window_keys
            rows = [row for row in rows if not window.superseded(row_identity(row, keys))]
        if rows:
            self._emit_rows(prepared, rows)
            self._window_emitted += len(rows)
        if window.done:
            self._end_window()
        return len(taken)

    def _emit_rows(self, prepared: PreparedTable[ChangeT], rows: list[dict[str, Any]]) -> None:
        last_commit, lsn = self._window_position
        if self._emit_reads is not None:
            self._emit_reads(prepared.rows, rows, last_commit, lsn)
        else:
            now_us = time.time_ns() // 1000
            table_id = prepared.info.table_id
            for row in rows:
                event = ChangeEvent(Op.READ, table_id, None, row, lsn, None, last_commit, None, now_us, "incremental")
                self._emit(prepared.rows.read_change(event))
        self.rows_emitted += len(rows)

    def _end_window(self) -> None:
        """The closed window's every row was emitted or superseded: account for them, move the state to the
        window's last key, and let the next chunk be read."""
        window = self._window
        emitted, evicted = self._window_emitted, window.evicted
        window.finish()
        self._window_emitted = 0
        head = self._state.queue[0] if self._state.queue else None
        if head is not None and head.table in self._prepared:
            runtime = self._runtime.setdefault(head.table, TableRuntime())
            runtime.rows_emitted += emitted
            runtime.rows_evicted += evicted
            queue = (QueuedTable(head.table, head.filter, head.surrogate_key, head.correlation_id,
                                 head.rows + emitted, head.started_at), *self._state.queue[1:])
            self._state = self._state.with_changes(queue=queue, last_key=self._chunk_end)
        self._after_window()

    def _after_window(self) -> None:
        self._need_chunk = self._state.running
        if self._pending_stops:
            self._apply_stops()

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
        metadata: dict[str, Any] = {"openWindowTimestamp": notes.java_instant(opened),
                                    "correlationId": self._state.correlation_id,
                                    "dataCollectionId": self._state.queue[0].table}
        self._chunks.write_marker(chunk_id, True, metadata)
        filled = False
        try:
            filled = self._fill_window(chunk_id)
        finally:
            if not filled:
                self._window.expect(chunk_id)
            close = {"openWindowTimestamp": metadata["openWindowTimestamp"],
                     "closeWindowTimestamp": notes.java_instant(time.time()),
                     "correlationId": metadata["correlationId"], "dataCollectionId": metadata["dataCollectionId"]}
            self._chunks.write_marker(chunk_id, False, close)

    def _read_chunk_read_only(self, chunk_id: str) -> None:
        """``read.only=true``: no watermark rows; the window is the chunk's MVCC snapshot plus
        the log position after the read (see ``ChunkReader.read_chunk_visible``)."""
        self._visible, self._high_lsn = None, 0
        if self._fill_window(chunk_id):
            self._window.open(chunk_id)

    def _select(self, prepared: PreparedTable[ChangeT], lower: Key | None) -> list[RawRow]:
        if not self._read_only:
            streaming = getattr(self._chunks, "read_chunk_streaming", None)
            if streaming is None or self.chunk_size <= FIRST_FETCH:
                return self._chunks.read_chunk(prepared.chunk, lower, self._state.max_key, self.chunk_size)
            rows, self._rest = streaming(prepared.chunk, lower, self._state.max_key, self.chunk_size, FIRST_FETCH)
            return rows  # type: ignore[no-any-return]
        rows, visible, high = self._chunks.read_chunk_visible(prepared.chunk, lower, self._state.max_key,
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
                runtime = self._runtime.setdefault(head.table, TableRuntime())
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
        return scan_status(table, self._runtime.get(table))

    def _prepare(self, head: QueuedTable) -> PreparedTable[ChangeT] | None:
        """Schema and max key of the head table (once per table); None if it was skipped."""
        prepared = self._prepared.get(head.table)
        if prepared is None:
            found = self._tables.describe(head)
            if isinstance(found, str):
                self._finish_table(found)
                return None
            prepared = found
            self._prepared[head.table] = prepared
            self._runtime.setdefault(head.table, TableRuntime()).estimated_rows = prepared.info.estimated_rows
        if self._state.max_key is None:
            runtime = self._runtime.setdefault(head.table, TableRuntime())
            runtime.total_rows, runtime.rows_read, runtime.rows_emitted, runtime.rows_evicted = None, 0, 0, 0
            max_key = self._chunks.max_key(prepared.chunk)
            if max_key is None:
                self._finish_table("EMPTY")
                return None
            runtime.total_rows = total_rows(self._chunks, prepared, head, max_key)
            started = head.started_at or time.time()
            queue = (QueuedTable(head.table, head.filter, head.surrogate_key, head.correlation_id, head.rows, started),
                     *self._state.queue[1:])
            self._state = self._state.with_changes(max_key=max_key, queue=queue)
        return prepared

    def _buffer(self, chunk_id: str, head: QueuedTable, prepared: PreparedTable[ChangeT], rows: list[RawRow],
                lower: Key | None) -> None:
        self._window_keys = tuple(name for name, _ in prepared.chunk.key)
        self._window_emitted = 0
        self._window.fill(chunk_id, str(prepared.info.table_id), rows, complete=self._rest is None)
        self._runtime.setdefault(head.table, TableRuntime()).rows_read += len(rows)
        if self._rest is not None:
            self._rest_lower, self._rest_last = lower, rows[-1]
            return
        self._chunk_read(head, prepared, rows[-1], lower)

    @property
    def fetching(self) -> bool:
        """The current chunk's rest waits to be fetched (``fetch_pending``)."""
        return self._rest is not None

    def fetch_pending(self, max_rows: int) -> int:
        """Fetch the next slice, at most ``max_rows`` rows, of the chunk being read (call between stream batches,
        while ``fetching``); returns the rows fetched. A failed fetch abandons the window and finishes the table
        ``SQL_EXCEPTION``, as a failed chunk query does."""
        rest = self._rest
        head = self._state.queue[0] if self._state.queue else None
        prepared = self._prepared.get(head.table) if head else None
        if rest is None:
            return 0
        if head is None or prepared is None:
            rest.close()
            self._rest = None
            self._window.complete_chunk()
            return 0
        try:
            rows = rest.fetch(max_rows)
        except (ChunkQueryError, SourceError) as exc:
            log.warning("incremental snapshot of %s failed: %s", head.table, exc)
            self._rest = None
            self._window.finish()
            self._window_emitted = 0
            self._finish_table("SQL_EXCEPTION")
            self._after_window()
            return 0
        if rows:
            self._window.extend(rows)
            self._rest_last = rows[-1]
            self._runtime.setdefault(head.table, TableRuntime()).rows_read += len(rows)
        if len(rows) < max_rows:
            self._rest = None
            self._window.complete_chunk()
            assert self._rest_last is not None
            self._chunk_read(head, prepared, self._rest_last, self._rest_lower)
            if self._window.done:
                self._end_window()
        return len(rows)

    def _chunk_read(self, head: QueuedTable, prepared: PreparedTable[ChangeT], last: RawRow,
                    lower: Key | None) -> None:
        """The chunk is read up to its last row ``last``: its end key, progress and ``IN_PROGRESS`` notification."""
        self._chunk_end = tuple(last[len(prepared.chunk.columns):])
        runtime = self._runtime.setdefault(head.table, TableRuntime())
        runtime.chunk_from, runtime.chunk_to = key_text(lower), key_text(self._chunk_end)
        self._notify(notes.make(
            "IN_PROGRESS", self._state.correlation_id, self._topic_prefix,
            data_collections=self._collections(), current_collection_in_progress=head.table,
            maximum_key=key_text(self._state.max_key) or '"<null>"',
            last_processed_key=key_text(self._chunk_end) or "",
            **progress_fields(self._runtime.get(head.table), self.chunk_size),
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
            self._notify(notes.make("TABLE_SCAN_COMPLETED", self._state.correlation_id, self._topic_prefix,
                                    data_collections=collections, scanned_collection=head.table,
                                    total_rows_scanned=str(head.rows), status=status, **total))
        log.info("incremental snapshot of %s: %s, %d rows", head.table, status, head.rows)
        if not self._state.queue:
            self._notify(notes.make("COMPLETED", self._state.correlation_id, self._topic_prefix))
            self._state = self._state.with_changes(correlation_id=None, paused=False)

    def _apply_stops(self) -> None:
        while self._pending_stops and not self._window.pending:
            stopped = stopped_by(self._state.queue, self._pending_stops.pop(0))
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
            self._notify(notes.make("ABORTED", correlation, self._topic_prefix,
                                    data_collections=",".join(q.table for q in stopped)))

    # -- status ---------------------------------------------------------------------------
    def status(self) -> SidecarStatus:
        """The snapshot part of the status page, as of now (``status.build_status``)."""
        return build_status(self._state, self._runtime, self.chunk_size)
