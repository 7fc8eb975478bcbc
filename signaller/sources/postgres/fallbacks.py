"""What a NULL becomes in a NOT NULL column: Debezium's fallback, per type.

A NOT NULL column has no NULL of its own, yet one reaches the converters when PostgreSQL leaves the
column out: under the default replica identity a DELETE, or an UPDATE that changes the primary key,
sends an old tuple with the key columns only (pgoutput's ``K`` tuple; every other column is ``n``).
Debezium 3.7 builds the ``before`` image from that tuple through the same value converters, and
``JdbcValueConverters.convertValue`` (debezium-connector-common, ``io/debezium/jdbc/JdbcValueConverters.java``)
answers a null value of a non-optional column with the field schema's default value if it has one,
else with the converter's own ``fallback`` argument: the type's zero or empty value. The record then
validates against its schema, which a null in a required field would not (JsonConverter would write a
record that breaks its own schema; an Avro converter cannot write it at all).

Contract
--------
:func:`null_value` gives, once per column, the payload a NULL of that column becomes: None for an
optional column; the schema's ``default`` member, exactly as the schema renders it, when there is
one; else the type's fallback as Debezium's converter for that type writes it (its ``fallback``
argument, measured side by side in ``tests/compat``):

* numbers: 0 (``int2``..``int8``, ``oid``), 0.0 (``float4``/``float8``), numeric and money zero at
  the column's scale (Decimal/VariableScaleDecimal bytes, ``0.0`` or ``"0.00"`` per
  ``decimal.handling.mode``); ``bool`` and ``bit(1)``: false;
* character, network, range, ``uuid``, ``json``/``jsonb``, ``xml``, ``tsvector``, enums: ``""``;
  ``hstore``: ``"{}"`` (json) or ``{}`` (map); ``bytea``, ``bit(n)``/``varbit`` and unknown types
  written as binary: empty bytes in every ``binary.handling.mode``;
* ``date``, ``time``, ``timestamp``: the epoch (0 in every unit); ``timetz``: ``"00:00:00Z"``;
  ``timestamptz``: ``"1970-01-01T00:00:00Z"`` (no fraction digits: Debezium formats its fallback
  with ``ISO_OFFSET_DATE_TIME``, not with the column's precision); ``interval``: 0 or
  ``"P0Y0M0DT0H0M0S"``;
* arrays, ``int2vector``, ``oidvector``: ``[]`` (``bit[]``, whose schema is its element's: false or empty bytes);
* geometric types: Debezium's ``geometryFallback``/``createValue`` shapes: ``point`` (0,0),
  ``line`` {0,1,0}, ``circle`` <(0,0),0>, ``box`` (0,0),(1,1), ``lseg`` [(0,0),(1,0)], ``polygon``
  ((0,0),(1,0),(0,1)), ``path`` [(0,0),(1,0)] with extensions ``{"type": "path"}`` only; PostGIS
  ``geometry``/``geography``: the empty GEOMETRYCOLLECTION (``010700000000000000``).

A type none of these cover keeps None (the Avro converter then refuses the record with an error
naming the table, column and value). Pure; computed when a codec is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from signaller.model.tables import Column
from signaller.wire.geometry import geometry_payload, linestring_wkb

__all__ = ["null_value"]

Converter = Callable[[str], Any]

_ZERO_TEXT: Final[Mapping[str, str]] = {
    "int2": "0", "int4": "0", "int8": "0", "oid": "0", "float4": "0", "float8": "0", "bool": "f",
    "numeric": "0", "bytea": "\\x", "bit": "", "varbit": "",
    "date": "1970-01-01", "time": "00:00:00", "timetz": "00:00:00+00", "timestamp": "1970-01-01 00:00:00",
    "interval": "00:00:00", "hstore": "", "int2vector": "", "oidvector": "",
    "point": "(0,0)", "line": "{0,1,0}", "circle": "<(0,0),0>", "box": "(0,0),(1,1)", "lseg": "[(0,0),(1,0)]",
    "polygon": "((0,0),(1,0),(0,1))", "geometry": "010700000000000000", "geography": "010700000000000000",
}  # fmt: skip
"""The text whose conversion is Debezium's fallback, per canonical type name (``bit``: ``bit(1)``
converts ``"0"``, see :func:`type_fallback`; ``numeric``'s converter sets the declared scale)."""

_CONSTANTS: Final[Mapping[str, Any]] = {
    "timestamptz": "1970-01-01T00:00:00Z",
    "path": geometry_payload(linestring_wkb([(0.0, 0.0), (1.0, 0.0)]), None, {"type": "path"}),
}
"""Fallbacks that are not the conversion of any text (Debezium formats them its own way)."""

_BY_SCHEMA_TYPE: Final[Mapping[Any, Any]] = {"boolean": False, "bytes": "", "string": ""}
"""The fallback of an array column whose schema is not an array (``bit[]``: boolean or ``Bits``)."""


def null_value(column: Column, canonical: str, node: Mapping[str, Any], convert: Converter,
               money_fraction_digits: int = 2) -> Any:
    """The payload a NULL of ``column`` becomes (see the module docstring): None when the column is
    optional, else the schema ``node``'s ``default``, else :func:`type_fallback`. ``canonical`` is the
    type's canonical name (``array`` for any array, ``enum`` for an enum, ``unknown`` for a type written
    as binary); ``convert`` the column's converter; ``money_fraction_digits`` = ``money.fraction.digits``."""
    if column.optional:
        return None
    if "default" in node:
        return node["default"]
    return type_fallback(canonical, node, convert, money_fraction_digits)


def type_fallback(canonical: str, node: Mapping[str, Any], convert: Converter, money_fraction_digits: int = 2) -> Any:
    """Debezium's fallback for a null value of a NOT NULL column of ``canonical`` type (schema ``node``,
    converter ``convert``) without a schema default; None for a type without one."""
    if canonical in _CONSTANTS:
        return _CONSTANTS[canonical]
    if canonical == "array":  # bit arrays keep their element's schema (boolean, Bits), as Debezium declares them
        return [] if node.get("type") == "array" else _BY_SCHEMA_TYPE.get(node.get("type"))
    if canonical == "enum":
        return ""
    text = _ZERO_TEXT.get(canonical)
    if canonical == "money":  # BigDecimal.ZERO.setScale(money.fraction.digits)
        text = "0." + "0" * money_fraction_digits if money_fraction_digits else "0"
    elif canonical == "bit" and node.get("type") == "boolean":  # bit(1)
        text = "0"
    elif text is None and node.get("type") in ("string", "bytes"):
        text = ""
    if text is None:
        return None
    try:
        return convert(text)
    except Exception:  # a converter that rejects its zero: no fallback (None) rather than a wrong one
        return None
