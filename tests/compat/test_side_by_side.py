"""The sidecar emits what Debezium emits: one DDL + DML script and the same execute-snapshot
signals (through each one's signalling table), run against Debezium's PostgreSQL connector in Kafka
Connect and the sidecar at the same time, compared event by event (``tests.compat.compare``).

Every difference must be covered by the allow-list (``compare.ALLOWED``, the README's "Differences
from Debezium"). Both outputs are written to the test's temporary directory for inspection.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools import StackSettings
from tests.compat import scenario
from tests.compat.compare import Renames, compare, report, unexplained
from tests.integration.capture_helpers import capture_env

pytestmark = pytest.mark.compat


def _ops(output: scenario.SideOutput, kind: str) -> list[str | None]:
    topic = next(t for t in output.topics if t.endswith(kind))
    return [None if r.value is None else r.payload.get("op") for r in output.topics[topic]]


def test_sidecar_output_matches_debezium_event_by_event(stack: StackSettings, unique_name: str,
                                                         tmp_path: Path) -> None:
    with capture_env(stack, unique_name, tmp_path) as env:
        debezium, signaller = scenario.run(env, tmp_path)
    dumps = {side.names.prefix: scenario.dump(side) for side in (debezium, signaller)}
    (tmp_path / "outputs.json").write_text(json.dumps(dumps, indent=1))

    differences = compare(
        scenario.dump(debezium), scenario.dump(signaller),
        Renames(debezium.names.prefix, debezium.names.signal_table),
        Renames(signaller.names.prefix, signaller.names.signal_table),
    )
    left = unexplained(differences)
    assert not left, f"{report(left)}\n(both outputs: {tmp_path / 'outputs.json'})"

    # The comparison covered what the script produces, not two empty topics.
    types_ops = _ops(debezium, f"public.cmp_types_{unique_name}")
    assert {"c", "u", "d", "r", None} <= set(types_ops), types_ops  # None: a tombstone
    assert types_ops.count("r") == 8 + 5  # snap-1 (all rows) + snap-2 (filtered)
    assert _ops(debezium, f"public.cmp_comp_{unique_name}").count("r") == 8
    edge_ops = _ops(debezium, f"public.cmp_edge_{unique_name}")
    assert edge_ops.count("u") == 4 and edge_ops.count("d") == 1 and edge_ops.count("r") == 5, edge_ops
    notifications = [r.payload for r in next(v for t, v in debezium.topics.items() if t.endswith(".notifications"))]
    assert [n["id"] for n in notifications if n["type"] == "COMPLETED"] == ["snap-1", "snap-2", "snap-3"]
    assert any(n["additional_data"].get("status") == "NO_PRIMARY_KEY" for n in notifications)
    signal_rows = next(v for t, v in signaller.topics.items() if t.endswith(signaller.names.signal_table))
    kinds = [r.payload["after"]["type"] for r in signal_rows]
    assert kinds.count("snapshot-window-open") == kinds.count("snapshot-window-close") > 0
    assert any(t.endswith(".transaction") and v for t, v in signaller.topics.items())
