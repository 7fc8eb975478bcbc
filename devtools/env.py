"""The environment the dev tree gives a sidecar: the shell's, without the dev tree's own variables.

The local stack reads ``SIGNALLER_STACK_*`` (:data:`devtools.settings.ENV_NAMES`), the benchmarks
``SIGNALLER_BENCH_*`` and the chaos run's private stack ``SIGNALLER_CHAOS_*`` (its ports). They share
the sidecar's ``SIGNALLER_`` namespace, but the sidecar does not know them (``signaller.config.names``
skips only the product's own non-property variables): to it, ``SIGNALLER_STACK_HOME`` is an unknown
variable, reported like a misspelt property. So everything in this repository that starts a sidecar or
loads its configuration from the environment (the tests' ``Sidecar``, the benchmarks' ``Sidecar``, the
demo, ``signaller signal --config`` in tests) passes :func:`sidecar_env` instead of ``os.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

DEV_ENV_PREFIXES = ("SIGNALLER_STACK_", "SIGNALLER_BENCH_", "SIGNALLER_CHAOS_")
"""Variables of the local stack, the benchmarks and the chaos run: never configuration of a sidecar."""


def dev_variables(env: Mapping[str, str] | None = None) -> list[str]:
    """The names in ``env`` (default: ``os.environ``) under :data:`DEV_ENV_PREFIXES`, sorted."""
    source = os.environ if env is None else env
    return sorted(name for name in source if name.startswith(DEV_ENV_PREFIXES))


def sidecar_env(base: Mapping[str, str] | None = None, **overrides: str) -> dict[str, str]:
    """``base`` (default: ``os.environ``) without the dev tree's variables, then ``overrides``.

    Raises ``ValueError`` if an override is itself a dev variable: a sidecar would reject it.
    """
    refused = dev_variables(overrides)
    if refused:
        msg = f"{', '.join(refused)}: variables of the dev tree, not of a sidecar (prefixes {DEV_ENV_PREFIXES})"
        raise ValueError(msg)
    source = os.environ if base is None else base
    return {**{k: v for k, v in source.items() if not k.startswith(DEV_ENV_PREFIXES)}, **overrides}
