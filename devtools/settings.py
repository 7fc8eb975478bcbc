"""Where the local stack lives and which ports it uses, declared as data.

Every setting comes from an environment variable with a default; ``compose/docker-compose.yml``
uses the same variable names and defaults, and a test checks that they agree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from signaller.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class StackSettings:
    """Ports, credentials and directories of the local stack.

    ``home`` holds data directories, logs, pid files and copied jars; it defaults to ``.cache/``
    in the repository (git ignores it) so that a second ``make test`` reuses it.
    """

    home: Path = REPO_ROOT / ".cache"
    pg_port: int = 15432
    pg_user: str = "postgres"
    pg_password: str = "postgres"
    pg_db: str = "inventory"
    kafka_port: int = 19092
    kafka_controller_port: int = 19093
    http_port: int = 8089
    registry_port: int = 18081
    registry_db: str = "apicurio"
    mariadb_port: int = 13306
    mariadb_user: str = "root"
    mariadb_password: str = "mariadb"
    mariadb_db: str = "inventory"

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    @property
    def registry_url(self) -> str:
        """The schema registry's Confluent-compatible API: what a client's ``schema.registry.url`` names."""
        return f"http://127.0.0.1:{self.registry_port}/apis/ccompat/v7"

    @property
    def registry_api_url(self) -> str:
        """The schema registry's own (Apicurio v3) API: what Apicurio's serdes and converters name."""
        return f"http://127.0.0.1:{self.registry_port}/apis/registry/v3"

    def pg_dsn(self, dbname: str | None = None) -> str:
        """A libpq connection string for the stack's database (or ``dbname``)."""
        db = dbname or self.pg_db
        return (
            f"host=127.0.0.1 port={self.pg_port} user={self.pg_user} "
            f"password={self.pg_password} dbname={db}"
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StackSettings:
        """Read every setting from its environment variable (see ``ENV_NAMES``)."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for field in fields(cls):
            name = ENV_NAMES.get(field.name)
            if name is None or name not in env:
                continue
            raw = env[name]
            if field.type in ("int", int):
                try:
                    values[field.name] = int(raw)
                except ValueError:
                    raise ConfigError(name, raw, "a TCP port number", origin=f"env:{name}") from None
            elif field.name == "home":
                values[field.name] = Path(raw)
            else:
                values[field.name] = raw
        return cls(**values)  # type: ignore[arg-type]


ENV_NAMES: dict[str, str] = {
    "home": "SIGNALLER_STACK_HOME",
    "pg_port": "SIGNALLER_STACK_PG_PORT",
    "pg_user": "SIGNALLER_STACK_PG_USER",
    "pg_password": "SIGNALLER_STACK_PG_PASSWORD",
    "pg_db": "SIGNALLER_STACK_PG_DB",
    "kafka_port": "SIGNALLER_STACK_KAFKA_PORT",
    "kafka_controller_port": "SIGNALLER_STACK_KAFKA_CONTROLLER_PORT",
    "http_port": "SIGNALLER_STACK_HTTP_PORT",
    "registry_port": "SIGNALLER_STACK_REGISTRY_PORT",
    "registry_db": "SIGNALLER_STACK_REGISTRY_DB",
    "mariadb_port": "SIGNALLER_STACK_MARIADB_PORT",
    "mariadb_user": "SIGNALLER_STACK_MARIADB_USER",
    "mariadb_password": "SIGNALLER_STACK_MARIADB_PASSWORD",
    "mariadb_db": "SIGNALLER_STACK_MARIADB_DB",
}
"""The environment variable of each setting; docker-compose.yml uses the same names."""
