"""A change topic read back to its end and replayed as a consumer would.

Replay (:func:`replay`): events in topic order, ``c``/``r``/``u`` put the ``after`` row (a column holding
Debezium's ``__debezium_unavailable_value`` keeps the value it had), ``d`` removes the ``before`` key, ``t``
(TRUNCATE) empties the table; tombstones carry nothing more. Meanwhile it counts streamed events delivered more
than once (same operation, ``source.lsn`` and key: allowed after a crash, counted) and READs older than a
streamed change of their key that came before them in the topic (a READ whose ``n`` is below the largest ``n``
streamed for that key so far: the snapshot overwrote a newer row with an older one).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import Consumer, TopicPartition

from bench.chaos.tables import Rows, TableSpec

UNAVAILABLE = "__debezium_unavailable_value"


def read_topic(bootstrap: str, topic: str, timeout_s: float = 120.0) -> Iterator[dict[str, Any]]:
    """Every non-tombstone value's payload of ``topic``, partition by partition, up to the end offsets now
    (``TimeoutError`` if a partition yields nothing for ``timeout_s``)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-verdict", "enable.auto.commit": False,
                         "enable.partition.eof": True, "log_level": 0})
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        for partition in sorted(metadata.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, partition, low)])
            position = low
            deadline = time.monotonic() + timeout_s
            while position < high:
                messages = consumer.consume(5000, timeout=0.5)
                if messages:
                    deadline = time.monotonic() + timeout_s
                elif time.monotonic() > deadline:
                    raise TimeoutError(f"{topic}[{partition}]: nothing read at offset {position} of {high}")
                for message in messages:
                    offset, body = message.offset(), message.value()
                    if message.error() is not None or offset is None:
                        continue
                    position = offset + 1
                    if body is not None:
                        value = orjson.loads(body)
                        yield value["payload"] if isinstance(value, dict) and "payload" in value else value
                    if position >= high:
                        break
    finally:
        consumer.close()


@dataclass
class Replayed:
    """The replayed table and what was counted on the way."""

    rows: Rows = field(default_factory=dict)
    events: int = 0
    reads: int = 0
    truncates: int = 0
    duplicates: int = 0
    stale_reads: list[dict[str, Any]] = field(default_factory=list)


def replay(spec: TableSpec, payloads: Iterator[dict[str, Any]]) -> Replayed:
    out = Replayed()
    newest: dict[str, int] = {}
    seen: set[tuple[str, Any, str]] = set()
    for payload in payloads:
        op = str(payload.get("op"))
        out.events += 1
        if op == "t":
            out.truncates += 1
            out.rows.clear()
            continue
        before: dict[str, Any] | None = payload.get("before")
        after: dict[str, Any] = payload.get("after") or {}
        key = spec.canonical_key(after if op != "d" else before or {})
        if op == "r":
            out.reads += 1
            if after["n"] < newest.get(key, -1):
                out.stale_reads.append({"key": key, "read_n": after["n"], "newer_streamed_n": newest[key]})
        else:
            identity: tuple[str, Any, str] = (op, payload.get("source", {}).get("lsn"), key)
            if identity in seen:
                out.duplicates += 1
            seen.add(identity)
            for image in (before, after if op != "d" else None):
                if image is not None and isinstance(image.get("n"), int):
                    image_key = spec.canonical_key(image)
                    newest[image_key] = max(newest.get(image_key, -1), image["n"])
        if op == "d":
            out.rows.pop(spec.canonical_key(before or {}), None)
            continue
        if op == "u" and before is not None and all(c in before for c in spec.key):
            old_key = spec.canonical_key(before)
            if old_key != key:
                out.rows.pop(old_key, None)
        previous = out.rows.get(key, {})
        out.rows[key] = {column: previous.get(column, value) if value == UNAVAILABLE else value
                         for column, value in after.items()}
    return out
