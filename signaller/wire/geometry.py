"""Debezium's geometry payloads: ``io.debezium.data.geometry`` Point, Line, Circle and Geometry values.

Contract
--------
Pure functions, no I/O, that build the structs Debezium's PostgreSQL connector writes for
PostgreSQL's geometric types (the schemas are in :mod:`signaller.wire.connect`):

* :func:`point_payload`: ``point`` -> ``{x, y, wkb, srid}``: ``x`` and ``y`` as doubles (non-finite
  ones as Jackson writes them), ``wkb`` the OGC Well-Known Binary of the point (little-endian,
  type 1, no SRID) as bytes (base64 in JSON, whatever ``binary.handling.mode`` says: Debezium's
  schema for it is always ``bytes``), ``srid`` null.
* :func:`line_payload`: ``line`` -> ``{a, b, c}``.
* :func:`circle_payload`: ``circle`` -> ``{center: Point, radius}``.
* :func:`geometry_payload`: ``lseg``/``box``/``path``/``polygon`` (and PostGIS values) ->
  ``{wkb, srid, extensions}``, with :func:`linestring_wkb` and :func:`polygon_wkb` building the
  little-endian WKB Debezium writes for PostgreSQL's own types.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import Any, Final

from signaller.wire.numbers import b64, double_payload

__all__ = [
    "circle_payload",
    "geography_payload",
    "geometry_payload",
    "line_payload",
    "linestring_wkb",
    "point_payload",
    "point_wkb",
    "polygon_wkb",
]

_WKB_POINT: Final = struct.Struct("<BIdd")
_WKB_HEADER: Final = struct.Struct("<BI")
_COUNT: Final = struct.Struct("<I")
_LITTLE_ENDIAN: Final = 1
_WKB_TYPE_POINT: Final = 1
_WKB_TYPE_LINESTRING: Final = 2
_WKB_TYPE_POLYGON: Final = 3

Points = Sequence[tuple[float, float]]


def point_wkb(x: float, y: float) -> bytes:
    """The 21-byte little-endian WKB of ``POINT(x y)`` (Debezium's ``Point.createValue``)."""
    return _WKB_POINT.pack(_LITTLE_ENDIAN, _WKB_TYPE_POINT, x, y)


def _coordinates(points: Points) -> bytes:
    return _COUNT.pack(len(points)) + struct.pack(f"<{2 * len(points)}d", *(c for p in points for c in p))


def linestring_wkb(points: Points) -> bytes:
    """The little-endian WKB of ``LINESTRING`` through ``points``."""
    return _WKB_HEADER.pack(_LITTLE_ENDIAN, _WKB_TYPE_LINESTRING) + _coordinates(points)


def polygon_wkb(ring: Points) -> bytes:
    """The little-endian WKB of a ``POLYGON`` of one ring, ``ring`` as given (the caller closes it)."""
    return _WKB_HEADER.pack(_LITTLE_ENDIAN, _WKB_TYPE_POLYGON) + _COUNT.pack(1) + _coordinates(ring)


def point_payload(x: float, y: float) -> dict[str, Any]:
    """The JSON payload of ``io.debezium.data.geometry.Point`` for ``(x, y)``."""
    return {"x": double_payload(x), "y": double_payload(y), "wkb": b64(point_wkb(x, y)), "srid": None}


def line_payload(a: float, b: float, c: float) -> dict[str, Any]:
    """The JSON payload of ``io.debezium.data.geometry.Line`` for ``ax + by + c = 0``."""
    return {"a": double_payload(a), "b": double_payload(b), "c": double_payload(c)}


def circle_payload(x: float, y: float, radius: float) -> dict[str, Any]:
    """The JSON payload of ``io.debezium.data.geometry.Circle`` centred on ``(x, y)``."""
    return {"center": point_payload(x, y), "radius": double_payload(radius)}


def geometry_payload(wkb: bytes, srid: int | None, extensions: Mapping[str, str] | None) -> dict[str, Any]:
    """The JSON payload of ``io.debezium.data.geometry.Geometry`` version 2."""
    return {"wkb": b64(wkb), "srid": srid, "extensions": None if extensions is None else dict(extensions)}


def geography_payload(wkb: bytes, srid: int | None) -> dict[str, Any]:
    """The JSON payload of ``io.debezium.data.geometry.Geography`` version 1."""
    return {"wkb": b64(wkb), "srid": srid}
