"""The two-minute chaos run (issue 17) in ``make test``: the whole pipeline under load with a few faults of
every family (sidecar kill -9, one inside an open snapshot window and one while Kafka is down, apply job kill -9,
broker kill -9, PostgreSQL crash restart, broker outage), on a private stack of its own (``bench.chaos``: own
home directory and ports, so nothing shared is restarted), then the verdict.

It asserts the verdict's zero counts one by one (so a failure names the figure) and that every planned fault
was injected.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos.plan import QUICK
from bench.chaos.run import run

pytestmark = pytest.mark.chaos


def test_quick_chaos_run_loses_nothing(tmp_path: Path) -> None:
    document = run(QUICK, results_dir=tmp_path)
    chaos, failures = document["chaos"], document["verdict"]["failures"]
    for kind, counts in document["faults"]["counts"].items():
        assert counts["injected"] == counts["planned"], (kind, counts, failures)
    assert chaos["rows_compared"] > 0
    for name in ("lost_rows", "stale_rows", "mismatched_rows", "checksum_differences", "lost_signals",
                 "failed_scans"):
        assert chaos[name] == 0, (name, chaos[name], failures, document["tables"])
    assert document["signals"]["acknowledged"] > 0
    assert document["converge_s"]["after_writes"] is not None, failures
    assert document["verdict"]["ok"], failures
