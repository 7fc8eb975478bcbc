"""Snapshot READs through the fast path (issue 13): ``EnvelopeSerializer.serialize_read`` (a template
per window position, ``wire._fast.FastRenderer.read``) and ``EventDispatcher.reads`` (a window's
slice in one call) give the bytes of the generic rendering (``serialize_key`` + ``serialize_value``
of the READ ``ChangeEvent``), for every type of ``schemas/type-mapping.md`` (its samples, under every
type mode it lists), as a value column and as the key, with and without schemas, at every kind of
window position.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from schemas.generate import MODES, SAMPLES
from signaller.config import config_from_mapping
from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.runtime import dispatch
from signaller.runtime.capture import CaptureStats
from signaller.runtime.checkpoint import Checkpoint
from signaller.runtime.dispatch import EventDispatcher
from signaller.sources.postgres.codecs import codec_for
from signaller.sources.postgres.reader import Change, make_plan, modes_of, row_from_tuple
from signaller.sources.postgres.source import postgres_transaction_id
from signaller.wire import jackson
from signaller.wire.envelope import EnvelopeSerializer
from tests.unit.test_event_dispatch import CONVERTERS, NOW, RecordingSink
from tests.unit.test_streaming_fast_path import BASE

pytestmark = pytest.mark.unit

TABLE = TableId("public", "reads%d")
POSITIONS = [(None, None), (0x152F000, 0x1530000), (None, 0x1530000), (0x152F000, 0)]
SNAPSHOTS = ["incremental", "true", "last", None]


def _column(name: str, type_name: str, typmod: int, *, key: bool) -> Column:
    element = type_name[1:] if type_name.startswith("_") else None
    return Column(name, 0, type_name, typmod, element_type_name=element, optional=not key, is_key=key)


def _reference(serializer: EnvelopeSerializer, row: dict[str, Any], position: tuple[int | None, int | None],
               snapshot: str | None) -> tuple[bytes | None, bytes]:
    last_commit, lsn = position
    event = ChangeEvent(Op.READ, TABLE, None, row, lsn, None, last_commit, None, NOW - 5, snapshot)
    return serializer.serialize_key(row), serializer.serialize_value(event, ts_us_now=NOW)


@pytest.mark.parametrize("converter", CONVERTERS)
@pytest.mark.parametrize(("label", "modes"), MODES)
def test_every_mapped_type_reads_as_the_reference(label: str, modes: Any, converter: dict[str, Any]) -> None:
    compared = 0
    for type_name, typmod, sample in SAMPLES:
        for as_key in (False, True):
            columns = (_column("id", "int4", -1, key=not as_key), _column("v", type_name, typmod, key=as_key),
                       _column("note", "text", -1, key=False))
            schema = TableSchema(TABLE, columns)
            codecs = {c.name: codec_for(c, modes, str(TABLE)) for c in columns}
            if not codecs["v"].emitted:
                continue
            serializer = EnvelopeSerializer(schema, codecs, topic_prefix="pg1", database="shop", **converter)
            rows = [{"id": 7, "v": codecs["v"].convert(sample), "note": "a\x1fb %d \"q\""}]
            if not as_key:
                rows.append({"id": 8, "v": None, "note": None})
            for row in rows:
                for position in POSITIONS:
                    for snapshot in SNAPSHOTS:
                        expected = _reference(serializer, row, position, snapshot)
                        assert serializer.serialize_read(row, *position, ts_us_now=NOW, snapshot=snapshot) == \
                            expected, (type_name, typmod, sample, as_key, position, snapshot)
                        read = Change.from_event(ChangeEvent(Op.READ, TABLE, None, row, position[1], None,
                                                             position[0], None, NOW - 5, snapshot), None)  # type: ignore[arg-type]
                        assert serializer.serialize(read, ts_us_now=NOW) == expected
                        compared += 1
    assert compared >= len(SAMPLES) * len(POSITIONS) * len(SNAPSHOTS)


def test_dispatcher_reads_sends_the_records_of_one_read_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """``reads`` (one window slice) and ``read`` of each row's event: the same records, counts and group."""
    monkeypatch.setattr(dispatch, "_time_ns", lambda: NOW * 1000)
    config = config_from_mapping({**BASE, "skipped.operations": "none"})
    columns = [_column("id", "int4", -1, key=True)] + [
        _column(f"c{n}", type_name, typmod, key=False) for n, (type_name, typmod, _) in enumerate(SAMPLES)]
    schema = TableSchema(TABLE, tuple(columns))
    plan = make_plan(schema, tuple(c.name for c in columns), config.capture, modes_of(config.types))
    texts = [("1", *(sample for _, _, sample in SAMPLES)), ("2", *(None for _ in SAMPLES))]
    rows = [row_from_tuple(plan, text) for text in texts]
    sent: list[list[tuple[str, bytes | None, bytes | None]]] = []
    for bulk in (True, False):
        sink, checkpoint, stats = RecordingSink(), Checkpoint(), CaptureStats()
        dispatcher = EventDispatcher(config, sink, checkpoint, stats,  # type: ignore[arg-type]
                                     transaction_id=postgres_transaction_id, count_by_table=True)
        checkpoint.begin()
        if bulk:
            assert dispatcher.reads(plan, rows, 0x152F000, 0x1530000,
                                    lambda event: Change.from_event(event, plan)) == len(rows)
        else:
            for row in rows:
                dispatcher.read(Change.from_event(ChangeEvent(Op.READ, TABLE, None, row, 0x1530000, None, 0x152F000,
                                                              None, 0, "incremental"), plan))
        assert stats.events == len(rows) and checkpoint.in_flight() == len(rows)
        assert dispatcher.take_event_counts() == {(str(TABLE), "r"): len(rows)}
        sent.append(sink.records)
    assert sent[0] == sent[1] and len(sent[0]) == 2


class _Rendering:
    """A source's READ rendering as the dispatcher sees it (``ReadRendering``): the JSON of the generic rendering
    of ``decode`` of each row, with orjson's lower-case escapes, None for the rows of ``unrendered``."""

    def __init__(self, plan: Any, decode: Any, unrendered: set[str], key_names: tuple[str, ...]) -> None:
        self.select = ("x",)
        self.value_names = plan.row_columns
        self.key_names = key_names
        self._decode, self._unrendered = decode, unrendered

    def render(self, values: Any, offset: int) -> tuple[bytes, bytes | None] | None:
        assert values[offset] == "rendered"
        if values[0] in self._unrendered:
            return None
        row = self._decode(values)
        key = orjson.dumps({name: row[name] for name in self.key_names}) if self.key_names else None
        return orjson.dumps(row, default=jackson.render_default), key

    def render_rows(self, rows: Any, offset: int) -> list[tuple[bytes, bytes | None] | None]:
        return [self.render(values, offset) for values in rows]


@pytest.mark.parametrize("converter", CONVERTERS)
def test_rendered_reads_send_the_records_of_reads(converter: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """``rendered_reads``: the records of ``reads`` of the decoded rows, in order, also for the rows the source
    left unrendered (converted the generic way in their place), with one emission time for the slice."""
    monkeypatch.setattr(dispatch, "_time_ns", lambda: NOW * 1000)
    properties = {**BASE, "skipped.operations": "none"}
    if not converter.get("schemas_enable", True):
        properties |= {"value.converter.schemas.enable": "false", "key.converter.schemas.enable": "false"}
    if not converter.get("key_schemas_enable", True):
        properties |= {"key.converter.schemas.enable": "false"}
    config = config_from_mapping(properties)
    columns = (_column("id", "int4", -1, key=True), _column("note", "text", -1, key=False),
               _column("d", "date", -1, key=False))
    schema = TableSchema(TABLE, columns)
    plan = make_plan(schema, tuple(c.name for c in columns), config.capture, modes_of(config.types))
    raw = [(str(n), f"n\x01{n} \"q\" %d", None if n % 3 else "2024-03-01", str(n), "rendered") for n in range(9)]

    def decode(values: Any) -> dict[str, Any]:
        return row_from_tuple(plan, values[:3])

    sent = []
    for rendered in (True, False):
        sink, checkpoint, stats = RecordingSink(), Checkpoint(), CaptureStats()
        dispatcher = EventDispatcher(config, sink, checkpoint, stats,  # type: ignore[arg-type]
                                     transaction_id=postgres_transaction_id, count_by_table=True)
        checkpoint.begin()
        change_of = lambda event: Change.from_event(event, plan)  # noqa: E731
        if rendered:
            assert dispatcher.renders_reads
            rendering = _Rendering(plan, decode, {"4", "5"}, ("id",))
            assert dispatcher.rendered_reads(plan, rendering, raw, 4, decode, 0x152F000, 0x1530000, change_of) == 9
        else:
            assert dispatcher.reads(plan, [decode(values) for values in raw], 0x152F000, 0x1530000, change_of) == 9
        assert stats.events == 9 and checkpoint.in_flight() == 9
        assert dispatcher.take_event_counts() == {(str(TABLE), "r"): 9}
        sent.append(sink.records)
    assert sent[0] == sent[1]
    assert b"\\u0001" in sent[0][0][2]  # type: ignore[operator]  # upper-cased like the generic path's


def test_rendered_reads_convert_every_row_when_the_serializer_is_not_the_renderings() -> None:
    """A rendering whose key (or columns) the serializer does not have: every row is decoded (never spliced)."""
    config = config_from_mapping({**BASE, "skipped.operations": "none"})
    columns = (_column("id", "int4", -1, key=True), _column("note", "text", -1, key=False))
    plan = make_plan(TableSchema(TABLE, columns), ("id", "note"), config.capture, modes_of(config.types))
    sink, checkpoint, stats = RecordingSink(), Checkpoint(), CaptureStats()
    dispatcher = EventDispatcher(config, sink, checkpoint, stats,  # type: ignore[arg-type]
                                 transaction_id=postgres_transaction_id)
    checkpoint.begin()
    decoded: list[Any] = []

    def decode(values: Any) -> dict[str, Any]:
        decoded.append(values)
        return row_from_tuple(plan, values[:2])

    rendering = _Rendering(plan, decode, set(), ("note",))
    raw = [("1", "a", "1", "rendered"), ("2", "b", "2", "rendered")]
    assert dispatcher.rendered_reads(plan, rendering, raw, 3, decode, None, None,
                                     lambda event: Change.from_event(event, plan)) == 2
    assert decoded == raw and len(sink.records) == 2
