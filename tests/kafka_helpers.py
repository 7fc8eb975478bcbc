"""Small Kafka helpers for tests: create a topic, produce records, read a topic to its end."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    for future in futures.values():
        try:
            future.result(30)
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes | None]]) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    count = 0
    for key, value in records:
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
        count += 1
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} records not delivered to {topic}"
    return count


def read_all(bootstrap: str, topic: str, timeout_s: float = 30.0) -> list[tuple[bytes | None, bytes | None, int, int]]:
    """Every record of ``topic`` as ``(key, value, partition, offset)``, read up to the end offsets
    that exist when the call starts."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}",
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
    })
    try:
        meta = consumer.list_topics(topic, timeout=10)
        partitions = sorted(meta.topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        out: list[tuple[bytes | None, bytes | None, int, int]] = []
        pending = {p for p, end in ends.items() if end > 0}
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            out.append((msg.key(), msg.value(), msg.partition(), msg.offset()))
            if msg.offset() + 1 >= ends[msg.partition()]:
                pending.discard(msg.partition())
        assert not pending, f"timed out reading {topic}: partitions {pending} not at their end"
        return out
    finally:
        consumer.close()
