"""SQL text built on the client: quoted identifiers and literals, for statements run without a parameter list.

psycopg2 reads ``%`` as a placeholder whenever ``execute`` gets parameters, so a statement that carries a
user-chosen name (``"pct%"``) or a filter (``name LIKE 'a%'``) next to parameters changes meaning or fails.
signaller writes such statements whole, with these functions, and runs them with no parameters at all.
"""

from __future__ import annotations

from signaller.errors import SourceError

__all__ = ["quote_ident", "quote_literal"]


def quote_ident(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (``"`` doubled): any characters, matched exactly."""
    if "\x00" in name:
        raise SourceError(f"identifier {name!r} contains a NUL character, which PostgreSQL does not accept")
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str | None) -> str:
    """``value`` as an SQL string literal (``NULL`` for None) that means the same text whatever
    ``standard_conforming_strings`` is: ``'...'`` with ``''``, or ``E'...'`` with ``\\\\`` when it holds a
    backslash. Raises ``SourceError`` for a NUL character (no PostgreSQL text holds one)."""
    if value is None:
        return "NULL"
    if "\x00" in value:
        raise SourceError(f"value {value[:40]!r} contains a NUL character, which PostgreSQL text cannot hold")
    quoted = value.replace("'", "''")
    if "\\" in value:
        return "E'" + quoted.replace("\\", "\\\\") + "'"
    return "'" + quoted + "'"
