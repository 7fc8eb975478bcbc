"""The sidecar with the Avro converter, against the real PostgreSQL, Kafka and schema registry: records in the
Confluent wire format decode (fastavro, writer schema fetched by id) to the payload the JSON converter writes;
an ALTER TABLE registers a new version; an incompatible change stops the sidecar with the table, subject and
reason; an unreachable registry is retried and nothing is lost."""

from __future__ import annotations

import base64
import io
import json
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from fastavro import parse_schema, schemaless_reader

from signaller.sinks.registry import SchemaRegistryClient
from tests.integration.capture_helpers import CaptureEnv, closed_port, wait_until

pytestmark = pytest.mark.integration

AVRO = "io.confluent.connect.avro.AvroConverter"


def avro_config(env: CaptureEnv, url: str, **kwargs: Any) -> dict[str, Any]:
    return env.connector_config(extra={"key.converter": AVRO, "value.converter": AVRO,
                                       "key.converter.schema.registry.url": url,
                                       "value.converter.schema.registry.url": url}, **kwargs)


def _plain(schema: Any) -> Any:
    """The schema without logical types: decoded values stay as the JSON payload has them."""
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_plain(item) for item in schema]
    return schema


class AvroTopic:
    """Reads a topic from the start and decodes its records with the writer schemas fetched by id."""

    def __init__(self, env: CaptureEnv, topic: str, registry: SchemaRegistryClient) -> None:
        self.registry = registry
        self.consumer = Consumer({"bootstrap.servers": env.stack.bootstrap_servers, "group.id": uuid.uuid4().hex,
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self.topic = topic
        self.records: list[tuple[Any, Any, int | None]] = []  # key, value, value schema id
        self._assigned = False

    def decode(self, data: bytes | None) -> tuple[Any, int | None]:
        if data is None:
            return None, None
        assert data[0] == 0, data[:8]
        schema_id = int.from_bytes(data[1:5], "big")
        parsed = parse_schema(_plain(json.loads(self.registry.schema_by_id(schema_id))))
        return schemaless_reader(io.BytesIO(data[5:]), parsed, None), schema_id

    def wait_for(self, count: int, timeout_s: float = 60) -> list[tuple[Any, Any, int | None]]:
        deadline = time.monotonic() + timeout_s
        while len(self.records) < count:
            assert time.monotonic() < deadline, f"{len(self.records)} of {count} records on {self.topic}"
            if not self._assigned:
                info = self.consumer.list_topics(self.topic, timeout=5).topics.get(self.topic)
                if info is None or info.error is not None or not info.partitions:
                    time.sleep(0.3)
                    continue
                self.consumer.assign([TopicPartition(self.topic, p, 0) for p in info.partitions])
                self._assigned = True
            for msg in self.consumer.consume(100, timeout=0.3):
                if msg.error():
                    continue
                key, _ = self.decode(msg.key())
                value, schema_id = self.decode(msg.value())
                self.records.append((key, value, schema_id))
        return self.records

    def close(self) -> None:
        self.consumer.close()


def _bytes_as_base64(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _bytes_as_base64(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bytes_as_base64(v) for v in value]
    return value


def _comparable(payload: dict[str, Any]) -> dict[str, Any]:
    """What two sidecars on the same log agree on: all but emission times and the topic prefix."""
    source = {k: v for k, v in payload["source"].items() if k != "name"}
    return {"before": payload["before"], "after": payload["after"], "op": payload["op"], "source": source}


def test_avro_records_decode_to_the_json_payload(capture: CaptureEnv, schema_registry: str) -> None:
    capture.create_table("id int PRIMARY KEY, note text, amount numeric(10,2), raw bytea, at timestamptz, "
                         "tags text[]")
    capture.sql(f"ALTER TABLE {capture.table} REPLICA IDENTITY FULL")
    slot, publication, prefix = capture.variant("avro")
    json_car = capture.start_streaming()
    avro_car = capture.start_streaming(capture.sidecar(avro_config(capture, schema_registry, slot=slot,
                                                                   publication=publication, prefix=prefix),
                                                       label="avro"))
    capture.sql(f"INSERT INTO {capture.table} VALUES (1, 'a', 12.50, '\\x01ff', '2024-03-01 10:00+00', "
                "'{x,y}'), (2, NULL, NULL, NULL, NULL, NULL)")
    capture.sql(f"UPDATE {capture.table} SET note = 'b', amount = -1.25 WHERE id = 1")
    capture.sql(f"DELETE FROM {capture.table} WHERE id = 2")
    json_records = capture.reader().wait_for_count(5, 60, json_car.log_tail)
    registry = SchemaRegistryClient(schema_registry)
    topic = AvroTopic(capture, capture.topic(prefix=prefix), registry)
    try:
        avro_records = topic.wait_for(5)
    finally:
        topic.close()
    assert avro_car.alive(), avro_car.log_tail()
    for json_record, (key, value, _) in zip(json_records, avro_records, strict=True):
        assert _bytes_as_base64(key) == json_record.key_payload
        if json_record.tombstone:
            assert value is None
        else:
            assert _comparable(_bytes_as_base64(value)) == _comparable(json_record.payload)
    versions = registry._request("GET", f"/subjects/{capture.topic(prefix=prefix)}-value/versions", "versions")
    assert versions.payload == [1]


def test_alter_table_registers_a_new_version_and_an_incompatible_change_stops_with_the_reason(
        capture: CaptureEnv, schema_registry: str) -> None:
    capture.create_table("id int PRIMARY KEY, note text")
    car = capture.start_streaming(capture.sidecar(avro_config(capture, schema_registry)))
    registry = SchemaRegistryClient(schema_registry)
    capture.sql(f"INSERT INTO {capture.table} VALUES (1, 'a')")
    capture.sql(f"ALTER TABLE {capture.table} ADD COLUMN qty int")
    capture.sql(f"INSERT INTO {capture.table} VALUES (2, 'b', 3)")
    topic = AvroTopic(capture, capture.topic(), registry)
    try:
        records = topic.wait_for(2)
    finally:
        topic.close()
    assert records[0][2] != records[1][2], "the ALTER TABLE gave the value a new schema id"
    assert records[1][1]["after"] == {"id": 2, "note": "b", "qty": 3}
    # text -> int: a BACKWARD registry refuses it (the new schema cannot read the old records)
    capture.sql(f"ALTER TABLE {capture.table} ALTER COLUMN note TYPE int USING 0")
    capture.sql(f"INSERT INTO {capture.table} VALUES (3, 4, 5)")
    car.wait_exit(60)
    log = car.log_text()
    subject = f"{capture.topic()}-value"
    assert subject in log and f"public.{capture.table}" in log and "incompatible" in log, car.log_tail()


def test_unreachable_registry_is_retried_and_nothing_is_lost(capture: CaptureEnv, schema_registry: str) -> None:
    capture.create_table("id int PRIMARY KEY, note text")
    down = capture.sidecar(avro_config(capture, f"http://127.0.0.1:{closed_port()}/apis/ccompat/v7"), label="down")
    capture.start_streaming(down)
    capture.sql(f"INSERT INTO {capture.table} VALUES (1, 'a'), (2, 'b')")
    wait_until(lambda: "unreachable" in down.log_text() or None, 60, "a registry retry", describe=down.log_tail)
    assert down.alive(), "an unreachable registry is transient: the sidecar keeps retrying"
    down.stop()
    capture.wait_slot_inactive(capture.slot)
    up = capture.sidecar(avro_config(capture, schema_registry), label="up")
    capture.start_streaming(up)
    topic = AvroTopic(capture, capture.topic(), SchemaRegistryClient(schema_registry))
    try:
        records = topic.wait_for(2)
    finally:
        topic.close()
    assert [value["after"]["id"] for _, value, _ in records] == [1, 2]


KEY_ONLY_TABLE = ("id int PRIMARY KEY, qty int NOT NULL, price numeric(10,2) NOT NULL, note text NOT NULL, "
                  "flag boolean NOT NULL, at timestamptz NOT NULL, day date NOT NULL, tags text[] NOT NULL, "
                  "raw bytea NOT NULL, label text NOT NULL DEFAULT 'none', n int NOT NULL DEFAULT 7, opt text")
KEY_ONLY_BEFORE = {"qty": 0, "price": "AA==", "note": "", "flag": False, "at": "1970-01-01T00:00:00Z", "day": 0,
                   "tags": [], "raw": "", "label": "none", "n": 7, "opt": None}
"""What Debezium writes for the columns a key-only old tuple leaves out: the schema default, else the type's
fallback (``JdbcValueConverters.convertValue``), null in a nullable column (tests/compat proves it side by side)."""


def test_default_replica_identity_delete_fills_not_null_columns_in_json_and_avro(
        capture: CaptureEnv, schema_registry: str) -> None:
    """A DELETE and a key-changing UPDATE under the default replica identity: the before image holds the key and,
    for every other NOT NULL column, Debezium's fallback; the JSON record fits its schema (no null in a required
    field) and the Avro sidecar writes the same records and keeps running."""
    capture.create_table(KEY_ONLY_TABLE)
    slot, publication, prefix = capture.variant("avro")
    json_car = capture.start_streaming()
    avro_car = capture.start_streaming(capture.sidecar(avro_config(capture, schema_registry, slot=slot,
                                                                   publication=publication, prefix=prefix),
                                                       label="avro"))
    for row_id in (1, 2):
        capture.sql(f"INSERT INTO {capture.table} (id, qty, price, note, flag, at, day, tags, raw, opt) VALUES "
                    f"({row_id}, 3, 9.99, 'x', true, '2024-03-01 10:00+00', '2024-03-01', '{{a}}', '\\x01', 'o')")
    capture.sql(f"DELETE FROM {capture.table} WHERE id = 1")
    capture.sql(f"UPDATE {capture.table} SET id = 20 WHERE id = 2")  # delete + tombstone + create
    json_records = capture.reader().wait_for_count(7, 60, json_car.log_tail)
    deletes = [r for r in json_records if not r.tombstone and r.payload["op"] == "d"]
    assert [r.payload["before"] for r in deletes] == [{"id": 1, **KEY_ONLY_BEFORE}, {"id": 2, **KEY_ONLY_BEFORE}]
    before_schema = next(f for f in deletes[0].value["schema"]["fields"] if f["field"] == "before")
    for member in before_schema["fields"]:
        assert member["optional"] or deletes[0].payload["before"][member["field"]] is not None, member
    registry = SchemaRegistryClient(schema_registry)
    topic = AvroTopic(capture, capture.topic(prefix=prefix), registry)
    try:
        avro_records = topic.wait_for(7)
    finally:
        topic.close()
    assert avro_car.alive(), avro_car.log_tail()
    for json_record, (key, value, _) in zip(json_records, avro_records, strict=True):
        assert _bytes_as_base64(key) == json_record.key_payload
        if json_record.tombstone:
            assert value is None
        else:
            assert _comparable(_bytes_as_base64(value)) == _comparable(json_record.payload)
