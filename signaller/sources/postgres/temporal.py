"""PostgreSQL date/time/interval text -> Debezium temporal payloads.

Each ``build_*`` takes ``(column, modes, label)`` and returns the column's Connect schema node
and its converter (see :mod:`signaller.sources.postgres.codecs` for the mapping). This module
parses PostgreSQL's text (ISO ``DateStyle``, ``BC`` years, years beyond 9999, ``24:00:00``,
``infinity``; ``IntervalStyle`` postgres, postgres_verbose or iso_8601, read as pgjdbc's
``PGInterval`` does); :mod:`signaller.wire.temporal` renders the values as Debezium does.
Other text raises :class:`~signaller.errors.DecodeError`; a ``MicroTimestamp`` beyond int64 µs
raises :class:`~signaller.sources.postgres.conversion.Unrepresentable`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any, Final

from signaller.model.tables import Column
from signaller.sources.postgres.conversion import Unrepresentable, bad, guarded
from signaller.wire.columns import Converter
from signaller.wire.connect import schema_node
from signaller.wire.numbers import INT64_MAX, INT64_MIN
from signaller.wire.temporal import (
    EPOCH_ORDINAL,
    MICROS_PER_DAY,
    NEG_INFINITY_DATE,
    NEG_INFINITY_DATE_ELEMENT,
    NEG_INFINITY_MICROS,
    NEG_INFINITY_MILLIS,
    POS_INFINITY_DATE,
    POS_INFINITY_DATE_ELEMENT,
    POS_INFINITY_MICROS,
    POS_INFINITY_MILLIS,
    Duration,
    clock_text,
    days_from_civil,
    fraction_digits,
    interval_iso,
    micro_duration,
    zoned_timestamp_text,
)

if TYPE_CHECKING:
    from signaller.sources.postgres.codecs import TypeModes

__all__ = [
    "build_date",
    "build_date_element",
    "build_interval",
    "build_time",
    "build_timestamp",
    "build_timestamptz",
    "build_timetz",
]


_DATE_RE: Final = re.compile(r"(\d{4,})-(\d\d)-(\d\d)( BC)?")


_TIMESTAMP_RE: Final = re.compile(
    r"(\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?"
    r"(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)?( BC)?"
)


_TIME_RE: Final = re.compile(
    r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)?"
)


def _fraction_micros(fraction: str | None) -> int:
    return int(fraction[:6].ljust(6, "0")) if fraction else 0


def _astronomical_year(year: str, bc: str | None) -> int:
    return 1 - int(year) if bc else int(year)


def _offset_seconds(sign: str | None, hours: str | None, minutes: str | None, seconds: str | None) -> int:
    if sign is None or hours is None:
        return 0
    total = int(hours) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
    return -total if sign == "-" else total


def _epoch_day(text: str, infinities: tuple[int, int] = (POS_INFINITY_DATE, NEG_INFINITY_DATE)) -> int:
    """PostgreSQL date text -> epoch days (``infinities``: Debezium's values for ±infinity)."""
    try:
        return date.fromisoformat(text).toordinal() - EPOCH_ORDINAL
    except ValueError:
        pass
    if text == "infinity":
        return infinities[0]
    if text == "-infinity":
        return infinities[1]
    match = _DATE_RE.fullmatch(text)
    if match is None:
        raise ValueError("not a date")
    year, month, day, bc = match.groups()
    return days_from_civil(_astronomical_year(year, bc), int(month), int(day))


_EPOCH: Final = datetime(1970, 1, 1)


_EPOCH_UTC: Final = datetime(1970, 1, 1, tzinfo=UTC)


_MICROSECOND: Final = timedelta(microseconds=1)


def _epoch_micros(text: str) -> tuple[int, bool]:
    """PostgreSQL timestamp[tz] text -> (UTC epoch µs, True), or (1 for ``infinity``, -1 for
    ``-infinity``, False)."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return _epoch_micros_slow(text)
    epoch = _EPOCH if parsed.tzinfo is None else _EPOCH_UTC
    return (parsed - epoch) // _MICROSECOND, True


def _epoch_micros_slow(text: str) -> tuple[int, bool]:
    if text == "infinity":
        return 1, False
    if text == "-infinity":
        return -1, False
    match = _TIMESTAMP_RE.fullmatch(text)
    if match is None:
        raise ValueError("not a timestamp")
    year, month, day, hour, minute, second, fraction, sign, oh, om, os_, bc = match.groups()
    days = days_from_civil(_astronomical_year(year, bc), int(month), int(day))
    seconds = days * 86400 + int(hour) * 3600 + int(minute) * 60 + int(second)
    seconds -= _offset_seconds(sign, oh, om, os_)
    return seconds * 1_000_000 + _fraction_micros(fraction), True


def _time_micros(text: str) -> tuple[int, int]:
    """``HH:MM:SS[.f][±hh[:mm[:ss]]]`` -> (µs past midnight as written, UTC offset seconds)."""
    try:
        parsed = time.fromisoformat(text)
    except ValueError:
        return _time_micros_slow(text)
    micros = ((parsed.hour * 60 + parsed.minute) * 60 + parsed.second) * 1_000_000 + parsed.microsecond
    offset = parsed.utcoffset()
    return micros, 0 if offset is None else offset.days * 86400 + offset.seconds


def _time_micros_slow(text: str) -> tuple[int, int]:
    """Regex parsing for what ``time.fromisoformat`` refuses (``24:00:00``)."""
    match = _TIME_RE.fullmatch(text)
    if match is None:
        raise ValueError("not a time of day")
    hour, minute, second, fraction, sign, oh, om, os_ = match.groups()
    seconds = int(hour) * 3600 + int(minute) * 60 + int(second)
    return seconds * 1_000_000 + _fraction_micros(fraction), _offset_seconds(sign, oh, om, os_)


def _time_precision(column: Column) -> int:
    """Fractional-second precision of time/timestamp columns (pgjdbc: 6 when undeclared)."""
    return column.type_modifier if 0 <= column.type_modifier <= 6 else 6


def _date_node(modes: TypeModes) -> dict[str, Any]:
    name = (
        "org.apache.kafka.connect.data.Date" if modes.time_precision == "connect" else "io.debezium.time.Date"
    )
    return schema_node("int32", name=name, version=1)


def build_date(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``date``: epoch days (``io.debezium.time.Date``, or Connect ``Date`` in connect mode);
    ±infinity as Debezium's streamed events write them, in snapshot READs too."""
    return _date_node(modes), guarded(label, _epoch_day, "not a date")


def build_date_element(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """A ``date[]`` element: as :func:`build_date`, but ±infinity as Debezium writes them in arrays."""
    infinities = (POS_INFINITY_DATE_ELEMENT, NEG_INFINITY_DATE_ELEMENT)

    def convert(text: str) -> int:
        try:
            return _epoch_day(text, infinities)
        except ValueError:
            raise bad(label, text, "not a date") from None

    return _date_node(modes), convert


def build_time(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``time``: ms (``Time``, precision <= 3 in adaptive mode; Connect ``Time``) or µs (``MicroTime``)."""
    precision = _time_precision(column)
    if modes.time_precision == "connect":
        node = schema_node("int32", name="org.apache.kafka.connect.data.Time", version=1)
        millis = True
    elif modes.time_precision == "adaptive" and precision <= 3:
        node = schema_node("int32", name="io.debezium.time.Time", version=1)
        millis = True
    else:
        node = schema_node("int64", name="io.debezium.time.MicroTime", version=1)
        millis = False

    def convert(text: str) -> int:
        try:
            micros, offset = _time_micros(text)
        except ValueError:
            raise bad(label, text, "not a time of day") from None
        if offset:
            raise bad(label, text, "a time without time zone has no offset")
        return micros // 1000 if millis else micros

    return node, convert


def build_timestamp(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``timestamp``: epoch ms (``Timestamp``; Connect ``Timestamp``) or µs (``MicroTimestamp``);
    ±infinity as Debezium writes them (µs: ``Long.MAX_VALUE``/``Long.MIN_VALUE``; ms: pgjdbc's
    infinity instants in ms)."""
    if modes.time_precision == "connect":
        node, millis = schema_node("int64", name="org.apache.kafka.connect.data.Timestamp", version=1), True
    elif _time_precision(column) <= 3:
        node, millis = schema_node("int64", name="io.debezium.time.Timestamp", version=1), True
    else:
        node, millis = schema_node("int64", name="io.debezium.time.MicroTimestamp", version=1), False

    infinities = (POS_INFINITY_MILLIS, NEG_INFINITY_MILLIS) if millis else (POS_INFINITY_MICROS, NEG_INFINITY_MICROS)

    def convert(text: str) -> int:
        try:
            micros, finite = _epoch_micros(text)
        except ValueError:
            raise bad(label, text, "not a timestamp") from None
        if not finite:
            return infinities[0] if micros > 0 else infinities[1]
        if millis:
            return micros // 1000
        if not INT64_MIN <= micros <= INT64_MAX:
            raise Unrepresentable("out_of_range", f"{label}: a timestamp after 294247-01-10 04:00:54.775807 "
                                  "does not fit io.debezium.time.MicroTimestamp (int64 microseconds)")
        return micros

    return node, convert


def _zoned_timestamp_fast(text: str, width: int) -> str | None:
    """Common case (4-digit years, explicit offset) via the C datetime code; None otherwise."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if text.endswith(("+00", "+00:00")) and text[10:11] == " ":
        digits = text[20 : text.rindex("+")] if text[19:20] == "." else ""
        return f"{text[:10]}T{text[11:19]}{fraction_digits(digits, width)}Z"
    offset = parsed.utcoffset()
    if offset is None:
        return None
    try:
        utc = parsed.replace(tzinfo=None) - offset
    except OverflowError:
        return None
    if width <= 0:
        iso = utc.isoformat()
        return (iso.rstrip("0") if utc.microsecond else iso) + "Z"
    iso = utc.isoformat(timespec="microseconds")
    return (iso if width == 6 else iso[: 20 + width]) + "Z"


def build_timestamptz(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``timestamptz``: ``ZonedTimestamp`` text in UTC with *precision* fraction digits."""
    width = _time_precision(column)

    def convert(text: str) -> str:
        fast = _zoned_timestamp_fast(text, width)
        if fast is not None:
            return fast
        try:
            micros, finite = _epoch_micros(text)
        except ValueError:
            raise bad(label, text, "not a timestamp with time zone") from None
        return zoned_timestamp_text(micros, width) if finite else text

    return schema_node("string", name="io.debezium.time.ZonedTimestamp", version=1), convert


def build_timetz(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``timetz``: ``ZonedTime`` text in UTC with the shortest fraction."""
    def convert(text: str) -> str:
        try:
            micros, offset = _time_micros(text)
        except ValueError:
            raise bad(label, text, "not a time with time zone") from None
        if micros == MICROS_PER_DAY and offset == 0:
            return "24:00:00Z"
        return clock_text((micros - offset * 1_000_000) % MICROS_PER_DAY, 0) + "Z"

    return schema_node("string", name="io.debezium.time.ZonedTime", version=1), convert


_ISO_INTERVAL_RE: Final = re.compile(
    r"P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?[\d.]+)S)?)?"
)


def _interval_of(years: int, months: int, days: int, hours: int, minutes: int, seconds: float) -> Duration:
    """``PGInterval.setValue``: seconds kept as whole seconds plus rounded microseconds."""
    total = math.floor(seconds * 1_000_000 + 0.5)
    whole = abs(total) // 1_000_000 * (1 if total >= 0 else -1)
    return Duration(years, months, days, hours, minutes, whole, total - whole * 1_000_000)


_INTERVAL_UNITS: Final = {"yea": "year", "mon": "mon", "day": "day", "hou": "hour", "min": "min"}


def _parse_interval(text: str) -> Duration:
    """PostgreSQL interval text (IntervalStyle postgres, postgres_verbose or iso_8601)."""
    if text.startswith("P"):
        match = _ISO_INTERVAL_RE.fullmatch(text)
        if match is None:
            raise ValueError("not an ISO 8601 interval")
        y, mo, d, h, mi, s = (group or "0" for group in match.groups())
        return _interval_of(int(y), int(mo), int(d), int(h), int(mi), float(s))
    verbose = text.startswith("@")
    fields = {"year": 0, "mon": 0, "day": 0, "hour": 0, "min": 0}
    seconds = 0.0
    pending: str | None = None
    tokens = text.replace("+", " ").replace("@", " ").lower().split()
    for index, token in enumerate(tokens, start=1):
        if index & 1:
            if ":" not in token:
                pending = token
                continue
            hours, minutes, seconds = _interval_clock(token)
            fields["hour"], fields["min"], pending = hours, minutes, None
            continue
        unit = _INTERVAL_UNITS.get(token[:3])
        if unit is not None and token.startswith(unit):
            fields[unit] = int(pending) if pending is not None else 0
        elif token.startswith("sec"):
            seconds = float(pending) if pending is not None else 0.0
    sign = -1 if verbose and tokens and tokens[-1] == "ago" else 1
    return _interval_of(
        sign * fields["year"],
        sign * fields["mon"],
        sign * fields["day"],
        sign * fields["hour"],
        sign * fields["min"],
        sign * seconds,
    )


def _interval_clock(token: str) -> tuple[int, int, float]:
    """``[-]H+:MM[:SS[.f]]`` as PGInterval reads it (the sign applies to every part)."""
    negative = token.startswith("-")
    body = token[1:] if negative else token
    parts = body.split(":")
    if len(parts) not in (2, 3):
        raise ValueError("bad interval clock")
    hours, minutes = int(parts[0]), int(parts[1][:2])
    seconds = float(parts[2]) if len(parts) == 3 else 0.0
    return (-hours, -minutes, -seconds) if negative else (hours, minutes, seconds)


def build_interval(column: Column, modes: TypeModes, label: str) -> tuple[dict[str, Any], Converter]:
    """``interval``: ``MicroDuration`` µs, or ``Interval`` ISO text with ``interval.handling.mode=string``."""
    if modes.interval_handling == "string":
        node = schema_node("string", name="io.debezium.time.Interval", version=1)
        render: Callable[[Duration], Any] = interval_iso
    else:
        node = schema_node("int64", name="io.debezium.time.MicroDuration", version=1)
        render = micro_duration

    def convert(text: str) -> Any:
        try:
            return render(_parse_interval(text))
        except ValueError:
            raise bad(label, text, "not an interval (IntervalStyle postgres or iso_8601)") from None

    return node, convert
