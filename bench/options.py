"""What each benchmark section is asked to do: the options ``bench.run`` builds from its command line.

Plain data, imported by the sections and by :mod:`bench.debezium` (which runs the same workloads on
Debezium), so that none of them imports another to learn its options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class DebeziumOptions:
    """Debezium's runs beside the sidecar's (:mod:`bench.debezium`)."""

    changes: int = 100_000
    """Streaming throughput: preloaded changes (the sidecar's runs use ``--changes``)."""
    stock_changes: int = 20_000
    """One extra throughput run with Connect's stock producer settings (0: skip)."""
    range_rows: int = 65_536
    """Key-range snapshot during which the live latency is measured."""
    chunk_size: int = 1024


@dataclass
class StreamingOptions:
    """The streaming section (:mod:`bench.streaming`)."""

    runs: int = 3
    changes: int = 300_000
    tx_rows: int = 1_000
    rate: int = 5_000
    duration_s: float = 15.0
    warmup_s: float = 2.0
    latency_tx_rows: int = 20
    profile_dir: Path | None = None
    profiler: str = "cprofile"
    connector_overrides: dict[str, object] = field(default_factory=dict)
    debezium: DebeziumOptions | None = None
    """Also run the workloads on Debezium (:mod:`bench.debezium`), interleaved with the sidecar's runs."""


@dataclass
class SnapshotOptions:
    """The incremental-snapshot section (:mod:`bench.snapshot`)."""

    runs: int = 3
    rows: int = 1_000_000
    range_rows: int = 131_072
    base_chunk: int = 1024
    chunk_sizes: tuple[int, ...] = (4096, 16384, 65536)
    range_repeats: int = 3
    """Key-range snapshots per chunk size in each idle session, in rounds (every size once a round); the run's
    figure for a size is their median (one ~1 s snapshot alone moved ±15-25 % from run to run)."""
    live_rate: int = 2_000
    live_tx_rows: int = 20
    idle_s: float = 10.0
    warmup_s: float = 2.0
    connector_overrides: dict[str, object] = field(default_factory=dict)
    debezium: DebeziumOptions | None = None
    """Also run Debezium's sessions (:mod:`bench.debezium`), one after each idle session."""
