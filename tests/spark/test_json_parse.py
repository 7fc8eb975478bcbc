"""``spark_jobs.json_parse``: reading several fields of one JSON text parses it once.

Spark's optimizer splits a ``from_json`` without options into one parse per field read (each with
a schema pruned to that field). The decode path reads five envelope members of every payload, so
the test reads several fields and checks, in the optimized plan, that every ``from_json`` left
is the same one (the full schema: one parse, shared), and that the values are what a parse gives.
The plain ``from_json`` is checked too, so the test fails if Spark stops splitting (the helper
would then be unnecessary) or if the helper stops preventing it."""

from __future__ import annotations

import re
from typing import Any

import pytest

from spark_jobs.decode import PAYLOAD_DDL
from spark_jobs.json_parse import parse_json

pytestmark = pytest.mark.spark

PAYLOADS = [
    '{"before":null,"after":{"id":1},"source":{"lsn":64,"sequence":"[\\"1\\",\\"2\\"]"},"op":"c","ts_ms":5}',
    '{"before":{"id":2},"after":null,"source":{"lsn":128},"op":"d","ts_ms":6}',
    "not json",
]


def _fields(parsed: Any) -> list[Any]:
    from pyspark.sql import functions as F

    return [parsed["op"].alias("op"), parsed["ts_ms"].alias("ts_ms"), parsed["source"]["lsn"].alias("lsn"),
            F.when(parsed["op"] == "d", parsed["before"]).otherwise(parsed["after"]).alias("row")]


def _parses(frame: Any) -> set[str]:
    """The distinct ``from_json`` expressions (schema and options) of the optimized plan."""
    plan = frame._jdf.queryExecution().optimizedPlan().toString()
    return set(re.findall(r"from_json\((.*?), _payload#", plan))


def test_several_fields_share_one_parse(spark: Any) -> None:
    from pyspark.sql import functions as F

    data = spark.createDataFrame([(p,) for p in PAYLOADS], ["_payload"])
    once = data.select(*_fields(parse_json("_payload", PAYLOAD_DDL)))
    split = data.select(*_fields(F.from_json("_payload", PAYLOAD_DDL)))

    assert len(_parses(once)) == 1, _parses(once)
    assert len(_parses(split)) >= 4, "Spark no longer splits a from_json without options: " + str(_parses(split))
    rows = [r.asDict() for r in once.collect()]
    assert rows == [r.asDict() for r in split.collect()]
    assert [(r["op"], r["ts_ms"], r["lsn"], r["row"]) for r in rows] == [
        ("c", 5, 64, "{\"id\":1}"), ("d", 6, 128, "{\"id\":2}"), (None, None, None, None),
    ]
