"""Decoder for PostgreSQL's ``pgoutput`` logical replication protocol: bytes in, frozen values out.

Pure logic, no I/O. One entry point, :func:`decode_message`, turns the payload of one
XLogData message (what ``START_REPLICATION ... LOGICAL`` or ``pg_logical_slot_*_binary_changes``
yield) into one of the message dataclasses below, dispatching on the first byte.

Scope (see "Logical Replication Message Formats" in the PostgreSQL docs and
``src/backend/replication/logical/proto.c``):

* protocol version 1: Begin ``B``, Commit ``C``, Origin ``O``, Relation ``R``, Type ``Y``,
  Insert ``I``, Update ``U``, Delete ``D``, Truncate ``T`` and, with ``messages 'true'``,
  logical decoding messages ``M``;
* version 2 streaming, which is cheap: Stream Start ``S``, Stream Stop ``E``, Stream Commit
  ``c``, Stream Abort ``A`` (with the version 4 abort LSN/timestamp when present), and the
  transaction id that messages inside a streamed block carry (``decode_message(...,
  streamed=True)``; the caller knows whether it is between ``S`` and ``E``);
* not supported: the version 3 two-phase messages (``b`` ``P`` ``K`` ``r`` ``p``), which only
  appear with the ``two_phase`` slot option; they raise :class:`DecodeError` saying so.

Conventions: LSNs are ``int``; timestamps are converted from PostgreSQL's epoch (2000-01-01)
to microseconds since the Unix epoch; names are decoded as UTF-8 (signaller requires a UTF8
database, like Debezium); an empty namespace, which pgoutput sends for ``pg_catalog``, is
returned as ``"pg_catalog"``. Bytes after a complete message are ignored (later protocol
versions append fields). Every malformed or truncated payload raises
:class:`~signaller.errors.DecodeError`, never ``IndexError``/``struct.error``.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

from signaller.errors import DecodeError

PG_EPOCH_OFFSET_US: Final = 946_684_800_000_000
"""Microseconds from 1970-01-01 to 2000-01-01 (PostgreSQL's timestamp epoch)."""


class UnchangedToast(enum.Enum):
    """Marker type of :data:`UNCHANGED_TOAST` (an enum so the singleton survives pickling)."""

    TOAST = "u"

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST: Final = UnchangedToast.TOAST
"""Tuple value ``'u'``: a TOASTed column whose value did not change and was not sent."""

TupleValue: TypeAlias = str | bytes | Literal[UnchangedToast.TOAST] | None
"""One column: ``None`` (SQL NULL), :data:`UNCHANGED_TOAST`, ``str`` (text format) or
``bytes`` (binary format, only with the ``binary`` option)."""

TupleData: TypeAlias = tuple[TupleValue, ...]
"""A row's columns in the order of the relation's :attr:`Relation.columns`."""

ReplicaIdentity: TypeAlias = Literal["d", "n", "f", "i"]
"""``relreplident``: default (primary key), nothing, full, index."""

OldKind: TypeAlias = Literal["K", "O"]
"""Old tuple of an update/delete: ``K`` = replica identity key columns only (the others are
NULL), ``O`` = the whole old row (``REPLICA IDENTITY FULL``)."""

TRUNCATE_CASCADE: Final = 1
TRUNCATE_RESTART_IDENTITY: Final = 2
COLUMN_FLAG_KEY: Final = 1
MESSAGE_FLAG_TRANSACTIONAL: Final = 1


@dataclass(frozen=True, slots=True)
class Begin:
    """``B``: a transaction starts; ``final_lsn`` is the LSN of its commit record."""

    final_lsn: int
    commit_ts_us: int
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    """``C``: a transaction ends. ``end_lsn`` is the position to confirm once it is processed."""

    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(frozen=True, slots=True)
class Origin:
    """``O``: the transaction was replicated from another node (``name``) at ``origin_lsn``."""

    origin_lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class RelationColumn:
    """One column of a :class:`Relation`: ``flags`` bit 1 marks a replica-identity column."""

    flags: int
    name: str
    type_oid: int
    type_modifier: int

    @property
    def is_key(self) -> bool:
        """Part of the replica identity (for ``REPLICA IDENTITY FULL``: every column)."""
        return bool(self.flags & COLUMN_FLAG_KEY)


@dataclass(frozen=True, slots=True)
class Relation:
    """``R``: a table's layout, sent before its first change and again after it changes.

    ``columns`` are the live, non-generated columns in ``attnum`` order; every
    :data:`TupleData` of this relation has one value per column, in the same order.
    ``xid`` is set only for messages inside a streamed transaction.
    """

    relation_id: int
    namespace: str
    name: str
    replica_identity: ReplicaIdentity
    columns: tuple[RelationColumn, ...]
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Type:
    """``Y``: a non-built-in column type. For a domain, ``namespace``/``name`` are those of its
    base type while ``type_oid`` is the domain's OID (that is what pgoutput sends)."""

    type_oid: int
    namespace: str
    name: str
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Insert:
    """``I``: a new row."""

    relation_id: int
    new: TupleData
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Update:
    """``U``: a changed row. ``old`` is ``None`` unless the replica identity changed (``K``) or
    the table is ``REPLICA IDENTITY FULL`` (``O``); ``new`` may hold :data:`UNCHANGED_TOAST`."""

    relation_id: int
    old: TupleData | None
    old_kind: OldKind | None
    new: TupleData
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Delete:
    """``D``: a removed row; ``old`` holds the key columns (``K``) or the whole row (``O``)."""

    relation_id: int
    old: TupleData
    old_kind: OldKind
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class Truncate:
    """``T``: ``TRUNCATE`` of one or more tables; ``options`` is a bit set of
    :data:`TRUNCATE_CASCADE` and :data:`TRUNCATE_RESTART_IDENTITY`."""

    options: int
    relation_ids: tuple[int, ...]
    xid: int | None = None

    @property
    def cascade(self) -> bool:
        """Whether the TRUNCATE was ``CASCADE``."""
        return bool(self.options & TRUNCATE_CASCADE)

    @property
    def restart_identity(self) -> bool:
        """Whether the TRUNCATE was ``RESTART IDENTITY``."""
        return bool(self.options & TRUNCATE_RESTART_IDENTITY)


@dataclass(frozen=True, slots=True)
class Message:
    """``M``: a ``pg_logical_emit_message`` (only with the ``messages`` option)."""

    transactional: bool
    lsn: int
    prefix: str
    content: bytes
    xid: int | None = None


@dataclass(frozen=True, slots=True)
class StreamStart:
    """``S`` (protocol 2): a block of an in-progress transaction ``xid`` follows."""

    xid: int
    first_segment: bool


@dataclass(frozen=True, slots=True)
class StreamStop:
    """``E`` (protocol 2): the current streamed block ends."""


@dataclass(frozen=True, slots=True)
class StreamCommit:
    """``c`` (protocol 2): streamed transaction ``xid`` committed."""

    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(frozen=True, slots=True)
class StreamAbort:
    """``A`` (protocol 2): streamed (sub)transaction aborted; the abort LSN and time are only
    sent by protocol 4 with parallel streaming."""

    xid: int
    subxid: int
    abort_lsn: int | None = None
    abort_ts_us: int | None = None


PgOutputMessage: TypeAlias = (
    Begin
    | Commit
    | Origin
    | Relation
    | Type
    | Insert
    | Update
    | Delete
    | Truncate
    | Message
    | StreamStart
    | StreamStop
    | StreamCommit
    | StreamAbort
)

_U32_U8 = struct.Struct(">IB")  # relation id + tuple kind byte; also stream start (xid, flag)
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_BEGIN = struct.Struct(">QqI")
_COMMIT = struct.Struct(">BQQq")
_OID_TYPMOD = struct.Struct(">Ii")
_FLAGS_LSN = struct.Struct(">BQ")
_STREAM_COMMIT = struct.Struct(">IBQQq")
_STREAM_ABORT = struct.Struct(">II")
_STREAM_ABORT_V4 = struct.Struct(">IIQq")

_KIND_TEXT: Final = 0x74  # 't'
_KIND_NULL: Final = 0x6E  # 'n'
_KIND_UNCHANGED: Final = 0x75  # 'u'
_KIND_BINARY: Final = 0x62  # 'b'
_TAG_NEW: Final = 0x4E  # 'N'
_OLD_KINDS: Final[dict[int, OldKind]] = {0x4B: "K", 0x4F: "O"}
_IDENTITIES: Final[dict[int, ReplicaIdentity]] = {0x64: "d", 0x6E: "n", 0x66: "f", 0x69: "i"}


def _truncated(what: str) -> IndexError:
    """Internal signal for 'payload too short'; :func:`decode_message` turns it into DecodeError."""
    return IndexError(what)


def _read_cstring(data: bytes, pos: int) -> tuple[str, int]:
    """A NUL-terminated UTF-8 string at ``pos``; returns it and the position after the NUL."""
    end = data.find(0, pos)
    if end < 0:
        raise _truncated(f"string at offset {pos} has no terminating NUL")
    return data[pos:end].decode(), end + 1


def _read_tuple(data: bytes, pos: int) -> tuple[TupleData, int]:
    """TupleData at ``pos`` (Int16 count, then per column a kind byte and maybe Int32 + bytes)."""
    (count,) = _U16.unpack_from(data, pos)
    pos += 2
    size = len(data)
    values: list[TupleValue] = []
    append = values.append
    unpack_len = _U32.unpack_from
    for _ in range(count):
        kind = data[pos]
        if kind == _KIND_TEXT:
            start = pos + 5
            pos = start + unpack_len(data, pos + 1)[0]
            if pos > size:
                raise _truncated(f"column {len(values)} needs {pos} bytes")
            append(data[start:pos].decode())
        elif kind == _KIND_NULL:
            append(None)
            pos += 1
        elif kind == _KIND_UNCHANGED:
            append(UNCHANGED_TOAST)
            pos += 1
        elif kind == _KIND_BINARY:
            start = pos + 5
            pos = start + unpack_len(data, pos + 1)[0]
            if pos > size:
                raise _truncated(f"column {len(values)} needs {pos} bytes")
            append(data[start:pos])
        else:
            raise DecodeError(
                f"pgoutput tuple column {len(values)} has unknown kind {_show_byte(kind)} at offset {pos}"
                " (expected 'n' null, 'u' unchanged toast, 't' text or 'b' binary)"
            )
    return tuple(values), pos


def _stream_xid(data: bytes, streamed: bool) -> tuple[int | None, int]:
    """The transaction id streamed messages carry after the type byte, and where the body starts."""
    if streamed:
        return _U32.unpack_from(data, 1)[0], 5
    return None, 1


def _old_kind(data: bytes, pos: int, message: str) -> OldKind:
    kind = _OLD_KINDS.get(data[pos])
    if kind is None:
        raise DecodeError(f"pgoutput {message} has {_show_byte(data[pos])} where 'K' or 'O' was expected")
    return kind


def _expect_new(data: bytes, pos: int, message: str) -> None:
    if data[pos] != _TAG_NEW:
        found = _show_byte(data[pos])
        raise DecodeError(f"pgoutput {message} has {found} where 'N' (new tuple) was expected")


def _decode_begin(data: bytes, streamed: bool) -> Begin:
    final_lsn, ts, xid = _BEGIN.unpack_from(data, 1)
    return Begin(final_lsn, ts + PG_EPOCH_OFFSET_US, xid)


def _decode_commit(data: bytes, streamed: bool) -> Commit:
    flags, commit_lsn, end_lsn, ts = _COMMIT.unpack_from(data, 1)
    return Commit(flags, commit_lsn, end_lsn, ts + PG_EPOCH_OFFSET_US)


def _decode_origin(data: bytes, streamed: bool) -> Origin:
    (origin_lsn,) = _U64.unpack_from(data, 1)
    name, _ = _read_cstring(data, 9)
    return Origin(origin_lsn, name)


def _decode_relation_columns(data: bytes, pos: int) -> tuple[RelationColumn, ...]:
    (count,) = _U16.unpack_from(data, pos)
    pos += 2
    columns = []
    for _ in range(count):
        flags = data[pos]
        name, pos = _read_cstring(data, pos + 1)
        type_oid, type_modifier = _OID_TYPMOD.unpack_from(data, pos)
        pos += 8
        columns.append(RelationColumn(flags, name, type_oid, type_modifier))
    return tuple(columns)


def _decode_relation(data: bytes, streamed: bool) -> Relation:
    xid, pos = _stream_xid(data, streamed)
    (relation_id,) = _U32.unpack_from(data, pos)
    namespace, pos = _read_cstring(data, pos + 4)
    name, pos = _read_cstring(data, pos)
    identity = _IDENTITIES.get(data[pos])
    if identity is None:
        raise DecodeError(
            f"pgoutput Relation {namespace}.{name} has replica identity {_show_byte(data[pos])}"
            " (expected 'd', 'n', 'f' or 'i')"
        )
    columns = _decode_relation_columns(data, pos + 1)
    return Relation(relation_id, namespace or "pg_catalog", name, identity, columns, xid)


def _decode_type(data: bytes, streamed: bool) -> Type:
    xid, pos = _stream_xid(data, streamed)
    (type_oid,) = _U32.unpack_from(data, pos)
    namespace, pos = _read_cstring(data, pos + 4)
    name, _ = _read_cstring(data, pos)
    return Type(type_oid, namespace or "pg_catalog", name, xid)


def _decode_insert(data: bytes, streamed: bool) -> Insert:
    xid, pos = _stream_xid(data, streamed)
    relation_id, tag = _U32_U8.unpack_from(data, pos)
    if tag != _TAG_NEW:
        _expect_new(data, pos + 4, "Insert")
    new, _ = _read_tuple(data, pos + 5)
    return Insert(relation_id, new, xid)


def _decode_update(data: bytes, streamed: bool) -> Update:
    xid, pos = _stream_xid(data, streamed)
    relation_id, tag = _U32_U8.unpack_from(data, pos)
    pos += 4
    old: TupleData | None = None
    old_kind: OldKind | None = None
    if tag != _TAG_NEW:
        old_kind = _old_kind(data, pos, "Update")
        old, pos = _read_tuple(data, pos + 1)
        _expect_new(data, pos, "Update")
    new, _ = _read_tuple(data, pos + 1)
    return Update(relation_id, old, old_kind, new, xid)


def _decode_delete(data: bytes, streamed: bool) -> Delete:
    xid, pos = _stream_xid(data, streamed)
    (relation_id,) = _U32.unpack_from(data, pos)
    old_kind = _old_kind(data, pos + 4, "Delete")
    old, _ = _read_tuple(data, pos + 5)
    return Delete(relation_id, old, old_kind, xid)


def _decode_truncate(data: bytes, streamed: bool) -> Truncate:
    xid, pos = _stream_xid(data, streamed)
    count, options = _U32_U8.unpack_from(data, pos)
    relation_ids = struct.unpack_from(f">{count}I", data, pos + 5)
    return Truncate(options, relation_ids, xid)


def _decode_message_body(data: bytes, streamed: bool) -> Message:
    xid, pos = _stream_xid(data, streamed)
    flags, lsn = _FLAGS_LSN.unpack_from(data, pos)
    prefix, pos = _read_cstring(data, pos + 9)
    (size,) = _U32.unpack_from(data, pos)
    end = pos + 4 + size
    if end > len(data):
        raise _truncated(f"content of {size} bytes needs {end} bytes")
    return Message(bool(flags & MESSAGE_FLAG_TRANSACTIONAL), lsn, prefix, data[pos + 4 : end], xid)


def _decode_stream_start(data: bytes, streamed: bool) -> StreamStart:
    xid, first = _U32_U8.unpack_from(data, 1)
    return StreamStart(xid, first == 1)


def _decode_stream_stop(data: bytes, streamed: bool) -> StreamStop:
    return StreamStop()


def _decode_stream_commit(data: bytes, streamed: bool) -> StreamCommit:
    xid, flags, commit_lsn, end_lsn, ts = _STREAM_COMMIT.unpack_from(data, 1)
    return StreamCommit(xid, flags, commit_lsn, end_lsn, ts + PG_EPOCH_OFFSET_US)


def _decode_stream_abort(data: bytes, streamed: bool) -> StreamAbort:
    if len(data) >= 1 + _STREAM_ABORT_V4.size:
        xid, subxid, abort_lsn, ts = _STREAM_ABORT_V4.unpack_from(data, 1)
        return StreamAbort(xid, subxid, abort_lsn, ts + PG_EPOCH_OFFSET_US)
    xid, subxid = _STREAM_ABORT.unpack_from(data, 1)
    return StreamAbort(xid, subxid)


_Decoder: TypeAlias = Callable[[bytes, bool], PgOutputMessage]

_DECODERS: Final[dict[int, tuple[str, _Decoder]]] = {
    ord("B"): ("Begin", _decode_begin),
    ord("C"): ("Commit", _decode_commit),
    ord("O"): ("Origin", _decode_origin),
    ord("R"): ("Relation", _decode_relation),
    ord("Y"): ("Type", _decode_type),
    ord("I"): ("Insert", _decode_insert),
    ord("U"): ("Update", _decode_update),
    ord("D"): ("Delete", _decode_delete),
    ord("T"): ("Truncate", _decode_truncate),
    ord("M"): ("Message", _decode_message_body),
    ord("S"): ("Stream Start", _decode_stream_start),
    ord("E"): ("Stream Stop", _decode_stream_stop),
    ord("c"): ("Stream Commit", _decode_stream_commit),
    ord("A"): ("Stream Abort", _decode_stream_abort),
}

_TWO_PHASE: Final[dict[int, str]] = {
    ord("b"): "Begin Prepare",
    ord("P"): "Prepare",
    ord("K"): "Commit Prepared",
    ord("r"): "Rollback Prepared",
    ord("p"): "Stream Prepare",
}


def _show_byte(value: int) -> str:
    """``0x49`` -> ``'I' (0x49)``; non-printable bytes in hex only."""
    if 0x20 < value < 0x7F:
        return f"{chr(value)!r} (0x{value:02x})"
    return f"0x{value:02x}"


def _unknown_type(first: int) -> DecodeError:
    if first in _TWO_PHASE:
        return DecodeError(
            f"pgoutput two-phase message {_show_byte(first)} ({_TWO_PHASE[first]}) is not supported;"
            " use a slot without the two_phase option"
        )
    known = ", ".join(chr(code) for code in _DECODERS)
    return DecodeError(f"unknown pgoutput message type {_show_byte(first)}; expected one of {known}")


def decode_message(payload: bytes | bytearray | memoryview, *, streamed: bool = False) -> PgOutputMessage:
    """Decode one pgoutput message.

    ``streamed`` must be ``True`` exactly for messages received between a Stream Start and a
    Stream Stop (protocol 2 streaming): those carry the transaction id after the type byte.
    With ``proto_version '1'`` it is always ``False``.

    Raises :class:`~signaller.errors.DecodeError` (message type, length and what was wrong) for
    an empty, truncated, malformed or unknown message. Never mutates or keeps ``payload``.
    """
    data = payload if type(payload) is bytes else bytes(payload)
    if not data:
        raise DecodeError("empty pgoutput message (expected at least a message type byte)")
    entry = _DECODERS.get(data[0])
    if entry is None:
        raise _unknown_type(data[0])
    try:
        return entry[1](data, streamed)
    except UnicodeDecodeError as exc:
        raise DecodeError(
            f"pgoutput {entry[0]} message ({len(data)} bytes) has text that is not UTF-8: {exc}"
        ) from exc
    except (struct.error, IndexError) as exc:
        detail = "payload ends before the message is complete" if str(exc) == "index out of range" else exc
        raise DecodeError(f"truncated pgoutput {entry[0]} message ({len(data)} bytes): {detail}") from exc


__all__ = [
    "COLUMN_FLAG_KEY",
    "MESSAGE_FLAG_TRANSACTIONAL",
    "PG_EPOCH_OFFSET_US",
    "TRUNCATE_CASCADE",
    "TRUNCATE_RESTART_IDENTITY",
    "UNCHANGED_TOAST",
    "Begin",
    "Commit",
    "Delete",
    "Insert",
    "Message",
    "OldKind",
    "Origin",
    "PgOutputMessage",
    "Relation",
    "RelationColumn",
    "ReplicaIdentity",
    "StreamAbort",
    "StreamCommit",
    "StreamStart",
    "StreamStop",
    "Truncate",
    "TupleData",
    "TupleValue",
    "Type",
    "UnchangedToast",
    "Update",
    "decode_message",
]
