"""The chaos harness's pure logic (bench.chaos): the fault schedule, topic replay with its stale-READ and
duplicate counts, and the row comparison of the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from bench.chaos.joblog import batch_figures
from bench.chaos.plan import FULL, QUICK
from bench.chaos.private_stack import PORT_ENV, PORTS, PrivateStackError, ports_from_env
from bench.chaos.probes import behind_at, latencies, moving_again_after
from bench.chaos.report import recovery_by_kind
from bench.chaos.tables import BY_NAME
from bench.chaos.topics import UNAVAILABLE, replay
from bench.chaos.verdict import compare, failed_scans, judge_signals

INT = BY_NAME["chaos_int"]


def event(op: str, lsn: int, before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    return {"op": op, "before": before, "after": after, "source": {"lsn": lsn}}


def test_schedule_is_seeded_complete_and_inside_the_fault_window() -> None:
    schedule = FULL.schedule()
    assert schedule == FULL.schedule()
    assert schedule != FULL.with_seed(18).schedule()
    kinds = [kind for _, kind in schedule]
    for kind, count in FULL.faults.items():
        assert kinds.count(kind) == (0 if kind == "sidecar_kill_kafka_down" else count)
    assert FULL.faults["sidecar_kill"] + FULL.faults["sidecar_kill_in_window"] + \
        FULL.faults["sidecar_kill_kafka_down"] >= 20
    for plan in (FULL, QUICK):
        times = [at for at, _ in plan.schedule()]
        assert times == sorted(times)
        assert all(plan.warmup_s <= at <= plan.chaos_s - plan.quiet_tail_s for at in times)


def test_replay_keeps_a_toasted_value_the_placeholder_stands_for_and_empties_on_truncate() -> None:
    events = [
        event("c", 10, None, {"id": 1, "n": 1, "val": "a", "doc": "long"}),
        event("u", 20, None, {"id": 1, "n": 2, "val": "b", "doc": UNAVAILABLE}),
        event("c", 30, None, {"id": 2, "n": 3, "val": "c", "doc": "x"}),
    ]
    assert replay(INT, iter(events)).rows == {
        "[1]": {"id": 1, "n": 2, "val": "b", "doc": "long"}, "[2]": {"id": 2, "n": 3, "val": "c", "doc": "x"}}
    truncated = replay(INT, iter([*events, event("t", 40, None, None), event("c", 50, None, {"id": 3, "n": 4})]))
    assert truncated.rows == {"[3]": {"id": 3, "n": 4}} and truncated.truncates == 1


def test_replay_counts_a_read_older_than_a_streamed_change_and_duplicates() -> None:
    events = [
        event("c", 10, None, {"id": 1, "n": 5, "val": "a"}),
        event("r", 11, None, {"id": 1, "n": 5, "val": "a"}),   # same version: fine
        event("u", 20, None, {"id": 1, "n": 7, "val": "b"}),
        event("r", 21, None, {"id": 1, "n": 5, "val": "a"}),   # older than n=7: stale
        event("u", 20, None, {"id": 1, "n": 7, "val": "b"}),   # re-sent after a crash: a duplicate
        event("d", 30, {"id": 1}, None),
    ]
    replayed = replay(INT, iter(events))
    assert replayed.rows == {}
    assert replayed.reads == 2 and replayed.duplicates == 1
    assert replayed.stale_reads == [{"key": "[1]", "read_n": 5, "newer_streamed_n": 7}]


def test_compare_counts_lost_extra_and_mismatched_rows_over_the_source_columns() -> None:
    source = {"[1]": {"id": 1, "v": "a", "extra": None}, "[2]": {"id": 2, "v": "b", "extra": "x"}}
    assert compare(source, {"[1]": {"id": 1, "v": "a"}, "[2]": {"id": 2, "v": "b", "extra": "x"}},
                   ["id", "v", "extra"])["checksum_equal"]
    found = compare(source, {"[1]": {"id": 1, "v": "z"}, "[3]": {"id": 3, "v": "c"}}, ["id", "v", "extra"])
    assert (found["lost"], found["extra"], found["mismatched"], found["checksum_equal"]) == (1, 1, 1, False)


def test_an_acknowledged_signal_without_an_answer_is_lost() -> None:
    ledger = [{"id": "a", "type": "t", "channel": "file", "acknowledged": True},
              {"id": "b", "type": "t", "channel": "kafka", "acknowledged": True},
              {"id": "c", "type": "t", "channel": "source", "acknowledged": True},
              {"id": "d", "type": "t", "channel": "http", "acknowledged": False}]
    judged = judge_signals(ledger, accepted={"a"}, rejected={"b"})
    assert (judged["acknowledged"], judged["applied"], judged["rejected"], judged["lost"]) == (3, 1, 1, 1)
    assert judged["lost_ids"] == ["c"]


def test_a_failed_scan_is_reported_with_the_sidecar_log_lines_that_say_why(tmp_path: Any) -> None:
    log = tmp_path / "sidecar.log"
    log.write_text("2026-11-28 INFO signaller.snapshot resuming incremental snapshot\n"
                   "2026-11-28 WARNING signaller.snapshot incremental snapshot of public.chaos_int failed: "
                   "PostgreSQL error while reading a chunk: column \"x\" does not exist\n"
                   "2026-11-28 INFO signaller.capture streaming\n")
    notes = [{"type": "TABLE_SCAN_COMPLETED", "timestamp": 5,
              "additional_data": {"scanned_collection": "public.chaos_int", "status": "SQL_EXCEPTION"}},
             {"type": "TABLE_SCAN_COMPLETED", "timestamp": 6,
              "additional_data": {"scanned_collection": "public.chaos_text", "status": "SUCCEEDED"}}]
    failed = failed_scans(notes, log)
    assert [(f["table"], f["timestamp"]) for f in failed] == [("public.chaos_int", 5)]
    assert failed[0]["log"] == ["2026-11-28 WARNING signaller.snapshot incremental snapshot of public.chaos_int "
                                "failed: PostgreSQL error while reading a chunk: column \"x\" does not exist"]
    assert failed_scans(notes[1:], log) == []


def test_pulses_tell_how_far_behind_a_target_was_and_when_it_moved_again() -> None:
    inserted = {1: 100.0, 2: 105.0, 3: 110.0, 4: 115.0}
    delta = {1: 160.0, 2: 165.0, 3: 190.0}  # 60 s behind; nothing new between 165 and 190 (a restart)
    assert latencies(inserted, delta) == [60.0, 60.0, 80.0]
    assert behind_at(170.0, inserted, delta) == 65.0  # the newest row Delta had at 170 was inserted at 105
    assert behind_at(150.0, inserted, delta) is None
    assert moving_again_after(170.0, inserted, delta) == 20.0  # row 3 (inserted before the fault) at 190
    assert moving_again_after(190.0, inserted, delta) is None
    assert behind_at(200.0, {}, {7: 1.0}) is None  # a fault marker is no pulse


def test_apply_job_log_gives_batches_events_merge_time_and_overruns() -> None:
    log = "\n".join([
        "--- apply-job start 1 at 00:19:41 ---",
        "apply_changes: batch 0 public.chaos_comp: 353 event(s), 0 dead-lettered, 84 delete(s) in 13.3s",
        "apply_changes: batch 0 public.chaos_int: 330 event(s), 0 dead-lettered, 83 delete(s) in 6.7s",
        "26/11/24 00:20:27 WARN ProcessingTimeExecutor: Current batch is falling behind. The trigger interval is "
        "2000 milliseconds, but spent 36989 milliseconds",
        "--- apply-job start 2 at 00:20:49 ---",
        "apply_changes: batch 0 public.chaos_comp: 10 event(s), 0 dead-lettered, 0 delete(s) in 1.0s",
        "apply_changes: batch 1 public.chaos_comp: 5 event(s), 0 dead-lettered, 0 delete(s) in 2.0s",
    ])
    figures = batch_figures(log)
    assert figures == {"batches": 3, "table_merges": 4, "events": 698, "merge_s": 23.0, "overran_s": [36.989],
                       "trigger_ms": 2000}


def test_recovery_by_kind_counts_markers_never_seen_in_kafka_or_delta() -> None:
    faults = [
        {"kind": "sidecar_kill", "injected": True, "recovery_kafka_s": 3.0, "recovery_delta_s": 90.0},
        {"kind": "sidecar_kill", "injected": True, "recovery_kafka_s": None, "recovery_delta_s": 95.0},
        {"kind": "kafka_kill", "injected": True, "recovery_kafka_s": 20.0, "recovery_delta_s": None},
        {"kind": "kafka_kill", "injected": False, "recovery_kafka_s": None, "recovery_delta_s": None},
    ]
    found = recovery_by_kind(faults)
    assert (found["sidecar_kill"]["not_seen_in_kafka"], found["sidecar_kill"]["not_recovered"]) == (1, 0)
    assert (found["kafka_kill"]["not_seen_in_kafka"], found["kafka_kill"]["not_recovered"]) == (0, 1)
    assert found["sidecar_kill"]["delta_s"] == {"p50": 92.5, "max": 95.0, "n": 2}


def test_private_stack_ports_come_from_the_environment_for_a_second_clone() -> None:
    assert ports_from_env({}) == PORTS
    assert PORT_ENV["pg_port"] == "SIGNALLER_CHAOS_PG_PORT"
    assert set(PORT_ENV) == set(PORTS)
    moved = ports_from_env({"SIGNALLER_CHAOS_PG_PORT": "57432", "SIGNALLER_CHAOS_KAFKA_PORT": " 61092 "})
    assert moved == {**PORTS, "pg_port": 57432, "kafka_port": 61092}
    with pytest.raises(PrivateStackError, match=r"SIGNALLER_CHAOS_HTTP_PORT='http' \(environment\).*1\.\.65535"):
        ports_from_env({"SIGNALLER_CHAOS_HTTP_PORT": "http"})
    with pytest.raises(PrivateStackError, match="SIGNALLER_CHAOS_PG_PORT='70000'"):
        ports_from_env({"SIGNALLER_CHAOS_PG_PORT": "70000"})
    with pytest.raises(PrivateStackError, match="kafka_port and pg_port are both port 26432"):
        ports_from_env({"SIGNALLER_CHAOS_KAFKA_PORT": "26432"})
