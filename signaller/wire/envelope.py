"""Kafka Connect ``JsonConverter`` rendering of Debezium PostgreSQL change events.

Everything here produces the bytes Kafka Connect would write for the Debezium PostgreSQL
connector with ``key.converter``/``value.converter`` = ``org.apache.kafka.connect.json.JsonConverter``:

* ``schemas.enable=true`` (the default): ``{"schema": <schema node>, "payload": <payload>}``;
  schema nodes list ``type``, ``fields``/``items``, ``optional``, ``name``, ``version``, ``doc``,
  ``parameters``, ``default`` in that order and struct fields append ``"field"``; the schema
  part is serialized once per table and spliced in front of each payload.
* ``schemas.enable=false``: the payload alone.

Payload values come pre-converted by the source (each column's
:class:`~signaller.wire.columns.ColumnCodec`); this module places them in schema field order,
renders Java-formatted floats as Jackson does and writes control-character escapes with
Jackson's upper-case hex (:mod:`signaller.wire.jackson`). A null field whose schema has a default
is written as the default (JsonConverter's rule), which is why streamed events show
``"snapshot":"false"``.

Records (reference: debezium-protocol.md section 7; Debezium ``Envelope``, ``SchemaFactory``,
``PostgresSourceInfoStructMaker``): data changes via :class:`EnvelopeSerializer` (key
``<prefix>.<schema>.<table>.Key``, value ``...Envelope`` version 2 with ``before``/``after``
``...Value``, ``source``, ``transaction``, ``op``, ``ts_ms``/``ts_us``/``ts_ns``); tombstones:
the delete's key with a null value (:meth:`EnvelopeSerializer.tombstone_value`). Heartbeat,
transaction and notification records are in :mod:`signaller.wire.records`. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

import orjson

from signaller.errors import TerminalSinkError
from signaller.model.events import ChangeEvent, Op
from signaller.model.tables import TableSchema
from signaller.wire.columns import CodecProvider, ColumnCodec
from signaller.wire.connect import envelope_schema, field, struct
from signaller.wire.jackson import (
    ESCAPE_MARK,
    LOWER_HEX_ESCAPE,
    dumps,
    record,
    render_default,
    schema_prefix,
    upper_escape,
)

__all__ = [
    "CONNECTOR",
    "DEBEZIUM_VERSION",
    "ChangeEventSerializer",
    "EnvelopeSerializer",
    "StreamPosition",
]

DEBEZIUM_VERSION: Final = "3.7.0.Final"
"""``source.version`` written by default; pass ``connector_version`` to override."""

CONNECTOR: Final = "postgresql"
"""``source.connector``."""

_orjson_dumps: Final = orjson.dumps


class ChangeEventSerializer(Protocol):
    """Turns change events of one table into Kafka record key and value bytes.

    Implementations are built once per table schema and are immutable afterwards, so one
    instance may be shared by threads. ``serialize_key`` returns None for a table without key
    columns (or a None row): Debezium sends a null key. ``serialize_value`` never returns None;
    tombstones are the caller's business (same key, null value).
    """

    def serialize_key(self, row_values: Mapping[str, Any] | None) -> bytes | None:
        """Key record bytes for a row of converted values; None for a keyless table."""
        ...

    def serialize_value(
        self, event: ChangeEvent, *, ts_us_now: int, transaction: Mapping[str, Any] | None = None
    ) -> bytes:
        """Value record bytes of ``event``; ``ts_us_now`` is the emission time in µs."""
        ...


def _sequence(last_commit_lsn: int | None, lsn: int | None) -> str:
    """``source.sequence``: Jackson's rendering of ``[lastCommitLsn, lsn]`` as decimal strings."""
    first = "null" if last_commit_lsn is None else f'"{last_commit_lsn}"'
    second = "null" if lsn is None else f'"{lsn}"'
    return f"[{first},{second}]"


def _int_or_null(value: int | None) -> bytes:
    return b"null" if value is None else b"%d" % value


def _literal(fragment: bytes) -> bytes:
    """``fragment`` made safe to appear verbatim in a ``bytes % args`` template."""
    return fragment.replace(b"%", b"%%")


_SOURCE_TAIL: Final = b',"xmin":null,"origin":null,"origin_lsn":null}'


_OP_JSON: Final = {op: orjson.dumps(op.value) for op in Op}


_TRUNCATE: Final = Op.TRUNCATE


class StreamPosition(Protocol):
    """A streamed event's transaction, as :meth:`EnvelopeSerializer.serialize_streamed` needs it
    (the reader's ``TxBegin``): id, commit time (µs) and the previous transaction's commit LSN."""

    @property
    def xid(self) -> int:
        """The transaction id (``source.txId``)."""
        ...

    @property
    def commit_ts_us(self) -> int:
        """The commit time in µs since the epoch (``source.ts_*``)."""
        ...

    @property
    def last_commit_lsn(self) -> int | None:
        """The previous transaction's commit LSN (``source.sequence[0]``); None at the start."""
        ...


class EnvelopeSerializer:
    """JsonConverter serializer for one table's change events (a :class:`ChangeEventSerializer`).

    Built once per (table schema, topic prefix, database, options); every schema and its JSON
    bytes are computed here. ``codecs`` maps each column name of ``table`` to its
    :class:`~signaller.wire.columns.ColumnCodec`; columns whose codec is not
    ``emitted`` are left out of schemas and payloads, as Debezium does. ``schemas_enable`` is
    the value converter's ``schemas.enable``; ``key_schemas_enable`` the key converter's
    (defaults to ``schemas_enable``).

    Source block rules: ``ts_*`` are the commit time, or the emission time ``ts_us_now`` for
    snapshot reads (``op`` ``r``); ``snapshot`` is the event's value or, when absent, the schema
    default ``"false"``; ``sequence`` is ``[last_commit_lsn, lsn]``; for ``snapshot ==
    "incremental"`` ``txId`` and ``lsn`` are null (the sequence still shows the stream
    position); ``xmin``, ``origin`` and ``origin_lsn`` are null. ``op`` ``d`` carries the old
    row in ``before``; ``op`` ``t`` has null ``before`` and ``after``; ``op`` ``m`` is not a
    table event and is rejected.

    Records are assembled from JSON fragments rendered once here (the schema part, the source
    block's constant members) around the per-event parts, each rendered by :func:`dumps`, so
    the bytes are exactly those of rendering the whole record at once.
    :meth:`serialize_streamed` is the streaming loop's shortcut: it takes the row images and
    the transaction's position directly and reuses the source block of the previous event of
    the same transaction.
    """

    __slots__ = (
        "_database",
        "_defaults",
        "_key_head",
        "_key_names",
        "_key_prefix",
        "_key_tail",
        "_single_key",
        "_source_db",
        "_source_head",
        "_source_table",
        "_stream_position",
        "_stream_templates",
        "_topic_prefix",
        "_value_head",
        "_value_names",
        "_value_prefix",
        "_value_tail",
        "_version",
        "envelope_schema",
        "key_schema",
        "table",
        "topic",
        "value_schema",
    )

    def __init__(
        self,
        table: TableSchema,
        codecs: Mapping[str, ColumnCodec],
        *,
        topic_prefix: str,
        database: str,
        schemas_enable: bool = True,
        key_schemas_enable: bool | None = None,
        connector_version: str = DEBEZIUM_VERSION,
    ) -> None:
        missing = [column.name for column in table.columns if column.name not in codecs]
        if missing:
            msg = f"no codec for column(s) {missing} of {table.table_id}"
            raise TerminalSinkError(msg)
        self.table = table
        self._topic_prefix = topic_prefix
        self._database = database
        self._version = connector_version
        base = f"{topic_prefix}.{table.table_id.schema}.{table.table_id.table}"
        self.topic = base
        emitted = [column for column in table.columns if codecs[column.name].emitted]
        self._value_names = tuple(column.name for column in emitted)
        # JsonConverter (replace.null.with.default=true, its default) writes a field's schema default
        # in place of a null value; Debezium puts constant column defaults in the schema.
        self._defaults = {column.name: codecs[column.name].schema["default"] for column in emitted
                          if "default" in codecs[column.name].schema}
        emitted_names = set(self._value_names)
        self._key_names = tuple(name for name in table.key_columns if name in emitted_names)
        self.value_schema = struct(
            f"{base}.Value", [field(c.name, codecs[c.name].schema) for c in emitted], optional=True
        )
        self.key_schema = self._build_key_schema(base, codecs)
        self.envelope_schema = envelope_schema(f"{base}.Envelope", self.value_schema)
        key_schemas = schemas_enable if key_schemas_enable is None else key_schemas_enable
        self._value_prefix = schema_prefix(self.envelope_schema) if schemas_enable else None
        self._key_prefix = (
            schema_prefix(self.key_schema) if key_schemas and self.key_schema is not None else None
        )
        # Fragments: {"schema":...,"payload":{"before":  ...  }} (see serialize_value).
        self._value_head = (self._value_prefix or b"") + b'{"before":'
        self._value_tail = b"}}" if self._value_prefix is not None else b"}"
        self._single_key = self._key_names[0] if len(self._key_names) == 1 else None
        self._key_head = (self._key_prefix or b"") + b"{" + dumps(self._key_names[0]) + b":" if self._key_names else b""
        self._key_tail = b"}}" if self._key_prefix is not None else b"}"
        self._source_head = (
            b'{"version":' + dumps(connector_version) + b',"connector":' + dumps(CONNECTOR)
            + b',"name":' + dumps(topic_prefix) + b',"ts_ms":'
        )
        self._source_db = b',"db":' + dumps(database) + b',"sequence":'
        self._source_table = (
            b',"schema":' + dumps(table.table_id.schema) + b',"table":' + dumps(table.table_id.table) + b',"txId":'
        )
        self._stream_position: StreamPosition | None = None
        self._stream_templates: dict[Op | tuple[Op, bool], bytes] = {}

    def _build_key_schema(self, base: str, codecs: Mapping[str, ColumnCodec]) -> dict[str, Any] | None:
        if not self._key_names:
            return None
        fields = [field(name, codecs[name].schema) for name in self._key_names]
        return struct(f"{base}.Key", fields, optional=False)

    @classmethod
    def for_table(
        cls,
        table: TableSchema,
        provider: CodecProvider,
        *,
        topic_prefix: str,
        database: str,
        schemas_enable: bool = True,
        key_schemas_enable: bool | None = None,
        connector_version: str = DEBEZIUM_VERSION,
    ) -> EnvelopeSerializer:
        """Ask ``provider`` (a source's type mapping, e.g. PostgreSQL's ``TypeModes``) for each
        column's codec, then build the serializer."""
        codecs = {column.name: provider.codec(column, str(table.table_id)) for column in table.columns}
        return cls(
            table,
            codecs,
            topic_prefix=topic_prefix,
            database=database,
            schemas_enable=schemas_enable,
            key_schemas_enable=key_schemas_enable,
            connector_version=connector_version,
        )

    @property
    def value_names(self) -> tuple[str, ...]:
        """The emitted columns in payload order: the keys :meth:`serialize_streamed` rows must have."""
        return self._value_names

    def serialize_key(self, row_values: Mapping[str, Any] | None) -> bytes | None:
        """Key record: the key columns of ``row_values`` (converted values); None if keyless."""
        if not self._key_names or row_values is None:
            return None
        name = self._single_key
        if name is not None:
            return self._key_head + dumps(row_values.get(name)) + self._key_tail
        payload = {name: row_values.get(name) for name in self._key_names}
        return record(self._key_prefix, payload)

    def serialize_value(
        self, event: ChangeEvent, *, ts_us_now: int, transaction: Mapping[str, Any] | None = None
    ) -> bytes:
        """Value record of ``event`` (see the class docstring for the field rules).

        ``transaction`` is the ``transaction`` block (``id``, ``total_order``,
        ``data_collection_order``, e.g. from :func:`transaction_block`) when transaction
        metadata is enabled, else None.
        """
        if event.op is Op.MESSAGE:
            msg = "logical decoding messages (op 'm') are not table change events"
            raise TerminalSinkError(msg)
        if event.table != self.table.table_id:
            msg = f"event of {event.table} given to the serializer of {self.table.table_id}"
            raise TerminalSinkError(msg)
        truncate = event.op is Op.TRUNCATE
        return b"".join((
            self._value_head,
            b"null" if truncate or event.before is None else dumps(self._row(event.before)),
            b',"after":',
            b"null" if truncate or event.after is None else dumps(self._row(event.after)),
            b',"source":',
            self._source(event, ts_us_now),
            b',"transaction":',
            b"null" if transaction is None else dumps(_transaction_payload(transaction)),
            b',"op":',
            _OP_JSON[event.op],
            b',"ts_ms":%d,"ts_us":%d,"ts_ns":%d' % (ts_us_now // 1000, ts_us_now, ts_us_now * 1000),
            self._value_tail,
        ))

    def serialize_streamed(
        self,
        op: Op,
        before: Mapping[str, Any] | None,
        after: Mapping[str, Any] | None,
        lsn: int,
        position: StreamPosition,
        *,
        ts_us_now: int,
        transaction: Mapping[str, Any] | None = None,
    ) -> tuple[bytes | None, bytes]:
        """Key and value records of a streamed (not snapshot) ``c``/``u``/``d``/``t`` event, fast.

        The same bytes as ``serialize_key(after or before)`` and ``serialize_value(ChangeEvent(op,
        table, before, after, lsn, ..., position.last_commit_lsn, position.xid,
        position.commit_ts_us), ...)``, provided ``before``/``after`` hold exactly
        :attr:`value_names` in that order (as the streaming reader's rows do): they are rendered
        as they are. The source block is rendered once per ``position`` (the transaction: an
        immutable object, recognised by identity) and operation.
        """
        if position is not self._stream_position:
            self._stream_position = position
            self._stream_templates = {}
        if transaction is None:
            template = self._stream_templates.get(op)
            if template is None:
                template = self._stream_templates[op] = self._stream_template(op, position, False)
            rest = template % (lsn, lsn, ts_us_now // 1000, ts_us_now, ts_us_now * 1000)
        else:
            template = self._stream_templates.get((op, True))
            if template is None:
                template = self._stream_templates[op, True] = self._stream_template(op, position, True)
            block = dumps(_transaction_payload(transaction))
            rest = template % (lsn, lsn, block, ts_us_now // 1000, ts_us_now, ts_us_now * 1000)
        if op is _TRUNCATE:
            before = after = None
        if self._defaults:
            before = None if before is None else self._fill_defaults(before)
            after = None if after is None else self._fill_defaults(after)
        if before is None:
            before_json = b"null"
        else:
            before_json = _orjson_dumps(before, default=render_default)
            if ESCAPE_MARK in before_json:
                before_json = LOWER_HEX_ESCAPE.sub(upper_escape, before_json)
        if after is None:
            after_json = b"null"
        else:
            after_json = _orjson_dumps(after, default=render_default)
            if ESCAPE_MARK in after_json:
                after_json = LOWER_HEX_ESCAPE.sub(upper_escape, after_json)
        value = b"".join((self._value_head, before_json, b',"after":', after_json, rest))
        name = self._single_key
        row = after if after is not None else before
        if name is None or row is None:
            return self.serialize_key(row), value
        key = _orjson_dumps(row.get(name), default=render_default)
        if ESCAPE_MARK in key:
            key = LOWER_HEX_ESCAPE.sub(upper_escape, key)
        return self._key_head + key + self._key_tail, value

    def _stream_template(self, op: Op, position: StreamPosition, with_block: bool) -> bytes:
        """Everything after the ``after`` image, with ``%d`` for the LSN (twice), ``%b`` for the
        transaction block (if any) and ``%d`` for ``ts_ms``/``ts_us``/``ts_ns`` of emission."""
        if op is Op.MESSAGE or op is Op.READ:
            msg = f"serialize_streamed takes streamed c/u/d/t events, not op {op.value!r}"
            raise TerminalSinkError(msg)
        tx_id, ts_us, last_commit_lsn = position.xid, position.commit_ts_us, position.last_commit_lsn
        first = b"null" if last_commit_lsn is None else b'\\"%d\\"' % last_commit_lsn
        return b"".join((
            _literal(
                b',"source":' + self._source_head + b"%d" % (ts_us // 1000) + b',"snapshot":"false"'
                + self._source_db + b'"[' + first + b","
            ),
            b'\\"%d\\"]"',
            _literal(b',"ts_us":%d,"ts_ns":%d' % (ts_us, ts_us * 1000) + self._source_table + b"%d" % tx_id),
            b',"lsn":%d',
            _literal(_SOURCE_TAIL + b',"transaction":'),
            b"%b" if with_block else b"null",
            _literal(b',"op":' + _OP_JSON[op]),
            b',"ts_ms":%d,"ts_us":%d,"ts_ns":%d',
            _literal(self._value_tail),
        ))

    def tombstone_value(self) -> None:
        """The value of the tombstone that follows a delete: Debezium (``tombstones.on.delete``)
        sends the delete's key with a null value and null value schema, which JsonConverter
        turns into a null record value, i.e. no bytes at all."""
        return None

    def _row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        out = {name: row.get(name) for name in self._value_names}
        if not self._defaults:
            return out
        filled = self._fill_defaults(out)
        return filled if isinstance(filled, dict) else dict(filled)

    def _fill_defaults(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """``row`` with every null value of a column that has a schema default replaced by it; ``row``
        itself (not copied) when there is none. Looks only at the defaulted columns (usually a few)."""
        nulls = [name for name in self._defaults if name in row and row[name] is None]
        if not nulls:
            return row
        out = dict(row)
        for name in nulls:
            out[name] = self._defaults[name]
        return out

    def _source(self, event: ChangeEvent, ts_us_now: int) -> bytes:
        ts_us = ts_us_now if event.op is Op.READ else event.commit_ts_us
        incremental = event.snapshot == "incremental"
        return b"".join((
            self._source_head,
            b"%d" % (ts_us // 1000),
            b',"snapshot":',
            b'"false"' if event.snapshot is None else dumps(event.snapshot),
            self._source_db,
            dumps(_sequence(event.last_commit_lsn, event.lsn)),
            b',"ts_us":%d,"ts_ns":%d' % (ts_us, ts_us * 1000),
            self._source_table,
            b"null" if incremental else _int_or_null(event.tx_id),
            b',"lsn":',
            b"null" if incremental else _int_or_null(event.lsn),
            _SOURCE_TAIL,
        ))


def _transaction_payload(block: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return {
            "id": str(block["id"]),
            "total_order": int(block["total_order"]),
            "data_collection_order": int(block["data_collection_order"]),
        }
    except KeyError as exc:
        msg = f"transaction block lacks {exc.args[0]!r} (needs id, total_order, data_collection_order)"
        raise TerminalSinkError(msg) from None
