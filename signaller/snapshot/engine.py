"""The incremental snapshot engine: Debezium's signal-based DBLog loop for one source.

The capture loop calls every method, from its own thread. It feeds the engine signals (``apply``,
answered with a ``SignalOutcome``), watermark markers as they come back through the log
(``on_marker``; a window's close lets its READs go out) and every streamed row change
(``on_stream_change``: it supersedes buffered rows with the chunk-key values of its before and after
images, from the window's open marker until the row is emitted). When ``wants_chunk`` it calls
``read_chunk``: the window's database work (open watermark, chunk SELECT, close watermark, always
written; see ``reading``) runs on ``reads``, in the runtime a worker thread, so the stream never waits
for a chunk query (nor for a table's start: its maximum key and row count, read there before its first
window, ``tables.read_table_start``); the loop takes the result with ``poll_reads`` (while ``reading``), which also
fetches a large chunk's rest (server-side cursor: ``FIRST_FETCH`` rows before the close watermark,
then slices, while ``fetching``) ahead of the READs. As Debezium's, a window whose chunk comes back
empty finishes its table and reads the next queued table's first chunk before its close watermark
(one window, the first table's markers). A closed window's READs go out in slices between stream
batches (``emit_pending``), a row only if no streamed change of its key was seen since the open
marker, nor one before it whose transaction the chunk's snapshot did not see (``visibility``), unless
those changes lack a TOASTed value: the row is then folded with them (``toast_fold``). A chunk read that finds
the table altered since it was described reads nothing (``ChunkSchemaChanged``): its window goes by empty and
the next one reads the chunk again, the table described anew. Chunk rows stay as the source's text until their
slice is emitted. The durable state is ``state`` (immutable; a new object after each change); it moves to the
window's last key once the window's last READ was emitted; a read in flight at a restart is read again from there.

Contracts: ``apply`` never raises (except a ``SinkError``: Kafka failing), every problem becomes a
rejected ``SignalOutcome`` with a reason; signal patterns are matched with RE2. Every row a chunk
SELECT read is either emitted or superseded by a streamed change; a table whose counts do not add up
finishes ``SQL_EXCEPTION`` (with an error log), never ``SUCCEEDED``. A read the database refused ends its
table ``SQL_EXCEPTION``; a read that was interrupted (connection lost, server restarting) raises
``TransientSourceError`` from ``poll_reads`` instead (``reading.retry_if_interrupted``): the session is retried and
the table goes on from its stored last key. ``emit_reads`` (optional) sends
a slice of READ rows of one table in one call (the runtime's bulk path); else each READ is a
``ChangeEvent`` given to ``emit``. Parts: ``requests``, ``tables``, ``blocking``, ``status``, ``window``,
``toast_fold``, ``reading``, ``finishing``, ``visibility``, ``state``, ``notifications``; the source only through
``signaller.sources.base``'s ``ChunkReader`` and ``TableSchemaProvider`` (generic over its change type).
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any, Generic

from signaller.config import CaptureSection, SnapshotSection
from signaller.errors import SignalError, SourceError
from signaller.model import ChangeEvent, Op
from signaller.signals.actions import apply_action
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
from signaller.snapshot.finishing import account_window, finish_head, stop_tables
from signaller.snapshot.reading import (
    ChunkRequest,
    ChunkResult,
    FetchPace,
    InlineReads,
    Pending,
    Reads,
    RestSlice,
    fetch_rest,
    read_window,
    retry_if_interrupted,
)
from signaller.snapshot.requests import FilterCompiler, SnapshotRequests, signal_pattern, stopped_by
from signaller.snapshot.state import Key, QueuedTable, SnapshotState
from signaller.snapshot.status import TableRuntime, build_status, in_progress, key_text, scan_status
from signaller.snapshot.tables import PreparedTable, TableCatalog, TableStart, read_table_start, start_table
from signaller.snapshot.visibility import RecentChanges, unseen
from signaller.snapshot.window import Window
from signaller.sources.base import (
    ChangeT,
    ChunkQueryError,
    ChunkReader,
    ChunkRest,
    ChunkSchemaChanged,
    RawRow,
    ReadRendering,
    TableRows,
    TableSchemaProvider,
    TransactionVisibility,
)

log = logging.getLogger("signaller.snapshot")
FIRST_FETCH = 1024
"""Rows of a chunk read before its close watermark when the chunk reader streams chunks; the rest
follows in slices at the engine's ``fetch_pace``."""
DEFAULT_FETCH_PACE = FetchPace(rows=1024, ahead=2048)

ReadEmitter = Callable[[TableRows[Any], list[dict[str, Any]], int | None, int | None], object]
"""Sends READ rows of one table at window position ``(last_commit_lsn, lsn)``, in order (the runtime's
``EventDispatcher.reads``, given the table's ``TableRows``)."""
RenderedReadEmitter = Callable[[TableRows[Any], ReadRendering, list[RawRow], int, int | None, int | None], object]
"""Sends READs of one table's chunk rows as its chunk query rendered them (``ReadRendering``, its values from the
given offset), at window position ``(last_commit_lsn, lsn)``, in order; rows the query left unrendered are
converted with ``TableRows.row`` (the runtime's ``EventDispatcher.rendered_reads``)."""


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
        reads: Reads | None = None,
        emit_rendered: RenderedReadEmitter | None = None,
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
        self._emit_rendered = emit_rendered
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
        self._recent = RecentChanges()
        self._high_lsn = 0
        self._reads: Reads = reads or InlineReads()
        self._job: Pending[ChunkResult | RestSlice | TableStart] | None = None
        self._window_head: tuple[str, str | None] | None = None  # the next window's metadata, kept while it starts
        self._job_lower: Key | None = None
        self._window_request: ChunkRequest | None = None
        self.fetch_pace = DEFAULT_FETCH_PACE
        """How a streamed chunk's rest is fetched; the runtime may change it between calls (it applies from
        the next slice)."""

    def close(self) -> None:
        """Wait for the read in flight (its result is dropped: a new session reads the chunk again from the
        stored last key) and stop the reads' worker; never raises."""
        self._reads.close()

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
        return self._need_chunk and not self._window.pending and self._job is None

    # -- signals --------------------------------------------------------------------------
    def apply(self, signal: Signal, action: object) -> SignalOutcome:
        """Apply a parsed user signal; rejections carry the reason and change nothing.

        Raises only infrastructure failures (``apply_action``): ``SinkError`` (Kafka failing while a
        blocking snapshot emits) and a transient ``SourceError`` (the database unreachable while the signal
        is checked, or the read in flight that the signal waits for interrupted); the session is then
        retried and reads the signal again. A problem with the signal is a rejection with its reason; a
        database refusal a rejection "could not check the signal against the database: ..."; anything
        unexpected a rejection naming the signal, with the traceback in the log."""
        return apply_action(self, signal, action)

    def execute_snapshot(self, action: ExecuteSnapshot) -> None:
        """The ``execute-snapshot`` action (``ActionHandler``)."""
        queued = self._requests.queue(action)
        if action.snapshot_type == "blocking":
            self._settle()  # the chunk reader is the blocking snapshot's alone while it runs
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
            self._settle(whole_chunk=True)
            if self.emitting:
                self.emit_pending(len(self._window))
        if not self._window.pending:
            self._apply_stops()

    def pause_snapshot(self, action: PauseSnapshot) -> None:
        """The ``pause-snapshot`` action (``ActionHandler``)."""
        self._set_paused(action.signal_id, True)

    def resume_snapshot(self, action: ResumeSnapshot) -> None:
        """The ``resume-snapshot`` action (``ActionHandler``)."""
        self._set_paused(action.signal_id, False)

    def _set_paused(self, signal_id: str, paused: bool) -> None:
        if not self._state.running:
            raise SignalError("no incremental snapshot is running", signal_id)
        if self._state.paused != paused:
            self._state = self._state.with_changes(paused=paused)
            self._notify(notes.make("PAUSED" if paused else "RESUMED", self._state.correlation_id, self._topic_prefix,
                                    data_collections=self._collections()))
            self._need_chunk = self._need_chunk or not paused

    def log_message(self, action: LogMessage) -> None:
        """The ``log`` action (``ActionHandler``): ``{}`` in the message becomes the current offsets."""
        log.info("signal %s: %s", action.signal_id, action.message.replace("{}", str(self._state.to_offset())))

    def _collections(self) -> str:
        return ",".join(q.table for q in self._state.queue)

    # -- the stream -----------------------------------------------------------------------
    def on_stream_change(self, change: ChangeT) -> None:
        """Deduplicate: a streamed change evicts the buffered rows with the chunk-key values of its
        before and of its after image, from the open marker on (read-only mode: only a change the chunk's
        snapshot did not see) and, before it, a change the chunk's read did not see (``visibility``: its
        commit can precede the open marker in the log and still be invisible to the read); every change
        is also kept in ``RecentChanges`` and matched when the next read returns. Each image supersedes at
        most one row: any further row it removes is counted as lost."""
        event = change.event
        self._recent.add(event)
        window = self._window
        if window.watching:
            table = str(event.table)
            if table != window.table:
                window.hold(table, event)  # the window may move on to that table (an empty chunk)
            elif not self._read_only or unseen(self._visible, event):  # read-only: matched once the read returns
                self._supersede(event)
        elif window.pending and not window.is_open and unseen(self._visible, event):
            self._supersede(event, unseen=True)

    def _supersede(self, event: ChangeEvent, *, unseen: bool = False) -> None:
        self._window.on_change(str(event.table), event, self._window_keys, unseen=unseen)

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
        self._high_lsn = 0
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
        rendering = prepared.rendering
        if rendering is not None and self._emit_rendered is not None and not window.any_superseded:
            if taken:
                offset = len(prepared.chunk.columns) + len(prepared.chunk.key)
                self._emit_rendered(prepared.rows, rendering, taken, offset, *self._window_position)
                self.rows_emitted += len(taken)
                self._window_emitted += len(taken)
            if window.done:
                self._end_window()
            return len(taken)
        width, decode = len(prepared.chunk.columns), prepared.rows.row
        rows = [decode(values[:width]) for values in taken]
        if window.any_superseded:  # dropped, or folded with the window's changes (``toast_fold``)
            rows = window.resolve(rows, self._window_keys)
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
            self._state = account_window(self._state, self._runtime.setdefault(head.table, TableRuntime()), emitted,
                                         evicted, self._chunk_end)
        self._after_window()

    def _after_window(self) -> None:
        self._need_chunk = self._state.running
        self._apply_stops()

    # -- reading a chunk ------------------------------------------------------------------
    def read_chunk(self) -> None:
        """Start the next window: its read (``reading.read_window``: open watermark, chunk query, close watermark)
        goes to ``reads``; ``poll_reads`` takes its result. The window waits for its rows from the open marker
        on (read-only mode: it is open at once, its stream changes matched once the read's visibility is known).
        A head table not started yet has its maximum key read by ``reads`` first (``read_table_start``): the
        window starts once ``poll_reads`` took that (the loop's thread never waits for those queries)."""
        self._need_chunk = False
        self._apply_stops()
        if self._state.paused or not (self._state.running or self._window_head):
            return
        first, correlation = self._window_head or (self._state.queue[0].table, self._state.correlation_id)
        if self._state.max_key is None and self._start_head():
            self._window_head = (first, correlation)  # the window's metadata names the head as it was, as Debezium's
            self.poll_reads()
            if self.wants_chunk:  # the start was read at once (inline reads)
                self.read_chunk()
            return
        self._window_head = None
        prepared = self._next_table()  # a skipped table's window still opens and closes (not in read-only mode)
        if prepared is None and self._read_only:
            return
        streamed = not self._read_only and self.chunk_size > FIRST_FETCH
        chunk = None if prepared is None else prepared.chunk
        request = ChunkRequest(str(uuid.uuid4()), chunk, self._chunk_end, self._state.max_key, self.chunk_size,
                               self._read_only, FIRST_FETCH if streamed else None, correlation, first)
        later = frozenset() if self._read_only else frozenset(q.table for q in self._state.queue[1:])
        table = "" if prepared is None else str(prepared.info.table_id)
        self._window.fill(request.chunk_id, table, (), complete=False, later=later)
        if self._read_only:
            self._high_lsn = 0
            self._window.open(request.chunk_id)
        self._start_read(prepared, request)
        self.poll_reads()

    def _start_read(self, prepared: PreparedTable[ChangeT] | None, request: ChunkRequest) -> None:
        self._window_keys, self._window_emitted = () if prepared is None else tuple(n for n, _ in prepared.chunk.key), 0
        self._window.changes.clear(None if prepared is None else prepared.placeholders)
        self._job_lower, self._window_request, self._visible = request.lower, request, None
        self._job = self._reads.submit(functools.partial(read_window, self._chunks, request))

    def _continue_window(self, opened: str) -> None:
        """The head's chunk came back empty (it is finished) and its window is still open: as Debezium, the next
        queued table (prepared here, no read in flight) has its first chunk read in the same window, whose markers
        keep the first table's metadata; with no table left, the window closes."""
        first, prepared = self._window_request, self._next_table()
        assert first is not None
        later = frozenset(q.table for q in self._state.queue[1:])
        request = dataclasses.replace(first, table=None if prepared is None else prepared.chunk, lower=self._chunk_end,
                                      upper=self._state.max_key, opened=opened)
        held = self._window.switch_table("" if prepared is None else str(prepared.info.table_id), later)
        self._start_read(prepared, request)
        for event in held:  # its changes streamed since the open marker, as if the window had been its own
            self._supersede(event)

    def _start_head(self) -> bool:
        """Hand the head table's start to ``reads`` (undescribable tables are finished on the way); False when no
        table is left."""
        while self._state.queue:
            head = self._state.queue[0]
            try:
                prepared = self._describe(head)
            except (ChunkQueryError, SourceError) as exc:
                retry_if_interrupted(exc, f"describing {head.table}")
                log.warning("incremental snapshot of %s failed: %s", head.table, exc)
                self._finish_table("SQL_EXCEPTION")
                continue
            if prepared is not None:
                self._job = self._reads.submit(functools.partial(read_table_start, self._chunks, prepared, head))
                return True
        return False

    def _started(self, start: TableStart) -> None:
        """Apply what ``read_table_start`` found, unless the head changed meanwhile (a stop); the window is due."""
        self._need_chunk = True
        if not self._state.queue or self._state.queue[0].table != start.table or self._state.max_key is not None:
            return
        if start.error is not None:
            log.warning("incremental snapshot of %s failed: %s", start.table, start.error)
            self._finish_table("SQL_EXCEPTION")
            return
        self._apply_start(start)

    def _apply_start(self, start: TableStart) -> bool:
        """The head table starts with what ``start`` found (``start_table``), or finishes ``EMPTY``; whether it
        started."""
        started = start_table(start, self._state, self._runtime.setdefault(start.table, TableRuntime()))
        if started is None:
            self._finish_table("EMPTY")
            return False
        self._state = started
        return True

    def _next_table(self) -> PreparedTable[ChangeT] | None:
        """The head table, prepared; tables that cannot be read are finished on the way."""
        while self._state.queue:
            try:
                prepared = self._prepare(self._state.queue[0])
            except (ChunkQueryError, SourceError) as exc:
                retry_if_interrupted(exc, f"preparing {self._state.queue[0].table}")
                log.warning("incremental snapshot of %s failed: %s", self._state.queue[0].table, exc)
                self._finish_table("SQL_EXCEPTION")
                continue
            if prepared is not None:
                return prepared
        return None

    @property
    def awaiting_position(self) -> bool:
        """Read-only mode: the window's rows are read and it waits for the log to pass its high watermark."""
        return self._read_only and self._window.pending and not self._window.closed and self._high_lsn > 0

    @property
    def reading(self) -> bool:
        """A read (a chunk or a slice of one) is in flight: call ``poll_reads`` soon."""
        return self._job is not None

    def poll_reads(self) -> None:
        """Take the result of a finished read, if any (and of the reads it started, once done), and start fetching
        the next slice of a streamed chunk while fewer than ``fetch_pace.ahead`` of its rows wait. Call from the loop's
        thread, between stream batches. Raises what a watermark write raised (``SourceError``)."""
        while self._collect(wait=False):
            pass
        pace = self.fetch_pace
        if self._job is None and self._rest is not None and len(self._window) < pace.ahead:
            self._job = self._reads.submit(functools.partial(fetch_rest, self._rest, pace.rows))
            self._collect(wait=False)

    def _settle(self, *, whole_chunk: bool = False) -> None:
        """Wait for the read in flight and take its result; with ``whole_chunk``, also the rest of the chunk."""
        while self._job is not None or (whole_chunk and self._rest is not None):
            if self._job is None and self._rest is not None:
                self._job = self._reads.submit(functools.partial(fetch_rest, self._rest, self.fetch_pace.rows))
            self._collect(wait=True)

    def _collect(self, *, wait: bool) -> bool:
        job = self._job
        if job is None or not (wait or job.done()):
            return False
        self._job, result = None, job.result()
        if isinstance(result, TableStart):
            self._started(result)
            return True
        head = self._state.queue[0] if self._state.queue else None
        prepared = self._prepared.get(head.table) if head else None
        if head is None or prepared is None:  # a window with no table left to read was closed: it is complete
            for rest in (self._rest, getattr(result, "rest", None)):
                if rest is not None:
                    rest.close()
            self._rest = None
            self._window.complete_chunk()
            if self._window.done:
                self._end_window()
            return True
        runtime = self._runtime.setdefault(head.table, TableRuntime())
        if isinstance(result, ChunkResult):
            self._chunk_result(head, prepared, self._job_lower, runtime, result)
        else:
            self._rest_result(head, prepared, runtime, result)
        if self._window.done:
            self._end_window()
        return True

    def _chunk_result(self, head: QueuedTable, prepared: PreparedTable[ChangeT], lower: Key | None,
                      runtime: TableRuntime, result: ChunkResult) -> None:
        runtime.chunks += 1
        runtime.chunk_seconds = result.seconds
        if result.open_since is None:
            self._window.settle_table()
        if result.error is not None or not result.rows:
            changed = isinstance(result.error, ChunkSchemaChanged)  # nothing read: read again, described anew
            if result.error is not None:
                log.log(logging.INFO if changed else logging.WARNING, "snapshot of %s: %s", head.table, result.error)
            if changed:
                self._prepared.pop(head.table)
            else:
                self._finish_table("SQL_EXCEPTION" if result.error is not None else scan_status(head.table, runtime))
            if self._read_only:  # no markers to wait for: the next window may start
                self._window.finish()
                self._after_window()
            elif result.open_since is not None:  # the next table's first chunk, in the same window
                self._continue_window(result.open_since)
            else:  # the markers still open and close the (empty) window
                self._window.complete_chunk()
            return
        self._visible, self._high_lsn = result.visible, result.high
        if result.visible is not None:  # whenever streamed: before the window opened too (``visibility``)
            for event in self._recent.unseen_by(result.visible):
                self._supersede(event, unseen=True)
        self._window.extend(result.rows)
        runtime.rows_read += len(result.rows)
        self._rest = result.rest
        if self._rest is not None:
            self._rest_lower, self._rest_last = lower, result.rows[-1]
            return
        self._window.complete_chunk()
        self._chunk_read(head, prepared, result.rows[-1], lower)

    def _describe(self, head: QueuedTable) -> PreparedTable[ChangeT] | None:
        """Schema of the head table (once per table); None if it was skipped."""
        prepared = self._prepared.get(head.table)
        if prepared is None:
            found = self._tables.describe(head, rendered=self._emit_rendered is not None)
            if isinstance(found, str):
                self._finish_table(found)
                return None
            prepared = found
            self._prepared[head.table] = prepared
            self._runtime.setdefault(head.table, TableRuntime()).estimated_rows = prepared.info.estimated_rows
        return prepared

    def _prepare(self, head: QueuedTable) -> PreparedTable[ChangeT] | None:
        """Schema and max key of the head table (the max key read here, when not yet known: a table after the first
        in one window); None if it was skipped."""
        prepared = self._describe(head)
        if prepared is not None and self._state.max_key is None:
            start = read_table_start(self._chunks, prepared, head)
            if start.error is not None:
                raise start.error
            if not self._apply_start(start):
                return None
        return prepared

    @property
    def fetching(self) -> bool:
        """The current chunk's rest waits to be fetched (``poll_reads`` fetches it, a slice at a time)."""
        return self._rest is not None

    def _rest_result(self, head: QueuedTable, prepared: PreparedTable[ChangeT], runtime: TableRuntime,
                     result: RestSlice) -> None:
        """A slice of the chunk's rest (the last completes it); a failed fetch ends the table ``SQL_EXCEPTION``."""
        if result.error is not None:
            log.warning("incremental snapshot of %s failed: %s", head.table, result.error)
            self._rest, self._window_emitted = None, 0
            self._window.finish()
            self._finish_table("SQL_EXCEPTION")
            self._after_window()
            return
        rows = result.rows
        if rows:
            self._window.extend(rows)
            self._rest_last = rows[-1]
            runtime.rows_read += len(rows)
        if len(rows) < result.asked:
            self._rest = None
            self._window.complete_chunk()
            assert self._rest_last is not None
            self._chunk_read(head, prepared, self._rest_last, self._rest_lower)

    def _chunk_read(self, head: QueuedTable, prepared: PreparedTable[ChangeT], last: RawRow,
                    lower: Key | None) -> None:
        """The chunk is read up to its last row ``last``: its end key, progress and ``IN_PROGRESS`` notification."""
        width = len(prepared.chunk.columns)
        self._chunk_end = tuple(last[width:width + len(prepared.chunk.key)])
        runtime = self._runtime.setdefault(head.table, TableRuntime())
        runtime.chunk_from, runtime.chunk_to = key_text(lower), key_text(self._chunk_end)
        self._notify(in_progress(self._state, self._chunk_end, runtime, self.chunk_size, self._topic_prefix))

    def _finish_table(self, status: str, *, announce: bool = True) -> None:
        table = self._state.queue[0].table
        self._state, sent = finish_head(self._state, status, self._runtime.get(table), self._topic_prefix, announce)
        self._chunk_end = None
        self._prepared.pop(table, None)
        for note in sent:
            self._notify(note)

    def _apply_stops(self) -> None:
        while self._pending_stops and not self._window.pending:
            stopped = stopped_by(self._state.queue, self._pending_stops.pop(0))
            if not stopped:
                continue
            correlation = self._state.correlation_id
            if self._state.queue and self._state.queue[0] in stopped:
                self._finish_table("ABORTED", announce=False)
                self._window_head = None
            self._state, sent = stop_tables(self._state, stopped, correlation, self._topic_prefix)
            if not self._state.queue:
                self._chunk_end = None
            for note in sent:
                self._notify(note)

    # -- status ---------------------------------------------------------------------------
    def status(self) -> SidecarStatus:
        """The snapshot part of the status page, as of now (``status.build_status``)."""
        return build_status(self._state, self._runtime, self.chunk_size)
