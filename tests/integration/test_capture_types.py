"""Every listed PostgreSQL type, streamed by the real sidecar, arrives in Debezium's default
representation (JsonConverter, schemas enabled). Expected values are computed here from the inputs
(days since the epoch, microseconds, two's-complement bytes...), never copied from the output."""

from __future__ import annotations

import base64
import json
import os
import re
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from tests.integration.capture_helpers import CaptureEnv, schema_fields

pytestmark = pytest.mark.integration

EPOCH_DAY = date(1970, 1, 1)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
UNAVAILABLE = "__debezium_unavailable_value"


def unscaled_b64(value: Decimal, scale: int) -> str:
    """Kafka Connect Decimal: the unscaled value as big-endian two's complement, minimal length
    (Java ``BigInteger.toByteArray``), base64 in JSON."""
    unscaled = int(value.scaleb(scale))
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode()


def micros_since_epoch(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def micro_duration(months: int, days: int, hours: int, minutes: int, seconds: Fraction) -> int:
    """Debezium MicroDuration: a month is 365.25 / 12 days."""
    days_total = months * Fraction(36525, 1200) + days
    return int((((days_total * 24 + hours) * 60 + minutes) * 60 + seconds) * 1_000_000)


COLUMNS = """
    id integer PRIMARY KEY,
    c_smallint smallint, c_integer integer, c_bigint bigint,
    c_numeric numeric(10, 2), c_numeric_neg numeric(10, 2), c_numeric_any numeric,
    c_real real, c_double double precision, c_boolean boolean,
    c_text text, c_varchar varchar(20), c_char char(5), c_bytea bytea,
    c_date date, c_time time, c_timetz timetz, c_timestamp timestamp, c_timestamptz timestamptz,
    c_interval interval, c_uuid uuid, c_json json, c_jsonb jsonb, c_enum {enum},
    c_int_array integer[], c_text_array text[], c_toast text
"""
COLUMN_NAMES = re.findall(r"(?:^|,)\s*(id|c_\w+) ", COLUMNS.strip())


def test_every_listed_type_round_trips_to_debeziums_default_representation(capture: CaptureEnv) -> None:
    t = capture.table
    mood = capture.create_enum(f"mood_{capture.suffix}", ["sad", "ok", "happy"])
    capture.create_table(COLUMNS.format(enum=mood))
    car = capture.start_streaming()

    the_uuid = str(uuid.uuid4())
    json_text = '{"b": 1, "a": [1, 2.5, "x"], "nested": {"k": null}}'
    text_value = 'héllo ✓ "quoted"\n\ttab \\ back'
    toast_value = base64.b64encode(os.urandom(15_000)).decode()  # 20,000 incompressible characters
    assert len(toast_value) > 8192
    capture.sql(
        f"INSERT INTO {t} VALUES (1, -32768, 2147483647, -9223372036854775808, 12345.67, -0.01, 3.14159, "
        "3.25, 2.718281828459045, true, %s, 'hello', 'ab', '\\x0001feff'::bytea, '2024-02-29', "
        "'13:14:15.123456', '13:14:15.123456+02', '2024-02-29 13:14:15.123456', "
        "'2024-02-29 13:14:15.123456+02', '1 mon 2 days 03:04:05.5', %s, %s, %s, 'happy', "
        "'{1,2,NULL,-3}', ARRAY['a', 'b c', NULL], NULL)",
        (text_value, the_uuid, json_text, json_text),
    )
    capture.sql(f"INSERT INTO {t} (id) VALUES (2)")
    capture.sql(f"INSERT INTO {t} (id, c_integer, c_toast) VALUES (3, 1, %s)", (toast_value,))
    # The TOASTed value is unchanged by this update: pgoutput does not send it (default replica identity).
    capture.sql(f"UPDATE {t} SET c_integer = 2 WHERE id = 3")
    stored = capture.sql(f"SELECT pg_column_size(c_toast), octet_length(c_toast) FROM {t} WHERE id = 3")[0]
    assert stored[0] > 8192 and stored[1] == len(toast_value), stored  # really stored out of line, uncompressed

    records = capture.reader().wait_for_count(4, 30, describe=car.log_tail)
    assert [r.op for r in records] == ["c", "c", "c", "u"]
    full, nulls, toasted, toast_update = (r.payload for r in records)

    expected = {
        "id": 1,
        "c_smallint": -32768,
        "c_integer": 2147483647,
        "c_bigint": -9223372036854775808,
        "c_numeric": unscaled_b64(Decimal("12345.67"), 2),
        "c_numeric_neg": unscaled_b64(Decimal("-0.01"), 2),
        "c_numeric_any": {"scale": 5, "value": unscaled_b64(Decimal("3.14159"), 5)},
        "c_real": 3.25,
        "c_double": 2.718281828459045,
        "c_boolean": True,
        "c_text": text_value,
        "c_varchar": "hello",
        "c_char": "ab   ",
        "c_bytea": base64.b64encode(bytes([0x00, 0x01, 0xFE, 0xFF])).decode(),
        "c_date": (date(2024, 2, 29) - EPOCH_DAY).days,
        "c_time": ((13 * 60 + 14) * 60 + 15) * 1_000_000 + 123456,
        "c_timetz": "11:14:15.123456Z",
        "c_timestamp": micros_since_epoch(datetime(2024, 2, 29, 13, 14, 15, 123456, tzinfo=UTC)),
        "c_timestamptz": "2024-02-29T11:14:15.123456Z",
        "c_interval": micro_duration(1, 2, 3, 4, Fraction(11, 2)),
        "c_uuid": the_uuid,
        "c_json": json_text,
        "c_enum": "happy",
        "c_int_array": [1, 2, None, -3],
        "c_text_array": ["a", "b c", None],
        "c_toast": None,
    }
    # Sanity of the independent computations themselves.
    assert expected["c_date"] == 19782
    assert expected["c_numeric"] == "EtaH" and expected["c_numeric_neg"] == "/w=="
    assert expected["c_interval"] == 2_813_645_500_000
    after = dict(full["after"])
    assert isinstance(after["c_jsonb"], str) and json.loads(after.pop("c_jsonb")) == json.loads(json_text)
    assert after == expected
    assert full["before"] is None

    assert nulls["after"] == {name: (2 if name == "id" else None) for name in COLUMN_NAMES}

    assert toasted["after"]["c_toast"] == toast_value
    assert toast_update["before"] is None
    assert toast_update["after"]["c_integer"] == 2
    assert toast_update["after"]["c_toast"] == UNAVAILABLE

    row_schema = schema_fields(records[0].value["schema"])["after"]
    columns = schema_fields(row_schema)

    def node(type_: str, name: str | None = None, parameters: dict[str, str] | None = None,
             **extra: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"type": type_, "optional": True, **extra}
        if name is not None:
            out["name"], out["version"] = name, 1
        if parameters is not None:
            out["parameters"] = parameters
        return out

    expected_schema = {
        "id": {"type": "int32", "optional": False},
        "c_smallint": node("int16"),
        "c_integer": node("int32"),
        "c_bigint": node("int64"),
        "c_numeric": node("bytes", "org.apache.kafka.connect.data.Decimal",
                          {"scale": "2", "connect.decimal.precision": "10"}),
        "c_numeric_neg": node("bytes", "org.apache.kafka.connect.data.Decimal",
                              {"scale": "2", "connect.decimal.precision": "10"}),
        "c_real": node("float"),
        "c_double": node("double"),
        "c_boolean": node("boolean"),
        "c_text": node("string"),
        "c_varchar": node("string"),
        "c_char": node("string"),
        "c_bytea": node("bytes"),
        "c_date": node("int32", "io.debezium.time.Date"),
        "c_time": node("int64", "io.debezium.time.MicroTime"),
        "c_timetz": node("string", "io.debezium.time.ZonedTime"),
        "c_timestamp": node("int64", "io.debezium.time.MicroTimestamp"),
        "c_timestamptz": node("string", "io.debezium.time.ZonedTimestamp"),
        "c_interval": node("int64", "io.debezium.time.MicroDuration"),
        "c_uuid": node("string", "io.debezium.data.Uuid"),
        "c_json": node("string", "io.debezium.data.Json"),
        "c_jsonb": node("string", "io.debezium.data.Json"),
        "c_enum": node("string", "io.debezium.data.Enum", {"allowed": "sad,ok,happy"}),
        "c_int_array": node("array", items={"type": "int32", "optional": True}),
        "c_text_array": node("array", items={"type": "string", "optional": True}),
        "c_toast": node("string"),
    }
    for name, want in expected_schema.items():
        got = {k: v for k, v in columns[name].items() if k != "field"}
        assert got == want, name
    variable = columns["c_numeric_any"]
    assert (variable["type"], variable["name"], variable["optional"]) == (
        "struct", "io.debezium.data.VariableScaleDecimal", True)
    assert {f["field"]: f["type"] for f in variable["fields"]} == {"scale": "int32", "value": "bytes"}
    assert list(columns) == COLUMN_NAMES
    assert car.alive()


def test_decimal_handling_modes_string_and_double(capture: CaptureEnv) -> None:
    t = capture.table
    capture.create_table("id integer PRIMARY KEY, fixed numeric(10, 2), negative numeric(10, 2), any_scale numeric")
    cars = {}
    for mode in ("string", "double"):
        slot, publication, prefix = capture.variant(mode)
        cars[mode] = (prefix, capture.sidecar(capture.connector_config(
            slot=slot, publication=publication, prefix=prefix, decimal_handling_mode=mode,
            offsets_file=capture.workdir / f"offsets-{mode}.json"), label=mode).start())
    for _prefix, car in cars.values():
        capture.wait_slot_active(car)
    capture.sql(f"INSERT INTO {t} VALUES (1, 12345.67, -0.01, 3.14159), (2, NULL, NULL, NULL)")

    expected = {
        "string": ({"id": 1, "fixed": "12345.67", "negative": "-0.01", "any_scale": "3.14159"}, "string"),
        "double": ({"id": 1, "fixed": 12345.67, "negative": -0.01, "any_scale": 3.14159}, "double"),
    }
    for mode, (prefix, car) in cars.items():
        records = capture.reader(capture.topic(t, prefix)).wait_for_count(2, 30, describe=car.log_tail)
        row, type_name = expected[mode]
        assert records[0].payload["after"] == row, mode
        assert records[1].payload["after"] == {"id": 2, "fixed": None, "negative": None, "any_scale": None}
        columns = schema_fields(schema_fields(records[0].value["schema"])["after"])
        for name in ("fixed", "negative", "any_scale"):
            assert {k: v for k, v in columns[name].items() if k != "field"} == {"type": type_name, "optional": True}
