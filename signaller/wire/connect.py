"""Kafka Connect schema nodes: builders, logical types and Debezium's fixed record schemas.

Contract
--------
Every node is a ``dict`` whose members are in the order Kafka's ``JsonConverter.asJsonSchema``
writes them: ``type``, ``fields``/``items``/``keys``+``values``, ``optional``, ``name``,
``version``, ``doc``, ``parameters``, ``default``; a struct member appends ``field``
(:func:`field`). :func:`schema_node` builds a column's primitive or logical node (``optional`` true; the
caller sets it with :func:`with_optional`); :func:`primitive` and :func:`struct` build the
record schemas. The module-level schemas are Debezium's (``SchemaFactory``,
``PostgresSourceInfoStructMaker``, ``Envelope`` version 2, ``HeartbeatImpl``,
``TransactionStructMaker``, ``SinkNotificationChannel``); treat them as read-only.

Pure data, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "CIRCLE",
    "GEOGRAPHY",
    "GEOMETRY",
    "HEARTBEAT_KEY_SCHEMA",
    "HEARTBEAT_VALUE_SCHEMA",
    "LINE",
    "NOTIFICATION_KEY_SCHEMA",
    "NOTIFICATION_VALUE_SCHEMA",
    "POINT",
    "SNAPSHOT_ALLOWED_VALUES",
    "SOURCE_SCHEMA",
    "TRANSACTION_BLOCK_SCHEMA",
    "TRANSACTION_KEY_SCHEMA",
    "TRANSACTION_VALUE_SCHEMA",
    "VARIABLE_SCALE_DECIMAL",
    "decimal_node",
    "envelope_schema",
    "field",
    "primitive",
    "schema_node",
    "struct",
    "with_optional",
]


# --------------------------------------------------------------------------------------------
# Column nodes (primitive and logical types)
# --------------------------------------------------------------------------------------------


def schema_node(
    type_: str,
    *,
    name: str | None = None,
    version: int | None = None,
    parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A primitive schema node in JsonConverter member order (``optional`` set by the caller)."""
    result: dict[str, Any] = {"type": type_, "optional": True}
    if name is not None:
        result["name"] = name
    if version is not None:
        result["version"] = version
    if parameters is not None:
        result["parameters"] = parameters
    return result


def with_optional(schema: dict[str, Any], optional: bool) -> dict[str, Any]:
    """A copy of ``schema`` with ``optional`` set (its member position unchanged)."""
    copy = dict(schema)
    copy["optional"] = optional
    return copy


def field(name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A struct member: the field's schema node plus ``"field"`` (JsonConverter appends it)."""
    member = dict(schema)
    member["field"] = name
    return member


def primitive(type_: str, *, optional: bool) -> dict[str, Any]:
    """A plain (unnamed) primitive node."""
    return {"type": type_, "optional": optional}


def struct(
    name: str, fields: list[dict[str, Any]], *, optional: bool, version: int | None = None, doc: str | None = None,
) -> dict[str, Any]:
    """A named struct node with ``fields`` (each built with :func:`field`), keys in JsonConverter's order."""
    result: dict[str, Any] = {"type": "struct", "fields": fields, "optional": optional, "name": name}
    if version is not None:
        result["version"] = version
    if doc is not None:
        result["doc"] = doc
    return result


VARIABLE_SCALE_DECIMAL: Final[dict[str, Any]] = struct(
    "io.debezium.data.VariableScaleDecimal",
    [field("scale", primitive("int32", optional=False)), field("value", primitive("bytes", optional=False))],
    optional=True, version=1, doc="Variable scaled decimal",
)
"""``io.debezium.data.VariableScaleDecimal``: ``{scale, value}`` for a numeric without precision."""


POINT: Final[dict[str, Any]] = struct(
    "io.debezium.data.geometry.Point",
    [field("x", primitive("double", optional=False)), field("y", primitive("double", optional=False)),
     field("wkb", primitive("bytes", optional=True)), field("srid", primitive("int32", optional=True))],
    optional=True, version=1, doc="Geometry (POINT)",
)
"""``io.debezium.data.geometry.Point``: ``{x, y, wkb, srid}`` (wkb bytes whatever ``binary.handling.mode`` says)."""


LINE: Final[dict[str, Any]] = struct(
    "io.debezium.data.geometry.Line", [field(name, primitive("double", optional=False)) for name in "abc"],
    optional=True, version=1, doc="Geometry (LINE)",
)
"""``io.debezium.data.geometry.Line``: ``{a, b, c}`` of the line ``ax + by + c = 0``."""


def _wkb_struct(name: str, version: int, doc: str, *, extensions: bool) -> dict[str, Any]:
    fields = [field("wkb", primitive("bytes", optional=False)), field("srid", primitive("int32", optional=True))]
    if extensions:
        fields.append({"type": "map", "keys": primitive("string", optional=False),
                       "values": primitive("string", optional=False), "optional": True, "field": "extensions"})
    return struct(name, fields, optional=True, version=version, doc=doc)


GEOMETRY: Final[dict[str, Any]] = _wkb_struct("io.debezium.data.geometry.Geometry", 2, "Geometry", extensions=True)
"""``io.debezium.data.geometry.Geometry`` version 2: ``{wkb, srid, extensions}`` (PostgreSQL's
``lseg``, ``box``, ``path``, ``polygon`` and PostGIS ``geometry``)."""

GEOMETRY_V1: Final[dict[str, Any]] = _wkb_struct("io.debezium.data.geometry.Geometry", 1, "Geometry",
                                                extensions=False)
"""``io.debezium.data.geometry.Geometry`` version 1: ``{wkb, srid}``, as Debezium's MariaDB connector
3.5.0.Final writes its spatial columns (measured: ``/work/notes/mariadb-debezium-reference.md``)."""

GEOGRAPHY: Final[dict[str, Any]] = _wkb_struct(
    "io.debezium.data.geometry.Geography", 1, "Geography", extensions=False
)
"""``io.debezium.data.geometry.Geography`` version 1: ``{wkb, srid}`` (PostGIS ``geography``; measured
against Debezium 3.7, which has no ``extensions`` here)."""

CIRCLE: Final[dict[str, Any]] = struct(
    "io.debezium.data.geometry.Circle",
    [field("center", with_optional(POINT, False)), field("radius", primitive("double", optional=False))],
    optional=True, version=1, doc="Geometry (CIRCLE)",
)
"""``io.debezium.data.geometry.Circle``: ``{center: Point, radius}``."""


def decimal_node(scale: int, precision: int | None) -> dict[str, Any]:
    """``org.apache.kafka.connect.data.Decimal`` with ``scale`` (and ``connect.decimal.precision``)."""
    parameters = {"scale": str(scale)}
    if precision is not None:
        parameters["connect.decimal.precision"] = str(precision)
    return schema_node("bytes", name="org.apache.kafka.connect.data.Decimal", version=1, parameters=parameters)


# --------------------------------------------------------------------------------------------
# Record schemas
# --------------------------------------------------------------------------------------------


SNAPSHOT_ALLOWED_VALUES: Final = (
    "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"
)

_SNAPSHOT_NODE: Final = {
    "type": "string",
    "optional": True,
    "name": "io.debezium.data.Enum",
    "version": 1,
    "parameters": {"allowed": SNAPSHOT_ALLOWED_VALUES},
    "default": "false",
}

SOURCE_SCHEMA: Final = struct(
    "io.debezium.connector.postgresql.Source",
    [
        field("version", primitive("string", optional=False)),
        field("connector", primitive("string", optional=False)),
        field("name", primitive("string", optional=False)),
        field("ts_ms", primitive("int64", optional=False)),
        field("snapshot", _SNAPSHOT_NODE),
        field("db", primitive("string", optional=False)),
        field("sequence", primitive("string", optional=True)),
        field("ts_us", primitive("int64", optional=True)),
        field("ts_ns", primitive("int64", optional=True)),
        field("schema", primitive("string", optional=False)),
        field("table", primitive("string", optional=False)),
        field("txId", primitive("int64", optional=True)),
        field("lsn", primitive("int64", optional=True)),
        field("xmin", primitive("int64", optional=True)),
        field("origin", primitive("string", optional=True)),
        field("origin_lsn", primitive("int64", optional=True)),
    ],
    optional=False,
    version=1,
)
"""``io.debezium.connector.postgresql.Source`` version 1 (Debezium 3.5+ field list)."""

TRANSACTION_BLOCK_SCHEMA: Final = struct(
    "event.block",
    [
        field("id", primitive("string", optional=False)),
        field("total_order", primitive("int64", optional=False)),
        field("data_collection_order", primitive("int64", optional=False)),
    ],
    optional=True,
    version=1,
)

HEARTBEAT_KEY_SCHEMA: Final = struct(
    "io.debezium.connector.common.ServerNameKey",
    [field("serverName", primitive("string", optional=False))],
    optional=False,
    version=1,
)
HEARTBEAT_VALUE_SCHEMA: Final = struct(
    "io.debezium.connector.common.Heartbeat",
    [field("ts_ms", primitive("int64", optional=False))],
    optional=False,
    version=1,
)
TRANSACTION_KEY_SCHEMA: Final = struct(
    "io.debezium.connector.common.TransactionMetadataKey",
    [field("id", primitive("string", optional=False))],
    optional=False,
    version=1,
)
_EVENT_COLLECTION_SCHEMA: Final = struct(
    "event.collection",
    [
        field("data_collection", primitive("string", optional=False)),
        field("event_count", primitive("int64", optional=False)),
    ],
    optional=True,
    version=1,
)
TRANSACTION_VALUE_SCHEMA: Final = struct(
    "io.debezium.connector.common.TransactionMetadataValue",
    [
        field("status", primitive("string", optional=False)),
        field("id", primitive("string", optional=False)),
        field("event_count", primitive("int64", optional=True)),
        field("data_collections", {"type": "array", "items": _EVENT_COLLECTION_SCHEMA, "optional": True}),
        field("ts_ms", primitive("int64", optional=False)),
    ],
    optional=False,
    version=1,
)

NOTIFICATION_KEY_SCHEMA: Final = {
    "type": "struct", "fields": [{"type": "string", "optional": False, "field": "id"}],
    "optional": False, "name": "io.debezium.connector.common.NotificationKey", "version": 1,
}
NOTIFICATION_VALUE_SCHEMA: Final = {
    "type": "struct",
    "fields": [
        {"type": "string", "optional": False, "field": "id"},
        {"type": "string", "optional": False, "field": "type"},
        {"type": "string", "optional": False, "field": "aggregate_type"},
        {"type": "map", "keys": {"type": "string", "optional": False},
         "values": {"type": "string", "optional": False}, "optional": True, "field": "additional_data"},
        {"type": "int64", "optional": False, "field": "timestamp"},
    ],
    "optional": False, "name": "io.debezium.connector.common.Notification", "version": 1,
}


def envelope_schema(name: str, value_schema: dict[str, Any],
                    source_schema: Mapping[str, Any] = SOURCE_SCHEMA) -> dict[str, Any]:
    """Envelope version 2: before, after, source, transaction, op, ts_ms, ts_us, ts_ns; ``source_schema`` is the
    connector's ``source`` struct (a source's :class:`~signaller.wire.source_block.SourceBlock`; default: the
    built-in one)."""
    fields = [
        field("before", value_schema),
        field("after", value_schema),
        field("source", source_schema),
        field("transaction", TRANSACTION_BLOCK_SCHEMA),
        field("op", primitive("string", optional=False)),
        field("ts_ms", primitive("int64", optional=True)),
        field("ts_us", primitive("int64", optional=True)),
        field("ts_ns", primitive("int64", optional=True)),
    ]
    return struct(name, fields, optional=False, version=2)
