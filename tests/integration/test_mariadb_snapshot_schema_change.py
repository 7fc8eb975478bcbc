"""A MariaDB table altered mid-snapshot: every READ after the ALTER carries the table's columns as of its read
(real MariaDB and Kafka; the PostgreSQL counterpart is ``test_snapshot_schema_change.py``).

Without the check an incremental snapshot described its table once, so after ``ALTER TABLE ADD COLUMN``
every later chunk still selected the old columns: an UPDATE setting the new column, streamed before the
chunk's window opened, was followed by that chunk's READ without the column, the key's last event. A DROP
COLUMN made the next chunk query fail (1054: the table ended ``SQL_EXCEPTION``). The snapshot here (one row
per chunk) is paused mid-table, the table altered, every row updated (the stream passes the updates), the
snapshot resumed: every READ after the pause has the new columns, the table is scanned to the end
(``SUCCEEDED``) and the topic's last event per key equals the table. A direct test checks the chunk reader:
each of its consistent-snapshot reads refuses a stale description (``ChunkSchemaChanged``), holds the table's
metadata lock until its transaction ends, and leaves its connections usable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest

from devtools import StackSettings
from signaller.config import load_config
from signaller.model import TableId
from signaller.sources.base import ChunkSchemaChanged, ChunkTable
from signaller.sources.mariadb.chunks import MariaDbChunkReader
from signaller.sources.mariadb.connection import Endpoint
from signaller.sources.mariadb.schemas import MariaDbSchemaProvider
from tests.integration.capture_helpers import Record
from tests.integration.mariadb_helpers import MariaEnv
from tests.integration.schema_change_checks import check_reads_after_alter
from tests.integration.snapshot_helpers import start
from tests.integration.test_mariadb_snapshot import (
    TIMEOUT_S,
    notifications,
    signal_table,
    snapshot_config,
    wait_notification,
)

pytestmark = pytest.mark.integration

ROWS = 100
CHANGES = {
    "add": ("ALTER TABLE `{t}` ADD COLUMN extra VARCHAR(32)", "UPDATE `{t}` SET n = n + 1, extra = CONCAT('x', id)"),
    "drop": ("ALTER TABLE `{t}` DROP COLUMN gone", "UPDATE `{t}` SET n = n + 1"),
}
REQUIRED = {"SIGNALLER_TOPIC_PREFIX": "m1", "SIGNALLER_DATABASE_HOSTNAME": "127.0.0.1",
            "SIGNALLER_DATABASE_USER": "u", "SIGNALLER_DATABASE_DBNAME": "d", "SIGNALLER_SLOT_NAME": "s"}


@pytest.fixture
def env(stack: StackSettings, mariadb: Any, unique_name: str, tmp_path: Path) -> Iterator[MariaEnv]:
    environment = MariaEnv(stack, mariadb, unique_name, tmp_path)
    try:
        yield environment
    finally:
        environment.close()



def _new(records: list[Record], before: int, op: str) -> list[dict[str, Any]]:
    return [r.payload["after"] for r in records[before:] if not r.tombstone and r.payload["op"] == op]


@pytest.mark.parametrize(("change", "read_only"), [("add", False), ("add", True), ("drop", False)],
                         ids=["add-column", "add-column-read-only", "drop-column"])
def test_reads_after_an_alter_mid_snapshot_carry_the_new_columns(env: MariaEnv, change: str, read_only: bool) -> None:
    env.create_table("id INT PRIMARY KEY, n INT NOT NULL, val VARCHAR(32), gone VARCHAR(32)")
    env.sql(f"INSERT INTO `{env.table}` SELECT seq, 0, CONCAT('v', seq), CONCAT('g', seq) FROM seq_1_to_{ROWS}")
    signal = None if read_only else signal_table(env)
    car = env.sidecar(snapshot_config(env, [env.table], signal, chunk_size=1))
    api = start(car)
    notes = notifications(env)
    reader = env.reader()
    api.accepted("execute-snapshot", {"data-collections": [f"{env.db}\\.{env.table}"]}, "alter-1")
    # Paused at once, not after its first IN_PROGRESS notification (see the PostgreSQL test).
    api.accepted("pause-snapshot", {}, "alter-pause")
    wait_notification(notes, "PAUSED", car)
    reader.read_available(1.0)
    before = len(reader.records)

    alter, update = (statement.format(t=env.table) for statement in CHANGES[change])
    env.sql(alter)
    env.sql(update)
    reader.wait_for(lambda records: len(_new(records, before, "u")) >= ROWS, TIMEOUT_S,
                    "the updates to be streamed", describe=car.log_tail)  # before the rest of the table is read
    api.accepted("resume-snapshot", {}, "alter-resume")
    wait_notification(notes, "COMPLETED", car)
    api.wait_idle(TIMEOUT_S)
    reader.read_available(2.0)

    scans = [r.payload["additional_data"] for r in notes.records if r.payload["type"] == "TABLE_SCAN_COMPLETED"]
    assert [s["status"] for s in scans] == ["SUCCEEDED"], f"{scans}\n{car.log_tail()}"
    records = reader.records
    later_reads = _new(records, before, "r")
    with env.conn.cursor() as cur:
        cur.execute(f"SELECT * FROM `{env.table}`")
        names = [d[0] for d in cur.description]
        expected = {row[0]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}
    expected_columns = {"id", "n", "val"} | ({"gone", "extra"} if change == "add" else set())
    check_reads_after_alter(records, later_reads, ROWS, expected_columns, expected, car.log_tail)
    assert car.alive(), car.log_tail()


def _alter_waits(env: MariaEnv, statement: str) -> bool:
    """Whether ``statement`` (an ALTER) times out waiting for a metadata lock (``lock_wait_timeout`` 1 s)."""
    conn = pymysql.connect(host="127.0.0.1", port=env.stack.mariadb_port, user=env.stack.mariadb_user,
                           password=env.stack.mariadb_password, database=env.db, autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION lock_wait_timeout = 1")
            try:
                cur.execute(statement)
            except pymysql.err.OperationalError as exc:
                assert exc.args[0] == 1205, exc
                return True
        return False
    finally:
        conn.close()


def test_the_chunk_reads_refuse_a_stale_description_and_hold_the_table(env: MariaEnv) -> None:
    table = env.create_table("id INT PRIMARY KEY, val VARCHAR(32)")
    env.sql(f"INSERT INTO `{table}` VALUES (1, 'v1'), (2, 'v2'), (3, 'v3')")
    endpoint = Endpoint("127.0.0.1", env.stack.mariadb_port, env.stack.mariadb_user, env.stack.mariadb_password)
    provider: MariaDbSchemaProvider[Any] = MariaDbSchemaProvider(endpoint, load_config(None, REQUIRED).capture,
                                                                 lambda event, info: (event, info))
    signal = signal_table(env)
    reader = MariaDbChunkReader(endpoint, TableId(env.db, signal), "insert_insert")
    try:
        def described() -> ChunkTable:
            info = provider.describe(TableId(env.db, table))
            assert info is not None and info.schema_version is not None
            return ChunkTable(env.db, table, tuple(info.sql_types), (("id", "int(11)"),), None, info.schema_version)

        old = described()
        assert described() == old, "the schema version is stable while the table is unchanged"
        assert reader.read_chunk_seen(old, None, None, 2)[0] == [("1", "v1", "1"), ("2", "v2", "2")]

        rows, rest, _ = reader.read_chunk_streaming(old, None, None, 3, 1)
        assert rows == [("1", "v1", "1")] and rest is not None
        assert _alter_waits(env, f"ALTER TABLE `{table}` ADD COLUMN extra VARCHAR(32)"), \
            "an ALTER must wait for the metadata lock of an open chunk read"
        rest.close()
        assert not _alter_waits(env, f"ALTER TABLE `{table}` ADD COLUMN extra VARCHAR(32)")

        new = described()
        assert new.schema_version != old.schema_version and new.columns == ("id", "val", "extra")

        def streamed(chunk: ChunkTable) -> list[Any]:
            rows, rest, _ = reader.read_chunk_streaming(chunk, None, None, 2, 1)
            assert rest is not None
            rest.close()
            return rows

        for index, read in enumerate((lambda t: reader.read_chunk_seen(t, None, None, 2)[0],
                                      lambda t: reader.read_chunk_visible(t, None, None, 2)[0], streamed)):
            with pytest.raises(ChunkSchemaChanged):
                read(old)
            reader.write_marker(f"stale-chunk-{index}", True, {})  # the connection is not left inside the failed read
            assert read(new)[0] == ("1", "v1", None, "1")

        unknown = ChunkTable(env.db, table, ("id", "nope"), (("id", "int(11)"),), None, new.schema_version)
        with pytest.raises(ChunkSchemaChanged):  # a column the server refuses (1054) is a changed table too
            reader.read_chunk_seen(unknown, None, None, 2)
        env.sql(f"ALTER TABLE `{table}` MODIFY val VARCHAR(40)")
        assert described().schema_version != new.schema_version, "a type change changes the version"
        changed = described()
        env.sql(f"ALTER TABLE `{table}` MODIFY val VARCHAR(40) NOT NULL")
        assert described().schema_version != changed.schema_version, "a nullability change changes the version"
    finally:
        reader.close()
        provider.close()
