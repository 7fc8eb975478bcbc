"""The Kafka sink: serializes change events and produces them (idempotent, ``acks=all``), and
tells the runtime which log position Kafka has fully acknowledged.

Acknowledgement tracking: records are grouped by the transaction they belong to. A transaction
is *safe* when it is closed (its commit was seen) and every record of it, and of every earlier
transaction, was delivered. ``safe_position()`` is the ``end_lsn`` of the newest safe
transaction, the only value the runtime may store as its offset and confirm to PostgreSQL. A
delivery error makes the sink *failed*: ``raise_if_failed()`` raises and the runtime restarts
from the stored offset, so nothing after the failure is ever acknowledged.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from signaller.errors import TerminalSinkError, TransientSinkError

log = logging.getLogger("signaller.sink")


class _Group:
    """Records of one transaction (or one heartbeat/snapshot chunk) awaiting delivery."""

    __slots__ = ("callback", "closed", "end_lsn", "pending", "sink", "state")

    def __init__(self, sink: KafkaSink) -> None:
        self.pending = 0
        self.closed = False
        self.end_lsn = 0
        self.sink = sink
        self.state: object | None = None
        self.callback = self.on_delivery  # one bound method per group, not one per record

    def on_delivery(self, err: KafkaError | None, _msg: Any) -> None:
        self.pending -= 1
        if err is not None:
            self.sink._fail(err)


class TopicManager:
    """Creates topics on first use with the configured partitions and replication factor."""

    def __init__(self, client_config: dict[str, Any], partitions: int, replication: int) -> None:
        self._admin = AdminClient(client_config)
        self._partitions = partitions
        self._replication = replication
        self._known: set[str] = set()

    def ensure(self, topic: str) -> None:
        if topic in self._known:
            return
        metadata = self._admin.list_topics(timeout=10)
        if topic not in metadata.topics:
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


class KafkaSink:
    """One idempotent producer plus position bookkeeping. Not thread-safe."""

    def __init__(self, producer_config: dict[str, Any], topics: TopicManager) -> None:
        config = {"partitioner": "murmur2_random", "queue.buffering.max.messages": 500000,
                  "queue.buffering.max.kbytes": 1048576, **producer_config}
        config.setdefault("error_cb", self._on_client_error)
        self._producer = Producer(config)
        self._produce = self._producer.produce
        self._topics = topics
        self._ready_topics: set[str] = set()
        self._groups: deque[_Group] = deque()
        self._current: _Group | None = None
        self._safe = 0
        self._safe_state: object | None = None
        self._failure: KafkaError | None = None
        self.produced = 0

    # -- producing ------------------------------------------------------------------------
    def begin(self) -> None:
        """Start a group (a transaction); records sent until ``close_group`` belong to it."""
        self._current = _Group(self)
        self._groups.append(self._current)

    def send(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        """Produce one record in the current group (starting one if none is open)."""
        group = self._current
        if group is None:
            self.begin()
            group = self._current
            assert group is not None
        if topic not in self._ready_topics:
            self._topics.ensure(topic)
            self._ready_topics.add(topic)
        group.pending += 1
        try:
            self._produce(topic, value, key, on_delivery=group.callback)
        except BufferError:
            self._produce_when_room(topic, key, value, group)
        except KafkaException as exc:
            group.pending -= 1
            msg = f"cannot produce to {topic!r}: {exc}"
            raise TerminalSinkError(msg) from exc
        self.produced += 1

    def _produce_when_room(self, topic: str, key: bytes | None, value: bytes | None, group: _Group) -> None:
        """The producer's queue is full: serve delivery reports until the record fits."""
        while True:
            self._producer.poll(0.05)
            try:
                self._produce(topic, value, key, on_delivery=group.callback)
                return
            except BufferError:
                continue
            except KafkaException as exc:
                group.pending -= 1
                msg = f"cannot produce to {topic!r}: {exc}"
                raise TerminalSinkError(msg) from exc

    def close_group(self, end_lsn: int, state: object | None = None) -> None:
        """The current group is complete; once delivered, ``end_lsn`` becomes safe, and
        ``state`` (if given: the snapshot state as of the group's end) becomes ``safe_state()``."""
        group = self._current
        if group is None:
            self.begin()
            group = self._current
            assert group is not None
        group.end_lsn = end_lsn
        group.state = state
        group.closed = True
        self._current = None

    def has_open_group(self) -> bool:
        return self._current is not None

    def safe_state(self) -> object | None:
        """The state attached to the newest safe group that carried one (see ``close_group``)."""
        return self._safe_state

    # -- acknowledgements -----------------------------------------------------------------
    def poll(self, timeout_s: float = 0.0) -> None:
        """Serve delivery callbacks."""
        self._producer.poll(timeout_s)

    def safe_position(self) -> int:
        """The newest ``end_lsn`` all of whose records, and all earlier ones, Kafka acknowledged."""
        self.raise_if_failed()
        groups = self._groups
        while groups and groups[0].closed and groups[0].pending == 0:
            group = groups.popleft()
            self._safe = max(self._safe, group.end_lsn)
            if group.state is not None:
                self._safe_state = group.state
        return self._safe

    def in_flight(self) -> int:
        return sum(g.pending for g in self._groups)

    def idle(self) -> bool:
        """No open group and nothing waiting for delivery."""
        return self._current is None and not any(g.pending or not g.closed for g in self._groups)

    def flush(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for outstanding deliveries; return ``safe_position()``."""
        deadline = time.monotonic() + timeout_s
        while self.in_flight() and time.monotonic() < deadline:
            self._producer.flush(min(1.0, max(0.0, deadline - time.monotonic())))
        return self.safe_position()

    def raise_if_failed(self) -> None:
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

    def close(self, timeout_s: float = 10.0) -> None:
        self._producer.flush(timeout_s)


