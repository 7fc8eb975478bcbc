"""The compatibility tier: ``compat_full`` tests (the whole type-by-mode matrix, minutes each) run
under ``make compat-full`` (``COMPAT_FULL=1``) and are deselected, not skipped, otherwise."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("COMPAT_FULL") == "1":
        return
    full = [item for item in items if item.get_closest_marker("compat_full")]
    if full:
        config.hook.pytest_deselected(items=full)
        items[:] = [item for item in items if not item.get_closest_marker("compat_full")]
