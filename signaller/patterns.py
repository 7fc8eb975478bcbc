"""Regular expressions written by users (signals, config), matched in bounded time.

Every pattern a user supplies (``data-collections``, ``additional-conditions[].data-collection``,
``table.include.list`` and the other list properties) is compiled here with RE2 (``google-re2``), a
linear-time engine: matching costs O(pattern × text) whatever the pattern, so no signal can freeze the
process with catastrophic backtracking (``(?:.|.|.)*X`` matches a 23-character name in microseconds,
where Python's ``re`` takes minutes). RE2 refuses the few constructs that need backtracking
(backreferences ``\\1``, lookaround ``(?=...)``/``(?<!...)``, possessive quantifiers) with a clear
error; Debezium's Java patterns for table names never need them.

Contract: ``compile_pattern`` either returns a ``UserPattern`` or raises ``PatternError`` (a
``TerminalError``) naming the pattern and RE2's reason; it never raises anything else and never
logs. Compiled patterns are cached (the same strings come back with every signal and event).
"""

from __future__ import annotations

import functools

import re2

from signaller.errors import TerminalError

__all__ = ["MAX_PATTERN_CHARS", "PatternError", "UserPattern", "compile_pattern", "escape"]

MAX_PATTERN_CHARS = 4096
"""Longest accepted pattern; a table-name pattern longer than this is a mistake, not a need."""
_MAX_PROGRAM_BYTES = 8 << 20
"""RE2's memory budget for one compiled pattern (its own default); bigger programs are refused."""
ACCEPTED = ("an RE2 regular expression (Java/Python syntax without backreferences or lookaround), "
            f"at most {MAX_PATTERN_CHARS} characters, full-matched against 'schema.table'")


class PatternError(TerminalError):
    """A user's regular expression that cannot be compiled; ``pattern`` and ``reason`` say why."""

    def __init__(self, pattern: str, reason: str) -> None:
        self.pattern = pattern
        self.reason = reason
        shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
        super().__init__(f"{shown!r} is not a valid regular expression ({reason}); accepted: {ACCEPTED}")


class UserPattern:
    """A compiled user pattern. ``fullmatch`` runs in time linear in the text."""

    __slots__ = ("_regex", "ignore_case", "text")

    def __init__(self, text: str, regex: object, ignore_case: bool) -> None:
        self.text = text
        self.ignore_case = ignore_case
        self._regex = regex

    def fullmatch(self, value: str) -> bool:
        """True if the whole of ``value`` matches."""
        return self._regex.fullmatch(value) is not None  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"UserPattern({self.text!r}, ignore_case={self.ignore_case})"


def compile_pattern(text: str, *, ignore_case: bool = False) -> UserPattern:
    """Compile ``text`` with RE2; raise ``PatternError`` if it is too long or not valid RE2."""
    if not isinstance(text, str):
        raise PatternError(repr(text), "not a string")
    if len(text) > MAX_PATTERN_CHARS:
        raise PatternError(text, f"{len(text)} characters, more than {MAX_PATTERN_CHARS}")
    return _compile(text, ignore_case)


@functools.lru_cache(maxsize=1024)
def _compile(text: str, ignore_case: bool) -> UserPattern:
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    options.max_mem = _MAX_PROGRAM_BYTES
    try:
        regex = re2.compile(text, options)
    except Exception as exc:  # re2.error, and whatever the binding raises for odd input
        detail = exc.args[0] if exc.args else exc
        reason = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
        raise PatternError(text, _printable(reason)) from None
    return UserPattern(text, regex, ignore_case)


def _printable(text: str) -> str:
    """RE2's reason quotes the pattern raw: escape line breaks and control characters so that a
    message stays one line and a pattern cannot forge log lines."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def escape(text: str) -> str:
    """A pattern that full-matches exactly ``text`` (for table ids the sidecar builds itself)."""
    return "".join(char if (char.isalnum() and char.isascii()) or char == "_" else _escape_char(char) for char in text)


def _escape_char(char: str) -> str:
    """ASCII punctuation gets a backslash; anything else is written as its code point (``\\x{20AC}``)."""
    if char.isascii() and not char.isspace() and char.isprintable():
        return "\\" + char
    return f"\\x{{{ord(char):X}}}"
