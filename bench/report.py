"""Human-readable forms of a results document: a Markdown summary and a PNG chart.

:func:`render_markdown` and :func:`comparisons` are pure (a document in, text or rows out);
:func:`render_chart` draws with matplotlib's Agg backend into a file. Both take whatever sections
the document has: a figure that is missing (a section that did not run, ``--no-debezium``) leaves
its row or bar out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.stats import Figure

SIGNALLER = "signaller"
DEBEZIUM = "Debezium"
SECTION_ORDER = ("streaming", "snapshot", "apply", "mariadb", "rss_mb")
"""The order of the sections in the Markdown summary (others follow in the document's order)."""


@dataclass(frozen=True)
class Comparison:
    """One row of the side-by-side table: the sidecar's figure, Debezium's, and the per-run ratio
    figure ``ours / Debezium`` when the bench computed one (else the ratio of the medians is shown)."""

    label: str
    ours: str
    theirs: str
    ratio: str | None
    higher_is_better: bool


def figure(document: dict[str, Any], path: str) -> Figure | None:
    """``document[section][name]`` for ``path`` = ``"section.name"`` if it is a figure, else None."""
    section, _, name = path.partition(".")
    body = document.get(section)
    if not isinstance(body, dict):
        return None
    value = body.get(name)
    return value if isinstance(value, dict) and "median" in value else None


def rate_suffix(document: dict[str, Any]) -> str:
    """The suffix of the streaming latency figures (``5k`` for ``--rate 5000``)."""
    params = (document.get("streaming") or {}).get("parameters") or {}
    rate = int(params.get("rate", 5000))
    return f"{rate // 1000}k" if rate % 1000 == 0 else str(rate)


def comparisons(document: dict[str, Any]) -> list[Comparison]:
    """The sidecar-vs-Debezium rows whose two figures are both in ``document``."""
    k = rate_suffix(document)
    snapshot_params = (document.get("snapshot") or {}).get("parameters") or {}
    live = snapshot_params.get("live_rate", 2000)
    rows = [
        Comparison("streaming: throughput, preloaded slot (Kafka-side)", "streaming.kafka_max_changes_per_s",
                   "streaming.debezium_max_changes_per_s", "streaming.vs_debezium_max", True),
        Comparison(f"streaming: commit → consumer p50 at {k}/s", f"streaming.p50_ms_at_{k}",
                   f"streaming.debezium_p50_ms_at_{k}", "streaming.vs_debezium_p50", False),
        Comparison(f"streaming: commit → consumer p99 at {k}/s", f"streaming.p99_ms_at_{k}",
                   f"streaming.debezium_p99_ms_at_{k}", "streaming.vs_debezium_p99", False),
        Comparison(f"streaming: commit → emitted (payload.ts_us) p99 at {k}/s", f"streaming.sidecar_p99_ms_at_{k}",
                   f"streaming.debezium_connector_p99_ms_at_{k}", None, False),
        Comparison("streaming: CPU per change", "streaming.cpu_us_per_change", "streaming.debezium_cpu_us_per_change",
                   None, False),
        Comparison("streaming: process start → first record in Kafka", "streaming.startup_to_first_record_s",
                   "streaming.debezium_startup_to_first_record_s", None, False),
        Comparison("snapshot: whole table, chunk 1024, rows/s", "snapshot.rows_per_s", "snapshot.debezium_rows_per_s",
                   "snapshot.vs_debezium", True),
        Comparison("snapshot: best chunk size (ours) vs Debezium's whole table at its default, rows/s",
                   "snapshot.best_rows_per_s", "snapshot.debezium_rows_per_s", "snapshot.best_vs_debezium", True),
        Comparison("snapshot: rows/s ÷ COPY rows/s", "snapshot.vs_copy", "snapshot.debezium_vs_copy", None, True),
        Comparison(f"snapshot: live p50, no snapshot ({live:,}/s)", "snapshot.live_p50_ms_idle",
                   "snapshot.debezium_live_p50_ms_idle", None, False),
        Comparison(f"snapshot: live p99, no snapshot ({live:,}/s)", "snapshot.live_p99_ms_idle",
                   "snapshot.debezium_live_p99_ms_idle", "snapshot.vs_debezium_live_p99_idle", False),
        Comparison(f"snapshot: live p50 during a chunk-1024 snapshot ({live:,}/s)", "snapshot.live_p50_ms_during",
                   "snapshot.debezium_live_p50_ms_during", None, False),
        Comparison(f"snapshot: live p99 during a chunk-1024 snapshot ({live:,}/s)", "snapshot.live_p99_ms_during",
                   "snapshot.debezium_live_p99_ms_during", "snapshot.vs_debezium_live_p99_during", False),
        Comparison("MariaDB streaming: binlog catch-up throughput", "mariadb.streaming_max_changes_per_s",
                   "mariadb.debezium_streaming_max_changes_per_s", "mariadb.vs_debezium_streaming", True),
        Comparison("MariaDB snapshot: whole table, rows/s", "mariadb.snapshot_rows_per_s",
                   "mariadb.debezium_snapshot_rows_per_s", "mariadb.vs_debezium_snapshot", True),
        Comparison("peak RSS: streaming throughput run", "rss_mb.sidecar", "rss_mb.debezium_connect", None, False),
        Comparison("peak RSS: snapshot session", "rss_mb.sidecar_snapshot", "rss_mb.debezium_connect_snapshot",
                   None, False),
    ]
    return [row for row in rows if figure(document, row.ours) and figure(document, row.theirs)]


FORMAT_ROWS: tuple[tuple[str, str, str, bool], ...] = (
    ("streaming: throughput, preloaded slot", "streaming.max_changes_per_s", "streaming.avro_max_changes_per_s",
     True),
    ("streaming: CPU per change", "streaming.cpu_us_per_change", "streaming.avro_cpu_us_per_change", False),
    ("snapshot: key range at the best chunk size", "snapshot.best_rows_per_s", "snapshot.avro_best_rows_per_s",
     True),
    ("apply to Delta", "apply.changes_per_s", "apply.avro_changes_per_s", True),
    ("bytes per change record", "apply.json_bytes_per_record", "apply.avro_bytes_per_record", False),
)
"""The sidecar's JSON-vs-Avro rows: (label, JSON figure, Avro figure, higher is better)."""


def format_comparisons(document: dict[str, Any]) -> list[tuple[str, Figure, Figure, bool]]:
    """The :data:`FORMAT_ROWS` whose JSON and Avro figures are both in ``document``, with the figures."""
    out = []
    for label, json_path, avro_path, higher_is_better in FORMAT_ROWS:
        json_fig, avro_fig = figure(document, json_path), figure(document, avro_path)
        if json_fig is not None and avro_fig is not None:
            out.append((label, json_fig, avro_fig, higher_is_better))
    return out


def fmt(value: Any) -> str:
    """A number as the tables show it: thousands separated, at most 3 significant decimals."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        number = float(value)
        if abs(number) >= 100:
            return f"{number:,.0f}"
        if abs(number) >= 10:
            return f"{number:.1f}"
        if abs(number) >= 1:
            return f"{number:.2f}"
        return f"{number:.3g}"
    return str(value)


def spread(fig: Figure | None) -> str:
    """``median [min–max]`` of a figure."""
    if fig is None or fig.get("median") is None:
        return "-"
    return f"{fmt(fig['median'])} [{fmt(fig['min'])}–{fmt(fig['max'])}]"


def measured(fig: Figure | None) -> str:
    """:func:`spread`, or ``n/a: <note>`` for a figure that could not be measured (null median with a note)."""
    if fig is not None and fig.get("median") is None and fig.get("note"):
        return f"n/a: {fig['note']}"
    return spread(fig)


def ratio_cell(document: dict[str, Any], row: Comparison) -> tuple[str, float | None]:
    """The ratio column and the median ratio (for the verdict)."""
    if row.ratio is not None and (fig := figure(document, row.ratio)) is not None and fig["median"] is not None:
        return spread(fig), float(fig["median"])
    ours, theirs = figure(document, row.ours), figure(document, row.theirs)
    if ours and theirs and ours["median"] is not None and theirs["median"]:
        value = float(ours["median"]) / float(theirs["median"])
        return f"{fmt(value)} (of medians)", value
    return "-", None


def verdict(ratio: float | None, higher_is_better: bool) -> str:
    """Which side the median ratio (ours / Debezium) favours."""
    if ratio is None or math.isnan(ratio) or ratio == 1:
        return "-"
    ours_better = ratio > 1 if higher_is_better else ratio < 1
    factor = ratio if ratio >= 1 else 1 / ratio
    return f"{SIGNALLER if ours_better else DEBEZIUM} ({fmt(factor)}×)"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(document: dict[str, Any]) -> str:
    """The summary: run facts, the side-by-side table, then every figure of every section."""
    runs = document.get("runs") or {}
    machine = document.get("machine") or {}
    lines = [f"# Benchmark results {runs.get('started_utc', '')}".rstrip(), ""]
    facts = [
        f"command `{runs['command']}`" if runs.get("command") else None,
        f"{runs['count']} run{'' if runs['count'] == 1 else 's'} per figure" if runs.get("count") else None,
        f"wall time {runs['duration_s'] / 60:.1f} min" if runs.get("duration_s") else None,
        f"sections {', '.join(runs['sections'])}" if runs.get("sections") else None,
        "**--quick**" if runs.get("quick") else None,
        f"{machine['cpus']} × {machine.get('cpu_model', '?')}, {machine.get('memory_gb', '?')} GB" if machine.get(
            "cpus") else None,
        f"load average {fmt(machine['load_average_start'][0])} at start, "
        f"{fmt(machine['load_average_end'][0])} at end" if machine.get("load_average_start") and machine.get(
            "load_average_end") else None,
        f"git {str(machine['git_commit'])[:12]}{' (dirty)' if machine.get('git_dirty') else ''}" if machine.get(
            "git_commit") else None,
    ]
    lines += ["; ".join(f for f in facts if f) + ".", ""]
    lines += ["Figures: median [min–max] over the runs. Ratios are ours ÷ Debezium, computed per run of this "
              "benchmark and then summarized (\"of medians\": no per-run ratio, the medians divided). "
              "`bench/README.md` defines every figure.", ""]
    rows = comparisons(document)
    if rows:
        lines += ["## signaller vs Debezium", "",
                  "| measure | signaller | Debezium | unit | signaller ÷ Debezium | better |",
                  "| --- | ---: | ---: | --- | ---: | --- |"]
        for row in rows:
            ours, theirs = figure(document, row.ours), figure(document, row.theirs)
            assert ours is not None and theirs is not None
            text, value = ratio_cell(document, row)
            unit = _cell(str(ours.get("unit", "")))
            lines.append(f"| {_cell(row.label)} | {_cell(measured(ours))} | {_cell(measured(theirs))} | {unit} | "
                         f"{text} | {verdict(value, row.higher_is_better)} |")
        lines.append("")
    formats = format_comparisons(document)
    if formats:
        lines += ["## JSON vs Avro (signaller)", "",
                  "| measure | JSON | Avro | unit | Avro ÷ JSON (of medians) | better |",
                  "| --- | ---: | ---: | --- | ---: | --- |"]
        for label, json_fig, avro_fig, higher_is_better in formats:
            value = (float(avro_fig["median"]) / float(json_fig["median"])
                     if avro_fig["median"] is not None and json_fig["median"] else None)
            better = "-" if value is None or value == 1 else (
                "Avro" if (value > 1) == higher_is_better else "JSON")
            lines.append(f"| {_cell(label)} | {spread(json_fig)} | {spread(avro_fig)} | "
                         f"{_cell(str(json_fig.get('unit', '')))} | {fmt(value)} | {better} |")
        lines.append("")
    lines += ["## Every figure", ""]
    order = [name for name in SECTION_ORDER if name in document]
    order += [name for name in document if name not in order]
    for section in order:
        body = document[section]
        if section in ("machine", "runs") or not isinstance(body, dict):
            continue
        figures = {name: value for name, value in body.items() if isinstance(value, dict) and "median" in value}
        if not figures:
            continue
        lines += [f"### {section}", "", "| figure | median | min | max | unit | runs | note |",
                  "| --- | ---: | ---: | ---: | --- | --- | --- |"]
        for name, fig in figures.items():
            values = ", ".join(fmt(v) for v in fig.get("values", []))
            note = fig.get("note", "")
            if "chunk_size" in fig and "chunk size" not in note:
                note = f"chunk size {fig['chunk_size']}" + (f"; {note}" if note else "")
            lines.append(f"| `{name}` | {fmt(fig['median'])} | {fmt(fig['min'])} | {fmt(fig['max'])} | "
                         f"{_cell(str(fig.get('unit', '')))} | {values} | {_cell(note)} |")
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# The chart
# --------------------------------------------------------------------------------------------

COLOURS = {SIGNALLER: "#1f77b4", DEBEZIUM: "#d62728", "COPY": "#7f7f7f", "Spark driver": "#2ca02c",
           "JSON": "#1f77b4", "Avro": "#ff7f0e"}

FORMAT_PANEL = "signaller: JSON vs Avro converters (log scale)"
Panel = tuple[str, str, bool, list[tuple[str, list[tuple[str, str]]]]]
"""(title, y label, log scale, groups: (group label, [(series, figure path), ...]))."""


def chart_panels(document: dict[str, Any]) -> list[Panel]:
    """What the chart draws, limited to the figures present (a panel with nothing is left out)."""
    k = rate_suffix(document)
    panels: list[Panel] = [
        ("Throughput (log scale)", "per second", True, [
            ("streaming\nchanges/s", [(SIGNALLER, "streaming.kafka_max_changes_per_s"),
                                      (DEBEZIUM, "streaming.debezium_max_changes_per_s")]),
            ("snapshot, chunk 1024\nrows/s", [(SIGNALLER, "snapshot.rows_per_s"),
                                              (DEBEZIUM, "snapshot.debezium_rows_per_s"),
                                              ("COPY", "snapshot.copy_rows_per_s")]),
            ("apply to Delta\nchanges/s", [(SIGNALLER, "apply.changes_per_s"),
                                           ("deletion vectors", "apply.changes_per_s_dv")]),
            ("apply backfill\nrows/s", [(SIGNALLER, "apply.backfill_rows_per_s")]),
            ("apply re-snapshot\nrows/s", [(SIGNALLER, "apply.resnapshot_rows_per_s")]),
            ("apply, sustained\nrecords/s", [("offered", "apply.sustained_offered_per_s"),
                                             ("applied", "apply.sustained_applied_per_s")]),
            ("MariaDB streaming\nchanges/s", [(SIGNALLER, "mariadb.streaming_max_changes_per_s"),
                                               (DEBEZIUM, "mariadb.debezium_streaming_max_changes_per_s")]),
            ("MariaDB snapshot\nrows/s", [(SIGNALLER, "mariadb.snapshot_rows_per_s"),
                                           (DEBEZIUM, "mariadb.debezium_snapshot_rows_per_s")]),
        ]),
        ("Latency p99, commit → consumer (log scale)", "ms", True, [
            (f"streaming\nat {k}/s", [(SIGNALLER, f"streaming.p99_ms_at_{k}"),
                                      (DEBEZIUM, f"streaming.debezium_p99_ms_at_{k}")]),
            ("live writes,\nno snapshot", [(SIGNALLER, "snapshot.live_p99_ms_idle"),
                                           (DEBEZIUM, "snapshot.debezium_live_p99_ms_idle")]),
            ("live writes,\nduring snapshot", [(SIGNALLER, "snapshot.live_p99_ms_during"),
                                               (DEBEZIUM, "snapshot.debezium_live_p99_ms_during")]),
        ]),
        ("Peak resident memory", "MB", False, [
            ("streaming", [(SIGNALLER, "rss_mb.sidecar"), (DEBEZIUM, "rss_mb.debezium_connect")]),
            ("snapshot", [(SIGNALLER, "rss_mb.sidecar_snapshot"), (DEBEZIUM, "rss_mb.debezium_connect_snapshot")]),
            ("apply", [("Spark driver", "rss_mb.spark_driver")]),
        ]),
        (FORMAT_PANEL, "per second", True, [
            ("streaming\nchanges/s", [("JSON", "streaming.max_changes_per_s"),
                                      ("Avro", "streaming.avro_max_changes_per_s")]),
            ("snapshot, best chunk\nrows/s", [("JSON", "snapshot.best_rows_per_s"),
                                              ("Avro", "snapshot.avro_best_rows_per_s")]),
            ("apply to Delta\nchanges/s", [("JSON", "apply.changes_per_s"), ("Avro", "apply.avro_changes_per_s")]),
        ]),
        ("Apply to Delta: PostgreSQL commit → visible", "ms", False, [
            ("p50", [(SIGNALLER, "apply.e2e_p50_ms")]),
            ("p99", [(SIGNALLER, "apply.e2e_p99_ms")]),
        ]),
    ]
    out: list[Panel] = []
    for title, unit, log, groups in panels:
        kept = [(label, [(name, path) for name, path in series if _has_median(document, path)])
                for label, series in groups]
        # a JSON-vs-Avro group needs both (JSON alone is already in the other panels)
        kept = [(label, series) for label, series in kept if len(series) >= (2 if title == FORMAT_PANEL else 1)]
        if kept:
            out.append((title, unit, log, kept))
    return out


def _has_median(document: dict[str, Any], path: str) -> bool:
    data = figure(document, path)
    return data is not None and data.get("median") is not None


def render_chart(document: dict[str, Any], path: Path) -> Path:
    """Draw :func:`chart_panels` as grouped bars (median, whiskers min–max) into a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = chart_panels(document)
    cols = 2
    rows = max(1, math.ceil(len(panels) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(13, 4.6 * rows), squeeze=False)
    runs = document.get("runs") or {}
    fig.suptitle(f"signaller benchmark {runs.get('started_utc', '')}: median of {runs.get('count', '?')} runs, "
                 "whiskers min–max", fontsize=12)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (title, unit, log, groups) in zip(axes.flat, panels, strict=False):
        width = 0.8 / max(len(series) for _, series in groups)
        seen: set[str] = set()
        for g, (_, series) in enumerate(groups):
            for s, (name, fig_path) in enumerate(series):
                data = figure(document, fig_path)
                assert data is not None
                median, low, high = float(data["median"]), float(data["min"]), float(data["max"])
                x = g + (s - (len(series) - 1) / 2) * width
                ax.bar(x, median, width * 0.95, color=COLOURS.get(name, "#9467bd"),
                       label=None if name in seen else name,
                       yerr=[[median - low], [high - median]], capsize=3, ecolor="#333333")
                ax.annotate(fmt(median), (x, high), textcoords="offset points", xytext=(0, 3), ha="center",
                            fontsize=8)
                seen.add(name)
        ax.set_xticks(range(len(groups)), [label for label, _ in groups], fontsize=9)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(unit)
        if log:
            ax.set_yscale("log")
        ax.margins(y=0.15)
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
