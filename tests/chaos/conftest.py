"""The chaos tier: ``tests/chaos`` runs under ``make chaos-test`` (``CHAOS=1``) and is deselected, not skipped,
otherwise. Why it is not in ``make test`` yet: the two-minute run fails about one run in six on an open bug (a
snapshot READ of a row with a TOASTed column, superseded in its window by an UPDATE that leaves the column
unchanged, is dropped; under ``REPLICA IDENTITY DEFAULT`` that UPDATE carries ``__debezium_unavailable_value``,
so no consumer ever gets the column's value; see the README's chaos section). A test that fails at random in CI
would block every change; it goes back into ``make test`` with the fix."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("CHAOS") == "1":
        return
    chaos = [item for item in items if item.get_closest_marker("chaos")]
    if chaos:
        config.hook.pytest_deselected(items=chaos)
        items[:] = [item for item in items if not item.get_closest_marker("chaos")]
