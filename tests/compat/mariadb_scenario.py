"""The MariaDB side-by-side script: one DDL + DML script and the same ``execute-snapshot`` signals, run
against Debezium's MariaDB connector (Kafka Connect standalone) and, when it exists, the sidecar's MariaDB
source, at the same time, on the same MariaDB database and Kafka broker.

Both sides get the same connector configuration (Debezium's names and values) except for the names that
must differ: topic prefix, server id, signal table, notification and schema history topics. Every table,
both signal tables included, exists before either side starts, so both schema snapshots
(``snapshot.mode=no_data`` still records the schema) see the same tables.

Determinism: all DML runs while both sides stream and before the first signal; the snapshots run on an idle
database, one signal at a time, each awaited (``COMPLETED`` notification) on both sides; a final insert per
table marks the end of each topic.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka.admin import AdminClient

from devtools.debezium import MARIADB_CONNECTOR_CLASS, DebeziumConnect, unique_server_id
from tests.compat.mariadb_env import MariaDbEnv
from tests.integration.capture_helpers import Record, Sidecar, TopicReader, closed_port, wait_until

CHUNK_SIZE = 3
"""Small chunks, so that every table takes several windows."""

TYPES_COLUMNS = (
    "id INT NOT NULL PRIMARY KEY, "
    "c_tinyint TINYINT, c_tinyint_u TINYINT UNSIGNED, c_bool BOOLEAN, "
    "c_smallint SMALLINT, c_smallint_u SMALLINT UNSIGNED, c_mediumint MEDIUMINT, c_mediumint_u MEDIUMINT UNSIGNED, "
    "c_int INT, c_int_u INT UNSIGNED, c_bigint BIGINT, c_bigint_u BIGINT UNSIGNED, "
    "c_decimal DECIMAL(12,3), c_decimal_wide DECIMAL(38,10), c_decimal_int DECIMAL(10,0), "
    "c_float FLOAT, c_double DOUBLE, "
    "c_bit1 BIT(1), c_bit12 BIT(12), c_bit64 BIT(64), "
    "c_year YEAR, c_date DATE, c_time TIME, c_time3 TIME(3), c_time6 TIME(6), "
    "c_datetime DATETIME, c_datetime3 DATETIME(3), c_datetime6 DATETIME(6), "
    "c_timestamp TIMESTAMP NULL DEFAULT NULL, c_timestamp6 TIMESTAMP(6) NULL DEFAULT NULL, "
    "c_enum ENUM('a','b','c d'), c_set SET('x','y','z'), c_json JSON, "
    "c_char CHAR(10), c_varchar VARCHAR(100), c_text TEXT, c_mediumtext MEDIUMTEXT, "
    "c_char_latin1 CHAR(10) CHARACTER SET latin1, c_varchar_latin1 VARCHAR(100) CHARACTER SET latin1, "
    "c_text_latin1 TEXT CHARACTER SET latin1, "
    "c_binary BINARY(4), c_varbinary VARBINARY(16), c_tinyblob TINYBLOB, c_blob BLOB, c_longblob LONGBLOB, "
    "c_geometry GEOMETRY, c_point POINT, c_linestring LINESTRING, c_polygon POLYGON, "
    "c_uuid UUID, "
    "c_decimal_max DECIMAL(65,30), c_decimal_u DECIMAL(8,2) UNSIGNED, c_bit8 BIT(8), "
    "c_timestamp3 TIMESTAMP(3) NULL DEFAULT NULL, "
    "c_tinytext TINYTEXT, c_longtext LONGTEXT, c_mediumblob MEDIUMBLOB, "
    "c_char_ascii CHAR(8) CHARACTER SET ascii, c_char_binary CHAR(4) CHARACTER SET binary, "
    "c_char_utf8mb3 CHAR(10) CHARACTER SET utf8mb3, "
    "c_varchar_latin2 VARCHAR(20) CHARACTER SET latin2, c_varchar_cp1250 VARCHAR(20) CHARACTER SET cp1250, "
    "c_varchar_cp1251 VARCHAR(20) CHARACTER SET cp1251, c_text_cp1251 TEXT CHARACTER SET cp1251, "
    "c_varchar_koi8r VARCHAR(20) CHARACTER SET koi8r, c_varchar_greek VARCHAR(20) CHARACTER SET greek, "
    "c_varchar_hebrew VARCHAR(20) CHARACTER SET hebrew, c_varchar_latin5 VARCHAR(20) CHARACTER SET latin5, "
    "c_varchar_sjis VARCHAR(20) CHARACTER SET sjis, c_varchar_ujis VARCHAR(20) CHARACTER SET ujis, "
    "c_varchar_gbk VARCHAR(20) CHARACTER SET gbk, c_varchar_gb2312 VARCHAR(20) CHARACTER SET gb2312, "
    "c_varchar_big5 VARCHAR(20) CHARACTER SET big5, c_varchar_euckr VARCHAR(20) CHARACTER SET euckr, "
    "c_varchar_tis620 VARCHAR(20) CHARACTER SET tis620, "
    "c_varchar_ucs2 VARCHAR(20) CHARACTER SET ucs2, c_varchar_utf16 VARCHAR(20) CHARACTER SET utf16, "
    "c_varchar_utf16le VARCHAR(20) CHARACTER SET utf16le, c_varchar_utf32 VARCHAR(20) CHARACTER SET utf32, "
    "c_multipoint MULTIPOINT, c_multilinestring MULTILINESTRING, c_multipolygon MULTIPOLYGON, "
    "c_geometrycollection GEOMETRYCOLLECTION"
)
"""Every MariaDB 10.11 column type (``BOOLEAN`` is ``TINYINT(1)``, ``JSON`` a checked ``LONGTEXT``) but
``INET6``/``INET4``: Debezium's MariaDB DDL parser (3.5.0.Final) stops the connector on them
(``NoViableAltException`` at ``inet6``)."""

TYPE_NAMES = [column.split()[0] for column in TYPES_COLUMNS.split(", ") if column.startswith("c_")]

_FULL = (
    "-128, 255, 1, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, "
    "18446744073709551615, 123456789.123, -1234567890123456789012345678.0123456789, 42, 3.14, 2.718281828459045, "
    "b'1', b'101010101010', b'1111111111111111111111111111111111111111111111111111111111111111', "
    "2024, '2024-02-29', '-838:59:59', '13:14:15.123', '23:59:59.999999', "
    "'2024-02-29 13:14:15', '2024-02-29 13:14:15.123', '9999-12-31 23:59:59.999999', "
    "'2024-02-29 13:14:15', '2038-01-19 03:14:07.999999', 'c d', 'x,z', %s, "
    "'héllo', %s, 'text ✓', 'mediumtext', 'café', 'crème brûlée', 'naïve', "
    "x'0001feff', x'00ff', x'de', x'cafebabe', x'00', "
    "ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))'), ST_GeomFromText('POINT(1.5 -2.25)'), "
    "ST_GeomFromText('LINESTRING(0 0,1 1,2 1)'), ST_GeomFromText('POLYGON((0 0,4 0,4 4,0 4,0 0))'), "
    "'0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f01', "
    "'12345678901234567890123456789012345.123456789012345678901234567890', 999999.99, b'10000001', "
    "'2024-02-29 13:14:15.123', 'tiny ✓', 'long ✓', x'0102ff', "
    "'plain', x'00ff', 'snow ☃', "
    "'Zażółć', 'Łódź ř', 'Привет', 'Привет мир', 'Мир', 'Καλημέρα', 'שלום', 'Ğüşİ', "
    "'こんにちは', 'カタカナ', '你好', '中文', '中文字', '안녕', 'สวัสดี', "
    "'ünï ☃', '𝄞 clef', 'le ✓', '𝄞 ok', "
    "ST_GeomFromText('MULTIPOINT(1 1,2 2)'), ST_GeomFromText('MULTILINESTRING((0 0,1 1),(2 2,3 3))'), "
    "ST_GeomFromText('MULTIPOLYGON(((0 0,1 0,1 1,0 0)),((5 5,6 5,6 6,5 5)))'), "
    "ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1),LINESTRING(0 0,1 1))')"
)
_EXTREMES = (
    "127, 0, 0, 32767, 0, 8388607, 0, 2147483647, 0, 9223372036854775807, 0, -999999999.999, "
    "9999999999999999999999999999.9999999999, -1, -1.5e-38, -1.7976931348623157e308, "
    "b'0', b'000000000001', b'1000000000000000000000000000000000000000000000000000000000000000', "
    "1901, '1000-01-01', '00:00:00', '838:59:59.000', '-00:00:00.000001', "
    "'1000-01-01 00:00:00', '1000-01-01 00:00:00.001', '1970-01-01 00:00:00.000001', "
    "'1970-01-01 00:00:01', '1970-01-01 00:00:01.000001', 'a', '', '[]', "
    "'', '', '', '', '', '', '', x'00000000', x'', x'', x'', x'', "
    "ST_GeomFromText('POINT(0 0)', 4326), ST_GeomFromText('POINT(-180 90)', 4326), "
    "ST_GeomFromText('LINESTRING(0 0,0 0)'), "
    "ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0),(0.1 0.1,0.2 0.1,0.2 0.2,0.1 0.1))'), "
    "'00000000-0000-0000-0000-000000000000', "
    "'-99999999999999999999999999999999999.999999999999999999999999999999', 0, b'0', "
    "'1970-01-01 00:00:01.001', '', '', x'', "
    "'', x'00', '', "
    "'', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', '', "
    "ST_GeomFromText('MULTIPOINT(0 0)', 4326), ST_GeomFromText('MULTILINESTRING((0 0,0 0))'), "
    "ST_GeomFromText('MULTIPOLYGON(((0 0,1 0,1 1,0 0),(0.1 0.1,0.2 0.1,0.2 0.2,0.1 0.1)))'), "
    "ST_GeomFromText('GEOMETRYCOLLECTION EMPTY')"
)
_ZERO_VALUES = {"c_year": "0", "c_date": "'0000-00-00'", "c_datetime": "'0000-00-00 00:00:00'",
                "c_datetime3": "'0000-00-00 00:00:00.000'", "c_datetime6": "'2024-00-15 00:00:00'",
                "c_timestamp": "'0000-00-00 00:00:00'", "c_timestamp6": "'0000-00-00 00:00:00.000000'",
                "c_timestamp3": "'0000-00-00 00:00:00.000'"}
_ZERO_DATES = ", ".join(_ZERO_VALUES.get(name, "NULL") for name in TYPE_NAMES)

ZERO_COLUMNS = (
    "id INT NOT NULL PRIMARY KEY, d DATE NULL, d_nn DATE NOT NULL, dt DATETIME NULL, dt_nn DATETIME(3) NOT NULL, "
    "ts TIMESTAMP NULL DEFAULT NULL, ts_nn TIMESTAMP NOT NULL DEFAULT '2000-01-01 00:00:00', "
    "d_part DATE NULL, y_nn YEAR NOT NULL DEFAULT 0"
)
"""Zero and partly-zero dates, allowed by the stack's ``sql_mode`` (no ``NO_ZERO_DATE``/``NO_ZERO_IN_DATE``)."""
ZERO_ROWS = (
    "(1, '0000-00-00', '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', '0000-00-00 00:00:00', "
    "'0000-00-00 00:00:00', '2024-00-00', 0)",
    "(2, '2024-02-29', '2024-02-29', '2024-02-29 01:02:03', '2024-02-29 01:02:03.5', '2024-02-29 01:02:03', "
    "'2024-02-29 01:02:03', '2024-02-00', 2000)",
)

TIMESTAMPS_IN_ZONES = {
    "+05:30": ("2024-07-01 12:00:00", "2000-01-01 03:00:00.999", "2024-07-01 12:00:00.5"),
    "-09:30": ("2024-12-31 20:00:00", "1999-12-31 23:59:59.001", "2038-01-18 17:44:07.999999"),
}
"""``(c_timestamp, c_timestamp3, c_timestamp6)`` of row 5 written in a session of each time zone (the stack's
server zone is UTC and shared, so the non-UTC zone is the writing session's): both sides must emit the UTC
instant (the last update crosses a date line and reaches the 2038 maximum in UTC)."""

JSON_VALUE = '{"b": 1, "a": [1, 2.5, "x"], "nested": {"k": null}}'
TEXT_VALUE = 'héllo ✓ "quoted"\n\ttab \\ back'


@dataclass
class Names:
    """Everything of one side that carries its own name."""

    prefix: str
    signal_table: str

    @property
    def notification_topic(self) -> str:
        return f"{self.prefix}.notifications"

    @property
    def history_topic(self) -> str:
        return f"{self.prefix}.schema-history"


@dataclass
class SideOutput:
    """What one side wrote: records per topic, in topic order (every topic has one partition)."""

    names: Names
    topics: dict[str, list[Record]] = field(default_factory=dict)
    log: str = ""


@dataclass
class Tables:
    database: str
    types: str = "cmp_types"
    composite: str = "cmp_comp"
    keyless: str = "cmp_nokey"
    zero: str = "cmp_zero"

    @property
    def captured(self) -> list[str]:
        return [self.types, self.composite, self.keyless, self.zero]

    def qualified(self, table: str) -> str:
        return f"{self.database}.{table}"


def connector_properties(env: MariaDbEnv, tables: Tables, names: Names) -> dict[str, str]:
    """The connector configuration both sides get (Debezium's names and values only)."""
    return {
        "connector.class": MARIADB_CONNECTOR_CLASS,
        "topic.prefix": names.prefix,
        "database.server.id": str(unique_server_id()),
        "database.include.list": tables.database,
        "table.include.list": ",".join(tables.qualified(t) for t in tables.captured),
        "snapshot.mode": "no_data",
        "schema.history.internal.kafka.topic": names.history_topic,
        "schema.history.internal.store.only.captured.databases.ddl": "true",
        "schema.history.internal.store.only.captured.tables.ddl": "true",
        "signal.data.collection": tables.qualified(names.signal_table),
        "incremental.snapshot.chunk.size": str(CHUNK_SIZE),
        "notification.enabled.channels": "sink",
        "notification.sink.topic.name": names.notification_topic,
        "provide.transaction.metadata": "true",
    }


def create_tables(env: MariaDbEnv, signal_tables: list[str]) -> Tables:
    tables = Tables(database=env.database)
    env.sql(f"CREATE TABLE {tables.types} ({TYPES_COLUMNS})")
    env.sql(f"CREATE TABLE {tables.composite} (region VARCHAR(10) NOT NULL, n BIGINT NOT NULL, label VARCHAR(40), "
            "amount DECIMAL(12,3), PRIMARY KEY (region, n))")
    env.sql(f"CREATE TABLE {tables.keyless} (a INT, b VARCHAR(20))")
    env.sql(f"CREATE TABLE {tables.zero} ({ZERO_COLUMNS})")
    for name in signal_tables:
        env.sql(f"CREATE TABLE {name} (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))")
    return tables


def run_dml(env: MariaDbEnv, tables: Tables) -> None:
    """The DML script: every type (full values, NULLs, extremes, zero dates), updates of every kind, a key
    change, deletes, a multi-statement transaction, a keyless table, and an ALTER TABLE between changes."""
    t, c, k, z = tables.types, tables.composite, tables.keyless, tables.zero
    sql = env.sql
    sql(f"INSERT INTO {t} VALUES (1, {_FULL})", (JSON_VALUE, TEXT_VALUE))
    sql(f"INSERT INTO {t} (id) VALUES (2)")
    sql(f"INSERT INTO {t} VALUES (3, {_EXTREMES})")
    sql(f"INSERT INTO {t} VALUES (4, {_ZERO_DATES})")
    sql(f"INSERT INTO {t} VALUES (5, {_FULL})", (JSON_VALUE, TEXT_VALUE))
    for zone, stamps in TIMESTAMPS_IN_ZONES.items():  # TIMESTAMP text is the session's zone, the binlog UTC
        sql(f"SET time_zone = '{zone}'")
        sql(f"UPDATE {t} SET c_timestamp = %s, c_timestamp3 = %s, c_timestamp6 = %s WHERE id = 5", stamps)
    sql("SET time_zone = DEFAULT")
    sql(f"UPDATE {t} SET c_int = 7, c_decimal = -0.001, c_varchar = NULL, c_blob = x'', c_set = '', "
        "c_datetime6 = '2024-01-01 00:00:00', c_time6 = '-00:00:01.5', c_json = '{\"a\": true}' WHERE id = 1")
    sql(f"UPDATE {t} SET id = 20 WHERE id = 2")  # key change: delete + tombstone + create
    sql(f"DELETE FROM {t} WHERE id = 3")
    with env.transaction() as execute:  # several statements in one transaction
        execute(f"INSERT INTO {c} VALUES ('eu', 1, 'one', 1.5), ('eu', 2, 'two', 3), ('eu', 3, 'three', 4.5)")
        execute(f"INSERT INTO {c} VALUES ('us', 1, NULL, NULL), ('us', 2, 'two', -0.001)")
        execute(f"UPDATE {c} SET label = 'changed' WHERE region = 'eu' AND n = 3")
        execute(f"DELETE FROM {c} WHERE region = 'eu' AND n = 2")
        execute(f"UPDATE {t} SET c_text = 'in a transaction' WHERE id = 5")
    sql(f"UPDATE {c} SET n = 40 WHERE region = 'eu' AND n = 1")
    sql(f"INSERT INTO {k} VALUES (1, 'one'), (2, 'two'), (2, 'two')")
    sql(f"UPDATE {k} SET b = 'uno' WHERE a = 1")
    sql(f"DELETE FROM {k} WHERE a = 2")
    sql(f"ALTER TABLE {c} ADD COLUMN note VARCHAR(20) DEFAULT 'n/a'")
    sql(f"INSERT INTO {c} (region, n, label) VALUES ('ap', 1, 'after alter')")
    sql(f"UPDATE {c} SET note = 'noted' WHERE region = 'eu' AND n = 3")
    for row in ZERO_ROWS:
        sql(f"INSERT INTO {z} VALUES {row}")
    sql(f"UPDATE {z} SET d = '2000-01-01' WHERE id = 1")
    # YEAR 0000 streams, but Debezium's incremental snapshot fails on it (MariaDB Connector/J's YearColumn
    # calls java.sql.Date.valueOf("0000-01-01"): IllegalArgumentException, the signal is dropped), so no
    # zero year is left for the snapshots.
    sql(f"UPDATE {t} SET c_year = NULL WHERE c_year = 0")
    sql(f"UPDATE {z} SET y_nn = 1901 WHERE y_nn = 0")


def signals(tables: Tables) -> list[tuple[str, str]]:
    """``(id, data)`` of the execute-snapshot signals, sent one at a time: three tables, a filtered
    re-snapshot, and a table without a primary key (skipped with NO_PRIMARY_KEY)."""
    t, c, k, z = (tables.qualified(name) for name in (tables.types, tables.composite, tables.keyless, tables.zero))
    return [
        ("snap-1", json.dumps({"data-collections": [t, c, z], "type": "incremental"})),
        ("snap-2", json.dumps({"data-collections": [t], "type": "incremental", "additional-conditions": [
            {"data-collection": t, "filter": "id > 4 AND c_int IS NOT NULL"}]})),
        ("snap-3", json.dumps({"data-collections": [k], "type": "incremental"})),
    ]


END_MARKERS = {"cmp_types": "INSERT INTO {t} (id) VALUES (1000)",
               "cmp_comp": "INSERT INTO {t} (region, n) VALUES ('zz', 1000)",
               "cmp_nokey": "INSERT INTO {t} (a) VALUES (1000)",
               "cmp_zero": "INSERT INTO {t} (id, d_nn, dt_nn) VALUES (1000, '2000-01-01', '2000-01-01')"}


class Side:
    """One of the two implementations under comparison."""

    def __init__(self, label: str, names: Names, start: Callable[[], None], stop: Callable[[], None],
                 log: Callable[[], str]) -> None:
        self.label = label
        self.names = names
        self.start = start
        self.stop = stop
        self.log = log


def side_names(env: MariaDbEnv, tag: str) -> Names:
    return Names(prefix=env.variant(tag), signal_table=f"cmp_{tag}_signal")


def debezium_side(env: MariaDbEnv, tables: Tables, names: Names, workdir: Path,
                  overrides: dict[str, str] | None = None) -> Side:
    properties = {**connector_properties(env, tables, names), **(overrides or {})}
    connect = DebeziumConnect(env.stack, properties, workdir / "debezium", name=f"compat-{env.suffix}",
                              source="mariadb")

    def start() -> None:
        connect.start()
        connect.wait_streaming()

    return Side("debezium", names, start, connect.stop, connect.log_text)


def sidecar_config(env: MariaDbEnv, tables: Tables, names: Names,
                   overrides: dict[str, str] | None = None) -> dict[str, Any]:
    """The sidecar's connector JSON: the same Debezium properties plus its own deployment settings
    (where offsets go, its Kafka, its HTTP port)."""
    stack = env.stack
    config = {
        "database.hostname": "127.0.0.1",
        "database.port": str(stack.mariadb_port),
        "database.user": stack.mariadb_user,
        "database.password": stack.mariadb_password,
        "tasks.max": "1",
        "schema.history.internal.kafka.bootstrap.servers": stack.bootstrap_servers,
        **connector_properties(env, tables, names),
        **(overrides or {}),
        "kafka.bootstrap.servers": stack.bootstrap_servers,
        "offset.storage": "file",
        "offset.storage.file.filename": str(env.workdir / "sidecar-offsets.json"),
        "offset.flush.interval.ms": "200",
        "poll.interval.ms": "100",
        "signaller.http.port": str(closed_port()),
    }
    return {"name": f"mdb-{env.suffix}", "config": config}


def sidecar_side(env: MariaDbEnv, tables: Tables, names: Names, overrides: dict[str, str] | None = None) -> Side:
    config = sidecar_config(env, tables, names, overrides)
    car = Sidecar(config, env.workdir, label="sidecar")
    health = f"http://127.0.0.1:{config['config']['signaller.http.port']}/health"

    def streaming() -> bool:
        if not car.alive():
            raise AssertionError(f"sidecar exited with {car.returncode}\n{car.log_tail()}")
        try:
            return httpx.get(health, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def start() -> None:
        car.start()
        wait_until(streaming, 90, "the sidecar to stream (GET /health 200)", describe=car.log_tail)

    def stop() -> None:
        if car.alive():
            car.stop()

    return Side("signaller", names, start, stop, car.log_text)


def _topics_of(env: MariaDbEnv, prefix: str) -> list[str]:
    admin = AdminClient({"bootstrap.servers": env.stack.bootstrap_servers})
    return sorted(name for name in admin.list_topics(timeout=10).topics
                  if name == prefix or name.startswith(prefix + "."))


def _completed(reader: TopicReader, signal_id: str) -> bool:
    reader.read_available(0.2)
    return any(r.value is not None and r.payload.get("type") == "COMPLETED" and r.payload.get("id") == signal_id
               for r in reader.records)


def run(env: MariaDbEnv, workdir: Path, with_sidecar: bool = True, timeout_s: float = 180.0,
        overrides: dict[str, str] | None = None, with_signals: bool = True) -> list[SideOutput]:
    """Run the script against Debezium (and the sidecar, ``with_sidecar``); return their outputs in
    that order. ``overrides`` (e.g. ``decimal.handling.mode``) go to both sides. ``with_signals=False``
    leaves out the ``execute-snapshot`` signals: the streamed part of the script only (no READ events,
    no watermark rows, no incremental-snapshot notifications)."""
    dbz_names = side_names(env, "dbz")
    sig_names = side_names(env, "sig")
    tables = create_tables(env, [dbz_names.signal_table, sig_names.signal_table])
    sides = [debezium_side(env, tables, dbz_names, workdir, overrides)]
    if with_sidecar:
        sides.append(sidecar_side(env, tables, sig_names, overrides))
    started: list[Side] = []
    try:
        for side in sides:
            side.start()
            started.append(side)
        run_dml(env, tables)
        notification_readers = [env.reader(side.names.notification_topic) for side in sides]
        for signal_id, data in signals(tables) if with_signals else []:
            for side in sides:
                env.sql(f"INSERT INTO {side.names.signal_table} VALUES (%s, 'execute-snapshot', %s)",
                        (signal_id, data))
            for side, reader in zip(sides, notification_readers, strict=True):
                wait_until(lambda reader=reader, signal_id=signal_id: _completed(reader, signal_id), timeout_s,
                           f"{side.label}: COMPLETED notification of {signal_id}",
                           describe=lambda side=side: side.log()[-4000:])
        for table in tables.captured:
            env.sql(END_MARKERS[table].format(t=table))
        outputs = [_collect(env, side, tables, timeout_s) for side in sides]
    finally:
        for side in started:
            side.stop()
    return outputs


def _is_end_marker(record: Record) -> bool:
    if record.value is None or record.payload.get("op") != "c":
        return False
    after = record.payload["after"]
    return 1000 in (after.get("id"), after.get("n"), after.get("a"))


def _collect(env: MariaDbEnv, side: Side, tables: Tables, timeout_s: float) -> SideOutput:
    output = SideOutput(side.names)
    for table in tables.captured:
        topic = f"{side.names.prefix}.{tables.database}.{table}"
        reader = env.reader(topic)
        reader.wait_for(lambda records: any(_is_end_marker(r) for r in records), timeout_s,
                        f"{side.label}: the end marker", describe=lambda: side.log()[-4000:])
        output.topics[topic] = list(reader.records)
    time.sleep(2.0)  # let notifications and transaction records after the markers land
    for topic in [*_topics_of(env, side.names.prefix), side.names.history_topic]:
        if topic in output.topics:
            continue
        reader = env.reader(topic)
        reader.read_available(3.0)
        output.topics[topic] = list(reader.records)
    output.log = side.log()
    return output


def dump(output: SideOutput) -> dict[str, Any]:
    """A JSON-friendly view (for failure messages and for looking at the outputs by hand)."""
    return {topic: [{"key": r.key, "value": r.value} for r in records] for topic, records in output.topics.items()}
