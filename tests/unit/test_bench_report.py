"""The pure parts of the benchmark's reporting: per-run ratios, the side-by-side comparison rows,
the Markdown summary and the chart (bench/stats.py, bench/report.py, bench/results.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from bench import report
from bench.results import write_results
from bench.stats import per_run_ratio, summarize
from bench.topics import rate_between

pytestmark = pytest.mark.unit


def _document(with_debezium: bool = True) -> dict[str, Any]:
    streaming: dict[str, Any] = {
        "max_changes_per_s": summarize([30_000, 32_000, 31_000], "changes/s", digits=0),
        "kafka_max_changes_per_s": summarize([40_000, 42_000, 41_000], "changes/s", digits=0),
        "p50_ms_at_5k": summarize([8.0, 9.0, 10.0], "ms", digits=2),
        "p99_ms_at_5k": summarize([40.0, 30.0, 50.0], "ms", digits=2),
        "cpu_us_per_change": summarize([25.0, 26.0, 27.0], "µs", digits=2),
        "parameters": {"rate": 5000, "changes": 300_000},
    }
    snapshot: dict[str, Any] = {
        "rows_per_s": {**summarize([20_000, 22_000, 21_000], "rows/s", digits=0), "chunk_size": 1024},
        "best_rows_per_s": {**summarize([60_000, 66_000, 63_000], "rows/s", digits=0), "chunk_size": 65536},
        "copy_rows_per_s": summarize([1_800_000, 1_900_000, 2_000_000], "rows/s", digits=0),
        "vs_copy": summarize([0.011, 0.012, 0.0105], "ratio", digits=3),
        "live_p99_ms_idle": summarize([10.0, 12.0, 11.0], "ms", digits=2),
        "live_p99_ms_during": summarize([100.0, 90.0, 110.0], "ms", digits=2),
        "parameters": {"live_rate": 2000},
    }
    rss: dict[str, Any] = {"sidecar": summarize([90.0, 95.0, 92.0], "MB"),
                           "spark_driver": summarize([2600.0, 2700.0, 2650.0], "MB")}
    if with_debezium:
        streaming.update({
            "debezium_max_changes_per_s": summarize([5_000, 4_000, 4_500], "changes/s", digits=0),
            "debezium_p50_ms_at_5k": summarize([300.0, 320.0, 310.0], "ms", digits=2),
            "debezium_p99_ms_at_5k": summarize([800.0, 600.0, 1000.0], "ms", digits=2),
            "debezium_cpu_us_per_change": summarize([150.0, 160.0, 170.0], "µs", digits=2),
            "vs_debezium_max": summarize(per_run_ratio([40_000, 42_000, 41_000], [5_000, 4_000, 4_500]), "ratio",
                                         digits=2),
            "vs_debezium_p99": summarize(per_run_ratio([40.0, 30.0, 50.0], [800.0, 600.0, 1000.0]), "ratio",
                                         digits=3),
        })
        snapshot.update({
            "debezium_rows_per_s": {**summarize([7_000, 6_000, 8_000], "rows/s", digits=0), "chunk_size": 1024},
            "vs_debezium": summarize(per_run_ratio([20_000, 22_000, 21_000], [7_000, 6_000, 8_000]), "ratio",
                                     digits=2),
            "best_vs_debezium": summarize(per_run_ratio([60_000, 66_000, 63_000], [7_000, 6_000, 8_000]), "ratio",
                                          digits=2),
            "debezium_live_p99_ms_idle": summarize([500.0, 520.0, 510.0], "ms", digits=2),
            "debezium_live_p99_ms_during": summarize([900.0, 950.0, 1000.0], "ms", digits=2),
        })
        rss["debezium_connect"] = summarize([700.0, 720.0, 710.0], "MB")
    return {
        "streaming": streaming, "snapshot": snapshot, "rss_mb": rss,
        "machine": {"cpus": 2, "cpu_model": "Test CPU", "memory_gb": 8.0, "load_average_start": [1.5, 1, 1],
                    "load_average_end": [2.5, 2, 2], "git_commit": "0123456789abcdef", "git_dirty": True},
        "runs": {"count": 3, "started_utc": "2026-11-21T10:00:00Z", "duration_s": 1500.0,
                 "sections": ["streaming", "snapshot"], "quick": False, "command": "python -m bench.run"},
    }


def test_per_run_ratio_pairs_runs_and_marks_gaps() -> None:
    assert per_run_ratio([10.0, 20.0, 30.0], [5.0, 4.0, 3.0]) == [2.0, 5.0, 10.0]
    out = per_run_ratio([1.0, None, math.nan, 4.0], [2.0, 1.0, 1.0, 0.0])
    assert out[0] == 0.5 and all(math.isnan(v) for v in out[1:])
    with pytest.raises(ValueError):
        per_run_ratio([1.0], [1.0, 2.0])


def test_per_run_ratio_is_not_the_ratio_of_medians() -> None:
    ours, theirs = [10.0, 100.0, 30.0], [10.0, 10.0, 100.0]
    figure = summarize(per_run_ratio(ours, theirs), "ratio", digits=2)
    assert figure["values"] == [1.0, 10.0, 0.3]
    assert figure["median"] == 1.0 and figure["min"] == 0.3 and figure["max"] == 10.0
    # the medians alone would say 30 / 10 = 3
    assert summarize(ours, "x")["median"] / summarize(theirs, "x")["median"] == 3.0


def test_rate_between() -> None:
    assert rate_between(1000, 10.0, 12.0) == 500.0
    assert math.isnan(rate_between(1000, 12.0, 12.0))


def test_comparisons_keep_only_rows_with_both_sides() -> None:
    rows = report.comparisons(_document())
    pairs = {(r.ours, r.theirs) for r in rows}
    assert ("streaming.kafka_max_changes_per_s", "streaming.debezium_max_changes_per_s") in pairs
    assert ("snapshot.rows_per_s", "snapshot.debezium_rows_per_s") in pairs
    best = next(r for r in rows if r.ours == "snapshot.best_rows_per_s")
    assert (best.theirs, best.ratio, best.higher_is_better) == (
        "snapshot.debezium_rows_per_s", "snapshot.best_vs_debezium", True)
    assert ("rss_mb.sidecar", "rss_mb.debezium_connect") in pairs
    # Debezium's snapshot-session RSS is missing from this document: no row for it
    assert ("rss_mb.sidecar_snapshot", "rss_mb.debezium_connect_snapshot") not in pairs
    assert report.comparisons(_document(with_debezium=False)) == []


def test_comparisons_follow_the_latency_rate() -> None:
    document = _document()
    document["streaming"]["parameters"]["rate"] = 2500
    for name in ("p50_ms_at_5k", "p99_ms_at_5k", "debezium_p50_ms_at_5k", "debezium_p99_ms_at_5k"):
        document["streaming"][name.replace("5k", "2500")] = document["streaming"].pop(name)
    labels = [r.label for r in report.comparisons(document)]
    assert any("p99 at 2500/s" in label for label in labels)


def test_verdict_direction() -> None:
    assert report.verdict(8.0, higher_is_better=True) == "signaller (8.00×)"
    assert report.verdict(0.5, higher_is_better=True) == "Debezium (2.00×)"
    assert report.verdict(0.05, higher_is_better=False) == "signaller (20.0×)"
    assert report.verdict(4.0, higher_is_better=False) == "Debezium (4.00×)"
    assert report.verdict(None, higher_is_better=True) == "-"


def test_fmt_and_spread() -> None:
    assert report.fmt(1_858_943.0) == "1,858,943"
    assert report.fmt(38.61) == "38.6"
    assert report.fmt(7.03) == "7.03"
    assert report.fmt(0.0123) == "0.0123"
    assert report.fmt(None) == "-"
    assert report.fmt(math.nan) == "-"
    assert report.spread(summarize([1.0, 2.0, 30.0], "x")) == "2.00 [1.00–30.0]"
    assert report.spread(summarize([], "x")) == "-"


def test_markdown_side_by_side_table() -> None:
    text = report.render_markdown(_document())
    lines = text.splitlines()
    assert lines[0] == "# Benchmark results 2026-11-21T10:00:00Z"
    assert "wall time 25.0 min" in text and "git 0123456789ab (dirty)" in text
    row = next(line for line in lines if line.startswith("| snapshot: whole table, chunk 1024"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # ours, Debezium, unit, per-run ratio (median [min–max]), verdict
    assert cells[1] == "21,000 [20,000–22,000]"
    assert cells[2] == "7,000 [6,000–8,000]"
    assert cells[3] == "rows/s"
    assert cells[4] == "2.86 [2.62–3.67]"  # per run: 20k/7k, 22k/6k, 21k/8k
    assert cells[5] == "signaller (2.86×)"
    row = next(line for line in lines if line.startswith("| streaming: commit → consumer p99"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == "0.05 [0.05–0.05]"
    assert cells[5] == "signaller (20.0×)"
    # no per-run ratio stored for RSS: the medians are divided, and the cell says so
    row = next(line for line in lines if line.startswith("| peak RSS: streaming"))
    assert "0.13 (of medians)" in row and "signaller (7.72×)" in row


def test_markdown_lists_every_figure_with_its_runs() -> None:
    document = _document()
    text = report.render_markdown(document)
    for section in ("streaming", "snapshot", "rss_mb"):
        assert f"### {section}" in text
        for name, value in document[section].items():
            if isinstance(value, dict) and "median" in value:
                assert f"| `{name}` |" in text, name
    row = next(line for line in text.splitlines() if line.startswith("| `debezium_rows_per_s` |"))
    assert "| 7,000 | 6,000 | 8,000 | rows/s | 7,000, 6,000, 8,000 | chunk size 1024 |" in row
    assert "parameters" not in text


def test_markdown_sections_in_a_fixed_order_and_notes_not_repeated() -> None:
    document = _document()
    document = {"rss_mb": document.pop("rss_mb"), **document}  # as the bench builds it: rss_mb after streaming
    text = report.render_markdown(document)
    assert text.index("### streaming") < text.index("### snapshot") < text.index("### rss_mb")
    document["snapshot"]["rows_per_s"]["note"] = "all rows, chunk size 1024"
    row = next(line for line in report.render_markdown(document).splitlines()
               if line.startswith("| `rows_per_s` |"))
    assert row.endswith("| all rows, chunk size 1024 |")


def test_markdown_without_debezium_has_no_comparison_table() -> None:
    text = report.render_markdown(_document(with_debezium=False))
    assert "## signaller vs Debezium" not in text
    assert "## Every figure" in text


def test_chart_panels_skip_missing_figures() -> None:
    panels = report.chart_panels(_document(with_debezium=False))
    titles = [p[0] for p in panels]
    assert "Apply to Delta: PostgreSQL commit → visible" not in titles  # no apply section
    throughput = next(p for p in panels if p[0].startswith("Throughput"))
    series = {name for _, group in throughput[3] for name, _ in group}
    assert series == {"signaller", "COPY"}


def test_write_results_writes_json_markdown_and_png(tmp_path: Path) -> None:
    written = write_results(_document(), tmp_path)
    names = sorted(p.name for p in written)
    assert [n for n in names if n.startswith("latest")] == ["latest.json", "latest.md", "latest.png"]
    assert len(names) == 6
    assert json.loads((tmp_path / "latest.json").read_text())["snapshot"]["vs_debezium"]["median"] == 2.86
    assert (tmp_path / "latest.md").read_text().startswith("# Benchmark results")
    png = (tmp_path / "latest.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    stamped = next(p for p in written if p.suffix == ".png" and p.name != "latest.png")
    assert stamped.read_bytes() == png


def _with_avro(document: dict[str, Any]) -> dict[str, Any]:
    document["streaming"]["avro_max_changes_per_s"] = summarize([24_000, 25_000, 26_000], "changes/s", digits=0)
    document["snapshot"]["best_rows_per_s"] = {**summarize([60_000, 62_000, 64_000], "rows/s", digits=0),
                                               "chunk_size": 4096}
    document["snapshot"]["avro_best_rows_per_s"] = {**summarize([93_000], "rows/s", digits=0), "chunk_size": 4096}
    return document


def test_markdown_json_vs_avro_table() -> None:
    text = report.render_markdown(_with_avro(_document()))
    lines = text.splitlines()
    assert "## JSON vs Avro (signaller)" in text
    assert text.index("## JSON vs Avro") < text.index("## Every figure")
    table = text.split("## JSON vs Avro (signaller)")[1].split("## Every figure")[0].strip().splitlines()
    assert len(table) == 4  # header, rule, streaming throughput, snapshot
    row = next(line for line in table if line.startswith("| streaming: throughput, preloaded slot |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:] == ["31,000 [30,000–32,000]", "25,000 [24,000–26,000]", "changes/s", "0.806", "JSON"]
    row = next(line for line in table if line.startswith("| snapshot: key range at the best chunk size |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:] == ["62,000 [60,000–64,000]", "93,000 [93,000–93,000]", "rows/s", "1.50", "Avro"]
    # the CPU row has no Avro figure in this document: left out, as are the apply rows
    assert not any(line.startswith(("| streaming: CPU per change |", "| apply to Delta |")) for line in table)
    # and both new figures are in the full list, the snapshot one with its chunk size
    row = next(line for line in lines if line.startswith("| `avro_best_rows_per_s` |"))
    assert "| 93,000 | 93,000 | 93,000 | rows/s | 93,000 | chunk size 4096 |" in row
    assert any(line.startswith("| `avro_max_changes_per_s` |") for line in lines)


def test_markdown_without_avro_figures_has_no_format_table() -> None:
    assert "## JSON vs Avro" not in report.render_markdown(_document())


def test_chart_json_vs_avro_panel() -> None:
    # JSON figures alone draw no JSON-vs-Avro panel, and a group without its Avro figure is left out
    assert not any("Avro" in p[0] for p in report.chart_panels(_document()))
    panels = report.chart_panels(_with_avro(_document()))
    (panel,) = [p for p in panels if "Avro" in p[0]]
    assert [(label, series) for label, series in panel[3]] == [
        ("streaming\nchanges/s", [("JSON", "streaming.max_changes_per_s"),
                                  ("Avro", "streaming.avro_max_changes_per_s")]),
        ("snapshot, best chunk\nrows/s", [("JSON", "snapshot.best_rows_per_s"),
                                          ("Avro", "snapshot.avro_best_rows_per_s")]),
    ]


def test_write_results_keeps_the_avro_figures(tmp_path: Path) -> None:
    write_results(_with_avro(_document()), tmp_path)
    stored = json.loads((tmp_path / "latest.json").read_text())
    assert stored["streaming"]["avro_max_changes_per_s"]["values"] == [24_000, 25_000, 26_000]
    assert stored["snapshot"]["avro_best_rows_per_s"]["median"] == 93_000
    assert "## JSON vs Avro (signaller)" in (tmp_path / "latest.md").read_text()


def test_mariadb_section_reports_the_missing_sidecar_as_null_with_its_reason() -> None:
    from bench.mariadb import SIDECAR_MISSING, section

    body = section(None, {"streaming": [9_000.0, 11_000.0, 10_000.0], "snapshot": [5_000.0, 6_000.0, 5_500.0]},
                   {"changes": 100_000})
    ours = body["streaming_max_changes_per_s"]
    assert ours["median"] is None and ours["values"] == [] and ours["note"] == SIDECAR_MISSING
    assert body["snapshot_rows_per_s"]["median"] is None
    assert body["debezium_streaming_max_changes_per_s"]["median"] == 10_000
    assert "vs_debezium_streaming" not in body  # no ratio without both sides
    document = {"mariadb": body, "runs": {"count": 3}}
    text = report.render_markdown(document)
    row = next(line for line in text.splitlines() if line.startswith("| MariaDB streaming"))
    assert f"n/a: {SIDECAR_MISSING}" in row and "10,000 [9,000–11,000]" in row
    panels = report.chart_panels(document)
    series = [name for _, _, _, groups in panels for _, named in groups for name, _ in named]
    assert series == [report.DEBEZIUM, report.DEBEZIUM]  # the sidecar's null bars are left out
    assert "mariadb.streaming_max_changes_per_s" in format_table_of(document)


def format_table_of(document: dict[str, Any]) -> str:
    from bench.results import format_table

    return format_table(document)


def test_mariadb_section_with_both_sides_has_per_run_ratios_and_chart_bars(tmp_path: Path) -> None:
    from bench.mariadb import section

    body = section({"streaming": [20_000.0, 30_000.0], "snapshot": [8_000.0, 9_000.0]},
                   {"streaming": [10_000.0, 10_000.0], "snapshot": [4_000.0, 3_000.0]}, {})
    assert body["vs_debezium_streaming"]["values"] == [2.0, 3.0]
    assert body["vs_debezium_snapshot"]["values"] == [2.0, 3.0]
    document = {"mariadb": body, "runs": {"count": 2, "started_utc": "2026-11-23T00:00:00Z"}}
    row = next(line for line in report.render_markdown(document).splitlines() if line.startswith("| MariaDB snapshot"))
    assert "2.50 [2.00–3.00]" in row and "signaller (2.50×)" in row
    assert len(report.chart_panels(document)[0][3]) == 2
    written = write_results(document, tmp_path)
    assert json.loads((tmp_path / "latest.json").read_text())["mariadb"]["snapshot_rows_per_s"]["median"] == 8_500
    assert any(path.suffix == ".png" for path in written)
