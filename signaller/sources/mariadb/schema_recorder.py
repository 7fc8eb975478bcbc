"""Where the MariaDB stream's schema comes from at start, and where each schema change goes: the start-up schema
snapshot, the schema history and the schema change topic, as Debezium's MariaDB connector keeps them.

:meth:`SchemaRecorder.start` is called by the log reader when it opens. Without stored offsets it takes the
schema snapshot at the stream's start position: the captured tables' ``SHOW CREATE TABLE`` into the model, and
Debezium's snapshot statements (``SET character_set_server``, ``DROP TABLE IF EXISTS`` of each table, per
database ``DROP DATABASE IF EXISTS``/``CREATE DATABASE``/``USE``, then each ``CREATE TABLE``; tables in
``table.include.list`` order, the signal table last; ``snapshot`` ``true``, the last ``last``) written to the
history (without the database statements under ``store.only.captured.tables.ddl``) before they are returned
for the schema change topic. With stored offsets it rebuilds the model from the history records up to the
stored position (a missing or empty history is a ``TerminalSourceError``); without a history topic configured,
from ``SHOW CREATE TABLE`` (the schema the tables have now, as before a history existed; logged).

:meth:`SchemaRecorder.streamed` takes one DDL statement's table changes (applied to the model by the reader),
writes their history records (durable before it returns) and renders their schema change records. The history
is written from the reader thread only (after :meth:`start`); ``include.schema.changes=false`` keeps the schema
change topic empty, the history is written all the same.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from signaller.config import SignallerConfig
from signaller.model import TableId
from signaller.sources.base import SchemaChangeRecords
from signaller.sources.mariadb.catalog import Catalog, quote_name
from signaller.sources.mariadb.changes import TablePlans
from signaller.sources.mariadb.positions import Resume
from signaller.sources.mariadb.schema_history import KafkaSchemaHistory, missing_history
from signaller.sources.mariadb.schema_records import (
    DdlEvent,
    history_position_is_applied,
    history_record,
    schema_change_record,
)
from signaller.sources.mariadb.table_model import TableChange

__all__ = ["SchemaRecorder", "StreamedDdl"]

log = logging.getLogger("signaller.source")


@dataclass(frozen=True, slots=True)
class StreamedDdl:
    """Where a streamed DDL statement is: its query event's ``file``/``pos``, its GTID (None without), the server
    and time (s) of the event, the GTID event's position and the GTID set before the statement."""

    file: str
    pos: int
    gtid: str | None
    server_id: int
    ts_sec: int
    begin_pos: int
    gtids_before: str


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SchemaRecorder:
    """The schema's start and its changes' records for one capture session (see the module docstring)."""

    def __init__(self, config: SignallerConfig, catalog: Catalog, plans: TablePlans, connector: str,
                 version: str) -> None:
        self._config = config
        self._catalog = catalog
        self._plans = plans
        self._connector = connector
        self._version = version
        self._prefix = config.topics.prefix
        binlog = config.binlog
        self.history: KafkaSchemaHistory | None = None
        if binlog.history_topic:
            client = dict(config.kafka_client_config())
            if binlog.history_bootstrap_servers:
                client["bootstrap.servers"] = binlog.history_bootstrap_servers
            self.history = KafkaSchemaHistory(binlog.history_topic, client,
                                              config.kafka.topic_creation_default_replication_factor)
        self.snapshot_taken = False

    # -- start ----------------------------------------------------------------------------
    def start(self, start: Resume, resumed: bool) -> list[SchemaChangeRecords]:
        """The schema at ``start``: recovered (``resumed``: offsets were stored) or snapshotted; the items to send
        first (the snapshot's schema change records; none when recovered)."""
        tables = self._ordered(t for t in self._catalog.tables() if self._plans.is_captured(t))
        if resumed:
            if self.history is None:
                log.warning("no schema.history.internal.kafka.topic: the schema of the captured tables is read as "
                            "it is now, not as it was at the stored binlog position")
                self._plans.load_snapshot(tables)
            else:
                self._recover(start)
            return []
        return self._snapshot(start, tables)

    def _ordered(self, tables: Any) -> list[TableId]:
        patterns = self._config.capture.table_include_list
        signal = self._config.snapshot.signal_data_collection

        def rank(table: TableId) -> tuple[bool, int, str, str]:
            name = f"{table.schema}.{table.table}"
            first = next((i for i, p in enumerate(patterns) if p.fullmatch(name)), len(patterns))
            return table == signal, first, table.schema, table.table

        return sorted(tables, key=rank)

    def _snapshot(self, start: Resume, tables: list[TableId]) -> list[SchemaChangeRecords]:
        texts = self._plans.load_snapshot(tables)
        model = self._plans.model
        server = self._catalog.variables("character_set_server", "collation_server")
        collations = self._catalog.database_collations()
        events: list[tuple[DdlEvent, bool]] = []  # (event, in the history)
        only_tables = self._config.binlog.history_only_captured_tables

        def add(ddl: str, database: str, table: str | None, changes: tuple[TableChange, ...],
                in_history: bool = True) -> None:
            position: dict[str, Any] = {"ts_sec": int(time.time()), "file": start.file, "pos": start.pos}
            if start.gtids.domains:
                position["gtids"] = str(start.gtids)
            position["snapshot"] = "INITIAL"
            events.append((DdlEvent(ddl, database, table, changes, start.file, start.pos, 0, None, _now_ms(),
                                    "true", position, row=0), in_history))

        add(f"SET character_set_server={server.get('character_set_server', 'utf8mb4')}, "
            f"collation_server={server.get('collation_server', 'utf8mb4_general_ci')}", "", None, ())
        present = [table for table, _text in texts]
        for table in present:
            add(f"DROP TABLE IF EXISTS {quote_name(table.schema)}.{quote_name(table.table)}", table.schema,
                table.table, (TableChange("DROP", table, None),))
        for database in dict.fromkeys(table.schema for table in present):
            charset, collation = collations.get(database, (None, None))
            add(f"DROP DATABASE IF EXISTS {quote_name(database)}", database, None, (), not only_tables)
            add(f"CREATE DATABASE {quote_name(database)}" + (f" CHARSET {charset}" if charset else "")
                + (f" COLLATE {collation}" if collation else ""), database, None, (), not only_tables)
            add(f"USE {quote_name(database)}", database, None, (), not only_tables)
            for table, text in texts:
                if table.schema == database:
                    add(text, database, table.table, (TableChange("CREATE", table, model.tables[table]),))
        if events:
            last, in_history = events[-1]
            events[-1] = (DdlEvent(last.ddl, last.database, last.table, last.changes, last.file, last.pos, 0, None,
                                   last.ts_ms, "last", last.history_position, row=0), in_history)
        if self.history is not None:
            self.history.create()
            self.history.store([history_record(e, topic_prefix=self._prefix, now_ms=e.ts_ms)
                                for e, kept in events if kept])
        self.snapshot_taken = True
        log.info("schema snapshot of %d table(s) at %s:%d", len(present), start.file, start.pos)
        return [self._item([e for e, _kept in events], start.position)]

    def _recover(self, start: Resume) -> None:
        assert self.history is not None
        history = self.history
        if not history.exists():
            raise missing_history(history.topic)
        records = history.read()
        if not records:
            raise missing_history(history.topic)
        statements: list[tuple[str, str]] = []
        for document in records:
            position = document.get("position")
            ddl, database = document.get("ddl"), document.get("databaseName")
            if not isinstance(position, dict) or not isinstance(ddl, str):
                continue
            if history_position_is_applied(position, start.position):
                statements.append((ddl, database if isinstance(database, str) else ""))
        self._plans.load_history(statements, f"the schema history topic {history.topic!r}")
        log.info("schema of %d table(s) recovered from %d schema history record(s) up to %s:%d",
                 len(self._plans.model.tables), len(statements), start.file, start.pos)

    # -- streaming ------------------------------------------------------------------------
    def streamed(self, sql: str, default_db: str, changes: Sequence[TableChange], where: StreamedDdl,
                 end: Resume) -> SchemaChangeRecords:
        """The records of one streamed DDL statement's ``changes`` (captured tables only, in order); its history
        records are stored first. ``end`` is the point after the statement."""
        position = {"transaction_id": where.gtid, "ts_sec": where.ts_sec, "file": where.file,
                    "pos": where.begin_pos, "gtids": where.gtids_before, "server_id": where.server_id, "event": 1}
        if where.gtid is None:
            del position["transaction_id"]
        events = [DdlEvent(sql, change.table_id.schema or default_db, change.table_id.table, (change,), where.file,
                           where.pos, where.server_id, where.gtid, where.ts_sec * 1000, "false", position)
                  for change in changes]
        if self.history is not None:
            self.history.store([history_record(e, topic_prefix=self._prefix, now_ms=_now_ms()) for e in events])
        return self._item(events, end.position)

    def _item(self, events: Sequence[DdlEvent], end_lsn: int) -> SchemaChangeRecords:
        config = self._config
        if not config.binlog.include_schema_changes or config.connector.avro:
            return SchemaChangeRecords((), end_lsn)
        connector = config.connector
        records = tuple((self._prefix, *schema_change_record(
            event, connector=self._connector, version=self._version, topic_prefix=self._prefix, now_ms=_now_ms(),
            key_schemas=connector.key_schemas_enable, value_schemas=connector.value_schemas_enable))
            for event in events)
        return SchemaChangeRecords(records, end_lsn)

    def close(self) -> None:
        """Close the history's producer; never raises."""
        if self.history is not None:
            self.history.close()
