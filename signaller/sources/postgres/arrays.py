"""PostgreSQL one-dimensional array literals -> Connect arrays.

:func:`parse_array_literal` reads PostgreSQL's array text; :func:`array_codec` builds the
codec of an array column from its element's builder (only the element types in
:data:`ARRAY_ELEMENTS` have a Debezium schema; the registry in
:mod:`signaller.sources.postgres.codecs` decides). A multi-dimensional value is inexpressible
(null, or an empty array in a NOT NULL column); an element the mode cannot express becomes a
null element; both are counted in
:data:`~signaller.sources.postgres.conversion.UNREPRESENTABLE`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from signaller.model.tables import Column
from signaller.sources.postgres.conversion import UNREPRESENTABLE, Unrepresentable, bad, tolerant
from signaller.wire.columns import UNAVAILABLE_VALUE_PLACEHOLDER, ColumnCodec, Converter
from signaller.wire.connect import with_optional

if TYPE_CHECKING:
    from signaller.sources.postgres.codecs import Builder, TypeModes

__all__ = [
    "ARRAY_ELEMENTS",
    "REQUIRED_ITEM_ELEMENTS",
    "UNMAPPED_ARRAY_ELEMENTS",
    "array_codec",
    "bit_array_codec",
    "int_vector_builder",
    "parse_array_literal",
]


_ARRAY_SPACE: Final = " \t\n\r\v\f"
"""What PostgreSQL's array parser treats as white space (``array_isspace``)."""


def _element_pattern(delimiter: str) -> re.Pattern[str]:
    d = re.escape(delimiter)
    return re.compile(
        rf'[ \t\n\r\v\f]*(?:"((?:[^"\\]|\\.)*)"|((?:[^{d}"\\{{}}]|\\.)*))[ \t\n\r\v\f]*({d}|\Z)', re.S
    )


ELEMENT_DELIMITERS: Final = {"box": ";", "geometry": ":", "geography": ":"}
"""Element types whose array delimiter (``pg_type.typdelim``) is not ``,``: ``box``, PostGIS's types."""

_ARRAY_ELEMENT: Final = {d: _element_pattern(d) for d in {",", *ELEMENT_DELIMITERS.values()}}
"""Element patterns by delimiter."""


_ESCAPE: Final = re.compile(r"\\(.)", re.S)


def parse_array_literal(text: str, delimiter: str = ",") -> list[str | None]:
    """Parse a one-dimensional PostgreSQL array literal into element texts (``None`` = NULL);
    ``delimiter`` is the element type's ``typdelim`` (``,``; :data:`ELEMENT_DELIMITERS`).

    Handles quoting, backslash escapes, unquoted ``NULL`` (case-insensitive), whitespace around
    elements and a ``[lo:hi]=`` bounds decoration. Raises ``ValueError`` for malformed or
    multi-dimensional literals.
    """
    body = _array_body(text)
    if not body.strip(_ARRAY_SPACE):
        return []
    if '"' not in body and "\\" not in body:
        return _split_bare(body, delimiter)
    pattern = _ARRAY_ELEMENT[delimiter]
    items: list[str | None] = []
    position = 0
    while True:
        match = pattern.match(body, position)
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


def _split_bare(body: str, delimiter: str) -> list[str | None]:
    """Fast path: no quotes, no escapes."""
    if "{" in body or "}" in body:
        raise ValueError("malformed array literal")
    items: list[str | None] = []
    for raw in body.split(delimiter):
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


ARRAY_ELEMENTS: Final = frozenset(
    {
        "int2", "int4", "int8", "oid", "char", "varchar", "text", "bpchar",
        "inet", "cidr", "macaddr", "macaddr8", "int4range", "int8range", "numrange", "tsrange",
        "tstzrange", "daterange", "numeric", "float4", "float8", "bool", "date", "uuid", "json",
        "jsonb", "time", "timetz", "timestamp", "timestamptz", "bytea", "citext", "tsvector",
        "line", "lseg", "box", "path", "polygon", "circle", "int2vector", "oidvector", "hstore", "geometry",
        "geography",
    }
)  # fmt: skip
"""Element types of the arrays Debezium has a schema for (``PostgresValueConverter``); ``bit``/``varbit``
arrays aside (:func:`bit_array_codec`)."""

REQUIRED_ITEM_ELEMENTS: Final = frozenset({"tsvector", "int2vector", "oidvector"})
"""Element types whose array items Debezium declares required (``"optional": false``), as enums' and
unknown types' (``include.unknown.datatypes``)."""

UNMAPPED_ARRAY_ELEMENTS: Final = frozenset(
    {"money", "name", "interval", "varbit", "xml", "point", "refcursor"}
)
"""Element types whose arrays Debezium leaves out even with ``include.unknown.datatypes=true`` (its
converter knows the array type and has no schema for it); arrays of other unknown element types
(``aclitem[]``, ``xid[]``, multiranges, composites, domains...) then become arrays of required
binary items, each element's text."""


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


def array_codec(
    column: Column, element: str, item_builder: Builder, modes: TypeModes, label: str, table: str
) -> ColumnCodec:
    """The codec of array ``column`` whose canonical element type is ``element`` (one of
    :data:`ARRAY_ELEMENTS`, an enum, or an unknown type's binary text) and whose items
    ``item_builder`` builds: items are optional (required for enum and unknown-type arrays and
    :data:`REQUIRED_ITEM_ELEMENTS`, as Debezium); the
    value is null, or ``[]`` in a NOT NULL column, when inexpressible: multi-dimensional, or a NULL
    element where items are required (Debezium writes null for both)."""
    if column.enum_values is not None:
        item_node, item_convert = item_builder(column, modes, label)
        items_optional = False
    else:
        item_node, item_convert = item_builder(column, modes, f"{label} element")
        items_optional = element in ARRAY_ELEMENTS and element not in REQUIRED_ITEM_ELEMENTS
    item_node = with_optional(item_node, items_optional)

    delimiter = ELEMENT_DELIMITERS.get(element, ",")

    def strict(text: str) -> list[Any]:
        try:
            items = parse_array_literal(text, delimiter)
        except ValueError as exc:
            if _is_multidimensional(text):
                raise Unrepresentable("multidimensional_array", f"{label}: a multi-dimensional array does not "
                                      "fit the column's schema (an array of single values)") from None
            raise bad(label, text, str(exc)) from None
        if not items_optional and None in items:
            raise Unrepresentable("null_element", f"{label}: a NULL element does not fit the column's schema "
                                  "(an array of required items)")
        try:
            return [None if item is None else item_convert(item) for item in items]
        except Unrepresentable:
            return [_array_item(item_convert, item, column.name, table) for item in items]

    schema = {"type": "array", "items": item_node, "optional": column.optional}
    convert = tolerant(strict, column, table, None if column.optional else [])
    return ColumnCodec(schema, convert, True, _array_placeholder(element))


def _array_item(item_convert: Converter, item: str | None, column: str, table: str) -> Any:
    """One array element; an element the mode cannot express becomes null (items are optional)."""
    if item is None:
        return None
    try:
        return item_convert(item)
    except Unrepresentable as exc:
        UNREPRESENTABLE.record(table, column, exc.kind, f"{exc.reason} (an array element)")
        return None


def bit_array_codec(column: Column, item_builder: Builder, modes: TypeModes, label: str) -> ColumnCodec:
    """``bit[]``/``bit(n)[]``/``varbit(n)[]`` as Debezium 3.7 emits them: the column declared with its
    *element's* schema (boolean for ``bit(1)``, ``io.debezium.data.Bits`` otherwise: Debezium's
    schema, which no array fits) and null for every value, so the records validate against it."""
    node, _convert = item_builder(column, modes, label)

    def convert(text: str) -> None:
        return None

    return ColumnCodec(with_optional(node, column.optional), convert, True, None)


def int_vector_builder(item_type: str) -> Builder:
    """``int2vector``/``oidvector`` (text ``1 2 3``): a Connect array of required ``item_type``
    items, Debezium's schema. Debezium 3.7 writes ``[]`` for every such value (it loses the
    numbers); signaller writes them (the README's allow-list)."""

    def build(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
        def convert(text: str) -> list[int]:
            try:
                return [int(item) for item in text.split()]
            except ValueError:
                raise bad(label, text, "not a space-separated list of integers") from None

        return {"type": "array", "items": {"type": item_type, "optional": False}, "optional": True}, convert

    return build
