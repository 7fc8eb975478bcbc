"""What a signal is once it has been read from a channel, and the actions it can ask for.

A channel produces ``Signal(id, type, data, channel)``; ``signals.parsing.parse_action`` turns it
into one of the frozen action types below or raises ``SignalError`` with the reason. Table
names and filters are checked later, against the catalog, by the snapshot engine, which answers
each submitted signal with a ``SignalOutcome``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

EXECUTE_SNAPSHOT = "execute-snapshot"
STOP_SNAPSHOT = "stop-snapshot"
PAUSE_SNAPSHOT = "pause-snapshot"
RESUME_SNAPSHOT = "resume-snapshot"
LOG = "log"
WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"
SIGNAL_TYPES = (EXECUTE_SNAPSHOT, STOP_SNAPSHOT, PAUSE_SNAPSHOT, RESUME_SNAPSHOT, LOG, WINDOW_OPEN, WINDOW_CLOSE)

SnapshotType = Literal["incremental", "blocking"]
Channel = Literal["source", "kafka", "file", "http", "internal"]


@dataclass(frozen=True)
class Signal:
    """One signal as a channel delivered it. ``data`` is the parsed JSON object (``{}`` when the
    channel had none). ``position`` is the channel's own position of the record (Kafka offset,
    file byte offset, LSN) used to avoid applying it twice across restarts."""

    id: str
    type: str
    data: Mapping[str, Any]
    channel: Channel
    position: Any = None


@dataclass(frozen=True)
class AdditionalCondition:
    """``{"data-collection": <regex>, "filter": <boolean SQL expression>}``."""

    data_collection: str
    filter: str


@dataclass(frozen=True)
class ExecuteSnapshot:
    """The ``execute-snapshot`` action: snapshot the captured tables matching ``data_collections`` (regular expressions
    matched whole against ``schema.table``), incrementally or blocking, with optional per-table filters and a surrogate
    chunk key. Checked against the catalog by the engine, not here."""

    signal_id: str
    data_collections: tuple[str, ...]
    snapshot_type: SnapshotType = "incremental"
    additional_conditions: tuple[AdditionalCondition, ...] = ()
    surrogate_key: str | None = None


@dataclass(frozen=True)
class StopSnapshot:
    """The ``stop-snapshot`` action: drop the queued tables matching ``data_collections`` (all of them when empty) from
    the incremental snapshot; a blocking snapshot cannot be stopped."""

    signal_id: str
    data_collections: tuple[str, ...] = ()
    snapshot_type: SnapshotType = "incremental"


@dataclass(frozen=True)
class PauseSnapshot:
    """The ``pause-snapshot`` action: stop reading chunks of the running incremental snapshot until resumed."""

    signal_id: str


@dataclass(frozen=True)
class ResumeSnapshot:
    """The ``resume-snapshot`` action: go on reading chunks of a paused incremental snapshot."""

    signal_id: str


@dataclass(frozen=True)
class LogMessage:
    """The ``log`` action: log ``message``, with ``{}`` replaced by the current offsets."""

    signal_id: str
    message: str


@dataclass(frozen=True)
class WindowMarker:
    """A watermark row the sidecar wrote itself (``<chunk-uuid>-open`` / ``-close``)."""

    signal_id: str
    is_open: bool
    data: Mapping[str, Any] = field(default_factory=dict)


Action = ExecuteSnapshot | StopSnapshot | PauseSnapshot | ResumeSnapshot | LogMessage | WindowMarker


@dataclass(frozen=True)
class SignalOutcome:
    """The answer to a submitted signal: accepted (and applied), or rejected with the reason."""

    signal_id: str
    accepted: bool
    reason: str = ""
