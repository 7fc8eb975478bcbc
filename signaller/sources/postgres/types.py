"""PostgreSQL column types -> Kafka Connect schema nodes and Debezium JSON payload values.

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
  ``BigDecimal.toString()``. ``NaN``/``Infinity``/``-Infinity`` are ``NaN``/``Infinity``/
  ``-Infinity`` (double: JSON strings, as Jackson writes them) or ``"NAN"``/
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
  default, none for precision 0). PostgreSQL ``infinity``/``-infinity``: timestamptz keeps the
  words, timestamp becomes ±9223372036825200000/-9223372036832400000 µs (ms: /1000), date
  becomes Debezium's sentinel epoch days -2147472693/-2147472692. A ``MicroTimestamp`` after
  294247-01-10 exceeds int64 µs: inexpressible.
* ``interval`` -> ``io.debezium.time.MicroDuration`` (int64 µs, 365.25/12 days a month, computed
  in doubles as Debezium does, saturated to int64 as Java's ``(long)`` cast) or, with ``interval.handling.mode=string``,
  ``io.debezium.time.Interval`` (``P<y>Y<m>M<d>DT<h>H<m>M<s>S``).
* one-dimensional arrays of the types above (Debezium's list: not ``money``, ``name``,
  ``interval``, ``varbit``, ``xml``, ``point``) -> Connect arrays with optional items (enum items
  are required). A multi-dimensional value (``'{{1,2},{3,4}}'`` in an ``int[]``/``int[][]``
  column: PostgreSQL does not enforce the declared dimensions) is inexpressible: the schema says
  "array of int32", and a nested list would break every consumer that validates against it
  (Kafka's JsonConverter); flattening it would lose its shape silently. So, as Debezium, it
  becomes null (see below). An element the mode cannot express (``numeric[]`` with ``NaN``)
  becomes a null element.
* anything else follows ``include.unknown.datatypes``: left out of events (Debezium's default),
  or, when enabled, the text's UTF-8 bytes rendered per the binary handling mode.

Inexpressible values
--------------------
A valid PostgreSQL value the configured mode cannot express never stops capture: ``convert``
returns null for it (Debezium logs and writes null), or, in a NOT NULL column, the schema
default, else the type's zero (``0``, the epoch, an empty array), as Debezium's
``JdbcValueConverters`` fall back for a required field, so the record still validates against
its schema. Each one is counted in :data:`UNREPRESENTABLE` (``(table, column, kind)``, exported
as ``signaller_values_unrepresentable_total``) with a warning naming table, column and kind,
rate-limited per ``(table, column, kind)``. Kinds: ``nan``, ``infinity``,
``multidimensional_array``, ``out_of_range``. Text PostgreSQL does not produce with its default
output settings (``DateStyle`` other than ISO, ``bytea_output=escape``...) is still a
:class:`DecodeError`: it is a configuration problem that concerns every row, not one value.

Floating point payloads that Java would print differently from Python (outside
``[1e-3, 1e7)``, NaN, infinities, and every ``float4``) are returned as :class:`JavaDouble` /
:class:`JavaFloat`: still ``float``, but carrying the text Jackson writes
(``Double.toString``/``Float.toString``; NaN and infinities as JSON strings).
"""

from __future__ import annotations

import binascii
import logging
import math
import re
import struct
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation
from time import monotonic
from typing import Any, Final, Literal, NamedTuple, TypeAlias, get_args

from signaller.errors import ConfigError, DecodeError
from signaller.model.tables import Column

__all__ = [
    "UNAVAILABLE_VALUE_PLACEHOLDER",
    "UNREPRESENTABLE",
    "BinaryHandling",
    "ColumnCodec",
    "Converter",
    "DecimalHandling",
    "IntervalHandling",
    "JavaDouble",
    "JavaFloat",
    "TimePrecision",
    "TypeModes",
    "Unrepresentable",
    "UnrepresentableValues",
    "codec_for",
    "parse_array_literal",
    "placeholder_for",
    "unguarded",
    "unscaled_bytes",
]

UNAVAILABLE_VALUE_PLACEHOLDER: Final = "__debezium_unavailable_value"
"""Debezium's default ``unavailable.value.placeholder`` (unchanged TOASTed values)."""

DecimalHandling: TypeAlias = Literal["precise", "double", "string"]
TimePrecision: TypeAlias = Literal["adaptive", "adaptive_time_microseconds", "connect"]
BinaryHandling: TypeAlias = Literal["bytes", "base64", "base64-url-safe", "hex"]
IntervalHandling: TypeAlias = Literal["numeric", "string"]
Converter: TypeAlias = Callable[[str], Any]
_Builder: TypeAlias = Callable[[Column, "TypeModes", str], tuple[dict[str, Any], Converter]]


@dataclass(frozen=True, slots=True)
class TypeModes:
    """The Debezium properties that change how values look.

    ``decimal_handling`` = ``decimal.handling.mode``, ``time_precision`` = ``time.precision.mode``,
    ``binary_handling`` = ``binary.handling.mode``, ``interval_handling`` =
    ``interval.handling.mode``, ``include_unknown_datatypes`` = ``include.unknown.datatypes``,
    ``money_fraction_digits`` = ``money.fraction.digits``; defaults are Debezium's. An
    unsupported value raises :class:`~signaller.errors.ConfigError`.
    """

    decimal_handling: DecimalHandling = "precise"
    time_precision: TimePrecision = "adaptive"
    binary_handling: BinaryHandling = "bytes"
    interval_handling: IntervalHandling = "numeric"
    include_unknown_datatypes: bool = False
    money_fraction_digits: int = 2

    def __post_init__(self) -> None:
        checks = (
            ("decimal.handling.mode", self.decimal_handling, DecimalHandling),
            ("time.precision.mode", self.time_precision, TimePrecision),
            ("binary.handling.mode", self.binary_handling, BinaryHandling),
            ("interval.handling.mode", self.interval_handling, IntervalHandling),
        )
        for key, value, alias in checks:
            allowed = get_args(alias)
            if value not in allowed:
                raise ConfigError(key, value, ", ".join(allowed))
        if self.money_fraction_digits < 0:
            raise ConfigError("money.fraction.digits", self.money_fraction_digits, "an integer >= 0")


@dataclass(frozen=True, slots=True)
class ColumnCodec:
    """How one column appears in Debezium events; see the module docstring for the contract.

    ``toast_placeholder`` is the payload Debezium emits for an unchanged TOASTed value of this
    column (``None`` where Debezium emits null or nothing valid); read it via
    :func:`placeholder_for`.
    """

    schema: dict[str, Any]
    convert: Converter
    emitted: bool = True
    toast_placeholder: Any = None


# --------------------------------------------------------------------------------------------
# Java number rendering
# --------------------------------------------------------------------------------------------


class JavaDouble(float):
    """A float64 payload whose JSON text is Java's ``Double.toString`` (as Jackson writes it).

    Used only where Python's ``repr`` would differ: magnitudes outside ``[1e-3, 1e7)``
    (Java switches to ``1.0E7`` style) and NaN/infinities (Jackson writes ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"`` as strings).
    """

    __slots__ = ()

    def json_text(self) -> str:
        """The JSON text Kafka's JsonConverter writes for this value."""
        return _java_text(float(self), _shortest_double_digits)


class JavaFloat(float):
    """A float32 payload (PostgreSQL ``real``) whose JSON text is Java's ``Float.toString``."""

    __slots__ = ()

    def json_text(self) -> str:
        """The JSON text Kafka's JsonConverter writes for this value."""
        return _java_text(float(self), _shortest_float_digits)


_FLOAT32: Final = struct.Struct("<f")


def _to_float32(value: float) -> float:
    """Round a double to the nearest float32 (infinities for overflow, as Java's cast)."""
    try:
        return float(_FLOAT32.unpack(_FLOAT32.pack(value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def _shortest_double_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip digits of a positive finite double and its decimal exponent."""
    _sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    return text, len(text) - 1 + int(exponent)


def _shortest_float_digits(value: float) -> tuple[str, int]:
    """Shortest digits that round-trip through float32 (Java's ``Float.toString`` digits)."""
    for precision in range(9):
        candidate = f"{value:.{precision}e}"
        if _to_float32(float(candidate)) == value:
            mantissa, _, exponent = candidate.partition("e")
            digits = mantissa.replace(".", "").rstrip("0") or "0"
            return digits, int(exponent)
    return _shortest_double_digits(value)


def _java_text(value: float, digits_of: Callable[[float], tuple[str, int]]) -> str:
    """Java's ``Double.toString``/``Float.toString`` layout, JSON-quoted for NaN/infinities."""
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return f"{sign}0.0"
    digits, exponent = digits_of(abs(value))
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            return f"{sign}{whole}.{digits[exponent + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _double_payload(value: float) -> float:
    """``value`` itself where orjson and Jackson agree on its text, else a :class:`JavaDouble`."""
    if value == 0.0 or 1e-3 <= abs(value) < 1e7:
        return value
    return JavaDouble(value)


# --------------------------------------------------------------------------------------------
# Schema nodes
# --------------------------------------------------------------------------------------------


def _node(
    type_: str,
    *,
    name: str | None = None,
    version: int | None = None,
    parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A primitive schema node in JsonConverter member order (``optional`` set by the caller)."""
    node: dict[str, Any] = {"type": type_, "optional": True}
    if name is not None:
        node["name"] = name
    if version is not None:
        node["version"] = version
    if parameters is not None:
        node["parameters"] = parameters
    return node


def _with_optional(node: dict[str, Any], optional: bool) -> dict[str, Any]:
    copy = dict(node)
    copy["optional"] = optional
    return copy


_VARIABLE_SCALE_DECIMAL: Final[dict[str, Any]] = {
    "type": "struct",
    "fields": [
        {"type": "int32", "optional": False, "field": "scale"},
        {"type": "bytes", "optional": False, "field": "value"},
    ],
    "optional": True,
    "name": "io.debezium.data.VariableScaleDecimal",
    "version": 1,
    "doc": "Variable scaled decimal",
}


def _binary_node(mode: BinaryHandling) -> dict[str, Any]:
    return _node("bytes" if mode == "bytes" else "string")


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class Unrepresentable(DecodeError):
    """A valid PostgreSQL value the configured mode cannot express (``kind``: ``nan``,
    ``infinity``, ``multidimensional_array``, ``out_of_range``). Raised by the strict converters
    only; a codec's ``convert`` turns it into the column's fallback (see :func:`codec_for`)."""

    def __init__(self, kind: str, reason: str) -> None:
        self.kind, self.reason = kind, reason
        super().__init__(reason)


class UnrepresentableValues:
    """Counts of the values written as a fallback, and their rate-limited warnings.

    ``record(table, column, kind, reason)`` logs a warning naming the table, the column and the
    value kind (never the row's data) the first time a ``(table, column, kind)`` occurs and then
    at most once per ``interval_s`` with the number of occurrences in between; ``drain()`` hands
    the counts accumulated since the last call to whoever exports them
    (``signaller_values_unrepresentable_total``). Thread-safe.
    """

    def __init__(self, interval_s: float = 60.0, clock: Callable[[], float] = monotonic) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str, str], int] = {}
        self._last_warning: dict[tuple[str, str, str], tuple[float, int]] = {}

    def record(self, table: str, column: str, kind: str, reason: str, written: str = "null") -> None:
        """Count one fallback value and warn (rate-limited per ``(table, column, kind)``);
        ``written`` says what was published instead."""
        key = (table, column, kind)
        now = self._clock()
        with self._lock:
            self._pending[key] = self._pending.get(key, 0) + 1
            last = self._last_warning.get(key)
            if last is not None and now - last[0] < self._interval_s:
                self._last_warning[key] = (last[0], last[1] + 1)
                return
            suppressed = last[1] if last is not None else 0
            self._last_warning[key] = (now, 0)
        more = f" ({suppressed} more such value(s) since the last warning)" if suppressed else ""
        _log.warning("table %s: %s; wrote %s instead%s", table or "?", reason, written, more,
                     extra={"table": table, "column": column, "kind": kind})

    def drain(self) -> dict[tuple[str, str, str], int]:
        """The ``(table, column, kind) -> count`` recorded since the previous call."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending


UNREPRESENTABLE: Final = UnrepresentableValues()
"""The process's record of fallback values; the capture loop drains it into its metrics."""

_log = logging.getLogger("signaller.values")


def _bad(label: str, text: str, reason: str) -> DecodeError:
    shown = text if len(text) <= 120 else text[:117] + "..."
    return DecodeError(f"{label}: cannot convert {shown!r}: {reason}")


def _guarded(label: str, fn: Callable[[str], Any], reason: str) -> Converter:
    """Wrap a builtin that raises ValueError into a converter raising DecodeError."""

    def convert(text: str) -> Any:
        try:
            return fn(text)
        except (ValueError, ArithmeticError) as exc:
            raise _bad(label, text, f"{reason} ({exc})") from None

    _UNGUARDED[convert] = fn
    return convert


_UNGUARDED: Final[weakref.WeakKeyDictionary[Converter, Callable[[str], Any]]] = weakref.WeakKeyDictionary()


def unguarded(convert: Converter) -> Callable[[str], Any]:
    """The function ``convert`` applies to valid text, without its error translation (the
    builtin a converter wraps, e.g. ``int``), else ``convert`` itself.

    For hot loops that, on any exception, call ``convert`` again to raise the proper
    :class:`~signaller.errors.DecodeError`: for valid text both return the same value.
    """
    return _UNGUARDED.get(convert, convert)


# --------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def unscaled_bytes(unscaled: int) -> bytes:
    """Java ``BigInteger.toByteArray()``: minimal big-endian two's complement, at least 1 byte."""
    length = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() >> 3) + 1
    return unscaled.to_bytes(length, "big", signed=True)


_NUMERIC_SPECIALS: Final = {"NaN": "NAN", "Infinity": "POSITIVE_INFINITY", "-Infinity": "NEGATIVE_INFINITY"}


def _split_numeric(text: str) -> tuple[int, int]:
    """``"-12.340"`` -> ``(-12340, 3)`` (unscaled value, scale); ValueError if not numeric."""
    dot = text.find(".")
    if dot < 0:
        return int(text), 0
    fraction = text[dot + 1 :]
    if not fraction.isdigit():
        raise ValueError("not a numeric literal")
    return int(text[:dot] + fraction), len(fraction)


def _rescale(unscaled: int, scale: int, target: int) -> int:
    """Java ``setScale(target)`` without rounding: ValueError if digits would be lost."""
    if scale <= target:
        return unscaled * int(10 ** (target - scale))
    factor = int(10 ** (scale - target))
    quotient, remainder = divmod(abs(unscaled), factor)
    if remainder:
        raise ValueError(f"rounding necessary to reach scale {target}")
    return quotient if unscaled >= 0 else -quotient


def _special_precise(label: str, text: str) -> Unrepresentable:
    kind = "nan" if text == "NaN" else "infinity"
    return Unrepresentable(
        kind,
        f"{label}: a special value ({text}) cannot be expressed with decimal.handling.mode=precise"
        " (decimal.handling.mode=string or double keeps it)",
    )


def _numeric_precise_fixed(label: str, scale: int) -> Converter:
    def convert(text: str) -> str:
        if text in _NUMERIC_SPECIALS:
            raise _special_precise(label, text)
        try:
            unscaled, actual = _split_numeric(text)
            if actual != scale:
                unscaled = _rescale(unscaled, actual, scale)
        except ValueError as exc:
            raise _bad(label, text, str(exc)) from None
        return _b64(unscaled_bytes(unscaled))

    return convert


def _strip_trailing_zeros(unscaled: int, scale: int) -> tuple[int, int]:
    """``BigDecimal.stripTrailingZeros()`` clamped at scale 0, as Debezium does."""
    if unscaled == 0:
        return 0, 0
    while scale > 0 and unscaled % 10 == 0:
        unscaled //= 10
        scale -= 1
    return unscaled, scale


def _numeric_precise_variable(label: str) -> Converter:
    def convert(text: str) -> dict[str, Any]:
        if text in _NUMERIC_SPECIALS:
            raise _special_precise(label, text)
        try:
            unscaled, scale = _strip_trailing_zeros(*_split_numeric(text))
        except ValueError as exc:
            raise _bad(label, text, str(exc)) from None
        return {"scale": scale, "value": _b64(unscaled_bytes(unscaled))}

    return convert


def _numeric_double(label: str) -> Converter:
    def convert(text: str) -> float:
        try:
            return _double_payload(float(text))
        except ValueError:
            raise _bad(label, text, "not a number") from None

    return convert


def _decimal_text(unscaled: int, scale: int) -> str:
    """Java ``BigDecimal.toString()`` (Python's ``str(Decimal)`` follows the same rules)."""
    digits = tuple(int(digit) for digit in str(abs(unscaled)))
    return str(Decimal((1 if unscaled < 0 else 0, digits, -scale)))


def _numeric_string(label: str, scale: int | None) -> Converter:
    def convert(text: str) -> str:
        special = _NUMERIC_SPECIALS.get(text)
        if special is not None:
            return special
        try:
            unscaled, actual = _split_numeric(text)
            if scale is not None and actual != scale:
                unscaled, actual = _rescale(unscaled, actual, scale), scale
        except ValueError as exc:
            raise _bad(label, text, str(exc)) from None
        return _decimal_text(unscaled, actual)

    return convert


def _numeric_typmod(typmod: int) -> tuple[int, int] | None:
    """``numeric(p, s)`` from ``atttypmod`` as pgjdbc reports it; None without a declaration."""
    if typmod < 4:
        return None
    return ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF


def _decimal_node(scale: int, precision: int | None) -> dict[str, Any]:
    parameters = {"scale": str(scale)}
    if precision is not None:
        parameters["connect.decimal.precision"] = str(precision)
    return _node("bytes", name="org.apache.kafka.connect.data.Decimal", version=1, parameters=parameters)


def _build_numeric(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    declared = _numeric_typmod(column.type_modifier)
    precision, scale = declared if declared is not None else (0, 0)
    variable = precision == 0 and scale == 0
    if modes.decimal_handling == "double":
        return _node("double"), _numeric_double(label)
    if modes.decimal_handling == "string":
        return _node("string"), _numeric_string(label, None if variable else scale)
    if variable:
        return dict(_VARIABLE_SCALE_DECIMAL), _numeric_precise_variable(label)
    return _decimal_node(scale, precision), _numeric_precise_fixed(label, scale)


_MONEY_JUNK: Final = re.compile(r"[^0-9.\-]")


def _money_decimal(label: str, text: str) -> Decimal:
    """pgjdbc-style money parsing: drop currency symbols, grouping and parentheses."""
    negative = text.startswith(("-", "("))
    try:
        value = Decimal(_MONEY_JUNK.sub("", text).lstrip("-"))
    except InvalidOperation:
        raise _bad(label, text, "not a money amount") from None
    return -value if negative else value


def _build_money(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    digits = modes.money_fraction_digits
    quantum = Decimal(1).scaleb(-digits)
    if modes.decimal_handling == "double":
        return _node("double"), lambda text: _double_payload(float(_money_decimal(label, text)))
    if modes.decimal_handling == "string":
        return _node("string"), lambda text: format(_money_decimal(label, text), "f")

    def convert(text: str) -> str:
        value = _money_decimal(label, text).quantize(quantum, rounding=ROUND_HALF_UP)
        return _b64(unscaled_bytes(int(value.scaleb(digits))))

    return _decimal_node(digits, None), convert


def _bool(text: str) -> bool:
    return text == "t" or text == "T"


def _float4(label: str) -> Converter:
    def convert(text: str) -> float:
        try:
            return JavaFloat(_to_float32(float(text)))
        except ValueError:
            raise _bad(label, text, "not a real number") from None

    return convert


def _float8(label: str) -> Converter:
    def convert(text: str) -> float:
        try:
            return _double_payload(float(text))
        except ValueError:
            raise _bad(label, text, "not a double precision number") from None

    return convert


def _bits_typmod(column: Column) -> int:
    """Declared bit length; ``varbit`` without one is 2^31-1 (pgjdbc's unknown length)."""
    if column.type_modifier > 0:
        return column.type_modifier
    return 1 if column.type_name == "bit" else 2**31 - 1


def _build_bits(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    length = _bits_typmod(column)
    if length == 1:
        return _node("boolean"), _guarded(label, lambda text: int(text, 2) != 0, "not a bit string")

    def convert(text: str) -> str:
        try:
            number = int(text, 2) if text else 0
        except ValueError:
            raise _bad(label, text, "not a bit string") from None
        return _b64(number.to_bytes((number.bit_length() + 7) // 8, "little"))

    bits = _node("bytes", name="io.debezium.data.Bits", version=1, parameters={"length": str(length)})
    return bits, convert


# --------------------------------------------------------------------------------------------
# Binary
# --------------------------------------------------------------------------------------------


def _binary_encoder(mode: BinaryHandling) -> Callable[[bytes], str]:
    if mode in ("bytes", "base64"):
        return _b64
    if mode == "base64-url-safe":
        return lambda data: binascii.b2a_base64(data, newline=False).decode("ascii").translate(_URLSAFE)
    return bytes.hex


_URLSAFE: Final = str.maketrans("+/", "-_")


def _build_bytea(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    encode = _binary_encoder(modes.binary_handling)

    def convert(text: str) -> str:
        if not text.startswith("\\x"):
            raise _bad(label, text, "bytea must use bytea_output=hex ('\\x...')")
        try:
            return encode(bytes.fromhex(text[2:]))
        except ValueError:
            raise _bad(label, text, "not a hex bytea value") from None

    return _binary_node(modes.binary_handling), convert


def _build_unknown_binary(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    encode = _binary_encoder(modes.binary_handling)
    return _binary_node(modes.binary_handling), lambda text: encode(text.encode("utf-8"))


def _binary_placeholder(mode: BinaryHandling) -> Any:
    """Debezium: bytes -> the placeholder's bytes; hex -> the string; base64 modes -> null."""
    if mode == "bytes":
        return _b64(UNAVAILABLE_VALUE_PLACEHOLDER.encode("ascii"))
    if mode == "hex":
        return UNAVAILABLE_VALUE_PLACEHOLDER
    return None


# --------------------------------------------------------------------------------------------
# Dates and times
# --------------------------------------------------------------------------------------------

_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
_MICROS_PER_DAY: Final = 86_400_000_000
_POS_INFINITY_DATE: Final = -2147472693
"""``(int) LocalDate.parse("-5877611-06-21").toEpochDay()``: Debezium's ``infinity`` date."""
_NEG_INFINITY_DATE: Final = -2147472692
"""``(int) LocalDate.parse("-5877611-06-22").toEpochDay()``: Debezium's ``-infinity`` date."""
_POS_INFINITY_MICROS: Final = 9223372036825200000
"""pgjdbc ``DATE_POSITIVE_INFINITY`` read as µs (Debezium's ``POSITIVE_INFINITY_INSTANT``)."""
_NEG_INFINITY_MICROS: Final = -9223372036832400000
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Epoch day of a proleptic Gregorian date (astronomical year: 1 BC is year 0)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Inverse of :func:`_days_from_civil`."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + (3 if month_index < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


_DATE_RE: Final = re.compile(r"(\d{4,})-(\d\d)-(\d\d)( BC)?")
_TIMESTAMP_RE: Final = re.compile(
    r"(\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?"
    r"(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)?( BC)?"
)
_TIME_RE: Final = re.compile(
    r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)?"
)


def _fraction_micros(fraction: str | None) -> int:
    return int(fraction[:6].ljust(6, "0")) if fraction else 0


def _astronomical_year(year: str, bc: str | None) -> int:
    return 1 - int(year) if bc else int(year)


def _offset_seconds(sign: str | None, hours: str | None, minutes: str | None, seconds: str | None) -> int:
    if sign is None or hours is None:
        return 0
    total = int(hours) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
    return -total if sign == "-" else total


def _epoch_day(text: str) -> int:
    """PostgreSQL date text -> epoch days (Debezium's sentinels for the infinities)."""
    try:
        return date.fromisoformat(text).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        pass
    if text == "infinity":
        return _POS_INFINITY_DATE
    if text == "-infinity":
        return _NEG_INFINITY_DATE
    match = _DATE_RE.fullmatch(text)
    if match is None:
        raise ValueError("not a date")
    year, month, day, bc = match.groups()
    return _days_from_civil(_astronomical_year(year, bc), int(month), int(day))


_EPOCH: Final = datetime(1970, 1, 1)
_EPOCH_UTC: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)


def _epoch_micros(text: str) -> tuple[int, bool]:
    """PostgreSQL timestamp[tz] text -> (UTC epoch µs, True) or (±infinity sentinel, False)."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return _epoch_micros_slow(text)
    epoch = _EPOCH if parsed.tzinfo is None else _EPOCH_UTC
    return (parsed - epoch) // _MICROSECOND, True


def _epoch_micros_slow(text: str) -> tuple[int, bool]:
    if text == "infinity":
        return _POS_INFINITY_MICROS, False
    if text == "-infinity":
        return _NEG_INFINITY_MICROS, False
    match = _TIMESTAMP_RE.fullmatch(text)
    if match is None:
        raise ValueError("not a timestamp")
    year, month, day, hour, minute, second, fraction, sign, oh, om, os_, bc = match.groups()
    days = _days_from_civil(_astronomical_year(year, bc), int(month), int(day))
    seconds = days * 86400 + int(hour) * 3600 + int(minute) * 60 + int(second)
    seconds -= _offset_seconds(sign, oh, om, os_)
    return seconds * 1_000_000 + _fraction_micros(fraction), True


def _time_micros(text: str) -> tuple[int, int]:
    """``HH:MM:SS[.f][±hh[:mm[:ss]]]`` -> (µs past midnight as written, UTC offset seconds)."""
    try:
        parsed = time.fromisoformat(text)
    except ValueError:
        return _time_micros_slow(text)
    micros = ((parsed.hour * 60 + parsed.minute) * 60 + parsed.second) * 1_000_000 + parsed.microsecond
    offset = parsed.utcoffset()
    return micros, 0 if offset is None else offset.days * 86400 + offset.seconds


def _time_micros_slow(text: str) -> tuple[int, int]:
    """Regex parsing for what ``time.fromisoformat`` refuses (``24:00:00``)."""
    match = _TIME_RE.fullmatch(text)
    if match is None:
        raise ValueError("not a time of day")
    hour, minute, second, fraction, sign, oh, om, os_ = match.groups()
    seconds = int(hour) * 3600 + int(minute) * 60 + int(second)
    return seconds * 1_000_000 + _fraction_micros(fraction), _offset_seconds(sign, oh, om, os_)


def _iso_year(year: int) -> str:
    """``ISO_LOCAL_DATE`` year: 4 digits, ``-`` for negative years, ``+`` beyond 9999."""
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def _fraction_text(micros: int, width: int) -> str:
    """Java ``appendFraction``: exactly ``width`` digits, or the shortest (none for 0) if <= 0."""
    if width <= 0:
        return "." + f"{micros:06d}".rstrip("0") if micros else ""
    digits = f"{micros:06d}"
    return "." + (digits[:width] if width <= 6 else digits + "0" * (width - 6))


def _clock_text(micros_of_day: int, width: int) -> str:
    seconds, micros = divmod(micros_of_day, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return (
        f"{_TWO_DIGITS[hours]}:{_TWO_DIGITS[minutes]}:{_TWO_DIGITS[seconds]}{_fraction_text(micros, width)}"
    )


_TWO_DIGITS: Final = tuple(f"{number:02d}" for number in range(60))


def _zoned_timestamp_text(epoch_micros: int, width: int) -> str:
    """``ZonedTimestamp.toIsoString`` of a UTC instant with Debezium's fraction width."""
    days, micros_of_day = divmod(epoch_micros, _MICROS_PER_DAY)
    ordinal = days + _EPOCH_ORDINAL
    if 1 <= ordinal <= 3652059:
        as_date = date.fromordinal(ordinal)
        year, month, day = as_date.year, as_date.month, as_date.day
    else:
        year, month, day = _civil_from_days(days)
    return f"{_iso_year(year)}-{month:02d}-{day:02d}T{_clock_text(micros_of_day, width)}Z"


def _time_precision(column: Column) -> int:
    """Fractional-second precision of time/timestamp columns (pgjdbc: 6 when undeclared)."""
    return column.type_modifier if 0 <= column.type_modifier <= 6 else 6


def _build_date(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    name = (
        "org.apache.kafka.connect.data.Date" if modes.time_precision == "connect" else "io.debezium.time.Date"
    )
    return _node("int32", name=name, version=1), _guarded(label, _epoch_day, "not a date")


def _build_time(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    precision = _time_precision(column)
    if modes.time_precision == "connect":
        node = _node("int32", name="org.apache.kafka.connect.data.Time", version=1)
        millis = True
    elif modes.time_precision == "adaptive" and precision <= 3:
        node = _node("int32", name="io.debezium.time.Time", version=1)
        millis = True
    else:
        node = _node("int64", name="io.debezium.time.MicroTime", version=1)
        millis = False

    def convert(text: str) -> int:
        try:
            micros, offset = _time_micros(text)
        except ValueError:
            raise _bad(label, text, "not a time of day") from None
        if offset:
            raise _bad(label, text, "a time without time zone has no offset")
        return micros // 1000 if millis else micros

    return node, convert


def _build_timestamp(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    if modes.time_precision == "connect":
        node, millis = _node("int64", name="org.apache.kafka.connect.data.Timestamp", version=1), True
    elif _time_precision(column) <= 3:
        node, millis = _node("int64", name="io.debezium.time.Timestamp", version=1), True
    else:
        node, millis = _node("int64", name="io.debezium.time.MicroTimestamp", version=1), False

    def convert(text: str) -> int:
        try:
            micros, _finite = _epoch_micros(text)
        except ValueError:
            raise _bad(label, text, "not a timestamp") from None
        if millis:
            return micros // 1000
        if not _INT64_MIN <= micros <= _INT64_MAX:
            raise Unrepresentable("out_of_range", f"{label}: a timestamp after 294247-01-10 04:00:54.775807 "
                                  "does not fit io.debezium.time.MicroTimestamp (int64 microseconds)")
        return micros

    return node, convert


def _zoned_timestamp_fast(text: str, width: int) -> str | None:
    """Common case (4-digit years, explicit offset) via the C datetime code; None otherwise."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if text.endswith(("+00", "+00:00")) and text[10:11] == " ":
        digits = text[20 : text.rindex("+")] if text[19:20] == "." else ""
        return f"{text[:10]}T{text[11:19]}{_fraction_digits(digits, width)}Z"
    offset = parsed.utcoffset()
    if offset is None:
        return None
    try:
        utc = parsed.replace(tzinfo=None) - offset
    except OverflowError:
        return None
    if width <= 0:
        iso = utc.isoformat()
        return (iso.rstrip("0") if utc.microsecond else iso) + "Z"
    iso = utc.isoformat(timespec="microseconds")
    return (iso if width == 6 else iso[: 20 + width]) + "Z"


def _fraction_digits(digits: str, width: int) -> str:
    """:func:`_fraction_text` for the digits PostgreSQL printed (trailing zeros trimmed)."""
    if width <= 0:
        trimmed = digits.rstrip("0")
        return "." + trimmed if trimmed else ""
    return "." + digits.ljust(width, "0")[:width]


def _build_timestamptz(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    width = _time_precision(column)

    def convert(text: str) -> str:
        fast = _zoned_timestamp_fast(text, width)
        if fast is not None:
            return fast
        try:
            micros, finite = _epoch_micros(text)
        except ValueError:
            raise _bad(label, text, "not a timestamp with time zone") from None
        return _zoned_timestamp_text(micros, width) if finite else text

    return _node("string", name="io.debezium.time.ZonedTimestamp", version=1), convert


def _build_timetz(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    def convert(text: str) -> str:
        try:
            micros, offset = _time_micros(text)
        except ValueError:
            raise _bad(label, text, "not a time with time zone") from None
        if micros == _MICROS_PER_DAY and offset == 0:
            return "24:00:00Z"
        return _clock_text((micros - offset * 1_000_000) % _MICROS_PER_DAY, 0) + "Z"

    return _node("string", name="io.debezium.time.ZonedTime", version=1), convert


# --------------------------------------------------------------------------------------------
# Intervals (pgjdbc PGInterval parsing, Debezium MicroDuration/Interval arithmetic)
# --------------------------------------------------------------------------------------------

_DAYS_PER_MONTH_AVG: Final = 365.25 / 12.0
_ISO_INTERVAL_RE: Final = re.compile(
    r"P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?[\d.]+)S)?)?"
)


class _Interval(NamedTuple):
    """The fields of pgjdbc's ``PGInterval``."""

    years: int
    months: int
    days: int
    hours: int
    minutes: int
    whole_seconds: int
    micro_seconds: int

    @property
    def seconds(self) -> float:
        """``PGInterval.getSeconds()``."""
        return self.whole_seconds + self.micro_seconds / 1_000_000


def _interval_of(years: int, months: int, days: int, hours: int, minutes: int, seconds: float) -> _Interval:
    """``PGInterval.setValue``: seconds kept as whole seconds plus rounded microseconds."""
    total = math.floor(seconds * 1_000_000 + 0.5)
    whole = abs(total) // 1_000_000 * (1 if total >= 0 else -1)
    return _Interval(years, months, days, hours, minutes, whole, total - whole * 1_000_000)


_INTERVAL_UNITS: Final = {"yea": "year", "mon": "mon", "day": "day", "hou": "hour", "min": "min"}


def _parse_interval(text: str) -> _Interval:
    """PostgreSQL interval text (IntervalStyle postgres, postgres_verbose or iso_8601)."""
    if text.startswith("P"):
        match = _ISO_INTERVAL_RE.fullmatch(text)
        if match is None:
            raise ValueError("not an ISO 8601 interval")
        y, mo, d, h, mi, s = (group or "0" for group in match.groups())
        return _interval_of(int(y), int(mo), int(d), int(h), int(mi), float(s))
    verbose = text.startswith("@")
    fields = {"year": 0, "mon": 0, "day": 0, "hour": 0, "min": 0}
    seconds = 0.0
    pending: str | None = None
    tokens = text.replace("+", " ").replace("@", " ").lower().split()
    for index, token in enumerate(tokens, start=1):
        if index & 1:
            if ":" not in token:
                pending = token
                continue
            hours, minutes, seconds = _interval_clock(token)
            fields["hour"], fields["min"], pending = hours, minutes, None
            continue
        unit = _INTERVAL_UNITS.get(token[:3])
        if unit is not None and token.startswith(unit):
            fields[unit] = int(pending) if pending is not None else 0
        elif token.startswith("sec"):
            seconds = float(pending) if pending is not None else 0.0
    sign = -1 if verbose and tokens and tokens[-1] == "ago" else 1
    return _interval_of(
        sign * fields["year"],
        sign * fields["mon"],
        sign * fields["day"],
        sign * fields["hour"],
        sign * fields["min"],
        sign * seconds,
    )


def _interval_clock(token: str) -> tuple[int, int, float]:
    """``[-]H+:MM[:SS[.f]]`` as PGInterval reads it (the sign applies to every part)."""
    negative = token.startswith("-")
    body = token[1:] if negative else token
    parts = body.split(":")
    if len(parts) not in (2, 3):
        raise ValueError("bad interval clock")
    hours, minutes = int(parts[0]), int(parts[1][:2])
    seconds = float(parts[2]) if len(parts) == 3 else 0.0
    return (-hours, -minutes, -seconds) if negative else (hours, minutes, seconds)


def _micro_duration(value: _Interval) -> int:
    """``MicroDuration.durationMicros`` with ``DAYS_PER_MONTH_AVG`` (double arithmetic, truncated)."""
    number_of_days = (value.years * 12 + value.months) * _DAYS_PER_MONTH_AVG + value.days
    number_of_seconds = ((number_of_days * 24 + value.hours) * 60 + value.minutes) * 60 + value.seconds
    # Java's (long) cast saturates: intervals beyond ±292,271 years become Long.MIN/MAX_VALUE.
    return max(_INT64_MIN, min(_INT64_MAX, int(number_of_seconds * 1e6)))


def _interval_iso(value: _Interval) -> str:
    """``Interval.toIsoString`` with ``BigDecimal.valueOf(getSeconds())``."""
    seconds = Decimal(repr(value.seconds))
    exponent = seconds.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -6:
        seconds = seconds.quantize(Decimal("0.000001"), rounding=ROUND_DOWN)
    seconds_text = "0" if seconds == 0 else format(seconds.normalize(), "f")
    return f"P{value.years}Y{value.months}M{value.days}DT{value.hours}H{value.minutes}M{seconds_text}S"


def _build_interval(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    if modes.interval_handling == "string":
        node = _node("string", name="io.debezium.time.Interval", version=1)
        render: Callable[[_Interval], Any] = _interval_iso
    else:
        node = _node("int64", name="io.debezium.time.MicroDuration", version=1)
        render = _micro_duration

    def convert(text: str) -> Any:
        try:
            return render(_parse_interval(text))
        except ValueError:
            raise _bad(label, text, "not an interval (IntervalStyle postgres or iso_8601)") from None

    return node, convert


# --------------------------------------------------------------------------------------------
# Strings and semantic strings
# --------------------------------------------------------------------------------------------


def _string_builder(name: str | None = None) -> _Builder:
    node = _node("string") if name is None else _node("string", name=name, version=1)

    def build(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
        return dict(node), str

    return build


def _build_enum(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    allowed = ",".join(column.enum_values or ())
    node = _node("string", name="io.debezium.data.Enum", version=1, parameters={"allowed": allowed})
    return node, str


def _simple_builder(type_: str, convert_of: Callable[[str], Converter]) -> _Builder:
    def build(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
        return _node(type_), convert_of(label)

    return build


def _int_converter(label: str) -> Converter:
    return _guarded(label, int, "not an integer")


# --------------------------------------------------------------------------------------------
# Arrays
# --------------------------------------------------------------------------------------------

_ARRAY_SPACE: Final = " \t\n\r\v\f"
"""What PostgreSQL's array parser treats as white space (``array_isspace``)."""
_ARRAY_ELEMENT: Final = re.compile(
    r'[ \t\n\r\v\f]*(?:"((?:[^"\\]|\\.)*)"|((?:[^,"\\{}]|\\.)*))[ \t\n\r\v\f]*(,|\Z)', re.S
)
_ESCAPE: Final = re.compile(r"\\(.)", re.S)


def parse_array_literal(text: str) -> list[str | None]:
    """Parse a one-dimensional PostgreSQL array literal into element texts (``None`` = NULL).

    Handles quoting, backslash escapes, unquoted ``NULL`` (case-insensitive), whitespace around
    elements and a ``[lo:hi]=`` bounds decoration. Raises ``ValueError`` for malformed or
    multi-dimensional literals.
    """
    body = _array_body(text)
    if not body.strip(_ARRAY_SPACE):
        return []
    if '"' not in body and "\\" not in body:
        return _split_bare(body)
    items: list[str | None] = []
    position = 0
    while True:
        match = _ARRAY_ELEMENT.match(body, position)
        if match is None:
            raise ValueError("malformed array literal")
        quoted, bare, separator = match.groups()
        if quoted is not None:
            items.append(_ESCAPE.sub(r"\1", quoted) if "\\" in quoted else quoted)
        else:
            items.append(_bare_element(bare.strip(_ARRAY_SPACE)))
        position = match.end()
        if not separator:
            return items


def _split_bare(body: str) -> list[str | None]:
    """Fast path: no quotes, no escapes."""
    if "{" in body or "}" in body:
        raise ValueError("malformed array literal")
    items: list[str | None] = []
    for raw in body.split(","):
        token = raw.strip(_ARRAY_SPACE)
        if not token:
            raise ValueError("malformed array element")
        items.append(None if token == "NULL" or (len(token) == 4 and token.upper() == "NULL") else token)
    return items


def _array_body(text: str) -> str:
    literal = text
    if literal.startswith("["):
        bounds, equals, literal = literal.partition("=")
        if not equals:
            raise ValueError("malformed array bounds decoration")
        if bounds.count("[") > 1:
            raise ValueError("multi-dimensional arrays are not supported")
    if not (literal.startswith("{") and literal.endswith("}")):
        raise ValueError("an array literal must be enclosed in braces")
    body = literal[1:-1]
    if body.lstrip(_ARRAY_SPACE).startswith("{"):
        raise ValueError("multi-dimensional arrays are not supported")
    return body


def _bare_element(token: str) -> str | None:
    if not token or "{" in token or "}" in token:
        raise ValueError("malformed array element")
    if len(token) == 4 and token.upper() == "NULL":
        return None
    return _ESCAPE.sub(r"\1", token) if "\\" in token else token


_ARRAY_ELEMENTS: Final = frozenset(
    {
        "int2", "int4", "int8", "oid", "char", "varchar", "text", "bpchar",
        "inet", "cidr", "macaddr", "macaddr8", "int4range", "int8range", "numrange", "tsrange",
        "tstzrange", "daterange", "numeric", "float4", "float8", "bool", "date", "uuid", "json",
        "jsonb", "time", "timetz", "timestamp", "timestamptz", "bytea", "citext",
    }
)  # fmt: skip
"""Element types of the arrays Debezium has a schema for (``PostgresValueConverter``)."""


def _array_placeholder(element: str) -> Any:
    """``UnchangedToastedPlaceholder``: text-like arrays get ``[placeholder]``, int4/date/int8
    arrays the placeholder's byte values; others have no valid placeholder (None)."""
    if element in ("text", "varchar", "json", "jsonb"):
        return [UNAVAILABLE_VALUE_PLACEHOLDER]
    if element in ("int4", "date", "int8"):
        return list(UNAVAILABLE_VALUE_PLACEHOLDER.encode("ascii"))
    return None


def _is_multidimensional(text: str) -> bool:
    """Whether an array literal has more than one dimension (``{{...}}`` or ``[..][..]=``)."""
    bounds, _equals, literal = text.partition("=") if text.startswith("[") else ("", "", text)
    return bounds.count("[") > 1 or literal[1:].lstrip(_ARRAY_SPACE).startswith("{")


def _array_codec(column: Column, element: str, modes: TypeModes, label: str, table: str) -> ColumnCodec:
    if column.enum_values is not None:
        item_node, item_convert = _build_enum(column, modes, label)
        item_node = _with_optional(item_node, False)
    else:
        builder = _BUILDERS.get(_canonical(element))
        if builder is None or _canonical(element) not in _ARRAY_ELEMENTS:
            return _omitted(column, modes, label)
        item_node, item_convert = builder(column, modes, f"{label} element")
        item_node = _with_optional(item_node, True)

    def strict(text: str) -> list[Any]:
        try:
            items = parse_array_literal(text)
        except ValueError as exc:
            if _is_multidimensional(text):
                raise Unrepresentable("multidimensional_array", f"{label}: a multi-dimensional array does not "
                                      "fit the column's schema (an array of single values)") from None
            raise _bad(label, text, str(exc)) from None
        try:
            return [None if item is None else item_convert(item) for item in items]
        except Unrepresentable:
            return [_array_item(item_convert, item, column.name, table) for item in items]

    schema = {"type": "array", "items": item_node, "optional": column.optional}
    convert = _tolerant(strict, column, table, None if column.optional else [])
    return ColumnCodec(schema, convert, True, _array_placeholder(_canonical(element)))


def _array_item(item_convert: Converter, item: str | None, column: str, table: str) -> Any:
    """One array element; an element the mode cannot express becomes null (items are optional)."""
    if item is None:
        return None
    try:
        return item_convert(item)
    except Unrepresentable as exc:
        UNREPRESENTABLE.record(table, column, exc.kind, f"{exc.reason} (an array element)")
        return None


# --------------------------------------------------------------------------------------------
# Dispatch
# --------------------------------------------------------------------------------------------

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

_BUILDERS: Final[Mapping[str, _Builder]] = {
    "int2": _simple_builder("int16", _int_converter),
    "int4": _simple_builder("int32", _int_converter),
    "int8": _simple_builder("int64", _int_converter),
    "oid": _simple_builder("int64", _int_converter),
    "float4": _simple_builder("float", _float4),
    "float8": _simple_builder("double", _float8),
    "bool": _simple_builder("boolean", lambda label: _bool),
    "numeric": _build_numeric,
    "money": _build_money,
    "bit": _build_bits,
    "varbit": _build_bits,
    "bytea": _build_bytea,
    "date": _build_date,
    "time": _build_time,
    "timetz": _build_timetz,
    "timestamp": _build_timestamp,
    "timestamptz": _build_timestamptz,
    "interval": _build_interval,
    "uuid": _string_builder("io.debezium.data.Uuid"),
    "json": _string_builder("io.debezium.data.Json"),
    "jsonb": _string_builder("io.debezium.data.Json"),
    "xml": _string_builder("io.debezium.data.Xml"),
    **{name: _string_builder() for name in _PLAIN_STRING_TYPES},
}


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
    node, convert = _build_unknown_binary(column, modes, label)
    node = _with_optional(node, column.optional)
    if modes.include_unknown_datatypes and _array_element_name(column) is None:
        return ColumnCodec(node, convert, True, _binary_placeholder(modes.binary_handling))
    return ColumnCodec(node, convert, False, None)


def codec_for(column: Column, modes: TypeModes, table: str = "") -> ColumnCodec:
    """Build the :class:`ColumnCodec` of ``column`` (of ``table``, ``schema.table``, named in
    warnings) under ``modes`` (see module docstring)."""
    label = f"column {column.name!r} ({column.type_name})"
    element = _array_element_name(column)
    if element is not None:
        return _array_codec(column, element, modes, label, table)
    if column.enum_values is not None:
        node, convert = _build_enum(column, modes, label)
        placeholder: Any = UNAVAILABLE_VALUE_PLACEHOLDER
    else:
        canonical = _canonical(column.type_name)
        builder = _BUILDERS.get(canonical)
        if builder is None:
            return _omitted(column, modes, label)
        node, convert = builder(column, modes, label)
        placeholder = _scalar_placeholder(canonical, node, modes)
    node = _with_default(_with_optional(node, column.optional), column, convert)
    if column.enum_values is None and (
        canonical == "timestamp" or (canonical == "numeric" and modes.decimal_handling == "precise")
    ):
        convert = _tolerant(convert, column, table, _fallback(node, column, convert, canonical))
    return ColumnCodec(node, convert, True, placeholder)


_ZERO_TEXT: Final[Mapping[str, str]] = {"numeric": "0", "timestamp": "1970-01-01 00:00:00"}
"""The scalar types whose valid values may be inexpressible (numeric NaN/±Infinity with
``precise``, timestamps beyond int64 µs), with the text of the zero a NOT NULL column gets."""


def _fallback(node: dict[str, Any], column: Column, convert: Converter, canonical: str) -> Any:
    """What an inexpressible value becomes: null in an optional column; in a NOT NULL one the
    schema default, else the type's zero (Debezium's ``JdbcValueConverters.convertValue``
    fallback), so that the record still validates against its schema."""
    if column.optional:
        return None
    if "default" in node:
        return node["default"]
    return convert(_ZERO_TEXT[canonical])


def _tolerant(strict: Converter, column: Column, table: str, fallback: Any) -> Converter:
    """``strict`` with :class:`Unrepresentable` turned into ``fallback`` (a fresh copy for a
    list), counted and warned about (:data:`UNREPRESENTABLE`); other errors pass through.
    ``unguarded`` of the result is ``unguarded(strict)``: the hot paths that use it retry
    through the result on any error."""
    written = "null" if fallback is None else f"{fallback!r} (NOT NULL column: schema default or zero)"

    def convert(text: str) -> Any:
        try:
            return strict(text)
        except Unrepresentable as exc:
            UNREPRESENTABLE.record(table, column.name, exc.kind, exc.reason, written)
            return list(fallback) if isinstance(fallback, list) else fallback

    _UNGUARDED[convert] = unguarded(strict)
    return convert


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
        return _binary_placeholder(modes.binary_handling)
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
