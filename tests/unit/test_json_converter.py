"""JsonConverter rendering of Debezium PostgreSQL records.

Expected documents come from /work/shared/reference/debezium-protocol.md section 7 (envelope
v2, source block, JsonConverter member order, the constructed pg1.public.orders example) and
Debezium's SchemaFactory (heartbeat, transaction metadata schemas), HeartbeatImpl,
TransactionStructMaker, SourceInfo.sequence() (Jackson list rendering) and Envelope
(truncate carries no before/after).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from signaller.errors import TerminalSinkError
from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.sources.postgres.source import postgres_transaction_id
from signaller.wire.envelope import DEBEZIUM_VERSION, ChangeEventSerializer, EnvelopeSerializer
from signaller.wire.jackson import dumps
from signaller.wire.numbers import JavaDouble
from signaller.wire.records import (
    heartbeat_key,
    heartbeat_value,
    transaction_begin_value,
    transaction_block,
    transaction_end_value,
    transaction_key,
)

pytestmark = pytest.mark.unit

ORDERS = TableId("public", "orders")
ORDERS_SCHEMA = TableSchema(
    ORDERS,
    (
        Column("id", 23, "int4", optional=False, is_key=True),
        Column("note", 25, "text"),
    ),
)
NOW_US = 1787392800201456
COMMIT_US = 1787392800100123


def serializer(table: TableSchema = ORDERS_SCHEMA, **kwargs: Any) -> EnvelopeSerializer:
    return EnvelopeSerializer.for_table(table, TypeModes(), topic_prefix="pg1", database="shop", **kwargs)


def event(op: Op, before: dict[str, Any] | None, after: dict[str, Any] | None, **kwargs: Any) -> ChangeEvent:
    fields: dict[str, Any] = {
        "lsn": 24023128,
        "commit_lsn": 24023200,
        "last_commit_lsn": 24023000,
        "tx_id": 571,
        "commit_ts_us": COMMIT_US,
    }
    fields.update(kwargs)
    return ChangeEvent(op, ORDERS, before, after, **fields)


SNAPSHOT_ALLOWED = "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
ROW_FIELDS = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "note"},
]

# Reference 7.5, verbatim apart from the un-shortened field lists.
EXPECTED_ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {
            "type": "struct",
            "fields": ROW_FIELDS,
            "optional": True,
            "name": "pg1.public.orders.Value",
            "field": "before",
        },
        {
            "type": "struct",
            "fields": ROW_FIELDS,
            "optional": True,
            "name": "pg1.public.orders.Value",
            "field": "after",
        },
        {
            "type": "struct",
            "fields": [
                {"type": "string", "optional": False, "field": "version"},
                {"type": "string", "optional": False, "field": "connector"},
                {"type": "string", "optional": False, "field": "name"},
                {"type": "int64", "optional": False, "field": "ts_ms"},
                {
                    "type": "string",
                    "optional": True,
                    "name": "io.debezium.data.Enum",
                    "version": 1,
                    "parameters": {"allowed": SNAPSHOT_ALLOWED},
                    "default": "false",
                    "field": "snapshot",
                },
                {"type": "string", "optional": False, "field": "db"},
                {"type": "string", "optional": True, "field": "sequence"},
                {"type": "int64", "optional": True, "field": "ts_us"},
                {"type": "int64", "optional": True, "field": "ts_ns"},
                {"type": "string", "optional": False, "field": "schema"},
                {"type": "string", "optional": False, "field": "table"},
                {"type": "int64", "optional": True, "field": "txId"},
                {"type": "int64", "optional": True, "field": "lsn"},
                {"type": "int64", "optional": True, "field": "xmin"},
                {"type": "string", "optional": True, "field": "origin"},
                {"type": "int64", "optional": True, "field": "origin_lsn"},
            ],
            "optional": False,
            "name": "io.debezium.connector.postgresql.Source",
            "version": 1,
            "field": "source",
        },
        {
            "type": "struct",
            "fields": [
                {"type": "string", "optional": False, "field": "id"},
                {"type": "int64", "optional": False, "field": "total_order"},
                {"type": "int64", "optional": False, "field": "data_collection_order"},
            ],
            "optional": True,
            "name": "event.block",
            "version": 1,
            "field": "transaction",
        },
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
        {"type": "int64", "optional": True, "field": "ts_us"},
        {"type": "int64", "optional": True, "field": "ts_ns"},
    ],
    "optional": False,
    "name": "pg1.public.orders.Envelope",
    "version": 2,
}


def expected_source(**overrides: Any) -> dict[str, Any]:
    source: dict[str, Any] = {
        "version": DEBEZIUM_VERSION,
        "connector": "postgresql",
        "name": "pg1",
        "ts_ms": COMMIT_US // 1000,
        "snapshot": "false",  # absent -> JsonConverter writes the schema default
        "db": "shop",
        "sequence": '["24023000","24023128"]',
        "ts_us": COMMIT_US,
        "ts_ns": COMMIT_US * 1000,
        "schema": "public",
        "table": "orders",
        "txId": 571,
        "lsn": 24023128,
        "xmin": None,
        "origin": None,
        "origin_lsn": None,
    }
    source.update(overrides)
    return source


def expected_payload(op: str, before: Any, after: Any, source: dict[str, Any]) -> dict[str, Any]:
    return {
        "before": before,
        "after": after,
        "source": source,
        "transaction": None,
        "op": op,
        "ts_ms": NOW_US // 1000,
        "ts_us": NOW_US,
        "ts_ns": NOW_US * 1000,
    }


def assert_same_order(actual: Any, expected: Any) -> None:
    """Equal values and, for every object, the same member order."""
    assert actual == expected
    if isinstance(expected, dict):
        assert list(actual) == list(expected)
        for key in expected:
            assert_same_order(actual[key], expected[key])
    elif isinstance(expected, list):
        for left, right in zip(actual, expected, strict=True):
            assert_same_order(left, right)


def test_serializer_satisfies_protocol() -> None:
    instance: ChangeEventSerializer = serializer()
    assert instance.serialize_key({"id": 1}) is not None


def test_incremental_read_matches_reference_example() -> None:
    value = serializer().serialize_value(
        event(Op.READ, None, {"id": 17, "note": "hello"}, snapshot="incremental", tx_id=None),
        ts_us_now=NOW_US,
    )
    document = json.loads(value)
    assert list(document) == ["schema", "payload"]
    assert_same_order(document["schema"], EXPECTED_ENVELOPE_SCHEMA)
    source = expected_source(
        ts_ms=NOW_US // 1000, ts_us=NOW_US, ts_ns=NOW_US * 1000, snapshot="incremental", txId=None, lsn=None
    )
    assert_same_order(document["payload"], expected_payload("r", None, {"id": 17, "note": "hello"}, source))


def test_insert() -> None:
    value = serializer().serialize_value(event(Op.CREATE, None, {"note": "x", "id": 1}), ts_us_now=NOW_US)
    document = json.loads(value)
    assert_same_order(
        document["payload"], expected_payload("c", None, {"id": 1, "note": "x"}, expected_source())
    )


def test_update_with_old_row() -> None:
    value = serializer().serialize_value(
        event(Op.UPDATE, {"id": 1, "note": "x"}, {"id": 1, "note": "y"}), ts_us_now=NOW_US
    )
    expected = expected_payload("u", {"id": 1, "note": "x"}, {"id": 1, "note": "y"}, expected_source())
    assert_same_order(json.loads(value)["payload"], expected)


def test_delete_carries_before() -> None:
    value = serializer().serialize_value(
        event(Op.DELETE, {"id": 1, "note": None}, None, last_commit_lsn=None), ts_us_now=NOW_US
    )
    expected = expected_payload(
        "d", {"id": 1, "note": None}, None, expected_source(sequence='[null,"24023128"]')
    )
    assert_same_order(json.loads(value)["payload"], expected)


def test_truncate_has_no_row_images() -> None:
    value = serializer().serialize_value(event(Op.TRUNCATE, {"id": 1}, {"id": 1}), ts_us_now=NOW_US)
    payload = json.loads(value)["payload"]
    assert payload["before"] is None
    assert payload["after"] is None
    assert payload["op"] == "t"


def test_transaction_block() -> None:
    tx_id = postgres_transaction_id(571, 24023128)
    assert tx_id == "571:24023128"
    value = serializer().serialize_value(
        event(Op.CREATE, None, {"id": 1, "note": None}),
        ts_us_now=NOW_US,
        transaction=transaction_block(tx_id, 3, 2),
    )
    block = json.loads(value)["payload"]["transaction"]
    assert_same_order(block, {"id": "571:24023128", "total_order": 3, "data_collection_order": 2})


def test_key_record() -> None:
    key = serializer().serialize_key({"note": "ignored", "id": 17})
    # Reference 7.5 "The matching key is"
    assert key == (
        b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
        b'"optional":false,"name":"pg1.public.orders.Key"},"payload":{"id":17}}'
    )


def test_keyless_table_has_null_key() -> None:
    keyless = TableSchema(TableId("public", "log"), (Column("line", 25, "text"),))
    instance = serializer(keyless)
    assert instance.key_schema is None
    assert instance.serialize_key({"line": "a"}) is None


def test_schemas_disabled() -> None:
    instance = serializer(schemas_enable=False)
    value = instance.serialize_value(event(Op.CREATE, None, {"id": 1, "note": "x"}), ts_us_now=NOW_US)
    assert_same_order(
        json.loads(value), expected_payload("c", None, {"id": 1, "note": "x"}, expected_source())
    )
    assert instance.serialize_key({"id": 1}) == b'{"id":1}'


def test_key_converter_schemas_independent() -> None:
    instance = serializer(schemas_enable=True, key_schemas_enable=False)
    assert instance.serialize_key({"id": 1}) == b'{"id":1}'
    assert json.loads(instance.serialize_value(event(Op.CREATE, None, {"id": 1}), ts_us_now=NOW_US))["schema"]


def test_compact_bytes_and_exact_prefix() -> None:
    value = serializer().serialize_value(event(Op.CREATE, None, {"id": 1, "note": "x"}), ts_us_now=NOW_US)
    assert value.startswith(
        b'{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32"'
    )
    assert b'"payload":{"before":null,"after":{"id":1,"note":"x"},"source":{"version":' in value
    assert b" " not in value.replace(b'"note":"x"', b"")


def test_columns_left_out_by_debezium_are_dropped() -> None:
    table = TableSchema(
        ORDERS, (Column("id", 23, "int4", optional=False, is_key=True), Column("q", 3615, "tsquery"))
    )
    instance = serializer(table)
    assert [f["field"] for f in instance.value_schema["fields"]] == ["id"]
    value = instance.serialize_value(event(Op.CREATE, None, {"id": 1, "q": "'a'"}), ts_us_now=NOW_US)
    assert json.loads(value)["payload"]["after"] == {"id": 1}


def test_java_number_and_escape_rendering() -> None:
    table = TableSchema(
        ORDERS, (Column("id", 23, "int4", is_key=True), Column("x", 701, "float8"), Column("s", 25, "text"))
    )
    instance = serializer(table)
    x = codec_for(table.columns[1], TypeModes()).convert("1e+16")
    value = instance.serialize_value(
        event(Op.CREATE, None, {"id": 1, "x": x, "s": "a\x1fb\\u001f"}), ts_us_now=NOW_US
    )
    # Jackson: Double.toString, upper-case \u escapes; a literal backslash-u stays untouched
    assert b'"x":1.0E16,"s":"a\\u001Fb\\\\u001f"' in value
    assert dumps([JavaDouble(float("nan")), JavaDouble(1e-9)]) == b'["NaN",1.0E-9]'


def test_rejects_foreign_and_message_events() -> None:
    instance = serializer()
    with pytest.raises(TerminalSinkError, match="given to the serializer"):
        instance.serialize_value(
            ChangeEvent(Op.CREATE, TableId("public", "other"), None, {}, None, None, None, None, 0),
            ts_us_now=0,
        )
    with pytest.raises(TerminalSinkError, match="op 'm'"):
        instance.serialize_value(event(Op.MESSAGE, None, None), ts_us_now=0)


def test_tombstone_value_is_null() -> None:
    assert serializer().tombstone_value() is None  # type: ignore[func-returns-value]


def test_heartbeat_records() -> None:
    # SchemaFactory.heartbeatKeySchema / heartbeatValueSchema (version 1), HeartbeatImpl
    assert heartbeat_key("pg1") == (
        b'{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],'
        b'"optional":false,"name":"io.debezium.connector.common.ServerNameKey","version":1},'
        b'"payload":{"serverName":"pg1"}}'
    )
    assert heartbeat_value(1787392800201) == (
        b'{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],'
        b'"optional":false,"name":"io.debezium.connector.common.Heartbeat","version":1},'
        b'"payload":{"ts_ms":1787392800201}}'
    )
    assert heartbeat_key("pg1", schemas_enable=False) == b'{"serverName":"pg1"}'
    assert heartbeat_value(5, schemas_enable=False) == b'{"ts_ms":5}'


EXPECTED_TX_VALUE_SCHEMA: dict[str, Any] = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "status"},
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": True, "field": "event_count"},
        {
            "type": "array",
            "items": {
                "type": "struct",
                "fields": [
                    {"type": "string", "optional": False, "field": "data_collection"},
                    {"type": "int64", "optional": False, "field": "event_count"},
                ],
                "optional": True,
                "name": "event.collection",
                "version": 1,
            },
            "optional": True,
            "field": "data_collections",
        },
        {"type": "int64", "optional": False, "field": "ts_ms"},
    ],
    "optional": False,
    "name": "io.debezium.connector.common.TransactionMetadataValue",
    "version": 1,
}


def test_transaction_metadata_records() -> None:
    key = json.loads(transaction_key("571:24023128"))
    assert_same_order(
        key["schema"],
        {
            "type": "struct",
            "fields": [{"type": "string", "optional": False, "field": "id"}],
            "optional": False,
            "name": "io.debezium.connector.common.TransactionMetadataKey",
            "version": 1,
        },
    )
    assert key["payload"] == {"id": "571:24023128"}
    begin = json.loads(transaction_begin_value("571:24023128", 1787392800100))
    assert_same_order(begin["schema"], EXPECTED_TX_VALUE_SCHEMA)
    assert_same_order(
        begin["payload"],
        {
            "status": "BEGIN",
            "id": "571:24023128",
            "event_count": None,
            "data_collections": None,
            "ts_ms": 1787392800100,
        },
    )
    end = json.loads(
        transaction_end_value("571:24023128", 1787392800100, 3, [("public.orders", 2), ("public.items", 1)])
    )
    assert_same_order(
        end["payload"],
        {
            "status": "END",
            "id": "571:24023128",
            "event_count": 3,
            "data_collections": [
                {"data_collection": "public.orders", "event_count": 2},
                {"data_collection": "public.items", "event_count": 1},
            ],
            "ts_ms": 1787392800100,
        },
    )
    assert transaction_key("t", schemas_enable=False) == b'{"id":"t"}'
