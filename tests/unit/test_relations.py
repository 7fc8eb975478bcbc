"""RelationCache: versions, key columns, optionality, type resolution, built-in type table."""

from __future__ import annotations

import json
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest

from signaller.errors import DecodeError, TerminalSourceError
from signaller.model import Column, TableId
from signaller.sources.postgres.pgoutput import Begin, Insert, Relation, RelationColumn, Type, decode_message
from signaller.sources.postgres.relations import BUILTIN_TYPES, RelationCache, ResolvedType

pytestmark = pytest.mark.unit

REAL_MESSAGES = Path(__file__).parent / "data" / "pgoutput_real_messages.json"


def rel(
    *columns: RelationColumn, identity: str = "d", relation_id: int = 100, name: str = "orders"
) -> Relation:
    return Relation(relation_id, "shop", name, identity, columns)  # type: ignore[arg-type]


ID = RelationColumn(1, "id", 20, -1)
ID_UNFLAGGED = RelationColumn(0, "id", 20, -1)
NAME = RelationColumn(0, "name", 1043, 24)
AMOUNT = RelationColumn(0, "amount", 1700, 655366)


class FakeResolver:
    """TypeResolver test double that counts calls per OID."""

    def __init__(self, types: dict[int, ResolvedType]) -> None:
        self.types = dict(types)
        self.calls: list[int] = []

    def __call__(self, type_oid: int) -> ResolvedType:
        self.calls.append(type_oid)
        return self.types[type_oid]


# ---------------------------------------------------------------------------------------------
# Schema derivation and versions
# ---------------------------------------------------------------------------------------------


def test_schema_from_relation_with_builtin_types() -> None:
    cache = RelationCache()
    assert cache.apply_relation(rel(ID, NAME, AMOUNT)) is True
    schema = cache.schema(100)
    assert schema.table_id == TableId("shop", "orders")
    assert schema.columns == (
        Column("id", 20, "int8", -1, optional=False, is_key=True),
        Column("name", 1043, "varchar", 24, optional=True, is_key=False),
        Column("amount", 1700, "numeric", 655366, optional=True, is_key=False),
    )
    assert schema.key_columns == ("id",)
    assert cache.column_names(100) == ("id", "name", "amount")
    assert cache.get(100).column_names == ("id", "name", "amount")


def test_column_names_zip_with_tuple_data() -> None:
    cache = RelationCache()
    cache.apply_relation(rel(ID, NAME))
    insert = Insert(100, ("7", None))
    assert dict(zip(cache.column_names(insert.relation_id), insert.new, strict=True)) == {
        "id": "7",
        "name": None,
    }


def test_version_starts_at_one_and_identical_resend_does_not_bump() -> None:
    cache = RelationCache()
    assert cache.version(100) == 0
    assert 100 not in cache
    assert cache.apply_relation(rel(ID, NAME)) is True
    assert cache.version(100) == 1
    assert 100 in cache
    # A new session re-sends the same Relation (sometimes inside a streamed block, with an xid).
    assert cache.apply_relation(rel(ID, NAME)) is False
    streamed = Relation(100, "shop", "orders", "d", (ID, NAME), xid=9)
    assert cache.apply_relation(streamed) is False
    assert cache.version(100) == 1
    assert cache.get(100).relation.xid is None


def test_alter_table_replaces_the_relation_and_bumps_the_version() -> None:
    cache = RelationCache()
    cache.apply_relation(rel(ID, NAME))
    before = cache.get(100)
    # ALTER TABLE shop.orders ADD COLUMN amount numeric(10,2)
    assert cache.apply(rel(ID, NAME, AMOUNT)) is True
    after = cache.get(100)
    assert after.version == before.version + 1 == 2
    assert after.column_names == ("id", "name", "amount")
    assert before.column_names == ("id", "name")  # entries are immutable snapshots
    # ALTER TABLE ... ALTER COLUMN name TYPE varchar(40)
    cache.apply_relation(rel(ID, RelationColumn(0, "name", 1043, 44), AMOUNT))
    assert cache.version(100) == 3
    assert cache.schema(100).columns[1].type_modifier == 44


def test_versions_are_per_relation() -> None:
    cache = RelationCache()
    cache.apply_relation(rel(ID, relation_id=1, name="a"))
    cache.apply_relation(rel(ID, relation_id=2, name="b"))
    cache.apply_relation(rel(ID, NAME, relation_id=2, name="b"))
    assert (cache.version(1), cache.version(2)) == (1, 2)


def test_not_null_change_with_identical_relation_bumps_the_version() -> None:
    not_null: set[str] = {"id"}

    def not_null_columns(namespace: str, table: str) -> AbstractSet[str]:
        assert (namespace, table) == ("shop", "orders")
        return set(not_null)

    cache = RelationCache(not_null_columns=not_null_columns)
    cache.apply_relation(rel(ID, NAME))
    assert [c.optional for c in cache.schema(100).columns] == [False, True]
    not_null.add("name")  # ALTER TABLE ... ALTER COLUMN name SET NOT NULL; pgoutput re-sends Relation
    assert cache.apply_relation(rel(ID, NAME)) is True
    assert cache.version(100) == 2
    assert [c.optional for c in cache.schema(100).columns] == [False, False]


def test_apply_ignores_other_messages() -> None:
    cache = RelationCache()
    assert cache.apply(Begin(1, 2, 3)) is False
    assert cache.apply(Insert(100, ())) is False
    assert cache.apply(Type(16385, "public", "mood")) is False


def test_unknown_relation_is_a_decode_error() -> None:
    cache = RelationCache()
    with pytest.raises(DecodeError, match="relation id 42 before any Relation message"):
        cache.get(42)
    with pytest.raises(DecodeError):
        cache.schema(42)


# ---------------------------------------------------------------------------------------------
# Key columns
# ---------------------------------------------------------------------------------------------


def test_replica_identity_full_falls_back_to_the_primary_key() -> None:
    full = rel(RelationColumn(1, "id", 20, -1), RelationColumn(1, "name", 1043, 24), identity="f")
    assert _keys(RelationCache(), full) == ()  # without PK information: no key, not "all columns"
    cache = RelationCache(primary_key_columns=lambda ns, t: ("id",))
    assert _keys(cache, full) == ("id",)
    assert [c.is_key for c in cache.schema(100).columns] == [True, False]


def test_default_identity_without_primary_key_has_no_key_columns() -> None:
    nokey = rel(ID_UNFLAGGED, NAME)
    assert _keys(RelationCache(), nokey) == ()
    assert _keys(RelationCache(primary_key_columns=lambda ns, t: ()), nokey) == ()
    cache = RelationCache()
    cache.apply_relation(nokey)
    assert [c.optional for c in cache.schema(100).columns] == [True, True]


def test_primary_key_is_the_key_whatever_the_replica_identity() -> None:
    pk = RelationCache(primary_key_columns=lambda ns, t: ("name", "id"))
    # REPLICA IDENTITY USING INDEX on another unique index: Debezium still keys by the PK.
    index = rel(ID_UNFLAGGED, RelationColumn(1, "name", 1043, 24), AMOUNT, identity="i")
    # The key is in the primary key's column order, as Debezium builds the key struct.
    assert _keys(pk, index) == ("name", "id")
    # REPLICA IDENTITY NOTHING: no flags, still the PK.
    assert _keys(pk, rel(ID_UNFLAGGED, NAME, identity="n")) == ("name", "id")


def test_identity_flags_without_pk_information() -> None:
    index = rel(ID_UNFLAGGED, RelationColumn(1, "name", 1043, 24), identity="i")
    assert _keys(RelationCache(), index) == ("name",)
    assert _keys(RelationCache(), rel(ID, NAME, identity="n")) == ()


def test_primary_key_columns_missing_from_the_relation_are_ignored() -> None:
    # The catalog can be ahead of the stream (PK added on a column the Relation lacks yet).
    cache = RelationCache(primary_key_columns=lambda ns, t: ("id", "later"))
    assert _keys(cache, rel(ID, NAME)) == ("id",)
    only_future = RelationCache(primary_key_columns=lambda ns, t: ("later",))
    assert _keys(only_future, rel(ID, NAME)) == ("id",)  # falls back to the DEFAULT identity flags
    assert _keys(only_future, rel(ID, NAME, identity="f")) == ()


def _keys(cache: RelationCache, relation: Relation) -> tuple[str, ...]:
    cache.apply_relation(relation)
    return cache.schema(relation.relation_id).key_columns


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------

MOOD = ResolvedType("mood", enum_values=("sad", "ok", "happy"))
MOOD_ARRAY = ResolvedType("_mood", element_type_name="mood", element_type_oid=16385)
POSINT = ResolvedType("posint", base_type_oid=23)
SHORT_CODE = ResolvedType("short_code", base_type_oid=1043, base_type_modifier=14)
CODE = ResolvedType("code", base_type_oid=16500)
USER_TYPES = {16385: MOOD, 16384: MOOD_ARRAY, 16392: POSINT, 16500: SHORT_CODE, 16501: CODE}


def test_enum_array_and_domain_columns_through_the_resolver() -> None:
    resolver = FakeResolver(USER_TYPES)
    cache = RelationCache(resolver)
    cache.apply_relation(
        rel(
            ID,
            RelationColumn(0, "md", 16385, -1),
            RelationColumn(0, "mds", 16384, -1),
            RelationColumn(0, "p", 16392, -1),
            RelationColumn(0, "code", 16501, -1),
            RelationColumn(0, "arr", 1007, -1),
        )
    )
    cols = {c.name: c for c in cache.schema(100).columns}
    assert cols["md"] == Column("md", 16385, "mood", enum_values=("sad", "ok", "happy"))
    assert cols["mds"] == Column(
        "mds", 16384, "_mood", enum_values=("sad", "ok", "happy"), element_type_name="mood"
    )
    assert cols["p"] == Column("p", 23, "int4")  # domain -> its root base type
    assert cols["code"] == Column("code", 1043, "varchar", type_modifier=14)  # domain of a domain
    assert cols["arr"] == Column("arr", 1007, "_int4", element_type_name="int4")
    assert sorted(resolver.calls) == [16384, 16385, 16392, 16500, 16501]


def test_resolver_is_memoized_until_a_type_message_arrives() -> None:
    resolver = FakeResolver(USER_TYPES)
    cache = RelationCache(resolver)
    cache.apply_relation(rel(ID, RelationColumn(0, "md", 16385, -1)))
    cache.apply_relation(rel(ID, RelationColumn(0, "md", 16385, -1), relation_id=101, name="b"))
    cache.apply_relation(rel(ID, RelationColumn(0, "md", 16385, -1)))
    assert resolver.calls == [16385]
    # ALTER TYPE mood ADD VALUE 'ecstatic': pgoutput re-sends Type + Relation after invalidation.
    resolver.types[16385] = ResolvedType("mood", enum_values=("sad", "ok", "happy", "ecstatic"))
    cache.apply(Type(16385, "public", "mood"))
    assert cache.apply_relation(rel(ID, RelationColumn(0, "md", 16385, -1))) is True
    assert cache.schema(100).columns[1].enum_values == ("sad", "ok", "happy", "ecstatic")
    assert cache.version(100) == 2
    assert resolver.calls == [16385, 16385]
    cache.invalidate_types([16385])
    cache.resolve_type(16385)
    cache.invalidate_types()
    cache.resolve_type(16385)
    assert resolver.calls == [16385] * 4


def test_builtin_types_never_reach_the_resolver() -> None:
    resolver = FakeResolver({})
    cache = RelationCache(resolver)
    cache.apply_relation(rel(ID, NAME, AMOUNT, RelationColumn(0, "tags", 1009, -1)))
    assert resolver.calls == []


def test_type_messages_are_the_fallback_without_a_resolver() -> None:
    cache = RelationCache()
    cache.apply(Type(16385, "public", "mood"))
    cache.apply(Type(16392, "pg_catalog", "int4"))  # what pgoutput sends for a domain over int4
    cache.apply_relation(rel(ID, RelationColumn(0, "md", 16385, -1), RelationColumn(0, "p", 16392, -1)))
    cols = cache.schema(100).columns
    assert cols[1] == Column("md", 16385, "mood")
    assert cols[2] == Column("p", 23, "int4")


def test_unknown_type_without_resolver_or_type_message() -> None:
    cache = RelationCache()
    with pytest.raises(TerminalSourceError, match="type OID 99999 is not built in"):
        cache.apply_relation(rel(ID, RelationColumn(0, "x", 99999, -1)))
    assert 100 not in cache


def test_resolver_failure_keeps_the_previous_entry() -> None:
    def failing(type_oid: int) -> ResolvedType:
        raise TerminalSourceError("catalog unavailable")

    cache = RelationCache(failing)
    cache.apply_relation(rel(ID, NAME))
    with pytest.raises(TerminalSourceError, match="catalog unavailable"):
        cache.apply_relation(rel(ID, NAME, RelationColumn(0, "md", 16385, -1)))
    assert cache.version(100) == 1
    assert cache.column_names(100) == ("id", "name")


def test_cyclic_domains_are_rejected() -> None:
    cache = RelationCache(FakeResolver({20000: ResolvedType("loop", base_type_oid=20000)}))
    with pytest.raises(TerminalSourceError, match="nests deeper"):
        cache.apply_relation(rel(ID, RelationColumn(0, "x", 20000, -1)))


# Every OID named in the design brief, checked against pg_type.dat / a PostgreSQL 15 catalog.
EXPECTED_BUILTINS = {
    16: "bool", 17: "bytea", 18: "char", 19: "name", 20: "int8", 21: "int2", 23: "int4", 25: "text",
    26: "oid", 114: "json", 142: "xml", 700: "float4", 701: "float8", 790: "money", 869: "inet",
    650: "cidr", 1042: "bpchar", 1043: "varchar", 1082: "date", 1083: "time", 1114: "timestamp",
    1184: "timestamptz", 1186: "interval", 1266: "timetz", 1700: "numeric", 2950: "uuid", 3802: "jsonb",
    1000: "_bool", 1005: "_int2", 1007: "_int4", 1009: "_text", 1015: "_varchar", 1016: "_int8",
    1021: "_float4", 1022: "_float8", 1014: "_bpchar", 1182: "_date", 1183: "_time", 1115: "_timestamp",
    1185: "_timestamptz", 1231: "_numeric", 2951: "_uuid", 3807: "_jsonb", 199: "_json", 1001: "_bytea",
    1187: "_interval", 1270: "_timetz",
}  # fmt: skip


def test_builtin_type_table() -> None:
    for oid, name in EXPECTED_BUILTINS.items():
        assert BUILTIN_TYPES[oid].name == name, oid
    for oid, resolved in BUILTIN_TYPES.items():
        if resolved.name.startswith("_"):
            assert resolved.element_type_name == resolved.name[1:]
            assert resolved.element_type_oid is not None
            assert BUILTIN_TYPES[resolved.element_type_oid].name == resolved.element_type_name
        else:
            assert resolved.element_type_name is None, oid
        assert resolved.enum_values is None and resolved.base_type_oid is None
    assert BUILTIN_TYPES[3904].name == "int4range" and BUILTIN_TYPES[3802].name == "jsonb"


# ---------------------------------------------------------------------------------------------
# Real messages captured from PostgreSQL 15
# ---------------------------------------------------------------------------------------------


def test_real_messages_build_the_expected_schemas() -> None:
    doc = json.loads(REAL_MESSAGES.read_text())
    real = {m["name"]: bytes.fromhex(m["hex"]) for m in doc["messages"]}
    resolver = FakeResolver(USER_TYPES)
    cache = RelationCache(
        resolver,
        not_null_columns=lambda ns, t: {"id", "i4"} if t == "cap_types" else {"a"},
        primary_key_columns=lambda ns, t: {"cap_types": ("id",), "cap_full": ("a",)}.get(t, ()),
    )
    for name in ("type_enum", "type_enum_array", "type_domain", "relation_cap_types"):
        cache.apply(decode_message(real[name]))
    schema = cache.schema(16394)
    cols = {c.name: c for c in schema.columns}
    assert schema.table_id == TableId("public", "cap_types") and schema.key_columns == ("id",)
    assert cols["id"] == Column("id", 20, "int8", optional=False, is_key=True)
    assert cols["i4"].optional is False and cols["t"].optional is True
    assert cols["ünï"].type_name == "text"
    assert (cols["n"].type_name, cols["n"].type_modifier) == ("numeric", 655366)
    assert cols["md"].enum_values == ("sad", "ok", "happy")
    assert (cols["mds"].element_type_name, cols["mds"].enum_values) == ("mood", ("sad", "ok", "happy"))
    assert (cols["p"].type_oid, cols["p"].type_name) == (23, "int4")
    assert (cols["tarr"].type_name, cols["tarr"].element_type_name) == ("_text", "text")

    cache.apply(decode_message(real["relation_full"]))
    assert cache.schema(16401).key_columns == ("a",)  # REPLICA IDENTITY FULL -> primary key
    cache.apply(decode_message(real["relation_nokey"]))
    assert cache.schema(16408).key_columns == ()

    assert cache.apply(decode_message(real["relation_after_add_column"])) is True
    assert cache.version(16394) == 2 and cache.column_names(16394)[-1] == "extra"
    assert cache.apply(decode_message(real["relation_after_alter_type"])) is True
    assert cache.version(16394) == 3
