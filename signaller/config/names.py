"""Lookups over the declarations: by property name, alias, prefix family and environment variable name."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from types import MappingProxyType

from signaller.config.fields import FAMILIES, PROPERTIES, Family, Prop, Status

ENV_PREFIX = "SIGNALLER_"
OWN_PREFIX = "signaller."
NON_PROPERTY_ENV_PREFIXES = ("SIGNALLER_TEST_", "SIGNALLER_LOG_", "SIGNALLER_SPARK_")
"""Environment variables under these prefixes are not configuration (test gates, logging, the Spark
apply job) and are skipped. Any other ``SIGNALLER_`` variable must name a property: tools around the
sidecar keep their own variables out of its environment (the repository's dev tree does, with
``devtools.env.sidecar_env``)."""
NON_PROPERTY_ENV_NAMES = frozenset({"SIGNALLER_CONFIG", "SIGNALLER_LOG_LEVEL"})
"""Environment variables with these names are read by the CLI, not by the configuration."""


def _by_name() -> Mapping[str, Prop]:
    table: dict[str, Prop] = {}
    for prop in PROPERTIES:
        for name in (prop.name, *prop.aliases):
            if name in table:
                msg = f"property {name!r} is declared twice"
                raise RuntimeError(msg)
            table[name] = prop
    return MappingProxyType(table)


PROPERTY_BY_NAME: Mapping[str, Prop] = _by_name()
"""Every declared property, under its name and under each alias."""

_FAMILIES_LONGEST_FIRST = tuple(sorted(FAMILIES, key=lambda family: -len(family.prefix)))


def declared(name: str) -> Prop | None:
    """The declaration for ``name`` (or one of its aliases), if any."""
    return PROPERTY_BY_NAME.get(name)


def canonical(name: str) -> str:
    """The declared name behind an alias, or ``name`` itself.

    ``bootstrap.servers`` -> ``kafka.bootstrap.servers``.
    """
    prop = PROPERTY_BY_NAME.get(name)
    return prop.name if prop is not None else name


def family_of(name: str) -> Family | None:
    """The longest declared prefix family ``name`` belongs to, if it is not declared itself."""
    if name in PROPERTY_BY_NAME:
        return None
    return next((family for family in _FAMILIES_LONGEST_FIRST if name.startswith(family.prefix)), None)


_MAX_SUGGESTED = 256
"""Names longer than this get no 'did you mean': no declared name is anywhere near that long."""


def is_known(name: str) -> bool:
    """True if ``name`` is a declared property, alias or family member, or the variable of one."""
    return name in PROPERTY_BY_NAME or family_of(name) is not None or (
        name.startswith(ENV_PREFIX) and property_for_env(name) is not None)


def suggestions(name: str) -> list[str]:
    """Declared property names closest to ``name`` (for 'did you mean ...'), best first."""
    if len(name) > _MAX_SUGGESTED:
        return []
    return difflib.get_close_matches(name, list(PROPERTY_BY_NAME), n=3, cutoff=0.6)


def env_name(name: str) -> str:
    """The environment variable for property ``name``: ``SIGNALLER_`` + upper case, '.'/'-' as '_'.

    Signaller's own ``signaller.*`` properties drop their prefix: ``signaller.http.port`` is
    ``SIGNALLER_HTTP_PORT`` (the long form ``SIGNALLER_SIGNALLER_HTTP_PORT`` is accepted too).
    """
    return ENV_PREFIX + re.sub(r"[.\-]", "_", name.removeprefix(OWN_PREFIX)).upper()


def _env_table() -> Mapping[str, str]:
    table: dict[str, str] = {}
    for declared_name, prop in PROPERTY_BY_NAME.items():
        variables = {env_name(declared_name), ENV_PREFIX + re.sub(r"[.\-]", "_", declared_name).upper()}
        for variable in variables:
            if table.setdefault(variable, prop.name) != prop.name:
                msg = f"{variable} would name both {table[variable]!r} and {prop.name!r}"
                raise RuntimeError(msg)
    return MappingProxyType(table)


ENV_NAMES: Mapping[str, str] = _env_table()
"""Environment variable -> declared property name. Built from the declarations, so never ambiguous."""


def property_for_env(variable: str) -> str | None:
    """The property an environment variable sets, or None if it names nothing signaller knows.

    Declared names are matched exactly; variables of a supported pass-through family map back by
    lower-casing and turning '_' into '.' (``SIGNALLER_PRODUCER_LINGER_MS`` -> ``producer.linger.ms``),
    which is right for Kafka client settings, whose names contain no '_'.
    """
    if variable in ENV_NAMES:
        return ENV_NAMES[variable]
    for family in _FAMILIES_LONGEST_FIRST:
        family_var = env_name(family.prefix)
        if family.status is Status.SUPPORTED and variable.startswith(family_var) and variable != family_var:
            return family.prefix + variable.removeprefix(family_var).lower().replace("_", ".")
    return None


def env_suggestions(variable: str) -> list[str]:
    """Known environment variable names closest to ``variable``, best first."""
    if len(variable) > _MAX_SUGGESTED:
        return []
    return difflib.get_close_matches(variable, list(ENV_NAMES), n=3, cutoff=0.6)
