"""The local stack's and the benchmarks' variables are the dev tree's business, not the sidecar's."""

from __future__ import annotations

import pytest

from devtools.env import DEV_ENV_PREFIXES, sidecar_env
from devtools.settings import ENV_NAMES
from signaller.config import load_config
from signaller.config import names as config_names
from signaller.errors import ConfigError

pytestmark = pytest.mark.unit

BASE = {"SIGNALLER_TOPIC_PREFIX": "pg1", "SIGNALLER_DATABASE_HOSTNAME": "db.internal",
        "SIGNALLER_DATABASE_USER": "u", "SIGNALLER_DATABASE_DBNAME": "d", "SIGNALLER_SLOT_NAME": "s",
        "SIGNALLER_KAFKA_BOOTSTRAP_SERVERS": "k:9092"}


def test_the_product_does_not_know_the_dev_prefixes() -> None:
    """config/names.py skips only the product's own non-property variables; the stack's and the
    benchmarks' are an unknown SIGNALLER_ variable like any other (a typo would look the same)."""
    for prefix in DEV_ENV_PREFIXES:
        assert not any(prefix.startswith(own) or own.startswith(prefix)
                       for own in config_names.NON_PROPERTY_ENV_PREFIXES), prefix
    with pytest.raises(ConfigError, match="SIGNALLER_STACK_HOME"):
        load_config(None, {**BASE, "SIGNALLER_STACK_HOME": "/tmp/stack"})


def test_every_stack_variable_is_under_a_dev_prefix() -> None:
    assert all(name.startswith(DEV_ENV_PREFIXES) for name in ENV_NAMES.values())


def test_sidecar_env_leaves_out_the_dev_variables_and_keeps_the_rest() -> None:
    base = {**BASE, "SIGNALLER_STACK_HOME": "/tmp/stack", "SIGNALLER_STACK_PG_PORT": "1",
            "SIGNALLER_BENCH_ROWS": "5", "SIGNALLER_CHAOS_PG_PORT": "26432", "SIGNALLER_LOG_FORMAT": "json",
            "PATH": "/usr/bin"}
    env = sidecar_env(base, SIGNALLER_LOG_FORMAT="text")
    assert env == {**BASE, "SIGNALLER_LOG_FORMAT": "text", "PATH": "/usr/bin"}
    assert load_config(None, env).topics.prefix == "pg1"


def test_sidecar_env_refuses_to_set_a_dev_variable() -> None:
    with pytest.raises(ValueError, match="SIGNALLER_STACK_HOME"):
        sidecar_env({}, SIGNALLER_STACK_HOME="/tmp/stack")


def test_every_chaos_port_variable_is_under_a_dev_prefix() -> None:
    """The chaos run's port variables share the sidecar's namespace; a sidecar started beside them (a test
    session running the chaos tier and the capture tests under moved ports) must never see them."""
    from bench.chaos.private_stack import PORT_ENV

    assert all(name.startswith(DEV_ENV_PREFIXES) for name in PORT_ENV.values())
    env = sidecar_env({**BASE, **{name: "26432" for name in PORT_ENV.values()}})
    assert load_config(None, env).topics.prefix == "pg1"
