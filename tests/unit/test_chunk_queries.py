"""Chunk SQL: keyset pagination by row value, every column as text, ordering by the real column.

The statements are complete SQL (bounds are quoted literals cast to the key's type) and run without a
parameter list, so psycopg2 never reads a ``%`` in a filter, a table or a column name as a placeholder."""

from __future__ import annotations

import pytest

from signaller.errors import SourceError
from signaller.sources.base import ChunkTable
from signaller.sources.postgres.chunk_sql import chunk_query, count_query, max_key_query
from signaller.sources.postgres.sqltext import quote_ident, quote_literal

pytestmark = pytest.mark.unit
SINGLE = ChunkTable("public", "orders", ("id", "note"), (("id", "integer"),))
COMPOSITE = ChunkTable("s", "t", ("a", "b", "v"), (("a", "text"), ("b", "bigint")), "(\"v\" > 3)")
PERCENT = ChunkTable("public", "pct%s", ("id%", "n"), (("id%", "integer"),), "(n LIKE 'a%' AND \"id%\" % 2 = 1)")


def test_first_chunk_has_no_lower_bound_and_orders_by_the_column_not_its_text() -> None:
    sql = chunk_query(SINGLE, None, ("5000",), 1024)
    assert sql == ('SELECT "id" AS c0, "note" AS c1, "id" AS c2 FROM "public"."orders" '
                   "WHERE \"id\" <= '5000'::integer ORDER BY \"id\" LIMIT 1024")


def test_composite_keys_use_row_values_and_the_filter_is_anded() -> None:
    sql = chunk_query(COMPOSITE, ("x", "7"), ("z", "9"), 10)
    assert "WHERE ROW(\"a\", \"b\") > ROW('x'::text, '7'::bigint) AND ROW(\"a\", \"b\") <= ROW('z'::text, " \
           "'9'::bigint) AND ((\"v\" > 3)) ORDER BY \"a\", \"b\" LIMIT 10" in sql


def test_max_key_query_orders_descending_by_the_key_columns() -> None:
    assert max_key_query(COMPOSITE) == ('SELECT "a" AS c0, "b" AS c1 FROM "s"."t" WHERE (("v" > 3)) '
                                        'ORDER BY "a" DESC, "b" DESC LIMIT 1')
    assert '"weird""name"' in max_key_query(ChunkTable("public", 'weird"name', ("id",), (("id", "int"),)))


def test_count_is_bounded_by_the_maximum_key_and_keeps_the_filter() -> None:
    sql = count_query(COMPOSITE, ("z", "9"))
    assert sql == ("SELECT count(*) FROM \"s\".\"t\" WHERE ROW(\"a\", \"b\") <= ROW('z'::text, '9'::bigint) "
                   "AND ((\"v\" > 3))")


def test_bounds_are_literals_that_keep_quotes_backslashes_percent_and_nulls() -> None:
    sql = chunk_query(COMPOSITE, ("it's 100%", None), ("a\\b", "9"), 5)
    assert "ROW('it''s 100%'::text, NULL::bigint)" in sql
    assert "ROW(E'a\\\\b'::text, '9'::bigint)" in sql


def test_percent_in_names_and_filters_is_written_as_is() -> None:
    # No parameter list goes with these statements, so '%' is only ever PostgreSQL's '%'.
    assert chunk_query(PERCENT, ("1",), ("9",), 3) == (
        'SELECT "id%" AS c0, "n" AS c1, "id%" AS c2 FROM "public"."pct%s" WHERE "id%" > \'1\'::integer '
        "AND \"id%\" <= '9'::integer AND ((n LIKE 'a%' AND \"id%\" % 2 = 1)) ORDER BY \"id%\" LIMIT 3")
    assert count_query(PERCENT, ("9",)).endswith(
        "WHERE \"id%\" <= '9'::integer AND ((n LIKE 'a%' AND \"id%\" % 2 = 1))")


def test_quoting() -> None:
    assert quote_ident('a"b%') == '"a""b%"'
    assert quote_literal("a'b") == "'a''b'"
    assert quote_literal("a\\'b") == "E'a\\\\''b'"
    assert quote_literal(None) == "NULL"
    with pytest.raises(SourceError, match="NUL"):
        quote_literal("a\x00b")
    with pytest.raises(SourceError, match="NUL"):
        quote_ident("a\x00b")
