"""Regenerate ``schemas/type-mapping.md``, ``schemas/envelope.example.json`` and ``schemas/signal.schema.json``
from the code.

``python -m schemas.generate`` writes them; ``tests/unit/test_schemas_docs.py`` fails when the
committed files differ from what the code produces, so the documentation cannot drift.
"""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.wire.envelope import EnvelopeSerializer

HERE = Path(__file__).parent
SAMPLES: list[tuple[str, int, str]] = [
    ("int2", -1, "32767"), ("int4", -1, "42"), ("int8", -1, "9007199254740993"),
    ("numeric", (10 << 16 | 2) + 4, "-12.50"), ("numeric", -1, "3.14159"),
    ("float4", -1, "1.5"), ("float8", -1, "2.25"), ("bool", -1, "t"), ("text", -1, "hello"),
    ("varchar", 20 + 4, "hi"), ("bpchar", 3 + 4, "ab "), ("bytea", -1, "\\x0102ff"),
    ("date", -1, "2024-03-01"), ("time", -1, "13:45:30.25"), ("timetz", -1, "13:45:30+02"),
    ("timestamp", -1, "2024-03-01 13:45:30.123456"), ("timestamptz", -1, "2024-03-01 13:45:30.5+02"),
    ("interval", -1, "1 day 02:00:00"), ("uuid", -1, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    ("json", -1, '{"a": 1}'), ("jsonb", -1, '{"a": 1}'), ("_int4", -1, "{1,2,NULL}"), ("_text", -1, '{a,"b c"}'),
    ("point", -1, "(1.5,-2.25)"), ("tsvector", -1, "'a' 'cat':3 'fat':2A"), ("_tsvector", -1, "{\"'a' 'b'\"}"),
    ("date", -1, "infinity"), ("date", -1, "-infinity"), ("date", -1, "0044-03-15 BC"),
    ("_date", -1, "{infinity,-infinity}"),
    ("timestamp", -1, "infinity"), ("timestamp", -1, "-infinity"), ("timestamp", 3, "infinity"),
    ("timestamp", 3, "-infinity"), ("timestamptz", -1, "-infinity"),
    ("line", -1, "{1,2,3}"), ("lseg", -1, "[(1,2),(3,4)]"), ("box", -1, "(3,4),(1,2)"),
    ("path", -1, "[(1,2),(3,4)]"), ("polygon", -1, "((1,2),(3,4),(5,6))"), ("circle", -1, "<(1,2),3>"),
    ("int2vector", -1, "1 2 3"), ("oidvector", -1, "1 2 3"),
    ("_line", -1, '{"{1,2,3}",NULL}'), ("_box", -1, "{(3,4),(1,2);(0,0),(0,0)}"), ("_circle", -1, '{"<(1,2),3>"}'),
    ("_int2vector", -1, '{"1 2",""}'), ("_oidvector", -1, '{"1 2"}'), ("_bit", 1, "{1,0}"), ("_bit", 12, "{101}"),
    ("hstore", -1, '"a"=>"1", "b"=>NULL'), ("_hstore", -1, '{"\\"a\\"=>\\"1\\"",NULL}'),
    ("geometry", -1, "0101000020E6100000000000000000F03F0000000000000040"),
    ("geography", -1, "0101000020E6100000000000000000F03F0000000000000040"),
    ("_geometry", -1, "{0101000000000000000000F03F0000000000000040:NULL}"),
]
ALLOWED_DIFFERENCES = [
    "`date` BC values in snapshot READs: Debezium drops the era (`0044-03-15 BC` is read as `0044-03-15` AD); "
    "signaller keeps it, as Debezium's streamed events do.",
    "`date[]` BC elements: Debezium drops the era, streamed and in READs; signaller keeps it.",
    "`timestamp[]` elements before 1582-10-15: Debezium reads them in the Julian calendar (moved by days); "
    "signaller keeps PostgreSQL's proleptic Gregorian calendar, as Debezium does for a `timestamp` column.",
    "`date` `infinity`/`-infinity` in snapshot READs: Debezium writes -622191234/-625821272 there and "
    "2146033979/-2147472691 in streamed events; signaller writes the streamed values in both.",
    "`timestamptz[]` `-infinity` elements: Debezium writes `+292269055-12-02T23:00:00.000000Z`; signaller "
    "writes `-infinity`, as Debezium does for a `timestamptz` column.",
    "`timestamptz[]` BC elements: Debezium drops the era; signaller keeps it, as Debezium does for a "
    "`timestamptz` column.",
    "`time[]` elements: Debezium truncates them to milliseconds and writes `24:00:00` as 0; signaller keeps "
    "the microseconds and `24:00:00`, as Debezium does for a `time` column.",
    "Multi-dimensional values of any array column: Debezium writes Java object ids (`[Ljava.lang.String;@...`) "
    "or nulls; signaller writes null.",
    "`numeric[]` holding `NaN`/`±Infinity` (`precise`): Debezium writes null for the whole array; signaller "
    "writes null for those elements only.",
    "`line[]`, `lseg[]`, `box[]`, `path[]`, `polygon[]`, `circle[]`, `int2vector[]`, `oidvector[]`: Debezium "
    "writes null for every non-empty value; signaller writes the elements, in Debezium's schema.",
    "`name` columns in streamed events: Debezium writes null (its READs carry the value); signaller writes "
    "the value in both.",
    "`int2vector`/`oidvector`: Debezium writes `[]` for every non-empty value and null for an empty one; "
    "signaller writes the numbers.",
]
"""The README's allow-list entries about values (\"Differences from Debezium\")."""
NOTES = [
    "As Debezium 3.7 (the compatibility suite covers every type of `pg_type`, `tests/compat/all_types.py`):",
    "`bit[]`/`bit(n)[]` columns are declared with their element's schema (boolean, `io.debezium.data.Bits`) and",
    "are null in every event; an array with a NULL element whose items are required (enum, `tsvector`,",
    "`int2vector`, `oidvector` arrays) is null; `hstore` pairs come in Java `HashMap` order; types without a",
    "mapping (`aclitem`, `cid`, `tid`, `xid`, `xid8`, `pg_lsn`, `pg_snapshot`, `txid_snapshot`, `tsquery`,",
    "`jsonpath`, `refcursor`, the `reg*` types, multiranges, index and statistics internals, and arrays of these;",
    "`money[]`, `name[]`, `interval[]`, `varbit[]`, `xml[]`, `point[]`, `refcursor[]`; composite types and their",
    "arrays; arrays of domains) are left out of events, or written as their text's bytes with",
    "`include.unknown.datatypes=true` (arrays of the latter as arrays of required items, each element's bytes;",
    "the arrays listed by name stay left out).",
    "`line`, `circle`, `lseg`, `box`, `path`, `polygon`, `geometry` and `geography` fields are optional even for",
    "NOT NULL columns (Debezium's schema builders declare them so). A NOT NULL column missing from a key-only old",
    "tuple (default replica identity: deletes, key changes) is written as the schema default, else the type's",
    "fallback (`0`, `\"\"`, `false`, empty bytes, the epoch, `[]`, `{}`), as Debezium's `JdbcValueConverters` do.",
]
"""What the table does not show."""
MODES = [
    ("default", TypeModes()),
    ("decimal.handling.mode=string", TypeModes(decimal_handling="string")),
    ("decimal.handling.mode=double", TypeModes(decimal_handling="double")),
    ("time.precision.mode=connect", TypeModes(time_precision="connect")),
    ("binary.handling.mode=base64", TypeModes(binary_handling="base64")),
    ("hstore.handling.mode=map", TypeModes(hstore_handling="map")),
]


def _column(type_name: str, typmod: int) -> Column:
    element = type_name[1:] if type_name.startswith("_") else None
    return Column("c", 0, type_name, typmod, element_type_name=element)


def _schema_text(schema: dict[str, object]) -> str:
    parts = [str(schema.get("type"))]
    if schema.get("name"):
        parts.append(str(schema["name"]))
    if schema.get("parameters"):
        parts.append(json.dumps(schema["parameters"], sort_keys=True))
    for member in ("keys", "values", "items"):
        if schema.get(member):
            parts.append(f"{member} " + _schema_text(schema[member]))  # type: ignore[arg-type]
    return " ".join(parts)


def type_mapping_markdown() -> str:
    lines = [
        "# PostgreSQL type → Debezium JSON (generated by `python -m schemas.generate`)",
        "",
        "Each row: the column type (with modifier), the Connect schema of the field, and the payload",
        "value for the sample text PostgreSQL sends. Non-default modes are listed where they change",
        "the result. Source of truth: `signaller/sources/postgres/codecs.py`; the values are Debezium 3.7's",
        "(the compatibility suite, `tests/compat/`, compares them with the real connector) except the",
        "allowed differences listed below the table.",
        "",
        "| type | mode | sample (pgoutput text) | Connect schema | payload |",
        "|---|---|---|---|---|",
    ]
    for type_name, typmod, sample in SAMPLES:
        shown: set[str] = set()
        for label, modes in MODES:
            codec = codec_for(_column(type_name, typmod), modes)
            row = f"{_schema_text(codec.schema)} | `{json.dumps(codec.convert(sample))}`"
            if label != "default" and row in shown:
                continue
            shown.add(row)
            name = type_name + (f"({typmod - 4})" if typmod > 4 and type_name in ("varchar", "bpchar") else "")
            if type_name == "numeric" and typmod > 0:
                name = f"numeric({(typmod - 4) >> 16},{(typmod - 4) & 0xFFFF})"
            if type_name in ("timestamp", "_bit") and typmod >= 0:
                name = f"{type_name}({typmod})"
            lines.append(f"| {name} | {label} | `{sample}` | {row} |")
    lines += ["", *NOTES]
    lines += ["", "Allowed differences from Debezium (the README's allow-list):", ""]
    lines += [f"- {text}" for text in ALLOWED_DIFFERENCES]
    return "\n".join(lines) + "\n"


def envelope_example() -> str:
    table = TableSchema(TableId("public", "orders"), (
        Column("id", 23, "int4", optional=False, is_key=True), Column("note", 25, "text"),
    ))
    serializer = EnvelopeSerializer.for_table(table, TypeModes(), topic_prefix="pg1", database="shop")
    event = ChangeEvent(Op.UPDATE, table.table_id, None, {"id": 17, "note": "hello"}, 24023160, 24023200,
                        24023128, 771, 1787392800200123)
    value = json.loads(serializer.serialize_value(event, ts_us_now=1787392800201456))
    key = json.loads(serializer.serialize_key({"id": 17}) or b"null")
    return json.dumps({"topic": serializer.topic, "key": key, "value": value}, indent=2) + "\n"


def signal_schema_text() -> str:
    """The signal JSON Schema as the package ships it (``signaller/signals/signal.schema.json``)."""
    return importlib.resources.files("signaller.signals").joinpath("signal.schema.json").read_text(encoding="utf-8")


def main() -> None:
    (HERE / "type-mapping.md").write_text(type_mapping_markdown())
    (HERE / "envelope.example.json").write_text(envelope_example())
    (HERE / "signal.schema.json").write_text(signal_schema_text(), encoding="utf-8")


if __name__ == "__main__":
    main()
