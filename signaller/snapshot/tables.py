"""Turning a table named by a snapshot signal into what the chunk reader and the event builder need.

``TableCatalog`` is the snapshot engine's one road to a table's schema: ``describe`` reads the
table's current definition through the source's ``TableSchemaProvider`` (so the rows match the
catalog now, also after an ALTER since the signal was queued), and returns a ``PreparedTable``
(the table's rows plan + chunk description) or the Debezium status under which the table is
skipped (``UNKNOWN_SCHEMA``, ``NO_PRIMARY_KEY``). The chunk description carries the description's
schema version: a chunk read that finds the table altered since raises ``ChunkSchemaChanged``
instead of reading rows, and the engine describes the table again (as Debezium's
``incremental.snapshot.allow.schema.changes``). ``key_columns`` and ``check_surrogate`` answer
what a signal may chunk by. Call them on the capture loop's thread only; they raise
``SourceError`` when the database cannot be read and ``SignalError`` (from ``check_surrogate``)
for a surrogate key the table cannot be chunked by.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic

from signaller.config import CaptureSection
from signaller.errors import SignalError, SourceError
from signaller.model import TableId
from signaller.snapshot.reading import retry_if_interrupted
from signaller.snapshot.state import Key, QueuedTable, SnapshotState
from signaller.snapshot.status import TableRuntime
from signaller.sources.base import (
    ChangeT,
    ChunkQueryError,
    ChunkReader,
    ChunkTable,
    ReadRendering,
    TableDescription,
    TableRows,
    TableSchemaProvider,
)

log = logging.getLogger("signaller.snapshot")


@dataclass
class PreparedTable(Generic[ChangeT]):
    """A table ready for chunking: its description, its rows plan and its chunk description."""

    info: TableDescription
    rows: TableRows[ChangeT]
    chunk: ChunkTable
    unique_key: bool = False
    """Whether the chunk key names one row at a time (the primary key, or a ``surrogate-key``: unique, NOT
    NULL); a ``message.key.columns`` override may not."""
    rendering: ReadRendering | None = None
    """How the chunk query renders the READs (its values follow the chunk key columns), or None."""

    @property
    def placeholders(self) -> Mapping[str, Any]:
        """The columns whose streamed values may be the unavailable-value placeholder, with it, for folding a
        window's READ with its changes (``toast_fold``): empty when the chunk key may name several rows."""
        return self.rows.placeholders if self.unique_key else {}


class TableCatalog(Generic[ChangeT]):
    """The tables of one source as the snapshot engine sees them (see the module docstring)."""

    def __init__(self, capture: CaptureSection, schemas: TableSchemaProvider[ChangeT]) -> None:
        """Describe tables through ``schemas``, with ``capture``'s column filters and key settings."""
        self._capture = capture
        self._schemas = schemas

    def key_columns(self, info: TableDescription) -> tuple[str, ...]:
        """The chunk key of a table: ``message.key.columns`` for it if configured, else its primary key
        (empty when it has neither)."""
        override = self._capture.key_columns_for(info.table_id.schema, info.table_id.table)
        return tuple(override) if override else info.primary_key

    def check_surrogate(self, info: TableDescription, column: str, signal_id: str) -> None:
        """Raise ``SignalError`` unless ``column`` is a captured, NOT NULL, uniquely indexed column of the table."""
        if column not in info.sql_types:
            raise SignalError(f"surrogate-key {column!r} is not a column of {info.table_id}; columns: "
                              f"{', '.join(info.sql_types)}", signal_id)
        if column not in info.not_null or column not in info.unique_columns:
            raise SignalError(f"surrogate-key {column!r} of {info.table_id} must be NOT NULL and have a unique "
                              "index, or chunks could skip or repeat rows", signal_id)
        if not self._capture.is_column_captured(info.table_id.schema, info.table_id.table, column):
            raise SignalError(f"surrogate-key {column!r} of {info.table_id} is not a captured column (see "
                              "column.include.list/column.exclude.list): streamed changes must carry it to be "
                              "matched against the rows of a snapshot chunk; accepted: a captured unique NOT "
                              "NULL column", signal_id)

    def describe(self, queued: QueuedTable, *, rendered: bool = False) -> PreparedTable[ChangeT] | str:
        """The table's current rows plan and chunk description, or the Debezium status
        (``UNKNOWN_SCHEMA``, ``NO_PRIMARY_KEY``) under which it must be skipped. With ``rendered``, the chunk
        query also renders the READs when the source can (``TableRows.rendering``)."""
        table_id = TableId.parse(queued.table)
        info = self._schemas.describe(table_id)
        if info is None:
            return "UNKNOWN_SCHEMA"
        keys = (queued.surrogate_key,) if queued.surrogate_key else self.key_columns(info)
        if not keys:
            return "NO_PRIMARY_KEY"
        rows = self._schemas.rows_for(info)
        emitted = set(rows.emitted_columns)
        missing = [k for k in keys if k not in emitted]
        if missing:
            log.warning("snapshot of %s skipped (NO_PRIMARY_KEY): chunk key column(s) %s are not in the change "
                        "events (column filters or an unsupported type), so streamed changes could not be "
                        "matched against a chunk's rows", table_id, ", ".join(missing))
            return "NO_PRIMARY_KEY"
        rendering = rows.rendering if rendered else None
        chunk = ChunkTable(table_id.schema, table_id.table, rows.columns,
                           tuple((k, info.sql_types[k]) for k in keys), queued.filter, info.schema_version,
                           rendering.select if rendering is not None else ())
        return PreparedTable(info, rows, chunk, bool(queued.surrogate_key) or keys == info.primary_key, rendering)


def total_rows(chunks: ChunkReader, prepared: PreparedTable[Any], head: QueuedTable, max_key: Key) -> int | None:
    """Debezium's ``total_rows``: the planner's estimate when there is no filter and it is positive,
    else an exact count up to the maximum key; None if that fails (logged)."""
    estimate = prepared.info.estimated_rows
    if head.filter is None and estimate is not None and estimate > 0:
        return estimate
    try:
        return chunks.count_rows(prepared.chunk, max_key)
    except (ChunkQueryError, SourceError) as exc:
        log.warning("could not count the rows of %s (progress will omit totals): %s", head.table, exc)
        return None


@dataclass(frozen=True)
class TableStart:
    """What starting ``table`` found (:func:`read_table_start`): its maximum key (None: no row) and
    ``total_rows`` (see :func:`total_rows`), or the ``error`` of the maximum key's query."""

    table: str
    max_key: Key | None = None
    total_rows: int | None = None
    error: ChunkQueryError | SourceError | None = None


def read_table_start(chunks: ChunkReader, prepared: PreparedTable[Any], head: QueuedTable) -> TableStart:
    """The head table's maximum key and total (database work only: the engine runs it on its read worker, as a
    chunk read, and applies it with :func:`start_table`). Never raises what the queries raise: that is the
    result's ``error``, except an interrupted query (``reading.retry_if_interrupted``: the session is retried)."""
    try:
        max_key = chunks.max_key(prepared.chunk)
    except (ChunkQueryError, SourceError) as exc:
        retry_if_interrupted(exc, f"reading the maximum key of {head.table}")
        return TableStart(head.table, error=exc)
    if max_key is None:
        return TableStart(head.table)
    return TableStart(head.table, max_key, total_rows(chunks, prepared, head, max_key))


def start_table(start: TableStart, state: SnapshotState, runtime: TableRuntime) -> SnapshotState | None:
    """The head table's snapshot starts (or starts again after a restart) with what ``start`` found: its maximum
    key (kept in the returned state, with the head's start time) and ``runtime``'s total (its counts start at
    zero); None if the table has no row (the caller finishes it ``EMPTY``)."""
    head = state.queue[0]
    runtime.total_rows, runtime.rows_read, runtime.rows_emitted, runtime.rows_evicted = None, 0, 0, 0
    if start.max_key is None:
        return None
    runtime.total_rows = start.total_rows
    queue = (dataclasses.replace(head, started_at=head.started_at or time.time()), *state.queue[1:])
    return state.with_changes(max_key=start.max_key, queue=queue)
