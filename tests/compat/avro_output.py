"""Avro records and registered schemas, made comparable for :mod:`tests.compat.compare`.

A record in the Confluent wire format (magic byte 0, the 4-byte schema id, the Avro body) is decoded with
its writer schema, fetched by id from the registry's Confluent-compatible API, into ``{"schema": <id>,
"payload": <decoded>}``: the shape of a JsonConverter record, so :class:`tests.integration.capture_helpers.
Record` and the comparison read both alike. Logical types are ignored when decoding (a decimal stays its
bytes, a date its epoch days), bytes become base64 and non-finite floats their JSON spelling, so a decoded
payload is spelled as the JSON converter's payload of the same event.

Before comparing, :func:`dump` replaces each schema id by the version of the record's subject it names
(``<topic>-key``/``<topic>-value``): the ids of two connectors differ, the versions their records use must
not. The schemas themselves are compared subject by subject (:func:`subjects`, :func:`compare_subjects`).
"""

from __future__ import annotations

import base64
import io
import json
import math
import urllib.parse
import urllib.request
from typing import Any

from fastavro import parse_schema, schemaless_reader

from tests.compat.compare import Difference, Renames, diff_values
from tests.integration.capture_helpers import Record


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _without_logical_types(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_logical_types(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_without_logical_types(item) for item in schema]
    return schema


def _as_json(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    return value


class AvroDecoder:
    """Decodes Confluent-framed Avro with writer schemas fetched by id (each fetched and parsed once)."""

    def __init__(self, registry_url: str) -> None:
        self.registry_url = registry_url.rstrip("/")
        self._parsed: dict[int, Any] = {}

    def __call__(self, data: bytes | None) -> Any:
        if data is None:
            return None
        assert data[:1] == b"\x00" and len(data) >= 5, f"not the Confluent wire format: {data[:8]!r}"
        schema_id = int.from_bytes(data[1:5], "big")
        if schema_id not in self._parsed:
            text = _get(f"{self.registry_url}/schemas/ids/{schema_id}")["schema"]
            self._parsed[schema_id] = parse_schema(_without_logical_types(json.loads(text)))
        decoded = schemaless_reader(io.BytesIO(data[5:]), self._parsed[schema_id], None)
        return {"schema": schema_id, "payload": _as_json(decoded)}


def subjects(registry_url: str, prefix: str) -> dict[str, list[dict[str, Any]]]:
    """Every subject of the topics named ``<prefix>.*``: its versions in order, each ``{"id", "schema"}``
    (the schema parsed)."""
    base = registry_url.rstrip("/")
    out: dict[str, list[dict[str, Any]]] = {}
    for subject in sorted(s for s in _get(f"{base}/subjects") if s.startswith(prefix + ".")):
        quoted = urllib.parse.quote(subject, safe="")
        versions = []
        for version in sorted(_get(f"{base}/subjects/{quoted}/versions")):
            body = _get(f"{base}/subjects/{quoted}/versions/{version}")
            versions.append({"id": body["id"], "schema": json.loads(body["schema"])})
        out[subject] = versions
    return out


def _version_of(schema_id: int | None, versions: list[dict[str, Any]]) -> str:
    if schema_id is None:
        return "<none>"
    return next((f"v{index + 1}" for index, v in enumerate(versions) if v["id"] == schema_id),
                f"<id {schema_id} is not a version of the subject>")


def _side(value: Any, versions: list[dict[str, Any]]) -> Any:
    if value is None:
        return None
    return {"schema": _version_of(value.get("schema"), versions), "payload": value["payload"]}


def dump(topics: dict[str, list[Record]], registered: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Decoded records (``{"key", "value"}``, as :func:`tests.compat.scenario.dump`) with each schema id
    replaced by the version of the record's subject it names (``v1``...)."""
    return {topic: [{"key": _side(r.key, registered.get(f"{topic}-key", [])),
                     "value": _side(r.value, registered.get(f"{topic}-value", []))} for r in records]
            for topic, records in topics.items()}


def compare_subjects(debezium: dict[str, list[dict[str, Any]]], signaller: dict[str, list[dict[str, Any]]],
                     debezium_names: Renames, signaller_names: Renames) -> list[Difference]:
    """Every difference between the two sides' registered schemas, subject by subject and version by
    version (after each side's names are renamed): a subject or version only one side has, or a schema
    difference (path ``schema...``). The topic of a difference is ``subject:<renamed subject>``."""
    def renamed(side: dict[str, list[dict[str, Any]]], names: Renames) -> dict[str, list[Any]]:
        return {names.apply(subject): [json.loads(names.apply(json.dumps(v["schema"]))) for v in versions]
                for subject, versions in side.items()}

    left, right = renamed(debezium, debezium_names), renamed(signaller, signaller_names)
    differences: list[Difference] = []
    for subject in sorted(set(left) | set(right)):
        topic = f"subject:{subject}"
        a, b = left.get(subject), right.get(subject)
        if a is None or b is None:
            differences.append(Difference(topic, -1, "<subject>", subject if a else None, subject if b else None))
            continue
        for index in range(max(len(a), len(b))):
            x = a[index] if index < len(a) else "<absent>"
            y = b[index] if index < len(b) else "<absent>"
            differences.extend(Difference(topic, index, f"schema{path}" if path.startswith("[") else
                                          f"schema.{path}" if path else "schema", p, q)
                               for path, p, q in diff_values(x, y))
    return differences

