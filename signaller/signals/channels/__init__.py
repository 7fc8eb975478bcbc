"""Signal channels: every channel (the signal table, the Kafka signal topic, the signal file, the HTTP
API) is a ``SignalChannelReader``, so the capture loop handles every channel's entries through one code
path (parse, apply, answer, store the position).

The reader contract:

* ``read()`` returns at once (it never blocks, never waits for a record) with what arrived since the
  last call, in the channel's order: ``Signal`` values (``Signal.channel`` = ``name``, ``Signal.position``
  = the channel's own position of the record) and ``SignalError`` values for records that could not be
  turned into a signal (a ``SignalRecordError`` carries the record's position). One bad record is
  reported, never raised, so it cannot stop a channel; ``read()`` raises only when the channel itself
  fails (the caller logs that and calls again later).
* A position is the channel's own place of a record: a Kafka offset, a file ``(inode, end offset)``, a
  log position (LSN) for the signal table. With ``stores_positions`` the *caller* keeps them: it sets
  an entry's position in the snapshot state before applying the entry, inside the same Kafka group as
  the entry's effect and answer, and sets the previous one back if an infrastructure failure stops it.
  The channels remember nothing durable themselves.
* On restart the caller creates the channel again with the stored position as ``start_after``: the
  channel delivers what follows it, so an applied record is not applied again and a record whose
  effect was not stored is delivered again (at least once). Without ``stores_positions`` the position
  is covered elsewhere: the signal table's rows come again with the stream from the stored log
  position; the HTTP channel's sender gets its answer only once the effect is stored.
* ``rejections_notified``: a rejected entry is answered with a ``REJECTED`` notification (and a warning
  log line); False for a channel that answers its sender itself (HTTP: a 4xx answer).
* ``close()`` releases the channel's resources; idempotent.

Implementations: ``KafkaSignalChannel`` (``kafka.py``), ``FileSignalChannel`` (``file.py``), both polled
every ``signal.poll.interval.ms``; ``SignalTableChannel`` (``source.py``), fed the signal table's rows
from the change stream and read at once, at the row's place in the stream; ``HttpSignalChannel``
(``http.py``), over the API's control queue, read after every batch.
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
    the caller may persist it as consumed; the reason names the position too. ``cause`` is the
    unexpected exception behind it, if any (logged with its traceback).
    """

    def __init__(self, reason: str, signal_id: str | None = None, position: Any = None,
                 cause: BaseException | None = None) -> None:
        self.position = position
        self.cause = cause
        super().__init__(reason, signal_id)


class SignalChannelReader(Protocol):
    """What every channel offers the capture loop (see the module docstring for the contract)."""

    @property
    def name(self) -> str:
        """The channel's name as ``signal.enabled.channels`` spells it: source, kafka, file or http."""
        ...

    @property
    def stores_positions(self) -> bool:
        """True when the caller stores each entry's position in the snapshot state before applying it."""
        ...

    @property
    def rejections_notified(self) -> bool:
        """True when a rejected entry is answered with a ``REJECTED`` notification."""
        ...

    def read(self) -> list[Signal | SignalError]:
        """The records that arrived since the last call, in order; returns at once, never raises for a record."""
        ...

    def close(self) -> None:
        """Release the channel's resources; idempotent."""
        ...


from signaller.signals.channels.file import FileSignalChannel  # noqa: E402
from signaller.signals.channels.http import HttpSignalChannel  # noqa: E402
from signaller.signals.channels.kafka import KafkaSignalChannel  # noqa: E402
from signaller.signals.channels.source import SignalTableChannel  # noqa: E402

__all__ = ["MAX_SIGNAL_BYTES", "FileSignalChannel", "HttpSignalChannel", "KafkaSignalChannel",
           "SignalChannelReader", "SignalRecordError", "SignalTableChannel"]
