"""Kafka Connect schemas and values in Avro, as Confluent's ``AvroConverter`` (``AvroData``) writes them.

Contract
--------
* :func:`avro_schema` turns a Connect schema node (:mod:`signaller.wire.connect`) into the Avro
  schema ``AvroData.fromConnectSchema`` builds with the converter's defaults (``connect.meta.data``
  true, ``enhanced.avro.schema.support``, ``scrub.invalid.names`` and ``discard.type.doc.default``
  false): structs are records named after the Connect name (namespace before the last dot);
  ``int8``/``int16`` are ``int`` with ``connect.type``; every non-union type carries
  ``connect.doc``, ``connect.version``, ``connect.parameters``, ``connect.default`` and
  ``connect.name`` when the Connect schema has them (in that order); Kafka's ``Decimal``,
  ``Date``, ``Time`` and ``Timestamp`` get the Avro logical types ``decimal`` (precision from
  ``connect.decimal.precision``, default 64), ``date``, ``time-millis`` and ``timestamp-millis``;
  Debezium's semantic types keep their ``connect.name`` only. An optional schema is the union
  ``["null", T]`` (``[T, "null"]`` when it has a default), a field's default is its schema's
  default, else null for an optional field. A named type met again is written as a reference.
* :func:`schema_text` writes such a schema as Java Avro's ``Schema.toString()`` does (member order,
  namespaces relative to the enclosing record, references by short name inside the same
  namespace): the text registered under a subject.
* :func:`datum_converter` compiles, once per schema, the conversion of a JSON payload value (the
  codecs' output: base64 text for bytes) into the Avro datum fastavro writes; None when the payload
  is already the datum.
* :func:`adjust_name` is Debezium's ``SchemaNameAdjuster`` (``schema.name.adjustment.mode`` and,
  with ``field=True``, ``field.name.adjustment.mode``); :func:`check_names` refuses a name Avro
  cannot hold, as Java Avro would.
* :func:`frame` is the Confluent wire format: magic byte 0, the schema id (4 bytes, big-endian),
  the Avro binary body. :func:`long_bytes` and :func:`string_bytes` are Avro's binary encodings.

Pure functions and immutable data; no I/O.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = [
    "DEFAULT_PRECISION",
    "adjust_name",
    "avro_schema",
    "check_names",
    "datum_converter",
    "frame",
    "long_bytes",
    "schema_text",
    "string_bytes",
]

DEFAULT_PRECISION: Final = 64
"""``AvroData``'s precision of a ``Decimal`` without ``connect.decimal.precision``."""

_DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
_LOGICAL: Final = {
    "org.apache.kafka.connect.data.Time": "time-millis",
    "org.apache.kafka.connect.data.Timestamp": "timestamp-millis",
    "org.apache.kafka.connect.data.Date": "date",
}
_PRIMITIVES: Final = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float": "float",
                      "double": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}
"""Connect's types as JsonConverter names them (``float``/``double``: FLOAT32/FLOAT64) -> Avro's."""
_NO_DEFAULT: Final = object()
_AVRO_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Converter = Callable[[Any], Any]


# --------------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------------


def adjust_name(name: str, mode: str, *, field: bool = False) -> str:
    """``name`` as Debezium's ``SchemaNameAdjuster`` leaves it in ``mode`` (``none``, ``avro``,
    ``avro_unicode``); ``field`` selects the field-name rules (no ``.``; with ``avro_unicode`` no
    ``_`` either). Characters are UTF-16 code units, as in Java."""
    if mode == "none" or not name:
        return name
    unicode = mode == "avro_unicode"
    units = name.encode("utf-16-le")
    chars = [chr(int.from_bytes(units[i:i + 2], "little")) for i in range(0, len(units), 2)]
    out: list[str] = []
    for index, char in enumerate(chars):
        letter = "a" <= char <= "z" or "A" <= char <= "Z" or (char == "_" and not unicode)
        valid = letter if index == 0 else (letter or "0" <= char <= "9" or (char == "." and not field))
        if valid:
            out.append(char)
            continue
        out.append(_replacement(char, unicode))
        if index == 0 and char.isdigit() and "0" <= char <= "9" and not unicode:
            out.append(char)
    return "".join(out)


def _replacement(char: str, unicode: bool) -> str:
    if not unicode:
        return "_"
    digits = format(ord(char), "x")
    return "_u" + ("00" + digits if len(digits) <= 2 else digits)


def check_names(fullname: str, fields: list[str], what: str) -> None:
    """Raise ``ValueError`` naming ``what`` if ``fullname`` (dot-separated) or a field name is not a
    valid Avro name (Java Avro refuses such a schema: Debezium's converter fails the same way)."""
    bad = [part for part in fullname.split(".") if not _AVRO_NAME.fullmatch(part)]
    bad += [name for name in fields if not _AVRO_NAME.fullmatch(name)]
    if bad:
        msg = (f"{what}: {', '.join(repr(b) for b in bad)} is not a valid Avro name; set "
               "schema.name.adjustment.mode / field.name.adjustment.mode to avro or avro_unicode")
        raise ValueError(msg)


# --------------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------------


class _Context:
    """``FromConnectContext``: the Avro schemas of the non-optional Connect schemas converted so far."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done: dict[str, Any] = {}


def _identity(node: Mapping[str, Any]) -> str:
    """Connect schema equality (everything but the struct member name ``field``)."""
    return json.dumps({k: v for k, v in node.items() if k != "field"}, sort_keys=True, default=str)


def avro_schema(node: Mapping[str, Any]) -> Any:
    """The Avro schema of Connect schema ``node`` (a JSON structure: ``str``, ``dict`` or union
    ``list``), named types defined once and referenced afterwards (see :func:`schema_text`)."""
    return _Writer().write(_convert(node, _Context(), ignore_optional=False))


class _Record:
    __slots__ = ("fields", "name", "props", "space")

    def __init__(self, fullname: str) -> None:
        space, _, name = fullname.rpartition(".")
        self.space = space or None
        self.name = name
        self.fields: list[tuple[str, Any, Any]] = []
        self.props: dict[str, Any] = {}


class _Node:
    """A primitive, array or map schema: ``shape`` holds ``type`` and ``items``/``values``."""

    __slots__ = ("props", "shape")

    def __init__(self, shape: dict[str, Any]) -> None:
        self.shape = shape
        self.props: dict[str, Any] = {}


def _convert(node: Mapping[str, Any], ctx: _Context, *, ignore_optional: bool) -> Any:
    optional = bool(node.get("optional"))
    identity = None
    if not optional:
        identity = _identity(node)
        cached = ctx.done.get(identity)
        if cached is not None:
            return cached
    kind = node["type"]
    name = node.get("name")
    parameters = node.get("parameters") or {}
    if kind == "struct" and optional:
        base: Any = ["null", _convert({**node, "optional": False}, ctx, ignore_optional=False)]
        return base
    if kind == "struct":
        record = _Record(name or "io.confluent.connect.avro.ConnectDefault")
        for member in node["fields"]:
            default = _field_default(member)
            record.fields.append((member["field"], _convert(member, ctx, ignore_optional=False), default))
        base = record
    elif kind == "array":
        base = _Node({"type": "array", "items": _convert(node["items"], ctx, ignore_optional=False)})
    elif kind == "map":
        if node["keys"]["type"] != "string" or node["keys"].get("optional"):
            msg = f"maps with non-string keys are not written in Avro by signaller: {node}"
            raise ValueError(msg)
        base = _Node({"type": "map", "values": _convert(node["values"], ctx, ignore_optional=False)})
    else:
        base = _Node({"type": _PRIMITIVES[kind]})
        if name == _DECIMAL:
            base.props["scale"] = int(parameters["scale"])
            base.props["precision"] = int(parameters.get("connect.decimal.precision", DEFAULT_PRECISION))
    props = base.props
    if node.get("doc") is not None:
        props["connect.doc"] = node["doc"]
    if node.get("version") is not None:
        props["connect.version"] = node["version"]
    if parameters:
        props["connect.parameters"] = dict(parameters)
    if node.get("default") is not None:
        props["connect.default"] = _default_json(node, node["default"])
    if name is not None:
        props["connect.name"] = name
    if kind in ("int8", "int16"):
        props["connect.type"] = kind
    if name == _DECIMAL:
        # Avro's decimal logical type, or (scale < 0 or > precision) AvroData's legacy property: the same text
        props["logicalType"] = "decimal"
    elif name in _LOGICAL:
        props["logicalType"] = _LOGICAL[name]
    result = base
    if optional and not ignore_optional:
        result = [base, "null"] if node.get("default") is not None else ["null", base]
    if identity is not None:
        ctx.done[identity] = result
    return result


def _field_default(member: Mapping[str, Any]) -> Any:
    if member.get("default") is not None:
        return _default_json(member, member["default"])
    return None if member.get("optional") else _NO_DEFAULT


def _default_json(node: Mapping[str, Any], value: Any) -> Any:
    """``defaultValueFromConnect``: a default (JSON payload form) as Avro's JSON default."""
    if value is None:
        return None
    kind = node["type"]
    if kind == "bytes":
        return base64.b64decode(value).decode("latin-1")
    if kind == "array":
        return [_default_json(node["items"], item) for item in value]
    if kind == "map":
        return {key: _default_json(node["values"], item) for key, item in value.items()}
    if kind == "struct":
        return {m["field"]: _default_json(m, value.get(m["field"])) for m in node["fields"]}
    if kind in ("float", "double"):
        return float(value)
    return value


class _Writer:
    """Java Avro's ``Schema.toJson``: the JSON structure of a converted schema."""

    def __init__(self) -> None:
        self.names: set[tuple[str | None, str]] = set()
        self.space: str | None = None

    def write(self, schema: Any) -> Any:
        if isinstance(schema, list):
            return [self.write(branch) for branch in schema]
        if isinstance(schema, str):
            return schema
        if isinstance(schema, _Node):
            if not schema.props and schema.shape["type"] not in ("array", "map"):
                return schema.shape["type"]
            out = dict(schema.shape)
            for member in ("items", "values"):
                if member in out:
                    out[member] = self.write(out[member])
            out.update(schema.props)
            return out
        return self._record(schema)

    def _record(self, record: _Record) -> Any:
        key = (record.space, record.name)
        if key in self.names:
            same = record.space is None or record.space == self.space
            return record.name if same else f"{record.space}.{record.name}"
        self.names.add(key)
        out: dict[str, Any] = {"type": "record", "name": record.name}
        if record.space is not None and record.space != self.space:
            out["namespace"] = record.space
        elif record.space is None and self.space is not None:
            out["namespace"] = ""
        saved, self.space = self.space, record.space
        fields = []
        for name, schema, default in record.fields:
            member: dict[str, Any] = {"name": name, "type": self.write(schema)}
            if default is not _NO_DEFAULT:
                member["default"] = default
            fields.append(member)
        self.space = saved
        out["fields"] = fields
        out.update(record.props)
        return out


def schema_text(schema: Any) -> str:
    """The schema as Java Avro's ``Schema.toString()`` writes it (compact JSON, UTF-8 characters as they are)."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------


def _bytes(value: Any) -> Any:
    return None if value is None else base64.b64decode(value)


def datum_converter(node: Mapping[str, Any]) -> Converter | None:
    """The conversion of a payload value of ``node`` into its Avro datum (None: the payload is the
    datum). Bytes (base64 in payloads) become ``bytes``; a struct's null fields take their defaults
    (Connect's ``Struct.get``, which ``AvroData`` reads through)."""
    kind = node["type"]
    if kind == "bytes":
        return _bytes
    if kind in ("array", "map"):
        inner = datum_converter(node["items"] if kind == "array" else node["values"])
        if inner is None:
            return None
        if kind == "array":
            return lambda value: None if value is None else [inner(item) for item in value]
        return lambda value: None if value is None else {k: inner(v) for k, v in value.items()}
    if kind == "struct":
        members = [(m["field"], datum_converter(m), m.get("default")) for m in node["fields"]]
        if all(conv is None and default is None for _, conv, default in members):
            return None
        return _struct_converter(members)
    return None


def _struct_converter(members: list[tuple[str, Converter | None, Any]]) -> Converter:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        out = {}
        for name, conv, default in members:
            item = value.get(name)
            if item is None:
                item = default
            out[name] = item if conv is None or item is None else conv(item)
        return out

    return convert


# --------------------------------------------------------------------------------------------
# Binary encoding and the Confluent wire format
# --------------------------------------------------------------------------------------------


def long_bytes(value: int) -> bytes:
    """Avro's zig-zag varint encoding of an ``int`` or ``long`` (a 64-bit value: at most 10 bytes).

    No per-byte loop: the 7-bit groups of the low 56 bits are spread into 8-bit slots with three
    mask-and-shift steps (28-, 14-, 7-bit halves), the last two groups are placed directly, and the
    continuation bits of every byte but the last are or-ed in at once (the bytes of the loop it replaced).
    """
    n = (value << 1) ^ (value >> 63)
    if n < 0x80:
        return _SMALL[n]
    count = (n.bit_length() + 6) // 7
    x = n & 0xFFFFFFFFFFFFFF
    x = (x & 0xFFFFFFF) | ((x & 0xFFFFFFF0000000) << 4)
    x = (x & 0x00003FFF00003FFF) | ((x & 0x0FFFC0000FFFC000) << 2)
    x = (x & 0x007F007F007F007F) | ((x & 0x3F803F803F803F80) << 1)
    high = n >> 56
    if high:
        x |= ((high & 0x7F) | ((high >> 7) << 8)) << 64
    return (x | _CONTINUATION[count]).to_bytes(count, "little")


_SMALL: Final = tuple(bytes((n,)) for n in range(0x80))
_CONTINUATION: Final = tuple(int.from_bytes(b"\x80" * (count - 1) + b"\x00", "little") if count else 0
                             for count in range(11))
"""``0x80`` in every byte of a ``count``-byte varint but the last."""


def string_bytes(value: str) -> bytes:
    """Avro's encoding of a string: its UTF-8 length, then the bytes."""
    data = value.encode()
    return long_bytes(len(data)) + data


def frame(schema_id: int, body: bytes) -> bytes:
    """The Confluent wire format: magic byte 0, ``schema_id`` as 4 big-endian bytes, the Avro body."""
    return b"\x00" + schema_id.to_bytes(4, "big") + body
