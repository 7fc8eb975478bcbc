"""Text-to-value parsers and value checks used by the property declarations.

Every parser takes the property's text (Kafka Connect hands connectors strings only) and returns a typed
value, or raises ``Rejected`` whose ``accepted`` text says what would have been accepted. Parsing follows
Kafka's ``ConfigDef`` and Debezium's ``Field`` rules: values are trimmed, booleans are ``true``/``false``
in any case, enums compare case-insensitively, lists are comma-separated with blanks dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from enum import StrEnum

from signaller.config.values import KeyColumns, Secret
from signaller.model.tables import TableId
from signaller.patterns import ACCEPTED as PATTERN_SYNTAX
from signaller.patterns import PatternError, UserPattern, compile_pattern

Parser = Callable[[str], object]
Check = Callable[[object], None]


class Rejected(ValueError):
    """A value failed to parse or validate; ``accepted`` describes what is accepted instead."""

    def __init__(self, accepted: str) -> None:
        self.accepted = accepted
        super().__init__(accepted)


def parse_str(text: str) -> str:
    """The trimmed text."""
    return text.strip()


def parse_secret(text: str) -> Secret:
    """The text as a ``Secret``, untrimmed: leading or trailing spaces may be part of a password."""
    return Secret(text)


_INTEGER = re.compile(r"[+-]?[0-9]{1,19}")
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def parse_int(text: str) -> int:
    """A decimal integer within Java's ``long`` range (``ConfigDef.Type.INT``/``LONG``).

    Only ASCII digits with an optional sign, as ``Long.parseLong`` reads them: no ``1_000``, no other
    scripts' digits, and never ``int()`` of thousands of digits.
    """
    stripped = text.strip()
    if _INTEGER.fullmatch(stripped) is None or not _LONG_MIN <= int(stripped) <= _LONG_MAX:
        raise Rejected(f"an integer from {_LONG_MIN} to {_LONG_MAX}, e.g. 1024")
    return int(stripped)


def parse_bool(text: str) -> bool:
    """``true`` or ``false``, case-insensitive, as Kafka's ``ConfigDef.Type.BOOLEAN``."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise Rejected("true or false")
    return lowered == "true"


def parse_list(text: str) -> tuple[str, ...]:
    """Comma-separated items, each trimmed, blanks dropped (``ConfigDef.Type.LIST``)."""
    return tuple(item.strip() for item in text.split(",") if item.strip())


def split_regex_list(text: str) -> tuple[str, ...]:
    """Split like Debezium's ``RegExSplitterByComma``: ``\\,`` is a literal comma inside an expression."""
    parts: list[str] = []
    current: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            escaped = next(chars, None)
            if escaped is None:
                raise Rejected("comma-separated regular expressions; a trailing '\\' escapes nothing")
            current.append(char + escaped)
        elif char == ",":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return tuple(part.strip().replace("\\,", ",") for part in parts if part.strip())


def compile_regex(expression: str) -> UserPattern:
    """Compile one Debezium filter expression: matched case-insensitively, against the whole name.

    Debezium's ``Predicates.includes`` compiles these lists with ``Pattern.CASE_INSENSITIVE``. The
    expression is compiled by ``signaller.patterns`` (RE2: matching is linear in the name, whatever
    the expression).
    """
    try:
        return compile_pattern(expression, ignore_case=True)
    except PatternError as exc:
        shown = expression if len(expression) <= 60 else expression[:57] + "..."
        raise Rejected(f"comma-separated regular expressions ({PATTERN_SYNTAX}); {shown!r} does not compile: "
                       f"{exc.reason}") from None


def parse_regex_list(text: str) -> tuple[UserPattern, ...]:
    """Comma-separated regular expressions, compiled (see ``split_regex_list`` and ``compile_regex``)."""
    return tuple(compile_regex(expression) for expression in split_regex_list(text))


def enum_parser(
    choices: type[StrEnum],
    unsupported: Mapping[str, str],
    aliases: Mapping[str, str],
) -> Parser:
    """A parser for one of ``choices`` (case-insensitive), explaining ``unsupported`` Debezium values."""

    def parse(text: str) -> object:
        value = aliases.get(text.strip().lower(), text.strip().lower())
        if value in choices._value2member_map_:
            return choices(value)
        supported = ", ".join(member.value for member in choices)
        if value in unsupported:
            raise Rejected(f"{supported} ({value!r} is a Debezium value signaller does not support: "
                           f"{unsupported[value]})")
        raise Rejected(f"one of {supported}")

    return parse


def enum_list_parser(choices: type[StrEnum], unsupported: Mapping[str, str]) -> Parser:
    """A parser for a comma-separated list whose items are each one of ``choices``."""
    item_parser = enum_parser(choices, unsupported, {})

    def parse(text: str) -> object:
        return tuple(item_parser(item) for item in parse_list(text))

    return parse


def parse_skipped_operations(text: str) -> frozenset[str]:
    """``skipped.operations``: op codes ``c,u,d,t,r`` or ``none`` alone (Debezium's own validation)."""
    items = parse_list(text)
    if items == ("none",):
        return frozenset()
    accepted = "a comma-separated list of c, u, d, t, r, or 'none' alone"
    if "none" in items or not set(items) <= {"c", "u", "d", "t", "r"}:
        raise Rejected(accepted)
    return frozenset(items)


def parse_table_id(text: str) -> TableId | None:
    """``signal.data.collection``: one ``schema.table``; double quotes protect dots inside names."""
    items = parse_list(text)
    if not items:
        return None
    if len(items) > 1:
        raise Rejected("one table 'schema.table' ('database.table' for MariaDB and MySQL; the connector runs one "
                       "task, so one signal table)")
    parts = _split_quoted(items[0])
    if len(parts) != 2 or not all(parts):
        raise Rejected("a fully-qualified table 'schema.table', e.g. public.debezium_signal")
    return TableId(parts[0], parts[1])


def _split_quoted(name: str) -> list[str]:
    """Split ``name`` on dots outside double quotes; quotes are removed (``""`` is a literal quote)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    index = 0
    while index < len(name):
        char = name[index]
        if char == '"' and quoted and name[index + 1:index + 2] == '"':
            current.append('"')
            index += 1
        elif char == '"':
            quoted = not quoted
        elif char == "." and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return parts


_KEY_RULE = re.compile(r"^([^\s:]+):([^:;,\s]+(?:\s*,\s*[^:;,\s]+)*)$")


def parse_key_columns(text: str) -> tuple[KeyColumns, ...]:
    """``message.key.columns``: ``<table regex>:<col>[,<col>...]`` rules separated by ``;``."""
    rules: list[KeyColumns] = []
    for rule in (part.strip() for part in text.split(";")):
        if not rule:
            continue
        match = _KEY_RULE.match(rule)
        if match is None:
            raise Rejected("rules '<schema.table regex>:<column>[,<column>...]' separated by ';', "
                           f"e.g. public.orders:id,region; {rule!r} does not have that form")
        columns = tuple(column.strip() for column in match.group(2).split(","))
        rules.append(KeyColumns(compile_regex(match.group(1)), columns))
    return tuple(rules)


def at_least(minimum: int) -> Check:
    """A check that an integer is ``>= minimum``."""

    def check(value: object) -> None:
        if not isinstance(value, int) or value < minimum:
            raise Rejected(f"an integer >= {minimum}")

    return check


def in_range(low: int, high: int) -> Check:
    """A check that an integer lies in ``[low, high]``."""

    def check(value: object) -> None:
        if not isinstance(value, int) or not low <= value <= high:
            raise Rejected(f"an integer from {low} to {high}")

    return check


def positive_or_broker_default(value: object) -> None:
    """Kafka Connect topic creation: a positive count, or -1 for the broker's default."""
    if not isinstance(value, int) or (value < 1 and value != -1):
        raise Rejected("a positive integer, or -1 for the broker's default")


def matches(pattern: str, description: str) -> Check:
    """A check that a string full-matches ``pattern``; ``description`` says what that means."""
    compiled = re.compile(pattern)

    def check(value: object) -> None:
        if not isinstance(value, str) or compiled.fullmatch(value) is None:
            raise Rejected(description)

    return check


def one_of(*allowed: str, reason: str) -> Check:
    """A check that a string is one of ``allowed``; ``reason`` explains why others are refused."""

    def check(value: object) -> None:
        if value not in allowed:
            raise Rejected(f"{', '.join(allowed)} ({reason})")

    return check


def not_true(reason: str) -> Check:
    """A check for a boolean signaller implements only as ``false``."""

    def check(value: object) -> None:
        if value is True:
            raise Rejected(f"false ({reason})")

    return check


TOPIC_NAME = matches(r"[a-zA-Z0-9_.\-]+", "letters, digits, '.', '_' and '-' only (a legal Kafka topic name)")
NOT_BLANK = matches(r"(?s).*\S.*", "a non-empty value")
