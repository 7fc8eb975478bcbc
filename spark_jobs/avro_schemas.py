"""Avro records in the Confluent wire format: writer schemas fetched by id, read as Connect schemas.

A record is magic byte 0, the writer schema's registry id (4 bytes, big-endian) and the Avro
binary body. The job keeps every guarantee of its JSON path by reading an Avro schema back into
the Connect schema nodes that :mod:`spark_jobs.connect_schema` maps (as Confluent's
``AvroData.toConnectSchema`` does: ``connect.name``, ``connect.version``, ``connect.parameters``,
``connect.type``, optional unions, Avro's logical types when a producer other than a Connect
converter wrote them), so reconciliation, widening, TOAST placeholders, decimals and temporal
conversions are the same code. Spark decodes the bodies with ``from_avro`` against
:attr:`AvroSchema.reader`: the writer schema without its logical types (the same binary encoding),
so the decoded values have the raw types the JSON path parses into (decimal bytes, epoch days and
milliseconds as numbers) and the same SQL converts them.

:class:`Registry` asks the registry's Confluent-compatible API (``GET /schemas/ids/<id>``) with the
standard library; a registry that cannot be reached (or answers 5xx, 408, 429) is retried with
backoff, then :class:`RegistryUnavailableError` fails the batch (it is retried when the query
restarts; no offset moves), and so does one that refuses the job's credentials (401, 403:
:class:`RegistryAccessError`, not retried). An id the registry does not know, or a schema the job
cannot map, is a :class:`SchemaLookupError` (a ``ValueError``): its records are dead-lettered.
:class:`AvroSchemas` caches the answers on the driver (ids never change meaning).
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from spark_jobs.connect_schema import DECIMAL, UnsupportedSchemaError

MAGIC = 0
HEADER_BYTES = 5
"""Magic byte and schema id: the body starts at byte 6 (1-based, as Spark's ``substring``)."""

_PRIMITIVES = {"int": "int32", "long": "int64", "float": "float", "double": "double", "boolean": "boolean",
               "string": "string", "bytes": "bytes"}
_LOGICAL_NAMES = {  # logical types without connect.name (a producer other than a Connect converter)
    "date": "org.apache.kafka.connect.data.Date",
    "time-millis": "org.apache.kafka.connect.data.Time",
    "timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "time-micros": "io.debezium.time.MicroTime",
    "timestamp-micros": "io.debezium.time.MicroTimestamp",
}
_TRANSIENT = frozenset({408, 429})


class RegistryUnavailableError(RuntimeError):
    """The registry could not be reached (or kept failing) after the retries: the batch fails."""


class RegistryAccessError(RuntimeError):
    """The registry refused the job's credentials (HTTP 401/403): the batch fails, nothing is dead-lettered."""


class SchemaLookupError(ValueError):
    """No usable writer schema for an id (unknown to the registry, refused, not mappable): dead letter."""


Opener = Callable[[urllib.request.Request, float], Any]


def _urlopen(request: urllib.request.Request, timeout_s: float) -> Any:
    return urllib.request.urlopen(request, timeout=timeout_s)


class Registry:
    """The Confluent-compatible API at ``url`` (``http://host:8081``, Apicurio's ``.../apis/ccompat/v7``).

    ``user_info`` (``user:password``) adds basic authentication; credentials in the URL are used
    when it is not given. ``attempts`` requests at most, ``backoff_s`` doubling between them."""

    def __init__(self, url: str, user_info: str | None = None, *, timeout_s: float = 10.0, attempts: int = 6,
                 backoff_s: float = 0.5, opener: Opener = _urlopen) -> None:
        parts = urlsplit(url.split(",")[0].strip())
        if parts.username is not None:
            user_info = user_info or f"{parts.username}:{parts.password or ''}"
            parts = parts._replace(netloc=parts.netloc.rpartition("@")[2])
        self.url = urlunsplit(parts).rstrip("/")
        self._headers = {"Accept": "application/vnd.schemaregistry.v1+json"}
        if user_info:
            self._headers["Authorization"] = "Basic " + base64.b64encode(user_info.encode()).decode("ascii")
        self._timeout_s, self._attempts, self._backoff_s, self._open = timeout_s, attempts, backoff_s, opener

    def schema_text(self, schema_id: int) -> str:
        """The schema text registered under ``schema_id``; ``SchemaLookupError`` if the registry refuses,
        ``RegistryUnavailableError`` if it cannot answer."""
        request = urllib.request.Request(f"{self.url}/schemas/ids/{schema_id}", headers=self._headers)
        delay, problem = self._backoff_s, ""
        for attempt in range(self._attempts):
            if attempt:
                time.sleep(delay)
                delay *= 2
            try:
                with self._open(request, self._timeout_s) as response:
                    body = json.loads(response.read())
            except urllib.error.HTTPError as exc:
                with exc:
                    reason = exc.read().decode("utf-8", errors="replace")[:300]
                if exc.code >= 500 or exc.code in _TRANSIENT:
                    problem = f"HTTP {exc.code}: {reason}"
                    continue
                if exc.code in (401, 403):
                    msg = (f"schema registry at {self.url} refused access (HTTP {exc.code}; check "
                           f"schema_registry_user_info): {reason}")
                    raise RegistryAccessError(msg) from None
                msg = f"schema id {schema_id}: the registry answered HTTP {exc.code}: {reason}"
                raise SchemaLookupError(msg) from None
            except (OSError, ValueError) as exc:
                problem = str(exc)
                continue
            schema = body.get("schema") if isinstance(body, dict) else None
            if not isinstance(schema, str):
                msg = f"schema id {schema_id}: the registry's answer has no schema: {str(body)[:200]}"
                raise SchemaLookupError(msg)
            return schema
        msg = f"schema registry at {self.url} unavailable for schema id {schema_id} ({self._attempts} attempts): " \
              f"{problem}"
        raise RegistryUnavailableError(msg)


@dataclass(frozen=True)
class AvroSchema:
    """A writer schema: its Connect form (``connect``) and the text ``from_avro`` decodes with (``reader``)."""

    schema_id: int
    connect: dict[str, Any]
    reader: str


def read_schema(schema_id: int, text: str) -> AvroSchema:
    """Parse a registered schema text; ``SchemaLookupError`` when it is not an Avro schema the job maps."""
    try:
        avro = json.loads(text)
        connect = connect_node(avro)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        msg = f"schema id {schema_id} cannot be read as a Connect schema: {exc}"
        raise SchemaLookupError(msg) from None
    return AvroSchema(schema_id, connect, json.dumps(without_logical_types(avro), separators=(",", ":")))


def without_logical_types(avro: Any) -> Any:
    """``avro`` without its ``logicalType`` properties: the same binary encoding, raw values decoded."""
    if isinstance(avro, list):
        return [without_logical_types(branch) for branch in avro]
    if not isinstance(avro, dict):
        return avro
    out = {k: v for k, v in avro.items() if k != "logicalType"}
    for member in ("items", "values"):
        if member in out:
            out[member] = without_logical_types(out[member])
    if "fields" in out:
        out["fields"] = [{**f, "type": without_logical_types(f["type"])} for f in out["fields"]]
    if isinstance(out.get("type"), (dict, list)):
        out["type"] = without_logical_types(out["type"])
    return out


def connect_node(avro: Any) -> dict[str, Any]:
    """The Connect schema node (``spark_jobs.connect_schema``'s JSON form) of an Avro schema."""
    return _node(avro, "", {})


def _fullname(schema: dict[str, Any], space: str) -> str:
    name = str(schema["name"])
    if "." in name:
        return name
    space = str(schema.get("namespace", space) or "")
    return f"{space}.{name}" if space else name


def _node(avro: Any, space: str, names: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1:
            msg = f"unions other than [null, T] are not mapped: {json.dumps(avro)[:200]}"
            raise UnsupportedSchemaError(msg)
        return {**_node(branches[0], space, names), "optional": len(avro) > 1}
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return {"type": _PRIMITIVES[avro], "optional": False}
        found = names.get(f"{space}.{avro}" if space and "." not in avro else avro) or names.get(avro)
        if found is None:
            msg = f"unknown Avro type {avro!r}"
            raise UnsupportedSchemaError(msg)
        return dict(found)
    kind = avro["type"]
    if isinstance(kind, (dict, list)):
        return _node(kind, space, names)
    if kind == "record":
        full = _fullname(avro, space)
        node: dict[str, Any] = {"type": "struct", "optional": False, "fields": []}
        names[full] = node  # before the fields: they may refer to it
        inner = full.rpartition(".")[0]
        for member in avro["fields"]:
            node["fields"].append({**_node(member["type"], inner, names), "field": member["name"]})
        node["name"] = avro.get("connect.name", full)
    elif kind == "array":
        node = {"type": "array", "items": _node(avro["items"], space, names), "optional": False}
    elif kind == "map":
        node = {"type": "map", "keys": {"type": "string", "optional": False},
                "values": _node(avro["values"], space, names), "optional": False}
    elif kind in ("enum", "fixed"):
        node = {"type": "string" if kind == "enum" else "bytes", "optional": False}
        names[_fullname(avro, space)] = node
    elif kind in _PRIMITIVES:
        node = {"type": avro.get("connect.type", _PRIMITIVES[kind]), "optional": False}
    else:
        msg = f"unknown Avro type {kind!r}"
        raise UnsupportedSchemaError(msg)
    _connect_properties(avro, node)
    return node


def _connect_properties(avro: dict[str, Any], node: dict[str, Any]) -> None:
    if "connect.version" in avro:
        node["version"] = avro["connect.version"]
    if avro.get("connect.parameters"):
        node["parameters"] = {str(k): str(v) for k, v in avro["connect.parameters"].items()}
    if "connect.name" in avro:
        node["name"] = avro["connect.name"]
    logical = avro.get("logicalType")
    if logical == "decimal":
        params = node.setdefault("parameters", {})
        params.setdefault("scale", str(avro.get("scale", 0)))
        if "precision" in avro:
            params.setdefault("connect.decimal.precision", str(avro["precision"]))
        node.setdefault("name", DECIMAL)
    elif logical in _LOGICAL_NAMES:
        node.setdefault("name", _LOGICAL_NAMES[logical])


def key_fields(key: AvroSchema) -> list[str]:
    """The key column names of a ``...Key`` record schema (empty when the key is not a record)."""
    return [f["field"] for f in key.connect.get("fields", [])] if key.connect.get("type") == "struct" else []


class AvroSchemas:
    """Writer schemas by id, kept across batches on the driver; a failed lookup is kept as its error.

    ``registry`` None: no registry configured, every id is a ``SchemaLookupError`` (dead letters that
    say so). Registry outages are not cached (``RegistryUnavailableError`` propagates)."""

    def __init__(self, registry: Registry | None, capacity: int = 1024) -> None:
        self._registry = registry
        self._entries: OrderedDict[int, AvroSchema | str] = OrderedDict()
        self._capacity = capacity

    def get(self, schema_id: int) -> AvroSchema:
        """The schema of ``schema_id`` (fetched once); ``SchemaLookupError`` when unusable."""
        entry = self._entries.get(schema_id)
        if entry is None:
            entry = self._fetch(schema_id)
            self._entries[schema_id] = entry
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
        self._entries.move_to_end(schema_id)
        if isinstance(entry, str):
            raise SchemaLookupError(entry)
        return entry

    def _fetch(self, schema_id: int) -> AvroSchema | str:
        if self._registry is None:
            return f"schema id {schema_id}: an Avro record, but no schema_registry_url is configured"
        try:
            return read_schema(schema_id, self._registry.schema_text(schema_id))
        except SchemaLookupError as exc:
            return str(exc)
