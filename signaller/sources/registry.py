"""Which source a configuration names: ``connector.class`` → the :class:`~signaller.sources.base.Source`
the capture loop runs on, and the same source's signal-table writer (``signaller signal send``).

A new database is a folder beside ``sources/postgres/`` and one entry in :data:`SOURCES` (its entry
imports its folder when called, so naming a source loads no other source's driver). The capture loop
calls :func:`open_source` once per session; nothing here keeps state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from signaller.config import SignallerConfig
from signaller.config.binlog import MARIADB_CONNECTOR, MYSQL_CONNECTOR
from signaller.config.sections import PG_CONNECTOR
from signaller.errors import ConfigError
from signaller.model import TableId
from signaller.sources.base import Source

__all__ = ["SOURCES", "SourceKind", "open_source", "source_kind", "write_signal"]


@dataclass(frozen=True)
class SourceKind:
    """One database's entry points: ``open`` builds a capture session's source from the configuration;
    ``write_signal`` INSERTs one signal (``{id, type, data}``) into the signal table, committed
    (``SourceError``: transient when not delivered, terminal when refused)."""

    open: Callable[[SignallerConfig], Source[Any]]
    write_signal: Callable[[SignallerConfig, TableId, dict[str, Any]], None]


def _postgres() -> SourceKind:
    from signaller.sources.postgres.signal_writer import write_signal as postgres_write_signal
    from signaller.sources.postgres.source import PostgresSource

    return SourceKind(PostgresSource, postgres_write_signal)


def _mariadb() -> SourceKind:
    from signaller.sources.mariadb.signal_writer import write_signal as mariadb_write_signal
    from signaller.sources.mariadb.source import MariaDbSource

    return SourceKind(MariaDbSource, mariadb_write_signal)


SOURCES: dict[str, Callable[[], SourceKind]] = {PG_CONNECTOR: _postgres, MARIADB_CONNECTOR: _mariadb,
                                                MYSQL_CONNECTOR: _mariadb}
"""The entry points of each supported ``connector.class`` (Debezium's connector class names)."""


def source_kind(config: SignallerConfig) -> SourceKind:
    """The entry points of the source ``config.connector.connector_class`` names; ``ConfigError`` for a
    class no source implements (the configuration check refuses those first)."""
    name = config.connector.connector_class
    kind = SOURCES.get(name)
    if kind is None:
        raise ConfigError("connector.class", name, " or ".join(sorted(SOURCES)))
    return kind()


def open_source(config: SignallerConfig) -> Source[Any]:
    """The source ``config`` names, built from ``config`` (which may connect: ``SourceError`` when the
    database cannot be reached)."""
    return source_kind(config).open(config)


def write_signal(config: SignallerConfig, table: TableId, signal: dict[str, Any]) -> None:
    """Write ``signal`` into ``table`` of the source ``config`` names (see :class:`SourceKind`)."""
    source_kind(config).write_signal(config, table, signal)
