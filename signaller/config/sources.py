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
from signaller.config.problems import ConfigErrors, Shape, displayed, problem
from signaller.config.secrets import MASK, clip, is_secret_name, printable
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
        """Set ``name`` (alias-resolved). Repeats overwrite, as in Java; an alias clash is a problem.

        A name or value that is not text a program can pass on (a lone surrogate from ``\\uD800`` or
        from undecodable bytes in the environment, a NUL character) is a problem, not a value.
        """
        unusable = _unusable(name) or _unusable(raw.text)
        if unusable:
            self.problems.append(problem(name, raw.text, unusable, raw.origin))
            return
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


def _unusable(text: str) -> str | None:
    """Why ``text`` cannot be a property name or value, or None if it can."""
    if "\x00" in text:
        return "text without NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return ("valid Unicode text (it holds a lone surrogate: undecodable bytes, or a \\uD800-\\uDFFF "
                "escape without its pair)")
    return None


# --- config provider references ---------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Reference:
    """One ``${provider:[path:]key}`` in a value: where it is and its parts."""

    start: int
    end: int
    provider: str
    path: str | None
    key: str


def _references(text: str) -> Iterator[_Reference]:
    """Every reference in ``text``, read as Kafka's ``ConfigTransformer`` pattern
    ``\\$\\{([^}]*?):(?:([^}]*?):)?([^}]*?)\\}`` reads it, but in linear time (that pattern backtracks
    cubically on a long value without ``}``)."""
    start = text.find("${")
    while start != -1:
        end = text.find("}", start + 2)
        if end == -1:
            return
        body = text[start + 2:end]
        provider, colon, rest = body.partition(":")
        if colon:
            path, second, key = rest.partition(":")
            yield _Reference(start, end + 1, provider, path if second else None, key if second else rest)
        start = text.find("${", end + 1)


def resolve_references(name: str, raw: RawValue, env: Mapping[str, str]) -> RawValue:
    """``raw`` with every ``${env:VAR}`` replaced from ``env``; other providers raise ``ConfigError``.

    Kafka Connect resolves these references in the worker; signaller supports only the ``env``
    provider (Kafka's ``EnvVarConfigProvider``), read from ``env``. Parts of a secret's value (a
    provider or variable name) are not repeated in the error.
    """
    pieces: list[str] = []
    used: list[str] = []
    done = 0
    for reference in _references(raw.text):
        pieces.append(raw.text[done:reference.start])
        pieces.append(_resolved(name, raw, reference, env))
        used.append(reference.key)
        done = reference.end
    if not used:
        return raw
    pieces.append(raw.text[done:])
    origin = f"{raw.origin} via " + ", ".join(f"${{env:{clip(key)}}}" for key in used)
    return RawValue("".join(pieces), origin, raw.written)


_KNOWN_PROVIDERS = frozenset({"env", "file", "directory", "vault", "aws", "azure", "gcp", "secretsmanager",
                               "ssm", "k8s", "kubernetes"})
"""Config provider names that can be named in an error about a secret (not fragments of its value)."""


def _resolved(name: str, raw: RawValue, reference: _Reference, env: Mapping[str, str]) -> str:
    secret = is_secret_name(name)
    if reference.provider != "env" or reference.path:
        named = not secret or reference.provider in _KNOWN_PROVIDERS
        provider = f"the config provider {clip(reference.provider)!r}" if named else "a config provider"
        accepted = (f"a literal value or ${{env:NAME}}; {provider} is not supported: resolve it before "
                    "starting signaller, or set it through SIGNALLER_*")
        raise problem(name, raw.text, accepted, raw.origin)
    if reference.key not in env:
        variable = "the environment variable it names" if secret else f"the environment variable {clip(reference.key)}"
        raise problem(name, raw.text, f"{variable} to be set", raw.origin)
    return env[reference.key]


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
    Linear in the size of ``text``: every physical line is looked at once.
    """
    lines = re.split(r"\r\n|\r|\n", text)
    index = 0
    while index < len(lines):
        number, line = index + 1, lines[index].lstrip(_BLANK)
        index += 1
        if not line or line[0] in "#!":
            continue
        parts: list[str] = []
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            parts.append(line[:-1])
            line = lines[index].lstrip(_BLANK) if index < len(lines) else ""
            index += 1
        parts.append(line)
        yield number, "".join(parts)


_KEY_END = re.compile(r"(?:[^=: \t\f\\]+|\\[\s\S]?)*+")
"""A key: everything up to the first unescaped ``=``, ``:`` or blank (possessive: linear)."""


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped ``=``, ``:`` or blank (then one optional ``=``/``:``)."""
    match = _KEY_END.match(line)
    index = match.end() if match is not None else 0
    key, rest = line[:index], line[index:]
    if rest[:1] in ("=", ":"):
        return key, rest[1:].lstrip(_BLANK)
    rest = rest.lstrip(_BLANK)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANK)
    return key, rest


_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[\s\S])?")
_SURROGATE = re.compile("[\ud800-\udfff]")
_BAD_UNICODE = ("\\uXXXX escapes with four hexadecimal digits that form characters (a surrogate such as "
                "\\uD83D must be followed by its pair, e.g. \\uDE00)")


def _unescape_one(match: re.Match[str]) -> str:
    escaped = match.group(1)
    if escaped is None:
        return ""
    if len(escaped) == 5:
        return chr(int(escaped[1:], 16))
    if escaped == "u":
        raise Rejected(_BAD_UNICODE)
    return _ESCAPES.get(escaped, escaped)


def _unescape(text: str) -> str:
    """Resolve ``\\t \\n \\r \\f \\uXXXX`` and ``\\x`` -> ``x``; raises ``Rejected`` on a bad ``\\u``.

    UTF-16 surrogate pairs written as two escapes become one character, as in Java; a lone surrogate
    is refused (it is no character, and no UTF-8 text can carry it on).
    """
    if "\\" not in text:
        return text
    out = _ESCAPE.sub(_unescape_one, text)
    if _SURROGATE.search(out) is None:
        return out
    try:
        return out.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise Rejected(_BAD_UNICODE) from None


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
    leaves the property unset. The envelope's ``name`` is kept as the ``name`` property. Keys beside
    the envelope and nested objects are problems that show their structure, never a secret's value.
    """
    duplicates: list[tuple[str, object]] = []
    document = _decode_json(text, origin, duplicates)
    properties, stray = _connector_properties(document, origin)
    layer = layer_from_mapping(properties, origin, env)
    layer.problems[:0] = stray
    for key, value in duplicates:
        layer.problems.append(problem(key, _safe(key, value), "each property once (it is given more than once)",
                                      origin))
    return layer


def layer_from_mapping(properties: Mapping[str, object], origin: str, env: Mapping[str, str]) -> Layer:
    """A layer from a mapping of property name -> value, converting values as connector JSON does."""
    layer = Layer()
    for key, value in properties.items():
        if not isinstance(key, str):
            layer.problems.append(problem(repr(key), value, "property names that are strings", origin))
            continue
        text_value = _json_text(key, value, origin, layer)
        if text_value is not None:
            _put_resolved(layer, key, RawValue(text_value, origin, key), env)
    return layer


_MAX_JSON_INT_DIGITS = 40
"""Longer JSON integers are kept as their text: no property takes them, and ``int()`` of a huge one fails."""


def _json_int(text: str) -> int | str:
    return int(text) if len(text) <= _MAX_JSON_INT_DIGITS else text


def _decode_json(text: str, origin: str, duplicates: list[tuple[str, object]]) -> object:
    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        result: dict[str, object] = {}
        for key, value in items:
            if key in result:
                duplicates.append((key, value))
            result[key] = value
        return result

    accepted = "a JSON object of connector properties"
    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        where = f"{origin}:{exc.lineno}:{exc.colno}"
        raise ConfigErrors([ConfigError("(file)", exc.msg, accepted, printable(where))]) from None
    except RecursionError:
        value = "JSON nested too deeply to read"
        raise ConfigErrors([ConfigError("(file)", value, f"{accepted} (two levels: the envelope and its "
                                        "config)", printable(origin))]) from None


_ENVELOPE_ACCEPTED = ('a JSON object: {"name": ..., "config": {...}} or the config object itself; beside '
                     '"config" only name, tasks and type are allowed (move properties into "config")')


def _connector_properties(document: object, origin: str) -> tuple[Mapping[str, object], list[ConfigError]]:
    """The properties of a connector JSON document, and a problem for each stray key beside ``config``."""
    if not isinstance(document, dict):
        shape = type(document).__name__
        raise ConfigErrors([ConfigError("(file)", shape, _ENVELOPE_ACCEPTED, printable(origin))])
    inner = document.get("config")
    if not isinstance(inner, dict):
        return document, []
    stray = [problem(key, _safe(key, document[key]), _ENVELOPE_ACCEPTED, origin)
             for key in document if key not in _ENVELOPE_KEYS]
    properties = dict(inner)
    if isinstance(document.get("name"), str):
        properties.setdefault("name", document["name"])
    return properties, stray


_SHAPE_DEPTH = 3
_SHAPE_ITEMS = 8


def _safe(key: str, value: object) -> object:
    """A JSON value ready for ``problem``: scalars as they are, containers as a masked ``Shape``."""
    return Shape(_shape(value, key, 0)) if isinstance(value, dict | list) else value


def _shape(value: object, path: str, depth: int) -> str:
    """``value`` drawn as JSON with its names, each scalar masked unless ``path`` names a known
    non-secret property; at most ``_SHAPE_DEPTH`` levels and ``_SHAPE_ITEMS`` items per level."""
    if isinstance(value, dict):
        if depth >= _SHAPE_DEPTH:
            return "{...}"
        items = [f'"{printable(clip(str(key)))}": {_shape(item, f"{path}.{key}", depth + 1)}'
                 for key, item in list(value.items())[:_SHAPE_ITEMS]]
        return "{" + ", ".join(items + (["..."] if len(value) > _SHAPE_ITEMS else [])) + "}"
    if isinstance(value, list):
        if depth >= _SHAPE_DEPTH:
            return "[...]"
        shown_items = [_shape(item, path, depth + 1) for item in value[:_SHAPE_ITEMS]]
        return "[" + ", ".join(shown_items + (["..."] if len(value) > _SHAPE_ITEMS else [])) + "]"
    shown_value = displayed(path, value)
    if shown_value == MASK or isinstance(shown_value, Shape):
        return repr(shown_value)
    return printable(json.dumps(shown_value, ensure_ascii=False))


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
    accepted = ("a string, number, boolean, or list of those (write a nested object's keys as dotted "
                "names: database.password)")
    layer.problems.append(problem(key, _safe(key, value), accepted, origin))
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
        shown_path = printable(path)
        accepted = f"a readable file ({exc.strerror})"
        raise ConfigErrors([ConfigError("(file)", shown_path, accepted, shown_path)]) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")  # what java.util.Properties.load(InputStream) assumes
    suffix = Path(path).suffix.lower()
    if suffix == ".json" or (suffix != ".properties" and text.lstrip()[:1] == "{"):
        return read_connector_json(text, f"connector-json:{path}", env)
    return read_properties(text, path, env)
