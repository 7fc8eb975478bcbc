"""``KafkaSink.send_many`` (the snapshot READs' batched produce) against the real broker: every record is produced
once, in order per key, across partitions; records the producer's queue had no room for are sent again in order
once it has; a record over the topic's limit is left out (``skip``) without reordering the others; every produced
record gets its delivery report."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.settings import StackSettings
from signaller.sinks.kafka import KafkaSink, TopicManager
from tests.kafka_helpers import read_all

pytestmark = pytest.mark.integration


def test_batches_keep_every_record_in_order_through_a_full_queue(stack: StackSettings, unique_name: str) -> None:
    client = {"bootstrap.servers": stack.bootstrap_servers}
    topic = f"batches_{unique_name}"
    sink = KafkaSink({**client, "queue.buffering.max.messages": 64, "message.max.bytes": 20_000},
                     TopicManager(client, 3, 1), "skip")
    reports: list[bytes | None] = []

    def on_delivery(err: object, msg: object) -> None:
        assert err is None, err
        reports.append(msg.key())  # type: ignore[attr-defined]

    records: list[tuple[bytes | None, bytes | None]] = [
        (b"k%d" % (n % 7), b"x" * 30_000 if n == 500 else b"v%d" % n) for n in range(1000)]
    records.append((None, b"keyless"))
    produced = sink.send_many(topic, records, on_delivery)
    sink.flush(30)
    assert produced == 1000 and sink.produced == 1000
    assert [skipped.size for skipped in sink.take_skipped()] == [30_002]
    assert len(reports) == 1000
    got = read_all(stack.bootstrap_servers, topic)
    assert len(got) == 1000
    for key in {key for key, _ in records if key is not None}:
        sent = [value for k, value in records if k == key and value != b"x" * 30_000]
        assert [value for k, value, *_ in got if k == key] == sent, f"order of key {key!r}"
    assert sink.queued == 0


def test_topics_are_created_once_with_their_settings_and_existing_ones_kept(stack: StackSettings,
                                                                           unique_name: str) -> None:
    """``TopicManager.ensure`` looks at the one topic (not the cluster's list): a missing topic is created with the
    configured partitions, an existing one is left as it is."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    client: dict[str, Any] = {"bootstrap.servers": stack.bootstrap_servers}
    admin = AdminClient(client)
    existing, missing = f"kept_{unique_name}", f"made_{unique_name}"
    admin.create_topics([NewTopic(existing, num_partitions=2, replication_factor=1)])[existing].result(30)
    topics = TopicManager(client, 3, 1)
    topics.ensure(existing)
    topics.ensure(missing)
    topics.ensure(missing)  # known: no second check
    metadata = admin.list_topics(timeout=10)
    assert len(metadata.topics[existing].partitions) == 2
    assert len(metadata.topics[missing].partitions) == 3
