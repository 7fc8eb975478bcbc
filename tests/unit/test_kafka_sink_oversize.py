"""Records too large for Kafka (issue 10 finding 12): the sink's pre-produce check and
``event.processing.failure.handling.mode``. The producer points at a closed port: nothing is sent,
only the bookkeeping is exercised (the sink's and the checkpoint's, records sent as the
dispatcher sends them)."""

from __future__ import annotations

import orjson
import pytest

from signaller.config import config_from_mapping
from signaller.errors import ConfigError, TerminalSinkError
from signaller.runtime.checkpoint import Checkpoint
from signaller.sinks.kafka import KafkaSink

pytestmark = pytest.mark.unit


class _Topics:
    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit

    def ensure(self, topic: str) -> None:
        pass

    def message_limit(self, topic: str) -> int | None:
        return self.limit


def _sink(mode: str, limit: int | None = None) -> KafkaSink:
    config = {"bootstrap.servers": "127.0.0.1:9", "message.max.bytes": 2000}
    return KafkaSink(config, _Topics(limit), mode)  # type: ignore[arg-type]


def _event(size: int) -> bytes:
    return orjson.dumps({"payload": {"after": {"blob": "x" * size},
                                     "source": {"schema": "public", "table": "big", "lsn": 0x16B3748}}})


def _send(sink: KafkaSink, checkpoint: Checkpoint, topic: str, key: bytes, value: bytes) -> None:
    """As ``EventDispatcher`` sends: in the checkpoint's current group, counted if produced."""
    group = checkpoint.current()
    if sink.send(topic, key, value, group.on_delivery):
        group.pending += 1


KEY = orjson.dumps({"schema": {"type": "struct"}, "payload": {"id": 42}})


def test_fail_mode_names_table_key_lsn_size_limit_and_setting() -> None:
    sink, checkpoint = _sink("fail"), Checkpoint()
    with pytest.raises(TerminalSinkError) as caught:
        _send(sink, checkpoint, "p.public.big", KEY, _event(5000))
    text = str(caught.value)
    for part in ("'p.public.big'", "table public.big", 'key {"id":42}', "LSN 0/16B3748",
                 "limit 2000 (producer.override.message.max.bytes)",
                 "event.processing.failure.handling.mode=warn or skip"):
        assert part in text, text
    assert checkpoint.in_flight() == 0


@pytest.mark.parametrize("mode", ["warn", "skip"])
def test_skip_mode_leaves_the_record_out_and_does_not_hold_back_the_offset(mode: str) -> None:
    sink, checkpoint = _sink(mode), Checkpoint(on_failure=None)
    checkpoint.begin()
    _send(sink, checkpoint, "p.public.big", KEY, _event(5000))
    checkpoint.close_group(1234)
    assert checkpoint.in_flight() == 0
    sink.raise_if_failed()
    assert checkpoint.committable().position == 1234
    [record] = sink.take_skipped()
    assert (record.topic, record.table, record.lsn, record.limit) == ("p.public.big", "public.big", 0x16B3748, 2000)
    assert record.size > 5000
    assert record.key_text == '{"id":42}'
    assert sink.take_skipped() == []


def test_topic_limit_below_the_producer_limit_is_checked_too() -> None:
    sink = _sink("skip", limit=1000)
    _send(sink, Checkpoint(), "p.public.big", KEY, _event(900))
    [record] = sink.take_skipped()
    assert record.limit == 1000 - 256
    assert "max.message.bytes=1000" in record.limit_setting


def test_failure_mode_property_and_max_request_size_mapping() -> None:
    base = {"topic.prefix": "x", "database.hostname": "h", "database.user": "u", "database.dbname": "d"}
    assert config_from_mapping(base).events.failure_handling_mode.value == "fail"
    config = config_from_mapping({**base, "event.processing.failure.handling.mode": "ignore",
                                  "producer.override.max.request.size": "5000"})
    assert config.events.failure_handling_mode.value == "skip"
    assert config.producer_config()["message.max.bytes"] == "5000"
    assert "max.request.size" not in config.producer_config()
    with pytest.raises(ConfigError, match="fail, warn, skip"):
        config_from_mapping({**base, "event.processing.failure.handling.mode": "drop"})
