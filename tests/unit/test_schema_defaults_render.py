"""Column defaults in the embedded schema render as Jackson writes them (Java float text)."""

from __future__ import annotations

import json

import pytest

from signaller.model import Column, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.wire.envelope import EnvelopeSerializer

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("type_name", "oid", "default", "text"), [
    ("float4", 700, "2.5", b'"default":2.5'),
    ("float4", 700, "0.1", b'"default":0.1'),
    ("float4", 700, "1e10", b'"default":1.0E10'),
    ("float8", 701, "1e10", b'"default":1.0E10'),
])
def test_a_real_column_with_a_constant_default_gets_a_serializer(type_name: str, oid: int, default: str,
                                                                    text: bytes) -> None:
    """A ``real`` column with a default used to stop capture of its table (TypeError rendering the
    schema); the default is now written in Java's float text, as Debezium's JsonConverter does."""
    columns = (Column("id", 20, "int8", optional=False, is_key=True), Column("f", oid, type_name, default_text=default))
    table = TableSchema(TableId("public", "t"), columns, key=("id",))
    serializer = EnvelopeSerializer(table, {c.name: codec_for(c, TypeModes()) for c in columns},
                                    topic_prefix="pg", database="db")
    key = serializer.serialize_key({"id": 1, "f": None})
    assert json.loads(key)["payload"] == {"id": 1}
    from signaller.model import ChangeEvent, Op
    event = ChangeEvent(Op.CREATE, table.table_id, None, {"id": 1, "f": None}, 64, 96, 32, 7, 1_700_000_000_000_000)
    value = serializer.serialize_value(event, ts_us_now=1_700_000_000_001_000)
    assert text in value
    assert json.loads(value)["payload"]["after"]["id"] == 1
