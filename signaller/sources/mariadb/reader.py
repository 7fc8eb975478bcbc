"""The streaming half of the MariaDB source: the row-based binlog (``mysql-replication``'s client) decoded
into the neutral stream items, whole transactions in commit order.

Lifecycle: ``open(position, offset_keys)`` → repeated ``poll()`` → ``acknowledge()`` → ``close()``. A
reader thread (started by ``open``) reads binlog events, converts each captured row (``values``) and
hands complete transactions to ``poll`` through a bounded queue (back-pressure: the thread waits while
the capture loop is behind). ``poll`` never blocks longer than its timeout. A transaction with no
captured change yields no items; its end still moves :attr:`stream_end` (so an idle or foreign-table
workload moves the offset after a heartbeat). :attr:`stream_end` and :attr:`last_commit` move only as ``poll``
hands items out: never past a transaction still waiting in the queue (a heartbeat would otherwise commit an
offset after a transaction not yet sent, and a crash then would lose it).

Positions: every item's position is :func:`~signaller.sources.mariadb.positions.position` of a binlog
coordinate; a :class:`~signaller.sources.base.TransactionCommit`'s ``end_lsn`` is the coordinate after
the transaction's XID (or COMMIT) event, and the reader remembers the GTID set and coordinate of each
such point (:meth:`resume_at`) until it is acknowledged, for the source's offset keys. Resuming:
``offset_keys`` with ``gtids`` start the stream at that GTID state (``@slave_connect_state``); without
them at ``file``/``pos``; without offsets at the server's current position (streaming from now, as
``snapshot.mode=no_data``). MariaDB resends every transaction after that point: no loss, no duplicate of
an acknowledged transaction. A purged binlog (the file is gone, or the server cannot find the GTID state)
is a ``TerminalSourceError`` naming the position and saying to take a new snapshot.

DDL: each DDL ``QueryEvent`` (a standalone GTID group, or inside one) is applied to the shared
:class:`~signaller.sources.mariadb.changes.TablePlans`' schema model in binlog order
(:meth:`~signaller.sources.mariadb.changes.TablePlans.apply_ddl`), before the rows after it are decoded; DDL
it cannot follow on a captured table ends the stream with a ``TerminalSourceError`` naming the statement and
its position (the offsets stay before it). A statement that changed captured tables goes to the
:class:`~signaller.sources.mariadb.schema_recorder.SchemaRecorder` (its schema history records are durable
before the reader goes on) and its schema change records become a
:class:`~signaller.sources.base.SchemaChangeRecords` item, whose position is the point after the statement.
:meth:`open` sets the schema the stream starts with (the recorder's start-up schema snapshot, whose records are
the first items, or the history up to the stored offsets).

Not thread-safe beyond that split: ``poll``/``acknowledge``/``close`` are the capture loop's.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import random
import struct
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pymysql
from pymysql.constants.COMMAND import COM_BINLOG_DUMP
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    HeartbeatLogEvent,
    MariadbAnnotateRowsEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    XidEvent,
)
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from signaller.config import SignallerConfig
from signaller.errors import SignallerError, TerminalSourceError, TransientSourceError
from signaller.model import TableId
from signaller.sources.base import LogReader, TransactionBegin, TransactionCommit
from signaller.sources.mariadb import charsets, time2
from signaller.sources.mariadb.catalog import Catalog, connection_settings, source_error
from signaller.sources.mariadb.changes import BinlogChange, BinlogTx, TablePlans
from signaller.sources.mariadb.positions import GtidSet, Resume, gtid_number, position
from signaller.sources.mariadb.schema_recorder import SchemaRecorder, StreamedDdl

log = logging.getLogger("signaller.source")

time2.install()  # exact TIME2 decoding (negative fractions) in the binlog client
charsets.install()  # big-endian ucs2/utf16/utf32 and MariaDB's character set names in the binlog client

QUEUE_TRANSACTIONS = 64
"""Complete transactions the reader thread may hold ahead of the capture loop."""
HEARTBEAT_S = 5.0
"""How often an idle server sends a heartbeat event (a silent connection is then a dead one)."""
_GTID_STATE_MISSING = 1236


class _Stream(BinLogStreamReader):  # type: ignore[misc]
    """``BinLogStreamReader`` starting MariaDB's dump at a GTID state or at a file/position, with annotate-rows
    events when asked. The client's own MariaDB start ignores ``log_file``/``log_pos`` (it always starts the
    first file), so the dump request is written here; a second connect (the client's silent reconnect after
    a lost connection, which would restart from the first position) raises instead, so the session restarts
    from the committed offsets."""

    def __init__(self, start: Resume, use_gtid: bool, annotate: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._start, self._use_gtid, self._annotate = start, use_gtid, annotate
        self._connected_once = False

    def _BinLogStreamReader__set_mariadb_settings(self) -> bytes:  # the client's (name-mangled) start hook
        if self._connected_once:
            msg = "the binlog connection was lost; the session restarts from the committed offsets"
            raise TransientSourceError(msg)
        self._connected_once = True
        cursor = self._stream_connection.cursor()
        if self._use_gtid:
            cursor.execute("SET @slave_connect_state = %s", (str(self._start.gtids),))
            cursor.execute("SET @slave_gtid_strict_mode = 1")
            cursor.execute("SET @slave_gtid_ignore_duplicates = 0")
        cursor.close()
        name = b"" if self._use_gtid else self._start.file.encode()
        pos = 4 if self._use_gtid else self._start.pos
        flags = 0x02 if self._annotate else 0  # BINLOG_SEND_ANNOTATE_ROWS_EVENT; blocking
        return (struct.pack("<i", len(name) + 11) + bytes([COM_BINLOG_DUMP]) + struct.pack("<I", pos)
                + struct.pack("<H", flags) + struct.pack("<I", self._BinLogStreamReader__server_id) + name)


class MariaDbLogReader(LogReader[Any]):
    """The binlog stream of one capture session (see the module docstring)."""

    def __init__(self, config: SignallerConfig, catalog: Catalog, plans: TablePlans,
                 recorder: SchemaRecorder) -> None:
        self._config = config
        self._catalog = catalog
        self._plans = plans
        self._recorder = recorder
        self._queue: queue.Queue[_Handed | BaseException | None] = queue.Queue(QUEUE_TRANSACTIONS)  # None: wake
        self._thread: threading.Thread | None = None
        self._stream: _Stream | None = None
        self._stopping = threading.Event()
        self._resumes: dict[int, Resume] = {}
        self._last_commit: int | None = None
        """The thread's: the end of the newest transaction it queued."""
        self._handed_end = 0
        """The loop's: the stream end after the newest item ``poll`` handed out."""
        self._handed_last_commit: int | None = None
        """The loop's: the end of the newest transaction ``poll`` handed out."""
        self._queued = 0
        """The thread's: how many entries it queued."""
        self._handed = 0
        """The loop's: how many queued entries ``poll`` took."""
        self._pass_mark = (0, 0)
        """The thread's newest point with nothing to send, as (entries queued before it, its position): the
        stream end once ``poll`` took those entries (one tuple, replaced whole: the loop reads a consistent pair)."""
        self._pending: list[Any] = []

    # -- LogReader ------------------------------------------------------------------------
    def open(self, start_position: int, offset_keys: Mapping[str, Any] | None = None, /) -> None:
        """Check the start point still exists and start the reader thread (see the module docstring)."""
        if offset_keys:
            start = Resume.from_offset_keys(offset_keys)
            self._last_commit = self._handed_last_commit = start.position
        else:
            file, pos, gtid = self._catalog.binlog_status()
            start = Resume(file, pos, GtidSet.parse(gtid))
        files = self._catalog.binary_logs()
        if start.file not in files:
            msg = (f"the binlog position to resume from is gone: file {start.file!r} position {start.pos} (GTIDs "
                   f"{str(start.gtids) or 'none'}) was purged from MariaDB (oldest binlog: "
                   f"{files[0] if files else 'none'}); changes after it are lost to the binlog. Take a new snapshot: "
                   "delete the stored offsets and start with snapshot.mode=initial (or send an execute-snapshot "
                   "signal after starting from the current position)")
            raise TerminalSourceError(msg)
        self._resumes[start.position] = self._start = start
        self._basename = start.file.rpartition(".")[0]
        self._pending = [*self._pending, *self._recorder.start(start, resumed=bool(offset_keys))]
        self._handed_end = start.position
        self._pass_mark = (0, start.position)
        settings = {**connection_settings(self._config), "read_timeout": HEARTBEAT_S * 6}
        binlog = self._config.binlog
        self._stream = _Stream(
            start, bool(start.gtids.domains), binlog.include_query,
            connection_settings=settings, server_id=binlog.server_id or random.randint(5400, 6400),
            blocking=True, resume_stream=True, is_mariadb=True, slave_heartbeat=HEARTBEAT_S,
            only_events=[MariadbGtidEvent, XidEvent, QueryEvent, WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent,
                         RotateEvent, MariadbAnnotateRowsEvent, HeartbeatLogEvent],
            enable_logging=False)
        self._thread = threading.Thread(target=self._run, args=(start,), name="binlog-reader", daemon=True)
        self._thread.start()
        log.info("streaming the MariaDB binlog from %s:%d (GTIDs %s)", start.file, start.pos,
                 str(start.gtids) if start.gtids.domains else "none: by file and position")

    def poll(self, max_items: int, timeout_s: float) -> Sequence[Any]:
        """Up to about ``max_items`` items (whole transactions), waiting at most ``timeout_s`` for the first."""
        items, self._pending = self._pending, []
        try:
            first = self._queue.get(timeout=timeout_s) if not items and timeout_s > 0 else self._queue.get_nowait()
            while True:
                if first is not None:  # None: a wake-up (see wake), nothing to hand out
                    if isinstance(first, BaseException):
                        raise first
                    items.extend(first.items)
                    self._handed += 1
                    if first.end is not None:
                        self._handed_end = first.end
                        self._handed_last_commit = first.end
                    if len(items) >= max_items:
                        break
                first = self._queue.get_nowait()
        except queue.Empty:
            pass
        return items

    @property
    def stream_end(self) -> int:
        """The position after the newest transaction read (captured or not) with nothing before it left in the
        queue: every transaction before it was handed out by ``poll``."""
        queued_before, position = self._pass_mark
        if self._handed >= queued_before:
            return max(position, self._handed_end)
        return self._handed_end

    @property
    def last_commit(self) -> int | None:
        """The end position of the newest transaction handed out; None before the first (fresh start)."""
        return self._handed_last_commit

    def wake(self) -> None:
        """See :meth:`LogReader.wake` (a ``None`` in the reader's queue; none when the queue is full, since a
        ``poll`` then has items and does not wait)."""
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(None)

    def request_position(self) -> None:
        """Nothing to ask: the reading thread advances :attr:`stream_end` with every binlog event it reads
        (of any table), and the binlog protocol has no on-demand position report. An idle server moves
        no position (a read-only snapshot window then closes with the next write on the server)."""
        return

    def acknowledge(self, position: int, /) -> None:
        """Forget the resume points before ``position`` (MariaDB keeps no replica position: the offset store does)."""
        for known in [known for known in list(self._resumes) if known < position]:
            self._resumes.pop(known, None)

    def file_name(self, number: int) -> str:
        """The name of binlog file ``number`` (the server's base name, known once :meth:`open` ran)."""
        return f"{self._basename}.{number:06d}"

    _basename = "mariadb-bin"

    def resume_at(self, position: int) -> Resume | None:
        """The resume point of ``position`` (a commit end, the start, or a stream end this session reported); a
        position at or before the start (0 on a first start: nothing streamed yet) is the start."""
        resume = self._resumes.get(position)
        start = self._start
        if resume is None and start is not None and position <= start.position:
            return start
        return resume

    _start: Resume | None = None

    def close(self) -> None:
        """Stop the reader thread and close the binlog connection; never raises."""
        self._stopping.set()
        stream, self._stream = self._stream, None
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.close()
        thread, self._thread = self._thread, None
        if thread is not None:
            with contextlib.suppress(queue.Empty):
                while True:
                    self._queue.get_nowait()
            thread.join(5)

    # -- the reader thread ----------------------------------------------------------------
    def _hand_over(self, items: list[Any], end: int | None = None) -> None:
        """Queue ``items`` for ``poll``; ``end``: the transaction's end position (None: the stream end stays)."""
        self._queued += 1
        self._put(_Handed(items, end))

    def _put(self, item: _Handed | BaseException) -> None:
        while not self._stopping.is_set():
            try:
                self._queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def _run(self, start: Resume) -> None:
        try:
            self._read(start)
        except Exception as exc:
            if self._stopping.is_set():
                return
            self._put(_as_source_error(exc, start))

    def _read(self, start: Resume) -> None:
        stream = self._stream
        assert stream is not None
        file, gtids, last_end = start.file, start.gtids, self._last_commit
        tx: BinlogTx | None = None
        changes: list[BinlogChange] = []
        query: str | None = None
        standalone = False
        current_gtid: str | None = None
        gtid_begin, gtids_before = start.pos, str(start.gtids)
        plans = self._plans
        for event in stream:
            if self._stopping.is_set():
                return
            packet = event.packet
            end = packet.log_pos
            if isinstance(event, RotateEvent):
                file = event.next_binlog
                continue
            if isinstance(event, HeartbeatLogEvent):
                continue
            if isinstance(event, MariadbGtidEvent):
                gtid = (event.domain_id, event.server_id, event.gtid_seq_no)
                gtid_begin, gtids_before = end - packet.event_size, str(gtids)
                gtids = gtids.with_gtid(*gtid)
                current_gtid = event.gtid
                tx = BinlogTx(gtid_number(*gtid), event.gtid, file, event.timestamp * 1_000_000, last_end,
                              event.server_id, position(file, end - packet.event_size))
                changes, query = [], None
                if not self._gtid_source_captured(f"{event.domain_id}-{event.server_id}"):
                    tx = None  # gtid.source.includes/excludes: its DML is skipped, its GTID still counts
                    self._passed_later = True
                standalone = bool(event.flags & 0x01)  # FL_STANDALONE: a DDL statement, no COMMIT follows
                if standalone:
                    tx = None
                continue
            if isinstance(event, MariadbAnnotateRowsEvent):
                query = event.sql_statement.decode("utf-8", "replace")
                continue
            if isinstance(event, WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent):
                if tx is not None:
                    table = TableId(event.schema, event.table)
                    plan = plans.plan(table, [column.name for column in event.columns])
                    if plan is not None:
                        changes.extend(plan.changes(event, tx, position(file, end - packet.event_size),
                                                    end - packet.event_size, query))
                continue
            ends_tx = isinstance(event, XidEvent) or (isinstance(event, QueryEvent)
                                                      and event.query.strip().upper() == "COMMIT")
            if isinstance(event, QueryEvent) and not ends_tx:
                if event.query.strip().upper() != "BEGIN":
                    at = end - packet.event_size
                    where = f"binlog {file} position {at} (GTID {current_gtid or 'none'})"
                    database = event.schema.decode("utf-8", "replace")
                    changed = plans.apply_ddl(event.query, database, where)
                    if changed:
                        after = Resume(file, end, gtids, event.timestamp, packet.server_id)
                        if standalone:
                            self._resumes[after.position] = after
                        ddl = StreamedDdl(file, at, current_gtid, packet.server_id, event.timestamp, gtid_begin,
                                          gtids_before)
                        ddl_resume = after if standalone else self._resumes.get(last_end or 0, start)
                        self._hand_over([self._recorder.streamed(event.query, database, changed, ddl, ddl_resume)])
                    if standalone:
                        standalone = False
                        self._passed(Resume(file, end, gtids, event.timestamp, packet.server_id))
                continue
            if ends_tx and tx is None and self._passed_later:
                self._passed(Resume(file, end, gtids, event.timestamp, packet.server_id))
                self._passed_later = False
            if ends_tx and tx is not None:
                resume = Resume(file, end, gtids, event.timestamp, packet.server_id)
                if changes:
                    end_position = resume.position
                    self._resumes[end_position] = resume
                    begin = TransactionBegin(tx.xid, end_position, tx.commit_ts_us, last_end, tx.begin_position)
                    commit = TransactionCommit(tx.xid, end_position, end_position, tx.commit_ts_us)
                    self._hand_over([begin, *changes, commit], end_position)
                    last_end = self._last_commit = end_position
                else:
                    self._passed(resume)
                tx, changes, query = None, [], None

    _passed_later = False

    def _gtid_source_captured(self, source: str) -> bool:
        """``gtid.source.includes``/``excludes`` (regexes on ``domain-server``, full match), as Debezium filters DML."""
        binlog = self._config.binlog
        if binlog.gtid_source_includes:
            return any(pattern.fullmatch(source) for pattern in binlog.gtid_source_includes)
        return not any(pattern.fullmatch(source) for pattern in binlog.gtid_source_excludes)

    def _passed(self, resume: Resume) -> None:
        """A point between transactions with nothing to send: the stream end moves there once ``poll`` handed out
        everything queued before it."""
        self._resumes[resume.position] = resume
        self._pass_mark = (self._queued, resume.position)


@dataclass(frozen=True, slots=True)
class _Handed:
    """One queue entry: a whole transaction's items (or a DDL's records) and, for a transaction, its end."""

    items: list[Any]
    end: int | None


def _as_source_error(exc: BaseException, start: Resume) -> BaseException:
    if isinstance(exc, SignallerError):
        return exc
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    if isinstance(exc, pymysql.err.Error) and code == _GTID_STATE_MISSING:
        msg = (f"MariaDB cannot send the binlog from the stored position (file {start.file!r} position {start.pos}, "
               f"GTIDs {str(start.gtids) or 'none'}): {exc.args[-1]}. The binlog it needs was purged; take a new "
               "snapshot: delete the stored offsets and start with snapshot.mode=initial")
        return TerminalSourceError(msg)
    if isinstance(exc, pymysql.err.Error):
        return source_error(exc, "binlog streaming")
    if isinstance(exc, OSError | EOFError | struct.error):
        return TransientSourceError(f"MariaDB binlog streaming failed: {exc}")
    return exc
