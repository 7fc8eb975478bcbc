"""The durable part of the incremental snapshot: immutable, and serialized into the offset record.

A new ``SnapshotState`` object is made for every change (``dataclasses.replace``), so the capture
loop can attach the object current at each transaction end to that transaction's Kafka group
and store exactly the state that matches an acknowledged position.

Fields follow Debezium's offsets (section 4 of the protocol notes) with our own encoding: key
values are PostgreSQL text representations (valid for any orderable key type), and ``paused``
and the channel positions survive restarts (Debezium persists neither).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from signaller.errors import StateError
from signaller.sources.base import Key as Key  # re-exported: the chunk key's one definition


@dataclass(frozen=True)
class QueuedTable:
    """One table waiting for (or in) its snapshot. ``filter`` is the normalized, parenthesized
    SQL of its additional condition; ``surrogate_key`` replaces the primary key for chunking."""

    table: str
    filter: str | None = None
    surrogate_key: str | None = None
    correlation_id: str | None = None
    rows: int = 0
    started_at: float | None = None


@dataclass(frozen=True)
class FinishedTable:
    """A table whose snapshot ended, as the status page lists it: Debezium's status (``SUCCEEDED``, ``EMPTY``,
    ``ABORTED``, ``SQL_EXCEPTION``, ``NO_PRIMARY_KEY``, ``UNKNOWN_SCHEMA``), the rows emitted, and epoch-second
    times."""

    table: str
    status: str
    rows: int
    started_at: float | None
    ended_at: float
    correlation_id: str | None = None
    filter: str | None = None


@dataclass(frozen=True)
class SnapshotState:
    """``queue[0]`` is the table being read; ``max_key``/``last_key`` belong to it. ``last_key``
    is the chunk key up to which every row has been emitted or superseded by a streamed event."""

    queue: tuple[QueuedTable, ...] = ()
    max_key: Key | None = None
    last_key: Key | None = None
    correlation_id: str | None = None
    paused: bool = False
    chunk_size: int | None = None
    finished: tuple[FinishedTable, ...] = ()
    channel_positions: dict[str, Any] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        """Whether a snapshot is under way (a table is queued or being read), paused or not."""
        return bool(self.queue)

    def with_changes(self, **changes: Any) -> SnapshotState:
        """A copy with ``changes`` applied (the state itself never changes)."""
        return replace(self, **changes)

    def to_offset(self) -> dict[str, Any]:
        """The state as JSON-ready data for the offset record; ``from_offset`` reads it back."""
        return asdict(self)

    @classmethod
    def from_offset(cls, data: dict[str, Any] | None) -> SnapshotState | None:
        """The state ``to_offset`` stored (absent fields take their defaults), or None for no data; ``StateError`` if
        the data is not a stored state."""
        if data is None:
            return None
        try:
            return cls(
                queue=tuple(QueuedTable(**item) for item in data.get("queue", ())),
                max_key=_key(data.get("max_key")),
                last_key=_key(data.get("last_key")),
                correlation_id=data.get("correlation_id"),
                paused=bool(data.get("paused", False)),
                chunk_size=data.get("chunk_size"),
                finished=tuple(FinishedTable(**item) for item in data.get("finished", ())),
                channel_positions=dict(data.get("channel_positions", {})),
            )
        except (TypeError, ValueError) as exc:
            msg = f"stored incremental-snapshot state is not readable: {exc}"
            raise StateError(msg) from exc


def _key(value: Any) -> Key | None:
    return None if value is None else tuple(value)
