"""MariaDB DDL in the binlog (issue 16): rows logged before and after ``ALTER TABLE`` decode with the columns
they were written with (the sidecar follows the DDL statements, it does not re-read the catalog), a row
decoded after a restart uses the schema of its binlog position, and a DDL statement on a captured table that
the sidecar cannot follow stops it with an error naming the statement and its binlog position."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devtools import StackSettings
from tests.integration.capture_helpers import TopicReader, wait_until
from tests.integration.mariadb_helpers import MariaEnv

pytestmark = pytest.mark.integration

TIMEOUT_S = 60.0


@pytest.fixture
def env(stack: StackSettings, mariadb: Any, unique_name: str, tmp_path: Path) -> Iterator[MariaEnv]:
    environment = MariaEnv(stack, mariadb, unique_name, tmp_path)
    try:
        yield environment
    finally:
        environment.close()


def _value_fields(record: Any) -> list[str]:
    fields = record.value["schema"]["fields"]
    after = next(f for f in fields if f["field"] == "after")
    return [f["field"] for f in after["fields"]]


def test_rows_before_and_after_add_and_drop_column_decode_with_their_own_columns(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, a VARCHAR(10), b INT")
    car = env.start_streaming(env.sidecar())
    reader = env.reader()
    t = f"`{env.table}`"
    # Everything is written before the sidecar reads the rows of the first statement: the catalog then already
    # has the final columns, so only the DDL statements of the binlog can give each row its own columns.
    env.sql(f"INSERT INTO {t} VALUES (1, 'one', 10)",
            f"ALTER TABLE {t} ADD COLUMN c VARCHAR(5) NOT NULL DEFAULT '0' AFTER id",
            f"INSERT INTO {t} VALUES (2, '5', 'two', 20)",
            f"ALTER TABLE {t} DROP COLUMN b",
            f"INSERT INTO {t} VALUES (3, '6', 'three')",
            f"ALTER TABLE {t} CHANGE COLUMN a label VARCHAR(20), MODIFY COLUMN c INT NOT NULL DEFAULT 0",
            f"INSERT INTO {t} VALUES (4, 7, 'four')",
            f"ALTER TABLE {t} RENAME COLUMN label TO name",
            f"UPDATE {t} SET name = 'FOUR' WHERE id = 4")
    records = reader.wait_for_count(5, TIMEOUT_S, car.log_tail)
    assert [r.payload["after"] for r in records] == [
        {"id": 1, "a": "one", "b": 10},
        {"id": 2, "c": "5", "a": "two", "b": 20},
        {"id": 3, "c": "6", "a": "three"},
        {"id": 4, "c": 7, "label": "four"},
        {"id": 4, "c": 7, "name": "FOUR"},
    ]
    assert [_value_fields(r) for r in records] == [
        ["id", "a", "b"], ["id", "c", "a", "b"], ["id", "c", "a"], ["id", "c", "label"], ["id", "c", "name"]]
    assert records[4].payload["before"] == {"id": 4, "c": 7, "name": "four"}
    c_field = next(f for f in records[1].value["schema"]["fields"][1]["fields"] if f["field"] == "c")
    assert c_field == {"type": "string", "optional": False, "default": "0", "field": "c"}


def test_a_restart_after_ddl_decodes_the_rows_logged_before_it_with_the_old_columns(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, v INT")
    car = env.start_streaming(env.sidecar())
    reader = env.reader()
    t = f"`{env.table}`"
    env.sql(f"INSERT INTO {t} VALUES (1, 1)")
    reader.wait_for_count(1, TIMEOUT_S, car.log_tail)
    wait_until(lambda: (env.offsets_file.exists() and env.stored_offsets().get("pos")) or None, TIMEOUT_S,
               "offsets to be stored", describe=car.log_tail)
    assert car.stop() == 0
    env.sql(f"INSERT INTO {t} VALUES (2, 2)",  # logged while the sidecar is down, before the DDL
            f"ALTER TABLE {t} ADD COLUMN w VARCHAR(3)",
            f"INSERT INTO {t} VALUES (3, 3, 'new')")
    env.start_streaming(car)
    records = reader.wait_for_count(3, TIMEOUT_S, car.log_tail)
    assert [r.payload["after"] for r in records] == [
        {"id": 1, "v": 1}, {"id": 2, "v": 2}, {"id": 3, "v": 3, "w": "new"}]


def test_ddl_it_cannot_follow_on_a_captured_table_is_a_terminal_error_naming_it(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, v INT")
    car = env.start_streaming(env.sidecar())
    # A statement MariaDB accepts but the parser does not know (a clause outside its lists)
    statement = f"ALTER TABLE `{env.table}` ADD COLUMN w INT, ADD SYSTEM VERSIONING"
    env.sql(statement)
    code = car.wait_exit(TIMEOUT_S)
    log = car.log_text()
    assert code != 0
    assert "cannot follow the DDL statement" in log and "ADD SYSTEM VERSIONING" in log
    # (the log masks the stack's password, "mariadb", wherever it appears: the binlog name's tail is checked)
    assert "-bin.0" in log and " position " in log and "(GTID 0-1-" in log and "table.include.list" in log


def test_the_schema_change_topic_and_history_record_the_snapshot_and_an_alter(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, v INT")
    car = env.start_streaming(env.sidecar())
    changes = TopicReader(env.stack.bootstrap_servers, env.prefix)  # the schema change topic is <topic.prefix>
    history = TopicReader(env.stack.bootstrap_servers, f"{env.prefix}.schema-history")
    env.readers += [changes, history]
    statement = f"ALTER TABLE `{env.table}` ADD COLUMN note VARCHAR(20) DEFAULT 'n/a'"
    env.sql(statement)
    records = changes.wait_for(lambda rs: any(r.value["payload"]["ddl"] == statement for r in rs), TIMEOUT_S,
                               "the ALTER's schema change record", car.log_tail)
    payloads = [r.value["payload"] for r in records]
    assert [p["ddl"].split(" (")[0] for p in payloads[:6]] == [
        payloads[0]["ddl"], f"DROP TABLE IF EXISTS `{env.db}`.`{env.table}`", f"DROP DATABASE IF EXISTS `{env.db}`",
        payloads[3]["ddl"], f"USE `{env.db}`", f"CREATE TABLE `{env.table}`"]
    assert payloads[0]["ddl"].startswith("SET character_set_server=") and payloads[3]["ddl"].startswith(
        f"CREATE DATABASE `{env.db}` CHARSET ")
    assert [p["source"]["snapshot"] for p in payloads[:6]] == ["true"] * 5 + ["last"]
    assert [r.key["payload"] for r in records[:2]] == [{"databaseName": ""}, {"databaseName": env.db}]
    alter = payloads[6]
    assert alter["source"]["snapshot"] == "false" and alter["source"]["row"] == 1
    assert alter["source"]["gtid"].startswith("0-1-") and alter["source"]["ts_ms"] % 1000 == 0
    (change,) = alter["tableChanges"]
    assert change["type"] == "ALTER" and change["id"] == f'"{env.db}"."{env.table}"'
    assert [(c["name"], c["typeName"], c["defaultValueExpression"]) for c in change["table"]["columns"]] == [
        ("id", "INT", None), ("v", "INT", None), ("note", "VARCHAR", "n/a")]
    # The history: the snapshot (its database statements too: store.only.captured.tables.ddl is false here) and
    # the ALTER, positioned at the statement's GTID event; plain documents without a key.
    kept = history.wait_for_count(7, TIMEOUT_S, car.log_tail)
    assert all(r.key is None for r in kept)
    documents = [r.value for r in kept]
    assert [d["ddl"] for d in documents] == [p["ddl"] for p in payloads[:7]]
    assert documents[0]["position"]["snapshot"] == "INITIAL"
    position = documents[6]["position"]
    assert position["transaction_id"] == alter["source"]["gtid"] and position["event"] == 1
    assert position["pos"] < alter["source"]["pos"] and position["file"] == alter["source"]["file"]


def test_a_restart_with_offsets_and_no_history_is_a_terminal_error_naming_the_topic(env: MariaEnv) -> None:
    env.create_table("id INT PRIMARY KEY, v INT")
    config = env.connector_config()
    car = env.start_streaming(env.sidecar(config))
    wait_until(lambda: (env.offsets_file.exists() and env.stored_offsets().get("pos")) or None, TIMEOUT_S,
               "offsets to be stored", describe=car.log_tail)
    assert car.stop() == 0
    missing = f"{env.prefix}.another-history"
    config["config"]["schema.history.internal.kafka.topic"] = missing
    other = env.sidecar(config, label="no-history")
    other.start()
    code = other.wait_exit(TIMEOUT_S)
    log = other.log_text()
    assert code != 0
    assert f"the schema history topic {missing!r}" in log and "missing or empty" in log
    assert "delete the stored offsets" in log
