"""Apply benchmark: Debezium change topics → Delta through ``spark_jobs.apply_changes``.

The apply job runs in a process of its own (:mod:`bench.spark_worker`: one SparkSession,
``local[2]``, the job's default Spark settings) for the whole section. The table
(``id bigint PRIMARY KEY, v int NOT NULL, note text, stamp_us bigint``) starts every measurement
with ``rows`` (1,000,000) rows: a Delta table built once and cached under
``<stack home>/bench/apply-<rows>-<fingerprint>/`` (``.cache/bench/``), copied for every run. The
job itself creates it (``BatchApplier`` on 1,000 ``c`` events rendered by the sidecar's
``EnvelopeSerializer``: its columns, ``_cdc_seq``/``_cdc_op``/``_cdc_ts_ms`` and table properties),
then the remaining rows are appended in that layout.

* **throughput** (per run, on a fresh copy): change events rendered by ``EnvelopeSerializer``
  (JSON with schemas, as the sidecar publishes them; 80 % updates of existing keys, 10 % inserts
  of new keys, 10 % deletes, each delete followed by its Kafka tombstone) are produced once to a
  topic; the worker hands offset ranges of it (``spark.read`` of the Kafka source) to a new
  ``BatchApplier`` exactly as ``foreachBatch`` would: one untimed warm-up batch, then
  ``batches_small`` batches of ``small`` changes, then ``batches_large`` batches of ``large``
  changes, each timed around the ``BatchApplier`` call. The row count afterwards is checked.
  Once more (one run) with the same batches rendered by ``AvroTableSerializer`` (the Confluent
  wire format, schemas registered in the stack's registry, which the job fetches by id), and the
  mean key + value bytes of a change record (tombstones aside) in both formats.
* **end to end** (per run): a sidecar (:mod:`bench.sidecar`, default settings) streams a fresh
  PostgreSQL table; the apply job's own streaming query (``start_query``, ``processingTime`` 1 s)
  applies its topic into a copy of the cached table; a writer commits ``e2e_rate`` changes/s
  (half inserts of new keys, half updates of keys it inserted earlier), every row stamped
  (``stamp_us``) with its transaction's client-side time. A poller reads each new Delta version's
  log entry and the ``(id, stamp_us)`` of the files it adds: a change is visible at the commit
  timestamp of the first version holding its row with that stamp or a newer one.

See ``bench/README.md`` for every reported field.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
from confluent_kafka import Producer

from bench.process import ReportingProcess, Sidecar
from bench.scratch import Scratch
from bench.stats import Figure, percentile, summarize
from bench.sustained import GROWTH_TOLERANCE, SIDECAR_MAX_CHANGES_PER_S, sustained_session
from devtools import StackSettings
from signaller.model import ChangeEvent, Column, Op, TableId, TableSchema
from signaller.sinks.registry import SchemaRegistryClient
from signaller.sinks.subjects import RegistrySubjects
from signaller.sources.postgres.codecs import TypeModes, codec_for
from signaller.wire.avro_serializer import AvroTableSerializer
from signaller.wire.envelope import EnvelopeSerializer

TABLE_SQL = "id bigint PRIMARY KEY, v int NOT NULL, note text, stamp_us bigint"
COLUMNS = (
    Column("id", 20, "int8", optional=False, is_key=True),
    Column("v", 23, "int4", optional=False),
    Column("note", 25, "text"),
    Column("stamp_us", 20, "int8"),
)
TABLE = "bench_apply"
SEED_ROWS = 1_000
FILES = 4
"""Files of the appended part of the cached table (a copy-on-write MERGE rewrites them into one file per shuffle
partition of the job)."""
CACHED_SEQ_COMMIT = 1
"""``_cdc_seq.commit_lsn`` of the cached rows; every benchmark event sorts after it."""
EVENT_LSN_START = 10_000_000_000
BUILD_VERSION = 1
"""Bump to rebuild every cached table (a change in how it is made)."""
E2E_FIRST_ID = 10_000_000


@dataclass
class ApplyOptions:
    runs: int = 3
    rows: int = 1_000_000
    small: int = 10_000
    large: int = 100_000
    batches_small: int = 1
    batches_large: int = 1
    warmup: int = 1_000
    e2e_rate: int = 1_000
    e2e_tx_rows: int = 20
    e2e_warmup_s: float = 15.0
    e2e_window_s: float = 30.0
    trigger: str = "1 second"
    sustained_rate: int = SIDECAR_MAX_CHANGES_PER_S
    sustained_s: float = 60.0


PHASE_NOTES = {
    "read": "a large batch on the general road: Kafka read, framing (schema hash, payload text), schema "
            "discovery, cached (absent when the batch took the one pass of spark_jobs.steady)",
    "schema": "a large batch: table state, the batch's schemas, reconciliation (driver)",
    "decode": "a large batch: payload and row JSON parse, type conversions, decimal UDFs, the batch's counts; "
              "in one pass (spark_jobs.steady: a batch like the last one) also the Kafka read and framing",
    "dead_letters": "a large batch: writing dead letters",
    "ddl": "a large batch: CREATE/ALTER TABLE when the schema changed",
    "order_dedup": "a large batch: newest event per key (window), minus events older than a kept tombstone, "
                   "split by shape (append / merge), materialized, counted",
    "tombstones": "a large batch: waiting, after the MERGE, for the append of the batch's deletes to the "
                  "tombstone table, which runs beside the MERGE",
    "append": "a large batch: the plain Delta append of the rows whose keys are provably new",
    "merge": "a large batch: the target table's MERGE of the other rows, all of it",
    "tombstone_gc": "a large batch: removing expired tombstones",
    "compaction": ("a large batch: the table's file count after its MERGE, and OPTIMIZE of a table a MERGE left "
                   "with more than compact_max_files files or (deletion vectors) compact_deleted_share deleted"),
    "other": "a large batch: time outside the phases above",
    "total": "a large batch, wall time",
    "spark_jobs": "Spark jobs a large batch ran (status tracker, by job tag)",
    "spark_stages": "Spark stages a large batch ran (skipped ones not counted)",
    "spark_tasks": "Spark tasks a large batch ran",
}
"""What each ``apply.phase_ms.<phase>`` figure measures (``<merge phase>.<sub-phase>``: Delta's metrics)."""


CPU_NOTES = {
    "jit": "a large batch: CPU of the Spark JVM's JIT compiler threads (C1, C2), from /proc; a fresh JVM "
           "compiles Spark's and Delta's code for minutes, on the cores the tasks need",
    "gc": "a large batch: CPU of the JVM's garbage collector threads",
    "tasks": "a large batch: CPU of the Spark task threads",
    "all": "a large batch: CPU of every thread of the Spark JVM",
}
"""What each ``apply.jvm_cpu_s_per_batch.<group>`` figure measures (``bench.spark_worker.THREAD_GROUPS``)."""


MACHINE_NOTES = {
    "busy_pct": "a large batch: the share of the machine's CPU time (every core, every process: the Spark JVM, "
                "the broker, the registry, the bench itself) that was busy, from /proc/stat; near 100 the "
                "batch is bound by this machine's cores",
    "outside_jvm": "a large batch: busy CPU seconds of the machine outside the Spark JVM (the broker serving "
                   "the batch, the bench's Python driver, other services)",
}
"""What the ``apply.machine_busy_pct`` and ``apply.machine_cpu_s_per_batch.<what>`` figures measure."""


def _phase_figures(tput: list[dict[str, float]]) -> dict[str, Figure]:
    """``phase_ms.<phase>``, ``spark_<jobs|stages|tasks>_per_batch``, ``jvm_cpu_s_per_batch.<group>``,
    ``machine_busy_pct`` and ``machine_cpu_s_per_batch.outside_jvm`` of the large batches."""
    out: dict[str, Figure] = {}
    for key in dict.fromkeys(k for row in tput for k in row if k.startswith("phase:")):
        name = key.removeprefix("phase:")
        values = [row.get(key, math.nan) for row in tput]
        note = PHASE_NOTES.get(name) or PHASE_NOTES.get(name.split(".")[0], "") + " (Delta's metrics)"
        if name.startswith("machine."):
            figure = name.removeprefix("machine.")
            unit, digits = ("%", 0) if figure == "busy_pct" else ("CPU s", 2)
            key = "machine_busy_pct" if figure == "busy_pct" else f"machine_cpu_s_per_batch.{figure}"
            out[key] = summarize(values, unit, digits=digits, note=MACHINE_NOTES.get(figure, ""))
        elif name.startswith("cpu."):
            group = name.removeprefix("cpu.")
            out[f"jvm_cpu_s_per_batch.{group}"] = summarize(values, "CPU s", digits=2, note=CPU_NOTES.get(group, ""))
        elif name == "codegen.classes":
            out["codegen_classes_per_batch"] = summarize(
                values, "classes", digits=0, note="classes Spark generated and compiled for the batch (Janino): "
                "a plan whose generated code a batch already had reuses its class, and the JVM's compiled code")
        elif name.startswith("spark_"):
            out[f"{name}_per_batch"] = summarize(values, name.removeprefix("spark_"), digits=0, note=note)
        else:
            out[f"phase_ms.{name}"] = summarize(values, "ms", digits=0, note=note)
    return out


def _label(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


# --------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------


class _Events:
    """Debezium change events of the benchmark table, as the sidecar renders them: JSON with schemas,
    or Avro in the Confluent wire format when ``registry_url`` is given (schemas registered there).
    The same ``seed`` gives the same events in either format."""

    def __init__(self, topic_prefix: str, rows: int, seed: int = 7, registry_url: str | None = None) -> None:
        table = TableSchema(TableId("public", TABLE), COLUMNS, key=("id",))
        codecs = {c.name: codec_for(c, TypeModes()) for c in COLUMNS}
        self.serializer: EnvelopeSerializer | AvroTableSerializer
        if registry_url is None:
            self.serializer = EnvelopeSerializer(table, codecs, topic_prefix=topic_prefix, database="inventory")
        else:
            ids = RegistrySubjects(SchemaRegistryClient(registry_url), SchemaRegistryClient(registry_url))
            self.serializer = AvroTableSerializer(table, codecs, topic=f"{topic_prefix}.public.{TABLE}",
                                                  topic_prefix=topic_prefix, database="inventory", ids=ids,
                                                  schema_names="avro")  # the prefix has '-'s
        self.topic = self.serializer.topic
        self.table_id = table.table_id
        self.rng = random.Random(seed)
        self.rows = rows
        self.next_insert = rows + 1
        self.deleted: set[int] = set()
        self.lsn = EVENT_LSN_START
        self.last_commit = EVENT_LSN_START - 1
        self.tx = 1000
        self.inserts = self.deletes = 0

    def _event(self, op: Op, key: int, in_tx: int) -> tuple[bytes | None, bytes]:
        self.lsn += 64
        if in_tx == 0:
            self.tx += 1
        row = {"id": key, "v": self.lsn % 1000, "note": f"upd {self.lsn}", "stamp_us": self.lsn}
        before = {"id": key, "v": 0, "note": None, "stamp_us": None} if op is Op.DELETE else None
        after = None if op is Op.DELETE else row
        commit_ts = 1_700_000_000_000_000 + self.lsn // 1000
        event = ChangeEvent(op, self.table_id, before, after, self.lsn, self.lsn + 32, self.last_commit, self.tx,
                            commit_ts)
        key_bytes = self.serializer.serialize_key(after or before)
        return key_bytes, self.serializer.serialize_value(event, ts_us_now=commit_ts + 1000)

    def _existing(self) -> int:
        while True:
            key = self.rng.randint(1, self.next_insert - 1)
            if key not in self.deleted:
                return key

    def creates(self, keys: range) -> list[tuple[bytes | None, bytes | None]]:
        out: list[tuple[bytes | None, bytes | None]] = []
        for i, key in enumerate(keys):
            out.append(self._event(Op.CREATE, key, i % 100))
        self.last_commit = self.lsn + 32
        return out

    def mixed(self, changes: int) -> list[tuple[bytes | None, bytes | None]]:
        """``changes`` events (80 % updates, 10 % inserts, 10 % deletes + tombstones), 100 per transaction."""
        out: list[tuple[bytes | None, bytes | None]] = []
        for i in range(changes):
            draw = self.rng.random()
            if draw < 0.8:
                out.append(self._event(Op.UPDATE, self._existing(), i % 100))
            elif draw < 0.9:
                out.append(self._event(Op.CREATE, self.next_insert, i % 100))
                self.next_insert += 1
                self.inserts += 1
            else:
                key = self._existing()
                record = self._event(Op.DELETE, key, i % 100)
                out.append(record)
                out.append((record[0], None))  # the tombstone
                self.deleted.add(key)
                self.deletes += 1
            if i % 100 == 99:
                self.last_commit = self.lsn + 32
        self.last_commit = self.lsn + 32
        return out

    def reads(self, keys: range, chunk: int = 4096) -> list[tuple[bytes | None, bytes | None]]:
        """An incremental snapshot of ``keys`` as the sidecar emits it: ``r`` events in key order,
        each chunk at its window's stream position (``source.sequence``)."""
        out: list[tuple[bytes | None, bytes | None]] = []
        for i, key in enumerate(keys):
            if i % chunk == 0:
                self.lsn += 64
            row = {"id": key, "v": key % 1000, "note": f"row {key}", "stamp_us": None}
            commit_ts = 1_700_000_000_000_000 + self.lsn // 1000
            event = ChangeEvent(Op.READ, self.table_id, None, row, self.lsn, None, self.last_commit, None, commit_ts,
                                "incremental")
            out.append((self.serializer.serialize_key(row), self.serializer.serialize_value(event,
                                                                                             ts_us_now=commit_ts)))
        return out

    @property
    def expected_rows(self) -> int:
        return self.rows + self.inserts - self.deletes


def _produce(settings: StackSettings, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    """Produce ``records`` in order to partition 0 of ``topic`` (offsets 0..n-1 of a fresh topic)."""
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers, "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 20, "batch.size": 1_000_000})
    errors: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    for key, value in records:
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    if producer.flush(120) or errors:
        raise RuntimeError(f"producing to {topic} failed: {errors[:3]}")


# --------------------------------------------------------------------------------------------
# The worker
# --------------------------------------------------------------------------------------------


class _SparkWorker(ReportingProcess):
    """``python -m bench.spark_worker``: one SparkSession serving commands (see that module)."""

    def __init__(self, settings: StackSettings, workdir: Path) -> None:
        from devtools.spark import ensure_jars

        self.settings = settings
        jars = ensure_jars(settings)
        super().__init__([sys.executable, "-m", "bench.spark_worker", str(jars)], workdir / "spark-worker.log",
                         stdin=True)
        self.ready = self.wait_for(lambda r: r["event"] == "ready", 300, "the SparkSession to start")

    def command(self, cmd: str, done: str, timeout_s: float, **fields: Any) -> tuple[dict[str, Any], int]:
        """Send a command; wait for its ``done`` report. Returns it and the report index it started at."""
        seen = self.send({"cmd": cmd, "bootstrap_servers": self.settings.bootstrap_servers, **fields})
        result = self.wait_for(lambda r: r["event"] in (done, "error"), timeout_s, f"the worker's {cmd}", start=seen)
        if result["event"] == "error":
            raise RuntimeError(f"spark worker {cmd} failed: {result['error']}\n{self.log_tail(40)}")
        return result, seen

    def next_report(self, kinds: tuple[str, ...], start: int, timeout_s: float,
                    what: str) -> tuple[dict[str, Any], int]:
        """The first report of one of ``kinds`` from index ``start`` on, and the index after it."""
        found = self.wait_for(lambda r: r["event"] in (*kinds, "error"), timeout_s, what, start=start)
        if found["event"] == "error":
            raise RuntimeError(f"spark worker failed ({what}): {found['error']}\n{self.log_tail(40)}")
        with self._changed:
            index = next(i for i in range(start, len(self.reports)) if self.reports[i] is found)
        return found, index + 1

    def reports_since(self, start: int, kind: str) -> list[dict[str, Any]]:
        with self._changed:
            return [r for r in self.reports[start:] if r["event"] == kind]


def _fingerprint(rows: int) -> str:
    from spark_jobs import apply_changes

    basis = json.dumps([BUILD_VERSION, rows, TABLE_SQL, [repr(c) for c in COLUMNS], SEED_ROWS, FILES,
                        apply_changes.META_DDL, apply_changes.PROP_SCHEMA, apply_changes.PROP_KEYS])
    return hashlib.sha1(basis.encode()).hexdigest()[:10]


_CREATED: list[str] = []
"""Every topic this section made: deleted again once the worker has stopped (Spark's cached Kafka
consumers refresh metadata, and the broker's ``auto.create.topics.enable`` re-creates a topic a
consumer still asks about)."""


def _admin_topics(settings: StackSettings, create: list[str] = (), delete: list[str] = ()) -> None:  # type: ignore[assignment]
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    _CREATED.extend(create)
    if create:
        new = [NewTopic(t, num_partitions=1, replication_factor=1) for t in create]
        for future in admin.create_topics(new).values():
            future.result(30)
    if delete:
        existing = set(admin.list_topics(timeout=10).topics)
        doomed = [t for t in delete if t in existing]
        if doomed:
            for future in admin.delete_topics(doomed, operation_timeout=30).values():
                with contextlib.suppress(Exception):  # clean-up is best effort
                    future.result(30)


def cached_table_path(settings: StackSettings, rows: int) -> tuple[Path, bool]:
    """Where the cached Delta table of ``rows`` rows is (``<root>/public/bench_apply``), and
    whether it is complete there."""
    root = settings.home / "bench" / f"apply-{rows}-{_fingerprint(rows)}"
    return root / "public" / TABLE, (root / "complete.json").exists()


def cached_table(settings: StackSettings, worker: _SparkWorker, rows: int, log: Any) -> Path:
    """The cached Delta table's directory (``<root>/public/bench_apply``), built when missing."""
    table_dir, complete = cached_table_path(settings, rows)
    root = table_dir.parent.parent
    if complete:
        return table_dir
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    t0 = time.monotonic()
    events = _Events(f"bench-apply-build-{uuid.uuid4().hex[:8]}", rows)
    _admin_topics(settings, create=[events.topic])
    try:
        _produce(settings, events.topic, events.creates(range(1, SEED_ROWS + 1)))
        built, _ = worker.command("build", "built", 900, topic=events.topic, target_root=str(root),
                                  seed_offsets=SEED_ROWS, rows=rows, files=FILES, seq_commit=CACHED_SEQ_COMMIT)
    finally:
        _admin_topics(settings, delete=[events.topic])
    if built["rows"] != rows:
        raise RuntimeError(f"the cached Delta table has {built['rows']} rows, expected {rows}")
    took = time.monotonic() - t0
    (root / "complete.json").write_text(json.dumps({"rows": rows, "files": built["files"], "built_s": took}))
    log(f"  built the cached Delta table ({rows:,} rows, {built['files']} files) in {took:.0f}s: {root}")
    return table_dir


# --------------------------------------------------------------------------------------------
# Throughput
# --------------------------------------------------------------------------------------------


MERGE_PHASES = (("materialize_source", "materializeSourceTimeMs"), ("scan", "scanTimeMs"),
                ("rewrite", "rewriteTimeMs"))
"""Sub-phases of a MERGE from Delta's ``operationMetrics``: (our name, Delta's metric)."""


def batch_phases(report: dict[str, Any]) -> dict[str, float]:
    """One batch's milliseconds per phase (``BatchApplier.last_clock``), the Spark jobs, stages and
    tasks it ran, and each MERGE split by Delta's own metrics into ``<phase>.materialize_source``,
    ``.scan`` (finding the touched files), ``.rewrite`` and ``.commit`` (the phase's wall time minus
    Delta's ``executionTimeMs``: planning, the commit and its post-commit hooks)."""
    out = {k: float(v) for k, v in (report.get("phases_ms") or {}).items()}
    spark = report.get("spark") or {}
    for what in ("jobs", "stages", "tasks"):
        out[f"spark_{what}"] = float(sum(p.get(what, 0) for p in spark.values()))
    for group, seconds in (report.get("jvm_cpu_s") or {}).items():
        out[f"cpu.{group}"] = float(seconds)
    if "codegen" in report:
        out["codegen.classes"] = float(report["codegen"].get("classes", 0))
    machine = report.get("machine_cpu_s") or {}
    capacity = float(machine.get("busy", 0.0)) + float(machine.get("idle", 0.0))
    if capacity > 0:
        out["machine.busy_pct"] = 100.0 * float(machine["busy"]) / capacity
        if "cpu.all" in out:
            out["machine.outside_jvm"] = max(float(machine["busy"]) - out["cpu.all"], 0.0)
    for phase, table in (("merge", "target"), ("tombstones", "tombstones")):
        merges = [c["metrics"] for c in (report.get("delta") or {}).get(table, []) if c.get("operation") == "MERGE"]
        if not merges or phase not in out:
            continue
        execution = sum(float(m.get("executionTimeMs", 0)) for m in merges)
        for name, metric in MERGE_PHASES:
            out[f"{phase}.{name}"] = sum(float(m.get(metric, 0)) for m in merges)
        out[f"{phase}.commit"] = max(out[phase] - execution, 0.0)
    return out


def breakdown_text(breakdown: dict[str, float]) -> str:
    """A batch's :func:`batch_phases` for the log: milliseconds (and counts), JVM CPU seconds, the
    classes Spark generated, then how busy the machine was."""
    ms = ", ".join(f"{k} {v:,.0f}" for k, v in breakdown.items() if not k.startswith(("cpu.", "machine.", "codegen.")))
    cpu = ", ".join(f"{k.removeprefix('cpu.')} {v:.2f}" for k, v in breakdown.items() if k.startswith("cpu."))
    busy = breakdown.get("machine.busy_pct")
    outside = breakdown.get("machine.outside_jvm")
    machine = "" if busy is None else f"; machine {busy:.0f} % busy"
    if busy is not None and outside is not None:
        machine += f", {outside:.2f} CPU s outside the JVM"
    generated = breakdown.get("codegen.classes")
    classes = "" if generated is None else f"; {generated:.0f} class(es) generated"
    return f"ms: {ms}" + (f"; JVM CPU s: {cpu}" if cpu else "") + classes + machine


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = list(dict.fromkeys(k for row in rows for k in row))
    return {k: sum(row.get(k, 0.0) for row in rows) / len(rows) for k in keys} if rows else {}


def throughput_runs(settings: StackSettings, options: ApplyOptions, worker: _SparkWorker, cached: Path,
                    log: Any, detail: list[dict[str, Any]], deletion_vectors: bool = False,
                    runs: int | None = None, registry_url: str | None = None) -> list[dict[str, float]]:
    """One copy of the cached table and one ``BatchApplier``: a warm-up batch, then per run
    ``batches_small`` batches of ``small`` changes and ``batches_large`` of ``large`` (Avro records
    when ``registry_url`` is given). Appends every batch's report (phases, Spark work, Delta
    commits) to ``detail``; the first result also holds ``bytes_per_record`` (key + value of a
    change record, tombstones aside)."""
    events = _Events(f"bench-apply-{uuid.uuid4().hex[:8]}", options.rows, registry_url=registry_url)
    variant = " dv" if deletion_vectors else " avro" if registry_url else ""
    plan: list[tuple[str, int]] = [("warmup", options.warmup)]
    for index in range(options.runs if runs is None else runs):
        plan += [(f"{index}:small", options.small)] * options.batches_small
        plan += [(f"{index}:large", options.large)] * options.batches_large
    records: list[tuple[bytes | None, bytes | None]] = []
    batches: list[tuple[str, int, int]] = []
    for label, size in plan:
        start = len(records)
        records.extend(events.mixed(size))
        batches.append((label, start, len(records)))
    _admin_topics(settings, create=[events.topic])
    root = Path(tempfile.mkdtemp(prefix="bench_apply_"))
    try:
        t0 = time.monotonic()
        _produce(settings, events.topic, records)
        log(f"  produced {len(records):,} records ({sum(len(v or b'') for _, v in records) / 1e6:,.0f} MB of values) "
            f"in {time.monotonic() - t0:.0f}s")
        changes = [len(k or b"") + len(v) for k, v in records if v is not None]
        bytes_per_record = sum(changes) / len(changes)
        del records, changes
        shutil.copytree(cached, root / "public" / TABLE)
        seen = worker.send({"cmd": "batches", "bootstrap_servers": settings.bootstrap_servers, "topic": events.topic,
                            "target_root": str(root), "batches": batches, "deletion_vectors": deletion_vectors,
                            "schema_registry_url": registry_url})
        timings: dict[str, float] = defaultdict(float)
        phases: dict[str, list[dict[str, float]]] = defaultdict(list)
        results = []
        for number, (label, _, _) in enumerate(batches):
            report, seen = worker.next_report(("batch",), seen, 1800, f"apply batch {label}")
            timings[label] += report["seconds"]
            phases[label].append(batch_phases(report))
            detail.append({"label": label + variant, "seconds": round(report["seconds"], 3),
                           "phases_ms": phases[label][-1],
                           "spark": report.get("spark", {}), "delta": report.get("delta", {})})
            last_of_run = number + 1 == len(batches) or batches[number + 1][0].split(":")[0] != label.split(":")[0]
            if not last_of_run:
                continue
            if label == "warmup":
                log(f"  warm-up batch ({options.warmup:,} changes): {timings['warmup']:.1f}s")
                continue
            index = int(label.split(":")[0])
            result = {"small": options.small * options.batches_small / timings[f"{index}:small"],
                      "large": options.large * options.batches_large / timings[f"{index}:large"]}
            result.update({f"phase:{k}": v for k, v in _mean(phases[f"{index}:large"]).items()})
            dv = " (deletion vectors)" if deletion_vectors else " (Avro)" if registry_url else ""
            log(f"  throughput run {index + 1}{dv}: {result['small']:,.0f} changes/s in batches of "
                f"{options.small:,}, {result['large']:,.0f} in batches of {options.large:,}")
            breakdown = _mean(phases[f"{index}:large"])
            log(f"    a large batch, {breakdown_text(breakdown)}")
            results.append(result)
        done, _ = worker.next_report(("batches_done",), seen, 600, "the row count")
        if done["rows"] != events.expected_rows or done["dead_letters"]:
            raise RuntimeError(f"apply: {done}; expected {events.expected_rows} rows and no dead letters")
        results[0]["warmup_s"] = timings["warmup"]
        results[0]["bytes_per_record"] = bytes_per_record
    finally:
        shutil.rmtree(root, ignore_errors=True)
        _admin_topics(settings, delete=[events.topic])
    return results


FLOOR_NOTES = {
    "scan": "read every column of every row of the table (nothing written)",
    "key_scan": "read the key column of every row",
    "join": "every row against a broadcast batch of the large batch's keys (what a MERGE must match)",
    "write": "write every row as a new Delta table (what rewriting the table's files costs)",
    "merge": "a bare three-clause sequence-guarded MERGE of an 80/10/10 batch, Delta's defaults",
    "merge_dv": "the same MERGE into the table with deletion vectors",
}


def floor_run(settings: StackSettings, options: ApplyOptions, worker: _SparkWorker, cached: Path,
              log: Any) -> dict[str, dict[str, float]]:
    """What a batch of ``options.large`` random-key changes into the table cannot avoid (the worker's
    ``floor`` command): the driver JVM's CPU seconds per piece, the last of three runs."""
    scratch = Path(tempfile.mkdtemp(prefix="bench_floor_"))
    try:
        seen = worker.send({"cmd": "floor", "table": str(cached), "scratch": str(scratch), "changes": options.large})
        report, _ = worker.next_report(("floor",), seen, 1800, "the floor pieces")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    cpu = report["cpu_s"]
    log("  floor, JVM CPU s per piece: " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items()))
    return {"cpu_s": cpu, "wall_s": report["wall_s"]}


def snapshot_runs(settings: StackSettings, options: ApplyOptions, worker: _SparkWorker, log: Any,
                  detail: list[dict[str, Any]]) -> dict[str, float]:
    """An incremental snapshot of ``rows`` keys (``r`` events, key order) applied in batches of
    ``large`` into an empty table (the job creates it: the backfill), then the same snapshot again
    (the same records re-sent: later offsets, so newer) into the now full table (the re-snapshot).
    Returns rows/s of each and the row count check."""
    events = _Events(f"bench-apply-snap-{uuid.uuid4().hex[:8]}", options.rows)
    records = events.reads(range(1, options.rows + 1))
    batches: list[tuple[str, int, int]] = []
    for label, base in (("backfill", 0), ("resnapshot", len(records))):
        for start in range(0, len(records), options.large):
            batches.append((label, base + start, base + min(start + options.large, len(records))))
    _admin_topics(settings, create=[events.topic])
    root = Path(tempfile.mkdtemp(prefix="bench_apply_snap_"))
    try:
        t0 = time.monotonic()
        _produce(settings, events.topic, records + records)
        log(f"  produced {2 * len(records):,} snapshot records in {time.monotonic() - t0:.0f}s")
        del records
        seen = worker.send({"cmd": "batches", "bootstrap_servers": settings.bootstrap_servers, "topic": events.topic,
                            "target_root": str(root), "batches": batches})
        seconds: dict[str, float] = defaultdict(float)
        phases: dict[str, list[dict[str, float]]] = defaultdict(list)
        for label, _, _ in batches:
            report, seen = worker.next_report(("batch",), seen, 1800, f"snapshot batch {label}")
            seconds[label] += report["seconds"]
            phases[label].append(batch_phases(report))
            detail.append({"label": label, "seconds": round(report["seconds"], 3), "phases_ms": phases[label][-1],
                           "spark": report.get("spark", {}), "delta": report.get("delta", {})})
        done, _ = worker.next_report(("batches_done",), seen, 600, "the row count")
        if done["rows"] != options.rows or done["dead_letters"]:
            raise RuntimeError(f"apply snapshot: {done}; expected {options.rows} rows and no dead letters")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        _admin_topics(settings, delete=[events.topic])
    out = {label: options.rows / seconds[label] for label in ("backfill", "resnapshot")}
    for label in ("backfill", "resnapshot"):
        log(f"  {label}: {options.rows:,} rows in {seconds[label]:.1f}s = {out[label]:,.0f} rows/s; a batch, "
            + breakdown_text(_mean(phases[label])))
    return out


# --------------------------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------------------------


class _DeltaPoller(threading.Thread):
    """Follows a Delta table's log: for every new version, its commit timestamp and the
    ``(id, stamp_us)`` of the rows in the files it adds (ids from ``E2E_FIRST_ID`` on)."""

    def __init__(self, table_dir: Path) -> None:
        super().__init__(daemon=True, name="delta-poller")
        self.table_dir = table_dir
        self.log_dir = table_dir / "_delta_log"
        self.next_version = self._latest() + 1
        self.observations: list[tuple[int, list[int], list[int]]] = []  # (commit ms, ids, stamps)
        self.max_seen: dict[int, int] = {}
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def _latest(self) -> int:
        versions = [int(p.stem) for p in self.log_dir.glob("*.json") if p.stem.isdigit()]
        return max(versions) if versions else -1

    def run(self) -> None:
        import pyarrow.compute as pc  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        try:
            while not self.halt.wait(0.05):
                path = self.log_dir / f"{self.next_version:020d}.json"
                if not path.exists():
                    continue
                try:
                    actions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
                except ValueError:
                    continue  # not completely written yet (Delta writes it atomically; just in case)
                commit_ms = next((a["commitInfo"].get("inCommitTimestamp") or a["commitInfo"]["timestamp"]
                                  for a in actions if "commitInfo" in a), int(time.time() * 1000))
                ids: list[int] = []
                stamps: list[int] = []
                for action in actions:
                    if "add" not in action:
                        continue
                    from urllib.parse import unquote

                    table = pq.read_table(self.table_dir / unquote(action["add"]["path"]), columns=["id", "stamp_us"])
                    table = table.filter(pc.greater_equal(table["id"], E2E_FIRST_ID - 1))
                    ids.extend(table["id"].to_pylist())
                    stamps.extend(table["stamp_us"].to_pylist())
                self.observations.append((commit_ms, ids, stamps))
                for key, stamp in zip(ids, stamps, strict=True):
                    if stamp is not None and stamp > self.max_seen.get(key, -1):
                        self.max_seen[key] = stamp
                self.next_version += 1
        except BaseException as exc:
            self.error = exc


class _E2EWriter(threading.Thread):
    """Commits ``tx_rows``-change transactions at ``rate`` changes/s until stopped: half inserts of
    new keys, half updates of keys inserted at least 2 s earlier, every row stamped (``stamp_us``)
    with the transaction's client-side time. Records (stamp, ids, commit returned at)."""

    def __init__(self, dsn: str, table: str, rate: int, tx_rows: int) -> None:
        super().__init__(daemon=True, name="e2e-writer")
        self.dsn, self.table = dsn, table
        self.interval = tx_rows / rate
        self.tx_rows = tx_rows
        self.halt = threading.Event()
        self.writes: list[tuple[int, list[int], float]] = []
        self.error: BaseException | None = None
        self.started_at = self.ended_at = 0.0
        self.rng = random.Random(11)

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:
            self.error = exc

    def _run(self) -> None:
        conn = psycopg2.connect(self.dsn)
        inserted: list[tuple[float, int]] = []  # (committed at, id)
        insert = (f"INSERT INTO public.{self.table} SELECT g, g %% 1000, 'e2e ' || g, %s "
                  "FROM generate_series(%s, %s) g")
        update = f"UPDATE public.{self.table} SET v = v + 1, stamp_us = %s WHERE id = ANY(%s)"
        next_id = E2E_FIRST_ID
        half = self.tx_rows // 2
        eligible = 0
        try:
            with conn.cursor() as cur:
                self.started_at = start = time.monotonic()
                i = 0
                while not self.halt.is_set():
                    delay = start + i * self.interval - time.monotonic()
                    if delay > 0 and self.halt.wait(delay):
                        break
                    now = time.time()
                    while eligible < len(inserted) and inserted[eligible][0] < now - 2:
                        eligible += 1
                    updates = self.rng.sample(range(eligible), min(eligible, self.tx_rows - half))
                    update_ids = [inserted[j][1] for j in updates]
                    new = self.tx_rows - len(update_ids)
                    stamp = time.time_ns() // 1000
                    cur.execute(insert, (stamp, next_id, next_id + new - 1))
                    if update_ids:
                        cur.execute(update, (stamp, update_ids))
                    conn.commit()
                    committed = time.time()
                    ids = list(range(next_id, next_id + new))
                    inserted.extend((committed, k) for k in ids)
                    next_id += new
                    self.writes.append((stamp, ids + update_ids, committed))
                    i += 1
                self.ended_at = time.monotonic()
        finally:
            conn.close()

    def stop(self) -> None:
        self.halt.set()
        self.join(30)
        if self.error is not None:
            raise RuntimeError(f"the e2e writer failed: {self.error!r}")


def _visible_times(poller: _DeltaPoller) -> dict[int, list[tuple[int, int]]]:
    """Per id: (commit ms, stamp) of every version holding it, in version order."""
    seen: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for commit_ms, ids, stamps in poller.observations:
        for key, stamp in zip(ids, stamps, strict=True):
            if stamp is not None:
                seen[key].append((commit_ms, stamp))
    return seen


def _window(writes: list[tuple[int, list[int], float]], seen: dict[int, list[tuple[int, int]]],
            start: float, end: float) -> tuple[list[tuple[float, float]], int, int]:
    """(committed at, latency ms) of every change committed in [start, end), missing ones, all."""
    latencies: list[tuple[float, float]] = []
    missing = total = 0
    for stamp, ids, committed in writes:
        if not start <= committed < end:
            continue
        for key in ids:
            total += 1
            visible = next((ms for ms, s in seen.get(key, ()) if s >= stamp), None)
            if visible is None:
                missing += 1
            else:
                latencies.append((committed, visible - committed * 1000))
    return latencies, missing, total


def e2e_session(settings: StackSettings, options: ApplyOptions, worker: _SparkWorker,
                cached: Path) -> tuple[list[dict[str, float]], dict[str, float]]:
    """The whole pipeline once; ``runs`` consecutive windows of ``e2e_window_s`` after the warm-up.
    Returns per-window figures and the whole-session ones (lag trend)."""
    scratch = Scratch(settings, "e2e", TABLE_SQL)
    root = Path(tempfile.mkdtemp(prefix="bench_e2e_"))
    sidecar: Sidecar | None = None
    poller: _DeltaPoller | None = None
    writer: _E2EWriter | None = None
    streaming = False
    try:
        scratch.create()
        scratch.create_topic(scratch.data_topic)
        _CREATED.append(scratch.data_topic)
        table_dir = root / "delta" / "public" / scratch.name
        shutil.copytree(cached, table_dir)
        sidecar = Sidecar(scratch.connector_config(), scratch.workdir)
        sidecar.wait_for(lambda r: r["event"] == "run", 60, "the sidecar to start")
        _, stream_seen = worker.command("stream", "stream_started", 300, topic=scratch.data_topic,
                                        target_root=str(root / "delta"), checkpoint=str(root / "checkpoint"),
                                        trigger=options.trigger)
        streaming = True
        poller = _DeltaPoller(table_dir)
        poller.start()
        # A first row through the whole pipeline: the query's first batches (and the table's
        # property update for the new topic) happen before the clock runs.
        ready_stamp = time.time_ns() // 1000
        scratch.sql(f"INSERT INTO public.{scratch.name} VALUES (%s, 0, 'ready', %s)", (E2E_FIRST_ID - 1, ready_stamp))
        deadline = time.monotonic() + 300
        while poller.max_seen.get(E2E_FIRST_ID - 1, -1) < ready_stamp:
            if time.monotonic() > deadline or poller.error:
                raise RuntimeError(f"the first row never reached Delta ({poller.error!r})\n{worker.log_tail(30)}")
            time.sleep(0.1)
        writer = _E2EWriter(settings.pg_dsn(), scratch.name, options.e2e_rate, options.e2e_tx_rows)
        measured_from = time.time() + options.e2e_warmup_s
        writer.start()
        time.sleep(options.e2e_warmup_s + options.runs * options.e2e_window_s)
        measured_to = time.time()
        writer.stop()
        pending = [(ids, stamp) for stamp, ids, _ in writer.writes]
        deadline = time.monotonic() + 300
        while pending and time.monotonic() < deadline:
            time.sleep(0.25)
            pending = [(ids, stamp) for ids, stamp in pending if any(poller.max_seen.get(k, -1) < stamp for k in ids)]
        worker.command("stop_stream", "stream_stopped", 120)
        streaming = False
        poller.halt.set()
        poller.join(10)
        if poller.error is not None:
            raise RuntimeError(f"reading the Delta log failed: {poller.error!r}")
        seen = _visible_times(poller)
        samples = worker.reports_since(stream_seen, "sample")
        progress = worker.reports_since(stream_seen, "progress")
        windows = []
        for index in range(options.runs):
            start = measured_from + index * options.e2e_window_s
            end = start + options.e2e_window_s
            latencies, missing, total = _window(writer.writes, seen, start, end)
            ordered = sorted(lat for _, lat in latencies)
            windows.append({
                "p50_ms": percentile(ordered, 0.50), "p99_ms": percentile(ordered, 0.99),
                "max_ms": ordered[-1] if ordered else math.nan,
                "offered": total / options.e2e_window_s, "missing": float(missing),
                "jvm_rss_mb": max((r["jvm_rss_kb"] for r in samples if r["t"] < end), default=0) / 1024,
            })
        latencies, _, _ = _window(writer.writes, seen, measured_from, measured_to)
        latencies.sort()
        third = len(latencies) // 3
        first = sorted(lat for _, lat in latencies[:third])
        last = sorted(lat for _, lat in latencies[len(latencies) - third:])
        p50_first, p50_last = percentile(first, 0.5), percentile(last, 0.5)
        measured = [r for r in progress if r.get("duration_ms") and measured_from <= r["t"] <= measured_to]
        durations = sorted(float(r["duration_ms"]) for r in measured)
        engine = sorted(float(r["duration_ms"]) - float(r["add_batch_ms"]) for r in measured
                        if r.get("add_batch_ms") is not None)
        session = {
            "batch_p50_ms": percentile(durations, 0.5), "batches": float(len(durations)),
            "batch_engine_p50_ms": percentile(engine, 0.5),
            "first_third_p50_ms": p50_first, "last_third_p50_ms": p50_last,
            "lag_growing": 1.0 if third and p50_last > 1.5 * p50_first and p50_last - p50_first > 500 else 0.0,
        }
        return windows, session
    finally:
        if writer is not None and writer.is_alive():
            writer.halt.set()
            writer.join(30)
        if poller is not None:
            poller.halt.set()
        if streaming:
            with contextlib.suppress(Exception):  # the worker is stopped at the end of the section anyway
                worker.command("stop_stream", "stream_stopped", 120)
        if sidecar is not None:
            with contextlib.suppress(Exception):
                sidecar.stop()
        scratch.cleanup()
        shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# The section
# --------------------------------------------------------------------------------------------


def run_apply(settings: StackSettings, options: ApplyOptions, log: Any = print) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="bench_spark_"))
    worker: _SparkWorker | None = None
    java_version: str | None = None
    try:
        t0 = time.monotonic()
        worker = _SparkWorker(settings, workdir)
        java_version = worker.ready.get("java_version")
        log(f"  SparkSession up in {time.monotonic() - t0:.0f}s (driver on Java {java_version})")
        cached = cached_table(settings, worker, options.rows, log)
        detail: list[dict[str, Any]] = []
        tput = throughput_runs(settings, options, worker, cached, log, detail)
        tput_dv = throughput_runs(settings, options, worker, cached, log, detail, deletion_vectors=True, runs=1)
        tput_avro = throughput_runs(settings, options, worker, cached, log, detail, runs=1,
                                    registry_url=settings.registry_url)
        floor = floor_run(settings, options, worker, cached, log)
        snap = snapshot_runs(settings, options, worker, log, detail)
        e2e, session = e2e_session(settings, options, worker, cached)
        sustained = sustained_session(
            settings, worker, cached, _Events(f"bench-sustained-{uuid.uuid4().hex[:8]}", options.rows, seed=13),
            options.sustained_rate, options.sustained_s, options.trigger, Path("public") / TABLE, _admin_topics)
        log(f"  sustained: {sustained.offered_per_s:,.0f} records/s offered for {options.sustained_s:.0f}s "
            f"(asked {options.sustained_rate:,} changes/s), {sustained.applied_per_s:,.0f}/s applied; lag "
            f"{sustained.lag_start:,} -> {sustained.lag_end:,} records: "
            f"{'growing' if sustained.growing else 'steady'} ({sustained.growth_per_s:+,.0f}/s); "
            f"{sustained.batches_finished} micro-batches finished in the window")
        for index, result in enumerate(e2e):
            log(f"  e2e window {index + 1}/{options.runs}: p50 {result['p50_ms']:,.0f} ms, "
                f"p99 {result['p99_ms']:,.0f} ms ({result['offered']:,.0f} changes/s, {result['missing']:.0f} missing, "
                f"driver RSS {result['jvm_rss_mb']:,.0f} MB)")
        log(f"  e2e: {session['batches']:.0f} micro-batches (p50 {session['batch_p50_ms']:,.0f} ms); first third p50 "
            f"{session['first_third_p50_ms']:,.0f} ms, last third {session['last_third_p50_ms']:,.0f} ms: "
            f"{'growing' if session['lag_growing'] else 'steady'}")
    finally:
        exit_report = None
        if worker is not None:
            try:
                exit_report = worker.stop(120)
            except Exception as exc:
                log(f"  stopping the spark worker: {exc}")
        shutil.rmtree(workdir, ignore_errors=True)
        _admin_topics(settings, delete=list(dict.fromkeys(_CREATED)))
        _CREATED.clear()

    def col(rows: list[dict[str, float]], key: str) -> list[float]:
        return [row[key] for row in rows]

    small, large = _label(options.small), _label(options.large)
    figures: dict[str, Figure] = {
        f"changes_per_s_{small}": summarize(col(tput, "small"), "changes/s", digits=0,
                                            note=f"micro-batches of {options.small:,} changes"),
        f"changes_per_s_{large}": summarize(col(tput, "large"), "changes/s", digits=0,
                                            note=f"micro-batches of {options.large:,} changes"),
        "changes_per_s": summarize(col(tput, "large"), "changes/s", digits=0,
                                   note=f"= changes_per_s_{large}"),
        "warmup_batch_s": summarize([tput[0]["warmup_s"]], "s", digits=1,
                                    note=f"the first batch ({options.warmup:,} changes) of a fresh BatchApplier"),
        f"changes_per_s_{large}_dv": summarize(col(tput_dv, "large"), "changes/s", digits=0,
                                               note=f"as changes_per_s_{large}, the table with deletion vectors "
                                                    "(deletion_vectors: true; one run)"),
        f"changes_per_s_{small}_dv": summarize(col(tput_dv, "small"), "changes/s", digits=0,
                                               note=f"as changes_per_s_{small}, with deletion vectors (one run)"),
        "changes_per_s_dv": summarize(col(tput_dv, "large"), "changes/s", digits=0,
                                      note=f"= changes_per_s_{large}_dv"),
        f"avro_changes_per_s_{small}": summarize(col(tput_avro, "small"), "changes/s", digits=0,
                                                 note=f"as changes_per_s_{small}, the same changes as Avro records "
                                                      "(Confluent wire format, schemas from the registry; one run)"),
        "avro_changes_per_s": summarize(col(tput_avro, "large"), "changes/s", digits=0,
                                        note=f"as changes_per_s_{large}, the same changes as Avro records (one run)"),
        "json_bytes_per_record": summarize([tput[0]["bytes_per_record"]], "bytes", digits=1,
                                           note="key + value of a change record of the mixed batches, JSON with "
                                                "schemas (tombstones aside)"),
        "avro_bytes_per_record": summarize([tput_avro[0]["bytes_per_record"]], "bytes", digits=1,
                                           note="the same records as Avro (5-byte header + Avro binary)"),
        "backfill_rows_per_s": summarize([snap["backfill"]], "rows/s", digits=0,
                                         note=f"an incremental snapshot of {options.rows:,} rows (r events) into an "
                                              f"empty table, batches of {options.large:,}"),
        "resnapshot_rows_per_s": summarize([snap["resnapshot"]], "rows/s", digits=0,
                                           note=f"the same snapshot again into the full table, batches of "
                                                f"{options.large:,}"),
        **_phase_figures(tput),
        **{f"floor_cpu_s.{name}": summarize([value], "CPU s", digits=2,
                                            note=f"{FLOOR_NOTES.get(name, name)}; {options.rows:,}-row table, "
                                                 f"{options.large:,} changes, driver JVM CPU (2 cores), last of 3")
           for name, value in floor["cpu_s"].items()},
        "e2e_p50_ms": summarize(col(e2e, "p50_ms"), "ms", digits=0),
        "e2e_p99_ms": summarize(col(e2e, "p99_ms"), "ms", digits=0),
        "e2e_max_ms": summarize(col(e2e, "max_ms"), "ms", digits=0),
        "e2e_offered_changes_per_s": summarize(col(e2e, "offered"), "changes/s", digits=0),
        "e2e_missing_changes": summarize(col(e2e, "missing"), "changes", digits=0),
        "e2e_batch_p50_ms": summarize([session["batch_p50_ms"]], "ms", digits=0,
                                      note="the streaming query's triggerExecution, micro-batches in the windows"),
        "e2e_batch_engine_p50_ms": summarize(
            [session["batch_engine_p50_ms"]], "ms", digits=0,
            note="the streaming engine's part of a micro-batch: triggerExecution minus addBatch (the job's "
                 "foreachBatch): offsets, its logs, planning"),
        "e2e_batches": summarize([session["batches"]], "batches", digits=0),
        "e2e_first_third_p50_ms": summarize([session["first_third_p50_ms"]], "ms", digits=0),
        "e2e_last_third_p50_ms": summarize([session["last_third_p50_ms"]], "ms", digits=0),
        "lag_growing": summarize([session["lag_growing"]], "0/1", digits=0,
                                 note="1: the last third's p50 is over 1.5 x the first third's and 500 ms more"),
        "sustained_lag_growing": summarize(
            [1.0 if sustained.growing else 0.0], "0/1", digits=0,
            note=f"{options.sustained_s:.0f} s of the mixed changes offered at {options.sustained_rate:,}/s (the "
                 f"sidecar's streaming.max_changes_per_s) to the job's streaming query; 1: the lag (records in Kafka "
                 f"not yet in a finished micro-batch) rose by over {GROWTH_TOLERANCE:.0%} of the records offered "
                 f"from the end of the first third on"),
        "sustained_offered_per_s": summarize([sustained.offered_per_s], "records/s", digits=0,
                                             note="records delivered to Kafka per second of the sustained window "
                                                  "(Kafka tombstones included; less than asked when the 2 cores "
                                                  "cannot generate them that fast beside Spark)"),
        "sustained_applied_per_s": summarize([sustained.applied_per_s], "records/s", digits=0,
                                             note="records of the micro-batches finished within the window, "
                                                  "per second"),
        "sustained_lag_growth_per_s": summarize([sustained.growth_per_s], "records/s", digits=0,
                                                note="how fast the lag rose after the first third"),
        "sustained_batches_finished": summarize([float(sustained.batches_finished)], "batches", digits=0,
                                                note="micro-batches with records (up to max_offsets_per_trigger "
                                                     "each) finished within the window: sustained_applied_per_s "
                                                     "moves in steps of one such batch"),
    }
    parameters = {
        "rows": options.rows, "table": TABLE_SQL, "small_batch": options.small, "large_batch": options.large,
        "batches_small": options.batches_small, "batches_large": options.batches_large,
        "mix": "80% updates of existing keys, 10% inserts, 10% deletes (+ tombstones), 100 changes per transaction",
        "warmup": options.warmup, "e2e_rate": options.e2e_rate, "e2e_tx_rows": options.e2e_tx_rows,
        "e2e_warmup_s": options.e2e_warmup_s, "e2e_window_s": options.e2e_window_s, "trigger": options.trigger,
        "sustained_rate": options.sustained_rate, "sustained_s": options.sustained_s,
        "master": "local[2]",
        "spark_driver_java": java_version,
        "jvm_rss_peak_mb_whole_section": round(exit_report["jvm_rss_peak_kb"] / 1024, 1) if exit_report else None,
    }
    return {
        "apply": {**figures, "parameters": parameters, "batches": detail},
        "rss_mb": {"spark_driver": summarize(col(e2e, "jvm_rss_mb"), "MB",
                                             note="apply job's driver JVM (local[2]: executors included), largest "
                                                  "resident set sampled up to the end of each end-to-end window")},
    }
