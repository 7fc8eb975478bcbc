"""Debezium's geometry payloads: ``io.debezium.data.geometry.Point`` values.

Contract
--------
:func:`point_payload` turns a point's coordinates into the struct Debezium's PostgreSQL connector
writes for a ``point`` column: ``x`` and ``y`` as doubles (non-finite ones as Jackson writes them),
``wkb`` the OGC Well-Known Binary of the point (little-endian, type 1, no SRID) as bytes (base64 in
JSON, whatever ``binary.handling.mode`` says: Debezium's schema for it is always ``bytes``), ``srid``
null. Pure functions, no I/O.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from signaller.wire.numbers import b64, double_payload

__all__ = ["point_payload", "point_wkb"]

_WKB_POINT: Final = struct.Struct("<BIdd")
_LITTLE_ENDIAN: Final = 1
_WKB_TYPE_POINT: Final = 1


def point_wkb(x: float, y: float) -> bytes:
    """The 21-byte little-endian WKB of ``POINT(x y)`` (Debezium's ``Point.createValue``)."""
    return _WKB_POINT.pack(_LITTLE_ENDIAN, _WKB_TYPE_POINT, x, y)


def point_payload(x: float, y: float) -> dict[str, Any]:
    """The JSON payload of ``io.debezium.data.geometry.Point`` for ``(x, y)``."""
    return {"x": double_payload(x), "y": double_payload(y), "wkb": b64(point_wkb(x, y)), "srid": None}
