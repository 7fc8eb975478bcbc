"""How a user's value is quoted in a signal's rejection reason: short and unambiguous."""

from __future__ import annotations

import json

SHOWN_CHARS = 60
"""The longest rendering of a value in a reason; longer ones are cut with ``...``."""


def show(value: object) -> str:
    """A short, unambiguous rendering of a user value for error messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."
