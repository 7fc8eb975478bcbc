"""The Avro converter: Connect schemas as Confluent's AvroData maps them, and every record kind decoded.

Expected Avro schemas are written from AvroData's documented rules (``fromConnectSchema``: int8/int16 as
``int`` with ``connect.type``; ``connect.doc``/``connect.version``/``connect.parameters``/``connect.default``/
``connect.name`` in that order; Decimal as bytes with ``scale``, ``precision`` and the ``decimal`` logical
type; Kafka's Date/Time/Timestamp with ``date``/``time-millis``/``timestamp-millis``; Debezium's semantic
types with their ``connect.name`` only; optional = ``["null", T]``, or ``[T, "null"]`` with a default;
a named type met again written as a reference) and Java Avro's ``Schema.toString`` member order. Every
record is decoded with fastavro against the schema text it was registered with, and compared with the
payload the JsonConverter writes for the same event.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from schemas.generate import MODES, SAMPLES, _column
from signaller.errors import TerminalSinkError
from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.wire.avro import adjust_name, avro_schema, long_bytes, schema_text
from signaller.wire.avro_serializer import AvroRecordSerializer
from signaller.wire.connect import SOURCE_SCHEMA
from signaller.wire.envelope import EnvelopeSerializer

pytestmark = pytest.mark.unit

ORDERS = TableId("public", "orders")
NOW_US = 1787392800201456
COMMIT_US = 1787392800100123


def named(avro_type: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"type": avro_type, "connect.version": 1, "connect.name": name, **extra}


VSD = {"type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
       "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}],
       "connect.doc": "Variable scaled decimal", "connect.version": 1,
       "connect.name": "io.debezium.data.VariableScaleDecimal"}
POINT = {"type": "record", "name": "Point", "namespace": "io.debezium.data.geometry",
         "fields": [{"name": "x", "type": "double"}, {"name": "y", "type": "double"},
                    {"name": "wkb", "type": ["null", "bytes"], "default": None},
                    {"name": "srid", "type": ["null", "int"], "default": None}],
         "connect.doc": "Geometry (POINT)", "connect.version": 1, "connect.name": "io.debezium.data.geometry.Point"}
KAFKA = "org.apache.kafka.connect.data."
LINE = {"type": "record", "name": "Line", "namespace": "io.debezium.data.geometry",
        "fields": [{"name": "a", "type": "double"}, {"name": "b", "type": "double"}, {"name": "c", "type": "double"}],
        "connect.doc": "Geometry (LINE)", "connect.version": 1, "connect.name": "io.debezium.data.geometry.Line"}
GEOMETRY = {"type": "record", "name": "Geometry", "namespace": "io.debezium.data.geometry",
            "fields": [{"name": "wkb", "type": "bytes"}, {"name": "srid", "type": ["null", "int"], "default": None},
                       {"name": "extensions", "type": ["null", {"type": "map", "values": "string"}], "default": None}],
            "connect.doc": "Geometry", "connect.version": 2, "connect.name": "io.debezium.data.geometry.Geometry"}
GEOGRAPHY = {"type": "record", "name": "Geography", "namespace": "io.debezium.data.geometry",
             "fields": [{"name": "wkb", "type": "bytes"}, {"name": "srid", "type": ["null", "int"], "default": None}],
             "connect.doc": "Geography", "connect.version": 1, "connect.name": "io.debezium.data.geometry.Geography"}
CIRCLE = {"type": "record", "name": "Circle", "namespace": "io.debezium.data.geometry",
          # Java Avro writes a nested named type's namespace only when it differs from the enclosing one
          "fields": [{"name": "center", "type": {k: v for k, v in POINT.items() if k != "namespace"}},
                     {"name": "radius", "type": "double"}],
          "connect.doc": "Geometry (CIRCLE)", "connect.version": 1, "connect.name": "io.debezium.data.geometry.Circle"}

# (type, typmod, mode label) -> the Avro type of the (optional) column, from AvroData's rules
EXPECTED: dict[tuple[str, int, str], Any] = {
    ("int2", -1, "default"): {"type": "int", "connect.type": "int16"},
    ("int4", -1, "default"): "int",
    ("int8", -1, "default"): "long",
    ("numeric", (10 << 16 | 2) + 4, "default"): {
        "type": "bytes", "scale": 2, "precision": 10, "connect.version": 1,
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.name": KAFKA + "Decimal", "logicalType": "decimal"},
    ("numeric", (10 << 16 | 2) + 4, "decimal.handling.mode=string"): "string",
    ("numeric", (10 << 16 | 2) + 4, "decimal.handling.mode=double"): "double",
    ("numeric", -1, "default"): VSD,
    ("float4", -1, "default"): "float",
    ("float8", -1, "default"): "double",
    ("bool", -1, "default"): "boolean",
    ("text", -1, "default"): "string",
    ("varchar", 24, "default"): "string",
    ("bpchar", 7, "default"): "string",
    ("bytea", -1, "default"): "bytes",
    ("bytea", -1, "binary.handling.mode=base64"): "string",
    ("date", -1, "default"): named("int", "io.debezium.time.Date"),
    ("date", -1, "time.precision.mode=connect"): named("int", KAFKA + "Date", logicalType="date"),
    ("time", -1, "default"): named("long", "io.debezium.time.MicroTime"),
    ("time", -1, "time.precision.mode=connect"): named("int", KAFKA + "Time", logicalType="time-millis"),
    ("timetz", -1, "default"): named("string", "io.debezium.time.ZonedTime"),
    ("timestamp", -1, "default"): named("long", "io.debezium.time.MicroTimestamp"),
    ("timestamp", -1, "time.precision.mode=connect"): named("long", KAFKA + "Timestamp",
                                                             logicalType="timestamp-millis"),
    ("timestamp", 3, "default"): named("long", "io.debezium.time.Timestamp"),
    ("timestamptz", -1, "default"): named("string", "io.debezium.time.ZonedTimestamp"),
    ("interval", -1, "default"): named("long", "io.debezium.time.MicroDuration"),
    ("uuid", -1, "default"): named("string", "io.debezium.data.Uuid"),
    ("json", -1, "default"): named("string", "io.debezium.data.Json"),
    ("jsonb", -1, "default"): named("string", "io.debezium.data.Json"),
    ("_int4", -1, "default"): {"type": "array", "items": ["null", "int"]},
    ("_text", -1, "default"): {"type": "array", "items": ["null", "string"]},
    ("point", -1, "default"): POINT,
    ("tsvector", -1, "default"): named("string", "io.debezium.data.Tsvector"),
    ("_tsvector", -1, "default"): {"type": "array", "items": named("string", "io.debezium.data.Tsvector")},
    ("line", -1, "default"): LINE,
    ("lseg", -1, "default"): GEOMETRY,
    ("box", -1, "default"): GEOMETRY,
    ("path", -1, "default"): GEOMETRY,
    ("polygon", -1, "default"): GEOMETRY,
    ("circle", -1, "default"): CIRCLE,
    ("int2vector", -1, "default"): {"type": "array", "items": {"type": "int", "connect.type": "int16"}},
    ("oidvector", -1, "default"): {"type": "array", "items": "long"},
    ("_date", -1, "default"): {"type": "array", "items": ["null", named("int", "io.debezium.time.Date")]},
    ("_date", -1, "time.precision.mode=connect"): {
        "type": "array", "items": ["null", named("int", KAFKA + "Date", logicalType="date")]},
    ("_line", -1, "default"): {"type": "array", "items": ["null", LINE]},
    ("_box", -1, "default"): {"type": "array", "items": ["null", GEOMETRY]},
    ("_circle", -1, "default"): {"type": "array", "items": ["null", CIRCLE]},
    ("_int2vector", -1, "default"): {"type": "array", "items": {"type": "array",
                                                                "items": {"type": "int", "connect.type": "int16"}}},
    ("_oidvector", -1, "default"): {"type": "array", "items": {"type": "array", "items": "long"}},
    ("_bit", 1, "default"): "boolean",
    ("_bit", 12, "default"): named("bytes", "io.debezium.data.Bits", **{"connect.parameters": {"length": "12"}}),
    ("hstore", -1, "default"): named("string", "io.debezium.data.Json"),
    ("hstore", -1, "hstore.handling.mode=map"): {"type": "map", "values": ["null", "string"]},
    ("_hstore", -1, "default"): {"type": "array", "items": ["null", named("string", "io.debezium.data.Json")]},
    ("_hstore", -1, "hstore.handling.mode=map"): {"type": "array",
                                                  "items": ["null", {"type": "map", "values": ["null", "string"]}]},
    ("geometry", -1, "default"): GEOMETRY,
    ("geography", -1, "default"): GEOGRAPHY,
    ("_geometry", -1, "default"): {"type": "array", "items": ["null", GEOMETRY]},
}


class FakeRegistry:
    """SchemaIds: ids by (subject, text), as a registry deduplicates them."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], int] = {}
        self.tables: dict[str, str | None] = {}

    def id_for(self, topic: str, *, key: bool, schema: str, table: str | None) -> int:
        subject = f"{topic}-{'key' if key else 'value'}"
        self.tables[subject] = table
        return self.ids.setdefault((subject, schema), 100 + len(self.ids))

    def text(self, schema_id: int) -> str:
        return next(text for (_, text), known in self.ids.items() if known == schema_id)


def avro_serializer(registry: FakeRegistry, **kwargs: Any) -> AvroRecordSerializer:
    return AvroRecordSerializer(topic_prefix="pg1", database="shop", ids=registry,
                                topic_for=lambda t: f"pg1.{t.schema}.{t.table}",
                                heartbeat_topic="__debezium-heartbeat.pg1", transaction_topic="pg1.transaction",
                                notification_topic="pg1.notifications", **kwargs)


def _strip_logical(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_logical(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_strip_logical(item) for item in schema]
    return schema


def decode(registry: FakeRegistry, record: bytes | None) -> Any:
    """A framed record decoded with the schema text registered under its id (raw values, no logical types)."""
    assert record is not None and record[0] == 0
    schema_id = int.from_bytes(record[1:5], "big")
    parsed = parse_schema(_strip_logical(json.loads(registry.text(schema_id))))
    return _jsonish(schemaless_reader(io.BytesIO(record[5:]), parsed, None))


def _jsonish(value: Any) -> Any:
    """Decoded Avro as the JSON payload writes it: bytes as base64."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _jsonish(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonish(v) for v in value]
    return value


def json_payload(record: bytes) -> Any:
    return json.loads(record)["payload"]


def table_of(type_name: str, typmod: int) -> TableSchema:
    column = _column(type_name, typmod)
    return TableSchema(ORDERS, (Column("id", 23, "int4", optional=False, is_key=True),
                                Column("c", 0, column.type_name, column.type_modifier,
                                       element_type_name=column.element_type_name)))


@pytest.mark.parametrize(("type_name", "typmod", "sample"), SAMPLES)
def test_every_type_maps_as_avrodata_and_decodes_to_the_json_payload(type_name: str, typmod: int,
                                                                      sample: str) -> None:
    assert (type_name, typmod, "default") in EXPECTED
    for label, modes in MODES:
        expected = EXPECTED.get((type_name, typmod, label))
        if expected is None:
            continue  # the mode does not change this type
        table = table_of(type_name, typmod)
        codecs = {c.name: codec_for(c, modes) for c in table.columns}
        registry = FakeRegistry()
        avro = avro_serializer(registry).table(table, codecs)
        value_text = registry.text(avro._value_id)
        value_record = json.loads(value_text)["fields"][0]["type"][1]
        assert value_record["fields"][1] == {"name": "c", "type": ["null", expected], "default": None}, label
        row = {"id": 1, "c": codecs["c"].convert(sample)}
        change = ChangeEvent(Op.CREATE, ORDERS, None, row, 24023128, 24023200, 24023000, 571, COMMIT_US)
        json_value = EnvelopeSerializer(table, codecs, topic_prefix="pg1", database="shop").serialize_value(
            change, ts_us_now=NOW_US)
        decoded = decode(registry, avro.serialize_value(change, ts_us_now=NOW_US))
        assert decoded == json.loads(json.dumps(json_payload(json_value))), (type_name, label)


def test_envelope_schema_is_debeziums_with_references_and_source() -> None:
    registry = FakeRegistry()
    table = TableSchema(ORDERS, (Column("id", 23, "int4", optional=False, is_key=True), Column("n", 1700, "numeric"),
                                 Column("m", 1700, "numeric")))
    avro_serializer(registry).table(table, {c.name: codec_for(c, TypeModes()) for c in table.columns})
    texts = {subject: text for (subject, text) in registry.ids}
    key = json.loads(texts["pg1.public.orders-key"])
    assert key == {"type": "record", "name": "Key", "namespace": "pg1.public.orders",
                   "fields": [{"name": "id", "type": "int"}], "connect.name": "pg1.public.orders.Key"}
    envelope = json.loads(texts["pg1.public.orders-value"])
    assert [f["name"] for f in envelope["fields"]] == ["before", "after", "source", "transaction", "op", "ts_ms",
                                                        "ts_us", "ts_ns"]
    assert (envelope["name"], envelope["namespace"], envelope["connect.version"], envelope["connect.name"]) == (
        "Envelope", "pg1.public.orders", 2, "pg1.public.orders.Envelope")
    value = envelope["fields"][0]["type"][1]
    assert value["fields"][1]["type"][1] == VSD
    assert value["fields"][2]["type"] == ["null", "io.debezium.data.VariableScaleDecimal"]
    assert envelope["fields"][1] == {"name": "after", "type": ["null", "Value"], "default": None}
    source = envelope["fields"][2]["type"]
    assert (source["name"], source["namespace"], source["connect.version"]) == (
        "Source", "io.debezium.connector.postgresql", 1)
    assert source["fields"][4] == {"name": "snapshot", "type": [
        {"type": "string", "connect.version": 1, "connect.parameters": {
            "allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
         "connect.default": "false", "connect.name": "io.debezium.data.Enum"}, "null"], "default": "false"}
    assert envelope["fields"][3]["type"][1]["name"] == "block" and envelope["fields"][3]["type"][1]["namespace"] \
        == "event"
    assert envelope["fields"][4] == {"name": "op", "type": "string"}
    # Java's toString: compact, members in this order
    assert texts["pg1.public.orders-key"] == ('{"type":"record","name":"Key","namespace":"pg1.public.orders","fields":'
                                              '[{"name":"id","type":"int"}],"connect.name":"pg1.public.orders.Key"}')
    assert schema_text(avro_schema(SOURCE_SCHEMA)).startswith(
        '{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[')


def test_default_column_value_gives_a_default_and_fills_nulls() -> None:
    table = TableSchema(ORDERS, (Column("id", 23, "int4", optional=False, is_key=True),
                                 Column("qty", 23, "int4", default_text="7")))
    codecs = {c.name: codec_for(c, TypeModes()) for c in table.columns}
    registry = FakeRegistry()
    avro = avro_serializer(registry).table(table, codecs)
    value = json.loads(registry.text(avro._value_id))["fields"][0]["type"][1]
    assert value["fields"][1] == {"name": "qty", "type": [{"type": "int", "connect.default": 7}, "null"], "default": 7}
    change = ChangeEvent(Op.CREATE, ORDERS, None, {"id": 1, "qty": None}, 10, 11, 9, 5, COMMIT_US)
    assert decode(registry, avro.serialize_value(change, ts_us_now=NOW_US))["after"] == {"id": 1, "qty": 7}


@pytest.mark.parametrize("op", [Op.CREATE, Op.UPDATE, Op.DELETE, Op.TRUNCATE, Op.READ])
def test_every_op_decodes_to_the_json_payload(op: Op) -> None:
    table = TableSchema(ORDERS, (Column("id", 23, "int4", optional=False, is_key=True), Column("note", 25, "text"),
                                 Column("raw", 17, "bytea")))
    codecs = {c.name: codec_for(c, TypeModes()) for c in table.columns}
    registry = FakeRegistry()
    avro = avro_serializer(registry).table(table, codecs)
    reference = EnvelopeSerializer(table, codecs, topic_prefix="pg1", database="shop")
    before = {"id": 1, "note": "old", "raw": "AQL/"} if op in (Op.UPDATE, Op.DELETE) else None
    after = None if op in (Op.DELETE, Op.TRUNCATE) else {"id": 1, "note": "new ü", "raw": None}
    snapshot = "incremental" if op is Op.READ else None
    event = ChangeEvent(op, ORDERS, before, after, 24023128, 24023200, 24023000, 571, COMMIT_US, snapshot=snapshot)
    block = {"id": "571:24023128", "total_order": 3, "data_collection_order": 2}
    for transaction in (None, block):
        got = decode(registry, avro.serialize_value(event, ts_us_now=NOW_US, transaction=transaction))
        want = json_payload(reference.serialize_value(event, ts_us_now=NOW_US, transaction=transaction))
        assert got == want
    row = after if after is not None else before
    if row is not None:
        assert decode(registry, avro.serialize_key(row)) == json_payload(reference.serialize_key(row) or b"")
    assert avro.tombstone_value() is None


def test_keyless_table_has_a_null_key_and_no_key_subject() -> None:
    registry = FakeRegistry()
    keyless = TableSchema(TableId("public", "log"), (Column("line", 25, "text"),))
    avro = avro_serializer(registry).table(keyless, {"line": codec_for(keyless.columns[0], TypeModes())})
    assert avro.serialize_key({"line": "x"}) is None
    assert [subject for subject, _ in registry.ids] == ["pg1.public.log-value"]
    assert registry.tables["pg1.public.log-value"] == "public.log"


def test_heartbeat_transaction_and_notification_records_decode() -> None:
    registry = FakeRegistry()
    avro = avro_serializer(registry)
    key, value = avro.heartbeat(1787392800201)
    assert (decode(registry, key), decode(registry, value)) == ({"serverName": "pg1"}, {"ts_ms": 1787392800201})
    key, value = avro.transaction_begin("571:100", 5)
    assert decode(registry, key) == {"id": "571:100"}
    assert decode(registry, value) == {"status": "BEGIN", "id": "571:100", "event_count": None,
                                       "data_collections": None, "ts_ms": 5}
    _, value = avro.transaction_end("571:200", 5, 3, [("public.orders", 3)])
    assert decode(registry, value)["data_collections"] == [{"data_collection": "public.orders", "event_count": 3}]
    payload = {"id": "n1", "type": "COMPLETED", "aggregate_type": "Incremental Snapshot",
               "additional_data": {"data_collections": "public.orders"}, "timestamp": 9}
    key, value = avro.notification("n1", payload)
    assert (decode(registry, key), decode(registry, value)) == ({"id": "n1"}, payload)
    subjects = sorted(subject for subject, _ in registry.ids)
    assert subjects == ["__debezium-heartbeat.pg1-key", "__debezium-heartbeat.pg1-value", "pg1.notifications-key",
                        "pg1.notifications-value", "pg1.transaction-key", "pg1.transaction-value"]


def test_confluent_wire_format_header() -> None:
    registry = FakeRegistry()
    key, _ = avro_serializer(registry).heartbeat(1)
    assert key[:1] == b"\x00" and int.from_bytes(key[1:5], "big") == registry.ids[
        ("__debezium-heartbeat.pg1-key", registry.text(int.from_bytes(key[1:5], "big")))]


def test_alter_table_registers_a_new_version() -> None:
    registry = FakeRegistry()
    serializer = avro_serializer(registry)
    v1 = TableSchema(ORDERS, (Column("id", 23, "int4", optional=False, is_key=True),))
    v2 = TableSchema(ORDERS, (*v1.columns, Column("note", 25, "text")))
    first = serializer.table(v1, {c.name: codec_for(c, TypeModes()) for c in v1.columns})
    second = serializer.table(v2, {c.name: codec_for(c, TypeModes()) for c in v2.columns})
    assert first._value_id != second._value_id
    again = serializer.table(v1, {c.name: codec_for(c, TypeModes()) for c in v1.columns})
    assert again._value_id == first._value_id


def test_invalid_avro_names_are_refused_unless_adjusted() -> None:
    table = TableSchema(TableId("public", "my-table"), (Column("id", 23, "int4", optional=False, is_key=True),
                                                         Column("2nd col", 25, "text")))
    codecs = {c.name: codec_for(c, TypeModes()) for c in table.columns}
    with pytest.raises(TerminalSinkError, match=r"my-table.*schema\.name\.adjustment\.mode"):
        avro_serializer(FakeRegistry()).table(table, codecs)
    registry = FakeRegistry()
    avro = avro_serializer(registry, schema_names="avro", field_names="avro").table(table, codecs)
    value = json.loads(registry.text(avro._value_id))
    assert value["connect.name"] == "pg1.public.my_table.Envelope"
    assert [f["name"] for f in value["fields"][0]["type"][1]["fields"]] == ["id", "_2nd_col"]
    change = ChangeEvent(Op.CREATE, table.table_id, None, {"id": 1, "2nd col": "x"}, 1, 2, None, 3, COMMIT_US)
    assert decode(registry, avro.serialize_value(change, ts_us_now=NOW_US))["after"] == {"id": 1, "_2nd_col": "x"}


@pytest.mark.parametrize(("name", "mode", "field", "adjusted"), [
    ("pg1.public.my-table.Value", "avro", False, "pg1.public.my_table.Value"),
    ("1abc", "avro", True, "_1abc"),
    ("a.b", "avro", True, "a_b"),
    ("é_x", "avro_unicode", True, "_u00e9_u005fx"),
    ("pg1.s.t€", "avro_unicode", False, "pg1.s.t_u20ac"),
    ("ok_name", "none", True, "ok_name"),
])
def test_name_adjustment_is_debeziums(name: str, mode: str, field: bool, adjusted: str) -> None:
    assert adjust_name(name, mode, field=field) == adjusted


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 2**31, -(2**63), 2**63 - 1])
def test_long_encoding_matches_fastavro(value: int) -> None:
    buffer = io.BytesIO()
    schemaless_writer(buffer, "long", value)
    assert long_bytes(value) == buffer.getvalue()


def test_streamed_rows_take_the_same_bytes_as_the_reference() -> None:
    class Tx:
        xid, commit_ts_us, last_commit_lsn = 571, COMMIT_US, 24023000

    class Streamed:
        op, before, after, lsn, tx = Op.UPDATE, {"id": 1, "note": "a"}, {"id": 1, "note": "b"}, 24023128, Tx()

        @property
        def event(self) -> ChangeEvent:
            return ChangeEvent(self.op, ORDERS, self.before, self.after, self.lsn, None, 24023000, 571, COMMIT_US)

    table = TableSchema(ORDERS, (Column("id", 23, "int4", optional=False, is_key=True), Column("note", 25, "text")))
    avro = avro_serializer(FakeRegistry()).table(table, {c.name: codec_for(c, TypeModes()) for c in table.columns})
    change = Streamed()
    key, value = avro.serialize(change, ts_us_now=NOW_US)  # type: ignore[arg-type]
    assert key == avro.serialize_key(change.after)
    assert value == avro.serialize_value(change.event, ts_us_now=NOW_US)
