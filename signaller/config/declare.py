"""The vocabulary of property declarations: what a property is (``Prop``) and how a section field declares one.

A supported property is declared exactly once, as a field of a typed section (``sections.py``)::

    @section
    class DatabaseSection:
        port: int = setting("database.port", Kind.INT, "5432", "PostgreSQL port.", check=p.in_range(1, 65535))

The field's type is the typed value's type; ``setting``/``choice``/``channel_list`` put the ``Prop`` (name,
kind, default as text, doc, parser, check, aliases) into the field's metadata under ``PROPERTY``, where
``fields.PROPERTIES`` and the builder find it. Properties signaller only accepts or refuses have no field:
``accepted``/``refused`` declare them directly (``fields.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import Field, dataclass, field
from enum import StrEnum
from typing import Any, TypeVar, dataclass_transform

from signaller.config import parsing as p


class Kind(StrEnum):
    """The shape of a property's value."""

    STR = "str"
    INT = "int"
    BOOL = "bool"
    ENUM = "enum"
    LIST = "list"
    REGEX_LIST = "regex-list"
    SECRET = "secret"


class Status(StrEnum):
    """What signaller does with a property.

    * ``supported``: parsed, validated and exposed as a typed field of a configuration section.
    * ``accepted``: a Debezium/Connect property that means nothing to a sidecar or is not implemented yet;
      it is ignored with a logged warning, so an existing connector configuration still loads.
    * ``refused``: a Debezium property whose silent omission would change what is published (masking,
      transforms); setting it to anything but empty is an error that explains why.
    """

    SUPPORTED = "supported"
    ACCEPTED = "accepted"
    REFUSED = "refused"


_KIND_PARSERS: Mapping[Kind, p.Parser] = {
    Kind.STR: p.parse_str,
    Kind.INT: p.parse_int,
    Kind.BOOL: p.parse_bool,
    Kind.LIST: p.parse_list,
    Kind.REGEX_LIST: p.parse_regex_list,
    Kind.SECRET: p.parse_secret,
}


@dataclass(frozen=True, slots=True)
class Prop:
    """One property: its Debezium name, value shape, status, default (as text) and validation.

    ``default`` is the text a user would write (``None``: unset, or derived from other properties as
    ``doc`` says). ``parser`` overrides the kind's parser; ``check`` validates the parsed value.
    ``aliases`` are other names for the same property (Connect's worker name ``bootstrap.servers``).
    ``Kind.SECRET`` marks a secret; an enum's parser knows its accepted values.
    """

    name: str
    kind: Kind
    status: Status
    doc: str
    default: str | None = None
    required: bool = False
    parser: p.Parser | None = None
    check: p.Check | None = None
    aliases: tuple[str, ...] = ()

    def parse(self, text: str) -> object:
        """The typed value of ``text``; raises ``parsing.Rejected`` naming what is accepted."""
        parser = self.parser or _KIND_PARSERS[self.kind]
        value = parser(text)
        if self.check is not None and value is not None:
            self.check(value)
        return value


@dataclass(frozen=True, slots=True)
class Family:
    """Properties sharing a prefix, e.g. ``producer.*`` passed through to the Kafka producer."""

    prefix: str
    status: Status
    doc: str


PROPERTY = "signaller.config.property"
"""The key of a section field's metadata holding its ``Prop``."""


def property_of(item: Field[Any]) -> Prop | None:
    """The property a section field declares, or None for a field that declares none."""
    prop = item.metadata.get(PROPERTY)
    return prop if isinstance(prop, Prop) else None


def _declares(prop: Prop) -> Any:
    """A dataclass field (without a default: the builder always supplies the value) declaring ``prop``."""
    return field(metadata={PROPERTY: prop})


def setting(
    name: str,
    kind: Kind,
    default: str | None,
    doc: str,
    /,
    *,
    required: bool = False,
    parser: p.Parser | None = None,
    check: p.Check | None = None,
    aliases: tuple[str, ...] = (),
) -> Any:
    """A section field declaring the supported property ``name`` (``default`` as text, None: unset)."""
    return _declares(Prop(name, kind, Status.SUPPORTED, doc, default, required, parser, check, aliases))


def choice(
    name: str,
    choices: type[StrEnum],
    default: str,
    doc: str,
    /,
    *,
    unsupported: Mapping[str, str] | None = None,
    aliases: Mapping[str, str] | None = None,
) -> Any:
    """A section field declaring an enum property; ``unsupported`` maps Debezium values signaller refuses to why.

    ``aliases`` maps other spellings of a value to the value (``never`` -> ``no_data``).
    """
    parser = p.enum_parser(choices, unsupported or {}, aliases or {})
    return _declares(Prop(name, Kind.ENUM, Status.SUPPORTED, doc, default, parser=parser))


def channel_list(
    name: str, choices: type[StrEnum], default: str, doc: str, /, *, unsupported: Mapping[str, str]
) -> Any:
    """A section field declaring a comma-separated list of channel names, each one of ``choices``."""
    parser = p.enum_list_parser(choices, unsupported)
    return _declares(Prop(name, Kind.LIST, Status.SUPPORTED, doc, default, parser=parser))


def accepted(reason: str, *names: str) -> tuple[Prop, ...]:
    """Declare Debezium/Connect properties that are ignored with a warning giving ``reason``."""
    return tuple(Prop(name, Kind.STR, Status.ACCEPTED, reason) for name in names)


def refused(reason: str, *names: str) -> tuple[Prop, ...]:
    """Declare Debezium properties that are an error when set, explaining ``reason``."""
    return tuple(Prop(name, Kind.STR, Status.REFUSED, reason) for name in names)


_SectionT = TypeVar("_SectionT")


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(setting, choice, channel_list))
def section(cls: type[_SectionT]) -> type[_SectionT]:
    """Make ``cls`` a configuration section: a frozen, keyword-only dataclass whose fields declare properties.

    Every field must be declared with ``setting``/``choice``/``channel_list`` (``sections.SETTINGS`` refuses
    a field without a property); the builder passes every value, so no field has a dataclass default.
    """
    return dataclass(frozen=True, kw_only=True)(cls)
