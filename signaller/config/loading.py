"""Entry points: build a ``SignallerConfig`` from a file plus the environment, or from a mapping."""

from __future__ import annotations

from collections.abc import Mapping

from signaller.config.build import build_config
from signaller.config.model import SignallerConfig
from signaller.config.sources import Layer, layer_from_mapping, read_env, read_file


def load_config(path: str | None, env: Mapping[str, str]) -> SignallerConfig:
    """Load ``path`` (if given) and override it with ``SIGNALLER_*`` variables from ``env``.

    ``path`` ending in ``.json`` (or whose content starts with ``{``) is read as the JSON posted to
    Kafka Connect for a Debezium connector, anything else as a Java ``.properties`` file. ``${env:VAR}``
    references in the file are resolved from ``env``. Every property is validated and all problems are
    raised together as one ``ConfigErrors`` (a ``ConfigError``), each naming the property, the value
    (masked if secret), where it came from and what is accepted.
    """
    file_layer = read_file(path, env) if path is not None else Layer()
    return build_config(file_layer.override(read_env(env)))


def config_from_mapping(
    properties: Mapping[str, object],
    env: Mapping[str, str] | None = None,
    origin: str = "mapping",
) -> SignallerConfig:
    """Build a config from Debezium property names -> values (strings or JSON scalars), e.g. in tests.

    ``env``, when given, is applied as by ``load_config``: it resolves ``${env:VAR}`` and its
    ``SIGNALLER_*`` variables override ``properties``.
    """
    environment = env or {}
    layer = layer_from_mapping(properties, origin, environment)
    return build_config(layer.override(read_env(environment)) if env is not None else layer)
