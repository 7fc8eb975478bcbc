"""External signal channels: the Kafka signal topic and the signal file.

Each channel is polled by the capture loop: ``read()`` returns at once with what is new, as
``Signal`` values (``Signal.position`` = the channel's own position of the record) or
``SignalRecordError`` values for records that could not be parsed (they are reported, never raised,
so one bad record cannot stop a channel). Channels do not remember what was applied: the caller
persists the position of the last applied signal in its durable state and passes it back as
``start_after`` when it creates the channel again, so nothing is lost and nothing is applied twice.

The ``source`` channel (the signal table) is read from the change stream, not here; the ``http``
channel is the REST API.
"""

from __future__ import annotations

from typing import Any, Protocol

from signaller.errors import SignalError
from signaller.signals.model import Signal

MAX_SIGNAL_BYTES = 1 << 20
"""The largest signal a channel reads (a file line, a Kafka record value), as the HTTP API's body limit;
a larger one is answered with a ``SignalRecordError`` naming it, never read into a ``Signal``."""


class SignalRecordError(SignalError):
    """A record a channel read but could not turn into a ``Signal``.

    ``position`` is the record's channel position (a Kafka offset, a file ``(inode, end offset)``), so
    the caller may persist it as consumed; the reason names the position too.
    """

    def __init__(self, reason: str, signal_id: str | None = None, position: Any = None) -> None:
        self.position = position
        super().__init__(reason, signal_id)


class SignalReader(Protocol):
    """What every external channel offers the capture loop."""

    def read(self) -> list[Signal | SignalError]:
        """The records that arrived since the last call, in order; returns at once, never raises for a record."""
        ...

    def close(self) -> None:
        """Release the channel's resources; idempotent."""
        ...


from signaller.signals.channels.file import FileSignalChannel  # noqa: E402
from signaller.signals.channels.kafka import KafkaSignalChannel  # noqa: E402

__all__ = ["MAX_SIGNAL_BYTES", "FileSignalChannel", "KafkaSignalChannel", "SignalReader", "SignalRecordError"]
