"""What the ``additional-conditions`` checkers of every SQL dialect share: the size limit, the coarse
value categories, the first checks of a filter's text and the wording of a refusal.

A refused filter raises ``SignalError`` worded ``filter: <problem>[ at character N ('<text there>')];
accepted: <what is>``, with N the 1-based character (not byte) position. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NoReturn

from signaller.errors import SignalError

__all__ = ["MAX_LENGTH", "SHOWN_CHARS", "Category", "check_text", "columns_text", "filter_error", "show"]

MAX_LENGTH = 65536
"""Longest filter text accepted, in characters."""
SHOWN_CHARS = 40
"""How much of the filter an error quotes."""
_SHOWN_COLUMNS = 60

Category = Literal["boolean", "number", "text", "datetime", "interval", "uuid", "other", "unknown"]
"""The coarse category of a value: what tells a condition (boolean) from other expressions."""


def show(snippet: str) -> str:
    """``snippet`` quoted, cut to ``SHOWN_CHARS`` characters."""
    return repr(snippet if len(snippet) < SHOWN_CHARS else snippet[:SHOWN_CHARS] + "...")


def filter_error(text: str, problem: str, pos: int | None, accepted: str) -> NoReturn:
    """Raise the ``SignalError`` for ``problem`` at 0-based character ``pos`` of ``text`` (None: its end)."""
    if pos is None or pos >= len(text.rstrip()):
        where = "" if "end of input" in problem else " at the end of the filter"
    else:
        pos = max(pos, 0)
        where = f" at character {pos + 1} ({show(text[pos:pos + SHOWN_CHARS])})"
    raise SignalError(f"filter: {problem}{where}; accepted: {accepted}")


def check_text(text: object, accepted: str) -> str:
    """``text`` if it is a non-blank string of at most ``MAX_LENGTH`` characters without NUL; else the
    ``SignalError`` saying which."""
    if not isinstance(text, str):
        raise SignalError(f"filter: expected a string, got {type(text).__name__}; accepted: {accepted}")
    if len(text) > MAX_LENGTH:
        raise SignalError(f"filter: {len(text)} characters long; accepted: at most {MAX_LENGTH} characters")
    if not text.strip():
        raise SignalError(f"filter: empty; accepted: {accepted}")
    nul = text.find("\x00")
    if nul >= 0:
        filter_error(text, "a NUL character", nul, "text without NUL characters")
    return text


def columns_text(sql_types: Mapping[str, str]) -> str:
    """The table's columns, for an error about an unknown one (the first 60, then how many more)."""
    names = list(sql_types)
    if not names:
        return "columns of the table, which has none"
    shown = ", ".join(names[:_SHOWN_COLUMNS])
    more = f" and {len(names) - _SHOWN_COLUMNS} more" if len(names) > _SHOWN_COLUMNS else ""
    return f"columns of the table: {shown}{more}"
