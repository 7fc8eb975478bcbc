"""``spark_jobs.undecodable``: which decoded nulls are dead letters, and what telling them costs.

A value the record carries that does not decode into its column's type sends the record to the
dead-letter table with a reason quoting the value; a JSON null never does. Telling the two apart
re-parses the row image as text, once per record at most, whatever the number of null columns:
the test counts the JSON parses in the decode plan of a table with two and with eight nullable
numeric columns (before, each suspect column had parses of its own). A null is only suspect where
the record may hold a value: its parsed value is not null, or the payload parse reported a value
that did not parse."""

from __future__ import annotations

from typing import Any

import pytest

from signaller.model import Column
from spark_jobs import decode
from spark_jobs.connect_schema import column_spec
from spark_jobs.frame import SchemaCache, SchemaKey, discover, frame, schema_texts
from spark_jobs.json_parse import parse_json
from spark_jobs.undecodable import FAILED, suspect
from tests.spark.cdc_events import Record, SourceTable

pytestmark = pytest.mark.spark


def _table(numbers: int) -> SourceTable:
    columns = [Column("id", 0, "int8", optional=False, is_key=True), Column("seen", 0, "timestamptz")]
    columns += [Column(f"n{i}", 0, "int8") for i in range(numbers)]
    return SourceTable("undecodable", f"wide{numbers}", columns)


def _decoded(spark: Any, table: SourceTable, records: list[Record]) -> Any:
    rows = [(table.topic, 0, i, key, value) for i, (key, value) in enumerate(records)]
    data = spark.createDataFrame(rows, "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY")
    framed = frame(data, split=True)
    found = discover(framed)
    schemas = SchemaCache()
    for key, text in schema_texts(data, [SchemaKey(r._split, r._schema_hash) for r in found], True).items():
        schemas.add(key, text)
    (group,) = decode.groups(spark, framed, None, found, schemas)
    return decode.decode(framed, group, group.columns, group.keys)


def _with_value(record: Record, column: str, text: str) -> Record:
    """``record`` with the after image's ``column`` replaced by the raw JSON ``text``."""
    key, value = record
    assert value is not None
    marker = f'"{column}":null'.encode()
    assert marker in value, value
    return key, value.replace(marker, f'"{column}":{text}'.encode(), 1)


def test_only_values_the_record_carries_are_undecodable(spark: Any) -> None:
    table = _table(2)
    nulls = {"id": "1", "seen": None, "n0": None, "n1": None}
    records = [
        table.event("c", 10, 100, after=nulls),  # JSON nulls everywhere: fine
        table.event("c", 10, 101, after={**nulls, "id": "2", "n0": "7"}),
        _with_value(table.event("c", 10, 102, after={**nulls, "id": "3"}), "n1", '"abc"'),  # parsed as a number
        _with_value(table.event("c", 10, 103, after={**nulls, "id": "4"}), "seen", '"not a time"'),  # as text
    ]
    rows = {r.id: r for r in _decoded(spark, table, records).collect()}

    assert {i: rows[i]._reason for i in rows} == {
        1: None, 2: None,
        3: "undecodable value of column 'n1' (BIGINT → BIGINT): abc",
        4: "undecodable value of column 'seen' (STRING → TIMESTAMP): not a time",
    }
    assert (rows[2].n0, rows[2].n1, rows[2].seen) == (7, None, None)


def test_the_row_image_is_parsed_as_text_once_whatever_the_null_columns(spark: Any) -> None:
    """In the optimized plan: one text parse of the row image (a ``MAP<STRING, STRING>``), and as
    many JSON parses in all for eight nullable numeric columns as for two (before: 8 and 20 text
    parses, 45 and 81 in all)."""
    def parses(numbers: int) -> tuple[int, int]:
        table = _table(numbers)
        row = {"id": "1", "seen": None, **{f"n{i}": None for i in range(numbers)}}
        plan = str(_decoded(spark, table, [table.event("c", 10, 100, after=row)])._jdf.queryExecution()
                   .optimizedPlan().toString())
        return plan.count("from_json(MapType"), plan.count("from_json(")

    spark.conf.set("spark.sql.debug.maxToStringFields", "10000")  # the whole plan, not a truncated one
    try:
        (text_2, all_2), (text_8, all_8) = parses(2), parses(8)
    finally:
        spark.conf.unset("spark.sql.debug.maxToStringFields")
    assert (text_2, text_8) == (1, 1)
    assert all_8 == all_2


def test_the_payload_parse_reports_only_values_that_did_not_parse(spark: Any) -> None:
    """The failed-parse field holds the record's text where a value did not parse into its type,
    and is null for JSON nulls, absent columns and values that parsed."""
    texts = ['{"n":null}', "{}", '{"n":7}', '{"n":"abc"}', '{"n":1.5}', '{"m":1,"n":[1]}']
    data = spark.createDataFrame([(t,) for t in texts], "t STRING")
    parsed = parse_json("t", "STRUCT<n: BIGINT, m: BIGINT>", failed_field=FAILED)
    rows = data.select("t", parsed.alias("p")).collect()

    assert {r.t: (r.p.n, r.p[FAILED]) for r in rows} == {
        '{"n":null}': (None, None), "{}": (None, None), '{"n":7}': (7, None),
        '{"n":"abc"}': (None, '{"n":"abc"}'), '{"n":1.5}': (None, '{"n":1.5}'),
        '{"m":1,"n":[1]}': (None, '{"m":1,"n":[1]}'),
    }


def test_a_null_is_suspect_only_where_the_record_may_hold_a_value(spark: Any) -> None:
    """A decoded null of a number column is checked (the row image parsed again) only where the
    parsed value is not null (its conversion failed) or a value of the record did not parse; a
    record whose nulls are JSON nulls is not."""
    from pyspark.sql import functions as F

    spec = column_spec({"type": "int64", "optional": True, "field": "n"})
    cases = [  # raw (as parsed), decoded, TOAST placeholder, a value of the record did not parse
        ("json null", None, None, False, False, False),
        ("a value did not parse", None, None, False, True, True),
        ("conversion failed", 5, None, False, False, True),
        ("decoded", 5, 5, False, True, False),
        ("placeholder", None, None, True, True, False),
    ]
    data = spark.createDataFrame([c[:5] for c in cases], "case STRING, raw BIGINT, value BIGINT, toast BOOLEAN, "
                                                         "failed BOOLEAN")
    flag = suspect(spec, F.col("raw"), F.col("value"), F.col("toast"), F.col("failed"))
    got = {r.case: r.flag for r in data.select("case", flag.alias("flag")).collect()}

    assert got == {c[0]: c[5] for c in cases}
