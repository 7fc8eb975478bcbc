"""The MariaDB source's server check (``Catalog.check_binlog``): a server that is not MariaDB is refused with a
clear error before any binlog command (the reader speaks MariaDB's replication dialect), and each missing binlog
setting is named."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from signaller.errors import TerminalSourceError
from signaller.sources.mariadb.catalog import REQUIRED_SETTINGS, Catalog

pytestmark = pytest.mark.unit


class ScriptedCatalog(Catalog):
    """A catalog answering from a script (no connection): ``VERSION()`` and the server variables."""

    def __init__(self, version: str, variables: dict[str, str]) -> None:
        self._version, self._variables = version, variables

    def _query(self, sql: str, args: Sequence[Any] = (), what: str = "catalog query") -> list[tuple[Any, ...]]:
        if sql == "SELECT VERSION()":
            return [(self._version,)]
        return [(name, value) for name, value in self._variables.items() if name in args]


GOOD = {name: ("ON" if value == "1" else value) for name, value in REQUIRED_SETTINGS.items()}


def test_a_mariadb_server_with_every_setting_passes() -> None:
    ScriptedCatalog("10.11.6-MariaDB-0+deb12u1-log", GOOD).check_binlog()


def test_a_mysql_server_is_refused_naming_its_version() -> None:
    with pytest.raises(TerminalSourceError, match=r"not MariaDB \(VERSION\(\) = '8\.0\.36'\).*MySQL servers are not"):
        ScriptedCatalog("8.0.36", GOOD).check_binlog()


def test_each_missing_setting_is_named() -> None:
    name = next(iter(REQUIRED_SETTINGS))
    with pytest.raises(TerminalSourceError, match=f"{name}=unset"):
        ScriptedCatalog("10.11.6-MariaDB", {k: v for k, v in GOOD.items() if k != name}).check_binlog()
