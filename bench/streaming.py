"""Streaming benchmark: PostgreSQL commit → Kafka acknowledgement through the sidecar.

Three measurements on a narrow table (``id bigint PRIMARY KEY, v int NOT NULL, note text``), each
with a fresh table, publication, slot and topic (:class:`bench.scratch.Scratch`) and a fresh
sidecar process (:mod:`bench.sidecar`) with the default converters (JSON with schemas) and the
default producer settings:

* **throughput** (:func:`throughput_run`): with the sidecar stopped, ``changes`` row changes
  (2/3 inserts, then 1/3 updates) are committed in transactions of ``tx_rows`` rows, so they
  wait in the slot. Then the sidecar starts and the clock runs until the offset store has
  durably committed an LSN past the last transaction's commit, which the loop only does once
  Kafka has acknowledged (acks=all) every record up to it.
* **Avro throughput**: the same throughput run with the sidecar's key and value converters switched to
  Avro (Confluent wire format) against the stack's schema registry (:func:`bench.scratch.avro_converters`),
  interleaved with the JSON runs: ``avro_max_changes_per_s``, ``avro_cpu_us_per_change``;
* **latency** (:func:`latency_run`): the sidecar runs; a writer commits ``tx_rows``-row insert
  transactions on a fixed schedule at ``rate`` changes/s; a Kafka consumer in this process
  stamps each record when ``poll()`` hands it over. Latency = that instant − the transaction's
  commit timestamp, which PostgreSQL puts in the commit record and the event carries as
  ``source.ts_us`` (same host, same clock as ``time.time()``).

With ``options.debezium``, each run is followed by Debezium's run of both workloads
(:func:`bench.debezium.streaming_run`), and the section also holds Debezium's figures
(``debezium_*``) and the per-run ratios (``vs_debezium_*``). Throughput is then also measured
from outside for the sidecar (``kafka_max_changes_per_s``), the way Debezium's must be.

See ``bench/README.md`` for every reported field.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench import debezium as dbz
from bench.live import NARROW_TABLE, Stamper, latency_figures, preload, write_steadily
from bench.options import StreamingOptions
from bench.process import Sidecar, cpu_between, process_cpu_seconds
from bench.scratch import LOG_APPEND_TIME, Scratch, SlotWatcher, avro_converters
from bench.stats import Figure, per_run_ratio, summarize
from bench.topics import TopicReader, rate_between
from devtools import StackSettings
from devtools import kafka as stack_kafka
from devtools.processes import read_pid

FLUSH_INTERVAL_MS = 50
"""``offset.flush.interval.ms`` of the sidecar under test in throughput runs: the smallest period
the loop allows, so the "committed" instant trails the Kafka acknowledgement by at most ~50 ms.
Latency runs keep the default (60 s)."""


def _profile_path(options: StreamingOptions, name: str) -> Path | None:
    if options.profile_dir is None:
        return None
    return options.profile_dir / f"{name}.{'txt' if options.profiler == 'pyinstrument' else 'prof'}"


# --------------------------------------------------------------------------------------------
# Throughput
# --------------------------------------------------------------------------------------------


def throughput_run(settings: StackSettings, options: StreamingOptions, index: int,
                   converters: dict[str, object] | None = None) -> dict[str, float]:
    """One throughput run; ``converters``: connector properties that replace the default JSON converters
    (e.g. :func:`bench.scratch.avro_converters`)."""
    kind = "tput" if converters is None else "tputa"
    scratch = Scratch(settings, kind, NARROW_TABLE)
    try:
        scratch.create()
        scratch.create_topic(scratch.data_topic, config=LOG_APPEND_TIME)
        t0 = time.monotonic()
        target = preload(scratch, options.changes, options.tx_rows)
        preload_s = time.monotonic() - t0
        properties = scratch.connector_config(**{"offset.flush.interval.ms": FLUSH_INTERVAL_MS,
                                                 **options.connector_overrides, **(converters or {})})
        profile = _profile_path(options, f"{'throughput' if converters is None else 'throughput-avro'}-{index}")
        broker_pid = read_pid(stack_kafka.paths_for(settings).pid_file)
        watcher = SlotWatcher(settings, scratch.name)
        watcher.start()
        sidecar = Sidecar(properties, scratch.workdir, profile)
        try:
            started = sidecar.wait_for(lambda r: r["event"] == "run", 60, "the sidecar to start")
            first = sidecar.wait_for(lambda r: r["event"] == "first_change", 120, "the first change")
            broker_cpu_start = process_cpu_seconds(broker_pid)
            walsender_pid = scratch.slot_pid()
            done = sidecar.wait_for(lambda r: r["event"] == "commit" and r["lsn"] > target, 600,
                                    "the offsets to pass the last commit")
            broker_cpu = process_cpu_seconds(broker_pid) - broker_cpu_start
            walsender_cpu = process_cpu_seconds(walsender_pid)
            time.sleep(0.25)  # one more sample after the end, for the CPU figure
        finally:
            exit_report = sidecar.stop()
        if exit_report["events"] < options.changes:
            raise RuntimeError(f"sidecar produced {exit_report['events']} of {options.changes} changes")
        slot_active = watcher.result()
        with TopicReader(settings) as reader:
            first_append = reader.append_time(scratch.data_topic, 0)
            last_append = reader.append_time(scratch.data_topic, options.changes - 1)
        elapsed = done["t"] - started["t"]
        drain = done["t"] - first["t"]
        samples = sidecar.events("sample")
        cpu = cpu_between(samples, first["t"], done["t"])
        main_cpu = cpu_between(samples, first["t"], done["t"], "main")
        rdkafka_cpu = cpu_between(samples, first["t"], done["t"], "librdkafka")
        return {
            "max_changes_per_s": options.changes / elapsed,
            "drain_changes_per_s": options.changes / drain,
            "kafka_max_changes_per_s": rate_between(options.changes, slot_active, last_append),
            "startup_to_first_record_s": first_append - sidecar.spawned_at,
            "startup_s": first["t"] - started["t"],
            "elapsed_s": elapsed,
            "preload_s": preload_s,
            "cpu_us_per_change": cpu / options.changes * 1e6,
            "cpu_utilisation": cpu / drain,
            "main_thread_cpu_us_per_change": main_cpu / options.changes * 1e6,
            "librdkafka_cpu_us_per_change": rdkafka_cpu / options.changes * 1e6,
            "walsender_cpu_us_per_change": walsender_cpu / options.changes * 1e6,
            "broker_cpu_us_per_change": broker_cpu / options.changes * 1e6,
            "rss_peak_mb": exit_report["rss_peak_kb"] / 1024,
        }
    finally:
        scratch.cleanup()


# --------------------------------------------------------------------------------------------
# Latency
# --------------------------------------------------------------------------------------------


def latency_run(settings: StackSettings, options: StreamingOptions, index: int) -> dict[str, float]:
    scratch = Scratch(settings, "lat", NARROW_TABLE)
    try:
        scratch.create()
        scratch.create_topic(scratch.data_topic)
        # The default offset.flush.interval.ms (60 s): latency does not need frequent offset commits,
        # and their fsyncs in the loop would add stalls a production sidecar does not have.
        properties = scratch.connector_config(**options.connector_overrides)
        profile = _profile_path(options, f"latency-{index}")
        stamper = Stamper(settings, scratch.data_topic)
        stamper.start()
        try:
            sidecar = Sidecar(properties, scratch.workdir, profile)
        except BaseException:
            stamper.stop_event.set()
            raise
        try:
            sidecar.wait_for(lambda r: r["event"] == "run", 60, "the sidecar to start")
            scratch.sql(f"INSERT INTO public.{scratch.name} VALUES (0, 0, 'ready')")
            deadline = time.monotonic() + 60
            while not stamper.stamps and time.monotonic() < deadline:
                time.sleep(0.01)
            if not stamper.stamps:
                raise RuntimeError(f"the sidecar did not publish the first row\n{sidecar.log_tail()}")
            window_start_us = time.time_ns() // 1000 + int(options.warmup_s * 1e6)
            rows, achieved = write_steadily(scratch, options.rate, options.latency_tx_rows,
                                             options.warmup_s + options.duration_s, 1)
            window_end_us = time.time_ns() // 1000
            deadline = time.monotonic() + 60
            while len(stamper.stamps) < rows + 1 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            stamper.stop_event.set()
            stamper.join(10)
            exit_report = sidecar.stop()
        return {**latency_figures(stamper.stamps, window_start_us, window_end_us, rows + 1, rows / achieved),
                "rss_peak_mb": exit_report["rss_peak_kb"] / 1024}
    finally:
        scratch.cleanup()


# --------------------------------------------------------------------------------------------
# The section
# --------------------------------------------------------------------------------------------


def run_streaming(settings: StackSettings, options: StreamingOptions, log: Any = print) -> dict[str, Any]:
    """Alternate throughput and latency runs ``options.runs`` times (with ``options.debezium``, each
    followed by Debezium's run of both); the ``streaming`` section plus the ``rss_mb`` of the
    sidecar (peak during the throughput drain, the worst case) and of Debezium's worker."""
    tput: list[dict[str, float]] = []
    tput_avro: list[dict[str, float]] = []
    lat: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for index in range(options.runs):
        result = throughput_run(settings, options, index)
        log(f"  throughput run {index + 1}/{options.runs}: {result['max_changes_per_s']:,.0f} changes/s "
            f"(drain {result['drain_changes_per_s']:,.0f}/s, Kafka-side {result['kafka_max_changes_per_s']:,.0f}/s, "
            f"start-up {result['startup_s']:.2f}s, {result['cpu_us_per_change']:.1f} µs CPU/change, "
            f"peak RSS {result['rss_peak_mb']:.0f} MB)")
        tput.append(result)
        result = throughput_run(settings, options, index, avro_converters(settings.registry_url))
        log(f"  Avro throughput run {index + 1}/{options.runs}: {result['max_changes_per_s']:,.0f} changes/s "
            f"({result['cpu_us_per_change']:.1f} µs CPU/change, peak RSS {result['rss_peak_mb']:.0f} MB)")
        tput_avro.append(result)
        result = latency_run(settings, options, index)
        log(f"  latency run {index + 1}/{options.runs}: p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms"
            f" at {result['offered_changes_per_s']:,.0f} changes/s ({result['measured_changes']:.0f} measured,"
            f" {result['missing_changes']:.0f} missing)")
        lat.append(result)
        if options.debezium is not None:
            result = dbz.streaming_run(settings, options, options.debezium.changes)
            log(f"  Debezium run {index + 1}/{options.runs}: {options.debezium.changes:,} changes at "
                f"{result['max_changes_per_s']:,.0f} changes/s Kafka-side (first record "
                f"{result['startup_to_first_record_s']:.1f}s after the JVM started, "
                f"{result['cpu_us_per_change']:.1f} µs CPU/change); latency p50 {result['p50_ms']:.1f} ms, "
                f"p99 {result['p99_ms']:.1f} ms at {result['offered_changes_per_s']:,.0f} changes/s "
                f"({result['missing_changes']:.0f} missing); peak RSS {result['rss_peak_mb']:.0f} MB")
            theirs.append(result)
    stock: dict[str, float] | None = None
    if options.debezium is not None and options.debezium.stock_changes > 0:
        stock = dbz.streaming_run(settings, options, options.debezium.stock_changes, latency=False,
                                  stock_producer=True)
        log(f"  Debezium with Connect's stock producer: {options.debezium.stock_changes:,} changes at "
            f"{stock['max_changes_per_s']:,.0f} changes/s Kafka-side")

    def col(rows: list[dict[str, float]], key: str) -> list[float]:
        return [row[key] for row in rows]

    dbz_changes = options.debezium.changes if options.debezium else 0
    dbz_stock_changes = options.debezium.stock_changes if options.debezium else 0
    k = f"{options.rate // 1000}k" if options.rate % 1000 == 0 else str(options.rate)
    streaming: dict[str, Figure] = {
        "max_changes_per_s": summarize(col(tput, "max_changes_per_s"), "changes/s", digits=0),
        "drain_changes_per_s": summarize(col(tput, "drain_changes_per_s"), "changes/s", digits=0),
        "kafka_max_changes_per_s": summarize(col(tput, "kafka_max_changes_per_s"), "changes/s", digits=0,
                                             note="changes / (broker append time of the last record - the "
                                                  "instant the slot became active), as for Debezium"),
        "avro_max_changes_per_s": summarize(col(tput_avro, "max_changes_per_s"), "changes/s", digits=0,
                                            note="max_changes_per_s with the Avro converters (Confluent wire "
                                                 "format, schemas in the stack's registry)"),
        "avro_cpu_us_per_change": summarize(col(tput_avro, "cpu_us_per_change"), "µs", digits=2,
                                            note="cpu_us_per_change with the Avro converters"),
        "startup_s": summarize(col(tput, "startup_s"), "s", digits=2),
        "startup_to_first_record_s": summarize(col(tput, "startup_to_first_record_s"), "s", digits=2,
                                               note="process spawned -> first record appended in Kafka"),
        "cpu_us_per_change": summarize(col(tput, "cpu_us_per_change"), "µs", digits=2),
        "cpu_utilisation": summarize(col(tput, "cpu_utilisation"), "cores", digits=2),
        "main_thread_cpu_us_per_change": summarize(col(tput, "main_thread_cpu_us_per_change"), "µs", digits=2),
        "librdkafka_cpu_us_per_change": summarize(col(tput, "librdkafka_cpu_us_per_change"), "µs", digits=2),
        "walsender_cpu_us_per_change": summarize(col(tput, "walsender_cpu_us_per_change"), "µs", digits=2),
        "broker_cpu_us_per_change": summarize(col(tput, "broker_cpu_us_per_change"), "µs", digits=2),
        f"p50_ms_at_{k}": summarize(col(lat, "p50_ms"), "ms", digits=2),
        f"p99_ms_at_{k}": summarize(col(lat, "p99_ms"), "ms", digits=2),
        f"max_ms_at_{k}": summarize(col(lat, "max_ms"), "ms", digits=2),
        f"sidecar_p50_ms_at_{k}": summarize(col(lat, "sidecar_p50_ms"), "ms", digits=2),
        f"sidecar_p99_ms_at_{k}": summarize(col(lat, "sidecar_p99_ms"), "ms", digits=2),
        f"offered_changes_per_s_at_{k}": summarize(col(lat, "offered_changes_per_s"), "changes/s", digits=0),
        f"missing_changes_at_{k}": summarize(col(lat, "missing_changes"), "changes", digits=0),
        f"rss_mb_at_{k}": summarize(col(lat, "rss_peak_mb"), "MB"),
    }
    rss: dict[str, Figure] = {
        "sidecar": summarize(col(tput, "rss_peak_mb"), "MB",
                             note="sidecar peak resident set (VmHWM) over a throughput run"),
    }
    if theirs:
        streaming.update({
            "debezium_max_changes_per_s": summarize(
                col(theirs, "max_changes_per_s"), "changes/s", digits=0,
                note=f"{dbz_changes:,} preloaded changes (the sidecar: {options.changes:,}); "
                     "changes / (broker append time of the last record - the instant the slot became active)"),
            "debezium_startup_to_first_record_s": summarize(col(theirs, "startup_to_first_record_s"), "s", digits=2,
                                                            note="JVM spawned -> first record appended in Kafka"),
            "debezium_cpu_us_per_change": summarize(col(theirs, "cpu_us_per_change"), "µs", digits=2,
                                                    note="worker JVM CPU from the slot's activation to the last "
                                                         "record in Kafka"),
            f"debezium_p50_ms_at_{k}": summarize(col(theirs, "p50_ms"), "ms", digits=2),
            f"debezium_p99_ms_at_{k}": summarize(col(theirs, "p99_ms"), "ms", digits=2),
            f"debezium_max_ms_at_{k}": summarize(col(theirs, "max_ms"), "ms", digits=2),
            f"debezium_connector_p50_ms_at_{k}": summarize(col(theirs, "sidecar_p50_ms"), "ms", digits=2,
                                                           note="commit -> Debezium's payload.ts_us"),
            f"debezium_connector_p99_ms_at_{k}": summarize(col(theirs, "sidecar_p99_ms"), "ms", digits=2,
                                                           note="commit -> Debezium's payload.ts_us"),
            f"debezium_offered_changes_per_s_at_{k}": summarize(col(theirs, "offered_changes_per_s"), "changes/s",
                                                                digits=0),
            f"debezium_missing_changes_at_{k}": summarize(col(theirs, "missing_changes"), "changes", digits=0),
            "vs_debezium_max": summarize(
                per_run_ratio(col(tput, "kafka_max_changes_per_s"), col(theirs, "max_changes_per_s")), "ratio",
                digits=2, note="kafka_max_changes_per_s / debezium_max_changes_per_s, per run (> 1: the sidecar "
                               "is faster)"),
            "vs_debezium_p50": summarize(
                per_run_ratio(col(lat, "p50_ms"), col(theirs, "p50_ms")), "ratio", digits=4,
                note=f"p50_ms_at_{k} / debezium_p50_ms_at_{k}, per run (< 1: the sidecar is faster)"),
            "vs_debezium_p99": summarize(
                per_run_ratio(col(lat, "p99_ms"), col(theirs, "p99_ms")), "ratio", digits=4,
                note=f"p99_ms_at_{k} / debezium_p99_ms_at_{k}, per run (< 1: the sidecar is faster)"),
        })
        rss["debezium_connect"] = summarize(col(theirs, "rss_peak_mb"), "MB",
                                            note="Debezium's Connect worker JVM (-Xmx1g) peak resident set "
                                                 "(VmHWM) over a throughput and a latency run")
    if stock is not None:
        streaming["debezium_stock_producer_max_changes_per_s"] = summarize(
            [stock["max_changes_per_s"]], "changes/s", digits=0,
            note=f"one run, {dbz_stock_changes:,} changes, Connect's stock producer "
                 "(16 KB batches, no compression, 1 request in flight)")
    parameters = {
        "changes": options.changes, "tx_rows": options.tx_rows, "rate": options.rate,
        "duration_s": options.duration_s, "warmup_s": options.warmup_s,
        "latency_tx_rows": options.latency_tx_rows, "offset_flush_interval_ms": FLUSH_INTERVAL_MS,
        "latency_offset_flush_interval_ms": "default (60000)",
        "table": NARROW_TABLE, "connector_overrides": options.connector_overrides,
        "avro_converters": {key: value for key, value in avro_converters(settings.registry_url).items()
                            if not key.endswith(".url")},
    }
    if options.debezium is not None:
        parameters["debezium"] = {"changes": options.debezium.changes,
                                  "stock_producer_changes": options.debezium.stock_changes,
                                  "producer_overrides": dbz.MATCHED_PRODUCER, "heap": dbz.HEAP}
    return {"streaming": {**streaming, "parameters": parameters}, "rss_mb": rss}
