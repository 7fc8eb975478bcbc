"""signaller.signals.mariadb_filters: MariaDB's additional-conditions checker (sqlglot, MySQL dialect).

The MariaDB mirror of test_filters.py: accepted filters come back as the checked tree written by the
generator (a fixed point); hostile ones are refused with a SignalError naming the construct, its position
and what is accepted; no input raises anything else."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signaller.errors import SignalError
from signaller.signals.mariadb_filters import MAX_DEPTH, compile_mariadb_filter, mariadb_type_category

pytestmark = pytest.mark.unit

COLUMNS = {
    "id": "int(11)", "qty": "decimal(10,2)", "name": "varchar(20)", "Mixed": "text", "active": "tinyint(1)",
    "created_at": "timestamp(6)", "day": "date", "payload": "longtext", "pct%": "int(11)", "we`ird": "bigint(20)",
    "order": "int(11)", "a": "int(11)", "b": "int(11) unsigned", "color": "enum('red','blue')",
}


def ok(text: str) -> str:
    return compile_mariadb_filter(text, COLUMNS)


def rejected(text: str, columns: dict[str, str] | None = None) -> str:
    with pytest.raises(SignalError) as caught:
        compile_mariadb_filter(text, COLUMNS if columns is None else columns)
    reason = caught.value.reason
    assert reason.startswith("filter: ") and "; accepted: " in reason
    return reason


ACCEPTED = [
    ("id = 1", "`id` = 1"),
    ("ID=1", "`id` = 1"),
    ("mixed = 'x'", "`Mixed` = 'x'"),
    ("  id\t=\n1  ", "`id` = 1"),
    ("id != 1", "`id` <> 1"),
    ("id<1 and id<=2 and id>0 and id>=0", "`id` < 1 AND `id` <= 2 AND `id` > 0 AND `id` >= 0"),
    ("id = 1 or id = 2 and name = 'x'", "`id` = 1 OR `id` = 2 AND `name` = 'x'"),
    ("(id = 1 or id = 2) and name = 'x'", "(`id` = 1 OR `id` = 2) AND `name` = 'x'"),
    ("id = 1 && active || id = 2", "`id` = 1 AND `active` OR `id` = 2"),
    ("not active", "NOT `active`"),
    ("active", "`active`"),
    ("true", "TRUE"),
    ("active xor id = 1", "`active` XOR `id` = 1"),
    ("name is null", "`name` IS NULL"),
    ("name is not null and active is true", "NOT `name` IS NULL AND `active` IS TRUE"),
    ("a <=> b", "`a` <=> `b`"),
    ("id in (1, 2, -3)", "`id` IN (1, 2, -3)"),
    ("name not in ('a', 'b''c', null)", "NOT `name` IN ('a', 'b''c', NULL)"),
    ("id between 1 and 10", "`id` BETWEEN 1 AND 10"),
    ("name like 'a%'", "`name` LIKE 'a%'"),
    ("name not like 'a!%' escape '!'", "`name` NOT LIKE 'a!%' ESCAPE '!'"),
    ("id % 2 = 1 and id div 2 = 3 and id mod 3 = 0", "`id` % 2 = 1 AND `id` DIV 2 = 3 AND `id` % 3 = 0"),
    ("qty * 2 + 1 > id - 4 / 2", "`qty` * 2 + 1 > `id` - 4 / 2"),
    ("-id < 0", "-`id` < 0"),
    ("(a, b) > (1, 2)", "(`a`, `b`) > (1, 2)"),
    ("day > now() - interval 1 day", "`day` > NOW() - INTERVAL '1' DAY"),
    ("created_at < current_timestamp", "`created_at` < CURRENT_TIMESTAMP()"),
    ("day = curdate()", "`day` = CURRENT_DATE"),
    ("date_add(day, interval 2 week) > now()", "DATE_ADD(`day`, INTERVAL '2' WEEK) > NOW()"),
    ("lower(name) = 'x' and upper(name) like 'B%'", "LOWER(`name`) = 'x' AND UPPER(`name`) LIKE 'B%'"),
    ("char_length(name) > 3", "CHAR_LENGTH(`name`) > 3"),
    ("coalesce(name, '') <> ''", "COALESCE(`name`, '') <> ''"),
    ("nullif(name, '') is null", "NULLIF(`name`, '') IS NULL"),
    ("if(active, 1, 0) = 1", "IF(`active`, 1, 0) = 1"),
    ("case when active then 1 else 0 end = 1", "CASE WHEN `active` THEN 1 ELSE 0 END = 1"),
    ("greatest(a, b) > 3", "GREATEST(`a`, `b`) > 3"),
    ("cast(id as char) = '5'", "CAST(`id` AS CHAR) = '5'"),
    ("cast(qty as decimal(10, 2)) > 1", "CAST(`qty` AS DECIMAL(10, 2)) > 1"),
    ("cast(name as signed) = 1", "CAST(`name` AS SIGNED) = 1"),
    ("json_unquote(json_extract(payload, '$.k')) = 'x'", "JSON_UNQUOTE(JSON_EXTRACT(`payload`, '$.k')) = 'x'"),
    ("color = 'red'", "`color` = 'red'"),
    ("`pct%` > 50", "`pct%` > 50"),
    ("`we``ird` > 0", "`we``ird` > 0"),
    ("`order` = 1", "`order` = 1"),
    ("name = \"double\"", "`name` = 'double'"),
    ("name = 'it\\'s'", "`name` = 'it''s'"),
    ("name = 'back\\\\slash'", "`name` = 'back\\\\slash'"),
    ("name = 'ünïcødé 🎉'", "`name` = 'ünïcødé 🎉'"),
    ("name = x'41'", "`name` = x'41'"),
]


@pytest.mark.parametrize(("text", "expected"), ACCEPTED)
def test_accepted(text: str, expected: str) -> None:
    assert ok(text) == expected
    assert ok(expected) == expected, "the normalized text is a fixed point"


def test_percent_is_kept_literally() -> None:
    assert ok("name LIKE 'a%' AND id % 2 = 1 AND `pct%` > 0") == "`name` LIKE 'a%' AND `id` % 2 = 1 AND `pct%` > 0"


@pytest.mark.parametrize(("type_name", "category"), [
    ("int(11)", "number"), ("bigint(20) unsigned", "number"), ("decimal(10,2)", "number"), ("tinyint(1)", "boolean"),
    ("bit(1)", "boolean"), ("bit(8)", "number"), ("varchar(20)", "text"), ("enum('a','b')", "text"),
    ("longtext", "text"), ("datetime(6)", "datetime"), ("year(4)", "datetime"), ("varbinary(4)", "other"),
    ("geometry", "other"),
])
def test_type_category(type_name: str, category: str) -> None:
    assert mariadb_type_category(type_name) == category


@pytest.mark.parametrize(("text", "problem"), [
    # several statements, subqueries, query clauses, DML
    ("1=1; DROP TABLE x", "statement separator ';' ';' at character 4"),
    ("id = 1;", "statement separator ';' ';' at character 7"),
    ("id = (select 1)", "a subquery"),
    ("id in (select id from t)", "a subquery at character 1"),
    ("exists(select 1)", "a subquery"),
    ("id = 1 union select 1", "a subquery"),
    ("id = 1 order by 1", "not an SQL expression"),
    ("id = 1 limit 1", "not an SQL expression"),
    ("id = 1 into outfile '/tmp/x'", "not an SQL expression"),
    ("id = 1) or (1 = 1", "not an SQL expression"),
    ("delete from t", "the construct Delete ('DELETE FROM t')"),
    # comments (MariaDB runs /*! ... */ and /*M! ... */), variables, placeholders
    ("id = 1 --", "a comment"),
    ("id = 1 -- AND id = 2", "a comment at character 8 ('-- AND id = 2'); accepted: no comments"),
    ("id = 1 # x", "a comment at character 8"),
    ("id = 1 /*! OR 1=1 */", "a comment at character 8"),
    ("id = 1 /*M!100000 OR 1=1 */", "a comment at character 8"),
    ("id = @x", "variable '@' at character 6"),
    ("id = @@version", "system variable '@@' at character 6"),
    ("id = ?", "placeholder '?' at character 6"),
    # functions with side effects or outside the allow-list
    ("sleep(10) = 0", "function 'SLEEP' at character 1 ('sleep(10) = 0'); accepted: the functions LOWER, "),
    ("benchmark(1000000, md5('x')) = 0", "function 'BENCHMARK' at character 1"),
    ("load_file('/etc/passwd') is null", "function 'LOAD_FILE' at character 1"),
    ("id = 1 and get_lock('x', 10) = 1", "function 'GET_LOCK'"),
    ("user() = 'root'", "function 'USER' at character 1"),
    ("current_user = 'root'", "the construct CurrentUser"),
    ("database() = 'x'", "the construct CurrentSchema"),
    ("repeat(name, 1000000) = 'x'", "the construct Repeat"),
    ("lpad(name, 1000000, 'x') = 'x'", "the construct Pad"),
    ("count(*) > 1", "the construct Count"),
    ("values(id) = 1", "function 'VALUES'"),
    # operators, types, constructs outside the allow-list
    ("name regexp 'a.*'", "the construct RegexpLike"),
    ("name rlike 'a.*'", "the construct RegexpLike"),
    ("name sounds like 'x'", "the construct Soundex"),
    ("match(name) against ('x')", "the construct MatchAgainst"),
    ("name collate utf8mb4_bin = 'x'", "the construct Collate"),
    ("name = _latin1'x'", "the construct Introducer (\"_latin1 'x'\") at character 8"),
    ("name ilike 'x'", "the construct ILike"),
    ("payload->>'$.k' = 'x'", "the construct JSONExtractScalar"),
    ("cast(id as json) = 1", "type 'JSON'"),
    ("cast(id as char(99999999)) = '1'", "type modifier '99999999' of CHAR"),
    ("day > now() - interval 1 day_hour", "interval unit"),
    # columns
    ("foo = 1", "unknown column 'foo' at character 1 ('foo = 1'); accepted: columns of the table: id, qty, name, "),
    ("t.id = 1", "the qualified name or '*' 't.id' at character 1"),
    ("inventory.t.id = 1", "the qualified name or '*'"),
    ("`ID ` = 1", "unknown column 'ID '"),
    # malformed text
    ("name = 'abc", "unreadable"),
    ("id = 1\x00", "a NUL character at character 7 ('\\x00'); accepted: text without NUL characters"),
    ("id =", "not an SQL expression"),
    ("", "filter: empty; accepted: a boolean expression"),
    (" \n\t", "filter: empty; accepted: a boolean expression"),
    # not boolean
    ("name", "column `name` (varchar(20)) used as the filter at character 1 ('name'); accepted: a condition on it"),
    ("id", "column `id` (int(11)) used as the filter at character 1"),
    ("1", "the literal 1 used as the filter at character 1"),
    ("'t'", "the literal 't' used as the filter at character 1"),
    ("null", "the literal NULL used as the filter"),
    ("id + 1", "a number expression ('`id` + 1') used as the filter"),
    ("lower(name)", "a text expression"),
    ("active and name", "column `name` (varchar(20)) used as an operand of AND at character 12"),
    ("active or 1", "the literal 1 used as an operand of OR at character 11"),
    ("not id", "column `id` (int(11)) used as the operand of NOT at character 5"),
])
def test_rejected(text: str, problem: str) -> None:
    reason = rejected(text)
    assert problem in reason, reason


def test_unknown_column_on_a_table_without_columns() -> None:
    assert rejected("id = 1", {}).startswith("filter: unknown column 'id' at character 1 ('id = 1'); accepted: "
                                             "columns of the table, which has none")


def test_nesting_and_size_limits() -> None:
    assert "nested too deeply" in rejected("(" * 1000 + "id = 1" + ")" * 1000)
    assert "nested too deeply" in rejected("not " * 1000 + "active")
    assert "nested too deeply" in rejected("lower(" * 200 + "name" + ")" * 200 + " = 'x'")
    assert "nested too deeply" in rejected("- " * 5000 + "id = 1")
    assert "nested too deeply" in rejected("+".join(["1"] * 1000) + " = id")
    assert f"at most {MAX_DEPTH} levels" in rejected("+".join(["1"] * 100) + " = id")
    assert ok("lower(" * 20 + "name" + ")" * 20 + " = 'x'").startswith("LOWER(LOWER(")
    assert ok("(" * 30 + "id = 1" + ")" * 30) == "(" * 30 + "`id` = 1" + ")" * 30
    assert "characters long" in rejected("id = 1 and " * 10000 + "active")
    assert ok("id = 1 and " * 2000 + "active").count("AND") == 2000
    assert ok("id in (" + ", ".join(str(i) for i in range(5000)) + ")").startswith("`id` IN (0, 1, 2")


def test_errors_are_signal_errors_not_other_exceptions() -> None:
    with pytest.raises(SignalError, match="expected a string"):
        compile_mariadb_filter(None, COLUMNS)  # type: ignore[arg-type]


_fragments = st.sampled_from([
    "id", "name", "active", "`Mixed`", "`pct%`", "`x", "'", "'a'", "'a%'", "'\\", "\"", "1", "1.5", "9" * 30, ".", "e",
    "=", "<>", "!=", "<=>", "<", ">=", "+", "-", "*", "/", "%", "DIV", "MOD", "(", ")", ",", ";", "--", "-- ", "#",
    "/*", "*/", "/*!", "@", "@@", "?", ":x", "AND", "OR", "&&", "||", "!", "XOR", "NOT", "IS", "NULL", "TRUE", "IN",
    "BETWEEN", "LIKE", "ESCAPE", "CAST", "AS", "CHAR", "SIGNED", "INTERVAL", "DAY", "lower", "coalesce", "now()",
    "sleep", "SELECT", "UNION", "ORDER BY", "->>", "_latin1", "COLLATE", "x'41'", "b'1'", "'2026-01-01'", " ", "\n",
    "\\", "\x00", "é", "ſ", "İ",
])


def _only_signal_errors(text: str) -> None:
    try:
        result = compile_mariadb_filter(text, COLUMNS)
    except SignalError:
        return
    assert isinstance(result, str)
    assert compile_mariadb_filter(result, COLUMNS) == result


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_fragments, max_size=30).map(" ".join))
def test_token_soup_only_signal_errors(text: str) -> None:
    _only_signal_errors(text)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=120))
def test_arbitrary_text_only_signal_errors(text: str) -> None:
    _only_signal_errors(text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["(", "-", "not ", "lower(", "1 + ", "!", "("]), st.integers(0, 20000))
def test_deep_or_long_input_only_signal_errors(prefix: str, count: int) -> None:
    _only_signal_errors(prefix * count + "id = 1")
