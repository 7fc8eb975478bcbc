"""Collecting configuration problems so that one run reports all of them, without leaking values.

A problem names the property as written, the value, where it came from and what is accepted. The
value is repeated only when it is safe and useful: it is masked when the name looks secret
(``secrets.is_secret_name``) and when the name is unknown (a misspelt ``database.pasword`` is as
secret as the real one, and an unknown name's value never helps to explain that the name is unknown).
Names and origins are escaped to one printable line; long values are cut.
"""

from __future__ import annotations

from collections.abc import Sequence

from signaller.config.names import is_known
from signaller.config.secrets import MASK, clip, is_secret_name, printable
from signaller.config.values import Secret
from signaller.errors import ConfigError


class Shape:
    """A value already rendered safe for display (e.g. a nested JSON object with its leaves masked)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def displayed(key: str, value: object) -> object:
    """``value`` as a message may show it for property (or environment variable) ``key``."""
    if value is None or isinstance(value, Shape):
        return value
    if isinstance(value, Secret) or is_secret_name(key) or not is_known(key):
        return MASK
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, int) and value.bit_length() > 64:
        return Shape(f"(an integer of {value.bit_length()} bits)")
    if isinstance(value, bool | int | float):
        return value
    return MASK


def problem(key: str, value: object, accepted: str, origin: str | None) -> ConfigError:
    """A ``ConfigError`` for ``key``, its value shown by ``displayed`` and its names made printable."""
    return ConfigError(printable(key), displayed(key, value), accepted, None if origin is None else printable(origin))


class ConfigErrors(ConfigError):
    """Every problem found in one configuration, each a ``ConfigError`` naming key, value, origin, accepted.

    ``key``/``value``/``accepted``/``origin`` repeat the first problem so that code written for a single
    ``ConfigError`` still reads something sensible; ``errors`` holds them all, in the order found.
    """

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        if not errors:
            msg = "ConfigErrors needs at least one error"
            raise ValueError(msg)
        self.errors = tuple(errors)
        first = self.errors[0]
        super().__init__(first.key, first.value, first.accepted, first.origin)
        count = len(self.errors)
        lines = "\n".join(f"  - {error}" for error in self.errors)
        self.args = (f"{count} configuration problem{'s' if count > 1 else ''}:\n{lines}",)


def raise_if_any(errors: Sequence[ConfigError]) -> None:
    """Raise ``ConfigErrors`` when ``errors`` is not empty."""
    if errors:
        raise ConfigErrors(errors)
