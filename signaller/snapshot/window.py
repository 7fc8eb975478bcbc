"""The DBLog window: the rows of one chunk, read between the open and close watermarks, and emitted
after the close one, in slices. Pure logic, no I/O.

Contract: ``fill`` happens after the open watermark was written and before the close watermark was
written. Stream events arriving before the open marker are ignored (the chunk SELECT already saw
their effect), except those the caller knows the SELECT did not see (``on_unseen_key``); from the
open marker until the window's last row is taken, every stream event of the window's table records
its row identity (``on_stream_key``), and a row whose identity was recorded is superseded (the
stream carries a state at least as new, sent before the row would be): the caller drops it
(``superseded``). After ``close`` the caller takes the rows in chunk order (``take``), a slice at a
time, between stream batches; ``finish`` ends the window. A chunk may also arrive in slices
(``fill`` with ``complete=False``, then ``extend``, then ``complete``): rows read later belong to
the same snapshot, taken between the watermarks. A marker of another chunk (left over from before a
restart) does nothing.

Supersession is checked lazily, when a row is taken: a window whose table saw no stream change
(the common case) costs no identity at all. The identity of a row is its chunking key (primary key,
``message.key.columns`` or the signal's ``surrogate-key``), never the message key: a keyless table
has an empty message key, and rows sharing one identity would collapse into one. ``fill`` never
drops a row, even if two rows share an identity; ``evicted`` counts the identities that superseded
at least one row and ``dropped`` the rows dropped, so the caller can account for every row read (a
stream image supersedes exactly one row; more than one means the identity was ambiguous and rows
were lost). A superseded row whose identity's changes lack a TOASTed value is not dropped but folded with
them (``resolve``; ``changes``, see ``signaller.snapshot.toast_fold``): ``on_change`` keeps the changes.

A chunk that comes back empty leaves the window open for the next queued table's first chunk (as
Debezium): while that may happen, streamed changes of the ``later`` tables (given to ``fill``) are
held (``hold``); ``switch_table`` moves the window to the next table and hands back that table's
held changes, to be recorded with its key.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any, Generic, TypeVar, cast

from signaller.model import ChangeEvent
from signaller.snapshot.toast_fold import WindowChanges

Row = TypeVar("Row")


class Window(Generic[Row]):
    """The rows of one chunk between its watermarks and until emitted (see the module docstring); ``Row`` is the
    caller's row type. Pure logic, used from one thread."""

    def __init__(self) -> None:
        self.chunk_id: str | None = None
        self.table: str | None = None
        self.is_open = False
        self.closed = False
        self.complete = True
        self.evicted = 0
        self.dropped = 0
        self._rows: list[Row | None] = []
        """The chunk's rows in chunk order; those before ``_next`` were taken and are None (freed by their slice)."""
        self._next = 0
        self._seen: set[Hashable] = set()
        self._matched: set[Hashable] = set()
        self.later: frozenset[str] = frozenset()
        self._held: list[tuple[str, Any]] = []
        self.changes = WindowChanges()

    def fill(self, chunk_id: str, table: str, rows: Iterable[Row], *, complete: bool = True,
             later: frozenset[str] = frozenset()) -> None:
        """Buffer a chunk (rows in chunk order) for ``chunk_id``; keeps every row. With ``complete=False`` more
        rows of the chunk follow (``extend``) until ``complete_chunk``; ``later``: the tables the window may move
        on to if the chunk comes back empty (``hold``, ``switch_table``)."""
        self.chunk_id, self.table, self.is_open, self.closed = chunk_id, table, False, False
        self.complete, self.later, self._held = complete, later, []
        self._rows, self._next, self._seen, self._matched = list(rows), 0, set(), set()
        self.evicted = self.dropped = 0
        self.changes.clear()

    def hold(self, table: str, change: Any) -> None:
        """A streamed change of ``table`` (not the window's) while the window is open: kept if ``table`` is one
        the window may move on to (``later``), in stream order."""
        if self.is_open and table in self.later:
            self._held.append((table, change))

    def settle_table(self) -> None:
        """The chunk has rows (or failed): the window stays with its table; held changes are dropped."""
        self.later, self._held = frozenset(), []

    def switch_table(self, table: str, later: frozenset[str]) -> list[Any]:
        """The chunk came back empty and the window, still the same (open or not, its markers), now reads
        ``table``'s first chunk: identities recorded for the old table are forgotten; returns the changes of
        ``table`` held since the open marker, in stream order (the caller records them with its key); from now
        on changes of ``later`` are held."""
        held = [change for name, change in self._held if name == table]
        self.table, self.later, self._held = table, later, []
        self._rows, self._next, self._seen, self._matched = [], 0, set(), set()
        self.complete = False
        self.changes.clear()
        return held

    def extend(self, rows: Iterable[Row]) -> None:
        """More rows of the chunk being read, in chunk order."""
        self._rows.extend(rows)

    def complete_chunk(self) -> None:
        """Every row of the chunk was read."""
        self.complete = True

    def expect(self, chunk_id: str) -> None:
        """A window with no rows (the chunk was empty); its markers still open and close it."""
        self.fill(chunk_id, "", ())

    def matches(self, marker_id: str) -> bool:
        """Whether ``marker_id`` belongs to the buffered chunk (it starts with the chunk id)."""
        return self.chunk_id is not None and marker_id.startswith(self.chunk_id)

    def open(self, marker_id: str) -> bool:
        """The chunk's open marker came back: from now on streamed changes supersede its rows; False, changing
        nothing, for a marker of another chunk."""
        if not self.matches(marker_id):
            return False
        self.is_open = True
        return True

    def on_stream_key(self, table: str, key: Hashable) -> bool:
        """A streamed change of ``table`` whose row image has identity ``key``: from the open marker until the last
        row is taken, rows with that identity are superseded. Returns whether it was recorded."""
        if not self.watching or table != self.table:
            return False
        self._seen.add(key)
        return True

    def on_unseen_key(self, table: str, key: Hashable) -> bool:
        """A change of ``table`` whose row image has identity ``key`` and which the chunk's read did not see
        (``signaller.snapshot.visibility``), streamed whenever (before the open marker too): as ``on_stream_key``,
        while rows are still to be read or taken. Returns whether it was recorded."""
        if self.chunk_id is None or table != self.table or (self.complete and self._next >= len(self._rows)):
            return False
        self._seen.add(key)
        return True

    def on_change(self, table: str, event: ChangeEvent, keys: Sequence[str], *, unseen: bool = False) -> None:
        """A streamed change of ``table``: the identities (chunk-key values ``keys``) of its before and after images
        are recorded (``on_unseen_key`` if ``unseen``, else ``on_stream_key``), and the change is kept in
        ``changes`` when one was (``toast_fold``)."""
        record = self.on_unseen_key if unseen else self.on_stream_key
        before, after = (None if image is None else row_identity(image, keys) for image in (event.before, event.after))
        if any([record(table, identity) for identity in (before, after) if identity is not None]):
            self.changes.record(event, before, after)

    @property
    def watching(self) -> bool:
        """Whether a streamed change could still supersede a row (open, with rows not yet taken)."""
        return self.is_open and (not self.complete or self._next < len(self._rows))

    def close(self, marker_id: str) -> bool:
        """The close marker came back: the rows may be taken; False, changing nothing, for a marker of another
        chunk or a window already closed."""
        if self.closed or not self.matches(marker_id):
            return False
        self.closed = True
        return True

    def take(self, count: int) -> list[Row]:
        """The next ``count`` rows (fewer at the end) in chunk order, once closed; the caller drops those that
        ``superseded`` says are. The window keeps no reference to a taken row, so a chunk's rows are freed slice by
        slice as the caller is done with them, not all at once when the window ends (on the loop's thread, a
        65,536-row chunk's raw rows took about 16 ms to free in one piece, a pause for the live stream)."""
        if not self.closed:
            return []
        start = self._next
        end = self._next = min(len(self._rows), start + max(0, count))
        taken = cast("list[Row]", self._rows[start:end])
        self._rows[start:end] = [None] * (end - start)
        return taken

    @property
    def any_superseded(self) -> bool:
        """Whether any streamed change recorded an identity (if not, no row is superseded: skip ``superseded``)."""
        return bool(self._seen)

    def superseded(self, key: Hashable) -> bool:
        """Whether the taken row with identity ``key`` is superseded (drop it); counts ``evicted`` (once per identity)
        and ``dropped`` (every row)."""
        if key not in self._seen:
            return False
        self.dropped += 1
        if key not in self._matched:
            self._matched.add(key)
            self.evicted += 1
        return True

    def resolve(self, rows: list[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
        """The taken ``rows`` (decoded, identities from chunk-key columns ``keys``) to emit: a superseded row is
        dropped (``superseded``), or replaced by its READ folded with the window's changes (``toast_fold``; such a
        row is not counted as dropped)."""
        kept = []
        for row in rows:
            identity = row_identity(row, keys)
            folded = self.changes.fold(identity, row) if identity in self._seen else None
            if folded is not None:
                kept.append(folded)
            elif not self.superseded(identity):
                kept.append(row)
        return kept

    def finish(self) -> None:
        """End the window (every row taken, or the window abandoned); ``evicted``/``dropped`` stay readable until the
        next ``fill``."""
        self._rows, self._next, self._seen, self._matched = [], 0, set(), set()
        self.chunk_id, self.table, self.is_open, self.closed, self.complete = None, None, False, False, True
        self.later, self._held = frozenset(), []
        self.changes.clear()

    def __len__(self) -> int:
        return len(self._rows) - self._next

    @property
    def done(self) -> bool:
        """Closed, complete and every row taken."""
        return self.closed and self.complete and self._next >= len(self._rows)

    @property
    def pending(self) -> bool:
        """A chunk was read and its rows are not all emitted yet (its close marker may not have come back)."""
        return self.chunk_id is not None


def row_identity(row: dict[str, Any], names: Sequence[str]) -> tuple[Hashable, ...] | None:
    """The identity of a row inside a window: its chunk-key values (converted, as in change events),
    or None if the row image carries none of them (e.g. a before image without key columns)."""
    values = tuple(_hashable(row.get(name)) for name in names)
    return None if all(value is None for value in values) else values


def _hashable(value: Any) -> Hashable:
    """``value`` in a hashable form (arrays and structs as tuples), equal exactly when the values are."""
    if isinstance(value, (list, tuple)):
        return ("[]", *(_hashable(item) for item in value))
    if isinstance(value, dict):
        return ("{}", *sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, bytearray):
        return bytes(value)
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    return value  # type: ignore[no-any-return]
