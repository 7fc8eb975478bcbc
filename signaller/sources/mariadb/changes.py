"""MariaDB row changes as the capture loop and the wire format take them: the transaction (:class:`BinlogTx`),
the change (:class:`BinlogChange`), and each table's plan (:class:`TablePlan`: its columns' codecs and
converters, built from ``information_schema`` by :class:`TablePlans`).

A plan is built the first time a table's rows are seen, from the table's definition in the
:class:`~signaller.sources.mariadb.table_model.SchemaModel` (the schema at the stream's binlog position: the
schema snapshot or history, then every DDL statement of the binlog, :meth:`TablePlans.apply_ddl`), and
rebuilt after a DDL statement changes the table; every rows event's column names (``binlog_row_metadata=FULL``)
are checked against the model's. Key = ``message.key.columns`` for the table if set, else the primary key.
Columns are captured per ``column.include.list``/``column.exclude.list`` on ``db.table.column``. The model
is rebuilt at each start (schema snapshot or history). :class:`TablePlans` is shared by the binlog reader
thread (DDL, rows events) and the capture loop (READs of a snapshot): it is thread-safe, the model, the plans
and its catalog connection used under its lock only.

Row images as Debezium's MariaDB connector writes them: an empty ``SET`` is ``""`` (the binlog client gives
None for it, telling it apart from NULL in its ``none_sources``); a value the client cannot represent (a zero
or partly-zero date) in a ``NOT NULL`` column is the column's schema default, else the type's zero (the
epoch), Debezium's fallback for a required field; an ``UPDATE`` that changes the key is a delete of the old
key and a create of the new one, both with the rows event's position and row index.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pymysqlreplication.constants.NONE_SOURCE import EMPTY_SET

from signaller.config import SignallerConfig
from signaller.errors import TerminalSourceError
from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.sources.mariadb.catalog import SYSTEM_DATABASES, Catalog
from signaller.sources.mariadb.ddl import CreateTable, DropDatabase, UnreadableStatement, parse_ddl, table_names
from signaller.sources.mariadb.table_model import ModelError, SchemaModel, TableChange, column_of
from signaller.sources.mariadb.values import TypeModes, column_codec, required_fallback
from signaller.wire.columns import ColumnCodec


@dataclass(frozen=True, slots=True)
class BinlogTx:
    """One binlog transaction as its changes refer to it (the serializers' ``StreamPosition``): ``xid`` the GTID
    as a number (``positions.gtid_number``), ``gtid`` its text, ``file`` the binlog file it is in, the commit
    time (µs; the GTID event's, seconds precision), the previous transaction's end position, the server that
    wrote it and its begin position."""

    xid: int
    gtid: str
    file: str
    commit_ts_us: int
    last_commit_lsn: int | None
    server_id: int
    begin_position: int


class BinlogChange:
    """One row change of a binlog rows event: the neutral change the capture loop dispatches, plus what the
    ``source`` block needs (``pos`` of the rows event, ``row`` index in it, ``query``, event time and server)."""

    __slots__ = ("_built", "after", "before", "lsn", "op", "plan", "pos", "query", "row", "server_id", "table",
                 "ts_us", "tx")

    def __init__(self, plan: TablePlan, op: Op, before: dict[str, Any] | None, after: dict[str, Any] | None,
                 lsn: int, tx: BinlogTx | None, pos: int = 0, row: int = 0, query: str | None = None,
                 ts_us: int = 0, server_id: int = 0) -> None:
        self.plan, self.table, self.op, self.before, self.after = plan, plan.table_id, op, before, after
        self.lsn, self.tx, self.pos, self.row, self.query = lsn, tx, pos, row, query
        self.ts_us, self.server_id = ts_us, server_id
        self._built: ChangeEvent | None = None

    @property
    def event(self) -> ChangeEvent:
        """The change as a ``ChangeEvent`` (made on first use; ``tx_id`` is the transaction's GTID as a number,
        :func:`~signaller.sources.mariadb.positions.gtid_number`: what a read-only snapshot's visibility compares;
        the wire format takes the GTID from the source block, never from ``tx_id``)."""
        event = self._built
        if event is None:
            tx = self.tx
            event = self._built = ChangeEvent(
                self.op, self.table, self.before, self.after, self.lsn, None if tx is None else self.lsn,
                None if tx is None else tx.last_commit_lsn, None if tx is None else tx.xid,
                self.ts_us or (tx.commit_ts_us if tx is not None else 0))
        return event

    @classmethod
    def from_event(cls, plan: TablePlan, event: ChangeEvent) -> BinlogChange:
        """``event`` (a snapshot READ, say) as a change of ``plan``'s table, without a transaction: its
        :attr:`event` is ``event`` itself."""
        change = cls(plan, event.op, event.before, event.after, event.lsn or 0, None, ts_us=event.commit_ts_us)
        change._built = event
        return change


Convert = Callable[[Any], Any]
_EMPTY_SET = EMPTY_SET
"""``mysql-replication``'s ``NONE_SOURCE.EMPTY_SET``: the None it gives for a ``SET`` with no member."""


@dataclass(frozen=True)
class TablePlan:
    """How one table's binlog rows become change-event rows: its schema (captured columns), codecs and the
    ``(name, convert)`` of each captured column in table order."""

    table_id: TableId
    schema: TableSchema
    codecs: dict[str, ColumnCodec]
    converters: tuple[tuple[str, Convert], ...]
    fallbacks: dict[str, Any] = field(default_factory=dict)
    """The payload a None value of a ``NOT NULL`` column gets (see the module docstring)."""
    set_columns: frozenset[str] = frozenset()
    """The ``SET`` columns (an empty set is ``""``, not null)."""

    @property
    def row_columns(self) -> tuple[str, ...]:
        """The keys of the rows this plan builds, in order."""
        return tuple(name for name, _ in self.converters)

    def row(self, values: dict[str, Any], none_sources: dict[str, str] | None = None) -> dict[str, Any]:
        """One row image from the binlog client's ``{column: value}`` (``none_sources``: why the client gave
        None for a column, as its rows say)."""
        row = {name: None if (value := values.get(name)) is None else convert(value)
               for name, convert in self.converters}
        if none_sources:
            for name in self.set_columns:
                if row.get(name, 0) is None and none_sources.get(name) == _EMPTY_SET:
                    row[name] = ""
        for name, fallback in self.fallbacks.items():
            if row.get(name, 0) is None:
                row[name] = fallback
        return row

    def key_changed(self, before: dict[str, Any], after: dict[str, Any]) -> bool:
        """Whether an update moves the row to another key."""
        return any(before.get(name) != after.get(name) for name in self.schema.key)

    def changes(self, event: Any, tx: BinlogTx, lsn: int, pos: int, query: str | None) -> Iterator[BinlogChange]:
        """The changes of one binlog rows event (write, update or delete) of this table."""
        ts_us, server = event.timestamp * 1_000_000, event.packet.server_id
        kind = type(event).__name__
        for index, row in enumerate(event.rows):
            if kind == "WriteRowsEvent":
                op, before, after = Op.CREATE, None, self.row(row["values"], row.get("none_sources"))
            elif kind == "DeleteRowsEvent":
                op, before, after = Op.DELETE, self.row(row["values"], row.get("none_sources")), None
            else:
                op = Op.UPDATE
                before = self.row(row["before_values"], row.get("before_none_sources"))
                after = self.row(row["after_values"], row.get("after_none_sources"))
                if self.key_changed(before, after):
                    yield BinlogChange(self, Op.DELETE, before, None, lsn, tx, pos, index, query, ts_us, server)
                    op, before = Op.CREATE, None
            yield BinlogChange(self, op, before, after, lsn, tx, pos, index, query, ts_us, server)


class TablePlans:
    """The plans of the captured tables, built on first use from the schema model (see the module docstring).
    Thread-safe: the binlog reader thread and the capture loop call it; its model, plans and catalog connection
    are used under its lock only (a PyMySQL connection used by two threads at once mixes their packets)."""

    def __init__(self, config: SignallerConfig, catalog: Catalog, modes: TypeModes) -> None:
        self._config = config
        self._catalog = catalog
        self._modes = modes
        self.model = SchemaModel()
        self._plans: dict[TableId, TablePlan | None] = {}
        self._checked: set[tuple[TableId, tuple[str, ...]]] = set()
        self._lock = threading.Lock()

    def is_captured(self, table: TableId) -> bool:
        """Whether ``table``'s changes are captured: not a system database, the database lists, then the table
        lists (``signal.data.collection`` always)."""
        if table.schema.lower() in SYSTEM_DATABASES:
            return False
        binlog = self._config.binlog
        if binlog.database_include_list and not any(p.fullmatch(table.schema) for p in binlog.database_include_list):
            return table == self._config.snapshot.signal_data_collection
        if any(p.fullmatch(table.schema) for p in binlog.database_exclude_list):
            return table == self._config.snapshot.signal_data_collection
        return self._config.is_table_captured(table.schema, table.table)

    def plan(self, table: TableId, columns: Sequence[str] | None = None) -> TablePlan | None:
        """The plan of ``table``, None if it is not captured (or the schema does not have it). With ``columns``
        (a rows event's column names, the table as the binlog wrote the row) a ``TerminalSourceError`` when
        they are not the schema's columns: the schema lost track of the table (DDL it missed), and decoding
        the row with the wrong columns would emit wrong values."""
        with self._lock:
            return self._plan(table, columns)

    def _plan(self, table: TableId, columns: Sequence[str] | None) -> TablePlan | None:
        if table in self._plans:
            plan = self._plans[table]
        else:
            plan = self._build(table) if self.is_captured(table) else None
            self._plans[table] = plan
        if plan is None or columns is None:
            return plan
        key = (table, tuple(columns))
        if key not in self._checked:
            definition = self.model.table(table)
            known = tuple(c.name for c in definition.columns) if definition is not None else ()
            if key[1] != known:
                msg = (f"the binlog's rows of {table} have the columns {list(columns)} but the schema built from the "
                       f"DDL has {list(known)}: a DDL statement was missed or misread. Restart with a new schema "
                       "snapshot (delete the stored offsets and the schema history) and report the DDL")
                raise TerminalSourceError(msg)
            self._checked.add(key)
        return plan

    def load_snapshot(self, tables: Sequence[TableId]) -> list[tuple[TableId, str]]:
        """The schema snapshot: the ``SHOW CREATE TABLE`` text of each of ``tables`` that exists, parsed into the
        model (which is reset first; the database and server character sets are read too); the texts, in
        ``tables`` order. ``TerminalSourceError`` if one cannot be parsed."""
        with self._lock:
            return self._load_snapshot(tables)

    def _load_snapshot(self, tables: Sequence[TableId]) -> list[tuple[TableId, str]]:
        self.model = SchemaModel(self._catalog.variables("character_set_server").get("character_set_server")
                                 or "utf8mb4")
        self.model.database_charsets.update(self._catalog.database_charsets())
        texts: list[tuple[TableId, str]] = []
        for table in tables:
            text = self._catalog.show_create(table)
            if text is None:
                continue
            statement = parse_ddl(text)
            if not isinstance(statement, CreateTable):
                reason = statement.reason if isinstance(statement, UnreadableStatement) else "not a CREATE TABLE"
                msg = f"the definition of {table} cannot be parsed ({reason}): {text!r}"
                raise TerminalSourceError(msg)
            self.model.apply(statement, table.schema)
            texts.append((table, text))
        self._forget_all()
        return texts

    def load_history(self, statements: Sequence[tuple[str, str]], origin: str) -> None:
        """The schema recovered from a schema history: ``statements`` (DDL text, its database) applied in order to a
        new model (the ``SET character_set_server`` statement gives the server's character set; the databases'
        are read from the catalog). ``TerminalSourceError`` naming ``origin`` and the statement when one cannot be
        applied."""
        with self._lock:
            server = "utf8mb4"
            for sql, _database in statements:
                found = _SERVER_CHARSET.match(sql)
                if found:
                    server = found.group(1).lower()
            model = SchemaModel(server)
            model.database_charsets.update(self._catalog.database_charsets())
            for sql, database in statements:
                statement = parse_ddl(sql)
                reason = statement.reason if isinstance(statement, UnreadableStatement) else None
                if reason is None:
                    try:
                        model.apply(statement, database)
                    except ModelError as exc:
                        reason = str(exc)
                if reason is not None:
                    msg = (f"{origin}: cannot apply the recorded statement {sql[:300]!r} (database {database!r}): "
                           f"{reason}. Delete the stored offsets and the history topic to start from a new schema "
                           "snapshot")
                    raise TerminalSourceError(msg)
            self.model = model
            self._forget_all()

    def apply_ddl(self, sql: str, default_db: str, where: str) -> list[TableChange]:
        """Apply one DDL statement of the binlog (run with default database ``default_db``; ``where`` names its
        binlog position for errors) to the model; the tables it changed. Plans of changed tables are rebuilt
        at their next rows. DDL the model cannot follow is a ``TerminalSourceError`` naming the statement and
        position when it is about a captured table, and ignored otherwise (as Debezium ignores DDL of tables
        it does not capture)."""
        with self._lock:
            return self._apply_ddl(sql, default_db, where)

    def _apply_ddl(self, sql: str, default_db: str, where: str) -> list[TableChange]:
        statement = parse_ddl(sql)
        names = table_names(statement)
        ids = [TableId(n.database or default_db, n.name) for n in names]
        captured = [t for t in ids if self.is_captured(t)]
        if isinstance(statement, UnreadableStatement):
            if captured:
                raise _unfollowable(sql, where, captured, statement.reason)
            return []
        try:
            changes = self.model.apply(statement, default_db)
        except ModelError as exc:
            if captured:
                raise _unfollowable(sql, where, captured, str(exc)) from exc
            for table in ids:  # not captured: the model forgets what it cannot follow
                self.model.tables.pop(table, None)
            return []
        if isinstance(statement, DropDatabase):
            ids = [change.table_id for change in changes]
        for table in ids:
            self._plans.pop(table, None)
        self._checked = {key for key in self._checked if key[0] not in ids}
        return [change for change in changes if self.is_captured(change.table_id)]

    def _forget_all(self) -> None:
        self._plans.clear()
        self._checked.clear()

    def forget(self) -> None:
        """Drop every plan: the next rows rebuild their table's plan from the model."""
        with self._lock:
            self._forget_all()

    def _build(self, table: TableId) -> TablePlan | None:
        definition = self.model.table(table)
        if definition is None:
            return None
        columns = [column_of(definition, spec) for spec in definition.columns]
        capture = self._config.capture
        captured = [c for c in columns if capture.is_column_captured(table.schema, table.table, c.name)]
        key = capture.key_columns_for(table.schema, table.table) or definition.primary_key
        codecs = {c.name: column_codec(c, self._modes) for c in captured}
        model = tuple(Column(c.name, 0, c.data_type, optional=c.nullable, is_key=c.name in key) for c in captured)
        fallbacks = {c.name: required_fallback(codecs[c.name].schema) for c in captured if not c.nullable}
        return TablePlan(table, TableSchema(table, model, tuple(k for k in key if k in codecs)), codecs,
                         tuple((c.name, codecs[c.name].convert) for c in captured),
                         {name: value for name, value in fallbacks.items() if value is not None},
                         frozenset(c.name for c in captured if c.data_type.lower() == "set"))


_SERVER_CHARSET = re.compile(r"\s*SET\s+character_set_server\s*=\s*(\w+)", re.IGNORECASE)


def _unfollowable(sql: str, where: str, tables: Sequence[TableId], reason: str) -> TerminalSourceError:
    shown = sql if len(sql) <= 500 else sql[:500] + "..."
    msg = (f"cannot follow the DDL statement at {where} on captured table(s) {', '.join(map(str, tables))}: "
           f"{reason}. Statement: {shown!r}. The rows after it cannot be decoded safely; the stored offsets stay "
           "before it. Either leave the table(s) out of table.include.list, or restart from a new schema snapshot "
           "after the statement (delete the stored offsets and the schema history)")
    return TerminalSourceError(msg)
