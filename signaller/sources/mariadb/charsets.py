"""MariaDB character sets as Python codecs, and the binlog client's string decoding made to use them.

``mysql-replication`` (1.0.17) decodes a string column of the binlog with the codec named like the column's
character set, which is wrong for the wide ones: Python's ``utf16``/``utf32`` without a byte-order mark read
little-endian (MariaDB stores ``utf16``/``utf32``/``ucs2`` big-endian: text comes out garbled, or the whole
binlog reader stops on ``UnicodeDecodeError``), and Python has no ``ucs2`` codec (the client then hands over the
raw bytes). :func:`python_encoding` names the right codec for every MariaDB 10.11 character set Python has one
for; :func:`install` puts it in the client's decoder (process-wide, idempotent; called once when the binlog
reader is imported). A character set Python cannot decode (``swe7``, ``dec8``, ``hp8``, ``keybcs2``, ``macce``,
``armscii8``, ``geostd8``) reaches :mod:`signaller.sources.mariadb.values` as bytes. Pure otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from pymysqlreplication.row_event import RowsEvent

__all__ = ["ENCODINGS", "install", "python_encoding"]

ENCODINGS: Final[Mapping[str, str]] = MappingProxyType({
    "utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "latin1": "cp1252", "binary": "latin-1",
    "ascii": "ascii", "ucs2": "utf-16-be", "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be",
    "gbk": "gbk", "big5": "big5", "sjis": "shift_jis", "cp932": "cp932", "euckr": "euc_kr", "ujis": "euc_jp",
    "eucjpms": "euc_jp", "gb2312": "gb2312", "gb18030": "gb18030", "koi8r": "koi8_r", "koi8u": "koi8_u",
    "greek": "iso8859_7", "hebrew": "iso8859_8", "latin2": "iso8859_2", "latin5": "iso8859_9",
    "latin7": "iso8859_13", "cp1250": "cp1250", "cp1251": "cp1251", "cp1256": "cp1256", "cp1257": "cp1257",
    "cp850": "cp850", "cp852": "cp852", "cp866": "cp866", "tis620": "tis_620", "macroman": "mac_roman",
})
"""MariaDB character set name → Python codec (MariaDB's ``latin1`` is Windows-1252, as in the server)."""


def python_encoding(charset: str | None) -> str | None:
    """The Python codec of MariaDB character set ``charset`` (``utf8mb4`` when None); None when Python has
    none."""
    return ENCODINGS.get((charset or "utf8mb4").lower())


def _client_encoding(name: str) -> str:
    """The client's ``charset_to_encoding`` hook. ``name`` is a MariaDB character set name, or the codec name the
    client already put in its place (``utf8``, ``cp1252``, ``koi8_r``, ``koi8_u``, which Python reads right);
    a name Python does not know makes the client keep the bytes (its ``LookupError`` path)."""
    if name == "binary":
        return name  # no codec: binary strings stay bytes, as the client hands them over by itself
    return python_encoding(name) or name


def install() -> None:
    """Make the binlog client decode strings with :func:`python_encoding` (process-wide, idempotent)."""
    RowsEvent.charset_to_encoding = staticmethod(_client_encoding)
