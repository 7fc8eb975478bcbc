"""The ``source`` signal channel: rows of the signal table (``signal.data.collection``), as they come
through the change stream.

The capture loop feeds each change of the signal table to ``offer`` at its place in the stream and
reads the channel right away, so a signal is applied inside its transaction's Kafka group and its
position (the row's LSN) is stored with the stream's own position: ``stores_positions`` is False, and
after a restart the rows come again with the stream from the stored log position.

A row is ``(id, type, data)``: an insert is a signal; with ``incremental.snapshot.watermarking.strategy``
``insert_delete`` the delete of an ``<id>-open`` row stands for the window's close. The watermark rows
(``snapshot-window-open``/``-close``) are not signals: ``offer`` returns them as ``WindowMarker``s for
the engine, which needs them at their exact place in the stream. Rows of the source channel are read
even when ``source`` is not in ``signal.enabled.channels`` (the watermarks need the table), but their
signals are then ignored (logged), not applied; a row that is not a valid signal is rejected either way.
"""

from __future__ import annotations

import logging
from typing import Any

from signaller.errors import SignalError
from signaller.model import ChangeEvent, Op
from signaller.signals.channels import SignalRecordError
from signaller.signals.model import Signal, WindowMarker
from signaller.signals.parsing import parse_action, signal_from_row
from signaller.signals.values import id_text, unexpected_reason

log = logging.getLogger(__name__)


class SignalTableChannel:
    """The signal table's rows as a ``SignalChannelReader``; ``offer`` feeds it, ``read`` drains it.

    ``table`` names the table in messages; ``enabled``: ``source`` is in ``signal.enabled.channels``;
    ``insert_delete``: the watermarking strategy writes and deletes an ``-open`` row per window.
    """

    name = "source"
    stores_positions = False
    rejections_notified = True

    def __init__(self, table: object, *, enabled: bool, insert_delete: bool) -> None:
        self._table = table
        self._enabled = enabled
        self._insert_delete = insert_delete
        self._pending: list[Signal | SignalError] = []

    def offer(self, event: ChangeEvent) -> WindowMarker | None:
        """One change of the signal table: a watermark is returned; a signal (or the reason the row is
        not one) is kept for the next ``read``; anything else (updates, other deletes) is ignored."""
        values = self._values(event)
        if values is None:
            return None
        if len(values) != 3:
            log.warning("signal table %s must have exactly 3 columns (id, type, data); row ignored", self._table)
            return None
        try:
            signal = signal_from_row(values[0], values[1], values[2], channel="source", position=event.lsn)
            action = parse_action(signal)
        except SignalError as exc:
            self._pending.append(SignalRecordError(exc.reason, exc.signal_id or id_text(values[0]), event.lsn))
            return None
        except Exception as exc:  # parsing is pure: no infrastructure failure can come from it
            where = f"signal table {self._table} row at LSN {event.lsn:X}" if event.lsn else "signal table"
            self._pending.append(SignalRecordError(unexpected_reason(exc, f"reading the {where}"),
                                                   id_text(values[0]), event.lsn, cause=exc))
            return None
        if isinstance(action, WindowMarker):
            return action
        if not self._enabled:
            log.info("signal %s in the signal table ignored: the source channel is not in signal.enabled.channels",
                     signal.id)
            return None
        self._pending.append(signal)
        return None

    def _values(self, event: ChangeEvent) -> list[Any] | None:
        if event.op is Op.CREATE and event.after is not None:
            return list(event.after.values())
        if event.op is Op.DELETE and self._insert_delete and event.before is not None:
            values = list(event.before.values())
            if not isinstance(values[0], str) or not values[0].endswith("-open"):
                return None
            data = values[2] if len(values) > 2 else None
            return [values[0][: -len("open")] + "close", "snapshot-window-close", data]
        return None

    def read(self) -> list[Signal | SignalError]:
        """The signals offered since the last call (and the rows that were not valid signals); at once."""
        entries, self._pending = self._pending, []
        return entries

    def close(self) -> None:
        """Nothing to release (the change stream belongs to the capture loop)."""
        self._pending = []
