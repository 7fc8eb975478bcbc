"""Wires the incremental snapshot engine into the capture loop: signal channels, the signal
table and watermark messages in the stream, the control queue of the HTTP API, and the Kafka
groups that make snapshot progress durable only once Kafka acknowledged it.

The capture loop calls, in this order per batch: ``on_change`` for every streamed change (before
sending it), ``on_message`` for the sidecar's own logical-decoding messages, ``state`` when a
transaction ends (attached to its Kafka group), and ``tick`` after the batch. Everything runs
on the capture loop's thread.

**One signal can never stop the sidecar.** Every signal, on every channel, is parsed and applied
through ``_guarded``: a ``SignalError`` is the ordinary rejection; any other exception (a bug in
parsing or in the engine, e.g. an input the validation missed) is caught there too and turned into
a rejection as well: a ``REJECTED`` notification (HTTP: a 4xx answer) whose reason names the signal,
its channel and the exception, and a warning log line with the traceback. Only infrastructure
failures propagate (``TransientError``, ``SinkError``, a Kafka client exception: PostgreSQL or Kafka
unreachable or refusing), because they say nothing about the signal and the session must be
retried.

**Channel positions, at least once, never a poison loop.** For the Kafka and file channels the
position of a record is set in the snapshot state *before* the record is applied, inside the same
Kafka group as its effect (READs, state changes) and its answer (the notification); the group's
state is taken when it closes, so the stored offsets get the position and the effect together, once
Kafka acknowledged the group, or neither:

* applied or rejected (an unexpected exception included): the position is stored with the answer, so
  the record is never read again, even if it made applying fail;
* the process dies (kill -9) before the group is stored: neither the position nor the effect is
  stored; the restarted sidecar reads the record again and applies it again (at least once: an
  accepted signal is never lost, its notifications may repeat);
* an infrastructure failure propagates: the position is set back to the previous one first, so the
  signal is read and applied again by the retried session rather than lost.

The one case this cannot cover is a record whose *applying* kills the process outright (out of
memory, a signal from outside) every time: it is read again after each restart. Storing the position
before applying (at most once) would avoid that only by losing accepted signals on every crash, so
at least once it is. The signal-table channel's position is the log position of its row: the
transaction's group stores it, with the answer, in the same way. The HTTP channel has no position:
an accepted signal is answered only after its effect is in the stored offsets.

**Status.** ``status_changed`` (from the capture loop) publishes the status the API reports; it is
called after the control queue and the channels were served and before any HTTP request gets its
answer, so ``GET /snapshots`` right after a ``202`` or ``200`` shows what was accepted.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import orjson
from confluent_kafka import KafkaException

from signaller.config import SignallerConfig
from signaller.errors import SignalError, SinkError, is_transient
from signaller.model import ChangeEvent, Op, TableId
from signaller.runtime.checkpoint import Checkpoint
from signaller.runtime.dispatch import DispatchedChange, EventDispatcher
from signaller.runtime.snapshot_pace import PaceKeeper
from signaller.signals.channels import HttpSignalChannel, SignalChannelReader, SignalTableChannel
from signaller.signals.model import ExecuteSnapshot, Signal, SignalOutcome, WindowMarker
from signaller.signals.values import unexpected_reason
from signaller.snapshot import notifications as notes
from signaller.snapshot.control import SidecarControl, SidecarStatus
from signaller.snapshot.engine import IncrementalSnapshotter
from signaller.snapshot.reading import ThreadReads
from signaller.snapshot.state import SnapshotState
from signaller.sources.base import ChunkReader, RawRow, ReadRendering, SourceMessage, TableRows, TableSchemaProvider
from signaller.state import Offsets

log = logging.getLogger("signaller.snapshots")

SLICE_ROWS = 128
"""READs emitted per engine call while a window's slice lasts (about 1 ms of the loop's work)."""
SLICE_SECONDS = 0.002
"""How long one tick may emit READs before the loop reads the stream again: with one engine call past it,
about the most a window's READs delay a live change (besides the chunk query itself). 4 ms measured a live
commit→sidecar p99 of 8-10 ms during the bench's snapshots, 2 ms (with 128-row calls) 3.5-6.6 ms, the
snapshot as fast."""
READ_WAIT_S = 0.002
"""How long the loop waits for the log while a chunk read is in flight (or a read-only window waits for
the log to pass its high watermark) before looking at the read again."""


class SnapshotCoordinator:
    """Owns the engine, the signal channels and the control queue for one capture session."""

    def __init__(self, config: SignallerConfig, chunks: ChunkReader, schemas: TableSchemaProvider[DispatchedChange],
                 dispatcher: EventDispatcher, checkpoint: Checkpoint, control: SidecarControl | None,
                 status_changed: Callable[[], None] | None = None, *,
                 compile_filter: Callable[[str, dict[str, str]], str], debezium_release: str | None = None) -> None:
        """``chunks`` and ``schemas`` are the source's chunk reader and schema provider (the latter on the
        log reader's schema cache), ``compile_filter`` the source's filter checker
        (:meth:`~signaller.sources.base.Source.compile_filter`); the coordinator closes ``chunks``. READs and
        notifications go out through ``dispatcher``, in ``checkpoint``'s groups; ``status_changed`` publishes the
        current status to ``control`` (from the capture loop, which also calls :meth:`committed` after each durable
        store of the offsets); notifications take the shapes of Debezium ``debezium_release``
        (:func:`~signaller.snapshot.notifications.for_release`; None: the newest)."""
        self._config = config
        self._release = debezium_release
        self._dispatcher = dispatcher
        self._checkpoint = checkpoint
        self.control = control
        self._unstored: collections.deque[tuple[int, list[tuple[Future[SignalOutcome], SignalOutcome]]]] = (
            collections.deque())  # HTTP answers waiting for their effects to be stored (a checkpoint ticket each)
        self._topics_prepared: set[str] = set()  # tables whose topics were made ready ahead of their READs
        self._topic_jobs: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()
        threading.Thread(target=self._prepare_topics_forever, name="signaller-topics", daemon=True).start()
        self._status_changed = status_changed
        self._read_problems: dict[str, str] = {}
        self._chunks = chunks
        self.engine = IncrementalSnapshotter(config.snapshot, config.capture, config.topics.prefix, chunks, schemas,
                                             dispatcher.read, self._notify, compile_filter,
                                             emit_reads=self._emit_reads, reads=ThreadReads(),
                                             emit_rendered=self._emit_rendered if dispatcher.renders_reads else None)
        self._signal_table = config.snapshot.signal_data_collection
        self._polled: list[SignalChannelReader] = []
        self._http = HttpSignalChannel(control) if control is not None else None
        self._next_channel_poll = 0.0
        self._last_end_lsn = 0
        self._in_tx = False
        self._stream_changes = 0  # captured changes streamed so far: the pace follows whether it grows
        self._pace = PaceKeeper()
        self._log_notifications = "log" in {c.value for c in config.notifications.enabled_channels}
        self._table_channel = SignalTableChannel(
            self._signal_table, enabled="source" in {c.value for c in config.snapshot.signal_enabled_channels},
            insert_delete=config.snapshot.watermarking_strategy.value == "insert_delete")

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, offsets: Offsets | None, tables: list[TableId], schema_snapshot: bool = False) -> None:
        """Restore the snapshot state, open the channels, start an initial snapshot if asked. ``schema_snapshot``:
        the source took a start-up schema snapshot (binlog sources' first start), which Debezium's binlog
        connectors announce as Initial Snapshot STARTED and COMPLETED when no data is snapshotted."""
        self._last_end_lsn = offsets.lsn if offsets else 0
        self.engine.restore(SnapshotState.from_offset(offsets.snapshot if offsets else None))
        self._open_channels()
        mode = self._config.snapshot.mode.value
        if offsets is None and mode in ("initial", "when_needed"):
            data_tables = [t for t in tables if t != self._signal_table]
            if data_tables:
                patterns = tuple(_literal_pattern(t) for t in data_tables)
                action = ExecuteSnapshot("initial-snapshot", patterns)
                data = {"data-collections": list(patterns)}
                signal = Signal("initial-snapshot", "execute-snapshot", data, "internal")
                with self._adhoc_group():
                    outcome = self.engine.apply(signal, action)
                log.info("snapshot.mode=%s: initial incremental snapshot of %d table(s): %s", mode, len(data_tables),
                         "queued" if outcome.accepted else outcome.reason)
                return
        # As Debezium: every start that runs no initial snapshot says so (random id, Initial Snapshot); a schema
        # snapshot alone (snapshot.mode=no_data on a binlog source's first start) is a snapshot that started and
        # completed.
        with self._adhoc_group():
            for kind in ("STARTED", "COMPLETED") if offsets is None and schema_snapshot else ("SKIPPED",):
                self._notify(notes.make(kind, None, self._config.topics.prefix, notes.INITIAL))

    def close(self) -> None:
        """Close every signal channel and the snapshot's database connection; never raises (a channel failing to close
        is ignored)."""
        for channel in self._channels():
            with contextlib.suppress(Exception):
                channel.close()
        self._topic_jobs.put(None)
        self.engine.close()
        self._chunks.close()

    def _channels(self) -> list[SignalChannelReader]:
        return [*self._polled, self._table_channel, *([self._http] if self._http is not None else [])]

    def _open_channels(self) -> None:
        enabled = {c.value for c in self._config.snapshot.signal_enabled_channels}
        positions = self.engine.state.channel_positions
        if "kafka" in enabled:
            from signaller.signals.channels.kafka import KafkaSignalChannel

            self._polled.append(KafkaSignalChannel(self._config, positions.get("kafka")))
        if "file" in enabled:
            from signaller.signals.channels.file import FileSignalChannel

            stored = positions.get("file")
            self._polled.append(FileSignalChannel(self._config.snapshot.signal_file, tuple(stored) if stored else None))

    # -- hooks from the capture loop ------------------------------------------------------
    def on_begin(self) -> None:
        """A transaction began in the log: until ``on_commit``, snapshot records (READs, notifications) go into its
        Kafka group rather than a group of their own."""
        self._in_tx = True

    def on_commit(self, end_lsn: int) -> SnapshotState:
        """A transaction ended: the state to attach to its Kafka group."""
        self._in_tx = False
        self._last_end_lsn = end_lsn
        return self.engine.state

    def on_change(self, change: DispatchedChange) -> None:
        """Before a streamed change is sent: signal-table rows are signals or watermarks; every
        change deduplicates the open window."""
        if self._signal_table is not None and change.table == self._signal_table:
            self._on_signal_row(change)
            return
        self._stream_changes += 1
        self.engine.on_stream_change(change)

    def on_message(self, message: SourceMessage, last_commit_lsn: int | None) -> None:
        """A logical-decoding message of the sidecar (a watermark, ``read.only`` off): any content that
        is not ``{"id": <text>, "type": ..., "data": {...}}`` is logged and ignored, never raised."""
        try:
            body = orjson.loads(message.content)
            data = body.get("data") or {}
            if not isinstance(body["id"], str) or not isinstance(data, dict):
                raise TypeError(f"id {_shown(body['id'])} or data {_shown(data)} of the wrong type")
            marker = WindowMarker(body["id"], body["type"] == "snapshot-window-open", data)
        except Exception as exc:  # the content is not ours to trust: nothing in it may stop the stream
            log.warning("ignoring an unreadable signaller message at LSN %X: %s: %s", message.lsn,
                        type(exc).__name__, exc)
            return
        self.engine.on_marker(marker, (last_commit_lsn, message.lsn))

    def _on_signal_row(self, change: DispatchedChange) -> None:
        """A change of the signal table: a watermark goes to the engine; a signal is applied at once, at
        its place in the stream (inside its transaction's Kafka group)."""
        event = change.event
        marker = self._table_channel.offer(event)
        if marker is not None:
            self.engine.on_marker(marker, (event.last_commit_lsn, event.lsn))
            return
        self._read_channel(self._table_channel)

    # -- between batches ------------------------------------------------------------------
    def tick(self, stream_lsn: int = 0, last_commit_lsn: int | None = None) -> None:
        """Serve the control queue and the channels, close a read-only window the log has
        passed, then start the next chunk's read if one is due. The chunk read runs on the engine's worker
        thread; its result is taken here (``poll_reads``), so the stream never waits for a chunk query."""
        engine = self.engine
        if engine.reading:
            with self._adhoc_group():
                engine.poll_reads()
        if self._config.snapshot.read_only and stream_lsn:
            with self._adhoc_group():
                engine.on_position(max(stream_lsn, self._last_end_lsn), (last_commit_lsn, 0))
        if self._http is not None:
            self._serve_http(self._http)
        now = time.monotonic()
        if self._polled and now >= self._next_channel_poll:
            self._next_channel_poll = now + self._config.snapshot.signal_poll_interval_ms / 1000
            handled = sum(len(self._read_channel(channel)) for channel in self._polled)
            if handled:
                self._publish_status()
        if self.engine.fetching or self.engine.emitting:
            self._emit_slices()
        if self.engine.wants_chunk:
            with self._adhoc_group():
                self.engine.read_chunk()

    def poll_timeout(self, idle_s: float) -> float:
        """How long the loop may wait for the log before the next ``tick``: not at all while a window's READs wait
        to be emitted, ``READ_WAIT_S`` while a chunk read is in flight, a read-only window waits for the log to
        pass its high watermark or an answer waits for Kafka's acknowledgements (``answers_waiting``), else
        ``idle_s``."""
        engine = self.engine
        if engine.emitting:
            return 0.0
        if engine.reading or engine.fetching or engine.awaiting_position or self.answers_waiting:
            return READ_WAIT_S
        return idle_s

    @property
    def awaiting_position(self) -> bool:
        """A read-only window waits for the log to reach its high watermark (the loop may ask the source for its
        position)."""
        return self.engine.awaiting_position

    def _emit_slices(self) -> None:
        """For at most ``SLICE_SECONDS`` (the stream's next batch comes first then): take the chunk's next slice
        when the worker fetched it (``poll_reads`` starts the one after), and emit the closed window's READs, none
        while the producer holds the pace's ``queued_records`` (waiting a moment for deliveries instead). The pace
        (``snapshot_pace``) is chosen anew each time: gentle while the stream carries changes."""
        dispatcher, engine = self._dispatcher, self.engine
        pace = self._pace.pace(self._stream_changes)
        engine.fetch_pace, queue_limit = pace.fetch, pace.queued_records
        deadline = time.monotonic() + SLICE_SECONDS
        with self._adhoc_group():
            while True:
                if engine.reading or engine.fetching:
                    engine.poll_reads()
                if engine.emitting and dispatcher.queued < queue_limit:
                    engine.emit_pending(SLICE_ROWS)
                elif engine.emitting:
                    dispatcher.serve_deliveries(0.002)
                    return
                else:
                    return
                if time.monotonic() >= deadline:
                    return

    def _emit_reads(self, rows: TableRows[DispatchedChange], batch: list[dict[str, Any]],
                    last_commit_lsn: int | None, lsn: int | None) -> None:
        """The engine's bulk READ path: ``EventDispatcher.reads`` with the table's plan (taken from the
        first row's change: the source's rows of one table version share it)."""
        if not batch:
            return
        first = rows.read_change(ChangeEvent(Op.READ, rows.table_id, None, batch[0], lsn, None, last_commit_lsn,
                                             None, time.time_ns() // 1000, "incremental"))
        self._dispatcher.reads(first.plan, batch, last_commit_lsn, lsn, rows.read_change)

    def _emit_rendered(self, rows: TableRows[DispatchedChange], rendering: ReadRendering, batch: list[RawRow],
                       offset: int, last_commit_lsn: int | None, lsn: int | None) -> None:
        """The engine's READ path for rows its chunk query rendered: ``EventDispatcher.rendered_reads`` with the
        table's plan (taken from the first row's change, as :meth:`_emit_reads` does)."""
        if not batch:
            return
        width = len(rows.columns)

        def decode(values: RawRow) -> dict[str, Any]:
            return rows.row(values[:width])

        first = rows.read_change(ChangeEvent(Op.READ, rows.table_id, None, decode(batch[0]), lsn, None,
                                             last_commit_lsn, None, time.time_ns() // 1000, "incremental"))
        self._dispatcher.rendered_reads(first.plan, rendering, batch, offset, decode, last_commit_lsn, lsn,
                                        rows.read_change)

    def _serve_http(self, http: HttpSignalChannel) -> None:
        """The HTTP channel's signals, then the chunk-size requests of the control queue; answered once
        what was accepted is in the stored offsets (so a crash right after a 202 cannot lose it; the
        other channels re-deliver). The loop does not wait for that: the answers wait
        (:meth:`commit_due`, :meth:`committed`) while it goes on streaming."""
        try:
            outcomes = self._read_channel(http)
        except BaseException as exc:  # an infrastructure failure: the session is retried without them
            http.fail_waiting(exc)
            raise
        resized = []
        for size, future in http.take_chunk_sizes():
            with self._adhoc_group():
                resized.append((future, self.engine.set_chunk_size(size)))
        if outcomes or resized:
            self._publish_status()  # before the answers: a GET right after one sees its effect
        answers = [*http.answers(outcomes), *resized]
        if any(outcome.accepted for _, outcome in answers):
            self._unstored.append((self._checkpoint.ticket(), answers))
        else:
            _resolve(answers)

    @property
    def answers_waiting(self) -> bool:
        """Answers to HTTP requests wait for their effects to be stored (the loop should not wait long for the log
        meanwhile: ``poll_timeout`` says so)."""
        return bool(self._unstored)

    def commit_due(self) -> bool:
        """Whether an answer waiting for its effects to be stored can have them stored now: Kafka acknowledged every
        record sent up to it. The loop then commits at once instead of at its next offset flush."""
        return bool(self._unstored) and self._checkpoint.acknowledged(self._unstored[0][0])

    def committed(self, through: int) -> None:
        """The offset store made durable a record holding everything up to checkpoint ticket ``through``
        (``Checkpoint.taken`` when it was handed to the store): answer the requests whose effects it includes.
        Requests still waiting when the session ends are never answered (their senders time out and may send
        again, as after any failure before the store)."""
        while self._unstored and self._unstored[0][0] <= through:
            _resolve(self._unstored.popleft()[1])

    def _guarded(self, channel: str, signal: Signal, parse: Callable[[], object]) -> SignalOutcome:
        """Parse (``parse()`` gives the action) and apply ``signal``; every failure but an
        infrastructure one becomes a rejection (see the module docstring)."""
        try:
            action = parse()
            outcome = self.engine.apply(signal, action)
            if outcome.accepted and isinstance(action, ExecuteSnapshot):
                self._prepare_topics()
            return outcome
        except SignalError as exc:
            return SignalOutcome(signal.id, False, exc.reason)
        except Exception as exc:
            if _infrastructure(exc):
                raise
            where = f"the {_shown(signal.type)} signal from the {channel} channel"
            if signal.position is not None:
                where += f" at position {_shown(signal.position)}"
            reason = unexpected_reason(exc, f"applying {where}")
            log.warning("signal %s from %s failed unexpectedly: %s", signal.id, channel, reason, exc_info=exc)
            return SignalOutcome(signal.id, False, reason)

    def _prepare_topics(self) -> None:
        """Make the topics of the queued tables ready on a thread of their own (``EventDispatcher.prepare_topic``),
        so that a snapshot's first READs of a table do not wait on the loop for Kafka to check or create its topic
        (about 10 ms: a live change waited behind it). A failure there is left to the first READ's own check,
        which reports it."""
        tables = [q.table for q in self.engine.state.queue if q.table not in self._topics_prepared]
        if tables:
            self._topics_prepared.update(tables)
            self._topic_jobs.put(tables)

    def _prepare_topics_forever(self) -> None:
        """The ``signaller-topics`` thread (a daemon, started with the session, so that no snapshot waits for a
        thread to start): prepares the topics of each job until :meth:`close`."""
        prepare = self._dispatcher.prepare_topic
        while (tables := self._topic_jobs.get()) is not None:
            for table in tables:
                try:
                    prepare(TableId.parse(table))
                except Exception as exc:  # the first READ's send checks again, on the loop, and reports
                    log.debug("could not prepare the topic of %s ahead of its snapshot: %s", table, exc)

    def _read_channel(self, channel: SignalChannelReader) -> list[SignalOutcome]:
        """Handle what ``channel`` has now, each entry in turn (``_handle``); the outcomes, in order. A
        failing ``read()`` is logged (once per message) and handles nothing."""
        name = channel.name
        try:
            entries = channel.read()
        except Exception as exc:
            if _infrastructure(exc):
                raise
            problem = f"{type(exc).__name__}: {exc}"
            if self._read_problems.get(name) != problem:
                log.warning("signal channel %s: reading failed: %s", name, problem, exc_info=exc)
                self._read_problems[name] = problem
            return []
        self._read_problems.pop(name, None)
        return [self._handle(channel, entry) for entry in entries]

    def _handle(self, channel: SignalChannelReader, entry: Signal | SignalError) -> SignalOutcome:
        """The one path of every channel's entries: store its position (``stores_positions``), parse and
        apply it (``_guarded``), answer it (log line; ``REJECTED`` notification if ``rejections_notified``),
        all in one Kafka group (see the module docstring)."""
        from signaller.signals.parsing import parse_action

        name = channel.name
        with self._adhoc_group():
            previous = self.engine.state.channel_positions.get(name)
            position = getattr(entry, "position", None) if channel.stores_positions else None
            if position is not None:
                self.engine.set_channel_position(name, position)
            try:
                if isinstance(entry, SignalError):
                    outcome = SignalOutcome(entry.signal_id if entry.signal_id is not None else "?", False,
                                            entry.reason)
                    self._reject(name, outcome.signal_id, entry.reason, getattr(entry, "cause", None))
                else:
                    outcome = self._guarded(name, entry, functools.partial(parse_action, entry))
                    self._answer(name, outcome, notify_rejection=channel.rejections_notified)
            except BaseException:
                if channel.stores_positions:
                    # Infrastructure failure: the retried session must read this entry again.
                    self.engine.set_channel_position(name, previous)
                raise
        return outcome

    def _publish_status(self) -> None:
        if self._status_changed is not None:
            self._status_changed()

    def _answer(self, channel: str, outcome: SignalOutcome, *, notify_rejection: bool = True) -> None:
        if outcome.accepted:
            log.info("signal %s from %s accepted", outcome.signal_id, channel)
        elif notify_rejection:
            self._reject(channel, outcome.signal_id, outcome.reason)
        else:
            log.warning("signal %s from %s rejected: %s", outcome.signal_id, channel, outcome.reason)

    def _reject(self, channel: str, signal_id: str, reason: str, exc: BaseException | None = None) -> None:
        log.warning("signal %s from %s rejected: %s", signal_id, channel, reason, exc_info=exc)
        with self._adhoc_group():
            self._notify(notes.make("REJECTED", signal_id, self._config.topics.prefix, notes.SIGNAL,
                                    channel=channel, reason=reason))

    # -- output ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _adhoc_group(self) -> Iterator[None]:
        """Outside a transaction, records (READs, notifications) and state changes go into a
        group of their own, ordered after everything sent before; inside one, into its group."""
        if self._in_tx or self._checkpoint.has_open_group():
            yield
            return
        self._checkpoint.begin()
        try:
            yield
        finally:
            self._checkpoint.close_group(self._last_end_lsn, self.engine.state)

    def notify(self, notification: notes.Notification) -> None:
        """Send ``notification`` on the enabled channels; call it outside a transaction."""
        with self._adhoc_group():
            self._notify(notification)

    def _notify(self, given: notes.Notification) -> None:
        notification = notes.for_release(given, self._release)
        if notification is None:
            return
        if self._log_notifications or self._dispatcher.notification_topic is None:
            notes.log_notification(notification)
        self._dispatcher.notification(notification)

    def status(self, base: SidecarStatus) -> SidecarStatus:
        """``base`` (the streaming figures) with the engine's snapshot progress."""
        snapshot = self.engine.status()
        return SidecarStatus(
            running=snapshot.running, paused=snapshot.paused, chunk_size=snapshot.chunk_size,
            correlation_id=snapshot.correlation_id, tables=snapshot.tables, streaming=base.streaming,
            committed_lsn=base.committed_lsn, events=base.events, last_error=base.last_error,
        )


_SHOWN_CHARS = 200


def _shown(value: object) -> str:
    """``value`` for a message: its repr, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + f"... ({len(text)} characters)"


def _infrastructure(exc: BaseException) -> bool:
    """PostgreSQL or Kafka failed (retry the session), as opposed to a signal that cannot be applied."""
    return is_transient(exc) or isinstance(exc, (SinkError, KafkaException))


def _literal_pattern(table: TableId) -> str:
    import re

    return re.escape(str(table))


def _resolve(answers: list[tuple[Future[SignalOutcome], SignalOutcome]]) -> None:
    for future, outcome in answers:
        future.set_result(outcome)
