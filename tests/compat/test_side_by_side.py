"""The sidecar emits what Debezium emits: one DDL + DML script and the same execute-snapshot
signals (through each one's signalling table), run against Debezium's PostgreSQL connector in Kafka
Connect and the sidecar at the same time, compared event by event (``tests.compat.compare``).

Two pairs run the script at once (one run, so one scenario's time): JSON (JsonConverter with schemas) and
Avro (Debezium with Apicurio Registry's AvroConverter, the sidecar with its Avro converter, one registry);
the Avro pair's records are compared decoded, and the schemas registered subject by subject.

Every difference must be covered by the allow-list (``compare.ALLOWED``, the README's "Differences
from Debezium"). The outputs are written to the test's temporary directory for inspection.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devtools import StackSettings
from tests.compat import avro_output, scenario
from tests.compat.compare import Renames, compare, report, unexplained
from tests.integration.capture_helpers import capture_env

pytestmark = pytest.mark.compat


@dataclass
class Run:
    """The four sides' outputs of one scenario run, the registered subjects of the Avro pair, the run's suffix."""

    outputs: list[scenario.SideOutput]
    subjects: list[dict[str, list[dict[str, Any]]]]
    suffix: str
    workdir: Path


@pytest.fixture(scope="module")
def scenario_run(stack: StackSettings, schema_registry: str, tmp_path_factory: pytest.TempPathFactory) -> Run:
    suffix = uuid.uuid4().hex[:10]
    workdir = tmp_path_factory.mktemp("side_by_side")
    with capture_env(stack, suffix, workdir) as env:
        outputs = scenario.run_sides(env, workdir, avro=True)
    subjects = [avro_output.subjects(schema_registry, side.names.prefix) for side in outputs[2:]]
    return Run(outputs, subjects, suffix, workdir)


def _renames(output: scenario.SideOutput) -> Renames:
    return Renames(output.names.prefix, output.names.signal_table)


def _ops(output: scenario.SideOutput, kind: str) -> list[str | None]:
    topic = next(t for t in output.topics if t.endswith(kind))
    return [None if r.value is None else r.payload.get("op") for r in output.topics[topic]]


def test_sidecar_output_matches_debezium_event_by_event(scenario_run: Run, tmp_path: Path) -> None:
    debezium, signaller = scenario_run.outputs[:2]
    unique_name = scenario_run.suffix
    dumps = {side.names.prefix: scenario.dump(side) for side in (debezium, signaller)}
    (tmp_path / "outputs.json").write_text(json.dumps(dumps, indent=1))

    differences = compare(scenario.dump(debezium), scenario.dump(signaller), _renames(debezium), _renames(signaller))
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


def test_sidecar_avro_matches_debezium_with_apicurio_converter(scenario_run: Run, tmp_path: Path) -> None:
    debezium, signaller = scenario_run.outputs[2:]
    dbz_subjects, sig_subjects = scenario_run.subjects
    dumps = [avro_output.dump(side.topics, subjects)
             for side, subjects in ((debezium, dbz_subjects), (signaller, sig_subjects))]
    (tmp_path / "outputs.json").write_text(json.dumps({"records": dumps, "subjects": scenario_run.subjects},
                                                      indent=1))

    differences = compare(dumps[0], dumps[1], _renames(debezium), _renames(signaller))
    differences += avro_output.compare_subjects(dbz_subjects, sig_subjects, _renames(debezium), _renames(signaller))
    left = unexplained(differences)
    assert not left, f"{report(left)}\n(both outputs: {tmp_path / 'outputs.json'})"

    # The comparison covered the script's records, decoded, and every subject: not two empty sides.
    types_ops = _ops(debezium, f"public.cmp_types_{scenario_run.suffix}")
    assert {"c", "u", "d", "r", None} <= set(types_ops), types_ops
    assert types_ops.count("r") == 8 + 5
    assert any(t.endswith(".transaction") and v for t, v in signaller.topics.items())
    data_subjects = [s for s in dbz_subjects if ".public.cmp_" in s]
    assert len(data_subjects) >= 2 * 5, sorted(dbz_subjects)  # key and value of each table and signal table
    comp_value = next(v for s, v in dbz_subjects.items() if f"cmp_comp_{scenario_run.suffix}-value" in s)
    assert len(comp_value) == 2, comp_value  # ALTER TABLE ADD COLUMN registered a second version
    assert all(r.value is None or r.value["schema"] for r in debezium.topics[next(iter(debezium.topics))])
