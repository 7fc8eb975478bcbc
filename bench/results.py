"""The results files: ``bench/results/<UTC timestamp>.json``, ``.md`` and ``.png``, and ``latest.*``.

Layout: one object whose keys are *sections* (``streaming``, ``snapshot``, ``apply``, ``mariadb``;
Debezium's figures are in the first two and the last, prefixed ``debezium_``) plus ``rss_mb``, ``machine`` and ``runs``.
A section maps figure names to figures (:data:`bench.stats.Figure`) and may hold a ``parameters``
object describing how it was measured. ``bench/README.md`` documents every field.
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=RESULTS_DIR.parent.parent, capture_output=True, text=True,
                             timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return float("nan")


def machine_info(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the figures were measured on (see README: ``machine``)."""
    import confluent_kafka
    import orjson as orjson_module
    import psycopg2

    status = _git("status", "--porcelain", "--untracked-files=no")
    info: dict[str, Any] = {
        "hostname": platform.node(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "confluent_kafka": confluent_kafka.version()[0],
        "librdkafka": confluent_kafka.libversion()[0],
        "psycopg2": str(getattr(psycopg2, "__version__", "?")).split()[0],
        "orjson": orjson_module.__version__,
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "load_average_start": list(os.getloadavg()),
    }
    info.update(extra or {})
    return info


def write_results(document: dict[str, Any], directory: Path = RESULTS_DIR) -> list[Path]:
    """Write ``<UTC timestamp>.json``, ``.md`` (:func:`bench.report.render_markdown`) and ``.png``
    (:func:`bench.report.render_chart`), each also as ``latest.*``; returns the paths written."""
    from bench.report import render_chart, render_markdown

    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    written: list[Path] = []
    data = orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    markdown = render_markdown(document).encode() + b"\n"
    for suffix, content in ((".json", data), (".md", markdown)):
        for name in (stamp, "latest"):
            target = directory / f"{name}{suffix}"
            target.write_bytes(content)
            written.append(target)
    chart = render_chart(document, directory / f"{stamp}.png")
    latest_chart = directory / "latest.png"
    latest_chart.write_bytes(chart.read_bytes())
    written += [chart, latest_chart]
    return written


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and abs(value) >= 1000:
        return f"{value:,.0f}"
    if isinstance(value, int) and abs(value) >= 1000:
        return f"{value:,}"
    return f"{value}"


def format_table(document: dict[str, Any]) -> str:
    """Every figure of every section as ``name  median  min  max  unit``."""
    rows: list[tuple[str, str, str, str, str]] = [("figure", "median", "min", "max", "unit")]
    for section, body in document.items():
        if section in ("machine", "runs") or not isinstance(body, dict):
            continue
        figures = {section: body} if "median" in body else {f"{section}.{k}": v for k, v in body.items()}
        for name, figure in figures.items():
            if isinstance(figure, dict) and "median" in figure:
                rows.append((name, _show(figure["median"]), _show(figure["min"]), _show(figure["max"]),
                             str(figure.get("unit", ""))))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(widths[i]) if i in (0, 4) else cell.rjust(widths[i])
                               for i, cell in enumerate(row)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
