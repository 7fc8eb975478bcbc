"""Numbers exactly as Java and Jackson write them in Kafka Connect JSON records.

Contract
--------
* :class:`JavaDouble` / :class:`JavaFloat` are ``float`` payload values whose JSON text is
  Java's ``Double.toString`` / ``Float.toString`` (what Jackson writes); NaN and infinities are
  the JSON strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``. :func:`double_payload` returns a
  plain ``float`` wherever Python's ``repr`` already agrees with Java (``0`` and magnitudes in
  ``[1e-3, 1e7)``), so the common case costs nothing.
* :func:`to_float32` rounds a double to float32 as Java's ``(float)`` cast does.
* :func:`unscaled_bytes` is ``BigInteger.toByteArray()``; :func:`b64` is how Jackson writes a
  ``byte[]`` (standard base64, no newline).
* :func:`decimal_plain_text` is ``BigDecimal.toPlainString()`` (``decimal.handling.mode=string``);
  :func:`strip_trailing_zeros` and
  :func:`rescale` are ``stripTrailingZeros()`` (clamped at scale 0, as Debezium) and
  ``setScale(target)`` without rounding (``ValueError`` when digits would be lost).

Pure functions, no I/O, no state.
"""

from __future__ import annotations

import binascii
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Final

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "JavaDouble",
    "JavaFloat",
    "b64",
    "decimal_plain_text",
    "double_payload",
    "rescale",
    "strip_trailing_zeros",
    "to_float32",
    "unscaled_bytes",
]

INT64_MIN: Final = -(2**63)
"""Java ``Long.MIN_VALUE``."""
INT64_MAX: Final = 2**63 - 1
"""Java ``Long.MAX_VALUE``."""


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


def to_float32(value: float) -> float:
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
        if to_float32(float(candidate)) == value:
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
    if len(digits) == 1:  # Java prints at least two digits: the two-digit decimal closest to the value
        mantissa, _e, power = f"{abs(value):.1e}".partition("e")
        digits, exponent = mantissa.replace(".", "").rstrip("0") or "0", int(power)
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            return f"{sign}{whole}.{digits[exponent + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def double_payload(value: float) -> float:
    """``value`` itself where orjson and Jackson agree on its text, else a :class:`JavaDouble`."""
    if value == 0.0 or 1e-3 <= abs(value) < 1e7:
        return value
    return JavaDouble(value)


def b64(data: bytes) -> str:
    """``data`` as Jackson writes a ``byte[]``: standard base64 without a newline."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def unscaled_bytes(unscaled: int) -> bytes:
    """Java ``BigInteger.toByteArray()``: minimal big-endian two's complement, at least 1 byte."""
    length = ((unscaled if unscaled >= 0 else ~unscaled).bit_length() >> 3) + 1
    return unscaled.to_bytes(length, "big", signed=True)


def rescale(unscaled: int, scale: int, target: int) -> int:
    """Java ``setScale(target)`` without rounding: ValueError if digits would be lost."""
    if scale <= target:
        return unscaled * int(10 ** (target - scale))
    factor = int(10 ** (scale - target))
    quotient, remainder = divmod(abs(unscaled), factor)
    if remainder:
        raise ValueError(f"rounding necessary to reach scale {target}")
    return quotient if unscaled >= 0 else -quotient


def strip_trailing_zeros(unscaled: int, scale: int) -> tuple[int, int]:
    """``BigDecimal.stripTrailingZeros()`` clamped at scale 0, as Debezium does."""
    if unscaled == 0:
        return 0, 0
    while scale > 0 and unscaled % 10 == 0:
        unscaled //= 10
        scale -= 1
    return unscaled, scale


def decimal_plain_text(unscaled: int, scale: int) -> str:
    """Java ``BigDecimal.toPlainString()``: no exponent (``0.0000000001``, ``0.0000000000``)."""
    digits = tuple(int(digit) for digit in str(abs(unscaled)))
    return format(Decimal((1 if unscaled < 0 else 0, digits, -scale)), "f")
