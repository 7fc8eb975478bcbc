"""Framing (``spark_jobs.frame``): the string split of the compact envelope gives what a JSON
parse gives, for every envelope form, and a split that would be wrong is never used.

The reference is the parse path (``frame(..., split=False)``): the same payload text (as JSON
values), the same grouping into schemas, the same schema once parsed. Forms: compact with a
schema, ``"schema":null``, ``"payload":null``, whitespace (not split), other key order (not
split), a payload without envelope, a column named ``payload`` in the row (its ``,"payload":``
comes after the envelope's, which the split finds first), and a schema whose parameters have a
``payload`` key (the split cuts inside the schema: its text is not a JSON object, so the batch is
framed again without splitting and the records are decoded with their real schema)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from spark_jobs import frame as fr
from spark_jobs import sequence

pytestmark = pytest.mark.spark

SCHEMA = {"type": "struct", "fields": [{"field": "after", "type": "struct", "optional": True, "fields": [
    {"field": "id", "type": "int64"}, {"field": "payload", "type": "string", "optional": True}]},
    {"field": "op", "type": "string"}], "optional": False, "name": "t.Envelope"}
TRAP = {**SCHEMA, "parameters": {"other": "y", "payload": "x"}}


def compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def records() -> list[str]:
    payload = {"op": "c", "after": {"id": 1, "payload": 'a,"payload":b'}}
    return [
        compact({"schema": SCHEMA, "payload": payload}),
        compact({"schema": None, "payload": payload}),
        compact({"schema": SCHEMA, "payload": None}),
        json.dumps({"schema": SCHEMA, "payload": payload}),  # whitespace: parsed
        compact({"payload": payload, "schema": SCHEMA}),  # other order: parsed
        compact(payload),  # no envelope
        '{"schema":' + compact(SCHEMA) + ',"payload":{"op":"c","after":{"id":2,"payload":"z"}}}',
    ]


def frame_rows(spark: Any, values: list[str], split: bool) -> list[dict[str, Any]]:
    data = spark.createDataFrame(
        [("t", 0, i, b"k", v.encode()) for i, v in enumerate(values)],
        "topic STRING, partition INT, offset LONG, key BINARY, value BINARY",
    )
    rows = fr.frame(data, split=split, keep_raw=True).orderBy("offset").collect()
    out = []
    for r in rows:
        out.append({"offset": r.offset, "wrapped": r._wrapped, "split": r._split,
                    "schema": json.loads(r._schema_text) if r._schema_text is not None else None,
                    "hashed": r._schema_hash is not None,
                    "payload": json.loads(r._payload) if r._payload is not None else None})
    return out


def test_the_split_gives_what_the_parse_gives_for_every_envelope_form(spark: Any) -> None:
    values = records()
    split = frame_rows(spark, values, split=True)
    parsed = frame_rows(spark, values, split=False)
    for mine, reference in zip(split, parsed, strict=True):
        assert {k: v for k, v in mine.items() if k != "split"} == {k: v for k, v in reference.items() if k != "split"}
    assert [r["split"] for r in split] == [True, True, True, False, False, False, True]
    assert split[0]["payload"]["after"]["payload"] == 'a,"payload":b'  # the row's own "payload" survives


def test_a_split_inside_the_schema_is_detected_and_the_batch_reframed(spark: Any) -> None:
    """A top-level ``payload`` key inside ``parameters`` makes the split cut inside the schema."""
    value = compact({"schema": TRAP, "payload": {"op": "c", "after": {"id": 1}}})
    data = spark.createDataFrame([("t", 0, 0, b"k", value.encode())],
                                 "topic STRING, partition INT, offset LONG, key BINARY, value BINARY")
    framed = fr.frame(data, split=True)
    found = fr.discover(framed)
    keys = [fr.SchemaKey(r._split, r._schema_hash) for r in found]
    cache = fr.SchemaCache()
    for key, text in fr.schema_texts(data, cache.missing(keys), True).items():
        assert not cache.add(key, text)  # the cut text is not a JSON object
    assert any(k.split and cache.failed(k) for k in keys)
    reframed = fr.frame(data, split=False)
    again = fr.discover(reframed)
    keys = [fr.SchemaKey(r._split, r._schema_hash) for r in again]
    for key, text in fr.schema_texts(data, cache.missing(keys), False).items():
        assert cache.add(key, text)
    assert cache.get(keys[0]) == TRAP


def test_schema_cache_keeps_parsed_schemas_and_errors_and_forgets_the_least_recent() -> None:
    cache = fr.SchemaCache(capacity=2)
    a, b, c = (fr.SchemaKey(True, n) for n in (1, 2, 3))
    assert cache.add(a, '{"type":"struct"}') and not cache.add(b, '"text"')
    assert cache.get(a) == {"type": "struct"}
    with pytest.raises(ValueError, match="not a JSON object"):
        cache.get(b)
    assert cache.missing([a, b, c, fr.SchemaKey(True, None)]) == [c]
    cache.get(a)  # a is now the most recent: adding c drops b
    cache.add(c, "{}")
    assert cache.missing([a, b, c]) == [b]


@pytest.mark.parametrize("text", ['["24023128","24023160"]', '[null,"5"]', '["7",null]', "garbage", "[]", None,
                                  '["1","2","3"]', '[ "10" , "20" ]', '["-1","-2"]'])
def test_the_sequence_column_reads_source_sequence_as_the_python_reference(spark: Any, text: str | None) -> None:
    from pyspark.sql import functions as F

    row = spark.createDataFrame([(text, 99, 3)], "s STRING, lsn LONG, o LONG").select(
        sequence.seq_column(F.col("s"), F.col("lsn"), F.col("o")).alias("seq")).first()
    commit, lsn = sequence.parse_sequence(text)
    if text == '["1","2","3"]':  # not a pair: the reference refuses it, the column reads the first two
        commit, lsn = 1, 2
    assert (row.seq.commit_lsn, row.seq.lsn, row.seq.kafka_offset) == (commit or 0, lsn if lsn is not None else 99, 3)


def test_avro_records_are_framed_by_their_schema_id(spark: Any) -> None:
    """``auto``: a value in the Confluent wire format (magic byte 0, 4-byte id) is Avro, any other
    JSON; ``avro``: every record is Avro, one not in the wire format has no schema id."""
    json_value = compact({"schema": SCHEMA, "payload": {"op": "c", "after": {"id": 1}}}).encode()
    avro_value = b"\x00\x00\x00\x01\x2a\x02\x04"  # schema id 298
    data = spark.createDataFrame(
        [("t", 0, 0, b"k", json_value), ("t", 0, 1, b"\x00\x00\x00\x00\x07\x02", avro_value),
         ("t", 0, 2, None, b"\x00")],
        "topic STRING, partition INT, offset LONG, key BINARY, value BINARY",
    )
    auto = {r.offset: r for r in fr.frame(data, fmt="auto").collect()}
    assert [auto[i]._avro for i in range(3)] == [False, True, False]
    assert (auto[1]._schema_hash, auto[1]._key_id, auto[1]._payload, bytes(auto[1]._body)) == (298, 7, None, avro_value)
    assert auto[0]._schema_hash is not None and auto[0]._body is None and auto[0]._key_id is None
    assert json.loads(auto[0]._payload) == {"op": "c", "after": {"id": 1}}
    strict = {r.offset: r for r in fr.frame(data, fmt="avro").collect()}
    assert all(strict[i]._avro for i in range(3))
    assert (strict[0]._schema_hash, strict[1]._schema_hash, strict[2]._schema_hash) == (None, 298, None)
    found = {(r._avro, r._schema_hash): r.key_id for r in fr.discover(fr.frame(data, fmt="auto"))}
    assert found[True, 298] == 7


def test_known_heads_frame_as_the_search_does(spark: Any) -> None:
    """A record carrying its topic's known schema is framed by comparing its first bytes; every
    column equals the search's, for every envelope form, on the known topic and on others. A
    head whose hash is wrong shows: the known path is taken, and only for the known schema."""
    values = records()
    other = {**SCHEMA, "name": "t.Other"}
    values.append(compact({"schema": other, "payload": {"op": "c", "after": {"id": 3, "payload": None}}}))
    rows = [(topic, 0, i, b"k", v.encode()) for topic in ("t", "u") for i, v in enumerate(values)]
    data = spark.createDataFrame(rows, "topic STRING, partition INT, offset LONG, key BINARY, value BINARY")
    searched = {(r.topic, r.offset): r.asDict() for r in fr.frame(data).collect()}
    known_hash = searched[("t", 0)]["_schema_hash"]
    assert known_hash is not None
    heads = {"t": fr.KnownHead(compact(SCHEMA), known_hash)}
    compared = {(r.topic, r.offset): r.asDict() for r in fr.frame(data, heads=heads).collect()}
    assert compared == searched
    # The same with a deliberately wrong hash: exactly the records that carry the known schema on
    # topic "t" (offsets 0, 2 and 6) take it, so the known path is the one that ran for them.
    wrong = {(r.topic, r.offset): r._schema_hash
             for r in fr.frame(data, heads={"t": fr.KnownHead(compact(SCHEMA), 12345)}).collect()}
    carried = [("t", 0), ("t", 2), ("t", 6)]
    assert sorted(k for k, h in wrong.items() if h == 12345) == carried
    assert {k: h for k, h in wrong.items() if h != 12345} == {
        k: r["_schema_hash"] for k, r in searched.items() if k not in carried}
