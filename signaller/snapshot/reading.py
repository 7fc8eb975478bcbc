"""Where an incremental snapshot's chunk reads run, and what one read does.

A window's database work (open watermark, chunk query, close watermark; read-only mode: the chunk
with its visibility and high watermark) is one call, :func:`read_window`; fetching the next slice of
a chunk read through a server-side cursor is another, :func:`fetch_rest`. The engine hands them to
a :class:`Reads`: :class:`ThreadReads` (the runtime's) runs them on one worker thread, so the capture
loop goes on streaming (and deduplicating against the window) while the query runs;
:class:`InlineReads` runs them at once on the caller's thread (tests, tools). Either way the engine
takes the result on the loop's thread (``IncrementalSnapshotter.poll_reads``), and at most one
call is in flight: the chunk reader is used by one thread at a time, never concurrently.

A chunk that comes back empty (no error) leaves its window open, as Debezium's: the engine finishes
the table, prepares the next queued one on the loop's thread (no read is in flight then) and reads
its first chunk in the same window (:func:`read_window` with the request's ``opened``: no second
open watermark, the markers keep the first table's ``dataCollectionId``), or closes the window
(a request without a table) when no table is left. So a table adds no window of its own to the
signal table; and as Debezium's, a window opens even when every queued table is skipped before its
first chunk (no primary key, no row): the engine prepares tables before the read, but the window's
metadata names the head as it was before, and a window with no table to read opens and closes.

The DBLog rule holds as when the calls ran on the loop's thread: the open watermark is committed
before the chunk query starts, the close watermark after it ends (also when it fails), and the
stream events between the two markers are matched against the window's rows whenever the result
arrives (the window is waiting for its rows from the open marker on). The chunk query reports its
snapshot's visibility too (``ChunkReader.read_chunk_seen``): a transaction whose commit precedes the
open marker in the log may still be invisible to it (``signaller.snapshot.visibility``). Nothing here survives a
restart: a read in flight when the process dies is read again from the stored last key.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from signaller.errors import SourceError, TransientSourceError, is_transient
from signaller.snapshot import notifications as notes
from signaller.sources.base import (
    ChunkQueryError,
    ChunkReader,
    ChunkReadInterrupted,
    ChunkRest,
    ChunkTable,
    Key,
    RawRow,
    TransactionVisibility,
)

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Pending(Protocol[T_co]):
    """A call handed to :class:`Reads`: whether it finished, and its result (waiting for it)."""

    def done(self) -> bool:
        """Whether the call finished (``result`` then returns at once)."""
        ...

    def result(self) -> T_co:
        """The call's return value, waiting for it to finish; raises what the call raised."""
        ...


class Reads(Protocol):
    """Runs the engine's database calls, one at a time, in the order submitted."""

    def submit(self, work: Callable[[], T], /) -> Pending[T]:
        """Start ``work``; its result comes through the returned :class:`Pending`."""
        ...

    def close(self) -> None:
        """Wait for the call in flight, if any, and release the worker; never raises."""
        ...


@dataclass
class _Done(Generic[T]):
    value: T | None = None
    error: BaseException | None = None

    def done(self) -> bool:
        return True

    def result(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


class InlineReads(Reads):
    """Runs every call at once on the caller's thread (the result is ready when ``submit`` returns)."""

    def submit(self, work: Callable[[], T], /) -> Pending[T]:
        """Run ``work`` now; what it raises is kept for ``result``."""
        try:
            return _Done(work())
        except BaseException as exc:  # handed to the caller through result(), as a worker would
            return _Done(error=exc)

    def close(self) -> None:
        """Nothing to release."""


class ThreadReads(Reads):
    """Runs the calls on one worker thread (``signaller-chunks``), started when made: the first call (a snapshot's
    first chunk) does not wait on the caller's thread for a thread to start (a few ms on a busy machine)."""

    def __init__(self) -> None:
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._start()

    def _start(self) -> concurrent.futures.ThreadPoolExecutor:
        pool = self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="signaller-chunks")
        pool.submit(lambda: None)  # starts the thread now
        return pool

    def submit(self, work: Callable[[], T], /) -> Pending[T]:
        """Queue ``work`` on the worker thread (started again if closed)."""
        pool = self._pool if self._pool is not None else self._start()
        return pool.submit(work)

    def close(self) -> None:
        """Wait for the call in flight (a chunk query ends within its statement's time) and stop the thread."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True)
class ChunkRequest:
    """One window's read: ``lower < key <= upper``, at most ``limit`` rows of ``table`` (None: nothing to read,
    the window only opens and closes). ``first_fetch``:
    read through the chunk reader's server-side cursor, this many rows before the close watermark (the rest
    with :func:`fetch_rest`); None: the whole chunk at once. ``correlation_id`` and ``data_collection`` go
    into the watermarks' metadata (as Debezium's). ``opened``: the chunk continues a window whose open
    watermark (written at that instant) is already committed; None: the read opens its window."""

    chunk_id: str
    table: ChunkTable | None
    lower: Key | None
    upper: Key | None
    limit: int
    read_only: bool
    first_fetch: int | None
    correlation_id: str | None
    data_collection: str
    opened: str | None = None


@dataclass
class ChunkResult:
    """What :func:`read_window` read: the rows (possibly none), the rest of a streamed chunk, the visibility of
    the read's snapshot (None: the reader cannot tell), read-only mode's high watermark, the seconds the query
    took, or the query's ``error`` (the table then ends ``SQL_EXCEPTION``; never an :func:`interrupted` one, which
    is raised instead). ``open_since``: the chunk was empty
    and its window is left open (watermark mode, no error; the open watermark's instant): the engine continues
    it with the next table or closes it."""

    rows: list[RawRow] = field(default_factory=list)
    rest: ChunkRest | None = None
    visible: TransactionVisibility | None = None
    high: int = 0
    seconds: float = 0.0
    error: ChunkQueryError | SourceError | None = None
    open_since: str | None = None


@dataclass(frozen=True)
class FetchPace:
    """How a streamed chunk's rest is fetched: ``rows`` per slice (one ``fetch_rest``), the next slice started
    while fewer than ``ahead`` of the window's rows wait to be emitted. A slice's rows are parsed on the worker
    thread holding the interpreter lock (about 0.5 µs a row), so larger slices cost the loop fewer round trips
    and wait longer in one piece."""

    rows: int
    ahead: int


@dataclass
class RestSlice:
    """What :func:`fetch_rest` fetched: rows (fewer than ``asked``: the chunk is complete), or the fetch's
    ``error``."""

    rows: list[RawRow]
    asked: int
    error: ChunkQueryError | SourceError | None = None


def read_window(chunks: ChunkReader, request: ChunkRequest) -> ChunkResult:
    """One window's database work. Watermark mode: the open watermark (committed; not when the request
    continues a window, ``opened``), the chunk query, the close watermark (written even when the query failed;
    the query's failure is the result's ``error``), except after an empty chunk: the window is then left open
    (the result's ``open_since``). Read-only mode: ``read_chunk_visible``, nothing written. Raises
    ``SourceError`` only when a watermark could not be written or the read was :func:`interrupted` (after the
    close watermark's attempt; the session is retried)."""
    started = time.monotonic()
    if request.read_only:
        if request.table is None:
            return ChunkResult()
        try:
            rows, visible, high = chunks.read_chunk_visible(request.table, request.lower, request.upper, request.limit)
        except (ChunkQueryError, SourceError) as exc:
            retry_if_interrupted(exc, f"reading a chunk of {request.table.schema}.{request.table.name}")
            return ChunkResult(error=exc)
        return ChunkResult(rows, None, visible, high, time.monotonic() - started)
    opened = request.opened
    if opened is None:
        opened = notes.java_instant(time.time())
        metadata: dict[str, Any] = {"openWindowTimestamp": opened, "correlationId": request.correlation_id,
                                    "dataCollectionId": request.data_collection}
        chunks.write_marker(request.chunk_id, True, metadata)
    if request.table is None:
        return close_window(chunks, request, opened)
    result, leave_open = ChunkResult(), False
    try:
        result = _select(chunks, request.table, request)
        result.seconds = time.monotonic() - started
        leave_open = not result.rows
    except (ChunkQueryError, SourceError) as exc:
        result = ChunkResult(error=exc)
    finally:
        if not leave_open:
            close_window(chunks, request, opened)
    if result.error is not None:
        retry_if_interrupted(result.error, f"reading a chunk of {request.table.schema}.{request.table.name}")
    if leave_open:
        if result.rest is not None:
            result.rest.close()
        result.rest, result.open_since = None, opened
    return result


def close_window(chunks: ChunkReader, request: ChunkRequest, opened: str) -> ChunkResult:
    """Write the close watermark of the window ``request`` opened at ``opened`` (its metadata: the request's
    correlation id and data collection, as the open one's); an empty result. Raises ``SourceError`` when it
    could not be written (the session is retried)."""
    close = {"openWindowTimestamp": opened, "closeWindowTimestamp": notes.java_instant(time.time()),
             "correlationId": request.correlation_id, "dataCollectionId": request.data_collection}
    chunks.write_marker(request.chunk_id, False, close)
    return ChunkResult()


def _select(chunks: ChunkReader, table: ChunkTable, request: ChunkRequest) -> ChunkResult:
    """The chunk query with the visibility of its snapshot (``signaller.snapshot.visibility``)."""
    streaming = getattr(chunks, "read_chunk_streaming", None)
    if request.first_fetch is None or streaming is None:
        rows, visible = chunks.read_chunk_seen(table, request.lower, request.upper, request.limit)
        return ChunkResult(rows, None, visible)
    rows, rest, visible = streaming(table, request.lower, request.upper, request.limit, request.first_fetch)
    return ChunkResult(rows, rest, visible)


def fetch_rest(rest: ChunkRest, count: int) -> RestSlice:
    """The next ``count`` rows at most of a streamed chunk; its failure is the slice's ``error``, except an
    :func:`interrupted` one, raised as ``TransientSourceError`` (:func:`retry_if_interrupted`)."""
    try:
        return RestSlice(rest.fetch(count), count)
    except (ChunkQueryError, SourceError) as exc:
        retry_if_interrupted(exc, "fetching the rest of a chunk")
        return RestSlice([], count, exc)


def interrupted(error: ChunkQueryError | SourceError) -> bool:
    """Whether a snapshot read failed because it was interrupted (``ChunkReadInterrupted``, or a transient
    ``SourceError`` such as a connection that could not be opened), not because the database refused it."""
    return isinstance(error, ChunkReadInterrupted) or (isinstance(error, SourceError) and is_transient(error))


def retry_if_interrupted(error: ChunkQueryError | SourceError, doing: str) -> None:
    """Raise ``TransientSourceError`` (naming ``doing``, caused by ``error``) when ``error`` is
    :func:`interrupted`: the capture session is then retried with backoff, and the snapshot goes on from its
    stored last key, reading the chunk again, as after a restart. A table must not end ``SQL_EXCEPTION``
    because the database restarted under its read. Returns when the database refused the read (the caller
    ends the table ``SQL_EXCEPTION``)."""
    if interrupted(error):
        msg = (f"incremental snapshot interrupted while {doing}: {error}; the capture session is retried and the "
               "snapshot goes on from its last stored key")
        raise TransientSourceError(msg) from error
