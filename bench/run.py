"""``python -m bench.run`` (``make bench``): start the local stack, run the benchmarks, write
``bench/results/<UTC timestamp>.json`` and ``bench/results/latest.json``, print a table, and stop
whatever part of the stack this run started.

Sections run in the order given by ``--only`` (default: all registered in :data:`SECTIONS`).
Adding a benchmark: a module with a function ``(settings, args, log) -> dict`` returning
``{section name: {figure name: bench.stats.summarize(...)}}``, registered in :data:`SECTIONS`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.results import format_table, machine_info, write_results
from bench.streaming import StreamingOptions, run_streaming
from signaller.devstack import Stack, StackSettings

Section = Callable[[StackSettings, argparse.Namespace, Callable[[str], None]], dict[str, Any]]


def _streaming(settings: StackSettings, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    options = StreamingOptions(
        runs=args.runs, changes=args.changes, tx_rows=args.tx_rows, rate=args.rate,
        duration_s=args.duration, warmup_s=args.warmup, latency_tx_rows=args.latency_tx_rows,
        profile_dir=Path(args.profile_dir) if args.profile_dir else None, profiler=args.profiler,
        connector_overrides=dict(item.split("=", 1) for item in args.set),
    )
    if options.profile_dir:
        options.profile_dir.mkdir(parents=True, exist_ok=True)
    return run_streaming(settings, options, log)


SECTIONS: dict[str, Section] = {"streaming": _streaming}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=sorted(SECTIONS), default=list(SECTIONS),
                        help="sections to run (default: all)")
    parser.add_argument("--runs", type=int, default=3, help="repetitions of every measurement (default 3)")
    parser.add_argument("--changes", type=int, default=300_000, help="throughput: preloaded changes")
    parser.add_argument("--tx-rows", type=int, default=1_000, help="throughput: rows per preload transaction")
    parser.add_argument("--rate", type=int, default=5_000, help="latency: offered changes per second")
    parser.add_argument("--duration", type=float, default=20.0, help="latency: measured seconds")
    parser.add_argument("--warmup", type=float, default=2.0, help="latency: seconds written before measuring")
    parser.add_argument("--latency-tx-rows", type=int, default=20, help="latency: rows per writer transaction")
    parser.add_argument("--profile-dir", help="run the sidecar under a profiler, one file per run here")
    parser.add_argument("--profiler", choices=["cprofile", "pyinstrument"], default="cprofile",
                        help="cProfile .prof stats, or pyinstrument's call tree as .txt (pip install pyinstrument)")
    parser.add_argument("--set", action="append", default=[], metavar="PROP=VALUE",
                        help="extra Debezium/signaller property for the sidecar under test (repeatable), "
                             "e.g. --set producer.linger.ms=20")
    parser.add_argument("--no-write", action="store_true", help="print the table but write no results file")
    return parser.parse_args(argv)


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
        for name in args.only:
            log(f"[{name}]")
            t0 = time.monotonic()
            document.update(SECTIONS[name](stack.settings, args, log))
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
        "sections": args.only,
        "command": " ".join(["python -m bench.run", *(sys.argv[1:] if argv is None else argv)]),
    }
    print(format_table(document))
    if not args.no_write:
        stamped, latest = write_results(document)
        print(f"wrote {stamped} and {latest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
