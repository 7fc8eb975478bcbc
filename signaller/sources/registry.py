"""Which source a configuration names: ``connector.class`` → the :class:`~signaller.sources.base.Source`
the capture loop runs on.

A new database is a folder beside ``sources/postgres/`` and one entry in :data:`SOURCES` (its builder
imports its folder when called, so naming a source loads no other source's driver). The capture loop
calls :func:`open_source` once per session; nothing here keeps state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signaller.config import SignallerConfig
from signaller.config.sections import PG_CONNECTOR
from signaller.errors import ConfigError
from signaller.sources.base import Source

__all__ = ["SOURCES", "open_source"]


def _postgres(config: SignallerConfig) -> Source[Any]:
    from signaller.sources.postgres.source import PostgresSource

    return PostgresSource(config)


SOURCES: dict[str, Callable[[SignallerConfig], Source[Any]]] = {PG_CONNECTOR: _postgres}
"""Builder of each supported ``connector.class`` (Debezium's connector class names)."""


def open_source(config: SignallerConfig) -> Source[Any]:
    """The source ``config.connector.connector_class`` names, built from ``config`` (which may connect:
    ``SourceError`` when the database cannot be reached); ``ConfigError`` for a class no source
    implements (the configuration check refuses those first)."""
    name = config.connector.connector_class
    builder = SOURCES.get(name)
    if builder is None:
        raise ConfigError("connector.class", name, " or ".join(sorted(SOURCES)))
    return builder(config)
