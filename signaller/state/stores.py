"""Where offsets live: a file (atomic replace + fsync) or a compacted Kafka topic, the way Kafka
Connect stores source offsets (key ``["<connector name>", {"server": "<topic.prefix>"}]``, the
connector name being the ``name`` property, or the topic prefix when there is none).

``load()`` returns the last committed ``Offsets`` or None; ``commit()`` returns only once the
record is durable (fsynced, or acknowledged by Kafka with acks=all). Both are safe to call
after a crash at any point: a commit either happened whole or not at all.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path
from typing import Any, Protocol

import orjson
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from signaller.config import SignallerConfig
from signaller.errors import StateError, TransientError
from signaller.state.offsets import Offsets


class OffsetStore(Protocol):
    """Where the offset record lives (see the module docstring); used from the capture loop's thread only."""

    def load(self) -> Offsets | None:
        """The last committed record, or None if nothing was committed; ``StateError`` if it cannot be read."""

    def commit(self, offsets: Offsets) -> None:
        """Store ``offsets``, returning only once the record is durable; raises if it may not be."""

    def close(self) -> None:
        """Release the store's resources; the store is not used afterwards."""


class FileOffsetStore:
    """Offsets in one JSON file, replaced atomically."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> Offsets | None:
        """The committed offsets, or None when the file does not exist; ``StateError`` if it is not a record."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None
        return Offsets.from_json(data, str(self.path))

    def commit(self, offsets: Offsets) -> None:
        """Write ``offsets`` to a temporary file, fsync it and rename it over the file: a crash leaves the old record or
        the new one, whole."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".offsets-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(offsets.to_json())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def close(self) -> None:
        """Nothing to release: every commit closes its file."""
        return None


class KafkaOffsetStore:
    """Offsets as the newest record of one key in a compacted, single-partition topic."""

    def __init__(self, client_config: dict[str, Any], topic: str, name: str, server: str,
                 replication: int = 1, fallback_names: tuple[str, ...] = ()) -> None:
        self._client = client_config
        self._topic = topic
        self._key = orjson.dumps([name, {"server": server}])
        # Keys read (never written) when the topic has no record under ``_key``: the key earlier
        # versions wrote (topic prefix as the name), so an upgrade resumes where it stopped.
        self._fallback_keys = tuple(orjson.dumps([n, {"server": server}]) for n in fallback_names if n != name)
        self._replication = replication
        self._producer: Producer | None = None

    def _ensure_topic(self) -> None:
        admin = AdminClient(self._client)
        if self._topic in admin.list_topics(timeout=10).topics:
            return
        topic = NewTopic(self._topic, num_partitions=1, replication_factor=self._replication,
                         config={"cleanup.policy": "compact"})
        future = admin.create_topics([topic])[self._topic]
        try:
            future.result(30)
        except Exception as exc:  # already created by a concurrent start is fine
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                msg = f"cannot create offsets topic {self._topic!r}: {exc}"
                raise TransientError(msg) from exc

    def load(self) -> Offsets | None:
        """The newest record under the connector's key (else under a key earlier versions wrote), None when there is
        none; creates the topic if missing; ``TransientError`` if Kafka cannot be read in time."""
        self._ensure_topic()
        consumer = Consumer({**self._client, "group.id": f"signaller-offsets-{uuid.uuid4().hex}",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            watermarks = consumer.get_watermark_offsets(TopicPartition(self._topic, 0), timeout=10)
            if watermarks is None:
                msg_text = f"cannot read the watermarks of offsets topic {self._topic!r}"
                raise TransientError(msg_text)
            low, high = watermarks
            if high <= low:
                return None
            consumer.assign([TopicPartition(self._topic, 0, low)])
            wanted = (self._key, *self._fallback_keys)
            latest: dict[bytes, bytes | None] = {}
            position = low
            while position < high:
                msg = consumer.poll(5.0)
                if msg is None:
                    msg_text = f"timed out reading offsets topic {self._topic!r} at {position} of {high}"
                    raise TransientError(msg_text)
                if msg.error():
                    continue
                position = (msg.offset() or 0) + 1
                key = msg.key()
                if key in wanted:
                    latest[key] = msg.value()  # a null value (tombstone) clears the key, as in Connect
            value = next((latest[key] for key in wanted if latest.get(key) is not None), None)
            return None if value is None else Offsets.from_json(value, f"topic {self._topic}")
        finally:
            consumer.close()

    def commit(self, offsets: Offsets) -> None:
        """Produce ``offsets`` under the connector's key and return once Kafka acknowledged it (acks=all); raises if it
        did not."""
        if self._producer is None:
            self._producer = Producer({**self._client, "enable.idempotence": True, "acks": "all"})
        errors: list[KafkaError] = []
        self._producer.produce(self._topic, offsets.to_json(), self._key, partition=0,
                               on_delivery=lambda err, _m: errors.append(err) if err else None)
        if self._producer.flush(30) != 0 or errors:
            msg = f"offsets not acknowledged by Kafka (topic {self._topic!r}): {errors or 'timeout'}"
            raise TransientError(msg)

    def close(self) -> None:
        """Flush the producer (up to 10 s), if one was made."""
        if self._producer is not None:
            self._producer.flush(10)


def open_store(config: SignallerConfig) -> OffsetStore:
    """The store ``offset.storage`` selects (``file`` needs ``offset.storage.file.filename``)."""
    if config.offsets.storage.value == "file":
        if not config.offsets.file_filename:
            msg = "offset.storage=file needs offset.storage.file.filename"
            raise StateError(msg)
        return FileOffsetStore(config.offsets.file_filename)
    # Kafka Connect keys source offsets by the connector's ``name``; without one (a bare properties
    # file) the topic prefix stands in, which is also the key earlier versions wrote.
    name = (config.get("name") or "").strip() or config.topics.prefix
    return KafkaOffsetStore(
        config.kafka_client_config(), config.offsets.topic, name=name,
        server=config.topics.prefix, replication=config.kafka.topic_creation_default_replication_factor,
        fallback_names=(config.topics.prefix,),
    )
