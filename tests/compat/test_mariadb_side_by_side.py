"""MariaDB, proven against Debezium: one DDL + DML script and the same execute-snapshot signals (through
each one's signalling table) run against Debezium's MariaDB connector in Kafka Connect and the sidecar's
MariaDB source at the same time, compared event by event (``tests.compat.mariadb_compare``).

``test_debezium_mariadb_reference`` runs the Debezium half alone: the reference is captured, parsed and
normalized as the comparison needs it. The side-by-side tests compare every topic: data, signal table,
notifications, transactions, the schema change topic and the schema history; a difference fails unless
``tests.compat.mariadb_compare.MARIADB_ALLOWED`` (the README's allow-list) explains it. The default modes run
in ``make test``; ``test_every_type_matches_debezium_mariadb_in_each_mode`` runs the whole script once per
other value of each type mode (:data:`MODE_MATRIX`), under ``make compat-full`` only (about 3 minutes each).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools import StackSettings
from tests.compat import mariadb_scenario as scenario
from tests.compat.compare import (
    _op,
    normalize,
    own_transactions,
    report,
    topic_kind,
    without_empty_transactions,
)
from tests.compat.mariadb_compare import compare_mariadb, mariadb_renames
from tests.compat.mariadb_env import mariadb_env

pytestmark = pytest.mark.compat

MODE_MATRIX: tuple[dict[str, str], ...] = (
    {"decimal.handling.mode": "double"},
    {"decimal.handling.mode": "string"},
    {"time.precision.mode": "connect"},
    {"bigint.unsigned.handling.mode": "precise"},
    {"binary.handling.mode": "base64"},
    {"binary.handling.mode": "base64-url-safe"},
    {"binary.handling.mode": "hex"},
)
"""Each non-default value of each MariaDB type mode once. ``time.precision.mode=adaptive`` is not here: Debezium's
binlog connectors refuse it ("no longer supported"), and so does the sidecar's configuration (a unit test)."""

MODE_EFFECT: dict[str, tuple[str, dict[str, object]]] = {
    "decimal.handling.mode=double": ("c_decimal_max", {"type": "double"}),
    "decimal.handling.mode=string": ("c_decimal_max", {"type": "string"}),
    "time.precision.mode=connect": ("c_time6", {"type": "int32", "name": "org.apache.kafka.connect.data.Time"}),
    "bigint.unsigned.handling.mode=precise": ("c_bigint_u", {"type": "bytes",
                                                             "name": "org.apache.kafka.connect.data.Decimal"}),
    "binary.handling.mode=base64": ("c_mediumblob", {"type": "string"}),
    "binary.handling.mode=base64-url-safe": ("c_mediumblob", {"type": "string"}),
    "binary.handling.mode=hex": ("c_mediumblob", {"type": "string"}),
}
"""A column whose Connect schema in Debezium's output shows that the mode took effect (so a comparison of two
outputs in the default modes cannot pass for a mode run)."""


def _mode_id(modes: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in modes.items())


KINDS = {"data:cmp_types", "data:cmp_comp", "data:cmp_nokey", "data:cmp_zero", "signal", "notifications",
         "transaction", "schema-changes", "schema-history"}


def _ops(output: scenario.SideOutput, table: str) -> list[str | None]:
    topic = next(t for t in output.topics if t.endswith("." + table))
    return [None if r.value is None else r.payload.get("op") for r in output.topics[topic]]


def _by_kind(output: scenario.SideOutput, database: str) -> dict[str, list[Any]]:
    names = mariadb_renames(output.names.prefix, output.names.signal_table, database)
    dumped = scenario.dump(output)
    return {topic_kind(t, names): [normalize(r, topic_kind(t, names), names) for r in records]
            for t, records in dumped.items()}


def _check_debezium_output(debezium: scenario.SideOutput, database: str) -> None:
    """What the script must produce on Debezium's side (so the comparison covers it, not two empty topics)."""
    kinds = _by_kind(debezium, database)
    assert set(kinds) == KINDS, sorted(kinds)
    types_ops = _ops(debezium, "cmp_types")
    assert {"c", "u", "d", "r", None} <= set(types_ops), types_ops  # None: a tombstone
    assert types_ops.count("r") == 4 + 1  # snap-1 (rows 1, 4, 5, 20) + snap-2 (filtered: row 5)
    assert _ops(debezium, "cmp_comp").count("r") == 5
    assert _ops(debezium, "cmp_zero").count("r") == 2
    assert "r" not in _ops(debezium, "cmp_nokey")
    notifications = [r["value"]["payload"] for r in kinds["notifications"]]
    completed = [n["id"] for n in notifications
                 if n["type"] == "COMPLETED" and n["aggregate_type"] == "Incremental Snapshot"]
    assert completed == ["snap-1", "snap-2", "snap-3"], completed
    assert any(n["additional_data"].get("status") == "NO_PRIMARY_KEY" for n in notifications)
    watermarks = [r["value"]["payload"]["after"] for r in kinds["signal"] if r["value"]["payload"]["after"]["type"]
                  .startswith("snapshot-window-")]
    assert watermarks and all(w["id"].startswith("<chunk-id>-") and isinstance(w["data"], dict) for w in watermarks)
    ddl = [(r["value"]["payload"]["ddl"], _op(r)) for r in kinds["schema-changes"]]
    assert ("ALTER TABLE cmp_comp ADD COLUMN note VARCHAR(20) DEFAULT 'n/a'", "ddl") in ddl, ddl
    assert all(op == "ddl-snapshot" for text, op in ddl if not text.startswith("ALTER")), ddl
    assert [_op(r) for r in kinds["schema-history"]].count("ddl") == 1
    transactions = kinds["transaction"]
    assert own_transactions(transactions), "the watermark transactions are recognized as Debezium's own"
    kept = without_empty_transactions(transactions)
    multi = [r["value"]["payload"] for r in kept if r["value"]["payload"]["status"] == "END"
             and len(r["value"]["payload"]["data_collections"]) == 2]
    assert multi and multi[0]["event_count"] == 8, multi  # the multi-statement transaction: 8 row events


def test_debezium_mariadb_reference(stack: StackSettings, unique_name: str, tmp_path: Path) -> None:
    with mariadb_env(stack, unique_name, tmp_path) as env:
        (debezium,) = scenario.run(env, tmp_path, with_sidecar=False)
        database = env.database
    (tmp_path / "debezium.json").write_text(json.dumps(scenario.dump(debezium), indent=1))
    _check_debezium_output(debezium, database)
    # Normalized as the comparison normalizes it: Debezium's output under another side's names is equal.
    other = scenario.Names(prefix=debezium.names.prefix.replace("dbz", "sig"), signal_table="cmp_sig_signal")
    renamed = json.loads(json.dumps(scenario.dump(debezium)).replace(debezium.names.prefix, other.prefix)
                         .replace(debezium.names.signal_table, other.signal_table))
    left = compare_mariadb(scenario.dump(debezium), renamed,
                           mariadb_renames(debezium.names.prefix, debezium.names.signal_table, database),
                           mariadb_renames(other.prefix, other.signal_table, database))
    assert not left, report(left)


def test_sidecar_output_matches_debezium_mariadb_event_by_event(stack: StackSettings, unique_name: str,
                                                                 tmp_path: Path) -> None:
    with mariadb_env(stack, unique_name, tmp_path) as env:
        debezium, signaller = scenario.run(env, tmp_path)
        database = env.database
    dumps = {side.names.prefix: scenario.dump(side) for side in (debezium, signaller)}
    (tmp_path / "outputs.json").write_text(json.dumps(dumps, indent=1))
    _check_debezium_output(debezium, database)

    left = compare_mariadb(scenario.dump(debezium), scenario.dump(signaller),
                           mariadb_renames(debezium.names.prefix, debezium.names.signal_table, database),
                           mariadb_renames(signaller.names.prefix, signaller.names.signal_table, database))
    assert not left, f"{report(left)}\n(both outputs: {tmp_path / 'outputs.json'})"
    kinds = [r["value"]["payload"]["after"]["type"] for r in _by_kind(signaller, database)["signal"]]
    assert kinds.count("snapshot-window-open") == kinds.count("snapshot-window-close") > 0


def test_sidecar_streamed_events_match_debezium_mariadb(stack: StackSettings, unique_name: str,
                                                        tmp_path: Path) -> None:
    """The streamed part of the script alone (no execute-snapshot signals: no READs, no watermark rows, no
    incremental-snapshot notifications), compared event by event like the full test, with the same
    allow-list, every topic (the schema change and history topics and the start-up notifications included)."""
    with mariadb_env(stack, unique_name, tmp_path) as env:
        debezium, signaller = scenario.run(env, tmp_path, with_signals=False)
        database = env.database
    dumps = {side.names.prefix: scenario.dump(side) for side in (debezium, signaller)}
    (tmp_path / "outputs.json").write_text(json.dumps(dumps, indent=1))
    debezium_kinds = set(_by_kind(debezium, database))
    assert {"data:cmp_types", "data:cmp_comp", "data:cmp_nokey", "data:cmp_zero", "transaction"} <= debezium_kinds
    assert "r" not in _ops(debezium, "cmp_types")  # no signal was sent: the stream only

    debezium_names = mariadb_renames(debezium.names.prefix, debezium.names.signal_table, database)
    signaller_names = mariadb_renames(signaller.names.prefix, signaller.names.signal_table, database)

    left = compare_mariadb(scenario.dump(debezium), scenario.dump(signaller), debezium_names, signaller_names)
    assert not left, f"{report(left)}\n(both outputs: {tmp_path / 'outputs.json'})"


def _after_field(output: scenario.SideOutput, table: str, column: str) -> dict[str, Any]:
    topic = next(t for t in output.topics if t.endswith("." + table))
    record = next(r for r in output.topics[topic] if r.value is not None)
    after = next(f for f in record.value["schema"]["fields"] if f["field"] == "after")
    field: dict[str, Any] = next(f for f in after["fields"] if f["field"] == column)
    return field


@pytest.mark.compat_full
@pytest.mark.parametrize("modes", MODE_MATRIX, ids=_mode_id)
def test_every_type_matches_debezium_mariadb_in_each_mode(stack: StackSettings, unique_name: str, tmp_path: Path,
                                                          modes: dict[str, str]) -> None:
    """The whole script (every type of ``cmp_types`` streamed, updated, deleted and read by incremental
    snapshots) with one mode property set to a non-default value on both sides, compared event by event with
    the same allow-list as the default modes."""
    with mariadb_env(stack, unique_name, tmp_path) as env:
        debezium, signaller = scenario.run(env, tmp_path, overrides=modes)
        database = env.database
    dumps = {side.names.prefix: scenario.dump(side) for side in (debezium, signaller)}
    (tmp_path / "outputs.json").write_text(json.dumps(dumps, indent=1))
    _check_debezium_output(debezium, database)
    column, expected = MODE_EFFECT[_mode_id(modes)]
    field = _after_field(debezium, "cmp_types", column)
    assert {key: field.get(key) for key in expected} == expected, field

    left = compare_mariadb(scenario.dump(debezium), scenario.dump(signaller),
                           mariadb_renames(debezium.names.prefix, debezium.names.signal_table, database),
                           mariadb_renames(signaller.names.prefix, signaller.names.signal_table, database))
    assert not left, f"{report(left)}\n(both outputs: {tmp_path / 'outputs.json'})"
