"""The safe ``additional-conditions`` filter: a boolean SQL expression over one table's columns.

Debezium pastes the ``filter`` text of an ``execute-snapshot`` signal into its chunk queries as is.
signaller does not: ``compile_filter(text, columns)`` tokenizes the text with a hand-written lexer,
parses it with a recursive-descent parser that follows PostgreSQL's operator precedence, checks it
and renders it back as normalized SQL. Only the rendered text ever reaches PostgreSQL, so anything
the grammar below does not describe cannot reach it either::

    condition   := or
    or          := and (OR and)*
    and         := not (AND not)*
    not         := NOT not | is
    is          := compare [IS [NOT] (NULL | TRUE | FALSE)]
    compare     := predicate [(= | <> | != | < | <= | > | >=) predicate]
    predicate   := sum [[NOT] IN (literal, ...) | [NOT] BETWEEN sum AND sum | [NOT] (LIKE | ILIKE) 'pattern']
    sum         := product ((+ | -) product)*
    product     := unary ((* | / | %) unary)*
    unary       := (+ | -) unary | cast
    cast        := primary (:: type)*
    primary     := column | "Column" | number | 'string' | E'string' | TRUE | FALSE | NULL
                 | (DATE | TIME | TIMESTAMP | TIMESTAMPTZ | INTERVAL) 'text'
                 | CAST(condition AS type) | function(condition, ...) | (condition)

Rendering: identifiers are double-quoted (the table's own spelling), keywords upper case, ``!=``
becomes ``<>``, casts become ``CAST(x AS type)`` with canonical type names (``int4`` -> ``integer``),
strings are single-quoted with ``''`` escaping (and written ``E'...'`` with ``\\\\`` when they contain
a backslash, so the meaning does not depend on ``standard_conforming_strings``; input strings are
read as PostgreSQL reads them with that setting on, its default), and only the parentheses that
precedence needs are written. The result is meant to be wrapped in parentheses by the caller.

Bare identifiers fold to lower case (ASCII only, as PostgreSQL does) and must then equal a column
name; quoted identifiers must equal one exactly. Every rejection is a ``SignalError`` that names the
offending token, its position (1-based character, as PostgreSQL reports) and what is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from signaller.errors import SignalError

__all__ = [
    "CAST_TYPES",
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_LENGTH",
    "MAX_TREE_DEPTH",
    "Arith",
    "Between",
    "Bool",
    "BoolOp",
    "Call",
    "Cast",
    "Column",
    "Compare",
    "Expr",
    "InList",
    "IsTest",
    "Like",
    "Not",
    "Null",
    "Number",
    "String",
    "TypedLiteral",
    "Unary",
    "compile_filter",
    "parse_filter",
    "render",
    "type_category",
]

MAX_LENGTH = 65536
"""Longest filter text accepted, in characters."""
MAX_DEPTH = 32
"""Deepest nesting accepted (parentheses, function calls, NOT and unary signs)."""
MAX_TREE_DEPTH = 160
"""Deepest syntax tree accepted (long chains of ``+`` or ``::`` nest too); keeps checking and rendering shallow."""

FUNCTIONS: Mapping[str, tuple[int, int | None]] = {
    "lower": (1, 1), "upper": (1, 1), "length": (1, 1), "char_length": (1, 1), "abs": (1, 1),
    "coalesce": (1, None), "nullif": (2, 2), "trim": (1, 2), "substr": (2, 3), "date_trunc": (2, 3),
    "date_part": (2, 2), "round": (1, 2), "floor": (1, 1), "ceil": (1, 1),
}
"""Accepted functions (all deterministic) with their (minimum, maximum) number of arguments."""

CAST_TYPES: Mapping[str, str] = {
    "int2": "smallint", "smallint": "smallint", "int4": "integer", "int": "integer", "integer": "integer",
    "int8": "bigint", "bigint": "bigint", "numeric": "numeric", "decimal": "numeric", "real": "real",
    "float4": "real", "float8": "double precision", "double precision": "double precision", "text": "text",
    "varchar": "varchar", "character varying": "varchar", "boolean": "boolean", "bool": "boolean",
    "date": "date", "time": "time", "timestamp": "timestamp", "timestamptz": "timestamptz", "uuid": "uuid",
    "interval": "interval",
}
"""Accepted cast target types, as written -> canonical name used in the output."""

_MODIFIERS: Mapping[str, int] = {"numeric": 2, "varchar": 1, "time": 1, "timestamp": 1, "timestamptz": 1}
"""Canonical types that take a ``(n)`` / ``(p, s)`` modifier, with the maximum number of values."""

_TYPED_LITERALS = ("date", "time", "timestamp", "timestamptz", "interval")
_GRAMMAR_WORDS = frozenset({"and", "or", "not", "is", "null", "true", "false", "in", "between", "like", "ilike",
                            "cast", "as"})
_HINTED_FUNCTIONS: Mapping[str, str] = {
    "substring": "use substr(string, start[, count])",
    "extract": "use date_part('field', source)",
    "ceiling": "use ceil(x)",
    "btrim": "use trim(string[, characters])",
}
# PostgreSQL's reserved and type/function-name keywords: as bare words they are never a column (PostgreSQL
# itself refuses them), so a column so named must be quoted ("order").
_RESERVED = frozenset((
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "both", "case", "cast",
    "check", "collate", "column", "constraint", "create", "current_catalog", "current_date", "current_role",
    "current_time", "current_timestamp", "current_user", "default", "deferrable", "desc", "distinct", "do",
    "else", "end", "except", "false", "fetch", "for", "foreign", "from", "grant", "group", "having", "in",
    "initially", "intersect", "into", "lateral", "leading", "limit", "localtime", "localtimestamp", "not", "null",
    "offset", "on", "only", "or", "order", "placing", "primary", "references", "returning", "select",
    "session_user", "some", "symmetric", "system_user", "table", "then", "to", "trailing", "true", "union",
    "unique", "user", "using", "variadic", "when", "where", "window", "with", "authorization", "binary",
    "collation", "concurrently", "cross", "current_schema", "freeze", "full", "ilike", "inner", "is", "isnull",
    "join", "left", "like", "natural", "notnull", "outer", "overlaps", "right", "similar", "tablesample",
    "verbose",
))
# Other SQL words: a column if the table has one so named, else refused as a keyword.
_SQL_WORDS = frozenset((
    "exists", "values", "row", "escape", "uescape", "at", "zone", "operator", "over", "filter", "within",
    "delete", "insert", "update", "drop", "alter", "truncate", "revoke", "copy", "execute", "call", "prepare",
    "deallocate", "listen", "notify", "lock", "vacuum", "begin", "commit", "rollback", "savepoint", "set",
    "reset", "show",
))

_WHITESPACE = " \t\n\r\f\v"
CompareOp = Literal["=", "<>", "<", "<=", ">", ">="]
ArithOp = Literal["+", "-", "*", "/", "%"]
_COMPARISONS: Mapping[str, CompareOp] = {"=": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_SUMS: Mapping[str, ArithOp] = {"+": "+", "-": "-"}
_PRODUCTS: Mapping[str, ArithOp] = {"*": "*", "/": "/", "%": "%"}
_SIMPLE_ESCAPES: Mapping[str, str] = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_SHOWN_CHARS = 40
_SHOWN_COLUMNS = 60

_ACCEPTED_SYNTAX = (
    "a boolean expression over the table's columns: comparisons (= <> != < <= > >=), AND, OR, NOT, parentheses, "
    "IS [NOT] NULL/TRUE/FALSE, [NOT] IN (literals), [NOT] BETWEEN a AND b, [NOT] LIKE/ILIKE 'pattern', "
    "+ - * / %, literals, casts (:: or CAST) and the functions " + ", ".join(FUNCTIONS)
)
_ACCEPTED_KEYWORDS = ("the keywords AND, OR, NOT, IS, NULL, TRUE, FALSE, IN, BETWEEN, LIKE, ILIKE, CAST, AS, "
                      "DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL; quote a column named like a keyword, "
                      'e.g. "order"')
_ACCEPTED_TYPES = "casts to " + ", ".join(dict.fromkeys(CAST_TYPES))
_ACCEPTED_FUNCTIONS = "the functions " + ", ".join(f"{name}()" for name in FUNCTIONS)

Category = Literal["boolean", "number", "text", "datetime", "interval", "uuid", "other", "unknown"]

_TYPE_CATEGORIES: Mapping[str, Category] = {
    **dict.fromkeys(("bool", "boolean"), "boolean"),
    **dict.fromkeys(("smallint", "integer", "int", "bigint", "int2", "int4", "int8", "numeric", "decimal", "real",
                     "float4", "float8", "double precision", "money", "oid", "smallserial", "serial", "bigserial",
                     "serial2", "serial4", "serial8"), "number"),
    **dict.fromkeys(("text", "varchar", "character varying", "char", "character", "bpchar", "name", "citext"),
                    "text"),
    **dict.fromkeys(("date", "time", "timetz", "timestamp", "timestamptz", "time without time zone",
                     "time with time zone", "timestamp without time zone", "timestamp with time zone"),
                    "datetime"),
    "interval": "interval",
    "uuid": "uuid",
    **dict.fromkeys(("json", "jsonb", "bytea", "xml", "inet", "cidr", "macaddr", "point", "tsvector"), "other"),
}
_FUNCTION_CATEGORIES: Mapping[str, Category] = {
    "lower": "text", "upper": "text", "trim": "text", "substr": "text", "length": "number",
    "char_length": "number", "abs": "number", "round": "number", "floor": "number", "ceil": "number",
    "date_part": "number", "date_trunc": "datetime",
}


# --- the syntax tree ---------------------------------------------------------------------------------------
# ``pos`` is the 0-based offset of the node's first character in the filter text (0 for built trees); it is
# only used in error messages and takes no part in equality.


@dataclass(frozen=True)
class Column:
    """A column reference; ``name`` is the column's exact name."""

    name: str
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Number:
    """An unsigned numeric literal, kept as written (``42``, ``1.5``, ``.5``, ``1e3``)."""

    text: str
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class String:
    """A string literal; ``value`` is the decoded text."""

    value: str
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Bool:
    """``TRUE`` or ``FALSE``."""

    value: bool
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Null:
    """``NULL``."""

    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class TypedLiteral:
    """``DATE '2026-01-01'`` and the like; ``type_name`` is one of date, time, timestamp, timestamptz, interval."""

    type_name: str
    value: str
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Unary:
    """``-x`` or ``+x``."""

    op: Literal["-", "+"]
    operand: Expr
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Arith:
    """``left op right`` with op one of ``+ - * / %``."""

    left: Expr
    op: ArithOp
    right: Expr
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Compare:
    """``left op right``; op is one of ``= <> < <= > >=`` (``!=`` is read as ``<>``)."""

    left: Expr
    op: CompareOp
    right: Expr
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class BoolOp:
    """``a AND b AND ...`` or ``a OR b OR ...`` (at least two items)."""

    op: Literal["AND", "OR"]
    items: tuple[Expr, ...]
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Not:
    """``NOT x``."""

    operand: Expr
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class IsTest:
    """``x IS [NOT] NULL | TRUE | FALSE``."""

    operand: Expr
    negated: bool
    what: Literal["NULL", "TRUE", "FALSE"]
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class InList:
    """``x [NOT] IN (literal, ...)``."""

    operand: Expr
    negated: bool
    items: tuple[Expr, ...]
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Between:
    """``x [NOT] BETWEEN low AND high``."""

    operand: Expr
    negated: bool
    low: Expr
    high: Expr
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Like:
    """``x [NOT] LIKE | ILIKE 'pattern'``."""

    operand: Expr
    negated: bool
    op: Literal["LIKE", "ILIKE"]
    pattern: String
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Cast:
    """``CAST(x AS type)``; ``type_name`` is canonical, modifiers included (``numeric(10,2)``)."""

    operand: Expr
    type_name: str
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True)
class Call:
    """``name(args)`` for a function of ``FUNCTIONS``."""

    name: str
    args: tuple[Expr, ...]
    pos: int = field(default=0, kw_only=True, compare=False, repr=False)


Expr = (Column | Number | String | Bool | Null | TypedLiteral | Unary | Arith | Compare | BoolOp | Not | IsTest
        | InList | Between | Like | Cast | Call)


# --- public API --------------------------------------------------------------------------------------------


def compile_filter(text: str, columns: Mapping[str, str]) -> str:
    """Check ``text`` and return it as normalized SQL, or raise ``SignalError`` saying what is wrong.

    ``columns`` maps each column name of the table to its PostgreSQL type name (``int4``, ``text``,
    ``timestamp with time zone``...); the types only serve to reject conditions that are detectably not
    boolean (``WHERE name``). The result is a boolean expression using only the constructs in the module
    docstring; wrap it in parentheses when combining it with other conditions. Never raises anything but
    ``SignalError``, whatever ``text`` is.
    """
    tree = parse_filter(text, columns)
    try:
        return render(tree)
    except RecursionError:  # pragma: no cover - parse_filter bounds the depth
        raise SignalError(f"filter: too deeply nested; accepted: at most {MAX_DEPTH} levels of nesting") from None


def parse_filter(text: str, columns: Mapping[str, str]) -> Expr:
    """Parse and check ``text`` (see ``compile_filter``) and return its syntax tree."""
    if not isinstance(text, str):
        raise SignalError(f"filter: expected a string, got {type(text).__name__}; accepted: {_ACCEPTED_SYNTAX}")
    if len(text) > MAX_LENGTH:
        raise SignalError(f"filter: {len(text)} characters long; accepted: at most {MAX_LENGTH} characters")
    if not text.strip(_WHITESPACE):
        raise SignalError(f"filter: empty; accepted: {_ACCEPTED_SYNTAX}")
    try:
        tokens = _Lexer(text).tokens()
        tree = _Parser(tokens, columns).parse()
        _check_tree_depth(tree)
        _Checker(columns).condition(tree, "the filter")
    except RecursionError:
        raise SignalError(f"filter: too deeply nested; accepted: at most {MAX_DEPTH} levels of nesting") from None
    return tree


def render(node: Expr) -> str:
    """Normalized SQL text of ``node``: quoted identifiers, upper-case keywords, minimal parentheses.

    Rendering does not validate: only trees returned by ``parse_filter`` are known to be safe.
    """
    match node:
        case Column(name=name):
            return _quote_identifier(name)
        case Number(text=text):
            return text
        case String(value=value):
            return _quote_string(value)
        case Bool(value=value):
            return "TRUE" if value else "FALSE"
        case Null():
            return "NULL"
        case TypedLiteral(type_name=type_name, value=value):
            return f"{type_name.upper()} {_quote_string(value)}"
        case Unary(op=op, operand=operand):
            return op + _wrap(operand, _precedence(operand) < _PRIMARY)
        case Arith(left=left, op=op, right=right):
            level = _precedence(node)
            return f"{_wrap(left, _precedence(left) < level)} {op} {_wrap(right, _precedence(right) <= level)}"
        case Compare(left=left, op=op, right=right):
            return f"{_wrap(left, _precedence(left) <= _COMPARE)} {op} {_wrap(right, _precedence(right) <= _COMPARE)}"
        case BoolOp(op=op, items=items):
            level = _precedence(node)
            return f" {op} ".join(_wrap(item, _precedence(item) <= level) for item in items)
        case Not(operand=operand):
            return "NOT " + _wrap(operand, _precedence(operand) < _NOT)
        case IsTest(operand=operand, negated=negated, what=what):
            return f"{_wrap(operand, _precedence(operand) <= _IS)} IS {'NOT ' if negated else ''}{what}"
        case InList(operand=operand, negated=negated, items=items):
            listed = ", ".join(render(item) for item in items)
            return f"{_wrap(operand, _precedence(operand) <= _PREDICATE)} {'NOT ' if negated else ''}IN ({listed})"
        case Between(operand=operand, negated=negated, low=low, high=high):
            bounds = f"{_wrap(low, _precedence(low) < _SUM)} AND {_wrap(high, _precedence(high) < _SUM)}"
            return f"{_wrap(operand, _precedence(operand) <= _PREDICATE)} {'NOT ' if negated else ''}BETWEEN {bounds}"
        case Like(operand=operand, negated=negated, op=op, pattern=pattern):
            return (f"{_wrap(operand, _precedence(operand) <= _PREDICATE)} {'NOT ' if negated else ''}{op} "
                    f"{render(pattern)}")
        case Cast(operand=operand, type_name=type_name):
            return f"CAST({render(operand)} AS {type_name})"
        case Call(name=name, args=args):
            return f"{name}({', '.join(render(arg) for arg in args)})"
    raise TypeError(f"not a filter node: {node!r}")  # pragma: no cover - exhaustive above


# --- rendering helpers -------------------------------------------------------------------------------------

_OR, _AND, _NOT, _IS, _COMPARE, _PREDICATE, _SUM, _PRODUCT, _UNARY, _PRIMARY = range(1, 11)


def _precedence(node: Expr) -> int:
    """PostgreSQL's binding strength of ``node``'s outermost operator (higher binds tighter)."""
    match node:
        case BoolOp(op="OR"):
            return _OR
        case BoolOp():
            return _AND
        case Not():
            return _NOT
        case IsTest():
            return _IS
        case Compare():
            return _COMPARE
        case InList() | Between() | Like():
            return _PREDICATE
        case Arith(op="+" | "-"):
            return _SUM
        case Arith():
            return _PRODUCT
        case Unary():
            return _UNARY
    return _PRIMARY


def _wrap(node: Expr, parenthesize: bool) -> str:
    text = render(node)
    return f"({text})" if parenthesize else text


def _quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_string(value: str) -> str:
    if "\\" in value:
        return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
    return "'" + value.replace("'", "''") + "'"


def _show(text: str) -> str:
    shown = text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."
    return repr(shown)


def _at(pos: int | None) -> str:
    return "at the end of the filter" if pos is None else f"at character {pos + 1}"


def _error(problem: str, pos: int | None, accepted: str) -> SignalError:
    return SignalError(f"filter: {problem} {_at(pos)}; accepted: {accepted}")


def _fold(word: str) -> str:
    """PostgreSQL's folding of an unquoted identifier: ASCII letters to lower case, nothing else."""
    return "".join(chr(ord(char) + 32) if "A" <= char <= "Z" else char for char in word)


# --- lexer -------------------------------------------------------------------------------------------------

TokenKind = Literal["word", "qident", "string", "number", "op", "end"]


@dataclass(frozen=True)
class _Token:
    kind: TokenKind
    value: str  # word: folded; qident: exact name; string: decoded; number/op: as written
    raw: str  # as written
    pos: int


def _ident_start(char: str) -> bool:
    return ("a" <= char <= "z") or ("A" <= char <= "Z") or char == "_" or ord(char) >= 0x80


def _ident_continue(char: str) -> bool:
    return _ident_start(char) or "0" <= char <= "9"


def _digit(char: str) -> bool:
    return "0" <= char <= "9"


class _Lexer:
    """Splits the text into tokens, refusing everything that is not part of the accepted grammar."""

    def __init__(self, text: str) -> None:
        self.text = text

    def tokens(self) -> list[_Token]:
        text, i = self.text, 0
        out: list[_Token] = []
        for index, char in enumerate(text):
            if char == "\x00" or 0xD800 <= ord(char) <= 0xDFFF:
                raise _error(f"invalid character {char!r}", index, "text without NUL characters or lone surrogates")
        while i < len(text):
            char = text[i]
            if char in _WHITESPACE:
                i += 1
            elif text.startswith("--", i) or text.startswith("/*", i):
                raise _error(f"comment {_show(text[i:i + 2])}", i,
                             "no comments: the filter is a single boolean expression")
            elif char == ";":
                raise _error("statement separator ';'", i, "a single boolean expression, without ';'")
            elif char == "$":
                raise _error(f"'$' ({_show(text[i:i + 10])})", i,
                             "no dollar quoting and no $n parameters; write strings as 'text' with '' for a quote")
            elif char == "'":
                value, end = self._string(i, i, backslash_escapes=False)
                out.append(_Token("string", value, text[i:end], i))
                i = end
            elif char == '"':
                i = self._quoted_identifier(i, out)
            elif _digit(char) or (char == "." and i + 1 < len(text) and _digit(text[i + 1])):
                i = self._number(i, out)
            elif _ident_start(char):
                i = self._word(i, out)
            else:
                i = self._operator(i, out)
        out.append(_Token("end", "", "", len(text)))
        return out

    def _string(self, start: int, quote: int, backslash_escapes: bool) -> tuple[str, int]:
        """Read the string whose opening quote is at ``quote``; return (value, offset after it)."""
        text, i = self.text, quote + 1
        parts: list[str] = []
        while i < len(text):
            char = text[i]
            if char == "'":
                if text.startswith("''", i):
                    parts.append("'")
                    i += 2
                    continue
                return "".join(parts), i + 1
            if char == "\\" and backslash_escapes:
                if i + 1 >= len(text):
                    break
                escaped = text[i + 1]
                if escaped in "01234567xuU":
                    raise _error(f"numeric escape {_show(text[i:i + 6])} in an E'' string", i,
                                 "the escapes \\\\ \\' \\b \\f \\n \\r \\t, or plain characters")
                parts.append(_SIMPLE_ESCAPES.get(escaped, escaped))
                i += 2
                continue
            parts.append(char)
            i += 1
        raise _error(f"unterminated string {_show(text[start:])}", start,
                     "strings closed by ' (write a quote inside a string as '')")

    def _quoted_identifier(self, start: int, out: list[_Token]) -> int:
        text, i = self.text, start + 1
        parts: list[str] = []
        while i < len(text):
            if text[i] == '"':
                if text.startswith('""', i):
                    parts.append('"')
                    i += 2
                    continue
                name = "".join(parts)
                if not name:
                    raise _error('empty quoted identifier ""', start, "a column name between double quotes")
                out.append(_Token("qident", name, text[start:i + 1], start))
                return i + 1
            parts.append(text[i])
            i += 1
        raise _error(f"unterminated quoted identifier {_show(text[start:])}", start,
                     'column names closed by " (write a double quote inside as "")')

    def _number(self, start: int, out: list[_Token]) -> int:
        text, i = self.text, start
        while i < len(text) and _digit(text[i]):
            i += 1
        if i < len(text) and text[i] == ".":
            i += 1
            while i < len(text) and _digit(text[i]):
                i += 1
        if i < len(text) and text[i] in "eE":
            j = i + 1
            if j < len(text) and text[j] in "+-":
                j += 1
            if j < len(text) and _digit(text[j]):
                i = j
                while i < len(text) and _digit(text[i]):
                    i += 1
        if i < len(text) and (_ident_continue(text[i]) or text[i] in "$."):
            raise _error(f"malformed number {_show(text[start:i + 1])}", start,
                         "decimal numbers such as 42, 1.5, .5 or 1e3")
        out.append(_Token("number", text[start:i], text[start:i], start))
        return i

    def _word(self, start: int, out: list[_Token]) -> int:
        text, i = self.text, start
        while i < len(text) and _ident_continue(text[i]):
            i += 1
        word = text[start:i]
        if i < len(text) and text[i] == "$":
            raise _error(f"'$' in {_show(text[start:i + 1])}", i,
                         "identifiers made of letters, digits and _ (quote other column names)")
        folded = _fold(word)
        if i < len(text) and text[i] == "'" and folded in ("e", "b", "x", "n", "u"):
            if folded != "e":
                raise _error(f"{word}'' string constant", start, "'text' or E'text' strings")
            value, end = self._string(start, i, backslash_escapes=True)
            out.append(_Token("string", value, text[start:end], start))
            return end
        out.append(_Token("word", folded, word, start))
        return i

    def _operator(self, start: int, out: list[_Token]) -> int:
        text = self.text
        two = text[start:start + 2]
        if two in ("::", "<=", ">=", "<>", "!="):
            out.append(_Token("op", two, two, start))
            return start + 2
        char = text[start]
        if char in "=<>+-*/%(),":
            out.append(_Token("op", char, char, start))
            return start + 1
        if char == ".":
            raise _error("'.'", start, "plain column names (no table or schema qualification)")
        if char == ":":
            raise _error("':'", start, "'::' casts (no :name parameters)")
        raise _error(f"unexpected character {char!r}", start, _ACCEPTED_SYNTAX)


# --- parser ------------------------------------------------------------------------------------------------


class _Parser:
    """Recursive descent over the grammar of the module docstring, with PostgreSQL's precedence."""

    def __init__(self, tokens: Sequence[_Token], columns: Mapping[str, str]) -> None:
        self.tokens = tokens
        self.columns = columns
        self.index = 0
        self.depth = 0

    # token helpers

    @property
    def token(self) -> _Token:
        return self.tokens[self.index]

    def _advance(self) -> _Token:
        token = self.tokens[self.index]
        if token.kind != "end":
            self.index += 1
        return token

    def _peek(self, ahead: int = 1) -> _Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def _is_word(self, *words: str, token: _Token | None = None) -> bool:
        token = token or self.token
        return token.kind == "word" and token.value in words

    def _is_op(self, *ops: str, token: _Token | None = None) -> bool:
        token = token or self.token
        return token.kind == "op" and token.value in ops

    def _expect_op(self, op: str, context: str) -> _Token:
        if not self._is_op(op):
            raise self._unexpected(f"'{op}' {context}")
        return self._advance()

    def _pos(self, token: _Token) -> int | None:
        return None if token.kind == "end" else token.pos

    def _unexpected(self, expected: str) -> SignalError:
        token = self.token
        if token.kind == "end":
            return _error(f"missing {expected}", None, _ACCEPTED_SYNTAX)
        if token.kind == "word" and token.value in _RESERVED | _SQL_WORDS and token.value not in _GRAMMAR_WORDS:
            return self._keyword_error(token)
        return _error(f"unexpected {_show(token.raw)} where {expected} is expected", token.pos, _ACCEPTED_SYNTAX)

    def _keyword_error(self, token: _Token) -> SignalError:
        word = token.raw.upper()
        if token.value in ("select", "exists", "values", "from", "union", "with", "array"):
            return _error(f"SQL keyword {word} (subqueries are not accepted)", token.pos, _ACCEPTED_KEYWORDS)
        if token.value in ("isnull", "notnull"):
            return _error(f"SQL keyword {word}", token.pos, "IS NULL / IS NOT NULL")
        return _error(f"SQL keyword {word}", token.pos, _ACCEPTED_KEYWORDS)

    def _nest(self, token: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _error(f"more than {MAX_DEPTH} levels of nesting", token.pos,
                         f"at most {MAX_DEPTH} levels of parentheses, function calls, NOT and signs")

    # grammar

    def parse(self) -> Expr:
        tree = self._condition()
        if self.token.kind != "end":
            if self._is_op(")"):
                raise _error("unbalanced ')'", self.token.pos, "parentheses that match")
            raise self._unexpected("an operator or the end of the filter")
        return tree

    def _condition(self) -> Expr:
        return self._or()

    def _or(self) -> Expr:
        start = self.token
        items = [self._and()]
        while self._is_word("or"):
            self._advance()
            items.append(self._and())
        return items[0] if len(items) == 1 else BoolOp("OR", tuple(items), pos=start.pos)

    def _and(self) -> Expr:
        start = self.token
        items = [self._not()]
        while self._is_word("and"):
            self._advance()
            items.append(self._not())
        return items[0] if len(items) == 1 else BoolOp("AND", tuple(items), pos=start.pos)

    def _not(self) -> Expr:
        if self._is_word("not"):
            token = self._advance()
            self._nest(token)
            operand = self._not()
            self.depth -= 1
            return Not(operand, pos=token.pos)
        return self._is()

    def _is(self) -> Expr:
        start = self.token
        operand = self._compare()
        if not self._is_word("is"):
            return operand
        self._advance()
        negated = self._is_word("not")
        if negated:
            self._advance()
        if not self._is_word("null", "true", "false"):
            if self._is_word("distinct", "unknown", "document", "normalized", "json", "of"):
                raise _error(f"IS {'NOT ' if negated else ''}{self.token.raw.upper()}", self.token.pos,
                             "IS [NOT] NULL, IS [NOT] TRUE, IS [NOT] FALSE")
            raise self._unexpected("NULL, TRUE or FALSE after IS")
        what = self._advance().value.upper()
        node = IsTest(operand, negated, "NULL" if what == "NULL" else "TRUE" if what == "TRUE" else "FALSE",
                      pos=start.pos)
        if self._is_word("is"):
            raise _error("a second IS", self.token.pos, "one IS test per operand; add parentheses: (x IS NULL) IS ...")
        return node

    def _compare(self) -> Expr:
        start = self.token
        left = self._predicate()
        if self.token.kind != "op" or self.token.value not in _COMPARISONS:
            return left
        op = _COMPARISONS[self._advance().value]
        right = self._predicate()
        if self.token.kind == "op" and self.token.value in _COMPARISONS:
            raise _error(f"chained comparison {_show(self.token.raw)}", self.token.pos,
                         "one comparison per operand pair; combine comparisons with AND/OR")
        return Compare(left, op, right, pos=start.pos)

    def _predicate(self) -> Expr:
        start = self.token
        operand = self._sum()
        negated = False
        if self._is_word("not"):
            if not self._is_word("in", "between", "like", "ilike", token=self._peek()):
                self._advance()
                raise self._unexpected("IN, BETWEEN, LIKE or ILIKE after NOT")
            self._advance()
            negated = True
        node: Expr
        if self._is_word("in"):
            node = InList(operand, negated, self._in_items(), pos=start.pos)
        elif self._is_word("between"):
            self._advance()
            if self._is_word("symmetric", "asymmetric"):
                raise _error(f"BETWEEN {self.token.raw.upper()}", self.token.pos, "x [NOT] BETWEEN low AND high")
            low = self._sum()
            if not self._is_word("and"):
                raise self._unexpected("AND of BETWEEN")
            self._advance()
            node = Between(operand, negated, low, self._sum(), pos=start.pos)
        elif self._is_word("like", "ilike"):
            op: Literal["LIKE", "ILIKE"] = "LIKE" if self._advance().value == "like" else "ILIKE"
            pattern_token = self.token
            if pattern_token.kind != "string":
                raise self._unexpected(f"a 'pattern' string after {op}")
            self._advance()
            node = Like(operand, negated, op, String(pattern_token.value, pos=pattern_token.pos), pos=start.pos)
        else:
            return operand
        if self._is_word("in", "between", "like", "ilike", "not", "similar", "escape"):
            test = {InList: "IN", Between: "BETWEEN", Like: "LIKE"}.get(type(node), "")
            raise _error(f"{self.token.raw.upper()} right after an {test} test", self.token.pos,
                         "one IN/BETWEEN/LIKE test per operand (no ESCAPE, no SIMILAR TO); add parentheses")
        return node

    def _in_items(self) -> tuple[Expr, ...]:
        self._advance()
        self._expect_op("(", "after IN")
        items: list[Expr] = []
        while True:
            start = self.token
            if self._is_word("select", "values", "with"):
                raise self._keyword_error(start)
            item = self._sum()
            if not _is_literal(item):
                raise _error(f"{_show(start.raw)} in an IN list", start.pos,
                             "IN (literal, ...): numbers, 'strings', TRUE, FALSE, NULL, typed literals")
            items.append(item)
            if self._is_op(","):
                self._advance()
                continue
            self._expect_op(")", "or ',' in the IN list")
            return tuple(items)

    def _sum(self) -> Expr:
        start = self.token
        node = self._product()
        while self._is_op("+", "-"):
            op = _SUMS[self._advance().value]
            node = Arith(node, op, self._product(), pos=start.pos)
        return node

    def _product(self) -> Expr:
        start = self.token
        node = self._unary()
        while self._is_op("*", "/", "%"):
            op = _PRODUCTS[self._advance().value]
            node = Arith(node, op, self._unary(), pos=start.pos)
        return node

    def _unary(self) -> Expr:
        if self._is_op("+", "-"):
            token = self._advance()
            self._nest(token)
            operand = self._unary()
            self.depth -= 1
            return Unary("-" if token.value == "-" else "+", operand, pos=token.pos)
        return self._cast()

    def _cast(self) -> Expr:
        start = self.token
        node = self._primary()
        while self._is_op("::"):
            self._advance()
            node = Cast(node, self._type(), pos=start.pos)
        return node

    def _type(self) -> str:
        token = self.token
        if token.kind != "word":
            raise self._unexpected("a type name")
        self._advance()
        name = token.value
        if name in ("double", "character") and self._is_word("precision" if name == "double" else "varying"):
            name = f"{name} {self._advance().value}"
        canonical = CAST_TYPES.get(name)
        if canonical is None:
            raise _error(f"type {_show(token.raw)}", token.pos, _ACCEPTED_TYPES)
        if self._is_op("("):
            limit = _MODIFIERS.get(canonical, 0)
            if not limit:
                raise _error(f"a modifier on type {canonical}", self.token.pos,
                             "modifiers only on " + ", ".join(_MODIFIERS))
            self._advance()
            values: list[str] = []
            while True:
                number = self.token
                if number.kind != "number" or not number.value.isdigit():
                    raise self._unexpected(f"an integer modifier of {canonical}")
                values.append(str(int(number.value)))
                self._advance()
                if self._is_op(",") and len(values) < limit:
                    self._advance()
                    continue
                self._expect_op(")", f"after the modifiers of {canonical}")
                break
            canonical = f"{canonical}({','.join(values)})"
        return canonical

    def _primary(self) -> Expr:
        token = self.token
        if token.kind == "number":
            self._advance()
            return Number(token.value, pos=token.pos)
        if token.kind == "string":
            self._advance()
            if self.token.kind == "string":
                raise _error(f"string {_show(self.token.raw)} right after another string", self.token.pos,
                             "one string literal per value (no implicit concatenation)")
            return String(token.value, pos=token.pos)
        if token.kind == "qident":
            return self._quoted_column(token)
        if self._is_op("("):
            self._advance()
            self._nest(token)
            if self._is_word("select", "values", "with", "table"):
                raise self._keyword_error(self.token)
            inner = self._condition()
            self._expect_op(")", "to close the parenthesis")
            self.depth -= 1
            return inner
        if token.kind == "word":
            return self._word(token)
        if token.kind == "end":
            raise self._unexpected("a value")
        raise self._unexpected("a value (column, literal, function call or parenthesis)")

    def _word(self, token: _Token) -> Expr:
        word = token.value
        following = self._peek()
        if word in ("true", "false"):
            self._advance()
            return Bool(word == "true", pos=token.pos)
        if word == "null":
            self._advance()
            return Null(pos=token.pos)
        if word in _TYPED_LITERALS and following.kind == "string":
            self._advance()
            self._advance()
            return TypedLiteral(word, following.value, pos=token.pos)
        if word == "cast" and self._is_op("(", token=following):
            return self._cast_call(token)
        if self._is_op("(", token=following):
            return self._call(token)
        if word in _RESERVED:
            raise self._keyword_error(token)
        if word in self.columns:
            self._advance()
            return Column(word, pos=token.pos)
        if word in _SQL_WORDS:
            raise self._keyword_error(token)
        raise _error(f"unknown column {_show(token.raw)}{self._column_hint(word)}", token.pos, self._columns_text())

    def _quoted_column(self, token: _Token) -> Expr:
        if self._is_op("(", token=self._peek()):
            raise _error(f"quoted function name {token.raw}", token.pos, _ACCEPTED_FUNCTIONS + " (unquoted)")
        if token.value in self.columns:
            self._advance()
            return Column(token.value, pos=token.pos)
        hint = ""
        matches = [name for name in self.columns if name.casefold() == token.value.casefold()]
        if matches:
            hint = f" (quoted identifiers are case-sensitive: did you mean {_quote_identifier(matches[0])}?)"
        raise _error(f"unknown column {token.raw}{hint}", token.pos, self._columns_text())

    def _column_hint(self, folded: str) -> str:
        matches = [name for name in self.columns if name.casefold() == folded.casefold()]
        if matches:
            return (f" (unquoted names fold to lower case: write {_quote_identifier(matches[0])} "
                    "to match that column)")
        return ""

    def _columns_text(self) -> str:
        names = list(self.columns)
        if not names:
            return "columns of the table, which has none"
        shown = ", ".join(names[:_SHOWN_COLUMNS])
        more = f" and {len(names) - _SHOWN_COLUMNS} more" if len(names) > _SHOWN_COLUMNS else ""
        return f"columns of the table: {shown}{more}"

    def _cast_call(self, token: _Token) -> Expr:
        self._advance()
        self._advance()
        self._nest(token)
        operand = self._condition()
        if not self._is_word("as"):
            raise self._unexpected("AS in CAST(x AS type)")
        self._advance()
        type_name = self._type()
        self._expect_op(")", "to close CAST(")
        self.depth -= 1
        return Cast(operand, type_name, pos=token.pos)

    def _call(self, token: _Token) -> Expr:
        name = token.value
        if name not in FUNCTIONS:
            if name in _HINTED_FUNCTIONS:
                raise _error(f"function {_show(token.raw)}", token.pos, _HINTED_FUNCTIONS[name])
            if name in _RESERVED or name in _SQL_WORDS:
                raise self._keyword_error(token)
            raise _error(f"unknown function {_show(token.raw)}", token.pos, _ACCEPTED_FUNCTIONS)
        self._advance()
        self._advance()
        self._nest(token)
        args: list[Expr] = []
        if not self._is_op(")"):
            while True:
                if self._is_word("distinct", "all", "variadic", "select", "from", "both", "leading", "trailing"):
                    raise self._keyword_error(self.token)
                args.append(self._condition())
                if self._is_op(","):
                    self._advance()
                    continue
                break
        self._expect_op(")", f"or ',' in the arguments of {name}(")
        self.depth -= 1
        low, high = FUNCTIONS[name]
        if len(args) < low or (high is not None and len(args) > high):
            count = f"{low}" if low == high else f"{low} or more" if high is None else f"{low} to {high}"
            raise _error(f"{name}() with {len(args)} argument{'s' if len(args) != 1 else ''}", token.pos,
                         f"{name}() takes {count} argument{'s' if count != '1' else ''}")
        return Call(name, tuple(args), pos=token.pos)


def _children(node: Expr) -> tuple[Expr, ...]:
    match node:
        case Unary(operand=operand) | Not(operand=operand) | IsTest(operand=operand) | Cast(operand=operand):
            return (operand,)
        case Arith(left=left, right=right) | Compare(left=left, right=right):
            return (left, right)
        case BoolOp(items=items) | Call(args=items):
            return items
        case InList(operand=operand, items=items):
            return (operand, *items)
        case Between(operand=operand, low=low, high=high):
            return (operand, low, high)
        case Like(operand=operand, pattern=pattern):
            return (operand, pattern)
    return ()


def _check_tree_depth(tree: Expr) -> None:
    """Refuse trees deeper than ``MAX_TREE_DEPTH`` (walked without recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            raise _error(f"an expression nested more than {MAX_TREE_DEPTH} operators deep", node.pos,
                         "shorter chains of operators and casts, or fewer nested parentheses")
        stack.extend((child, depth + 1) for child in _children(node))


def _is_literal(node: Expr) -> bool:
    if isinstance(node, (Number, String, Bool, Null, TypedLiteral)):
        return True
    return isinstance(node, Unary) and isinstance(node.operand, Number)


# --- checker -----------------------------------------------------------------------------------------------


def type_category(pg_type: str) -> Category:
    """Coarse category of a PostgreSQL type name (``int4``, ``character varying(20)``, ``_text``...)."""
    if not isinstance(pg_type, str):
        return "unknown"
    name = pg_type.strip().lower()
    if name.endswith("]") or name.startswith("_"):
        return "other"
    name = re.sub(r"\([^)]*\)", "", name).removeprefix("pg_catalog.").strip().strip('"')
    return _TYPE_CATEGORIES.get(" ".join(name.split()), "unknown")


class _Checker:
    """Rejects what is detectably not boolean where a condition is needed, and arithmetic on non-numbers."""

    def __init__(self, columns: Mapping[str, str]) -> None:
        self.columns = columns

    def condition(self, node: Expr, where: str) -> None:
        category = self.category(node)
        if isinstance(node, Bool) or (category in ("boolean", "unknown") and not _is_literal(node)):
            return
        if isinstance(node, Column):
            raise _error(f"column {_quote_identifier(node.name)} ({self.columns.get(node.name, '?')}) "
                         f"used as {where}", node.pos,
                         f"a condition on it, e.g. {_quote_identifier(node.name)} = <value> or "
                         f"{_quote_identifier(node.name)} IS NOT NULL")
        if _is_literal(node):
            raise _error(f"the literal {render(node)} used as {where}", node.pos,
                         "a condition on the table's columns, e.g. <column> = <value>; TRUE and FALSE are accepted")
        raise _error(f"a {category} expression ({_show(render(node))}) used as {where}", node.pos,
                     "a condition: a comparison, IS [NOT] NULL, [NOT] IN, [NOT] BETWEEN, [NOT] LIKE, AND, OR, NOT")

    def category(self, node: Expr) -> Category:
        match node:
            case Column(name=name):
                return type_category(self.columns.get(name, ""))
            case Number():
                return "number"
            case String() | Null():
                return "unknown"
            case Bool():
                return "boolean"
            case TypedLiteral(type_name=type_name):
                return "interval" if type_name == "interval" else "datetime"
            case Unary(op=op, operand=operand):
                category = self.category(operand)
                self._arithmetic(op, operand, category, ("number", "interval", "unknown"))
                return category
            case Arith(left=left, op=op, right=right):
                return self._arith(left, op, right)
            case BoolOp(op=op, items=items):
                for item in items:
                    self.condition(item, f"an operand of {op}")
                return "boolean"
            case Not(operand=operand):
                self.condition(operand, "the operand of NOT")
                return "boolean"
            case IsTest(operand=operand, what=what):
                if what == "NULL":
                    self.category(operand)
                else:
                    self.condition(operand, f"the operand of IS {what}")
                return "boolean"
            case Compare(left=left, right=right):
                self.category(left)
                self.category(right)
                return "boolean"
            case InList(operand=operand, items=items):
                for part in (operand, *items):
                    self.category(part)
                return "boolean"
            case Between(operand=operand, low=low, high=high):
                for part in (operand, low, high):
                    self.category(part)
                return "boolean"
            case Like(operand=operand):
                self.category(operand)
                return "boolean"
            case Cast(operand=operand, type_name=type_name):
                self.category(operand)
                return type_category(type_name)
            case Call(name=name, args=args):
                categories = [self.category(arg) for arg in args]
                if name in ("coalesce", "nullif"):
                    return next((category for category in categories if category != "unknown"), "unknown")
                return _FUNCTION_CATEGORIES.get(name, "unknown")
        return "unknown"  # pragma: no cover - exhaustive above

    def _arith(self, left: Expr, op: str, right: Expr) -> Category:
        left_category, right_category = self.category(left), self.category(right)
        allowed: tuple[Category, ...] = (
            ("number", "datetime", "interval", "unknown") if op in "+-" else ("number", "interval", "unknown"))
        self._arithmetic(op, left, left_category, allowed)
        self._arithmetic(op, right, right_category, allowed)
        categories = {left_category, right_category}
        if "datetime" in categories:
            return "interval" if op == "-" and categories == {"datetime"} else "datetime"
        if "interval" in categories:
            return "interval"
        return "number" if categories == {"number"} else "unknown"

    def _arithmetic(self, op: str, operand: Expr, category: Category, allowed: tuple[Category, ...]) -> None:
        if category in allowed:
            return
        raise _error(f"operator {op!r} applied to a {category} operand ({_show(render(operand))})", operand.pos,
                     "+ - * / % on numbers, + and - on dates, timestamps and intervals")
