"""MariaDB chunk SQL: keyset bounds in the expanded OR form, literals typed by the key column, complete
statements run without a parameter list (a '%' in a filter or a name is never a placeholder)."""

from __future__ import annotations

import pytest

from signaller.errors import SourceError
from signaller.sources.base import ChunkTable
from signaller.sources.mariadb.chunk_sql import (
    chunk_query,
    count_query,
    key_literal,
    max_key_query,
    quote_ident,
    quote_literal,
    schema_version_sql,
    version_probe,
)

pytestmark = pytest.mark.unit
SINGLE = ChunkTable("inventory", "orders", ("id", "note"), (("id", "int(11)"),))
COMPOSITE = ChunkTable("db", "t", ("a", "b", "v"), (("a", "varchar(10)"), ("b", "bigint(20) unsigned")), "(`v` > 3)")
TRIPLE = ChunkTable("db", "t3", ("x",), (("a", "int"), ("b", "int"), ("c", "int")))


def test_first_chunk_has_only_the_upper_bound() -> None:
    assert chunk_query(SINGLE, None, ("5000",), 1024) == (
        "SELECT `id` AS c0, `note` AS c1, `id` AS c2 FROM `inventory`.`orders` WHERE `id` <= 5000 "
        "ORDER BY `id` LIMIT 1024")


def test_composite_bounds_are_expanded_and_the_filter_is_anded() -> None:
    assert chunk_query(COMPOSITE, ("x", "7"), ("z", "9"), 10) == (
        "SELECT `a` AS c0, `b` AS c1, `v` AS c2, `a` AS c3, `b` AS c4 FROM `db`.`t` "
        "WHERE ((`a` > 'x') OR (`a` = 'x' AND `b` > 7)) AND ((`a` < 'z') OR (`a` = 'z' AND `b` <= 9)) "
        "AND ((`v` > 3)) ORDER BY `a`, `b` LIMIT 10")
    assert "((`a` > 1) OR (`a` = 1 AND `b` > 2) OR (`a` = 1 AND `b` = 2 AND `c` > 3))" in chunk_query(
        TRIPLE, ("1", "2", "3"), None, 5)


def test_max_key_and_count() -> None:
    assert max_key_query(COMPOSITE) == ("SELECT `a` AS c0, `b` AS c1 FROM `db`.`t` WHERE ((`v` > 3)) "
                                        "ORDER BY `a` DESC, `b` DESC LIMIT 1")
    assert count_query(COMPOSITE, ("z", "9")) == (
        "SELECT COUNT(*) FROM `db`.`t` WHERE ((`a` < 'z') OR (`a` = 'z' AND `b` <= 9)) AND ((`v` > 3))")


def test_names_and_strings_are_quoted_for_the_session_sql_mode() -> None:
    assert quote_ident("we`ird%s") == "`we``ird%s`"
    assert quote_literal("it's a \\ \x00 \n") == "'it\\'s a \\\\ \\0 \\n'"
    assert quote_literal(None) == "NULL"
    with pytest.raises(SourceError, match="NUL"):
        quote_ident("a\x00")
    table = ChunkTable("d%s", "t`", ("pct%",), (("pct%", "varchar(5)"),), "(`pct%` LIKE 'a%')")
    assert chunk_query(table, ("a%s",), None, 1) == (
        "SELECT `pct%` AS c0, `pct%` AS c1 FROM `d%s`.`t``` WHERE `pct%` > 'a%s' AND ((`pct%` LIKE 'a%')) "
        "ORDER BY `pct%` LIMIT 1")


@pytest.mark.parametrize(("value", "sql_type", "literal"), [
    ("-12", "int(11)", "-12"), ("18446744073709551615", "bigint(20) unsigned", "18446744073709551615"),
    ("2024", "year(4)", "2024"), ("12.50", "decimal(10,2)", "12.50"), ("1e300", "double", "1e300"),
    ("0a", "bit(8)", "10"), ("00ff", "varbinary(4)", "X'00ff'"), ("", "binary(0)", "X''"),
    ("2026-01-01 00:00:00", "datetime", "'2026-01-01 00:00:00'"), ("x'", "varchar(5)", "'x\\''"),
    ("red", "enum('red','blue')", "'red'"),
])
def test_key_literals_follow_the_column_type(value: str, sql_type: str, literal: str) -> None:
    assert key_literal(value, sql_type) == literal


@pytest.mark.parametrize(("value", "sql_type"), [
    ("1 OR 1=1", "int(11)"), ("1.5", "int"), ("1;", "decimal(5,2)"), ("nan", "double"), ("0g", "varbinary(2)"),
    ("abc", "binary(2)"),
])
def test_key_literals_refuse_text_the_type_cannot_hold(value: str, sql_type: str) -> None:
    with pytest.raises(SourceError, match="key value"):
        key_literal(value, sql_type)


def test_the_version_probe_names_the_table_and_computes_the_catalogs_version() -> None:
    probe = version_probe(ChunkTable("in`v", "o'rders", ("id",), (("id", "int(11)"),)))
    version = schema_version_sql("'in`v'", "'o\\'rders'")
    assert probe == f"{version}, (SELECT 1 FROM `in``v`.`o'rders` LIMIT 0)"
    assert "v.TABLE_SCHEMA = 'in`v' AND v.TABLE_NAME = 'o\\'rders'" in version
    assert "ORDER BY v.ORDINAL_POSITION" in version
    for column in ("COLUMN_NAME", "COLUMN_TYPE", "IS_NULLABLE", "ORDINAL_POSITION"):
        assert f"v.{column}" in version
