"""Event-by-event comparison of Debezium's output with the sidecar's (pure logic, no services).

Each side's records are first *renamed*: the names that must differ between two connectors on one
database (topic prefix, signalling table) and values that are random by design (watermark chunk ids,
Initial Snapshot notification ids) become placeholders. Nothing else is changed. Then every record
of every topic is compared field by field, schemas included, and each difference is either matched
by an entry of :data:`ALLOWED` (the README's allow-list, with its reason) or reported.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from signaller.wire.temporal import civil_from_days, days_from_civil

ABSENT = "<absent>"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Allowed:
    """A difference the suite accepts: where (topic kind and JSON path, regular expressions
    matched in full), for which ``op`` (None: any), for which values (``values(debezium,
    signaller)``; None: any), and why."""

    name: str
    topic: str
    path: str
    reason: str
    op: str | None = None
    values: Callable[[Any, Any], bool] | None = None

    def matches(self, difference: Difference) -> bool:
        return (re.fullmatch(self.topic, difference.topic) is not None
                and re.fullmatch(self.path, difference.path) is not None
                and (self.op is None or self.op == difference.op)
                and (self.values is None or self.values(difference.debezium, difference.signaller)))


def era_dropped(debezium: Any, signaller: Any) -> bool:
    """``signaller`` is a BC date (epoch days) and ``debezium`` the same date with the era dropped
    (``0044-03-15 BC`` read as ``0044-03-15`` AD)."""
    if type(debezium) is not int or type(signaller) is not int:
        return False
    year, month, day = civil_from_days(signaller)
    return year <= 0 and debezium == days_from_civil(1 - year, month, day)


def julian_calendar(debezium: Any, signaller: Any) -> bool:
    """``signaller`` is a timestamp (epoch µs) before 1582-10-15 and ``debezium`` the same wall-clock
    time read in the Julian calendar (``java.sql.Timestamp``'s calendar before the Gregorian reform)."""
    if type(debezium) is not int or type(signaller) is not int:
        return False
    days, micros_of_day = divmod(signaller, 86_400_000_000)
    year, month, day = civil_from_days(days)
    if (year, month, day) >= (1582, 10, 15):
        return False
    shift = (14 - month) // 12
    y, m = year + 4800 - shift, month + 12 * shift - 3
    julian_days = day + (153 * m + 2) // 5 + 365 * y + y // 4 - 32083 - 2440588
    return debezium == julian_days * 86_400_000_000 + micros_of_day


def julian_calendar_any_unit(debezium: Any, signaller: Any) -> bool:
    """:func:`julian_calendar` for µs values, or for ms values (``Timestamp``, Connect ``Timestamp``)."""
    if type(debezium) is not int or type(signaller) is not int:
        return False
    return julian_calendar(debezium, signaller) or julian_calendar(debezium * 1000, signaller * 1000)


_ISO_YEAR = re.compile(r"([-+]?\d{4,})(-\d\d-\d\dT.*)")


def era_dropped_instant(debezium: Any, signaller: Any) -> bool:
    """``signaller`` is a BC ``ZonedTimestamp`` (``-0043-03-15T12:00:00Z``, proleptic year -43) and
    ``debezium`` the same instant with the era dropped (``0044-03-15T12:00:00Z``)."""
    if not isinstance(debezium, str) or not isinstance(signaller, str):
        return False
    ours, theirs = _ISO_YEAR.fullmatch(signaller), _ISO_YEAR.fullmatch(debezium)
    if ours is None or theirs is None or int(ours[1]) > 0:
        return False
    return int(theirs[1]) == 1 - int(ours[1]) and theirs[2] == ours[2]


def time_in_milliseconds(debezium: Any, signaller: Any) -> bool:
    """``debezium`` is ``signaller`` (a time of day) truncated to milliseconds, with ``24:00:00``
    wrapped to 0: µs (``MicroTime``) or ms (``Time``) values."""
    if type(debezium) is not int or type(signaller) is not int or debezium == signaller:
        return False
    return debezium in ((signaller - signaller % 1000) % 86_400_000_000, signaller % 86_400_000)


_JAVA_OBJECT_ID = re.compile(r"\[L[\w.$]+;@[0-9a-f]+")


def java_object_ids(debezium: Any, signaller: Any) -> bool:
    """``signaller`` is null and ``debezium`` a non-empty list of nulls or Java object ids
    (``[Ljava.lang.String;@1b2c3d``): a multi-dimensional array as Debezium writes it."""
    return signaller is None and isinstance(debezium, list) and bool(debezium) and all(
        item is None or (isinstance(item, str) and _JAVA_OBJECT_ID.fullmatch(item) is not None) for item in debezium)


def nulled_array(debezium: Any, signaller: Any) -> bool:
    """``debezium`` is null and ``signaller`` a non-empty array (the elements Debezium lost)."""
    return debezium is None and isinstance(signaller, list) and bool(signaller)


def one_of(*pairs: tuple[Any, Any]) -> Callable[[Any, Any], bool]:
    """Exactly these ``(debezium, signaller)`` value pairs."""
    return lambda debezium, signaller: (debezium, signaller) in pairs


ALLOWED: tuple[Allowed, ...] = (
    Allowed("timings", r".*", r"value\.payload\.(source\.)?ts_(ms|us|ns)|value\.payload\.timestamp",
            "Wall-clock times of two processes never agree."),
    Allowed("read positions", r"data:.*", r"value\.payload\.source\.(lsn|txId|sequence|xmin)", op="r",
            reason="A snapshot READ carries the log position at which its window closed; each side writes its "
                   "own watermarks at its own moment, so the positions differ (the values are still checked for "
                   "shape by the suite's own assertions)."),
    Allowed("watermark positions", r"signal", r"(value\.payload\.(source\.(lsn|txId|sequence|xmin)|transaction\..*))",
            reason="Watermark rows are separate transactions of each side (and the signals go to two signal "
                   "tables), so their log positions and transaction ids differ."),
    Allowed("first change after the signals", r"data:(cmp_sync|cmp_allx)_.*", r"value\.payload\.source\.sequence",
            reason="source.sequence[0] is the previous transaction's end LSN in the connector's stream; before the "
                   "scenario's first change after the snapshots, each side's previous transaction is a write to "
                   "its own signalling table."),
    Allowed("watermark timestamps", r"signal", r"value\.payload\.after\.data\.(open|close)WindowTimestamp",
            reason="Window open/close instants; Debezium writes nanosecond digits, signaller microseconds "
                   "(both ISO-8601 instants)."),
    Allowed("BC dates in snapshot READs", r"data:(cmp_edge|cmp_all)_.*", r"value\.payload\.after\.c_date", op="r",
            values=era_dropped,
            reason="Debezium's snapshot READs drop the era of a BC date (0044-03-15 BC is read as 0044-03-15 AD), "
                   "while its streamed events keep it; signaller keeps it in both."),
    Allowed("BC dates in date arrays", r"data:(cmp_edge|cmp_all)_.*",
            r"value\.payload\.(before|after)\.(c_date_arr|a_date)\[\d+\]", values=era_dropped,
            reason="Debezium drops the era of a BC date in a date[] element, streamed and in snapshots; "
                   "signaller keeps it."),
    Allowed("Julian timestamps in timestamp arrays", r"data:(cmp_edge|cmp_all)_.*",
            r"value\.payload\.(before|after)\.(c_ts_arr|a_timestamp|ma_timestamp_\d+)\[\d+\]",
            values=julian_calendar_any_unit,
            reason="Debezium reads timestamp[] elements through java.sql.Timestamp, whose calendar is Julian "
                   "before 1582-10-15, so such an element moves by days (0044-03-15 BC by two); signaller keeps "
                   "PostgreSQL's proleptic Gregorian calendar, as Debezium does for a timestamp column."),
    Allowed("date infinity in snapshot READs", r"data:(cmp_edge|cmp_all)_.*", r"value\.payload\.after\.c_date",
            op="r", values=one_of((-622191234, 2146033979), (-625821272, -2147472691)),
            reason="Debezium writes date ±infinity as 2146033979/-2147472691 in streamed events but "
                   "-622191234/-625821272 in snapshot READs; signaller writes the streamed values in both."),
    Allowed("timestamptz -infinity in arrays", r"data:(cmp_edge|cmp_all)_.*",
            r"value\.payload\.(before|after)\.(c_tstz_arr|a_timestamptz|ma_timestamptz_\d+)\[\d+\]",
            values=lambda debezium, signaller: signaller == "-infinity" and isinstance(debezium, str)
            and re.fullmatch(r"\+292269055-12-02T23:00:00(\.0+)?Z", debezium) is not None,
            reason="Debezium writes a -infinity timestamptz[] element as a far-future instant "
                   "(+292269055-12-02T23:00:00.000000Z); signaller writes \"-infinity\", as Debezium does for "
                   "a timestamptz column."),
    Allowed("BC instants in timestamptz arrays", r"data:cmp_all_.*",
            r"value\.payload\.(before|after)\.(a_timestamptz|ma_timestamptz_\d+)\[\d+\]", values=era_dropped_instant,
            reason="Debezium drops the era of a BC timestamptz[] element (0044-03-15 12:00 BC is written "
                   "0044-03-15T12:00:00Z); signaller keeps it (-0043-03-15T12:00:00Z), as Debezium does for a "
                   "timestamptz column."),
    Allowed("time arrays in milliseconds", r"data:cmp_all_.*",
            r"value\.payload\.(before|after)\.(a_time|ma_time_\d+)\[\d+\]", values=time_in_milliseconds,
            reason="Debezium reads time[] elements through java.sql.Time: milliseconds only, and 24:00:00 "
                   "becomes 0; signaller keeps the microseconds and 24:00:00, as Debezium does for a time column."),
    Allowed("multi-dimensional arrays", r"data:cmp_all_.*", r"value\.payload\.(before|after)\.[a-z0-9_]+",
            values=java_object_ids,
            reason="Debezium writes a two-dimensional array as a list of Java object ids "
                   "([\"[Ljava.lang.String;@1b2c3d\", ...]) or of nulls; signaller writes null (it does not fit "
                   "the column's schema, an array of single values) and counts it as multidimensional_array."),
    Allowed("numeric arrays with NaN", r"data:cmp_all_.*",
            r"value\.payload\.(before|after)\.(a_numeric|ma_numeric_\d+_\d+)", values=nulled_array,
            reason="With decimal.handling.mode=precise Debezium writes null for a whole numeric[] holding NaN or "
                   "±Infinity; signaller writes the other elements and null for those (items are optional), "
                   "counted as nan/infinity."),
    Allowed("geometric arrays", r"data:cmp_all_.*",
            r"value\.payload\.(before|after)\.a_(line|lseg|box|path|polygon|circle)", values=nulled_array,
            reason="Debezium 3.7 declares line[], lseg[], box[], path[], polygon[] and circle[] columns but "
                   "writes null for every non-empty value (\"Struct schemas do not match\" on its own element "
                   "structs); signaller writes the elements, in Debezium's schema."),
    Allowed("int2vector and oidvector arrays", r"data:cmp_all_.*",
            r"value\.payload\.(before|after)\.a_(int2vector|oidvector)", values=nulled_array,
            reason="Debezium 3.7 writes null for every non-empty int2vector[]/oidvector[] (its elements come out "
                   "null, which its schema's required items refuse); signaller writes the vectors."),
    Allowed("name columns in streamed events", r"data:.*", r"value\.payload\.(before|after)\.c_name",
            values=lambda debezium, signaller: debezium is None and isinstance(signaller, str),
            reason="Debezium 3.7 writes null for every value of a name column in streamed events (its snapshot "
                   "READs carry the value); signaller writes the value in both."),
    Allowed("int2vector and oidvector values", r"data:.*",
            r"value\.payload\.(before|after)\.c_(int2vector|oidvector)(\[\d+\])?",
            values=lambda debezium, signaller: (debezium == ABSENT and type(signaller) is int)
            or (debezium is None and signaller == []),
            reason="Debezium 3.7 writes [] for every non-empty int2vector/oidvector value ('1 2 3' included) and "
                   "null for an empty one; signaller writes the numbers ([] when empty), in Debezium's schema "
                   "(an array of required int16/int64)."),
)
"""The README's allow-list ("Differences from Debezium"), as data. A unit test keeps the two in step."""


@dataclass(frozen=True)
class Difference:
    topic: str
    index: int
    path: str
    debezium: Any
    signaller: Any
    op: str | None = None

    def __str__(self) -> str:
        def show(value: Any) -> str:
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            return text if len(text) <= 300 else text[:300] + "..."

        return (f"{self.topic}[{self.index}] {self.path} (op {self.op}):\n"
                f"    debezium:  {show(self.debezium)}\n    signaller: {show(self.signaller)}")


@dataclass(frozen=True)
class Renames:
    """One side's own names, replaced by placeholders before comparing. ``schema`` is the namespace
    between the prefix and the table in topic names: ``public`` for PostgreSQL, the database for MariaDB."""

    prefix: str
    signal_table: str
    schema: str = "public"

    def apply(self, text: str) -> str:
        return text.replace(self.signal_table, "<signal-table>").replace(self.prefix, "<prefix>")


def topic_kind(topic: str, renames: Renames) -> str:
    """``data:<table>``, ``signal``, ``notifications``, ``transaction``, ``schema-changes`` (the topic named
    ``<prefix>``, MariaDB's schema-change topic), ``schema-history`` (``<prefix>.schema-history``) or
    ``other:<topic>``."""
    name = renames.apply(topic)
    data = f"<prefix>.{renames.schema}."
    if name == data + "<signal-table>":
        return "signal"
    if name.startswith(data):
        return "data:" + name.removeprefix(data)
    if name in ("<prefix>.notifications", "<prefix>.transaction", "<prefix>.schema-history"):
        return name.removeprefix("<prefix>.")
    if name == "<prefix>":
        return "schema-changes"
    return "other:" + name


def own_transactions(records: list[dict[str, Any]]) -> set[str]:
    """Transaction ids (``xid``) whose END record lists only the side's own signalling table: its
    signals and watermark rows, which are each side's own transactions."""
    own: set[str] = set()
    for record in records:
        payload = (record.get("value") or {}).get("payload") or {}
        if payload.get("status") != "END":
            continue
        collections = {c.get("data_collection") for c in payload.get("data_collections") or ()}
        if collections and all(str(c).endswith(".<signal-table>") for c in collections):
            own.add(str(payload.get("id", "")).split(":")[0])
    return own


def normalize(record: dict[str, Any], kind: str, renames: Renames) -> Any:
    """A record (``{"key": ..., "value": ...}`` parsed JSON) with this side's names renamed, the
    watermark rows' ``data`` parsed (it is a JSON document in a text column) and random ids replaced."""
    text = renames.apply(json.dumps(record))
    if kind == "signal":
        text = UUID.sub("<chunk-id>", text)
    out: Any = json.loads(text)
    value = out.get("value")
    if kind == "signal" and isinstance(value, dict):
        after = value.get("payload", {}).get("after")
        if isinstance(after, dict) and str(after.get("type", "")).startswith("snapshot-window-"):
            with contextlib.suppress(TypeError, ValueError):
                after["data"] = json.loads(after["data"])
    if kind == "notifications" and isinstance(value, dict):
        payload = value.get("payload", {})
        if payload.get("aggregate_type") == "Initial Snapshot" and UUID.fullmatch(str(payload.get("id", ""))):
            payload["id"] = "<random-uuid>"
            out["key"]["payload"]["id"] = "<random-uuid>"
    return out


def _without(records: list[Any], xids: set[str]) -> list[Any]:
    return [r for r in records if str(r["value"]["payload"]["id"]).split(":")[0] not in xids]


def _op(record: Any) -> str | None:
    """A change event's ``op``; for a DDL record (schema-change topic, schema history), ``ddl`` or
    ``ddl-snapshot`` when it comes from the connector's schema snapshot."""
    value = record.get("value") if isinstance(record, dict) else None
    payload = value.get("payload") if isinstance(value, dict) else None
    if isinstance(value, dict) and "ddl" in value:  # a schema history record (no envelope)
        position = value.get("position")
        return "ddl-snapshot" if isinstance(position, dict) and "snapshot" in position else "ddl"
    if isinstance(payload, dict) and "ddl" in payload:
        source = payload.get("source")
        snapshot = source.get("snapshot") if isinstance(source, dict) else None
        return "ddl" if snapshot in (None, "false") else "ddl-snapshot"
    return payload.get("op") if isinstance(payload, dict) else None


def diff_values(left: Any, right: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """Every leaf where ``left`` and ``right`` differ: ``(path, left, right)``; object member order
    is not significant (JSON objects), list order is."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key in list(left) + [k for k in right if k not in left]:
            sub = f"{path}.{key}" if path else str(key)
            yield from diff_values(left.get(key, ABSENT), right.get(key, ABSENT), sub)
        return
    if isinstance(left, list) and isinstance(right, list):
        for index in range(max(len(left), len(right))):
            a = left[index] if index < len(left) else ABSENT
            b = right[index] if index < len(right) else ABSENT
            yield from diff_values(a, b, f"{path}[{index}]")
        return
    if left != right or type(left) is not type(right):
        yield path, left, right


def without_empty_transactions(records: list[Any]) -> list[Any]:
    """Transaction records less those of transactions with no captured event (an END with
    ``event_count`` 0, or a BEGIN with no END): Debezium's MariaDB connector writes a BEGIN/END pair for
    every transaction in the binlog, other databases' included, so on a shared server they depend on
    what else runs."""
    kept = {str(r["value"]["payload"]["id"]) for r in records
            if r["value"]["payload"].get("status") == "END" and r["value"]["payload"].get("event_count")}
    return [r for r in records if str(r["value"]["payload"]["id"]) in kept]


def compare(debezium: dict[str, list[dict[str, Any]]], signaller: dict[str, list[dict[str, Any]]],
            debezium_names: Renames, signaller_names: Renames,
            drop_empty_transactions: bool = False) -> list[Difference]:
    """All differences between two sides' topics (``topic -> [{"key", "value"}, ...]``);
    ``drop_empty_transactions``: compare only transactions with captured events (MariaDB)."""
    left = {topic_kind(t, debezium_names): (t, records) for t, records in debezium.items()}
    right = {topic_kind(t, signaller_names): (t, records) for t, records in signaller.items()}
    differences: list[Difference] = []
    for kind in list(left) + [k for k in right if k not in left]:
        if kind not in left or kind not in right:
            differences.append(Difference(kind, -1, "<topic>", left.get(kind, (ABSENT,))[0],
                                          right.get(kind, (ABSENT,))[0]))
            continue
        a_records = [normalize(r, kind, debezium_names) for r in left[kind][1]]
        b_records = [normalize(r, kind, signaller_names) for r in right[kind][1]]
        if kind == "transaction":
            a_records, b_records = (_without(records, own_transactions(records)) for records in (a_records, b_records))
            if drop_empty_transactions:
                a_records, b_records = without_empty_transactions(a_records), without_empty_transactions(b_records)
        for index in range(max(len(a_records), len(b_records))):
            a = a_records[index] if index < len(a_records) else ABSENT
            b = b_records[index] if index < len(b_records) else ABSENT
            op = _op(a) if a is not ABSENT else _op(b)
            if a is ABSENT or b is ABSENT:
                differences.append(Difference(kind, index, "<record>", a, b, op))
                continue
            differences.extend(Difference(kind, index, path, x, y, op) for path, x, y in diff_values(a, b))
    return differences


def unexplained(differences: Iterable[Difference], allowed: Iterable[Allowed] = ALLOWED) -> list[Difference]:
    """The differences no allow-list entry covers."""
    rules = list(allowed)
    return [d for d in differences if not any(rule.matches(d) for rule in rules)]


def report(differences: list[Difference], limit: int = 40) -> str:
    shown = "\n".join(str(d) for d in differences[:limit])
    more = f"\n... and {len(differences) - limit} more" if len(differences) > limit else ""
    return f"{len(differences)} difference(s) not in the allow-list:\n{shown}{more}"
