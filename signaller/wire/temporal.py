"""Debezium's temporal values, rendered as Java renders them.

Contract
--------
* Calendar arithmetic on the proleptic Gregorian calendar with astronomical years
  (:func:`days_from_civil`, :func:`civil_from_days`), valid far beyond Python's ``date``.
* The values Debezium 3.7 writes for PostgreSQL ``infinity``/``-infinity`` (measured against the
  real connector by the compatibility suite, ``tests/compat/``): ``date`` columns
  :data:`POS_INFINITY_DATE`/:data:`NEG_INFINITY_DATE` epoch days (Debezium's streamed events; its
  snapshot READs differ, see the README's allow-list), ``date[]`` elements
  :data:`POS_INFINITY_DATE_ELEMENT`/:data:`NEG_INFINITY_DATE_ELEMENT`, ``MicroTimestamp``
  :data:`POS_INFINITY_MICROS`/:data:`NEG_INFINITY_MICROS` (``Long.MAX_VALUE``/``Long.MIN_VALUE``),
  millisecond timestamps (``Timestamp``, Connect ``Timestamp``)
  :data:`POS_INFINITY_MILLIS`/:data:`NEG_INFINITY_MILLIS`.
* ``io.debezium.time.ZonedTimestamp`` text of a UTC instant (:func:`zoned_timestamp_text`: ISO
  year, ``T``, exactly *width* fraction digits or the shortest for width <= 0, ``Z``) and the
  clock part of ``ZonedTime`` (:func:`clock_text`, :func:`fraction_digits`).
* :class:`Duration` (the interval fields Debezium receives from pgjdbc's ``PGInterval``) as
  ``io.debezium.time.MicroDuration`` (:func:`micro_duration`: int64 µs, 365.25/12 days a month,
  double arithmetic, saturated like Java's ``(long)`` cast) or ``io.debezium.time.Interval``
  (:func:`interval_iso`).

Pure functions, no I/O. Parsing a source's text into these inputs is the source's job.
"""

from __future__ import annotations

from datetime import date
from decimal import ROUND_DOWN, Decimal
from typing import Final, NamedTuple

from signaller.wire.numbers import INT64_MAX, INT64_MIN

__all__ = [
    "DAYS_PER_MONTH_AVG",
    "EPOCH_ORDINAL",
    "MICROS_PER_DAY",
    "NEG_INFINITY_DATE",
    "NEG_INFINITY_DATE_ELEMENT",
    "NEG_INFINITY_MICROS",
    "NEG_INFINITY_MILLIS",
    "POS_INFINITY_DATE",
    "POS_INFINITY_DATE_ELEMENT",
    "POS_INFINITY_MICROS",
    "POS_INFINITY_MILLIS",
    "Duration",
    "civil_from_days",
    "clock_text",
    "days_from_civil",
    "fraction_digits",
    "fraction_text",
    "interval_iso",
    "iso_year",
    "micro_duration",
    "zoned_timestamp_text",
]

EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()
"""``date.toordinal()`` of the Unix epoch."""
MICROS_PER_DAY: Final = 86_400_000_000
POS_INFINITY_DATE: Final = 2146033979
"""Epoch day of 5877611-06-21: Debezium's ``infinity`` in a ``date`` column (streamed events)."""
NEG_INFINITY_DATE: Final = -2147472691
"""Epoch day of -5877611-06-22: Debezium's ``-infinity`` in a ``date`` column (streamed events)."""
POS_INFINITY_DATE_ELEMENT: Final = -622191234
"""Debezium's ``infinity`` in a ``date[]`` element, streamed and snapshot: ``(int)`` of the epoch day of
pgjdbc's ``DATE_POSITIVE_INFINITY`` (9223372036825200000 ms); also what Debezium's snapshot READs write
for a ``date`` column."""
NEG_INFINITY_DATE_ELEMENT: Final = -625821272
"""Debezium's ``-infinity`` in a ``date[]`` element, streamed and snapshot (also its snapshot READs'
value for a ``date`` column)."""
POS_INFINITY_MICROS: Final = INT64_MAX
"""``io.debezium.time.MicroTimestamp`` ``infinity``: ``Long.MAX_VALUE``."""
NEG_INFINITY_MICROS: Final = INT64_MIN
"""``io.debezium.time.MicroTimestamp`` ``-infinity``: ``Long.MIN_VALUE``."""
POS_INFINITY_MILLIS: Final = 9223372036825200000
"""Millisecond timestamps' ``infinity``: pgjdbc's ``DATE_POSITIVE_INFINITY`` (ms), as Debezium writes it."""
NEG_INFINITY_MILLIS: Final = -9223372036832400000
"""Millisecond timestamps' ``-infinity``: pgjdbc's ``DATE_NEGATIVE_INFINITY`` (ms), as Debezium writes it."""


def days_from_civil(year: int, month: int, day: int) -> int:
    """Epoch day of a proleptic Gregorian date (astronomical year: 1 BC is year 0)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """Inverse of :func:`days_from_civil`."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    month_index = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * month_index + 2) // 5 + 1
    month = month_index + (3 if month_index < 10 else -9)
    return year_of_era + era * 400 + (month <= 2), month, day


def iso_year(year: int) -> str:
    """``ISO_LOCAL_DATE`` year: 4 digits, ``-`` for negative years, ``+`` beyond 9999."""
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def fraction_text(micros: int, width: int) -> str:
    """Java ``appendFraction``: exactly ``width`` digits, or the shortest (none for 0) if <= 0."""
    if width <= 0:
        return "." + f"{micros:06d}".rstrip("0") if micros else ""
    digits = f"{micros:06d}"
    return "." + (digits[:width] if width <= 6 else digits + "0" * (width - 6))


def fraction_digits(digits: str, width: int) -> str:
    """:func:`fraction_text` for fraction digits already written out (trailing zeros trimmed)."""
    if width <= 0:
        trimmed = digits.rstrip("0")
        return "." + trimmed if trimmed else ""
    return "." + digits.ljust(width, "0")[:width]


def clock_text(micros_of_day: int, width: int) -> str:
    """``HH:MM:SS`` of ``micros_of_day`` with :func:`fraction_text` of ``width``."""
    seconds, micros = divmod(micros_of_day, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return (
        f"{_TWO_DIGITS[hours]}:{_TWO_DIGITS[minutes]}:{_TWO_DIGITS[seconds]}{fraction_text(micros, width)}"
    )


_TWO_DIGITS: Final = tuple(f"{number:02d}" for number in range(60))


def zoned_timestamp_text(epoch_micros: int, width: int) -> str:
    """``ZonedTimestamp.toIsoString`` of a UTC instant with Debezium's fraction width."""
    days, micros_of_day = divmod(epoch_micros, MICROS_PER_DAY)
    ordinal = days + EPOCH_ORDINAL
    if 1 <= ordinal <= 3652059:
        as_date = date.fromordinal(ordinal)
        year, month, day = as_date.year, as_date.month, as_date.day
    else:
        year, month, day = civil_from_days(days)
    return f"{iso_year(year)}-{month:02d}-{day:02d}T{clock_text(micros_of_day, width)}Z"


# --------------------------------------------------------------------------------------------
# Durations (Debezium MicroDuration/Interval arithmetic on pgjdbc PGInterval fields)
# --------------------------------------------------------------------------------------------

DAYS_PER_MONTH_AVG: Final = 365.25 / 12.0
"""Debezium's ``MicroDuration.DAYS_PER_MONTH_AVG``."""


class Duration(NamedTuple):
    """The fields of pgjdbc's ``PGInterval``, as Debezium reads them."""

    years: int
    months: int
    days: int
    hours: int
    minutes: int
    whole_seconds: int
    micro_seconds: int

    @property
    def seconds(self) -> float:
        """``PGInterval.getSeconds()``."""
        return self.whole_seconds + self.micro_seconds / 1_000_000


def micro_duration(value: Duration) -> int:
    """``MicroDuration.durationMicros`` with ``DAYS_PER_MONTH_AVG`` (double arithmetic, truncated)."""
    number_of_days = (value.years * 12 + value.months) * DAYS_PER_MONTH_AVG + value.days
    number_of_seconds = ((number_of_days * 24 + value.hours) * 60 + value.minutes) * 60 + value.seconds
    # Java's (long) cast saturates: intervals beyond ±292,271 years become Long.MIN/MAX_VALUE.
    return max(INT64_MIN, min(INT64_MAX, int(number_of_seconds * 1e6)))


def interval_iso(value: Duration) -> str:
    """``Interval.toIsoString`` with ``BigDecimal.valueOf(getSeconds())``."""
    seconds = Decimal(repr(value.seconds))
    exponent = seconds.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -6:
        seconds = seconds.quantize(Decimal("0.000001"), rounding=ROUND_DOWN)
    seconds_text = "0" if seconds == 0 else format(seconds.normalize(), "f")
    return f"P{value.years}Y{value.months}M{value.days}DT{value.hours}H{value.minutes}M{seconds_text}S"
