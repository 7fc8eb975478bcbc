"""PostgreSQL type codecs: schema nodes and payload values against Debezium's own mapping.

Sources of the expected values (debezium/debezium unless stated):
[PVC] PostgresValueConverter.java, [JVC] JdbcValueConverters.java, [SVD] SpecialValueDecimal.java,
[VSD] VariableScaleDecimal.java, [TPM] TemporalPrecisionMode.java, [ZTS] ZonedTimestamp.java,
[ZT] ZonedTime.java (ISO_OFFSET_TIME), [MD] MicroDuration.java, [IV] Interval.java,
[SF] SchemaFactory.java (datatype*Schema), [UTP] UnchangedToastedPlaceholder.java +
UnchangedToastedReplicationMessageColumn.java, [DTF] connection/DateTimeFormat.java,
[PGI] pgjdbc PGInterval.java, [DOC] postgresql.adoc "Data type mappings",
[KC] Kafka Connect Decimal/Date/Time/Timestamp and JsonConverter.asJsonSchema (member order),
[JAVA] java.math.BigDecimal/BigInteger, Double/Float.toString.
"""

from __future__ import annotations

import base64
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from signaller.errors import ConfigError, DecodeError
from signaller.model import Column
from signaller.sources.postgres.arrays import parse_array_literal
from signaller.sources.postgres.codecs import TypeModes, codec_for, placeholder_for
from signaller.sources.postgres.conversion import UNREPRESENTABLE, UnrepresentableValues, unguarded
from signaller.wire.columns import UNAVAILABLE_VALUE_PLACEHOLDER, ColumnCodec
from signaller.wire.numbers import JavaDouble, JavaFloat

pytestmark = pytest.mark.unit

DEFAULT = TypeModes()


def codec(type_name: str, typmod: int = -1, modes: TypeModes = DEFAULT, **kwargs: Any) -> ColumnCodec:
    return codec_for(Column("c", 0, type_name, typmod, **kwargs), modes)


def numeric_typmod(precision: int, scale: int) -> int:
    """PostgreSQL's atttypmod for numeric(p, s)."""
    return ((precision << 16) | scale) + 4


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unscaled_of(encoded: str) -> int:
    return int.from_bytes(base64.b64decode(encoded), "big", signed=True)


# ---------------------------------------------------------------------------- integers, bool


@pytest.mark.parametrize(
    ("type_name", "connect_type", "text", "value"),
    [
        ("int2", "int16", "-32768", -32768),  # [PVC] INT2 -> int16 [DOC] SMALLINT INT16
        ("smallint", "int16", "7", 7),
        ("int4", "int32", "2147483647", 2147483647),  # [DOC] INTEGER INT32
        ("integer", "int32", "-1", -1),
        ("int8", "int64", "-9223372036854775808", -9223372036854775808),  # [DOC] BIGINT INT64
        ("oid", "int64", "4294967295", 4294967295),  # [PVC] OID -> SchemaBuilder.int64()
    ],
)
def test_integers(type_name: str, connect_type: str, text: str, value: int) -> None:
    c = codec(type_name, optional=False)
    assert c.schema == {"type": connect_type, "optional": False}
    assert c.convert(text) == value
    assert c.emitted


def test_boolean() -> None:
    # [DOC] BOOLEAN -> BOOLEAN; PgOutputColumnValue.asBoolean: "t".equalsIgnoreCase(value)
    c = codec("bool")
    assert c.schema == {"type": "boolean", "optional": True}
    assert c.convert("t") is True
    assert c.convert("f") is False


def test_bad_integer_names_column_type_and_text() -> None:
    with pytest.raises(DecodeError, match=r"column 'c' \(int4\).*'12x'"):
        codec("int4").convert("12x")


# ---------------------------------------------------------------------------- floating point


def test_double_plain_range_is_a_plain_float() -> None:
    # [DOC] DOUBLE PRECISION -> FLOAT64; Java prints 1e-3 <= |d| < 1e7 without exponent
    c = codec("float8")
    assert c.schema == {"type": "double", "optional": True}
    value = c.convert("123.456")
    assert value == 123.456
    assert type(value) is float


@pytest.mark.parametrize(
    ("text", "json_text"),
    [
        ("1e+16", "1.0E16"),  # [JAVA] Double.toString(1e16)
        ("12345678.9", "1.23456789E7"),  # >= 1e7 -> computerized scientific notation
        ("0.0001", "1.0E-4"),  # < 1e-3
        ("-2.5e-05", "-2.5E-5"),
        ("NaN", '"NaN"'),  # Jackson QUOTE_NON_NUMERIC_NUMBERS (default on) writes NaN as a string
        ("Infinity", '"Infinity"'),
        ("-Infinity", '"-Infinity"'),
    ],
)
def test_double_outside_plain_range_renders_like_java(text: str, json_text: str) -> None:
    value = codec("float8").convert(text)
    assert isinstance(value, JavaDouble)
    assert value.json_text() == json_text


@pytest.mark.parametrize(
    ("text", "json_text"),
    [
        ("3.14", "3.14"),  # [JAVA] Float.toString(3.14f)
        ("1e-05", "1.0E-5"),
        ("3.4028235e+38", "3.4028235E38"),  # Float.MAX_VALUE
        ("100", "100.0"),
        ("-0", "-0.0"),
        ("NaN", '"NaN"'),
    ],
)
def test_real_renders_like_java_float(text: str, json_text: str) -> None:
    c = codec("float4")
    assert c.schema == {"type": "float", "optional": True}  # [DOC] REAL -> FLOAT32
    value = c.convert(text)
    assert isinstance(value, JavaFloat)
    assert value.json_text() == json_text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_text_round_trips(value: float) -> None:
    text = JavaDouble(value).json_text()
    assert float(text) == value
    assert "E" in text or value == 0 or 1e-3 <= abs(value) < 1e7


# ---------------------------------------------------------------------------- numeric / decimal


def test_numeric_precise_fixed_scale() -> None:
    # [SVD] Decimal.builder(scale).parameter("connect.decimal.precision", precision); [KC] order
    c = codec("numeric", numeric_typmod(5, 2))
    assert c.schema == {
        "type": "bytes",
        "optional": True,
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "2", "connect.decimal.precision": "5"},
    }
    assert c.convert("123.45") == b64((12345).to_bytes(2, "big"))  # "MDk="
    assert c.convert("0.00") == "AA=="  # BigInteger.ZERO.toByteArray() == {0}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # [JAVA] BigInteger.toByteArray(): minimal big-endian two's complement of the unscaled value
        ("-1.00", "nA=="),  # -100 -> 0x9C
        ("-1.28", "gA=="),  # -128 -> 0x80 (one byte)
        ("-1.29", "/38="),  # -129 -> 0xFF7F
        ("1.28", "AIA="),  # 128 -> 0x0080 (sign byte needed)
        ("-0.01", "/w=="),  # -1 -> 0xFF
        ("-327.68", "gAA="),  # -32768 -> 0x8000
    ],
)
def test_numeric_negative_twos_complement(text: str, expected: str) -> None:
    assert codec("numeric", numeric_typmod(10, 2)).convert(text) == expected


def test_numeric_rescales_to_declared_scale() -> None:
    # [PVC] withScaleAdjustedIfNeeded: setScale(column scale)
    c = codec("numeric", numeric_typmod(6, 3))
    assert unscaled_of(c.convert("1.5")) == 1500
    with pytest.raises(DecodeError, match="rounding necessary"):
        c.convert("1.23456")


def test_numeric_precise_variable_scale() -> None:
    # [VSD] struct {scale int32, value bytes}, doc "Variable scaled decimal"; [PVC] strips zeros
    c = codec("numeric")
    assert c.schema == {
        "type": "struct",
        "fields": [
            {"type": "int32", "optional": False, "field": "scale"},
            {"type": "bytes", "optional": False, "field": "value"},
        ],
        "optional": True,
        "name": "io.debezium.data.VariableScaleDecimal",
        "version": 1,
        "doc": "Variable scaled decimal",
    }
    assert c.convert("1.500") == {"scale": 1, "value": "Dw=="}  # 15, scale 1
    assert c.convert("100") == {"scale": 0, "value": "ZA=="}  # stripTrailingZeros, scale < 0 -> 0
    assert c.convert("-0.001") == {"scale": 3, "value": "/w=="}
    assert c.convert("0.000") == {"scale": 0, "value": "AA=="}


@pytest.mark.parametrize(("special", "kind"), [("NaN", "nan"), ("Infinity", "infinity"), ("-Infinity", "infinity")])
@pytest.mark.parametrize("typmod", [-1, numeric_typmod(5, 2)])
def test_numeric_precise_special_values_become_null_and_are_counted(special: str, kind: str, typmod: int) -> None:
    # Issue 10 finding 5: [SVD] precise mode cannot express NaN/Infinity; Debezium logs and
    # writes null and keeps streaming. Before the fix this raised DecodeError (a terminal error).
    UNREPRESENTABLE.drain()
    c = codec_for(Column("amount", 0, "numeric", typmod), DEFAULT, table="public.odd")
    assert c.convert(special) is None
    assert UNREPRESENTABLE.drain() == {("public.odd", "amount", kind): 1}


def test_numeric_precise_special_value_in_not_null_column_gets_zero_or_default() -> None:
    # A null in a required field fails Kafka's JsonConverter ("Invalid null value for required
    # field"); [JVC] convertValue falls back to the schema default, else the type's zero.
    fixed = codec("numeric", numeric_typmod(5, 2), optional=False)
    assert unscaled_of(fixed.convert("NaN")) == 0
    variable = codec("numeric", optional=False)
    assert variable.convert("Infinity") == {"scale": 0, "value": "AA=="}
    defaulted = codec("numeric", numeric_typmod(5, 2), optional=False, default_text="1.50")
    assert unscaled_of(defaulted.convert("-Infinity")) == 150
    UNREPRESENTABLE.drain()


def test_inexpressible_value_warnings_are_rate_limited_per_table_column_kind(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    report = UnrepresentableValues(interval_s=60.0, clock=lambda: now[0])
    with caplog.at_level("WARNING", logger="signaller.values"):
        for _ in range(1000):
            report.record("public.t", "amount", "nan", "NaN cannot be expressed")
        report.record("public.t", "amount", "infinity", "Infinity cannot be expressed")
        report.record("public.t", "other", "nan", "NaN cannot be expressed")
        now[0] = 61.0
        report.record("public.t", "amount", "nan", "NaN cannot be expressed")
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 4, messages
    assert messages[0] == "table public.t: NaN cannot be expressed; wrote null instead"
    assert "999 more such value(s)" in messages[3]
    assert report.drain() == {("public.t", "amount", "nan"): 1001, ("public.t", "amount", "infinity"): 1,
                              ("public.t", "other", "nan"): 1}
    assert report.drain() == {}


def test_fast_path_converter_still_raises_so_the_reader_retries_through_convert() -> None:
    # The fused pgoutput reader calls unguarded(convert) and, on any error, convert itself.
    c = codec("numeric")
    with pytest.raises(DecodeError):
        unguarded(c.convert)("NaN")
    assert unguarded(c.convert)("1.5") == c.convert("1.5")
    UNREPRESENTABLE.drain()


def test_numeric_double_mode() -> None:
    # [SVD] DOUBLE -> SchemaBuilder.float64(), value doubleValue(); NaN -> Double.NaN [DOC]
    modes = TypeModes(decimal_handling="double")
    c = codec("numeric", numeric_typmod(5, 2), modes)
    assert c.schema == {"type": "double", "optional": True}
    assert c.convert("-12.50") == -12.5
    nan = codec("numeric", modes=modes).convert("NaN")
    assert isinstance(nan, JavaDouble)
    assert nan.json_text() == '"NaN"'


def test_numeric_string_mode() -> None:
    # STRING -> BigDecimal.toPlainString() (Debezium 3.7 measured by the all-types compat run: 1e-100 is
    # 0.000...001, numeric(38,10) 0 is 0.0000000000); special -> SpecialValue.name() ("NAN") [DOC]
    modes = TypeModes(decimal_handling="string")
    c = codec("numeric", modes=modes)
    assert c.schema == {"type": "string", "optional": True}
    assert c.convert("1.500") == "1.500"  # no stripping outside precise mode
    assert c.convert("0.00000010") == "0.00000010"  # no exponent
    assert codec("numeric", numeric_typmod(38, 10), modes).convert("0") == "0.0000000000"
    assert c.convert("-123.4") == "-123.4"
    assert c.convert("NaN") == "NAN"
    assert c.convert("Infinity") == "POSITIVE_INFINITY"
    assert codec("numeric", numeric_typmod(5, 2), modes).convert("1.5") == "1.50"


@given(st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-(10**20), max_value=10**20))
def test_decimal_encoding_round_trips(value: Decimal) -> None:
    text = f"{value:.4f}"
    encoded = codec("numeric", numeric_typmod(30, 4)).convert(text)
    assert Decimal(unscaled_of(encoded)).scaleb(-4) == Decimal(text)
    raw = base64.b64decode(encoded)
    if len(raw) > 1:  # minimal: no redundant sign byte
        assert not (raw[0] == 0x00 and raw[1] < 0x80)
        assert not (raw[0] == 0xFF and raw[1] >= 0x80)


def test_money() -> None:
    # [PVC] moneySchema: Decimal.builder(money.fraction.digits) without precision parameter
    c = codec("money")
    assert c.schema["parameters"] == {"scale": "2"}
    assert unscaled_of(c.convert("$1,234.56")) == 123456
    assert unscaled_of(c.convert("-$1.50")) == -150
    assert codec("money", modes=TypeModes(decimal_handling="string")).convert("$1,234.50") == "1234.50"


# ---------------------------------------------------------------------------- strings and friends


@pytest.mark.parametrize(
    "type_name", ["text", "varchar", "bpchar", "char", "name", "inet", "cidr", "int4range"]
)
def test_plain_strings(type_name: str) -> None:
    c = codec(type_name)
    assert c.schema == {"type": "string", "optional": True}
    assert c.convert("ab  ") == "ab  "  # bpchar padding is kept [JVC] convertString


@pytest.mark.parametrize(
    ("type_name", "schema_name"),
    [
        ("uuid", "io.debezium.data.Uuid"),  # [SF] datatypeUuidSchema
        ("json", "io.debezium.data.Json"),  # [SF] datatypeJsonSchema
        ("jsonb", "io.debezium.data.Json"),
        ("xml", "io.debezium.data.Xml"),  # [DOC] XML
    ],
)
def test_semantic_strings(type_name: str, schema_name: str) -> None:
    c = codec(type_name)
    assert c.schema == {"type": "string", "optional": True, "name": schema_name, "version": 1}
    assert c.convert('{"a": 1}') == '{"a": 1}'


def test_enum() -> None:
    # [SF] datatypeEnumSchema: string, io.debezium.data.Enum v1, parameter allowed (comma-joined)
    c = codec("mood", enum_values=("sad", "ok", "happy"), optional=False)
    assert c.schema == {
        "type": "string",
        "optional": False,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "sad,ok,happy"},
    }
    assert c.convert("ok") == "ok"


def test_bits() -> None:
    # [DOC] BIT(1) -> BOOLEAN; BIT(>1)/VARBIT -> io.debezium.data.Bits, little-endian bytes [PVC]
    assert codec("bit", 1).schema == {"type": "boolean", "optional": True}
    assert codec("bit", 1).convert("1") is True
    bits = codec("bit", 10)
    assert bits.schema["parameters"] == {"length": "10"}
    assert bits.convert("0100000001") == b64(bytes([0x01, 0x01]))
    assert codec("varbit").schema["parameters"] == {"length": "2147483647"}


# ---------------------------------------------------------------------------- bytea


@pytest.mark.parametrize(
    ("mode", "schema_type", "expected"),
    [
        ("bytes", "bytes", "AQL/"),  # JsonConverter writes bytes as base64
        ("base64", "string", "AQL/"),  # [JVC] Base64.getEncoder()
        ("base64-url-safe", "string", "AQL_"),  # Base64.getUrlEncoder()
        ("hex", "string", "0102ff"),  # HexConverter (lower case)
    ],
)
def test_bytea_modes(mode: Any, schema_type: str, expected: str) -> None:
    c = codec("bytea", modes=TypeModes(binary_handling=mode))
    assert c.schema == {"type": schema_type, "optional": True}
    assert c.convert("\\x0102ff") == expected


def test_bytea_requires_hex_output() -> None:
    with pytest.raises(DecodeError, match="bytea_output=hex"):
        codec("bytea").convert("abc")


# ---------------------------------------------------------------------------- temporal


@pytest.mark.parametrize(
    ("mode", "name"),
    [
        ("adaptive", "io.debezium.time.Date"),  # [TPM] Date::builder
        ("adaptive_time_microseconds", "io.debezium.time.Date"),
        ("connect", "org.apache.kafka.connect.data.Date"),  # [KC] int32 v1
    ],
)
def test_date(mode: Any, name: str) -> None:
    c = codec("date", modes=TypeModes(time_precision=mode))
    assert c.schema == {"type": "int32", "optional": True, "name": name, "version": 1}
    assert c.convert("2018-06-20") == 17702
    assert c.convert("1969-12-31") == -1
    assert c.convert("0001-01-01 BC") == -719528  # year 0 (proleptic) [DTF] era parsing
    assert c.convert("10000-01-01") == 2932897


def test_date_infinity_is_what_debezium_streams() -> None:
    # Measured against Debezium 3.7 (tests/compat): streamed events write 5877611-06-21 and
    # -5877611-06-22 as epoch days; its snapshot READs write other values (README allow-list),
    # the streamed ones are used for both.
    c = codec("date")
    assert c.convert("infinity") == 2146033979
    assert c.convert("-infinity") == -2147472691


@pytest.mark.parametrize("mode", ["adaptive", "adaptive_time_microseconds", "connect"])
def test_date_array_infinity_is_what_debezium_writes_for_elements(mode: Any) -> None:
    # Debezium 3.7 writes ±infinity elements of a date[] differently from a date column, the same
    # in streamed events and snapshot READs, in every time.precision.mode.
    c = codec("_date", element_type_name="date", modes=TypeModes(time_precision=mode))
    assert c.convert("{infinity,-infinity,2024-01-01,NULL}") == [-622191234, -625821272, 19723, None]
    assert c.convert("{\"0044-03-15 BC\"}") == [-735160]  # the era is kept (README allow-list)


@pytest.mark.parametrize(
    ("mode", "typmod", "node", "value"),
    [
        # [TPM] ADAPTIVE: p <= 3 -> Time (ms, int32), p <= 6 -> MicroTime (µs, int64)
        ("adaptive", -1, ("int64", "io.debezium.time.MicroTime"), 49_530_123_456),
        ("adaptive", 6, ("int64", "io.debezium.time.MicroTime"), 49_530_123_456),
        ("adaptive", 3, ("int32", "io.debezium.time.Time"), 49_530_123),
        ("adaptive_time_microseconds", 3, ("int64", "io.debezium.time.MicroTime"), 49_530_123_456),
        ("connect", 6, ("int32", "org.apache.kafka.connect.data.Time"), 49_530_123),
    ],
)
def test_time(mode: Any, typmod: int, node: tuple[str, str], value: int) -> None:
    c = codec("time", typmod, TypeModes(time_precision=mode))
    assert c.schema == {"type": node[0], "optional": True, "name": node[1], "version": 1}
    assert c.convert("13:45:30.123456") == value


def test_time_end_of_day() -> None:
    # Strings.asDuration accepts 24:00:00; MicroTime accepts large values in adaptive modes
    assert codec("time").convert("24:00:00") == 86_400_000_000


@pytest.mark.parametrize(
    ("mode", "typmod", "node", "value"),
    [
        # [DOC] "2018-06-20 15:13:16.945104" -> MicroTimestamp 1529507596945104
        ("adaptive", -1, "io.debezium.time.MicroTimestamp", 1529507596945104),
        ("adaptive", 3, "io.debezium.time.Timestamp", 1529507596945),
        ("adaptive_time_microseconds", 6, "io.debezium.time.MicroTimestamp", 1529507596945104),
        ("connect", 6, "org.apache.kafka.connect.data.Timestamp", 1529507596945),
    ],
)
def test_timestamp(mode: Any, typmod: int, node: str, value: int) -> None:
    c = codec("timestamp", typmod, TypeModes(time_precision=mode))
    assert c.schema == {"type": "int64", "optional": True, "name": node, "version": 1}
    assert c.convert("2018-06-20 15:13:16.945104") == value


def test_timestamp_before_epoch_and_bc() -> None:
    c = codec("timestamp")
    assert c.convert("1969-12-31 23:59:59.5") == -500_000
    # 44 BC is proleptic year -43; shifting by one 400-year cycle (146097 days) lands in 357 AD
    epoch_day = date(357, 3, 15).toordinal() - date(1970, 1, 1).toordinal() - 146097
    assert c.convert("0044-03-15 12:00:00 BC") == (epoch_day * 86400 + 43200) * 1_000_000


def test_timestamp_beyond_int64_micros_is_null_not_a_crash() -> None:
    # PostgreSQL's timestamp range ends in 294276; epoch µs overflow int64 after 294247-01-10,
    # which orjson (and Java's long) cannot hold: null + warning. Milliseconds still fit.
    UNREPRESENTABLE.drain()
    text = "294276-12-31 23:59:59.999999"
    assert codec("timestamp").convert(text) is None
    assert codec("timestamp", optional=False).convert(text) == 0
    assert codec("timestamp", 3).convert(text) == 9224318015999999
    assert codec("timestamp").convert("294247-01-10 04:00:54.775807") == 2**63 - 1
    assert UNREPRESENTABLE.drain() == {("", "c", "out_of_range"): 2}


def test_interval_micro_duration_saturates_like_javas_long_cast() -> None:
    # [MD] durationMicros returns (long) of a double: Java saturates, Python ints would not fit
    # orjson's 64 bits and stop the stream at serialization.
    c = codec("interval")
    assert c.convert("178000000 years") == 2**63 - 1
    assert c.convert("-178000000 years") == -(2**63)
    assert c.convert("2147483647 days 2562047788:00:54.775807") == 2**63 - 1


@pytest.mark.parametrize(
    ("mode", "typmod", "infinity", "minus_infinity"),
    [
        # Measured against Debezium 3.7: MicroTimestamp -> Long.MAX_VALUE / Long.MIN_VALUE;
        # millisecond timestamps -> pgjdbc's DATE_POSITIVE/NEGATIVE_INFINITY (ms).
        ("adaptive", -1, 2**63 - 1, -(2**63)),
        ("adaptive_time_microseconds", 6, 2**63 - 1, -(2**63)),
        ("adaptive", 3, 9223372036825200000, -9223372036832400000),
        ("adaptive_time_microseconds", 3, 9223372036825200000, -9223372036832400000),
        ("connect", -1, 9223372036825200000, -9223372036832400000),
    ],
)
def test_timestamp_infinity(mode: Any, typmod: int, infinity: int, minus_infinity: int) -> None:
    c = codec("timestamp", typmod, TypeModes(time_precision=mode))
    assert c.convert("infinity") == infinity
    assert c.convert("-infinity") == minus_infinity
    array = codec("_timestamp", typmod, TypeModes(time_precision=mode), element_type_name="timestamp")
    assert array.convert("{infinity,-infinity}") == [infinity, minus_infinity]


def test_timestamp_infinity_in_a_not_null_column_is_not_the_fallback() -> None:
    assert codec("timestamp", optional=False).convert("-infinity") == -(2**63)


@pytest.mark.parametrize(
    ("typmod", "text", "expected"),
    [
        # [ZTS] fractional width = column scale (6 by default): exactly that many digits, UTC, Z
        (-1, "2018-06-20 15:13:16.945104+02", "2018-06-20T13:13:16.945104Z"),
        (-1, "2018-06-20 15:13:16+05:30", "2018-06-20T09:43:16.000000Z"),
        (-1, "2018-06-20 00:30:00.5-03", "2018-06-20T03:30:00.500000Z"),
        (-1, "2018-01-01 00:10:00+01", "2017-12-31T23:10:00.000000Z"),
        (-1, "1900-01-01 00:00:00+00:53:28", "1899-12-31T23:06:32.000000Z"),  # offset with seconds
        (3, "2018-06-20 15:13:16.12+00", "2018-06-20T15:13:16.120Z"),
        (0, "2018-06-20 15:13:16+00", "2018-06-20T15:13:16Z"),  # width 0 -> ISO_OFFSET_DATE_TIME
        (3, "0044-03-15 12:00:00.5+00 BC", "-0043-03-15T12:00:00.500Z"),  # ISO_LOCAL_DATE sign
        (6, "12000-01-01 00:00:00+00", "+12000-01-01T00:00:00.000000Z"),
        (-1, "infinity", "infinity"),  # [PVC] infinity strings pass through
        (-1, "-infinity", "-infinity"),
    ],
)
def test_timestamptz(typmod: int, text: str, expected: str) -> None:
    c = codec("timestamptz", typmod)
    assert c.schema == {
        "type": "string",
        "optional": True,
        "name": "io.debezium.time.ZonedTimestamp",
        "version": 1,
    }
    assert c.convert(text) == expected


def _pg_timestamptz_text(moment: datetime, offset_minutes: int) -> str:
    """PostgreSQL's ISO output for a local time and offset (fraction trimmed, +HH[:MM])."""
    text = f"{moment.year:04d}-" + moment.strftime("%m-%d %H:%M:%S")
    if moment.microsecond:
        text += "." + f"{moment.microsecond:06d}".rstrip("0")
    sign = "-" if offset_minutes < 0 else "+"
    hours, minutes = divmod(abs(offset_minutes), 60)
    return text + f"{sign}{hours:02d}" + (f":{minutes:02d}" if minutes else "")


@given(
    st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31)),
    st.integers(min_value=-15 * 60, max_value=15 * 60),
    st.sampled_from([-1, 0, 1, 3, 6]),
)
def test_timestamptz_matches_utc_arithmetic(moment: datetime, offset_minutes: int, typmod: int) -> None:
    # [ZTS]: UTC instant, ISO_LOCAL_DATE + 'T' + HH:mm:ss + fraction of exactly `width` digits + 'Z'
    utc = moment - timedelta(minutes=offset_minutes)
    width = 6 if typmod == -1 else typmod
    fraction = f"{utc.microsecond:06d}"
    if width == 0:
        fraction = "." + fraction.rstrip("0") if utc.microsecond else ""
    else:
        fraction = "." + fraction[:width]
    expected = f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%S") + fraction + "Z"
    assert codec("timestamptz", typmod).convert(_pg_timestamptz_text(moment, offset_minutes)) == expected


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)))
def test_timestamp_micros_match_datetime_arithmetic(moment: datetime) -> None:
    text = _pg_timestamptz_text(moment, 0)[:-3]  # drop "+00": timestamp without time zone
    assert codec("timestamp").convert(text) == (moment - datetime(1970, 1, 1)) // timedelta(microseconds=1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # [ZT] ISO_OFFSET_TIME after withOffsetSameInstant(UTC): shortest fraction, Z
        ("10:15:30.5+02", "08:15:30.5Z"),
        ("10:15:30+00", "10:15:30Z"),
        ("01:00:00+02", "23:00:00Z"),
        ("23:30:00.123456-05:30", "05:00:00.123456Z"),
    ],
)
def test_timetz(text: str, expected: str) -> None:
    c = codec("timetz")
    assert c.schema == {
        "type": "string",
        "optional": True,
        "name": "io.debezium.time.ZonedTime",
        "version": 1,
    }
    assert c.convert(text) == expected


def test_bad_timestamp_text() -> None:
    with pytest.raises(DecodeError, match=r"\(timestamptz\).*'yesterday'"):
        codec("timestamptz").convert("yesterday")


# ---------------------------------------------------------------------------- interval


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        # [MD] ((y*12+m)*365.25/12 + d) days ... in doubles, truncated; [PGI] postgres style
        ("1 year 2 mons 3 days 04:05:06.789", 37_091_106_789_000),
        ("1 mon", 2_629_800_000_000),  # 30.4375 days
        ("00:00:06.789", 6_789_000),
        ("-1 days +02:03:00", -86_400_000_000 + 7_380_000_000),
        ("-00:00:01.5", -1_500_000),
        ("00:00:00", 0),
        ("P1Y2M3DT4H5M6.789S", 37_091_106_789_000),  # IntervalStyle iso_8601 [PGI]
    ],
)
def test_interval_micro_duration(text: str, micros: int) -> None:
    c = codec("interval")
    assert c.schema == {
        "type": "int64",
        "optional": True,
        "name": "io.debezium.time.MicroDuration",
        "version": 1,
    }
    assert c.convert(text) == micros


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        # [IV] "P" + y + "Y" + m + "M" + d + "DT" + h + "H" + min + "M" + seconds.stripTrailingZeros() + "S"
        ("1 year 2 mons 3 days 04:05:06.789", "P1Y2M3DT4H5M6.789S"),
        ("1 year 2 mons 3 days -04:05:06.789", "P1Y2M3DT-4H-5M-6.789S"),
        ("00:00:00", "P0Y0M0DT0H0M0S"),
        ("00:00:00.000001", "P0Y0M0DT0H0M0.000001S"),
        ("100:00:10", "P0Y0M0DT100H0M10S"),
    ],
)
def test_interval_string_mode(text: str, iso: str) -> None:
    c = codec("interval", modes=TypeModes(interval_handling="string"))
    assert c.schema == {"type": "string", "optional": True, "name": "io.debezium.time.Interval", "version": 1}
    assert c.convert(text) == iso


# ---------------------------------------------------------------------------- arrays


def test_int_array_schema_and_values() -> None:
    # [PVC] INT4_ARRAY -> SchemaBuilder.array(OPTIONAL_INT32_SCHEMA); [KC] "items" before "optional"
    c = codec("_int4", element_type_name="int4", optional=False)
    assert c.schema == {"type": "array", "items": {"type": "int32", "optional": True}, "optional": False}
    assert c.convert("{1,2,NULL}") == [1, 2, None]
    assert c.convert("{}") == []


def test_text_array_quoting() -> None:
    c = codec("_text")
    assert c.schema == {"type": "array", "items": {"type": "string", "optional": True}, "optional": True}
    literal = r'{"a b",c,"\"q\"","back\\slash","NULL",NULL,""}'
    assert c.convert(literal) == ["a b", "c", '"q"', "back\\slash", "NULL", None, ""]


def test_numeric_and_temporal_arrays_use_element_schemas() -> None:
    numeric = codec("_numeric", numeric_typmod(5, 2))
    assert numeric.schema["items"]["name"] == "org.apache.kafka.connect.data.Decimal"
    assert numeric.schema["items"]["optional"] is True
    assert numeric.convert("{1.00,-1.00}") == ["ZA==", "nA=="]
    tstz = codec("_timestamptz")
    assert tstz.convert('{"2018-06-20 15:13:16+02",NULL}') == ["2018-06-20T13:13:16.000000Z", None]
    assert codec("_bytea").convert('{"\\\\x01ff"}') == ["Af8="]


def test_enum_array_items_are_required() -> None:
    # [PVC] SchemaBuilder.array(Enum.builder(values)) -- element schema not optional
    c = codec("_mood", element_type_name="mood", enum_values=("a", "b"))
    assert c.schema["items"] == {
        "type": "string",
        "optional": False,
        "name": "io.debezium.data.Enum",
        "version": 1,
        "parameters": {"allowed": "a,b"},
    }
    assert c.convert("{a,b}") == ["a", "b"]


@pytest.mark.parametrize("type_name", ["_interval", "_money", "_xml", "_varbit", "_name", "_point", "_tsquery"])
def test_arrays_without_debezium_schema_are_left_out(type_name: str) -> None:
    # [PVC] MONEY/NAME/INTERVAL/VARBIT/XML/POINT arrays: "still need to be implemented" -> null schema
    assert not codec(type_name).emitted


@pytest.mark.parametrize(
    ("literal", "elements"),
    [
        ("{}", []),
        ("{ }", []),
        ("{1}", ["1"]),
        ("{null,NuLl}", [None, None]),
        ('{"null"}', ["null"]),
        ('{ "a" , b }', ["a", "b"]),
        (r'{"\\","\""}', ["\\", '"']),
        ('{"a,b","{c}"}', ["a,b", "{c}"]),
        ("[0:1]={7,8}", ["7", "8"]),
        (r"{a\,b}", ["a,b"]),
    ],
)
def test_array_literal_parsing(literal: str, elements: list[str | None]) -> None:
    assert parse_array_literal(literal) == elements


@pytest.mark.parametrize(
    "literal", ["{{1,2},{3,4}}", "[1:2][1:2]={{1,2},{3,4}}", "{1,2", "1,2", "{1,,2}", '{"a}']
)
def test_array_literal_errors(literal: str) -> None:
    with pytest.raises(ValueError):
        parse_array_literal(literal)


@pytest.mark.parametrize("literal", ["{{1,2},{3,4}}", "[1:2][1:2]={{1,2},{3,4}}", "{ {1},{2} }"])
def test_multidimensional_array_becomes_null_and_is_counted(literal: str) -> None:
    # Issue 10 finding 5: the schema is "array of int32"; a nested list would not fit it, so as
    # Debezium the value is null (an empty array in a NOT NULL column). Was a DecodeError.
    UNREPRESENTABLE.drain()
    c = codec_for(Column("grid", 0, "_int4"), DEFAULT, table="public.odd")
    assert c.schema["items"] == {"type": "int32", "optional": True}
    assert c.convert(literal) is None
    assert codec("_int4", optional=False).convert(literal) == []
    assert UNREPRESENTABLE.drain()[("public.odd", "grid", "multidimensional_array")] == 1


def test_malformed_one_dimensional_array_text_is_still_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="malformed"):
        codec("_int4").convert("{1,,2}")


def test_array_element_the_mode_cannot_express_becomes_a_null_element() -> None:
    UNREPRESENTABLE.drain()
    c = codec_for(Column("xs", 0, "_numeric"), DEFAULT, table="public.odd")
    assert c.convert("{1,NaN,-Infinity,NULL}") == [{"scale": 0, "value": "AQ=="}, None, None, None]
    assert UNREPRESENTABLE.drain() == {("public.odd", "xs", "nan"): 1, ("public.odd", "xs", "infinity"): 1}
    assert codec("_numeric", modes=TypeModes(decimal_handling="string")).convert("{NaN}") == ["NAN"]


def _pg_array_out(elements: list[str | None]) -> str:
    """PostgreSQL array_out quoting rules."""

    def one(element: str | None) -> str:
        if element is None:
            return "NULL"
        needs_quotes = (
            element == ""
            or element.upper() == "NULL"
            or any(ch in element for ch in '{}",\\')
            or any(ch in " \t\n\r\v\f" for ch in element)
        )
        if not needs_quotes:
            return element
        return '"' + element.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return "{" + ",".join(one(element) for element in elements) + "}"


@given(st.lists(st.one_of(st.none(), st.text())))
def test_array_literal_round_trip(elements: list[str | None]) -> None:
    assert parse_array_literal(_pg_array_out(elements)) == elements


# ---------------------------------------------------------------------------- fallback, modes, TOAST


def test_unknown_types_are_left_out_by_default() -> None:
    # [PVC] no schema builder and include.unknown.datatypes=false -> column omitted
    assert not codec("tsquery").emitted


def test_unknown_types_as_binary_when_included() -> None:
    # [PVC] includeUnknownDatatypes -> binaryMode.getSchema(), value = the text's bytes
    c = codec("tsquery", modes=TypeModes(include_unknown_datatypes=True))
    assert c.emitted
    assert c.schema == {"type": "bytes", "optional": True}
    assert c.convert("'a' & 'b'") == b64(b"'a' & 'b'")


def test_invalid_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"decimal\.handling\.mode"):
        TypeModes(decimal_handling="exact")  # type: ignore[arg-type]


def test_placeholders() -> None:
    # [UTP] string placeholder; bytes for binary; text/varchar/json arrays -> [placeholder];
    # int4/int8/date arrays -> placeholder bytes as numbers
    assert placeholder_for(codec("text")) == UNAVAILABLE_VALUE_PLACEHOLDER
    assert placeholder_for(codec("jsonb")) == UNAVAILABLE_VALUE_PLACEHOLDER
    assert placeholder_for(codec("bytea")) == b64(UNAVAILABLE_VALUE_PLACEHOLDER.encode())
    assert (
        placeholder_for(codec("bytea", modes=TypeModes(binary_handling="hex")))
        == UNAVAILABLE_VALUE_PLACEHOLDER
    )
    assert placeholder_for(codec("bytea", modes=TypeModes(binary_handling="base64"))) is None
    assert placeholder_for(codec("_text")) == [UNAVAILABLE_VALUE_PLACEHOLDER]
    assert placeholder_for(codec("_int8")) == list(UNAVAILABLE_VALUE_PLACEHOLDER.encode())
    assert placeholder_for(codec("int4")) is None
    assert placeholder_for(codec("_bool")) is None


POINT_SCHEMA = {
    "type": "struct",
    "fields": [
        {"type": "double", "optional": False, "field": "x"},
        {"type": "double", "optional": False, "field": "y"},
        {"type": "bytes", "optional": True, "field": "wkb"},
        {"type": "int32", "optional": True, "field": "srid"},
    ],
    "optional": True,
    "name": "io.debezium.data.geometry.Point",
    "version": 1,
    "doc": "Geometry (POINT)",
}


def wkb_point(x: float, y: float) -> str:
    """OGC WKB of POINT(x y): byte order 1 (little-endian), type 1, x, y; base64 as JSON bytes."""
    import struct

    return base64.b64encode(bytes([1]) + (1).to_bytes(4, "little") + struct.pack("<dd", x, y)).decode()


@pytest.mark.parametrize("binary", ["bytes", "base64", "base64-url-safe", "hex"])
def test_point_is_a_debezium_geometry_point_with_wkb_bytes_in_every_binary_mode(binary: Any) -> None:
    c = codec("point", modes=TypeModes(binary_handling=binary))
    assert c.emitted
    assert c.schema == POINT_SCHEMA
    assert c.convert("(1.5,-2.25)") == {"x": 1.5, "y": -2.25, "wkb": wkb_point(1.5, -2.25), "srid": None}
    # Debezium 3.7's bytes for this point, from a real run
    assert c.convert("(1.5,-2.25)")["wkb"] == "AQEAAAAAAAAAAAD4PwAAAAAAAALA"
    assert codec("point", optional=False).schema["optional"] is False


@pytest.mark.parametrize(
    ("text", "x", "y", "wkb"),
    [
        ("(0,0)", 0.0, 0.0, "AQEAAAAAAAAAAAAAAAAAAAAAAAAA"),
        ("(-1e+308,1e-300)", -1e308, 1e-300, "AQEAAACgyOuF88zh/1nz+MIfbqUB"),
        ("(NaN,Infinity)", float("nan"), float("inf"), "AQEAAAAAAAAAAAD4fwAAAAAAAPB/"),
        ("(-Infinity,-0)", float("-inf"), -0.0, None),
    ],
)
def test_point_edge_values(text: str, x: float, y: float, wkb: str | None) -> None:
    value = codec("point").convert(text)
    assert set(value) == {"x", "y", "wkb", "srid"}
    for got, expected in ((value["x"], x), (value["y"], y)):
        assert (got != got and expected != expected) or (got == expected and str(got).startswith("-") ==
                                                         str(expected).startswith("-"))
    if wkb is not None:
        assert value["wkb"] == wkb  # Debezium 3.7's bytes, from a real run
    assert value["srid"] is None


@pytest.mark.parametrize("text", ["1,2", "(1)", "(a,b)", "(1,2", ""])
def test_point_text_other_than_postgresqls_is_a_decode_error(text: str) -> None:
    with pytest.raises(DecodeError):
        codec("point").convert(text)


@pytest.mark.parametrize(
    "text", ["", "'a' 'cat':3 'fat':2A", "'it''s':1A,2B 'a b' 'x':3C,4", "'héllo' '✓'"]
)
def test_tsvector_is_postgresqls_text_as_io_debezium_data_tsvector(text: str) -> None:
    c = codec("tsvector")
    assert c.schema == {"type": "string", "optional": True, "name": "io.debezium.data.Tsvector", "version": 1}
    assert c.convert(text) == text


def test_tsvector_array_items_are_required_tsvectors() -> None:
    c = codec("_tsvector", element_type_name="tsvector")
    assert c.schema == {
        "type": "array",
        "items": {"type": "string", "optional": False, "name": "io.debezium.data.Tsvector", "version": 1},
        "optional": True,
    }
    assert c.convert('{"\'a\' \'b\'",""}') == ["'a' 'b'", ""]


# ---------------------------------------------------------------------------- geometric types
GEOMETRY_SCHEMA = {
    "type": "struct",
    "fields": [
        {"type": "bytes", "optional": False, "field": "wkb"},
        {"type": "int32", "optional": True, "field": "srid"},
        {"type": "map", "keys": {"type": "string", "optional": False}, "values": {"type": "string", "optional": False},
         "optional": True, "field": "extensions"},
    ],
    "optional": True,
    "name": "io.debezium.data.geometry.Geometry",
    "version": 2,
    "doc": "Geometry",
}


def test_line_is_a_debezium_geometry_line() -> None:
    c = codec("line")
    assert c.schema == {
        "type": "struct",
        "fields": [{"type": "double", "optional": False, "field": f} for f in ("a", "b", "c")],
        "optional": True, "name": "io.debezium.data.geometry.Line", "version": 1, "doc": "Geometry (LINE)",
    }
    assert c.convert("{1,2,3}") == {"a": 1.0, "b": 2.0, "c": 3.0}
    assert c.convert("{-1,0,1e+300}")["c"] == 1e300


# Debezium 3.7's values for these literals, from a real run.
@pytest.mark.parametrize(
    ("type_name", "text", "wkb", "extensions"),
    [
        ("lseg", "[(1,2),(3,4)]", "AQIAAAACAAAAAAAAAAAA8D8AAAAAAAAAQAAAAAAAAAhAAAAAAAAAEEA=", {"type": "lseg"}),
        ("box", "(3,4),(1,2)", "AQMAAAABAAAABQAAAAAAAAAAAAhAAAAAAAAAEEAAAAAAAAAIQAAAAAAAAABAAAAAAAAA8D8"
         "AAAAAAAAAQAAAAAAAAPA/AAAAAAAAEEAAAAAAAAAIQAAAAAAAABBA", {"type": "box"}),
        ("path", "[(1,2),(3,4)]", "AQIAAAACAAAAAAAAAAAA8D8AAAAAAAAAQAAAAAAAAAhAAAAAAAAAEEA=",
         {"type": "path", "closed": "false"}),
        ("polygon", "((1,2),(3,4),(5,6))", "AQMAAAABAAAABAAAAAAAAAAAAPA/AAAAAAAAAEAAAAAAAAAIQAAAA"
         "AAAABBAAAAAAAAAFEAAAAAAAAAYQAAAAAAAAPA/AAAAAAAAAEA=", {"type": "polygon"}),
    ],
)
@pytest.mark.parametrize("binary", ["bytes", "hex"])
def test_lseg_box_path_polygon_are_debezium_geometries_with_wkb_and_extensions(
    type_name: str, text: str, wkb: str, extensions: dict[str, str], binary: Any
) -> None:
    c = codec(type_name, modes=TypeModes(binary_handling=binary))
    assert c.emitted and c.schema == GEOMETRY_SCHEMA
    assert c.convert(text) == {"wkb": wkb, "srid": None, "extensions": extensions}


def test_circle_is_a_debezium_geometry_circle_around_a_point() -> None:
    c = codec("circle")
    assert c.schema["name"] == "io.debezium.data.geometry.Circle" and c.schema["fields"][0]["optional"] is False
    assert c.schema["fields"][0]["name"] == "io.debezium.data.geometry.Point"
    center = {"x": 1.0, "y": 2.0, "wkb": "AQEAAAAAAAAAAADwPwAAAAAAAABA", "srid": None}
    assert c.convert("<(1,2),3>") == {"center": center, "radius": 3.0}


@pytest.mark.parametrize(("type_name", "text"), [("line", "{1,2}"), ("lseg", "[(1,2)]"), ("box", "(1,2)"),
                                                 ("path", "[(1,2),(3)]"), ("circle", "<(1,2)>"), ("polygon", "(a,b)")])
def test_geometric_text_other_than_postgresqls_is_a_decode_error(type_name: str, text: str) -> None:
    with pytest.raises(DecodeError):
        codec(type_name).convert(text)


@pytest.mark.parametrize(("type_name", "item"), [("int2vector", "int16"), ("oidvector", "int64")])
def test_int_vectors_are_arrays_of_required_integers_with_their_values(type_name: str, item: str) -> None:
    c = codec(type_name)
    assert c.schema == {"type": "array", "items": {"type": item, "optional": False}, "optional": True}
    assert c.convert("1 2 3") == [1, 2, 3]  # Debezium 3.7 writes [] (the README's allow-list)
    assert c.convert("") == []
    with pytest.raises(DecodeError):
        c.convert("1 x")


def test_a_polygon_ring_already_closed_is_not_closed_again() -> None:
    # Debezium 3.7, from a real run: '((0,0),(1,0),(0,0))' keeps its three points.
    assert codec("polygon").convert("((0,0),(1,0),(0,0))")["wkb"] == (
        "AQMAAAABAAAAAwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADwPwAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==")


def test_java_prints_at_least_two_digits_the_closest_ones() -> None:
    # Debezium 3.7 writes the smallest real as 1.4E-45 (Float.toString), not 1E-45.
    assert codec("float4").convert("1e-45").json_text() == "1.4E-45"
    assert codec("float8").convert("5e-324").json_text() == "4.9E-324"
    assert codec("float8").convert("1e+20").json_text() == "1.0E20"


# ---------------------------------------------------------------------------- arrays found by the all-types suite


def test_box_arrays_split_on_semicolons() -> None:
    # box is the one built-in type whose typdelim is ';': its array text is {(3,4),(1,2);(0,0),(0,0)}
    assert parse_array_literal("{(3,4),(1,2);NULL;(0,0),(0,0)}", ";") == ["(3,4),(1,2)", None, "(0,0),(0,0)"]
    assert parse_array_literal('{"(3,4),(1,2)";NULL}', ";") == ["(3,4),(1,2)", None]
    boxes = codec("_box", element_type_name="box").convert("{(3,4),(1,2);(0,0),(0,0)}")
    assert [b["extensions"] for b in boxes] == [{"type": "box"}, {"type": "box"}]


@pytest.mark.parametrize("element", ["line", "lseg", "box", "path", "polygon", "circle"])
def test_geometric_arrays_are_arrays_of_their_element_schema_with_optional_items(element: str) -> None:
    c = codec(f"_{element}", element_type_name=element)
    assert c.emitted and c.schema["type"] == "array"
    assert c.schema["items"] == {**codec(element).schema, "optional": True}


def test_int_vector_arrays_have_required_items_and_null_for_a_null_element() -> None:
    c = codec_for(Column("vs", 0, "_int2vector", element_type_name="int2vector"), DEFAULT, table="public.odd")
    assert c.schema["items"] == {"type": "array", "items": {"type": "int16", "optional": False}, "optional": False}
    assert c.convert('{"1 2",""}') == [[1, 2], []]
    UNREPRESENTABLE.drain()
    assert c.convert('{"1 2",NULL}') is None  # as Debezium: a NULL element does not fit required items
    assert UNREPRESENTABLE.drain() == {("public.odd", "vs", "null_element"): 1}
    assert codec("_oidvector", element_type_name="oidvector").schema["items"]["items"]["type"] == "int64"


def test_required_item_arrays_with_a_null_element_are_null_as_debezium() -> None:
    enums = codec("_mood", element_type_name="mood", enum_values=("a", "b"))
    assert enums.convert("{a,NULL}") is None
    assert codec("_tsvector", element_type_name="tsvector").convert("{a,NULL}") is None
    assert codec("_mood", element_type_name="mood", enum_values=("a", "b"), optional=False).convert("{NULL}") == []


@pytest.mark.parametrize(("typmod", "node"), [
    (1, {"type": "boolean", "optional": True}),
    (12, {"type": "bytes", "optional": True, "name": "io.debezium.data.Bits", "version": 1,
          "parameters": {"length": "12"}}),
])
def test_bit_arrays_are_declared_with_the_element_schema_and_always_null_as_debezium(
        typmod: int, node: dict[str, Any]) -> None:
    c = codec("_bit", typmod, element_type_name="bit")
    assert c.emitted and c.schema == node
    assert c.convert("{1,0}") is None and c.convert("{}") is None
    assert not codec("_varbit", 5, element_type_name="varbit").emitted


def test_postgis_values_keep_their_ewkb_and_read_the_srid_as_debezium() -> None:
    ewkb = "0101000020E6100000000000000000F03F0000000000000040"  # SRID=4326;POINT(1 2)
    geometry = codec("geometry")
    assert geometry.schema["name"] == "io.debezium.data.geometry.Geometry" and geometry.schema["version"] == 2
    assert geometry.convert(ewkb) == {"wkb": b64(bytes.fromhex(ewkb)), "srid": 4326, "extensions": None}
    assert geometry.convert("0101000000000000000000F03F0000000000000040")["srid"] is None
    geography = codec("geography")
    assert geography.schema == {
        "type": "struct",
        "fields": [{"type": "bytes", "optional": False, "field": "wkb"},
                   {"type": "int32", "optional": True, "field": "srid"}],
        "optional": True, "name": "io.debezium.data.geometry.Geography", "version": 1, "doc": "Geography",
    }
    assert geography.convert(ewkb) == {"wkb": b64(bytes.fromhex(ewkb)), "srid": 4326}
    with pytest.raises(DecodeError):
        geometry.convert("01")


def test_postgis_arrays_split_on_colons() -> None:
    point = "0101000000000000000000F03F0000000000000040"
    values = codec("_geometry", element_type_name="geometry").convert(f"{{{point}:NULL:{point}}}")
    assert [v and v["wkb"] for v in values] == [b64(bytes.fromhex(point)), None, b64(bytes.fromhex(point))]


def test_arrays_of_unknown_types_are_required_binary_items_when_unknown_types_are_included() -> None:
    modes = TypeModes(include_unknown_datatypes=True)
    c = codec("_aclitem", modes=modes, element_type_name="aclitem")
    assert c.emitted and c.schema == {"type": "array", "items": {"type": "bytes", "optional": False}, "optional": True}
    assert c.convert('{=r/postgres,"a b"}') == [b64(b"=r/postgres"), b64(b"a b")]
    assert c.convert("{=r/postgres,NULL}") is None
    hex_items = codec("_xid", modes=TypeModes(include_unknown_datatypes=True, binary_handling="hex"),
                      element_type_name="xid")
    assert hex_items.schema["items"] == {"type": "string", "optional": False}
    assert not codec("_aclitem", element_type_name="aclitem").emitted  # the default: left out
    for still_left_out in ("money", "name", "interval", "varbit", "xml", "point", "refcursor"):
        assert not codec(f"_{still_left_out}", modes=modes, element_type_name=still_left_out).emitted
