"""A snapshot read interrupted by the database (connection lost, server restarting) never ends its table.

The quick chaos run in ``make test`` failed once with a table scan ``SQL_EXCEPTION``: PostgreSQL restarted
(``pg_ctl restart -m immediate``) under a chunk read, and the engine ended the table as if the query had
been refused, so that snapshot's remaining rows were never read. A read the database *refused* (a bad
filter, a missing column) still ends the table ``SQL_EXCEPTION``; a read that was *interrupted*
(``ChunkReadInterrupted``, or a transient ``SourceError`` from a connection that could not be opened) now
raises ``TransientSourceError`` out of ``poll_reads``: the runtime retries the capture session, whose new
engine goes on from the stored state and reads the chunk again. These tests drive the engine over the fake
two-table reader of ``test_snapshot_window_hop`` whose reads fail once, at each place a read can fail.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from signaller.errors import TerminalSourceError, TransientSourceError
from signaller.model import TableId
from signaller.signals.model import ExecuteSnapshot, Signal
from signaller.snapshot import blocking
from signaller.snapshot.reading import InlineReads, interrupted
from signaller.snapshot.state import Key
from signaller.sources.base import ChunkQueryError, ChunkReadInterrupted, ChunkTable, chunk_query_error
from signaller.sources.postgres.catalog import PostgresTableInfo
from signaller.sources.postgres.reader import Change
from tests.unit.test_snapshot_window_hop import Loop, TwoTables
from tests.unit.test_snapshot_window_property import _BlockingSource, _scripted, blocking_engine
from tests.unit.test_snapshot_window_property import _scans as _sim_scans

pytestmark = pytest.mark.unit

A = TableId("public", "a")
KEYS = [1, 2, 3, 4, 5]


class FailingOnce(TwoTables):
    """Table ``a`` (``b`` empty) whose ``failing`` call raises ``error`` once: ``describe`` (the second
    description of ``a``: the first checks the signal), ``max_key`` or ``chunk`` (the second chunk read of ``a``)."""

    def __init__(self, failing: str, error: Exception) -> None:
        super().__init__({A: list(KEYS), TableId("public", "b"): []})
        self.failing, self.error, self.chunk_reads, self.descriptions = failing, error, 0, 0

    def _fail(self, call: str) -> None:
        if call == self.failing and self.error is not None:
            error, self.error = self.error, None  # type: ignore[assignment]
            raise error

    def describe_table(self, table: TableId) -> PostgresTableInfo | None:
        if table == A:
            self.descriptions += 1
            if self.descriptions == 2:
                self._fail("describe")
        return super().describe_table(table)

    def max_key(self, chunk: ChunkTable) -> Key | None:
        if chunk.name == "a":
            self._fail("max_key")
        return super().max_key(chunk)

    def read_chunk_seen(self, chunk: ChunkTable, lower: Key | None, upper: Key | None,
                        limit: int) -> tuple[list[tuple[str | None, ...]], None]:
        if chunk.name == "a":
            self.chunk_reads += 1
            if self.chunk_reads == 2:
                self._fail("chunk")
        return super().read_chunk_seen(chunk, lower, upper, limit)


def _scans(loop: Loop) -> list[tuple[str, str, str]]:
    return [(n.additional_data["scanned_collection"], n.additional_data["status"],
             n.additional_data["total_rows_scanned"]) for n in loop.notes if n.type == "TABLE_SCAN_COMPLETED"]


def _run_until_raised(loop: Loop) -> TransientSourceError:
    for _ in range(50):
        try:
            loop.step()
        except TransientSourceError as exc:
            return exc
    raise AssertionError("the interrupted read did not end the session")


LOST = "PostgreSQL error while reading a chunk of public.a: server closed the connection unexpectedly"
INTERRUPTIONS: dict[str, Callable[[], Exception]] = {
    "chunk": lambda: chunk_query_error(TransientSourceError(LOST)),
    "max_key": lambda: chunk_query_error(TransientSourceError(LOST)),
    "describe": lambda: TransientSourceError("cannot connect to PostgreSQL: the database system is starting up"),
}


@pytest.mark.parametrize("failing", sorted(INTERRUPTIONS))
def test_an_interrupted_read_retries_the_session_and_the_next_one_reads_every_row(failing: str) -> None:
    source = FailingOnce(failing, INTERRUPTIONS[failing]())
    first = Loop(source)
    first.start()
    raised = _run_until_raised(first)
    assert "interrupted" in str(raised) and ("server closed" in str(raised) or "starting up" in str(raised))
    assert not _scans(first), "the table must not be finished by an interrupted read"
    stored = first.engine.state
    assert stored.running and stored.queue[0].table == "public.a"
    emitted_before = [key for _, key, _ in first.reads_out]

    second = Loop(source)  # the retried session: a new engine from the stored state
    second.streamed = len(source.markers)  # the old session's markers are in the log already
    second.engine.restore(stored)
    second.run()
    emitted_after = [key for _, key, _ in second.reads_out]
    assert sorted(set(emitted_before + emitted_after)) == KEYS
    assert _scans(second)[0] == ("public.a", "SUCCEEDED", str(len(KEYS)))  # the rows of both sessions
    assert not second.engine.state.running


REFUSALS: dict[str, Callable[[], Exception]] = {
    "chunk": lambda: chunk_query_error(TerminalSourceError("PostgreSQL error while reading a chunk of public.a: "
                                                           "column \"val\" does not exist")),
    "max_key": lambda: chunk_query_error(TerminalSourceError("PostgreSQL error while reading the maximum key: "
                                                             "permission denied for table a")),
    "describe": lambda: TerminalSourceError("PostgreSQL error while describing public.a: permission denied"),
}


@pytest.mark.parametrize("failing", sorted(REFUSALS))
def test_a_refused_read_still_ends_its_table_sql_exception(failing: str) -> None:
    source = FailingOnce(failing, REFUSALS[failing]())
    loop = Loop(source)
    loop.start()
    loop.run()  # never raises: the table ends, the snapshot goes on
    assert _scans(loop)[0][:2] == ("public.a", "SQL_EXCEPTION")
    assert not loop.engine.state.running


def test_chunk_query_error_is_interrupted_only_for_a_transient_failure() -> None:
    lost = chunk_query_error(TransientSourceError("lost"), "reading a chunk of public.a")
    refused = chunk_query_error(TerminalSourceError("syntax error"))
    assert isinstance(lost, ChunkReadInterrupted) and str(lost) == "reading a chunk of public.a: lost"
    assert type(refused) is ChunkQueryError and str(refused) == "syntax error"
    assert interrupted(lost) and interrupted(TransientSourceError("cannot connect"))
    assert not interrupted(refused) and not interrupted(TerminalSourceError("permission denied"))


class HoldsTheFailingRead:
    """The runtime's read worker as the loop sees it: every read runs when submitted, and its result is ready at
    once, but the second chunk read of ``a`` (the one ``FailingOnce`` interrupts) stays in flight until it is
    waited for."""

    def __init__(self, source: FailingOnce) -> None:
        self.source = source

    def submit(self, work: Callable[[], Any]) -> Any:
        done, held = InlineReads().submit(work), self.source.chunk_reads >= 2

        class _Future:
            def done(self) -> bool:
                return not held

            def result(self) -> Any:
                return done.result()

        return _Future()

    def close(self) -> None:
        pass


def test_a_signal_that_waits_for_an_interrupted_read_retries_the_session_instead_of_being_rejected() -> None:
    """A blocking ``execute-snapshot`` waits for the incremental read in flight (the chunk reader is the blocking
    snapshot's alone while it runs). When that read was interrupted, the interruption propagates out of ``apply``
    (the runtime retries the session, which reads the signal again) instead of rejecting the signal with "could
    not check the signal against the database"; the table is not finished and the stored state goes on."""
    source = FailingOnce("chunk", INTERRUPTIONS["chunk"]())
    loop = Loop(source, reads=HoldsTheFailingRead(source))
    loop.start()
    for _ in range(50):
        if source.chunk_reads >= 2:
            break
        loop.step()
    assert source.chunk_reads == 2 and loop.engine.reading, "the interrupted read must be in flight"
    with pytest.raises(TransientSourceError, match="server closed the connection"):
        loop.engine.apply(Signal("b1", "execute-snapshot", {}, "kafka"),
                          ExecuteSnapshot("b1", ("public\\.b",), snapshot_type="blocking"))
    assert not _scans(loop) and not [n for n in loop.notes if n.type == "REJECTED"]
    assert loop.engine.state.running and loop.engine.state.queue[0].table == "public.a"


# -- blocking snapshots: an interrupted read is read again in place -------------------------------------------


class _InterruptedBlockingSource(_BlockingSource):
    """``_BlockingSource`` whose ``fail_at``-th chunk read raises ``make()`` ``times`` times before it answers."""

    def __init__(self, db: Any, fail_at: int, times: int, make: Callable[[], Exception]) -> None:
        super().__init__(db)
        self.fail_at, self.times, self.make, self.calls = fail_at, times, make, 0

    def read_chunk(self, chunk: ChunkTable, lower: Key | None, upper: Key | None,
                   limit: int) -> list[tuple[str | None, ...]]:
        self.calls += 1
        if self.calls >= self.fail_at and self.times > 0:
            self.times -= 1
            raise self.make()
        return super().read_chunk(chunk, lower, upper, limit)


def _blocking_run(source: _InterruptedBlockingSource, sim: Any,
                  sleep: Callable[[float], None]) -> list[int]:
    """A blocking snapshot of ``public.t`` (chunk size 4) through the engine; the keys emitted, in order."""
    emitted: list[int] = []

    def emit(change: Change) -> None:
        assert change.event.after is not None
        emitted.append(change.event.after["id"])

    engine = blocking_engine(source, emit, sim._notify)
    engine._blocking._sleep = sleep  # type: ignore[attr-defined]
    outcome = engine.apply(Signal("b1", "execute-snapshot", {}, "http"),
                           ExecuteSnapshot("b1", ("public\\.t",), "blocking"))
    assert outcome.accepted, outcome.reason
    return emitted


def test_a_blocking_snapshot_reads_an_interrupted_chunk_again_and_emits_every_row_once() -> None:
    """The second chunk's read is interrupted twice (PostgreSQL restarting): it is read again from the same key
    after 0.1 s and 0.2 s, and the table ends ``SUCCEEDED`` with every row once, in key order. It used to end
    ``SQL_EXCEPTION`` after the first chunk."""
    sim = _scripted("int", 10, 4)
    source = _InterruptedBlockingSource(sim.db, 2, 2, INTERRUPTIONS["chunk"])
    waits: list[float] = []
    assert _blocking_run(source, sim, waits.append) == list(range(10))
    assert waits == [0.1, 0.2]
    assert [(s["scanned_collection"], s["total_rows_scanned"], s["status"]) for s in _sim_scans(sim)] == [
        ("public.t", "10", "SUCCEEDED")]


def test_a_blocking_snapshot_ends_the_table_sql_exception_for_a_refused_read_and_a_lasting_interruption(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sim = _scripted("int", 10, 4)
    waits: list[float] = []
    refused = _InterruptedBlockingSource(sim.db, 2, 1, REFUSALS["chunk"])
    # A chunk is emitted once the next one was read (to flag a table's last row): none was.
    assert _blocking_run(refused, sim, waits.append) == []
    assert waits == [] and refused.calls == 2
    assert [(s["total_rows_scanned"], s["status"]) for s in _sim_scans(sim)] == [("0", "SQL_EXCEPTION")]

    monkeypatch.setattr(blocking, "INTERRUPTED_READ_RETRY_S", 0.35)
    sim = _scripted("int", 10, 4)
    lasting = _InterruptedBlockingSource(sim.db, 2, 1000, INTERRUPTIONS["chunk"])

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        time.sleep(seconds)

    assert _blocking_run(lasting, sim, sleep) == []
    assert waits == [0.1, 0.2] and lasting.calls == 4  # a third wait (0.4 s) would pass the 0.35 s budget
    assert [(s["total_rows_scanned"], s["status"]) for s in _sim_scans(sim)] == [("0", "SQL_EXCEPTION")]
