"""MariaDB/MySQL ``TIME2`` binlog values decoded exactly, the negative fractional ones included.

``mysql-replication`` (1.0.17) reads the fractional part of a negative ``TIME(n)`` as if it were positive
(``'-00:00:00.000001'`` comes out as ``-00:00:00.999999``). :func:`decode_time2` is the server's own
``my_time_packed_from_binary``: the integer part (3 bytes, offset ``0x800000``) and the fraction
(``(n + 1) // 2`` bytes) form one signed packed value. :func:`install` puts :func:`read_time2` in the
client's row decoder; it is called once when the binlog reader is imported (idempotent). Pure otherwise.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from pymysqlreplication.row_event import RowsEvent

_INT_OFFSET: Final = 0x800000
_FRACTION_BYTES: Final = {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3}


def fraction_bytes(fsp: int) -> int:
    """How many bytes follow the 3-byte integer part of a ``TIME(fsp)`` value."""
    return _FRACTION_BYTES[fsp]


def decode_time2(data: bytes, fsp: int) -> dt.timedelta:
    """The ``TIME(fsp)`` value of its ``3 + fraction_bytes(fsp)`` binlog bytes (big-endian, offset), as a signed
    ``timedelta``. ``ValueError`` for a wrong length."""
    if len(data) != 3 + fraction_bytes(fsp):
        msg = f"a TIME({fsp}) value is {3 + fraction_bytes(fsp)} bytes, got {len(data)}"
        raise ValueError(msg)
    intpart = int.from_bytes(data[:3], "big") - _INT_OFFSET
    size = fraction_bytes(fsp)
    frac = int.from_bytes(data[3:], "big") if size else 0
    if size and intpart < 0 and frac:
        intpart += 1  # the fraction counts up from the next integer value: -(0x100.. - frac)
        frac -= 1 << (8 * size)
    micros = frac * {0: 0, 1: 10_000, 2: 100, 3: 1}[size]
    packed = (intpart << 24) + micros
    sign = -1 if packed < 0 else 1
    packed = abs(packed)
    hms, fraction = packed >> 24, packed % (1 << 24)
    hours, minutes, seconds = (hms >> 12) % (1 << 10), (hms >> 6) % (1 << 6), hms % (1 << 6)
    return sign * dt.timedelta(hours=hours, minutes=minutes, seconds=seconds, microseconds=fraction)


def read_time2(event: Any, column: Any) -> dt.timedelta:
    """The client's ``__read_time2`` hook: reads one ``TIME2`` value of ``column`` from ``event``'s packet."""
    fsp = int(column.fsp or 0)
    return decode_time2(bytes(event.packet.read(3 + fraction_bytes(fsp))), fsp)


def install() -> None:
    """Make the binlog client decode ``TIME2`` with :func:`read_time2` (process-wide, idempotent)."""
    RowsEvent._RowsEvent__read_time2 = read_time2
