"""MariaDB column types → Debezium's MariaDB connector's schemas and values (``sources.mariadb.values``), in the
default modes and the others, for values as the binlog client returns them and as PyMySQL returns them; and the
binlog positions, GTID sets and offset keys (``sources.mariadb.positions``)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from signaller.errors import DecodeError, StateError
from signaller.sources.mariadb.positions import GtidSet, Resume, gtid_number, gtid_of_number, position
from signaller.sources.mariadb.values import (
    MariaDbColumn,
    TypeModes,
    column_codec,
    required_fallback,
    value_converter,
)
from signaller.wire.jackson import dumps
from signaller.wire.records import java_hash_map_order, java_string_hash

pytestmark = pytest.mark.unit

DEFAULT = TypeModes()


def col(data_type: str, column_type: str | None = None, **extra: Any) -> MariaDbColumn:
    return MariaDbColumn("c", data_type, column_type or data_type, **extra)


def schema_and(column: MariaDbColumn, value: Any, modes: TypeModes = DEFAULT) -> tuple[dict[str, Any], Any]:
    node, convert = value_converter(column, modes)
    return node, convert(value)


@pytest.mark.parametrize(("column", "value", "schema", "expected"), [
    (col("tinyint", "tinyint(4)"), -5, {"type": "int16", "optional": True}, -5),
    (col("tinyint", "tinyint(3) unsigned"), 255, {"type": "int16", "optional": True}, 255),
    (col("smallint", "smallint(6)"), -32768, {"type": "int16", "optional": True}, -32768),
    (col("smallint", "smallint(5) unsigned"), 65535, {"type": "int32", "optional": True}, 65535),
    (col("mediumint", "mediumint(8) unsigned"), 16777215, {"type": "int32", "optional": True}, 16777215),
    (col("int", "int(11)"), -2147483648, {"type": "int32", "optional": True}, -2147483648),
    (col("int", "int(10) unsigned"), 4294967295, {"type": "int64", "optional": True}, 4294967295),
    (col("int", "int(10) unsigned"), -1, {"type": "int64", "optional": True}, 4294967295),  # read as signed
    (col("bigint", "bigint(20)"), -9223372036854775808, {"type": "int64", "optional": True}, -9223372036854775808),
    # bigint unsigned, long mode: Java's long (2^64-1 wraps to -1, as Debezium's does)
    (col("bigint", "bigint(20) unsigned"), 18446744073709551615, {"type": "int64", "optional": True}, -1),
    (col("bigint", "bigint(20) unsigned"), 5, {"type": "int64", "optional": True}, 5),
    (col("decimal", "decimal(10,2)", precision=10, scale=2), Decimal("-12.50"),
     {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
      "parameters": {"scale": "2", "connect.decimal.precision": "10"}}, "+x4="),  # -1250: FB 1E
    (col("float", "float"), 1.1, {"type": "float", "optional": True}, pytest.approx(1.1, rel=1e-7)),
    (col("double", "double"), 2.5, {"type": "double", "optional": True}, 2.5),
    (col("bit", "bit(1)"), "1", {"type": "boolean", "optional": True}, True),
    (col("bit", "bit(1)"), b"\x00", {"type": "boolean", "optional": True}, False),
    # bit(10) b'1000000011' = 0x203: BitSet.toByteArray is little-endian: 03 02
    (col("bit", "bit(10)"), "1000000011", {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits",
                                           "version": 1, "parameters": {"length": "10"}}, "AwI="),
    (col("bit", "bit(10)"), b"\x02\x03", {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits",
                                          "version": 1, "parameters": {"length": "10"}}, "AwI="),
    (col("year", "year(4)"), 2024, {"type": "int32", "optional": True, "name": "io.debezium.time.Year",
                                    "version": 1}, 2024),
    (col("date"), dt.date(2024, 2, 29), {"type": "int32", "optional": True, "name": "io.debezium.time.Date",
                                         "version": 1}, 19782),
    (col("time", datetime_precision=6), dt.timedelta(hours=-1, microseconds=5),
     {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTime", "version": 1}, -3_599_999_995),
    (col("datetime", datetime_precision=3), dt.datetime(2024, 1, 2, 3, 4, 5, 678000),
     {"type": "int64", "optional": True, "name": "io.debezium.time.Timestamp", "version": 1}, 1704164645678),
    (col("datetime", datetime_precision=6), dt.datetime(2024, 1, 2, 3, 4, 5, 678901),
     {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp", "version": 1},
     1704164645678901),
    (col("timestamp", datetime_precision=0), dt.datetime(2024, 1, 2, 3, 4, 5),
     {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1},
     "2024-01-02T03:04:05Z"),
    (col("timestamp", datetime_precision=6), dt.datetime(2024, 1, 2, 3, 4, 5, 120000),
     {"type": "string", "optional": True, "name": "io.debezium.time.ZonedTimestamp", "version": 1},
     "2024-01-02T03:04:05.120000Z"),
    (col("enum", "enum('a','b''c')"), "b'c", {"type": "string", "optional": True, "name": "io.debezium.data.Enum",
                                              "version": 1, "parameters": {"allowed": "a,b'c"}}, "b'c"),
    (col("set", "set('x','y','z')"), {"z", "x"}, {"type": "string", "optional": True,
                                                  "name": "io.debezium.data.EnumSet", "version": 1,
                                                  "parameters": {"allowed": "x,y,z"}}, "x,z"),
    (col("set", "set('x','y','z')"), "z,x", {"type": "string", "optional": True,
                                             "name": "io.debezium.data.EnumSet", "version": 1,
                                             "parameters": {"allowed": "x,y,z"}}, "x,z"),
    # MariaDB's JSON is a longtext to Debezium's MariaDB connector: a plain string (measured, 3.5.0.Final)
    (col("longtext", "longtext", is_json=True), '{"a": [1, 2]}', {"type": "string", "optional": True},
     '{"a": [1, 2]}'),
    (col("json"), '{"a": [1, 2]}',  # MySQL's own JSON type
     {"type": "string", "optional": True, "name": "io.debezium.data.Json", "version": 1}, '{"a": [1, 2]}'),
    # bit(n): (n + 7) / 8 little-endian bytes, high zero bytes kept (Debezium's MariaDB connector: "AQA=")
    (col("bit", "bit(12)"), "000000000001", {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits",
                                             "version": 1, "parameters": {"length": "12"}}, "AQA="),
    (col("uuid"), bytes.fromhex("0e0b6f538a7c4a529d510c5d1a6b7f01"),
     {"type": "string", "optional": True, "name": "io.debezium.data.Uuid", "version": 1},
     "0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f01"),
    (col("uuid"), "0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f01",
     {"type": "string", "optional": True, "name": "io.debezium.data.Uuid", "version": 1},
     "0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f01"),
    # DECIMAL(38,10): every digit kept (the default decimal context's 28 digits would round it)
    (col("decimal", "decimal(38,10)", precision=38, scale=10), Decimal("-1234567890123456789012345678.0123456789"),
     {"type": "bytes", "optional": True, "name": "org.apache.kafka.connect.data.Decimal", "version": 1,
      "parameters": {"scale": "10", "connect.decimal.precision": "38"}}, "9rZPCQ/9zOw7tm+xM5i66w=="),
    (col("varchar", "varchar(10)", charset="latin1"), "é", {"type": "string", "optional": True}, "é"),
    (col("char", "char(4)", charset="latin1"), b"\xe9t\xe9", {"type": "string", "optional": True}, "été"),
    (col("blob"), b"\x00\xff", {"type": "bytes", "optional": True}, "AP8="),
    (col("binary", "binary(4)"), b"\x01", {"type": "bytes", "optional": True}, "AQAAAA=="),  # zero-padded
])
def test_default_modes(column: MariaDbColumn, value: Any, schema: dict[str, Any], expected: Any) -> None:
    node, converted = schema_and(column, value)
    assert node == schema
    assert converted == expected


def test_other_modes() -> None:
    decimal = col("decimal", "decimal(10,2)", precision=10, scale=2)
    assert schema_and(decimal, Decimal("1.50"), TypeModes(decimal="string")) == (
        {"type": "string", "optional": True}, "1.50")
    assert schema_and(decimal, Decimal("1.50"), TypeModes(decimal="double")) == (
        {"type": "double", "optional": True}, 1.5)
    unsigned = col("bigint", "bigint(20) unsigned")
    node, value = schema_and(unsigned, 18446744073709551615, TypeModes(bigint_unsigned="precise"))
    assert node["name"] == "org.apache.kafka.connect.data.Decimal" and node["parameters"]["scale"] == "0"
    assert value == "AP//////////"  # 2^64-1 as BigInteger bytes
    assert schema_and(col("blob"), b"\x00\xff", TypeModes(binary="hex")) == ({"type": "string", "optional": True},
                                                                              "00ff")
    connect = TypeModes(time_precision="connect")
    assert schema_and(col("datetime", datetime_precision=6), dt.datetime(1970, 1, 1, 0, 0, 1, 500), connect) == (
        {"type": "int64", "optional": True, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}, 1000)
    assert schema_and(col("time"), dt.timedelta(seconds=2), connect)[1] == 2000


@pytest.mark.parametrize(("time", "millis"), [
    (dt.timedelta(0), 0),
    (dt.timedelta(hours=23, minutes=59, seconds=59, microseconds=999999), 86399999),
    (dt.timedelta(hours=13, minutes=14, seconds=15, milliseconds=123), 47655123),
    (dt.timedelta(hours=24), None),  # a time of day ends before 24:00
    (dt.timedelta(hours=838, minutes=59, seconds=59), None),
    (-dt.timedelta(hours=838, minutes=59, seconds=59), None),
    (-dt.timedelta(microseconds=1), None),
    (-dt.timedelta(seconds=1, microseconds=500000), None),
])
def test_connect_time_outside_a_day_is_null(time: dt.timedelta, millis: int | None) -> None:
    """Debezium's MariaDB connector with time.precision.mode=connect writes null for a TIME a Connect ``Time``
    (milliseconds of a day) cannot hold, streamed and read (side by side: -838:59:59, 838:59:59, -00:00:00.000001)."""
    node, convert = value_converter(col("time", datetime_precision=6), TypeModes(time_precision="connect"))
    assert node["name"] == "org.apache.kafka.connect.data.Time"
    assert convert(time) == millis


def test_zero_dates_are_null_and_geometry_carries_its_srid() -> None:
    assert value_converter(col("date"), DEFAULT)[1]("0000-00-00") is None
    assert value_converter(col("datetime"), DEFAULT)[1]("0000-00-00 00:00:00") is None
    # MariaDB's internal geometry: SRID (LE uint32) then WKB POINT(1 2)
    wkb = bytes.fromhex("0101000000000000000000f03f0000000000000040")
    node, geometry = value_converter(col("geometry"), DEFAULT)
    assert node["name"] == "io.debezium.data.geometry.Geometry"
    assert node["version"] == 1 and [f["field"] for f in node["fields"]] == ["wkb", "srid"]  # MariaDB 3.5.0.Final
    assert geometry((4326).to_bytes(4, "little") + wkb) == {"wkb": "AQEAAAAAAAAAAADwPwAAAAAAAABA", "srid": 4326}
    point = value_converter(col("point"), DEFAULT)[1]((0).to_bytes(4, "little") + wkb)
    assert point["x"] == 1.0 and point["y"] == 2.0 and point["srid"] is None


def test_codec_nullability_and_unknown_types() -> None:
    assert column_codec(col("int", "int(11)", nullable=False), DEFAULT).schema == {"type": "int32",
                                                                                   "optional": False}
    with pytest.raises(DecodeError, match="'c' has type 'vector"):
        value_converter(col("vector", "vector(3)"), DEFAULT)


def test_positions_gtid_sets_and_offset_keys() -> None:
    assert position("mariadb-bin.000002", 4096) == (2 << 32) | 4096
    assert position("mariadb-bin.000002", 4096) < position("mariadb-bin.000003", 4)
    gtids = GtidSet.parse("0-1-74,1-2-9").with_gtid(0, 1, 75)
    assert str(gtids) == "0-1-75,1-2-9"
    assert gtid_of_number(gtid_number(0, 1, 18446744073709551615)) == "0-1-18446744073709551615"
    resume = Resume("mariadb-bin.000002", 4096, gtids, 1700000000, 1)
    keys = resume.offset_keys()
    assert keys == {"server_id": 1, "gtids": "0-1-75,1-2-9", "file": "mariadb-bin.000002", "pos": 4096,
                    "ts_sec": 1700000000}
    assert Resume.from_offset_keys(keys) == resume
    with pytest.raises(StateError, match="inside a transaction"):
        Resume.from_offset_keys({**keys, "event": 2, "row": 1})
    with pytest.raises(StateError, match="not a MariaDB GTID"):
        GtidSet.parse("0-1")


def test_float_is_written_as_java_float_text() -> None:
    convert = value_converter(col("float"), DEFAULT)[1]
    assert dumps({"f": convert(3.140000104904175)}) == b'{"f":3.14}'
    assert dumps({"f": convert(-1.5e-38)}) == b'{"f":-1.5E-38}'


@pytest.mark.parametrize(("column", "expected"), [
    (col("varchar", "varchar(20)", default="'n/a'"), "n/a"),
    (col("varchar", "varchar(20)", default="'it''s'"), "it's"),
    (col("varchar", "varchar(20)", default="NULL"), None),
    (col("int", "int(11)", default="42"), 42),
    (col("timestamp", "timestamp", default="'2000-01-01 00:00:00'"), "2000-01-01T00:00:00Z"),
    (col("timestamp", "timestamp", default="current_timestamp()"), None),
    (col("year", "year(4)", default="0"), 2000),  # as Debezium's MariaDB connector writes YEAR ... DEFAULT 0
    (col("year", "year(4)", default="2024"), 2024),
    (col("date", "date", default="'0000-00-00'"), None),
    (col("time", "time", default="'-01:00:00'"), -3_600_000_000),
    (col("decimal", "decimal(5,2)", precision=5, scale=2, default="1.50"), "AJY="),
])
def test_constant_defaults_go_into_the_schema(column: MariaDbColumn, expected: Any) -> None:
    schema = column_codec(column, DEFAULT).schema
    assert schema.get("default") == expected, schema


def test_required_fallback_is_the_default_else_the_types_zero() -> None:
    assert required_fallback(column_codec(col("date", nullable=False), DEFAULT).schema) == 0
    assert required_fallback(column_codec(col("datetime", datetime_precision=3, nullable=False),
                                          DEFAULT).schema) == 0
    assert required_fallback(column_codec(col("timestamp", nullable=False), DEFAULT).schema) == \
        "1970-01-01T00:00:00Z"
    assert required_fallback(column_codec(col("timestamp", nullable=False, default="'2000-01-01 00:00:00'"),
                                          DEFAULT).schema) == "2000-01-01T00:00:00Z"
    assert required_fallback(column_codec(col("point", nullable=False), DEFAULT).schema) is None


def test_java_hash_map_order_of_transaction_end_collections() -> None:
    """Debezium's END lists data_collections as its HashMap iterates them (measured twice on MariaDB: cmp_types
    before cmp_comp, whatever the insertion order)."""
    assert java_string_hash("a") == 97 and java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == (-2147483648) & 0xFFFFFFFF  # a known Java hash
    for db in ("cmp_18e3ee3ba1", "cmp_664b0e10"):
        assert [name for name, _ in java_hash_map_order([(f"{db}.cmp_comp", 7), (f"{db}.cmp_types", 1)])] == [
            f"{db}.cmp_types", f"{db}.cmp_comp"]
    many = [(f"t{i}", i) for i in range(20)]  # more than 12: a table of 32
    assert sorted(java_hash_map_order(many)) == sorted(many)
