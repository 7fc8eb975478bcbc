"""The parts of the wire format and the offsets a source owns (issue 16): a source's own ``source`` block
(``wire.source_block.SourceBlock``) in the JSON and Avro envelopes, and its own offset keys in the
offset record, while the built-in (PostgreSQL) layouts stay as they were."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
from fastavro import parse_schema, schemaless_reader

from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.state import Offsets
from signaller.wire.avro import avro_schema
from signaller.wire.avro_serializer import AvroTableSerializer
from signaller.wire.columns import ColumnCodec
from signaller.wire.connect import field, primitive, struct
from signaller.wire.envelope import EnvelopeSerializer

pytestmark = pytest.mark.unit

TABLE = TableId("shop", "items")
SCHEMA = TableSchema(TABLE, (Column("id", 0, "int", optional=False, is_key=True), Column("name", 0, "varchar")))
CODECS = {
    "id": ColumnCodec({"type": "int32", "optional": False}, int),
    "name": ColumnCodec({"type": "string", "optional": True}, str),
}


class ToyBlock:
    """A source block with members of its own: the change's ``pos`` and the event's ``lsn`` as ``pos``."""

    schema = struct("io.debezium.connector.toy.Source", [
        field("connector", primitive("string", optional=False)),
        field("ts_ms", primitive("int64", optional=False)),
        field("pos", primitive("int64", optional=True)),
        field("snapshot", primitive("string", optional=True)),
    ], optional=False)

    def streamed(self, change: Any) -> dict[str, Any]:
        return {"connector": "toy", "ts_ms": change.tx.commit_ts_us // 1000, "pos": change.pos, "snapshot": "false"}

    def of_event(self, event: ChangeEvent, ts_us: int) -> dict[str, Any]:
        return {"connector": "toy", "ts_ms": ts_us // 1000, "pos": event.lsn, "snapshot": event.snapshot or "false"}


class ToyTx:
    xid = 7
    commit_ts_us = 1_700_000_000_123_000
    last_commit_lsn = None


class ToyChange:
    op = Op.CREATE
    before = None
    after = {"id": 1, "name": "a"}  # noqa: RUF012
    lsn = 10
    pos = 4242
    tx = ToyTx()

    @property
    def event(self) -> ChangeEvent:
        raise AssertionError("a streamed change is rendered from its parts")


def test_json_envelope_takes_the_source_block_schema_and_values() -> None:
    serializer = EnvelopeSerializer(SCHEMA, CODECS, topic_prefix="p", database="shop", source_block=ToyBlock())
    key, value = serializer.serialize(ToyChange(), ts_us_now=5_000_000)
    record = orjson.loads(value)
    assert record["schema"]["fields"][2]["name"] == "io.debezium.connector.toy.Source"
    assert record["payload"]["source"] == {"connector": "toy", "ts_ms": 1_700_000_000_123, "pos": 4242,
                                           "snapshot": "false"}
    assert record["payload"]["after"] == {"id": 1, "name": "a"}
    assert record["payload"]["op"] == "c"
    assert orjson.loads(key or b"")["payload"] == {"id": 1}
    read_key, read = serializer.serialize_read({"id": 2, "name": "b"}, 5, 99, ts_us_now=6_000_000)
    assert orjson.loads(read)["payload"]["source"] == {"connector": "toy", "ts_ms": 6000, "pos": 99,
                                                       "snapshot": "incremental"}
    assert orjson.loads(read_key or b"")["payload"] == {"id": 2}


def test_avro_envelope_takes_the_source_block_schema_and_values() -> None:
    class Ids:
        def id_for(self, topic: str, *, key: bool, schema: str, table: str | None) -> int:
            return 3

    serializer = AvroTableSerializer(SCHEMA, CODECS, topic="p.shop.items", topic_prefix="p", database="shop",
                                     ids=Ids(), source_block=ToyBlock())
    _, value = serializer.serialize(ToyChange(), ts_us_now=5_000_000)
    decoded = schemaless_reader(io.BytesIO(value[5:]), parse_schema(avro_schema(serializer.envelope_schema)))
    assert decoded["source"] == {"connector": "toy", "ts_ms": 1_700_000_000_123, "pos": 4242, "snapshot": "false"}


def test_offsets_with_source_keys_round_trip_and_the_postgresql_record_is_unchanged() -> None:
    own = Offsets(7 << 32 | 1234, snapshot={"q": 1},
                  source_keys={"file": "bin.000007", "pos": 1234, "gtids": "0-1-9", "ts_sec": 17})
    body = orjson.loads(own.to_json())
    assert body == {"format_version": 1, "position": 7 << 32 | 1234, "file": "bin.000007", "pos": 1234,
                    "gtids": "0-1-9", "ts_sec": 17, "snapshot": {"q": 1}}
    assert Offsets.from_json(own.to_json(), "test") == own
    postgres = Offsets(100, ts_usec=5)
    assert postgres.to_json() == b'{"format_version":1,"lsn":100,"ts_usec":5}'
    assert Offsets.from_json(postgres.to_json(), "test") == postgres
