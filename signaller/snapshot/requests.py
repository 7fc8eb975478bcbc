"""Turning an ``execute-snapshot`` signal into the tables it queues.

``SnapshotRequests.queue`` expands the signal's ``data-collections`` patterns (RE2, full match)
over the captured tables, checks every table exists, compiles its ``additional-conditions``
filter, checks a ``surrogate-key`` (or warns that a table without a key will be skipped, as
Debezium does), and returns the ``QueuedTable`` entries in order. It changes nothing: the engine
queues what it returns. Raises ``SignalError`` (the rejection reason) for anything a signal got
wrong and ``SourceError`` when the database cannot be read. Call on the capture loop's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from signaller.config import CaptureSection, SnapshotSection
from signaller.errors import SignalError
from signaller.model import TableId
from signaller.patterns import PatternError, UserPattern, compile_pattern
from signaller.signals.model import ExecuteSnapshot
from signaller.snapshot.state import QueuedTable
from signaller.snapshot.tables import TableCatalog
from signaller.sources.base import TableSchemaProvider

log = logging.getLogger("signaller.snapshot")

FilterCompiler = Callable[[str, dict[str, str]], str]
"""Validates a filter against a table's column types and returns it normalized (``SignalError``)."""


def signal_pattern(text: str, where: str, signal_id: str, *, ignore_case: bool = False) -> UserPattern:
    """``text`` (trimmed) compiled with RE2, or ``SignalError`` naming ``where`` and what is accepted."""
    try:
        return compile_pattern(text.strip(), ignore_case=ignore_case)
    except PatternError as exc:
        raise SignalError(f"{where}: {exc}", signal_id) from None


class SnapshotRequests:
    """The tables an ``execute-snapshot`` signal queues (see the module docstring)."""

    def __init__(self, settings: SnapshotSection, capture: CaptureSection, schemas: TableSchemaProvider[Any],
                 tables: TableCatalog[Any], compile_filter: FilterCompiler) -> None:
        """Resolve against ``schemas``' tables under ``capture``'s filters (the signal table excluded)."""
        self._settings = settings
        self._capture = capture
        self._schemas = schemas
        self._tables = tables
        self._compile_filter = compile_filter

    def captured_tables(self) -> list[TableId]:
        """The source's tables the capture filters include, without the signal table."""
        signal_table = self._settings.signal_data_collection
        return [t for t in self._schemas.tables()
                if self._capture.is_table_captured(t.schema, t.table, always=signal_table) and t != signal_table]

    @staticmethod
    def expand(patterns: Sequence[str], tables: list[TableId], signal_id: str) -> list[TableId]:
        """The ``tables`` each pattern fully matches, in pattern order, each once; ``SignalError`` for a
        pattern that matches none."""
        chosen: list[TableId] = []
        for index, pattern in enumerate(patterns):
            regex = signal_pattern(pattern, f"data-collections[{index}]", signal_id)
            matched = [t for t in tables if regex.fullmatch(str(t))]
            if not matched:
                names = ", ".join(str(t) for t in tables) or "none"
                raise SignalError(f"data-collections[{index}] {pattern!r} matches no captured table; "
                                  f"captured tables: {names}", signal_id)
            chosen.extend(t for t in matched if t not in chosen)
        return chosen

    def queue(self, action: ExecuteSnapshot) -> list[QueuedTable]:
        """The queue entries of ``action``'s tables (see the module docstring)."""
        tables = self.expand(action.data_collections, self.captured_tables(), action.signal_id)
        queued: list[QueuedTable] = []
        for table in tables:
            info = self._schemas.describe(table)
            if info is None:
                raise SignalError(f"table {table} does not exist", action.signal_id)
            condition = next((c for index, c in enumerate(action.additional_conditions)
                              if signal_pattern(c.data_collection, f"additional-conditions[{index}].data-collection",
                                                action.signal_id, ignore_case=True).fullmatch(str(table))), None)
            normalized = None
            if condition is not None:
                try:
                    normalized = "(" + self._compile_filter(condition.filter, info.sql_types) + ")"
                except SignalError as exc:
                    raise SignalError(f"filter for {table}: {exc.reason}", action.signal_id) from None
            if action.surrogate_key is not None:
                self._tables.check_surrogate(info, action.surrogate_key, action.signal_id)
            elif not self._tables.key_columns(info):
                # Debezium accepts the signal and skips the table when its turn comes
                # (TABLE_SCAN_COMPLETED with status NO_PRIMARY_KEY); so does signaller, with a hint.
                log.warning("signal %s: table %s has no primary key and will be skipped (NO_PRIMARY_KEY); give a "
                            "'surrogate-key' (a unique NOT NULL column) or configure message.key.columns",
                            action.signal_id, table)
            queued.append(QueuedTable(str(table), normalized, action.surrogate_key, action.signal_id))
        return queued


def stopped_by(queue: Sequence[QueuedTable], patterns: Sequence[str]) -> list[QueuedTable]:
    """The queued tables a ``stop-snapshot`` signal's patterns fully match (patterns were checked when
    the signal was applied; one that no longer compiles is ignored, with a warning)."""
    regexes = []
    for pattern in patterns:
        try:
            regexes.append(compile_pattern(pattern.strip()))
        except PatternError as exc:
            log.warning("stop-snapshot pattern ignored: %s", exc)
    return [q for q in queue if any(r.fullmatch(q.table) for r in regexes)]
