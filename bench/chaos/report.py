"""The chaos run's figures and results files: ``bench/results/chaos-<UTC timestamp>.json`` and ``.md``, each
also as ``chaos-latest.*`` (quick runs write ``chaos-quick-*``, so the test never replaces a full run's files).

:func:`figures` turns what the run recorded into the figures of issue 17: faults per kind (planned, injected),
recovery per kind (p50 and max, to Kafka and to Delta), rows compared, ``chaos.lost_rows`` / ``stale_rows`` /
``mismatched_rows`` (must be 0), duplicates delivered (counted), time to converge, peak lag and WAL retained.
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
            "not_recovered": sum(1 for f in mine if f.get("recovery_delta_s") is None),
        }
    return out


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
        "", "| fault | planned | injected | recovery to Kafka p50 / max (s) | to Delta p50 / max (s) |",
        "|---|---|---|---|---|",
    ]
    for kind, counts in doc["faults"]["counts"].items():
        rec = doc["recovery"].get(kind, {})
        kafka, delta = rec.get("kafka_s", {}), rec.get("delta_s", {})
        lines.append(f"| {kind} | {counts['planned']} | {counts['injected']} | {kafka.get('p50')} / {kafka.get('max')} "
                     f"| {delta.get('p50')} / {delta.get('max')} |")
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
