"""TIME2 binlog values decoded as the server's ``my_time_packed_from_binary`` (negative fractions included)."""

from __future__ import annotations

import datetime as dt

import pytest

from signaller.sources.mariadb.time2 import decode_time2

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("hex_bytes", "fsp", "expected"), [
    # bytes as MySQL/MariaDB's my_time_packed_to_binary writes them
    ("7fffffffffff", 6, -dt.timedelta(microseconds=1)),  # '-00:00:00.000001' (the client read -0.999999 s)
    ("7ffffef85ee0", 6, -dt.timedelta(seconds=1, microseconds=500000)),  # '-00:00:01.5'
    ("7ffffeec78", 3, -dt.timedelta(seconds=1, milliseconds=500)),
    ("7fffffff", 2, -dt.timedelta(milliseconds=10)),
    ("4b9105", 0, -dt.timedelta(hours=838, minutes=59, seconds=59)),
    ("b46efb", 0, dt.timedelta(hours=838, minutes=59, seconds=59)),
    ("80d38f04ce", 3, dt.timedelta(hours=13, minutes=14, seconds=15, milliseconds=123)),
    ("80000000", 2, dt.timedelta(0)),
])
def test_decode_time2(hex_bytes: str, fsp: int, expected: dt.timedelta) -> None:
    assert decode_time2(bytes.fromhex(hex_bytes), fsp) == expected


def test_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match=r"TIME\(6\) value is 6 bytes, got 3"):
        decode_time2(b"\x80\x00\x00", 6)
