"""The bench's JVM CPU per thread group (``bench.spark_worker.thread_cpu_s``, from Linux's /proc), the
machine's (``machine_cpu_s``, /proc/stat) and their figures (``bench.apply``:
``apply.jvm_cpu_s_per_batch.<group>``, ``apply.machine_busy_pct``, ``apply.machine_cpu_s_per_batch.outside_jvm``)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from bench.apply import _phase_figures, batch_phases, breakdown_text
from bench.spark_worker import machine_cpu_s, thread_cpu_s


def test_a_thread_is_counted_in_the_group_its_name_starts_with() -> None:
    """A thread named like HotSpot's C2 compiler thread that burns CPU shows up as ``jit``; the
    process's other threads only in ``all``."""
    named, go, burned, done = threading.Event(), threading.Event(), threading.Event(), threading.Event()

    def burn() -> None:
        Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text("C2 CompilerThre")
        named.set()
        go.wait(5)  # only after the first snapshot
        end = time.thread_time() + 0.3
        while time.thread_time() < end:
            pass
        burned.set()
        done.wait(5)  # alive (and counted) until the second snapshot

    thread = threading.Thread(target=burn)
    thread.start()
    assert named.wait(5)
    before = thread_cpu_s(os.getpid())
    go.set()
    assert burned.wait(10)
    after = thread_cpu_s(os.getpid())
    done.set()
    thread.join()
    assert after["jit"] - before["jit"] >= 0.2
    assert after["all"] - before["all"] >= after["jit"] - before["jit"] - 0.02  # clock ticks, rounded
    assert after["gc"] == before["gc"] == 0.0 and after["tasks"] == 0.0


def test_unknown_process_gives_nothing() -> None:
    assert thread_cpu_s(None) == {}
    assert thread_cpu_s(2**22 + 12345) == {}  # beyond Linux's largest pid


def test_a_batch_reports_cpu_seconds_per_group_as_their_own_figures() -> None:
    reports = [{"phases_ms": {"merge": 3000.0, "total": 6000.0}, "jvm_cpu_s": {"jit": jit, "all": 11.0}}
               for jit in (1.5, 2.5, 3.5)]
    rows = [{f"phase:{k}": v for k, v in batch_phases(r).items()} for r in reports]
    figures = _phase_figures(rows)
    assert figures["jvm_cpu_s_per_batch.jit"]["median"] == 2.5
    assert figures["jvm_cpu_s_per_batch.all"]["unit"] == "CPU s"
    assert "phase_ms.cpu.jit" not in figures and figures["phase_ms.merge"]["median"] == 3000


def test_the_log_line_keeps_milliseconds_and_cpu_seconds_apart() -> None:
    line = breakdown_text({"merge": 3456.7, "spark_jobs": 25.0, "cpu.jit": 3.456, "cpu.all": 11.0})
    assert line == "ms: merge 3,457, spark_jobs 25; JVM CPU s: jit 3.46, all 11.00"
    assert breakdown_text({"merge": 1.0}) == "ms: merge 1"
    busy = breakdown_text({"merge": 1.0, "cpu.all": 9.0, "machine.busy_pct": 94.6, "machine.outside_jvm": 0.5})
    assert busy == "ms: merge 1; JVM CPU s: all 9.00; machine 95 % busy, 0.50 CPU s outside the JVM"


def test_a_batch_reports_the_classes_spark_generated_for_it() -> None:
    reports = [{"phases_ms": {"total": 5000.0}, "codegen": {"classes": n}} for n in (41, 4, 9)]
    phases = [batch_phases(r) for r in reports]
    assert [p["codegen.classes"] for p in phases] == [41.0, 4.0, 9.0]
    figures = _phase_figures([{f"phase:{k}": v for k, v in p.items()} for p in phases])
    generated = figures["codegen_classes_per_batch"]
    assert generated["median"] == 9 and generated["unit"] == "classes"
    assert "phase_ms.codegen.classes" not in figures
    assert breakdown_text(phases[1]).endswith("spark_tasks 0; 4 class(es) generated")
    assert "codegen.classes" not in batch_phases({"phases_ms": {"total": 1.0}})  # a worker that does not count them


def test_the_machine_counts_a_busy_thread_as_busy() -> None:
    """Burning 0.3 s of CPU in this process moves the machine's busy seconds by at least that much
    (other processes only add), and busy plus idle cover the wall time on every core."""
    cores = os.cpu_count() or 1
    before, t0 = machine_cpu_s(), time.monotonic()
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass
    after, wall = machine_cpu_s(), time.monotonic() - t0
    busy, idle = after["busy"] - before["busy"], after["idle"] - before["idle"]
    assert busy >= 0.25  # clock ticks, rounded
    assert abs(busy + idle - wall * cores) <= 0.05 * cores + 0.1 * wall * cores


def test_a_batch_reports_how_busy_the_machine_was_and_what_ran_outside_the_jvm() -> None:
    reports = [{"phases_ms": {"total": 5000.0}, "jvm_cpu_s": {"all": jvm},
                "machine_cpu_s": {"busy": busy, "idle": 10.0 - busy}}
               for jvm, busy in ((8.0, 9.0), (8.5, 9.6), (7.0, 8.0))]
    phases = [batch_phases(r) for r in reports]
    assert phases[0]["machine.busy_pct"] == 90.0 and phases[0]["machine.outside_jvm"] == 1.0
    figures = _phase_figures([{f"phase:{k}": v for k, v in p.items()} for p in phases])
    assert figures["machine_busy_pct"]["median"] == 90 and figures["machine_busy_pct"]["unit"] == "%"
    assert figures["machine_cpu_s_per_batch.outside_jvm"]["median"] == 1.0
    assert "phase_ms.machine.busy_pct" not in figures
    # no /proc/stat reading (not Linux): no machine figures, the rest as before
    assert "machine.busy_pct" not in batch_phases({"phases_ms": {"total": 1.0}, "machine_cpu_s": {}})
