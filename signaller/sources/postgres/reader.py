"""The streaming half of the source: pgoutput over PostgreSQL's replication protocol, decoded into
``ChangeEvent``s in commit order.

Lifecycle: ``open(start_lsn)`` → repeated ``poll()`` → ``acknowledge(lsn)`` as Kafka confirms →
``close()``. ``poll`` never blocks longer than its timeout. Transactions arrive whole and in
commit order; each ends with a ``TxCommit`` item whose ``end_lsn`` is the position a restart may
resume after once every event before it is in Kafka. ``acknowledge`` is the only place the
slot's confirmed flush position moves (standby status update), so WAL is released only for
what Kafka holds. On restart, PostgreSQL resends every transaction that commits after the
acknowledged position: duplicates are possible, loss is not.
"""

from __future__ import annotations

import contextlib
import logging
import select
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import psycopg2
import psycopg2.extras

from signaller.config import CaptureSection, SignallerConfig, TypeSection
from signaller.model import ChangeEvent, Op, TableId, TableSchema, format_lsn
from signaller.sources.base import LogReader, SourceMessage, TransactionBegin, TransactionCommit
from signaller.sources.postgres import pgoutput
from signaller.sources.postgres.catalog import Catalog, translate
from signaller.sources.postgres.codecs import TypeModes, codec_for, placeholder_for
from signaller.sources.postgres.conversion import unguarded
from signaller.sources.postgres.relations import RelationCache
from signaller.sources.waker import Waker
from signaller.wire.columns import ColumnCodec

log = logging.getLogger("signaller.source")


@dataclass(frozen=True, slots=True)
class RelationPlan:
    """How to turn one relation version's tuples into Debezium rows.

    ``schema`` holds only captured columns; ``slots`` lists ``(tuple index, name, convert,
    placeholder, null value)`` for each of them (the null value: what a NULL becomes, None but in a
    NOT NULL column, see :attr:`~signaller.wire.columns.ColumnCodec.null_value`); ``codecs`` feeds
    the serializer.
    """

    table_id: TableId
    schema: TableSchema
    codecs: dict[str, ColumnCodec]
    slots: tuple[tuple[int, str, Callable[[str], Any], Any, Any], ...]
    key_names: tuple[str, ...]

    @property
    def row_columns(self) -> tuple[str, ...]:
        """The columns of the rows this plan builds, in order (the keys of ``before``/``after``)."""
        return tuple(slot[1] for slot in self.slots)


TxBegin = TransactionBegin
"""PostgreSQL's name for :class:`~signaller.sources.base.TransactionBegin` (a BEGIN message; ``begin_lsn``
is its LSN, the BEGIN record id is ``<xid>:<begin_lsn>``; ``last_commit_lsn`` is the previous COMMIT
message's position)."""
TxCommit = TransactionCommit
"""PostgreSQL's name for :class:`~signaller.sources.base.TransactionCommit` (a COMMIT message)."""
LogicalMessage = SourceMessage
"""A transactional ``pg_logical_emit_message`` with :data:`MESSAGE_PREFIX`, as a
:class:`~signaller.sources.base.SourceMessage`."""


class Change:
    """A row event and the plan (schema) it was decoded with.

    Built by one of two named constructors: :meth:`streamed` (the streaming reader: the event's
    parts and its transaction ``tx``; :attr:`event` is made on first use, since the capture
    serializes streamed changes from the parts and never needs it) or :meth:`from_event` (a
    :class:`~signaller.model.ChangeEvent` as it is, e.g. a snapshot READ; ``tx`` is None).
    ``before``/``after`` are the converted row images (dicts of the plan's captured, emitted
    columns) or None; ``table`` is the event's table.
    """

    __slots__ = ("_event", "after", "before", "lsn", "op", "plan", "table", "tx")
    plan: RelationPlan
    _event: ChangeEvent | None
    op: Op
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    lsn: int | None
    table: TableId
    tx: TxBegin | None

    @classmethod
    def streamed(cls, plan: RelationPlan, op: Op, before: dict[str, Any] | None, after: dict[str, Any] | None,
                 lsn: int, tx: TxBegin) -> Change:
        """A change read from the log at ``lsn``, in transaction ``tx``, of ``plan``'s table."""
        change = cls.__new__(cls)
        change.plan, change._event, change.table = plan, None, plan.table_id
        change.op, change.before, change.after, change.lsn, change.tx = op, before, after, lsn, tx
        return change

    @classmethod
    def from_event(cls, event: ChangeEvent, plan: RelationPlan) -> Change:
        """``event`` as it is (a snapshot READ, or a change rebuilt from its event), with the plan of its rows."""
        change = cls.__new__(cls)
        change.plan, change._event, change.table = plan, event, event.table
        change.op, change.before, change.after, change.lsn, change.tx = event.op, event.before, event.after, \
            event.lsn, None
        return change

    @property
    def event(self) -> ChangeEvent:
        """The change as a ``ChangeEvent``; a streamed change builds it on first use from its transaction."""
        event = self._event
        if event is None:
            tx = self.tx
            assert tx is not None
            event = self._event = ChangeEvent(self.op, self.table, self.before, self.after, self.lsn,
                                              tx.commit_lsn, tx.last_commit_lsn, tx.xid, tx.commit_ts_us)
        return event

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Change):
            return NotImplemented
        return self.event == other.event and self.plan == other.plan

    __hash__ = None  # type: ignore[assignment]  # mutable cache inside; like the dataclass it replaced, compared by value

    def __repr__(self) -> str:
        return f"Change(event={self.event!r}, plan={self.plan!r})"


MESSAGE_PREFIX = "signaller"
"""Logical decoding messages with this prefix are surfaced as ``LogicalMessage`` items."""
POSITION_REQUEST_S = 0.01
"""The shortest interval between two ``request_position`` status updates."""

Item = Change | TxBegin | TxCommit | LogicalMessage


def modes_of(types: TypeSection) -> TypeModes:
    """The type-conversion modes (decimal, time, binary, interval, hstore handling) the ``types`` section selects."""
    return TypeModes(
        decimal_handling=types.decimal_handling_mode.value,
        time_precision=types.time_precision_mode.value,
        binary_handling=types.binary_handling_mode.value,
        interval_handling=types.interval_handling_mode.value,
        hstore_handling=types.hstore_handling_mode.value,
        include_unknown_datatypes=types.include_unknown_datatypes,
        money_fraction_digits=types.money_fraction_digits,
    )


def make_plan(
    schema: TableSchema, tuple_columns: tuple[str, ...], capture: CaptureSection, modes: TypeModes
) -> RelationPlan:
    """The plan for ``schema`` when values arrive in ``tuple_columns`` order (pgoutput's
    relation order, or a chunk SELECT's column list): only captured columns are kept."""
    table = schema.table_id
    is_captured = capture.is_column_captured
    captured = [c for c in schema.columns if is_captured(table.schema, table.table, c.name)]
    narrowed = replace(schema, columns=tuple(captured))
    codecs = {c.name: codec_for(c, modes, str(table)) for c in captured}
    index = {name: i for i, name in enumerate(tuple_columns)}
    slots = tuple(
        (index[c.name], c.name, codecs[c.name].convert, placeholder_for(codecs[c.name]), codecs[c.name].null_value)
        for c in captured if codecs[c.name].emitted
    )
    return RelationPlan(table, narrowed, codecs, slots, narrowed.key_columns)


def row_from_tuple(plan: RelationPlan, values: Any) -> dict[str, Any]:
    """Convert one tuple of text values (None = SQL NULL) with ``plan``: a NULL becomes the column's
    null value (None, or in a NOT NULL column left out of a key-only old tuple, Debezium's fallback)."""
    row: dict[str, Any] = {}
    toast = pgoutput.UNCHANGED_TOAST
    for index, name, convert, placeholder, null in plan.slots:
        value = values[index]
        if value is None:
            row[name] = null
        elif value is toast:
            row[name] = placeholder
        else:
            row[name] = convert(value)
    return row


class PostgresLogReader(LogReader[Item]):
    """Reads one slot's pgoutput stream for one publication (PostgreSQL's
    :class:`~signaller.sources.base.LogReader`). Not thread-safe."""

    def __init__(self, config: SignallerConfig, catalog: Catalog) -> None:
        self._config = config
        self._catalog = catalog
        self._modes = modes_of(config.types)
        self._relations = RelationCache(
            catalog.resolve_type,
            not_null_columns=catalog.not_null_columns,
            primary_key_columns=self._key_columns,
            column_defaults=catalog.column_defaults,
        )
        self._plans: dict[int, tuple[int, RelationPlan | None]] = {}
        self._row_readers: dict[int, tuple[RelationPlan | None, _RowReader | None]] = {}
        self._conn: Any = None
        self._cursor: Any = None
        self._xid = 0
        self._commit_lsn = 0
        self._commit_ts_us = 0
        self._last_commit_lsn: int | None = None
        self._tx = TxBegin(0, 0, 0, None)
        self._skip = set(config.events.skipped_operations)
        self.wal_end = 0
        self._next_position_request = 0.0
        self._waker = Waker()

    def _key_columns(self, namespace: str, table: str) -> tuple[str, ...]:
        override = self._config.capture.key_columns_for(namespace, table)
        return override if override else self._catalog.primary_key_columns(namespace, table)

    @property
    def relations(self) -> RelationCache:
        """The stream's schema cache (Relation and Type messages as they arrive); the snapshot's schema
        provider derives its schemas through the same instance (``PostgresSchemaProvider``)."""
        return self._relations

    @property
    def last_commit_lsn(self) -> int | None:
        """End LSN of the newest transaction fully read (Debezium's ``lastCommitLsn``)."""
        return self._last_commit_lsn

    @property
    def stream_end(self) -> int:
        """The server's WAL end as of the last poll (``wal_end``; :meth:`LogReader.stream_end`)."""
        return self.wal_end

    @property
    def last_commit(self) -> int | None:
        """:attr:`last_commit_lsn` (:meth:`LogReader.last_commit`)."""
        return self._last_commit_lsn

    # -- lifecycle ------------------------------------------------------------------------
    def open(self, start_lsn: int, offset_keys: Mapping[str, Any] | None = None) -> None:
        """Connect and start streaming after ``start_lsn`` (0: from the slot's position); PostgreSQL has no
        ``offset_keys`` (the LSN is the whole position)."""
        dsn = self._config.database.libpq_dsn()
        try:
            self._conn = psycopg2.connect(dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection)
            self._cursor = self._conn.cursor()
            self._cursor.start_replication(
                slot_name=self._config.replication.slot_name,
                decode=False,
                start_lsn=start_lsn,
                status_interval=max(1, self._config.replication.status_update_interval_ms // 1000),
                options={
                    "proto_version": "1",
                    "publication_names": self._config.replication.publication_name,
                    "messages": "true",
                },
            )
        except psycopg2.Error as exc:
            self.close()
            raise translate(exc, f"starting replication from slot {self._config.replication.slot_name!r}") from exc
        self._last_commit_lsn = start_lsn or None
        self._tx = TxBegin(self._xid, self._commit_lsn, self._commit_ts_us, self._last_commit_lsn)
        log.info("streaming from slot %s after %s", self._config.replication.slot_name, format_lsn(start_lsn))

    def close(self) -> None:
        """Close the replication connection, if any; never raises, and ``open`` may be called again."""
        with contextlib.suppress(Exception):
            if self._conn is not None:
                self._conn.close()
        self._conn = self._cursor = None

    # -- reading --------------------------------------------------------------------------
    def poll(self, max_items: int, timeout_s: float) -> list[Item]:
        """Up to about ``max_items`` items, waiting at most ``timeout_s`` for the first one."""
        out: list[Item] = []
        cursor = self._cursor
        read_message = cursor.read_message
        handle, handle_row = self._handle, self._handle_row
        deadline = time.monotonic() + timeout_s
        try:
            while len(out) < max_items:
                msg = read_message()
                if msg is None:
                    if out:
                        break
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    ready, _, _ = select.select([cursor, self._waker], [], [], remaining)
                    if self._waker in ready and self._waker.clear():
                        break
                    continue
                payload = msg.payload
                try:
                    if payload[0] in _ROW_MESSAGES and handle_row(payload, msg.data_start, out):
                        continue
                except Exception:  # the general path decides, and raises the proper error
                    pass
                handle(payload, msg.data_start, out)
            self.wal_end = max(self.wal_end, cursor.wal_end or 0)
        except psycopg2.Error as exc:
            raise translate(exc, "reading the replication stream") from exc
        return out

    def acknowledge(self, lsn: int) -> None:
        """Tell PostgreSQL everything up to ``lsn`` is durable downstream (releases WAL)."""
        if self._cursor is None or lsn <= 0:
            return
        try:
            self._cursor.send_feedback(write_lsn=lsn, flush_lsn=lsn, apply_lsn=lsn, force=True)
        except psycopg2.Error as exc:
            raise translate(exc, "sending the standby status update") from exc

    def wake(self) -> None:
        """See :meth:`LogReader.wake` (a byte on the reader's :class:`Waker`, which ``poll`` selects on too)."""
        self._waker.wake()

    def request_position(self) -> None:
        """A standby status update asking for a reply (at most every ``POSITION_REQUEST_S``): the server answers
        with a keepalive carrying its WAL position, which the next :meth:`poll` reads into :attr:`stream_end`.
        The positions sent are the last acknowledged ones (psycopg2 never moves them back)."""
        now = time.monotonic()
        if self._cursor is None or now < self._next_position_request:
            return
        self._next_position_request = now + POSITION_REQUEST_S
        try:
            self._cursor.send_feedback(reply=True)
        except psycopg2.Error as exc:
            raise translate(exc, "asking for the server's WAL position") from exc

    def keepalive(self) -> None:
        """Send a status update without moving the position (keeps the stream alive)."""
        if self._cursor is not None:
            try:
                self._cursor.send_feedback()
            except psycopg2.Error as exc:
                raise translate(exc, "sending a keepalive") from exc

    # -- decoding -------------------------------------------------------------------------
    def _handle(self, payload: bytes, lsn: int, out: list[Item]) -> None:
        msg = pgoutput.decode_message(payload)
        kind = type(msg)
        if kind is pgoutput.Insert:
            self._emit(msg.relation_id, Op.CREATE, None, msg.new, lsn, out)  # type: ignore[union-attr]
        elif kind is pgoutput.Update:
            self._update(msg, lsn, out)  # type: ignore[arg-type]
        elif kind is pgoutput.Delete:
            self._emit(msg.relation_id, Op.DELETE, msg.old, None, lsn, out)  # type: ignore[union-attr]
        elif isinstance(msg, pgoutput.Begin):
            self._xid, self._commit_lsn, self._commit_ts_us = msg.xid, msg.final_lsn, msg.commit_ts_us
            self._tx = TxBegin(self._xid, self._commit_lsn, self._commit_ts_us, self._last_commit_lsn, lsn)
            out.append(self._tx)
        elif isinstance(msg, pgoutput.Commit):
            out.append(TxCommit(self._xid, msg.commit_lsn, msg.end_lsn, msg.commit_ts_us))
            # Debezium's lastCommitLsn is the COMMIT message's position, the transaction's end LSN.
            self._last_commit_lsn = msg.end_lsn
            self._tx = TxBegin(self._xid, self._commit_lsn, self._commit_ts_us, self._last_commit_lsn)
        elif kind is pgoutput.Relation or kind is pgoutput.Type:
            self._row_readers.clear()
            self._relations.apply(msg)
        elif kind is pgoutput.Truncate:
            self._truncate(msg, lsn, out)  # type: ignore[arg-type]
        elif isinstance(msg, pgoutput.Message) and msg.prefix == MESSAGE_PREFIX:
            out.append(LogicalMessage(msg.prefix, bytes(msg.content), lsn, self._last_commit_lsn))
        # Origin and other logical decoding messages carry no row change.

    def _handle_row(self, data: bytes, lsn: int, out: list[Item]) -> bool:
        """Insert, Update and Delete of a captured table, decoded straight into rows.

        The same items as the general path (:meth:`_handle`: ``decode_message`` → ``_emit`` /
        ``_update``), without the intermediate message and tuple. Returns False (having appended
        nothing) for anything it does not handle: an uncaptured table, a skipped operation, a
        binary-format value; raises on malformed input or a value its converter rejects, and the
        caller then takes the general path, which raises the proper error.
        """
        kind = data[0]
        relation_id, tag = _U32_U8.unpack_from(data, 1)
        entry = self._row_readers.get(relation_id)
        if entry is None:
            entry = self._row_readers[relation_id] = self._row_reader(relation_id)
        plan, read = entry
        if read is None or plan is None:
            return False
        skip = self._skip
        if kind == _INSERT:
            if tag != _NEW or "c" in skip:
                return False
            out.append(Change.streamed(plan, _CREATE, None, read(data, 6)[0], lsn, self._tx))
            return True
        if tag != _NEW and tag != _KEY and tag != _OLD:
            return False
        if kind == _DELETE:
            if tag == _NEW or "d" in skip:
                return False
            out.append(Change.streamed(plan, _DELETE_OP, read(data, 6)[0], None, lsn, self._tx))
            return True
        before: dict[str, Any] | None = None
        position = 6
        if tag != _NEW:
            before, position = read(data, 6)
            if data[position] != _NEW:
                return False
            position += 1
        # After a whole old row (REPLICA IDENTITY FULL) an unchanged TOASTed value raises: the general
        # path (_update) takes it from the old row, as Debezium does.
        after = read(data, position, tag == _OLD)[0]
        tx = self._tx
        if before is not None and plan.key_names and any(before.get(k) != after.get(k) for k in plan.key_names):
            if "d" not in skip:
                out.append(Change.streamed(plan, _DELETE_OP, before, None, lsn, tx))
            if "c" not in skip:
                out.append(Change.streamed(plan, _CREATE, None, after, lsn, tx))
        elif "u" not in skip:
            out.append(Change.streamed(plan, _UPDATE, before, after, lsn, tx))
        return True

    def _row_reader(self, relation_id: int) -> tuple[RelationPlan | None, _RowReader | None]:
        plan = self._plan(relation_id)
        if plan is None:
            return None, None
        return plan, _tuple_reader(len(self._relations.get(relation_id).column_names), plan.slots)

    def _plan(self, relation_id: int) -> RelationPlan | None:
        version = self._relations.version(relation_id)
        cached = self._plans.get(relation_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        plan = self._build_plan(relation_id)
        self._plans[relation_id] = (version, plan)
        return plan

    def _build_plan(self, relation_id: int) -> RelationPlan | None:
        entry = self._relations.get(relation_id)
        table = entry.schema.table_id
        if not self._config.is_table_captured(table.schema, table.table):
            return None
        plan = make_plan(entry.schema, entry.column_names, self._config.capture, self._modes)
        log.info("schema of %s: %d column(s), key %s", table, len(plan.schema.columns), plan.key_names or "none")
        return plan

    def _row(self, plan: RelationPlan, values: pgoutput.TupleData | None) -> dict[str, Any] | None:
        return None if values is None else row_from_tuple(plan, values)

    def _event(self, plan: RelationPlan, op: Op, before: Any, after: Any, lsn: int) -> Change:
        return Change.streamed(plan, op, before, after, lsn, self._tx)

    def _emit(self, relation_id: int, op: Op, old: Any, new: Any, lsn: int, out: list[Item]) -> None:
        if op.value in self._skip:
            return
        plan = self._plan(relation_id)
        if plan is not None:
            out.append(self._event(plan, op, self._row(plan, old), self._row(plan, new), lsn))

    def _update(self, msg: pgoutput.Update, lsn: int, out: list[Item]) -> None:
        plan = self._plan(msg.relation_id)
        if plan is None:
            return
        full_old = msg.old if msg.old_kind == "O" else None
        before, after = self._row(plan, msg.old), self._row(plan, _with_old_toast(msg.new, full_old))
        if before is not None and after is not None and plan.key_names and any(
            before.get(k) != after.get(k) for k in plan.key_names
        ):
            # A primary-key change: Debezium emits a delete of the old key (then its tombstone)
            # and a create of the new one, so each key's history stays in its own partition.
            if "d" not in self._skip:
                out.append(self._event(plan, Op.DELETE, before, None, lsn))
            if "c" not in self._skip:
                out.append(self._event(plan, Op.CREATE, None, after, lsn))
            return
        if "u" not in self._skip:
            out.append(self._event(plan, Op.UPDATE, before, after, lsn))

    def _truncate(self, msg: pgoutput.Truncate, lsn: int, out: list[Item]) -> None:
        if "t" in self._skip:
            return
        for relation_id in msg.relation_ids:
            plan = self._plan(relation_id)
            if plan is not None:
                out.append(self._event(plan, Op.TRUNCATE, None, None, lsn))


_ROW_MESSAGES = frozenset(b"IUD")
_CREATE, _UPDATE, _DELETE_OP = Op.CREATE, Op.UPDATE, Op.DELETE  # a global is cheaper than Op.X
_INSERT, _DELETE = ord("I"), ord("D")
_NEW, _KEY, _OLD = ord("N"), ord("K"), ord("O")
_TEXT, _NULL, _UNCHANGED = ord("t"), ord("n"), ord("u")
_U32_U8 = struct.Struct(">IB")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")

def _with_old_toast(new: Any, old: Any) -> Any:
    """The new tuple with each unchanged TOASTed value taken from the old one, when the old tuple
    is complete (``REPLICA IDENTITY FULL``: pgoutput sends the whole old row), as Debezium does;
    otherwise the new tuple as it is (the placeholder stands in)."""
    toast = pgoutput.UNCHANGED_TOAST
    if old is None or len(old) != len(new) or not any(value is toast for value in new):
        return new
    return [o if n is toast and o is not toast else n for n, o in zip(new, old, strict=True)]


_RowReader = Callable[..., tuple[dict[str, Any], int]]
_Slot = tuple[int, str, Callable[[str], Any], Any, Any]


class _NotHandled(Exception):
    """A tuple the fused reader leaves to the general path."""


def _tuple_reader(column_count: int, slots: tuple[_Slot, ...]) -> _RowReader | None:
    """A function reading one pgoutput TupleData at ``pos`` straight into the plan's row dict
    (``read(data, pos, full_old=False)``: with ``full_old`` an unchanged TOASTed value of a
    captured column raises :class:`_NotHandled`, for the general path to fill it from the old row).

    Equivalent, for valid input, to ``pgoutput``'s tuple decoding followed by
    ``PostgresLogReader._row``: same keys in the same order, same values (every text column is
    decoded from UTF-8, captured or not). The code is generated for the relation's columns
    (one straight-line block per column, no per-column lookups); column names, converters and
    placeholders are bound as variables, never written into the source. Raises
    :class:`_NotHandled` for a column count other than the relation's or a binary-format value,
    and whatever a converter raises, unguarded (see ``types.unguarded``), for bad text: the
    caller then takes the general path. None when the plan's columns are not in tuple order.
    """
    namespace: dict[str, Any] = {
        "NotHandled": _NotHandled, "unpack_count": _U16.unpack_from, "unpack_length": _U32.unpack_from,
    }
    columns: list[tuple[str, Callable[[str], Any], Any, Any] | None] = [None] * column_count
    last = -1
    for index, name, convert, placeholder, null in slots:
        if index <= last or index >= column_count:
            return None
        columns[index] = (name, unguarded(convert), placeholder, null)
        last = index
    lines = [
        "def read(data, pos, full_old=False):",
        f"    if unpack_count(data, pos)[0] != {column_count}:",
        "        raise NotHandled",
        "    pos += 2",
        "    row = {}",
    ]
    for index, column in enumerate(columns):
        lines += [
            "    kind = data[pos]",
            f"    if kind == {_TEXT}:",
            "        start = pos + 5",
            "        pos = start + unpack_length(data, pos + 1)[0]",
        ]
        if column is None:
            lines += ["        data[start:pos].decode()", f"    elif kind == {_NULL} or kind == {_UNCHANGED}:",
                      "        pos += 1"]
        else:
            name, convert, placeholder, null = column
            namespace[f"n{index}"], namespace[f"c{index}"], namespace[f"p{index}"] = name, convert, placeholder
            namespace[f"z{index}"] = null
            value = "data[start:pos].decode()" if convert is str else f"c{index}(data[start:pos].decode())"
            lines += [
                f"        row[n{index}] = {value}",
                f"    elif kind == {_NULL}:",
                "        pos += 1",
                f"        row[n{index}] = z{index}",
                f"    elif kind == {_UNCHANGED}:",
                "        if full_old:",
                "            raise NotHandled",
                "        pos += 1",
                f"        row[n{index}] = p{index}",
            ]
        lines += ["    else:", "        raise NotHandled"]
    lines += ["    if pos > len(data):", "        raise IndexError('truncated tuple')", "    return row, pos"]
    exec(compile("\n".join(lines), f"<pgoutput tuple reader, {column_count} columns>", "exec"), namespace)
    reader: _RowReader = namespace["read"]
    return reader
