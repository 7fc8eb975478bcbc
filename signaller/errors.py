"""The one exception root of signaller, and how errors are classified.

Tree::

    SignallerError                 every error the package raises on purpose
    ├── ConfigError                bad or unknown configuration (terminal: fix the config)
    ├── SourceError                PostgreSQL: connection, slot, publication, decoding
    ├── SinkError                  Kafka: producing, topic creation, delivery
    ├── StateError                 offset store: unreadable or incompatible offsets
    ├── SignalError                a signal that cannot be accepted (answered, never raised past a channel)
    └── SnapshotError              incremental snapshot engine

Each concrete error is also a ``TransientError`` (worth retrying with backoff: the world may
change) or a ``TerminalError`` (retrying cannot help). ``is_transient`` decides by type only,
walking ``__cause__`` the way Debezium's ErrorHandler walks ``getCause()``.

Errors about bad input name the offending key, the value and what would be accepted, and keep
them as attributes so callers (the HTTP API, notifications) can report them without parsing text.
"""

from __future__ import annotations


class SignallerError(Exception):
    """Root of every error signaller raises on purpose."""


class TransientError(SignallerError):
    """Marker: the operation may succeed if retried later (network, broker down, slot busy)."""


class TerminalError(SignallerError):
    """Marker: retrying cannot help; a person must change something."""


class ConfigError(TerminalError):
    """A configuration property is unknown, missing or invalid.

    ``key`` is the property name as the user wrote it, ``value`` the offending value (already
    redacted for secrets), ``accepted`` a human description of what is accepted and ``origin``
    where the value came from (a file path, ``env:NAME``, ``connector-json:PATH``...).
    """

    def __init__(
        self,
        key: str,
        value: object,
        accepted: str,
        origin: str | None = None,
    ) -> None:
        self.key = key
        self.value = value
        self.accepted = accepted
        self.origin = origin
        where = f" (from {origin})" if origin else ""
        super().__init__(f"invalid configuration {key}={value!r}{where}: accepted: {accepted}")


class SourceError(SignallerError):
    """PostgreSQL misbehaved or refused: base class, see the transient/terminal subclasses."""


class TransientSourceError(SourceError, TransientError):
    """PostgreSQL unreachable, slot held by another process, connection dropped."""


class TerminalSourceError(SourceError, TerminalError):
    """PostgreSQL is misconfigured for logical decoding (wal_level, privileges, publication)."""


class DecodeError(TerminalSourceError):
    """A pgoutput message could not be decoded; ``position`` names where in the log."""

    def __init__(self, message: str, position: int | None = None) -> None:
        self.position = position
        super().__init__(message if position is None else f"{message} (at LSN {position:X})")


class SinkError(SignallerError):
    """Kafka misbehaved or refused."""


class TransientSinkError(SinkError, TransientError):
    """Broker unavailable, delivery timed out, topic not yet created."""


class TerminalSinkError(SinkError, TerminalError):
    """A record Kafka will never accept (too large, authorization denied)."""


class StateError(TerminalError):
    """Stored offsets are unreadable or of a format this version cannot migrate."""


class SignalError(TerminalError):
    """A signal was rejected. ``reason`` is the user-facing explanation."""

    def __init__(self, reason: str, signal_id: str | None = None) -> None:
        self.reason = reason
        self.signal_id = signal_id
        super().__init__(reason if signal_id is None else f"signal {signal_id!r}: {reason}")


class SignalNotApplied(TransientError):
    """An HTTP signal was not applied: the capture session failed (the database or Kafka unreachable) before
    the signal's effect was stored, and the retried session starts from the stored state. Send it again."""


class SnapshotError(TerminalError):
    """The incremental snapshot engine could not carry out a request."""


def is_transient(exc: BaseException) -> bool:
    """True if ``exc`` or any exception in its ``__cause__`` chain is a ``TransientError``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, TransientError):
            return True
        if isinstance(current, TerminalError):
            return False
        seen.add(id(current))
        current = current.__cause__
    return False
