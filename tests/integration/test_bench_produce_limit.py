"""The snapshot bench's machine-limit figures (bench/produce_limit.py): the records it times are the
sidecar's own READ records, and producing them really lands every one in Kafka."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient

from bench import produce_limit
from devtools import StackSettings
from signaller.model import ChangeEvent, Op, TableId

pytestmark = pytest.mark.integration


def test_rendered_records_are_the_sidecars_read_events() -> None:
    ser = produce_limit.serializer("bench_snapshot_9", "limit-test")
    records, seconds = produce_limit.render(ser, 50)
    assert len(records) == 50 and seconds > 0
    for key in (1, 17, 50):
        row = produce_limit.table_row(key)
        event = ChangeEvent(Op.READ, TableId("public", "bench_snapshot_9"), None, row, 1000, None, 999, None,
                            produce_limit.COMMIT_TS_US, "incremental")
        assert records[key - 1] == (ser.serialize_key(row),
                                    ser.serialize_value(event, ts_us_now=produce_limit.COMMIT_TS_US))
        assert b'"op":"r"' in records[key - 1][1] and b'"snapshot":"incremental"' in records[key - 1][1]


def test_every_produced_record_is_acknowledged_and_the_topic_removed(stack: StackSettings) -> None:
    records, _ = produce_limit.render(produce_limit.serializer("bench_snapshot_9", "limit-test"), 2_000)
    before = set(AdminClient({"bootstrap.servers": stack.bootstrap_servers}).list_topics(timeout=10).topics)
    rate = produce_limit.produce_rate(stack, records, repeats=2)
    assert rate > 0
    after = set(AdminClient({"bootstrap.servers": stack.bootstrap_servers}).list_topics(timeout=10).topics)
    assert not {t for t in after - before if t.startswith("bench-produce-limit-")}
