"""Hypothesis strategies for hostile signals: what a careless or malicious sender can put on a channel.

Each strategy draws the *bytes* a channel carries (a Kafka record value, a file line, an HTTP body) or
the three texts of a signal-table row. They mix well-formed signals with hostile parts (regular
expressions that backtrack exponentially or do not compile, filters that are not SQL, that smuggle
statements or contain ``%``, huge type modifiers, deep nesting, large sizes, broken encodings) with
arbitrary JSON and arbitrary bytes, so one run covers the parser, the engine and the channels.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

SIGNAL_TYPES = ["execute-snapshot", "stop-snapshot", "pause-snapshot", "resume-snapshot", "log"]
HOSTILE_REGEXES = [
    "(", ")", "[", "*", "+?", "a{99999999999}", "a{1001}", "(?:.|.|.)*X", "(a+)+$", "(?:a|a)*b",
    "(a)\\1", "(?=public)", "(?<!x)y", "\\", "", " ", ".*", "public\\..*", "(?i)PUBLIC\\..*", "\u0000",
    "\ud800", "x" * 5000, "(" * 300 + ")" * 300, "[[:alpha:]]+", "\\p{L}+\\..*",
]
HOSTILE_FILTERS = [
    "name LIKE 'a%'", "note ILIKE '%b%'", "id % 2 = 1", "id::numeric(" + "9" * 5000 + ") > 1",
    "1 = 1; DROP TABLE x", "pg_sleep(10) IS NULL", "(SELECT 1) = 1", "id >", "'unterminated", "-- comment",
    "/* open", "$$x$$ = 'x'", "id > 0 -- trailing", "now() - interval '1 day' < now()", "%s", "%(x)s",
    "%%", "\u0000", "\ud800", "(" * 2000 + "id > 1" + ")" * 2000, "id > " + "1" * 100_000, "true",
    "id IN (1, 2, 3)", "set_config('a', 'b', false) = 'b'", "current_date > '2020-01-01'",
    "name = ANY('{a,b}')", "id IS DISTINCT FROM 3", "payload->>'k' = 'x'", "unknown_column = 1", "id",
    "timestamp with time zone '2026-01-01 00:00+00' < now()", "1", "NULL", "lo_import('/etc/passwd') > 0",
]
HOSTILE_TEXT = st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE_REGEXES + HOSTILE_FILTERS))

JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                         st.text(max_size=20), st.integers(min_value=10**30, max_value=10**40))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12)


@st.composite
def execute_data(draw: st.DrawFn, table_pattern: str) -> dict[str, Any]:
    """``execute-snapshot`` data: the real table's pattern or hostile ones, hostile conditions."""
    collections = draw(st.lists(st.one_of(st.just(table_pattern), HOSTILE_TEXT), min_size=0, max_size=3))
    data: dict[str, Any] = {"data-collections": collections}
    if draw(st.booleans()):
        data["type"] = draw(st.one_of(st.sampled_from(["incremental", "blocking", "BLOCKING", "Incremental"]),
                                      st.text(max_size=10)))
    if draw(st.booleans()):
        data["additional-conditions"] = draw(st.lists(
            st.fixed_dictionaries({"data-collection": st.one_of(st.just(table_pattern), HOSTILE_TEXT),
                                   "filter": st.one_of(st.sampled_from(HOSTILE_FILTERS), st.text(max_size=30))}),
            max_size=2))
    if draw(st.integers(0, 4)) == 0:
        data["surrogate-key"] = draw(st.one_of(st.sampled_from(["id", "name", "nope", "%", ""]),
                                               st.text(max_size=10)))
    if draw(st.integers(0, 6)) == 0:
        data[draw(st.text(max_size=10))] = draw(JSON_VALUES)
    return data


@st.composite
def signal_document(draw: st.DrawFn, table_pattern: str, signal_id: str) -> Any:
    """A JSON document: mostly signal-shaped (some well-formed), sometimes any JSON value."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(JSON_VALUES)
    signal_type = draw(st.one_of(st.sampled_from(SIGNAL_TYPES), st.sampled_from(SIGNAL_TYPES),
                                 st.text(max_size=16)))
    data: Any
    if signal_type == "execute-snapshot" or (signal_type not in SIGNAL_TYPES and draw(st.booleans())):
        data = draw(execute_data(table_pattern))
    elif signal_type == "stop-snapshot":
        data = {"data-collections": draw(st.lists(st.one_of(st.just(table_pattern), HOSTILE_TEXT), max_size=2))}
    elif signal_type == "log":
        data = draw(st.one_of(st.fixed_dictionaries({"message": st.text(max_size=40)}), st.just({}),
                              st.fixed_dictionaries({"message": JSON_SCALARS})))
    else:
        data = draw(st.one_of(st.just({}), JSON_VALUES))
    document: dict[str, Any] = {"id": signal_id, "type": signal_type, "data": data}
    mutation = draw(st.integers(0, 12))
    if mutation == 0:
        del document["id"]
    elif mutation == 1:
        document["id"] = draw(JSON_SCALARS)
    elif mutation == 2:
        document["data"] = json.dumps(data)
    elif mutation == 3:
        del document["data"]
    return document


def nested(depth: int) -> bytes:
    return b'{"id": "deep", "type": "log", "data": ' + b"[" * depth + b"]" * depth + b"}"


@st.composite
def channel_payload(draw: st.DrawFn, table_pattern: str, signal_id: str, max_bytes: int) -> bytes:
    """The bytes of one record/line/body; never blank (channels skip blank records silently)."""
    kind = draw(st.integers(0, 19))
    if kind == 0:
        raw = draw(st.binary(min_size=1, max_size=64))
    elif kind == 1:
        raw = nested(draw(st.sampled_from([100, 1000, 100_000])))
    elif kind == 2:
        size = draw(st.sampled_from([max_bytes // 2, max_bytes]))
        raw = b'{"id": "%s", "type": "log", "data": {"message": "' % signal_id.encode() + b"x" * size + b'"}}'
    elif kind == 3:
        raw = b'{"id": "%s", "type": "log", "data": {"message": "\\ud800"}}' % signal_id.encode()
    elif kind == 4:
        raw = b"\xef\xbb\xbf" + json.dumps(draw(signal_document(table_pattern, signal_id))).encode()
    elif kind == 5:
        raw = json.dumps(draw(signal_document(table_pattern, signal_id))).encode("utf-16")
    else:
        raw = json.dumps(draw(signal_document(table_pattern, signal_id)), ensure_ascii=draw(st.booleans()),
                         allow_nan=True).encode("utf-8", "surrogatepass")
    if not raw.strip():
        raw = b"?" + raw
    return raw


@st.composite
def signal_row(draw: st.DrawFn, table_pattern: str, signal_id: str) -> tuple[str, str, str | None]:
    """``(id, type, data)`` texts for the signal table (PostgreSQL text: no NUL, valid Unicode)."""
    document = draw(signal_document(table_pattern, signal_id))
    signal_type = document.get("type") if isinstance(document, dict) else None
    if not isinstance(signal_type, str) or signal_type.startswith("snapshot-window-"):
        signal_type = draw(st.sampled_from(SIGNAL_TYPES))
    data = document.get("data") if isinstance(document, dict) else document
    text = draw(st.one_of(st.just(json.dumps(data)), st.just(None), st.text(max_size=30),
                          st.just(json.dumps(data) + "}")))
    clean = (signal_type.replace("\x00", "?").encode("utf-8", "replace").decode(),
             None if text is None else text.replace("\x00", "?").encode("utf-8", "replace").decode())
    return signal_id, clean[0], clean[1]
