"""``python -m bench.run`` (``make bench``): start the local stack, run the benchmarks (the sidecar's
and, in the streaming and snapshot sections, Debezium's on the same workloads), write
``bench/results/<UTC timestamp>.{json,md,png}`` and ``bench/results/latest.{json,md,png}``, print a
table, and stop whatever part of the stack this run started.

Sections run in the order given by ``--sections`` (default: all registered in :data:`SECTIONS`:
streaming, snapshot, apply). ``--quick``: one run and smaller sizes, for development.
Adding a benchmark: a module with a function ``(settings, args, log) -> dict`` returning
``{section name: {figure name: bench.stats.summarize(...)}}``, registered in :data:`SECTIONS`
(a returned ``rss_mb`` object is merged into the document's ``rss_mb``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.apply import ApplyOptions, run_apply
from bench.mariadb import MariaDbOptions, run_mariadb
from bench.options import DebeziumOptions, SnapshotOptions, StreamingOptions
from bench.results import format_table, machine_info, write_results
from bench.snapshot import run_snapshot
from bench.streaming import run_streaming
from bench.sustained import SIDECAR_MAX_CHANGES_PER_S
from devtools import Stack, StackSettings

Section = Callable[[StackSettings, argparse.Namespace, Callable[[str], None]], dict[str, Any]]


def _debezium(args: argparse.Namespace) -> DebeziumOptions | None:
    if args.no_debezium:
        return None
    return DebeziumOptions(changes=args.debezium_changes, stock_changes=args.debezium_stock_changes,
                           range_rows=args.debezium_range_rows)


def _streaming(settings: StackSettings, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    options = StreamingOptions(
        runs=args.runs, changes=args.changes, tx_rows=args.tx_rows, rate=args.rate,
        duration_s=args.duration, warmup_s=args.warmup, latency_tx_rows=args.latency_tx_rows,
        profile_dir=Path(args.profile_dir) if args.profile_dir else None, profiler=args.profiler,
        connector_overrides=dict(item.split("=", 1) for item in args.set), debezium=_debezium(args),
    )
    if options.profile_dir:
        options.profile_dir.mkdir(parents=True, exist_ok=True)
    return run_streaming(settings, options, log)


def _snapshot(settings: StackSettings, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    options = SnapshotOptions(
        runs=args.runs, rows=args.snapshot_rows, range_rows=args.range_rows, chunk_sizes=tuple(args.chunk_sizes),
        range_repeats=args.range_repeats, live_rate=args.live_rate, idle_s=args.idle,
        connector_overrides=dict(item.split("=", 1) for item in args.set),
        debezium=_debezium(args),
    )
    return run_snapshot(settings, options, log)


def _apply(settings: StackSettings, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    small, large = args.apply_batches
    options = ApplyOptions(runs=args.runs, rows=args.apply_rows, small=small, large=large, warmup=args.apply_warmup,
                           e2e_rate=args.e2e_rate, e2e_window_s=args.e2e_window, e2e_warmup_s=args.e2e_warmup,
                           sustained_rate=args.sustained_rate or args.measured_max_rate or SIDECAR_MAX_CHANGES_PER_S,
                           sustained_s=args.sustained_s)
    return run_apply(settings, options, log)


def _mariadb(settings: StackSettings, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    import tempfile

    options = MariaDbOptions(runs=args.runs, changes=args.mariadb_changes, snapshot_rows=args.mariadb_snapshot_rows,
                             debezium=not args.no_debezium)
    with tempfile.TemporaryDirectory(prefix="bench-mariadb-") as workdir:
        return run_mariadb(settings, options, log, Path(workdir))


SECTIONS: dict[str, Section] = {"streaming": _streaming, "snapshot": _snapshot, "apply": _apply, "mariadb": _mariadb}

QUICK = {
    "runs": 1, "changes": 50_000, "duration": 5.0, "warmup": 1.0,
    "snapshot_rows": 100_000, "range_rows": 32_768, "chunk_sizes": [4096, 16384], "range_repeats": 1,
    "idle": 5.0,
    "apply_rows": 100_000, "apply_batches": [2_000, 20_000], "apply_warmup": 500, "e2e_window": 10.0,
    "e2e_warmup": 5.0, "sustained_s": 20.0,
    "debezium_changes": 20_000, "debezium_stock_changes": 0, "debezium_range_rows": 16_384,
    "mariadb_changes": 20_000, "mariadb_snapshot_rows": 20_000,
}
"""``--quick``: what changes (options given explicitly still win)."""
DEFAULTS = {
    "runs": 3, "changes": 300_000, "duration": 15.0, "warmup": 2.0,
    "snapshot_rows": 1_000_000, "range_rows": 131_072, "chunk_sizes": [4096, 65536], "range_repeats": 3,
    "idle": 10.0,
    "apply_rows": 1_000_000, "apply_batches": [10_000, 100_000], "apply_warmup": 1_000, "e2e_window": 30.0,
    "e2e_warmup": 15.0, "sustained_s": 60.0,
    "debezium_changes": 100_000, "debezium_stock_changes": 20_000, "debezium_range_rows": 65_536,
    "mariadb_changes": 100_000, "mariadb_snapshot_rows": 200_000,
}


def _sections(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in SECTIONS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    return names


def _ints(text: str) -> list[int]:
    return [int(item) for item in text.split(",") if item.strip()]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", type=_sections, default=None, metavar="LIST",
                        help=f"comma-separated sections to run, in order (default: {','.join(SECTIONS)})")
    parser.add_argument("--only", nargs="*", choices=sorted(SECTIONS), default=None,
                        help="the same as --sections, space-separated (kept for old command lines)")
    parser.add_argument("--quick", action="store_true",
                        help="one run and smaller sizes, for development: " + ", ".join(
                            f"{k.replace('_', '-')} {v}" for k, v in QUICK.items()))
    parser.add_argument("--runs", type=int, help="repetitions of every measurement (default 3)")
    group = parser.add_argument_group("streaming")
    group.add_argument("--changes", type=int, help="throughput: preloaded changes (default 300,000)")
    group.add_argument("--tx-rows", type=int, default=1_000, help="throughput: rows per preload transaction")
    group.add_argument("--rate", type=int, default=5_000, help="latency: offered changes per second")
    group.add_argument("--duration", type=float, help="latency: measured seconds (default 15)")
    group.add_argument("--warmup", type=float, help="latency: seconds written before measuring (default 2)")
    group.add_argument("--latency-tx-rows", type=int, default=20, help="latency: rows per writer transaction")
    group.add_argument("--profile-dir", help="run the sidecar under a profiler, one file per run here")
    group.add_argument("--profiler", choices=["cprofile", "pyinstrument"], default="cprofile",
                       help="cProfile .prof stats, or pyinstrument's call tree as .txt (pip install pyinstrument)")
    group = parser.add_argument_group("snapshot")
    group.add_argument("--snapshot-rows", type=int, help="rows of the snapshotted table (default 1,000,000)")
    group.add_argument("--range-rows", type=int,
                       help="key-range snapshots (chunk-size search, under load): rows (default 131,072)")
    group.add_argument("--chunk-sizes", type=_ints, metavar="N,N,...",
                       help="chunk sizes tried besides 1024 (default 4096,65536)")
    group.add_argument("--range-repeats", type=int,
                       help="key-range snapshots per chunk size per idle session, their median the run's figure "
                            "(default 3)")
    group.add_argument("--live-rate", type=int, default=2_000, help="live writer's changes/s (default 2,000)")
    group.add_argument("--idle", type=float, help="idle live-latency window, s (default 10)")
    group = parser.add_argument_group("apply")
    group.add_argument("--apply-rows", type=int, help="rows of the Delta table (default 1,000,000; cached)")
    group.add_argument("--apply-batches", type=_ints, metavar="SMALL,LARGE",
                       help="micro-batch sizes in changes (default 10000,100000)")
    group.add_argument("--apply-warmup", type=int, help="changes in the untimed first batch (default 1,000)")
    group.add_argument("--e2e-rate", type=int, default=1_000, help="end-to-end writer's changes/s (default 1,000)")
    group.add_argument("--e2e-window", type=float, help="end-to-end: seconds per measured window (default 30)")
    group.add_argument("--e2e-warmup", type=float, help="end-to-end: seconds written before measuring (default 15)")
    group.add_argument("--sustained-rate", type=int,
                       help="sustained load: changes/s offered to the apply job (default: the streaming section's "
                            f"max_changes_per_s when it ran before, else {SIDECAR_MAX_CHANGES_PER_S:,})")
    group.add_argument("--sustained-s", type=float, help="sustained load: seconds offered (default 60)")
    group = parser.add_argument_group("mariadb (the sidecar's MariaDB source and Debezium's MariaDB connector)")
    group.add_argument("--mariadb-changes", type=int, help="binlog catch-up throughput: changes (default 100,000)")
    group.add_argument("--mariadb-snapshot-rows", type=int, help="rows of the snapshotted table (default 200,000)")
    group = parser.add_argument_group("Debezium (in the streaming, snapshot and mariadb sections)")
    group.add_argument("--no-debezium", action="store_true", help="run only the sidecar's workloads")
    group.add_argument("--debezium-changes", type=int,
                       help="streaming throughput: changes preloaded for Debezium (default 100,000)")
    group.add_argument("--debezium-stock-changes", type=int,
                       help="one extra throughput run with Connect's stock producer settings: changes "
                            "(default 20,000; 0 skips it)")
    group.add_argument("--debezium-range-rows", type=int,
                       help="key-range snapshot during which Debezium's live latency is measured (default 65,536)")
    parser.add_argument("--set", action="append", default=[], metavar="PROP=VALUE",
                        help="extra Debezium/signaller property for the sidecar under test (repeatable), "
                             "e.g. --set producer.linger.ms=20")
    parser.add_argument("--no-write", action="store_true", help="print the table but write no results file")
    args = parser.parse_args(argv)
    if args.sections is not None and args.only is not None:
        parser.error("give --sections or --only, not both")
    args.sections = args.sections or args.only or list(SECTIONS)
    for key, value in DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, QUICK[key] if args.quick else value)
    if args.range_repeats < 1:
        parser.error(f"--range-repeats {args.range_repeats}: give at least 1 (key-range snapshots per chunk size)")
    if len(args.apply_batches) != 2:
        parser.error("--apply-batches takes two sizes: SMALL,LARGE")
    args.measured_max_rate = None
    return args


def _measured_max_rate(document: dict[str, Any]) -> int | None:
    """The sidecar's ``streaming.max_changes_per_s`` (median) when this run measured it."""
    figure = document.get("streaming", {}).get("max_changes_per_s")
    median = figure.get("median") if isinstance(figure, dict) else None
    return int(median) if isinstance(median, (int, float)) and median > 0 else None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def log(line: str) -> None:
        print(line, flush=True)

    stack = Stack()
    log("starting the local stack (PostgreSQL, Kafka) if needed ...")
    started = stack.up(with_spark=False)
    began = time.time()
    document: dict[str, Any] = {}
    try:
        machine = machine_info({"stack_started_by_bench": started})
        for name in args.sections:
            log(f"[{name}]")
            t0 = time.monotonic()
            result = SECTIONS[name](stack.settings, args, log)
            rss = result.pop("rss_mb", None)
            document.update(result)
            args.measured_max_rate = _measured_max_rate(document)
            if rss:
                document.setdefault("rss_mb", {}).update(rss)
            log(f"[{name}] {time.monotonic() - t0:.0f}s")
    finally:
        if started:
            log(f"stopping {', '.join(started)} (started by this run)")
            stack.down(started)
    machine["load_average_end"] = list(os.getloadavg())
    document["machine"] = machine
    document["runs"] = {
        "count": args.runs,
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began)),
        "duration_s": round(time.time() - began, 1),
        "sections": args.sections,
        "quick": args.quick,
        "command": " ".join(["python -m bench.run", *(sys.argv[1:] if argv is None else argv)]),
    }
    print(format_table(document))
    if not args.no_write:
        written = write_results(document)
        print("wrote " + ", ".join(str(path) for path in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
