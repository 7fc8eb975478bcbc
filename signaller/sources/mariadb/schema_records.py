"""The records of one schema change, as Debezium's MariaDB (or MySQL) connector writes them: the schema change
topic's (``<topic.prefix>``, key ``SchemaChangeKey {databaseName}``, value ``SchemaChangeValue {source, ts_ms,
databaseName, schemaName, ddl, tableChanges}``) and the schema history's (a plain JSON document, no key:
``{source: {server}, position, ts_ms, databaseName, ddl, tableChanges}``).

A :class:`DdlEvent` is one statement with where it happened: a streamed DDL statement (``source.pos`` the query
event's position, ``row`` 1, the statement's GTID and server; the history position Debezium's offset before
the statement: the GTID event's position, the GTID set before it, ``event`` 1) or a statement of the start-up
schema snapshot (``snapshot`` ``true``, the last one ``last``; the snapshot's binlog position, ``server_id`` 0,
no GTID; the history position the snapshot's, with ``snapshot: INITIAL``). :func:`schema_change_record` and
:func:`history_record` render it; :func:`history_position_is_applied` says whether a history record is part of
the schema at a stored offset. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from signaller.sources.mariadb.positions import position
from signaller.sources.mariadb.source_block import source_schema
from signaller.sources.mariadb.table_changes import CHANGE_SCHEMA, change_document, change_struct
from signaller.sources.mariadb.table_model import TableChange
from signaller.wire.connect import field as member
from signaller.wire.connect import primitive, struct
from signaller.wire.jackson import dumps, record, schema_prefix

__all__ = ["DdlEvent", "history_position_is_applied", "history_record", "schema_change_record"]


@dataclass(frozen=True, slots=True)
class DdlEvent:
    """One schema change (see the module docstring): ``database`` the statement's database (``""`` for the
    snapshot's ``SET``), ``table`` the table of its first change (``source.table``), ``ts_ms`` the source time
    (streamed: the event's, whole seconds), ``history_position`` the schema history's ``position``."""

    ddl: str
    database: str
    table: str | None
    changes: tuple[TableChange, ...]
    file: str
    pos: int
    server_id: int
    gtid: str | None
    ts_ms: int
    snapshot: str
    history_position: dict[str, Any] = field(default_factory=dict)
    row: int = 1


def _key_schema(connector: str) -> dict[str, Any]:
    return struct(f"io.debezium.connector.{connector}.SchemaChangeKey",
                  [member("databaseName", primitive("string", optional=False))], optional=False, version=1)


def _value_schema(connector: str) -> dict[str, Any]:
    return struct(f"io.debezium.connector.{connector}.SchemaChangeValue", [
        member("source", source_schema(connector)),
        member("ts_ms", primitive("int64", optional=False)),
        member("databaseName", primitive("string", optional=True)),
        member("schemaName", primitive("string", optional=True)),
        member("ddl", primitive("string", optional=True)),
        member("tableChanges", {"type": "array", "items": CHANGE_SCHEMA, "optional": False}),
    ], optional=False, version=1)


_PREFIXES: Final[dict[str, tuple[bytes, bytes]]] = {
    connector: (schema_prefix(_key_schema(connector)), schema_prefix(_value_schema(connector)))
    for connector in ("mariadb", "mysql")
}


def schema_change_record(event: DdlEvent, *, connector: str, version: str, topic_prefix: str, now_ms: int,
                         key_schemas: bool = True, value_schemas: bool = True) -> tuple[bytes, bytes]:
    """The key and value (JsonConverter's bytes, with their schemas when enabled) of ``event`` on the schema
    change topic of ``connector`` (``mariadb``/``mysql``) release ``version``; ``now_ms`` the record's ``ts_ms``."""
    key_prefix, value_prefix = _PREFIXES[connector]
    ts_us = event.ts_ms * 1000
    source = {
        "version": version, "connector": connector, "name": topic_prefix, "ts_ms": event.ts_ms,
        "snapshot": event.snapshot, "db": event.database, "sequence": None, "ts_us": ts_us, "ts_ns": ts_us * 1000,
        "table": event.table, "server_id": event.server_id, "gtid": event.gtid, "file": event.file,
        "pos": event.pos, "row": event.row, "thread": None, "query": None,
    }
    payload = {"source": source, "ts_ms": now_ms, "databaseName": event.database, "schemaName": None,
               "ddl": event.ddl, "tableChanges": [change_struct(change) for change in event.changes]}
    return (record(key_prefix if key_schemas else None, {"databaseName": event.database}),
            record(value_prefix if value_schemas else None, payload))


def history_record(event: DdlEvent, *, topic_prefix: str, now_ms: int) -> bytes:
    """``event`` as a schema history record's value (compact JSON; the record has no key)."""
    return dumps({"source": {"server": topic_prefix}, "position": event.history_position, "ts_ms": now_ms,
                  "databaseName": event.database, "ddl": event.ddl,
                  "tableChanges": [change_document(change) for change in event.changes]})


def history_position_is_applied(recorded: dict[str, Any], stored: int) -> bool:
    """Whether a history record at ``recorded`` (its ``position``) is part of the schema at the stored offset
    ``stored`` (an integer binlog position, :func:`~signaller.sources.mariadb.positions.position`): a snapshot's
    records when taken at or before it, a streamed statement when it began before it (the stored offset is
    then after the statement: offsets are stored at transaction boundaries only)."""
    file, pos = recorded.get("file"), recorded.get("pos")
    if not isinstance(file, str) or not isinstance(pos, int):
        return False
    at = position(file, pos)
    return at <= stored if recorded.get("snapshot") else at < stored
