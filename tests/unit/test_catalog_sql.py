"""Catalog statements that carry names quote them fully and go to the driver without parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from signaller.model import TableId
from signaller.sources.postgres.catalog import Catalog

pytestmark = pytest.mark.unit


class _Recording(Catalog):
    def __init__(self) -> None:  # no connection: only the statements are looked at
        self.statements: list[tuple[str, Sequence[Any]]] = []

    def _rows(self, sql: str, params: Sequence[Any] = (), doing: str = "") -> list[tuple[Any, ...]]:
        self.statements.append((sql, params))
        return []  # the publication does not exist yet


def test_publication_names_and_tables_with_quotes_and_percent_are_quoted() -> None:
    catalog = _Recording()
    catalog.ensure_publication('pub"%s', "filtered", [TableId("sch%", 'ta"ble'), TableId("public", "x%y")])
    create, params = catalog.statements[-1]
    assert create == 'CREATE PUBLICATION "pub""%s" FOR TABLE "sch%"."ta""ble", "public"."x%y"'
    assert not params
    catalog.ensure_publication('all"%', "all_tables", [])
    assert catalog.statements[-1] == ('CREATE PUBLICATION "all""%" FOR ALL TABLES', ())
