"""PostgreSQL column types -> Kafka Connect schema nodes and Debezium JSON payload values: the registry.

Contract
--------
:func:`codec_for` maps one :class:`~signaller.model.Column` and the connector's
:class:`TypeModes` to a :class:`ColumnCodec`:

* ``schema`` is the column's Kafka Connect schema node exactly as Kafka's ``JsonConverter``
  renders it (members in JsonConverter order: ``type``, ``fields``/``items``, ``optional``,
  ``name``, ``version``, ``doc``, ``parameters``), without the ``field`` member a struct adds.
* ``convert(text)`` turns PostgreSQL's *text* output of a non-NULL value (what pgoutput sends in
  text mode, what ``SELECT col::text`` and psycopg2 return) into the JSON payload value Debezium's
  PostgreSQL connector emits: ``int``, ``float``, ``str``, ``bool``, a base64 ``str`` for bytes,
  a ``dict`` for structs, a ``list`` for arrays. NULL never reaches ``convert``. Bad text raises
  :class:`~signaller.errors.DecodeError` naming the column, its type and the text.
* ``emitted`` is False for a column Debezium leaves out of its events (unknown types while
  ``include.unknown.datatypes=false``, the array types Debezium has no schema for).

Everything depends on the column only, so it is computed once per column; each ``convert`` is
one small closure on the hot path.

Mapping (Debezium ``PostgresValueConverter``/``JdbcValueConverters``, PostgreSQL connector docs
"Data type mappings"):

* ``int2``/``int4``/``int8``/``oid`` -> int16/int32/int64/int64; ``bool`` -> boolean
  (``"t"`` is true, anything else false); ``float4``/``float8`` -> float/double.
* ``numeric``: ``precise`` -> ``org.apache.kafka.connect.data.Decimal`` (bytes; parameters
  ``scale`` and ``connect.decimal.precision``; payload = base64 of the big-endian two's-complement
  unscaled value), or ``io.debezium.data.VariableScaleDecimal`` ``{scale, value}`` without a
  declared precision (trailing zeros stripped); ``double`` -> double; ``string`` ->
  ``BigDecimal.toPlainString()`` (measured: ``1e-100`` is ``0.000...001``). ``NaN``/``Infinity``/
  ``-Infinity`` are ``NaN``/``Infinity``/``-Infinity`` (double: JSON strings, as Jackson writes them) or ``"NAN"``/
  ``"POSITIVE_INFINITY"``/``"NEGATIVE_INFINITY"`` (string); ``precise`` cannot express them
  (see *Inexpressible values*); ``money`` -> Decimal with scale ``money_fraction_digits``.
* character types, ``name``, ``citext``, network and range types -> string; ``uuid``/``json``/
  ``jsonb``/``xml`` -> string named ``io.debezium.data.Uuid``/``Json``/``Json``/``Xml``; enums ->
  ``io.debezium.data.Enum`` with parameter ``allowed``; ``bit(1)`` -> boolean, longer bit strings
  -> ``io.debezium.data.Bits`` (little-endian bytes).
* ``bytea`` (text form ``\\x...``) per ``binary.handling.mode``: bytes (base64 in JSON),
  base64, base64-url-safe or lowercase hex strings.
* ``date`` -> ``io.debezium.time.Date`` (epoch days); ``time`` -> ``Time`` (ms, precision <= 3)
  or ``MicroTime`` (µs); ``timestamp`` -> ``Timestamp`` (ms, precision <= 3) or
  ``MicroTimestamp``; ``time.precision.mode=connect`` uses the Kafka Connect ``Date``/``Time``/
  ``Timestamp`` types (ms). ``timetz`` -> ``ZonedTime`` (UTC, ISO, shortest fraction);
  ``timestamptz`` -> ``ZonedTimestamp`` (UTC, ``Z``, exactly *precision* fraction digits, 6 by
  default, none for precision 0). PostgreSQL ``infinity``/``-infinity`` as Debezium 3.7 writes
  them (:mod:`signaller.wire.temporal`): timestamptz keeps the words; a ``MicroTimestamp`` is
  ``Long.MAX_VALUE``/``Long.MIN_VALUE``, a millisecond timestamp 9223372036825200000/
  -9223372036832400000 (pgjdbc's infinity instants); a date 2146033979/-2147472691 epoch days
  (Debezium's streamed value; its snapshot READs differ, see the README's allow-list), a
  ``date[]`` element -622191234/-625821272. A ``MicroTimestamp`` after 294247-01-10 exceeds
  int64 µs: inexpressible.
* ``point`` -> ``io.debezium.data.geometry.Point`` ``{x, y, wkb, srid}`` (wkb: little-endian WKB
  as bytes in every ``binary.handling.mode``; srid null); ``line`` -> ``io.debezium.data.geometry.Line``
  ``{a, b, c}``; ``circle`` -> ``io.debezium.data.geometry.Circle`` ``{center: Point, radius}``;
  ``lseg``/``path`` (line strings) and ``box``/``polygon`` (one-ring polygons) ->
  ``io.debezium.data.geometry.Geometry`` version 2 ``{wkb, srid, extensions}`` with
  ``extensions`` ``{"type": "<typname>"}`` (and ``"closed"`` for a path)
  (:mod:`~signaller.sources.postgres.geometric`); PostGIS ``geometry`` -> the same ``Geometry``
  with the value's EWKB as ``wkb``, its SRID and null ``extensions``; ``geography`` ->
  ``io.debezium.data.geometry.Geography`` version 1 ``{wkb, srid}``; the ``Geometry``, ``Circle`` and ``Line``
  schemas are optional even for a NOT NULL column (Debezium's builders declare them so);
  ``int2vector``/``oidvector`` -> arrays of required
  int16/int64 with the vector's numbers (Debezium 3.7 writes ``[]``: the README's allow-list);
  ``tsvector`` -> ``io.debezium.data.Tsvector`` (PostgreSQL's text), ``tsvector[]`` items required.
* ``hstore`` (extension) per ``hstore.handling.mode``: ``io.debezium.data.Json`` string (``json``)
  or ``map<string, string>`` (``map``), pairs in Java ``HashMap`` order as Debezium writes them
  (:mod:`~signaller.sources.postgres.hstore`).
* ``interval`` -> ``io.debezium.time.MicroDuration`` (int64 µs, 365.25/12 days a month, computed
  in doubles as Debezium does, saturated to int64 as Java's ``(long)`` cast) or, with ``interval.handling.mode=string``,
  ``io.debezium.time.Interval`` (``P<y>Y<m>M<d>DT<h>H<m>M<s>S``).
* one-dimensional arrays of the types above (Debezium's list: not ``money``, ``name``,
  ``interval``, ``varbit``, ``xml``, ``point``) -> Connect arrays with optional items (enum,
  ``tsvector``, ``int2vector`` and ``oidvector`` items are required). Geometric arrays carry their
  elements (Debezium 3.7 writes null for every non-empty one: the README's allow-list). A
  multi-dimensional value (``'{{1,2},{3,4}}'`` in an ``int[]``/``int[][]``
  column: PostgreSQL does not enforce the declared dimensions) is inexpressible: the schema says
  "array of int32", and a nested list would break every consumer that validates against it
  (Kafka's JsonConverter); flattening it would lose its shape silently. So it becomes null (see
  below; Debezium writes Java object ids or nulls, the README's allow-list). So does an array with a
  NULL element where items are required, as Debezium. An element the mode cannot express
  (``numeric[]`` with ``NaN``) becomes a null element (Debezium nulls the whole array: allow-list).
* ``bit[]``/``bit(n)[]`` as Debezium 3.7: declared with the element's schema (boolean, ``Bits``),
  null for every value.
* anything else follows ``include.unknown.datatypes``: left out of events (Debezium's default),
  or, when enabled, the text's UTF-8 bytes rendered per the binary handling mode; an array of such
  an element (``aclitem[]``, ``xid[]``, composites, domains...) then becomes an array of required
  items, each element's bytes, except the arrays Debezium never emits (``money[]``, ``name[]``,
  ``interval[]``, ``varbit[]``, ``xml[]``, ``point[]``, ``refcursor[]``).

NULL in a NOT NULL column
-------------------------
A key-only old tuple (default replica identity: DELETE, key-changing UPDATE) brings NULL for every
other column. Each codec's ``null_value`` is what such a NULL becomes: None in a nullable column, else
the schema default, else Debezium's per-type fallback (:mod:`~signaller.sources.postgres.fallbacks`).

Inexpressible values
--------------------
A valid PostgreSQL value the configured mode cannot express never stops capture: ``convert``
returns null for it (Debezium logs and writes null), or, in a NOT NULL column, the schema
default, else the type's zero (``0``, the epoch, an empty array), as Debezium's
``JdbcValueConverters`` fall back for a required field, so the record still validates against
its schema. Each one is counted in :data:`UNREPRESENTABLE` (``(table, column, kind)``, exported
as ``signaller_values_unrepresentable_total``) with a warning naming table, column and kind,
rate-limited per ``(table, column, kind)``. Kinds: ``nan``, ``infinity``,
``multidimensional_array``, ``null_element``, ``out_of_range``. Text PostgreSQL does not produce with its default
output settings (``DateStyle`` other than ISO, ``bytea_output=escape``...) is still a
:class:`DecodeError`: it is a configuration problem that concerns every row, not one value.

Floating point payloads that Java would print differently from Python are
:class:`~signaller.wire.numbers.JavaDouble` / :class:`~signaller.wire.numbers.JavaFloat`.

Where the parts live: this module chooses a builder per type and applies the column-wide rules
(optional, default, fallback, TOAST placeholder); :mod:`~signaller.sources.postgres.scalars`,
:mod:`~signaller.sources.postgres.temporal` and :mod:`~signaller.sources.postgres.arrays` parse
the text; :mod:`~signaller.sources.postgres.conversion` holds the shared error and fallback
plumbing; :mod:`signaller.wire` renders what Debezium renders.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias, get_args

from signaller.errors import ConfigError
from signaller.model.tables import Column
from signaller.sources.postgres.arrays import (
    ARRAY_ELEMENTS,
    UNMAPPED_ARRAY_ELEMENTS,
    array_codec,
    bit_array_codec,
    int_vector_builder,
)
from signaller.sources.postgres.conversion import tolerant
from signaller.sources.postgres.fallbacks import null_value
from signaller.sources.postgres.geometric import GEOMETRIC_BUILDERS
from signaller.sources.postgres.hstore import build_hstore
from signaller.sources.postgres.scalars import (
    binary_placeholder,
    bool_converter,
    build_bits,
    build_bytea,
    build_enum,
    build_money,
    build_numeric,
    build_unknown_binary,
    float4_converter,
    float8_converter,
    int_converter,
    simple_builder,
    string_builder,
)
from signaller.sources.postgres.temporal import (
    build_date,
    build_date_element,
    build_interval,
    build_time,
    build_timestamp,
    build_timestamptz,
    build_timetz,
)
from signaller.wire.columns import UNAVAILABLE_VALUE_PLACEHOLDER, ColumnCodec, Converter
from signaller.wire.connect import with_optional

__all__ = [
    "BinaryHandling",
    "Builder",
    "DecimalHandling",
    "HStoreHandling",
    "IntervalHandling",
    "TimePrecision",
    "TypeModes",
    "codec_for",
    "placeholder_for",
    "type_kind",
]


DecimalHandling: TypeAlias = Literal["precise", "double", "string"]
TimePrecision: TypeAlias = Literal["adaptive", "adaptive_time_microseconds", "connect"]
BinaryHandling: TypeAlias = Literal["bytes", "base64", "base64-url-safe", "hex"]
IntervalHandling: TypeAlias = Literal["numeric", "string"]
HStoreHandling: TypeAlias = Literal["json", "map"]
Builder: TypeAlias = Callable[[Column, "TypeModes", str], tuple[dict[str, Any], Converter]]
"""A type's builder: ``(column, modes, label)`` -> (schema node, converter)."""


@dataclass(frozen=True, slots=True)
class TypeModes:
    """The Debezium properties that change how values look.

    ``decimal_handling`` = ``decimal.handling.mode``, ``time_precision`` = ``time.precision.mode``,
    ``binary_handling`` = ``binary.handling.mode``, ``interval_handling`` =
    ``interval.handling.mode``, ``hstore_handling`` = ``hstore.handling.mode``,
    ``include_unknown_datatypes`` = ``include.unknown.datatypes``,
    ``money_fraction_digits`` = ``money.fraction.digits``; defaults are Debezium's. An
    unsupported value raises :class:`~signaller.errors.ConfigError`.
    """

    decimal_handling: DecimalHandling = "precise"
    time_precision: TimePrecision = "adaptive"
    binary_handling: BinaryHandling = "bytes"
    interval_handling: IntervalHandling = "numeric"
    hstore_handling: HStoreHandling = "json"
    include_unknown_datatypes: bool = False
    money_fraction_digits: int = 2

    def __post_init__(self) -> None:
        checks = (
            ("decimal.handling.mode", self.decimal_handling, DecimalHandling),
            ("time.precision.mode", self.time_precision, TimePrecision),
            ("binary.handling.mode", self.binary_handling, BinaryHandling),
            ("interval.handling.mode", self.interval_handling, IntervalHandling),
            ("hstore.handling.mode", self.hstore_handling, HStoreHandling),
        )
        for key, value, alias in checks:
            allowed = get_args(alias)
            if value not in allowed:
                raise ConfigError(key, value, ", ".join(allowed))
        if self.money_fraction_digits < 0:
            raise ConfigError("money.fraction.digits", self.money_fraction_digits, "an integer >= 0")

    def codec(self, column: Column, table: str = "") -> ColumnCodec:
        """:func:`codec_for` under these modes (the :class:`~signaller.wire.columns.CodecProvider`
        that :meth:`~signaller.wire.envelope.EnvelopeSerializer.for_table` takes)."""
        return codec_for(column, self, table)


_ALIASES: Final[Mapping[str, str]] = {
    "smallint": "int2", "smallserial": "int2", "serial2": "int2",
    "integer": "int4", "int": "int4", "serial": "int4", "serial4": "int4",
    "bigint": "int8", "bigserial": "int8", "serial8": "int8",
    "real": "float4", "double precision": "float8", "float": "float8",
    "decimal": "numeric", "boolean": "bool",
    "character varying": "varchar", "character": "bpchar",
    "time without time zone": "time", "time with time zone": "timetz",
    "timestamp without time zone": "timestamp", "timestamp with time zone": "timestamptz",
    "bit varying": "varbit",
}  # fmt: skip


def _canonical(type_name: str) -> str:
    name = type_name.lower()
    return _ALIASES.get(name, name)


_PLAIN_STRING_TYPES: Final = (
    "text", "varchar", "bpchar", "char", "name", "citext", "inet", "cidr", "macaddr", "macaddr8",
    "int4range", "int8range", "numrange", "tsrange", "tstzrange", "daterange",
)  # fmt: skip
"""Types Debezium emits as plain (unnamed) strings."""


_BUILDERS: Final[Mapping[str, Builder]] = {
    "int2": simple_builder("int16", int_converter),
    "int4": simple_builder("int32", int_converter),
    "int8": simple_builder("int64", int_converter),
    "oid": simple_builder("int64", int_converter),
    "float4": simple_builder("float", float4_converter),
    "float8": simple_builder("double", float8_converter),
    "bool": simple_builder("boolean", bool_converter),
    "numeric": build_numeric,
    "money": build_money,
    "bit": build_bits,
    "varbit": build_bits,
    "bytea": build_bytea,
    "date": build_date,
    "time": build_time,
    "timetz": build_timetz,
    "timestamp": build_timestamp,
    "timestamptz": build_timestamptz,
    "interval": build_interval,
    "uuid": string_builder("io.debezium.data.Uuid"),
    "json": string_builder("io.debezium.data.Json"),
    "jsonb": string_builder("io.debezium.data.Json"),
    "xml": string_builder("io.debezium.data.Xml"),
    "tsvector": string_builder("io.debezium.data.Tsvector"),
    "hstore": build_hstore,
    **GEOMETRIC_BUILDERS,
    "int2vector": int_vector_builder("int16"),
    "oidvector": int_vector_builder("int64"),
    **{name: string_builder() for name in _PLAIN_STRING_TYPES},
}


_ELEMENT_BUILDERS: Final[Mapping[str, Builder]] = {**_BUILDERS, "date": build_date_element}
"""Builders of array elements: as the columns', except where Debezium writes elements differently."""


def type_kind(column: Column) -> str:
    """How :func:`codec_for` reads ``column``'s type: ``"array"``, ``"enum"``, or the canonical type name
    (``int4`` for ``integer``, ``timestamptz`` for ``timestamp with time zone``...)."""
    if _array_element_name(column) is not None:
        return "array"
    if column.enum_values is not None:
        return "enum"
    return _canonical(column.type_name)


def _array_element_name(column: Column) -> str | None:
    if column.element_type_name is not None:
        return column.element_type_name
    if column.type_name.startswith("_"):
        return column.type_name[1:]
    if column.type_name.endswith("[]"):
        return column.type_name[:-2]
    return None


def _omitted(column: Column, modes: TypeModes, label: str) -> ColumnCodec:
    """Unknown type: Debezium's ``include.unknown.datatypes`` decides (binary text, or left out)."""
    node, convert = build_unknown_binary(column, modes, label)
    node = with_optional(node, column.optional)
    if modes.include_unknown_datatypes and _array_element_name(column) is None:
        return ColumnCodec(node, convert, True, binary_placeholder(modes.binary_handling))
    return ColumnCodec(node, convert, False, None)


def _array_codec(column: Column, element: str, modes: TypeModes, label: str, table: str) -> ColumnCodec:
    """An array column: enum arrays and the arrays Debezium has a schema for; others omitted."""
    if column.enum_values is not None:
        return array_codec(column, element, build_enum, modes, label, table)
    if element == "bit":
        return bit_array_codec(column, build_bits, modes, label)
    builder = _ELEMENT_BUILDERS.get(element)
    if builder is None and modes.include_unknown_datatypes and element not in UNMAPPED_ARRAY_ELEMENTS:
        return array_codec(column, element, build_unknown_binary, modes, label, table)
    if builder is None or element not in ARRAY_ELEMENTS:
        return _omitted(column, modes, label)
    return array_codec(column, element, builder, modes, label, table)


def codec_for(column: Column, modes: TypeModes, table: str = "") -> ColumnCodec:
    """Build the :class:`ColumnCodec` of ``column`` (of ``table``, ``schema.table``, named in
    warnings) under ``modes`` (see module docstring); its ``null_value`` is what a NULL becomes
    (:func:`~signaller.sources.postgres.fallbacks.null_value`)."""
    codec, canonical = _codec(column, modes, table)
    if column.optional or not codec.emitted:
        return codec
    fallback = null_value(column, canonical, codec.schema, codec.convert, modes.money_fraction_digits)
    return replace(codec, null_value=fallback)


def _codec(column: Column, modes: TypeModes, table: str) -> tuple[ColumnCodec, str]:
    """The codec of ``column`` and its kind for the null fallback (canonical type name, ``array``,
    ``enum`` or ``unknown``)."""
    label = f"column {column.name!r} ({column.type_name})"
    element = _array_element_name(column)
    if element is not None:
        return _array_codec(column, _canonical(element), modes, label, table), "array"
    if column.enum_values is not None:
        node, convert = build_enum(column, modes, label)
        node = _with_default(with_optional(node, column.optional), column, convert)
        return ColumnCodec(node, convert, True, UNAVAILABLE_VALUE_PLACEHOLDER), "enum"
    canonical = _canonical(column.type_name)
    builder = _BUILDERS.get(canonical)
    if builder is None:
        return _omitted(column, modes, label), "unknown"
    node, convert = builder(column, modes, label)
    placeholder = _scalar_placeholder(canonical, node, modes)
    optional = column.optional or node.get("name") in _ALWAYS_OPTIONAL
    node = _with_default(with_optional(node, optional), column, convert)
    if canonical == "timestamp" or (canonical == "numeric" and modes.decimal_handling == "precise"):
        # an inexpressible value becomes what a NULL becomes (Debezium's convertValue fallback)
        convert = tolerant(convert, column, table, null_value(column, canonical, node, convert))
    return ColumnCodec(node, convert, True, placeholder), canonical


_ALWAYS_OPTIONAL: Final = frozenset({
    "io.debezium.data.geometry.Geometry", "io.debezium.data.geometry.Circle", "io.debezium.data.geometry.Line",
})
"""Schemas Debezium declares optional even for a NOT NULL column: the ``Geometry``, ``Circle`` and ``Line``
builders call ``optional()`` themselves (``io/debezium/data/geometry/*.java``; ``Point`` and ``Geography`` do
not). The values of a NOT NULL column still get the fallback (:mod:`~signaller.sources.postgres.fallbacks`)."""


def _with_default(node: dict[str, Any], column: Column, convert: Converter) -> dict[str, Any]:
    """Debezium's schema ``default``: the column's constant default converted like a value (no
    default when there is none or it does not convert)."""
    if column.default_text is None:
        return node
    try:
        value = convert(column.default_text)
    except Exception:  # a default Debezium could not parse either: the schema simply has none
        return node
    if value is None:
        return node
    return {**node, "default": value}


def _scalar_placeholder(canonical: str, node: dict[str, Any], modes: TypeModes) -> Any:
    """What Debezium emits for an unchanged TOASTed scalar: the placeholder for string schemas,
    binary rules for ``bytea``, nothing valid (None) for other types (they are never TOASTed
    in practice, and Debezium's fallback would not fit their schema)."""
    if canonical == "bytea":
        return binary_placeholder(modes.binary_handling)
    if node["type"] == "string":
        return UNAVAILABLE_VALUE_PLACEHOLDER
    return None


def placeholder_for(codec: ColumnCodec) -> Any:
    """Payload Debezium emits for an unchanged TOASTed value of ``codec``'s column.

    String-typed columns: ``"__debezium_unavailable_value"``; ``bytea`` in bytes mode: that
    text's bytes (base64 in JSON), in hex mode: the text, in base64 modes: None (Debezium's
    base64 converters do not recognise the marker and emit null); ``text[]``/``varchar[]``/
    ``json[]``/``jsonb[]``: ``["__debezium_unavailable_value"]``; ``int4[]``/``int8[]``/
    ``date[]``: the placeholder's byte values as numbers; anything else: None.
    """
    return codec.toast_placeholder
