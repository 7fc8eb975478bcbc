"""PostgreSQL's watermark-mode chunk reads report what their snapshot saw (``read_chunk_seen``,
``read_chunk_streaming``): a transaction committed before the read is seen, one in progress during it is
not (even once it commits), and no read leaves its transaction open."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest

from devtools.settings import StackSettings
from signaller.sources.base import ChunkTable
from signaller.sources.postgres.chunks import PostgresChunkReader

pytestmark = pytest.mark.integration


@pytest.fixture
def sql(stack: StackSettings, unique_name: str) -> Iterator[Any]:
    conn = psycopg2.connect(stack.pg_dsn())
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute(f"CREATE TABLE vis_{unique_name} (id int PRIMARY KEY)")
    try:
        yield cur
    finally:
        cur.execute(f"DROP TABLE IF EXISTS vis_{unique_name}")
        conn.close()


def _xid(cur: Any) -> int:
    cur.execute("SELECT txid_current()")
    return int(cur.fetchone()[0]) & 0xFFFFFFFF  # as the stream numbers it (32 bits)


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streaming"])
def test_watermark_chunks_report_what_their_snapshot_saw(stack: StackSettings, sql: Any, unique_name: str,
                                                         streaming: bool) -> None:
    table = ChunkTable("public", f"vis_{unique_name}", ("id",), (("id", "integer"),))
    sql.execute("BEGIN")
    sql.execute(f"INSERT INTO vis_{unique_name} VALUES (1)")
    committed = _xid(sql)
    sql.execute("COMMIT")
    running = psycopg2.connect(stack.pg_dsn())
    reader = PostgresChunkReader(stack.pg_dsn(), None, "insert_insert")
    try:
        with running.cursor() as other:
            other.execute(f"INSERT INTO vis_{unique_name} VALUES (2)")
            in_progress = _xid(other)
            if streaming:
                rows, rest, visible = reader.read_chunk_streaming(table, None, None, 10, 5)
                assert rest is None
            else:
                rows, visible = reader.read_chunk_seen(table, None, None, 10)
        running.commit()
        assert rows == [("1", "1")]
        assert visible.sees(committed)
        assert not visible.sees(in_progress), "a transaction running during the read was not seen"
        assert reader.read_chunk_seen(table, None, None, 10)[0] == [("1", "1"), ("2", "2")]
        assert reader.read_chunk_streaming(table, None, None, 10, 5)[0] == [("1", "1"), ("2", "2")]
    finally:
        reader.close()
        running.close()
