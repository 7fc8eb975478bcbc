"""The one serializer of the sidecar's records: change events of every table, heartbeats,
transaction metadata and notifications, rendered as Kafka Connect's JsonConverter writes them.

:class:`RecordSerializer` is built once per capture session from the converter options and is
the only object the runtime's dispatcher asks for record bytes: ``table(schema, codecs)`` gives
a table's :class:`~signaller.wire.envelope.EnvelopeSerializer` (whose ``serialize`` takes
streamed and snapshot READ rows alike); the other methods return ``(key, value)`` pairs of the
records in :mod:`signaller.wire.records`. Heartbeat, transaction and notification records use the
value converter's ``schemas.enable`` for key and value, as the sidecar always has. No I/O; a
second converter (Avro) would be a second class with these methods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from signaller.model.tables import TableSchema
from signaller.wire.columns import ColumnCodec
from signaller.wire.envelope import EnvelopeSerializer
from signaller.wire.records import (
    heartbeat_key,
    heartbeat_value,
    notification_key,
    notification_value,
    transaction_begin_value,
    transaction_end_value,
    transaction_key,
)
from signaller.wire.source_block import SourceBlock

__all__ = ["Record", "RecordSerializer"]

Record = tuple[bytes | None, bytes]
"""A record's key bytes (None: a null key) and value bytes."""


class RecordSerializer:
    """JsonConverter bytes of every record the sidecar writes, for one set of converter options.

    ``schemas_enable`` is ``value.converter.schemas.enable``, ``key_schemas_enable``
    ``key.converter.schemas.enable`` (change-event keys only); ``source_block`` the source's ``source``
    block (None: the built-in PostgreSQL one). Immutable; each :meth:`table` call
    builds a new :class:`~signaller.wire.envelope.EnvelopeSerializer` (callers cache it per table
    schema).
    """

    __slots__ = ("_block", "_database", "_key_schemas", "_schemas", "_topic_prefix")

    def __init__(self, *, topic_prefix: str, database: str, schemas_enable: bool = True,
                 key_schemas_enable: bool | None = None, source_block: SourceBlock | None = None) -> None:
        self._block = source_block
        self._topic_prefix = topic_prefix
        self._database = database
        self._schemas = schemas_enable
        self._key_schemas = key_schemas_enable

    def table(self, schema: TableSchema, codecs: Mapping[str, ColumnCodec]) -> EnvelopeSerializer:
        """The change-event serializer of one table schema (``codecs``: each column's codec)."""
        return EnvelopeSerializer(schema, codecs, topic_prefix=self._topic_prefix, database=self._database,
                                  schemas_enable=self._schemas, key_schemas_enable=self._key_schemas,
                                  source_block=self._block)

    def heartbeat(self, ts_ms: int) -> Record:
        """A heartbeat record ``{serverName}`` → ``{ts_ms}`` (``ts_ms``: now, in ms)."""
        return (heartbeat_key(self._topic_prefix, schemas_enable=self._schemas),
                heartbeat_value(ts_ms, schemas_enable=self._schemas))

    def transaction_begin(self, transaction_id: str, ts_ms: int) -> Record:
        """A transaction ``BEGIN`` record (``ts_ms``: the commit time)."""
        return (transaction_key(transaction_id, schemas_enable=self._schemas),
                transaction_begin_value(transaction_id, ts_ms, schemas_enable=self._schemas))

    def transaction_end(self, transaction_id: str, ts_ms: int, event_count: int,
                        data_collections: Iterable[tuple[str, int]]) -> Record:
        """A transaction ``END`` record; ``data_collections`` are ``(schema.table, events)`` pairs in write order."""
        return (transaction_key(transaction_id, schemas_enable=self._schemas),
                transaction_end_value(transaction_id, ts_ms, event_count, data_collections,
                                      schemas_enable=self._schemas))

    def notification(self, notification_id: str, payload: Mapping[str, object]) -> Record:
        """A notification record ``{id}`` → ``payload`` (``id``, ``type``, ``aggregate_type``,
        ``additional_data``, ``timestamp``, in that order)."""
        return (notification_key(notification_id, schemas_enable=self._schemas),
                notification_value(payload, schemas_enable=self._schemas))
