"""MariaDB as a :class:`~signaller.sources.base.Source`: the catalog connection, the binlog log reader, and
(until the MariaDB snapshot side is plugged in) a snapshot side that refuses incremental snapshots clearly.

Built by :func:`signaller.sources.registry.open_source` for ``connector.class``
``io.debezium.connector.mariadb.MariaDbConnector`` or ``io.debezium.connector.mysql.MySqlConnector``
(the ``source`` block names ``mariadb`` or ``mysql`` accordingly). :meth:`MariaDbSource.prepare` checks the
server's binlog settings. One session only; the offset store holds the resume state (Debezium's MySQL
offset keys, :meth:`MariaDbSource.offset_keys`).
"""

from __future__ import annotations

from typing import Any

from signaller.config import SignallerConfig
from signaller.config.binlog import MYSQL_CONNECTOR
from signaller.errors import ConfigError, TerminalSourceError
from signaller.model import TableId
from signaller.sources.base import Source
from signaller.sources.mariadb.catalog import Catalog
from signaller.sources.mariadb.changes import BinlogChange, TablePlans
from signaller.sources.mariadb.positions import gtid_of_number
from signaller.sources.mariadb.reader import MariaDbLogReader
from signaller.sources.mariadb.source_block import BinlogSourceBlock
from signaller.sources.mariadb.values import TypeModes

_NO_SNAPSHOTS = ("incremental snapshots of MariaDB are not available in this build yet (issue 16: the MariaDB "
                 "chunk reader and schema provider)")


class _NoSnapshots:
    """The snapshot side until MariaDB's chunk reader and schema provider exist: every query refuses with a
    terminal error naming what is missing; ``close`` does nothing."""

    def __getattr__(self, name: str) -> Any:
        def refuse(*_args: Any, **_kwargs: Any) -> Any:
            raise TerminalSourceError(_NO_SNAPSHOTS)

        return refuse

    def close(self) -> None:
        """Nothing to close."""


def type_modes(config: SignallerConfig) -> TypeModes:
    """The MariaDB value modes of ``config`` (an unset or ``adaptive`` ``time.precision.mode`` is
    ``adaptive_time_microseconds``, the binlog connectors' default)."""
    types = config.types
    precision = types.time_precision_mode.value
    if precision == "adaptive" or "time.precision.mode" not in config.raw:
        precision = "adaptive_time_microseconds"
    return TypeModes(types.decimal_handling_mode.value, precision,
                     config.binlog.bigint_unsigned_handling_mode.value, types.binary_handling_mode.value)


class MariaDbSource(Source[BinlogChange]):
    """One capture session's MariaDB source (see the module docstring). Not thread-safe."""

    def __init__(self, config: SignallerConfig) -> None:
        self._config = config
        self.catalog = Catalog(config)
        self._plans = TablePlans(config, Catalog(config), type_modes(config))
        self._log = MariaDbLogReader(config, self.catalog, self._plans)
        self._snapshots = _NoSnapshots()
        connector = "mysql" if config.connector.connector_class == MYSQL_CONNECTOR else "mariadb"
        self._block = BinlogSourceBlock(connector, config.topics.prefix, self._log.file_name)

    @property
    def change_type(self) -> type[BinlogChange]:
        """:class:`~signaller.sources.mariadb.changes.BinlogChange`."""
        return BinlogChange

    @property
    def log(self) -> MariaDbLogReader:
        """The binlog stream."""
        return self._log

    @property
    def chunks(self) -> Any:
        """The snapshot's side (see :class:`_NoSnapshots`)."""
        return self._snapshots

    @property
    def schemas(self) -> Any:
        """The snapshot's side (see :class:`_NoSnapshots`)."""
        return self._snapshots

    @property
    def source_block(self) -> BinlogSourceBlock:
        """Debezium's MariaDB (or MySQL) ``source`` block."""
        return self._block

    def prepare(self) -> list[TableId]:
        """Check the binlog settings (``TerminalSourceError`` naming each missing one) and ``snapshot.mode``; the
        captured tables, sorted."""
        mode = self._config.snapshot.mode.value
        if mode != "no_data":
            raise ConfigError("snapshot.mode", mode, "no_data (or never) for MariaDB until its snapshot side is "
                              "available (issue 16); the stream then starts at the server's current position")
        self.catalog.check_binlog()
        return [table for table in self.catalog.tables() if self._plans.is_captured(table)]

    def offset_keys(self, position: int, /) -> dict[str, Any] | None:
        """Debezium's MySQL/MariaDB offset keys of ``position`` (``file``, ``pos``, ``gtids``, ``ts_sec``,
        ``server_id``); ``TerminalSourceError`` for a position this session never reported."""
        resume = self._log.resume_at(position)
        if resume is None:
            msg = (f"no binlog coordinate is known for position {position} "
                   f"(file {position >> 32}, pos {position & 0xFFFFFFFF})")
            raise TerminalSourceError(msg)
        return resume.offset_keys()

    def transaction_id(self, xid: int, position: int, /) -> str:
        """Debezium's binlog transaction id: the transaction's GTID ``domain-server-sequence``."""
        return gtid_of_number(xid)

    def take_unrepresentable(self) -> dict[tuple[str, str, str], int]:
        """No MariaDB value is replaced by a fallback yet: always empty."""
        return {}

    def close(self) -> None:
        """Close the catalog connections; never raises."""
        self.catalog.close()
