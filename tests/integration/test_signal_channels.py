"""The Kafka signal channel against the real local broker: keys, order, positions, bad records, restarts."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from devtools import StackSettings
from signaller.config import SignallerConfig, config_from_mapping
from signaller.errors import SignalError
from signaller.signals.channels import SignalRecordError
from signaller.signals.channels.kafka import MAX_RECORDS_PER_READ, KafkaSignalChannel
from signaller.signals.model import Signal
from signaller.signals.parsing import parse_action
from tests.kafka_helpers import create_topic, produce

pytestmark = pytest.mark.integration

PREFIX = "pg1"


@pytest.fixture
def signal_topic(stack: StackSettings, unique_name: str) -> Iterator[str]:
    """A unique signal topic name; the topic is deleted after the test."""
    topic = f"signals-{unique_name}"
    yield topic
    admin = AdminClient({"bootstrap.servers": stack.bootstrap_servers})
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        with contextlib.suppress(KafkaException):  # best effort: the test may not have created it
            future.result(30)


def make_config(stack: StackSettings, topic: str, **extra: str) -> SignallerConfig:
    return config_from_mapping({
        "database.hostname": "127.0.0.1", "database.user": "postgres", "database.dbname": "inventory",
        "topic.prefix": PREFIX, "kafka.bootstrap.servers": stack.bootstrap_servers,
        "signal.enabled.channels": "source,kafka", "signal.kafka.topic": topic, **extra,
    })


def value(signal_id: str | None, type_: str = "log", data: Any = None) -> bytes:
    payload: dict[str, Any] = {"type": type_, "data": {"message": f"m-{signal_id}"} if data is None else data}
    if signal_id is not None:
        payload["id"] = signal_id
    return json.dumps(payload).encode()


def read_until(channel: KafkaSignalChannel, count: int, timeout_s: float = 30.0) -> list[Signal | SignalError]:
    """Call ``read()`` (which never waits) until ``count`` entries arrived; then make sure no more come."""
    out: list[Signal | SignalError] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < count and time.monotonic() < deadline:
        out += channel.read()
        time.sleep(0.05)
    assert len(out) >= count, f"only {len(out)} of {count} entries within {timeout_s}s: {out}"
    settle = time.monotonic() + 1.0
    while time.monotonic() < settle:
        out += channel.read()
        time.sleep(0.05)
    return out


def test_reads_signals_in_order_with_offsets_and_creates_the_topic(stack: StackSettings, signal_topic: str) -> None:
    config = make_config(stack, signal_topic)
    with KafkaSignalChannel(config, start_after=None) as channel:
        admin = AdminClient({"bootstrap.servers": stack.bootstrap_servers})
        metadata = admin.list_topics(signal_topic, timeout=10).topics[signal_topic]
        assert metadata.error is None and len(metadata.partitions) == 1
        assert channel.read() == []
        produce(stack.bootstrap_servers, signal_topic, [
            (PREFIX.encode(), value("k-0", "execute-snapshot", {"data-collections": ["public\\.orders"],
                                                               "type": "INCREMENTAL"})),
            (PREFIX.encode(), value("k-1", "pause-snapshot", {})),
            (PREFIX.encode(), value("k-2")),
        ])
        entries = read_until(channel, 3)
    assert [(entry.id, entry.type, entry.position, entry.channel) for entry in entries  # type: ignore[union-attr]
            ] == [("k-0", "execute-snapshot", 0, "kafka"), ("k-1", "pause-snapshot", 1, "kafka"),
                  ("k-2", "log", 2, "kafka")]
    first = entries[0]
    assert isinstance(first, Signal)
    assert first.data == {"data-collections": ["public\\.orders"], "type": "INCREMENTAL"}
    assert parse_action(first).signal_id == "k-0"


def test_other_keys_and_empty_values_are_skipped(stack: StackSettings, signal_topic: str,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    create_topic(stack.bootstrap_servers, signal_topic)
    produce(stack.bootstrap_servers, signal_topic, [
        (b"other-connector", value("x-0")),
        (None, value("x-1")),
        (PREFIX.encode(), value("ok-2")),
        (PREFIX.encode() + b" ", value("x-3")),
        (PREFIX.encode(), None),
        (PREFIX.encode(), b""),
        (PREFIX.upper().encode(), value("x-6")),
        (PREFIX.encode(), value("ok-7")),
    ])
    caplog.set_level("INFO", logger="signaller.signals.channels.kafka")
    with KafkaSignalChannel(make_config(stack, signal_topic), start_after=None) as channel:
        entries = read_until(channel, 2)
    assert [(entry.id, entry.position) for entry in entries] == [("ok-2", 2), ("ok-7", 7)]  # type: ignore[union-attr]
    skipped = [record for record in caplog.records if "skipping" in record.getMessage()]
    assert len(skipped) == 6 and all(record.levelname == "INFO" for record in skipped)


def test_malformed_values_become_errors_and_later_signals_are_still_read(stack: StackSettings,
                                                                         signal_topic: str) -> None:
    create_topic(stack.bootstrap_servers, signal_topic)
    produce(stack.bootstrap_servers, signal_topic, [
        (PREFIX.encode(), b"{not json"),
        (PREFIX.encode(), value("g-1")),
        (PREFIX.encode(), b'{"id": "s-2", "type": "log", "data": "{\\"message\\": \\"x\\"}"}'),
        (PREFIX.encode(), b"\xff\xfe"),
        (PREFIX.encode(), b"[]"),
        (PREFIX.encode(), value(None, "resume-snapshot", {})),
    ])
    with KafkaSignalChannel(make_config(stack, signal_topic), start_after=None) as channel:
        entries = read_until(channel, 6)
    kinds = [type(entry).__name__ for entry in entries]
    assert kinds == ["SignalRecordError", "Signal", "SignalRecordError", "SignalRecordError", "SignalRecordError",
                     "Signal"]
    errors = [entry for entry in entries if isinstance(entry, SignalRecordError)]
    assert [error.position for error in errors] == [0, 2, 3, 4]
    assert errors[0].reason.startswith(f"kafka record {signal_topic}[0] offset 0: value: not valid JSON")
    assert errors[1].signal_id == "s-2"
    assert "a JSON-encoded object inside a string is not accepted" in errors[1].reason
    assert "offset 3: value: not UTF-8 text" in errors[2].reason
    assert "offset 4: value: expected a JSON object, got array" in errors[3].reason
    generated = entries[-1]
    assert isinstance(generated, Signal) and generated.position == 5 and len(generated.id) == 36


def test_restart_after_an_offset_resumes_exactly_there(stack: StackSettings, signal_topic: str) -> None:
    config = make_config(stack, signal_topic)
    create_topic(stack.bootstrap_servers, signal_topic)
    produce(stack.bootstrap_servers, signal_topic, [(PREFIX.encode(), value(f"r-{n}")) for n in range(5)])
    with KafkaSignalChannel(config, start_after=None) as channel:
        first = read_until(channel, 5)
    assert [entry.position for entry in first] == [0, 1, 2, 3, 4]  # type: ignore[union-attr]

    # The caller applied r-0..r-2 and persisted offset 2; then it stopped. Two more signals arrive meanwhile.
    produce(stack.bootstrap_servers, signal_topic, [(PREFIX.encode(), value(f"r-{n}")) for n in range(5, 7)])
    with KafkaSignalChannel(config, start_after=2) as channel:
        resumed = read_until(channel, 4)
    assert [entry.id for entry in resumed] == ["r-3", "r-4", "r-5", "r-6"]  # type: ignore[union-attr]

    # Nothing committed to the group: another channel with the same group still starts where it is told.
    with KafkaSignalChannel(config, start_after=6) as channel:
        time.sleep(1.0)
        assert channel.read() == []
        produce(stack.bootstrap_servers, signal_topic, [(PREFIX.encode(), value("r-7"))])
        latest = read_until(channel, 1)
    assert [(entry.id, entry.position) for entry in latest] == [("r-7", 7)]  # type: ignore[union-attr]
    with KafkaSignalChannel(config, start_after=None) as channel:
        everything = read_until(channel, 8)
    assert [entry.id for entry in everything] == [f"r-{n}" for n in range(8)]  # type: ignore[union-attr]


def test_one_read_returns_at_most_the_batch_limit_without_waiting(stack: StackSettings, signal_topic: str) -> None:
    total = MAX_RECORDS_PER_READ + 50
    create_topic(stack.bootstrap_servers, signal_topic)
    produce(stack.bootstrap_servers, signal_topic, [(PREFIX.encode(), value(f"b-{n}")) for n in range(total)])
    with KafkaSignalChannel(make_config(stack, signal_topic), start_after=None) as channel:
        sizes: list[int] = []
        seen: list[Signal | SignalError] = []
        deadline = time.monotonic() + 30
        while len(seen) < total and time.monotonic() < deadline:
            started = time.monotonic()
            batch = channel.read()
            assert time.monotonic() - started < 0.5, "read() must not wait for records"
            sizes.append(len(batch))
            seen += batch
            time.sleep(0.05)
        assert max(sizes) <= MAX_RECORDS_PER_READ
        assert [entry.position for entry in seen] == list(range(total))  # type: ignore[union-attr]
    channel.close()  # idempotent
    assert channel.read() == []
