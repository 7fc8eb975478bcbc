"""The apply job against the real Kafka broker and Spark + Delta.

Synthetic Debezium envelopes (JSON converter with schemas) go to a topic; the job runs with an
``availableNow`` trigger; the Delta table must equal the expected final state row for row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from signaller.devstack import StackSettings
from spark_jobs.apply_changes import start_query
from spark_jobs.job_config import ApplyJobConfig
from tests.kafka_helpers import create_topic, produce

pytestmark = pytest.mark.spark

ROW_FIELDS = [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {"type": "int64", "optional": True, "field": "qty"},
]


def envelope(prefix: str, op: str, before: dict[str, Any] | None, after: dict[str, Any] | None,
             commit_lsn: int, lsn: int) -> tuple[bytes, bytes]:
    """A minimal Debezium PostgreSQL change event with its key, both as JsonConverter writes them."""
    row = {"type": "struct", "fields": ROW_FIELDS, "optional": True, "name": f"{prefix}.public.items.Value"}
    schema = {
        "type": "struct", "optional": False, "name": f"{prefix}.public.items.Envelope", "version": 2,
        "fields": [
            {**row, "field": "before"}, {**row, "field": "after"},
            {"type": "struct", "optional": False, "field": "source", "fields": [
                {"type": "int64", "optional": True, "field": "lsn"},
                {"type": "string", "optional": True, "field": "sequence"}]},
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
        ],
    }
    payload = {"before": before, "after": after, "op": op, "ts_ms": 1,
               "source": {"lsn": lsn, "sequence": json.dumps([str(commit_lsn), str(lsn)])}}
    rid = (after or before or {})["id"]
    key = {"schema": {"type": "struct", "optional": False, "name": f"{prefix}.public.items.Key",
                      "fields": [ROW_FIELDS[0]]}, "payload": {"id": rid}}
    return json.dumps(key).encode(), json.dumps({"schema": schema, "payload": payload}).encode()


def run_job(spark: Any, stack: StackSettings, topic: str, tmp: Path) -> str:
    cfg = ApplyJobConfig(
        bootstrap_servers=stack.bootstrap_servers, subscribe=topic, target_root=str(tmp / "delta"),
        checkpoint_location=str(tmp / "checkpoint"), available_now=True, topic_prefix=topic.rsplit(".", 2)[0],
    )
    query = start_query(spark, cfg)
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    return str(tmp / "delta" / "public" / "items")


def table_rows(spark: Any, path: str) -> dict[int, tuple[Any, ...]]:
    return {r.id: (r.name, r.qty) for r in spark.read.format("delta").load(path).collect()}


def test_merge_applies_newest_version_per_key(spark: Any, stack: StackSettings, tmp_path: Path,
                                              unique_name: str) -> None:
    prefix = f"t{unique_name}"
    topic = f"{prefix}.public.items"
    create_topic(stack.bootstrap_servers, topic)
    a1, a2, b1, c1 = {"id": 1, "name": "a", "qty": 1}, {"id": 1, "name": "a2", "qty": 2}, \
        {"id": 2, "name": "b", "qty": 5}, {"id": 3, "name": "c", "qty": 7}
    events = [
        envelope(prefix, "c", None, a1, 100, 90),
        envelope(prefix, "c", None, b1, 100, 95),
        envelope(prefix, "u", a1, a2, 200, 150),
        envelope(prefix, "c", None, a1, 100, 90),  # duplicate of an older event, replayed late
        envelope(prefix, "c", None, c1, 300, 250),
        envelope(prefix, "d", b1, None, 300, 260),
    ]
    produce(stack.bootstrap_servers, topic, [*events, (events[-1][0], None)])  # + Kafka tombstone
    path = run_job(spark, stack, topic, tmp_path)
    assert table_rows(spark, path) == {1: ("a2", 2), 3: ("c", 7)}


def test_replayed_batches_and_late_older_events_change_nothing(spark: Any, stack: StackSettings,
                                                                tmp_path: Path, unique_name: str) -> None:
    prefix = f"t{unique_name}"
    topic = f"{prefix}.public.items"
    create_topic(stack.bootstrap_servers, topic)
    row = {"id": 7, "name": "x", "qty": 1}
    produce(stack.bootstrap_servers, topic, [envelope(prefix, "c", None, row, 100, 90),
                                              envelope(prefix, "d", row, None, 200, 150)])
    path = run_job(spark, stack, topic, tmp_path)
    assert table_rows(spark, path) == {}
    # A late insert older than the delete must not resurrect the row (tombstone kept).
    produce(stack.bootstrap_servers, topic, [envelope(prefix, "c", None, {"id": 7, "name": "old", "qty": 0}, 50, 40)])
    run_job(spark, stack, topic, tmp_path)
    assert table_rows(spark, path) == {}
    # A newer insert after the delete does bring it back.
    produce(stack.bootstrap_servers, topic, [envelope(prefix, "c", None, {"id": 7, "name": "new", "qty": 3}, 300, 290)])
    run_job(spark, stack, topic, tmp_path)
    assert table_rows(spark, path) == {7: ("new", 3)}
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    assert any(h.operation == "MERGE" for h in history)
    cdf = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(path)
    changes = {(r._change_type, r.id, r.name) for r in cdf.collect()}
    assert ("insert", 7, "new") in changes
    assert not any(name == "old" for _, _, name in changes), "the late older insert reached the table"


def test_delete_in_a_later_batch_removes_the_row(spark: Any, stack: StackSettings, tmp_path: Path,
                                                  unique_name: str) -> None:
    """Regression: the batch's plan must not be re-evaluated after its own tombstones are written."""
    prefix = f"t{unique_name}"
    topic = f"{prefix}.public.items"
    create_topic(stack.bootstrap_servers, topic)
    rows = [{"id": i, "name": f"n{i}", "qty": i} for i in range(1, 6)]
    produce(stack.bootstrap_servers, topic, [envelope(prefix, "c", None, r, 100 + r["id"], 90 + r["id"]) for r in rows])
    path = run_job(spark, stack, topic, tmp_path)
    assert set(table_rows(spark, path)) == {1, 2, 3, 4, 5}
    produce(stack.bootstrap_servers, topic, [envelope(prefix, "d", rows[1], None, 300, 290),
                                              envelope(prefix, "d", rows[3], None, 310, 300)])
    run_job(spark, stack, topic, tmp_path)
    assert set(table_rows(spark, path)) == {1, 3, 5}
