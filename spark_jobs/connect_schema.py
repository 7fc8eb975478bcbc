"""Kafka Connect JSON schemas (as Debezium's JsonConverter embeds them) → Spark/Delta types.

Pure functions over the schema JSON: no Spark session needed. For every row column,
:func:`column_spec` gives

* ``raw_ddl``: the type Spark's ``from_json`` parses the payload value into;
* ``target_expr``: Spark SQL over ``{col}`` (the raw value) that yields the stored value (the
  decimal encodings too: exact integer arithmetic in SQL, see :mod:`spark_jobs.decimals`);
* ``target_ddl``: the Delta column type (the table in the README's apply-job section);
* ``toast_test``: Spark SQL over the raw value, true when it is Debezium's unchanged-TOAST
  placeholder for this column's encoding (then the stored value is kept).

Every conversion yields NULL, never an error, for a value it cannot represent; the job then
dead-letters the record (raw value present, stored value NULL). PostgreSQL's ``infinity`` and
``-infinity`` (Debezium's sentinels) become the largest and smallest value Spark can store.

Schema evolution helpers: :func:`widening` (can Delta widen a stored type to a new one?) and
:func:`connect_node_of_spark` (Connect nodes for a row schema Spark inferred from schemaless
JSON, so every column, inferred or declared, is described the same way).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from spark_jobs.decimals import decimal_sql, variable_decimal_sql

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
UNAVAILABLE = "__debezium_unavailable_value"

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"

# Debezium 3.7's values for PostgreSQL ±infinity (see signaller/wire/temporal.py): dates as streamed
# (and Debezium's snapshot READs' values, which signaller does not write), µs and ms timestamps.
_POS_INFINITY_DATES = "2146033979, -622191234"
_NEG_INFINITY_DATES = "-2147472691, -625821272"
_POS_INFINITY_MICROS = 9223372036854775807
_NEG_INFINITY_MICROS = "(-9223372036854775807 - 1)"  # a literal beyond BIGINT would be DECIMAL
_POS_INFINITY_MILLIS = 9223372036825200000
_NEG_INFINITY_MILLIS = -9223372036832400000
# Spark's DATE / TIMESTAMP range: 0001-01-01 .. 9999-12-31 (epoch days and µs).
_MIN_DAY, _MAX_DAY = -719162, 2932896
_MIN_MICROS, _MAX_MICROS = -62135596800000000, 253402300799999999
_MAX_TS_NTZ = "TIMESTAMP_NTZ'9999-12-31 23:59:59.999999'"
_MIN_TS_NTZ = "TIMESTAMP_NTZ'0001-01-01 00:00:00'"
_EPOCH_NTZ = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"
_MICROS_PER_DAY = 86_400_000_000


class UnsupportedSchemaError(ValueError):
    """A Connect schema node this job cannot map; the message names the field and the node."""


@dataclass(frozen=True)
class ColumnSpec:
    """One row column: its Connect node, raw (JSON-parsed) type and the stored form.

    ``udf`` is ``(kind, precision, scale)`` for the decimal encodings (kinds ``decimal``,
    ``decimal_array``, ``vsdecimal``, ``vsdecimal_array``), else None. The name is historical: they
    were decoded by Python UDFs; ``target_expr`` now decodes them in the JVM (:mod:`spark_jobs.decimals`).
    """

    name: str
    raw_ddl: str
    target_expr: str
    target_ddl: str
    optional: bool
    udf: tuple[str, int, int] | None = None
    toast_test: str | None = None
    node: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def converted(self) -> bool:
        """True when the stored value is not the raw value itself."""
        return self.udf is not None or self.target_expr != "{col}"

    @property
    def parsed_as_text(self) -> bool:
        """True when ``from_json`` parses the value as text (``raw_ddl`` STRING): the record's own text."""
        return self.raw_ddl == "STRING"


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


def _decimal_params(node: dict[str, Any]) -> tuple[int, int]:
    params = node.get("parameters") or {}
    scale = int(params.get("scale", 0))
    precision = int(params.get("connect.decimal.precision", MAX_DECIMAL_PRECISION))
    precision = max(min(precision, MAX_DECIMAL_PRECISION), scale, 1)
    if scale > MAX_DECIMAL_PRECISION:
        msg = f"decimal scale {scale} exceeds Spark's maximum precision {MAX_DECIMAL_PRECISION}"
        raise UnsupportedSchemaError(msg)
    return precision, scale


def _clock(micros: str) -> str:
    """``HH:MM:SS.ffffff`` of a µs-of-day expression (24:00:00 allowed, as in PostgreSQL)."""
    return (
        f"CASE WHEN {micros} BETWEEN 0 AND {_MICROS_PER_DAY} THEN format_string('%02d:%02d:%02d.%06d', "
        f"CAST({micros} div 3600000000 AS INT), CAST(({micros} div 60000000) % 60 AS INT), "
        f"CAST(({micros} div 1000000) % 60 AS INT), CAST({micros} % 1000000 AS INT)) END"
    )


def _ntz_from_micros(micros: str, raw: str,
                     infinities: tuple[object, object] = (_POS_INFINITY_MICROS, _NEG_INFINITY_MICROS)) -> str:
    return (
        f"CASE WHEN {raw} = {infinities[0]} THEN {_MAX_TS_NTZ} "
        f"WHEN {raw} = {infinities[1]} THEN {_MIN_TS_NTZ} "
        f"WHEN {micros} BETWEEN {_MIN_MICROS} AND {_MAX_MICROS} "
        f"THEN timestampadd(MICROSECOND, {micros}, {_EPOCH_NTZ}) END"
    )


def _floor_div(col: str, by: int) -> str:
    return f"({col} div {by} - CASE WHEN {col} % {by} < 0 THEN 1 ELSE 0 END)"


def _scalar_conversion(logical: str | None, raw: str) -> tuple[str, str]:
    """``(SQL over {col}, Delta type)`` of a scalar with Connect/Debezium logical name ``logical``."""
    col = "{col}"
    if logical in ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date"):
        return (
            f"CASE WHEN {col} IN ({_POS_INFINITY_DATES}) THEN DATE'9999-12-31' "
            f"WHEN {col} IN ({_NEG_INFINITY_DATES}) THEN DATE'0001-01-01' "
            f"WHEN {col} BETWEEN {_MIN_DAY} AND {_MAX_DAY} THEN date_add(DATE'1970-01-01', {col}) END",
            "DATE",
        )
    if logical == "io.debezium.time.MicroTimestamp":
        return _ntz_from_micros(col, col), "TIMESTAMP_NTZ"
    if logical in ("io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"):
        millis = (_POS_INFINITY_MILLIS, _NEG_INFINITY_MILLIS)
        return _ntz_from_micros(f"({col} * 1000)", col, millis), "TIMESTAMP_NTZ"
    if logical == "io.debezium.time.NanoTimestamp":
        return _ntz_from_micros(_floor_div(col, 1000), col), "TIMESTAMP_NTZ"
    if logical == "io.debezium.time.ZonedTimestamp":
        return (
            f"CASE WHEN {col} = 'infinity' THEN TIMESTAMP'9999-12-31 23:59:59.999999Z' "
            f"WHEN {col} = '-infinity' THEN TIMESTAMP'0001-01-01 00:00:00Z' ELSE try_cast({col} AS TIMESTAMP) END",
            "TIMESTAMP",
        )
    if logical == "io.debezium.time.MicroTime":
        return _clock(col), "STRING"
    if logical in ("io.debezium.time.Time", "org.apache.kafka.connect.data.Time"):
        return _clock(f"(CAST({col} AS BIGINT) * 1000)"), "STRING"
    if logical == "io.debezium.time.NanoTime":
        return _clock(f"({col} div 1000)"), "STRING"
    # ZonedTime ("11:45:30Z"), MicroDuration (µs), Interval, Uuid, Json, Xml, Enum, Bits: as sent.
    return col, raw


def _convert(node: dict[str, Any], where: str, depth: int = 0) -> tuple[str, str, tuple[str, int, int] | None]:
    """``(SQL over {col}, Delta type, udf)`` for any node (arrays convert their items)."""
    logical = node.get("name")
    raw = raw_ddl(node, where)
    if logical == DECIMAL:
        precision, scale = _decimal_params(node)
        ddl = f"DECIMAL({precision},{scale})"
        return decimal_sql(precision, scale, f"d{depth}"), ddl, ("decimal", precision, scale)
    if logical == VARIABLE_SCALE_DECIMAL:
        return variable_decimal_sql(f"v{depth}"), "STRING", ("vsdecimal", 0, 0)
    if node.get("type") == "array":
        item_expr, item_ddl, item_udf = _convert(node["items"], where + "[]", depth + 1)
        if item_udf is not None:
            if item_udf[0] not in ("decimal", "vsdecimal"):
                msg = f"unsupported nested decimal array at {where}: {node}"
                raise UnsupportedSchemaError(msg)
            var = f"x{depth}"
            body = item_expr.replace("{col}", var)
            kind = (item_udf[0] + "_array", item_udf[1], item_udf[2])
            return f"transform({{col}}, {var} -> {body})", f"ARRAY<{item_ddl}>", kind
        if item_expr == "{col}":
            return "{col}", f"ARRAY<{item_ddl}>", None
        var = f"x{depth}"
        body = item_expr.replace("{col}", var)
        return f"transform({{col}}, {var} -> {body})", f"ARRAY<{item_ddl}>", None
    expr, ddl = _scalar_conversion(logical, raw)
    return expr, ddl, None


def _toast_test(node: dict[str, Any]) -> str | None:
    """SQL over the raw value: is it the unchanged-TOAST placeholder Debezium emits for ``node``?

    Strings (text, json, uuid, enum, zoned times...): the placeholder text; bytes: its bytes;
    text-like arrays: ``[placeholder]``; int32/int64 arrays (int4[], int8[], date[]): the
    placeholder's byte values. Other types have no placeholder (never TOASTed in practice).
    """
    kind = node.get("type")
    logical = node.get("name")
    if logical in (DECIMAL, VARIABLE_SCALE_DECIMAL):
        return None
    if kind == "string":
        return f"{{col}} = '{UNAVAILABLE}'"
    if kind == "bytes":
        return f"{{col}} = CAST('{UNAVAILABLE}' AS BINARY)"
    if kind == "array":
        items = node.get("items") or {}
        if items.get("type") == "string":
            return f"(size({{col}}) = 1 AND {{col}}[0] = '{UNAVAILABLE}')"
        if items.get("type") in ("int32", "int64"):
            codes = ", ".join(str(b) for b in UNAVAILABLE.encode("ascii"))
            return f"(CAST({{col}} AS ARRAY<BIGINT>) = array({codes}))"
    return None


def column_spec(node: dict[str, Any]) -> ColumnSpec:
    """Map one field of a ``...Value`` struct to its raw and stored forms."""
    name = node["field"]
    raw = raw_ddl(node, name)
    expr, ddl, udf = _convert(node, name)
    optional = bool(node.get("optional", True))
    return ColumnSpec(name, raw, expr, ddl, optional, udf, _toast_test(node), dict(node))


def row_columns(value_struct: dict[str, Any]) -> list[ColumnSpec]:
    """The columns of a ``<prefix>.<schema>.<table>.Value`` struct node, in order."""
    if value_struct.get("type") != "struct":
        msg = f"row schema is not a struct: {value_struct}"
        raise UnsupportedSchemaError(msg)
    return [column_spec(f) for f in value_struct["fields"]]


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


# -- decimals: the Python reference decoders (the job decodes with spark_jobs.decimals) --------
def decode_decimal(unscaled: bytes | None, scale: int, precision: int = MAX_DECIMAL_PRECISION) -> Decimal | None:
    """Big-endian two's-complement unscaled bytes → ``Decimal``; None when absent or when the
    value needs more than ``precision`` digits (the record is then dead-lettered)."""
    if unscaled is None:
        return None
    number = int.from_bytes(unscaled, "big", signed=True)
    if len(str(abs(number))) > precision:
        return None
    return Decimal(f"{number}E{-scale}")  # exact: Decimal.scaleb would round to 28 digits


def decode_variable_decimal(value: Any) -> str | None:
    """``io.debezium.data.VariableScaleDecimal`` ``{scale, value}`` → exact decimal text
    (``"3.14159"``, ``"-12.5"``, ``"1000"``: plain notation, no exponent)."""
    if value is None:
        return None
    scale, unscaled = value["scale"], value["value"]
    if scale is None or unscaled is None:
        return None
    number = Decimal(f"{int.from_bytes(unscaled, 'big', signed=True)}E{-int(scale)}")  # exact, any length
    return format(number, "f")


# -- schema evolution -----------------------------------------------------------------------
_INTEGRAL = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_INT_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 20}
_DECIMAL_RE = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)$")


def _decimal_of(ddl: str) -> tuple[int, int] | None:
    m = _DECIMAL_RE.match(ddl)
    return (int(m.group(1)), int(m.group(2))) if m else None


def widening(stored: str, new: str) -> bool:
    """True when Delta's type widening can change a column from ``stored`` to ``new`` without
    losing values (Delta's supported changes: wider integers, float → double, byte/short/int →
    double, date → timestamp_ntz, decimals with at least as many integer and fraction digits,
    integers → a decimal with enough integer digits). Equal types are not a widening."""
    if stored == new:
        return False
    if stored in _INTEGRAL and new in _INTEGRAL:
        return _INTEGRAL.index(new) > _INTEGRAL.index(stored)
    if new == "DOUBLE" and stored in ("FLOAT", "TINYINT", "SMALLINT", "INT"):
        return True
    if stored == "DATE" and new == "TIMESTAMP_NTZ":
        return True
    new_dec = _decimal_of(new)
    if new_dec is None:
        return False
    old_dec = _decimal_of(stored)
    if old_dec is not None:
        return new_dec[1] >= old_dec[1] and new_dec[0] - new_dec[1] >= old_dec[0] - old_dec[1]
    if stored in ("TINYINT", "SMALLINT", "INT"):
        return new_dec[0] - new_dec[1] >= _INT_DIGITS[stored]
    return False


@dataclass(frozen=True)
class Reconciled:
    """How a batch's columns fit the stored table: the resulting column list (stored order, new
    columns appended), the columns to add, the ``(column, old type, new type)`` widenings to apply,
    or ``error`` (an incompatible change; nothing may be written)."""

    columns: list[ColumnSpec]
    added: list[ColumnSpec]
    widened: list[tuple[str, str, str]]
    error: str | None = None


def reconcile(stored: list[ColumnSpec] | None, batches: list[list[ColumnSpec]]) -> Reconciled:
    """Merge the stored columns with each schema seen in a batch (oldest first).

    A new column is added; the same type is kept; a narrower type that widens to the stored one
    is written into the stored type; a wider type the stored one can widen to widens the column;
    anything else (e.g. INT → STRING) is an incompatible change naming the column and both types.
    """
    merged: dict[str, ColumnSpec] = {c.name: c for c in stored or []}
    known = set(merged)
    widened: dict[str, tuple[str, str]] = {}
    for columns in batches:
        for col in columns:
            have = merged.get(col.name)
            if have is None:
                merged[col.name] = col
                continue
            if have.target_ddl == col.target_ddl or widening(col.target_ddl, have.target_ddl):
                continue
            if widening(have.target_ddl, col.target_ddl):
                original = widened.get(col.name, (have.target_ddl, col.target_ddl))[0]
                widened[col.name] = (original, col.target_ddl)
                merged[col.name] = col
                continue
            error = (
                f"incompatible schema change: column {col.name!r} changes type from {have.target_ddl} to "
                f"{col.target_ddl}, which Delta cannot widen"
            )
            return Reconciled([], [], [], error)
    columns = list(merged.values())
    added = [c for c in columns if c.name not in known]
    return Reconciled(
        columns, added, [(n, o, t) for n, (o, t) in widened.items() if n in known]
    )


# -- schemaless records ---------------------------------------------------------------------
def connect_node_of_spark(data_type: Any, name: str | None = None) -> dict[str, Any]:
    """A Connect schema node for a Spark type in its JSON form (``StructType.jsonValue()``), as
    Spark's JSON inference produces them: long → int64, double → double, boolean, string (also
    for all-null fields), arrays and structs recursively."""
    if isinstance(data_type, dict):
        kind = data_type.get("type")
        if kind == "struct":
            node: dict[str, Any] = {"type": "struct", "optional": True, "fields": [
                connect_node_of_spark(f["type"], f["name"]) for f in data_type.get("fields", [])
            ]}
        elif kind == "array":
            node = {"type": "array", "items": connect_node_of_spark(data_type["elementType"]), "optional": True}
        elif kind == "map":
            node = {"type": "map", "keys": connect_node_of_spark(data_type["keyType"]),
                    "values": connect_node_of_spark(data_type["valueType"]), "optional": True}
        else:
            msg = f"cannot describe Spark type {data_type} as a Connect schema"
            raise UnsupportedSchemaError(msg)
    else:
        simple = {"long": "int64", "integer": "int32", "short": "int16", "byte": "int8", "double": "double",
                  "float": "float", "boolean": "boolean", "string": "string", "binary": "bytes", "null": "string"}
        if data_type not in simple:
            msg = f"cannot describe Spark type {data_type!r} as a Connect schema"
            raise UnsupportedSchemaError(msg)
        node = {"type": simple[data_type], "optional": True}
    if name is not None:
        node["field"] = name
    return node
