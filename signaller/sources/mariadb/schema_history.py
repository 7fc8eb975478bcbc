"""The schema history topic (``schema.history.internal.kafka.topic``), as Debezium's ``KafkaSchemaHistory`` keeps
it: one partition, kept forever (``cleanup.policy=delete``, ``retention.ms`` Long.MAX_VALUE,
``retention.bytes=-1``), created on first use; each record a JSON document with no key
(:func:`~signaller.sources.mariadb.schema_records.history_record`).

:meth:`KafkaSchemaHistory.store` writes records and returns once Kafka acknowledged every one (acks=all), so a
history record is durable before the offsets of anything after its statement are committed;
:meth:`KafkaSchemaHistory.read` reads the whole topic back, in order (what a restart rebuilds the schema from).
A failure is a ``TransientSourceError`` (the session restarts from the stored offsets; the history is read
again), a topic that is missing or empty while offsets are stored a ``TerminalSourceError`` saying what to do
(:func:`missing_history`). Used from one thread at a time (the reader thread, or the loop's before it starts).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from signaller.errors import TerminalSourceError, TransientSourceError

__all__ = ["HISTORY_TOPIC_CONFIG", "KafkaSchemaHistory", "missing_history"]

log = logging.getLogger("signaller.source")

HISTORY_TOPIC_CONFIG: Final = {"cleanup.policy": "delete", "retention.ms": str(2**63 - 1), "retention.bytes": "-1"}
"""Debezium's settings of a schema history topic it creates (one partition)."""
_TIMEOUT_S = 30.0


def missing_history(topic: str) -> TerminalSourceError:
    """The error of a restart with stored offsets and no schema history (Debezium's "The db history topic is
    missing"): the schema at the stored position is unknown, and decoding rows with today's schema could be
    wrong."""
    msg = (f"the schema history topic {topic!r} (schema.history.internal.kafka.topic) is missing or empty, but "
           "offsets are stored: the table schemas at the stored binlog position are unknown. Either restore the "
           "topic, or take a new schema snapshot: delete the stored offsets (the stream then starts at the "
           "server's current position; send an execute-snapshot signal for the rows in between)")
    return TerminalSourceError(msg)


class KafkaSchemaHistory:
    """One connector's schema history topic (see the module docstring); ``client_config`` the Kafka client
    settings (``bootstrap.servers`` = ``schema.history.internal.kafka.bootstrap.servers``)."""

    def __init__(self, topic: str, client_config: dict[str, Any], replication: int = 1) -> None:
        self.topic = topic
        self._client_config = client_config
        self._replication = replication
        self._producer: Producer | None = None

    def exists(self) -> bool:
        """Whether the topic exists."""
        try:
            metadata = AdminClient(self._client_config).list_topics(timeout=_TIMEOUT_S)
        except KafkaException as exc:
            raise self._failed("list the topics", exc) from exc
        return self.topic in metadata.topics

    def create(self) -> None:
        """Create the topic (one partition, :data:`HISTORY_TOPIC_CONFIG`) unless it exists."""
        if self.exists():
            return
        admin = AdminClient(self._client_config)
        futures = admin.create_topics([NewTopic(self.topic, num_partitions=1, replication_factor=self._replication,
                                                config=dict(HISTORY_TOPIC_CONFIG))])
        try:
            futures[self.topic].result(_TIMEOUT_S)
            log.info("created the schema history topic %s", self.topic)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if not (isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS):
                raise self._failed("create the topic", exc) from exc

    def store(self, values: Sequence[bytes]) -> None:
        """Append ``values`` in order and wait until Kafka acknowledged all of them."""
        if not values:
            return
        if self._producer is None:
            self._producer = Producer({**self._client_config, "acks": "all", "enable.idempotence": True,
                                       "max.in.flight.requests.per.connection": 1})
        failures: list[str] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                failures.append(str(err))

        try:
            for value in values:
                self._producer.produce(self.topic, value, None, partition=0, on_delivery=delivered)
            left = self._producer.flush(_TIMEOUT_S)
        except (KafkaException, BufferError) as exc:
            raise self._failed("write", exc) from exc
        if failures or left:
            detail = failures[0] if failures else f"{left} record(s) unacknowledged after {_TIMEOUT_S:.0f}s"
            msg = f"cannot write the schema history topic {self.topic!r}: {detail}"
            raise TransientSourceError(msg)

    def read(self) -> list[dict[str, Any]]:
        """Every record of the topic, in order, parsed; ``TerminalSourceError`` naming the offset of a record that
        is not a JSON document."""
        consumer = Consumer({**self._client_config, "group.id": f"signaller-history-{self.topic}",
                             "enable.auto.commit": False, "enable.partition.eof": True})
        records: list[dict[str, Any]] = []
        try:
            partition = TopicPartition(self.topic, 0)
            _low, high = consumer.get_watermark_offsets(partition, timeout=_TIMEOUT_S)
            if high <= 0:
                return records
            consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
            offset = -1
            while offset < high - 1:
                message = consumer.poll(_TIMEOUT_S)
                if message is None:
                    msg = f"reading the schema history topic {self.topic!r} stalled at offset {offset + 1} of {high}"
                    raise TransientSourceError(msg)
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        break
                    msg = f"cannot read the schema history topic {self.topic!r}: {error.str()}"
                    raise TransientSourceError(msg)
                offset = message.offset() or 0
                try:
                    document = json.loads(message.value() or b"null")
                except ValueError as exc:
                    document = exc
                if not isinstance(document, dict):
                    msg = (f"the schema history topic {self.topic!r} has a record that is not a JSON document at "
                           f"offset {offset}: {message.value()!r:.200}")
                    raise TerminalSourceError(msg)
                records.append(document)
        except KafkaException as exc:
            raise self._failed("read", exc) from exc
        finally:
            consumer.close()
        return records

    def close(self) -> None:
        """Flush and drop the producer; never raises."""
        producer, self._producer = self._producer, None
        if producer is not None:
            try:
                producer.flush(5)
            except Exception as exc:  # closing: nothing left to report to
                log.debug("schema history producer flush on close: %s", exc)

    def _failed(self, what: str, exc: BaseException) -> TransientSourceError:
        return TransientSourceError(f"schema history topic {self.topic!r}: cannot {what}: {exc}")
