"""Debezium's notifications: records ``{id, type, aggregate_type, additional_data, timestamp}``
to the log channel and, with the ``sink`` channel, to ``notification.sink.topic.name`` (key
``io.debezium.connector.common.NotificationKey``, value ``...Notification``, JsonConverter; the
bytes come from :mod:`signaller.wire.records`)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from signaller.wire.records import notification_key, notification_value

log = logging.getLogger("signaller.notifications")

INCREMENTAL = "Incremental Snapshot"
INITIAL = "Initial Snapshot"
SIGNAL = "Signal"


@dataclass(frozen=True)
class Notification:
    """One Debezium notification (``io.debezium.pipeline.notification.Notification``)."""

    id: str
    type: str
    aggregate_type: str
    additional_data: Mapping[str, str] = field(default_factory=dict)
    timestamp: int = field(default_factory=lambda: time.time_ns() // 1_000_000)

    def payload(self) -> dict[str, object]:
        """The record payload, members in Debezium's order."""
        return {"id": self.id, "type": self.type, "aggregate_type": self.aggregate_type,
                "additional_data": dict(self.additional_data), "timestamp": self.timestamp}

    def key_bytes(self, schemas: bool) -> bytes:
        """The sink channel's record key (with its schema when ``schemas``)."""
        return notification_key(self.id, schemas_enable=schemas)

    def value_bytes(self, schemas: bool) -> bytes:
        """The sink channel's record value (with its schema when ``schemas``)."""
        return notification_value(self.payload(), schemas_enable=schemas)


def make(kind: str, correlation_id: str | None, connector: str, aggregate: str = INCREMENTAL,
         **data: str) -> Notification:
    """A notification of ``kind`` (STARTED, IN_PROGRESS, ...); ``connector_name`` is always set."""
    return Notification(correlation_id or str(uuid.uuid4()), kind, aggregate, {"connector_name": connector, **data})


ADDED_IN_3_7 = frozenset({"DATA_COLLECTIONS_RESOLVED"})
"""Notification types Debezium releases before 3.7 do not write (measured: the MariaDB connector 3.5.0.Final)."""
FIELDS_ADDED_IN_3_7 = ("total_rows", "total_chunks", "chunk_index")
"""``additional_data`` members of incremental-snapshot notifications Debezium releases before 3.7 do not write."""


def for_release(notification: Notification, release: str | None) -> Notification | None:
    """``notification`` as Debezium ``release`` (``3.5.0.Final``; None: the newest, unchanged) writes it: before
    3.7, no :data:`ADDED_IN_3_7` notification (None) and no :data:`FIELDS_ADDED_IN_3_7` member. Pure."""
    if release is None or _major_minor(release) >= (3, 7):
        return notification
    if notification.type in ADDED_IN_3_7:
        return None
    if not any(name in notification.additional_data for name in FIELDS_ADDED_IN_3_7):
        return notification
    data = {k: v for k, v in notification.additional_data.items() if k not in FIELDS_ADDED_IN_3_7}
    return Notification(notification.id, notification.type, notification.aggregate_type, data, notification.timestamp)


def _major_minor(release: str) -> tuple[int, int]:
    """``(3, 5)`` of ``3.5.0.Final``; ``ValueError`` naming a release that is not ``<major>.<minor>...``."""
    parts = release.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        msg = f"Debezium release {release!r} is not <major>.<minor>[.<patch>.<qualifier>] (3.5.0.Final)"
        raise ValueError(msg) from None


def log_notification(notification: Notification) -> None:
    """The log channel: one INFO line in Debezium's ``LogNotificationChannel`` format."""
    log.info(
        "[Notification Service]  {id='%s', aggregateType='%s', type='%s', additionalData=%s, timestamp=%d}",
        notification.id, notification.aggregate_type, notification.type,
        dict(notification.additional_data), notification.timestamp,
    )


def java_instant(ts: float) -> str:
    """Java ``Instant.toString()``: UTC, ``Z``, fraction in groups of 3 digits as needed."""
    moment = datetime.fromtimestamp(ts, UTC)
    micros = moment.microsecond
    fraction = "" if micros == 0 else (f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"
