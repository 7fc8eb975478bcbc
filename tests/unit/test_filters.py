"""signaller.signals.filters: the safe additional-conditions filter (tokenizer, parser, checker, renderer)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signaller.errors import SignalError
from signaller.signals.filters import (
    MAX_DEPTH,
    MAX_LENGTH,
    Arith,
    Between,
    Bool,
    BoolOp,
    Call,
    Cast,
    Column,
    Compare,
    Expr,
    InList,
    IsTest,
    Like,
    Not,
    Null,
    Number,
    String,
    TypedLiteral,
    Unary,
    compile_filter,
    parse_filter,
    render,
    type_category,
)

pytestmark = pytest.mark.unit

COLUMNS = {
    "id": "int4", "qty": "numeric(10,2)", "name": "text", "color": "character varying(20)", "active": "bool",
    "created_at": "timestamp with time zone", "day": "date", "span": "interval", "uid": "uuid", "Mixed": "text",
    'we"ird': "int8", "order": "int4", "zone": "text", "mood": "mood_enum", "tags": "_text",
}


def ok(text: str) -> str:
    return compile_filter(text, COLUMNS)


def rejected(text: str, columns: dict[str, str] | None = None) -> str:
    with pytest.raises(SignalError) as caught:
        compile_filter(text, COLUMNS if columns is None else columns)
    assert caught.value.signal_id is None
    reason = caught.value.reason
    assert reason.startswith("filter: ") and "; accepted: " in reason
    return reason


# --- accepted forms, with their exact normalized text -------------------------------------------------------------

ACCEPTED = [
    ("id = 1", '"id" = 1'),
    ("ID=1", '"id" = 1'),
    ("  id\t=\n1  ", '"id" = 1'),
    ("id <> 1", '"id" <> 1'),
    ("id != 1", '"id" <> 1'),
    ("id<1 and id<=2 and id>0 and id>=0", '"id" < 1 AND "id" <= 2 AND "id" > 0 AND "id" >= 0'),
    ("color='blue' AND qty>10", '"color" = \'blue\' AND "qty" > 10'),
    ("id = 1 or id = 2 and name = 'x'", '"id" = 1 OR "id" = 2 AND "name" = \'x\''),
    ("(id = 1 or id = 2) and name = 'x'", '("id" = 1 OR "id" = 2) AND "name" = \'x\''),
    ("((id = 1))", '"id" = 1'),
    ("not active", 'NOT "active"'),
    ("NOT (active OR id = 1)", 'NOT ("active" OR "id" = 1)'),
    ("not not active", 'NOT NOT "active"'),
    ("active", '"active"'),
    ("true", "TRUE"),
    ("mood = 'happy'", '"mood" = \'happy\''),
    ("mood", '"mood"'),
    ("name is null", '"name" IS NULL'),
    ("name IS NOT NULL AND active is true", '"name" IS NOT NULL AND "active" IS TRUE'),
    ("active is not false", '"active" IS NOT FALSE'),
    ("id = 1 is not true", '"id" = 1 IS NOT TRUE'),
    ("(active is null) is false", '("active" IS NULL) IS FALSE'),
    ("id in (1, 2, -3)", '"id" IN (1, 2, -3)'),
    ("name NOT IN ('a', 'b''c', NULL)", '"name" NOT IN (\'a\', \'b\'\'c\', NULL)'),
    ("day in (date '2026-01-01', DATE'2026-01-02')", "\"day\" IN (DATE '2026-01-01', DATE '2026-01-02')"),
    ("id between 1 and 10", '"id" BETWEEN 1 AND 10'),
    ("id not between 1 and 2+3 and active", '"id" NOT BETWEEN 1 AND 2 + 3 AND "active"'),
    ("id between -1 and 1 = true", '"id" BETWEEN -1 AND 1 = TRUE'),
    ("name like 'a%'", '"name" LIKE \'a%\''),
    ("name not ilike '%X_'", '"name" NOT ILIKE \'%X_\''),
    ("name like 'a\\_b%'", "\"name\" LIKE E'a\\\\_b%'"),
    ("name = E'it\\'s\\n\\\\'", "\"name\" = E'it''s\n\\\\'"),
    ("name = e'plain'", "\"name\" = 'plain'"),
    ("name = 'new\nline'", "\"name\" = 'new\nline'"),
    ("name = 'ünïcødé 🎉'", "\"name\" = 'ünïcødé 🎉'"),
    ("name = ''", "\"name\" = ''"),
    ("qty * 2 + 1 > id % 3 - 4 / 2", '"qty" * 2 + 1 > "id" % 3 - 4 / 2'),
    ("(qty + 1) * 2 > 0", '("qty" + 1) * 2 > 0'),
    ("qty - (id - 1) > 0", '"qty" - ("id" - 1) > 0'),
    ("(qty - id) - 1 > 0", '"qty" - "id" - 1 > 0'),
    ("-id < 0", '-"id" < 0'),
    ("- -1 < id", "-(-1) < \"id\""),
    ("+qty > 0", '+"qty" > 0'),
    ("qty > -(id + 1)", '"qty" > -("id" + 1)'),
    ("qty > 1.5 and qty < .5 and qty <> 1e3 and qty <> 2.E-3 and qty <> 7.", '"qty" > 1.5 AND "qty" < .5 AND '
     '"qty" <> 1e3 AND "qty" <> 2.E-3 AND "qty" <> 7.'),
    ("created_at >= timestamptz '2026-01-01 00:00:00+00'",
     "\"created_at\" >= TIMESTAMPTZ '2026-01-01 00:00:00+00'"),
    ("created_at >= TIMESTAMP '2026-01-01' - INTERVAL '1 day'",
     "\"created_at\" >= TIMESTAMP '2026-01-01' - INTERVAL '1 day'"),
    ("created_at::time > time '12:00'", "CAST(\"created_at\" AS time) > TIME '12:00'"),
    ("span > interval '1 hour'", "\"span\" > INTERVAL '1 hour'"),
    ("id::text = '5'", 'CAST("id" AS text) = \'5\''),
    ("id::int8::text = '5'", 'CAST(CAST("id" AS bigint) AS text) = \'5\''),
    ("cast(qty as numeric(10, 2)) > 1", 'CAST("qty" AS numeric(10,2)) > 1'),
    ("CAST(name AS varchar(5)) = 'x'", 'CAST("name" AS varchar(5)) = \'x\''),
    ("name::character varying = 'x'", 'CAST("name" AS varchar) = \'x\''),
    ("qty::double precision > 1 and qty::float4 > 1 and id::int2 > 1 and id::int4 > 1 and qty::decimal > 1",
     'CAST("qty" AS double precision) > 1 AND CAST("qty" AS real) > 1 AND CAST("id" AS smallint) > 1 AND '
     'CAST("id" AS integer) > 1 AND CAST("qty" AS numeric) > 1'),
    ("uid = '6f1c4ad2-0000-4000-8000-000000000000'::uuid", "\"uid\" = CAST('6f1c4ad2-0000-4000-8000-000000000000' "
     "AS uuid)"),
    ("'1'::bool", "CAST('1' AS boolean)"),
    ("-1::int < id", '-CAST(1 AS integer) < "id"'),
    ("created_at::timestamptz(3) > timestamp '2026-01-01'",
     "CAST(\"created_at\" AS timestamptz(3)) > TIMESTAMP '2026-01-01'"),
    ("lower(name) = 'x' and UPPER(color) like 'B%'", 'lower("name") = \'x\' AND upper("color") LIKE \'B%\''),
    ("length(name) > 3 and char_length(name) < 9", 'length("name") > 3 AND char_length("name") < 9'),
    ("abs(qty) > 1 and round(qty) > 1 and round(qty, 2) > 1 and floor(qty) > 1 and ceil(qty) > 1",
     'abs("qty") > 1 AND round("qty") > 1 AND round("qty", 2) > 1 AND floor("qty") > 1 AND ceil("qty") > 1'),
    ("coalesce(name, color, '') <> ''", 'coalesce("name", "color", \'\') <> \'\''),
    ("coalesce(active, false)", 'coalesce("active", FALSE)'),
    ("nullif(name, '') is null", 'nullif("name", \'\') IS NULL'),
    ("trim(name) = 'x' and trim(name, ' x') = ''", 'trim("name") = \'x\' AND trim("name", \' x\') = \'\''),
    ("substr(name, 1, 2) = 'ab'", 'substr("name", 1, 2) = \'ab\''),
    ("date_trunc('day', created_at) = timestamptz '2026-01-01'",
     "date_trunc('day', \"created_at\") = TIMESTAMPTZ '2026-01-01'"),
    ("date_part('year', created_at) >= 2026", "date_part('year', \"created_at\") >= 2026"),
    ('"Mixed" = \'x\'', '"Mixed" = \'x\''),
    ('"we""ird" > 0', '"we""ird" > 0'),
    ('"order" = 1', '"order" = 1'),
    ("zone = 'UTC'", '"zone" = \'UTC\''),
    ("tags is not null", '"tags" IS NOT NULL'),
]


@pytest.mark.parametrize(("text", "expected"), [case for case in ACCEPTED if case[1] is not None])
def test_accepted(text: str, expected: str) -> None:
    assert ok(text) == expected
    assert ok(expected) == expected, "the normalized text is a fixed point"


def test_backslashes_are_written_so_that_standard_conforming_strings_does_not_matter() -> None:
    # Read as PostgreSQL reads it by default (standard_conforming_strings=on): 'x\' is the string x\ .
    # With the setting off, the same text would hide "OR name = " inside a string and comment out the rest;
    # the E'' form written back means x\ under both settings.
    assert ok("name = 'x\\' OR name = '--'") == "\"name\" = E'x\\\\' OR \"name\" = '--'"


def test_result_ands_safely_inside_parentheses() -> None:
    assert f"({ok('id = 1 or id = 2')}) AND \"id\" > 0" == '("id" = 1 OR "id" = 2) AND "id" > 0'


def test_parse_filter_returns_the_tree() -> None:
    tree = parse_filter("id = 1 and name like 'a%'", COLUMNS)
    assert tree == BoolOp("AND", (Compare(Column("id"), "=", Number("1")),
                                  Like(Column("name"), False, "LIKE", String("a%"))))


@pytest.mark.parametrize(("type_name", "category"), [
    ("int4", "number"), ("numeric(10,2)", "number"), ("double precision", "number"), ("text", "text"),
    ("character varying(20)", "text"), ("bool", "boolean"), ("timestamp(3) with time zone", "datetime"),
    ("pg_catalog.date", "datetime"), ("interval", "interval"), ("uuid", "uuid"), ("_int4", "other"),
    ("text[]", "other"), ("jsonb", "other"), ("my_enum", "unknown"),
])
def test_type_category(type_name: str, category: str) -> None:
    assert type_category(type_name) == category


# --- rejections -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "problem"), [
    # classic injection attempts
    ("1=1; DROP TABLE x", "statement separator ';' at character 4; accepted: a single boolean expression"),
    ("id = 1; DELETE FROM orders", "statement separator ';' at character 7"),
    ("id = 1 OR (SELECT 1) = 1", "SQL keyword SELECT (subqueries are not accepted) at character 12"),
    ("id IN (SELECT id FROM t)", "SQL keyword SELECT (subqueries are not accepted) at character 8"),
    ("exists(select 1)", "SQL keyword EXISTS (subqueries are not accepted) at character 1"),
    ("id = 1 UNION SELECT 1", "SQL keyword UNION (subqueries are not accepted) at character 8"),
    ("pg_sleep(10) IS NULL", "unknown function 'pg_sleep' at character 1; accepted: the functions lower(), "),
    ("id = 1 --", "comment '--' at character 8; accepted: no comments"),
    ("id = 1 -- AND id = 2", "comment '--' at character 8"),
    ("id = 1 /* */", "comment '/*' at character 8; accepted: no comments"),
    ("id/**/= 1", "comment '/*' at character 3"),
    ("$$x$$", "'$' ('$$x$$') at character 1; accepted: no dollar quoting and no $n parameters"),
    ("name = $tag$x$tag$", "'$' ('$tag$x$tag') at character 8"),
    ("id = $1", "'$' ('$1') at character 6"),
    ("name$x = 1", "'$' in 'name$' at character 5"),
    ("current_setting('x') = 'y'", "unknown function 'current_setting' at character 1"),
    ("set_config('a', 'b', false) = 'b'", "unknown function 'set_config' at character 1"),
    ("now() > created_at", "unknown function 'now' at character 1"),
    ("id = 1 OR current_user = 'postgres'", "SQL keyword CURRENT_USER at character 11"),
    ("name = 'x' || (select 1)", "unexpected character '|' at character 12"),
    ("name = 'x\\' OR 1=1 --'", "comment '--' at character 20"),  # 'x\' is a whole string (standard strings)
    ("id = ANY('{1}')", "SQL keyword ANY at character 6"),
    ("id = 1 AND lo_import('/etc/passwd') = 1", "unknown function 'lo_import' at character 12"),
    ("pg_catalog.lower(name) = 'x'", "'.' at character 11; accepted: plain column names"),
    # unterminated and malformed tokens
    ("name = 'abc", "unterminated string \"'abc\" at character 8"),
    ("name = 'it''s", "unterminated string"),
    ('"name = 1', "unterminated quoted identifier"),
    ('"" = 1', 'empty quoted identifier "" at character 1'),
    ("name = E'abc\\'", "unterminated string"),
    ("name = E'\\x41'", "numeric escape \"\\\\x41'\" in an E'' string at character 10"),
    ("name = U&'\\0041'", "unexpected character '&' at character 9"),
    ("name = x'41'", "x'' string constant at character 8"),
    ("id = 0x10", "malformed number '0x' at character 6"),
    ("id = 1_000", "malformed number '1_' at character 6"),
    ("id = 1e", "malformed number '1e' at character 6"),
    ("id = 1.2.3", "malformed number '1.2.' at character 6"),
    ("id = ?", "unexpected character '?' at character 6"),
    ("id = :x", "':' at character 6; accepted: '::' casts (no :name parameters)"),
    ("id = 1\x00", "invalid character '\\x00' at character 7"),
    ("tags[1] = 'x'", "unexpected character '['"),
    # columns
    ("foo = 1", "unknown column 'foo' at character 1; accepted: columns of the table: id, qty, name, color, "),
    ("Mixed = 'x'", "unknown column 'Mixed' (unquoted names fold to lower case: write \"Mixed\" to match that "
                    "column) at character 1"),
    ('"ID" = 1', 'unknown column "ID" (quoted identifiers are case-sensitive: did you mean "id"?) at character 1'),
    ('"name " = 1', 'unknown column "name " at character 1'),
    ("order = 1", "SQL keyword ORDER at character 1; accepted: the keywords AND, OR, NOT"),
    ("t.id = 1", "'.' at character 2; accepted: plain column names (no table or schema qualification)"),
    ("public.t.id = 1", "'.' at character 7"),
    ('"lower"(name) = \'x\'', 'quoted function name "lower" at character 1'),
    # functions, types and keywords
    ("substring(name, 1) = 'x'", "function 'substring' at character 1; accepted: use substr(string, start[, count])"),
    ("extract(year from created_at) = 1", "function 'extract' at character 1; accepted: use date_part('field'"),
    ("lower() = 'x'", "lower() with 0 arguments at character 1; accepted: lower() takes 1 argument"),
    ("substr(name) = 'x'", "substr() with 1 argument at character 1; accepted: substr() takes 2 to 3 arguments"),
    ("coalesce() = 1", "coalesce() with 0 arguments at character 1; accepted: coalesce() takes 1 or more"),
    ("trim(both 'x' from name) = ''", "SQL keyword BOTH at character 6"),
    ("id::money = 1", "type 'money' at character 5; accepted: casts to int2, smallint"),
    ("id::regclass = 1", "type 'regclass' at character 5"),
    ("id::text(3) = 'x'", "a modifier on type text at character 9; accepted: modifiers only on numeric"),
    ("cast(id as) = 1", "unexpected ')' where a type name is expected at character 11"),
    ("id is distinct from 1", "IS DISTINCT at character 7; accepted: IS [NOT] NULL, IS [NOT] TRUE, IS [NOT] FALSE"),
    ("id is unknown", "IS UNKNOWN at character 7"),
    ("id isnull", "SQL keyword ISNULL at character 4; accepted: IS NULL / IS NOT NULL"),
    ("name similar to 'x'", "SQL keyword SIMILAR at character 6"),
    ("name like 'x' escape '!'", "ESCAPE right after an LIKE test at character 15"),
    ("name like color", "unexpected 'color' where a 'pattern' string after LIKE is expected at character 11"),
    ("id in (id)", "'id' in an IN list at character 8; accepted: IN (literal, ...)"),
    ("id in (1 + 1)", "'1' in an IN list at character 8"),
    ("id in ()", "unexpected ')' where a value (column, literal, function call or parenthesis) is expected"),
    ("id between symmetric 1 and 2", "BETWEEN SYMMETRIC at character 12"),
    ("id between 1", "missing AND of BETWEEN at the end of the filter"),
    ("id not = 1", "unexpected '=' where IN, BETWEEN, LIKE or ILIKE after NOT is expected at character 8"),
    ("id < 2 < 3", "chained comparison '<' at character 8; accepted: one comparison per operand pair"),
    ("id = 1 = true", "chained comparison '=' at character 8"),
    ("id is null is null", "a second IS at character 12"),
    ("id in (1) in (true)", "IN right after an IN test at character 11"),
    ("id = (1", "missing ')' to close the parenthesis at the end of the filter"),
    ("id = 1)", "unbalanced ')' at character 7; accepted: parentheses that match"),
    ("id = 1 and", "missing a value at the end of the filter"),
    ("id = 1 name = 'x'", "unexpected 'name' where an operator or the end of the filter is expected at character 8"),
    ("name = 'a' 'b'", "string \"'b'\" right after another string at character 12"),
    ("id = 1 2", "unexpected '2' where an operator or the end of the filter is expected at character 8"),
    ("id =", "missing a value at the end of the filter"),
    ("", "filter: empty; accepted: a boolean expression"),
    (" \n\t", "filter: empty; accepted: a boolean expression"),
    # not boolean
    ("name", 'column "name" (text) used as the filter at character 1; accepted: a condition on it, e.g. "name" = '),
    ("id", 'column "id" (int4) used as the filter at character 1'),
    ("1", "the literal 1 used as the filter at character 1; accepted: a condition on the table's columns"),
    ("'t'", "the literal 't' used as the filter at character 1"),
    ("null", "the literal NULL used as the filter at character 1"),
    ("date '2026-01-01'", "the literal DATE '2026-01-01' used as the filter at character 1"),
    ("-1", "the literal -1 used as the filter at character 1"),
    ("id + 1", "a number expression ('\"id\" + 1') used as the filter at character 1"),
    ("lower(name)", "a text expression ('lower(\"name\")') used as the filter at character 1"),
    ("id::text", "a text expression ('CAST(\"id\" AS text)') used as the filter at character 1"),
    ("active and name", 'column "name" (text) used as an operand of AND at character 12'),
    ("active or 1", "the literal 1 used as an operand of OR at character 11"),
    ("not id", 'column "id" (int4) used as the operand of NOT at character 5'),
    ("name is true", 'column "name" (text) used as the operand of IS TRUE at character 1'),
    ("name + 1 > 2", "operator '+' applied to a text operand ('\"name\"') at character 1; accepted: + - * / % on "
                     "numbers, + and - on dates, timestamps and intervals"),
    ("active * 2 > 1", "operator '*' applied to a boolean operand ('\"active\"') at character 1"),
    ("-name = 'x'", "operator '-' applied to a text operand ('\"name\"') at character 2"),
    ("created_at * 2 > created_at", "operator '*' applied to a datetime operand ('\"created_at\"') at character 1"),
])
def test_rejected(text: str, problem: str) -> None:
    reason = rejected(text)
    assert problem in reason, reason


def test_unknown_column_on_a_table_without_columns() -> None:
    assert rejected("id = 1", {}) == ("filter: unknown column 'id' at character 1; accepted: columns of the table, "
                                      "which has none")


def test_long_column_lists_are_cut() -> None:
    columns = {f"c{i}": "int4" for i in range(100)}
    reason = rejected("x = 1", columns)
    assert reason.endswith("c59 and 40 more")


def test_nesting_and_size_limits() -> None:
    deep = "(" * (MAX_DEPTH + 1) + "id = 1" + ")" * (MAX_DEPTH + 1)
    assert f"more than {MAX_DEPTH} levels of nesting" in rejected(deep)
    assert ok("(" * MAX_DEPTH + "id = 1" + ")" * MAX_DEPTH) == '"id" = 1'
    assert "levels of nesting" in rejected("not " * 100 + "active")
    assert "levels of nesting" in rejected("- " * 5000 + "1 = id")
    assert "operators deep" in rejected("+".join(["1"] * 1000) + " = id")
    assert "operators deep" in rejected("id" + "::int" * 1000 + " = 1")
    assert "characters long" in rejected("id = 1 and " * 10000 + "active")
    assert len("id = 1 and " * 5000) < MAX_LENGTH
    assert ok("id = 1 and " * 5000 + "active").count("AND") == 5000
    assert ok("id in (" + ", ".join(str(i) for i in range(5000)) + ")").startswith('"id" IN (0, 1, 2')


def test_errors_are_signal_errors_not_other_exceptions() -> None:
    with pytest.raises(SignalError, match="expected a string"):
        compile_filter(None, COLUMNS)  # type: ignore[arg-type]


# --- hypothesis -----------------------------------------------------------------------------------------------------

NUMERIC_COLUMNS = ["id", "qty", 'we"ird', "order"]
_numbers = st.from_regex(r"\A([0-9]{1,6}(\.[0-9]{0,3})?|\.[0-9]{1,3})([eE][+-]?[0-9]{1,2})?\Z")
_strings = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=12)
_compare_ops = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])


_text_base: st.SearchStrategy[Expr] = st.one_of(
    st.sampled_from(["name", "color", "Mixed", "zone"]).map(Column), _strings.map(String))
_text: st.SearchStrategy[Expr] = st.one_of(
    _text_base,
    st.builds(lambda name, arg: Call(name, (arg,)), st.sampled_from(["lower", "upper", "trim"]), _text_base),
    st.builds(lambda arg, start: Call("substr", (arg, start, Number("3"))), _text_base, _numbers.map(Number)),
    st.builds(lambda column: Cast(Column(column), "text"), st.sampled_from(NUMERIC_COLUMNS)),
    st.builds(lambda arg: Call("nullif", (arg, String(""))), _text_base),
)


def _extend_numeric(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.builds(Arith, children, st.sampled_from(["+", "-", "*", "/", "%"]), children),
        st.builds(Unary, st.sampled_from(["-", "+"]), children),
        st.builds(lambda name, arg: Call(name, (arg,)), st.sampled_from(["abs", "round", "floor", "ceil"]), children),
        st.builds(lambda arg: Call("round", (arg, Number("2"))), children),
        st.builds(lambda text: Call("length", (text,)), _text),
        st.builds(Cast, children, st.sampled_from(["integer", "bigint", "numeric(10,2)", "double precision"])),
        st.builds(lambda a, b: Call("coalesce", (a, b)), children, children),
    )


_numeric: st.SearchStrategy[Expr] = st.recursive(
    st.one_of(st.sampled_from(NUMERIC_COLUMNS).map(Column), _numbers.map(Number)), _extend_numeric, max_leaves=6)
_in_item: st.SearchStrategy[Expr] = st.one_of(
    _numbers.map(Number), _numbers.map(lambda text: Unary("-", Number(text))), st.just(Null()))
_boolean_base: st.SearchStrategy[Expr] = st.one_of(
    st.just(Column("active")),
    st.booleans().map(Bool),
    st.builds(Compare, _numeric, _compare_ops, _numeric),
    st.builds(Compare, _text, _compare_ops, _text),
    st.builds(Compare, st.just(Column("created_at")), _compare_ops,
              st.sampled_from(["2026-01-01", "2026-01-01 10:00:00+02", "now\\"]).map(
                  lambda value: TypedLiteral("timestamptz", value))),
    st.builds(lambda op, value: Compare(Arith(Column("day"), "-", TypedLiteral("interval", value)), op,
                                        TypedLiteral("date", "2026-01-01")),
              _compare_ops, st.sampled_from(["1 day", "2 hours"])),
    st.builds(IsTest, st.one_of(_numeric, _text), st.booleans(), st.just("NULL")),
    st.builds(Like, _text, st.booleans(), st.sampled_from(["LIKE", "ILIKE"]), _strings.map(String)),
    st.builds(InList, _numeric, st.booleans(), st.lists(_in_item, min_size=1, max_size=4).map(tuple)),
    st.builds(InList, _text, st.booleans(), st.lists(_strings.map(String), min_size=1, max_size=3).map(tuple)),
    st.builds(Between, _numeric, st.booleans(), _numeric, _numeric),
)


def _extend_boolean(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.builds(BoolOp, st.sampled_from(["AND", "OR"]), st.lists(children, min_size=2, max_size=3).map(tuple)),
        st.builds(Not, children),
        st.builds(IsTest, children, st.booleans(), st.sampled_from(["NULL", "TRUE", "FALSE"])),
        st.builds(Compare, children, st.sampled_from(["=", "<>"]), st.booleans().map(Bool)),
        st.builds(lambda child: Call("coalesce", (child, Bool(False))), children),
        st.builds(lambda child: Cast(child, "boolean"), children),
    )


BOOLEAN_TREES: st.SearchStrategy[Expr] = st.recursive(_boolean_base, _extend_boolean, max_leaves=8)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BOOLEAN_TREES)
def test_rendered_trees_round_trip(tree: Expr) -> None:
    text = render(tree)
    assert compile_filter(text, COLUMNS) == text
    assert parse_filter(text, COLUMNS) == tree


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(BOOLEAN_TREES)
def test_rendered_text_survives_spacing_and_case_changes(tree: Expr) -> None:
    text = render(tree)
    # Keywords in lower case and parentheses around the whole: the same tree.
    loud = re.sub(r"\b(AND|OR|NOT|IS|NULL|TRUE|FALSE|IN|BETWEEN|LIKE|ILIKE|CAST|AS)\b(?=(?:[^']*'[^']*')*[^']*$)",
                  lambda match: match.group(0).lower(), text)
    assert compile_filter(f"( {loud} )", COLUMNS) == text


_fragments = st.sampled_from([
    "id", "name", "active", '"Mixed"', '"x', "'", "'a'", "E'\\", "1", "1.5", ".", "e", "=", "<>", "!=", "<", ">=",
    "+", "-", "*", "/", "%", "::", ":", "(", ")", ",", ";", "--", "/*", "*/", "$", "$$", "AND", "OR", "NOT", "IS",
    "NULL", "TRUE", "IN", "BETWEEN", "LIKE", "CAST", "AS", "int", "text", "lower", "coalesce", "SELECT", "date",
    "interval", "'2026-01-01'", " ", "\n", "\\", "\x00", "é", "ſ", "İ",
])


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_fragments, max_size=25).map("".join))
def test_token_soup_only_signal_errors(text: str) -> None:
    try:
        result = compile_filter(text, COLUMNS)
    except SignalError:
        return
    assert compile_filter(result, COLUMNS) == result


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_arbitrary_text_only_signal_errors(text: str) -> None:
    try:
        result = compile_filter(text, COLUMNS)
    except SignalError:
        return
    assert compile_filter(result, COLUMNS) == result
