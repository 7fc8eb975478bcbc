"""PostgreSQL geometric text -> Debezium's geometry structs (``point``, ``line``, ``lseg``, ``box``,
``path``, ``polygon``, ``circle``, and PostGIS ``geometry``/``geography``).

Each ``build_*`` takes ``(column, modes, label)`` and returns the column's Connect schema node and
its converter, for the registry in :mod:`signaller.sources.postgres.codecs` (which documents the
mapping). Converters read PostgreSQL's output text (``(x,y)``, ``{A,B,C}``, ``[(x1,y1),(x2,y2)]``,
``(x1,y1),(x2,y2)``, ``[(..),..]``/``((..),..)``, ``<(x,y),r>``) and raise
:class:`~signaller.errors.DecodeError` (via :func:`~signaller.sources.postgres.conversion.bad`)
for anything else. The WKB layouts are Debezium 3.7's, measured: a ``box`` is the polygon
``(x1,y1) (x1,y2) (x2,y2) (x2,y1) (x1,y1)`` of PostgreSQL's corners ``(x1,y1),(x2,y2)``; a
``polygon``'s ring is closed by repeating its first point unless the last one equals it; ``lseg``
and ``path`` are line strings. PostGIS values (hex EWKB text) keep their EWKB bytes as ``wkb``, the
SRID read from them (null without one), as Debezium's ``PostgisGeometry`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal

from signaller.model.tables import Column
from signaller.sources.postgres.conversion import bad
from signaller.wire.columns import Converter
from signaller.wire.connect import CIRCLE, GEOGRAPHY, GEOMETRY, LINE, POINT
from signaller.wire.geometry import (
    circle_payload,
    geography_payload,
    geometry_payload,
    line_payload,
    linestring_wkb,
    point_payload,
    polygon_wkb,
)

if TYPE_CHECKING:
    from signaller.sources.postgres.codecs import Builder, TypeModes

__all__ = ["GEOMETRIC_BUILDERS"]

_PUNCTUATION: Final = str.maketrans("", "", "()[]{}<>")


def _numbers(text: str) -> list[float]:
    """Every coordinate of a geometric literal, in order (brackets dropped, commas split)."""
    return [float(part) for part in text.translate(_PUNCTUATION).split(",")]


def _pairs(numbers: list[float]) -> list[tuple[float, float]]:
    if len(numbers) % 2:
        raise ValueError("an odd number of coordinates")
    return list(zip(numbers[0::2], numbers[1::2], strict=True))


def _builder(node: dict[str, Any], shape: str, parse: Callable[[str], Any]) -> Builder:
    def build(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
        def convert(text: str) -> Any:
            try:
                return parse(text)
            except ValueError:
                raise bad(label, text, f"not a {shape}") from None

        return dict(node), convert

    return build


def _point(text: str) -> dict[str, Any]:
    if not (text.startswith("(") and text.endswith(")")):
        raise ValueError("not parenthesised")
    x, y = _numbers(text)
    return point_payload(x, y)


def _line(text: str) -> dict[str, Any]:
    a, b, c = _numbers(text)
    return line_payload(a, b, c)


def _lseg(text: str) -> dict[str, Any]:
    x1, y1, x2, y2 = _numbers(text)
    return geometry_payload(linestring_wkb([(x1, y1), (x2, y2)]), None, {"type": "lseg"})


def _box(text: str) -> dict[str, Any]:
    x1, y1, x2, y2 = _numbers(text)
    ring = [(x1, y1), (x1, y2), (x2, y2), (x2, y1), (x1, y1)]
    return geometry_payload(polygon_wkb(ring), None, {"type": "box"})


def _path(text: str) -> dict[str, Any]:
    closed = text.startswith("(")
    points = _pairs(_numbers(text))
    return geometry_payload(linestring_wkb(points), None, {"type": "path", "closed": "true" if closed else "false"})


def _polygon(text: str) -> dict[str, Any]:
    points = _pairs(_numbers(text))
    ring = points if points[0] == points[-1] else [*points, points[0]]
    return geometry_payload(polygon_wkb(ring), None, {"type": "polygon"})


_EWKB_SRID_FLAG: Final = 0x20000000


def _geometry(text: str) -> dict[str, Any]:
    return geometry_payload(*_ewkb(text), None)


def _geography(text: str) -> dict[str, Any]:
    return geography_payload(*_ewkb(text))


def _ewkb(text: str) -> tuple[bytes, int | None]:
    """Hex EWKB -> (the EWKB bytes, its SRID or None), as Debezium's ``PostgisGeometry`` reads it."""
    ewkb = bytes.fromhex(text)
    if len(ewkb) < 9:
        raise ValueError("EWKB too short")
    order: Literal["little", "big"] = "little" if ewkb[0] else "big"
    geometry_type = int.from_bytes(ewkb[1:5], order)
    srid = int.from_bytes(ewkb[5:9], order, signed=True) if geometry_type & _EWKB_SRID_FLAG else None
    return ewkb, srid


def _circle(text: str) -> dict[str, Any]:
    x, y, radius = _numbers(text)
    return circle_payload(x, y, radius)


GEOMETRIC_BUILDERS: Final[dict[str, Builder]] = {
    "point": _builder(POINT, "point '(x,y)'", _point),
    "line": _builder(LINE, "line '{A,B,C}'", _line),
    "lseg": _builder(GEOMETRY, "line segment '[(x1,y1),(x2,y2)]'", _lseg),
    "box": _builder(GEOMETRY, "box '(x1,y1),(x2,y2)'", _box),
    "path": _builder(GEOMETRY, "path '[(x,y),...]'", _path),
    "polygon": _builder(GEOMETRY, "polygon '((x,y),...)'", _polygon),
    "circle": _builder(CIRCLE, "circle '<(x,y),r>'", _circle),
    "geometry": _builder(GEOMETRY, "PostGIS geometry (hex EWKB)", _geometry),
    "geography": _builder(GEOGRAPHY, "PostGIS geography (hex EWKB)", _geography),
}
"""Builders of PostgreSQL's geometric types and PostGIS's, by ``pg_type.typname``."""
