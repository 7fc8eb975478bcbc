"""Collecting configuration problems so that one run reports all of them."""

from __future__ import annotations

from collections.abc import Sequence

from signaller.config.values import shown
from signaller.errors import ConfigError


def problem(key: str, value: object, accepted: str, origin: str | None) -> ConfigError:
    """A ``ConfigError`` whose value is masked when ``key`` names a secret."""
    return ConfigError(key, shown(key, value), accepted, origin)


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
