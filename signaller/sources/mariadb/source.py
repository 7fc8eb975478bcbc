"""MariaDB as a :class:`~signaller.sources.base.Source`: the catalog connection, the binlog log reader, the
chunk reader and the schema provider of one capture session, built together.

Built by :func:`signaller.sources.registry.open_source` for ``connector.class``
``io.debezium.connector.mariadb.MariaDbConnector`` or ``io.debezium.connector.mysql.MySqlConnector``
(the ``source`` block names ``mariadb`` or ``mysql`` accordingly). :meth:`MariaDbSource.prepare` checks the
server's binlog settings. One session only; the offset store holds the resume state (Debezium's MySQL
offset keys, :meth:`MariaDbSource.offset_keys`).

The stream and the snapshot share one :class:`~signaller.sources.mariadb.changes.TablePlans`: a chunk row is
parsed into the binlog client's values (``row_text``) and converted by the same plan's converters as the
table's streamed rows, and a READ is a :class:`~signaller.sources.mariadb.changes.BinlogChange` of that plan,
so READs and streamed changes of one row carry the same schema, key and values. Positions (the read-only
high watermark) and transaction numbers (the read-only visibility) are ``positions``' definitions, the
stream's. Filters (``additional-conditions``) are checked in MariaDB's dialect
(:func:`~signaller.signals.mariadb_filters.compile_mariadb_filter`).
"""

from __future__ import annotations

from typing import Any

from signaller.config import SignallerConfig
from signaller.config.binlog import MYSQL_CONNECTOR
from signaller.errors import TerminalSourceError
from signaller.model import ChangeEvent, TableId
from signaller.signals.mariadb_filters import compile_mariadb_filter
from signaller.sources.base import Source
from signaller.sources.mariadb.catalog import Catalog
from signaller.sources.mariadb.changes import BinlogChange, TablePlan, TablePlans
from signaller.sources.mariadb.chunks import WATERMARK_KEYS_BEFORE_3_7, MariaDbChunkReader
from signaller.sources.mariadb.connection import Endpoint
from signaller.sources.mariadb.positions import gtid_of_number, position
from signaller.sources.mariadb.reader import MariaDbLogReader
from signaller.sources.mariadb.row_text import MariaDbColumn
from signaller.sources.mariadb.schema_recorder import SchemaRecorder
from signaller.sources.mariadb.schemas import MariaDbSchemaProvider, MariaDbTableInfo, ValueConversion
from signaller.sources.mariadb.source_block import BinlogSourceBlock, debezium_version
from signaller.sources.mariadb.values import TypeModes


def type_modes(config: SignallerConfig) -> TypeModes:
    """The MariaDB value modes of ``config`` (an unset ``time.precision.mode``, whose declared default is
    PostgreSQL's ``adaptive``, is ``adaptive_time_microseconds``, the binlog connectors' default; the configuration
    refuses an explicit ``adaptive`` for these connectors)."""
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
        connector = "mysql" if config.connector.connector_class == MYSQL_CONNECTOR else "mariadb"
        self._recorder = SchemaRecorder(config, self.catalog, self._plans, connector, debezium_version(connector))
        self._log = MariaDbLogReader(config, self.catalog, self._plans, self._recorder)
        endpoint = Endpoint.of(config)
        snapshot = config.snapshot
        self._chunks = MariaDbChunkReader(
            endpoint, snapshot.signal_data_collection, snapshot.watermarking_strategy.value, position_of=position,
            watermark_keys=WATERMARK_KEYS_BEFORE_3_7 if connector == "mariadb" else None)
        self._schemas: MariaDbSchemaProvider[BinlogChange] = MariaDbSchemaProvider(
            endpoint, config.capture, self._read_change, convert_for=self._conversion)
        self._release = debezium_version(connector)
        self._block = BinlogSourceBlock(connector, config.topics.prefix, self._log.file_name, self._release)

    @property
    def change_type(self) -> type[BinlogChange]:
        """:class:`~signaller.sources.mariadb.changes.BinlogChange`."""
        return BinlogChange

    @property
    def log(self) -> MariaDbLogReader:
        """The binlog stream."""
        return self._log

    @property
    def chunks(self) -> MariaDbChunkReader:
        """Chunk queries and watermarks on their own connection."""
        return self._chunks

    @property
    def schemas(self) -> MariaDbSchemaProvider[BinlogChange]:
        """The catalog's tables; their rows converted by the stream's table plans."""
        return self._schemas

    compile_filter = staticmethod(compile_mariadb_filter)
    """``additional-conditions`` checked and normalized in MariaDB's dialect."""

    def _plan(self, table: TableId) -> TablePlan:
        plan = self._plans.plan(table)
        if plan is None:
            msg = f"{table} is not captured (or no longer exists): its rows have no stream schema"
            raise TerminalSourceError(msg)
        return plan

    def _read_change(self, event: ChangeEvent, info: MariaDbTableInfo) -> BinlogChange:
        """A READ of ``info``'s table as a change of the stream's plan (same output, schema and key)."""
        return BinlogChange.from_event(self._plan(info.table_id), event)

    def _conversion(self, info: MariaDbTableInfo) -> ValueConversion:
        """The stream's conversion of ``info``'s columns: its plan's converters, one per captured column;
        ``TerminalSourceError`` when the catalog's captured columns are not the plan's (the table was altered
        and the stream has not reached that DDL yet; the snapshot of the table ends with ``SQL_EXCEPTION``). A value
        the chunk's text leaves None in a ``NOT NULL`` column (a zero date) gets the plan's fallback, as the
        stream's rows do (:meth:`~signaller.sources.mariadb.changes.TablePlan.row`)."""
        plan = self._plan(info.table_id)
        db, name = info.table_id.schema, info.table_id.table
        captured = tuple(c.name for c in info.columns if self._config.capture.is_column_captured(db, name, c.name))
        if captured != plan.row_columns:
            msg = (f"the columns of {info.table_id} are {list(captured)} now but the stream converts "
                   f"{list(plan.row_columns)} (altered since its plan was made): snapshot it again")
            raise TerminalSourceError(msg)
        converters = dict(plan.converters)
        fallbacks = plan.fallbacks

        def convert(column: MariaDbColumn, value: Any) -> Any:
            return fallbacks.get(column.name) if value is None else converters[column.name](value)

        return convert

    @property
    def source_block(self) -> BinlogSourceBlock:
        """Debezium's MariaDB (or MySQL) ``source`` block."""
        return self._block

    @property
    def debezium_release(self) -> str:
        """The release of the connector's events (``source.version``): the MariaDB connector's notifications
        take its shapes too (:func:`~signaller.snapshot.notifications.for_release`)."""
        return self._release

    def prepare(self) -> list[TableId]:
        """Check the binlog settings (``TerminalSourceError`` naming each missing one) and read the server's
        ``@@server_id`` (the ``server_id`` of READs); the captured tables, sorted. The stream's schema is set
        when the log opens (:class:`~signaller.sources.mariadb.schema_recorder.SchemaRecorder`: the start-up
        schema snapshot at the stream's start position on a first start, taken just after that position is read:
        a DDL statement in between is caught by the stream's column check, a terminal error, never rows decoded
        with wrong columns; the schema history up to the stored position on a restart). Every ``snapshot.mode``
        is accepted: ``initial``/``when_needed`` queue an incremental snapshot of the captured tables at the
        first start (the capture loop's), the stream starting at the server's current position in every mode."""
        self.catalog.check_binlog()
        self._block.server_id = self.catalog.server_id()
        return [table for table in self.catalog.tables() if self._plans.is_captured(table)]

    @property
    def schema_snapshot_taken(self) -> bool:
        """Whether opening the log took the start-up schema snapshot (a first start)."""
        return self._recorder.snapshot_taken

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
        """Close the catalog connections (the schema provider's too); never raises."""
        self.catalog.close()
        self._schemas.close()
        self._recorder.close()
