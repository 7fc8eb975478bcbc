"""The apply job under test, in a process of its own: ``python -m bench.spark_worker JARS_DIR``.

One SparkSession (``spark_jobs.session.build_session``: ``local[2]``, the job's default Spark
settings but a 1g driver heap (``DRIVER_MEMORY``), Delta and Kafka jars from ``JARS_DIR``) serving
commands read from stdin, one JSON object
per line, and reporting on stdout (JSON lines with ``t`` = ``time.time()``, like
:mod:`bench.sidecar`). Once the session is up: ``{"event": "ready", "jvm_pid", "java_version"}``
(the driver JVM's ``java.version``). Every Delta write goes through ``spark_jobs.apply_changes``:

* ``{"cmd": "build", "topic", "target_root", "seed_offsets": N, "rows": R, "files": F, "seq_commit": C}``:
  apply the first ``N`` records of ``topic`` (``c`` events of keys 1..N) with a ``BatchApplier``, so
  the job itself creates the table (columns, ``_cdc_*``, table properties), then append keys
  N+1..R in the table's own column layout (``_cdc_seq = (C, id, 0)``, ``_cdc_op = 'c'``) as ``F``
  files → ``{"event": "built", "files", "rows"}``;
* ``{"cmd": "batches", "topic", "target_root", "batches": [[label, start, end], ...],
  "deletion_vectors": false, "schema_registry_url": null}``: a new ``BatchApplier`` (its config's
  ``deletion_vectors`` and ``schema_registry_url``, where Avro records' schemas are fetched); each
  batch is ``spark.read`` of offsets ``[start, end)`` of partition 0 handed to
  it as ``foreachBatch`` would → ``{"event": "batch", "label", "seconds", "phases_ms", "spark",
  "jvm_cpu_s", "machine_cpu_s", "delta"}`` each (``phases_ms``: ``BatchApplier.last_clock.breakdown()``;
  ``spark``: jobs, stages and tasks per phase; ``jvm_cpu_s``: :func:`thread_cpu_s` over the batch;
  ``machine_cpu_s``: :func:`machine_cpu_s` over the batch; ``delta``: the batch's commits to the
  table and its tombstone table with Delta's ``operationMetrics``, read from the log after the timed call), then
  ``{"event": "batches_done", "rows", "dead_letters"}`` (rows in the table afterwards);
* ``{"cmd": "stream", "topic", "target_root", "checkpoint", "trigger"}``: ``start_query`` (the job's
  own streaming query, ``processingTime`` trigger) → ``{"event": "stream_started"}``, then
  ``{"event": "progress", "batch", "rows", "duration_ms"}`` per micro-batch;
* ``{"cmd": "stop_stream"}`` → ``{"event": "stream_stopped", "batches"}``;
* ``{"cmd": "floor", "table", "scratch", "changes"}``: what a batch of ``changes`` random-key changes
  into the Delta table at ``table`` cannot avoid, each piece run three times, the JVM's CPU seconds
  (user + system) of the last → ``{"event": "floor", "cpu_s": {piece: s}, "wall_s": {piece: s}}``
  (see :func:`floor_pieces`; ``scratch`` is a directory for the pieces' writes).

Every 500 ms ``{"event": "sample", "jvm_rss_kb"}`` (the driver JVM's resident set; ``local[2]``
runs the executors in it). On EOF or SIGTERM: stop the query and the session, then
``{"event": "exit", "jvm_rss_peak_kb", "error"}``. Errors in a command are reported as
``{"event": "error", "cmd", "error"}`` and end the worker.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

_lock = threading.Lock()
DRIVER_MEMORY = "1g"
"""The driver's heap (``local[2]``: executors included); the job's default is 2g. The bench's
1,000,000-row table and 100,000-change batches fit in 1g."""


def report(event: str, **fields: Any) -> None:
    line = json.dumps({"event": event, "t": time.time(), **fields})
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def memory_kb(pid: int | None) -> tuple[int, int]:
    """``(VmRSS, VmHWM)`` of ``pid`` in kB (0 when unknown)."""
    values = {"VmRSS": 0, "VmHWM": 0}
    if pid is None:
        return 0, 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in values:
                values[key] = int(rest.split()[0])
    except OSError:
        pass
    return values["VmRSS"], values["VmHWM"]


THREAD_GROUPS = (("jit", ("C1 CompilerThre", "C2 CompilerThre")), ("gc", ("GC Thread", "VM Thread")),
                 ("tasks", ("Executor task",)))
"""The JVM's threads by ``/proc/<pid>/task/*/comm`` prefix (Linux truncates names to 15 chars)."""


def thread_cpu_s(pid: int | None) -> dict[str, float]:
    """CPU seconds the JVM's threads used so far, per :data:`THREAD_GROUPS` group and ``all``
    (threads that ended are not counted; empty when unknown, e.g. not Linux)."""
    if pid is None:
        return {}
    ticks = float(os.sysconf("SC_CLK_TCK"))
    out = {name: 0.0 for name, _ in THREAD_GROUPS} | {"all": 0.0}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return {}
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        seconds = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
        out["all"] += seconds
        for group, prefixes in THREAD_GROUPS:
            if name.startswith(prefixes):
                out[group] += seconds
    return out


def machine_cpu_s() -> dict[str, float]:
    """CPU seconds of the whole machine so far, all cores and processes, from ``/proc/stat``:
    ``busy`` (user, nice, system, irq, softirq, steal) and ``idle`` (idle, iowait); empty when
    unreadable (not Linux). Deltas of two readings split a stretch of wall time between the two."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return {}
    if len(fields) < 8:
        return {}
    ticks = float(os.sysconf("SC_CLK_TCK"))
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return {"busy": (user + nice + system + irq + softirq + steal) / ticks, "idle": (idle + iowait) / ticks}


def _latest_version(log: Path) -> int:
    versions = [int(p.stem) for p in log.glob("*.json") if p.stem.isdigit()]
    return max(versions, default=-1)


def _commits_since(log: Path, version: int) -> list[dict[str, Any]]:
    """``{"version", "operation", "metrics"}`` of the Delta commits after ``version`` (from the log)."""
    out = []
    for number in range(version + 1, _latest_version(log) + 1):
        try:
            actions = [json.loads(line) for line in (log / f"{number:020d}.json").read_text().splitlines() if line]
        except (OSError, ValueError):
            continue
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        out.append({"version": number, "operation": info.get("operation"),
                    "metrics": info.get("operationMetrics", {}),
                    "checkpoint": (log / f"{number:020d}.checkpoint.parquet").exists()})
    return out


class Worker:
    def __init__(self, jars_dir: str) -> None:
        from spark_jobs.session import build_session

        self.spark = build_session("signaller-bench-apply", master="local[2]", jars_dir=jars_dir,
                                   conf={"spark.driver.memory": DRIVER_MEMORY})
        gateway = self.spark.sparkContext._gateway
        self.jvm_pid: int | None = getattr(getattr(gateway, "proc", None), "pid", None)
        self.java_version: str = str(gateway.jvm.java.lang.System.getProperty("java.version"))
        self.query: Any = None
        self.jvm_peak_kb = 0
        self._done = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._done.wait(0.5):
            rss, peak = memory_kb(self.jvm_pid)
            self.jvm_peak_kb = max(self.jvm_peak_kb, peak)
            report("sample", jvm_rss_kb=rss)

    def _config(self, command: dict[str, Any], **extra: Any) -> Any:
        from spark_jobs.job_config import ApplyJobConfig

        root = command["target_root"]
        return ApplyJobConfig(bootstrap_servers=command["bootstrap_servers"], target_root=root,
                              checkpoint_location=command.get("checkpoint") or f"{root}/_checkpoint",
                              subscribe=command["topic"], **extra)

    def _codegen(self) -> dict[str, int]:
        """Spark's code generation so far (``CodegenMetrics``): ``classes`` compiled by Janino (a
        generated class found in Spark's code cache is not compiled again)."""
        metrics = self.spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics
        return {"classes": int(metrics.METRIC_COMPILATION_TIME().getCount())}

    def _read(self, command: dict[str, Any], start: int, end: int) -> Any:
        from spark_jobs.kafka_source import consumer_options, min_partitions

        topic = command["topic"]
        return (
            self.spark.read.format("kafka")
            .options(**consumer_options(command["bootstrap_servers"], {}))
            .option("minPartitions", str(min_partitions(self.spark, self._config(command))))
            .option("subscribe", topic)
            .option("startingOffsets", json.dumps({topic: {"0": start}}))
            .option("endingOffsets", json.dumps({topic: {"0": end}}))
            .load()
        )

    # -- commands ---------------------------------------------------------------------------
    def build(self, command: dict[str, Any]) -> None:
        from spark_jobs.apply_changes import BatchApplier, table_path

        cfg = self._config(command)
        applier = BatchApplier(cfg)
        applier(self._read(command, 0, command["seed_offsets"]), 0)
        _, path = table_path(cfg, command["topic"])
        table = self.spark.read.format("delta").load(path)
        seeded = table.count()
        columns = []
        for f in table.schema.fields:
            if f.name == "id":
                columns.append("id")
            elif f.name == "_cdc_seq":
                columns.append(f"named_struct('commit_lsn', CAST({int(command['seq_commit'])} AS BIGINT), "
                               "'lsn', id, 'kafka_offset', CAST(0 AS BIGINT)) AS _cdc_seq")
            elif f.name == "_cdc_op":
                columns.append("'c' AS _cdc_op")
            elif f.name == "_cdc_ts_ms":
                columns.append("CAST(1700000000000 AS BIGINT) AS _cdc_ts_ms")
            elif f.name == "v":
                columns.append(f"CAST(id % 1000 AS {f.dataType.simpleString()}) AS v")
            elif f.name == "note":
                columns.append("concat('row ', id) AS note")
            else:
                columns.append(f"CAST(0 AS {f.dataType.simpleString()}) AS {f.name}")
        rest = self.spark.range(seeded + 1, int(command["rows"]) + 1, numPartitions=int(command["files"]))
        rest.selectExpr(*columns).write.format("delta").mode("append").save(path)
        rows = self.spark.read.format("delta").load(path).count()
        report("built", rows=rows, files=len(self.spark.read.format("delta").load(path).inputFiles()))

    def batches(self, command: dict[str, Any]) -> None:
        from spark_jobs.apply_changes import BatchApplier, table_path

        cfg = self._config(command, deletion_vectors=bool(command.get("deletion_vectors", False)),
                           schema_registry_url=command.get("schema_registry_url"))
        applier = BatchApplier(cfg)
        _, path = table_path(cfg, command["topic"])
        logs = {"target": Path(path) / "_delta_log", "tombstones": Path(applier._tomb_path(path)) / "_delta_log"}
        for index, (label, start, end) in enumerate(command["batches"]):
            frame = self._read(command, start, end)
            versions = {name: _latest_version(log) for name, log in logs.items()}
            codegen0 = self._codegen()  # a call into the JVM: before the clock starts
            cpu0, machine0, t0 = thread_cpu_s(self.jvm_pid), machine_cpu_s(), time.perf_counter()
            applier(frame, index)
            seconds = time.perf_counter() - t0
            cpu = {k: round(v - cpu0.get(k, 0.0), 2) for k, v in thread_cpu_s(self.jvm_pid).items()}
            machine = {k: round(v - machine0[k], 2) for k, v in machine_cpu_s().items() if k in machine0}
            codegen = {k: v - codegen0[k] for k, v in self._codegen().items()}
            clock = applier.last_clock
            time.sleep(0.2)  # the status tracker is fed by the listener bus, asynchronously
            report("batch", label=label, seconds=seconds,
                   phases_ms=clock.breakdown() if clock else {}, spark=clock.spark_work() if clock else {},
                   jvm_cpu_s=cpu, machine_cpu_s=machine, codegen=codegen,
                   delta={name: _commits_since(log, versions[name]) for name, log in logs.items()})
        rows = self.spark.read.format("delta").load(path).count()
        report("batches_done", rows=rows, dead_letters=applier.stats["dead_letters"])

    def stream(self, command: dict[str, Any]) -> None:
        from spark_jobs.apply_changes import start_query

        cfg = self._config(command, trigger_interval=command.get("trigger", "1 second"),
                           max_offsets_per_trigger=command.get("max_offsets_per_trigger"))
        self.query = start_query(self.spark, cfg)
        report("stream_started")
        threading.Thread(target=self._progress, args=(self.query,), daemon=True).start()

    def _progress(self, query: Any) -> None:
        seen = -1
        while query.isActive:
            progress = query.lastProgress
            if progress and progress.get("batchId", -1) != seen:
                seen = progress["batchId"]
                durations = progress.get("durationMs", {})
                report("progress", batch=seen, rows=progress.get("numInputRows"),
                       duration_ms=durations.get("triggerExecution"), add_batch_ms=durations.get("addBatch"))
            time.sleep(0.2)

    def stop_stream(self, command: dict[str, Any]) -> None:
        batches = None
        if self.query is not None:
            progress = self.query.lastProgress
            batches = progress.get("batchId") if progress else None
            self.query.stop()
            self.query = None
        report("stream_stopped", batches=batches)

    def floor(self, command: dict[str, Any]) -> None:
        from bench.process import process_cpu_seconds

        cpu: dict[str, float] = {}
        wall: dict[str, float] = {}
        for name, piece in floor_pieces(self.spark, command["table"], command["scratch"], int(command["changes"])):
            for _ in range(3):  # the last of three: JIT-compiled, classes loaded, like a running job
                c0, t0 = process_cpu_seconds(self.jvm_pid), time.perf_counter()
                piece()
                cpu[name], wall[name] = process_cpu_seconds(self.jvm_pid) - c0, time.perf_counter() - t0
        report("floor", cpu_s=cpu, wall_s=wall)

    def close(self) -> None:
        try:
            if self.query is not None:
                self.query.stop()
        finally:
            self.spark.stop()
            self._done.set()


def floor_pieces(spark: Any, table: str, scratch: str, changes: int) -> list[tuple[str, Any]]:
    """The pieces of applying ``changes`` random-key changes to the table at ``table``, each a
    callable doing it once: ``scan`` (every column of every row, nothing written), ``key_scan`` (the
    key column only), ``join`` (every row against a broadcast batch of ``changes`` keys: what a MERGE
    must match), ``write`` (every row written as a new Delta table with the target's properties:
    what rewriting its files costs), ``merge`` (a bare three-clause, sequence-guarded MERGE of an
    80/10/10 update/insert/delete batch into a copy of the table, Delta defaults) and ``merge_dv``
    (the same with deletion vectors). Random keys touch every file, so a MERGE of them cannot do less
    than ``scan`` + ``join`` + ``write`` without deletion vectors."""
    import shutil

    from pyspark.sql import functions as F

    target = spark.read.format("delta").load(table)
    rows = target.count()
    fraction = min(1.0, changes / max(rows, 1))
    existing = target.select("id").sample(fraction * 0.9, seed=11).limit(changes * 9 // 10)
    upserts = existing.select(
        "id", F.when(F.rand(3) < 0.1 / 0.9, F.lit("d")).otherwise(F.lit("u")).alias("_cdc_op"))
    first_new = rows + 10_000_000
    inserts = spark.range(first_new, first_new + changes // 10).select("id", F.lit("c").alias("_cdc_op"))
    seq = F.struct(F.lit(1 << 40).cast("bigint").alias("commit_lsn"), F.col("id").alias("lsn"),
                   F.lit(0).cast("bigint").alias("kafka_offset"))
    batch = upserts.unionByName(inserts).select(
        "id", (F.col("id") % 1000).cast("int").alias("v"), F.concat(F.lit("upd "), F.col("id")).alias("note"),
        F.col("id").alias("stamp_us"), seq.alias("_cdc_seq"), "_cdc_op", F.lit(1700000000000).alias("_cdc_ts_ms"),
    ).localCheckpoint(eager=True)
    keys = batch.select("id")
    counter = iter(range(1_000_000))

    def fresh_copy(dv: bool) -> str:
        path = f"{scratch}/copy-{next(counter)}"
        shutil.copytree(table, path)
        if dv:
            spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
        return path

    def merge(dv: bool) -> None:
        from delta.tables import DeltaTable

        path = fresh_copy(dv)
        (DeltaTable.forPath(spark, path).alias("t").merge(batch.alias("s"), "t.id = s.id")
         .whenMatchedDelete(condition="s._cdc_op = 'd' AND s._cdc_seq > t._cdc_seq")
         .whenMatchedUpdateAll(condition="s._cdc_op != 'd' AND s._cdc_seq > t._cdc_seq")
         .whenNotMatchedInsertAll(condition="s._cdc_op != 'd'")
         .execute())
        shutil.rmtree(path, ignore_errors=True)

    def write() -> None:
        path = f"{scratch}/write-{next(counter)}"
        target.write.format("delta").save(path)
        shutil.rmtree(path, ignore_errors=True)

    return [
        ("scan", lambda: target.write.format("noop").mode("overwrite").save()),
        ("key_scan", lambda: target.select("id").write.format("noop").mode("overwrite").save()),
        ("join", lambda: target.join(F.broadcast(keys.withColumn("_hit", F.lit(True))), "id", "left")
         .write.format("noop").mode("overwrite").save()),
        ("write", write),
        ("merge", lambda: merge(False)),
        ("merge_dv", lambda: merge(True)),
    ]


def main(argv: list[str]) -> int:
    def terminate(*_: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, terminate)
    error = None
    worker: Worker | None = None
    try:
        worker = Worker(argv[0])
        report("ready", jvm_pid=worker.jvm_pid, java_version=worker.java_version)
        for line in sys.stdin:
            command = json.loads(line)
            try:
                getattr(worker, command["cmd"])(command)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                print(traceback.format_exc(), file=sys.stderr)
                report("error", cmd=command["cmd"], error=error)
                break
    except SystemExit:
        pass
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        print(traceback.format_exc(), file=sys.stderr)
    finally:
        peak = 0
        if worker is not None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # let the session stop cleanly
            peak = max(worker.jvm_peak_kb, memory_kb(worker.jvm_pid)[1])
            try:
                worker.close()
            except Exception as exc:
                print(f"stopping the session failed: {exc}", file=sys.stderr)
        report("exit", jvm_rss_peak_kb=peak, error=error)
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
