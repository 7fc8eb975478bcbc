"""The fault injector: the plan's seeded schedule, one fault at a time.

Each fault is recorded with the moment it hit (``at``) and the moment recovery is measured from
(``recover_from``: the same for a kill or a restart; the broker's start for ``kafka_outage``), and after each
one :class:`bench.chaos.probes.RecoveryProbe` writes a marker row whose arrival in Kafka and in Delta gives the
recovery time. Faults follow the schedule but never overlap (:data:`MIN_GAP_S`). A fault whose precondition never
came (no snapshot window opened in time) is recorded as not injected, so the results show it instead of hiding it.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import httpx

from bench.chaos.plan import ChaosPlan
from bench.chaos.private_stack import PrivateStack
from bench.chaos.probes import RecoveryProbe
from bench.chaos.signals import KEYED, SignalDriver, pattern
from bench.chaos.supervisor import Supervised

MIN_GAP_S = 5.0
"""A fault never starts sooner than this after the previous one was done (a long one, such as the broker outage,
pushes the next ones back instead of letting two hit at once, which would blur their recovery times)."""


@dataclass
class Fault:
    """One fault: its kind, when it hit and when recovery is measured from (``time.time()``)."""

    number: int
    kind: str
    planned_at_s: float
    at: float = 0.0
    recover_from: float = 0.0
    injected: bool = False
    detail: str = ""


class FaultInjector(threading.Thread):
    """Runs ``plan.schedule()`` from ``start_time`` (``time.monotonic()``); ``faults`` is the record."""

    def __init__(self, plan: ChaosPlan, stack: PrivateStack, sidecar: Supervised, job: Supervised,
                 signals: SignalDriver, probe: RecoveryProbe) -> None:
        super().__init__(name="chaos-faults", daemon=True)
        self.plan = plan
        self.stack = stack
        self.sidecar = sidecar
        self.job = job
        self.signals = signals
        self.probe = probe
        self.rng = random.Random(plan.seed + 3)
        self.faults: list[Fault] = []
        self.error: BaseException | None = None
        self.start_time = 0.0
        self.api = httpx.Client(base_url=signals.pipeline.api_url, timeout=5)

    def run(self) -> None:
        try:
            previous_done = 0.0
            for number, (offset, kind) in enumerate(self.plan.schedule(), start=1):
                delay = max(self.start_time + offset, previous_done + MIN_GAP_S) - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                fault = Fault(number, kind, round(offset, 1))
                self.faults.append(fault)
                getattr(self, f"_{kind}")(fault)
                if fault.injected:
                    self.probe.mark(fault.number, fault.recover_from)
                previous_done = time.monotonic()
        except BaseException as exc:
            self.error = exc
        finally:
            self.api.close()

    def _extra_number(self) -> int:
        """A fault number no scheduled fault has (their numbers are 1..len(schedule))."""
        return len(self.plan.schedule()) + 1 + sum(1 for f in self.faults if f.kind == "sidecar_kill_kafka_down")

    def records(self) -> list[dict[str, Any]]:
        return [asdict(f) for f in self.faults]

    # -- the processes -----------------------------------------------------------------------------------
    def _kill(self, target: Supervised, fault: Fault, wait_alive_s: float = 120.0) -> None:
        deadline = time.monotonic() + wait_alive_s
        while not target.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        fault.at = fault.recover_from = time.time()
        fault.injected = target.kill9()
        fault.detail = f"kill -9 of {target.name} (start {target.starts})"

    def _sidecar_kill(self, fault: Fault) -> None:
        self._kill(self.sidecar, fault)

    def _spark_kill(self, fault: Fault) -> None:
        self._kill(self.job, fault)

    def _window_open(self) -> bool:
        try:
            body = self.api.get("/snapshots").json()
        except (httpx.HTTPError, ValueError):
            return False
        return bool(body.get("running")) and not body.get("paused") and any(
            t.get("state") == "running" and t.get("chunk_to") is not None for t in body.get("tables", []))

    def _sidecar_kill_in_window(self, fault: Fault) -> None:
        """Kill while a chunk is open; if no snapshot runs, start one over HTTP first (and resume a paused one)."""
        deadline = time.monotonic() + 90
        asked = False
        while time.monotonic() < deadline:
            if self._window_open():
                time.sleep(self.rng.uniform(0.0, 0.3))
                self._kill(self.sidecar, fault, wait_alive_s=0)
                fault.detail += " inside an open snapshot chunk window"
                return
            if not asked and self.sidecar.alive():
                table = self.rng.choice(KEYED)
                self.signals.change_chunk_size(64)  # many small chunks: windows open often enough to be caught
                self.signals.send("resume-snapshot", {}, "http", label="window-resume")
                asked = self.signals.send("execute-snapshot", {"data-collections": [pattern(table.name)],
                                                               "type": "incremental"}, "http",
                                          label="window").acknowledged
            time.sleep(0.02)
        fault.detail = "no snapshot chunk window opened within 90 s: not injected"

    # -- Kafka -------------------------------------------------------------------------------------------
    def _kafka_restart(self, fault: Fault) -> None:
        fault.at = time.time()
        self.stack.stop_kafka()
        self.stack.start_kafka()
        fault.recover_from, fault.injected = fault.at, True
        fault.detail = f"graceful broker restart, down {time.time() - fault.at:.1f} s"

    def _kafka_kill(self, fault: Fault) -> None:
        fault.at = time.time()
        self.stack.kill_kafka()
        time.sleep(2)
        self.stack.start_kafka()
        fault.recover_from, fault.injected = fault.at, True
        fault.detail = f"kill -9 of the broker, down {time.time() - fault.at:.1f} s"

    def _kafka_outage(self, fault: Fault) -> None:
        fault.at = time.time()
        self.stack.stop_kafka()
        half = self.plan.kafka_outage_s / 2
        time.sleep(half)
        kills = self.plan.faults.get("sidecar_kill_kafka_down", 0)
        for _ in range(kills):
            inner = Fault(self._extra_number(), "sidecar_kill_kafka_down",
                          round(time.monotonic() - self.start_time, 1))
            self.faults.append(inner)
            self._kill(self.sidecar, inner, wait_alive_s=half / 2)
            inner.detail += " while the broker is down"
            time.sleep(half / (kills + 1))
        time.sleep(max(0.0, fault.at + self.plan.kafka_outage_s - time.time()))
        self.stack.start_kafka()
        fault.recover_from, fault.injected = time.time(), True
        fault.detail = f"broker stopped for {fault.recover_from - fault.at:.1f} s while PostgreSQL took writes"
        for inner in self.faults:
            if inner.kind == "sidecar_kill_kafka_down" and inner.injected and inner.recover_from < fault.recover_from:
                inner.recover_from = fault.recover_from  # nothing can reach Kafka before it is back
                self.probe.mark(inner.number, inner.recover_from)

    # -- PostgreSQL ----------------------------------------------------------------------------------------
    def _pg_restart(self, fault: Fault, mode: str) -> None:
        fault.at = fault.recover_from = time.time()
        self.stack.restart_postgres(mode)
        fault.injected = True
        fault.detail = f"pg_ctl restart -m {mode}, {time.time() - fault.at:.1f} s"

    def _pg_restart_fast(self, fault: Fault) -> None:
        self._pg_restart(fault, "fast")

    def _pg_restart_immediate(self, fault: Fault) -> None:
        self._pg_restart(fault, "immediate")
