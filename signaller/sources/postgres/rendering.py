"""Snapshot READs rendered by PostgreSQL: the chunk query writes each row's ``after`` image and Kafka key
payload as the JSON Debezium's events carry, so a READ costs the sidecar a few byte splices instead of a
conversion per column (:class:`~signaller.sources.base.ReadRendering`).

Which columns PostgreSQL renders: those whose JSON one of its own expressions gives exactly as the column's
codec (:func:`~signaller.sources.postgres.codecs.codec_for`) and Jackson would, under every type mode:

* ``int2``/``int4``/``int8``/``oid``: the number's text; ``bool``: ``true``/``false``;
* the string types (text, ``varchar``, ``bpchar``, ``"char"``, ``name``, ``citext``, network and range
  types, ``uuid``, ``xml``, ``tsvector``, enums): ``to_json`` of the type's output text (``json``/``jsonb``:
  of their text), escaped as orjson escapes;
* ``bytea`` in every ``binary.handling.mode`` (base64 without line breaks, url-safe, or hex);
* ``date`` (epoch days), ``time`` and ``timestamp`` (epoch ms or µs, computed exactly on PostgreSQL 10 and
  later) and ``timestamptz`` at precision 6 or 0 (``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` in UTC).

Every other emitted column (numeric, money, floats, intervals, ``timetz``, bits, arrays, geometric types,
hstore, PostGIS, unknown types) is *converted*: the query selects the JSON between such columns in pieces,
and :meth:`PostgresReadRendering.render` converts each one with its codec in between, as the generic path
does. A value an expression cannot render exactly (an infinite date or timestamp, a timestamp past
``MicroTimestamp``'s range, a ``timestamptz`` outside the years 1-9999) makes the row's pieces NULL, and
the caller converts that row the generic way. A NULL becomes what the generic path writes for it: the
codec's null value, or the schema default in its place (Kafka's JsonConverter) in the ``after`` image.

A table gets a rendering only when its key payload can be rendered whole (every message key column of a
rendered type). Pure: builds SQL text and splices bytes; the byte-for-byte promise is tested against the
generic path for every type of ``schemas/type-mapping.md`` on a real server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from signaller.model import Column
from signaller.sources.postgres.codecs import TypeModes, type_kind
from signaller.sources.postgres.reader import RelationPlan
from signaller.sources.postgres.sqltext import quote_ident, quote_literal
from signaller.wire.columns import ColumnCodec
from signaller.wire.jackson import dumps

__all__ = ["PostgresReadRendering", "read_rendering", "value_sql"]

_INTEGERS: Final = frozenset({"int2", "int4", "int8", "oid"})
_STRINGS: Final = frozenset({
    "text", "varchar", "bpchar", "char", "name", "citext", "inet", "cidr", "macaddr", "macaddr8",
    "int4range", "int8range", "numrange", "tsrange", "tstzrange", "daterange", "uuid", "xml", "tsvector", "enum",
})  # fmt: skip
"""Types whose codec writes their output text as a JSON string (``string_builder``, ``build_enum``)."""
_MICRO_TIMESTAMP_END: Final = "'294247-01-01'::timestamp"
"""A bound below the last ``MicroTimestamp`` (int64 µs since the epoch): later values go the generic way."""
_EPOCH_MICROS: Final = ("(extract(epoch FROM date_trunc('second', {ref}))::bigint * 1000000"
                        " + extract(microseconds FROM {ref})::bigint % 1000000)")
"""A timestamp's µs since the epoch, exact whether ``extract`` returns numeric (14+) or double (10-13)."""


def _milliseconds(micros_sql: str) -> str:
    """Floor division by 1,000, as the codecs' ``micros // 1000``."""
    return f"floor(({micros_sql}) / 1000.0)::bigint"


def value_sql(column: Column, modes: TypeModes, ref: str) -> str | None:
    """SQL text giving the JSON of the non-NULL value ``ref`` of ``column`` under ``modes``, exactly as its
    codec and Jackson write it (NULL for a value it cannot render exactly); None for a type PostgreSQL does not
    render (see the module docstring)."""
    kind = type_kind(column)
    if kind in _INTEGERS:
        return f"{ref}::text"
    if kind == "bool":
        return f"CASE WHEN {ref} THEN 'true' ELSE 'false' END"
    if kind in _STRINGS:
        return f"to_json({ref})::text"
    if kind in ("json", "jsonb"):
        return f"to_json({ref}::text)::text"
    if kind == "bytea":
        return _bytea_sql(modes, ref)
    if kind == "date":
        return f"CASE WHEN isfinite({ref}) THEN ({ref} - DATE '1970-01-01')::text END"
    precision = column.type_modifier if 0 <= column.type_modifier <= 6 else 6
    millis = modes.time_precision == "connect" or (modes.time_precision == "adaptive" and precision <= 3)
    if kind == "time":
        micros = f"round(extract(epoch FROM {ref}) * 1000000)::bigint"
        return (_milliseconds(micros) if millis else micros) + "::text"
    if kind == "timestamp":
        micros = _EPOCH_MICROS.format(ref=ref)
        whole = _milliseconds(micros) if modes.time_precision == "connect" or precision <= 3 else micros
        return f"CASE WHEN isfinite({ref}) AND {ref} < {_MICRO_TIMESTAMP_END} THEN ({whole})::text END"
    if kind == "timestamptz" and precision in (0, 6):
        fraction = ".US" if precision == 6 else ""
        text = f"to_char({ref} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS{fraction}\"Z\"')"
        return (f"CASE WHEN {ref} >= '0001-01-01 00:00:00+00'::timestamptz AND {ref} < '10000-01-01 00:00:00+00'"
                f"::timestamptz THEN '\"' || {text} || '\"' END")
    return None


def _bytea_sql(modes: TypeModes, ref: str) -> str:
    if modes.binary_handling == "hex":
        text = f"encode({ref}, 'hex')"
    elif modes.binary_handling == "base64-url-safe":
        text = f"translate(encode({ref}, 'base64'), '+/' || chr(10), '-_')"
    else:
        text = f"translate(encode({ref}, 'base64'), chr(10), '')"
    return f"'\"' || {text} || '\"'"


def _null_json(codec: ColumnCodec, *, with_default: bool) -> bytes:
    """What a NULL of the column becomes: its null value, or (``with_default``, the ``after`` image) the schema
    default in place of a null (``TableFragments.fill_defaults``)."""
    value = codec.null_value
    if value is None and with_default:
        value = codec.schema.get("default")
    return dumps(value)


def _or_null(column: Column, ref: str, expression: str, null_json: bytes) -> str:
    """``expression``, or ``null_json`` when ``ref`` is NULL (a NOT NULL column needs no test: were it ever NULL,
    the row's JSON would be NULL and the row would go the generic way)."""
    if not column.optional:
        return expression
    return f"CASE WHEN {ref} IS NULL THEN {quote_literal(null_json.decode())} ELSE {expression} END"


Converted = Callable[[str | None], bytes]
"""A converted column's JSON from its text (None = SQL NULL)."""


def _converted(codec: ColumnCodec) -> Converted:
    """The generic path's JSON of one value of a column PostgreSQL does not render: converted with its codec,
    a null replaced by the schema default."""
    convert, null, default = codec.convert, codec.null_value, codec.schema.get("default")

    def json_of(text: str | None) -> bytes:
        value = null if text is None else convert(text)
        return dumps(default if value is None else value)

    return json_of


class _Pieces:
    """Builds one JSON object as SQL: literal text and rendered values joined with ``||``, cut into pieces at
    each converted value."""

    def __init__(self) -> None:
        self.pieces: list[list[str]] = [[]]
        self.literal = ""

    def text(self, text: str) -> None:
        self.literal += text

    def sql(self, expression: str) -> None:
        self._flush()
        self.pieces[-1].append(expression)

    def cut(self) -> None:
        self._flush()
        self.pieces.append([])

    def _flush(self) -> None:
        if self.literal:
            self.pieces[-1].append(quote_literal(self.literal))
            self.literal = ""

    def finish(self) -> list[str]:
        self._flush()
        return [" || ".join(parts) if parts else "''" for parts in self.pieces]


@dataclass(frozen=True)
class PostgresReadRendering:
    """A table's READ rendering (see the module docstring): ``select`` is the ``after`` image's pieces, then the
    key payload; ``converted`` the raw value index and converter of the column between each two pieces."""

    select: tuple[str, ...]
    value_names: tuple[str, ...]
    key_names: tuple[str, ...]
    converted: tuple[tuple[int, Converted], ...]

    def render(self, values: Sequence[str | None], offset: int) -> tuple[bytes, bytes | None] | None:
        """The ``after`` image and key payload of one chunk row (``select`` values from ``offset``), or None
        when PostgreSQL left the row to the generic path."""
        pieces = len(self.converted) + 1
        key: bytes | None = None
        if self.key_names:
            key_text = values[offset + pieces]
            if key_text is None:
                return None
            key = key_text.encode()
        first = values[offset]
        if first is None:
            return None
        if pieces == 1:
            return first.encode(), key
        parts = [first.encode()]
        for number, (index, json_of) in enumerate(self.converted, 1):
            piece = values[offset + number]
            if piece is None:
                return None
            parts.append(json_of(values[index]))
            parts.append(piece.encode())
        return b"".join(parts), key

    def render_rows(self, rows: Sequence[Sequence[str | None]], offset: int) -> list[tuple[bytes, bytes | None] | None]:
        """:meth:`render` of each of ``rows``, in one pass (the common tables, without converted columns, with
        no call per row)."""
        if self.converted:
            return [self.render(values, offset) for values in rows]
        if not self.key_names:
            return [None if (after := values[offset]) is None else (after.encode(), None) for values in rows]
        at = offset + 1
        return [None if (after := values[offset]) is None or (key := values[at]) is None
                else (after.encode(), key.encode()) for values in rows]


def read_rendering(plan: RelationPlan, modes: TypeModes) -> PostgresReadRendering | None:
    """The READ rendering of chunk rows read with ``plan`` under ``modes`` (raw values in the plan's tuple
    order); None when a message key column is of a type PostgreSQL does not render, or the table has no
    emitted column."""
    columns = {column.name: column for column in plan.schema.columns}
    value_names = tuple(slot[1] for slot in plan.slots)
    if not value_names:
        return None
    emitted = set(value_names)
    key_names = tuple(name for name in plan.schema.key_columns if name in emitted)
    after, converted = _Pieces(), []
    for number, (index, name, *_rest) in enumerate(plan.slots):
        codec, ref = plan.codecs[name], quote_ident(name)
        after.text(("{" if number == 0 else ",") + dumps(name).decode() + ":")
        expression = value_sql(columns[name], modes, ref)
        if expression is None:
            after.cut()
            converted.append((index, _converted(codec)))
            continue
        after.sql(_or_null(columns[name], ref, expression, _null_json(codec, with_default=True)))
    after.text("}")
    select = after.finish()
    if key_names:
        key = _Pieces()
        for number, name in enumerate(key_names):
            expression = value_sql(columns[name], modes, quote_ident(name))
            if expression is None:
                return None
            key.text(("{" if number == 0 else ",") + dumps(name).decode() + ":")
            key.sql(_or_null(columns[name], quote_ident(name), expression,
                             _null_json(plan.codecs[name], with_default=False)))
        key.text("}")
        select += key.finish()
    return PostgresReadRendering(tuple(select), value_names, key_names, tuple(converted))
