"""Chunk SQL: keyset pagination by row value, every column as text, ordering by the real column."""

from __future__ import annotations

import pytest

from signaller.snapshot.chunks import ChunkTable, chunk_query, count_query, max_key_query

pytestmark = pytest.mark.unit
SINGLE = ChunkTable("public", "orders", ("id", "note"), (("id", "integer"),))
COMPOSITE = ChunkTable("s", "t", ("a", "b", "v"), (("a", "text"), ("b", "bigint")), "(\"v\" > 3)")


def test_first_chunk_has_no_lower_bound_and_orders_by_the_column_not_its_text() -> None:
    sql, params = chunk_query(SINGLE, None, ("5000",), 1024)
    assert sql == ('SELECT "id" AS c0, "note" AS c1, "id" AS c2 FROM "public"."orders" '
                   'WHERE "id" <= %s::integer ORDER BY "id" LIMIT 1024')
    assert params == ["5000"]


def test_composite_keys_use_row_values_and_the_filter_is_anded() -> None:
    sql, params = chunk_query(COMPOSITE, ("x", "7"), ("z", "9"), 10)
    assert 'WHERE ROW("a", "b") > ROW(%s::text, %s::bigint) AND ROW("a", "b") <= ROW(%s::text, %s::bigint) ' \
           'AND (("v" > 3)) ORDER BY "a", "b" LIMIT 10' in sql
    assert params == ["x", "7", "z", "9"]


def test_max_key_query_orders_descending_by_the_key_columns() -> None:
    assert max_key_query(COMPOSITE) == ('SELECT "a" AS c0, "b" AS c1 FROM "s"."t" WHERE (("v" > 3)) '
                                        'ORDER BY "a" DESC, "b" DESC LIMIT 1')
    assert '"weird""name"' in max_key_query(ChunkTable("public", 'weird"name', ("id",), (("id", "int"),)))


def test_count_is_bounded_by_the_maximum_key_and_keeps_the_filter() -> None:
    sql, params = count_query(COMPOSITE, ("z", "9"))
    assert sql == ('SELECT count(*) FROM "s"."t" WHERE ROW("a", "b") <= ROW(%s::text, %s::bigint) AND (("v" > 3))')
    assert params == ["z", "9"]
