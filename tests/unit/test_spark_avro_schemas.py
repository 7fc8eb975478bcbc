"""The apply job's Avro schemas (no Spark session): a registered writer schema read back as Connect
schema nodes maps to the same columns as the JSON record's embedded schema; the registry client's
errors; the job's format setting."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from signaller.model import Column, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.wire.avro_serializer import AvroTableSerializer
from spark_jobs.avro_schemas import (
    AvroSchemas,
    Registry,
    RegistryAccessError,
    RegistryUnavailableError,
    SchemaLookupError,
    connect_node,
    key_fields,
    read_schema,
    without_logical_types,
)
from spark_jobs.connect_schema import envelope_row_struct, row_columns
from spark_jobs.job_config import JobConfigError, config_from_mapping

pytestmark = pytest.mark.unit

# every type of schemas/type-mapping.md, in each mode that changes its Connect schema
TYPES: list[tuple[str, int, TypeModes]] = [
    ("int2", -1, TypeModes()), ("int4", -1, TypeModes()), ("int8", -1, TypeModes()),
    ("numeric", (10 << 16 | 2) + 4, TypeModes()), ("numeric", (10 << 16 | 2) + 4, TypeModes(decimal_handling="string")),
    ("numeric", (10 << 16 | 2) + 4, TypeModes(decimal_handling="double")), ("numeric", -1, TypeModes()),
    ("float4", -1, TypeModes()), ("float8", -1, TypeModes()), ("bool", -1, TypeModes()), ("text", -1, TypeModes()),
    ("varchar", 24, TypeModes()), ("bpchar", 7, TypeModes()), ("bytea", -1, TypeModes()),
    ("bytea", -1, TypeModes(binary_handling="base64")), ("date", -1, TypeModes()),
    ("date", -1, TypeModes(time_precision="connect")), ("time", -1, TypeModes()),
    ("time", -1, TypeModes(time_precision="connect")), ("time", 3, TypeModes()), ("timetz", -1, TypeModes()),
    ("timestamp", -1, TypeModes()), ("timestamp", -1, TypeModes(time_precision="connect")),
    ("timestamp", 3, TypeModes()), ("timestamptz", -1, TypeModes()), ("interval", -1, TypeModes()),
    ("interval", -1, TypeModes(interval_handling="string")), ("uuid", -1, TypeModes()), ("json", -1, TypeModes()),
    ("jsonb", -1, TypeModes()), ("_int4", -1, TypeModes()), ("_text", -1, TypeModes()), ("_date", -1, TypeModes()),
    ("_numeric", (10 << 16 | 2) + 4, TypeModes()), ("_int2", -1, TypeModes()), ("point", -1, TypeModes()),
    ("tsvector", -1, TypeModes()), ("_tsvector", -1, TypeModes()), ("line", -1, TypeModes()),
    ("lseg", -1, TypeModes()), ("box", -1, TypeModes()), ("path", -1, TypeModes()), ("polygon", -1, TypeModes()),
    ("circle", -1, TypeModes()), ("int2vector", -1, TypeModes()), ("oidvector", -1, TypeModes()),
]


class _Ids:
    def __init__(self) -> None:
        self.texts: dict[int, str] = {}

    def id_for(self, topic: str, *, key: bool, schema: str, table: str | None) -> int:
        self.texts[len(self.texts) + 1] = schema
        return len(self.texts)


def _table() -> tuple[AvroTableSerializer, _Ids]:
    columns, codecs = [Column("id", 0, "int4", -1, optional=False, is_key=True)], {}
    for i, (type_name, typmod, _modes) in enumerate(TYPES):
        element = type_name[1:] if type_name.startswith("_") else None
        columns.append(Column(f"c{i}", 0, type_name, typmod, element_type_name=element))
    for column, modes in zip(columns, [TypeModes()] + [m for _, _, m in TYPES], strict=True):
        codecs[column.name] = codec_for(column, modes)
    ids = _Ids()
    table = TableSchema(TableId("public", "t"), tuple(columns))
    return AvroTableSerializer(table, codecs, topic="p.public.t", topic_prefix="p", database="db", ids=ids), ids


def test_registered_schemas_map_to_the_columns_of_the_json_records() -> None:
    serializer, ids = _table()
    expected = row_columns(envelope_row_struct(serializer.envelope_schema))
    key, envelope = read_schema(1, ids.texts[1]), read_schema(2, ids.texts[2])
    got = row_columns(envelope_row_struct(envelope.connect))

    def mapped(spec: Any) -> tuple[Any, ...]:
        return spec.name, spec.raw_ddl, spec.target_expr, spec.target_ddl, spec.optional, spec.udf, spec.toast_test

    assert [mapped(c) for c in got] == [mapped(c) for c in expected]
    assert key_fields(key) == ["id"]
    assert "logicalType" not in envelope.reader and json.loads(envelope.reader)["name"] == "Envelope"


def test_logical_types_of_other_producers_and_references() -> None:
    avro = {"type": "record", "name": "R", "namespace": "n", "fields": [
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2}},
        {"name": "day", "type": ["null", {"type": "int", "logicalType": "date"}]},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "inner", "type": {"type": "record", "name": "I", "fields": [{"name": "x", "type": "long"}]}},
        {"name": "again", "type": ["null", "I"]},
        {"name": "tags", "type": {"type": "map", "values": "string"}},
    ]}
    node = connect_node(avro)
    fields = {f["field"]: f for f in node["fields"]}
    assert fields["d"]["name"] == "org.apache.kafka.connect.data.Decimal"
    assert fields["d"]["parameters"] == {"scale": "2", "connect.decimal.precision": "5"}
    assert (fields["day"]["name"], fields["day"]["optional"]) == ("org.apache.kafka.connect.data.Date", True)
    assert fields["ts"]["name"] == "io.debezium.time.MicroTimestamp"
    assert fields["again"]["type"] == "struct" and fields["again"]["optional"] is True
    assert fields["again"]["fields"] == fields["inner"]["fields"]
    assert fields["tags"]["values"] == {"type": "string", "optional": False}
    assert "logicalType" not in json.dumps(without_logical_types(avro))
    with pytest.raises(SchemaLookupError):
        union = {"name": "u", "type": ["int", "string"]}
        read_schema(9, json.dumps({"type": "record", "name": "R", "fields": [union]}))


class _Opener:
    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.requests: list[urllib.request.Request] = []

    def __call__(self, request: urllib.request.Request, timeout_s: float) -> Any:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return io.BytesIO(json.dumps(answer).encode())


def _http(code: int) -> urllib.error.HTTPError:
    return urllib.error.HTTPError("u", code, "x", {}, io.BytesIO(b'{"error_code":40403,"message":"not found"}'))  # type: ignore[arg-type]


def test_registry_retries_outages_and_refusals_are_lookup_errors() -> None:
    opener = _Opener([OSError("refused"), _http(503), {"schema": '"string"'}])
    registry = Registry("http://u:pw@reg:8081/apis/ccompat/v7/", opener=opener, backoff_s=0)
    assert registry.schema_text(7) == '"string"'
    assert opener.requests[0].full_url == "http://reg:8081/apis/ccompat/v7/schemas/ids/7"
    assert opener.requests[0].get_header("Authorization") == "Basic dTpwdw=="
    with pytest.raises(SchemaLookupError, match="HTTP 404"):
        Registry("http://reg", opener=_Opener([_http(404)])).schema_text(8)
    with pytest.raises(RegistryAccessError, match="HTTP 401"):
        Registry("http://reg", opener=_Opener([_http(401)])).schema_text(8)
    with pytest.raises(RegistryUnavailableError, match="2 attempts"):
        Registry("http://reg", opener=_Opener([OSError("a"), OSError("b")]), attempts=2, backoff_s=0).schema_text(9)
    schemas = AvroSchemas(Registry("http://reg", opener=_Opener([_http(404)])))
    for _ in range(2):  # asked once, the refusal kept
        with pytest.raises(SchemaLookupError):
            schemas.get(8)
    with pytest.raises(SchemaLookupError, match="no schema_registry_url"):
        AvroSchemas(None).get(1)


def test_format_and_registry_settings() -> None:
    base = {"bootstrap_servers": "b", "target_root": "/t", "checkpoint_location": "/c", "subscribe": "x"}
    assert config_from_mapping(base).format == "auto"
    cfg = config_from_mapping({**base, "format": "avro", "schema.registry.url": "http://r",
                               "basic.auth.user.info": "u:p"})
    assert (cfg.format, cfg.schema_registry_url, cfg.schema_registry_user_info) == ("avro", "http://r", "u:p")
    with pytest.raises(JobConfigError, match="format"):
        config_from_mapping({**base, "format": "protobuf"})
