"""What a chaos run does, as data: load, sizes, durations and the seeded fault schedule.

``FULL`` is ``make chaos`` (about 15 minutes); ``QUICK`` is the two-minute version that runs in ``make test``.
A plan never changes during a run; the seed and the plan are written into the results.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any

FAULT_KINDS = (
    "sidecar_kill",             # kill -9 of the sidecar at a random moment
    "sidecar_kill_in_window",   # kill -9 of the sidecar while an incremental snapshot has a chunk open
    "sidecar_kill_kafka_down",  # kill -9 of the sidecar while it waits on an unreachable Kafka broker
    "spark_kill",               # kill -9 of the apply job (its driver and JVM)
    "kafka_restart",            # graceful broker restart (SIGTERM, start again)
    "kafka_kill",               # kill -9 of the broker, start again
    "pg_restart_fast",          # pg_ctl restart -m fast
    "pg_restart_immediate",     # pg_ctl restart -m immediate (crash recovery)
    "kafka_outage",             # broker stopped for ``kafka_outage_s`` while PostgreSQL takes writes
)
"""Every fault the injector knows (:mod:`bench.chaos.faults`)."""


@dataclass(frozen=True)
class ChaosPlan:
    """One run's parameters. ``faults`` counts each kind to inject during the chaos phase (a
    ``sidecar_kill_kafka_down`` happens inside a ``kafka_outage``, so it needs one)."""

    name: str
    seed: int
    chaos_s: float
    """Length of the chaos phase: load, signals and faults."""
    warmup_s: float
    """No fault before this many seconds into the chaos phase (the pipeline starts up)."""
    quiet_tail_s: float
    """No fault in the last seconds of the chaos phase (the final snapshot gets going)."""
    rate: float
    """Target changes per second of the writer."""
    changes_per_tx: int
    key_space: int
    """Keys 0..key_space-1 of each table are written to; half of them are seeded before the sidecar starts."""
    large_tx_rows: int
    toast_chars: int
    """Length of the TOASTed text written on insert (random hex: incompressible, stored out of line)."""
    kafka_outage_s: float
    signal_interval_s: float
    drain_timeout_s: float
    faults: dict[str, int] = field(default_factory=dict)

    def with_seed(self, seed: int) -> ChaosPlan:
        return replace(self, seed=seed)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def schedule(self) -> list[tuple[float, str]]:
        """``(seconds into the chaos phase, fault kind)``, sorted by time; seeded by ``seed``. Times are
        spread uniformly over ``[warmup_s, chaos_s - quiet_tail_s]``, at least 4 s apart."""
        rng = random.Random(self.seed)
        kinds = [kind for kind, count in self.faults.items() if kind != "sidecar_kill_kafka_down"
                 for _ in range(count)]
        rng.shuffle(kinds)
        start, end = self.warmup_s, self.chaos_s - self.quiet_tail_s
        slot = (end - start) / max(1, len(kinds))
        times = [start + i * slot + rng.uniform(0, max(0.0, slot - 4.0)) for i in range(len(kinds))]
        return list(zip(times, kinds, strict=True))


FULL = ChaosPlan(
    name="full", seed=17, chaos_s=720.0, warmup_s=45.0, quiet_tail_s=60.0, rate=2000.0, changes_per_tx=8,
    key_space=40_000, large_tx_rows=200_000, toast_chars=4096, kafka_outage_s=60.0, signal_interval_s=15.0,
    drain_timeout_s=600.0,
    faults={"sidecar_kill": 12, "sidecar_kill_in_window": 7, "sidecar_kill_kafka_down": 1, "spark_kill": 5,
            "kafka_restart": 1, "kafka_kill": 1, "pg_restart_fast": 1, "pg_restart_immediate": 1,
            "kafka_outage": 1},
)

QUICK = ChaosPlan(
    name="quick", seed=17, chaos_s=120.0, warmup_s=25.0, quiet_tail_s=20.0, rate=300.0, changes_per_tx=6,
    key_space=4_000, large_tx_rows=20_000, toast_chars=4096, kafka_outage_s=15.0, signal_interval_s=6.0,
    drain_timeout_s=300.0,
    faults={"sidecar_kill": 1, "sidecar_kill_in_window": 1, "sidecar_kill_kafka_down": 1, "spark_kill": 1,
            "kafka_kill": 1, "pg_restart_fast": 1, "pg_restart_immediate": 1, "kafka_outage": 1},
)

PLANS = {"full": FULL, "quick": QUICK}
