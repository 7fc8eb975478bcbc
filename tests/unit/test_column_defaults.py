"""Constant column defaults: parsed from the catalog's expression, put in the Connect schema as
Debezium does, and written in place of a null value as Kafka's JsonConverter does."""

from __future__ import annotations

import json

import pytest

from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes
from signaller.sources.postgres.defaults import default_text, literal_text
from signaller.sources.postgres.reader import TxBegin
from signaller.wire.envelope import EnvelopeSerializer

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("expression", "text"), [
    ("'n/a'::text", "n/a"),
    ("'it''s'::character varying", "it's"),
    ("'-1'::integer", "-1"),
    ("42", "42"),
    ("-3.5", "-3.5"),
    ("('2024-02-29'::date)", "2024-02-29"),
    ("true", "t"),
    ("FALSE", "f"),
    ("'{}'::integer[]", "{}"),
    ("NULL::text", None),
    ("nextval('orders_id_seq'::regclass)", None),
    ("now()", None),
    ("('a'::text || 'b'::text)", None),
    (None, None),
])
def test_constant_defaults_are_recognised_and_expressions_are_not(expression: str | None, text: str | None) -> None:
    assert literal_text(expression) == text


TABLE = TableId("public", "items")
SCHEMA = TableSchema(TABLE, (
    Column("id", 23, "int4", optional=False, is_key=True),
    Column("label", 25, "text", default_text="n/a"),
    Column("qty", 23, "int4", default_text="42"),
    Column("price", 1700, "numeric", type_modifier=(10 << 16 | 2) + 4, default_text="1.50"),
    Column("broken", 23, "int4", default_text="not a number"),
    Column("plain", 25, "text"),
))


def serializer() -> EnvelopeSerializer:
    return EnvelopeSerializer.for_table(SCHEMA, TypeModes(), topic_prefix="pg1", database="shop")


def test_defaults_appear_in_the_schema_after_the_other_members() -> None:
    value = json.loads(serializer().serialize_value(
        ChangeEvent(Op.CREATE, TABLE, None, {"id": 1}, 10, 20, 5, 7, 1), ts_us_now=2))
    fields = {f["field"]: f for f in value["schema"]["fields"][1]["fields"]}
    assert fields["label"] == {"type": "string", "optional": True, "default": "n/a", "field": "label"}
    assert fields["qty"]["default"] == 42
    assert list(fields["price"])[-2:] == ["default", "field"] and fields["price"]["default"] == "AJY="  # 150, scale 2
    assert "default" not in fields["broken"] and "default" not in fields["plain"]


def test_a_null_value_is_written_as_the_default_in_both_paths() -> None:
    ser = serializer()
    row = {"id": 1, "label": None, "qty": None, "price": None, "broken": None, "plain": None}
    slow = json.loads(ser.serialize_value(ChangeEvent(Op.CREATE, TABLE, None, row, 10, 20, 5, 7, 1), ts_us_now=2))
    expected = {"id": 1, "label": "n/a", "qty": 42, "price": "AJY=", "broken": None, "plain": None}
    assert slow["payload"]["after"] == expected
    _, fast = ser.serialize_streamed(Op.UPDATE, None, row, 10, TxBegin(7, 20, 1, 5, 3), ts_us_now=2)
    assert json.loads(fast)["payload"]["after"] == expected
    kept = {**row, "label": "set", "qty": 0}
    assert json.loads(ser.serialize_value(ChangeEvent(Op.CREATE, TABLE, None, kept, 10, 20, 5, 7, 1),
                                          ts_us_now=2))["payload"]["after"]["qty"] == 0


@pytest.mark.parametrize(("expression", "type_name", "text"), [
    ("nextval('items_seq_seq'::regclass)", "int4", "0"),
    ("now()", "timestamptz", "1970-01-01 00:00:00+00"),
    ("CURRENT_TIMESTAMP", "timestamp", "1970-01-01 00:00:00"),
    ("CURRENT_DATE", "date", "1970-01-01"),
    ("gen_random_uuid()", "uuid", "00000000-0000-0000-0000-000000000000"),
    ("'7'::integer", "int4", "7"),
    ("now()", "interval", None),
    ("(1 + 2)", "int4", None),
])
def test_function_defaults_stand_for_the_types_zero_as_in_debezium(expression: str, type_name: str,
                                                                    text: str | None) -> None:
    assert default_text(expression, type_name) == text
