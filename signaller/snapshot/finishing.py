"""How a queued table's incremental snapshot ends: finished (any status) or stopped by a signal.

Pure functions over the immutable ``SnapshotState``: each returns the new state and the
notifications to send, in order; the engine sends them and keeps the state. Nothing here survives a
restart but the state returned (stored with the Kafka group that carries the notifications).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence

from signaller.snapshot import notifications as notes
from signaller.snapshot.state import FinishedTable, Key, QueuedTable, SnapshotState
from signaller.snapshot.status import TableRuntime

log = logging.getLogger("signaller.snapshot")
MAX_FINISHED = 100
"""Finished tables kept in the state (the newest)."""


def account_window(state: SnapshotState, runtime: TableRuntime, emitted: int, evicted: int,
                   last_key: Key | None) -> SnapshotState:
    """A window of the head table is over (every row emitted or superseded): its ``emitted`` and ``evicted``
    rows are counted (the head's ``rows``, ``runtime``) and the state moves to the window's ``last_key``, so a
    restart reads on after it."""
    runtime.rows_emitted += emitted
    runtime.rows_evicted += evicted
    head = state.queue[0]
    queue = (dataclasses.replace(head, rows=head.rows + emitted), *state.queue[1:])
    return state.with_changes(queue=queue, last_key=last_key)


def finish_head(state: SnapshotState, status: str, runtime: TableRuntime | None, topic_prefix: str,
                announce: bool = True) -> tuple[SnapshotState, list[notes.Notification]]:
    """The head table ends with ``status``: it leaves the queue for ``finished``; ``TABLE_SCAN_COMPLETED``
    (with ``announce``) and, when it was the last table, ``COMPLETED`` (the snapshot is over: no correlation
    id, not paused). ``runtime``'s total row count is reported and cleared."""
    head = state.queue[0]
    collections = ",".join(q.table for q in state.queue)
    done = FinishedTable(head.table, status, head.rows, head.started_at, time.time(), head.correlation_id,
                         head.filter)
    state = state.with_changes(queue=state.queue[1:], max_key=None, last_key=None,
                               finished=(*state.finished, done)[-MAX_FINISHED:])
    total = {} if runtime is None or runtime.total_rows is None else {"total_rows": str(runtime.total_rows)}
    if runtime is not None:
        runtime.total_rows = None
    sent = []
    if announce:
        sent.append(notes.make("TABLE_SCAN_COMPLETED", state.correlation_id, topic_prefix,
                               data_collections=collections, scanned_collection=head.table,
                               total_rows_scanned=str(head.rows), status=status, **total))
    log.info("incremental snapshot of %s: %s, %d rows", head.table, status, head.rows)
    if not state.queue:
        sent.append(notes.make("COMPLETED", state.correlation_id, topic_prefix))
        state = state.with_changes(correlation_id=None, paused=False)
    return state, sent


def stop_tables(state: SnapshotState, stopped: Sequence[QueuedTable], correlation: str | None,
                topic_prefix: str) -> tuple[SnapshotState, list[notes.Notification]]:
    """The tables ``stopped`` (queued, the head possibly among them; its runtime already finished with
    ``finish_head(..., "ABORTED", announce=False)``) leave the queue; one ``ABORTED`` notification with the
    snapshot's ``correlation`` id as it was before the head finished. With
    nothing left the snapshot is over, as when its last table finishes (a pause does not outlive it, or
    the next execute-snapshot would start paused)."""
    remaining = tuple(q for q in state.queue if q not in stopped)
    state = state.with_changes(queue=remaining)
    if not remaining:
        state = state.with_changes(max_key=None, last_key=None, correlation_id=None, paused=False)
    return state, [notes.make("ABORTED", correlation, topic_prefix,
                              data_collections=",".join(q.table for q in stopped))]
