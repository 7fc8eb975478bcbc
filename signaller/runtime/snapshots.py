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

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from confluent_kafka import KafkaException

from signaller.config import SignallerConfig
from signaller.errors import SignalError, SinkError, is_transient
from signaller.model import Op, TableId
from signaller.signals.model import ExecuteSnapshot, Signal, SignalOutcome, WindowMarker
from signaller.sinks.kafka import KafkaSink
from signaller.snapshot import notifications as notes
from signaller.snapshot.control import SidecarControl, SidecarStatus
from signaller.snapshot.engine import IncrementalSnapshotter
from signaller.snapshot.source import PostgresChunkSource
from signaller.snapshot.state import SnapshotState
from signaller.sources.postgres.catalog import Catalog
from signaller.sources.postgres.reader import Change, LogicalMessage, modes_of
from signaller.sources.postgres.relations import RelationCache
from signaller.state import Offsets

log = logging.getLogger("signaller.snapshots")
SendChange = Callable[[Change], None]


class SnapshotCoordinator:
    """Owns the engine, the signal channels and the control queue for one capture session."""

    def __init__(self, config: SignallerConfig, catalog: Catalog, sink: KafkaSink, send: SendChange,
                 control: SidecarControl | None, commit_now: Callable[[], None] | None = None,
                 status_changed: Callable[[], None] | None = None) -> None:
        """``commit_now`` stores everything Kafka acknowledged (waiting for it); ``status_changed``
        publishes the current status to ``control`` (both from the capture loop)."""
        from signaller.signals.filters import compile_filter

        self._config = config
        self._sink = sink
        self._send = send
        self.control = control
        self._commit_now = commit_now
        self._status_changed = status_changed
        self._read_problems: dict[str, str] = {}
        self._source = PostgresChunkSource(config.libpq_dsn(), config.signal_data_collection,
                                           config.incremental_snapshot_watermarking_strategy.value)
        relations = RelationCache(catalog.resolve_type, not_null_columns=catalog.not_null_columns,
                                  primary_key_columns=catalog.primary_key_columns,
                                  column_defaults=catalog.column_defaults)
        self.engine = IncrementalSnapshotter(config, self._source, modes_of(config), relations,
                                             self._emit_read, self._notify, compile_filter)
        self._signal_table = config.signal_data_collection
        self._channels: dict[str, Any] = {}
        self._next_channel_poll = 0.0
        self._last_end_lsn = 0
        self._in_tx = False
        self._notification_topic = (config.notification_sink_topic_name
                                    if "sink" in {c.value for c in config.notification_enabled_channels} else None)
        self._log_notifications = "log" in {c.value for c in config.notification_enabled_channels}
        self._source_channel = "source" in {c.value for c in config.signal_enabled_channels}

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, offsets: Offsets | None, tables: list[TableId]) -> None:
        """Restore the snapshot state, open the channels, start an initial snapshot if asked."""
        self._last_end_lsn = offsets.lsn if offsets else 0
        self.engine.restore(SnapshotState.from_offset(offsets.snapshot if offsets else None))
        self._open_channels()
        mode = self._config.snapshot_mode.value
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
        # As Debezium: every start that runs no initial snapshot says so (random id, Initial Snapshot).
        with self._adhoc_group():
            self._notify(notes.make("SKIPPED", None, self._config.topic_prefix, notes.INITIAL))

    def close(self) -> None:
        for channel in self._channels.values():
            with contextlib.suppress(Exception):
                channel.close()
        self._source.close()

    def _open_channels(self) -> None:
        enabled = {c.value for c in self._config.signal_enabled_channels}
        positions = self.engine.state.channel_positions
        if "kafka" in enabled:
            from signaller.signals.channels.kafka import KafkaSignalChannel

            self._channels["kafka"] = KafkaSignalChannel(self._config, positions.get("kafka"))
        if "file" in enabled:
            from signaller.signals.channels.file import FileSignalChannel

            stored = positions.get("file")
            self._channels["file"] = FileSignalChannel(self._config.signal_file, tuple(stored) if stored else None)

    # -- hooks from the capture loop ------------------------------------------------------
    def on_begin(self) -> None:
        self._in_tx = True

    def on_commit(self, end_lsn: int) -> SnapshotState:
        """A transaction ended: the state to attach to its Kafka group."""
        self._in_tx = False
        self._last_end_lsn = end_lsn
        return self.engine.state

    def on_change(self, change: Change) -> None:
        """Before a streamed change is sent: signal-table rows are signals or watermarks; every
        change deduplicates the open window."""
        if self._signal_table is not None and change.table == self._signal_table:
            self._on_signal_row(change)
            return
        self.engine.on_stream_change(change)

    def on_message(self, message: LogicalMessage, last_commit_lsn: int | None) -> None:
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

    def _on_signal_row(self, change: Change) -> None:
        from signaller.signals.parsing import parse_action, signal_from_row

        event = change.event
        strategy = self._config.incremental_snapshot_watermarking_strategy.value
        if event.op is Op.CREATE and event.after is not None:
            values = list(event.after.values())
        elif event.op is Op.DELETE and strategy == "insert_delete" and event.before is not None:
            values = list(event.before.values())
            if not isinstance(values[0], str) or not values[0].endswith("-open"):
                return
            data = values[2] if len(values) > 2 else None
            values = [values[0][: -len("open")] + "close", "snapshot-window-close", data]
        else:
            return
        if len(values) != 3:
            log.warning("signal table %s must have exactly 3 columns (id, type, data); row ignored", self._signal_table)
            return
        try:
            signal = signal_from_row(values[0], values[1], values[2], channel="source", position=event.lsn)
            action = parse_action(signal)
        except SignalError as exc:
            self._reject("source", exc.signal_id or _id_text(values[0]), exc.reason)
            return
        except Exception as exc:
            if _infrastructure(exc):
                raise
            where = f"signal table {self._signal_table} row at LSN {event.lsn:X}" if event.lsn else "signal table"
            self._reject("source", _id_text(values[0]), _unexpected(exc, f"reading the {where}"), exc)
            return
        if isinstance(action, WindowMarker):
            self.engine.on_marker(action, (event.last_commit_lsn, event.lsn))
            return
        if not self._source_channel:
            log.info("signal %s in the signal table ignored: the source channel is not in signal.enabled.channels",
                     signal.id)
            return
        self._answer("source", self._guarded("source", signal, lambda: action))

    # -- between batches ------------------------------------------------------------------
    def tick(self, stream_lsn: int = 0, last_commit_lsn: int | None = None) -> None:
        """Serve the control queue and the channels, close a read-only window the log has
        passed, then read the next chunk if one is due."""
        if self._config.read_only and stream_lsn:
            with self._adhoc_group():
                self.engine.on_position(max(stream_lsn, self._last_end_lsn), (last_commit_lsn, 0))
        if self.control is not None:
            answers = []
            for item, future in self.control.drain():
                with self._adhoc_group():
                    outcome = self._apply_control(item)
                answers.append((future, outcome))
            if any(outcome.accepted for _, outcome in answers) and self._commit_now is not None:
                # An accepted HTTP signal is answered only once its effect is in the stored offsets,
                # so a crash right after the 202 cannot lose it (the other channels re-deliver).
                self._commit_now()
            if answers:
                self._publish_status()  # before the answers: a GET right after one sees its effect
            for future, outcome in answers:
                future.set_result(outcome)
        now = time.monotonic()
        if self._channels and now >= self._next_channel_poll:
            self._next_channel_poll = now + self._config.signal_poll_interval_ms / 1000
            handled = sum(self._read_channel(name, channel) for name, channel in self._channels.items())
            if handled:
                self._publish_status()
        if self.engine.wants_chunk:
            with self._adhoc_group():
                self.engine.read_chunk()

    def _apply_control(self, item: Signal | int) -> SignalOutcome:
        """One request of the HTTP API: a chunk size or a signal; rejections are answered, not notified."""
        from signaller.signals.parsing import parse_action

        if isinstance(item, int):
            return self.engine.set_chunk_size(item)
        outcome = self._guarded("http", item, lambda: parse_action(item))
        self._answer("http", outcome, notify_rejection=False)
        return outcome

    def _guarded(self, channel: str, signal: Signal, parse: Callable[[], object]) -> SignalOutcome:
        """Parse (``parse()`` gives the action) and apply ``signal``; every failure but an
        infrastructure one becomes a rejection (see the module docstring)."""
        try:
            return self.engine.apply(signal, parse())
        except SignalError as exc:
            return SignalOutcome(signal.id, False, exc.reason)
        except Exception as exc:
            if _infrastructure(exc):
                raise
            where = f"the {_shown(signal.type)} signal from the {channel} channel"
            if signal.position is not None:
                where += f" at position {_shown(signal.position)}"
            reason = _unexpected(exc, f"applying {where}")
            log.warning("signal %s from %s failed unexpectedly: %s", signal.id, channel, reason, exc_info=exc)
            return SignalOutcome(signal.id, False, reason)

    def _read_channel(self, name: str, channel: Any) -> int:
        """Apply what ``channel`` has now, each entry with its position (see the module docstring);
        returns how many entries were handled. A failing ``read()`` is logged (once per message)."""
        from signaller.signals.parsing import parse_action

        try:
            entries = channel.read()
        except Exception as exc:
            if _infrastructure(exc):
                raise
            problem = f"{type(exc).__name__}: {exc}"
            if self._read_problems.get(name) != problem:
                log.warning("signal channel %s: reading failed: %s", name, problem, exc_info=exc)
                self._read_problems[name] = problem
            return 0
        self._read_problems.pop(name, None)
        for entry in entries:
            with self._adhoc_group():
                previous = self.engine.state.channel_positions.get(name)
                position = getattr(entry, "position", None)
                if position is not None:
                    self.engine.set_channel_position(name, position)
                try:
                    if isinstance(entry, SignalError):
                        self._reject(name, entry.signal_id or "?", entry.reason)
                    else:
                        self._answer(name, self._guarded(name, entry, functools.partial(parse_action, entry)))
                except BaseException:
                    # Infrastructure failure: the retried session must read this entry again.
                    self.engine.set_channel_position(name, previous)
                    raise
        return len(entries)

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
            self._notify(notes.make("REJECTED", signal_id, self._config.topic_prefix, notes.SIGNAL,
                                    channel=channel, reason=reason))

    # -- output ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _adhoc_group(self) -> Iterator[None]:
        """Outside a transaction, records (READs, notifications) and state changes go into a
        group of their own, ordered after everything sent before; inside one, into its group."""
        if self._in_tx or self._sink.has_open_group():
            yield
            return
        self._sink.begin()
        try:
            yield
        finally:
            self._sink.close_group(self._last_end_lsn, self.engine.state)

    def _emit_read(self, change: Change) -> None:
        self._send(change)

    def notify(self, notification: notes.Notification) -> None:
        """Send ``notification`` on the enabled channels; call it outside a transaction."""
        with self._adhoc_group():
            self._notify(notification)

    def _notify(self, notification: notes.Notification) -> None:
        if self._log_notifications or self._notification_topic is None:
            notes.log_notification(notification)
        if self._notification_topic is not None:
            schemas = self._config.value_converter_schemas_enable
            key, value = notification.key_bytes(schemas), notification.value_bytes(schemas)
            self._sink.send(self._notification_topic, key, value)

    def status(self, base: SidecarStatus) -> SidecarStatus:
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


def _id_text(value: object) -> str:
    """A signal-table id as the notification's id: its text, cut to a readable length."""
    text = str(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


def _infrastructure(exc: BaseException) -> bool:
    """PostgreSQL or Kafka failed (retry the session), as opposed to a signal that cannot be applied."""
    return is_transient(exc) or isinstance(exc, (SinkError, KafkaException))


def _unexpected(exc: BaseException, doing: str) -> str:
    """The rejection reason for an exception no validation foresaw."""
    detail = str(exc)
    if len(detail) > _SHOWN_CHARS:
        detail = detail[:_SHOWN_CHARS] + "..."
    return (f"{doing} failed unexpectedly ({type(exc).__name__}: {detail}); the signal was skipped and will not "
            "be read again; accepted: a signal the validation passes (this one should have been refused with a "
            "reason: please report it, with the warning in the log)")


def _literal_pattern(table: TableId) -> str:
    import re

    return re.escape(str(table))
