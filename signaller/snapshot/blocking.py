"""Blocking snapshots: every row of the requested tables, read and emitted while streaming waits.

``BlockingSnapshot.run`` is called on the capture loop's thread, which does not poll the log until
it returns. Each table is read in chunk-key order, one chunk at a time; a chunk is emitted once the
next one was read (to know which row is a table's last), so at most two chunks are in memory. Every
READ carries Debezium's ``source.snapshot`` flag (``snapshot_flag``). Notifications (Debezium's
``Initial Snapshot`` kind, no correlation id): STARTED; for each table that could be described,
TABLE_SCAN_COMPLETED with the rows emitted and ``SUCCEEDED``, or ``SQL_EXCEPTION`` when a read
failed (the snapshot then goes on with the next table); COMPLETED. A table that cannot be described
(unknown, no key) is skipped with a warning. Raises only what ``emit`` and ``notify`` raise
(``SinkError``: Kafka failing).

A read *interrupted* by the database (the connection lost, the server restarting: ``reading.interrupted``)
is not a failed table: the description or the chunk is read again from the same key, with backoff
(0.1 s doubling to 5 s), for up to :data:`INTERRUPTED_READ_RETRY_S`; the chunk reader connects again
on its next read. No row is emitted twice or skipped. Only a read the database refuses, or one still
interrupted after that, ends the table ``SQL_EXCEPTION``. (A blocking snapshot cannot be resumed by
a new session as an incremental one is: its progress is not in the stored state.)
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

from signaller.errors import SourceError
from signaller.model import ChangeEvent, Op
from signaller.snapshot import notifications as notes
from signaller.snapshot.reading import interrupted
from signaller.snapshot.state import QueuedTable
from signaller.snapshot.tables import PreparedTable
from signaller.sources.base import ChangeT, ChunkQueryError, ChunkReader, ChunkTable, Key, RawRow

log = logging.getLogger("signaller.snapshot")

Emit = Callable[[ChangeT], None]
"""Sends one READ change (the source's change type, made by ``TableRows.read_change``)."""
Notify = Callable[[notes.Notification], None]
Describe = Callable[[QueuedTable], PreparedTable[ChangeT] | str]
T = TypeVar("T")
INTERRUPTED_READ_RETRY_S = 60.0
"""How long a blocking snapshot retries a read the database interrupted before it ends the table
``SQL_EXCEPTION`` (a PostgreSQL restart takes seconds; the capture loop waits meanwhile)."""


def snapshot_flag(table_index: int, tables: int, position: int, is_last: bool) -> str:
    """Debezium's ``source.snapshot`` of a blocking/initial READ: ``first`` (first row of the first
    table), ``last`` (last row of the last table), ``first_in_data_collection``,
    ``last_in_data_collection``, else ``true``."""
    last_table = table_index == tables - 1
    if table_index == 0 and position == 0:
        return "first"
    if last_table and is_last:
        return "last"
    if position == 0:
        return "first_in_data_collection"
    if is_last:
        return "last_in_data_collection"
    return "true"


class BlockingSnapshot(Generic[ChangeT]):
    """Runs blocking snapshots for the engine (see the module docstring)."""

    def __init__(self, chunks: ChunkReader, describe: Describe[ChangeT], emit: Emit[ChangeT], notify: Notify,
                 topic_prefix: str, sleep: Callable[[float], None] = time.sleep) -> None:
        """Read chunks through ``chunks``, prepare tables with ``describe``, send READs to ``emit`` and
        notifications (under ``topic_prefix``) to ``notify``; wait between retries of an interrupted read
        with ``sleep``."""
        self._sleep = sleep
        self._chunks = chunks
        self._describe = describe
        self._emit = emit
        self._notify = notify
        self._prefix = topic_prefix

    def run(self, tables: Sequence[QueuedTable], chunk_size: int) -> int:
        """Snapshot ``tables`` in order, ``chunk_size`` rows per SELECT; the number of rows emitted."""
        prefix = self._prefix
        names = ",".join(q.table for q in tables)
        self._notify(notes.make("STARTED", None, prefix, notes.INITIAL, data_collections=names))
        total = 0
        for index, queued in enumerate(tables):
            try:
                found = self._retried(f"describing {queued.table}", functools.partial(self._describe, queued))
            except SourceError as exc:
                found = "SQL_EXCEPTION"
                log.warning("blocking snapshot of %s failed: %s", queued.table, exc)
            if isinstance(found, str):
                log.warning("blocking snapshot of %s skipped: %s", queued.table, found)
                continue
            emitted, status = self._table(found, index, len(tables), chunk_size)
            total += emitted
            self._notify(notes.make("TABLE_SCAN_COMPLETED", None, prefix, notes.INITIAL,
                                    scanned_collection=queued.table, total_rows_scanned=str(emitted),
                                    status=status))
        self._notify(notes.make("COMPLETED", None, prefix, notes.INITIAL))
        return total

    def _table(self, prepared: PreparedTable[ChangeT], table_index: int, tables: int,
               chunk_size: int) -> tuple[int, str]:
        """Emit every row of one table with Debezium's snapshot flags; (rows emitted, status)."""
        table_id, rows, width = prepared.info.table_id, prepared.rows, len(prepared.chunk.columns)
        chunks = self._read(prepared.chunk, chunk_size)
        emitted = 0
        try:
            current = next(chunks, [])
            while current:
                following = next(chunks, [])
                for offset, values in enumerate(current):
                    is_last = not following and offset == len(current) - 1
                    flag = snapshot_flag(table_index, tables, emitted, is_last)
                    now_us = time.time_ns() // 1000
                    row = rows.row(values[:width])
                    event = ChangeEvent(Op.READ, table_id, None, row, None, None, None, None, now_us, flag)
                    self._emit(rows.read_change(event))
                    emitted += 1
                current = following
        except (ChunkQueryError, SourceError) as exc:
            log.warning("blocking snapshot of %s failed after %d rows: %s", table_id, emitted, exc)
            return emitted, "SQL_EXCEPTION"
        return emitted, "SUCCEEDED"

    def _read(self, chunk: ChunkTable, size: int) -> Iterator[list[RawRow]]:
        """The table's rows in chunk-key order, one non-empty chunk (raw SELECT rows) at a time."""
        width = len(chunk.columns)
        lower: Key | None = None
        while True:
            batch = self._retried(f"reading a chunk of {chunk.schema}.{chunk.name}",
                                  functools.partial(self._chunks.read_chunk, chunk, lower, None, size))
            if batch:
                yield batch
            if len(batch) < size:
                return
            lower = tuple(batch[-1][width:])

    def _retried(self, doing: str, read: Callable[[], T]) -> T:
        """``read()``, called again while the database interrupts it (see the module docstring); raises
        what it raised when refused, or when still interrupted after :data:`INTERRUPTED_READ_RETRY_S`."""
        deadline = time.monotonic() + INTERRUPTED_READ_RETRY_S
        delay = 0.1
        while True:
            try:
                return read()
            except (ChunkQueryError, SourceError) as exc:
                if not interrupted(exc) or time.monotonic() + delay > deadline:
                    raise
                log.warning("blocking snapshot: %s was interrupted (%s); reading it again in %.1f s", doing, exc,
                            delay)
                self._sleep(delay)
                delay = min(delay * 2, 5.0)
