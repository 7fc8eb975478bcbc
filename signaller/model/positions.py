"""Log positions. An LSN is a plain ``int`` (64-bit byte position in the WAL).

PostgreSQL prints LSNs as ``XXXXXXXX/XXXXXXXX`` (high and low 32 bits in hex); Debezium puts the
integer into ``source.lsn`` and strings of integers into ``source.sequence``.
"""

from __future__ import annotations


def format_lsn(lsn: int) -> str:
    """``0x16B3748`` -> ``"0/16B3748"`` (PostgreSQL's own text form)."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """``"0/16B3748"`` -> ``0x16B3748``. Raises ``ValueError`` naming the text if malformed."""
    high, sep, low = text.partition("/")
    if not sep:
        msg = f"not an LSN: {text!r} (expected two hex numbers separated by '/', e.g. '0/16B3748')"
        raise ValueError(msg)
    try:
        return (int(high, 16) << 32) | int(low, 16)
    except ValueError:
        msg = f"not an LSN: {text!r} (expected two hex numbers separated by '/', e.g. '0/16B3748')"
        raise ValueError(msg) from None
