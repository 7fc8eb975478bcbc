"""The Kafka sink: produces records (idempotent, ``acks=all``) and reports their delivery.

``send(topic, key, value, on_delivery)`` produces one record and returns whether it did;
``on_delivery(error, message)`` is called with Kafka's acknowledgement (or failure) of each
produced record while ``poll`` or ``flush`` serves delivery reports. What acknowledgements add up
to (a committable position and snapshot state) is :mod:`signaller.runtime.checkpoint`'s business,
not the sink's. A delivery error reported back to the sink (:meth:`KafkaSink.delivery_failed`) or
a fatal client error makes the sink *failed*: ``raise_if_failed()`` raises and the runtime
restarts from the stored offset, so nothing after the failure is ever acknowledged.

Records too large for Kafka (``event.processing.failure.handling.mode``): before producing, a
record's size (key + value bytes) is compared with the producer's ``message.max.bytes`` and the
topic's ``max.message.bytes`` (read once per topic, less a batch-framing margin); librdkafka's
own ``MSG_SIZE_TOO_LARGE`` from ``produce()`` is treated the same way. With ``fail`` (Debezium's
default) ``send`` raises :class:`TerminalSinkError` naming the topic, table, key, LSN, size,
limit and the settings to change. With ``warn``/``skip`` the record is not produced (``send``
returns False: it never holds back the committable position, so a restart does not retry it): a warning
with its coordinates is logged and a :class:`SkippedRecord` is queued in ``skipped`` for the
runtime's notification and metric. A broker that still refuses a batch as too large (the topic
limit was lowered while running, or ``batch.size`` exceeds it) makes the sink fail terminally
in every mode: the records of a refused batch cannot be told apart, and skipping them all
would lose records that fit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # type: ignore[attr-defined]

from signaller.errors import TerminalSinkError, TransientSinkError
from signaller.model import format_lsn

log = logging.getLogger("signaller.sink")


DeliveryCallback = Callable[[KafkaError | None, Any], None]
"""Called with each produced record's delivery report: ``(error or None, message)``."""


DEFAULT_MESSAGE_MAX_BYTES = 1_000_000
"""librdkafka's default ``message.max.bytes``."""
BATCH_MARGIN_BYTES = 256
"""Record-batch framing a record needs besides its key and value, kept free below the topic limit."""
FAILURE_MODE_SETTING = "event.processing.failure.handling.mode"
EVENT_PROCESSING = "Event Processing"
"""Notification aggregate of ``RECORD_SKIPPED`` (a record left out under warn/skip)."""


@dataclass(frozen=True, slots=True)
class SkippedRecord:
    """A record left out under ``warn``/``skip``: where it would have gone and why."""

    topic: str
    key: bytes | None
    size: int
    limit: int
    limit_setting: str
    table: str | None
    lsn: int | None

    @property
    def key_text(self) -> str:
        """The key's payload as text, cut to 200 characters (keys are data, not secrets)."""
        return _key_text(self.key)

    def coordinates(self) -> str:
        """Where the record would have gone and why it was left out, for logs and the RECORD_SKIPPED notification."""
        lsn = format_lsn(self.lsn) if self.lsn is not None else "n/a"
        return (f"topic {self.topic!r}, table {self.table or 'n/a'}, key {self.key_text}, LSN {lsn}, "
                f"{self.size} bytes > limit {self.limit} ({self.limit_setting})")


def _key_text(key: bytes | None) -> str:
    if key is None:
        return "null"
    try:
        parsed = orjson.loads(key)
        if isinstance(parsed, dict) and "schema" in parsed and "payload" in parsed:
            parsed = parsed["payload"]
        text = orjson.dumps(parsed).decode()
    except orjson.JSONDecodeError:
        text = key.decode("utf-8", "replace")
    return text if len(text) <= 200 else text[:197] + "..."


def _source_of(value: bytes | None) -> tuple[str | None, int | None]:
    """``(schema.table, lsn)`` of a Debezium change event's ``source`` block, else Nones."""
    if value is None:
        return None, None
    try:
        parsed = orjson.loads(value)
        payload = parsed.get("payload", parsed) if isinstance(parsed, dict) else None
        source = payload.get("source") if isinstance(payload, dict) else None
        if not isinstance(source, dict):
            return None, None
        lsn = source.get("lsn")
        return f"{source.get('schema')}.{source.get('table')}", lsn if isinstance(lsn, int) else None
    except (orjson.JSONDecodeError, AttributeError):
        return None, None


def _too_large_error(exc: KafkaException) -> bool:
    error = exc.args[0] if exc.args else None
    return isinstance(error, KafkaError) and error.code() == KafkaError.MSG_SIZE_TOO_LARGE


class TopicManager:
    """Creates topics on first use with the configured partitions and replication factor."""

    def __init__(self, client_config: dict[str, Any], partitions: int, replication: int) -> None:
        self._admin = AdminClient(client_config)
        self._partitions = partitions
        self._replication = replication
        self._known: set[str] = set()

    def message_limit(self, topic: str) -> int | None:
        """The topic's effective ``max.message.bytes`` (its own or the broker's), None if unknown."""
        try:
            futures = self._admin.describe_configs([ConfigResource("topic", topic)])
            entries = next(iter(futures.values())).result(10)
            return int(entries["max.message.bytes"].value)
        except Exception as exc:  # only a refinement of the producer's own check: never fatal
            log.debug("cannot read max.message.bytes of topic %s: %s", topic, exc)
            return None

    def ensure(self, topic: str) -> None:
        """Create ``topic`` with the configured partitions and replication unless it exists (checked once per topic);
        ``TransientSinkError`` if Kafka cannot create it."""
        if topic in self._known:
            return
        if not self._exists(topic):
            futures = self._admin.create_topics(
                [NewTopic(topic, num_partitions=self._partitions, replication_factor=self._replication)]
            )
            try:
                futures[topic].result(30)
                log.info("created topic %s (%d partitions)", topic, self._partitions)
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                if not (isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS):
                    msg = f"cannot create topic {topic!r}: {exc}"
                    raise TransientSinkError(msg) from exc
        self._known.add(topic)

    def _exists(self, topic: str) -> bool:
        """Whether Kafka describes ``topic`` (one topic's metadata: listing every topic of a large cluster takes
        tens of ms, most of it building Python objects while holding the interpreter lock the capture loop
        needs). False when Kafka says it does not exist; raises ``KafkaException`` when Kafka cannot be asked
        (within 10 s), as listing the topics did."""
        try:
            self._admin.describe_topics(TopicCollection([topic]), request_timeout=10)[topic].result(15)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return False
            raise
        return True


SINK_DEFAULTS: dict[str, Any] = {"partitioner": "murmur2_random", "queue.buffering.max.messages": 500000,
                                 "queue.buffering.max.kbytes": 1048576}
"""librdkafka settings of the sink's producer unless the producer configuration sets them."""


class KafkaSink:
    """One idempotent producer that reports deliveries. Not thread-safe."""

    def __init__(self, producer_config: dict[str, Any], topics: TopicManager, failure_mode: str = "fail") -> None:
        config = {**SINK_DEFAULTS, **producer_config}
        config.setdefault("error_cb", self._on_client_error)
        self._producer = Producer(config)
        self._produce = self._producer.produce
        self._topics = topics
        self._ready_topics: set[str] = set()
        self._failure: KafkaError | None = None
        self._failure_detail: str | None = None
        self.produced = 0
        self._failure_mode = failure_mode
        self._max_bytes = int(config.get("message.max.bytes", DEFAULT_MESSAGE_MAX_BYTES))
        self._limits: dict[str, tuple[int, str]] = {}
        self.skipped: list[SkippedRecord] = []
        """Records left out under warn/skip, for the runtime to notify and count (it clears the list)."""

    # -- producing ------------------------------------------------------------------------
    def send(self, topic: str, key: bytes | None, value: bytes | None, on_delivery: DeliveryCallback) -> bool:
        """Produce one record (creating ``topic`` on first use); True if produced, and then
        ``on_delivery`` gets its delivery report, False if left out as too large (warn/skip).
        Raises ``TerminalSinkError`` for a record too large under ``fail`` or one the client refuses."""
        if topic not in self._ready_topics:
            self.prepare_topic(topic)
        size = (0 if key is None else len(key)) + (0 if value is None else len(value))
        limit, setting = self._limits[topic]
        if size > limit:
            self._too_large(SkippedRecord(topic, key, size, limit, setting, *_source_of(value)))
            return False
        try:
            self._produce(topic, value, key, on_delivery=on_delivery)
        except BufferError:
            self._produce_when_room(topic, key, value, on_delivery)
        except KafkaException as exc:
            if _too_large_error(exc):
                self._too_large(SkippedRecord(topic, key, size, self._max_bytes, "producer.override.message.max.bytes",
                                              *_source_of(value)))
                return False
            msg = f"cannot produce to {topic!r}: {exc}"
            raise TerminalSinkError(msg) from exc
        self.produced += 1
        return True

    def send_many(self, topic: str, records: Iterable[tuple[bytes | None, bytes | None]],
                  on_delivery: DeliveryCallback) -> int:
        """:meth:`send` of each ``(key, value)`` in order, in batches (``Producer.produce_batch``: one call for
        many records); returns how many were produced (each gets its delivery report). A record over the topic's
        limit is handled by :meth:`send` in its place; records the producer's queue had no room for are sent again
        in order, waiting for room. Raises what :meth:`send` raises."""
        if topic not in self._ready_topics:
            self.prepare_topic(topic)
        limit = self._limits[topic][0]
        batch: list[dict[str, Any]] = []
        produced = 0
        for key, value in records:
            if (0 if key is None else len(key)) + (0 if value is None else len(value)) > limit:
                produced += self._produce_batch(topic, batch, on_delivery) + self.send(topic, key, value, on_delivery)
                batch = []
                continue
            batch.append({"key": key, "value": value})
        return produced + self._produce_batch(topic, batch, on_delivery)

    def _produce_batch(self, topic: str, batch: list[dict[str, Any]], on_delivery: DeliveryCallback) -> int:
        """Produce ``batch`` in one call; a record it refused is sent again with :meth:`send` (from the first one
        the queue was full for, every later one was refused too, so the order holds), or, refused for another
        reason than its size or the queue, ends the session."""
        if not batch:
            return 0
        queued: int = self._producer.produce_batch(topic, batch, on_delivery=on_delivery)
        self.produced += queued
        if queued == len(batch):
            return queued
        for message in batch:
            error = message.get("_error")
            if error is None:
                continue
            if error.code() not in (KafkaError._QUEUE_FULL, KafkaError.MSG_SIZE_TOO_LARGE):
                msg = f"cannot produce to {topic!r}: {error.str()}"
                raise TerminalSinkError(msg)
            queued += self.send(topic, message["key"], message["value"], on_delivery)
        return queued

    def prepare_topic(self, topic: str) -> None:
        """Make ``topic`` ready for ``send``: created unless it exists, its record size limit read (what the first
        ``send`` to a topic does otherwise, about 10 ms of Kafka round trips on the caller's thread). May be called
        from another thread, also while ``send`` runs: at worst both check the topic (creating it twice is
        harmless). Raises what ``TopicManager.ensure`` raises."""
        if topic in self._ready_topics:
            return
        self._topics.ensure(topic)
        self._limits[topic] = self._limit_for(topic)
        self._ready_topics.add(topic)  # after its limit: ``send`` never finds it ready without one

    def _limit_for(self, topic: str) -> tuple[int, str]:
        """The size above which a record of ``topic`` cannot be produced, and the setting that sets it."""
        topic_limit = self._topics.message_limit(topic)
        if topic_limit is not None and topic_limit - BATCH_MARGIN_BYTES < self._max_bytes:
            return topic_limit - BATCH_MARGIN_BYTES, (f"the topic's max.message.bytes={topic_limit} less "
                                                      f"{BATCH_MARGIN_BYTES} bytes of framing")
        return self._max_bytes, "producer.override.message.max.bytes"

    def _too_large(self, record: SkippedRecord) -> None:
        """Apply ``event.processing.failure.handling.mode`` to a record Kafka would refuse."""
        if self._failure_mode == "fail":
            msg = (f"cannot produce a record too large for Kafka: {record.coordinates()}; raise that limit (and "
                   f"the broker's/topic's max.message.bytes), or set {FAILURE_MODE_SETTING}=warn or skip to "
                   "leave such records out (logged, notified and counted)")
            raise TerminalSinkError(msg)
        log.warning("left out a record too large for Kafka (%s=%s): %s", FAILURE_MODE_SETTING,
                    self._failure_mode, record.coordinates(),
                    extra={"topic": record.topic, "table": record.table, "lsn": record.lsn, "size": record.size})
        self.skipped.append(record)

    def _refused_by_broker(self, msg: Any) -> None:
        """A delivery report MSG_SIZE_TOO_LARGE: remember which record, for the terminal error."""
        if self._failure_detail is not None:
            return
        key, value = msg.key(), msg.value()
        size = (0 if key is None else len(key)) + (0 if value is None else len(value))
        table, lsn = _source_of(value)
        where = f"topic {msg.topic()!r}, table {table or 'n/a'}, key {_key_text(key)}, " \
                f"LSN {format_lsn(lsn) if lsn is not None else 'n/a'}, {size} bytes"
        self._failure_detail = (
            f"the broker refused a record batch as too large ({where}); records of a refused batch "
            "cannot be left out one by one without losing records that fit: raise the topic's "
            "max.message.bytes (or the broker's message.max.bytes), or lower producer.override.batch.size "
            "below it")

    def _produce_when_room(self, topic: str, key: bytes | None, value: bytes | None,
                           on_delivery: DeliveryCallback) -> None:
        """The producer's queue is full: serve delivery reports until the record fits."""
        while True:
            self._producer.poll(0.05)
            try:
                self._produce(topic, value, key, on_delivery=on_delivery)
                return
            except BufferError:
                continue
            except KafkaException as exc:
                msg = f"cannot produce to {topic!r}: {exc}"
                raise TerminalSinkError(msg) from exc

    # -- delivery reports -----------------------------------------------------------------
    @property
    def queued(self) -> int:
        """Records (and delivery reports) in the producer's queue, not yet acknowledged and served."""
        return len(self._producer)

    def poll(self, timeout_s: float = 0.0) -> None:
        """Serve delivery reports (each record's ``on_delivery``), waiting up to ``timeout_s`` for one."""
        self._producer.poll(timeout_s)

    def flush(self, timeout_s: float) -> None:
        """Serve delivery reports, waiting up to ``timeout_s`` for every outstanding record's."""
        self._producer.flush(timeout_s)

    def delivery_failed(self, err: KafkaError, msg: Any) -> None:
        """A delivery report carried ``err``: the sink is failed from now on (``raise_if_failed``);
        a batch the broker refused as too large makes that failure terminal."""
        if err.code() == KafkaError.MSG_SIZE_TOO_LARGE:
            self._refused_by_broker(msg)
        self._fail(err)

    def raise_if_failed(self) -> None:
        """Raise the delivery failure Kafka reported, if any: ``TerminalSinkError`` for a batch the broker refused as
        too large, else ``TransientSinkError``."""
        if self._failure_detail is not None:
            raise TerminalSinkError(f"Kafka did not accept a record: {self._failure_detail}")
        if self._failure is not None:
            msg = f"Kafka did not accept a record: {self._failure.str()} ({self._failure.name()})"
            raise TransientSinkError(msg)

    def _fail(self, err: KafkaError) -> None:
        if self._failure is None:
            self._failure = err
            log.error("delivery failed: %s", err.str())

    def _on_client_error(self, err: KafkaError) -> None:
        if err.fatal():
            self._fail(err)
        else:
            log.warning("kafka client: %s", err.str())

    def take_skipped(self) -> list[SkippedRecord]:
        """The records left out since the last call (warn/skip mode)."""
        skipped, self.skipped = self.skipped, []
        return skipped

    def close(self, timeout_s: float = 10.0) -> None:
        """Wait up to ``timeout_s`` for outstanding deliveries; the sink is not used afterwards."""
        self._producer.flush(timeout_s)


