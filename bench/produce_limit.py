"""The machine's limit for an incremental snapshot's records (issue 13): the same records from memory.

An incremental snapshot of the bench table ends as Kafka records: READ events rendered by the
sidecar's serializer, produced by its producer. :func:`measure` times the two halves of that on
their own, with no database and no window in between:

* ``render``: :class:`signaller.wire.envelope.EnvelopeSerializer` turning the table's rows (Python
  values, as the chunk reader hands them over) into key and value bytes, JSON with schemas;
* ``produce``: those records, rendered beforehand, produced by one producer with the sidecar's
  settings (``KafkaSink``'s: idempotent, ``acks=all``, lz4, 5 ms linger, a delivery callback per
  record; the allocator's thresholds of :mod:`signaller.runtime.allocator`) until every one is acknowledged.

The produce rate is what the broker and librdkafka allow on this machine for these records: a
snapshot cannot beat it. The render rate is the per-row Python work the snapshot's generic path
pays on top. Pure functions apart from :func:`produce_rate` (Kafka).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from devtools import StackSettings
from signaller.config.model import PRODUCER_DEFAULTS
from signaller.model import Column, TableId, TableSchema
from signaller.runtime.allocator import keep_freed_memory
from signaller.sinks.kafka import SINK_DEFAULTS
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.wire.envelope import EnvelopeSerializer

SNAPSHOT_COLUMNS = (
    Column("id", 20, "int8", optional=False, is_key=True),
    Column("a", 23, "int4", optional=False),
    Column("b", 23, "int4"),
    Column("note", 25, "text"),
)
"""The bench's snapshot table (``bench.snapshot.SNAPSHOT_TABLE``) as the sidecar describes it."""
REPEATS = 5
"""The rendered records are produced this many times (one render, a longer timed produce)."""
COMMIT_TS_US = 1_700_000_000_000_000


@dataclass(frozen=True)
class Limit:
    render_rows_per_s: float
    produce_rows_per_s: float
    value_bytes: float


def table_row(key: int) -> dict[str, Any]:
    """Row ``key`` of the bench's snapshot table, as ``bench.snapshot.ensure_table`` fills it."""
    return {"id": key, "a": key % 1000, "b": (key * 7919) % 100000, "note": f"row {key}"}


def serializer(table: str, topic_prefix: str) -> EnvelopeSerializer:
    schema = TableSchema(TableId("public", table), SNAPSHOT_COLUMNS, key=("id",))
    codecs = {c.name: codec_for(c, TypeModes()) for c in SNAPSHOT_COLUMNS}
    return EnvelopeSerializer(schema, codecs, topic_prefix=topic_prefix, database="postgres")


def render(ser: EnvelopeSerializer, rows: int) -> tuple[list[tuple[bytes | None, bytes]], float]:
    """Rows 1..``rows`` as incremental-snapshot READ records rendered the way the sidecar's snapshot
    emits them (``serialize_read``), and the seconds the serializer took."""
    values = [table_row(key) for key in range(1, rows + 1)]
    read = ser.serialize_read
    started = time.perf_counter()
    records = [read(row, 999, 1000, ts_us_now=COMMIT_TS_US) for row in values]
    return records, time.perf_counter() - started


def produce_rate(settings: StackSettings, records: list[tuple[bytes | None, bytes]], repeats: int = REPEATS,
                 ) -> float:
    """Records/s of producing ``records`` ``repeats`` times to a fresh topic (deleted afterwards),
    from the first produce call to the last acknowledgement."""
    topic = f"bench-produce-limit-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
        future.result(30)
    failures: list[str] = []
    acknowledged = [0]

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))
        acknowledged[0] += 1

    config = {**SINK_DEFAULTS, **PRODUCER_DEFAULTS, "bootstrap.servers": settings.bootstrap_servers}
    keep_freed_memory(config)  # the sidecar's allocator settings (``CaptureLoop.run``)
    producer = Producer(config)
    try:
        started = time.perf_counter()
        for _ in range(repeats):
            for index, (key, value) in enumerate(records):
                while True:
                    try:
                        producer.produce(topic, value, key, on_delivery=delivered)
                        break
                    except BufferError:
                        producer.poll(0.01)
                if index % 1000 == 0:
                    producer.poll(0)
        left = producer.flush(120)
        elapsed = time.perf_counter() - started
    finally:
        for future in admin.delete_topics([topic], operation_timeout=30).values():
            with contextlib.suppress(Exception):  # clean-up is best effort
                future.result(30)
    if left or failures or acknowledged[0] != len(records) * repeats:
        msg = f"producing the snapshot's records failed: {left} left, {failures[:3]}"
        raise RuntimeError(msg)
    return len(records) * repeats / elapsed


def measure(settings: StackSettings, table: str, topic_prefix: str, rows: int) -> Limit:
    """Render ``rows`` READ records of ``table`` once, then produce them :data:`REPEATS` times."""
    records, seconds = render(serializer(table, topic_prefix), rows)
    return Limit(render_rows_per_s=rows / seconds, produce_rows_per_s=produce_rate(settings, records),
                 value_bytes=sum(len(v) for _, v in records) / len(records))
