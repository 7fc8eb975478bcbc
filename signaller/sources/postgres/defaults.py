"""Column default values as Debezium puts them in Connect schemas (``"default"``).

Debezium reads each column's default expression from the catalog and, when it is a constant it can
parse, converts it like a value of the column and writes it as the schema's ``default``; Kafka's
JsonConverter then also writes that default in place of a NULL value (``replace.null.with.default``,
on by default). :func:`literal_text` is the pure half: the text a constant default expression stands
for, in the form pgoutput would send the value (so the column's ordinary converter applies), or None
for anything else. Like Debezium's ``PostgresDefaultValueConverter``, a default that is a function call
(``nextval('s'::regclass)``, ``now()``, ``gen_random_uuid()``) or a ``CURRENT_*``/``LOCAL*`` keyword
stands for the type's zero value (0, the epoch, the nil UUID, ``{}``...): Debezium cannot evaluate it
and writes that placeholder, so :func:`default_text` does the same for the types it knows.
"""

from __future__ import annotations

import re

_QUOTED = re.compile(r"'((?:[^']|'')*)'(?:::[A-Za-z_][\w .\"\[\]()]*)*")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_BOOLEANS = {"true": "t", "false": "f"}
_FUNCTION = re.compile(r"[(]?[A-Za-z0-9_.]+\(.*\)", re.DOTALL)
_KEYWORDS = frozenset({"current_date", "current_time", "current_timestamp", "localtime", "localtimestamp"})
ZERO_VALUES = {
    "int2": "0", "int4": "0", "int8": "0", "float4": "0.0", "float8": "0.0", "numeric": "0",
    "bool": "f", "text": "", "varchar": "", "bpchar": "",
    "date": "1970-01-01", "time": "00:00:00", "timestamp": "1970-01-01 00:00:00",
    "timestamptz": "1970-01-01 00:00:00+00", "uuid": "00000000-0000-0000-0000-000000000000",
    "json": "{}", "jsonb": "{}",
}
"""What a function-call default stands for, per ``pg_type.typname`` (value text, as pgoutput sends it)."""


def default_text(expression: str | None, type_name: str) -> str | None:
    """The value text of a column's default as Debezium sees it: the constant (:func:`literal_text`),
    or the type's zero value (:data:`ZERO_VALUES`) for a function call or ``CURRENT_*`` keyword, or
    None (no default: ``NULL``, other expressions, types without a zero value)."""
    constant = literal_text(expression)
    if constant is not None or expression is None:
        return constant
    text = expression.strip()
    if _FUNCTION.fullmatch(text) or text.lower() in _KEYWORDS:
        return ZERO_VALUES.get(type_name)
    return None


def literal_text(expression: str | None) -> str | None:
    """The constant a default expression (``pg_get_expr(adbin, adrelid)``) denotes, as text; None
    when it is not a constant. ``'n/a'::text`` -> ``n/a``; ``42`` -> ``42``; ``true`` -> ``t``;
    ``NULL::text`` and ``nextval('s'::regclass)`` -> None."""
    if expression is None:
        return None
    text = expression.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    quoted = _QUOTED.fullmatch(text)
    if quoted is not None:
        return quoted.group(1).replace("''", "'")
    if _NUMBER.fullmatch(text):
        return text
    return _BOOLEANS.get(text.lower())


def _balanced(text: str) -> bool:
    depth = 0
    quoted = False
    for char in text:
        if char == "'":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and not quoted
