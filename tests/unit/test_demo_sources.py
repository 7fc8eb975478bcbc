"""The demo's sources: which source/format pairs ``python -m devtools demo`` accepts, and the MariaDB demo's and
the README's MariaDB connector JSON being configurations the sidecar accepts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from devtools import StackSettings
from devtools.demo import source_format_error
from devtools.demo_mariadb import connector_config
from signaller.config import config_from_mapping

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("source", "fmt", "refused"), [
    ("postgres", "json", None), ("postgres", "avro", None), ("mariadb", "json", None),
    ("mariadb", "avro", "format 'avro' is not available with source mariadb yet (json only)"),
    ("oracle", "json", "source 'oracle' is not one of postgres, mariadb"),
    ("postgres", "xml", "format 'xml' is not one of json, avro"),
])
def test_the_demo_accepts_each_source_with_its_formats(source: str, fmt: str, refused: str | None) -> None:
    assert source_format_error(source, fmt) == refused


def test_the_mariadb_demo_config_is_a_binlog_connector_the_sidecar_accepts(tmp_path: Path) -> None:
    settings = StackSettings()
    config = connector_config(settings, tmp_path)["config"]
    cfg = config_from_mapping(config)
    assert cfg.connector.connector_class == "io.debezium.connector.mariadb.MariaDbConnector"
    assert not cfg.ignored_properties
    db = settings.mariadb_db
    assert config["table.include.list"] == f"{db}.demo_orders,{db}.demo_orders_signal"
    assert config["signal.data.collection"] == f"{db}.demo_orders_signal" and config["read.only"] == "false"
    assert config["database.port"] == str(settings.mariadb_port)


def test_the_readme_mariadb_example_is_a_configuration_the_sidecar_accepts() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## MariaDB / MySQL source")
    section = text[start:text.index("\n## ", start + 1)]
    (block,) = re.findall(r"```json\n(.*?)```", section, re.DOTALL)
    config = json.loads(block)["config"]
    config["database.password"] = "secret"  # the example reads it from the environment
    cfg = config_from_mapping(config)
    assert cfg.connector.connector_class == "io.debezium.connector.mariadb.MariaDbConnector"
    assert not cfg.ignored_properties
