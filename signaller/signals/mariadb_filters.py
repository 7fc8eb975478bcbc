"""The safe ``additional-conditions`` filter for MariaDB / MySQL: a boolean expression over one table's columns.

The MariaDB counterpart of ``signals/filters.py`` (PostgreSQL's, on pglast), with the same approach:
``compile_mariadb_filter(text, sql_types)`` has a real SQL parser (sqlglot, MySQL dialect) read the text,
walks every node of the tree with an allow-list, and writes the checked tree back as SQL (identifiers
backquoted, strings re-escaped). Only that text ever reaches MariaDB; it is parsed once more here and
must give the very tree that was checked. It is written for the session ``sql_mode`` the chunk
connection sets (``sources/mariadb/chunk_sql.SESSION_SQL_MODE``: backslash escapes, ``"`` quotes strings,
``||`` is OR). Accepted:

* the table's own columns, unqualified (MariaDB column names are case-insensitive: ``ID`` is ``id``);
  never ``t.col``, ``*``, ``@variables``, ``@@system_variables`` or ``?`` placeholders;
* string, number, ``TRUE``, ``FALSE`` and ``NULL`` literals, hex and bit literals;
* ``AND`` (``&&``), ``OR`` (``||``), ``NOT`` (``!``), ``XOR``, comparisons (= <> != < <= > >= <=>),
  ``IS [NOT] NULL/TRUE/FALSE``, ``[NOT] IN (values)``, ``[NOT] BETWEEN``, ``[NOT] LIKE [ESCAPE]``,
  arithmetic (+ - * / % DIV MOD), row values ``(a, b) = (1, 2)``, ``CASE``, ``IF``, ``COALESCE``,
  ``NULLIF``, ``GREATEST``, ``LEAST``, ``CAST`` to the types of :data:`CAST_TYPES`, ``INTERVAL n unit``;
* the side-effect-free functions of :data:`FUNCTIONS`.

Everything else is refused with a ``SignalError`` naming the construct, its position when known
(1-based character) and what is accepted: subqueries, several statements, comments (MariaDB runs
``/*! ... */``), variables, ``COLLATE``, character-set introducers, regular expressions, full-text
search, functions outside the list (``SLEEP``, ``BENCHMARK``, ``LOAD_FILE``, ``USER()``...), and
conditions that are detectably not boolean (``WHERE name``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import TokenType

from signaller.errors import SignalError
from signaller.signals.filter_text import Category, check_text, columns_text, filter_error, show

__all__ = ["CAST_TYPES", "FUNCTIONS", "MAX_DEPTH", "compile_mariadb_filter", "mariadb_type_category"]

MAX_DEPTH = 64
"""Deepest syntax tree accepted (nodes from the root to the deepest leaf; long AND/OR chains and IN lists
count once). sqlglot parses and prints recursively; this keeps both far below Python's recursion limit."""
DIALECT = "mysql"

_LOGIC: Mapping[type[exp.Expr], str] = {exp.And: "AND", exp.Or: "OR", exp.Xor: "XOR", exp.Not: "NOT"}
_PREDICATES = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.Is, exp.In, exp.Between,
               exp.Like)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.Neg)
_CONDITIONALS = (exp.Case, exp.If, exp.Coalesce, exp.Nullif, exp.Greatest, exp.Least)
_STRUCTURE = (exp.Paren, exp.Tuple, exp.Escape, exp.Null, exp.Boolean, exp.Literal, exp.HexString, exp.BitString,
              exp.Interval, exp.Cast, exp.DataType, exp.DataTypeParam, exp.Identifier, exp.Column, exp.Var)

FUNCTIONS: Mapping[type[exp.Expr], tuple[str, Category]] = {
    exp.Lower: ("LOWER", "text"), exp.Upper: ("UPPER", "text"), exp.Length: ("CHAR_LENGTH", "number"),
    exp.Substring: ("SUBSTRING", "text"), exp.Trim: ("TRIM", "text"), exp.Concat: ("CONCAT", "text"),
    exp.Left: ("LEFT", "text"), exp.Right: ("RIGHT", "text"), exp.Abs: ("ABS", "number"),
    exp.Round: ("ROUND", "number"), exp.Floor: ("FLOOR", "number"), exp.Ceil: ("CEIL", "number"),
    exp.CurrentDate: ("CURRENT_DATE", "datetime"), exp.CurrentTimestamp: ("CURRENT_TIMESTAMP", "datetime"),
    exp.Year: ("YEAR", "number"), exp.Month: ("MONTH", "number"), exp.Day: ("DAY", "number"),
    exp.DateAdd: ("DATE_ADD", "datetime"), exp.DateSub: ("DATE_SUB", "datetime"),
    exp.JSONExtract: ("JSON_EXTRACT", "text"), exp.JSONValue: ("JSON_VALUE", "text"),
}
"""Accepted functions, as the parser's node classes: deterministic or the current time, without side effects,
each result bounded by its inputs' size (no ``REPEAT``, ``LPAD``, ``SPACE``)."""
_ANONYMOUS: Mapping[str, Category] = {"NOW": "datetime", "LTRIM": "text", "RTRIM": "text", "DATE": "datetime",
                                      "JSON_UNQUOTE": "text"}
"""Accepted functions the parser has no node class for (by upper-case name)."""
_JSON_PATH = (exp.JSONPath, exp.JSONPathRoot, exp.JSONPathKey, exp.JSONPathSubscript, exp.JSONPathWildcard)

CAST_TYPES: Mapping[str, Category] = {
    **dict.fromkeys(("CHAR", "VARCHAR", "TEXT", "NCHAR"), "text"),
    **dict.fromkeys(("BIGINT", "UBIGINT", "INT", "UINT", "DECIMAL", "DOUBLE", "FLOAT"), "number"),
    **dict.fromkeys(("DATE", "DATETIME", "TIME", "TIMESTAMP"), "datetime"),
    **dict.fromkeys(("BINARY", "VARBINARY"), "other"),
}
"""Accepted ``CAST`` target types (sqlglot's names: ``SIGNED`` is ``BIGINT``, ``UNSIGNED`` ``UBIGINT``)."""
_INTERVAL_UNITS = frozenset({"MICROSECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"})
_MAX_TYPE_PARAM = 65535
_REFUSED_TOKENS: Mapping[TokenType, str] = {
    TokenType.SEMICOLON: "statement separator ';'",
    TokenType.PLACEHOLDER: "placeholder",
    TokenType.PARAMETER: "variable",
    TokenType.SESSION_PARAMETER: "system variable",
    TokenType.COLON: "placeholder",
}

ACCEPTED = (
    "a boolean expression over the table's columns: comparisons (= <> != < <= > >= <=>), AND, OR, NOT, XOR, "
    "IS [NOT] NULL/TRUE/FALSE, [NOT] IN (...), [NOT] BETWEEN, [NOT] LIKE [ESCAPE], + - * / % DIV MOD, CASE, IF, "
    "COALESCE, NULLIF, GREATEST, LEAST, CAST, INTERVAL, literals and the functions "
    + ", ".join(f"{name}()" for name, _ in FUNCTIONS.values()) + ", " + ", ".join(f"{n}()" for n in _ANONYMOUS)
)
_ACCEPTED_FUNCTIONS = "the functions " + ", ".join([*(n for n, _ in FUNCTIONS.values()), *_ANONYMOUS])
_ACCEPTED_CONDITION = ("a condition: a comparison, IS [NOT] NULL, [NOT] IN, [NOT] BETWEEN, [NOT] LIKE, AND, OR, NOT, "
                       "a boolean column, TRUE or FALSE")

_TYPE_CATEGORIES: Mapping[str, Category] = {
    **dict.fromkeys(("bool", "boolean"), "boolean"),
    **dict.fromkeys(("tinyint", "smallint", "mediumint", "int", "integer", "bigint", "decimal", "numeric", "dec",
                     "fixed", "float", "double", "real", "bit"), "number"),
    **dict.fromkeys(("char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json",
                     "uuid", "inet4", "inet6"), "text"),
    **dict.fromkeys(("date", "datetime", "timestamp", "time", "year"), "datetime"),
}


def mariadb_type_category(sql_type: str) -> Category:
    """Coarse category of a MariaDB ``COLUMN_TYPE`` (``int(11) unsigned``, ``varchar(20)``, ``enum('a')``):
    ``tinyint(1)`` and ``bit(1)`` (MariaDB's booleans) are boolean."""
    if not isinstance(sql_type, str):
        return "unknown"
    text = sql_type.strip().lower()
    if re.fullmatch(r"(tinyint|bit)\(1\)( unsigned)?( zerofill)?", text):
        return "boolean"
    base = re.split(r"[\s(]", text, maxsplit=1)[0]
    return _TYPE_CATEGORIES.get(base, "other" if base else "unknown")


def compile_mariadb_filter(text: str, sql_types: Mapping[str, str]) -> str:
    """Check ``text`` and return it as normalized MariaDB SQL, or raise ``SignalError`` saying what is wrong.

    ``sql_types`` maps each column of the table to its ``COLUMN_TYPE``; the names are the columns a filter
    may use (matched case-insensitively, written back with the table's spelling), the types only serve to
    refuse conditions that are detectably not boolean. The result is one boolean expression using only the
    constructs in the module docstring, with every ``%`` meant literally (run it without a driver parameter
    list); wrap it in parentheses when combining it with other conditions. Never raises anything but
    ``SignalError``, whatever ``text`` is; the work is bounded by ``MAX_LENGTH`` and :data:`MAX_DEPTH`.
    """
    check_text(text, ACCEPTED)
    try:
        tree = _parse(text)
        _Checker(text, sql_types).condition(tree, "the filter")
        return _render(text, tree)
    except RecursionError:
        raise SignalError(f"filter: an expression nested too deeply; accepted: a syntax tree at most {MAX_DEPTH} "
                          "levels deep") from None


def _parse(text: str) -> exp.Expr:
    """The parser's tree of ``text``; refuses comments, variables, placeholders and several statements."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(text)
    except SqlglotError as exc:
        filter_error(text, f"unreadable: {_first_line(exc)}", None, ACCEPTED)
    depth = 0
    for token in tokens:
        if token.comments:
            filter_error(text, "a comment", _comment_start(text, token.end + 1), "no comments")
        refused = _REFUSED_TOKENS.get(token.token_type)
        if refused is not None:
            filter_error(text, f"{refused} {token.text!r}", token.start, "a single boolean expression over the "
                         "table's columns, with literal values (no ';', variables or placeholders)")
        depth += token.token_type == TokenType.L_PAREN
        depth -= token.token_type == TokenType.R_PAREN
        if depth > MAX_DEPTH:
            _too_deep(f"more than {MAX_DEPTH} nested parentheses")
    try:
        statements = sqlglot.parse(text, read=DIALECT)
    except SqlglotError as exc:
        filter_error(text, f"not an SQL expression: {_first_line(exc)}", _error_start(exc), ACCEPTED)
    if len(statements) != 1 or statements[0] is None:
        filter_error(text, "more than one statement", None, "a single boolean expression")
    tree = statements[0]
    deepest = _depth(tree)
    if deepest > MAX_DEPTH:
        _too_deep(f"a syntax tree {deepest} levels deep")
    _audit(text, tree)
    return tree


def _too_deep(what: str) -> NoReturn:
    raise SignalError(f"filter: an expression nested too deeply ({what}); accepted: at most {MAX_DEPTH} levels "
                      "(long AND/OR chains and IN lists are fine)")


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _error_start(exc: SqlglotError) -> int | None:
    """0-based character of a parse error (sqlglot reports 1-based line and column)."""
    errors = getattr(exc, "errors", None) or [{}]
    line, col = errors[0].get("line"), errors[0].get("col")
    return None if not isinstance(line, int) or not isinstance(col, int) or line != 1 else max(col - 1, 0)


def _comment_start(text: str, after: int) -> int | None:
    found = [i for i in (text.find("/*", after), text.find("--", after), text.find("#", after)) if i >= 0]
    return min(found) if found else None


def _walk(node: exp.Expr) -> Iterator[exp.Expr]:
    """Every node under ``node`` (itself included), breadth first (iterative)."""
    queue: deque[exp.Expr] = deque([node])
    while queue:
        item = queue.popleft()
        yield item
        for child in item.iter_expressions():
            queue.append(child)


def _depth(tree: exp.Expr) -> int:
    """The tree's depth (iterative); an AND or OR directly under the same connector counts no level, so long
    chains stay shallow."""
    deepest = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        for child in node.iter_expressions():
            chained = isinstance(child, exp.And | exp.Or) and type(child) is type(node)
            stack.append((child, depth if chained else depth + 1))
    return deepest


_SUBQUERIES = (exp.Subquery, exp.Select, exp.Exists, exp.Query)
_ACCEPTED_SUBQUERY = ("a boolean expression over the table's columns (subqueries are not accepted: no SELECT, "
                      "EXISTS, UNION or IN (SELECT ...))")
_KNOWN = (*_LOGIC, *_PREDICATES, *_ARITHMETIC, *_CONDITIONALS, *_STRUCTURE, *FUNCTIONS, *_JSON_PATH, exp.Anonymous)


def _audit(text: str, tree: exp.Expr) -> None:
    """A flat pass over every node, before the checker descends: only node kinds the checker knows."""
    for node in _walk(tree):
        if isinstance(node, _SUBQUERIES):
            filter_error(text, "a subquery", _position(node), _ACCEPTED_SUBQUERY)
        if isinstance(node, exp.Anonymous) and str(node.name).upper() not in _ANONYMOUS:
            filter_error(text, f"function {str(node.name).upper()!r}", _position(node), _ACCEPTED_FUNCTIONS)
        if not isinstance(node, _KNOWN):
            filter_error(text, f"the construct {type(node).__name__} ({show(_render_or_kind(node))})",
                         _position(node), ACCEPTED)


def _position(node: exp.Expr) -> int | None:
    """0-based character of the leftmost token under ``node`` whose position the parser kept."""
    starts = [start for item in _walk(node) if isinstance(start := item.meta.get("start"), int)] \
        if hasattr(node, "meta") else []
    return min(starts) if starts else None


def _render(text: str, tree: exp.Expr) -> str:
    """The checked tree as MariaDB SQL, checked to parse back to the same tree."""
    rendered = tree.sql(dialect=DIALECT, identify=True)
    try:
        back = sqlglot.parse(rendered, read=DIALECT)
    except SqlglotError:  # pragma: no cover - a generator bug
        back = []
    if len(back) != 1 or back[0] != tree:
        filter_error(text, f"cannot be written back faithfully (as {show(rendered)})", None,
                     "a simpler expression; please report this filter")
    return rendered


class _Checker:
    """Walks the tree (depth already bounded), checks every node, and returns each value's category."""

    def __init__(self, text: str, sql_types: Mapping[str, str]) -> None:
        self.text = text
        self.sql_types = sql_types
        self.by_folded = {name.casefold(): name for name in sql_types}

    def fail(self, problem: str, node: exp.Expr, accepted: str) -> NoReturn:
        filter_error(self.text, problem, _position(node), accepted)

    def condition(self, node: exp.Expr, where: str) -> None:
        """Check ``node`` where a boolean is needed: refuse literals and detectably non-boolean values."""
        category = self.value(node)
        inner = node.unnest() if isinstance(node, exp.Paren) else node
        if isinstance(inner, exp.Literal | exp.Null | exp.HexString | exp.BitString):
            self.fail(f"the literal {inner.sql(dialect=DIALECT)} used as {where}", inner,
                      "a condition on the table's columns, e.g. <column> = <value>; TRUE and FALSE are accepted")
        if category in ("boolean", "unknown"):
            return
        if isinstance(inner, exp.Column):
            quoted = inner.sql(dialect=DIALECT, identify=True)
            self.fail(f"column {quoted} ({self.sql_types.get(inner.name, '?')}) used as {where}", inner,
                      f"a condition on it, e.g. {quoted} = <value> or {quoted} IS NOT NULL")
        self.fail(f"a {category} expression ({show(inner.sql(dialect=DIALECT))}) used as {where}", inner,
                  _ACCEPTED_CONDITION)

    def values(self, nodes: list[Any]) -> list[Category]:
        return [self.value(node) for node in nodes if isinstance(node, exp.Expr)]

    def value(self, node: exp.Expr) -> Category:
        """Check any expression node and return its category."""
        if type(node) in _LOGIC:
            word = _LOGIC[type(node)]
            operands = node.flatten() if isinstance(node, exp.And | exp.Or) else node.iter_expressions()
            for operand in operands:
                self.condition(operand, "the operand of NOT" if word == "NOT" else f"an operand of {word}")
            return "boolean"
        if isinstance(node, exp.In):
            if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
                self.fail("a subquery", node, _ACCEPTED_SUBQUERY)
            self.values([node.this, *node.expressions])
            return "boolean"
        if isinstance(node, exp.Is):
            self.value(node.this)
            if not isinstance(node.expression, exp.Null | exp.Boolean):
                self.fail("IS with something other than NULL, TRUE or FALSE", node, "IS [NOT] NULL/TRUE/FALSE")
            return "boolean"
        if isinstance(node, exp.Like):
            self.values([node.this, node.expression])
            return "boolean"
        if isinstance(node, _PREDICATES):
            self.values(list(node.iter_expressions()))
            return "boolean"
        if isinstance(node, exp.Escape):
            self.values(list(node.iter_expressions()))
            return "boolean"
        if isinstance(node, exp.Column):
            return self.column(node)
        if isinstance(node, exp.Paren):
            return self.value(node.this)
        if isinstance(node, exp.Tuple):
            self.values(node.expressions)
            return "other"
        if isinstance(node, exp.Boolean):
            return "boolean"
        if isinstance(node, exp.Null):
            return "unknown"
        if isinstance(node, exp.Literal):
            return "text" if node.is_string else "number"
        if isinstance(node, exp.HexString | exp.BitString):
            return "other"
        if isinstance(node, _ARITHMETIC):
            categories = self.values(list(node.iter_expressions()))
            return "number" if all(c == "number" for c in categories) else "unknown"
        if isinstance(node, _CONDITIONALS):
            return self.conditional(node)
        if isinstance(node, exp.Cast):
            self.value(node.this)
            return self.cast_type(node)
        if isinstance(node, exp.Interval):
            return self.interval(node)
        return self.call(node)

    def column(self, node: exp.Column) -> Category:
        if node.table or node.args.get("db") or node.args.get("catalog") or not isinstance(node.this, exp.Identifier):
            self.fail(f"the qualified name or '*' {node.sql(dialect=DIALECT)!r}", node,
                      "plain column names (no table or database qualification)")
        name = self.by_folded.get(node.name.casefold())
        if name is None:
            self.fail(f"unknown column {node.name!r}", node, columns_text(self.sql_types))
        node.this.set("this", name)
        node.this.set("quoted", True)
        return mariadb_type_category(self.sql_types[name])

    def conditional(self, node: exp.Expr) -> Category:
        if isinstance(node, exp.Case):
            if node.this is not None:
                self.value(node.this)
            results: list[Category] = []
            for when in node.args.get("ifs") or []:
                if node.this is None:
                    self.condition(when.this, "a WHEN condition")
                else:
                    self.value(when.this)
                results += self.values([when.args.get("true")])
            results += self.values([node.args.get("default")])
        elif isinstance(node, exp.If):
            self.condition(node.this, "the condition of IF")
            results = self.values([node.args.get("true"), node.args.get("false")])
        else:
            results = self.values([node.this, *node.expressions, node.args.get("expression")])
        return next((c for c in results if c != "unknown"), "unknown")

    def cast_type(self, node: exp.Cast) -> Category:
        to = node.to
        name = to.this.name if isinstance(to, exp.DataType) and isinstance(to.this, exp.DataType.Type) else "?"
        if name not in CAST_TYPES or to.args.get("nested") or to.args.get("values"):
            self.fail(f"type {to.sql(dialect=DIALECT)!r}", node, "casts to " + ", ".join(CAST_TYPES))
        for param in to.expressions:
            value = param.this if isinstance(param, exp.DataTypeParam) else None
            if not (isinstance(value, exp.Literal) and value.is_int and 0 <= int(value.this) <= _MAX_TYPE_PARAM):
                self.fail(f"type modifier {param.sql(dialect=DIALECT)!r} of {name}", node,
                          f"integer modifiers from 0 to {_MAX_TYPE_PARAM}, e.g. CHAR(10), DECIMAL(10, 2)")
        return CAST_TYPES[name]

    def interval(self, node: exp.Interval) -> Category:
        unit = node.args.get("unit")
        unit_name = unit.name.upper() if isinstance(unit, exp.Var) else "?"
        if unit_name not in _INTERVAL_UNITS:
            self.fail(f"interval unit {unit_name!r}", node, "INTERVAL n " + "|".join(sorted(_INTERVAL_UNITS)))
        self.value(node.this)
        return "interval"

    def call(self, node: exp.Expr) -> Category:
        accepted = FUNCTIONS.get(type(node))
        if isinstance(node, exp.Anonymous):
            name = str(node.name).upper()
            category = _ANONYMOUS.get(name)
            if category is None:
                self.fail(f"function {name!r}", node, _ACCEPTED_FUNCTIONS)
            self.values(node.expressions)
            return category
        if accepted is None:
            what = f"the construct {type(node).__name__} ({show(_render_or_kind(node))})"
            self.fail(what, node, ACCEPTED)
        for child in node.iter_expressions():
            if isinstance(child, _JSON_PATH):
                continue
            if isinstance(child, exp.Var) and isinstance(node, exp.DateAdd | exp.DateSub):
                if child.name.upper() not in _INTERVAL_UNITS:
                    self.fail(f"interval unit {child.name!r}", node, "|".join(sorted(_INTERVAL_UNITS)))
                continue
            self.value(child)
        return accepted[1]


def _render_or_kind(node: exp.Expr) -> str:
    try:
        return node.sql(dialect=DIALECT)
    except Exception:
        return type(node).__name__
