"""docker-compose.yml describes the same stack as the local one: same variable names, ports and
credentials as ``StackSettings``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from devtools import registry
from devtools.env import dev_variables
from devtools.settings import ENV_NAMES, REPO_ROOT, StackSettings
from signaller.config import load_config

pytestmark = pytest.mark.unit
COMPOSE = REPO_ROOT / "compose" / "docker-compose.yml"
REQUIRED = {"SIGNALLER_TOPIC_PREFIX": "pg1", "SIGNALLER_DATABASE_USER": "u", "SIGNALLER_DATABASE_DBNAME": "d",
            "SIGNALLER_SLOT_NAME": "s"}
"""What the mounted connector.json would give; the rest comes from the service's environment."""


def load() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load(Path(COMPOSE).read_text())


def test_stack_environment_matches_local_defaults() -> None:
    env = load()["x-stack-env"]
    defaults = StackSettings()
    for field, name in ENV_NAMES.items():
        if field == "home":
            continue
        assert name in env, f"{name} missing from x-stack-env in docker-compose.yml"
        assert str(env[name]) == str(getattr(defaults, field)), f"{name} differs from the local default"


def test_services_publish_the_local_ports() -> None:
    compose = load()
    defaults = StackSettings()
    services = compose["services"]
    assert f"{defaults.pg_port}:{defaults.pg_port}" in services["postgres"]["ports"]
    assert "wal_level=logical" in services["postgres"]["command"]
    assert f"{defaults.kafka_port}:{defaults.kafka_port}" in services["kafka"]["ports"]
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert f"{defaults.http_port}:{defaults.http_port}" in services["signaller"]["ports"]
    pg_env = services["postgres"]["environment"]
    assert (pg_env["POSTGRES_USER"], pg_env["POSTGRES_PASSWORD"], pg_env["POSTGRES_DB"]) == (
        defaults.pg_user, defaults.pg_password, defaults.pg_db)


def test_kafka_image_matches_the_broker_version_maven_resolves() -> None:
    pom = (REPO_ROOT / "compose" / "local" / "kafka" / "pom.xml").read_text()
    version = pom.split("<kafka.version>")[1].split("<")[0]
    assert load()["services"]["kafka"]["image"] == f"apache/kafka:{version}"


def test_the_sidecar_service_gets_no_dev_variables() -> None:
    """The sidecar rejects SIGNALLER_ variables that name no property; the stack's are the dev tree's."""
    environment = load()["services"]["signaller"]["environment"]
    assert dev_variables({str(name): str(value) for name, value in environment.items()}) == []
    config = load_config(None, {**{str(k): str(v) for k, v in environment.items()}, **REQUIRED})
    assert config.kafka.bootstrap_servers == "kafka:19092"


def test_registry_service_matches_the_local_registry() -> None:
    """Same Apicurio version, port, SQL storage in the stack's PostgreSQL (its own database, created by the
    init script) and BACKWARD compatibility as ``devtools/registry.py``."""
    defaults = StackSettings()
    services = load()["services"]
    service = services["registry"]
    assert service["image"] == f"apicurio/apicurio-registry:{registry.VERSION}"
    assert f"{defaults.registry_port}:{defaults.registry_port}" in service["ports"]
    env = service["environment"]
    assert env["QUARKUS_HTTP_PORT"] == str(defaults.registry_port)
    local = registry.server_properties(defaults)
    for key in ("apicurio.storage.kind", "apicurio.storage.sql.kind", "apicurio.datasource.username",
                "apicurio.datasource.password"):
        assert env[key.upper().replace(".", "_")] == local[key], key
    assert env["APICURIO_DATASOURCE_URL"] == f"jdbc:postgresql://postgres:{defaults.pg_port}/{defaults.registry_db}"
    assert env["APICURIO_RULES_GLOBAL_COMPATIBILITY"] == registry.DEFAULT_COMPATIBILITY.value
    init = (COMPOSE.parent / "postgres-init" / "10-registry-database.sql").read_text()
    assert f"CREATE DATABASE {defaults.registry_db};" in init
    assert "./postgres-init:/docker-entrypoint-initdb.d:ro" in services["postgres"]["volumes"]


def test_mariadb_service_matches_the_local_server() -> None:
    from devtools.mariadb import SERVER_SETTINGS

    service = load()["services"]["mariadb"]
    defaults = StackSettings()
    assert f"{defaults.mariadb_port}:{defaults.mariadb_port}" in service["ports"]
    env = service["environment"]
    assert (env["MARIADB_ROOT_PASSWORD"], env["MARIADB_DATABASE"]) == (defaults.mariadb_password, defaults.mariadb_db)
    flags = {arg.split("=", 1)[0].lstrip("-").replace("-", "_"): arg.split("=", 1)[1] for arg in service["command"]}
    assert flags["port"] == str(defaults.mariadb_port)
    for name in ("binlog_format", "binlog_row_image", "server_id", "log_bin", "gtid_strict_mode"):
        local = SERVER_SETTINGS[name.replace("_", "-")] if name in ("server_id", "log_bin") else SERVER_SETTINGS[name]
        assert flags[name] == local, f"{name}: compose {flags[name]!r}, local {local!r}"
