"""The streaming loop: the source's log → Debezium envelopes → Kafka, with offsets committed only
for what Kafka acknowledged.

The source (PostgreSQL today) comes from :func:`signaller.sources.registry.open_source`, which builds
the one ``connector.class`` names; the loop sees only :mod:`signaller.sources.base`'s interfaces and
stream items (:class:`~signaller.sources.base.TransactionBegin`, the source's change type,
:class:`~signaller.sources.base.TransactionCommit`, :class:`~signaller.sources.base.SourceMessage`).

Every record goes through the session's :class:`~signaller.runtime.dispatch.EventDispatcher`;
the loop opens and closes the checkpoint's groups around transactions and heartbeats.
Commit order, fixed here and nowhere else: ``sink.raise_if_failed()`` then
``checkpoint.committable()`` (everything up to the position is in Kafka, acks=all) →
``store.commit(offsets)`` (durable) →
``reader.acknowledge(position)`` (the source may release its log; PostgreSQL: drop the WAL).
A kill -9 between any two steps loses nothing: the stored position is never ahead of Kafka, and
the source's (the slot's) never ahead of the stored position; on restart the source resends
every transaction after the stored position.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from signaller.api.metrics import MetricsRegistry
from signaller.config import SignallerConfig
from signaller.errors import SinkError, TerminalSinkError, TransientSinkError
from signaller.model import format_lsn
from signaller.runtime.allocator import keep_freed_memory
from signaller.runtime.checkpoint import Checkpoint
from signaller.runtime.committer import OffsetCommitter
from signaller.runtime.dispatch import EventDispatcher
from signaller.runtime.heap import session_objects_frozen
from signaller.sinks.kafka import EVENT_PROCESSING, KafkaSink, TopicManager
from signaller.snapshot import notifications as notes
from signaller.snapshot.control import SidecarControl, SidecarStatus
from signaller.snapshot.state import SnapshotState
from signaller.sources.base import (
    LogReader,
    SchemaChangeRecords,
    Source,
    SourceMessage,
    TransactionBegin,
    TransactionCommit,
)
from signaller.sources.registry import open_source
from signaller.state import Offsets, OffsetStore, open_store

log = logging.getLogger("signaller.capture")
STALL_WARNING_S = 15.0


@dataclass
class CaptureStats:
    """Counters the API and metrics read; updated by the loop only."""

    events: int = 0
    transactions: int = 0
    committed_lsn: int = 0
    last_commit_ts_us: int = 0
    started_at: float = field(default_factory=time.time)


def wait_for_log(timeout_s: float, until_flush_s: float, settled: bool) -> float:
    """How long the loop may wait for the log: ``timeout_s`` (the snapshots' answer, else the
    poll interval), but never past the next offset flush while records wait for their delivery
    reports or a position waits to be committed (``settled`` false). Otherwise a quiet log kept the
    loop in one wait of up to ``poll.interval.ms`` with the end of a snapshot, say, delivered but
    neither acknowledged nor committed."""
    if settled:
        return timeout_s
    return max(0.0, min(timeout_s, until_flush_s))


def kafka_failure(exc: KafkaException, bootstrap: str) -> SinkError:
    """A ``KafkaException`` that escaped the sink, as a ``TransientSinkError`` (retried with backoff)
    unless the client reports it fatal (``TerminalSinkError``)."""
    error = exc.args[0] if exc.args else None
    text = error.str() if isinstance(error, KafkaError) else str(exc)
    msg = f"Kafka (bootstrap.servers={bootstrap}) failed: {text}"
    if isinstance(error, KafkaError) and error.fatal():
        return TerminalSinkError(msg)
    return TransientSinkError(msg)


class CaptureLoop:
    """One streaming session: connects, streams until ``stop()`` or an error, then closes.

    Construct, call ``run()``; on any exception the caller (``runtime.supervisor``) decides to
    retry (``TransientError``) or give up. Safe to construct again after a failure: all resume
    state comes from the offset store and the slot.
    """

    def __init__(self, config: SignallerConfig, store: OffsetStore | None = None,
                 on_change: Callable[[Any], None] | None = None, control: SidecarControl | None = None,
                 metrics: MetricsRegistry | None = None) -> None:
        self.config = config
        self.control = control
        self.metrics = metrics
        self.store = store or open_store(config)
        self.stats = CaptureStats()
        self._stopping = False
        self._on_change = on_change
        self._dispatcher: EventDispatcher | None = None
        self._unconfirmed: collections.deque[tuple[int, int, int]] = collections.deque()
        """Records handed to the committer and not yet confirmed: (sequence, position, checkpoint groups taken)."""

    def stop(self) -> None:
        """Ask the session to end (any thread): the loop finishes its current batch, commits what Kafka acknowledged and
        returns from ``run``."""
        self._stopping = True

    def run(self) -> None:
        """Stream until ``stop()`` or an error: check the source, load the offsets, resume the log after them, and on
        the way out (also after an error) commit what Kafka acknowledged and close every connection. Raises the error
        that ended the session (``TransientError`` for what is worth retrying)."""
        config = self.config
        source = self._source = open_source(config)
        reader = source.log
        keep_freed_memory(config.producer_config())  # before the producer's threads make their heaps
        sink = KafkaSink(config.producer_config(), TopicManager(
            config.kafka_client_config(), config.kafka.topic_creation_default_partitions,
            config.kafka.topic_creation_default_replication_factor), config.events.failure_handling_mode.value)
        checkpoint = Checkpoint(on_failure=sink.delivery_failed)
        dispatcher = self._dispatcher = EventDispatcher(config, sink, checkpoint, self.stats,
                                                        transaction_id=source.transaction_id,
                                                        source_block=source.source_block,
                                                        count_by_table=self.metrics is not None,
                                                        on_change=self._on_change)
        from signaller.runtime.snapshots import SnapshotCoordinator

        # The snapshot's side of the source: its own connection for chunks and watermarks, and the
        # schema provider on the reader's schema cache (one cache for stream and chunks).
        snapshots = SnapshotCoordinator(config, source.chunks, source.schemas, dispatcher, checkpoint, self.control,
                                        status_changed=lambda: self._publish_status(snapshots),
                                        compile_filter=source.compile_filter,
                                        debezium_release=source.debezium_release)
        self._snapshots = snapshots
        self._committer = None  # this session's, once its offsets are loaded
        try:
            tables = source.prepare()
            offsets = self.store.load()
            start = offsets.lsn if offsets else 0
            self.stats.committed_lsn = self._submitted_lsn = start
            self._committer = OffsetCommitter(self.store, on_durable=reader.wake)
            self._unconfirmed.clear()  # a previous session's records are its committer's, not this one's
            reader.open(start, offsets.source_keys if offsets else None)
            if offsets is None and (keys := source.offset_keys(start)) is not None:
                # A source that keeps no position of its own (MariaDB: no replication slot) stores where it
                # started before anything streams, so a kill before the first commit resumes there.
                self.store.commit(Offsets(start, source_keys=keys))
            snapshots.start(offsets, tables, schema_snapshot=source.schema_snapshot_taken)
            if self.control is not None:
                self.control.wake_with(reader.wake)
            with session_objects_frozen():  # full collections stay short while the stream runs (see heap)
                self._stream(reader, sink, checkpoint, dispatcher, snapshots)
        except KafkaException as exc:
            # A Kafka client call (metadata, topic creation) failed outside the delivery path: an
            # unreachable or unhealthy cluster is worth retrying, not a reason to exit.
            raise kafka_failure(exc, config.kafka.bootstrap_servers) from exc
        finally:
            try:
                # Whatever Kafka already acknowledged is safe to record, even after a failure.
                self._commit(reader, sink, checkpoint, final=self._stopping, wait=True)
            except Exception as exc:  # the original error (if any) is the one to report
                log.warning("could not commit offsets while closing: %s", exc)
            finally:
                if self.control is not None:
                    self.control.wake_with(None)
                if self._committer is not None:
                    self._committer.close()
                    self._committer = None
                snapshots.close()
                reader.close()
                sink.close(5)
                source.close()

    # -- the loop -------------------------------------------------------------------------
    def _stream(self, reader: LogReader[Any], sink: KafkaSink, checkpoint: Checkpoint,
                dispatcher: EventDispatcher, snapshots: Any) -> None:
        config = self.config
        change_type = self._source.change_type
        flush_every = max(0.05, config.offsets.flush_interval_ms / 1000)
        heartbeat_every = config.streaming.heartbeat_interval_ms / 1000
        next_flush = next_heartbeat = time.monotonic()
        in_tx = False
        poll_s = config.streaming.poll_interval_ms / 1000
        committer = self._committer
        assert committer is not None
        while not self._stopping:
            # While a snapshot window's READs wait, the loop reads whatever the log has and goes on emitting.
            if snapshots.awaiting_position:
                reader.request_position()
            items = reader.poll(config.streaming.max_batch_size, wait_for_log(
                snapshots.poll_timeout(poll_s), next_flush - time.monotonic(), checkpoint.settled()))
            for item in items:
                if type(item) is change_type:
                    snapshots.on_change(item)
                    dispatcher.streamed(item)
                elif type(item) is TransactionBegin:
                    in_tx = True
                    checkpoint.begin()
                    snapshots.on_begin()
                    dispatcher.transaction_begin(item)
                elif type(item) is TransactionCommit:
                    dispatcher.transaction_end(item)
                    checkpoint.close_group(item.end_lsn, snapshots.on_commit(item.end_lsn))
                    in_tx = False
                    self.stats.transactions += 1
                    self.stats.last_commit_ts_us = item.commit_ts_us
                elif isinstance(item, SourceMessage):
                    snapshots.on_message(item, item.last_commit_lsn)
                elif type(item) is SchemaChangeRecords:
                    checkpoint.begin()
                    for topic, key, value in item.records:
                        dispatcher.record(topic, key, value)
                    checkpoint.close_group(item.end_lsn)
            sink.poll(0)
            if self._unconfirmed:
                self._confirm_durable(reader)
            if not in_tx:
                if sink.skipped:
                    self._report_skipped(sink, snapshots)
                snapshots.tick(reader.stream_end, reader.last_commit)
            now = time.monotonic()
            if heartbeat_every and now >= next_heartbeat and not in_tx:
                self._heartbeat(reader, checkpoint, dispatcher)
                next_heartbeat = now + heartbeat_every
            if now >= next_flush:
                self._commit(reader, sink, checkpoint)
                next_flush = now + flush_every
                self._publish_status(snapshots)
            elif snapshots.commit_due() and not committer.busy:  # an HTTP answer waits for it to be stored
                self._commit(reader, sink, checkpoint)

    def _report_skipped(self, sink: KafkaSink, snapshots: Any) -> None:
        """A notification and a metric for each record the sink left out (warn/skip mode)."""
        for record in sink.take_skipped():
            if self.metrics is not None:
                self.metrics.count_skipped_record(record.topic, "too_large")
            snapshots.notify(notes.make(
                "RECORD_SKIPPED", None, self.config.topics.prefix, EVENT_PROCESSING, reason="too_large",
                topic=record.topic, data_collection=record.table or "", key=record.key_text,
                lsn=format_lsn(record.lsn) if record.lsn is not None else "", size=str(record.size),
                limit=str(record.limit), limit_setting=record.limit_setting))

    def _heartbeat(self, reader: LogReader[Any], checkpoint: Checkpoint, dispatcher: EventDispatcher) -> None:
        """A heartbeat record; once delivered, the offset may move to the server's WAL position
        even if no captured table changed, so an idle database does not pin WAL."""
        checkpoint.begin()
        dispatcher.heartbeat()
        checkpoint.close_group(max(reader.stream_end, self.stats.committed_lsn))

    def _commit(self, reader: LogReader[Any], sink: KafkaSink, checkpoint: Checkpoint, final: bool = False,
                wait: bool = False) -> None:
        """Hand what Kafka acknowledged to the offset committer (``final``: after waiting up to 10 s for the
        records in flight; ``wait``: and wait until it is stored), and confirm what it already stored."""
        if final:
            checkpoint.drain(10, sink.flush)
        sink.raise_if_failed()  # nothing after a failed delivery is ever committed
        committable = checkpoint.committable()
        position, state = committable.position, committable.snapshot
        committer = self._committer
        if committer is None:
            return
        if position > self._submitted_lsn or (state is not None and state is not self._committed_state):
            snapshot = state.to_offset() if state is not None else None
            seq = committer.submit(Offsets(position, ts_usec=self.stats.last_commit_ts_us or None, snapshot=snapshot,
                                           source_keys=self._source.offset_keys(position)))
            self._unconfirmed.append((seq, position, checkpoint.taken))
            self._committed_state, self._submitted_lsn = state, position
        else:
            self._warn_if_stalled(checkpoint)
            # Nothing new to store: the newest record handed over already holds every group taken so far (an
            # accepted ``log`` signal, say, changed nothing storable): its answers go with that record.
            if self._unconfirmed:
                seq, submitted, _ = self._unconfirmed[-1]
                self._unconfirmed[-1] = (seq, submitted, checkpoint.taken)
            elif self._snapshots is not None:
                self._snapshots.committed(checkpoint.taken)
        if wait:
            committer.flush(30)
        self._confirm_durable(reader)

    def _confirm_durable(self, reader: LogReader[Any]) -> None:
        """What the committer made durable (raising its store's failure): its position is confirmed to the
        source (PostgreSQL may recycle the WAL before it) and the HTTP answers it covers are given."""
        assert self._committer is not None
        durable = self._committer.durable
        newest = None
        while self._unconfirmed and self._unconfirmed[0][0] <= durable:
            newest = self._unconfirmed.popleft()
        if newest is None:
            return
        _, position, taken = newest
        reader.acknowledge(position)
        self.stats.committed_lsn = position
        if self._snapshots is not None:
            self._snapshots.committed(taken)

    _committer: OffsetCommitter | None = None
    _submitted_lsn = 0
    _last_stall_warning = 0.0
    _committed_state: SnapshotState | None = None
    _snapshots: Any = None
    _source: Source[Any]

    def _publish_status(self, snapshots: Any) -> None:
        if self.metrics is not None:
            if self._dispatcher is not None:
                for (table, op), count in self._dispatcher.take_event_counts().items():
                    self.metrics.count_events(table, op, count)
            for (table, column, kind), count in self._source.take_unrepresentable().items():
                self.metrics.count_unrepresentable(table, column, kind, count)
            if self.stats.last_commit_ts_us:
                self.metrics.acknowledged(self.stats.committed_lsn, self.stats.last_commit_ts_us / 1e6)
        if self.control is None:
            return
        base = SidecarStatus(streaming=True, committed_lsn=self.stats.committed_lsn, events=self.stats.events)
        self.control.publish(snapshots.status(base))

    def _warn_if_stalled(self, checkpoint: Checkpoint) -> None:
        """Warn (at most every ``STALL_WARNING_S``) while a record produced over ``STALL_WARNING_S`` ago is still
        unacknowledged: the offsets cannot move past it. Records merely in flight (a heartbeat just sent) are not
        a stall."""
        now = time.monotonic()
        waiting_s = checkpoint.oldest_unacknowledged_s(now)
        if waiting_s > STALL_WARNING_S and now - self._last_stall_warning > STALL_WARNING_S:
            log.warning("waiting for Kafka: %d record(s) unacknowledged, the oldest for %.0fs; offsets stay at %s",
                        checkpoint.in_flight(), waiting_s, format_lsn(self.stats.committed_lsn))
            self._last_stall_warning = now
