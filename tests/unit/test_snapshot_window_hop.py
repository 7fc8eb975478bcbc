"""Debezium's window semantics across tables: a chunk that comes back empty does not close its window.

Debezium's ``readChunk`` (and signaller before the chunk reads moved to a worker) finishes a table
whose chunk is empty and reads the next queued table's first chunk inside the same window: the open
and close markers keep the first table's ``dataCollectionId``, and the signal table gets no extra
open/close pair per table. These tests drive ``IncrementalSnapshotter`` over a fake chunk reader of
two tables (the capture loop's part: markers streamed back in order, READs emitted after the close
marker) and compare the database work, in order, with what Debezium writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from signaller.config import config_from_mapping
from signaller.model import ChangeEvent, Op, TableId
from signaller.signals.filters import compile_filter
from signaller.signals.model import ExecuteSnapshot, Signal, WindowMarker
from signaller.snapshot import notifications as notes
from signaller.snapshot.engine import IncrementalSnapshotter
from signaller.snapshot.reading import InlineReads
from signaller.snapshot.state import Key
from signaller.sources.base import ChunkTable
from signaller.sources.postgres.catalog import PostgresTableInfo
from signaller.sources.postgres.pgoutput import Relation, RelationColumn
from signaller.sources.postgres.reader import Change, make_plan, modes_of, row_from_tuple
from signaller.sources.postgres.relations import RelationCache
from signaller.sources.postgres.schemas import PostgresSchemaProvider

pytestmark = pytest.mark.unit

INT4, TEXT = 23, 25
TABLES = {TableId("public", "a"): 16384, TableId("public", "b"): 16385}
SIGNAL_TABLE = TableId("public", "sig")


def _relation(table: TableId) -> Relation:
    return Relation(TABLES[table], table.schema, table.table, "d",
                    (RelationColumn(1, "id", INT4, -1), RelationColumn(0, "val", TEXT, -1)))


class TwoTables:
    """The chunk reader and catalog of two tables ``id integer primary key, val text``; records the database
    work in order: ``("open"|"close", chunk id, dataCollectionId)`` and ``("read", table, rows)``."""

    def __init__(self, rows: dict[TableId, list[int]]) -> None:
        self.rows = rows
        self.work: list[tuple[str, str, Any]] = []
        self.markers: list[WindowMarker] = []

    def tables(self) -> list[TableId]:
        return [*TABLES, SIGNAL_TABLE]

    def describe_table(self, table: TableId) -> PostgresTableInfo | None:
        if table not in TABLES:
            return None
        return PostgresTableInfo(table_id=table, oid=TABLES[table], relation=_relation(table),
                                 sql_types={"id": "integer", "val": "text"}, not_null=frozenset({"id"}),
                                 primary_key=("id",), unique_columns=frozenset({"id"}), estimated_rows=None)

    def _keys(self, chunk: ChunkTable) -> list[int]:
        return sorted(self.rows[TableId(chunk.schema, chunk.name)])

    def max_key(self, chunk: ChunkTable) -> Key | None:
        keys = self._keys(chunk)
        return (str(keys[-1]),) if keys else None

    def count_rows(self, chunk: ChunkTable, upper: Key) -> int:
        return len(self._keys(chunk))

    def read_chunk(self, chunk: ChunkTable, lower: Key | None, upper: Key | None,
                   limit: int) -> list[tuple[str | None, ...]]:
        low, high = (-1 if lower is None else int(lower[0])), (1 << 30 if upper is None else int(upper[0]))
        keys = [k for k in self._keys(chunk) if low < k <= high][:limit]
        opens = sum(1 for done, _, _ in self.work if done == "open")
        assert opens == 1 + sum(1 for done, _, _ in self.work if done == "close"), "chunk read outside a window"
        self.work.append(("read", chunk.name, keys))
        return [(str(k), f"{chunk.name}{k}", str(k)) for k in keys]

    def read_chunk_seen(self, chunk: ChunkTable, lower: Key | None, upper: Key | None,
                        limit: int) -> tuple[list[tuple[str | None, ...]], None]:
        return self.read_chunk(chunk, lower, upper, limit), None  # as a reader whose log holds only visible commits

    def write_marker(self, chunk_id: str, is_open: bool, metadata: dict[str, Any]) -> None:
        kind = "open" if is_open else "close"
        opens = sum(1 for done, _, _ in self.work if done == "open")
        closes = sum(1 for done, _, _ in self.work if done == "close")
        assert opens - closes == (0 if is_open else 1), "markers must alternate open, close"
        self.work.append((kind, chunk_id, metadata["dataCollectionId"]))
        self.markers.append(WindowMarker(f"{chunk_id}-{kind}", is_open, metadata))


class HeldReads:
    """The runtime's worker as the loop sees it: the work runs when submitted, its result is taken once
    ``release`` said so (the loop streams meanwhile)."""

    def __init__(self) -> None:
        self.released = True

    def submit(self, work: Callable[[], Any]) -> Any:
        done, reads = InlineReads().submit(work), self

        class _Held:
            def done(self) -> bool:
                return reads.released

            def result(self) -> Any:
                return done.result()

        return _Held()

    def close(self) -> None:
        pass


class Loop:
    """The capture loop's part: markers come back in order, READs go out after the close marker."""

    def __init__(self, source: TwoTables, reads: Any = None, chunk_size: int = 2) -> None:
        self.config = config_from_mapping({
            "database.hostname": "localhost", "database.user": "u", "database.dbname": "d", "topic.prefix": "hop",
            "kafka.bootstrap.servers": "localhost:9092", "table.include.list": "public.a,public.b,public.sig",
            "signal.data.collection": "public.sig", "incremental.snapshot.chunk.size": str(chunk_size),
        }, env={})
        self.source = source
        self.reads_out: list[tuple[str, int, str]] = []
        self.notes: list[notes.Notification] = []
        schemas = PostgresSchemaProvider(self.config, source, RelationCache())
        self.engine = IncrementalSnapshotter(self.config.snapshot, self.config.capture, self.config.topics.prefix,
                                             source, schemas, self._emit, self.notes.append, compile_filter,
                                             reads=reads)
        self.streamed = 0

    def _emit(self, change: Change) -> None:
        event = change.event
        assert event.op is Op.READ and event.after is not None
        marker = self.source.markers[self.streamed - 1]
        self.reads_out.append((event.table.table, event.after["id"], marker.signal_id))

    def start(self) -> None:
        outcome = self.engine.apply(Signal("s1", "execute-snapshot", {}, "http"),
                                    ExecuteSnapshot("s1", ("public\\.a", "public\\.b")))
        assert outcome.accepted, outcome.reason

    def stream_markers(self) -> None:
        while self.streamed < len(self.source.markers):
            marker = self.source.markers[self.streamed]
            self.streamed += 1
            self.engine.on_marker(marker, (self.streamed, self.streamed))

    def step(self) -> None:
        engine = self.engine
        if engine.wants_chunk:
            engine.read_chunk()
        if engine.reading or engine.fetching:
            engine.poll_reads()
        self.stream_markers()
        while engine.emitting:
            engine.emit_pending(100)

    def run(self) -> None:
        for _ in range(50):
            self.step()
            if not self.engine.state.running and not self.engine.reading:
                return
        raise AssertionError("the snapshot did not end")


def _windows(work: list[tuple[str, str, Any]]) -> list[list[tuple[str, Any]]]:
    """The database work per window: the open marker's data collection, then the reads, then the close's."""
    windows: list[list[tuple[str, Any]]] = []
    for kind, name, detail in work:
        if kind == "open":
            windows.append([("open", detail)])
        else:
            windows[-1].append((kind, detail if kind == "close" else (name, detail)))
    return windows


def test_an_empty_chunk_reads_the_next_tables_first_chunk_in_the_same_window() -> None:
    source = TwoTables({TableId("public", "a"): [1, 2], TableId("public", "b"): [5]})
    loop = Loop(source)
    loop.start()
    loop.run()
    assert _windows(source.work) == [
        [("open", "public.a"), ("read", ("a", [1, 2])), ("close", "public.a")],
        # a's last chunk is empty: b's first chunk is read in the same window, under a's markers (as Debezium)
        [("open", "public.a"), ("read", ("a", [])), ("read", ("b", [5])), ("close", "public.a")],
        [("open", "public.b"), ("read", ("b", [])), ("close", "public.b")],
    ]
    chunk_ids = [name for kind, name, _ in source.work if kind == "open"]
    assert loop.reads_out == [("a", 1, f"{chunk_ids[0]}-close"), ("a", 2, f"{chunk_ids[0]}-close"),
                              ("b", 5, f"{chunk_ids[1]}-close")]
    scans = [(n.additional_data["scanned_collection"], n.additional_data["status"],
              n.additional_data["total_rows_scanned"]) for n in loop.notes if n.type == "TABLE_SCAN_COMPLETED"]
    assert scans == [("public.a", "SUCCEEDED", "2"), ("public.b", "SUCCEEDED", "1")]
    assert [n.type for n in loop.notes][-1] == "COMPLETED"
    assert not loop.engine.state.running


def test_tables_skipped_on_the_way_stay_in_the_window_and_the_last_empty_chunk_closes_it() -> None:
    source = TwoTables({TableId("public", "a"): [1], TableId("public", "b"): []})
    loop = Loop(source)
    loop.start()
    loop.run()
    assert _windows(source.work) == [
        [("open", "public.a"), ("read", ("a", [1])), ("close", "public.a")],
        # a is done, b has no row (EMPTY, from its max key): the window closes with nothing more read
        [("open", "public.a"), ("read", ("a", [])), ("close", "public.a")],
    ]
    scans = [(n.additional_data["scanned_collection"], n.additional_data["status"])
             for n in loop.notes if n.type == "TABLE_SCAN_COMPLETED"]
    assert scans == [("public.a", "SUCCEEDED"), ("public.b", "EMPTY")]
    assert not loop.engine.state.running and not loop.engine.reading


def test_a_change_of_the_next_table_streamed_after_the_open_marker_supersedes_its_read() -> None:
    """With the read on a worker, the loop may stream the window's open marker and changes of the next table
    before it learns that the first table's chunk is empty: those changes still supersede the next table's rows
    (Debezium deduplicates every change between the markers against the chunk read in the window)."""
    a, b = TableId("public", "a"), TableId("public", "b")
    source = TwoTables({a: [1], b: [5, 6]})
    reads = HeldReads()
    loop = Loop(source, reads)
    loop.start()
    loop.step()  # window 1: a's row 1, emitted
    assert loop.reads_out == [("a", 1, f"{source.markers[1].signal_id}")]
    reads.released = False
    loop.step()  # window 2: the open marker is written, a's chunk read (empty); the loop has not seen the result
    assert source.work[-2:] == [("open", source.work[-2][1], "public.a"), ("read", "a", [])]
    loop.stream_markers()  # the open marker comes back: the window is open
    cache = RelationCache()
    cache.apply_relation(_relation(b))
    schema = cache.schema(TABLES[b])
    plan = make_plan(schema, ("id", "val"), loop.config.capture, modes_of(loop.config.types))
    after = row_from_tuple(plan, ("6", "b6 changed"))
    loop.engine.on_stream_change(Change.from_event(ChangeEvent(Op.UPDATE, b, None, after, 10, 10, 9, 900, 0), plan))
    reads.released = True
    loop.run()
    assert _windows(source.work)[1] == [("open", "public.a"), ("read", ("a", [])), ("read", ("b", [5, 6])),
                                        ("close", "public.a")]
    assert [(table, key) for table, key, _ in loop.reads_out] == [("a", 1), ("b", 5)]  # b's row 6 superseded


def test_a_head_skipped_before_its_first_chunk_still_names_the_window() -> None:
    """As Debezium's ``readChunk``: the window opens before the head table is prepared, so a head with no row
    (``EMPTY``) is skipped inside the window that reads the next table's first chunk, under the head's name."""
    source = TwoTables({TableId("public", "a"): [], TableId("public", "b"): [5]})
    loop = Loop(source)
    loop.start()
    loop.run()
    assert _windows(source.work) == [
        [("open", "public.a"), ("read", ("b", [5])), ("close", "public.a")],
        [("open", "public.b"), ("read", ("b", [])), ("close", "public.b")],
    ]
    assert [(table, key) for table, key, _ in loop.reads_out] == [("b", 5)]


def test_a_snapshot_whose_every_table_is_skipped_opens_and_closes_one_window() -> None:
    source = TwoTables({TableId("public", "a"): [], TableId("public", "b"): []})
    loop = Loop(source)
    loop.start()
    loop.run()
    assert _windows(source.work) == [[("open", "public.a"), ("close", "public.a")]]
    assert [n.type for n in loop.notes].count("TABLE_SCAN_COMPLETED") == 2
    assert not loop.engine.state.running and not loop.engine.reading
