"""The incremental snapshot's progress, as the status page and the IN_PROGRESS notifications report it.

``TableRuntime`` holds the per-table figures that need not survive a restart (chunk bounds, row
counts, timings); the engine keeps one per table beside its durable ``SnapshotState``, and a
restart starts them again from zero. ``build_status`` turns both into the immutable
``SidecarStatus`` the API reads: finished tables first (oldest first), then the queue, whose head
is ``running`` or ``paused``. ``progress_fields`` gives Debezium 3.7's IN_PROGRESS totals.
Everything here is a pure function of its arguments: it reads and changes no other state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from signaller.snapshot import notifications as notes
from signaller.snapshot.control import SidecarStatus, TableProgress
from signaller.snapshot.state import Key, SnapshotState

log = logging.getLogger("signaller.snapshot")


@dataclass
class TableRuntime:
    """Per-table figures for the status page that need not survive a restart."""

    chunk_from: str | None = None
    chunk_to: str | None = None
    estimated_rows: int | None = None
    total_rows: int | None = None
    rows_read: int = 0
    rows_emitted: int = 0
    rows_evicted: int = 0
    chunks: int = 0
    chunk_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def key_text(key: Key | None) -> str | None:
    """A chunk key as notifications and the status page show it: values joined by ``,``, SQL NULL as
    ``<null>``; None for no key."""
    return None if key is None else ",".join("<null>" if v is None else v for v in key)


def progress_fields(runtime: TableRuntime | None, chunk_size: int) -> dict[str, str]:
    """``total_rows``, ``total_chunks`` and ``chunk_index`` of IN_PROGRESS (as Debezium 3.7); empty
    while the table's total is unknown."""
    if runtime is None or runtime.total_rows is None:
        return {}
    total_chunks = -(-runtime.total_rows // chunk_size)
    index = min(-(-runtime.rows_read // chunk_size), total_chunks)
    return {"total_rows": str(runtime.total_rows), "total_chunks": str(total_chunks), "chunk_index": str(index)}


def in_progress(state: SnapshotState, chunk_end: Key | None, runtime: TableRuntime | None, chunk_size: int,
                topic_prefix: str) -> notes.Notification:
    """Debezium's ``IN_PROGRESS`` notification after the head table's chunk up to ``chunk_end`` was read."""
    return notes.make(
        "IN_PROGRESS", state.correlation_id, topic_prefix,
        data_collections=",".join(q.table for q in state.queue), current_collection_in_progress=state.queue[0].table,
        maximum_key=key_text(state.max_key) or '"<null>"', last_processed_key=key_text(chunk_end) or "",
        **progress_fields(runtime, chunk_size),
    )


def build_status(state: SnapshotState, runtimes: dict[str, TableRuntime], chunk_size: int) -> SidecarStatus:
    """The snapshot part of ``SidecarStatus`` for ``state``, with each table's figures from
    ``runtimes`` (a table without one shows no estimate or chunk bounds)."""
    tables: list[TableProgress] = []
    for done in state.finished:
        table_state = {"SUCCEEDED": "completed", "EMPTY": "completed", "ABORTED": "aborted"}.get(done.status, "skipped")
        tables.append(TableProgress(done.table, table_state, done.rows, None, None, None, None, done.status,  # type: ignore[arg-type]
                                    done.started_at, done.ended_at, done.correlation_id, done.filter))
    for index, queued in enumerate(state.queue):
        runtime = runtimes.get(queued.table, TableRuntime())
        if index == 0:
            table_state = "paused" if state.paused else "running"
            tables.append(TableProgress(queued.table, table_state, queued.rows, runtime.estimated_rows,  # type: ignore[arg-type]
                                        runtime.chunk_from, runtime.chunk_to, key_text(state.max_key),
                                        None, queued.started_at, None, queued.correlation_id, queued.filter))
        else:
            tables.append(TableProgress(queued.table, "queued", 0, runtime.estimated_rows,
                                        correlation_id=queued.correlation_id, filter=queued.filter))
    return SidecarStatus(running=state.running, paused=state.paused, chunk_size=chunk_size,
                         correlation_id=state.correlation_id, tables=tuple(tables))


def scan_status(table: str, runtime: TableRuntime | None) -> str:
    """``SUCCEEDED`` if every row the chunk SELECTs of ``table`` read was emitted or superseded by a
    streamed change; else ``SQL_EXCEPTION`` (Debezium's status for a failed read), with an error log."""
    if runtime is None or runtime.rows_read == runtime.rows_emitted + runtime.rows_evicted:
        return "SUCCEEDED"
    log.error("incremental snapshot of %s lost rows: the chunk queries read %d rows but %d were emitted and %d "
              "superseded by streamed changes (%d unaccounted for); the table is reported SQL_EXCEPTION, "
              "snapshot it again", table, runtime.rows_read, runtime.rows_emitted, runtime.rows_evicted,
              runtime.rows_read - runtime.rows_emitted - runtime.rows_evicted)
    return "SQL_EXCEPTION"
