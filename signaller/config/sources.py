"""Where property text comes from: connector JSON, Java ``.properties`` files, environment variables.

Each reader returns a ``Layer``: property name (aliases resolved) -> ``RawValue`` (text + origin), plus
the problems found while reading. Readers never stop at the first bad value; only input that cannot be
read at all (unparseable JSON, a missing file) raises ``ConfigErrors`` at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from signaller.config.names import (
    ENV_PREFIX,
    NON_PROPERTY_ENV_NAMES,
    NON_PROPERTY_ENV_PREFIXES,
    canonical,
    env_suggestions,
    property_for_env,
)
from signaller.config.parsing import Rejected
from signaller.config.problems import ConfigErrors, problem
from signaller.errors import ConfigError


@dataclass(frozen=True, slots=True)
class RawValue:
    """A property's text as given, where it came from, and the name it was written under."""

    text: str
    origin: str
    written: str


@dataclass(slots=True)
class Layer:
    """Properties from one source (file or environment) and the problems found reading them."""

    values: dict[str, RawValue] = field(default_factory=dict)
    problems: list[ConfigError] = field(default_factory=list)

    def put(self, name: str, raw: RawValue) -> None:
        """Set ``name`` (alias-resolved). Repeats overwrite, as in Java; an alias clash is a problem."""
        key = canonical(name)
        earlier = self.values.get(key)
        if earlier is not None and earlier.written != name and earlier.text != raw.text:
            accepted = f"one value, given once: {earlier.written} (from {earlier.origin}) means the same"
            self.problems.append(problem(name, raw.text, accepted, raw.origin))
            return
        self.values[key] = raw

    def override(self, other: Layer) -> Layer:
        """A new layer: this one with every value of ``other`` replacing its own (``other`` wins)."""
        return Layer({**self.values, **other.values}, [*self.problems, *other.problems])


# --- config provider references ---------------------------------------------------------------------

_REFERENCE = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
"""Kafka's ``ConfigTransformer`` syntax: ``${provider:[path:]key}``."""


def resolve_references(name: str, raw: RawValue, env: Mapping[str, str]) -> RawValue:
    """``raw`` with every ``${env:VAR}`` replaced from ``env``; other providers raise ``ConfigError``.

    Kafka Connect resolves these references in the worker; signaller supports only the ``env``
    provider (Kafka's ``EnvVarConfigProvider``), read from ``env``.
    """
    used: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        provider, path, key = match.group(1), match.group(2), match.group(3)
        if provider != "env" or path:
            accepted = (f"a literal value or ${{env:NAME}}; the config provider {provider!r} is not "
                        "supported: resolve it before starting signaller, or set it through SIGNALLER_*")
            raise problem(name, raw.text, accepted, raw.origin)
        if key not in env:
            raise problem(name, raw.text, f"the environment variable {key} to be set", raw.origin)
        used.append(key)
        return env[key]

    text = _REFERENCE.sub(substitute, raw.text)
    if not used:
        return raw
    origin = f"{raw.origin} via " + ", ".join(f"${{env:{key}}}" for key in used)
    return RawValue(text, origin, raw.written)


def _put_resolved(layer: Layer, name: str, raw: RawValue, env: Mapping[str, str]) -> None:
    try:
        layer.put(name, resolve_references(name, raw, env))
    except ConfigError as error:
        layer.problems.append(error)


# --- Java .properties ---------------------------------------------------------------------------------

_BLANK = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first physical line number, logical line) pairs, as ``java.util.Properties.load`` reads them.

    Blank lines and lines whose first non-blank character is ``#`` or ``!`` are skipped; a line ending
    in an odd number of backslashes continues on the next line, whose leading blanks are dropped.
    """
    lines = re.split(r"\r\n|\r|\n", text)
    index = 0
    while index < len(lines):
        number, line = index + 1, lines[index].lstrip(_BLANK)
        index += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            line = line[:-1]
            if index >= len(lines):
                break
            line += lines[index].lstrip(_BLANK)
            index += 1
        yield number, line


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped ``=``, ``:`` or blank (then one optional ``=``/``:``)."""
    index = 0
    while index < len(line) and line[index] not in "=:" + _BLANK:
        index += 2 if line[index] == "\\" else 1
    key, rest = line[:index], line[index:]
    if rest[:1] in ("=", ":"):
        return key, rest[1:].lstrip(_BLANK)
    rest = rest.lstrip(_BLANK)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANK)
    return key, rest


def _unescape(text: str) -> str:
    """Resolve ``\\t \\n \\r \\f \\uXXXX`` and ``\\x`` -> ``x``; raises ``Rejected`` on a bad ``\\u``."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        index += 1
        if char != "\\" or index >= len(text):
            out.append("" if char == "\\" else char)
            continue
        char = text[index]
        index += 1
        if char == "u":
            digits = text[index:index + 4]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise Rejected("\\uXXXX escapes with exactly four hexadecimal digits")
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append(_ESCAPES.get(char, char))
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


def parse_properties(text: str, origin: str) -> tuple[list[tuple[str, str, str]], list[ConfigError]]:
    """Parse Java ``.properties`` text into ``(key, value, origin:line)`` entries and problems.

    Follows ``java.util.Properties.load``: ``key=value``, ``key: value`` or ``key value``; ``#`` and
    ``!`` comments; backslash line continuation; escapes ``\\t \\n \\r \\f \\uXXXX`` and ``\\<char>``.
    """
    entries: list[tuple[str, str, str]] = []
    problems: list[ConfigError] = []
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split_key_value(line)
        where = f"{origin}:{number}"
        try:
            entries.append((_unescape(raw_key), _unescape(raw_value), where))
        except Rejected as rejected:
            problems.append(problem(raw_key, raw_value, rejected.accepted, where))
    return entries, problems


def read_properties(text: str, origin: str, env: Mapping[str, str]) -> Layer:
    """A layer from ``.properties`` text; ``${env:VAR}`` references are resolved from ``env``."""
    entries, problems = parse_properties(text, origin)
    layer = Layer(problems=problems)
    for key, value, where in entries:
        _put_resolved(layer, key, RawValue(value, where, key), env)
    return layer


# --- Kafka Connect connector JSON ------------------------------------------------------------------------

_ENVELOPE_KEYS = frozenset({"name", "config", "tasks", "type"})


def read_connector_json(text: str, origin: str, env: Mapping[str, str]) -> Layer:
    """A layer from the JSON posted to Kafka Connect: ``{"name": ..., "config": {...}}`` or the inner object.

    Values may be strings (as Connect stores them) or native JSON scalars, which are turned into the
    text Connect would hold (``true``, ``1024``); a list of scalars is joined with commas; ``null``
    leaves the property unset. The envelope's ``name`` is kept as the ``name`` property.
    """
    duplicates: list[tuple[str, object]] = []
    document = _decode_json(text, origin, duplicates)
    layer = layer_from_mapping(_connector_properties(document, origin), origin, env)
    for key, value in duplicates:
        layer.problems.append(problem(key, value, "each property once (it is given more than once)", origin))
    return layer


def layer_from_mapping(properties: Mapping[str, object], origin: str, env: Mapping[str, str]) -> Layer:
    """A layer from a mapping of property name -> value, converting values as connector JSON does."""
    layer = Layer()
    for key, value in properties.items():
        text_value = _json_text(key, value, origin, layer)
        if text_value is not None:
            _put_resolved(layer, key, RawValue(text_value, origin, key), env)
    return layer


def _decode_json(text: str, origin: str, duplicates: list[tuple[str, object]]) -> object:
    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        result: dict[str, object] = {}
        for key, value in items:
            if key in result:
                duplicates.append((key, value))
            result[key] = value
        return result

    try:
        return json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        where = f"{origin}:{exc.lineno}:{exc.colno}"
        error = ConfigError("(file)", exc.msg, "a JSON object of connector properties", where)
        raise ConfigErrors([error]) from None


def _connector_properties(document: object, origin: str) -> Mapping[str, object]:
    accepted = 'a JSON object: {"name": ..., "config": {...}} or the config object itself'
    if not isinstance(document, dict):
        raise ConfigErrors([ConfigError("(file)", type(document).__name__, accepted, origin)])
    inner = document.get("config")
    if not isinstance(inner, dict):
        return document
    extra = sorted(set(document) - _ENVELOPE_KEYS)
    if extra:
        raise ConfigErrors([ConfigError(extra[0], document[extra[0]], accepted, origin)])
    properties = dict(inner)
    if isinstance(document.get("name"), str):
        properties.setdefault("name", document["name"])
    return properties


def _json_text(key: str, value: object, origin: str, layer: Layer) -> str | None:
    """The Connect-style text of a JSON value, or None (null: unset; unusable: a problem is recorded)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return ",".join(str(item) for item in value)
    layer.problems.append(problem(key, value, "a string, number, boolean, or list of those", origin))
    return None


# --- environment ----------------------------------------------------------------------------------------


def read_env(env: Mapping[str, str]) -> Layer:
    """A layer from ``SIGNALLER_<NAME>`` environment variables (see ``names.env_name``).

    Variables that name no known property are problems (with the nearest known names), except the
    ones listed in ``names.NON_PROPERTY_ENV_NAMES`` / ``NON_PROPERTY_ENV_PREFIXES``.
    """
    layer = Layer()
    for variable, value in sorted(env.items()):
        if not variable.startswith(ENV_PREFIX) or _not_a_property(variable):
            continue
        name = property_for_env(variable)
        if name is None:
            hint = ", ".join(env_suggestions(variable)) or "see signaller.config.fields"
            accepted = f"SIGNALLER_<PROPERTY NAME> for a known property (nearest: {hint})"
            layer.problems.append(problem(variable, value, accepted, f"env:{variable}"))
            continue
        layer.put(name, RawValue(value, f"env:{variable}", name))
    return layer


def _not_a_property(variable: str) -> bool:
    return variable in NON_PROPERTY_ENV_NAMES or variable.startswith(NON_PROPERTY_ENV_PREFIXES)


# --- files ----------------------------------------------------------------------------------------------


def read_file(path: str, env: Mapping[str, str]) -> Layer:
    """A layer from a file: ``.json`` (or content starting with ``{``) is connector JSON, else properties."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigErrors([ConfigError("(file)", path, f"a readable file ({exc.strerror})", path)]) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # what java.util.Properties.load(InputStream) assumes
    suffix = Path(path).suffix.lower()
    if suffix == ".json" or (suffix != ".properties" and text.lstrip()[:1] == "{"):
        return read_connector_json(text, f"connector-json:{path}", env)
    return read_properties(text, path, env)
