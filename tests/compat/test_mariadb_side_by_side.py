"""MariaDB, proven against Debezium: one DDL + DML script and the same execute-snapshot signals (through
each one's signalling table) run against Debezium's MariaDB connector in Kafka Connect and the sidecar's
MariaDB source at the same time, compared event by event (``tests.compat.mariadb_compare``).

``test_debezium_mariadb_reference`` runs the Debezium half alone: the reference is captured, parsed and
normalized as the comparison needs it. The side-by-side test is a strict xfail only while
``signaller.sources.registry`` has no source for ``io.debezium.connector.mariadb.MariaDbConnector``: it
runs for real as soon as that source is registered (and a strict xfail fails if it then passes without
the source, so nothing else can hide behind it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools import StackSettings
from devtools.debezium import MARIADB_CONNECTOR_CLASS
from signaller.sources.registry import SOURCES
from tests.compat import mariadb_scenario as scenario
from tests.compat.compare import (
    Renames,
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

SIDECAR_HAS_MARIADB = MARIADB_CONNECTOR_CLASS in SOURCES

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


KNOWN_MARIADB_GAPS = (
    "open (issue 16): the sidecar writes no schema change topic (<topic.prefix>) and no schema history, and with "
    "snapshot.mode=no_data no start-up schema snapshot, so its start-up notification is Initial Snapshot SKIPPED "
    "where Debezium's MariaDB connector writes Initial Snapshot STARTED and COMPLETED. Everything else (streamed "
    "events, READs, watermark rows, incremental-snapshot notifications, transactions) is equal; the streamed "
    "events alone are compared, and pass, in test_sidecar_streamed_events_match_debezium_mariadb"
)
"""Why the full MariaDB comparison does not pass yet: strict, so it fails once they are fixed (remove the mark)."""


@pytest.mark.xfail(strict=True, reason=KNOWN_MARIADB_GAPS if SIDECAR_HAS_MARIADB else
                   f"signaller.sources.registry has no source for {MARIADB_CONNECTOR_CLASS} yet")
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


NOT_COMPARED_WHEN_STREAMING_ONLY: dict[str, str] = {
    "schema-changes": "the schema change topic (<topic.prefix>, include.schema.changes): the sidecar does not "
                      "write it yet (README, MariaDB compatibility: what is missing)",
    "schema-history": "the schema history topic (schema.history.internal.kafka.topic): the sidecar keeps no "
                      "schema history (it follows the DDL in memory) and does not write it",
    "notifications": "start-up notifications only (no signal is sent): Debezium's MariaDB connector snapshots the "
                     "schema under snapshot.mode=no_data and says Initial Snapshot STARTED/COMPLETED, the sidecar "
                     "keeps no schema history and says SKIPPED (runtime/snapshots.py); the full test compares them",
}
"""The kinds :func:`test_sidecar_streamed_events_match_debezium_mariadb` leaves out, each with the reason. They
are not allow-listed: the full side-by-side test above still compares them and fails on them."""


def test_sidecar_streamed_events_match_debezium_mariadb(stack: StackSettings, unique_name: str,
                                                        tmp_path: Path) -> None:
    """The streamed part of the script alone (no execute-snapshot signals: no READs, no watermark rows, no
    incremental-snapshot notifications), compared event by event like the full test, with the same
    allow-list, every topic but :data:`NOT_COMPARED_WHEN_STREAMING_ONLY`. The full test above stays the
    target: it adds the snapshots and the schema topics."""
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

    def streamed(output: scenario.SideOutput, names: Renames) -> dict[str, Any]:
        return {topic: records for topic, records in scenario.dump(output).items()
                if topic_kind(topic, names) not in NOT_COMPARED_WHEN_STREAMING_ONLY}

    left = compare_mariadb(streamed(debezium, debezium_names), streamed(signaller, signaller_names),
                           debezium_names, signaller_names)
    assert not left, f"{report(left)}\n(both outputs: {tmp_path / 'outputs.json'})"
