"""The streaming hot path gives exactly what the general path gives.

* ``PostgresLogReader.poll`` decodes Insert/Update/Delete of captured tables straight into rows
  (generated tuple readers, no intermediate message): its items must equal those of the general
  path (``decode_message`` → ``_handle``), for the real pgoutput messages in ``data/`` and under
  options that change what is emitted; malformed input must fail with the general path's error.
* ``EnvelopeSerializer.serialize_streamed`` (spliced fragments, source block cached per
  transaction) must return the bytes of ``serialize_key`` + ``serialize_value``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from signaller.config import SignallerConfig, config_from_mapping
from signaller.errors import DecodeError
from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes
from signaller.sources.postgres.reader import Change, Item, PostgresLogReader, TxBegin
from signaller.sources.postgres.relations import ResolvedType
from signaller.wire.envelope import EnvelopeSerializer
from signaller.wire.records import transaction_block
from tests.unit.test_relations import USER_TYPES

pytestmark = pytest.mark.unit

REAL_MESSAGES = Path(__file__).parent / "data" / "pgoutput_real_messages.json"
BASE = {
    "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
    "database.hostname": "localhost",
    "database.user": "u",
    "database.dbname": "shop",
    "topic.prefix": "pg1",
}
OPTIONS: dict[str, dict[str, str]] = {
    "defaults": {},
    "every operation": {"skipped.operations": "none"},
    "inserts skipped": {"skipped.operations": "c,t"},
    "updates and deletes skipped": {"skipped.operations": "u,d"},
    "columns excluded, other modes": {
        "column.exclude.list": r"public\.cap_types\.(t|big|i2)",
        "decimal.handling.mode": "string",
        "binary.handling.mode": "hex",
        "time.precision.mode": "connect",
        "interval.handling.mode": "string",
        "include.unknown.datatypes": "true",
    },
    "custom key": {"message.key.columns": r"public\.cap_types:i4,id"},
}


class FakeCatalog:
    """What the reader asks the catalog, answered for the tables of the captured messages."""

    def resolve_type(self, type_oid: int) -> ResolvedType:
        return USER_TYPES[type_oid]

    def not_null_columns(self, namespace: str, table: str) -> set[str]:
        return {"id", "i4"} if table == "cap_types" else {"a"}

    def primary_key_columns(self, namespace: str, table: str) -> tuple[str, ...]:
        return {"cap_types": ("id",), "cap_full": ("a",)}.get(table, ())

    def column_defaults(self, namespace: str, table: str) -> dict[str, str]:
        # Defaults make JsonConverter write them for nulls: both paths must agree on that too.
        return {"vc": "dflt", "f8": "1.5", "d": "1970-01-01"} if table == "cap_types" else {}


class Message:
    def __init__(self, payload: bytes, lsn: int) -> None:
        self.payload, self.data_start = payload, lsn


class FakeCursor:
    """Hands out messages like ``ReplicationCursor.read_message``; None when exhausted."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = list(messages)
        self.wal_end = 0
        self._r, self._w = os.pipe()
        os.write(self._w, b"x")  # always readable: select() returns at once

    def read_message(self) -> Message | None:
        return self.messages.pop(0) if self.messages else None

    def fileno(self) -> int:
        return self._r

    def close(self) -> None:
        os.close(self._r)
        os.close(self._w)


def real_messages() -> list[Message]:
    """The non-streamed messages in capture order, wrapped in one transaction."""
    doc = json.loads(REAL_MESSAGES.read_text())
    by_name = {m["name"]: m for m in doc["messages"]}
    names = [
        "begin_with_origin", "type_enum", "type_enum_array", "type_domain", "relation_cap_types",
        "insert_all_types", "insert_nulls", "update_unchanged_toast", "update_key_change", "delete_key",
        "relation_full", "update_full", "delete_full", "relation_nokey", "truncate", "message_transactional",
        "relation_after_add_column", "relation_after_alter_type", "commit_with_origin",
    ]  # fmt: skip
    out = []
    for position, name in enumerate(names):
        out.append(Message(bytes.fromhex(by_name[name]["hex"]), 0x153E000 + position * 8))
    return out


def make_reader(config: SignallerConfig) -> PostgresLogReader:
    return PostgresLogReader(config, FakeCatalog())  # type: ignore[arg-type]


def fast_items(config: SignallerConfig, messages: list[Message]) -> tuple[list[Item], int]:
    """Items from ``poll`` (the hot path), and how many messages the hot path decoded itself."""
    reader = make_reader(config)
    handled = 0
    handle_row = reader._handle_row

    def counting(data: bytes, lsn: int, out: list[Item]) -> bool:
        nonlocal handled
        taken = handle_row(data, lsn, out)
        handled += taken
        return taken

    reader._handle_row = counting  # type: ignore[method-assign]
    cursor = FakeCursor(messages)
    reader._cursor = cursor
    items: list[Item] = []
    try:
        while cursor.messages:
            items += reader.poll(1000, 0)
    finally:
        cursor.close()
    return items, handled


def general_items(config: SignallerConfig, messages: list[Message]) -> list[Item]:
    reader = make_reader(config)
    items: list[Item] = []
    for message in messages:
        reader._handle(message.payload, message.data_start, items)
    return items


def described(item: Item) -> Any:
    """An item as comparable data: change events with row key order, plans by table and slots."""
    if isinstance(item, Change):
        rows = [None if row is None else list(row) for row in (item.event.before, item.event.after)]
        slots = [(slot[0], slot[1]) for slot in item.plan.slots]
        return ("change", item.event, rows, item.plan.table_id, item.plan.schema, slots, item.plan.key_names)
    return item


@pytest.mark.parametrize("name", list(OPTIONS))
def test_poll_yields_the_general_paths_items(name: str) -> None:
    config = config_from_mapping({**BASE, **OPTIONS[name]})
    fast, handled = fast_items(config, real_messages())
    general = general_items(config, real_messages())
    assert [described(i) for i in fast] == [described(i) for i in general]
    assert any(isinstance(i, Change) for i in fast)
    if name == "defaults":
        assert handled == 7  # every row message: inserts, updates (key change, TOAST, FULL), deletes
        ops = [i.op.value for i in fast if isinstance(i, Change)]
        assert ops == ["c", "c", "u", "d", "c", "d", "u", "d"]  # the key change is a delete and a create


def test_change_built_from_an_event_keeps_the_event() -> None:
    config = config_from_mapping(BASE)
    items = general_items(config, real_messages())
    streamed = next(i for i in items if isinstance(i, Change))
    rebuilt = Change.from_event(streamed.event, streamed.plan)
    assert rebuilt == streamed and rebuilt.event is streamed.event and rebuilt.tx is None
    assert (rebuilt.op, rebuilt.before, rebuilt.after, rebuilt.lsn, rebuilt.table) == (
        streamed.op, streamed.before, streamed.after, streamed.lsn, streamed.table)


def test_binary_values_take_the_general_path() -> None:
    """pgoutput's binary format (never requested) is left to the general path, which rejects it."""
    config = config_from_mapping(BASE)
    doc = json.loads(REAL_MESSAGES.read_text())
    binary = bytes.fromhex(next(m["hex"] for m in doc["messages"] if m["name"] == "insert_binary"))
    messages = real_messages()
    messages.insert(-1, Message(binary, 0x153F000))
    with pytest.raises(DecodeError) as general:
        general_items(config, messages)
    with pytest.raises(DecodeError) as fast:
        fast_items(config, messages)
    assert str(fast.value) == str(general.value)


def corrupted(messages: list[Message], name: str, change: Any) -> list[Message]:
    doc = json.loads(REAL_MESSAGES.read_text())
    target = bytes.fromhex(next(m["hex"] for m in doc["messages"] if m["name"] == name))
    return [Message(change(m.payload), m.data_start) if m.payload == target else m for m in messages]


@pytest.mark.parametrize(
    ("what", "name", "change"),
    [
        ("truncated insert", "insert_all_types", lambda p: p[:-7]),
        ("truncated update", "update_key_change", lambda p: p[: len(p) // 2]),
        ("bad integer text", "insert_nulls", lambda p: p.replace(b"t\x00\x00\x00\x012", b"t\x00\x00\x00\x01x", 1)),
        ("invalid UTF-8", "insert_all_types", lambda p: p.replace(b"hello", b"hel\xfflo", 1)),
    ],
)
def test_malformed_rows_fail_as_in_the_general_path(what: str, name: str, change: Any) -> None:
    config = config_from_mapping(BASE)
    messages = corrupted(real_messages(), name, change)
    with pytest.raises(DecodeError) as general:
        general_items(config, messages)
    with pytest.raises(DecodeError) as fast:
        fast_items(config, messages)
    assert str(fast.value) == str(general.value), what


# ---------------------------------------------------------------------------------------------
# serialize_streamed
# ---------------------------------------------------------------------------------------------


def serializers(changes: list[Change], **options: Any) -> Iterator[tuple[Change, EnvelopeSerializer]]:
    built: dict[int, EnvelopeSerializer] = {}
    for change in changes:
        plan = change.plan
        if id(plan) not in built:
            built[id(plan)] = EnvelopeSerializer(plan.schema, plan.codecs, topic_prefix="pg1", database="shop",
                                                 **options)
        yield change, built[id(plan)]


def expected(serializer: EnvelopeSerializer, event: ChangeEvent, now: int,
             block: Mapping[str, Any] | None) -> tuple[bytes | None, bytes]:
    row = event.after if event.after is not None else event.before
    return serializer.serialize_key(row), serializer.serialize_value(event, ts_us_now=now, transaction=block)


@pytest.mark.parametrize("options", [{}, {"schemas_enable": False}, {"key_schemas_enable": False}])
@pytest.mark.parametrize("with_block", [False, True])
def test_serialize_streamed_matches_key_and_value(options: dict[str, Any], with_block: bool) -> None:
    config = config_from_mapping({**BASE, "skipped.operations": "none"})
    changes = [i for i in general_items(config, real_messages()) if isinstance(i, Change)]
    assert {c.op for c in changes} == {Op.CREATE, Op.UPDATE, Op.DELETE, Op.TRUNCATE}
    for number, (change, serializer) in enumerate(serializers(changes, **options)):
        assert change.tx is not None
        assert tuple(slot[1] for slot in change.plan.slots) == serializer.value_names
        now = 1_787_392_800_201_456 + number
        block = transaction_block(f"{change.tx.xid}:{change.tx.commit_lsn}", number + 1, 1) if with_block else None
        got = serializer.serialize_streamed(change.op, change.before, change.after, change.lsn or 0, change.tx,
                                            ts_us_now=now, transaction=block)
        assert got == expected(serializer, change.event, now, block)


def test_serialize_streamed_renders_each_transaction_and_operation() -> None:
    table = TableSchema(TableId("public", "t%d"), (Column("id", 23, "int4", optional=False, is_key=True),
                                                   Column("s", 25, "text")))
    serializer = EnvelopeSerializer.for_table(table, TypeModes(), topic_prefix="p%s", database="d%%b")
    row = {"id": 7, "s": "a\x1fb %d"}
    for xid, last in ((10, None), (10, None), (11, 500), (12, 600)):
        tx = TxBegin(xid, 1000 + xid, 1_700_000_000_000_000 + xid, last)
        for op, before, after in ((Op.CREATE, None, row), (Op.UPDATE, row, row), (Op.DELETE, row, None),
                                  (Op.TRUNCATE, None, None)):
            event = ChangeEvent(op, table.table_id, before, after, 900 + xid, tx.commit_lsn, last, xid,
                                tx.commit_ts_us)
            got = serializer.serialize_streamed(op, before, after, 900 + xid, tx, ts_us_now=5)
            assert got == expected(serializer, event, 5, None)


def test_an_unchanged_toasted_value_is_taken_from_a_full_old_row() -> None:
    from signaller.sources.postgres.pgoutput import UNCHANGED_TOAST
    from signaller.sources.postgres.reader import _with_old_toast

    new = ["1", UNCHANGED_TOAST, None]
    # REPLICA IDENTITY FULL: the whole old row is there, so Debezium writes the old value
    assert _with_old_toast(new, ["1", "big value", "x"]) == ["1", "big value", None]
    # no complete old row: the placeholder stands in
    assert _with_old_toast(new, None) is new
