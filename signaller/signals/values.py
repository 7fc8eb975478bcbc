"""Pieces of a signal's rejection reason: how a user's value is quoted, and the reason for a failure no
validation foresaw."""

from __future__ import annotations

import json

SHOWN_CHARS = 60
"""The longest rendering of a value in a reason; longer ones are cut with ``...``."""
SHOWN_DETAIL_CHARS = 200
"""The longest exception text or signal id quoted in a reason or a notification."""


def show(value: object) -> str:
    """A short, unambiguous rendering of a user value for error messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def id_text(value: object) -> str:
    """A signal id as a notification's id: its text, cut to a readable length."""
    text = str(value)
    return text if len(text) <= SHOWN_DETAIL_CHARS else text[:SHOWN_DETAIL_CHARS] + "..."


def unexpected_reason(exc: BaseException, doing: str) -> str:
    """The rejection reason for an exception no validation foresaw while ``doing`` something with a signal."""
    detail = str(exc)
    if len(detail) > SHOWN_DETAIL_CHARS:
        detail = detail[:SHOWN_DETAIL_CHARS] + "..."
    return (f"{doing} failed unexpectedly ({type(exc).__name__}: {detail}); the signal was skipped and will not "
            "be read again; accepted: a signal the validation passes (this one should have been refused with a "
            "reason: please report it, with the warning in the log)")
