"""The one road every event takes to Kafka: streamed changes, snapshot READs, heartbeats,
transaction metadata and notifications.

:class:`EventDispatcher` decides each record's topic, asks the session's one
:class:`~signaller.wire.serializer.RecordSerializer` for its key and value, and hands the bytes
to the sink inside the checkpoint's current group (:mod:`signaller.runtime.checkpoint`), so the
group's acknowledgement covers them. It opens and closes no group itself: the capture loop
does, around transactions and heartbeats, and the snapshot coordinator around its own records.

Row events (``streamed`` and ``read``) go through one serializer call,
:meth:`~signaller.wire.envelope.EnvelopeSerializer.serialize`, with one serializer per source
plan (a relation version): the rows a plan builds hold exactly the serializer's payload columns,
which is checked once per plan; a plan whose rows do not (none does today) takes the reference
rendering (``serialize_key``/``serialize_value``), which gives the same bytes, slower. With the Avro
converters the serializer is :class:`~signaller.wire.avro_serializer.AvroRecordSerializer`, whose
schemas are registered when a relation version's serializer is built (first change of the version),
off the per-record path; a registry error raised there ends the session before any record of that
version is sent (transient: retried from the last committed offsets). Not thread-safe: the capture
loop's thread only. Nothing survives a restart but what the sink delivered.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from signaller.config import SignallerConfig
from signaller.model import ChangeEvent, Op, TableId, TableSchema
from signaller.runtime.checkpoint import Checkpoint
from signaller.sinks.kafka import KafkaSink
from signaller.sinks.subjects import RegistrySubjects
from signaller.snapshot.notifications import Notification
from signaller.sources.base import RawRow, ReadRendering, TransactionBegin, TransactionCommit
from signaller.wire.avro_serializer import AvroRecordSerializer, AvroTableSerializer
from signaller.wire.columns import ColumnCodec
from signaller.wire.envelope import EnvelopeSerializer, RowChange
from signaller.wire.records import java_hash_map_order, transaction_block
from signaller.wire.serializer import RecordSerializer
from signaller.wire.source_block import SourceBlock

__all__ = ["DispatchedChange", "EventCounter", "EventDispatcher", "RowPlan", "TransactionId"]

TransactionId = Callable[[int, int], str]
"""The source's Debezium transaction id text for ``(xid, log position)`` (``Source.transaction_id``)."""


class RowPlan(Protocol):
    """How a source built a change's rows (one per table version; compared by identity): the table, its
    schema and column codecs (what the serializer is built from) and the rows' columns in order."""

    @property
    def table_id(self) -> TableId:
        """The table."""
        ...

    @property
    def schema(self) -> TableSchema:
        """The table's schema (captured columns only)."""
        ...

    @property
    def codecs(self) -> dict[str, ColumnCodec]:
        """Each captured column's codec."""
        ...

    @property
    def row_columns(self) -> tuple[str, ...]:
        """The keys of the rows' ``before``/``after`` dicts, in order."""
        ...


class DispatchedChange(RowChange, Protocol):
    """A row change as a source hands it to the dispatcher: the serializer's :class:`RowChange` with
    the plan its rows were built with and its event."""

    @property
    def plan(self) -> RowPlan:
        """The plan of the change's rows."""
        ...

    @property
    def table(self) -> TableId:
        """The change's table."""
        ...

    @property
    def event(self) -> ChangeEvent:
        """The change as a ``ChangeEvent``."""
        ...


class EventCounter(Protocol):
    """Where the dispatcher counts the change events it sent (the capture's statistics)."""

    events: int


_time_ns = time.time_ns


def _now_us() -> int:
    return _time_ns() // 1000


_OP_VALUES = {op: op.value for op in Op}
_DELETE = Op.DELETE  # a global is cheaper than the enum attribute on the hot path


class _TableOutput:
    """Where and how one relation plan's changes go: topic, serializer, and whether the plan's
    rows hold exactly the serializer's payload columns in order (what ``serialize`` needs)."""

    __slots__ = ("name", "plan", "rows_match", "serializer", "topic")

    def __init__(self, plan: RowPlan, serializer: EnvelopeSerializer | AvroTableSerializer, topic: str) -> None:
        self.plan = plan
        self.serializer = serializer
        self.topic = topic
        self.name = str(plan.table_id)
        self.rows_match = plan.row_columns == serializer.value_names


class _TransactionMetadata:
    """Counts of the current transaction's events, for its ``transaction`` blocks and END record."""

    __slots__ = ("per_table", "total", "transaction_id", "xid")

    def __init__(self, transaction_id: TransactionId) -> None:
        self.transaction_id = transaction_id
        self.xid = 0
        self.total = 0
        self.per_table: dict[str, int] = {}

    # A transaction id is the source's text for (xid, a position): the BEGIN record's position is the
    # begin's, each event's its own, the END record's the commit's end position (PostgreSQL:
    # ``<xid>:<LSN of the message>``). Only the xid is the same throughout a transaction.
    def begin(self, xid: int) -> None:
        self.xid, self.total, self.per_table = xid, 0, {}

    def block(self, table: str, lsn: int | None) -> dict[str, Any]:
        self.total += 1
        self.per_table[table] = self.per_table.get(table, 0) + 1
        return transaction_block(self.transaction_id(self.xid, lsn or 0), self.total, self.per_table[table])


def _record_serializer(config: SignallerConfig, source_block: SourceBlock | None = None,
                       ) -> RecordSerializer | AvroRecordSerializer:
    """The session's one record serializer: JsonConverter's, or the Avro converters' (registry from ``config``), with
    the source's ``source`` block (None: the built-in PostgreSQL one)."""
    if not config.connector.avro:
        return RecordSerializer(topic_prefix=config.topics.prefix, database=config.database.dbname,
                                schemas_enable=config.connector.value_schemas_enable,
                                key_schemas_enable=config.connector.key_schemas_enable, source_block=source_block)
    channels = {c.value for c in config.notifications.enabled_channels}
    topics = config.topics
    return AvroRecordSerializer(
        topic_prefix=topics.prefix, database=config.database.dbname, ids=RegistrySubjects.from_config(config),
        topic_for=topics.topic_for, heartbeat_topic=topics.heartbeat_topic, transaction_topic=topics.transaction_topic,
        notification_topic=config.notifications.sink_topic_name if "sink" in channels else None,
        schema_names=config.types.schema_name_adjustment_mode.value,
        field_names=config.types.field_name_adjustment_mode.value, source_block=source_block)


class EventDispatcher:
    """Renders and sends every record of one capture session (see the module docstring).

    ``stats.events`` counts the change events sent; with ``count_by_table`` the dispatcher also
    counts them per (table, op) for :meth:`take_event_counts`. ``transaction_id`` is the source's
    transaction id text (``Source.transaction_id``), ``source_block`` its ``source`` block
    (``Source.source_block``; None: the built-in PostgreSQL one). ``on_change`` (tests, tools) is
    called after each change event was handed to the sink.
    """

    def __init__(self, config: SignallerConfig, sink: KafkaSink, checkpoint: Checkpoint, stats: EventCounter, *,
                 transaction_id: TransactionId, count_by_table: bool = False,
                 on_change: Callable[[Any], None] | None = None, source_block: SourceBlock | None = None) -> None:
        self._config = config
        self._sink = sink
        self._checkpoint = checkpoint
        self._stats = stats
        self._count_by_table = count_by_table
        self._event_counts: dict[tuple[str, str], int] = {}
        self._on_change = on_change
        self._serializer = _record_serializer(config, source_block)
        self._outputs: dict[int, _TableOutput] = {}
        self._tombstones = config.events.tombstones_on_delete
        self._transaction_id = transaction_id
        self._tx = _TransactionMetadata(transaction_id) if config.events.provide_transaction_metadata else None
        channels = {c.value for c in config.notifications.enabled_channels}
        self.notification_topic = config.notifications.sink_topic_name if "sink" in channels else None
        """The topic of notification records; None when the ``sink`` notification channel is off."""

    # -- row events -----------------------------------------------------------------------
    def streamed(self, change: DispatchedChange) -> None:
        """A change read from the log, inside its transaction (its ``transaction`` block, when
        transaction metadata is on, counts it)."""
        plan = change.plan
        output = self._outputs.get(id(plan))
        if output is None or output.plan is not plan:
            output = self._output(plan)
        tx = self._tx
        self._row(change, output, tx.block(output.name, change.lsn) if tx is not None else None)

    def read(self, change: DispatchedChange) -> None:
        """A snapshot READ row (never part of a transaction's metadata)."""
        plan = change.plan
        output = self._outputs.get(id(plan))
        if output is None or output.plan is not plan:
            output = self._output(plan)
        self._row(change, output, None)

    def reads(self, plan: RowPlan, rows: Iterable[dict[str, Any]], last_commit_lsn: int | None,
              lsn: int | None, change_of: Callable[[ChangeEvent], DispatchedChange],
              snapshot: str = "incremental") -> int:
        """Snapshot READs of ``rows`` (rows as ``plan`` builds them), one window's or a slice of it, all at
        position ``(last_commit_lsn, lsn)``; returns how many were sent (or left out as too large).

        The same records, in the same order, as :meth:`read` of each row's ``ChangeEvent(Op.READ, ...,
        snapshot)``; with the JSON converter and a plan whose rows match the serializer, without building
        an event per row (:meth:`EnvelopeSerializer.serialize_read`); otherwise each row's event becomes the
        source's change through ``change_of`` (the source's ``TableRows.read_change``)."""
        output = self._outputs.get(id(plan))
        if output is None or output.plan is not plan:
            output = self._output(plan)
        serializer = output.serializer
        if not (output.rows_match and self._on_change is None and isinstance(serializer, EnvelopeSerializer)):
            count = 0
            for row in rows:
                self.read(change_of(ChangeEvent(Op.READ, plan.table_id, None, row, lsn, None, last_commit_lsn, None,
                                                _now_us(), snapshot)))
                count += 1
            return count
        render, send, topic = serializer.serialize_read, self._sink.send, output.topic
        group = self._checkpoint.current()
        on_delivery = group.on_delivery
        count = 0
        for row in rows:
            key, value = render(row, last_commit_lsn, lsn, ts_us_now=_time_ns() // 1000, snapshot=snapshot)
            if send(topic, key, value, on_delivery):
                group.pending += 1
            count += 1
        return self._counted_reads(output, count)

    @property
    def renders_reads(self) -> bool:
        """Whether :meth:`rendered_reads` can use a source's own rendering of READs (JsonConverter records, no
        per-change hook); otherwise it converts every row."""
        return self._on_change is None and isinstance(self._serializer, RecordSerializer)

    def rendered_reads(self, plan: RowPlan, rendering: ReadRendering, rows: Sequence[RawRow], offset: int,
                       decode: Callable[[RawRow], dict[str, Any]], last_commit_lsn: int | None, lsn: int | None,
                       change_of: Callable[[ChangeEvent], DispatchedChange], snapshot: str = "incremental") -> int:
        """Snapshot READs of chunk ``rows`` as the source's chunk query rendered them (``rendering``, its values
        from ``offset``): the same records, in the same order, as :meth:`reads` of each row's ``decode`` (but one
        emission time for all: the call's, where :meth:`reads` takes each row's); a row
        the query left unrendered, or every row when the serializer's columns or key are not the rendering's, is
        decoded and rendered as :meth:`reads` does. Returns how many were sent (or left out as too large)."""
        output = self._outputs.get(id(plan))
        if output is None or output.plan is not plan:
            output = self._output(plan)
        serializer = output.serializer
        if not (output.rows_match and self._on_change is None and isinstance(serializer, EnvelopeSerializer)
                and serializer.renders(rendering.value_names, rendering.key_names)):
            return self.reads(plan, [decode(values) for values in rows], last_commit_lsn, lsn, change_of, snapshot)
        records = serializer.serialize_rendered_reads(rows, rendering.render_rows(rows, offset), decode,
                                                      last_commit_lsn, lsn, ts_us_now=_time_ns() // 1000,
                                                      snapshot=snapshot)
        group = self._checkpoint.current()
        group.pending += self._sink.send_many(output.topic, records, group.on_delivery)
        return self._counted_reads(output, len(records))

    def _counted_reads(self, output: _TableOutput, count: int) -> int:
        """Count ``count`` READs of ``output``'s table sent (the stats, and per table with ``count_by_table``);
        returns ``count``."""
        self._stats.events += count
        if self._count_by_table and count:
            counter = (output.name, _OP_VALUES[Op.READ])
            self._event_counts[counter] = self._event_counts.get(counter, 0) + count
        return count

    def prepare_topic(self, table: TableId) -> None:
        """Make the data topic of ``table`` ready (``KafkaSink.prepare_topic``), from any thread: its first
        records then go out without Kafka round trips on the loop."""
        self._sink.prepare_topic(self._config.topics.topic_for(table))

    def _output(self, plan: RowPlan) -> _TableOutput:
        serializer = self._serializer.table(plan.schema, plan.codecs)
        output = self._outputs[id(plan)] = _TableOutput(plan, serializer, self._config.topics.topic_for(plan.table_id))
        return output

    def _row(self, change: DispatchedChange, output: _TableOutput, block: dict[str, Any] | None) -> None:
        serializer = output.serializer
        if output.rows_match:
            key, value = serializer.serialize(change, ts_us_now=_now_us(), transaction=block)
        else:
            event = change.event
            key = serializer.serialize_key(event.after if event.after is not None else event.before)
            value = serializer.serialize_value(event, ts_us_now=_now_us(), transaction=block)
        topic, group = output.topic, self._checkpoint.current()
        if self._sink.send(topic, key, value, group.on_delivery):  # ``_send``, inlined on the hot path
            group.pending += 1
        if change.op is _DELETE and self._tombstones and self._sink.send(topic, key, None, group.on_delivery):
            group.pending += 1
        self._stats.events += 1
        if self._count_by_table:
            counter = (output.name, _OP_VALUES[change.op])
            self._event_counts[counter] = self._event_counts.get(counter, 0) + 1
        if self._on_change is not None:
            self._on_change(change)

    @property
    def queued(self) -> int:
        """Records handed to the sink and not yet acknowledged (the producer's queue)."""
        return self._sink.queued

    def serve_deliveries(self, timeout_s: float) -> None:
        """Serve the sink's delivery reports, waiting up to ``timeout_s`` for one."""
        self._sink.poll(timeout_s)

    def take_event_counts(self) -> dict[tuple[str, str], int]:
        """The change events sent per ``(table, op)`` since the last call (with ``count_by_table``)."""
        counts, self._event_counts = self._event_counts, {}
        return counts

    # -- other records --------------------------------------------------------------------
    def transaction_begin(self, item: TransactionBegin) -> None:
        """A transaction began: its BEGIN record, when transaction metadata is on."""
        tx = self._tx
        if tx is None:
            return
        tx.begin(item.xid)
        tx_id = self._transaction_id(item.xid, item.begin_lsn)
        key, value = self._serializer.transaction_begin(tx_id, item.commit_ts_us // 1000)
        self._send(self._config.topics.transaction_topic, key, value)

    def transaction_end(self, item: TransactionCommit) -> None:
        """A transaction committed: its END record (event counts per table), when transaction metadata is on."""
        tx = self._tx
        if tx is None:
            return
        tx_id = self._transaction_id(item.xid, item.end_lsn)
        self._send(self._config.topics.transaction_topic, *self._serializer.transaction_end(
            tx_id, item.commit_ts_us // 1000, tx.total, java_hash_map_order(tx.per_table.items())))

    def heartbeat(self) -> None:
        """A heartbeat record, stamped now."""
        self._send(self._config.topics.heartbeat_topic, *self._serializer.heartbeat(_now_us() // 1000))

    def notification(self, notification: Notification) -> None:
        """``notification`` as a record of :attr:`notification_topic` (nothing when that is None)."""
        if self.notification_topic is not None:
            self._send(self.notification_topic, *self._serializer.notification(notification.id,
                                                                               notification.payload()))

    def record(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        """A record the source rendered itself (schema change records), in the current group."""
        self._send(topic, key, value)

    def _send(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        group = self._checkpoint.current()
        if self._sink.send(topic, key, value, group.on_delivery):
            group.pending += 1
