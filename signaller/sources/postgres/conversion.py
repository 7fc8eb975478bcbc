"""What every PostgreSQL value converter shares: errors, fallbacks and their count.

Contract
--------
* :func:`bad` builds the :class:`~signaller.errors.DecodeError` for text a converter cannot
  read (naming the column, its type and the text, shortened to 120 characters).
* :func:`guarded` wraps a builtin (``int``, a parser) into a converter raising that error;
  :func:`unguarded` hands the builtin back to hot loops that retry through the converter on
  any exception (for valid text both return the same value).
* :class:`Unrepresentable` is a valid value the configured mode cannot express;
  :func:`tolerant` turns it into the column's fallback, counted in :data:`UNREPRESENTABLE`
  (``signaller_values_unrepresentable_total``) with a rate-limited warning naming table,
  column and kind (never the row's data).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from time import monotonic
from typing import Any, Final

from signaller.errors import DecodeError
from signaller.model.tables import Column
from signaller.wire.columns import Converter

__all__ = ["UNREPRESENTABLE", "Unrepresentable", "UnrepresentableValues", "bad", "guarded", "tolerant", "unguarded"]


class Unrepresentable(DecodeError):
    """A valid PostgreSQL value the configured mode cannot express (``kind``: ``nan``,
    ``infinity``, ``multidimensional_array``, ``null_element``, ``out_of_range``). Raised by the strict converters
    only; a codec's ``convert`` turns it into the column's fallback (see :func:`codec_for`)."""

    def __init__(self, kind: str, reason: str) -> None:
        self.kind, self.reason = kind, reason
        super().__init__(reason)


class UnrepresentableValues:
    """Counts of the values written as a fallback, and their rate-limited warnings.

    ``record(table, column, kind, reason)`` logs a warning naming the table, the column and the
    value kind (never the row's data) the first time a ``(table, column, kind)`` occurs and then
    at most once per ``interval_s`` with the number of occurrences in between; ``drain()`` hands
    the counts accumulated since the last call to whoever exports them
    (``signaller_values_unrepresentable_total``). Thread-safe.
    """

    def __init__(self, interval_s: float = 60.0, clock: Callable[[], float] = monotonic) -> None:
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str, str], int] = {}
        self._last_warning: dict[tuple[str, str, str], tuple[float, int]] = {}

    def record(self, table: str, column: str, kind: str, reason: str, written: str = "null") -> None:
        """Count one fallback value and warn (rate-limited per ``(table, column, kind)``);
        ``written`` says what was published instead."""
        key = (table, column, kind)
        now = self._clock()
        with self._lock:
            self._pending[key] = self._pending.get(key, 0) + 1
            last = self._last_warning.get(key)
            if last is not None and now - last[0] < self._interval_s:
                self._last_warning[key] = (last[0], last[1] + 1)
                return
            suppressed = last[1] if last is not None else 0
            self._last_warning[key] = (now, 0)
        more = f" ({suppressed} more such value(s) since the last warning)" if suppressed else ""
        _log.warning("table %s: %s; wrote %s instead%s", table or "?", reason, written, more,
                     extra={"table": table, "column": column, "kind": kind})

    def drain(self) -> dict[tuple[str, str, str], int]:
        """The ``(table, column, kind) -> count`` recorded since the previous call."""
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending


UNREPRESENTABLE: Final = UnrepresentableValues()
"""The process's record of fallback values; the capture loop drains it into its metrics."""


_log = logging.getLogger("signaller.values")


def bad(label: str, text: str, reason: str) -> DecodeError:
    """The error for ``text`` of ``label`` (column and type) that a converter cannot read."""
    shown = text if len(text) <= 120 else text[:117] + "..."
    return DecodeError(f"{label}: cannot convert {shown!r}: {reason}")


def guarded(label: str, fn: Callable[[str], Any], reason: str) -> Converter:
    """Wrap a builtin that raises ValueError into a converter raising DecodeError."""

    def convert(text: str) -> Any:
        try:
            return fn(text)
        except (ValueError, ArithmeticError) as exc:
            raise bad(label, text, f"{reason} ({exc})") from None

    _UNGUARDED[convert] = fn
    return convert


_UNGUARDED: Final[weakref.WeakKeyDictionary[Converter, Callable[[str], Any]]] = weakref.WeakKeyDictionary()


def unguarded(convert: Converter) -> Callable[[str], Any]:
    """The function ``convert`` applies to valid text, without its error translation (the
    builtin a converter wraps, e.g. ``int``), else ``convert`` itself.

    For hot loops that, on any exception, call ``convert`` again to raise the proper
    :class:`~signaller.errors.DecodeError`: for valid text both return the same value.
    """
    return _UNGUARDED.get(convert, convert)


def tolerant(strict: Converter, column: Column, table: str, fallback: Any) -> Converter:
    """``strict`` with :class:`Unrepresentable` turned into ``fallback`` (a fresh copy for a
    list), counted and warned about (:data:`UNREPRESENTABLE`); other errors pass through.
    ``unguarded`` of the result is ``unguarded(strict)``: the hot paths that use it retry
    through the result on any error."""
    written = "null" if fallback is None else f"{fallback!r} (NOT NULL column: schema default or zero)"

    def convert(text: str) -> Any:
        try:
            return strict(text)
        except Unrepresentable as exc:
            UNREPRESENTABLE.record(table, column.name, exc.kind, exc.reason, written)
            return list(fallback) if isinstance(fallback, list) else fallback

    _UNGUARDED[convert] = unguarded(strict)
    return convert
