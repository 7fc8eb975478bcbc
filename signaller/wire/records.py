"""Debezium's records other than data changes: heartbeat, transaction metadata, notification.

Contract (reference: debezium-protocol.md section 7; Debezium ``HeartbeatImpl``,
``TransactionStructMaker``, ``SinkNotificationChannel``): each function returns the key or value
bytes Kafka Connect's JsonConverter writes, framed with the record's schema when
``schemas_enable`` is true (schemas in :mod:`signaller.wire.connect`), the payload alone
otherwise.

* heartbeats: :func:`heartbeat_key` ``{serverName}``, :func:`heartbeat_value` ``{ts_ms}``;
* transaction boundaries: :func:`transaction_key`, :func:`transaction_begin_value`,
  :func:`transaction_end_value` (ids are the source's text, ``Source.transaction_id``), and a data event's
  ``transaction`` block from :func:`transaction_block`;
* notifications: :func:`notification_key` ``{id}``, :func:`notification_value`
  ``{id, type, aggregate_type, additional_data, timestamp}``.

No I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from signaller.wire.connect import (
    HEARTBEAT_KEY_SCHEMA,
    HEARTBEAT_VALUE_SCHEMA,
    NOTIFICATION_KEY_SCHEMA,
    NOTIFICATION_VALUE_SCHEMA,
    TRANSACTION_KEY_SCHEMA,
    TRANSACTION_VALUE_SCHEMA,
)
from signaller.wire.jackson import dumps, record, schema_prefix

__all__ = [
    "heartbeat_key",
    "heartbeat_value",
    "notification_key",
    "notification_value",
    "transaction_begin_value",
    "transaction_block",
    "transaction_end_value",
    "transaction_key",
]

_HEARTBEAT_KEY_PREFIX: Final = schema_prefix(HEARTBEAT_KEY_SCHEMA)
_HEARTBEAT_VALUE_PREFIX: Final = schema_prefix(HEARTBEAT_VALUE_SCHEMA)
_TRANSACTION_KEY_PREFIX: Final = schema_prefix(TRANSACTION_KEY_SCHEMA)
_TRANSACTION_VALUE_PREFIX: Final = schema_prefix(TRANSACTION_VALUE_SCHEMA)


# --------------------------------------------------------------------------------------------
# Heartbeats and transaction metadata
# --------------------------------------------------------------------------------------------


def heartbeat_key(topic_prefix: str, *, schemas_enable: bool = True) -> bytes:
    """Heartbeat record key ``{serverName: <topic.prefix>}`` (``ServerNameKey`` v1)."""
    return record(_HEARTBEAT_KEY_PREFIX if schemas_enable else None, {"serverName": topic_prefix})


def heartbeat_value(ts_ms: int, *, schemas_enable: bool = True) -> bytes:
    """Heartbeat record value ``{ts_ms: <now in ms>}`` (``Heartbeat`` v1)."""
    return record(_HEARTBEAT_VALUE_PREFIX if schemas_enable else None, {"ts_ms": ts_ms})


def transaction_block(transaction_id: str, total_order: int, data_collection_order: int) -> dict[str, Any]:
    """The ``transaction`` block of a data event: position of the event in its transaction
    overall (``total_order``) and within its table (``data_collection_order``), both from 1."""
    return {"id": transaction_id, "total_order": total_order, "data_collection_order": data_collection_order}


def transaction_key(transaction_id: str, *, schemas_enable: bool = True) -> bytes:
    """Transaction-metadata record key ``{id}`` (``TransactionMetadataKey`` v1)."""
    return record(_TRANSACTION_KEY_PREFIX if schemas_enable else None, {"id": transaction_id})


def transaction_begin_value(transaction_id: str, ts_ms: int, *, schemas_enable: bool = True) -> bytes:
    """``BEGIN`` record value: ``event_count`` and ``data_collections`` are null."""
    payload: dict[str, Any] = {
        "status": "BEGIN",
        "id": transaction_id,
        "event_count": None,
        "data_collections": None,
        "ts_ms": ts_ms,
    }
    return record(_TRANSACTION_VALUE_PREFIX if schemas_enable else None, payload)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` of ``text`` (over UTF-16 code units, 32-bit wrap), as an unsigned int."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for index in range(0, len(data), 2):
        h = (31 * h + (data[index] << 8 | data[index + 1])) & 0xFFFFFFFF
    return h


def java_hash_map_order(items: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """``items`` (inserted in this order) as a ``java.util.HashMap<String, ...>`` iterates them: by bucket
    (``hash ^ hash >>> 16`` masked by the table size, 16 doubled while more than 3/4 full), insertion order
    within a bucket. Debezium's ``TransactionContext`` counts events per table in such a map, so its
    ``END`` record lists ``data_collections`` in this order."""
    entries = list(items)
    size = 16
    while len(entries) > size * 3 // 4:
        size *= 2

    def bucket(name: str) -> int:
        h = java_string_hash(name)
        return (h ^ (h >> 16)) & (size - 1)

    return [entry for _, entry in sorted(enumerate(entries), key=lambda pair: (bucket(pair[1][0]), pair[0]))]


def transaction_end_value(
    transaction_id: str,
    ts_ms: int,
    event_count: int,
    data_collections: Iterable[tuple[str, int]],
    *,
    schemas_enable: bool = True,
) -> bytes:
    """``END`` record value; ``data_collections`` are ``(schema.table, events)`` pairs in the
    order to write them (Debezium iterates a hash map, so consumers must not rely on order)."""
    collections = [{"data_collection": name, "event_count": count} for name, count in data_collections]
    payload = {
        "status": "END",
        "id": transaction_id,
        "event_count": event_count,
        "data_collections": collections,
        "ts_ms": ts_ms,
    }
    return record(_TRANSACTION_VALUE_PREFIX if schemas_enable else None, payload)


# --------------------------------------------------------------------------------------------
# Notifications
# --------------------------------------------------------------------------------------------


def notification_key(notification_id: str, *, schemas_enable: bool = True) -> bytes:
    """Notification record key ``{id}`` (``NotificationKey`` v1)."""
    payload = {"id": notification_id}
    return dumps({"schema": NOTIFICATION_KEY_SCHEMA, "payload": payload} if schemas_enable else payload)


def notification_value(payload: Mapping[str, object], *, schemas_enable: bool = True) -> bytes:
    """Notification record value; ``payload`` holds ``id``, ``type``, ``aggregate_type``,
    ``additional_data`` (string map) and ``timestamp`` (ms) in that order (``Notification`` v1)."""
    return dumps({"schema": NOTIFICATION_VALUE_SCHEMA, "payload": payload} if schemas_enable else payload)
