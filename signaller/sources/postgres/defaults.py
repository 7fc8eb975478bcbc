"""Column default values as Debezium puts them in Connect schemas (``"default"``).

Debezium reads each column's default expression from the catalog and, when it is a constant it can
parse, converts it like a value of the column and writes it as the schema's ``default``; Kafka's
JsonConverter then also writes that default in place of a NULL value (``replace.null.with.default``,
on by default). :func:`literal_text` is the pure half: the text a constant default expression stands
for, in the form pgoutput would send the value (so the column's ordinary converter applies), or None
for anything that is not a plain constant (``nextval(...)``, ``now()``, expressions) — such columns
get no default.
"""

from __future__ import annotations

import re

_QUOTED = re.compile(r"'((?:[^']|'')*)'(?:::[A-Za-z_][\w .\"\[\]()]*)*")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_BOOLEANS = {"true": "t", "false": "f"}


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
