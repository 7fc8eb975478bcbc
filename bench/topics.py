"""The consumer side of a benchmark topic: how many records it holds, and when the broker appended one.

Topics made with :data:`bench.scratch.LOG_APPEND_TIME` carry the broker's append instant (ms, the
host clock) in every record's timestamp. That instant is the same kind of "in Kafka" for every
producer, so throughput of the sidecar and of Debezium's Connect worker (which cannot be
instrumented from here) is measured the same way: from the instant the replication slot became
active (:class:`bench.scratch.SlotWatcher`) to the append time of the last record.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition

from devtools import StackSettings


class TopicReader:
    """Reads single records and high watermarks of one-partition topics (partition 0)."""

    def __init__(self, settings: StackSettings) -> None:
        self.consumer = Consumer({
            "bootstrap.servers": settings.bootstrap_servers, "group.id": f"bench-reader-{uuid.uuid4().hex}",
            "enable.auto.commit": False, "fetch.wait.max.ms": 100,
        })

    def close(self) -> None:
        self.consumer.close()

    def __enter__(self) -> TopicReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def high_watermark(self, topic: str) -> int:
        """Records in partition 0 (the offset the next record will get); acks=all records only."""
        _, high = self.consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10, cached=False)
        return int(high)

    def append_time(self, topic: str, offset: int, timeout_s: float = 30.0) -> float:
        """The broker's append instant (seconds since the epoch) of the record at ``offset``."""
        self.consumer.assign([TopicPartition(topic, 0, offset)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msg = self.consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            kind, stamp = msg.timestamp()
            if kind != TIMESTAMP_LOG_APPEND_TIME:
                raise RuntimeError(f"{topic} does not stamp append times (timestamp type {kind})")
            return float(stamp) / 1000
        raise RuntimeError(f"no record at {topic}@{offset} within {timeout_s:.0f}s")

    def wait_for_count(self, topic: str, count: int, timeout_s: float,
                       tick: Callable[[int], None] | None = None, period_s: float = 0.1) -> int:
        """Poll the high watermark until it reaches ``count``; ``tick(high)`` after every poll.
        Returns the high watermark; RuntimeError on timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            high = self.high_watermark(topic)
            if tick is not None:
                tick(high)
            if high >= count:
                return high
            if time.monotonic() > deadline:
                raise RuntimeError(f"{topic} holds {high} of {count} records after {timeout_s:.0f}s")
            time.sleep(period_s)


def rate_between(count: int, start_s: float, end_s: float) -> float:
    """``count / (end_s - start_s)``; NaN if the interval is empty or negative."""
    if end_s <= start_s:
        return float("nan")
    return count / (end_s - start_s)
