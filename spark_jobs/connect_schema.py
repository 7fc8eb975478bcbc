"""Kafka Connect JSON schemas (as Debezium's JsonConverter embeds them) → Spark types.

Pure functions over the schema JSON: no Spark session needed. ``raw_ddl`` is the type Spark's
``from_json`` parses the payload value into; ``target_expr`` converts that raw value into the
column the Delta table stores (dates as DATE, micro-timestamps as TIMESTAMP_NTZ, zoned
timestamps as TIMESTAMP, decimals as DECIMAL).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_PRIMITIVE = {
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INT",
    "int64": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "float32": "FLOAT",
    "float64": "DOUBLE",
    "boolean": "BOOLEAN",
    "string": "STRING",
    "bytes": "BINARY",
}
MAX_DECIMAL_PRECISION = 38


class UnsupportedSchemaError(ValueError):
    """A Connect schema node this job cannot map; the message names the field and the node."""


@dataclass(frozen=True)
class ColumnSpec:
    """One row column: its raw (JSON-parsed) type and the SQL that yields the stored value.

    ``target_expr`` is a Spark SQL expression over ``{col}`` (the raw value's reference).
    ``decimal`` is ``(precision, scale)`` for Connect Decimals, converted by a UDF.
    """

    name: str
    raw_ddl: str
    target_expr: str
    target_ddl: str
    optional: bool
    decimal: tuple[int, int] | None = None


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def raw_ddl(node: dict[str, Any], where: str) -> str:
    """The Spark DDL type ``from_json`` should parse a value of ``node`` into."""
    kind = node.get("type")
    if kind == "struct":
        fields = ", ".join(f"{quote(f['field'])}: {raw_ddl(f, where + '.' + f['field'])}" for f in node["fields"])
        return f"STRUCT<{fields}>"
    if kind == "array":
        return f"ARRAY<{raw_ddl(node['items'], where + '[]')}>"
    if kind == "map":
        return f"MAP<{raw_ddl(node['keys'], where)}, {raw_ddl(node['values'], where)}>"
    if kind in _PRIMITIVE:
        return _PRIMITIVE[kind]
    msg = f"unsupported Connect schema type {kind!r} at {where}: {node}"
    raise UnsupportedSchemaError(msg)


def column_spec(node: dict[str, Any]) -> ColumnSpec:
    """Map one field of a ``...Value`` struct to its raw and stored forms."""
    name = node["field"]
    logical = node.get("name")
    raw = raw_ddl(node, name)
    col = "{col}"
    optional = bool(node.get("optional", True))
    if logical == "org.apache.kafka.connect.data.Decimal":
        scale = int(node.get("parameters", {}).get("scale", 0))
        precision = int(node.get("parameters", {}).get("connect.decimal.precision", MAX_DECIMAL_PRECISION))
        precision = max(min(precision, MAX_DECIMAL_PRECISION), scale, 1)
        return ColumnSpec(name, raw, col, f"DECIMAL({precision},{scale})", optional, (precision, scale))
    expr, ddl = _logical_expr(logical, raw)
    return ColumnSpec(name, raw, expr, ddl, optional)


def _logical_expr(logical: str | None, raw: str) -> tuple[str, str]:
    col = "{col}"
    conversions = {
        "io.debezium.time.Date": (f"date_add(DATE'1970-01-01', {col})", "DATE"),
        "org.apache.kafka.connect.data.Date": (f"date_add(DATE'1970-01-01', {col})", "DATE"),
        "io.debezium.time.MicroTimestamp": (f"CAST(timestamp_micros({col}) AS TIMESTAMP_NTZ)", "TIMESTAMP_NTZ"),
        "io.debezium.time.Timestamp": (f"CAST(timestamp_millis({col}) AS TIMESTAMP_NTZ)", "TIMESTAMP_NTZ"),
        "org.apache.kafka.connect.data.Timestamp": (f"CAST(timestamp_millis({col}) AS TIMESTAMP_NTZ)", "TIMESTAMP_NTZ"),
        "io.debezium.time.NanoTimestamp": (
            f"CAST(timestamp_micros(div({col}, 1000)) AS TIMESTAMP_NTZ)", "TIMESTAMP_NTZ"
        ),
        "io.debezium.time.ZonedTimestamp": (f"to_timestamp({col})", "TIMESTAMP"),
    }
    if logical in conversions:
        return conversions[logical]
    return col, raw


def row_columns(value_struct: dict[str, Any]) -> list[ColumnSpec]:
    """The columns of a ``<prefix>.<schema>.<table>.Value`` struct node, in order."""
    if value_struct.get("type") != "struct":
        msg = f"row schema is not a struct: {value_struct}"
        raise UnsupportedSchemaError(msg)
    return [column_spec(field) for field in value_struct["fields"]]


def envelope_row_struct(envelope: dict[str, Any]) -> dict[str, Any]:
    """The ``after`` (else ``before``) struct node of an ``...Envelope`` schema."""
    by_name: dict[str, dict[str, Any]] = {f["field"]: f for f in envelope.get("fields", [])}
    node = by_name.get("after") or by_name.get("before")
    if node is None:
        msg = f"not a Debezium envelope schema (no before/after field): {envelope.get('name')}"
        raise UnsupportedSchemaError(msg)
    return node


def key_fields(key_schema: dict[str, Any] | None) -> list[str]:
    """Key column names from a ``...Key`` struct schema; empty for a keyless table."""
    if not key_schema:
        return []
    return [f["field"] for f in key_schema.get("fields", [])]


def decode_decimal(unscaled: bytes | None, scale: int) -> Any:
    """Big-endian two's-complement unscaled bytes → ``decimal.Decimal`` (None stays None)."""
    if unscaled is None:
        return None
    from decimal import Decimal

    return Decimal(int.from_bytes(unscaled, "big", signed=True)).scaleb(-scale)
