"""Compact JSON exactly as Kafka Connect's JsonConverter (Jackson) writes it.

Contract
--------
:func:`dumps` renders a payload (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``,
:class:`~signaller.wire.numbers.JavaDouble`, :class:`~signaller.wire.numbers.JavaFloat`) as
compact JSON with Jackson's text: Java float layout and control-character escapes with
upper-case hex (``\\u001F``). Anything else raises ``TypeError`` naming its type.
:func:`record` frames a payload as ``{"schema":...,"payload":...}`` given the
:func:`schema_prefix` of its schema (rendered once), or writes the payload alone
(``schemas.enable=false``).

The pieces of :func:`dumps` (:func:`render_default`, :data:`ESCAPE_MARK`,
:data:`LOWER_HEX_ESCAPE`, :func:`upper_escape`) are exported for the envelope serializer's hot
path (``signaller.wire._fast``), which inlines them; use :func:`dumps` everywhere else. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import orjson

from signaller.wire.numbers import JavaDouble, JavaFloat

__all__ = ["ESCAPE_MARK", "LOWER_HEX_ESCAPE", "dumps", "record", "render_default", "schema_prefix", "upper_escape"]

LOWER_HEX_ESCAPE: Final = re.compile(rb"(?<!\\)((?:\\\\)*)\\u00([01][0-9a-f])")
"""orjson's lower-case ``\\u00xx`` escapes (not preceded by an odd number of backslashes)."""
ESCAPE_MARK: Final = b"\\u00"
"""Present in orjson's output only when it wrote a ``\\u00xx`` escape (cheap pre-check)."""


def render_default(value: object) -> Any:
    """orjson's ``default`` hook: Java-formatted floats as their Jackson text, else TypeError."""
    if isinstance(value, (JavaDouble, JavaFloat)):
        return orjson.Fragment(value.json_text())
    raise TypeError(f"cannot render {type(value).__name__} as JSON: {value!r}")


def upper_escape(match: re.Match[bytes]) -> bytes:
    """Replacement for :data:`LOWER_HEX_ESCAPE`: the same escape with upper-case hex digits."""
    return match.group(1) + b"\\u00" + match.group(2).upper()


_orjson_dumps: Final = orjson.dumps


def dumps(value: Any) -> bytes:
    """Compact JSON as Jackson writes it for Kafka Connect (Java float text, upper-case escapes)."""
    out = _orjson_dumps(value, default=render_default)
    if ESCAPE_MARK in out:
        out = LOWER_HEX_ESCAPE.sub(upper_escape, out)
    return out


def schema_prefix(schema: Mapping[str, Any]) -> bytes:
    """``{"schema":<schema>,"payload":`` rendered once, to splice in front of payloads: the schema
    as Jackson writes it, like a payload (column defaults of ``real``/``float8`` columns in Java's
    float text, upper-case escapes)."""
    return b'{"schema":' + dumps(schema) + b',"payload":'


def record(prefix: bytes | None, payload: Any) -> bytes:
    """``{"schema":...,"payload":...}`` when ``prefix`` is given, else the payload alone."""
    if prefix is None:
        return dumps(payload)
    return prefix + dumps(payload) + b"}"
