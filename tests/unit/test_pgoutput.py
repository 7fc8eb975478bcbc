"""pgoutput decoder: every message type, tuple value kinds, errors, round trips, real server bytes."""

from __future__ import annotations

import json
import struct
import timeit
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signaller.errors import DecodeError, SignallerError
from signaller.model import parse_lsn
from signaller.sources.postgres.pgoutput import (
    PG_EPOCH_OFFSET_US,
    UNCHANGED_TOAST,
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    Origin,
    PgOutputMessage,
    Relation,
    RelationColumn,
    StreamAbort,
    StreamCommit,
    StreamStart,
    StreamStop,
    Truncate,
    TupleData,
    Type,
    Update,
    decode_message,
)

pytestmark = pytest.mark.unit

REAL_MESSAGES = Path(__file__).parent / "data" / "pgoutput_real_messages.json"

# ---------------------------------------------------------------------------------------------
# Test-side encoder, written from the "Logical Replication Message Formats" page of the docs.
# ---------------------------------------------------------------------------------------------


def _cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def _xid(xid: int | None) -> bytes:
    return b"" if xid is None else struct.pack(">I", xid)


def _pg_ts(unix_us: int) -> int:
    return unix_us - PG_EPOCH_OFFSET_US


def encode_tuple(values: TupleData) -> bytes:
    parts = [struct.pack(">H", len(values))]
    for value in values:
        if value is None:
            parts.append(b"n")
        elif value is UNCHANGED_TOAST:
            parts.append(b"u")
        elif isinstance(value, str):
            raw = value.encode()
            parts.append(b"t" + struct.pack(">I", len(raw)) + raw)
        else:
            assert isinstance(value, bytes)
            parts.append(b"b" + struct.pack(">I", len(value)) + value)
    return b"".join(parts)


def _encode_relation(m: Relation) -> bytes:
    head = b"R" + _xid(m.xid) + struct.pack(">I", m.relation_id)
    namespace = "" if m.namespace == "pg_catalog" else m.namespace
    body = _cstr(namespace) + _cstr(m.name) + m.replica_identity.encode() + struct.pack(">H", len(m.columns))
    cols = b"".join(
        bytes([c.flags]) + _cstr(c.name) + struct.pack(">Ii", c.type_oid, c.type_modifier) for c in m.columns
    )
    return head + body + cols


def _encode_update(m: Update) -> bytes:
    old = b"" if m.old is None else (m.old_kind or "K").encode() + encode_tuple(m.old)
    return b"U" + _xid(m.xid) + struct.pack(">I", m.relation_id) + old + b"N" + encode_tuple(m.new)


def _encode_stream_abort(m: StreamAbort) -> bytes:
    out = b"A" + struct.pack(">II", m.xid, m.subxid)
    if m.abort_lsn is not None:
        out += struct.pack(">Qq", m.abort_lsn, _pg_ts(m.abort_ts_us or 0))
    return out


def encode(m: PgOutputMessage) -> bytes:
    """Encode a message dataclass as PostgreSQL would."""
    match m:
        case Begin():
            return b"B" + struct.pack(">QqI", m.final_lsn, _pg_ts(m.commit_ts_us), m.xid)
        case Commit():
            return b"C" + struct.pack(">BQQq", m.flags, m.commit_lsn, m.end_lsn, _pg_ts(m.commit_ts_us))
        case Origin():
            return b"O" + struct.pack(">Q", m.origin_lsn) + _cstr(m.name)
        case Relation():
            return _encode_relation(m)
        case Type():
            namespace = "" if m.namespace == "pg_catalog" else m.namespace
            return b"Y" + _xid(m.xid) + struct.pack(">I", m.type_oid) + _cstr(namespace) + _cstr(m.name)
        case Insert():
            return b"I" + _xid(m.xid) + struct.pack(">I", m.relation_id) + b"N" + encode_tuple(m.new)
        case Update():
            return _encode_update(m)
        case Delete():
            head = b"D" + _xid(m.xid) + struct.pack(">I", m.relation_id)
            return head + m.old_kind.encode() + encode_tuple(m.old)
        case Truncate():
            ids = struct.pack(f">{len(m.relation_ids)}I", *m.relation_ids)
            return b"T" + _xid(m.xid) + struct.pack(">IB", len(m.relation_ids), m.options) + ids
        case Message():
            head = b"M" + _xid(m.xid) + struct.pack(">BQ", int(m.transactional), m.lsn) + _cstr(m.prefix)
            return head + struct.pack(">I", len(m.content)) + m.content
        case StreamStart():
            return b"S" + struct.pack(">IB", m.xid, int(m.first_segment))
        case StreamStop():
            return b"E"
        case StreamCommit():
            return b"c" + struct.pack(
                ">IBQQq", m.xid, m.flags, m.commit_lsn, m.end_lsn, _pg_ts(m.commit_ts_us)
            )
        case StreamAbort():
            return _encode_stream_abort(m)
    raise AssertionError(m)


def roundtrip(m: PgOutputMessage) -> PgOutputMessage:
    streamed = getattr(m, "xid", None) is not None and not isinstance(
        m, Begin | StreamStart | StreamCommit | StreamAbort
    )
    return decode_message(encode(m), streamed=streamed)


# ---------------------------------------------------------------------------------------------
# One test per message type
# ---------------------------------------------------------------------------------------------

COLS = (
    RelationColumn(1, "id", 20, -1),
    RelationColumn(0, "naïve_名前", 1043, 24),
    RelationColumn(0, "amount", 1700, 655366),
)
ORDERS = Relation(16394, "shop", "orders_ünï", "d", COLS)


def test_begin_converts_pg_epoch_to_unix_microseconds() -> None:
    payload = b"B" + struct.pack(">QqI", 0x16B3748, 0, 731)
    assert decode_message(payload) == Begin(0x16B3748, 946_684_800_000_000, 731)
    # 2024-01-01T00:00:00Z = 1704067200 s since the Unix epoch.
    payload = b"B" + struct.pack(">QqI", 1, 757_382_400_000_000, 1)
    assert decode_message(payload) == Begin(1, 1_704_067_200_000_000, 1)


def test_commit() -> None:
    payload = b"C" + struct.pack(">BQQq", 0, 100, 148, -5)
    assert decode_message(payload) == Commit(0, 100, 148, PG_EPOCH_OFFSET_US - 5)


def test_origin() -> None:
    assert decode_message(b"O" + struct.pack(">Q", 0xABCDEF) + _cstr("node-ä")) == Origin(0xABCDEF, "node-ä")


def test_relation_with_utf8_names_and_key_flags() -> None:
    decoded = decode_message(encode(ORDERS))
    assert decoded == ORDERS
    assert isinstance(decoded, Relation)
    assert [c.is_key for c in decoded.columns] == [True, False, False]
    assert decoded.columns[1].name == "naïve_名前"
    assert decoded.columns[2].type_modifier == 655366


def test_relation_empty_namespace_means_pg_catalog() -> None:
    payload = b"R" + struct.pack(">I", 7) + b"\0" + _cstr("t") + b"n" + struct.pack(">H", 0)
    assert decode_message(payload) == Relation(7, "pg_catalog", "t", "n", ())


@pytest.mark.parametrize("identity", ["d", "n", "f", "i"])
def test_relation_replica_identities(identity: str) -> None:
    relation = Relation(1, "public", "t", identity, ())  # type: ignore[arg-type]
    assert decode_message(encode(relation)) == relation


def test_type() -> None:
    assert roundtrip(Type(16385, "public", "mood")) == Type(16385, "public", "mood")
    payload = b"Y" + struct.pack(">I", 16392) + b"\0" + _cstr("int4")
    assert decode_message(payload) == Type(16392, "pg_catalog", "int4")


def test_insert_with_every_value_kind() -> None:
    values: TupleData = (None, UNCHANGED_TOAST, "grüße ✓", "", b"\x00\xff", b"")
    decoded = decode_message(encode(Insert(5, values)))
    assert decoded == Insert(5, values)
    assert isinstance(decoded, Insert)
    assert decoded.new[1] is UNCHANGED_TOAST
    assert repr(UNCHANGED_TOAST) == "UNCHANGED_TOAST"


def test_insert_accepts_memoryview_and_bytearray() -> None:
    payload = encode(Insert(5, ("a", None)))
    assert decode_message(memoryview(payload)) == Insert(5, ("a", None))
    assert decode_message(bytearray(payload)) == Insert(5, ("a", None))
    assert decode_message(memoryview(b"xx" + payload)[2:]) == Insert(5, ("a", None))


def test_insert_with_zero_columns() -> None:
    assert roundtrip(Insert(5, ())) == Insert(5, ())


def test_update_without_old_tuple() -> None:
    message = Update(5, None, None, ("1", UNCHANGED_TOAST))
    assert roundtrip(message) == message


@pytest.mark.parametrize("kind", ["K", "O"])
def test_update_with_old_tuple(kind: str) -> None:
    message = Update(5, ("1", None), kind, ("2", "x"))  # type: ignore[arg-type]
    assert roundtrip(message) == message


@pytest.mark.parametrize("kind", ["K", "O"])
def test_delete(kind: str) -> None:
    message = Delete(5, ("1", None, None), kind)  # type: ignore[arg-type]
    assert roundtrip(message) == message


def test_truncate_options() -> None:
    decoded = roundtrip(Truncate(3, (16401, 16408)))
    assert decoded == Truncate(3, (16401, 16408))
    assert isinstance(decoded, Truncate)
    assert decoded.cascade and decoded.restart_identity
    plain = roundtrip(Truncate(0, (1,)))
    assert isinstance(plain, Truncate)
    assert not plain.cascade and not plain.restart_identity
    only_restart = roundtrip(Truncate(2, ()))
    assert isinstance(only_restart, Truncate)
    assert only_restart.restart_identity and not only_restart.cascade


def test_logical_message() -> None:
    assert roundtrip(Message(True, 99, "signal", b"hello \xe2\x9c\x93")) == Message(
        True, 99, "signal", b"hello \xe2\x9c\x93"
    )
    assert roundtrip(Message(False, 1, "", b"")) == Message(False, 1, "", b"")


def test_stream_messages() -> None:
    assert roundtrip(StreamStart(749, True)) == StreamStart(749, True)
    assert roundtrip(StreamStart(749, False)) == StreamStart(749, False)
    assert decode_message(b"E") == StreamStop()
    commit = StreamCommit(749, 0, 10, 20, 1_704_067_200_000_000)
    assert roundtrip(commit) == commit
    assert roundtrip(StreamAbort(749, 750)) == StreamAbort(749, 750)
    v4 = StreamAbort(749, 750, 0x1000, 1_704_067_200_000_001)
    assert roundtrip(v4) == v4


@pytest.mark.parametrize(
    "message",
    [
        Relation(1, "public", "t", "f", (RelationColumn(1, "a", 23, -1),), xid=77),
        Type(16385, "public", "mood", xid=77),
        Insert(1, ("a",), xid=77),
        Update(1, ("a",), "O", ("b",), xid=77),
        Delete(1, ("a",), "K", xid=77),
        Truncate(0, (1, 2), xid=77),
        Message(True, 5, "p", b"c", xid=77),
    ],
    ids=lambda m: type(m).__name__,
)
def test_streamed_messages_carry_the_xid(message: PgOutputMessage) -> None:
    assert decode_message(encode(message), streamed=True) == message


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def test_unknown_message_type_names_the_byte() -> None:
    with pytest.raises(DecodeError, match=r"unknown pgoutput message type 'X' \(0x58\)"):
        decode_message(b"X\x00\x00")
    with pytest.raises(DecodeError, match=r"0x00"):
        decode_message(b"\x00")


def test_two_phase_messages_are_reported_as_unsupported() -> None:
    with pytest.raises(DecodeError, match=r"two-phase .*Prepare.*two_phase"):
        decode_message(b"P" + bytes(40))


def test_empty_payload() -> None:
    with pytest.raises(DecodeError, match="empty pgoutput message"):
        decode_message(b"")


SAMPLES: list[PgOutputMessage] = [
    Begin(1, 2, 3),
    Commit(0, 1, 2, 3),
    Origin(5, "origin"),
    ORDERS,
    Type(16385, "public", "mood"),
    Insert(5, ("1", None, UNCHANGED_TOAST, b"\x01\x02", "é")),
    Update(5, ("1", None), "K", ("2", "é")),
    Update(5, None, None, ("2", "é")),
    Delete(5, ("1", None), "O"),
    Truncate(1, (1, 2, 3)),
    Message(True, 9, "prefix", b"content"),
    StreamStart(1, True),
    StreamCommit(1, 0, 2, 3, 4),
    StreamAbort(1, 2),
]


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: type(m).__name__)
def test_every_truncation_raises_decode_error(message: PgOutputMessage) -> None:
    payload = encode(message)
    for cut in range(len(payload)):
        with pytest.raises(DecodeError) as info:
            decode_message(payload[:cut])
        assert isinstance(info.value, SignallerError)
        if cut:
            assert "truncated pgoutput" in str(info.value), str(info.value)
            assert f"({cut} bytes)" in str(info.value)


def test_truncated_message_error_is_helpful() -> None:
    payload = encode(Insert(16394, ("hello",)))
    with pytest.raises(DecodeError, match=r"truncated pgoutput Insert message \(12 bytes\)"):
        decode_message(payload[:12])


@pytest.mark.parametrize(
    "payload",
    [
        b"T" + struct.pack(">IB", 2**32 - 1, 0) + bytes(8),
        b"M" + struct.pack(">BQ", 1, 5) + b"p\0" + struct.pack(">I", 2**32 - 1),
        b"I" + struct.pack(">I", 1) + b"N" + struct.pack(">H", 65535),
        b"I" + struct.pack(">I", 1) + b"N" + struct.pack(">H", 1) + b"t" + struct.pack(">I", 2**32 - 1),
    ],
    ids=["truncate-count", "message-size", "tuple-count", "text-length"],
)
def test_absurd_counts_and_lengths(payload: bytes) -> None:
    with pytest.raises(DecodeError, match=r"truncated pgoutput \w+ message"):
        decode_message(payload)


def test_unknown_tuple_value_kind() -> None:
    payload = b"I" + struct.pack(">I", 5) + b"N" + struct.pack(">H", 1) + b"x"
    with pytest.raises(DecodeError, match=r"column 0 has unknown kind 'x'"):
        decode_message(payload)


def test_bad_tuple_tags() -> None:
    with pytest.raises(DecodeError, match=r"Insert has 'Q' \(0x51\) where 'N'"):
        decode_message(b"I" + struct.pack(">I", 5) + b"Q" + struct.pack(">H", 0))
    with pytest.raises(DecodeError, match=r"Update has 'Q' \(0x51\) where 'K' or 'O'"):
        decode_message(b"U" + struct.pack(">I", 5) + b"Q" + struct.pack(">H", 0))
    old_then_bad = b"U" + struct.pack(">I", 5) + b"K" + struct.pack(">H", 0) + b"O" + struct.pack(">H", 0)
    with pytest.raises(DecodeError, match=r"Update has 'O' \(0x4f\) where 'N'"):
        decode_message(old_then_bad)
    with pytest.raises(DecodeError, match=r"Delete has 'N' \(0x4e\) where 'K' or 'O'"):
        decode_message(b"D" + struct.pack(">I", 5) + b"N" + struct.pack(">H", 0))


def test_bad_replica_identity() -> None:
    payload = b"R" + struct.pack(">I", 7) + _cstr("s") + _cstr("t") + b"z" + struct.pack(">H", 0)
    with pytest.raises(DecodeError, match=r"replica identity 'z'"):
        decode_message(payload)


def test_invalid_utf8_text() -> None:
    column = b"t" + struct.pack(">I", 1) + b"\xff"
    payload = b"I" + struct.pack(">I", 5) + b"N" + struct.pack(">H", 1) + column
    with pytest.raises(DecodeError, match="not UTF-8"):
        decode_message(payload)


def test_trailing_bytes_are_ignored() -> None:
    assert decode_message(encode(Begin(1, 2, 3)) + b"\x00\x01") == Begin(1, 2, 3)


# ---------------------------------------------------------------------------------------------
# Hypothesis round trip
# ---------------------------------------------------------------------------------------------

u32 = st.integers(0, 2**32 - 1)
u64 = st.integers(0, 2**64 - 1)
names = st.text(st.characters(codec="utf-8", exclude_characters="\0"), max_size=20)
values = st.one_of(
    st.none(),
    st.just(UNCHANGED_TOAST),
    st.text(st.characters(codec="utf-8"), max_size=30),
    st.binary(max_size=30),
)
columns = st.builds(RelationColumn, st.integers(0, 255), names, u32, st.integers(-(2**31), 2**31 - 1))
relations = st.builds(
    Relation,
    u32,
    names.filter(lambda n: n != ""),
    names,
    st.sampled_from(["d", "n", "f", "i"]),
    st.lists(columns, max_size=12).map(tuple),
)


@st.composite
def changes(draw: st.DrawFn) -> tuple[Relation, PgOutputMessage]:
    relation = draw(relations)
    width = len(relation.columns)
    row = st.lists(values, min_size=width, max_size=width).map(tuple)
    change = draw(
        st.one_of(
            st.builds(Insert, st.just(relation.relation_id), row),
            st.builds(Update, st.just(relation.relation_id), st.none(), st.none(), row),
            st.builds(Update, st.just(relation.relation_id), row, st.sampled_from(["K", "O"]), row),
            st.builds(Delete, st.just(relation.relation_id), row, st.sampled_from(["K", "O"])),
        )
    )
    return relation, change


@settings(max_examples=300, deadline=None)
@given(changes())
def test_roundtrip_random_relations_and_tuples(pair: tuple[Relation, PgOutputMessage]) -> None:
    relation, change = pair
    assert decode_message(encode(relation)) == relation
    assert decode_message(encode(change)) == change


@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        st.builds(Begin, u64, st.integers(-(2**62), 2**62), u32),
        st.builds(Commit, st.integers(0, 255), u64, u64, st.integers(-(2**62), 2**62)),
        st.builds(Origin, u64, names),
        st.builds(Type, u32, names.filter(lambda n: n != ""), names),
        st.builds(Truncate, st.integers(0, 3), st.lists(u32, max_size=5).map(tuple)),
        st.builds(Message, st.booleans(), u64, names, st.binary(max_size=40)),
    )
)
def test_roundtrip_other_messages(message: PgOutputMessage) -> None:
    assert decode_message(encode(message)) == message


# ---------------------------------------------------------------------------------------------
# Real bytes from PostgreSQL 15 (see the "sql" key of the JSON file for what produced them)
# ---------------------------------------------------------------------------------------------


def _real() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(REAL_MESSAGES.read_text())
    return {m["name"]: m for m in doc["messages"]}


def _decode_real(entry: dict[str, Any]) -> PgOutputMessage:
    return decode_message(bytes.fromhex(entry["hex"]), streamed=entry["streamed"])


def test_real_messages_all_decode_and_reencode() -> None:
    for name, entry in _real().items():
        decoded = _decode_real(entry)
        assert encode(decoded) == bytes.fromhex(entry["hex"]), name


def test_real_transaction_with_origin() -> None:
    real = _real()
    begin = _decode_real(real["begin_with_origin"])
    commit = _decode_real(real["commit_with_origin"])
    # pg_replication_origin_xact_setup('0/ABCDEF', '2024-01-01 00:00:00+00') set both.
    assert _decode_real(real["origin"]) == Origin(0xABCDEF, "cap_origin")
    assert isinstance(begin, Begin) and isinstance(commit, Commit)
    assert begin.commit_ts_us == commit.commit_ts_us == 1_704_067_200_000_000
    assert begin.final_lsn == commit.commit_lsn
    assert commit.end_lsn == parse_lsn(real["commit_with_origin"]["lsn"])
    assert commit.flags == 0


def test_real_types_and_relation() -> None:
    real = _real()
    assert _decode_real(real["type_enum"]) == Type(16385, "public", "mood")
    assert _decode_real(real["type_enum_array"]) == Type(16384, "public", "_mood")
    # For a domain pgoutput sends the domain's OID with its base type's name.
    assert _decode_real(real["type_domain"]) == Type(16392, "pg_catalog", "int4")
    relation = _decode_real(real["relation_cap_types"])
    assert isinstance(relation, Relation)
    assert (relation.relation_id, relation.namespace, relation.name) == (16394, "public", "cap_types")
    assert relation.replica_identity == "d"
    by_name = {c.name: c for c in relation.columns}
    assert [c.name for c in relation.columns if c.is_key] == ["id"]
    assert by_name["n"] == RelationColumn(0, "n", 1700, (10 << 16 | 2) + 4)
    assert by_name["vc"].type_modifier == 24  # varchar(20)
    assert by_name["ünï"].type_oid == 25
    assert (by_name["md"].type_oid, by_name["mds"].type_oid, by_name["p"].type_oid) == (16385, 16384, 16392)
    assert len(relation.columns) == 29


def test_real_inserts() -> None:
    real = _real()
    full = _decode_real(real["insert_all_types"])
    assert isinstance(full, Insert)
    assert full.new[:7] == ("1", "t", "2", "4", "1.5", "12.34", "$5.50")
    assert full.new[7:12] == ("hello", "vc", "ab ", "grüße ✓", "\\x00ff10")
    assert full.new[22:28] == ("192.168.0.1/24", "{1,NULL,3}", '{"a b","c,d"}', "happy", "{sad,ok}", "7")
    assert full.new[28] == "x" * 5000
    nulls = _decode_real(real["insert_nulls"])
    assert nulls == Insert(16394, ("2", None, None, "0", *([None] * 25)))
    assert _decode_real(real["insert_binary"]) == Insert(16408, (b"\x00\x00\x00\x02", b"from origin"))


def test_real_updates_and_deletes() -> None:
    real = _real()
    toast = _decode_real(real["update_unchanged_toast"])
    assert isinstance(toast, Update)
    assert toast.old is None and toast.old_kind is None
    assert toast.new[7] == "changed" and toast.new[28] is UNCHANGED_TOAST
    key_change = _decode_real(real["update_key_change"])
    assert key_change == Update(16394, ("2", *([None] * 28)), "K", ("10", None, None, "0", *([None] * 25)))
    assert _decode_real(real["delete_key"]) == Delete(16394, ("10", *([None] * 28)), "K")
    assert _decode_real(real["update_full"]) == Update(16401, ("1", "one"), "O", ("1", "uno"))
    assert _decode_real(real["delete_full"]) == Delete(16401, ("1", "uno"), "O")


def test_real_identity_truncate_and_messages() -> None:
    real = _real()
    full = _decode_real(real["relation_full"])
    assert isinstance(full, Relation) and full.replica_identity == "f"
    assert all(c.is_key for c in full.columns)
    nokey = _decode_real(real["relation_nokey"])
    assert isinstance(nokey, Relation) and nokey.replica_identity == "d"
    assert not any(c.is_key for c in nokey.columns)
    truncate = _decode_real(real["truncate"])
    assert truncate == Truncate(3, (16401, 16408))  # RESTART IDENTITY CASCADE
    tx = _decode_real(real["message_transactional"])
    assert isinstance(tx, Message)
    assert (tx.transactional, tx.prefix, tx.content) == (True, "signal", "hello ✓".encode())
    assert tx.lsn == parse_lsn(real["message_transactional"]["lsn"])
    assert _decode_real(real["message_non_transactional"]) == Message(
        False, parse_lsn("0/153CFD0"), "nontx", b"\x00\xff"
    )


def test_real_relation_after_alter_table() -> None:
    real = _real()
    added = _decode_real(real["relation_after_add_column"])
    altered = _decode_real(real["relation_after_alter_type"])
    assert isinstance(added, Relation) and isinstance(altered, Relation)
    assert added.columns[-1] == RelationColumn(0, "extra", 23, -1)
    assert {c.name: c for c in altered.columns}["vc"].type_modifier == 44  # varchar(40)


def test_real_streamed_transaction() -> None:
    real = _real()
    assert _decode_real(real["stream_start"]) == StreamStart(749, True)
    relation = _decode_real(real["stream_relation"])
    assert isinstance(relation, Relation) and relation.xid == 749 and relation.name == "cap_nokey"
    assert _decode_real(real["stream_insert"]) == Insert(16408, ("1", "s" * 100), xid=749)
    assert _decode_real(real["stream_message"]) == Message(True, 22595376, "streamed", b"in stream", xid=749)
    assert _decode_real(real["stream_stop"]) == StreamStop()
    commit = _decode_real(real["stream_commit"])
    assert isinstance(commit, StreamCommit) and commit.xid == 749 and commit.commit_lsn == 22595376


# ---------------------------------------------------------------------------------------------
# Throughput (reported, not asserted)
# ---------------------------------------------------------------------------------------------


def test_report_insert_decode_throughput(capsys: pytest.CaptureFixture[str]) -> None:
    row: TupleData = ("123456", "t", "2024-02-29 13:45:01.123456+00", "hello world", None, "12.34", "42", "x")
    payload = encode(Insert(16394, row))
    number = 20_000
    best = min(timeit.repeat(lambda: decode_message(payload), number=number, repeat=5))
    rate = number / best
    with capsys.disabled():
        print(f"\npgoutput: {rate:,.0f} Insert messages/s ({len(row)} columns, {len(payload)} bytes each)")
    assert rate > 0
