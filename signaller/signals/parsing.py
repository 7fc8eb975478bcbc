"""From channel bytes to ``Signal`` and from ``Signal`` to a validated, frozen action.

Three entry points, all total: for any input they return a value or raise ``SignalError``, never
anything else.

* ``signal_from_json(raw, channel, position)``: one Kafka record value, file line or HTTP body,
  ``{"id": ..., "type": ..., "data": {...}}``. ``data`` must be a JSON object (a JSON *string*
  holding an object is refused, as Debezium's Kafka channel refuses it). The Kafka channel may omit
  ``id`` (or send null): a UUID is generated, as Debezium allows.
* ``signal_from_row(id, type, data_text, channel, position)``: one row of the signal table; ``data``
  is JSON text and NULL or blank means ``{}``.
* ``parse_action(signal)``: validates the signal against ``schemas/signal.schema.json`` and builds
  the ``signals.model`` action. The two watermark types give ``WindowMarker``; they are only
  accepted from the ``source`` (signal table) and ``internal`` channels, because a window
  boundary means something only at its position in the change stream.

Every ``SignalError`` reason names what is wrong, where (a path such as
``data.additional-conditions[0].filter``) and what is accepted. Table names and filters are checked
later against the catalog by the snapshot engine (``signals.filters.compile_filter``); here every
regular expression (``data-collections`` of every signal, ``additional-conditions[].data-collection``
of every snapshot type) is checked to compile with RE2 (``signaller.patterns``: linear-time matching,
so no pattern can freeze the process later).
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from signaller.errors import SignalError
from signaller.signals.actions import ACTIONS
from signaller.signals.model import WINDOW_CLOSE, WINDOW_OPEN, Action, Channel, Signal, WindowMarker
from signaller.signals.values import show

__all__ = ["USER_SIGNAL_TYPES", "parse_action", "signal_from_json", "signal_from_row", "signal_schema"]

USER_SIGNAL_TYPES = tuple(ACTIONS)
"""The signal types a user may send (the action registry's); the watermark types are written by signaller itself."""

_WATERMARK_CHANNELS = frozenset({"source", "internal"})
_TYPES_ACCEPTED = "one of " + ", ".join(USER_SIGNAL_TYPES) + " (case-sensitive)"
_ENVELOPE_ACCEPTED = '{"id": <non-empty string>, "type": <signal type>, "data": {...}}'
_ID_ACCEPTED = "a non-empty string, e.g. a UUID"
_DATA_ACCEPTED = "a JSON object ({} if the signal needs no data)"
_PLAIN_DEPTH = 8


@functools.cache
def signal_schema() -> Mapping[str, Any]:
    """The JSON Schema (draft 2020-12) of a signal: ``signal.schema.json``, package data of this package
    (``schemas/signal.schema.json`` in the repository is a generated copy, for readers)."""
    text = importlib.resources.files("signaller.signals").joinpath("signal.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _validator() -> Any:
    # The schema itself is checked against the draft by the unit tests (test_signal_parsing): checking it here
    # took 14 ms on the capture loop's thread at the first signal, a stall of the stream.
    return Draft202012Validator(signal_schema())


# --- channel input -> Signal ---------------------------------------------------------------------------


def signal_from_json(raw: bytes | str, channel: Channel, position: Any = None) -> Signal:
    """Parse one JSON signal ``{"id", "type", "data"}`` delivered by ``channel`` (kafka, file, http).

    Checks the envelope only (a JSON object, ``type`` a string, ``id`` a non-empty string, ``data`` an
    object); ``parse_action`` checks the type and the data. For ``channel="kafka"`` an absent or null
    ``id`` gets a generated UUID (Debezium's Kafka channel makes ``id`` optional). Raises
    ``SignalError`` for anything else, with the signal id when it could be read.
    """
    text = _as_text(raw, "value")
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise SignalError(f"value: empty; accepted: a JSON object {_ENVELOPE_ACCEPTED}")
    document = _load_json(text, "value", f"a JSON object {_ENVELOPE_ACCEPTED}")
    if not isinstance(document, dict):
        raise SignalError(f"value: expected a JSON object, got {_describe(document)}; accepted: {_ENVELOPE_ACCEPTED}")

    raw_id = document.get("id")
    if raw_id is None and channel == "kafka":
        signal_id = str(uuid.uuid4())
    else:
        signal_id = _required_text(document, "id", _ID_ACCEPTED, None)
    signal_type = _required_text(document, "type", _TYPES_ACCEPTED, signal_id)
    if "data" not in document or document["data"] is None:
        raise SignalError(f"data: missing; accepted: {_DATA_ACCEPTED}", signal_id)
    data = document["data"]
    if isinstance(data, str):
        raise SignalError(
            f"data: expected a JSON object, got a string {show(data)}; a JSON-encoded object inside a string is "
            f"not accepted (Debezium's Kafka channel refuses it too); accepted: {_DATA_ACCEPTED}", signal_id)
    if not isinstance(data, dict):
        raise SignalError(f"data: expected a JSON object, got {_describe(data)}; accepted: {_DATA_ACCEPTED}", signal_id)
    return Signal(id=signal_id, type=signal_type, data=data, channel=channel, position=position)


def signal_from_row(
    id: str | None,
    type: str | None,
    data_text: str | bytes | Mapping[str, Any] | None,
    channel: Channel = "source",
    position: Any = None,
) -> Signal:
    """Build a ``Signal`` from one signal-table row ``(id, type, data)``; ``position`` is its LSN.

    ``data_text`` is the JSON text of the ``data`` column; NULL, empty or blank means ``{}``. An
    already decoded mapping (a ``jsonb`` column read by psycopg2) is accepted as is. Raises
    ``SignalError`` for a NULL/blank/non-text id or type, data that is not JSON, or JSON that is not
    an object.
    """
    if id is None:
        raise SignalError(f"id: NULL; accepted: {_ID_ACCEPTED}")
    if not isinstance(id, str):
        raise SignalError(f"id: expected text, got {_describe(id)}; accepted: {_ID_ACCEPTED}")
    if not id.strip():
        raise SignalError(f"id: empty; accepted: {_ID_ACCEPTED}")
    if type is None:
        raise SignalError(f"type: NULL; accepted: {_TYPES_ACCEPTED}", id)
    if not isinstance(type, str):
        raise SignalError(f"type: expected text, got {_describe(type)}; accepted: {_TYPES_ACCEPTED}", id)
    data: Any
    if data_text is None:
        data = {}
    elif isinstance(data_text, Mapping):
        data = dict(data_text)
    else:
        text = _as_text(data_text, "data", id)
        if not text.strip():
            data = {}
        else:
            data = _load_json(text, "data", f"{_DATA_ACCEPTED} as JSON text", id)
            if not isinstance(data, dict):
                raise SignalError(f"data: expected a JSON object, got {_describe(data)}; "
                                  f"accepted: {_DATA_ACCEPTED}", id)
    return Signal(id=id, type=type, data=data, channel=channel, position=position)


# --- Signal -> Action -----------------------------------------------------------------------------------


def parse_action(signal: Signal) -> Action:
    """Validate ``signal`` and return its action; raise ``SignalError`` naming the problem.

    ``execute-snapshot``, ``stop-snapshot``, ``pause-snapshot``, ``resume-snapshot`` and ``log`` are
    validated against ``schemas/signal.schema.json`` (every violation is reported, by path);
    ``data-collections`` entries are trimmed, de-duplicated (first occurrence kept) and must compile as
    regular expressions; the snapshot ``type`` is lower-cased. ``snapshot-window-open``/``-close`` give
    ``WindowMarker`` and are accepted only from the ``source`` and ``internal`` channels. Any other
    type is refused with the list of accepted types (types are case-sensitive, as in Debezium).
    """
    signal_id = signal.id if isinstance(signal.id, str) else None
    signal_type: object = signal.type
    if not isinstance(signal_type, str):
        raise SignalError(f"type: expected a string, got {_describe(signal_type)}; accepted: {_TYPES_ACCEPTED}",
                          signal_id)
    data: object = signal.data
    if not isinstance(data, Mapping):
        raise SignalError(f"data: expected a JSON object, got {_describe(data)}; accepted: {_DATA_ACCEPTED}",
                          signal_id)

    if signal_type in (WINDOW_OPEN, WINDOW_CLOSE):
        if signal.channel not in _WATERMARK_CHANNELS:
            raise SignalError(
                f"type: {signal_type!r} is a watermark that signaller writes to the signal table itself and is "
                f"not accepted from the {signal.channel} channel; accepted: {_TYPES_ACCEPTED}", signal_id)
        if signal_id is None or not signal_id.strip():
            raise SignalError(f"id: expected a non-empty string, got {_describe(signal.id)}; "
                              "accepted: '<chunk-uuid>-open' or '<chunk-uuid>-close'")
        return WindowMarker(signal_id=signal_id, is_open=signal_type == WINDOW_OPEN, data=dict(data))

    if signal_type not in USER_SIGNAL_TYPES:
        raise SignalError(f"type: {show(signal_type)} is not a signal type{_type_hint(signal_type)}; "
                          f"accepted: {_TYPES_ACCEPTED}", signal_id)

    plain_data = _plain(data, 0)
    instance = {"id": signal.id, "type": signal_type, "data": plain_data}
    try:
        problems = _schema_problems(instance)
    except RecursionError:
        problems = ["data: nested too deeply; accepted: the structure described by schemas/signal.schema.json"]
    if problems:
        raise SignalError("; ".join(problems), signal_id)
    assert signal_id is not None  # the schema requires a string id
    action: Action = ACTIONS[signal_type].build(signal_id, plain_data)
    return action


def _plain(value: Any, depth: int) -> Any:
    """``value`` with mappings as dicts with text keys and tuples as lists (as JSON gives them), down to the depth
    the schema reads (a key that is not text, which no channel delivers, is named by its ``str``)."""
    if depth > _PLAIN_DEPTH:
        return value
    if isinstance(value, Mapping):
        return {key if isinstance(key, str) else str(key): _plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, depth + 1) for item in value]
    return value


# --- schema errors -> messages --------------------------------------------------------------------------


def _schema_problems(instance: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for error in _validator().iter_errors(instance):
        for problem in _explain(error):
            if problem not in problems:
                problems.append(problem)
    return sorted(problems)


def _explain(error: Any) -> list[str]:
    """Human messages for one ``jsonschema.ValidationError``: ``<path>: <what>; accepted: <what>``."""
    path = _path(error.absolute_path)
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    accepted = schema.get("x-accepted", "see schemas/signal.schema.json")
    instance = error.instance
    keyword = error.validator
    if "x-refused" in schema:
        return [f"{path}: {schema['x-refused']}; accepted: {accepted}"]
    if keyword == "required" and isinstance(instance, Mapping):
        return [f"{_join(path, name)}: missing; accepted: {accepted}"
                for name in error.validator_value if name not in instance]
    if keyword == "additionalProperties" and isinstance(instance, Mapping):
        known = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        return [f"{_join(path, str(name))}: unknown key{_key_hint(name)}; accepted: {accepted}"
                for name in instance
                if name not in known and not any(re.search(pattern, name) for pattern in patterns)]
    if keyword == "type":
        return [f"{path}: expected {_article(error.validator_value)}, got {_describe(instance)}; accepted: {accepted}"]
    if keyword == "minItems":
        return [f"{path}: empty array; accepted: {accepted}"]
    if keyword in ("minLength", "pattern") and isinstance(instance, str) and not instance.strip():
        return [f"{path}: empty string; accepted: {accepted}"]
    if keyword in ("pattern", "enum", "const"):
        return [f"{path}: {show(instance)} is not accepted; accepted: {accepted}"]
    return [f"{path}: {error.message}; accepted: {accepted}"]


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        text = f"{text}[{part}]" if isinstance(part, int) else _join(text, str(part))
    return text or "value"


def _join(path: str, name: str) -> str:
    return name if path in ("", "value") else f"{path}.{name}"


def _key_hint(name: object) -> str:
    if name == "additional-condition":
        return (" (the singular additional-condition was removed in Debezium 3.0; "
                "use additional-conditions: [{data-collection, filter}])")
    if name == "data-collection":
        return " (did you mean data-collections, an array?)"
    return ""


def _type_hint(signal_type: str) -> str:
    lowered = signal_type.strip().lower()
    if lowered != signal_type and lowered in USER_SIGNAL_TYPES:
        return f" (did you mean {lowered!r}? signal types are case-sensitive)"
    return ""


# --- small helpers --------------------------------------------------------------------------------------


def _as_text(raw: object, where: str, signal_id: str | None = None) -> str:
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SignalError(f"{where}: not UTF-8 text (invalid byte at offset {exc.start}); "
                              "accepted: JSON encoded as UTF-8", signal_id) from None
    else:
        raise SignalError(f"{where}: expected JSON text, got {_describe(raw)}; accepted: JSON text", signal_id)
    if any(0xD800 <= ord(char) <= 0xDFFF for char in text):
        raise SignalError(f"{where}: contains an unpaired UTF-16 surrogate; accepted: valid Unicode text", signal_id)
    return text


def _load_json(text: str, where: str, accepted: str, signal_id: str | None = None) -> Any:
    try:
        return orjson.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SignalError(f"{where}: not valid JSON ({exc}); accepted: {accepted}", signal_id) from None


def _required_text(document: Mapping[str, Any], key: str, accepted: str, signal_id: str | None) -> str:
    if key not in document or document[key] is None:
        raise SignalError(f"{key}: missing; accepted: {accepted}", signal_id)
    value = document[key]
    if not isinstance(value, str):
        raise SignalError(f"{key}: expected a string, got {_describe(value)}; accepted: {accepted}", signal_id)
    if not value.strip():
        raise SignalError(f"{key}: empty; accepted: {accepted}", signal_id)
    return value


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"), (int, "number"), (float, "number"), (str, "string"),
    (list, "array"), (tuple, "array"), (Mapping, "object"),
)


def _describe(value: object) -> str:
    """``string 'x'``, ``number 5``, ``array``, ``object``, ``null`` for error messages."""
    if value is None:
        return "null"
    name = next((label for kind, label in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)
    if name in ("boolean", "number"):
        return f"{name} {show(value)}"
    if name == "string":
        return f"string {show(value)}"
    return name


def _article(value: object) -> str:
    names = value if isinstance(value, list) else [value]
    return " or ".join(f"an {name}" if str(name)[:1] in "aeiou" else f"a {name}" for name in names)
