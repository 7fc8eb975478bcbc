"""Every type PostgreSQL ships, side by side with Debezium: one wide table enumerated from ``pg_type``.

The table is built at run time from the catalog: one column per base, range and multirange type of
``pg_catalog`` (:func:`catalog_types`), one column of its array type, a few declared-modifier
variants (``numeric(38,10)``, ``bit(12)``, ``timestamp(3)``...), an enum, domains (over ``int4``,
over the enum, over ``text[]``), a composite type and arrays of those. A type the catalog lists but
:data:`VALUES` does not know is still a column (NULL only) and makes :func:`uncovered` report it, so
a type no one listed cannot go untested silently; :data:`EXCLUDED` names the types that cannot hold
a value, with the reason.

Rows: row *k* holds the *k*-th value of each type (NULL when the type has fewer), and each array
column a one-dimensional array (with a NULL element), an empty array, a two-dimensional one, then a
one-dimensional one without NULL. The columns Debezium cannot read in a snapshot (:data:`STREAM_ONLY`,
with the reason) are in a second table. The script, in both tables: insert every row, update every row
(``REPLICA IDENTITY FULL``: before images of every value), delete one; then an ``execute-snapshot`` of
the first table (READs of the rows left); an end marker closes each topic. :func:`run` returns both
sides' topics for :mod:`tests.compat.compare`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devtools.debezium import DebeziumConnect
from tests.compat import avro_output, scenario
from tests.integration.capture_helpers import CaptureEnv, closed_port, wait_until

EXCLUDED: Mapping[str, str] = {
    "gtsvector": "internal to text-search indexes: its input function refuses every value",
    "pg_brin_bloom_summary": "BRIN index internals: no input function accepts a value",
    "pg_brin_minmax_multi_summary": "BRIN index internals: no input function accepts a value",
    "pg_dependencies": "planner statistics (pg_statistic_ext_data): no input function accepts a value",
    "pg_mcv_list": "planner statistics (pg_statistic_ext_data): no input function accepts a value",
    "pg_ndistinct": "planner statistics (pg_statistic_ext_data): no input function accepts a value",
    "pg_node_tree": "parse trees of the catalog: no input function accepts a value",
}
"""``pg_catalog`` base types the suite has no value for, and why (they still get a NULL-only column)."""

_TEXT = ("", "héllo ✓ \"quoted\", comma", "it's {a,b} \\ back", "NULL")
VALUES: Mapping[str, tuple[str, ...]] = {
    "aclitem": ("postgres=arwdDxt/postgres", "=r/postgres"),
    "bit": ("0", "1"),
    "bool": ("true", "false"),
    "box": ("(1,2),(3,4)", "(0,0),(0,0)", "(-1e+308,1e-300),(1.5,-2.25)"),
    "bpchar": _TEXT,
    "bytea": ("\\x", "\\x00ff7f80", "\\xdeadbeef"),
    "char": ("x", " ", "\""),
    "cid": ("0", "4294967295"),
    "cidr": ("10.0.0.0/8", "::1/128", "2001:db8::/32"),
    "circle": ("<(1,2),3>", "<(0,0),0>", "<(-1e+300,1e-300),1e+300>"),
    "date": ("2024-02-29", "infinity", "-infinity", "0044-03-15 BC", "1970-01-01", "5874897-12-31", "4713-01-01 BC"),
    "float4": ("0", "-0", "NaN", "Infinity", "-Infinity", "3.4028235e+38", "1.4e-45", "0.1"),
    "float8": ("0", "-0", "NaN", "Infinity", "-Infinity", "1.7976931348623157e+308", "5e-324", "0.1"),
    "inet": ("192.168.0.1/24", "::ffff:1.2.3.4", "2001:db8::1", "0.0.0.0/0"),
    "int2": ("0", "-32768", "32767"),
    "int2vector": ("1 2 3", "", "-32768 32767"),
    "int4": ("0", "-2147483648", "2147483647"),
    "int8": ("0", "-9223372036854775808", "9223372036854775807"),
    "interval": ("1 mon 2 days 03:04:05.5", "0", "-178000000 years", "178000000 years", "P1Y2M3DT4H5M6.789S",
                 "-1 days +23:59:59.999999"),
    "json": ("{}", "{\"a\": [1, \"x,\\\"y\\\"\"], \"é\": null}", "[]", "\"s\"", "1e400"),
    "jsonb": ("{}", "{\"a\": [1, \"x,\\\"y\\\"\"], \"é\": null}", "[]", "\"s\"", "123.450"),
    "jsonpath": ("$.a[*] ? (@ > 1)", "$", "strict $.\"é\""),
    "line": ("{1,2,3}", "{0,-1,0}", "{-1e+300,1e-300,0}"),
    "lseg": ("[(1,2),(3,4)]", "[(0,0),(0,0)]", "[(-1e+308,1e-300),(1.5,-2.25)]"),
    "macaddr": ("08:00:2b:01:02:03", "ff:ff:ff:ff:ff:ff"),
    "macaddr8": ("08:00:2b:01:02:03:04:05", "08:00:2b:01:02:03"),
    "money": ("12.34", "-92233720368547758.08", "92233720368547758.07", "0"),
    "name": ("nm", "héllo", ""),
    "numeric": ("0", "-12345678901234567890.123456789", "1e-100", "NaN", "Infinity", "-Infinity", "1.50"),
    "oid": ("0", "4294967295", "1"),
    "oidvector": ("1 2 3", "", "4294967295"),
    "path": ("[(1,2),(3,4)]", "((0,0),(1,1),(2,0))", "[(1e+300,-1e-300)]"),
    "pg_lsn": ("16/B374D848", "0/0", "FFFFFFFF/FFFFFFFF"),
    "pg_snapshot": ("10:20:10,14,15", "1:1:"),
    "point": ("(1.5,-2.25)", "(0,0)", "(NaN,Infinity)", "(-1e+308,1e-300)"),
    "polygon": ("((1,2),(3,4),(5,6))", "((0,0),(1,0),(0,0))", "((1e+300,-1e-300))"),
    "refcursor": ("cur", "", "é, \"x\""),
    "regclass": ("pg_class", "pg_type"),
    "regcollation": ("\"POSIX\"", "\"C\""),
    "regconfig": ("english", "simple"),
    "regdictionary": ("simple", "english_stem"),
    "regnamespace": ("public", "pg_catalog"),
    "regoper": ("96",),
    "regoperator": ("+(integer,integer)", "||(text,text)"),
    "regproc": ("now", "pg_catalog.int4in"),
    "regprocedure": ("now()", "abs(integer)"),
    "regrole": ("postgres",),
    "regtype": ("integer", "character varying", "timestamp with time zone"),
    "text": _TEXT,
    "tid": ("(1,2)", "(0,0)", "(4294967295,65535)"),
    "time": ("00:00:00", "24:00:00", "13:14:15.123456", "23:59:59.999999"),
    "timestamp": ("2024-02-29 13:14:15.123456", "infinity", "-infinity", "0044-03-15 12:00:00.123456 BC",
                  "1970-01-01 00:00:00", "1582-10-04 23:59:59"),
    "timestamptz": ("2024-02-29 13:14:15.123456+05:45", "infinity", "-infinity", "0044-03-15 12:00:00+00 BC",
                    "1969-12-31 23:59:59.999999+00"),
    "timetz": ("00:00:00+1459", "24:00:00-1459", "13:14:15.123456+02", "10:00:00.25-03:30"),
    "tsquery": ("fat & (rat | cat)", "", "'it''s' & !x:*"),
    "tsvector": ("a fat cat", "", "'it''s':1A,2B 'héllo'"),
    "txid_snapshot": ("10:20:10,14,15", "1:1:"),
    "uuid": ("00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"),
    "varbit": ("", "1010", "1"),
    "varchar": _TEXT,
    "xid": ("0", "4294967295"),
    "xid8": ("0", "18446744073709551615"),
    "xml": ("<a b=\"1\">é</a>", "", "text, \"quoted\""),
    "int4range": ("[1,3)", "empty", "(,)", "[-2147483648,2147483647)"),
    "int8range": ("[1,3)", "empty", "(,5]"),
    "numrange": ("[1.5,2.5]", "empty", "(,0)", "(NaN,)"),
    "tsrange": ("[2024-01-01,infinity)", "empty", "(\"0044-03-15 BC\",)"),
    "tstzrange": ("[2024-01-01 00:00+02,)", "empty", "(-infinity,infinity)"),
    "daterange": ("[2024-01-01,2024-12-31]", "empty", "(,infinity)"),
    "int4multirange": ("{}", "{[1,3), [5,7)}"),
    "int8multirange": ("{}", "{[1,3), (,0]}"),
    "nummultirange": ("{}", "{[1.5,2.5]}"),
    "tsmultirange": ("{}", "{[2024-01-01,2024-02-01)}"),
    "tstzmultirange": ("{}", "{[2024-01-01 00:00+00,)}"),
    "datemultirange": ("{}", "{[2024-01-01,2024-01-05), [2024-02-01,)}"),
}
"""Ordinary and edge values of each ``pg_catalog`` type, as PostgreSQL input text."""

MODIFIED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("numeric(38,10)", "numeric", ("0", "-1234567890123456789012345678.0123456789", "NaN", "1e-10", "5")),
    ("numeric(5,0)", "numeric", ("0", "-99999", "99999")),
    ("bit(12)", "bit", ("000000000000", "101010101010")),
    ("varbit(5)", "varbit", ("", "10101")),
    ("bpchar(3)", "bpchar", ("", "ab", "é\"x")),
    ("varchar(5)", "varchar", ("", "héllo")),
    ("time(0)", "time", ("24:00:00", "13:14:15.5")),
    ("time(3)", "time", ("13:14:15.123456", "00:00:00")),
    ("timetz(0)", "timetz", ("13:14:15.5+02",)),
    ("timestamp(0)", "timestamp", ("2024-02-29 13:14:15.5", "infinity", "0044-03-15 12:00:00 BC")),
    ("timestamp(3)", "timestamp", ("2024-02-29 13:14:15.123456", "-infinity", "294276-12-31 23:59:59")),
    ("timestamptz(0)", "timestamptz", ("2024-02-29 13:14:15.5+00", "infinity")),
    ("timestamptz(3)", "timestamptz", ("2024-02-29 13:14:15.123456+00", "-infinity")),
    ("interval(0)", "interval", ("1 day 00:00:00.5",)),
    ("interval year to month", "interval", ("1 year 2 months", "-3 months")),
)
"""Declared type modifiers that change the encoding: ``(column type, its base type, values)``."""


_MANY_KEYS = ", ".join(f'"key{i}"=>"{i}"' for i in range(30))
EXTENSIONS: Mapping[str, tuple[str, tuple[str, ...]]] = {
    "hstore": ("hstore", ("", '"a"=>"1", "b"=>NULL', '"k\\"q"=>"v,\\\\x", "é"=>"", "NULL"=>"null", "=>"=>" "',
                          _MANY_KEYS)),
    "geometry": ("postgis", ("POINT(1 2)", "SRID=4326;POINT(-71.06 42.36)", "LINESTRING(0 0,1 1,2 0)",
                             "SRID=3857;POLYGON((0 0,4 0,4 4,0 4,0 0),(1 1,2 1,2 2,1 1))", "POINT EMPTY",
                             "POINT Z (1 2 3)", "GEOMETRYCOLLECTION EMPTY")),
    "geography": ("postgis", ("POINT(1 2)", "SRID=4326;LINESTRING(-71.06 42.36,-71.07 42.37)",
                              "MULTIPOINT((0 0),(1 1))")),
}
"""Extension types Debezium maps: ``type -> (extension, values)``; ``CREATE EXTENSION IF NOT EXISTS``
(shared by every test, never dropped) when PostgreSQL has it, else the type is skipped."""


@dataclass(frozen=True)
class CatalogType:
    """One ``pg_catalog`` type: ``typname``, ``typtype`` (``b``/``r``/``m``), whether it has an array type."""

    name: str
    kind: str
    has_array: bool


def catalog_types(capture: CaptureEnv) -> list[CatalogType]:
    """The base, range and multirange types of ``pg_catalog`` (array types aside), by name."""
    rows = capture.sql(
        "SELECT t.typname, t.typtype, t.typarray <> 0 FROM pg_type t "
        "JOIN pg_namespace n ON n.oid = t.typnamespace "
        "WHERE n.nspname = 'pg_catalog' AND t.typtype IN ('b', 'r', 'm') "
        "AND NOT EXISTS (SELECT 1 FROM pg_type a WHERE a.typarray = t.oid) ORDER BY t.typname"
    )
    return [CatalogType(name, kind, has_array) for name, kind, has_array in rows]


def uncovered(types: list[CatalogType]) -> list[str]:
    """Types of the catalog neither in :data:`VALUES` nor in :data:`EXCLUDED`."""
    return [t.name for t in types if t.name not in VALUES and t.name not in EXCLUDED]


def _literal(value: str, type_sql: str) -> str:
    return "'" + value.replace("'", "''") + "'::" + type_sql


@dataclass
class Column:
    """A column of the wide table: its name, SQL type and per-row SQL expressions (None = NULL)."""

    name: str
    type_sql: str
    values: list[str | None]


def _scalar(name: str, type_sql: str, values: tuple[str, ...]) -> Column:
    return Column(name, type_sql, [_literal(v, type_sql) for v in values])


def _array(name: str, element_sql: str, values: tuple[str, ...]) -> Column:
    """Rows: ``[v0, NULL, v1...]``, ``{}``, a two-dimensional ``[[v0, v1], [v1, v0]]``, ``[v1..., v0]``
    (no NULL element)."""
    items = [_literal(v, element_sql) for v in values]
    first, second = items[0], items[1 % len(items)]
    return Column(name, f"{element_sql}[]", [
        f"ARRAY[{first}, NULL{''.join(', ' + i for i in items[1:])}]",
        f"'{{}}'::{element_sql}[]",
        f"ARRAY[[{first}, {second}], [{second}, {first}]]",
        f"ARRAY[{', '.join(items[1:] + items[:1])}]",
    ])


def _modified_name(type_sql: str) -> str:
    """``numeric(38,10)`` -> ``numeric_38_10``: a column name that says its type."""
    return re.sub(r"\W+", "_", type_sql).strip("_")


STREAM_ONLY: Mapping[str, str] = {
    "c_refcursor": "Debezium's snapshot reads a refcursor column with pgjdbc's getObject, which runs FETCH ALL IN "
                   "<the value> (a cursor that does not exist, or '' -> zero-length identifier): the table's "
                   "snapshot fails",
}
"""Columns Debezium 3.7 cannot read in a snapshot (its incremental snapshot of the whole table fails), with
the reason: they live in a second table, compared in streamed events only."""


@dataclass
class WideTable:
    """The snapshotted table and the streamed-only one (:data:`STREAM_ONLY`), the user-defined types
    they need, their columns and the row count."""

    name: str
    columns: list[Column]
    user_types: list[str]
    streamed_name: str = ""
    streamed_columns: list[Column] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return max(len(c.values) for c in self.columns + self.streamed_columns) + 1  # the last row: all NULLs

    @property
    def tables(self) -> list[tuple[str, list[Column]]]:
        """``(table, columns)`` of both tables, the snapshotted one first."""
        return [(self.name, self.columns), (self.streamed_name, self.streamed_columns)]


def _has_extension(capture: CaptureEnv, extension: str) -> bool:
    """Create ``extension`` if PostgreSQL ships it (False when it does not)."""
    if not capture.sql("SELECT 1 FROM pg_available_extensions WHERE name = %s", (extension,)):
        return False
    capture.sql(f"CREATE EXTENSION IF NOT EXISTS {extension}")
    return True


def build(capture: CaptureEnv, types: list[CatalogType]) -> WideTable:
    """Create the user-defined types and the wide table (``REPLICA IDENTITY FULL``)."""
    s = capture.suffix
    enum = capture.create_enum(f"cmp_all_mood_{s}", ["sad", "o'k, \"fine\"", "héllo"])
    user = [f"cmp_all_dint_{s}", f"cmp_all_denum_{s}", f"cmp_all_darr_{s}", f"cmp_all_comp_{s}"]
    capture.sql(f"CREATE DOMAIN {user[0]} AS integer CHECK (VALUE > -100)")
    capture.sql(f"CREATE DOMAIN {user[1]} AS {enum}")
    capture.sql(f"CREATE DOMAIN {user[2]} AS text[]")
    capture.sql(f"CREATE TYPE {user[3]} AS (a integer, b text, c {enum})")
    for name in user:
        capture.types.insert(0, name)  # dropped before the enum they use
    columns: list[Column] = []
    for t in types:
        values = VALUES.get(t.name, ())
        type_sql = f'"{t.name}"' if t.name == "char" else t.name
        columns.append(_scalar(f"c_{t.name}", type_sql, values) if values else Column(f"c_{t.name}", type_sql, []))
        if t.has_array and values:
            columns.append(_array(f"a_{t.name}", type_sql, values))
    for type_sql, _base, values in MODIFIED:
        columns.append(_scalar(f"m_{_modified_name(type_sql)}", type_sql, values))
        columns.append(_array(f"ma_{_modified_name(type_sql)}", type_sql, values))
    for type_sql, (extension, values) in EXTENSIONS.items():
        if _has_extension(capture, extension):
            columns += [_scalar(f"x_{type_sql}", type_sql, values), _array(f"x_{type_sql}_arr", type_sql, values)]
    enum_values = ("sad", "o'k, \"fine\"", "héllo")
    columns += [
        _scalar("u_enum", enum, enum_values), _array("u_enum_arr", enum, enum_values),
        _scalar("u_dint", user[0], ("0", "-99", "2147483647")), _array("u_dint_arr", user[0], ("1", "2")),
        _scalar("u_denum", user[1], ("sad", "héllo")),
        _scalar("u_darr", user[2], ("{}", "{a,\"b, c\",NULL}")),
        _scalar("u_comp", user[3], ("(1,\"x, y\",sad)", "(,,)")), _array("u_comp_arr", user[3], ("(1,a,sad)",)),
    ]
    table = WideTable(f"cmp_all_{s}", [c for c in columns if c.name not in STREAM_ONLY], [enum, *user],
                      f"cmp_allx_{s}", [c for c in columns if c.name in STREAM_ONLY])
    for name, table_columns in table.tables:
        capture.create_table("id integer PRIMARY KEY, " + ", ".join(f"{c.name} {c.type_sql}" for c in table_columns),
                             name)
        capture.sql(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
    return table


def run_dml(capture: CaptureEnv, table: WideTable) -> None:
    """In each table: insert every row, update every row (one column: before images of all), delete row 1."""
    for name, columns in table.tables:
        names = ", ".join(c.name for c in columns)
        for row in range(table.rows):
            exprs = ", ".join((c.values[row] if row < len(c.values) else None) or "NULL" for c in columns)
            capture.sql(f"INSERT INTO {name} (id, {names}) VALUES ({row + 1}, {exprs})")
        capture.sql(f"UPDATE {name} SET id = id")
        capture.sql(f"DELETE FROM {name} WHERE id = 1")


def connector_properties(names: scenario.Names, table: WideTable, modes: Mapping[str, str]) -> dict[str, str]:
    """Both sides' configuration: the scenario's, one table, and the modes under test."""
    return {
        "topic.prefix": names.prefix, "slot.name": names.slot, "publication.name": names.publication,
        "publication.autocreate.mode": "filtered", "plugin.name": "pgoutput",
        "table.include.list": f"public.{table.name},public.{table.streamed_name}", "snapshot.mode": "no_data",
        "signal.data.collection": f"public.{names.signal_table}", "incremental.snapshot.chunk.size": "3",
        "notification.enabled.channels": "sink", "notification.sink.topic.name": names.notification_topic,
        **modes,
    }


def run(capture: CaptureEnv, workdir: Path, modes: Mapping[str, str], timeout_s: float = 240.0,
        avro: bool = False) -> tuple[WideTable, list[scenario.Names], list[dict[str, Any]]]:
    """Run the script against Debezium and the sidecar; return the table, both sides' names and
    their data topics (``topic -> [{"key", "value"}]``), Debezium's first. With ``avro`` both write Avro
    (Debezium through Apicurio's converter, as in ``scenario``) and the records are decoded, each schema id
    replaced by its subject's version (``avro_output.dump``)."""
    table = build(capture, catalog_types(capture))
    sides: list[scenario.Side] = []
    for tag in ("dbz", "sig"):
        slot, publication, prefix = capture.variant(tag + ("a" if avro else ""))
        names = scenario.Names(prefix, slot, publication, f"cmp_all_{tag}_signal_{capture.suffix}")
        scenario.create_signal_table(capture, names.signal_table)
        properties = connector_properties(names, table, modes)
        if tag == "dbz":
            connect = DebeziumConnect(capture.stack, properties, workdir / "debezium", name=f"all-{capture.suffix}",
                                      avro_registry_url=capture.stack.registry_api_url if avro else None)
            sides.append(scenario.Side("debezium", names, connect.start, connect.stop, connect.log_text, avro))
        else:
            config = capture.connector_config(slot=slot, publication=publication, prefix=prefix,
                                              tables=[table.name, table.streamed_name])
            config["config"].update(properties)
            config["config"]["signaller.http.port"] = str(closed_port())
            if avro:
                for part in ("key", "value"):
                    config["config"][f"{part}.converter"] = scenario.SIDECAR_AVRO
                    config["config"][f"{part}.converter.schema.registry.url"] = capture.stack.registry_url
            car = capture.sidecar(config, label="sidecar")
            sides.append(scenario.Side("signaller", names, lambda car=car: capture.start_streaming(car, 60),
                                       car.stop, car.log_text, avro))
    for side in sides:
        side.start()
    try:
        run_dml(capture, table)
        readers = [scenario.side_reader(capture, side, side.names.notification_topic) for side in sides]
        data = json.dumps({"data-collections": [f"public.{table.name}"], "type": "incremental"})
        for side in sides:
            capture.sql(f"INSERT INTO {side.names.signal_table} VALUES ('all-1', 'execute-snapshot', %s)", (data,))
        for side, reader in zip(sides, readers, strict=True):
            wait_until(lambda reader=reader: scenario._completed(reader, "all-1"), timeout_s,
                       f"{side.label}: COMPLETED", describe=lambda side=side: side.log()[-4000:])
        # The first change after the snapshot follows each side's own watermark transactions, so its
        # source.sequence[0] differs by design (allow-listed for the streamed-only table): it goes there.
        for name, _columns in reversed(table.tables):
            capture.sql(f"INSERT INTO {name} (id) VALUES (1000)")
        outputs = []
        for side in sides:
            records = {}
            for name, _columns in table.tables:
                topic = f"{side.names.prefix}.public.{name}"
                reader = scenario.side_reader(capture, side, topic)
                reader.wait_for(lambda records: any(scenario._is_end_marker(r) for r in records), timeout_s,
                                f"{side.label}: the end marker", describe=lambda side=side: side.log()[-4000:])
                records[topic] = list(reader.records)
            if avro:
                registered = avro_output.subjects(capture.stack.registry_url, side.names.prefix)
                outputs.append(avro_output.dump(records, registered))
            else:
                outputs.append({topic: [{"key": r.key, "value": r.value} for r in rs] for topic, rs in records.items()})
    finally:
        for side in sides:
            side.stop()
    return table, [side.names for side in sides], outputs
