"""The MariaDB schema change and schema history records (issue 16), checked against a Debezium 3.5 MariaDB
connector reference run: the table-change metadata of each column type, the schema change topic's key and value,
the history record's document, and which history records a restart applies."""

from __future__ import annotations

import json

from signaller.model import TableId
from signaller.sources.mariadb.ddl import parse_ddl
from signaller.sources.mariadb.schema_records import (
    DdlEvent,
    history_position_is_applied,
    history_record,
    schema_change_record,
)
from signaller.sources.mariadb.table_changes import change_document, change_struct
from signaller.sources.mariadb.table_model import SchemaModel, TableChange

CREATE = """CREATE TABLE `t` (
  `id` int(11) NOT NULL,
  `u` tinyint(3) unsigned DEFAULT NULL,
  `d` decimal(12,3) DEFAULT NULL,
  `f` float DEFAULT NULL,
  `t3` time(3) DEFAULT NULL,
  `e` enum('a','b','c d') DEFAULT NULL,
  `s` set('x','y','z') DEFAULT NULL,
  `j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)),
  `l1` varchar(100) CHARACTER SET latin1 COLLATE latin1_swedish_ci DEFAULT NULL,
  `ts_nn` timestamp NOT NULL DEFAULT '2000-01-01 00:00:00',
  `y_nn` year(4) NOT NULL DEFAULT 0000,
  `g` point DEFAULT NULL,
  PRIMARY KEY (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"""


def _created() -> TableChange:
    model = SchemaModel()
    (change,) = model.apply(parse_ddl(CREATE), "db")
    return change


def _column(change: dict, name: str) -> dict:
    return next(c for c in change["table"]["columns"] if c["name"] == name)


def test_columns_carry_debeziums_metadata_with_every_member_on_the_schema_change_topic() -> None:
    change = change_struct(_created())
    assert change["type"] == "CREATE" and change["id"] == '"db"."t"'
    assert change["table"]["defaultCharsetName"] == "utf8mb4" and change["table"]["primaryKeyColumnNames"] == ["id"]
    assert _column(change, "id") == {
        "name": "id", "jdbcType": 4, "nativeType": None, "typeName": "INT", "typeExpression": "INT",
        "charsetName": None, "length": 11, "scale": None, "position": 1, "optional": False,
        "autoIncremented": False, "generated": False, "comment": None, "defaultValueExpression": None,
        "enumValues": None}
    assert [(_column(change, n)["jdbcType"], _column(change, n)["typeName"], _column(change, n)["length"],
             _column(change, n)["scale"], _column(change, n)["charsetName"])
            for n in ("u", "d", "f", "t3", "e", "s", "j", "l1", "ts_nn", "y_nn", "g")] == [
        (5, "TINYINT UNSIGNED", 3, None, None), (3, "DECIMAL", 12, 3, None), (6, "FLOAT", None, None, None),
        (92, "TIME", 3, None, None), (1, "ENUM", 1, None, "utf8mb4"), (1, "SET", 5, None, "utf8mb4"),
        (12, "LONGTEXT", None, None, "utf8mb4"), (12, "VARCHAR", 100, None, "latin1"),
        (2014, "TIMESTAMP", None, None, None), (4, "YEAR", 4, None, None), (1111, "POINT", None, None, None)]
    assert _column(change, "e")["enumValues"] == ["'a'", "'b'", "'c d'"]
    assert _column(change, "ts_nn")["defaultValueExpression"] == "2000-01-01 00:00:00"
    assert _column(change, "y_nn")["defaultValueExpression"] == "0000"
    assert list(change["table"]) == ["defaultCharsetName", "primaryKeyColumnNames", "columns", "comment"]


def test_history_documents_leave_unset_numbers_out_and_say_whether_a_default_exists() -> None:
    document = change_document(_created())
    assert list(document) == ["type", "id", "table", "comment"]
    assert list(document["table"]) == ["defaultCharsetName", "primaryKeyColumnNames", "columns", "attributes"]
    assert _column(document, "id") == {
        "name": "id", "jdbcType": 4, "typeName": "INT", "typeExpression": "INT", "charsetName": None, "length": 11,
        "position": 1, "optional": False, "autoIncremented": False, "generated": False, "comment": None,
        "hasDefaultValue": False, "enumValues": []}
    assert _column(document, "f") == {
        "name": "f", "jdbcType": 6, "typeName": "FLOAT", "typeExpression": "FLOAT", "charsetName": None,
        "position": 4, "optional": True, "autoIncremented": False, "generated": False, "comment": None,
        "hasDefaultValue": True, "enumValues": []}
    assert _column(document, "ts_nn")["hasDefaultValue"] is True
    assert _column(document, "ts_nn")["defaultValueExpression"] == "2000-01-01 00:00:00"
    assert change_document(TableChange("DROP", TableId("db", "t"), None)) == {"type": "DROP", "id": '"db"."t"'}


def test_a_streamed_alter_renders_as_debeziums_schema_change_and_history_records() -> None:
    model = SchemaModel()
    model.apply(parse_ddl("CREATE TABLE c (region varchar(10) NOT NULL, PRIMARY KEY (region))"), "db")
    ddl = "ALTER TABLE c ADD COLUMN note VARCHAR(20) DEFAULT 'n/a'"
    (change,) = model.apply(parse_ddl(ddl), "db")
    position = {"transaction_id": "0-1-7", "ts_sec": 1700000000, "file": "mariadb-bin.000003", "pos": 387,
                "gtids": "0-1-6", "server_id": 1, "event": 1}
    event = DdlEvent(ddl, "db", "c", (change,), "mariadb-bin.000003", 429, 1, "0-1-7", 1700000000000, "false",
                     position)
    key, value = schema_change_record(event, connector="mariadb", version="3.5.0.Final", topic_prefix="p",
                                      now_ms=1700000000123)
    assert json.loads(key) == {"schema": {"type": "struct", "fields": [
        {"type": "string", "optional": False, "field": "databaseName"}], "optional": False,
        "name": "io.debezium.connector.mariadb.SchemaChangeKey", "version": 1}, "payload": {"databaseName": "db"}}
    parsed = json.loads(value)
    assert parsed["schema"]["name"] == "io.debezium.connector.mariadb.SchemaChangeValue"
    assert [f["field"] for f in parsed["schema"]["fields"]] == [
        "source", "ts_ms", "databaseName", "schemaName", "ddl", "tableChanges"]
    payload = parsed["payload"]
    assert payload["source"] == {
        "version": "3.5.0.Final", "connector": "mariadb", "name": "p", "ts_ms": 1700000000000, "snapshot": "false",
        "db": "db", "sequence": None, "ts_us": 1700000000000000, "ts_ns": 1700000000000000000, "table": "c",
        "server_id": 1, "gtid": "0-1-7", "file": "mariadb-bin.000003", "pos": 429, "row": 1, "thread": None,
        "query": None}
    assert (payload["ts_ms"], payload["databaseName"], payload["schemaName"], payload["ddl"]) == (
        1700000000123, "db", None, ddl)
    note = payload["tableChanges"][0]["table"]["columns"][1]
    assert (note["name"], note["length"], note["defaultValueExpression"], note["position"]) == ("note", 20, "n/a", 2)
    history = history_record(event, topic_prefix="p", now_ms=5)
    assert history.startswith(b'{"source":{"server":"p"},"position":{"transaction_id":"0-1-7",')
    document = json.loads(history)
    assert list(document) == ["source", "position", "ts_ms", "databaseName", "ddl", "tableChanges"]
    assert document["position"] == position and document["tableChanges"][0]["type"] == "ALTER"


def test_a_restart_applies_the_snapshot_and_the_statements_that_began_before_the_stored_offset() -> None:
    file = "mariadb-bin.000003"
    snapshot = {"ts_sec": 1, "file": file, "pos": 381, "gtids": "0-1-5", "snapshot": "INITIAL"}
    streamed = {"transaction_id": "0-1-7", "ts_sec": 1, "file": file, "pos": 500, "gtids": "0-1-6", "server_id": 1,
                "event": 1}
    stored_at_start = (3 << 32) | 381
    assert history_position_is_applied(snapshot, stored_at_start)
    assert not history_position_is_applied(streamed, (3 << 32) | 500)  # stored before the statement
    assert history_position_is_applied(streamed, (3 << 32) | 560)  # stored after it
    assert history_position_is_applied(streamed, (4 << 32) | 4)  # a later file
    assert not history_position_is_applied({"file": file}, stored_at_start)  # not a position
