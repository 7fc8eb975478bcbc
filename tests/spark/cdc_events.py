"""Synthetic Debezium change events, rendered by the sidecar's own serializer and type codecs.

``SourceTable`` turns PostgreSQL text values (what pgoutput sends) into the Kafka key and value
bytes the sidecar would publish: ``signaller.sources.postgres.codecs.codec_for`` converts the
text, ``EnvelopeSerializer`` renders the JsonConverter record, with or without schemas, or (given
the registry's ``SchemaIds``) ``AvroTableSerializer`` the AvroConverter's, in the Confluent wire format.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes, codec_for, placeholder_for
from signaller.wire.avro_serializer import AvroTableSerializer, SchemaIds
from signaller.wire.envelope import EnvelopeSerializer

Record = tuple[bytes | None, bytes | None]


class SourceTable:
    """One captured table: columns, the type modes per column and the serializer.

    ``event(op, commit, lsn, before=..., after=...)`` takes row dicts of PostgreSQL *text*
    values (None = SQL NULL, :data:`TOAST` = unchanged TOASTed value) and returns ``(key, value)``.
    ``commit`` is the previous transaction's commit LSN (``source.sequence[0]``), ``lsn`` the
    change's LSN; snapshot reads (``op="r"``) carry the window's position the same way.
    """

    def __init__(
        self, prefix: str, name: str, columns: list[Column], *, schemas_enable: bool = True,
        modes: Mapping[str, TypeModes] | None = None, schema: str = "public", avro: SchemaIds | None = None,
    ) -> None:
        self.table = TableSchema(TableId(schema, name), tuple(columns))
        self.codecs = {c.name: codec_for(c, (modes or {}).get(c.name, TypeModes())) for c in columns}
        self.serializer: EnvelopeSerializer | AvroTableSerializer
        if avro is None:
            self.serializer = EnvelopeSerializer(
                self.table, self.codecs, topic_prefix=prefix, database="inventory", schemas_enable=schemas_enable
            )
        else:
            self.serializer = AvroTableSerializer(self.table, self.codecs, topic=f"{prefix}.{schema}.{name}",
                                                  topic_prefix=prefix, database="inventory", ids=avro)
        self.topic = self.serializer.topic

    def values(self, texts: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if texts is None:
            return None
        out: dict[str, Any] = {}
        for column in self.table.columns:
            text = texts.get(column.name)
            codec = self.codecs[column.name]
            if text is TOAST:
                out[column.name] = placeholder_for(codec)
            else:
                out[column.name] = None if text is None else codec.convert(text)
        return out

    def event(
        self, op: str, commit: int, lsn: int, *, before: Mapping[str, Any] | None = None,
        after: Mapping[str, Any] | None = None,
    ) -> Record:
        kind = Op(op)
        snapshot = "incremental" if kind is Op.READ else None
        old, new = self.values(before), self.values(after)
        event = ChangeEvent(
            kind, self.table.table_id, old, new, None if snapshot else lsn, None if snapshot else lsn + 8,
            commit, None if snapshot else 700 + lsn % 97, 1_700_000_000_000_000 + lsn, snapshot,
        )
        if snapshot:  # reads: the window's stream position is in the sequence, txId/lsn are null
            event = _with_position(event, commit, lsn)
        key = None if kind is Op.TRUNCATE else self.serializer.serialize_key(new if new is not None else old)
        return key, self.serializer.serialize_value(event, ts_us_now=1_700_000_000_000_000 + lsn)

    def tombstone(self, before: Mapping[str, Any]) -> Record:
        """The Kafka tombstone Debezium sends after a delete (same key, null value)."""
        return self.serializer.serialize_key(self.values(before)), None


class _Toast:
    def __repr__(self) -> str:
        return "TOAST"


TOAST: Any = _Toast()


def _with_position(event: ChangeEvent, commit: int, lsn: int) -> ChangeEvent:
    """A snapshot read whose ``source.sequence`` is ``[commit, lsn]`` (the window's position)."""
    return ChangeEvent(event.op, event.table, event.before, event.after, lsn, None, commit, None,
                       event.commit_ts_us, event.snapshot)


BINLOG = "mariadb-bin"
"""The binlog base name of :class:`BinlogTable`'s events (the stack's MariaDB's)."""


class BinlogTable:
    """One captured MariaDB table whose events carry Debezium's MariaDB ``source`` block (``file``, ``pos``,
    ``row``, ``gtid``, ...), rendered by the sidecar's serializer with the MariaDB source's block.

    ``event(op, file, pos, row, before=..., after=...)`` takes rows of PostgreSQL *text* values (int and text
    columns render as MariaDB's do) at binlog coordinate (``mariadb-bin.<file>``, ``pos``), row ``row`` of
    its rows event. A snapshot READ (``op="r"``) is built as the snapshot engine builds it: a ``ChangeEvent``
    whose ``lsn`` is the window's integer position, rendered with row 0 and no GTID.
    """

    def __init__(self, prefix: str, name: str, columns: list[Column], *, database: str = "inventory",
                 connector: str = "mariadb") -> None:
        from signaller.sources.mariadb.source_block import BinlogSourceBlock

        self.table = TableSchema(TableId(database, name), tuple(columns))
        codecs = {c.name: codec_for(c, TypeModes()) for c in columns}
        block = BinlogSourceBlock(connector, prefix, lambda number: f"{BINLOG}.{number:06d}")
        self.serializer = EnvelopeSerializer(self.table, codecs, topic_prefix=prefix, database=database,
                                             source_block=block)
        self.topic = self.serializer.topic
        self._codecs = codecs

    def values(self, texts: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if texts is None:
            return None
        return {c.name: None if texts.get(c.name) is None else self._codecs[c.name].convert(texts[c.name])
                for c in self.table.columns}

    def event(self, op: str, file: int, pos: int, row: int = 0, *, before: Mapping[str, Any] | None = None,
              after: Mapping[str, Any] | None = None) -> Record:
        from signaller.sources.mariadb.changes import BinlogChange, BinlogTx
        from signaller.sources.mariadb.positions import gtid_number, position

        kind, old, new = Op(op), self.values(before), self.values(after)
        ts_us = 1_700_000_000_000_000 + pos * 1_000_000
        key = None if kind is Op.TRUNCATE else self.serializer.serialize_key(new if new is not None else old)
        if kind is Op.READ:
            event = ChangeEvent(kind, self.table.table_id, None, new, position(f"{BINLOG}.{file:06d}", pos), None,
                                None, None, ts_us, "incremental")
            return key, self.serializer.serialize_value(event, ts_us_now=ts_us)
        plan: Any = _Plan(self.table.table_id)
        tx = BinlogTx(gtid_number(0, 1, pos), f"0-1-{pos}", f"{BINLOG}.{file:06d}", ts_us, None, 1, 0)
        change = BinlogChange(plan, kind, old, new, position(tx.file, pos), tx, pos, row, None, ts_us, 1)
        return key, self.serializer.serialize(change, ts_us_now=ts_us)[1]

    def tombstone(self, before: Mapping[str, Any]) -> Record:
        """The Kafka tombstone Debezium sends after a delete (same key, null value)."""
        return self.serializer.serialize_key(self.values(before)), None


class _Plan:
    """What a ``BinlogChange`` needs of its table plan here: the table."""

    def __init__(self, table_id: TableId) -> None:
        self.table_id = table_id
