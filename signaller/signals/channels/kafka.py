"""The ``kafka`` signal channel: Debezium's ``KafkaSignalChannel`` with positions kept by the caller.

Like Debezium: the consumer is ``assign()``-ed to partition 0 of ``signal.kafka.topic`` (other
partitions are never read), records whose key is not exactly ``topic.prefix`` are skipped (logged at
INFO) so several connectors can share one topic, empty values (tombstones) are skipped, the value is
``{"id": ..., "type": ..., "data": {...}}`` with ``id`` optional (a UUID is generated) and ``data`` a
nested JSON object. Consumer settings are ``SignallerConfig.signal_consumer_config()``
(``signal.consumer.*`` included).

Unlike Debezium: offsets are not auto-committed to the consumer group. The caller stores the offset of
the last applied signal with its own durable state and passes it back as ``start_after``, so a crash
can neither lose a signal nor apply one twice (Debezium's auto-commit is at-least-once). A record that
cannot be parsed, or is larger than ``MAX_SIGNAL_BYTES`` (1 MiB, the HTTP body limit), becomes a
``SignalRecordError`` entry naming its offset instead of being only logged; ``read()`` never raises for
a record's content.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from signaller.config import SignallerConfig
from signaller.errors import SignalError, TransientSinkError
from signaller.signals.channels import MAX_SIGNAL_BYTES, SignalRecordError
from signaller.signals.model import Signal
from signaller.signals.parsing import signal_from_json

__all__ = ["MAX_RECORDS_PER_READ", "KafkaSignalChannel"]

log = logging.getLogger(__name__)

MAX_RECORDS_PER_READ = 100
"""At most this many records are consumed by one ``read()``; the rest wait for the next call."""

_PARTITION = 0
_ADMIN_TIMEOUT_S = 30.0
# librdkafka consumer-only settings, dropped from the admin client's configuration.
_CONSUMER_ONLY = ("group.", "enable.auto.", "auto.", "session.timeout.ms", "fetch.", "heartbeat.interval.ms",
                  "max.poll.interval.ms", "partition.assignment.strategy", "isolation.level", "check.crcs",
                  "queued.", "max.partition.fetch.bytes", "consume.callback.max.messages", "enable.partition.eof")


class KafkaSignalChannel:
    """Reads signals from partition 0 of ``config.snapshot.signal_kafka_topic``, after offset ``start_after``.

    ``start_after`` is the offset of the last record the caller applied (None: read from the
    beginning). The topic is created with one partition if it does not exist (replication factor
    ``topic.creation.default.replication.factor``). Raises ``TransientSinkError`` if the brokers cannot
    be reached to check or create the topic.
    """

    name = "kafka"
    stores_positions = True
    rejections_notified = True

    def __init__(self, config: SignallerConfig, start_after: int | None) -> None:
        self.topic = config.snapshot.signal_kafka_topic
        self.key = config.topics.prefix.encode("utf-8")
        consumer_config: dict[str, Any] = dict(config.signal_consumer_config())
        self._ensure_topic(config, consumer_config)
        consumer_config["enable.auto.commit"] = False
        consumer_config["enable.auto.offset.store"] = False
        self._consumer: Consumer | None = Consumer(consumer_config)
        start = OFFSET_BEGINNING if start_after is None else start_after + 1
        self._consumer.assign([TopicPartition(self.topic, _PARTITION, start)])
        log.info("kafka signal channel: topic %s partition %d, starting %s", self.topic, _PARTITION,
                 "at the beginning" if start_after is None else f"after offset {start_after}")

    def read(self) -> list[Signal | SignalError]:
        """The records available now (at most ``MAX_RECORDS_PER_READ``), in offset order, without waiting.

        Each ``Signal`` has ``position`` = its offset and ``channel`` = ``"kafka"``. A value that is not a
        valid signal envelope gives a ``SignalRecordError`` (``position`` = its offset) in its place.
        Records with another key, and empty values, are skipped. Consumer errors are logged, not raised.
        """
        consumer = self._consumer
        if consumer is None:
            return []
        out: list[Signal | SignalError] = []
        for _ in range(MAX_RECORDS_PER_READ):
            message = consumer.poll(0)
            if message is None:
                break
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    log.warning("kafka signal channel: consumer error on %s: %s", self.topic, error)
                break
            offset = message.offset()
            entry = self._record(message.key(), message.value(), -1 if offset is None else offset)
            if entry is not None:
                out.append(entry)
        return out

    def _record(self, key: bytes | None, value: bytes | None, offset: int) -> Signal | SignalError | None:
        if key != self.key:
            log.info("kafka signal channel: skipping %s offset %d: key %r is not topic.prefix %r",
                     self.topic, offset, key, self.key.decode("utf-8"))
            return None
        if not value:
            log.info("kafka signal channel: skipping %s offset %d: empty value", self.topic, offset)
            return None
        signal_id: str | None = None
        if len(value) > MAX_SIGNAL_BYTES:
            reason = (f"value: {len(value)} bytes, larger than the limit of {MAX_SIGNAL_BYTES} bytes for one signal; "
                      f"accepted: a JSON signal of at most {MAX_SIGNAL_BYTES} bytes")
        else:
            try:
                return signal_from_json(value, "kafka", position=offset)
            except SignalError as exc:
                reason, signal_id = exc.reason, exc.signal_id
            except Exception as exc:  # parsing is meant to be total; a bug must not stop the channel
                log.warning("kafka signal channel: parsing %s offset %d failed", self.topic, offset, exc_info=True)
                reason = f"value: cannot be parsed ({type(exc).__name__}: {str(exc)[:200]})"
        log.warning("kafka signal channel: %s offset %d is not a valid signal: %s", self.topic, offset, reason)
        return SignalRecordError(f"kafka record {self.topic}[{_PARTITION}] offset {offset}: {reason}",
                                 signal_id, position=offset)

    def close(self) -> None:
        """Close the consumer (nothing is committed: positions belong to the caller). Idempotent."""
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            consumer.close()

    def _ensure_topic(self, config: SignallerConfig, consumer_config: dict[str, Any]) -> None:
        admin_config = {name: value for name, value in consumer_config.items() if not name.startswith(_CONSUMER_ONLY)}
        admin = AdminClient(admin_config)
        try:
            metadata = admin.list_topics(timeout=_ADMIN_TIMEOUT_S)
            existing = metadata.topics.get(self.topic)
            if existing is not None and existing.error is None:
                if len(existing.partitions) > 1:
                    log.warning("kafka signal channel: %s has %d partitions; only partition 0 is read",
                                self.topic, len(existing.partitions))
                return
            replicas = config.kafka.topic_creation_default_replication_factor
            futures = admin.create_topics([NewTopic(self.topic, num_partitions=1, replication_factor=replicas)],
                                          operation_timeout=_ADMIN_TIMEOUT_S)
            for future in futures.values():
                try:
                    future.result(_ADMIN_TIMEOUT_S)
                except KafkaException as exc:
                    if exc.args and getattr(exc.args[0], "code", lambda: None)() == KafkaError.TOPIC_ALREADY_EXISTS:
                        continue
                    raise
            self._await_metadata(admin)
            log.info("kafka signal channel: created topic %s with 1 partition", self.topic)
        except KafkaException as exc:
            raise TransientSinkError(f"signal topic {self.topic}: cannot check or create it: {exc}") from exc

    def _await_metadata(self, admin: AdminClient) -> None:
        """Wait until the brokers' metadata lists the created topic with its partition.

        ``create_topics`` returns once the controller has the topic; a broker's metadata cache may lag
        behind for a moment, and a reader of the topic (or ``list_topics``) then sees
        ``UNKNOWN_TOPIC_OR_PART``. Raises ``TransientSinkError`` if it is not listed within the admin timeout.
        """
        deadline = time.monotonic() + _ADMIN_TIMEOUT_S
        while True:
            listed = admin.list_topics(self.topic, timeout=_ADMIN_TIMEOUT_S).topics.get(self.topic)
            if listed is not None and listed.error is None and listed.partitions:
                return
            if time.monotonic() >= deadline:
                raise TransientSinkError(f"signal topic {self.topic}: created, but the brokers did not list it "
                                         f"within {_ADMIN_TIMEOUT_S:.0f} s")
            time.sleep(0.1)

    def __enter__(self) -> KafkaSignalChannel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
