"""PostgreSQL ``hstore`` (the extension's text, ``"a"=>"1", "b"=>NULL``) -> Debezium's two encodings.

Contract
--------
:func:`build_hstore` is the ``hstore`` builder of :mod:`signaller.sources.postgres.codecs`
(``(column, modes, label)`` -> schema node, converter), per ``hstore.handling.mode``:

* ``json`` (Debezium's default): a string named ``io.debezium.data.Json`` holding a JSON object,
  written as Jackson's ``JsonGenerator`` writes it (no spaces, NULL values as ``null``, control
  characters escaped, ``\\u00XX`` in upper case, everything else as is).
* ``map``: a Connect ``map<string, string>`` (keys required, values optional), a JSON object in the
  payload.

Debezium reads the text into pgjdbc's ``HStoreConverter.fromString``, a ``java.util.HashMap``, and
writes its entries in that map's iteration order, so both encodings list the pairs in that order
(:func:`java_hash_map_order`): by bucket of ``String.hashCode`` in the final table, ties in
PostgreSQL's order. Text that is not hstore output raises :class:`~signaller.errors.DecodeError`.
Pure functions, computed per value; no state.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from signaller.model.tables import Column
from signaller.sources.postgres.conversion import bad
from signaller.wire.columns import Converter
from signaller.wire.connect import schema_node

if TYPE_CHECKING:
    from signaller.sources.postgres.codecs import TypeModes

__all__ = ["build_hstore", "java_hash_map_order", "java_string_hash", "parse_hstore"]

_PAIR: Final = re.compile(r'\s*"((?:[^"\\]|\\.)*)"\s*=>\s*(?:"((?:[^"\\]|\\.)*)"|(NULL))\s*(,|\Z)', re.S)
_ESCAPE: Final = re.compile(r"\\(.)", re.S)


def parse_hstore(text: str) -> list[tuple[str, str | None]]:
    """The ``(key, value)`` pairs of hstore output text, in its order (``None``: a NULL value).
    Raises ``ValueError`` for anything else."""
    pairs: list[tuple[str, str | None]] = []
    if not text.strip():
        return pairs
    position = 0
    while position < len(text):
        match = _PAIR.match(text, position)
        if match is None:
            raise ValueError("not hstore output")
        key, value, null, separator = match.groups()
        pairs.append((_ESCAPE.sub(r"\1", key), None if null else _ESCAPE.sub(r"\1", value)))
        position = match.end()
        if not separator:
            break
    if position < len(text):
        raise ValueError("not hstore output")
    return pairs


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit number."""
    data = text.encode("utf-16-be", "surrogatepass")
    hashed = 0
    for index in range(0, len(data), 2):
        hashed = (31 * hashed + (data[index] << 8 | data[index + 1])) & 0xFFFFFFFF
    return hashed


def _bucket_hash(key: str) -> int:
    hashed = java_string_hash(key)
    return hashed ^ (hashed >> 16)


def java_hash_map_order(pairs: list[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    """``pairs`` (distinct keys, in insertion order) in the iteration order of a ``java.util.HashMap``
    filled with them: the table starts at 16 buckets and doubles past 3/4 full, or when a bucket
    reaches 9 entries while under 64 buckets; entries iterate by bucket, each bucket in insertion
    order. A bucket of 9+ entries in a table of 64+ becomes a tree whose root moves first: keys
    built to collide, not modelled."""
    hashes = [_bucket_hash(key) for key, _value in pairs]
    size = 16
    counts: dict[int, int] = {}
    for count, hashed in enumerate(hashes, start=1):
        bucket = hashed & (size - 1)
        counts[bucket] = counts.get(bucket, 0) + 1
        resized = False
        if counts[bucket] >= 9 and size < 64:  # treeifyBin on a small table resizes instead
            size, resized = size * 2, True
        if count > size * 3 // 4:  # ++size > threshold
            size, resized = size * 2, True
        if resized:
            counts = {}
            for earlier in hashes[:count]:
                counts[earlier & (size - 1)] = counts.get(earlier & (size - 1), 0) + 1
    order = sorted(range(len(pairs)), key=lambda index: (hashes[index] & (size - 1), index))
    return [pairs[index] for index in order]


_JACKSON_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE: Final = re.compile(r'["\\\x00-\x1f]')


def _jackson_string(text: str) -> str:
    def escape(match: re.Match[str]) -> str:
        char = match.group()
        return _JACKSON_ESCAPES.get(char) or f"\\u{ord(char):04X}"

    return '"' + _NEEDS_ESCAPE.sub(escape, text) + '"'


def _json_text(pairs: list[tuple[str, str | None]]) -> str:
    members = (f"{_jackson_string(k)}:{'null' if v is None else _jackson_string(v)}" for k, v in pairs)
    return "{" + ",".join(members) + "}"


def build_hstore(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``hstore`` per ``hstore.handling.mode``: an ``io.debezium.data.Json`` string or a
    ``map<string, string>`` (see the module docstring)."""

    def pairs_of(text: str) -> list[tuple[str, str | None]]:
        try:
            return java_hash_map_order(parse_hstore(text))
        except ValueError:
            raise bad(label, text, "not hstore output") from None

    if modes.hstore_handling == "map":
        node = {"type": "map", "keys": {"type": "string", "optional": False}, "values": schema_node("string"),
                "optional": True}
        return node, lambda text: dict(pairs_of(text))
    return schema_node("string", name="io.debezium.data.Json", version=1), lambda text: _json_text(pairs_of(text))
