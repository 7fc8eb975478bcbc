"""The sustained-load bench's producer (bench/sustained.py) against the real Kafka: it never offers
more than asked, and every record it counts as delivered is in the topic."""

from __future__ import annotations

import pytest

from bench.sustained import CHUNK, OfferingProducer
from devtools import StackSettings
from tests.kafka_helpers import create_topic, read_all

pytestmark = pytest.mark.integration


class _Changes:
    """``mixed`` as the bench's event generator has it: changes, every tenth a delete followed by its tombstone."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.made = 0

    def mixed(self, changes: int) -> list[tuple[bytes | None, bytes | None]]:
        out: list[tuple[bytes | None, bytes | None]] = []
        for _ in range(changes):
            self.made += 1
            key = str(self.made).encode()
            out.append((key, b'{"op":"u"}'))
            if self.made % 10 == 0:
                out.append((key, None))
        return out


def test_offers_at_most_the_rate_and_counts_what_kafka_holds(stack: StackSettings, unique_name: str) -> None:
    topic = f"offering-{unique_name}"
    create_topic(stack.bootstrap_servers, topic)
    changes = _Changes(topic)
    rate, seconds = 10_000, 1.5
    producer = OfferingProducer(stack.bootstrap_servers, changes, rate, seconds)
    producer.start()
    producer.join(60)
    assert not producer.is_alive() and not producer.errors
    # paced: the chunk due at the end of the window is the last one (without pacing, a machine
    # makes several hundred thousand of these in 1.5 s)
    assert changes.made <= rate * seconds + CHUNK
    assert producer.offered == changes.made
    records = read_all(stack.bootstrap_servers, topic)
    assert producer.delivered == len(records) == changes.made + changes.made // 10
    counts = [count for _, count in producer.samples]
    assert counts == sorted(counts) and counts[-1] == producer.delivered
    assert producer.ended_at - producer.started_at >= seconds - 0.2
