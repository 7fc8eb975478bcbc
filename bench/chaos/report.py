"""The chaos run's figures and results files: ``bench/results/chaos-<UTC timestamp>.json`` and ``.md``, each
also as ``chaos-latest.*`` (quick runs write ``chaos-quick-*``, so the test never replaces a full run's files).

The figures of issue 17: faults per kind (planned, injected), recovery per kind (p50 and max, to Kafka and to
Delta), rows compared, ``chaos.lost_rows`` / ``stale_rows`` / ``mismatched_rows`` (must be 0), duplicates
delivered (counted), time to converge, peak lag and WAL retained. Recovery to Delta is from the fault until a
change made after it is in Delta, so it includes how far behind the apply job runs: the results give that lag
beside it (the probe's pulses, :mod:`bench.chaos.probes`), how far behind Delta was at each fault, when Delta moved
again after it, and the apply job's batch times (:mod:`bench.chaos.joblog`), so a slow consumer shows as such.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from bench.results import RESULTS_DIR


def _p50_max(values: list[float]) -> dict[str, Any]:
    return {"p50": round(statistics.median(values), 2) if values else None,
            "max": round(max(values), 2) if values else None, "n": len(values)}


def recovery_by_kind(faults: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in sorted({f["kind"] for f in faults}):
        mine = [f for f in faults if f["kind"] == kind and f["injected"]]
        out[kind] = {
            "kafka_s": _p50_max([f["recovery_kafka_s"] for f in mine if f.get("recovery_kafka_s") is not None]),
            "delta_s": _p50_max([f["recovery_delta_s"] for f in mine if f.get("recovery_delta_s") is not None]),
            "delta_behind_s": _p50_max([f["delta_behind_s"] for f in mine if f.get("delta_behind_s") is not None]),
            "delta_moving_s": _p50_max([f["delta_moving_s"] for f in mine if f.get("delta_moving_s") is not None]),
            "not_recovered": sum(1 for f in mine if f.get("recovery_delta_s") is None),
            "not_seen_in_kafka": sum(1 for f in mine if f.get("recovery_kafka_s") is None),
        }
    return out


def lag_figures(lag: dict[str, list[float]], pulses: int, interval_s: float, job: dict[str, Any]) -> dict[str, Any]:
    """The pipeline's lag from the probe's pulses (insert to Kafka, insert to Delta: p50 and max over the run,
    faults included) and the apply job's batch figures (:func:`bench.chaos.joblog.batch_figures`), with the
    overrun batches' p50 and max."""
    overran = job.get("overran_s", [])
    return {"pulses": pulses, "pulse_interval_s": interval_s, "kafka_s": _p50_max(lag["kafka_s"]),
            "delta_s": _p50_max(lag["delta_s"]),
            "apply_job": {**{k: v for k, v in job.items() if k != "overran_s"}, "overran": _p50_max(overran)}}


def fault_counts(planned: dict[str, int], faults: list[dict[str, Any]]) -> dict[str, Any]:
    injected = Counter(f["kind"] for f in faults if f["injected"])
    return {kind: {"planned": count, "injected": injected.get(kind, 0)} for kind, count in planned.items()}


def chaos_totals(tables: dict[str, Any]) -> dict[str, int]:
    """The figures that must be 0 (and the counted duplicates), summed over tables and both targets."""
    totals = Counter[str]()
    for verdict in tables.values():
        totals["rows_compared"] += verdict["source_rows"] * 2
        totals["stale_rows"] += verdict["stale_reads"]
        totals["duplicates_delivered"] += verdict["duplicates"]
        for target in ("topic", "delta"):
            found = verdict[target]
            totals["lost_rows"] += found["lost"]
            totals["mismatched_rows"] += found["mismatched"] + found["extra"]
            totals["checksum_differences"] += 0 if found["checksum_equal"] else 1
    return dict(totals)


def write(document: dict[str, Any], quick: bool, directory: Path = RESULTS_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    stem = "chaos-quick" if quick else "chaos"
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    data = orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    markdown = render_markdown(document).encode()
    written = []
    for name in (f"{stem}-{stamp}", f"{stem}-latest"):
        for suffix, content in ((".json", data), (".md", markdown)):
            path = directory / f"{name}{suffix}"
            path.write_bytes(content)
            written.append(path)
    return written


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / 1024 / 1024:,.1f} MiB"


def _pair(figure: dict[str, Any] | None) -> str:
    return "-" if not figure or figure.get("p50") is None else f"{figure['p50']} / {figure['max']}"


def _lag_lines(lag: dict[str, Any] | None) -> list[str]:
    """The lag rows of the figures table and the sentence naming the apply job's batch times."""
    if not lag:
        return []
    job = lag["apply_job"]
    lines = [f"| lag insert → Kafka p50 / max ({lag['pulses']} pulses, one per {lag['pulse_interval_s']:.0f} s) "
             f"| {_pair(lag['kafka_s'])} s |",
             f"| lag insert → Delta p50 / max | {_pair(lag['delta_s'])} s |"]
    trigger = "?" if job.get("trigger_ms") is None else f"{job['trigger_ms'] / 1000:.0f} s"
    lines += ["", f"Apply job: {job['batches']} micro-batches (trigger interval {trigger}), {job['events']:,} events "
                  f"in {job['table_merges']} table MERGEs taking {job['merge_s']:,.0f} s in all; "
                  f"{job['overran']['n']} batches overran the trigger, taking {_pair(job['overran'])} s (p50 / max)."]
    return lines


def render_markdown(doc: dict[str, Any]) -> str:
    chaos = doc["chaos"]
    lines = [
        f"# Chaos run ({doc['plan']['name']}, seed {doc['plan']['seed']}): "
        f"{'PASS' if doc['verdict']['ok'] else 'FAIL'}",
        "",
        f"{doc['started_at']}, {doc['duration_s']:.0f} s; commit {doc['machine'].get('git_commit') or '?'}; "
        f"{doc['machine'].get('cpus')} CPUs.",
        "",
        f"Load: {doc['load']['changes']:,} changes in {doc['load']['transactions']:,} transactions "
        f"({doc['load']['changes_per_s']:.0f}/s, target {doc['plan']['rate']:.0f}/s); one TRUNCATE, one ADD COLUMN, "
        f"one {doc['plan']['large_tx_rows']:,}-row transaction; writer reconnects {doc['load']['reconnects']}.",
        "",
        "| figure | value |", "|---|---|",
    ]
    for name in ("rows_compared", "lost_rows", "stale_rows", "mismatched_rows", "checksum_differences",
                 "duplicates_delivered", "lost_signals", "failed_scans", "unexpected_exits"):
        lines.append(f"| chaos.{name} | {chaos.get(name, 0):,} |")
    converge = doc["converge_s"]
    lines += [
        f"| converged after the last fault | {converge.get('after_last_fault')} s |",
        f"| converged after the writes stopped | {converge.get('after_writes')} s |",
        f"| peak replication lag | {_mb(doc['slot']['peak_lag_bytes'])} |",
        f"| peak WAL retained | {_mb(doc['slot']['peak_retained_bytes'])} |",
        f"| WAL retained after the drain | {_mb(doc['slot']['end_retained_bytes'])} |",
    ]
    lines += _lag_lines(doc.get("lag"))
    lines += [
        "", "Recovery, p50 / max in seconds from the fault (for a broker outage: from the broker's start): until a "
        "change made after it is in Kafka, and in Delta; how far behind Delta was when the fault hit (the age of the "
        "newest change it had), and until Delta applied anything new again (of whatever age).", "",
        "| fault | planned | injected | recovery to Kafka | to Delta | Delta behind at the fault "
        "| Delta moving again |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, counts in doc["faults"]["counts"].items():
        rec = doc["recovery"].get(kind, {})
        cells = [_pair(rec.get(name)) for name in ("kafka_s", "delta_s", "delta_behind_s", "delta_moving_s")]
        lines.append(f"| {kind} | {counts['planned']} | {counts['injected']} | {' | '.join(cells)} |")
    signals = doc["signals"]
    lines += ["", f"Signals: {signals['sent']} sent, {signals['acknowledged']} acknowledged by their channel "
                  f"({signals['acknowledged_by_channel']}), {signals['applied']} applied, "
                  f"{signals['rejected']} rejected with a reason, {signals['lost']} lost; "
                  f"chunk-size changes {doc['snapshots']['chunk_size_changes']}; "
                  f"table scans {doc['snapshots']['table_scans']}; read-only phase: {doc['snapshots']['read_only']}.",
              "", "| table | source rows | topic lost / extra / mismatched | Delta lost / extra / mismatched | "
                  "READs | stale READs | duplicates |", "|---|---|---|---|---|---|---|"]
    for name, t in doc["tables"].items():
        topic, delta = t["topic"], t["delta"]
        lines.append(f"| {name} | {t['source_rows']:,} | {topic['lost']} / {topic['extra']} / {topic['mismatched']} | "
                     f"{delta['lost']} / {delta['extra']} / {delta['mismatched']} | {t['reads']:,} | "
                     f"{t['stale_reads']} | {t['duplicates']:,} |")
    if doc["verdict"]["failures"]:
        lines += ["", "Failures:", *[f"- {f}" for f in doc["verdict"]["failures"]]]
    return "\n".join(lines) + "\n"
