"""A streamed chunk's rest is fetched at the engine's ``fetch_pace``, which the runtime may change between calls.

The engine reads a chunk larger than ``FIRST_FETCH`` through the reader's server-side cursor: ``FIRST_FETCH``
rows before the close watermark, the rest in slices (``fetch_rest``) of ``fetch_pace.rows``, the next one
started while fewer than ``fetch_pace.ahead`` rows wait. A slice with fewer rows than asked completes the
chunk. These tests drive ``IncrementalSnapshotter`` over a fake reader that streams its chunks and record the
fetch sizes; every row must go out exactly once, in key order, whatever the pace and wherever it changes.
"""

from __future__ import annotations

from typing import Any

import pytest

from signaller.model import TableId
from signaller.snapshot.engine import DEFAULT_FETCH_PACE, FIRST_FETCH
from signaller.snapshot.reading import FetchPace
from signaller.snapshot.state import Key
from signaller.sources.base import ChunkTable
from tests.unit.test_snapshot_window_hop import Loop, TwoTables

pytestmark = pytest.mark.unit

A, B = TableId("public", "a"), TableId("public", "b")


class _Rest:
    def __init__(self, rows: list[tuple[str | None, ...]], fetches: list[tuple[str, int]]) -> None:
        self.rows = rows
        self.fetches = fetches

    def fetch(self, count: int) -> list[tuple[str | None, ...]]:
        self.fetches.append(("rest", count))
        taken, self.rows = self.rows[:count], self.rows[count:]
        return taken

    def close(self) -> None:
        self.rows = []


class StreamedTables(TwoTables):
    """:class:`TwoTables` whose reader streams chunks (as PostgreSQL's server-side cursor does); records each
    fetch: ``("first", n)`` with the chunk query, ``("rest", n)`` for each slice after it."""

    def __init__(self, rows: dict[TableId, list[int]]) -> None:
        super().__init__(rows)
        self.fetches: list[tuple[str, int]] = []

    def read_chunk_streaming(self, chunk: ChunkTable, lower: Key | None, upper: Key | None, limit: int,
                             first: int) -> tuple[list[tuple[str | None, ...]], _Rest | None, None]:
        rows = self.read_chunk(chunk, lower, upper, limit)
        self.fetches.append(("first", first))
        head, tail = rows[:first], rows[first:]
        if len(head) < first:
            return head, None, None
        return head, _Rest(tail, self.fetches), None


def _run(source: StreamedTables, loop: Loop, pace_at_step: dict[int, FetchPace]) -> None:
    loop.start()
    for step in range(200):
        if step in pace_at_step:
            loop.engine.fetch_pace = pace_at_step[step]
        loop.step()
        if not loop.engine.state.running and not loop.engine.reading:
            return
    raise AssertionError("the snapshot did not end")


def _ids(loop: Loop, table: str) -> list[Any]:
    return [row_id for name, row_id, _ in loop.reads_out if name == table]


def test_the_rest_of_a_chunk_comes_in_slices_of_the_default_pace() -> None:
    source = StreamedTables({A: list(range(1, 3001)), B: [7]})
    loop = Loop(source, chunk_size=2500)
    _run(source, loop, {})
    assert _ids(loop, "a") == list(range(1, 3001)) and _ids(loop, "b") == [7]
    assert FetchPace(rows=1024, ahead=2048) == DEFAULT_FETCH_PACE and FIRST_FETCH == 1024
    # chunk 1 of a: 2,500 rows = 1,024 + 1,024 + 452 (fewer than asked: complete); chunk 2: 500 rows at once
    assert source.fetches[:4] == [("first", 1024), ("rest", 1024), ("rest", 1024), ("first", 1024)]


def test_a_pace_changed_mid_chunk_applies_from_the_next_slice() -> None:
    source = StreamedTables({A: list(range(1, 6001)), B: [7]})
    loop = Loop(source, chunk_size=5000)
    _run(source, loop, {1: FetchPace(rows=600, ahead=600), 3: FetchPace(rows=4096, ahead=8192)})
    assert _ids(loop, "a") == list(range(1, 6001)) and _ids(loop, "b") == [7]
    rest = [count for kind, count in source.fetches[:source.fetches.index(("first", 1024), 1)] if kind == "rest"]
    # step 0 read the chunk (its first 1,024 rows) and fetched a slice at the default pace; steps 1-2 fetched
    # 600 rows each; step 3 asked 4,096 and got the 1,752 left (fewer: complete)
    assert rest == [1024, 600, 600, 4096]


def test_a_rest_that_ends_on_a_slice_boundary_is_completed_by_an_empty_slice() -> None:
    rows = 1024 + 3 * 500
    source = StreamedTables({A: list(range(1, rows + 1)), B: [7]})
    loop = Loop(source, chunk_size=5000)
    _run(source, loop, {0: FetchPace(rows=500, ahead=1)})
    assert _ids(loop, "a") == list(range(1, rows + 1)) and _ids(loop, "b") == [7]
    assert source.fetches[:5] == [("first", 1024), ("rest", 500), ("rest", 500), ("rest", 500), ("rest", 500)]
    finished = [n.additional_data for n in loop.notes if n.type == "TABLE_SCAN_COMPLETED"]
    assert [(d["scanned_collection"], d["status"], d["total_rows_scanned"]) for d in finished] == [
        ("public.a", "SUCCEEDED", str(rows)), ("public.b", "SUCCEEDED", "1")]
