"""A chunk read whose connection the server ends is *interrupted*, not refused, on the real databases.

The engine ends a table ``SQL_EXCEPTION`` for a refused read and retries the capture session for an
interrupted one (``tests/unit/test_snapshot_interrupted_read.py``): this is where the two are told apart.
The server ends the chunk reader's connection (``pg_terminate_backend``, MariaDB's ``KILL``), as a
restart does: the next read raises ``ChunkReadInterrupted`` (the whole chunk, the read-only chunk, and a
streamed chunk's rest), ``read_window`` turns that into ``TransientSourceError``, and the read after that
connects again and reads the chunk. A query the server refuses stays a plain ``ChunkQueryError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg2
import pytest

from devtools.settings import StackSettings
from signaller.errors import TransientSourceError
from signaller.model import TableId
from signaller.snapshot.reading import ChunkRequest, fetch_rest, read_window
from signaller.sources.base import ChunkQueryError, ChunkReadInterrupted, ChunkTable
from signaller.sources.mariadb.chunks import MariaDbChunkReader
from signaller.sources.mariadb.connection import Endpoint, connect
from signaller.sources.postgres.chunks import PostgresChunkReader

pytestmark = pytest.mark.integration
ROWS = 50
EXPECTED = [(str(i), str(i * 10), str(i)) for i in range(1, 11)]


@pytest.fixture
def pg(stack: StackSettings, unique_name: str) -> Iterator[tuple[Any, PostgresChunkReader, ChunkTable]]:
    conn = psycopg2.connect(stack.pg_dsn())
    conn.autocommit = True
    cur = conn.cursor()
    name = f"intr_{unique_name}"
    cur.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, n int)")
    cur.execute(f"INSERT INTO {name} SELECT i, i * 10 FROM generate_series(1, {ROWS}) i")
    reader = PostgresChunkReader(stack.pg_dsn(), None, "insert_insert")
    try:
        yield cur, reader, ChunkTable("public", name, ("id", "n"), (("id", "integer"),))
    finally:
        reader.close()
        cur.execute(f"DROP TABLE IF EXISTS {name}")
        conn.close()


def _pg_end_readers(cur: Any, reader: PostgresChunkReader) -> int:
    """End the reader's sessions (by backend pid: an idle session shows its last statement only), as a server
    restart would, waiting until they are gone; how many were ended."""
    pids = [conn.get_backend_pid() for conn in (reader._conn, reader._cursor_conn) if conn is not None]
    cur.execute("SELECT count(pg_terminate_backend(pid, 5000)) FROM unnest(%s::int[]) pid", (pids,))
    return int(cur.fetchone()[0])


PG_READS: dict[str, Callable[[Any, ChunkTable], Any]] = {
    "seen": lambda reader, table: reader.read_chunk_seen(table, None, None, 10)[0],
    "visible": lambda reader, table: reader.read_chunk_visible(table, None, None, 10)[0],
    "max_key": lambda reader, table: reader.max_key(table),
}


@pytest.mark.parametrize("read", sorted(PG_READS))
def test_postgres_read_on_an_ended_connection_is_interrupted_then_connects_again(
        pg: tuple[Any, PostgresChunkReader, ChunkTable], read: str) -> None:
    cur, reader, table = pg
    first = PG_READS[read](reader, table)
    assert _pg_end_readers(cur, reader) >= 1
    with pytest.raises(ChunkReadInterrupted, match=table.name):
        PG_READS[read](reader, table)
    assert PG_READS[read](reader, table) == first, "the read after the interruption connects again"


def test_postgres_streamed_rest_on_an_ended_connection_is_interrupted(
        pg: tuple[Any, PostgresChunkReader, ChunkTable]) -> None:
    cur, reader, table = pg
    rows, rest, _ = reader.read_chunk_streaming(table, None, None, ROWS, 5)
    assert len(rows) == 5 and rest is not None
    assert _pg_end_readers(cur, reader) >= 1
    with pytest.raises(TransientSourceError, match="interrupted while fetching the rest of a chunk"):
        fetch_rest(rest, 10)
    assert reader.read_chunk_streaming(table, None, None, 10, 20)[0][:10] == EXPECTED


def _request(table: ChunkTable, read_only: bool) -> ChunkRequest:
    return ChunkRequest("c1", table, None, None, 10, read_only, None, None, str(TableId(table.schema, table.name)))


def test_postgres_read_window_retries_an_interrupted_read_and_ends_a_refused_one(
        pg: tuple[Any, PostgresChunkReader, ChunkTable]) -> None:
    cur, reader, table = pg
    assert read_window(reader, _request(table, read_only=True)).rows == EXPECTED
    _pg_end_readers(cur, reader)
    with pytest.raises(TransientSourceError, match=f"interrupted while reading a chunk of public.{table.name}"):
        read_window(reader, _request(table, read_only=True))
    refused = read_window(reader, _request(ChunkTable("public", table.name, ("id", "no_such_column"),
                                                      (("id", "integer"),)), read_only=True))
    assert isinstance(refused.error, ChunkQueryError) and not isinstance(refused.error, ChunkReadInterrupted)
    assert "no_such_column" in str(refused.error)
    assert read_window(reader, _request(table, read_only=True)).rows == EXPECTED


@pytest.fixture
def maria(stack: StackSettings, unique_name: str) -> Iterator[tuple[Any, MariaDbChunkReader, ChunkTable]]:
    endpoint = Endpoint("127.0.0.1", stack.mariadb_port, stack.mariadb_user, stack.mariadb_password,
                        stack.mariadb_db)
    conn = connect(endpoint, "testing")
    cur = conn.cursor()
    name = f"intr_{unique_name}"
    cur.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, n int)")
    cur.execute(f"INSERT INTO {name} SELECT seq, seq * 10 FROM seq_1_to_{ROWS}")
    reader = MariaDbChunkReader(endpoint, None, "insert_insert")
    try:
        yield cur, reader, ChunkTable(stack.mariadb_db, name, ("id", "n"), (("id", "int(11)"),))
    finally:
        reader.close()
        cur.execute(f"DROP TABLE IF EXISTS {name}")
        conn.close()


def _maria_end_reader(cur: Any, reader: MariaDbChunkReader) -> None:
    """``KILL`` the reader's connection (by its thread id: MariaDB shows no last statement of an idle session)."""
    cur.execute(f"KILL {int(reader._conn.thread_id())}")


def test_mariadb_read_on_a_killed_connection_is_interrupted_then_connects_again(
        maria: tuple[Any, MariaDbChunkReader, ChunkTable]) -> None:
    cur, reader, table = maria
    assert reader.read_chunk_seen(table, None, None, 10)[0] == EXPECTED
    _maria_end_reader(cur, reader)
    with pytest.raises(ChunkReadInterrupted, match=table.name):
        reader.read_chunk_seen(table, None, None, 10)
    assert reader.read_chunk_seen(table, None, None, 10)[0] == EXPECTED, "the next read connects again"
    refused = ChunkTable(table.schema, table.name, ("id", "no_such_column"), (("id", "int(11)"),))
    with pytest.raises(ChunkQueryError, match="no_such_column") as caught:
        reader.read_chunk_seen(refused, None, None, 10)
    assert not isinstance(caught.value, ChunkReadInterrupted)
