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

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

from signaller.errors import TerminalSinkError
from signaller.model.events import ChangeEvent, Op
from signaller.model.tables import TableSchema
from signaller.wire._fast import CONNECTOR, FastRenderer, StreamPosition, TableFragments
from signaller.wire.columns import CodecProvider, ColumnCodec
from signaller.wire.connect import envelope_schema, field, struct
from signaller.wire.jackson import dumps, schema_prefix
from signaller.wire.source_block import SourceBlock

__all__ = [
    "CONNECTOR",
    "DEBEZIUM_VERSION",
    "ChangeEventSerializer",
    "EnvelopeSerializer",
    "RowChange",
    "StreamPosition",
]

DEBEZIUM_VERSION: Final = "3.7.0.Final"
"""``source.version`` written by default; pass ``connector_version`` to override."""


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


class RowChange(Protocol):
    """A row event as the capture hands it to :meth:`EnvelopeSerializer.serialize` (the source's
    ``Change``): a streamed change carries its transaction in ``tx`` and an integer ``lsn``; a
    snapshot READ (or any change built from a :class:`~signaller.model.ChangeEvent`) has ``tx``
    None and is described by ``event``."""

    @property
    def op(self) -> Op:
        """The operation."""
        ...

    @property
    def before(self) -> Mapping[str, Any] | None:
        """The old row image (converted values), or None."""
        ...

    @property
    def after(self) -> Mapping[str, Any] | None:
        """The new row image (converted values), or None."""
        ...

    @property
    def lsn(self) -> int | None:
        """The change's own LSN (an integer for a streamed change)."""
        ...

    @property
    def tx(self) -> StreamPosition | None:
        """The transaction of a streamed change; None for a change built from an event."""
        ...

    @property
    def event(self) -> ChangeEvent:
        """The change as a ``ChangeEvent`` (a streamed change may build it on demand)."""
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

    Two ways in, one set of bytes: :meth:`serialize` is the capture's single entry point for
    every row event, streamed and snapshot READ alike (rows as a source plan builds them);
    :meth:`serialize_key` and :meth:`serialize_value` render any :class:`ChangeEvent` (rows in
    any order, missing columns null) and are the reference the fast renderings are tested
    against. Both assemble records from JSON fragments rendered once per table around the
    per-event parts, so the bytes are exactly those of rendering the whole record at once; the
    fragments and the fast renderer are private (``signaller.wire._fast``). ``source_block`` is the
    source's own ``source`` block (:class:`~signaller.wire.source_block.SourceBlock`); None is the
    built-in (PostgreSQL) layout and its byte templates. With a source block the same methods render
    its values instead (rows projected onto the payload columns, no templates). Not thread-safe
    once :meth:`serialize` or :meth:`serialize_streamed` was called (they cache the current
    transaction's source block); build one per thread.
    """

    __slots__ = (
        "_block",
        "_fast",
        "_fragments",
        "_value_names",
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
        source_block: SourceBlock | None = None,
    ) -> None:
        missing = [column.name for column in table.columns if column.name not in codecs]
        if missing:
            msg = f"no codec for column(s) {missing} of {table.table_id}"
            raise TerminalSinkError(msg)
        self.table = table
        base = f"{topic_prefix}.{table.table_id.schema}.{table.table_id.table}"
        self.topic = base
        emitted = [column for column in table.columns if codecs[column.name].emitted]
        self._value_names = tuple(column.name for column in emitted)
        # JsonConverter (replace.null.with.default=true, its default) writes a field's schema default
        # in place of a null value; Debezium puts constant column defaults in the schema.
        defaults = {column.name: codecs[column.name].schema["default"] for column in emitted
                    if "default" in codecs[column.name].schema}
        emitted_names = set(self._value_names)
        key_names = tuple(name for name in table.key_columns if name in emitted_names)
        self.value_schema = struct(
            f"{base}.Value", [field(c.name, codecs[c.name].schema) for c in emitted], optional=True
        )
        self.key_schema = (
            struct(f"{base}.Key", [field(name, codecs[name].schema) for name in key_names], optional=False)
            if key_names else None
        )
        self._block = source_block
        self.envelope_schema = (envelope_schema(f"{base}.Envelope", self.value_schema) if source_block is None
                                else envelope_schema(f"{base}.Envelope", self.value_schema, source_block.schema))
        key_schemas = schemas_enable if key_schemas_enable is None else key_schemas_enable
        self._fragments = TableFragments(
            table.table_id,
            value_prefix=schema_prefix(self.envelope_schema) if schemas_enable else None,
            key_prefix=schema_prefix(self.key_schema) if key_schemas and self.key_schema is not None else None,
            key_names=key_names,
            defaults=defaults,
            topic_prefix=topic_prefix,
            database=database,
            connector_version=connector_version,
        )
        self._fast = FastRenderer(self._fragments)

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
        source_block: SourceBlock | None = None,
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
            source_block=source_block,
        )

    @property
    def value_names(self) -> tuple[str, ...]:
        """The emitted columns in payload order: the keys :meth:`serialize` rows must have."""
        return self._value_names

    def serialize(
        self, change: RowChange, *, ts_us_now: int, transaction: Mapping[str, Any] | None = None
    ) -> tuple[bytes | None, bytes]:
        """Key and value records of any row event of the capture, streamed or snapshot READ.

        The same bytes as ``serialize_key(after or before)`` and ``serialize_value(change.event,
        ...)``, provided the change's rows hold exactly :attr:`value_names` in that order (as a
        source plan's rows do; check once per plan). A streamed change (``tx`` set) takes
        :meth:`serialize_streamed`; any other is rendered from its ``event`` with its rows as they
        are. ``transaction`` is the event's ``transaction`` block, if any.
        """
        tx = change.tx
        if self._block is not None:
            if tx is None:
                return self._with_block(change.event, ts_us_now, transaction)
            return self._render_with_block(change.op, change.before, change.after, self._block.streamed(change),
                                           ts_us_now, transaction)
        if tx is not None:
            return self._fast.streamed(change.op, change.before, change.after, change.lsn,  # type: ignore[arg-type]
                                       tx, ts_us_now=ts_us_now, transaction=transaction)
        event = change.event
        if event.op is Op.READ and event.before is None and event.after is not None and event.tx_id is None \
                and transaction is None and event.table == self.table.table_id:
            return self._fast.read(event.after, event.last_commit_lsn, event.lsn, event.snapshot, ts_us_now=ts_us_now)
        return self._fast.event(event, ts_us_now=ts_us_now, transaction=transaction)

    def serialize_read(self, after: Mapping[str, Any], last_commit_lsn: int | None, lsn: int | None, *,
                       ts_us_now: int, snapshot: str | None = "incremental") -> tuple[bytes | None, bytes]:
        """Key and value records of a snapshot READ of row ``after`` (rows as a source plan builds them,
        holding exactly :attr:`value_names` in order), fast: the same bytes as :meth:`serialize` of
        ``ChangeEvent(Op.READ, table, None, after, lsn, None, last_commit_lsn, None, any, snapshot)``.
        The record's constant part is rendered once per ``(last_commit_lsn, lsn, snapshot)``, so the
        READs of one window cost only their row and their timestamps."""
        if self._block is not None:
            return self._with_block(ChangeEvent(Op.READ, self.table.table_id, None, dict(after), lsn, None,
                                                last_commit_lsn, None, ts_us_now, snapshot), ts_us_now, None)
        return self._fast.read(after, last_commit_lsn, lsn, snapshot, ts_us_now=ts_us_now)

    def renders(self, value_names: tuple[str, ...], key_names: tuple[str, ...]) -> bool:
        """Whether :meth:`serialize_rendered_reads` takes payloads rendered with these members: ``value_names`` are
        :attr:`value_names`, ``key_names`` the key columns, and the ``source`` block is the built-in one."""
        return (self._block is None and value_names == self._value_names
                and key_names == self._fragments.key_names)

    def serialize_rendered_reads(self, rows: Sequence[Any], rendered: Sequence[tuple[bytes, bytes | None] | None],
                                 decode: Callable[[Any], Mapping[str, Any]], last_commit_lsn: int | None,
                                 lsn: int | None, *, ts_us_now: int, snapshot: str | None = "incremental",
                                 ) -> list[tuple[bytes | None, bytes]]:
        """Key and value records of snapshot READs of ``rows`` (one window's, or a slice of it) whose ``after``
        image and key payload a source already rendered as JSON (``rendered``, one per row, from
        ``ReadRendering.render_rows``: members as :meth:`renders` checked, lower-case ``\\u00xx`` escapes allowed);
        a row it did not render (None) is ``decode``-d. The bytes of :meth:`serialize_read` of each decoded row at
        emission time ``ts_us_now``. Only when :meth:`renders` said so."""
        return self._fast.read_rendered_rows(rows, rendered, decode, last_commit_lsn, lsn, snapshot,
                                             ts_us_now=ts_us_now)

    def serialize_key(self, row_values: Mapping[str, Any] | None) -> bytes | None:
        """Key record: the key columns of ``row_values`` (converted values); None if keyless."""
        return self._fragments.key(row_values)

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
        if self._block is not None:
            return self._with_block(event, ts_us_now, transaction)[1]
        truncate = event.op is Op.TRUNCATE
        before = b"null" if truncate or event.before is None else dumps(self._row(event.before))
        after = b"null" if truncate or event.after is None else dumps(self._row(event.after))
        return self._fragments.value(event, before, after, ts_us_now, transaction)

    def _with_block(self, event: ChangeEvent, ts_us_now: int,
                    transaction: Mapping[str, Any] | None) -> tuple[bytes | None, bytes]:
        """Key and value of ``event`` with the source's ``source`` block (``_block`` is set)."""
        if event.op is Op.MESSAGE:
            msg = "logical decoding messages (op 'm') are not table change events"
            raise TerminalSinkError(msg)
        if event.table != self.table.table_id:
            msg = f"event of {event.table} given to the serializer of {self.table.table_id}"
            raise TerminalSinkError(msg)
        ts_us = ts_us_now if event.op is Op.READ else event.commit_ts_us
        source = self._block.of_event(event, ts_us)  # type: ignore[union-attr]
        return self._render_with_block(event.op, event.before, event.after, source, ts_us_now, transaction)

    def _render_with_block(self, op: Op, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                           source: Mapping[str, Any], ts_us_now: int,
                           transaction: Mapping[str, Any] | None) -> tuple[bytes | None, bytes]:
        if op is Op.TRUNCATE:
            before = after = None
        before_json = b"null" if before is None else dumps(self._row(before))
        after_json = b"null" if after is None else dumps(self._row(after))
        value = self._fragments.value_with_source(op, before_json, after_json, dumps(source), ts_us_now, transaction)
        return self._fragments.key(after if after is not None else before), value

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
        immutable object, recognised by identity) and operation. The built-in ``source`` block only
        (``TerminalSinkError`` with a source block: use :meth:`serialize`).
        """
        if self._block is not None:
            msg = "serialize_streamed renders the built-in source block; a source block's changes go through serialize"
            raise TerminalSinkError(msg)
        return self._fast.streamed(op, before, after, lsn, position, ts_us_now=ts_us_now, transaction=transaction)

    def tombstone_value(self) -> None:
        """The value of the tombstone that follows a delete: Debezium (``tombstones.on.delete``)
        sends the delete's key with a null value and null value schema, which JsonConverter
        turns into a null record value, i.e. no bytes at all."""
        return None

    def _row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        out = {name: row.get(name) for name in self._value_names}
        if not self._fragments.defaults:
            return out
        filled = self._fragments.fill_defaults(out)
        return filled if isinstance(filled, dict) else dict(filled)
