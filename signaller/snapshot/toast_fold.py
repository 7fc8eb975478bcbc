"""A window's READ of a row whose streamed change lacks a TOASTed value: folded, not dropped. Pure logic.

The DBLog rule (as Debezium applies it) drops a chunk row whose identity a change of the window touched:
the stream carries a state at least as new. Under PostgreSQL's ``REPLICA IDENTITY DEFAULT`` an UPDATE that
leaves a TOASTed column unchanged does not carry it: its row image holds the unavailable-value placeholder
(``__debezium_unavailable_value``, or the column type's form of it). For a row that predates the capture,
the chunk row is then the only full copy of that column; dropping it loses the value for every consumer
(Debezium loses it the same way). So the window keeps its changes per identity (:class:`WindowChanges`),
and :meth:`WindowChanges.fold` replaces such a row with a READ folded from the chunk row and the changes.

Contract of ``fold(identity, chunk_row)`` (the chunk row of ``identity``, which the window's changes
superseded):

* None (drop the row, exactly as DBLog) when no change of the identity carries a placeholder, when the last
  one removed the identity (a delete, or an update that moved the row to another key: no READ for the old
  key), or when a placeholder cannot be resolved (below);
* otherwise the row as of the last change: its after image, each placeholder column taken from the most recent
  earlier change of the identity that carried a real value for it, else from the chunk row. A placeholder
  means "not changed by this update": with no change of the window carrying the column, its value was the
  same all through the window, so the chunk row has it whenever the chunk was read. That holds while the
  identity names one row all along: after a change removed the identity and another re-created it, the
  chunk row may show the removed row (the chunk's read may have preceded the removal), so a placeholder
  left unresolved then makes ``fold`` drop the row, as DBLog (the value is lost, as with Debezium). The
  folded row has the chunk row's columns, in its order (the READ is written with the chunk's schema).

Changes are recorded (``record``) in any order and as often as the caller likes (a change matched when
streamed and again when the read's visibility came back is one change); ``fold`` orders them by their place
in the log (commit LSN, then LSN; recording order for changes without positions). ``placeholders`` maps each
column whose streamed value may be the placeholder to that value (``TableRows.placeholders``); empty (no such
column, or an identity that may name several rows: folding could give one row's values to another), nothing
is recorded and every superseded row is dropped, as DBLog. Nothing here survives a restart: a restarted
session reads the chunk again.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from signaller.model import ChangeEvent, Op

Identity = Hashable
_Kept = tuple[int, ChangeEvent, Identity | None, Identity | None]
"""A kept change: recording order, the event, its before and after identities."""


class WindowChanges:
    """The changes of one window's table, per identity, kept for :meth:`fold` (see the module docstring)."""

    def __init__(self, placeholders: Mapping[str, Any] | None = None) -> None:
        self.placeholders: Mapping[str, Any] = placeholders or {}
        self._changes: dict[Identity, dict[int, _Kept]] = {}
        self._recorded = 0

    def record(self, event: ChangeEvent, before: Identity | None, after: Identity | None) -> None:
        """The window superseded rows with ``event``'s before identity ``before`` and after identity ``after``
        (None: the image is missing or carries no key); nothing when ``placeholders`` is empty."""
        if not self.placeholders:
            return
        self._recorded += 1
        for identity in {before, after} - {None}:
            kept = self._changes.setdefault(identity, {})
            kept.setdefault(id(event), (self._recorded, event, before, after))  # the event stays referenced: its id too

    def fold(self, identity: Identity, chunk_row: Mapping[str, Any]) -> dict[str, Any] | None:
        """The READ to emit instead of ``chunk_row`` (superseded, of ``identity``), or None to drop it."""
        kept = self._changes.get(identity)
        if not kept or not any(after == identity and self._missing(event.after)
                                   for _, event, _, after in kept.values()):
            return None  # no placeholder: DBLog's drop, as Debezium
        row: dict[str, Any] | None = None
        removed = False  # a change removed the identity (later changes may re-create it)
        anchored = True  # the identity named one row all along: the chunk row's values may fill placeholders
        for event, before, after in _in_log_order(kept.values()):
            if after != identity or event.after is None or event.op == Op.DELETE:
                row, removed = None, True  # deleted, or moved to another key
                continue
            created = event.op == Op.CREATE or (before is not None and before != identity) or row is None
            if created:
                anchored = anchored and not removed
                row = dict(event.after)  # a moved row's placeholders are another key's values: not ours to fill
            else:
                row = self._over(row, event.after)
        if row is None:
            return None
        missing = self._missing(row)
        if missing and (not anchored or not missing <= chunk_row.keys()):
            return None
        return {name: chunk_row[name] if name in missing or name not in row else row[name] for name in chunk_row}

    def _over(self, row: dict[str, Any] | None, after: Mapping[str, Any]) -> dict[str, Any]:
        """``after`` with each placeholder column's value from ``row`` (the state before it), where ``row`` has one."""
        missing = self._missing(after)
        previous = row or {}
        return {name: previous[name] if name in missing and name in previous else value
                for name, value in after.items()}

    def _missing(self, image: Mapping[str, Any] | None) -> set[str]:
        """The columns of ``image`` that hold their placeholder."""
        if image is None:
            return set()
        return {name for name, placeholder in self.placeholders.items()
                if name in image and image[name] == placeholder}

    def clear(self, placeholders: Mapping[str, Any] | None = None) -> None:
        """Forget every change (a new window, or another table), from now on with ``placeholders``."""
        self._changes.clear()
        self.placeholders = placeholders or {}


def _in_log_order(kept: Iterable[_Kept]) -> list[tuple[ChangeEvent, Identity | None, Identity | None]]:
    """The kept entries by place in the log (commit LSN, LSN; else as recorded), as ``(event, before, after)``."""
    entries = list(kept)
    if all(event.commit_lsn is not None and event.lsn is not None for _, event, _, _ in entries):
        entries.sort(key=lambda entry: (entry[1].commit_lsn, entry[1].lsn, entry[0]))
    else:
        entries.sort(key=lambda entry: entry[0])
    return [(event, before, after) for _, event, before, after in entries]
