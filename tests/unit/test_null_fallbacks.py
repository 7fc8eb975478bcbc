"""What a NULL becomes in a NOT NULL column (a key-only old tuple: default replica identity, DELETE or a
key-changing UPDATE): Debezium's ``JdbcValueConverters.convertValue`` answers the schema default, else the
converter's ``fallback`` argument; each expected value below is that argument, read in
debezium/debezium ``JdbcValueConverters.java`` and ``PostgresValueConverter.java`` (3.7), rendered as the
JSON payload. Then: the JSON and the Avro converter both write such a row for every mapped type in every
mode; both tuple readers (the general one and the fused one) use the fallback; a row the Avro schema
cannot hold is refused with an error naming table, column and value."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest

from schemas.generate import MODES, SAMPLES
from signaller.config import config_from_mapping
from signaller.errors import TerminalSinkError
from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.sources.postgres.reader import _tuple_reader, make_plan, modes_of, row_from_tuple
from signaller.wire.envelope import EnvelopeSerializer
from signaller.wire.geometry import geometry_payload, linestring_wkb, point_payload, polygon_wkb
from tests.unit.test_avro_converter import COMMIT_US, NOW_US, FakeRegistry, avro_serializer, decode, json_payload
from tests.unit.test_streaming_fast_path import BASE

pytestmark = pytest.mark.unit

TABLE = TableId("public", "orders")
NUMERIC_10_2 = (10 << 16 | 2) + 4
EMPTY_COLLECTION = base64.b64encode(bytes.fromhex("010700000000000000")).decode()


def required(type_name: str, typmod: int = -1, **kwargs: Any) -> Column:
    element = type_name[1:] if type_name.startswith("_") else None
    return Column("c", 0, type_name, typmod, optional=False, element_type_name=element, **kwargs)


FALLBACKS: list[tuple[str, int, TypeModes, Any]] = [
    # JdbcValueConverters: convertSmallInt SHORT_FALSE, convertInteger 0, convertBigInt 0L, convertReal 0.0f,
    # convertDouble 0.0d, convertBoolean false, toBigDecimal ZERO at the column's scale
    ("int2", -1, TypeModes(), 0), ("int4", -1, TypeModes(), 0), ("int8", -1, TypeModes(), 0),
    ("oid", -1, TypeModes(), 0), ("float4", -1, TypeModes(), 0.0), ("float8", -1, TypeModes(), 0.0),
    ("bool", -1, TypeModes(), False),
    ("numeric", NUMERIC_10_2, TypeModes(), "AA=="),
    ("numeric", -1, TypeModes(), {"scale": 0, "value": "AA=="}),
    ("numeric", NUMERIC_10_2, TypeModes(decimal_handling="string"), "0.00"),
    ("numeric", -1, TypeModes(decimal_handling="string"), "0"),
    ("numeric", NUMERIC_10_2, TypeModes(decimal_handling="double"), 0.0),
    # PostgresValueConverter.convertMoney: BigDecimal.ZERO.setScale(money.fraction.digits)
    ("money", -1, TypeModes(), "AA=="), ("money", -1, TypeModes(decimal_handling="string"), "0.00"),
    ("money", -1, TypeModes(decimal_handling="string", money_fraction_digits=3), "0.000"),
    ("money", -1, TypeModes(decimal_handling="double"), 0.0),
    # convertString ""
    ("text", -1, TypeModes(), ""), ("varchar", 14, TypeModes(), ""), ("bpchar", 7, TypeModes(), ""),
    ("uuid", -1, TypeModes(), ""), ("json", -1, TypeModes(), ""), ("jsonb", -1, TypeModes(), ""),
    ("xml", -1, TypeModes(), ""), ("tsvector", -1, TypeModes(), ""), ("inet", -1, TypeModes(), ""),
    ("int4range", -1, TypeModes(), ""), ("citext", -1, TypeModes(), ""),
    # convertBinaryToBytes BYTE_ZERO / base64 and hex converters ""
    ("bytea", -1, TypeModes(), ""), ("bytea", -1, TypeModes(binary_handling="hex"), ""),
    ("bytea", -1, TypeModes(binary_handling="base64-url-safe"), ""),
    # convertBit false; convertBits new byte[0]
    ("bit", 1, TypeModes(), False), ("bit", 8, TypeModes(), ""), ("varbit", -1, TypeModes(), ""),
    # convertDateToEpochDays 0, convertTimeToMicrosPastMidnight 0L, convertTimestampToEpochMicros 0L, ...
    ("date", -1, TypeModes(), 0), ("time", -1, TypeModes(), 0), ("time", 3, TypeModes(), 0),
    ("timestamp", -1, TypeModes(), 0), ("timestamp", 3, TypeModes(), 0),
    ("date", -1, TypeModes(time_precision="connect"), 0), ("timestamp", -1, TypeModes(time_precision="connect"), 0),
    # fallbackTimeWithTimeZone / fallbackTimestampWithTimeZone: ISO_OFFSET_* of the epoch in UTC
    ("timetz", -1, TypeModes(), "00:00:00Z"), ("timestamptz", -1, TypeModes(), "1970-01-01T00:00:00Z"),
    ("timestamptz", 3, TypeModes(), "1970-01-01T00:00:00Z"),
    # convertInterval: LONG_FALSE, or Interval.toIsoString(0, 0, 0, 0, 0, 0)
    ("interval", -1, TypeModes(), 0), ("interval", -1, TypeModes(interval_handling="string"), "P0Y0M0DT0H0M0S"),
    # convertHstoreToJsonString "{}", convertHstoreToMap emptyMap
    ("hstore", -1, TypeModes(), "{}"), ("hstore", -1, TypeModes(hstore_handling="map"), {}),
    # convertArray emptyList
    ("_int4", -1, TypeModes(), []), ("_text", -1, TypeModes(), []), ("_date", -1, TypeModes(), []),
    # convertPoint (0,0), convertLine (0,1,0), convertCircle (0,0,0), geometryFallback, PostgisGeometry.createEmpty
    ("point", -1, TypeModes(), point_payload(0.0, 0.0)),
    ("line", -1, TypeModes(), {"a": 0.0, "b": 1.0, "c": 0.0}),
    ("circle", -1, TypeModes(), {"center": point_payload(0.0, 0.0), "radius": 0.0}),
    ("box", -1, TypeModes(), geometry_payload(polygon_wkb([(0, 0), (0, 1), (1, 1), (1, 0), (0, 0)]), None,
                                              {"type": "box"})),
    ("lseg", -1, TypeModes(), geometry_payload(linestring_wkb([(0, 0), (1, 0)]), None, {"type": "lseg"})),
    ("path", -1, TypeModes(), geometry_payload(linestring_wkb([(0, 0), (1, 0)]), None, {"type": "path"})),
    ("polygon", -1, TypeModes(), geometry_payload(polygon_wkb([(0, 0), (1, 0), (0, 1), (0, 0)]), None,
                                                  {"type": "polygon"})),
    ("geometry", -1, TypeModes(), {"wkb": EMPTY_COLLECTION, "srid": None, "extensions": None}),
    ("geography", -1, TypeModes(), {"wkb": EMPTY_COLLECTION, "srid": None}),
]


@pytest.mark.parametrize(("type_name", "typmod", "modes", "expected"), FALLBACKS)
def test_a_null_in_a_not_null_column_becomes_debeziums_fallback(type_name: str, typmod: int, modes: TypeModes,
                                                                 expected: Any) -> None:
    codec = codec_for(required(type_name, typmod), modes)
    assert codec.null_value == expected
    assert type(codec.null_value) is type(expected) or isinstance(expected, float)
    assert codec_for(Column("c", 0, type_name, typmod), modes).null_value is None  # optional: a NULL stays null


def test_an_enum_falls_back_to_the_empty_string_and_a_default_wins_over_the_fallback() -> None:
    assert codec_for(required("mood", enum_values=("sad", "ok")), TypeModes()).null_value == ""
    assert codec_for(required("int4", default_text="7"), TypeModes()).null_value == 7
    assert codec_for(required("text", default_text="n/a"), TypeModes()).null_value == "n/a"
    with_default = codec_for(required("numeric", NUMERIC_10_2, default_text="1.5"), TypeModes())
    assert with_default.null_value == with_default.schema["default"] == base64.b64encode(b"\x00\x96").decode()


@pytest.mark.parametrize(("label", "modes"), MODES)
def test_both_converters_write_the_fallback_row_of_every_mapped_type(label: str, modes: TypeModes) -> None:
    """A delete whose before image holds only the key: valid JSON (no null in a required field) that the Avro
    converter encodes and that decodes to the same payload."""
    checked = 0
    for type_name, typmod, _ in SAMPLES:
        column = required(type_name, typmod)
        table = TableSchema(TABLE, (Column("id", 23, "int4", optional=False, is_key=True), column))
        codecs = {c.name: codec_for(c, modes) for c in table.columns}
        if not codecs["c"].emitted:
            continue
        before = {"id": 1, "c": codecs["c"].null_value}
        assert before["c"] is not None, (type_name, typmod, label)
        event = ChangeEvent(Op.DELETE, TABLE, before, None, 24023128, 24023200, 24023000, 571, COMMIT_US)
        json_value = EnvelopeSerializer(table, codecs, topic_prefix="pg1", database="shop").serialize_value(
            event, ts_us_now=NOW_US)
        registry = FakeRegistry()
        avro_value = avro_serializer(registry).table(table, codecs).serialize_value(event, ts_us_now=NOW_US)
        assert decode(registry, avro_value) == json.loads(json.dumps(json_payload(json_value))), (type_name, label)
        checked += 1
    assert checked >= len(SAMPLES) - 4


def _key_only_tuple(values: list[str | None]) -> bytes:
    """A pgoutput TupleData: text for the key, ``n`` for every other column (what a ``K`` tuple holds)."""
    out = struct.pack(">H", len(values))
    for value in values:
        out += b"n" if value is None else b"t" + struct.pack(">I", len(value.encode())) + value.encode()
    return out


def test_both_tuple_readers_fill_a_key_only_old_tuple_with_the_fallbacks() -> None:
    config = config_from_mapping(BASE)
    columns = (Column("id", 23, "int4", optional=False, is_key=True), Column("qty", 23, "int4", optional=False),
               Column("at", 0, "timestamptz", optional=False), Column("tags", 0, "_text", optional=False,
                                                                      element_type_name="text"),
               Column("label", 25, "text", optional=False, default_text="none"), Column("note", 25, "text"))
    plan = make_plan(TableSchema(TABLE, columns), tuple(c.name for c in columns), config.capture,
                     modes_of(config.types))
    expected = {"id": 1, "qty": 0, "at": "1970-01-01T00:00:00Z", "tags": [], "label": "none", "note": None}
    values: list[str | None] = ["1", None, None, None, None, None]
    assert row_from_tuple(plan, values) == expected
    read = _tuple_reader(len(columns), plan.slots)
    assert read is not None
    row, position = read(_key_only_tuple(values), 0)
    assert row == expected and position == len(_key_only_tuple(values))


def test_a_row_the_avro_schema_cannot_hold_is_refused_naming_table_column_and_value() -> None:
    table = TableSchema(TABLE, (Column("id", 23, "int4", optional=False, is_key=True),
                                Column("qty", 23, "int4", optional=False), Column("note", 25, "text")))
    codecs = {c.name: codec_for(c, TypeModes()) for c in table.columns}
    avro = avro_serializer(FakeRegistry()).table(table, codecs)
    for qty, shown in ((None, "None (NoneType)"), ("seven", "'seven' (str)")):
        event = ChangeEvent(Op.DELETE, TABLE, {"id": 1, "qty": qty, "note": "x"}, None, 2, 3, 1, 5, COMMIT_US)
        with pytest.raises(TerminalSinkError) as raised:
            avro.serialize_value(event, ts_us_now=NOW_US)
        message = str(raised.value)
        assert "table public.orders" in message and "column 'qty' (int)" in message and shown in message, message
