"""One road for events (issue 12 goal 3): ``EnvelopeSerializer.serialize`` (the hot path behind
it, ``wire._fast``) gives streamed changes and snapshot READs the bytes of the reference rendering
(``serialize_key`` + ``serialize_value``), for every column type of the captured test tables and
under the converter and type-mode options that change them; and ``EventDispatcher`` sends every
kind of record (streamed, READ, tombstone, heartbeat, transaction BEGIN/END, notification) with
those bytes, in the checkpoint's current group.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from signaller.config import config_from_mapping
from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.runtime.capture import CaptureStats
from signaller.runtime.checkpoint import Checkpoint
from signaller.runtime.dispatch import EventDispatcher
from signaller.snapshot import notifications as notes
from signaller.sources.postgres.codecs import TypeModes
from signaller.sources.postgres.reader import Change, RelationPlan, TxBegin, TxCommit, make_plan, row_from_tuple
from signaller.sources.postgres.source import postgres_transaction_id
from signaller.wire.envelope import EnvelopeSerializer
from signaller.wire.records import (
    heartbeat_key,
    notification_key,
    notification_value,
    transaction_begin_value,
    transaction_block,
    transaction_end_value,
    transaction_key,
)
from tests.unit.test_streaming_fast_path import BASE, OPTIONS, general_items, real_messages

pytestmark = pytest.mark.unit

NOW = 1_787_392_800_201_456
SNAPSHOT_FLAGS = ("incremental", "true", "first", "first_in_data_collection", "last_in_data_collection", "last",
                  "false", None)
CONVERTERS: list[dict[str, Any]] = [{}, {"schemas_enable": False}, {"key_schemas_enable": False}]


def changes_of(option: str) -> list[Change]:
    config = config_from_mapping({**BASE, "skipped.operations": "none", **OPTIONS[option]})
    return [i for i in general_items(config, real_messages()) if isinstance(i, Change)]


def serializer_of(plan: RelationPlan, **converter: Any) -> EnvelopeSerializer:
    return EnvelopeSerializer(plan.schema, plan.codecs, topic_prefix="pg1", database="shop", **converter)


def reference(serializer: EnvelopeSerializer, event: ChangeEvent, block: Mapping[str, Any] | None = None,
              ) -> tuple[bytes | None, bytes]:
    row = event.after if event.after is not None else event.before
    return serializer.serialize_key(row), serializer.serialize_value(event, ts_us_now=NOW, transaction=block)


def reads_of(change: Change) -> list[ChangeEvent]:
    """READ events of the change's row image, as both snapshot kinds emit them."""
    row = change.after if change.after is not None else change.before
    if row is None:
        return []
    table = change.plan.table_id
    out = [ChangeEvent(Op.READ, table, None, row, 0x1530000, None, 0x152F000, None, NOW - 5, "incremental")]
    out += [ChangeEvent(Op.READ, table, None, row, None, None, None, None, NOW - 5, flag) for flag in SNAPSHOT_FLAGS]
    return out


@pytest.mark.parametrize("converter", CONVERTERS)
@pytest.mark.parametrize("option", list(OPTIONS))
def test_streamed_and_read_rows_render_as_the_reference(option: str, converter: dict[str, Any]) -> None:
    built: dict[int, EnvelopeSerializer] = {}
    compared = 0
    for number, change in enumerate(changes_of(option)):
        plan = change.plan
        serializer = built.setdefault(id(plan), serializer_of(plan, **converter))
        assert tuple(slot[1] for slot in plan.slots) == serializer.value_names
        assert change.tx is not None
        block = transaction_block(f"{change.tx.xid}:{change.lsn}", number + 1, 1) if number % 2 else None
        assert serializer.serialize(change, ts_us_now=NOW, transaction=block) == reference(
            serializer, change.event, block)
        for event in reads_of(change):
            read = Change.from_event(event, plan)
            assert serializer.serialize(read, ts_us_now=NOW) == reference(serializer, event)
            compared += 1
    assert compared > 20


ODD = TableSchema(TableId("public", "odd%d"), (
    Column("id", 23, "int4", optional=False, is_key=True),
    Column("label", 25, "text", default_text="n/a"),
    Column("qty", 23, "int4", default_text="42"),
    Column("price", 1700, "numeric", type_modifier=(10 << 16 | 2) + 4, default_text="1.50"),
    Column("f8", 701, "float8", default_text="2.5"),
    Column("f4", 700, "float4"),
    Column("raw", 17, "bytea"),
    Column("plain", 25, "text"),
))
ODD_ROWS = [  # text values as PostgreSQL sends them, in column order
    ("1", None, None, None, None, None, None, None),
    ("2", "a\x1fb %d \u00e9\u2028 \"q\" \\u001f", "7", "12.34", "1e-07", "3.4028235e+38", "\\x00ff", "%s"),
    ("3", "x", "-1", "-0.5", "1e+16", "NaN", "\\x", "Infinity"),
]


def test_rows_with_defaults_odd_text_and_java_numbers_render_as_the_reference() -> None:
    """Null values of defaulted columns, control characters, ``%`` and non-ASCII in values and
    names (the templates are ``bytes % args``), Java-formatted floats: READs and other events."""
    config = config_from_mapping(BASE)
    names = tuple(c.name for c in ODD.columns)
    plan = make_plan(ODD, names, config.capture, TypeModes())
    serializer = EnvelopeSerializer(plan.schema, plan.codecs, topic_prefix="p%s", database="d%%b")
    assert serializer.value_names == names
    for values in ODD_ROWS:
        row = row_from_tuple(plan, values)
        for op, before, after in ((Op.READ, None, row), (Op.CREATE, None, row), (Op.DELETE, row, None),
                                  (Op.UPDATE, row, row), (Op.TRUNCATE, None, None)):
            for flag in SNAPSHOT_FLAGS:
                event = ChangeEvent(op, ODD.table_id, before, after, 900, 1000, 800, 7, 1_700_000_000_000_000, flag)
                assert serializer.serialize(Change.from_event(event, plan), ts_us_now=NOW) == reference(
                    serializer, event)
            if op is not Op.READ:
                tx = TxBegin(7, 1000, 1_700_000_000_000_000, 800)
                streamed = Change.streamed(plan, op, before, after, 900, tx)
                assert serializer.serialize(streamed, ts_us_now=NOW) == reference(serializer, streamed.event)


# ---------------------------------------------------------------------------------------------
# EventDispatcher
# ---------------------------------------------------------------------------------------------


class RecordingSink:
    """Records what is sent; ``refuse`` leaves records out as the sink does under warn/skip."""

    def __init__(self) -> None:
        self.records: list[tuple[str, bytes | None, bytes | None]] = []
        self.callbacks: list[Any] = []
        self.refuse = False

    def send(self, topic: str, key: bytes | None, value: bytes | None, on_delivery: Any) -> bool:
        if self.refuse:
            return False
        self.records.append((topic, key, value))
        self.callbacks.append(on_delivery)
        return True

    def send_many(self, topic: str, records: Any, on_delivery: Any) -> int:
        return sum(self.send(topic, key, value, on_delivery) for key, value in records)


def dispatcher_for(**properties: str) -> tuple[EventDispatcher, RecordingSink, Checkpoint, CaptureStats]:
    config = config_from_mapping({**BASE, "skipped.operations": "none", **properties})
    sink, checkpoint, stats = RecordingSink(), Checkpoint(), CaptureStats()
    dispatcher = EventDispatcher(config, sink, checkpoint, stats,  # type: ignore[arg-type]
                                 transaction_id=postgres_transaction_id, count_by_table=True)
    return dispatcher, sink, checkpoint, stats


def test_dispatcher_sends_streamed_reads_and_tombstones_with_the_serializers_bytes() -> None:
    dispatcher, sink, checkpoint, stats = dispatcher_for()
    changes = changes_of("every operation")
    checkpoint.begin()
    expected: list[tuple[str, bytes | None, bytes | None]] = []
    for change in changes:
        dispatcher.streamed(change)
        serializer = serializer_of(change.plan)
        key, value = sink.records[len(expected)][1:]
        assert (key, value) == (serializer.serialize_key(change.event.after or change.event.before),
                                sink.records[len(expected)][2])
        expected.append((f"pg1.{change.table}", key, value))
        if change.op is Op.DELETE:
            expected.append((f"pg1.{change.table}", key, None))  # tombstones.on.delete defaults to true
    read = next(r for c in changes for r in reads_of(c))
    dispatcher.read(Change.from_event(read, changes[0].plan))
    key, value = sink.records[-1][1:]
    assert value is not None and b'"op":"r"' in value and b'"transaction":null' in value
    assert (key, value[-40:]) == (serializer_of(changes[0].plan).serialize_key(read.after), value[-40:])
    assert sink.records[:-1] == expected
    assert stats.events == len(changes) + 1
    assert checkpoint.in_flight() == len(sink.records)
    counts = dispatcher.take_event_counts()
    assert sum(counts.values()) == len(changes) + 1 and dispatcher.take_event_counts() == {}


def test_dispatcher_renders_transaction_metadata_heartbeats_and_notifications() -> None:
    dispatcher, sink, checkpoint, _ = dispatcher_for(**{
        "provide.transaction.metadata": "true", "notification.enabled.channels": "sink",
        "notification.sink.topic.name": "notes"})
    changes = [c for c in changes_of("defaults") if c.op is not Op.TRUNCATE][:3]
    tx = changes[0].tx
    assert tx is not None
    checkpoint.begin()
    dispatcher.transaction_begin(tx)
    for change in changes:
        dispatcher.streamed(change)
    dispatcher.transaction_end(TxCommit(tx.xid, tx.commit_lsn, tx.commit_lsn + 8, tx.commit_ts_us))
    dispatcher.heartbeat()
    note = notes.make("STARTED", "n-1", "pg1")
    dispatcher.notification(note)
    topics = [topic for topic, _, _ in sink.records]
    assert topics[0] == topics[-3] == "pg1.transaction" and topics[-2] == "__debezium-heartbeat.pg1"
    begin_id = f"{tx.xid}:{tx.begin_lsn}"
    assert sink.records[0][1:] == (transaction_key(begin_id),
                                   transaction_begin_value(begin_id, tx.commit_ts_us // 1000))
    end_id = f"{tx.xid}:{tx.commit_lsn + 8}"
    tables = sorted({str(c.table) for c in changes})
    per_table = [(t, sum(1 for c in changes if str(c.table) == t)) for t in tables]
    assert sink.records[-3][1:] == (transaction_key(end_id), transaction_end_value(
        end_id, tx.commit_ts_us // 1000, len(changes), per_table))
    assert sink.records[-2][1] == heartbeat_key("pg1")
    assert sink.records[-1] == ("notes", notification_key("n-1"), notification_value(note.payload()))
    first = sink.records[1][2]
    assert first is not None and f'"transaction":{{"id":"{tx.xid}:{changes[0].lsn}","total_order":1'.encode() in first


def test_dispatcher_counts_only_produced_records_in_the_open_group() -> None:
    dispatcher, sink, checkpoint, _ = dispatcher_for(**{"notification.enabled.channels": "sink",
                                                        "notification.sink.topic.name": "notes"})
    sink.refuse = True
    dispatcher.heartbeat()  # left out (warn/skip): it never holds back the position
    assert checkpoint.has_open_group() and checkpoint.in_flight() == 0
    checkpoint.close_group(42)
    assert checkpoint.committable().position == 42
    sink.refuse = False
    dispatcher.notification(notes.make("STARTED", "n-2", "pg1"))
    checkpoint.close_group(50)
    assert checkpoint.committable().position == 42
    sink.callbacks[0](None, None)
    assert checkpoint.committable().position == 50


def test_notifications_are_not_sent_without_the_sink_channel() -> None:
    dispatcher, sink, _, _ = dispatcher_for()
    assert dispatcher.notification_topic is None
    dispatcher.notification(notes.make("STARTED", "n-3", "pg1"))
    assert sink.records == []
