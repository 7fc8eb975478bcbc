"""One chaos run, start to verdict: ``python -m bench.chaos [--quick] [--seed N] [--home DIR]``.

1. the private stack up (:mod:`bench.chaos.private_stack`); tables created and seeded (before the sidecar:
   only incremental snapshots bring the seed rows), a fresh slot and a topic prefix of the run's own;
2. the sidecar and the apply job under supervisors; the writer, the signal driver, the recovery probe, the
   slot monitor and the fault injector start together (the chaos phase, ``plan.chaos_s``);
3. at 20 % of the phase the sidecar is restarted with ``read.only=true`` and one snapshot runs that way; at 30 %
   it is restarted with ``read.only=false`` again (configuration restarts, not faults); halfway through the fault
   window the final snapshot of every table is sent over HTTP, once every earlier signal has been answered;
4. at the end of the phase the writer stops, a paused snapshot is resumed, and the pipeline drains: the
   snapshot ends, the slot confirms the current WAL position, and the Delta tables equal the source;
5. the verdict (:mod:`bench.chaos.verdict`) and the results files (:mod:`bench.chaos.report`).

Exit status 0 if the verdict passes, 1 if not.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg2

from bench.chaos import report
from bench.chaos.faults import FaultInjector
from bench.chaos.joblog import batch_figures
from bench.chaos.pipeline import PUBLICATION, SLOT, Pipeline
from bench.chaos.plan import PLANS, ChaosPlan
from bench.chaos.private_stack import DEFAULT_HOME, PrivateStack
from bench.chaos.probes import RecoveryProbe, SlotMonitor
from bench.chaos.signals import SignalDriver
from bench.chaos.supervisor import Supervised
from bench.chaos.tables import PROBE, TABLES, create, source_rows
from bench.chaos.topics import read_topic, replay
from bench.chaos.verdict import compare, delta_rows, failed_scans, judge_signals, scan_statuses, signal_answers
from bench.results import RESULTS_DIR, machine_info
from devtools.env import sidecar_env
from devtools.settings import REPO_ROOT
from signaller.model import parse_lsn


def say(message: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {message}", flush=True)


class ChaosRun:
    """Everything one run starts, so that ``close()`` can stop it whatever happened."""

    def __init__(self, plan: ChaosPlan, home: Path) -> None:
        self.plan = plan
        self.stack = PrivateStack(home)
        self.settings = self.stack.settings
        self.prefix = f"chaos{int(time.time())}"
        self.work = home / "runs" / self.prefix
        self.pipeline = Pipeline(self.settings, self.work, self.prefix)
        self.dsn = self.settings.pg_dsn()
        self.sidecar: Supervised | None = None
        self.job: Supervised | None = None
        self.probe: RecoveryProbe | None = None
        self.monitor: SlotMonitor | None = None
        self.failures: list[str] = []

    # -- set-up --------------------------------------------------------------------------------------
    def prepare(self) -> None:
        say(f"private stack under {self.settings.home} (PostgreSQL {self.settings.pg_port}, "
            f"Kafka {self.settings.kafka_port})")
        self.stack.up()
        runs = self.work.parent
        if runs.exists():
            for old in runs.iterdir():
                shutil.rmtree(old, ignore_errors=True)
        self.work.mkdir(parents=True)
        self._delete_old_topics()
        with psycopg2.connect(self.dsn) as conn, conn.cursor() as cur:
            cur.execute("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
                        (SLOT,))
            cur.execute(f"DROP PUBLICATION IF EXISTS {PUBLICATION}")
            create(cur, self.plan.key_space, self.plan.toast_chars)
        conn.close()
        self.pipeline.signal_file.touch()
        say(f"tables created and seeded ({self.plan.key_space // 2} rows each), topic prefix {self.prefix}")

    def _delete_old_topics(self) -> None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.settings.bootstrap_servers})
        old = [t for t in admin.list_topics(timeout=30).topics if t.startswith("chaos")]
        if old:
            for future in admin.delete_topics(old).values():
                with contextlib.suppress(Exception):
                    future.result(60)

    def start_pipeline(self) -> None:
        logs = self.work
        self.sidecar = Supervised("sidecar", self.pipeline.sidecar_argv, logs / "sidecar.log",
                                  sidecar_env(SIGNALLER_LOG_FORMAT="text"), REPO_ROOT)
        self.sidecar.start()
        self._wait(lambda: self._slot_active(), 90, "the sidecar to hold its slot")
        job_env = {**os.environ, "SIGNALLER_SPARK_JARS_DIR": str(self.stack.jars_dir),
                   "PYSPARK_PYTHON": sys.executable}
        self.job = Supervised("apply-job", self.pipeline.job_argv, logs / "apply-job.log", job_env, REPO_ROOT,
                              restart_delay_s=2.0)
        self.job.start()
        self.probe = RecoveryProbe(self.dsn, self.settings.bootstrap_servers, self.pipeline.topic(PROBE),
                                   self.pipeline.delta_root / "public" / PROBE)
        self.probe.start()
        self.monitor = SlotMonitor(self.dsn)
        self.monitor.start()
        say("sidecar and apply job running under supervisors")

    def _slot_active(self) -> bool:
        with contextlib.suppress(psycopg2.Error):
            return bool(self._sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s AND active",
                                  (SLOT,))[0][0])
        return False

    def _sql(self, query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg2.connect(self.dsn, connect_timeout=5) as conn, conn.cursor() as cur:
            cur.execute(query, args)
            rows = cur.fetchall()
        conn.close()
        return rows

    @staticmethod
    def _wait(probe: Any, timeout_s: float, what: str, interval_s: float = 0.5) -> float:
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            with contextlib.suppress(Exception):
                if probe():
                    return time.monotonic() - started
            time.sleep(interval_s)
        raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")

    # -- the chaos phase ---------------------------------------------------------------------------------
    def chaos(self) -> dict[str, Any]:
        from bench.chaos.load import LoadWriter

        assert self.sidecar is not None and self.job is not None and self.probe is not None
        plan = self.plan
        writer = LoadWriter(self.dsn, plan)
        signals = SignalDriver(self.pipeline, self.dsn, plan.seed, plan.signal_interval_s)
        injector = FaultInjector(plan, self.stack, self.sidecar, self.job, signals, self.probe)
        started = time.monotonic()
        injector.start_time = started
        for thread in (writer, signals, injector):
            thread.start()
        say(f"chaos phase: {plan.chaos_s:.0f} s, {plan.rate:.0f} changes/s, {len(plan.schedule())} scheduled faults")
        fault_end = plan.chaos_s - plan.quiet_tail_s
        steps = [(0.2 * plan.chaos_s, "read_only_on"), (0.3 * plan.chaos_s, "read_only_off"),
                 (plan.warmup_s + 0.5 * (fault_end - plan.warmup_s), "final_snapshot")]
        read_only: dict[str, Any] = {}
        final: list[Any] = []
        for at, step in sorted(steps):
            time.sleep(max(0.0, started + at - time.monotonic()))
            if step == "read_only_on":
                read_only = self._switch_read_only(True, signals)
            elif step == "read_only_off":
                self._switch_read_only(False, signals)
            else:
                self._wait_answered(signals, 120)
                final = signals.final_snapshot()
                say(f"final snapshot sent: {[s.id for s in final]} acknowledged={[s.acknowledged for s in final]}")
        time.sleep(max(0.0, started + plan.chaos_s - time.monotonic()))
        injector.join(plan.drain_timeout_s)
        writer.stop()
        writes_end = time.time()
        signals.resume_if_paused()
        signals.stop()
        say(f"chaos phase over: {writer.stats.total_changes:,} changes, {len(injector.faults)} faults")
        for name, thread in (("writer", writer), ("signal driver", signals), ("fault injector", injector)):
            if thread.error is not None:
                self.failures.append(f"the {name} failed: {thread.error!r}")
        return {"writer": writer, "signals": signals, "injector": injector, "writes_end": writes_end,
                "read_only": read_only, "final": final}

    def _switch_read_only(self, on: bool, signals: SignalDriver) -> dict[str, Any]:
        """Restart the sidecar (SIGTERM: an operator's configuration change) with ``read.only`` on or off; when on,
        send one snapshot over HTTP once it serves."""
        assert self.sidecar is not None
        self.pipeline.read_only = on
        self.sidecar.restart()
        say(f"sidecar restarted with read.only={str(on).lower()}")
        if not on:
            return {}
        sent = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            sent = signals.send("execute-snapshot", {"data-collections": ["public\\.chaos_comp"],
                                                     "type": "incremental"}, "http", label="read-only")
            if sent.acknowledged:
                break
            time.sleep(1)
        return {"signal": None if sent is None else sent.id, "acknowledged": bool(sent and sent.acknowledged)}

    def _wait_answered(self, signals: SignalDriver, timeout_s: float) -> None:
        """Until every acknowledged signal so far has been answered by the sidecar (so none of them, applied
        late, can stop the final snapshot)."""
        assert self.sidecar is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            accepted, rejected = signal_answers(self.sidecar.log, [])
            waiting = [s.id for s in list(signals.sent) if s.acknowledged and s.id not in accepted | rejected]
            if not waiting:
                return
            time.sleep(1)
        say(f"signals still unanswered before the final snapshot: {waiting}")

    # -- drain and verdict ---------------------------------------------------------------------------------
    def drain(self, writes_end: float) -> dict[str, Any]:
        api = httpx.Client(base_url=self.pipeline.api_url, timeout=10)
        timeout = self.plan.drain_timeout_s
        try:
            idle = self._wait(lambda: not api.get("/snapshots").json()["running"], timeout, "the snapshot to end", 1)
        finally:
            api.close()
        target = parse_lsn(self._sql("SELECT pg_current_wal_lsn()::text")[0][0])
        self._wait(lambda: parse_lsn(self._sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                                               "WHERE slot_name = %s", (SLOT,))[0][0]) >= target,
                   timeout, f"the slot to confirm {target:X}", 1)
        converged_at = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._delta_equals_source():
                converged_at = time.time()
                break
            time.sleep(3)
        say(f"drained: snapshot idle after {idle:.0f} s, converged={converged_at is not None}")
        return {"converged_at": converged_at, "target_lsn": target}

    def _delta_equals_source(self) -> bool:
        with contextlib.closing(psycopg2.connect(self.dsn)) as conn, conn.cursor() as cur:
            for spec in TABLES:
                columns, rows = source_rows(cur, spec)
                target = delta_rows(spec, self.pipeline.delta_root / "public" / spec.name, columns)
                if target is None:
                    return False
                found = compare(rows, target, columns)
                if found["lost"] or found["extra"] or found["mismatched"]:
                    return False
        return True

    def verdict_tables(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        with psycopg2.connect(self.dsn) as conn, conn.cursor() as cur:
            for spec in TABLES:
                columns, rows = source_rows(cur, spec)
                replayed = replay(spec, read_topic(self.settings.bootstrap_servers, self.pipeline.topic(spec.name)))
                delta = delta_rows(spec, self.pipeline.delta_root / "public" / spec.name, columns) or {}
                out[spec.name] = {
                    "source_rows": len(rows), "columns": columns, "events": replayed.events, "reads": replayed.reads,
                    "truncates": replayed.truncates, "duplicates": replayed.duplicates,
                    "stale_reads": len(replayed.stale_reads), "stale_examples": replayed.stale_reads[:3],
                    "topic": compare(rows, replayed.rows, columns), "delta": compare(rows, delta, columns),
                }
        conn.close()
        return out

    def close(self) -> None:
        for part in (self.job, self.sidecar):
            if part is not None:
                with contextlib.suppress(Exception):
                    part.stop(30)
        for watcher in (self.probe, self.monitor):
            if watcher is not None:
                with contextlib.suppress(Exception):
                    watcher.stop()


def run(plan: ChaosPlan, home: Path = DEFAULT_HOME, results_dir: Path = RESULTS_DIR,
        keep_stack: bool = False) -> dict[str, Any]:
    """Run ``plan``; write the results files; return the results document."""
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    began = time.monotonic()
    chaos = ChaosRun(plan, home)
    machine = machine_info()
    try:
        chaos.prepare()
        chaos.start_pipeline()
        phase = chaos.chaos()
        drained: dict[str, Any] = {"converged_at": None}
        try:
            drained = chaos.drain(phase["writes_end"])
        except TimeoutError as exc:
            chaos.failures.append(f"drain: {exc}")
        assert chaos.monitor is not None and chaos.probe is not None and chaos.sidecar is not None
        end_sample = None
        with contextlib.suppress(psycopg2.Error), psycopg2.connect(chaos.dsn) as conn:
            end_sample = SlotMonitor.sample(conn)
        tables = chaos.verdict_tables()
        notifications = list(read_topic(chaos.settings.bootstrap_servers, chaos.pipeline.notification_topic))
        document = assemble(chaos, phase, drained, tables, notifications, end_sample)
    finally:
        chaos.close()
        if not keep_stack:
            chaos.stack.down()
    document.update(started_at=started_at, duration_s=round(time.monotonic() - began, 1), machine=machine)
    for path in report.write(document, quick=plan.name == "quick", directory=results_dir):
        say(f"wrote {path}")
    return document


def assemble(chaos: ChaosRun, phase: dict[str, Any], drained: dict[str, Any], tables: dict[str, Any],
             notifications: list[dict[str, Any]], end_sample: tuple[int, int] | None) -> dict[str, Any]:
    """The results document of one run (see :mod:`bench.chaos.report`), with the verdict's failures."""
    assert chaos.probe is not None and chaos.monitor is not None and chaos.sidecar is not None
    assert chaos.job is not None
    plan, writer, signals, injector = chaos.plan, phase["writer"], phase["signals"], phase["injector"]
    faults = injector.records()
    for fault in faults:
        fault["recovery_kafka_s"], fault["recovery_delta_s"] = chaos.probe.recovery(fault["number"])
        if fault["injected"]:
            fault.update(chaos.probe.at_fault(fault["recover_from"]))
    accepted, rejected = signal_answers(chaos.sidecar.log, notifications)
    judged = judge_signals(signals.ledger(), accepted, rejected)
    scans = scan_statuses(notifications)
    totals = report.chaos_totals(tables)
    injected = [f for f in faults if f["injected"]]
    last_fault = max((f["recover_from"] for f in injected), default=None)
    converged_at = drained.get("converged_at")
    totals.update(lost_signals=judged["lost"], failed_scans=scans.get("SQL_EXCEPTION", 0),
                  unexpected_exits=len(chaos.sidecar.unexpected_exits()) + len(chaos.job.unexpected_exits()))
    counts = report.fault_counts(plan.faults, faults)
    recovery = report.recovery_by_kind(faults)
    retained_end = end_sample[0] if end_sample else None
    slot = {"peak_retained_bytes": chaos.monitor.peak_retained, "peak_lag_bytes": chaos.monitor.peak_lag,
            "end_retained_bytes": retained_end, "end_lag_bytes": end_sample[1] if end_sample else None,
            "samples": len(chaos.monitor.samples)}
    failures = list(chaos.failures)
    for name in ("lost_rows", "stale_rows", "mismatched_rows", "checksum_differences", "lost_signals", "failed_scans"):
        if totals.get(name):
            failures.append(f"chaos.{name} = {totals[name]}")
    failed = failed_scans(notifications, chaos.sidecar.log)
    if failed:
        failures.append(f"failed scans: {failed}")
    for kind, count in counts.items():
        if count["injected"] < count["planned"]:
            failures.append(f"fault {kind}: {count['injected']} of {count['planned']} injected")
    for kind, rec in recovery.items():
        if rec["not_recovered"]:
            failures.append(f"fault {kind}: {rec['not_recovered']} marker(s) never reached Delta")
        if rec["not_seen_in_kafka"]:
            failures.append(f"fault {kind}: {rec['not_seen_in_kafka']} marker(s) never seen in Kafka (the probe "
                            f"consumer's errors: {chaos.probe.kafka_errors[-3:]})")
    for exit_ in chaos.sidecar.unexpected_exits():
        failures.append(f"the sidecar exited by itself (code {exit_.code}) at "
                        f"{time.strftime('%H:%M:%S', time.localtime(exit_.at))} instead of retrying: see its log")
    if converged_at is None:
        failures.append("the Delta tables never equalled the source after the drain")
    if retained_end is None or retained_end > max(32 * 1024 * 1024, chaos.monitor.peak_retained // 4):
        failures.append(f"the slot's retained WAL did not go back down: {retained_end} bytes after the drain, "
                        f"peak {chaos.monitor.peak_retained}")
    if not all(s.acknowledged for s in phase["final"]):
        failures.append("the final snapshot was never acknowledged")
    stats = writer.stats
    return {
        "kind": "chaos", "plan": plan.as_dict(),
        "load": {"changes": stats.total_changes, "by_kind": stats.changes, "transactions": stats.transactions,
                 "changes_per_s": round(stats.total_changes / max(stats.elapsed_s, 1e-9), 1),
                 "reconnects": stats.reconnects, "events_at_s": stats.events},
        "faults": {"counts": counts, "records": faults},
        "recovery": recovery,
        "probe_kafka_errors": list(chaos.probe.kafka_errors),
        "lag": report.lag_figures(chaos.probe.lag(), len(chaos.probe.pulses), chaos.probe.pulse_interval_s,
                                  batch_figures(chaos.job.log.read_text(errors="replace"))),
        "signals": judged,
        "signal_ledger": signals.ledger(),
        "snapshots": {"table_scans": scans, "failed": failed, "chunk_size_changes": signals.chunk_sizes,
                      "read_only": phase["read_only"], "final": [s.id for s in phase["final"]]},
        "tables": tables,
        "chaos": totals,
        "processes": {
            name: {"starts": part.starts, "exits": [{"at": e.at, "code": e.code, "killed_by_us": e.killed_by_us}
                                                    for e in part.exits]}
            for name, part in (("sidecar", chaos.sidecar), ("apply_job", chaos.job))},
        "converge_s": {
            "after_last_fault": (None if converged_at is None or last_fault is None
                                 else round(converged_at - last_fault, 1)),
            "after_writes": None if converged_at is None else round(converged_at - phase["writes_end"], 1),
        },
        "slot": slot,
        "work_dir": str(chaos.work),
        "verdict": {"ok": not failures, "failures": failures},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The chaos run (issue 17): the pipeline under load and faults.")
    parser.add_argument("--quick", action="store_true", help="the two-minute version (make test)")
    parser.add_argument("--seed", type=int, default=None, help="the fault schedule's seed (default: the plan's)")
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME, help="the private stack's home directory")
    parser.add_argument("--keep-stack", action="store_true", help="leave the private stack running afterwards")
    args = parser.parse_args(argv)
    plan = PLANS["quick" if args.quick else "full"]
    if args.seed is not None:
        plan = plan.with_seed(args.seed)
    document = run(plan, args.home, keep_stack=args.keep_stack)
    print(report.render_markdown(document), flush=True)
    return 0 if document["verdict"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
