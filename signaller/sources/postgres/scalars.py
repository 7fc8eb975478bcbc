"""PostgreSQL scalar text -> Debezium payloads: numbers, money, booleans, bits, bytes, strings.

Each ``build_*`` takes ``(column, modes, label)`` and returns the column's Connect schema node
(``optional`` still true; the registry sets it) and its converter, for the registry in
:mod:`signaller.sources.postgres.codecs` (which documents the mapping). Converters read the text
PostgreSQL prints with its default output settings and raise
:class:`~signaller.errors.DecodeError` (via :func:`~signaller.sources.postgres.conversion.bad`)
for anything else; a numeric special value ``decimal.handling.mode=precise`` cannot express
raises :class:`~signaller.sources.postgres.conversion.Unrepresentable`.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Final

from signaller.model.tables import Column
from signaller.sources.postgres.conversion import Unrepresentable, bad, guarded
from signaller.wire.columns import UNAVAILABLE_VALUE_PLACEHOLDER, Converter
from signaller.wire.connect import VARIABLE_SCALE_DECIMAL, decimal_node, schema_node
from signaller.wire.numbers import (
    JavaFloat,
    b64,
    decimal_plain_text,
    double_payload,
    rescale,
    strip_trailing_zeros,
    to_float32,
    unscaled_bytes,
)

if TYPE_CHECKING:
    from signaller.sources.postgres.codecs import BinaryHandling, Builder, TypeModes

__all__ = [
    "binary_placeholder",
    "bool_converter",
    "build_bits",
    "build_bytea",
    "build_enum",
    "build_money",
    "build_numeric",
    "build_unknown_binary",
    "float4_converter",
    "float8_converter",
    "int_converter",
    "simple_builder",
    "string_builder",
]


def _binary_node(mode: BinaryHandling) -> dict[str, Any]:
    return schema_node("bytes" if mode == "bytes" else "string")


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
                unscaled = rescale(unscaled, actual, scale)
        except ValueError as exc:
            raise bad(label, text, str(exc)) from None
        return b64(unscaled_bytes(unscaled))

    return convert


def _numeric_precise_variable(label: str) -> Converter:
    def convert(text: str) -> dict[str, Any]:
        if text in _NUMERIC_SPECIALS:
            raise _special_precise(label, text)
        try:
            unscaled, scale = strip_trailing_zeros(*_split_numeric(text))
        except ValueError as exc:
            raise bad(label, text, str(exc)) from None
        return {"scale": scale, "value": b64(unscaled_bytes(unscaled))}

    return convert


def _numeric_double(label: str) -> Converter:
    def convert(text: str) -> float:
        try:
            return double_payload(float(text))
        except ValueError:
            raise bad(label, text, "not a number") from None

    return convert


def _numeric_string(label: str, scale: int | None) -> Converter:
    def convert(text: str) -> str:
        special = _NUMERIC_SPECIALS.get(text)
        if special is not None:
            return special
        try:
            unscaled, actual = _split_numeric(text)
            if scale is not None and actual != scale:
                unscaled, actual = rescale(unscaled, actual, scale), scale
        except ValueError as exc:
            raise bad(label, text, str(exc)) from None
        return decimal_plain_text(unscaled, actual)

    return convert


def _numeric_typmod(typmod: int) -> tuple[int, int] | None:
    """``numeric(p, s)`` from ``atttypmod`` as pgjdbc reports it; None without a declaration."""
    if typmod < 4:
        return None
    return ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF


def build_numeric(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``numeric``: Decimal, VariableScaleDecimal, double or string per ``decimal.handling.mode``."""
    declared = _numeric_typmod(column.type_modifier)
    precision, scale = declared if declared is not None else (0, 0)
    variable = precision == 0 and scale == 0
    if modes.decimal_handling == "double":
        return schema_node("double"), _numeric_double(label)
    if modes.decimal_handling == "string":
        return schema_node("string"), _numeric_string(label, None if variable else scale)
    if variable:
        return dict(VARIABLE_SCALE_DECIMAL), _numeric_precise_variable(label)
    return decimal_node(scale, precision), _numeric_precise_fixed(label, scale)


_MONEY_JUNK: Final = re.compile(r"[^0-9.\-]")


def _money_decimal(label: str, text: str) -> Decimal:
    """pgjdbc-style money parsing: drop currency symbols, grouping and parentheses."""
    negative = text.startswith(("-", "("))
    try:
        value = Decimal(_MONEY_JUNK.sub("", text).lstrip("-"))
    except InvalidOperation:
        raise bad(label, text, "not a money amount") from None
    return -value if negative else value


def build_money(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``money``: Decimal with ``money.fraction.digits``, or double/string per ``decimal.handling.mode``."""
    digits = modes.money_fraction_digits
    quantum = Decimal(1).scaleb(-digits)
    if modes.decimal_handling == "double":
        return schema_node("double"), lambda text: double_payload(float(_money_decimal(label, text)))
    if modes.decimal_handling == "string":
        return schema_node("string"), lambda text: format(_money_decimal(label, text), "f")

    def convert(text: str) -> str:
        value = _money_decimal(label, text).quantize(quantum, rounding=ROUND_HALF_UP)
        return b64(unscaled_bytes(int(value.scaleb(digits))))

    return decimal_node(digits, None), convert


def _bool(text: str) -> bool:
    return text == "t" or text == "T"


def bool_converter(label: str) -> Converter:
    """The ``bool`` converter: ``"t"``/``"T"`` are true, anything else false (pgjdbc)."""
    return _bool


def float4_converter(label: str) -> Converter:
    """``real``: a :class:`~signaller.wire.numbers.JavaFloat` (float32 rounding, ``Float.toString``)."""
    def convert(text: str) -> float:
        try:
            return JavaFloat(to_float32(float(text)))
        except ValueError:
            raise bad(label, text, "not a real number") from None

    return convert


def float8_converter(label: str) -> Converter:
    """``double precision``: a float, Java-formatted where Python's text differs."""
    def convert(text: str) -> float:
        try:
            return double_payload(float(text))
        except ValueError:
            raise bad(label, text, "not a double precision number") from None

    return convert


def _bits_typmod(column: Column) -> int:
    """Declared bit length; ``varbit`` without one is 2^31-1 (pgjdbc's unknown length)."""
    if column.type_modifier > 0:
        return column.type_modifier
    return 1 if column.type_name == "bit" else 2**31 - 1


def build_bits(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``bit``/``varbit``: boolean for ``bit(1)``, else ``io.debezium.data.Bits`` (little-endian bytes)."""
    length = _bits_typmod(column)
    if length == 1:
        return schema_node("boolean"), guarded(label, lambda text: int(text, 2) != 0, "not a bit string")

    def convert(text: str) -> str:
        try:
            number = int(text, 2) if text else 0
        except ValueError:
            raise bad(label, text, "not a bit string") from None
        return b64(number.to_bytes((number.bit_length() + 7) // 8, "little"))

    bits = schema_node("bytes", name="io.debezium.data.Bits", version=1, parameters={"length": str(length)})
    return bits, convert


def _binary_encoder(mode: BinaryHandling) -> Callable[[bytes], str]:
    if mode in ("bytes", "base64"):
        return b64
    if mode == "base64-url-safe":
        return lambda data: binascii.b2a_base64(data, newline=False).decode("ascii").translate(_URLSAFE)
    return bytes.hex


_URLSAFE: Final = str.maketrans("+/", "-_")


def build_bytea(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``bytea`` (``\\x...`` text) per ``binary.handling.mode``."""
    encode = _binary_encoder(modes.binary_handling)

    def convert(text: str) -> str:
        if not text.startswith("\\x"):
            raise bad(label, text, "bytea must use bytea_output=hex ('\\x...')")
        try:
            return encode(bytes.fromhex(text[2:]))
        except ValueError:
            raise bad(label, text, "not a hex bytea value") from None

    return _binary_node(modes.binary_handling), convert


def build_unknown_binary(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """A type without a mapping: the text's UTF-8 bytes per ``binary.handling.mode``."""
    encode = _binary_encoder(modes.binary_handling)
    return _binary_node(modes.binary_handling), lambda text: encode(text.encode("utf-8"))


def binary_placeholder(mode: BinaryHandling) -> Any:
    """Debezium: bytes -> the placeholder's bytes; hex -> the string; base64 modes -> null."""
    if mode == "bytes":
        return b64(UNAVAILABLE_VALUE_PLACEHOLDER.encode("ascii"))
    if mode == "hex":
        return UNAVAILABLE_VALUE_PLACEHOLDER
    return None


def string_builder(name: str | None = None) -> Builder:
    """A builder of string columns, plain or with the semantic type ``name`` (``io.debezium.data.Uuid``...)."""
    node = schema_node("string") if name is None else schema_node("string", name=name, version=1)

    def build(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
        return dict(node), str

    return build


def build_enum(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """An enum: ``io.debezium.data.Enum`` with parameter ``allowed`` (the labels, comma-separated)."""
    allowed = ",".join(column.enum_values or ())
    node = schema_node("string", name="io.debezium.data.Enum", version=1, parameters={"allowed": allowed})
    return node, str


def simple_builder(type_: str, convert_of: Callable[[str], Converter]) -> Builder:
    """A builder of primitive ``type_`` whose converter ``convert_of(label)`` makes."""
    def build(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
        return schema_node(type_), convert_of(label)

    return build


def int_converter(label: str) -> Converter:
    """``int2``/``int4``/``int8``/``oid`` text -> int."""
    return guarded(label, int, "not an integer")
