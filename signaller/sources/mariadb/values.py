"""MariaDB column types as Debezium's MariaDB connector emits them: the Connect schema of each column and
the conversion of one value, as the binlog client (or PyMySQL, for snapshot rows) returns it, to its
Debezium payload.

Contract
--------
:func:`column_codec` maps one :class:`MariaDbColumn` (what ``information_schema.COLUMNS`` says) under
the configured :class:`TypeModes` to a :class:`~signaller.wire.columns.ColumnCodec`: ``schema`` is the
column's Connect schema node (``optional`` from the column's nullability, ``default`` from a constant
column default), ``convert`` is :func:`value_converter`'s function. That function takes **one non-NULL
value as the driver returns it** and gives the Debezium payload; it accepts both the binlog client's
Python values (``mysql-replication``: ``bit`` as a ``'0101'`` string, ``set`` as a Python set) and
PyMySQL's (``bit`` as big-endian ``bytes``, ``set`` as ``'a,b'`` text, ``decimal`` as ``Decimal``,
``datetime``/``date``/``timedelta``), so the stream and an incremental snapshot's SELECT produce the
same payloads. None stays None everywhere (callers skip the call). A zero date/datetime (the driver
gives None, or ``'0000-00-00'`` text) is null, as Debezium streams it.

Mapping, default modes (Debezium ``BinlogValueConverters``/``JdbcValueConverters``):
``tinyint``/``smallint`` → int16 (``smallint unsigned`` → int32), ``mediumint``/``int`` → int32
(``int unsigned`` → int64), ``bigint`` → int64 (``bigint unsigned``: int64 with
``bigint.unsigned.handling.mode=long``, a ``Decimal`` of scale 0 with ``precise``), ``decimal(p,s)`` →
``org.apache.kafka.connect.data.Decimal`` (``double``/``string`` per ``decimal.handling.mode``),
``float`` → float32, ``double`` → float64, ``bit(1)`` → boolean, ``bit(n)`` → ``io.debezium.data.Bits``
(little-endian bytes, as ``BitSet.toByteArray``), ``year`` → ``io.debezium.time.Year``, ``date`` →
``io.debezium.time.Date``, ``time`` → ``io.debezium.time.MicroTime``, ``datetime(0-3)`` →
``io.debezium.time.Timestamp``, ``datetime(4-6)`` → ``io.debezium.time.MicroTimestamp``, ``timestamp(n)`` →
``io.debezium.time.ZonedTimestamp`` (UTC, ``n`` fraction digits), ``enum`` → ``io.debezium.data.Enum``,
``set`` → ``io.debezium.data.EnumSet`` (the empty set ``""``), ``json`` (MySQL's own type) →
``io.debezium.data.Json`` but MariaDB's ``JSON`` (a ``longtext`` with ``json_valid``) a plain string, the
text as stored (Debezium's MariaDB connector sees a ``longtext``), ``uuid`` → ``io.debezium.data.Uuid``
text, character types → string (any character set: the binlog's bytes decoded as
:mod:`~signaller.sources.mariadb.charsets` says, the snapshot's text as the server converts it),
``binary``/``varbinary``/``blob`` → bytes (per
``binary.handling.mode``; ``binary(n)`` right-padded with zero bytes), spatial types →
``io.debezium.data.geometry.Geometry`` version 1 ``{wkb, srid}`` (``point`` →
``io.debezium.data.geometry.Point``), as the MariaDB connector 3.5.0.Final writes them.
``time.precision.mode=connect`` gives Connect's ``Date``/``Time``/``Timestamp`` (a ``TIME`` outside
``00:00:00``..``23:59:59.999999`` is null, as Debezium writes it). Pure; no I/O.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Context, Decimal, localcontext
from typing import Any, Final
from uuid import UUID

import orjson

from signaller.errors import DecodeError
from signaller.sources.mariadb.charsets import python_encoding
from signaller.wire.columns import ColumnCodec
from signaller.wire.connect import GEOMETRY_V1, POINT, decimal_node, schema_node, with_optional
from signaller.wire.numbers import JavaFloat, b64, double_payload, to_float32, unscaled_bytes
from signaller.wire.temporal import zoned_timestamp_text

__all__ = ["MariaDbColumn", "TypeModes", "column_codec", "default_payload", "required_fallback", "value_converter"]

Convert = Callable[[Any], Any]

_EPOCH_DATE: Final = dt.date(1970, 1, 1)
_EPOCH: Final = dt.datetime(1970, 1, 1)
_INT_BITS: Final = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
_SPATIAL: Final = frozenset({"geometry", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
                             "geometrycollection"})
_TEXT: Final = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})
_BINARY: Final = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})


@dataclass(frozen=True, slots=True)
class MariaDbColumn:
    """One column as ``information_schema.COLUMNS`` describes it (lower-case ``data_type``; ``column_type`` as
    the server prints it, e.g. ``int(10) unsigned``, ``enum('a','b')``); ``is_json`` when a ``json_valid``
    check guards it (MariaDB's ``JSON`` alias); ``default`` the column default as the catalog prints it."""

    name: str
    data_type: str
    column_type: str
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None
    datetime_precision: int | None = None
    char_length: int | None = None
    charset: str | None = None
    is_json: bool = False
    default: str | None = None

    @property
    def unsigned(self) -> bool:
        """Whether the numeric column is ``unsigned``."""
        return " unsigned" in self.column_type.lower()

    @property
    def options(self) -> tuple[str, ...]:
        """The values of an ``enum``/``set`` column, in declaration order (quotes undone)."""
        inner = self.column_type[self.column_type.index("(") + 1: self.column_type.rindex(")")]
        return tuple(m.group(1).replace("''", "'").replace("\\\\", "\\") for m in re.finditer(r"'((?:[^']|'')*)'",
                                                                                               inner))

    @property
    def length(self) -> int:
        """The ``(n)`` of the column type (``bit(n)``, ``binary(n)``, ``float(p)``), 1 without one."""
        match = re.search(r"\((\d+)", self.column_type)
        return int(match.group(1)) if match else 1


@dataclass(frozen=True, slots=True)
class TypeModes:
    """The type-related modes (Debezium's names and values): ``decimal.handling.mode``, ``time.precision.mode``
    (``adaptive_time_microseconds``, the MySQL/MariaDB default, or ``connect``; the configuration refuses an
    explicit ``adaptive``, as Debezium's binlog connectors do), ``bigint.unsigned.handling.mode``,
    ``binary.handling.mode``."""

    decimal: str = "precise"
    time_precision: str = "adaptive_time_microseconds"
    bigint_unsigned: str = "long"
    binary: str = "bytes"


def _node(type_: str, name: str | None = None, version: int | None = None,
          parameters: dict[str, str] | None = None) -> dict[str, Any]:
    return schema_node(type_, name=name, version=version, parameters=parameters)


def _binary_payload(data: bytes, mode: str) -> Any:
    if mode == "base64":
        return base64.b64encode(data).decode("ascii")
    if mode == "base64-url-safe":
        return base64.urlsafe_b64encode(data).decode("ascii")
    if mode == "hex":
        return data.hex()
    return b64(data)


def _as_bytes(value: Any, encoding: str = "utf-8") -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode(encoding, "surrogateescape")
    raise DecodeError(f"expected bytes, got {type(value).__name__} {value!r}")


def _decimal(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value))


_WIDE: Final = Context(prec=200)
"""Enough digits for any MariaDB decimal (65 digits) shifted by its scale (the default context's 28 digits
would round a DECIMAL(38,10))."""


def _unscaled(value: Decimal, scale: int) -> int:
    with localcontext(_WIDE):
        return int(value.scaleb(scale).to_integral_value())


def _integer(column: MariaDbColumn) -> tuple[dict[str, Any], Convert]:
    bits = _INT_BITS[column.data_type]
    unsigned = column.unsigned
    if bits == 8 or (bits == 16 and not unsigned):
        type_ = "int16"
    elif bits == 16 or bits == 24 or (bits == 32 and not unsigned):
        type_ = "int32"
    else:
        type_ = "int64"
    wrap = 1 << bits

    def plain(value: Any) -> int:
        number = int(value)
        return number + wrap if unsigned and number < 0 else number  # a driver that read it signed

    return _node(type_), plain


def _bigint_unsigned(modes: TypeModes) -> tuple[dict[str, Any], Convert]:
    def as_long(value: Any) -> int:
        number = int(value)
        number = number + (1 << 64) if number < 0 else number
        return number - (1 << 64) if number >= 1 << 63 else number  # Java's long: wraps as Debezium's does

    if modes.bigint_unsigned == "precise":
        def precise(value: Any) -> str:
            number = int(value)
            return b64(unscaled_bytes(number + (1 << 64) if number < 0 else number))

        return decimal_node(0, 20), precise
    return _node("int64"), as_long


def _decimal_column(column: MariaDbColumn, modes: TypeModes) -> tuple[dict[str, Any], Convert]:
    scale = column.scale or 0
    if modes.decimal == "double":
        return _node("double"), lambda value: double_payload(float(value))
    if modes.decimal == "string":
        return _node("string"), lambda value: format(_decimal(value), "f")
    return decimal_node(scale, column.precision), lambda value: b64(unscaled_bytes(_unscaled(_decimal(value), scale)))


def _bits(column: MariaDbColumn) -> tuple[dict[str, Any], Convert]:
    length = column.length

    def number_of(value: Any) -> int:
        if isinstance(value, str):
            return int(value, 2) if value else 0
        if isinstance(value, bytes | bytearray):
            return int.from_bytes(value, "big")
        return int(value)

    if length == 1:
        return _node("boolean"), lambda value: number_of(value) != 0
    size = (length + 7) // 8

    def bits(value: Any) -> str:  # little-endian, (n + 7) / 8 bytes, as Debezium's MariaDB connector writes them
        return b64(number_of(value).to_bytes(size, "little"))

    return _node("bytes", "io.debezium.data.Bits", 1, {"length": str(length)}), bits


def _date(value: Any) -> int | None:
    if isinstance(value, dt.datetime):
        value = value.date()
    if isinstance(value, str):
        if value.startswith("0000") or "-00" in value[:10]:
            return None
        value = dt.date.fromisoformat(value[:10])
    days: int = (value - _EPOCH_DATE).days
    return days


def _micros_of(value: Any) -> int:
    if isinstance(value, dt.timedelta):
        return (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    raise DecodeError(f"not a time value: {value!r}")


_DAY_MICROS: Final = 86_400_000_000


def _connect_time(value: Any) -> int | None:
    """Connect's ``Time`` (milliseconds past midnight) of a TIME value; None (as Debezium's MariaDB connector
    writes it) for a value outside ``00:00:00``..``23:59:59.999999``, which a time of day cannot hold: negative
    times and times of 24 hours or more."""
    micros = _micros_of(value)
    return micros // 1000 if 0 <= micros < _DAY_MICROS else None


def _epoch_micros(value: Any) -> int | None:
    if isinstance(value, str):
        if value.startswith("0000"):
            return None
        value = dt.datetime.fromisoformat(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        delta: dt.timedelta = value - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, dt.date):
        days: int = (value - _EPOCH_DATE).days
        return days * 86_400_000_000
    raise DecodeError(f"not a datetime value: {value!r}")


def _temporal(column: MariaDbColumn, modes: TypeModes) -> tuple[dict[str, Any], Convert]:
    kind, precision = column.data_type, column.datetime_precision or 0
    connect = modes.time_precision == "connect"
    if kind == "date":
        name = "org.apache.kafka.connect.data.Date" if connect else "io.debezium.time.Date"
        return _node("int32", name, 1), _date
    if kind == "time":
        if connect:
            return _node("int32", "org.apache.kafka.connect.data.Time", 1), _connect_time
        return _node("int64", "io.debezium.time.MicroTime", 1), _micros_of
    if kind == "timestamp":
        def zoned(value: Any) -> str | None:
            micros = _epoch_micros(value)
            return None if micros is None else zoned_timestamp_text(micros, precision)

        return _node("string", "io.debezium.time.ZonedTimestamp", 1), zoned
    # datetime
    if connect or precision <= 3:
        name = "org.apache.kafka.connect.data.Timestamp" if connect else "io.debezium.time.Timestamp"

        def millis(value: Any) -> int | None:
            micros = _epoch_micros(value)
            return None if micros is None else micros // 1000

        return _node("int64", name, 1), millis
    return _node("int64", "io.debezium.time.MicroTimestamp", 1), _epoch_micros


def _year(value: Any) -> int:
    if isinstance(value, dt.date):
        return value.year
    return int(value)


def _enum_set(column: MariaDbColumn) -> tuple[dict[str, Any], Convert]:
    options = column.options
    allowed = ",".join(options)
    if column.data_type == "enum":
        def enum(value: Any) -> str | None:
            if isinstance(value, int):  # an index (1-based; 0 is the invalid '' value)
                return options[value - 1] if 0 < value <= len(options) else ""
            return str(value)

        return _node("string", "io.debezium.data.Enum", 1, {"allowed": allowed}), enum

    def as_set(value: Any) -> str:
        chosen = set(value.split(",")) if isinstance(value, str) else {str(item) for item in value}
        chosen.discard("")
        return ",".join(option for option in options if option in chosen)

    return _node("string", "io.debezium.data.EnumSet", 1, {"allowed": allowed}), as_set


def _text(column: MariaDbColumn) -> Convert:
    encoding = python_encoding(column.charset) or "utf-8"

    def text(value: Any) -> str:
        if isinstance(value, bytes | bytearray):
            return bytes(value).decode(encoding, "replace")
        return str(value)

    return text


def _json(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8")
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode("utf-8")  # a parsed document (MySQL's binary JSON)


_SRID: Final = struct.Struct("<I")


def _geometry(value: Any) -> dict[str, Any]:
    """MariaDB's internal geometry (4-byte little-endian SRID, then WKB) as Geometry ``{wkb, srid}``."""
    data = _as_bytes(value)
    srid = _SRID.unpack_from(data)[0] if len(data) >= 4 else 0
    return {"wkb": b64(data[4:]), "srid": srid or None}


def _point(value: Any) -> dict[str, Any]:
    data = _as_bytes(value)
    wkb = data[4:]
    srid = _SRID.unpack_from(data)[0] if len(data) >= 4 else 0
    order = "<" if wkb[:1] == b"\x01" else ">"
    x, y = struct.unpack_from(order + "dd", wkb, 5)
    return {"x": double_payload(x), "y": double_payload(y), "wkb": b64(wkb), "srid": srid or None}


_UUID_TEXT: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _uuid(value: Any) -> str:
    """A UUID as text: the binlog's bytes (MariaDB stores them in text order; trailing zero bytes may be cut, so
    the zero UUID can arrive empty), or the text PyMySQL reads."""
    if isinstance(value, str):
        if _UUID_TEXT.fullmatch(value):
            return value.lower()
        value = value.encode("latin-1", "surrogateescape")
    data = bytes(value)
    if len(data) > 16:
        raise DecodeError(f"a UUID is 16 bytes, got {len(data)}")
    return str(UUID(bytes=data.ljust(16, b"\x00")))


def value_converter(column: MariaDbColumn, modes: TypeModes) -> tuple[dict[str, Any], Convert]:
    """The Connect schema node (``optional`` true, no default) of ``column`` and its converter: one non-NULL value
    as the binlog client or PyMySQL returns it → the Debezium payload (see the module docstring). ``DecodeError``
    for a column type signaller does not know (named with the column)."""
    kind = column.data_type.lower()
    if column.is_json:  # MariaDB's JSON: a longtext to Debezium's MariaDB connector
        return _node("string"), _json
    if kind == "json":  # MySQL's JSON type
        return _node("string", "io.debezium.data.Json", 1), _json
    if kind in _INT_BITS:
        if kind == "bigint" and column.unsigned:
            return _bigint_unsigned(modes)
        return _integer(column)
    if kind in ("decimal", "numeric"):
        return _decimal_column(column, modes)
    if kind == "float":
        return _node("float"), lambda value: JavaFloat(to_float32(float(value)))
    if kind in ("double", "real"):
        return _node("double"), lambda value: double_payload(float(value))
    if kind == "bit":
        return _bits(column)
    if kind == "year":
        return _node("int32", "io.debezium.time.Year", 1), _year
    if kind in ("date", "time", "datetime", "timestamp"):
        return _temporal(column, modes)
    if kind in ("enum", "set"):
        return _enum_set(column)
    if kind in _TEXT:
        return _node("string"), _text(column)
    if kind in _BINARY:
        pad = column.length if kind == "binary" else 0
        mode = modes.binary

        def binary(value: Any) -> Any:
            data = _as_bytes(value, "latin-1")
            if pad and len(data) < pad:
                data = data.ljust(pad, b"\x00")
            return _binary_payload(data, mode)

        node = _node("string") if mode != "bytes" else _node("bytes")
        return node, binary
    if kind == "point":
        return dict(POINT), _point
    if kind in _SPATIAL:
        return dict(GEOMETRY_V1), _geometry
    if kind == "uuid":
        return _node("string", "io.debezium.data.Uuid", 1), _uuid
    if kind in ("inet4", "inet6"):
        return _node("string"), str
    msg = f"column {column.name!r} has type {column.column_type!r}, which signaller cannot convert yet"
    raise DecodeError(msg)


def column_codec(column: MariaDbColumn, modes: TypeModes) -> ColumnCodec:
    """The :class:`~signaller.wire.columns.ColumnCodec` of ``column``: its node with ``optional`` from the
    column's nullability and ``default`` from its constant default (:func:`default_payload`), and
    :func:`value_converter`'s converter."""
    node, convert = value_converter(column, modes)
    node = with_optional(node, column.nullable)
    default = default_payload(column, convert)
    if default is not None:
        node["default"] = default
    return ColumnCodec(node, convert)


_NUMBER: Final = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_TIME_TEXT: Final = re.compile(r"(-?)(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?")


def _time_of_text(text: str) -> dt.timedelta:
    match = _TIME_TEXT.fullmatch(text)
    if match is None:
        raise ValueError(text)
    sign, hours, minutes, seconds, fraction = match.groups()
    value = dt.timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds),
                         microseconds=int((fraction or "0").ljust(6, "0")))
    return -value if sign else value


def default_payload(column: MariaDbColumn, convert: Convert) -> Any:
    """The payload of ``column``'s constant default as ``information_schema.COLUMNS.COLUMN_DEFAULT`` prints it
    (MariaDB: quoted literals, bare numbers, ``NULL``, expressions such as ``current_timestamp()``); None when
    there is none, it is NULL, an expression or a zero date (Debezium's schema then has no default either).
    A ``YEAR`` default below 100 reads as MySQL's two-digit year (``0`` → 2000, as Debezium writes it)."""
    text = column.default
    if text is None or text.upper() == "NULL":
        return None
    kind = column.data_type.lower()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        literal = text[1:-1].replace("''", "'").replace("\\\\", "\\")
    elif _NUMBER.fullmatch(text):
        literal = text
    else:
        return None  # an expression
    try:
        if kind == "year":
            year = int(literal)
            return year + (2000 if year < 70 else 1900) if year < 100 else year
        if kind == "time":
            return convert(_time_of_text(literal))
        if kind == "bit":
            return None
        return convert(literal)
    except (ValueError, ArithmeticError, DecodeError):
        return None


def required_fallback(node: Mapping[str, Any]) -> Any:
    """What a NOT NULL column's value becomes when the binlog value cannot be represented (a zero date): the
    schema default, else the type's zero (the epoch for temporal types), as Debezium's
    ``JdbcValueConverters`` fall back for a required field; None for types without one (structs)."""
    if "default" in node:
        return node["default"]
    type_, name = node["type"], node.get("name")
    if type_ in ("int8", "int16", "int32", "int64"):
        return 0
    if type_ in ("float", "double"):
        return 0.0
    if type_ == "boolean":
        return False
    if type_ == "string":
        return "1970-01-01T00:00:00Z" if name == "io.debezium.time.ZonedTimestamp" else ""
    if type_ == "bytes":
        return b64(b"\x00") if name == "org.apache.kafka.connect.data.Decimal" else ""
    return None


def modes_from(settings: Mapping[str, str], raw: Mapping[str, str]) -> TypeModes:
    """The :class:`TypeModes` of a configuration's mode values (``settings``: property → value text); an unset
    ``time.precision.mode`` (not in ``raw``; its declared default is PostgreSQL's ``adaptive``) is MariaDB's default
    ``adaptive_time_microseconds`` (an explicit ``adaptive`` is refused by the configuration already)."""
    precision = settings.get("time.precision.mode", "adaptive_time_microseconds")
    if precision == "adaptive" or "time.precision.mode" not in raw:
        precision = "adaptive_time_microseconds"
    return TypeModes(decimal=settings.get("decimal.handling.mode", "precise"), time_precision=precision,
                     bigint_unsigned=settings.get("bigint.unsigned.handling.mode", "long"),
                     binary=settings.get("binary.handling.mode", "bytes"))
