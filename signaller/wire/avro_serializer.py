"""The Avro converter's records: every record the sidecar writes, in the Confluent wire format.

:class:`AvroRecordSerializer` is :class:`~signaller.wire.serializer.RecordSerializer`'s Avro twin
(same methods, same records): the Connect schemas are Debezium's (:mod:`signaller.wire.connect`,
names adjusted by ``schema.name.adjustment.mode`` / ``field.name.adjustment.mode``), turned into
Avro as Confluent's ``AvroData`` does (:mod:`signaller.wire.avro`), and each record is ``0``, the
schema id, the Avro body. Schema ids come from a :class:`SchemaIds` (the runtime's registry
client): asked once per table schema version (in :meth:`AvroRecordSerializer.table`) and once per
other record kind, never per record, so a registry failure surfaces before any record of that
version is written. Rows are encoded with fastavro against a schema parsed once per table version;
the envelope around them is assembled from byte fragments (Avro binary is a concatenation of its
fields' encodings), and ``tests/unit/test_avro_converter.py`` decodes every kind with fastavro
against the registered schema text to prove it.

Pure: the only way out is the injected :class:`SchemaIds`. Not thread-safe (use from the capture
loop's thread). Nothing survives a restart: ids are asked again (the registry answers the same).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol, cast

from fastavro import parse_schema, schemaless_writer
from fastavro.validation import validate

from signaller.errors import TerminalSinkError
from signaller.model.events import ChangeEvent, Op
from signaller.model.tables import TableId, TableSchema
from signaller.wire.avro import (
    adjust_name,
    avro_schema,
    check_names,
    datum_converter,
    frame,
    long_bytes,
    schema_text,
    string_bytes,
)
from signaller.wire.columns import ColumnCodec
from signaller.wire.connect import (
    HEARTBEAT_KEY_SCHEMA,
    HEARTBEAT_VALUE_SCHEMA,
    NOTIFICATION_KEY_SCHEMA,
    NOTIFICATION_VALUE_SCHEMA,
    TRANSACTION_KEY_SCHEMA,
    TRANSACTION_VALUE_SCHEMA,
    envelope_schema,
    field,
    struct,
)
from signaller.wire.envelope import CONNECTOR, DEBEZIUM_VERSION, RowChange
from signaller.wire.serializer import Record
from signaller.wire.source_block import SourceBlock

__all__ = ["AvroRecordSerializer", "AvroTableSerializer", "SchemaIds"]

_NULL: Final = b"\x00"
_PRESENT: Final = b"\x02"  # union branch 1 (["null", T])
_OPS: Final = {op: string_bytes(op.value) for op in Op}


class SchemaIds(Protocol):
    """Where the serializer gets schema ids: the registry, under the subject of ``topic`` (key or value).

    ``table`` (``schema.table``) names the table a data-change schema belongs to, for error messages.
    May raise the registry's errors (transient: unreachable; terminal: incompatible, refused).
    """

    def id_for(self, topic: str, *, key: bool, schema: str, table: str | None) -> int:
        """The registry id of ``schema`` (Avro schema text) under ``topic``'s key or value subject."""
        ...


class _Encoded:
    """One Avro schema: its registered text, id and parsed form, and a payload -> datum converter."""

    __slots__ = ("convert", "id", "parsed", "text")

    def __init__(self, node: Mapping[str, Any], ids: SchemaIds, topic: str, *, key: bool, table: str | None) -> None:
        avro = avro_schema(node)
        self.text = schema_text(avro)
        self.parsed = parse_schema(avro)
        self.convert = datum_converter(node)
        self.id = ids.id_for(topic, key=key, schema=self.text, table=table)

    def encode(self, payload: Any) -> bytes:
        """The framed record of ``payload``."""
        datum = payload if self.convert is None else self.convert(payload)
        buffer = io.BytesIO()
        schemaless_writer(buffer, self.parsed, datum)
        return frame(self.id, buffer.getvalue())


class AvroTableSerializer:
    """The Avro key and value records of one table schema version (built by :meth:`AvroRecordSerializer.table`).

    Registers (through :class:`SchemaIds`) the key schema (tables with key columns) and the envelope
    schema when built; afterwards encoding needs no registry. Rows may hold the columns in any order
    (missing ones are null); ``serialize`` takes streamed and snapshot READ rows alike. Source-block
    and envelope rules are those of :class:`~signaller.wire.envelope.EnvelopeSerializer`.
    """

    __slots__ = ("_block", "_block_row", "_key", "_key_fields", "_position", "_row", "_source_db", "_source_head",
                 "_source_table", "_tx_parts", "_value_id",
                 "envelope_schema", "key_schema", "table", "topic", "value_names", "value_schema")

    def __init__(self, table: TableSchema, codecs: Mapping[str, ColumnCodec], *, topic: str, topic_prefix: str,
                 database: str, ids: SchemaIds, schema_names: str = "none", field_names: str = "none",
                 connector_version: str = DEBEZIUM_VERSION, source_block: SourceBlock | None = None) -> None:
        missing = [column.name for column in table.columns if column.name not in codecs]
        if missing:
            msg = f"no codec for column(s) {missing} of {table.table_id}"
            raise TerminalSinkError(msg)
        self.table = table
        self.topic = topic
        emitted = [column.name for column in table.columns if codecs[column.name].emitted]
        self.value_names = tuple(emitted)
        renamed = {name: adjust_name(name, field_names, field=True) for name in emitted}
        base = f"{topic_prefix}.{table.table_id.schema}.{table.table_id.table}"
        names = {part: adjust_name(f"{base}.{part}", schema_names) for part in ("Key", "Value", "Envelope")}
        key_names = [name for name in table.key_columns if name in renamed]
        label = str(table.table_id)
        try:
            for part, fullname in names.items():
                check_names(fullname, list(renamed.values()), f"table {label} ({part} schema)")
        except ValueError as exc:
            raise TerminalSinkError(str(exc)) from None
        self.value_schema = struct(names["Value"], [field(renamed[n], codecs[n].schema) for n in emitted],
                                   optional=True)
        self.key_schema = (struct(names["Key"], [field(renamed[n], codecs[n].schema) for n in key_names],
                                  optional=False) if key_names else None)
        self._block = source_block
        self._block_row: _RowEncoder | None = None
        if source_block is None:
            self.envelope_schema = envelope_schema(names["Envelope"], self.value_schema)
        else:
            self.envelope_schema = envelope_schema(names["Envelope"], self.value_schema, source_block.schema)
            members = [member["field"] for member in source_block.schema["fields"]]
            self._block_row = _RowEncoder(source_block.schema, members, {name: name for name in members})
        self._key = (_Encoded(self.key_schema, ids, topic, key=True, table=label)
                     if self.key_schema is not None else None)
        self._key_fields = tuple((name, renamed[name]) for name in key_names)
        value = _Encoded(self.envelope_schema, ids, topic, key=False, table=label)
        self._value_id = value.id
        self._row = _RowEncoder(self.value_schema, emitted, renamed, label)
        self._source_head = b"".join((string_bytes(connector_version), string_bytes(CONNECTOR),
                                      string_bytes(topic_prefix)))
        self._source_db = string_bytes(database)
        self._source_table = string_bytes(table.table_id.schema) + string_bytes(table.table_id.table)
        self._position: Any = None
        self._tx_parts: tuple[bytes, str, bytes] = (b"", "", b"")

    def serialize(self, change: RowChange, *, ts_us_now: int,
                  transaction: Mapping[str, Any] | None = None) -> tuple[bytes | None, bytes]:
        """Key and value records of a row event, streamed (``tx`` set) or snapshot READ."""
        tx = change.tx
        if self._block_row is not None and tx is not None:
            source = self._block_row.encode(self._block.streamed(change))  # type: ignore[union-attr]
            return (self.serialize_key(change.after if change.after is not None else change.before),
                    self._value(change.op, change.before, change.after, source, ts_us_now, transaction))
        if tx is None:
            event = change.event
            return self.serialize_key(event.after if event.after is not None else event.before), \
                self.serialize_value(event, ts_us_now=ts_us_now, transaction=transaction)
        op, before, after, lsn = change.op, change.before, change.after, change.lsn
        if tx is not self._position:  # the source block's parts constant in a transaction, once per transaction
            self._position = tx
            ts_us, last = tx.commit_ts_us, tx.last_commit_lsn
            self._tx_parts = (
                b"".join((self._source_head, long_bytes(ts_us // 1000), _NULL + string_bytes("false"),
                          self._source_db, _PRESENT)),
                "[null," if last is None else f'["{last}",',
                b"".join((_PRESENT, long_bytes(ts_us), _PRESENT, long_bytes(ts_us * 1000), self._source_table,
                          _optional_long(tx.xid))),
            )
        head, sequence, middle = self._tx_parts
        source = b"".join((head, string_bytes(f'{sequence}"{lsn}"]'), middle, _optional_long(lsn),
                           b"\x00\x00\x00"))
        return (self.serialize_key(after if after is not None else before),
                self._value(op, before, after, source, ts_us_now, transaction))

    def serialize_key(self, row_values: Mapping[str, Any] | None) -> bytes | None:
        """Key record of ``row_values``' key columns; None for a keyless table or a None row."""
        if self._key is None or row_values is None:
            return None
        return self._key.encode({avro: row_values.get(name) for name, avro in self._key_fields})

    def serialize_value(self, event: ChangeEvent, *, ts_us_now: int,
                        transaction: Mapping[str, Any] | None = None) -> bytes:
        """Value record of any change event of this table (``op`` ``m`` is refused)."""
        if event.op is Op.MESSAGE:
            msg = "logical decoding messages (op 'm') are not table change events"
            raise TerminalSinkError(msg)
        if event.table != self.table.table_id:
            msg = f"event of {event.table} given to the serializer of {self.table.table_id}"
            raise TerminalSinkError(msg)
        ts_us = ts_us_now if event.op is Op.READ else event.commit_ts_us
        if self._block_row is not None:
            source = self._block_row.encode(self._block.of_event(event, ts_us))  # type: ignore[union-attr]
            return self._value(event.op, event.before, event.after, source, ts_us_now, transaction)
        incremental = event.snapshot == "incremental"
        source = self._source(ts_us, event.snapshot, event.last_commit_lsn, event.lsn,
                              None if incremental else event.tx_id, lsn_null=incremental)
        return self._value(event.op, event.before, event.after, source, ts_us_now, transaction)

    def tombstone_value(self) -> None:
        """A tombstone's value: null (the Avro converter writes no bytes for a null value)."""
        return None

    def _source(self, ts_us: int, snapshot: str | None, last_commit_lsn: int | None, lsn: int | None,
                tx_id: int | None, *, lsn_null: bool = False) -> bytes:
        first = "null" if last_commit_lsn is None else f'"{last_commit_lsn}"'
        second = "null" if lsn is None else f'"{lsn}"'
        return b"".join((
            self._source_head, long_bytes(ts_us // 1000),
            _NULL + string_bytes(snapshot or "false"),  # [string, null]: the default "false" for null
            self._source_db,
            _PRESENT + string_bytes(f"[{first},{second}]"),
            _PRESENT + long_bytes(ts_us), _PRESENT + long_bytes(ts_us * 1000),
            self._source_table,
            _optional_long(tx_id), _optional_long(None if lsn_null else lsn),
            b"\x00\x00\x00",  # xmin, origin, origin_lsn: null
        ))

    def _value(self, op: Op, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, source: bytes,
               ts_us_now: int, transaction: Mapping[str, Any] | None) -> bytes:
        if op is Op.TRUNCATE:
            before = after = None
        row = self._row.encode
        return frame(self._value_id, b"".join((
            _NULL if before is None else _PRESENT + row(before),
            _NULL if after is None else _PRESENT + row(after),
            source,
            _NULL if transaction is None else _PRESENT + _block(transaction),
            _OPS[op],
            _PRESENT + long_bytes(ts_us_now // 1000), _PRESENT + long_bytes(ts_us_now),
            _PRESENT + long_bytes(ts_us_now * 1000),
        )))


def _optional_long(value: int | None) -> bytes:
    return _NULL if value is None else _PRESENT + long_bytes(value)


def _block(transaction: Mapping[str, Any]) -> bytes:
    try:
        return (string_bytes(str(transaction["id"])) + long_bytes(int(transaction["total_order"]))
                + long_bytes(int(transaction["data_collection_order"])))
    except KeyError as exc:
        msg = f"transaction block lacks {exc.args[0]!r} (needs id, total_order, data_collection_order)"
        raise TerminalSinkError(msg) from None


class _RowEncoder:
    """A row image (column -> payload) as the Avro body of the ``Value`` record of ``table``.

    A row the schema cannot hold (a value of the wrong kind, a null in a required field) raises
    :class:`~signaller.errors.TerminalSinkError` naming the table, the column, its Avro type and the value
    (shortened), as Kafka Connect's converters stop a task on a value that does not fit its schema.
    """

    __slots__ = ("_columns", "_convert", "_fields", "_parsed", "_table")

    def __init__(self, value_schema: Mapping[str, Any], columns: list[str], renamed: Mapping[str, str],
                 table: str = "?") -> None:
        self._table = table
        self._columns = {avro: name for name, avro in renamed.items()}
        self._fields = value_schema["fields"]
        record = {**value_schema, "optional": False}
        # the Value record on its own: the same binary encoding as the union branch of before/after
        self._parsed = parse_schema(avro_schema(record))
        convert = datum_converter(record)
        if all(name == renamed[name] for name in columns):
            self._convert: Callable[[Mapping[str, Any]], Any] | None = convert
        else:
            pairs = tuple(renamed.items())

            def rename(row: Mapping[str, Any]) -> Any:
                return {avro: row.get(name) for name, avro in pairs}

            self._convert = rename if convert is None else (lambda row: convert(rename(row)))

    def encode(self, row: Mapping[str, Any]) -> bytes:
        """The Avro body of ``row``; TerminalSinkError (see the class) if the schema cannot hold it."""
        try:
            datum = row if self._convert is None else self._convert(row)
            buffer = io.BytesIO()
            schemaless_writer(buffer, self._parsed, datum)
        except Exception as exc:  # fastavro and the datum converters raise TypeError, ValueError, ...
            raise self._unencodable(row, exc) from None
        return buffer.getvalue()

    def _unencodable(self, row: Mapping[str, Any], exc: Exception) -> TerminalSinkError:
        """The error for a row the schema cannot hold, naming the first column whose value does not fit."""
        column, avro_type = "?", "?"
        parsed_fields = cast("dict[str, Any]", self._parsed)["fields"]
        for node, avro_field in zip(self._fields, parsed_fields, strict=True):
            name = self._columns.get(node["field"], node["field"])
            try:
                item = row.get(name)
                if item is None:
                    item = node.get("default")  # as the datum converter (Connect's Struct.get) reads a null
                convert = datum_converter(node)
                validate(item if convert is None else convert(item), avro_field["type"], raise_errors=True)
            except Exception:  # ValidationError, or the datum converter's error on this value
                column, avro_type = name, _type_name(avro_field["type"])
                break
        value = row.get(column)
        shown = repr(value)
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        msg = (f"table {self._table}: column {column!r} ({avro_type}) cannot hold {shown} ({type(value).__name__}) "
               f"in Avro, so the change cannot be written ({exc})")
        return TerminalSinkError(msg)


class AvroRecordSerializer:
    """Avro (Confluent wire format) bytes of every record the sidecar writes (see the module docstring).

    ``topic_for`` names a table's topic (subjects follow it: ``<topic>-key``/``<topic>-value``); the
    heartbeat, transaction and notification topics name the subjects of those records, registered on
    their first record. ``schema_names``/``field_names`` are the name adjustment modes; ``source_block``
    the source's ``source`` block (None: the built-in PostgreSQL one, rendered from byte fragments).
    """

    def __init__(self, *, topic_prefix: str, database: str, ids: SchemaIds, topic_for: Callable[[TableId], str],
                 heartbeat_topic: str, transaction_topic: str, notification_topic: str | None,
                 schema_names: str = "none", field_names: str = "none",
                 source_block: SourceBlock | None = None) -> None:
        self._block = source_block
        self._topic_prefix = topic_prefix
        self._database = database
        self._ids = ids
        self._topic_for = topic_for
        self._topics = {"heartbeat": heartbeat_topic, "transaction": transaction_topic,
                        "notification": notification_topic or ""}
        self._schema_names = schema_names
        self._field_names = field_names
        self._fixed: dict[tuple[str, bool], _Encoded] = {}

    def table(self, schema: TableSchema, codecs: Mapping[str, ColumnCodec]) -> AvroTableSerializer:
        """The records of one table schema version; registers its schemas (may raise the registry's errors)."""
        return AvroTableSerializer(schema, codecs, topic=self._topic_for(schema.table_id),
                                   topic_prefix=self._topic_prefix, database=self._database, ids=self._ids,
                                   schema_names=self._schema_names, field_names=self._field_names,
                                   source_block=self._block)

    def _encoded(self, kind: str, node: Mapping[str, Any], *, key: bool) -> _Encoded:
        encoded = self._fixed.get((kind, key))
        if encoded is None:
            encoded = self._fixed[kind, key] = _Encoded(node, self._ids, self._topics[kind], key=key, table=None)
        return encoded

    def heartbeat(self, ts_ms: int) -> Record:
        """A heartbeat record ``{serverName}`` → ``{ts_ms}``."""
        return (self._encoded("heartbeat", HEARTBEAT_KEY_SCHEMA, key=True).encode({"serverName": self._topic_prefix}),
                self._encoded("heartbeat", HEARTBEAT_VALUE_SCHEMA, key=False).encode({"ts_ms": ts_ms}))

    def transaction_begin(self, transaction_id: str, ts_ms: int) -> Record:
        """A transaction ``BEGIN`` record."""
        return self._transaction(transaction_id, {"status": "BEGIN", "id": transaction_id, "event_count": None,
                                                  "data_collections": None, "ts_ms": ts_ms})

    def transaction_end(self, transaction_id: str, ts_ms: int, event_count: int,
                        data_collections: Iterable[tuple[str, int]]) -> Record:
        """A transaction ``END`` record; ``data_collections`` are ``(schema.table, events)`` pairs."""
        collections = [{"data_collection": name, "event_count": count} for name, count in data_collections]
        return self._transaction(transaction_id, {"status": "END", "id": transaction_id, "event_count": event_count,
                                                  "data_collections": collections, "ts_ms": ts_ms})

    def _transaction(self, transaction_id: str, payload: Mapping[str, Any]) -> Record:
        return (self._encoded("transaction", TRANSACTION_KEY_SCHEMA, key=True).encode({"id": transaction_id}),
                self._encoded("transaction", TRANSACTION_VALUE_SCHEMA, key=False).encode(payload))

    def notification(self, notification_id: str, payload: Mapping[str, object]) -> Record:
        """A notification record ``{id}`` → ``payload``."""
        return (self._encoded("notification", NOTIFICATION_KEY_SCHEMA, key=True).encode({"id": notification_id}),
                self._encoded("notification", NOTIFICATION_VALUE_SCHEMA, key=False).encode(payload))


def _type_name(avro_type: Any) -> str:
    """A short name of a parsed Avro type: ``int``, ``["null", "string"]``, a record's name, ``array``..."""
    if isinstance(avro_type, list):
        return "[" + ", ".join(_type_name(branch) for branch in avro_type) + "]"
    if isinstance(avro_type, dict):
        return str(avro_type.get("name") or avro_type.get("logicalType") or avro_type.get("type"))
    return str(avro_type)
