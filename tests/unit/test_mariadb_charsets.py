"""Binlog strings of every character set decoded as the server stores them (``sources.mariadb.charsets``): the
binlog client's own string reader, with the hook installed, given the bytes MariaDB writes."""

from __future__ import annotations

from typing import Any

import pytest
from pymysqlreplication.row_event import RowsEvent, find_charset

from signaller.sources.mariadb import charsets

pytestmark = pytest.mark.unit


class _Packet:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read_length_coded_pascal_string(self, size: int) -> bytes:
        assert size == 1
        return self.data


class _Column:
    def __init__(self, character_set_name: str) -> None:
        self.character_set_name = character_set_name


def client_reads(charset_id: int, data: bytes) -> Any:
    """What the binlog client's ``__read_string`` returns for ``data`` in a column of collation ``charset_id``
    (the name the client puts in the column, as it does from the table map's metadata)."""
    charsets.install()
    event = RowsEvent.__new__(RowsEvent)
    event.packet = _Packet(data)
    event._ignore_decode_errors = False
    encode_name, _, _ = find_charset(str(charset_id), dbms="mariadb")
    return event._RowsEvent__read_string(1, _Column(encode_name))


SERVER_BYTES = {  # SELECT HEX(CONVERT(text USING charset)) on MariaDB 10.11: the wide ones are big-endian
    "ucs2": bytes.fromhex("00FC006E00EF00202603"),
    "utf16": bytes.fromhex("D834DD1E00200063006C00650066"),
    "utf32": bytes.fromhex("0001D11E000000200000006F0000006B"),
    "utf16le": bytes.fromhex("6C00650020001327"),
}


@pytest.mark.parametrize(("charset_id", "charset", "text"), [
    (35, "ucs2", "ünï ☃"),  # Python has no ucs2 codec: the client handed over the bytes
    (54, "utf16", "𝄞 clef"),  # Python's utf16 without a BOM reads little-endian: garbled text
    (60, "utf32", "𝄞 ok"),  # little-endian utf32: UnicodeDecodeError stopped the reader
    (56, "utf16le", "le ✓"),
    (45, "utf8mb4", "héllo ✓ 𝄞"),
    (33, "utf8mb3", "snow ☃"),
    (8, "latin1", "café €"),  # MariaDB's latin1 is Windows-1252
    (9, "latin2", "Zażółć"),
    (51, "cp1251", "Привет"),
    (7, "koi8r", "Мир"),
    (25, "greek", "Καλημέρα"),
    (16, "hebrew", "שלום"),
    (30, "latin5", "Ğüşİ"),
    (13, "sjis", "こんにちは"),
    (12, "ujis", "カタカナ"),
    (28, "gbk", "你好"),
    (24, "gb2312", "中文"),
    (1, "big5", "中文字"),
    (19, "euckr", "안녕"),
    (18, "tis620", "สวัสดี"),
    (11, "ascii", "plain"),
])
def test_binlog_strings_decode_as_the_server_stores_them(charset_id: int, charset: str, text: str) -> None:
    stored = SERVER_BYTES[charset] if charset in SERVER_BYTES else text.encode(charsets.python_encoding(charset) or "")
    assert client_reads(charset_id, stored) == text


def test_binary_strings_stay_bytes_and_unknown_character_sets_too() -> None:
    assert client_reads(63, b"\x00\xff") == b"\x00\xff"
    assert client_reads(10, b"\xe9") == b"\xe9"  # swe7: no Python codec


def test_python_encoding_names_a_codec_or_none() -> None:
    assert charsets.python_encoding(None) == "utf-8"
    assert charsets.python_encoding("UTF32") == "utf-32-be"
    assert charsets.python_encoding("swe7") is None
