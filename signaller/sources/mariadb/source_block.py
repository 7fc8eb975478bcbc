"""The ``source`` block of Debezium's MariaDB connector (``io.debezium.connector.mariadb.Source``; the MySQL
connector's is the same with ``mysql``), as a :class:`~signaller.wire.source_block.SourceBlock`.

Members (Debezium ``BinlogSourceInfoStructMaker``): ``version``, ``connector``, ``name`` (``topic.prefix``),
``ts_ms`` (the event's binlog timestamp: seconds precision), ``snapshot``, ``db``, ``sequence`` (always
null for binlog connectors), ``ts_us``, ``ts_ns``, ``table``, ``server_id`` (the server that wrote the
event), ``gtid`` (the transaction's GTID), ``file``/``pos`` (the binlog file and the start position of the
rows event), ``row`` (the row's index in that event), ``thread`` (null: MariaDB's GTID-started
transactions carry none), ``query`` (the annotate-rows statement with ``include.query=true``, else null).

A snapshot READ (built from a ``ChangeEvent``) has ``file``/``pos`` of the stream position its window
was read at (decoded from the event's integer position; the file's base name is the server's), row 0,
no GTID and ``server_id`` the connected server's ``@@server_id`` (:attr:`BinlogSourceBlock.server_id`, set
by the source when it starts; 0 until then), as Debezium's incremental snapshot READs show the last stream
position and the server they were read from. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from signaller.model import ChangeEvent
from signaller.wire.connect import field, primitive, struct
from signaller.wire.envelope import DEBEZIUM_VERSION

MARIADB_DEBEZIUM_VERSION: Final = "3.5.0.Final"
"""``source.version`` of the MariaDB connector's events: the Debezium release whose MariaDB events signaller
reproduces (``debezium-connector-mariadb`` 3.5.0.Final, the newest on Maven Central; its shapes differ from
3.7's, e.g. Geometry version 1 without ``extensions``), so consumers that branch on the version see the
release the events match. The MySQL connector's events keep :data:`DEBEZIUM_VERSION`."""


def debezium_version(connector: str) -> str:
    """The ``source.version`` of ``connector``'s events (``mariadb``: :data:`MARIADB_DEBEZIUM_VERSION`)."""
    return MARIADB_DEBEZIUM_VERSION if connector == "mariadb" else DEBEZIUM_VERSION

_SNAPSHOT: Final = {
    "type": "string", "optional": True, "name": "io.debezium.data.Enum", "version": 1,
    "parameters": {"allowed": "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"},
    "default": "false",
}


def source_schema(connector: str) -> dict[str, Any]:
    """``io.debezium.connector.<connector>.Source`` (``connector``: ``mariadb`` or ``mysql``)."""
    return struct(f"io.debezium.connector.{connector}.Source", [
        field("version", primitive("string", optional=False)),
        field("connector", primitive("string", optional=False)),
        field("name", primitive("string", optional=False)),
        field("ts_ms", primitive("int64", optional=False)),
        field("snapshot", _SNAPSHOT),
        field("db", primitive("string", optional=False)),
        field("sequence", primitive("string", optional=True)),
        field("ts_us", primitive("int64", optional=True)),
        field("ts_ns", primitive("int64", optional=True)),
        field("table", primitive("string", optional=True)),
        field("server_id", primitive("int64", optional=False)),
        field("gtid", primitive("string", optional=True)),
        field("file", primitive("string", optional=False)),
        field("pos", primitive("int64", optional=False)),
        field("row", primitive("int32", optional=False)),
        field("thread", primitive("int64", optional=True)),
        field("query", primitive("string", optional=True)),
    ], optional=False, version=1)


class BinlogSourceBlock:
    """The block of one capture session (``connector``, ``topic.prefix``; ``file_name`` names binlog file number
    ``n``, as the server does; ``server_id``: the server's ``@@server_id``, what READs carry)."""

    def __init__(self, connector: str, topic_prefix: str, file_name: Callable[[int], str],
                 version: str | None = None, server_id: int = 0) -> None:
        self.schema = source_schema(connector)
        self.server_id = server_id
        """The ``server_id`` of READs: the connected server's ``@@server_id`` (set when the source starts)."""
        self._connector = connector
        self._name = topic_prefix
        self._file_name = file_name
        self._version = version or debezium_version(connector)

    def streamed(self, change: Any, /) -> dict[str, Any]:
        """The block of a streamed :class:`~signaller.sources.mariadb.reader.BinlogChange`."""
        ts_us = change.ts_us
        tx = change.tx
        return {
            "version": self._version, "connector": self._connector, "name": self._name, "ts_ms": ts_us // 1000,
            "snapshot": "false", "db": change.table.schema, "sequence": None, "ts_us": ts_us, "ts_ns": ts_us * 1000,
            "table": change.table.table, "server_id": change.server_id, "gtid": tx.gtid, "file": tx.file,
            "pos": change.pos, "row": change.row, "thread": None, "query": change.query,
        }

    def of_event(self, event: ChangeEvent, ts_us: int, /) -> dict[str, Any]:
        """The block of a change built from ``event`` (snapshot READs; see the module docstring)."""
        position = event.lsn or 0
        return {
            "version": self._version, "connector": self._connector, "name": self._name, "ts_ms": ts_us // 1000,
            "snapshot": event.snapshot or "false", "db": event.table.schema, "sequence": None, "ts_us": ts_us,
            "ts_ns": ts_us * 1000, "table": event.table.table, "server_id": self.server_id, "gtid": None,
            "file": self._file_name(position >> 32), "pos": position & 0xFFFFFFFF, "row": 0,
            "thread": None, "query": None,
        }
