"""PostgreSQL as a :class:`~signaller.sources.base.Source`: the catalog connection, the pgoutput log
reader, the chunk reader and the schema provider of one capture session, built together.

Built by :func:`signaller.sources.registry.open_source` for ``connector.class``
``io.debezium.connector.postgresql.PostgresConnector``; constructing it opens the catalog connection
(``SourceError`` if PostgreSQL cannot be reached). :meth:`PostgresSource.prepare` checks logical
decoding and ensures the publication and the replication slot. One session only; nothing here
survives a restart (the slot and the offset store hold the resume state).
"""

from __future__ import annotations

import logging

from signaller.config import SignallerConfig
from signaller.errors import TransientSourceError
from signaller.model import TableId
from signaller.signals.filters import compile_filter
from signaller.sources.base import Source
from signaller.sources.postgres.catalog import Catalog
from signaller.sources.postgres.chunks import PostgresChunkReader
from signaller.sources.postgres.conversion import UNREPRESENTABLE
from signaller.sources.postgres.reader import Change, PostgresLogReader
from signaller.sources.postgres.schemas import PostgresSchemaProvider

log = logging.getLogger("signaller.capture")


def postgres_transaction_id(tx_id: int, lsn: int) -> str:
    """Debezium's PostgreSQL transaction id ``<txId>:<LSN>`` (both as decimal numbers)."""
    return f"{tx_id}:{lsn}"


class PostgresSource(Source[Change]):
    """One capture session's PostgreSQL source (see the module docstring). Not thread-safe."""

    def __init__(self, config: SignallerConfig) -> None:
        self._config = config
        self.catalog = Catalog(config.database.libpq_dsn())
        self._log = PostgresLogReader(config, self.catalog)
        # The snapshot's side of the source: its own connection for chunks and watermarks, and the
        # schema provider on the reader's schema cache (one cache for stream and chunks).
        self._chunks = PostgresChunkReader(config.database.libpq_dsn(), config.snapshot.signal_data_collection,
                                           config.snapshot.watermarking_strategy.value)
        self._schemas = PostgresSchemaProvider(config, self.catalog, self._log.relations)

    @property
    def change_type(self) -> type[Change]:
        """:class:`~signaller.sources.postgres.reader.Change`."""
        return Change

    @property
    def log(self) -> PostgresLogReader:
        """The pgoutput stream of the configured slot and publication."""
        return self._log

    @property
    def chunks(self) -> PostgresChunkReader:
        """Chunk queries and watermarks on their own connection."""
        return self._chunks

    @property
    def schemas(self) -> PostgresSchemaProvider:
        """The catalog's tables, described through the log reader's relation cache."""
        return self._schemas

    compile_filter = staticmethod(compile_filter)
    """``additional-conditions`` checked and normalized in PostgreSQL's dialect (the function itself)."""

    def prepare(self) -> list[TableId]:
        """Check logical decoding, ensure the publication (per ``publication.autocreate.mode``) and the
        slot; ``TransientSourceError`` when another client holds the slot."""
        config = self._config
        catalog = self.catalog
        catalog.check_logical_decoding()
        tables = [t for t in catalog.tables() if config.is_table_captured(t.schema, t.table)]
        replication = config.replication
        catalog.ensure_publication(replication.publication_name, replication.publication_autocreate_mode.value, tables)
        slot = catalog.ensure_slot(replication.slot_name)
        if slot.active_pid is not None:
            msg = (f"replication slot {replication.slot_name!r} is in use by PostgreSQL backend pid {slot.active_pid} "
                   "(another signaller or Debezium?); will retry")
            raise TransientSourceError(msg)
        log.info("capturing %d table(s) through publication %s and slot %s",
                 len(tables), replication.publication_name, replication.slot_name)
        return tables

    source_block = None
    """PostgreSQL's ``source`` block is the wire format's built-in one."""

    def offset_keys(self, position: int, /) -> None:
        """None: the LSN alone resumes the slot (the offset record keeps Debezium's PostgreSQL keys)."""
        return None

    transaction_id = staticmethod(postgres_transaction_id)
    """Debezium's PostgreSQL transaction id ``<xid>:<LSN>`` (the function itself: one call per event)."""

    def take_unrepresentable(self) -> dict[tuple[str, str, str], int]:
        """The process-wide unrepresentable-value counts of the PostgreSQL codecs, drained."""
        return UNREPRESENTABLE.drain()

    def close(self) -> None:
        """Close the catalog connection; never raises."""
        self.catalog.close()
