"""The change-event serializer's hot path, private to :mod:`signaller.wire`: byte fragments
rendered once per table and the renderers that splice the per-event parts between them.

Only :class:`~signaller.wire.envelope.EnvelopeSerializer` uses this module; everything it
returns is byte-identical to rendering the whole record with :func:`~signaller.wire.jackson.dumps`
(``tests/unit/test_streaming_fast_path.py`` and ``tests/unit/test_event_dispatch.py`` compare
both for every column type). Two tricks live here and nowhere else:

* :class:`TableFragments`: the constant parts of a table's records (the schema part, the
  ``source`` block's constant members, the key's frame) rendered once;
* :class:`FastRenderer`: rows that already hold exactly the payload columns in payload order (a
  source plan's rows) are rendered as they are, without building a projected copy, and a
  streamed event's ``source`` block is a ``bytes % args`` template rendered once per
  transaction (recognised by identity) and operation; a snapshot READ's everything-but-the-row
  is a template rendered once per window position (``source.sequence``) and snapshot flag.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol

import orjson

from signaller.errors import TerminalSinkError
from signaller.model.events import ChangeEvent, Op
from signaller.model.tables import TableId
from signaller.wire.jackson import ESCAPE_MARK, LOWER_HEX_ESCAPE, dumps, record, render_default, upper_escape

CONNECTOR: Final = "postgresql"
"""``source.connector``."""

SOURCE_TAIL: Final = b',"xmin":null,"origin":null,"origin_lsn":null}'
"""The ``source`` block's members after ``lsn`` (always null for PostgreSQL), and its end."""

OP_JSON: Final = {op: orjson.dumps(op.value) for op in Op}
"""Each ``op`` code as JSON."""

_orjson_dumps: Final = orjson.dumps
_TRUNCATE: Final = Op.TRUNCATE
_READ: Final = Op.READ


class StreamPosition(Protocol):
    """A streamed event's transaction, as the streaming renderer needs it (the reader's
    ``TxBegin``): id, commit time (µs) and the previous transaction's commit LSN."""

    @property
    def xid(self) -> int:
        """The transaction id (``source.txId``)."""
        ...

    @property
    def commit_ts_us(self) -> int:
        """The commit time in µs since the epoch (``source.ts_*``)."""
        ...

    @property
    def last_commit_lsn(self) -> int | None:
        """The previous transaction's commit LSN (``source.sequence[0]``); None at the start."""
        ...


def sequence(last_commit_lsn: int | None, lsn: int | None) -> str:
    """``source.sequence``: Jackson's rendering of ``[lastCommitLsn, lsn]`` as decimal strings."""
    first = "null" if last_commit_lsn is None else f'"{last_commit_lsn}"'
    second = "null" if lsn is None else f'"{lsn}"'
    return f"[{first},{second}]"


def _int_or_null(value: int | None) -> bytes:
    return b"null" if value is None else b"%d" % value


def _literal(fragment: bytes) -> bytes:
    """``fragment`` made safe to appear verbatim in a ``bytes % args`` template."""
    return fragment.replace(b"%", b"%%")


def transaction_payload(block: Mapping[str, Any]) -> dict[str, Any]:
    """The ``transaction`` block as written (``id`` text, orders integers); TerminalSinkError if incomplete."""
    try:
        return {
            "id": str(block["id"]),
            "total_order": int(block["total_order"]),
            "data_collection_order": int(block["data_collection_order"]),
        }
    except KeyError as exc:
        msg = f"transaction block lacks {exc.args[0]!r} (needs id, total_order, data_collection_order)"
        raise TerminalSinkError(msg) from None


def _row_json(row: Mapping[str, Any] | None) -> bytes:
    """``dumps(row)`` inlined (the row rendered as it is; ``null`` for None)."""
    if row is None:
        return b"null"
    out = _orjson_dumps(row, default=render_default)
    if ESCAPE_MARK in out:
        out = LOWER_HEX_ESCAPE.sub(upper_escape, out)
    return out


class TableFragments:
    """The constant byte fragments of one table's records, rendered once (immutable).

    ``value_prefix``/``key_prefix`` are the ``{"schema":...,"payload":`` parts (None without
    schemas); ``key_names`` the emitted key columns; ``defaults`` the schema default of each
    emitted column that has one (JsonConverter writes it in place of a null value).
    """

    __slots__ = (
        "defaults",
        "key_close",
        "key_head",
        "key_names",
        "key_prefix",
        "key_prefix_bytes",
        "key_tail",
        "read_head",
        "single_key",
        "source_db",
        "source_head",
        "source_table",
        "table_id",
        "value_head",
        "value_tail",
    )

    def __init__(
        self,
        table_id: TableId,
        *,
        value_prefix: bytes | None,
        key_prefix: bytes | None,
        key_names: tuple[str, ...],
        defaults: Mapping[str, Any],
        topic_prefix: str,
        database: str,
        connector_version: str,
    ) -> None:
        self.table_id = table_id
        self.defaults = dict(defaults)
        self.key_names = key_names
        self.key_prefix = key_prefix
        # {"schema":...,"payload":{"before":  ...  }}
        self.value_head = (value_prefix or b"") + b'{"before":'
        self.read_head = self.value_head + b'null,"after":'
        self.value_tail = b"}}" if value_prefix is not None else b"}"
        self.single_key = key_names[0] if len(key_names) == 1 else None
        self.key_head = (key_prefix or b"") + b"{" + dumps(key_names[0]) + b":" if key_names else b""
        self.key_tail = b"}}" if key_prefix is not None else b"}"
        self.key_prefix_bytes = key_prefix or b""
        self.key_close = b"}" if key_prefix is not None else b""
        self.source_head = (
            b'{"version":' + dumps(connector_version) + b',"connector":' + dumps(CONNECTOR)
            + b',"name":' + dumps(topic_prefix) + b',"ts_ms":'
        )
        self.source_db = b',"db":' + dumps(database) + b',"sequence":'
        self.source_table = (
            b',"schema":' + dumps(table_id.schema) + b',"table":' + dumps(table_id.table) + b',"txId":'
        )

    def key(self, row_values: Mapping[str, Any] | None) -> bytes | None:
        """Key record: the key columns of ``row_values``; None for a keyless table or a None row."""
        if not self.key_names or row_values is None:
            return None
        name = self.single_key
        if name is not None:
            return self.key_head + dumps(row_values.get(name)) + self.key_tail
        return record(self.key_prefix, {name: row_values.get(name) for name in self.key_names})

    def fill_defaults(self, row: Mapping[str, Any]) -> Mapping[str, Any]:
        """``row`` with every null value of a column that has a schema default replaced by it; ``row``
        itself (not copied) when there is none. Looks only at the defaulted columns (usually a few)."""
        defaults = self.defaults
        nulls = [name for name in defaults if name in row and row[name] is None]
        if not nulls:
            return row
        out = dict(row)
        for name in nulls:
            out[name] = defaults[name]
        return out

    def source(self, event: ChangeEvent, ts_us_now: int) -> bytes:
        """The ``source`` block of ``event`` (see ``EnvelopeSerializer`` for the rules)."""
        ts_us = ts_us_now if event.op is _READ else event.commit_ts_us
        incremental = event.snapshot == "incremental"
        return b"".join((
            self.source_head,
            b"%d" % (ts_us // 1000),
            b',"snapshot":',
            b'"false"' if event.snapshot is None else dumps(event.snapshot),
            self.source_db,
            dumps(sequence(event.last_commit_lsn, event.lsn)),
            b',"ts_us":%d,"ts_ns":%d' % (ts_us, ts_us * 1000),
            self.source_table,
            b"null" if incremental else _int_or_null(event.tx_id),
            b',"lsn":',
            b"null" if incremental else _int_or_null(event.lsn),
            SOURCE_TAIL,
        ))

    def value(self, event: ChangeEvent, before_json: bytes, after_json: bytes, ts_us_now: int,
              transaction: Mapping[str, Any] | None) -> bytes:
        """The value record of ``event`` around its already rendered row images (the built-in ``source`` block)."""
        return self.value_with_source(event.op, before_json, after_json, self.source(event, ts_us_now), ts_us_now,
                                      transaction)

    def value_with_source(self, op: Op, before_json: bytes, after_json: bytes, source_json: bytes, ts_us_now: int,
                          transaction: Mapping[str, Any] | None) -> bytes:
        """The value record of an ``op`` event around its already rendered row images and ``source`` block."""
        return b"".join((
            self.value_head,
            before_json,
            b',"after":',
            after_json,
            b',"source":',
            source_json,
            b',"transaction":',
            b"null" if transaction is None else dumps(transaction_payload(transaction)),
            b',"op":',
            OP_JSON[op],
            b',"ts_ms":%d,"ts_us":%d,"ts_ns":%d' % (ts_us_now // 1000, ts_us_now, ts_us_now * 1000),
            self.value_tail,
        ))


class FastRenderer:
    """Key and value records of rows that hold exactly the payload columns in payload order.

    One per serializer (per table schema); not thread-safe (it caches the current transaction's
    ``source`` templates). Rows are rendered as they are (only defaults are filled in), so a row
    with other keys or another order gives other bytes: callers check once per source plan that
    its rows match (``EnvelopeSerializer.value_names``).
    """

    __slots__ = ("_fragments", "_position", "_read_templates", "_templates")

    def __init__(self, fragments: TableFragments) -> None:
        self._fragments = fragments
        self._position: StreamPosition | None = None
        self._templates: dict[Op | tuple[Op, bool], bytes] = {}
        self._read_templates: dict[tuple[int | None, int | None, str | None], bytes] = {}

    def event(self, event: ChangeEvent, *, ts_us_now: int,
              transaction: Mapping[str, Any] | None = None) -> tuple[bytes | None, bytes]:
        """Key and value of ``event`` (a snapshot READ, or any change built from an event)."""
        fragments = self._fragments
        if event.op is Op.MESSAGE:
            msg = "logical decoding messages (op 'm') are not table change events"
            raise TerminalSinkError(msg)
        if event.table != fragments.table_id:
            msg = f"event of {event.table} given to the serializer of {fragments.table_id}"
            raise TerminalSinkError(msg)
        before: Mapping[str, Any] | None = None if event.op is _TRUNCATE else event.before
        after: Mapping[str, Any] | None = None if event.op is _TRUNCATE else event.after
        if fragments.defaults:
            before = None if before is None else fragments.fill_defaults(before)
            after = None if after is None else fragments.fill_defaults(after)
        value = fragments.value(event, _row_json(before), _row_json(after), ts_us_now, transaction)
        return self._key(event.after if event.after is not None else event.before), value

    def read(self, after: Mapping[str, Any], last_commit_lsn: int | None, lsn: int | None,
             snapshot: str | None, *, ts_us_now: int) -> tuple[bytes | None, bytes]:
        """Key and value of a snapshot READ of row ``after`` (no transaction block): the bytes of
        :meth:`event` for ``ChangeEvent(Op.READ, table, None, after, lsn, None, last_commit_lsn, None,
        any, snapshot)``. The part after the row is a template per ``(last_commit_lsn, lsn, snapshot)``
        (one window's READs share it; the last few are kept)."""
        fragments = self._fragments
        template = self._template(last_commit_lsn, lsn, snapshot)
        if fragments.defaults:
            after = fragments.fill_defaults(after)
        after_json = _orjson_dumps(after, default=render_default)
        if ESCAPE_MARK in after_json:
            after_json = LOWER_HEX_ESCAPE.sub(upper_escape, after_json)
        ts_ms, ts_ns = ts_us_now // 1000, ts_us_now * 1000
        value = b"".join((fragments.read_head, after_json, template % (
            ts_ms, ts_us_now, ts_ns, ts_ms, ts_us_now, ts_ns)))
        return self._key(after), value

    def read_rendered_rows(self, rows: Sequence[Any], rendered: Sequence[tuple[bytes, bytes | None] | None],
                           decode: Callable[[Any], Mapping[str, Any]], last_commit_lsn: int | None,
                           lsn: int | None, snapshot: str | None, *,
                           ts_us_now: int) -> list[tuple[bytes | None, bytes]]:
        """Key and value of a snapshot READ of each of ``rows``, whose ``after`` image and key payload a source
        rendered as JSON (``rendered``, one per row; lower-case ``\\u00xx`` escapes allowed, as orjson's), or
        None: then the row is ``decode``-d and rendered by :meth:`read`. The bytes of :meth:`read` of each row at
        emission time ``ts_us_now`` (the slice's: the part after the row is rendered once)."""
        fragments = self._fragments
        ts_ms, ts_ns = ts_us_now // 1000, ts_us_now * 1000
        tail = self._template(last_commit_lsn, lsn, snapshot) % (ts_ms, ts_us_now, ts_ns, ts_ms, ts_us_now, ts_ns)
        head, key_prefix, key_close = fragments.read_head, fragments.key_prefix_bytes, fragments.key_close
        keyed = bool(fragments.key_names)
        records: list[tuple[bytes | None, bytes]] = []
        append = records.append
        for values, payloads in zip(rows, rendered, strict=True):
            if payloads is None:
                append(self.read(decode(values), last_commit_lsn, lsn, snapshot, ts_us_now=ts_us_now))
                continue
            after, key = payloads
            if ESCAPE_MARK in after:
                after = LOWER_HEX_ESCAPE.sub(upper_escape, after)
            value = b"".join((head, after, tail))
            if key is None or not keyed:
                append((None, value))
                continue
            if ESCAPE_MARK in key:
                key = LOWER_HEX_ESCAPE.sub(upper_escape, key)
            append((b"".join((key_prefix, key, key_close)), value))
        return records

    def _template(self, last_commit_lsn: int | None, lsn: int | None, snapshot: str | None) -> bytes:
        """The READ template of a window position (:meth:`_read_template`), the last few kept."""
        template = self._read_templates.get((last_commit_lsn, lsn, snapshot))
        if template is None:
            if len(self._read_templates) >= 8:
                self._read_templates.clear()
            template = self._read_templates[last_commit_lsn, lsn, snapshot] = self._read_template(
                last_commit_lsn, lsn, snapshot)
        return template

    def _read_template(self, last_commit_lsn: int | None, lsn: int | None, snapshot: str | None) -> bytes:
        """Everything after a READ's ``after`` image, with ``%d`` for the source block's ``ts_ms``,
        ``ts_us``, ``ts_ns`` and the envelope's (all the emission time)."""
        fragments = self._fragments
        incremental = snapshot == "incremental"
        return b"".join((
            _literal(b',"source":' + fragments.source_head),
            b"%d",
            _literal(b',"snapshot":' + (b'"false"' if snapshot is None else dumps(snapshot)) + fragments.source_db
                     + dumps(sequence(last_commit_lsn, lsn))),
            b',"ts_us":%d,"ts_ns":%d',
            _literal(fragments.source_table + b"null" + b',"lsn":'
                     + (b"null" if incremental else _int_or_null(lsn)) + SOURCE_TAIL
                     + b',"transaction":null,"op":' + OP_JSON[_READ]),
            b',"ts_ms":%d,"ts_us":%d,"ts_ns":%d',
            _literal(fragments.value_tail),
        ))

    def streamed(
        self,
        op: Op,
        before: Mapping[str, Any] | None,
        after: Mapping[str, Any] | None,
        lsn: int,
        position: StreamPosition,
        *,
        ts_us_now: int,
        transaction: Mapping[str, Any] | None = None,
    ) -> tuple[bytes | None, bytes]:
        """Key and value of a streamed ``c``/``u``/``d``/``t`` event of transaction ``position``."""
        if position is not self._position:
            self._position = position
            self._templates = {}
        if transaction is None:
            template = self._templates.get(op)
            if template is None:
                template = self._templates[op] = self._stream_template(op, position, False)
            rest = template % (lsn, lsn, ts_us_now // 1000, ts_us_now, ts_us_now * 1000)
        else:
            template = self._templates.get((op, True))
            if template is None:
                template = self._templates[op, True] = self._stream_template(op, position, True)
            block = dumps(transaction_payload(transaction))
            rest = template % (lsn, lsn, block, ts_us_now // 1000, ts_us_now, ts_us_now * 1000)
        if op is _TRUNCATE:
            before = after = None
        fragments = self._fragments
        if fragments.defaults:
            before = None if before is None else fragments.fill_defaults(before)
            after = None if after is None else fragments.fill_defaults(after)
        if before is None:
            before_json = b"null"
        else:
            before_json = _orjson_dumps(before, default=render_default)
            if ESCAPE_MARK in before_json:
                before_json = LOWER_HEX_ESCAPE.sub(upper_escape, before_json)
        if after is None:
            after_json = b"null"
        else:
            after_json = _orjson_dumps(after, default=render_default)
            if ESCAPE_MARK in after_json:
                after_json = LOWER_HEX_ESCAPE.sub(upper_escape, after_json)
        value = b"".join((fragments.value_head, before_json, b',"after":', after_json, rest))
        return self._key(after if after is not None else before), value

    def _key(self, row: Mapping[str, Any] | None) -> bytes | None:
        fragments = self._fragments
        name = fragments.single_key
        if name is None or row is None:
            return fragments.key(row)
        key = _orjson_dumps(row.get(name), default=render_default)
        if ESCAPE_MARK in key:
            key = LOWER_HEX_ESCAPE.sub(upper_escape, key)
        return fragments.key_head + key + fragments.key_tail

    def _stream_template(self, op: Op, position: StreamPosition, with_block: bool) -> bytes:
        """Everything after the ``after`` image, with ``%d`` for the LSN (twice), ``%b`` for the
        transaction block (if any) and ``%d`` for ``ts_ms``/``ts_us``/``ts_ns`` of emission."""
        if op is Op.MESSAGE or op is Op.READ:
            msg = f"serialize_streamed takes streamed c/u/d/t events, not op {op.value!r}"
            raise TerminalSinkError(msg)
        fragments = self._fragments
        tx_id, ts_us, last_commit_lsn = position.xid, position.commit_ts_us, position.last_commit_lsn
        first = b"null" if last_commit_lsn is None else b'\\"%d\\"' % last_commit_lsn
        return b"".join((
            _literal(
                b',"source":' + fragments.source_head + b"%d" % (ts_us // 1000) + b',"snapshot":"false"'
                + fragments.source_db + b'"[' + first + b","
            ),
            b'\\"%d\\"]"',
            _literal(b',"ts_us":%d,"ts_ns":%d' % (ts_us, ts_us * 1000) + fragments.source_table + b"%d" % tx_id),
            b',"lsn":%d',
            _literal(SOURCE_TAIL + b',"transaction":'),
            b"%b" if with_block else b"null",
            _literal(b',"op":' + OP_JSON[op]),
            b',"ts_ms":%d,"ts_us":%d,"ts_ns":%d',
            _literal(fragments.value_tail),
        ))
