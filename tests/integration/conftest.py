"""Fixtures of the integration tier."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devtools import StackSettings
from tests.integration.capture_helpers import CaptureEnv, capture_env


@pytest.fixture
def capture(stack: StackSettings, unique_name: str, tmp_path: Path) -> Iterator[CaptureEnv]:
    """Unique table/slot/publication/topic-prefix/offsets names for one test; at teardown every sidecar
    it started is killed and its slots, publications, tables, types and topics are dropped."""
    with capture_env(stack, unique_name, tmp_path) as env:
        yield env
