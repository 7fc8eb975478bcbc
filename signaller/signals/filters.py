"""The safe ``additional-conditions`` filter: a boolean SQL expression over one table's columns.

Debezium pastes the ``filter`` text of an ``execute-snapshot`` signal into its chunk queries as is.
signaller does not: ``compile_filter(text, sql_types)`` has PostgreSQL's own parser (``pglast``, the
server's grammar compiled as a library) read ``SELECT WHERE <text>``, walks the syntax tree with an
allow-list, and writes the checked tree back as SQL with pglast's deparser. Only that text ever reaches
PostgreSQL; it is parsed once more here and must give the very tree that was checked, so what runs is
what was checked. Accepted:

* the table's own columns (bare names fold to lower case; quoted names match exactly), never
  qualified names, ``*``, system columns or ``$n`` parameters;
* literals (numbers, strings in any of PostgreSQL's spellings, ``TRUE``, ``FALSE``, ``NULL``, bit
  strings) and casts (``::``, ``CAST``, ``type 'literal'``) to the built-in types of ``CAST_TYPES``,
  arrays of them included, with small integer modifiers;
* ``AND``, ``OR``, ``NOT``, ``IS [NOT] NULL | TRUE | FALSE | UNKNOWN``, ``IS [NOT] DISTINCT FROM``,
  ``[NOT] IN (...)``, ``[NOT] BETWEEN [SYMMETRIC]``, ``[NOT] LIKE | ILIKE [ESCAPE]``,
  ``op ANY | ALL (array)``, ``CASE``, ``COALESCE``, ``NULLIF``, ``GREATEST``, ``LEAST``, ``ARRAY[...]``,
  row values, array subscripts;
* the operators of ``OPERATORS`` (comparison, arithmetic, ``||``, JSON and array containment);
* ``CURRENT_DATE``, ``CURRENT_TIME``, ``CURRENT_TIMESTAMP``, ``LOCALTIME``, ``LOCALTIMESTAMP`` and the
  side-effect-free functions of ``FUNCTIONS`` (plain calls: no ``*``, ``DISTINCT``, ``ORDER BY``,
  ``FILTER``, ``OVER``, ``VARIADIC`` or named arguments).

Everything else is refused with a ``SignalError`` naming the construct, its position (1-based character,
as PostgreSQL reports) and what is accepted: subqueries, several statements, comments, DML, other
functions (``pg_sleep``, ``set_config``, ``dblink``, ``nextval``...), other types (``regclass``...),
session information (``CURRENT_USER``...), and conditions that are detectably not boolean
(``WHERE name``). The result is written for ``standard_conforming_strings = on`` (the server's
default, which the snapshot connection sets) and is meant to be wrapped in parentheses by the caller.
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

from pglast import ast, parser
from pglast.enums import A_Expr_Kind, BoolTestType, SQLValueFunctionOp
from pglast.stream import RawStream

from signaller.errors import SignalError
from signaller.signals.filter_text import MAX_LENGTH, Category, check_text, columns_text
from signaller.signals.filter_text import filter_error as _error
from signaller.signals.filter_text import show as _show

__all__ = [
    "CAST_TYPES",
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_LENGTH",
    "OPERATORS",
    "compile_filter",
    "type_category",
]

MAX_DEPTH = 104
"""Deepest syntax tree accepted, counted as the nesting of PostgreSQL's parse tree in its JSON form (an
operator takes 2 levels, a function call 3, so about 48 nested operators or 32 nested calls; AND/OR chains,
IN lists and redundant parentheses take none). pglast builds, prints and the checker walks trees
recursively; this keeps each far below Python's recursion limit wherever ``compile_filter`` is called."""

_COMPARISONS = frozenset({"=", "<>", "<", "<=", ">", ">="})
OPERATORS: Mapping[str, Category] = {
    **dict.fromkeys(_COMPARISONS, "boolean"),
    **dict.fromkeys(("+", "-", "*", "/", "%"), "unknown"),
    "||": "unknown",
    "->": "other", "#>": "other", "->>": "text", "#>>": "text",
    **dict.fromkeys(("@>", "<@", "?", "?|", "?&", "&&"), "boolean"),
}
"""Accepted operators (unqualified) with the category of their result."""

FUNCTIONS: Mapping[str, Category] = {
    # text
    **dict.fromkeys(("lower", "upper", "initcap", "btrim", "ltrim", "rtrim", "substr", "substring", "left",
                     "right", "split_part", "concat", "concat_ws", "md5", "reverse", "translate", "to_char"),
                    "text"),
    **dict.fromkeys(("length", "char_length", "character_length", "octet_length", "bit_length", "strpos",
                     "position"), "number"),
    "starts_with": "boolean",
    # numbers
    **dict.fromkeys(("abs", "round", "floor", "ceil", "ceiling", "trunc", "mod", "sign", "div", "sqrt",
                     "to_number"), "number"),
    # dates and times
    **dict.fromkeys(("now", "transaction_timestamp", "statement_timestamp", "date_trunc", "date_bin",
                     "make_date", "make_time", "make_timestamp", "make_timestamptz", "to_date", "to_timestamp",
                     "timezone"), "datetime"),
    **dict.fromkeys(("date_part", "extract"), "number"),
    **dict.fromkeys(("age", "make_interval", "justify_days", "justify_hours", "justify_interval"), "interval"),
    **dict.fromkeys(("isfinite", "overlaps"), "boolean"),
    # JSON and arrays
    **dict.fromkeys(("jsonb_typeof", "json_typeof", "jsonb_extract_path_text", "json_extract_path_text"), "text"),
    **dict.fromkeys(("jsonb_extract_path", "json_extract_path"), "other"),
    **dict.fromkeys(("jsonb_array_length", "json_array_length", "array_length", "array_lower", "array_upper",
                     "cardinality", "array_position"), "number"),
    # LIKE ... ESCAPE is written as pg_catalog.like_escape(pattern, escape)
    "like_escape": "text",
}
"""Accepted functions: deterministic or stable, without side effects, each result bounded by its inputs'
size (no ``repeat``, ``lpad``, ``replace``), with the category of their result. A function may be written
``pg_catalog.name``."""

CAST_TYPES: Mapping[str, Category] = {
    **dict.fromkeys(("bool", "boolean"), "boolean"),
    **dict.fromkeys(("int2", "smallint", "int4", "int", "integer", "int8", "bigint", "numeric", "decimal",
                     "float4", "real", "float8"), "number"),
    **dict.fromkeys(("text", "varchar", "bpchar", "char", "name"), "text"),
    **dict.fromkeys(("date", "time", "timetz", "timestamp", "timestamptz"), "datetime"),
    "interval": "interval",
    "uuid": "uuid",
    **dict.fromkeys(("json", "jsonb", "bytea", "inet", "cidr", "macaddr", "bit", "varbit"), "other"),
}
"""Accepted cast target types (as PostgreSQL's parser names them, ``double precision`` is ``float8``),
with their category."""

_MAX_TYPMOD = 10485760
_MAX_ARRAY_DIMENSIONS = 6
_SESSION_VALUES = frozenset({
    SQLValueFunctionOp.SVFOP_CURRENT_DATE, SQLValueFunctionOp.SVFOP_CURRENT_TIME,
    SQLValueFunctionOp.SVFOP_CURRENT_TIME_N, SQLValueFunctionOp.SVFOP_CURRENT_TIMESTAMP,
    SQLValueFunctionOp.SVFOP_CURRENT_TIMESTAMP_N, SQLValueFunctionOp.SVFOP_LOCALTIME,
    SQLValueFunctionOp.SVFOP_LOCALTIME_N, SQLValueFunctionOp.SVFOP_LOCALTIMESTAMP,
    SQLValueFunctionOp.SVFOP_LOCALTIMESTAMP_N,
})
_PREDICATES: Mapping[A_Expr_Kind, frozenset[str]] = {
    A_Expr_Kind.AEXPR_LIKE: frozenset({"~~", "!~~"}),
    A_Expr_Kind.AEXPR_ILIKE: frozenset({"~~*", "!~~*"}),
    A_Expr_Kind.AEXPR_IN: frozenset({"=", "<>"}),
    A_Expr_Kind.AEXPR_BETWEEN: frozenset({"BETWEEN"}),
    A_Expr_Kind.AEXPR_NOT_BETWEEN: frozenset({"NOT BETWEEN"}),
    A_Expr_Kind.AEXPR_BETWEEN_SYM: frozenset({"BETWEEN SYMMETRIC"}),
    A_Expr_Kind.AEXPR_NOT_BETWEEN_SYM: frozenset({"NOT BETWEEN SYMMETRIC"}),
}
"""The predicates written as operators in the tree, with the operator names the grammar gives them."""
_PREFIX = "SELECT WHERE "

ACCEPTED = (
    "a boolean expression over the table's columns: comparisons (= <> != < <= > >=), AND, OR, NOT, "
    "IS [NOT] NULL/TRUE/FALSE/UNKNOWN, IS [NOT] DISTINCT FROM, [NOT] IN (...), [NOT] BETWEEN, [NOT] LIKE/ILIKE, "
    "op ANY/ALL(array), CASE, COALESCE, NULLIF, GREATEST, LEAST, the operators " + " ".join(OPERATORS)
    + ", literals, casts, CURRENT_DATE, CURRENT_TIME, CURRENT_TIMESTAMP, LOCALTIME, LOCALTIMESTAMP and the "
    "functions " + ", ".join(f"{name}()" for name in FUNCTIONS if name != "like_escape")
)
_ACCEPTED_TYPES = ("casts to " + ", ".join(CAST_TYPES) + ", double precision (and arrays of them), unqualified "
                   "or pg_catalog-qualified")
_ACCEPTED_FUNCTIONS = "the functions " + ", ".join(f"{name}()" for name in FUNCTIONS if name != "like_escape")
_ACCEPTED_CONDITION = ("a condition: a comparison, IS [NOT] NULL, [NOT] IN, [NOT] BETWEEN, [NOT] LIKE, AND, OR, NOT, "
                       "a boolean column, TRUE or FALSE")

_TYPE_CATEGORIES: Mapping[str, Category] = {
    **CAST_TYPES,
    **dict.fromkeys(("double precision", "money", "oid", "smallserial", "serial", "bigserial", "serial2", "serial4",
                     "serial8"), "number"),
    **dict.fromkeys(("character varying", "character", "citext"), "text"),
    **dict.fromkeys(("time without time zone", "time with time zone", "timestamp without time zone",
                     "timestamp with time zone"), "datetime"),
    **dict.fromkeys(("xml", "point", "tsvector", "macaddr8"), "other"),
}


def compile_filter(text: str, sql_types: Mapping[str, str]) -> str:
    """Check ``text`` and return it as normalized SQL, or raise ``SignalError`` saying what is wrong.

    ``sql_types`` maps each column name of the table to its PostgreSQL type name (``integer``, ``text``,
    ``timestamp with time zone``...); the names are the columns a filter may use, the types only serve to
    reject conditions that are detectably not boolean (``WHERE name``). The result is PostgreSQL's reading of
    ``text`` written back by its deparser: a single boolean expression using only the constructs in the module
    docstring, with every ``%`` meant literally (run it without a driver parameter list). Wrap it in parentheses
    when combining it with other conditions. Never raises anything but ``SignalError``, whatever ``text`` is;
    the work is bounded by ``MAX_LENGTH`` and ``MAX_DEPTH``.
    """
    check_text(text, ACCEPTED)
    try:
        where = _parse(text)
        _Checker(text, sql_types).condition(where, "the filter", len(text) - len(text.lstrip()))
        _audit(text, where, sql_types)
        return _deparse(text, where)
    except RecursionError:  # pragma: no cover - _parse bounds the depth first
        raise SignalError(f"filter: an expression nested too deeply; accepted: a syntax tree at most {MAX_DEPTH} "
                          "levels deep") from None


def type_category(pg_type: str) -> Category:
    """Coarse category of a PostgreSQL type name (``int4``, ``character varying(20)``, ``_text``...)."""
    if not isinstance(pg_type, str):
        return "unknown"
    name = pg_type.strip().lower()
    if name.endswith("]") or name.startswith("_"):
        return "other"
    name = re.sub(r"\([^)]*\)", "", name).removeprefix("pg_catalog.").strip().strip('"')
    return _TYPE_CATEGORIES.get(" ".join(name.split()), "unknown")


# --- parsing ---------------------------------------------------------------------------------------------------


def _parse(text: str) -> ast.Node:
    """PostgreSQL's syntax tree of the condition ``text``; refuses what is not one expression."""
    query = _PREFIX + text
    try:
        tokens = parser.scan(query)
    except parser.ParseError as exc:
        _error(text, f"unreadable: {exc.args[0]}", _offset(exc), ACCEPTED)
    _check_tokens(text, tokens)
    try:
        _check_depth(text, parser.parse_sql_json(query))
        statements = parser.parse_sql(query)
    except parser.ParseError as exc:
        _error(text, f"not an SQL expression: {exc.args[0]}", _offset(exc), ACCEPTED)
    statement = statements[0].stmt if len(statements) == 1 else None
    if not isinstance(statement, ast.SelectStmt):  # pragma: no cover - ';' is refused above
        _error(text, "more than one statement", None, "a single boolean expression")
    _check_alone(text, statement, tokens)
    where: ast.Node = statement.whereClause  # type: ignore[assignment]  # _check_alone refuses None
    return where


def _offset(exc: parser.ParseError) -> int | None:
    location = exc.args[1] if len(exc.args) > 1 else None
    return location - len(_PREFIX) if isinstance(location, int) else None


def _check_tokens(text: str, tokens: list[parser.Token]) -> None:
    """Refuse comments, statement separators and ``$n`` parameters, with their position."""
    for token in tokens[2:]:
        start = token.start - len(_PREFIX)
        if token.name in ("SQL_COMMENT", "C_COMMENT"):
            _error(text, f"comment {text[start:start + 2]!r}", start, "no comments")
        if token.name == "ASCII_59":
            _error(text, "statement separator ';'", start, "a single boolean expression, no ';'")
        if token.name == "PARAM":
            _error(text, f"parameter {text[start:token.end - len(_PREFIX) + 1]!r}", start, "no $n parameters")


_JSON_STRUCTURE = re.compile(r'"(?:[^"\\]|\\.)*"|[^\[\]{}]+')


def _check_depth(text: str, tree_json: str) -> None:
    """Refuse trees deeper than ``MAX_DEPTH`` before pglast builds (recursively) its Python objects.

    Each expression level is two JSON objects (``{"A_Expr": {...}}``), a list one more; the statement
    wrapper takes 6 levels (not counted)."""
    brackets = _JSON_STRUCTURE.sub("", tree_json)
    depth = max(itertools.accumulate(1 if char in "[{" else -1 for char in brackets), default=0) - 6
    if depth > MAX_DEPTH:
        raise SignalError(f"filter: an expression nested too deeply (a syntax tree {depth} levels deep); accepted: "
                          f"at most {MAX_DEPTH} levels, about 48 nested operators or 32 nested function calls "
                          "(long AND/OR chains and IN lists are fine)")


_TEMPLATE = parser.parse_sql(_PREFIX + "TRUE")[0].stmt
_SELECT_FIELDS: tuple[str, ...] = tuple(vars(ast.SelectStmt)["__slots__"])


def _check_alone(text: str, statement: ast.SelectStmt, tokens: list[parser.Token]) -> None:
    """Refuse anything after the condition that made it more than ``SELECT WHERE condition``."""
    for name in _SELECT_FIELDS:
        if name != "whereClause" and getattr(statement, name, None) != getattr(_TEMPLATE, name, None):
            break
    else:
        if statement.whereClause is not None:
            return
    depth = 0
    for token in tokens[2:]:
        depth += {"ASCII_40": 1, "ASCII_41": -1}.get(token.name, 0)
        if depth == 0 and token.name in _CLAUSES:
            start = token.start - len(_PREFIX)
            _error(text, f"{token.name.removesuffix('_P')} after the condition", start,
                   "a single boolean expression (subqueries and query clauses are not accepted)")
    _error(text, "a query clause after the condition", None,  # pragma: no cover - a clause has a keyword
           "a single boolean expression (subqueries and query clauses are not accepted)")


_CLAUSES = frozenset({"UNION", "INTERSECT", "EXCEPT", "ORDER", "GROUP_P", "HAVING", "WINDOW", "FOR", "LIMIT",
                      "OFFSET", "FETCH", "INTO", "FROM", "WHERE"})


def _node_pos(node: object) -> int | None:
    """0-based character position of ``node`` in the filter: its own location (an operator's is the
    operator's), else the leftmost location under it, else None."""
    location = getattr(node, "location", None)
    if isinstance(location, int) and location >= len(_PREFIX):
        return location - len(_PREFIX)
    return _leftmost(node)


def _leftmost(node: object) -> int | None:
    """0-based character position of the leftmost located node under ``node`` (itself included)."""
    found = [location for item in _walk(node)
             if isinstance(location := getattr(item, "location", None), int) and location >= len(_PREFIX)]
    return min(found) - len(_PREFIX) if found else None


def _walk(node: object) -> Iterator[object]:
    """Every node under ``node``, breadth first (iterative)."""
    queue: deque[object] = deque([node])
    while queue:
        item = queue.popleft()
        if isinstance(item, tuple | list):
            queue.extend(item)
        elif isinstance(item, ast.Node):
            yield item
            queue.extend(getattr(item, name, None) for name in vars(type(item)).get("__slots__", ()))


_AUDITED = (ast.A_Expr, ast.A_Const, ast.ColumnRef, ast.TypeCast, ast.TypeName, ast.BoolExpr, ast.NullTest,
            ast.BooleanTest, ast.FuncCall, ast.SQLValueFunction, ast.CoalesceExpr, ast.MinMaxExpr, ast.CaseExpr,
            ast.CaseWhen, ast.A_ArrayExpr, ast.RowExpr, ast.A_Indirection, ast.A_Indices, ast.String, ast.Integer,
            ast.Float, ast.Boolean, ast.BitString)


def _audit(text: str, where: ast.Node, sql_types: Mapping[str, str]) -> None:
    """A second, flat pass over every node of the checked tree (not only those the checker descends into):
    only the node kinds the checker knows, only allowed functions and only the table's columns."""
    for node in _walk(where):
        item: Any = node
        allowed = isinstance(node, _AUDITED)
        if isinstance(node, ast.FuncCall):
            allowed = _sval(item.funcname[-1]) in FUNCTIONS
        elif isinstance(node, ast.ColumnRef):
            allowed = len(item.fields) == 1 and _sval(item.fields[0]) in sql_types
        if not allowed:  # pragma: no cover - the checker refuses these first, with a better reason
            _error(text, f"the construct {type(node).__name__}", _node_pos(node), ACCEPTED)


def _deparse(text: str, where: ast.Node) -> str:
    """pglast's rendering of ``where``, checked to parse back to the same tree."""
    rendered = str(RawStream()(where))
    back = parser.parse_sql(_PREFIX + rendered)
    back_stmt: Any = back[0].stmt if len(back) == 1 else None
    if back_stmt is None or back_stmt.whereClause != where:  # pragma: no cover - a deparser bug
        _error(text, f"cannot be written back faithfully (as {_show(rendered)})", None,
               "a simpler expression; please report this filter")
    return rendered


# --- the allow-list walker -------------------------------------------------------------------------------------


class _Checker:
    """Walks the tree (depth already bounded) and returns each node's coarse category."""

    def __init__(self, text: str, sql_types: Mapping[str, str]) -> None:
        self.text = text
        self.sql_types = sql_types

    def fail(self, problem: str, node: object, accepted: str, near: int | None = None, *,
             leftmost: bool = False) -> NoReturn:
        pos = _leftmost(node) if leftmost else _node_pos(node)
        _error(self.text, problem, near if pos is None else pos, accepted)

    def condition(self, node: Any, where: str, near: int | None) -> None:
        """Check ``node`` where a boolean is needed: refuse literals and detectably non-boolean values."""
        category = self.value(node, near)
        start = _leftmost(node)
        near = near if start is None else start
        if isinstance(node, ast.A_Const):
            if isinstance(node.val, ast.Boolean):
                return
            self.fail(f"the literal {RawStream()(node)} used as {where}", node,
                      "a condition on the table's columns, e.g. <column> = <value>; TRUE and FALSE are accepted",
                      near)
        if category in ("boolean", "unknown"):
            return
        if isinstance(node, ast.ColumnRef):
            name = _sval(node.fields[0] if node.fields else None) or ""
            quoted = RawStream()(node)
            self.fail(f"column {quoted} ({self.sql_types.get(name, '?')}) used as {where}", node,
                      f"a condition on it, e.g. {quoted} = <value> or {quoted} IS NOT NULL", near)
        self.fail(f"a {category} expression ({_show(str(RawStream()(node)))}) used as {where}", node,
                  _ACCEPTED_CONDITION, near, leftmost=True)

    def values(self, nodes: object, near: int | None) -> list[Category]:
        if nodes is None:
            return []
        items = nodes if isinstance(nodes, tuple | list) else (nodes,)
        return [self.value(item, near) for item in items]

    def value(self, node: object, near: int | None) -> Category:
        """Check any expression node and return its category."""
        pos = _node_pos(node)
        near = near if pos is None else pos
        n: Any = node
        match node:
            case ast.ColumnRef():
                return self.column(node, near)
            case ast.A_Const():
                return self.constant(node)
            case ast.TypeCast():
                self.value(n.arg, near)
                return self.type_name(n.typeName, near)
            case ast.A_Expr():
                return self.operator(node, near)
            case ast.BoolExpr():
                word = {0: "AND", 1: "OR"}.get(int(n.boolop), "NOT")
                for arg in n.args:
                    self.condition(arg, f"an operand of {word}" if word != "NOT" else "the operand of NOT", near)
                return "boolean"
            case ast.NullTest():
                self.value(n.arg, near)
                return "boolean"
            case ast.BooleanTest():
                test = BoolTestType(n.booltesttype).name.removeprefix("IS_").replace("_", " ")
                self.condition(n.arg, f"the operand of IS {test}", near)
                return "boolean"
            case ast.FuncCall():
                return self.call(node, near)
            case ast.SQLValueFunction():
                if n.op not in _SESSION_VALUES:
                    self.fail(f"{RawStream()(node)} (session information)", node,
                              "CURRENT_DATE, CURRENT_TIME, CURRENT_TIMESTAMP, LOCALTIME, LOCALTIMESTAMP", near)
                return "datetime"
            case ast.CoalesceExpr() | ast.MinMaxExpr():
                return next((c for c in self.values(n.args, near) if c != "unknown"), "unknown")
            case ast.CaseExpr():
                self.values(n.arg, near)
                for when in n.args:
                    if n.arg is None:
                        self.condition(when.expr, "a WHEN condition", near)
                    else:
                        self.value(when.expr, near)
                results = self.values([when.result for when in n.args], near) + self.values(n.defresult, near)
                return next((c for c in results if c != "unknown"), "unknown")
            case ast.A_ArrayExpr():
                self.values(n.elements, near)
                return "other"
            case ast.RowExpr():
                self.values(n.args, near)
                return "other"
            case ast.A_Indirection():
                self.value(n.arg, near)
                for item in n.indirection:
                    if not isinstance(item, ast.A_Indices):
                        self.fail("a field selection or '*'", node, "array subscripts x[i] and slices x[i:j]", near)
                    self.values(item.lidx, near)
                    self.values(item.uidx, near)
                return "unknown"
            case ast.SubLink():
                self.fail("a subquery", node, "a boolean expression over the table's columns (subqueries are not "
                          "accepted: no SELECT, EXISTS, IN (SELECT ...) or ARRAY(SELECT ...))", near)
            case ast.ParamRef():  # pragma: no cover - refused by _check_tokens
                self.fail("a $n parameter", node, "literal values", near)
        kind = type(node).__name__
        self.fail(f"the construct {kind} ({_show(_render_or_kind(node))})", node, ACCEPTED, near)

    def column(self, node: Any, near: int | None) -> Category:
        fields = node.fields
        if len(fields) != 1 or not isinstance(fields[0], ast.String):
            shown = ".".join(_sval(f) or "*" for f in fields)
            self.fail(f"the qualified name or '*' {shown!r}", node,
                      "plain column names (no table or schema qualification)", near)
        name = _sval(fields[0]) or ""
        if name in self.sql_types:
            return type_category(self.sql_types[name])
        matches = [column for column in self.sql_types if column.casefold() == name.casefold()]
        hint = ""
        if matches:
            quoted = '"' + matches[0].replace('"', '""') + '"'
            hint = (f" (names fold to lower case unless quoted, and quoted names are case-sensitive: write "
                    f"{quoted} to match that column)")
        self.fail(f"unknown column {name!r}{hint}", node, self.columns_text(), near)

    def columns_text(self) -> str:
        return columns_text(self.sql_types)

    @staticmethod
    def constant(node: Any) -> Category:
        value = getattr(node, "val", None)
        if node.isnull or isinstance(value, ast.String):
            return "unknown"
        if isinstance(value, ast.Boolean):
            return "boolean"
        if isinstance(value, ast.Integer | ast.Float):
            return "number"
        return "other"

    def type_name(self, type_name: Any, near: int | None) -> Category:
        names = [name.sval for name in type_name.names]
        shown = ".".join(names)
        if len(names) == 2 and names[0] == "pg_catalog":
            names = names[1:]
        if len(names) != 1 or names[0] not in CAST_TYPES or type_name.setof or type_name.pct_type:
            self.fail(f"type {shown!r}", type_name, _ACCEPTED_TYPES, near)
        modifiers = type_name.typmods or ()
        if len(modifiers) > 2:
            self.fail(f"{len(modifiers)} modifiers on type {names[0]}", type_name, "at most two", near)
        for modifier in modifiers:
            value = _int(getattr(modifier, "val", None) if isinstance(modifier, ast.A_Const) else None)
            if not _within(value, -1000, _MAX_TYPMOD):
                self.fail(f"type modifier {_show(_render_or_kind(modifier))} of {names[0]}", type_name,
                          f"integer modifiers from -1000 to {_MAX_TYPMOD}, e.g. numeric(10, 2), varchar(20)", near)
        bounds = type_name.arrayBounds or ()
        if len(bounds) > _MAX_ARRAY_DIMENSIONS or not all(
                _within(_int(bound), -1, _MAX_TYPMOD) for bound in bounds):
            self.fail(f"array bounds on type {names[0]}", type_name,
                      f"at most {_MAX_ARRAY_DIMENSIONS} dimensions, e.g. text[]", near)
        return "other" if bounds else CAST_TYPES[names[0]]

    def operator(self, node: Any, near: int | None) -> Category:
        names = [name.sval for name in node.name] if node.name else []
        op = ".".join(names)
        kind = A_Expr_Kind(node.kind)
        operands: list[object] = [node.lexpr] if node.lexpr is not None else []
        operands.extend(node.rexpr if isinstance(node.rexpr, tuple | list) else [node.rexpr])
        if kind == A_Expr_Kind.AEXPR_SIMILAR:
            self.fail("SIMILAR TO (a regular expression)", node, "LIKE and ILIKE patterns", near)
        if kind in _PREDICATES:
            if op not in _PREDICATES[kind]:  # pragma: no cover - the grammar writes these
                self.fail(f"operator {op!r}", node, ACCEPTED, near)
            self.values(operands, near)
            return "boolean"
        if len(names) != 1 or op not in OPERATORS:
            hint = " (regular expressions are not accepted: use LIKE or ILIKE)" if "~" in op else ""
            self.fail(f"operator {op!r}{hint}", node, "the operators " + " ".join(OPERATORS), near)
        if kind in (A_Expr_Kind.AEXPR_OP_ANY, A_Expr_Kind.AEXPR_OP_ALL) and op not in _COMPARISONS:
            self.fail(f"operator {op!r} with ANY/ALL", node, "comparisons with ANY/ALL", near)
        categories = self.values(operands, near)
        if kind == A_Expr_Kind.AEXPR_NULLIF:
            return categories[0]
        if kind != A_Expr_Kind.AEXPR_OP:
            return "boolean"  # ANY, ALL, DISTINCT, NOT DISTINCT
        if op in ("+", "-", "*", "/", "%"):
            return "number" if all(c == "number" for c in categories) else "unknown"
        return OPERATORS[op]

    def call(self, node: Any, near: int | None) -> Category:
        names = [name.sval for name in node.funcname]
        shown = ".".join(names)
        if len(names) == 2 and names[0] == "pg_catalog":
            names = names[1:]
        if len(names) != 1 or names[0] not in FUNCTIONS:
            self.fail(f"function {shown!r}", node, _ACCEPTED_FUNCTIONS, near)
        for flag, what in (("agg_star", "*"), ("agg_distinct", "DISTINCT"), ("func_variadic", "VARIADIC"),
                           ("agg_within_group", "WITHIN GROUP"), ("agg_order", "ORDER BY"),
                           ("agg_filter", "FILTER"), ("over", "OVER")):
            if getattr(node, flag, None):
                self.fail(f"{what} in the call of {shown}()", node, "plain calls f(a, b)", near)
        for arg in node.args or ():
            if isinstance(arg, ast.NamedArgExpr):
                self.fail(f"named argument {arg.name!r} of {shown}()", arg, "positional arguments", near)
        self.values(node.args, near)
        return FUNCTIONS[names[0]]


def _sval(node: object) -> str | None:
    """The text of a pglast ``String`` node, else None."""
    return node.sval if isinstance(node, ast.String) else None


def _int(node: object) -> int | None:
    """The value of a pglast ``Integer`` node, else None."""
    return node.ival if isinstance(node, ast.Integer) else None


def _within(value: int | None, low: int, high: int) -> bool:
    return value is not None and low <= value <= high


def _render_or_kind(node: Any) -> str:
    try:
        return str(RawStream()(node))
    except Exception:
        return type(node).__name__
