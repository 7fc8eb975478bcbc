"""One DDL + DML script and the same ``execute-snapshot`` signals, run against Debezium's PostgreSQL
connector (Kafka Connect standalone) and the sidecar at the same time, on the same database and broker.

Both get the same connector configuration except for the names that must differ (topic prefix, slot,
publication, signalling table, notification topic). Everything either of them writes to Kafka is read
back into :class:`SideOutput` for :mod:`tests.compat.compare`.

With ``avro=True`` a second pair runs beside the first, on the same script: Debezium with Apicurio Registry's
``AvroConverter`` (Confluent wire format, the stack's registry) and the sidecar with the Avro converter against
the same registry; their records are read back decoded (``tests.compat.avro_output``).

Determinism: all DML runs while both are streaming and before the first signal; the snapshots run on an
idle database, one signal at a time, each awaited (``COMPLETED`` notification) on both sides, so each
side's output is a function of the script alone (timings and snapshot-time log positions aside).
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from devtools.debezium import DebeziumConnect
from tests.compat.avro_output import AvroDecoder
from tests.integration.capture_helpers import CaptureEnv, Record, TopicReader, closed_port, wait_until
from tests.integration.test_capture_types import COLUMNS

CHUNK_SIZE = 3
"""Small chunks, so that every table takes several windows (and several IN_PROGRESS notifications)."""

TYPES_COLUMNS = COLUMNS
"""Every type of the mapping table (the streaming type test's table; ``{enum}`` is the enum type's name)."""
FULL_ROW = (
    "INSERT INTO {t} VALUES ({id}, -32768, 2147483647, -9223372036854775808, 12345.67, -0.01, 3.14159, "
    "3.25, 2.718281828459045, true, %s, 'hello', 'ab', '\\x0001feff'::bytea, '2024-02-29', "
    "'13:14:15.123456', '13:14:15.123456+02', '2024-02-29 13:14:15.123456', "
    "'2024-02-29 13:14:15.123456+02', '1 mon 2 days 03:04:05.5', %s, %s, %s, 'happy', "
    "'{{1,2,NULL,-3}}', ARRAY['a', 'b c', NULL], NULL)"
)

EDGE_COLUMNS = (
    "id integer PRIMARY KEY, c_point point, c_tsvector tsvector, c_ts timestamp, c_ts3 timestamp(3), "
    "c_tstz timestamptz, c_date date, c_date_arr date[], c_ts_arr timestamp[], c_tstz_arr timestamptz[], "
    "c_tsvector_arr tsvector[]"
)
"""Types and values where Debezium's encoding is not obvious: geometry and text-search types, ±infinity,
BC dates, in columns and in arrays (REPLICA IDENTITY FULL: updates and deletes carry the old row)."""
EDGE_ROWS = (
    "(1, '(1.5,-2.25)', 'a fat cat sat on a mat', 'infinity', 'infinity', 'infinity', 'infinity', "
    "ARRAY['infinity'::date, '2024-01-01'], ARRAY['infinity'::timestamp], ARRAY['infinity'::timestamptz], "
    "ARRAY['a b'::tsvector, ''])",
    "(2, '(0,0)', '', '-infinity', '-infinity', '-infinity', '-infinity', ARRAY['-infinity'::date, NULL], "
    "ARRAY['-infinity'::timestamp], ARRAY['-infinity'::timestamptz], '{}')",
    "(3, '(-1e308,1e-300)', $$'it''s':1A,2B 'don''t' 'x':3C,4 'a b' 'héllo'$$, '0044-03-15 12:00:00.123456 BC', "
    "'0044-03-15 12:00:00.123 BC', '0044-03-15 12:00:00.5+00 BC', '0044-03-15 BC', ARRAY['0044-03-15 BC'::date], "
    "ARRAY['0044-03-15 12:00:00 BC'::timestamp], ARRAY['2024-02-29 13:14:15+02'::timestamptz], NULL)",
    "(4, '(NaN,Infinity)', NULL, '4713-01-01 00:00:00 BC', '294276-12-31 23:59:59', '4713-01-01 00:00:00+00 BC', "
    "'0001-01-01 BC', NULL, NULL, NULL, NULL)",
    "(5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(6, '(-Infinity,-0)', 'x', '-infinity', 'infinity', 'infinity', '-infinity', ARRAY['-infinity'::date], "
    "ARRAY['infinity'::timestamp], ARRAY['-infinity'::timestamptz], ARRAY['y'::tsvector])",
)

KEY_ONLY_COLUMNS = (
    "id integer PRIMARY KEY, c_smallint smallint NOT NULL, c_bigint bigint NOT NULL, "
    "c_numeric numeric(10, 2) NOT NULL, c_varnum numeric NOT NULL, c_real real NOT NULL, "
    "c_double double precision NOT NULL, c_bool boolean NOT NULL, "
    "c_text text NOT NULL, c_varchar varchar(10) NOT NULL, c_char char(3) NOT NULL, c_bytea bytea NOT NULL, "
    "c_date date NOT NULL, c_time time NOT NULL, c_time3 time(3) NOT NULL, c_timetz timetz NOT NULL, "
    "c_ts timestamp NOT NULL, c_ts3 timestamp(3) NOT NULL, c_tstz timestamptz NOT NULL, c_interval interval NOT NULL, "
    "c_uuid uuid NOT NULL, c_json json NOT NULL, c_jsonb jsonb NOT NULL, c_enum {enum} NOT NULL, "
    "c_int_arr integer[] NOT NULL, c_text_arr text[] NOT NULL, c_inet inet NOT NULL, c_range int4range NOT NULL, "
    "c_money money NOT NULL, c_bit bit(1) NOT NULL, c_bits bit(8) NOT NULL, c_varbit varbit NOT NULL, "
    "c_xml xml NOT NULL, c_tsvector tsvector NOT NULL, c_point point NOT NULL, c_line line NOT NULL, "
    "c_circle circle NOT NULL, c_box box NOT NULL, "
    "d_int integer NOT NULL DEFAULT 7, d_text text NOT NULL DEFAULT 'dflt', d_numeric numeric(10, 2) NOT NULL "
    "DEFAULT 1.5, d_bool boolean NOT NULL DEFAULT true, d_date date NOT NULL DEFAULT '2020-01-02', "
    "d_tstz timestamptz NOT NULL DEFAULT now(), d_uuid uuid NOT NULL DEFAULT gen_random_uuid(), d_seq bigserial, "
    "n_text text, n_int integer DEFAULT 5"
)
"""NOT NULL columns of many types, some with defaults, under PostgreSQL's default replica identity: a DELETE or a
key-changing UPDATE sends only the key in the old tuple, and Debezium fills each other NOT NULL column of the
``before`` image with the schema's default, else its type's fallback (``JdbcValueConverters.convertValue``)."""
KEY_ONLY_ROW = (
    "INSERT INTO {t} (id, c_smallint, c_bigint, c_numeric, c_varnum, c_real, c_double, c_bool, c_text, c_varchar, "
    "c_char, c_bytea, c_date, c_time, c_time3, c_timetz, c_ts, c_ts3, c_tstz, c_interval, c_uuid, c_json, c_jsonb, "
    "c_enum, c_int_arr, c_text_arr, c_inet, c_range, c_money, c_bit, c_bits, c_varbit, c_xml, c_tsvector, c_point, "
    "c_line, c_circle, c_box, n_text) VALUES ({id}, 3, 4, 5.25, 6.5, 1.5, 2.5, true, 'text', 'vc', 'ch', "
    "'\\x01'::bytea, '2024-02-29', '13:14:15.123456', '13:14:15.123', '13:14:15+02', '2024-02-29 13:14:15.123456', "
    "'2024-02-29 13:14:15.123', '2024-02-29 13:14:15.123456+02', '1 day', "
    "'0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f00', '{{\"a\": 1}}', '{{\"b\": 2}}', 'ok', '{{1,2}}', '{{x,y}}', "
    "'10.0.0.1', '[1,5)', 12.34, B'1', B'10101010', B'101', '<a/>', 'fat cat', '(1,2)', '{{1,2,3}}', "
    "'<(1,2),3>', '((0,0),(1,1))', 'nullable')"
)
"""One row of the key-only table (``{t}``, ``{id}``); the ``d_`` columns take their defaults."""


@dataclass
class Names:
    """Everything of one side that carries its own name."""

    prefix: str
    slot: str
    publication: str
    signal_table: str

    @property
    def notification_topic(self) -> str:
        return f"{self.prefix}.notifications"


@dataclass
class SideOutput:
    """What one side wrote: records per topic, in topic order (every topic has one partition)."""

    names: Names
    topics: dict[str, list[Record]] = field(default_factory=dict)
    log: str = ""


@dataclass
class Tables:
    types: str
    composite: str
    keyless: str
    sync: str
    enum: str
    edge: str
    key_only: str

    @property
    def captured(self) -> list[str]:
        return [self.types, self.composite, self.keyless, self.sync, self.edge, self.key_only]


def connector_properties(capture: CaptureEnv, tables: Tables, names: Names) -> dict[str, str]:
    """The connector configuration both sides get (Debezium's names and values only)."""
    include = ",".join(f"public.{t}" for t in tables.captured)
    return {
        "topic.prefix": names.prefix,
        "slot.name": names.slot,
        "publication.name": names.publication,
        "publication.autocreate.mode": "filtered",
        "plugin.name": "pgoutput",
        "table.include.list": include,
        "snapshot.mode": "no_data",
        "signal.data.collection": f"public.{names.signal_table}",
        "incremental.snapshot.chunk.size": str(CHUNK_SIZE),
        "notification.enabled.channels": "sink",
        "notification.sink.topic.name": names.notification_topic,
        "provide.transaction.metadata": "true",
    }


def create_tables(capture: CaptureEnv) -> Tables:
    s = capture.suffix
    enum = capture.create_enum(f"cmp_mood_{s}", ["sad", "ok", "happy"])
    tables = Tables(types=f"cmp_types_{s}", composite=f"cmp_comp_{s}", keyless=f"cmp_nokey_{s}",
                    sync=f"cmp_sync_{s}", enum=enum, edge=f"cmp_edge_{s}", key_only=f"cmp_keyonly_{s}")
    capture.create_table(TYPES_COLUMNS.format(enum=enum), tables.types)
    capture.create_table("region text, n bigint, label varchar(40), amount numeric(12, 3), "
                         "PRIMARY KEY (region, n)", tables.composite)
    capture.create_table("a integer, b text", tables.keyless)
    capture.sql(f"ALTER TABLE {tables.keyless} REPLICA IDENTITY FULL")
    capture.create_table("id integer PRIMARY KEY, label text DEFAULT 'sync', n int DEFAULT 42, "
                         "created timestamptz DEFAULT now(), day date DEFAULT CURRENT_DATE, seq serial", tables.sync)
    capture.create_table(EDGE_COLUMNS, tables.edge)
    capture.sql(f"ALTER TABLE {tables.edge} REPLICA IDENTITY FULL")
    capture.create_table(KEY_ONLY_COLUMNS.format(enum=enum), tables.key_only)  # default replica identity
    return tables


def create_signal_table(capture: CaptureEnv, name: str) -> None:
    capture.create_table("id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048)", name)


def run_dml(capture: CaptureEnv, tables: Tables) -> None:
    """The DML script: every mapped type, NULLs, unchanged TOAST, key changes, deletes, a keyless table,
    a multi-row transaction, an ALTER TABLE between changes, and a TRUNCATE (skipped by default)."""
    t, c, k = tables.types, tables.composite, tables.keyless
    sql = capture.sql
    json_text = '{"b": 1, "a": [1, 2.5, "x"], "nested": {"k": null}}'
    text_value = 'héllo ✓ "quoted"\n\ttab \\ back'
    toast_value = base64.b64encode(os.urandom(15_000)).decode()
    for row_id in (1, 4, 5, 6, 7, 8, 9):
        sql(FULL_ROW.format(t=t, id=row_id), (text_value, f"0e0b6f53-8a7c-4a52-9d51-0c5d1a6b7f{row_id:02d}",
                                              json_text, json_text))
    sql(f"INSERT INTO {t} (id) VALUES (2)")
    sql(f"INSERT INTO {t} (id, c_integer, c_toast) VALUES (3, 1, %s)", (toast_value,))
    sql(f"UPDATE {t} SET c_integer = 2 WHERE id = 3")  # TOAST column unchanged: placeholder
    sql(f"UPDATE {t} SET c_numeric = -99999999.99, c_text = NULL, c_bytea = '\\x'::bytea, "
        "c_int_array = '{}', c_interval = '-3 years 2 days -00:00:01', c_date = '0001-01-01', "
        "c_timestamptz = '1969-12-31 23:59:59.999999+00', c_real = 'NaN', c_double = '-Infinity' WHERE id = 4")
    sql(f"UPDATE {t} SET c_timestamptz = '2024-01-01 00:00:00+00', c_timestamp = '2024-01-01 00:00:00', "
        "c_time = '10:00:00', c_timetz = '10:00:00+00', c_numeric = 5, c_double = 1e20, c_real = 0.1 WHERE id = 7")
    sql(f"UPDATE {t} SET c_timestamptz = '2024-01-01 00:00:00.5+00', c_timetz = '10:00:00.25-03:30' WHERE id = 8")
    sql(f"UPDATE {t} SET id = 10 WHERE id = 5")  # key change: delete + tombstone + create
    sql(f"DELETE FROM {t} WHERE id = 6")
    with capture.conn.cursor() as cur:  # several changes in one transaction
        cur.execute("BEGIN")
        cur.execute(f"INSERT INTO {c} SELECT 'eu', g, 'label ' || g, g * 1.5 FROM generate_series(1, 7) g")
        cur.execute(f"INSERT INTO {c} VALUES ('us', 1, NULL, NULL), ('us', 2, 'two', -0.001)")
        cur.execute(f"UPDATE {c} SET label = 'changed' WHERE region = 'eu' AND n = 3")
        cur.execute(f"DELETE FROM {c} WHERE region = 'eu' AND n = 4")
        cur.execute("COMMIT")
    sql(f"UPDATE {c} SET n = 40 WHERE region = 'eu' AND n = 5")
    sql(f"INSERT INTO {k} VALUES (1, 'one'), (2, 'two')")
    sql(f"UPDATE {k} SET b = 'uno' WHERE a = 1")
    sql(f"DELETE FROM {k} WHERE a = 2")
    sql(f"ALTER TABLE {c} ADD COLUMN note text DEFAULT 'n/a'")
    sql(f"INSERT INTO {c} (region, n, label) VALUES ('ap', 1, 'after alter')")
    sql(f"UPDATE {c} SET note = 'noted' WHERE region = 'eu' AND n = 1")
    sql(f"UPDATE {c} SET note = NULL WHERE region = 'eu' AND n = 2")  # JsonConverter writes the default
    sql(f"DELETE FROM {c} WHERE region = 'us' AND n = 1")  # before: the key, and the default for the rest
    sql(f"TRUNCATE {k}")
    sql(f"INSERT INTO {k} VALUES (3, 'three')")
    e = tables.edge
    for row in EDGE_ROWS:
        sql(f"INSERT INTO {e} VALUES {row}")
    sql(f"UPDATE {e} SET c_tsvector = 'updated' WHERE id IN (1, 2, 3, 4)")  # before images of every value
    sql(f"DELETE FROM {e} WHERE id = 6")
    o = tables.key_only
    for row_id in (1, 2, 3):
        sql(KEY_ONLY_ROW.format(t=o, id=row_id))
    sql(f"DELETE FROM {o} WHERE id = 1")  # before: the key, and each other column's default or fallback
    sql(f"UPDATE {o} SET id = 20, c_text = 'moved' WHERE id = 2")  # key change: the same before, in the delete
    sql(f"UPDATE {o} SET c_text = 'plain' WHERE id = 3")  # no old tuple: before is null


def signals(tables: Tables) -> list[tuple[str, str]]:
    """``(id, data)`` of the execute-snapshot signals, sent one at a time: two tables, a filtered
    re-snapshot, and a table without a primary key (skipped with NO_PRIMARY_KEY)."""
    t, c, k, e = (f"public.{name}" for name in (tables.types, tables.composite, tables.keyless, tables.edge))
    return [
        ("snap-1", json.dumps({"data-collections": [t, c, e], "type": "incremental"})),
        ("snap-2", json.dumps({"data-collections": [t], "type": "incremental", "additional-conditions": [
            {"data-collection": t, "filter": "id > 3 AND c_boolean IS NOT NULL"}]})),
        ("snap-3", json.dumps({"data-collections": [k], "type": "incremental"})),
    ]


SIDECAR_AVRO = "io.confluent.connect.avro.AvroConverter"
"""The sidecar's Avro converter in the Avro pair (what it emulates: Confluent's AvroConverter, its subjects and
wire format; Debezium's side runs Apicurio's converter, the one on Maven Central)."""


class Side:
    """One of the implementations under comparison; ``avro``: it writes Avro (``side_reader`` decodes it)."""

    def __init__(self, label: str, names: Names, start: Callable[[], None], stop: Callable[[], None],
                 log: Callable[[], str], avro: bool = False) -> None:
        self.label = label
        self.names = names
        self.start = start
        self.stop = stop
        self.log = log
        self.avro = avro


def debezium_side(capture: CaptureEnv, tables: Tables, workdir: Path, avro: bool = False) -> Side:
    tag = "dbza" if avro else "dbz"
    slot, publication, prefix = capture.variant(tag)
    names = Names(prefix=prefix, slot=slot, publication=publication,
                  signal_table=f"cmp_{tag}_signal_{capture.suffix}")
    create_signal_table(capture, names.signal_table)
    connect = DebeziumConnect(capture.stack, connector_properties(capture, tables, names), workdir / tag,
                              name=f"compat-{tag}-{capture.suffix}",
                              avro_registry_url=capture.stack.registry_api_url if avro else None)
    return Side(f"debezium{' avro' if avro else ''}", names, connect.start, connect.stop, connect.log_text, avro)


def sidecar_side(capture: CaptureEnv, tables: Tables, avro: bool = False) -> Side:
    tag = "siga" if avro else "sig"
    slot, publication, prefix = capture.variant(tag)
    names = Names(prefix=prefix, slot=slot, publication=publication,
                  signal_table=f"cmp_{tag}_signal_{capture.suffix}")
    create_signal_table(capture, names.signal_table)
    config = capture.connector_config(slot=slot, publication=publication, prefix=prefix, tables=tables.captured)
    # Only the sidecar's own deployment settings are added: where offsets go, its HTTP port (and, in the
    # Avro pair, the converters a Connect worker would have).
    config["config"].update(connector_properties(capture, tables, names))
    config["config"]["signaller.http.port"] = str(closed_port())
    if avro:
        for part in ("key", "value"):
            config["config"][f"{part}.converter"] = SIDECAR_AVRO
            config["config"][f"{part}.converter.schema.registry.url"] = capture.stack.registry_url
        config["config"]["offset.storage.file.filename"] = str(capture.workdir / f"offsets-{tag}.dat")
    car = capture.sidecar(config, label=f"sidecar{' avro' if avro else ''}")

    def start() -> None:
        capture.start_streaming(car, timeout_s=60)

    return Side(f"signaller{' avro' if avro else ''}", names, start, car.stop, car.log_text, avro)


def side_reader(capture: CaptureEnv, side: Side, topic: str) -> TopicReader:
    """A reader of one of ``side``'s topics: JSON, or Avro decoded with the stack's registry."""
    if not side.avro:
        return capture.reader(topic)
    return TopicReader(capture.stack.bootstrap_servers, topic, AvroDecoder(capture.stack.registry_url))


def _topics_with_prefix(capture: CaptureEnv, prefix: str) -> list[str]:
    admin = AdminClient({"bootstrap.servers": capture.stack.bootstrap_servers})
    return sorted(name for name in admin.list_topics(timeout=10).topics if name.startswith(prefix + "."))


def _completed(reader: TopicReader, signal_id: str) -> bool:
    reader.read_available(0.2)
    return any(r.value is not None and r.payload.get("type") == "COMPLETED" and r.payload.get("id") == signal_id
               for r in reader.records)


def run(capture: CaptureEnv, workdir: Path, timeout_s: float = 180.0) -> tuple[SideOutput, SideOutput]:
    """Run the script against both sides; return (debezium, signaller) outputs."""
    debezium, signaller = run_sides(capture, workdir, avro=False, timeout_s=timeout_s)
    return debezium, signaller


def run_sides(capture: CaptureEnv, workdir: Path, avro: bool, timeout_s: float = 180.0) -> list[SideOutput]:
    """Run the script against Debezium and the sidecar in JSON and, with ``avro``, the Avro pair beside them;
    return the outputs in that order (Debezium JSON, signaller JSON[, Debezium Avro, signaller Avro])."""
    tables = create_tables(capture)
    sides = [debezium_side(capture, tables, workdir), sidecar_side(capture, tables)]
    if avro:
        sides += [debezium_side(capture, tables, workdir, avro=True), sidecar_side(capture, tables, avro=True)]
    started: list[Side] = []

    def start(side: Side) -> None:
        side.start()
        started.append(side)

    try:
        with ThreadPoolExecutor(len(sides)) as pool:  # the JVMs start at the same time
            for future in [pool.submit(start, side) for side in sides]:
                future.result()
        run_dml(capture, tables)
        notification_readers = [side_reader(capture, side, side.names.notification_topic) for side in sides]
        for signal_id, data in signals(tables):
            for side in sides:
                capture.sql(f"INSERT INTO {side.names.signal_table} VALUES (%s, 'execute-snapshot', %s)",
                            (signal_id, data))
            for side, reader in zip(sides, notification_readers, strict=True):
                wait_until(lambda reader=reader, signal_id=signal_id: _completed(reader, signal_id), timeout_s,
                           f"{side.label}: COMPLETED notification of {signal_id}",
                           describe=lambda side=side: side.log()[-4000:])
        # A final change on every data table marks the end of each topic for both sides. The first one
        # (on the sync table) follows each side's own signal-table transactions, so its
        # source.sequence[0] (the previous commit) differs by design; the others follow it.
        end_marker = ("INSERT INTO {t} (id) VALUES (1000)", "INSERT INTO {t} (region, n) VALUES ('zz', 1000)",
                      "INSERT INTO {t} (a) VALUES (1000)", "INSERT INTO {t} (id) VALUES (1000)",
                      "INSERT INTO {t} (id) VALUES (1000)", KEY_ONLY_ROW.replace("{id}", "1000"))
        capture.sql(end_marker[3].format(t=tables.sync))
        for index in (0, 1, 2, 4, 5):
            capture.sql(end_marker[index].format(t=tables.captured[index]))
        outputs = []
        for side in sides:
            outputs.append(_collect(capture, side, tables, timeout_s))
    finally:
        for side in started:
            side.stop()
    return outputs


def _is_end_marker(record: Record) -> bool:
    if record.value is None or record.payload.get("op") != "c":
        return False
    after = record.payload["after"]
    return 1000 in (after.get("id"), after.get("n"), after.get("a"))


def _collect(capture: CaptureEnv, side: Side, tables: Tables, timeout_s: float) -> SideOutput:
    output = SideOutput(side.names)
    data_topics = [f"{side.names.prefix}.public.{t}" for t in tables.captured]
    for topic in data_topics:
        topic_reader = side_reader(capture, side, topic)
        topic_reader.wait_for(lambda records: any(_is_end_marker(r) for r in records), timeout_s,
                        f"{side.label}: the end marker", describe=lambda: side.log()[-4000:])
        output.topics[topic] = list(topic_reader.records)
    time.sleep(2.0)  # let notifications/transaction records after the marker land
    for topic in _topics_with_prefix(capture, side.names.prefix):
        if topic in output.topics:
            continue
        topic_reader = side_reader(capture, side, topic)
        topic_reader.read_available(3.0)
        output.topics[topic] = list(topic_reader.records)
    output.log = side.log()
    return output


def dump(output: SideOutput) -> dict[str, Any]:
    """A JSON-friendly view (for failure messages and for looking at the outputs by hand)."""
    return {topic: [{"key": r.key, "value": r.value} for r in records] for topic, records in output.topics.items()}
