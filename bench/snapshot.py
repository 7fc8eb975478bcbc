"""Incremental-snapshot benchmark: a large table read into Kafka by the sidecar, chunk by chunk.

The table (``public.bench_snapshot_<rows>``: ``id bigint PRIMARY KEY, a int NOT NULL, b int,
note text``) is made once with one ``INSERT ... SELECT generate_series`` and kept (reused by later
runs and later benchmarks when it still has exactly ``rows`` rows). Every session has its own
live table (``id bigint PRIMARY KEY, v int NOT NULL, note text``), a publication of both tables, a
slot, topics, and a sidecar process (:mod:`bench.sidecar` with ``--control``: the loop's
:class:`~signaller.snapshot.control.SidecarControl` driven through stdin, as the HTTP API drives
it) with ``snapshot.mode=no_data``, no signal table (watermarks are logical-decoding messages)
and ``offset.flush.interval.ms=50`` (the loop publishes its status and commits offsets at that
period).

A snapshot is timed from ``control.submit(Signal(..., "execute-snapshot", ...))`` until the
offset store durably commits a snapshot state in which the table is finished: the loop stores a
state only once Kafka acknowledged (acks=all) every record sent before it, so every READ of the
table is in Kafka then. The status the control publishes must say ``completed`` with every row.

Per run:

* **idle session**: commit→Kafka latency of a writer committing ``live_rate`` changes/s into the
  live table with no snapshot running (as in :mod:`bench.streaming`); ``COPY <table> TO STDOUT``
  into a null sink (psycopg2 ``copy_expert``), the floor for reading the table; then the key-range
  snapshots: ``range_repeats`` rounds of one per chunk size (``set_chunk_size`` first), the order rotated
  from round to round and run to run; a size's figure for the run is the median of its snapshots.
* **loaded session** (after all idle sessions, once the best chunk size is known): the writer runs
  throughout; snapshots of the key range at the base chunk size, then at the best, each repeated
  until the snapshots of that size lasted ``idle_s`` together (one snapshot of the range lasts about
  a second: its p99 would rest on ~20 changes; the idle window's on ~200); the live latency of the
  changes committed while any of them ran.
* **read-only session** (after the loaded ones): the sidecar with ``read.only=true`` (no watermark
  writes: the chunk's MVCC snapshot and a WAL high watermark); the key-range snapshot at the best
  chunk size, no other load (``read_only_rows_per_s``).
* **Avro session** (after each read-only one): the sidecar with its key and value converters switched
  to Avro against the stack's schema registry (:func:`bench.scratch.avro_converters`); the same
  key-range snapshot at the best chunk size, no other load (``avro_best_rows_per_s``).

With ``options.debezium``, each idle session is followed by a Debezium session
(:func:`bench.debezium.snapshot_run`: the whole table, the idle live latency, a key range under
live load), and the section also holds Debezium's figures (``debezium_*``) and the per-run
ratios (``vs_debezium*``).

See ``bench/README.md`` for every reported field.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
import uuid
from typing import Any

import psycopg2

from bench import debezium as dbz
from bench import produce_limit
from bench.live import NARROW_TABLE, LiveSession, Stamper
from bench.options import SnapshotOptions
from bench.process import Sidecar, cpu_between
from bench.scratch import Scratch, avro_converters
from bench.stats import Figure, per_run_ratio, summarize
from devtools import StackSettings

SNAPSHOT_TABLE = "id bigint PRIMARY KEY, a int NOT NULL, b int, note text"
LIMIT_ROWS = 200_000
"""Rows rendered for the machine-limit figures (``bench.produce_limit``)."""
FLUSH_INTERVAL_MS = 50


# --------------------------------------------------------------------------------------------
# The big table
# --------------------------------------------------------------------------------------------


def snapshot_table_name(rows: int) -> str:
    return f"bench_snapshot_{rows}"


def ensure_table(settings: StackSettings, rows: int, log: Any = print) -> str:
    """``public.bench_snapshot_<rows>`` with exactly ``rows`` rows: reused when it has them, else
    (re)made with one ``INSERT ... SELECT generate_series`` and ``VACUUM ANALYZE``d. An advisory
    lock keeps two benchmarks from making it at once."""
    name = snapshot_table_name(rows)
    conn = psycopg2.connect(settings.pg_dsn())
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(hashtext(%s))", (name,))
            try:
                cur.execute("SELECT to_regclass(%s) IS NOT NULL", (f"public.{name}",))
                exists = cur.fetchone()[0]  # type: ignore[index]
                if exists:
                    cur.execute(f"SELECT count(*) FROM public.{name}")  # also reads it into the page cache
                    if cur.fetchone()[0] == rows:  # type: ignore[index]
                        return name
                    log(f"  {name} has the wrong row count: making it again")
                    cur.execute(f"DROP TABLE public.{name}")
                t0 = time.monotonic()
                cur.execute("BEGIN")  # all or nothing: a half-made table would just be made again, slowly
                cur.execute(f"CREATE TABLE public.{name} ({SNAPSHOT_TABLE})")
                cur.execute(f"INSERT INTO public.{name} SELECT g, g %% 1000, (g * 7919) %% 100000, 'row ' || g "
                            "FROM generate_series(1::bigint, %s) g", (rows,))
                cur.execute("COMMIT")
                cur.execute(f"VACUUM ANALYZE public.{name}")
                log(f"  made {name} ({rows:,} rows) in {time.monotonic() - t0:.1f}s; later runs reuse it")
            finally:
                cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", (name,))
    finally:
        conn.close()
    return name


class _NullSink:
    """A file object for ``copy_expert`` that only counts bytes."""

    def __init__(self) -> None:
        self.bytes = 0

    def write(self, data: Any) -> int:
        self.bytes += len(data)
        return len(data)


def copy_rate(settings: StackSettings, table: str, rows: int) -> float:
    """Rows/s of ``COPY public.<table> TO STDOUT`` consumed by psycopg2 into a null sink."""
    conn = psycopg2.connect(settings.pg_dsn())
    try:
        with conn.cursor() as cur:
            sink = _NullSink()
            t0 = time.perf_counter()
            cur.copy_expert(f"COPY public.{table} TO STDOUT", sink)
            elapsed = time.perf_counter() - t0
        conn.rollback()
    finally:
        conn.close()
    return rows / elapsed


# --------------------------------------------------------------------------------------------
# A session: live table + the big table, one sidecar
# --------------------------------------------------------------------------------------------


class _SnapshotScratch(Scratch):
    """A live table plus the (kept) snapshot table in one publication and slot."""

    def __init__(self, settings: StackSettings, kind: str, snapshot_table: str) -> None:
        super().__init__(settings, kind, NARROW_TABLE)
        self.snapshot_table = snapshot_table

    @property
    def snapshot_topic(self) -> str:
        return f"{self.topic_prefix}.public.{self.snapshot_table}"

    def create(self) -> None:
        self.sql(f"CREATE TABLE public.{self.name} ({self.columns_sql})")
        self.sql(f"CREATE PUBLICATION {self.name} FOR TABLE public.{self.name}, public.{self.snapshot_table}")
        self.sql("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (self.name,))

    def connector_config(self, **overrides: object) -> dict[str, object]:
        config = super().connector_config(**{
            "table.include.list": rf"public\.{self.name},public\.{self.snapshot_table}", **overrides})
        return config


class _Session(LiveSession):
    """One sidecar capturing the live table and the snapshot table; a Kafka consumer stamping
    the live table's records (:class:`bench.live.Stamper`)."""

    scratch: _SnapshotScratch

    def __init__(self, settings: StackSettings, options: SnapshotOptions, table: str, kind: str) -> None:
        super().__init__(options, table, _SnapshotScratch(settings, kind, table))
        self.sidecar: Sidecar | None = None
        try:
            self.scratch.create()
            self.scratch.create_topic(self.scratch.data_topic)
            self.scratch.create_topic(self.scratch.snapshot_topic)
            properties = self.scratch.connector_config(**{"offset.flush.interval.ms": FLUSH_INTERVAL_MS},
                                                       **options.connector_overrides)
            self.stamper = Stamper(settings, self.scratch.data_topic)
            self.stamper.start()
            self.sidecar = Sidecar(properties, self.scratch.workdir, control=True)
            self.sidecar.wait_for(lambda r: r["event"] == "run", 60, "the sidecar to start")
            self.scratch.sql(f"INSERT INTO public.{self.scratch.name} VALUES (0, 0, 'ready')")
            self._wait_live(1, 60)
            if len(self.stamper.stamps) < 1:
                raise RuntimeError(f"the sidecar did not publish the first row\n{self.sidecar.log_tail()}")
        except BaseException:
            self.close()
            raise

    def close(self) -> dict[str, Any] | None:
        exit_report = None
        try:
            if self.stamper is not None:
                self.stamper.stop_event.set()
                self.stamper.join(10)
            if self.sidecar is not None:
                exit_report = self.sidecar.stop()
        finally:
            self.scratch.cleanup()
        return exit_report

    # -- snapshots --------------------------------------------------------------------------
    def _command(self, command: dict[str, Any], ident: str, timeout_s: float = 60) -> dict[str, Any]:
        assert self.sidecar is not None
        seen = self.sidecar.send(command)
        submitted = self.sidecar.wait_for(lambda r: r["event"] == "submitted" and r["id"] == ident, 30,
                                          f"{ident} to be submitted", start=seen)
        outcome = self.sidecar.wait_for(lambda r: r["event"] == "outcome" and r["id"] == ident, timeout_s,
                                        f"the answer to {ident}", start=seen)
        if not outcome["accepted"]:
            raise RuntimeError(f"{ident} rejected: {outcome['reason']}")
        return submitted

    def snapshot(self, chunk: int, limit: int | None = None, timeout_s: float = 900) -> dict[str, float]:
        """One incremental snapshot of the big table at ``chunk`` rows per chunk: all of it, or
        with ``limit`` the key range ``id <= limit`` (an ``additional-conditions`` filter)."""
        assert self.sidecar is not None
        self._command({"cmd": "chunk_size", "size": chunk}, f"chunk-size-{chunk}")
        ident = f"bench-snapshot-{uuid.uuid4().hex[:8]}"
        expected = self.options.rows if limit is None else limit
        data: dict[str, Any] = {"data-collections": [rf"public\.{self.table}"], "type": "incremental"}
        if limit is not None:
            data["additional-conditions"] = [{"data-collection": rf"public\.{self.table}", "filter": f"id <= {limit}"}]
        seen = len(self.sidecar.reports)
        submitted = self._command({"cmd": "submit", "id": ident, "type": "execute-snapshot", "data": data}, ident)
        done = self.sidecar.wait_for(
            lambda r: r["event"] == "commit" and any(f[0] == ident for f in r.get("finished", ())), timeout_s,
            f"the snapshot {ident} to be committed", start=seen)
        finished = next(f for f in done["finished"] if f[0] == ident)
        if finished[2] != "SUCCEEDED" or finished[3] != expected:
            raise RuntimeError(f"snapshot {ident} ended {finished[2]} with {finished[3]} of {expected} rows")
        status = self.sidecar.wait_for(
            lambda r: r["event"] == "status" and any(t[3] == ident and t[1] == "completed" for t in r["tables"]), 10,
            f"the status to say {ident} completed", start=seen)
        row = next(t for t in status["tables"] if t[3] == ident)
        if row[2] != expected:
            raise RuntimeError(f"status says {row[2]} rows emitted by {ident}, expected {expected}")
        elapsed = done["t"] - submitted["t"]
        self.sidecar.wait_for(lambda r: r["event"] == "sample" and r["t"] >= done["t"], 10,
                              "a CPU sample after the snapshot", start=seen)
        samples = self.sidecar.events("sample")

        def cpu_us_per_read(thread: str | None = None) -> float:
            return cpu_between(samples, submitted["t"], done["t"], thread) / expected * 1e6

        return {"rows_per_s": expected / elapsed, "seconds": elapsed,
                "start_us": int(submitted["t"] * 1e6), "end_us": int(done["t"] * 1e6),
                "cpu_us_per_read": cpu_us_per_read(), "main_cpu_us_per_read": cpu_us_per_read("main"),
                "librdkafka_cpu_us_per_read": cpu_us_per_read("librdkafka")}


def median_result(results: list[dict[str, float]]) -> dict[str, float]:
    """The snapshot of ``results`` (one chunk size's key-range snapshots in a session) with the median
    ``rows_per_s``: the upper middle one of an even count, so its CPU figures belong to the rate reported."""
    return sorted(results, key=lambda result: result["rows_per_s"])[len(results) // 2]


# --------------------------------------------------------------------------------------------
# The section
# --------------------------------------------------------------------------------------------


def run_snapshot(settings: StackSettings, options: SnapshotOptions, log: Any = print) -> dict[str, Any]:
    table = ensure_table(settings, options.rows, log)
    base, limit = options.base_chunk, options.range_rows
    sizes = [base, *[c for c in options.chunk_sizes if c != base]]
    idle: list[dict[str, Any]] = []
    theirs: list[dict[str, Any]] = []
    rss_peaks: list[float] = []
    for index in range(options.runs):
        session = _Session(settings, options, table, "snap")
        run: dict[str, Any] = {"ranges": {}, "cpu": {}, "range_samples": {}}
        prefix = f"  run {index + 1}/{options.runs}:"
        try:
            lat = session.idle_latency()
            run["idle"] = lat
            log(f"{prefix} live latency idle p50 {lat['p50_ms']:.1f} ms, p99 {lat['p99_ms']:.1f} ms "
                f"at {lat['offered']:,.0f} changes/s")
            run["copy"] = copy_rate(settings, table, options.rows)
            log(f"{prefix} COPY {run['copy']:,.0f} rows/s")
            limit_rows = min(options.rows, LIMIT_ROWS)
            limits = produce_limit.measure(settings, table, session.scratch.topic_prefix, limit_rows)
            run["render"], run["memory_produce"] = limits.render_rows_per_s, limits.produce_rows_per_s
            log(f"{prefix} the READ records alone: rendered {run['render']:,.0f} rows/s, produced from memory "
                f"{run['memory_produce']:,.0f} rows/s ({limits.value_bytes:,.0f}-byte values)")
            run["full"] = session.snapshot(base)["rows_per_s"]
            log(f"{prefix} snapshot of all {options.rows:,} rows, chunk {base}: {run['full']:,.0f} rows/s")
            repeats: dict[int, list[dict[str, float]]] = {chunk: [] for chunk in sizes}
            for round_ in range(options.range_repeats):
                shift = (index + round_) % len(sizes)
                for chunk in sizes[shift:] + sizes[:shift]:
                    repeats[chunk].append(session.snapshot(chunk, limit))
                    log(f"{prefix} snapshot of {limit:,} rows, chunk {chunk}: "
                        f"{repeats[chunk][-1]['rows_per_s']:,.0f} rows/s")
            for chunk, results in repeats.items():
                middle = median_result(results)
                run["ranges"][chunk], run["cpu"][chunk] = middle["rows_per_s"], middle
                run["range_samples"][str(chunk)] = [r["rows_per_s"] for r in results]
        finally:
            exit_report = session.close()
        if exit_report is not None:
            rss_peaks.append(exit_report["rss_peak_kb"] / 1024)
        idle.append(run)
        if options.debezium is not None:
            theirs.append(dbz.snapshot_run(settings, options, options.debezium, table, log, prefix))

    medians = {chunk: statistics.median(run["ranges"][chunk] for run in idle) for chunk in sizes}
    best = max(sizes, key=lambda chunk: medians[chunk])
    log(f"  best chunk size: {best} (median {medians[best]:,.0f} rows/s)")

    loaded: list[dict[int, dict[str, float]]] = []
    for index in range(options.runs):
        session = _Session(settings, options, table, "snapl")
        run_loaded: dict[int, dict[str, float]] = {}
        order = [base, best] if index % 2 == 0 else [best, base]
        try:
            for chunk in dict.fromkeys(order):
                result = session.loaded_snapshot(chunk, limit, options.idle_s)
                run_loaded[chunk] = result
                log(f"  loaded run {index + 1}/{options.runs}: snapshot of {limit:,} rows, chunk {chunk}: "
                    f"{result['rows_per_s']:,.0f} rows/s ({result['snapshots']:.0f} snapshots, "
                    f"{result['seconds']:.1f} s); live p50 {result['live_p50_ms']:.1f} ms, "
                    f"p99 {result['live_p99_ms']:.1f} ms over {result['live_measured']:,.0f} changes "
                    f"({result['live_offered']:,.0f} changes/s, "
                    f"{result['live_missing']:.0f} missing)")
        finally:
            session.close()
        loaded.append(run_loaded)

    read_only: list[float] = []
    avro: list[float] = []
    for index in range(options.runs):
        session = _Session(settings, dataclasses.replace(
            options, connector_overrides={**options.connector_overrides, "read.only": "true"}), table, "snapr")
        try:
            read_only.append(session.snapshot(best, limit)["rows_per_s"])
            log(f"  read-only run {index + 1}/{options.runs}: snapshot of {limit:,} rows, chunk {best}: "
                f"{read_only[-1]:,.0f} rows/s")
        finally:
            session.close()
        session = _Session(settings, dataclasses.replace(
            options, connector_overrides={**options.connector_overrides, **avro_converters(settings.registry_url)}),
            table, "snapa")
        try:
            avro.append(session.snapshot(best, limit)["rows_per_s"])
            log(f"  Avro run {index + 1}/{options.runs}: snapshot of {limit:,} rows, chunk {best}: "
                f"{avro[-1]:,.0f} rows/s")
        finally:
            session.close()

    def ratio(a: float, b: float) -> float:
        return a / b if b else float("nan")

    pairs = list(zip(idle, loaded, strict=True))
    figures: dict[str, Figure] = {
        "rows_per_s": {**summarize([r["full"] for r in idle], "rows/s", digits=0,
                                   note=f"all {options.rows:,} rows, chunk size {base}, no other load"),
                       "chunk_size": base},
        "best_rows_per_s": {**summarize([r["ranges"][best] for r in idle], "rows/s", digits=0,
                                        note=f"{limit:,}-row key range, chunk size {best}, no other load"),
                            "chunk_size": best},
        "read_only_rows_per_s": {**summarize(read_only, "rows/s", digits=0,
                                             note=f"read.only=true, {limit:,}-row key range, chunk size {best}, "
                                                  "no other load"), "chunk_size": best},
        "avro_best_rows_per_s": {**summarize(avro, "rows/s", digits=0,
                                             note=f"best_rows_per_s with the Avro converters (Confluent wire "
                                                  f"format, schemas in the stack's registry): {limit:,}-row key "
                                                  f"range, chunk size {best}, no other load"),
                                 "chunk_size": best},
        "best_cpu_us_per_read": summarize(
            [r["cpu"][best]["cpu_us_per_read"] for r in idle], "µs", digits=2,
            note="the sidecar's CPU per READ of best_rows_per_s's snapshot (every thread, 100 ms samples around it)"),
        "best_main_thread_cpu_us_per_read": summarize(
            [r["cpu"][best]["main_cpu_us_per_read"] for r in idle], "µs", digits=2,
            note="the capture loop's thread: splicing, producing, delivery reports, the stream"),
        "best_librdkafka_cpu_us_per_read": summarize(
            [r["cpu"][best]["librdkafka_cpu_us_per_read"] for r in idle], "µs", digits=2,
            note="librdkafka's own threads (rdk:*): batching, lz4, network"),
        "best_chunk_size": summarize([best] * options.runs, "rows", digits=0,
                                     note=f"highest median rows_per_s_chunk_* of {sizes}"),
    }
    for chunk in sizes:
        figures[f"rows_per_s_chunk_{chunk}"] = summarize([r["ranges"][chunk] for r in idle], "rows/s", digits=0,
                                                         note=f"{limit:,}-row key range, no other load")
    figures.update({
        "rows_per_s_under_load": summarize([r[base]["rows_per_s"] for r in loaded], "rows/s", digits=0,
                                           note=f"{limit:,}-row key range, chunk size {base}, writer at "
                                                f"{options.live_rate:,}/s; snapshots repeated until "
                                                f"they lasted {options.idle_s:g} s, their rows ÷ their seconds"),
        "best_rows_per_s_under_load": summarize([r[best]["rows_per_s"] for r in loaded], "rows/s", digits=0,
                                                note=f"{limit:,}-row key range, chunk size {best}, writer at "
                                                     f"{options.live_rate:,}/s; repeated as rows_per_s_under_load"),
        "under_load_ratio": summarize([ratio(lo[base]["rows_per_s"], i["ranges"][base]) for i, lo in pairs],
                                      "ratio", digits=3, note="rows_per_s_under_load / rows_per_s_chunk_base, per run"),
        "copy_rows_per_s": summarize([r["copy"] for r in idle], "rows/s", digits=0),
        "render_rows_per_s": summarize([r["render"] for r in idle], "rows/s", digits=0,
                                       note=f"the sidecar's READ serializer alone (serialize_read: row values in, "
                                            f"JSON key and value out), {min(options.rows, LIMIT_ROWS):,} rows"),
        "memory_produce_rows_per_s": summarize(
            [r["memory_produce"] for r in idle], "rows/s", digits=0,
            note=f"the same READ records rendered beforehand, produced {produce_limit.REPEATS} times from memory "
                 "with the sidecar's producer settings until acknowledged: the machine's limit for them"),
        "best_vs_memory_produce": summarize([ratio(r["ranges"][best], r["memory_produce"]) for r in idle], "ratio",
                                            digits=3, note="best_rows_per_s / memory_produce_rows_per_s, per run"),
        "vs_copy": summarize([ratio(r["full"], r["copy"]) for r in idle], "ratio", digits=4,
                             note="rows_per_s / copy_rows_per_s, per run"),
        "best_vs_copy": summarize([ratio(r["ranges"][best], r["copy"]) for r in idle], "ratio", digits=4,
                                  note="best_rows_per_s / copy_rows_per_s, per run"),
        "live_p50_ms_idle": summarize([r["idle"]["p50_ms"] for r in idle], "ms", digits=2),
        "live_p99_ms_idle": summarize([r["idle"]["p99_ms"] for r in idle], "ms", digits=2),
        "live_p50_ms_during": summarize([r[base]["live_p50_ms"] for r in loaded], "ms", digits=2,
                                        note=f"while the chunk-size-{base} snapshots ran"),
        "live_p99_ms_during": summarize([r[base]["live_p99_ms"] for r in loaded], "ms", digits=2,
                                        note=f"while the chunk-size-{base} snapshots ran (at least "
                                             f"{options.idle_s:g} s of them, as long as the idle window)"),
        "live_measured_changes_idle": summarize([r["idle"]["measured"] for r in idle], "changes", digits=0,
                                                note="the live changes live_p99_ms_idle rests on"),
        "live_measured_changes_during": summarize(
            [r[c]["live_measured"] for r in loaded for c in r], "changes", digits=0,
            note=f"the live changes each loaded window's p99 rests on (chunk sizes {base} and {best}, every run)"),
        "live_loaded_snapshots": summarize(
            [r[c]["snapshots"] for r in loaded for c in r], "snapshots", digits=0,
            note=f"key-range snapshots per loaded window (repeated until they lasted {options.idle_s:g} s)"),
        "live_sidecar_p99_ms_idle": summarize([r["idle"]["sidecar_p99_ms"] for r in idle], "ms", digits=2,
                                              note="commit → envelope made (the event's ts_us): the sidecar's part"),
        "live_sidecar_p99_ms_during": summarize(
            [r[base]["live_sidecar_p99_ms"] for r in loaded], "ms", digits=2,
            note=f"the sidecar's part of live_p99_ms_during (chunk size {base}); the rest is producer, broker, "
                 "consumer"),
        "live_sidecar_p99_ms_during_best": summarize(
            [r[best]["live_sidecar_p99_ms"] for r in loaded], "ms", digits=2,
            note=f"the sidecar's part of live_p99_ms_during_best (chunk size {best})"),
        "live_p99_ratio": summarize([ratio(lo[base]["live_p99_ms"], i["idle"]["p99_ms"]) for i, lo in pairs],
                                    "ratio", digits=2, note="live_p99_ms_during / live_p99_ms_idle, per run"),
        "live_p50_ms_during_best": summarize([r[best]["live_p50_ms"] for r in loaded], "ms", digits=2,
                                             note=f"while the chunk-size-{best} snapshots ran"),
        "live_p99_ms_during_best": summarize([r[best]["live_p99_ms"] for r in loaded], "ms", digits=2,
                                             note=f"while the chunk-size-{best} snapshots ran (at least "
                                                  f"{options.idle_s:g} s of them)"),
        "live_p99_ratio_best": summarize([ratio(lo[best]["live_p99_ms"], i["idle"]["p99_ms"]) for i, lo in pairs],
                                         "ratio", digits=2, note="live_p99_ms_during_best / live_p99_ms_idle, per run"),
        "live_offered_changes_per_s": summarize(
            [r["idle"]["offered"] for r in idle] + [r[c]["live_offered"] for r in loaded for c in r],
            "changes/s", digits=0, note="the writer's achieved rate in every idle and loaded window"),
        "live_missing_changes": summarize(
            [r["idle"]["missing"] for r in idle] + [r[c]["live_missing"] for r in loaded for c in r],
            "changes", digits=0, note="live changes not read back within 60 s (should be 0)"),
    })
    rss = {"sidecar_snapshot": summarize(rss_peaks, "MB", note="sidecar peak resident set (VmHWM) over an "
                                         "idle session: every chunk size, up to the largest")}
    if theirs:
        dbz_chunk, dbz_range = options.debezium.chunk_size, options.debezium.range_rows  # type: ignore[union-attr]
        full = [r["full"] for r in theirs]
        figures.update({
            "debezium_rows_per_s": {**summarize(full, "rows/s", digits=0,
                                                note=f"Debezium, all {options.rows:,} rows, chunk size {dbz_chunk}, "
                                                     "no other load"),
                                    "chunk_size": dbz_chunk},
            "debezium_rows_per_s_under_load": {**summarize(
                [r["loaded"]["rows_per_s"] for r in theirs], "rows/s", digits=0,
                note=f"Debezium, {dbz_range:,}-row key range, chunk size {dbz_chunk}, "
                     f"writer at {options.live_rate:,}/s"), "chunk_size": dbz_chunk},
            "vs_debezium": summarize(per_run_ratio([r["full"] for r in idle], full), "ratio", digits=2,
                                     note="rows_per_s / debezium_rows_per_s, per run (> 1: the sidecar is faster)"),
            "best_vs_debezium": summarize(per_run_ratio([r["ranges"][best] for r in idle], full), "ratio", digits=2,
                                          note="best_rows_per_s / debezium_rows_per_s, per run "
                                               "(> 1: the sidecar is faster)"),
            "debezium_vs_copy": summarize(per_run_ratio(full, [r["copy"] for r in idle]), "ratio", digits=4,
                                          note="debezium_rows_per_s / copy_rows_per_s, per run"),
            "debezium_live_p50_ms_idle": summarize([r["idle"]["p50_ms"] for r in theirs], "ms", digits=2),
            "debezium_live_p99_ms_idle": summarize([r["idle"]["p99_ms"] for r in theirs], "ms", digits=2),
            "debezium_live_p50_ms_during": summarize([r["loaded"]["live_p50_ms"] for r in theirs], "ms", digits=2,
                                                     note=f"while Debezium's {dbz_range:,}-row chunk-size-"
                                                          f"{dbz_chunk} snapshot ran"),
            "debezium_live_p99_ms_during": summarize([r["loaded"]["live_p99_ms"] for r in theirs], "ms", digits=2,
                                                     note=f"while Debezium's {dbz_range:,}-row chunk-size-"
                                                          f"{dbz_chunk} snapshot ran"),
            "debezium_live_p99_ratio": summarize(
                per_run_ratio([r["loaded"]["live_p99_ms"] for r in theirs], [r["idle"]["p99_ms"] for r in theirs]),
                "ratio", digits=2, note="debezium_live_p99_ms_during / debezium_live_p99_ms_idle, per run"),
            "vs_debezium_live_p99_idle": summarize(
                per_run_ratio([r["idle"]["p99_ms"] for r in idle], [r["idle"]["p99_ms"] for r in theirs]),
                "ratio", digits=4, note="live_p99_ms_idle / debezium_live_p99_ms_idle, per run "
                                        "(< 1: the sidecar is faster)"),
            "vs_debezium_live_p99_during": summarize(
                per_run_ratio([r[base]["live_p99_ms"] for r in loaded], [r["loaded"]["live_p99_ms"] for r in theirs]),
                "ratio", digits=4, note="live_p99_ms_during / debezium_live_p99_ms_during, per run "
                                        "(< 1: the sidecar is faster)"),
            "debezium_live_offered_changes_per_s": summarize(
                [r["idle"]["offered"] for r in theirs] + [r["loaded"]["live_offered"] for r in theirs],
                "changes/s", digits=0, note="the writer's achieved rate in Debezium's idle and loaded windows"),
            "debezium_live_missing_changes": summarize(
                [r["idle"]["missing"] for r in theirs] + [r["loaded"]["live_missing"] for r in theirs],
                "changes", digits=0, note="live changes not read back within 60 s (should be 0)"),
        })
        rss["debezium_connect_snapshot"] = summarize(
            [r["rss_peak_mb"] for r in theirs], "MB",
            note="Debezium's Connect worker JVM (-Xmx1g) peak resident set (VmHWM) over its session: the "
                 "whole table, the idle latency, the key range under load")
    parameters = {
        "rows": options.rows, "range_rows": limit, "table": f"public.{table} ({SNAPSHOT_TABLE})",
        "live_table": NARROW_TABLE, "base_chunk_size": base, "chunk_sizes": sizes, "live_rate": options.live_rate,
        "range_repeats": options.range_repeats, "range_samples": [r["range_samples"] for r in idle],
        "live_tx_rows": options.live_tx_rows, "idle_s": options.idle_s, "warmup_s": options.warmup_s,
        "offset_flush_interval_ms": FLUSH_INTERVAL_MS, "watermarks": "logical-decoding messages (no signal table)",
        "connector_overrides": options.connector_overrides,
    }
    if options.debezium is not None:
        parameters["debezium"] = {
            "chunk_size": options.debezium.chunk_size, "range_rows": options.debezium.range_rows,
            "watermarks": "signal table (insert_insert), signal by INSERT into it",
            "producer_overrides": dbz.MATCHED_PRODUCER, "heap": dbz.HEAP}
    return {"snapshot": {**figures, "parameters": parameters}, "rss_mb": rss}
