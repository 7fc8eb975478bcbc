"""Apply Debezium change topics to Delta tables with sequence-guarded MERGEs.

Run: ``python -m spark_jobs.apply_changes --config job.yaml`` (or through ``spark-submit``).

Per micro-batch and per topic (= per source table), in ``foreachBatch``:

1. skip Kafka tombstones (null values); frame each record once (``spark_jobs.frame``: its
   schema's hash and its payload text, the compact envelope split without a JSON parse; the
   framed batch is cached); group the records by their embedded envelope schema
   (JsonConverter ``schemas.enable=true``), parsed once per job (``SchemaCache``), or, for records
   without one, take the columns from the target table and infer the types of new columns from
   the batch's ``after``/``before``; Avro records (Confluent wire format, ``format`` ``auto`` or
   ``avro``) are grouped by their writer schema id, the schema fetched once from the registry
   (``spark_jobs.avro_schemas``) and the bodies decoded by ``from_avro``, once per id;
2. reconcile those columns with the stored table: new columns are added, types Delta can widen
   are widened, an incompatible change (e.g. INT → STRING, other key columns) sends the table's
   records of this batch to the dead-letter table, naming the column and both types;
3. decode every record; records without a key, an ``op``, a row image or a log position, or with
   a value that cannot be converted to its column's type, go to the dead-letter Delta table with
   the raw record (topic, partition, offset, key, value) and the reason;
4. compute ``_cdc_seq`` (see ``sequence``) and keep the newest event per key;
5. a truncate (``op: t``) deletes every stored row older than it and is remembered as the
   table's truncate horizon (older events arriving later are dropped);
6. deletes are remembered as tombstones (``<target_root>/_tombstones/<schema>/<table>``, appended
   beside the MERGE: ``spark_jobs.side_write``) so that a late, older event cannot bring a deleted
   row back; an event older than the newest kept tombstone of its key is dropped; tombstones older
   than ``tombstone_retention_hours`` are removed;
7. split by shape (``spark_jobs.split``): rows whose keys are provably new (new table, key outside
   the table's key range, or a snapshot read an anti-join did not find) are appended, unless the
   batch needs a MERGE anyway and they are its smaller part, or few and not snapshot reads (then
   the MERGE inserts them: one commit instead of two);
8. MERGE the rest: delete when matched and newer; update when matched and newer (keeping the stored
   value of columns whose new value is Debezium's unchanged-TOAST placeholder); insert when not
   matched and not a delete. The job writes it itself in a transaction that reads the table's files
   from its checksum: rewriting the touched files (``spark_jobs.cow_merge``), or with
   ``deletion_vectors`` marking replaced rows (``spark_jobs.dv_merge``); else it is Delta's MERGE.

``spark_jobs.phases`` times each step (``BatchApplier.last_clock``).

Every write carries Delta's idempotent-write id (``txnAppId`` = app id + operation + table,
``txnVersion`` = batch id), so a replayed batch is skipped; the sequence guard makes it a no-op
even without that. A failure in one table's writes stops the query (the batch is retried on
restart); bad records and incompatible schemas never do.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from spark_jobs import decode, sequence, steady
from spark_jobs.avro_schemas import AvroSchemas, Registry
from spark_jobs.batch_cache import BatchCache
from spark_jobs.connect_schema import ColumnSpec, Reconciled, UnsupportedSchemaError, reconcile
from spark_jobs.dead_letters import DeadLetters
from spark_jobs.decode import BatchError, Group
from spark_jobs.frame import (
    POSITION,
    RAW,
    KnownHead,
    SchemaCache,
    SchemaKey,
    discover,
    frame,
    remember_heads,
    schema_texts,
)
from spark_jobs.job_config import ApplyJobConfig, load_job_config
from spark_jobs.kafka_source import change_stream, min_partitions
from spark_jobs.phases import PhaseClock
from spark_jobs.split import fold_appends
from spark_jobs.sqltext import sql_string
from spark_jobs.tables import (
    META_DDL,
    PROP_KEYS,
    PROP_SCHEMA,
    PROP_TRUNCATED,
    DeltaTables,
    TableState,
    table_path,
)
from spark_jobs.writes import DeltaWriter, seq_literal

__all__ = [
    "META_DDL", "PROP_KEYS", "PROP_SCHEMA", "BatchApplier", "BatchError", "Group", "TableState", "min_partitions",
    "run", "start_query", "table_path",
]


class BatchApplier:
    """Applies one micro-batch. Created once per query; ``__call__`` is the foreachBatch function.

    May be called again with the same ``batch_id`` after a crash: every write is idempotent.
    """

    def __init__(self, cfg: ApplyJobConfig) -> None:
        self.cfg = cfg
        self.stats: dict[str, int] = {"batches": 0, "events": 0, "dead_letters": 0}
        self.tables = DeltaTables(cfg)
        self.cache = BatchCache()  # what a batch checkpoints and caches, released when it ends
        self.writer = DeltaWriter(cfg, self._phase, self.cache.checkpoint)
        self.dead_letters = DeadLetters(cfg)
        self.schemas = SchemaCache()
        registry = Registry(cfg.schema_registry_url, cfg.schema_registry_user_info) if cfg.schema_registry_url else None
        self.avro_schemas = AvroSchemas(registry)
        self._heads: dict[str, KnownHead] = {}  # per topic, insertion order = least recently seen first
        self._steady: Any | None = None  # what the next batch is decoded in one pass for (spark_jobs.steady)
        self.last_clock: PhaseClock | None = None  # where the last batch's time went (see phases)
        self._clock: PhaseClock | None = None

    def _phase(self, name: str) -> Any:
        assert self._clock is not None
        return self._clock.phase(name)

    def _tomb_path(self, path: str) -> str:
        return self.writer.tomb_path(path)

    def _keys(self, groups: list[Group], state: TableState | None) -> list[str]:
        return decode.batch_keys(groups, state)

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        clock = self._clock = PhaseClock(batch_df.sparkSession, batch_id)
        data = batch_df.where(F.col("value").isNotNull()).select(*RAW)
        try:
            if not self._apply_steady(batch_df.sparkSession, data, batch_id):
                self._apply_batch(batch_df.sparkSession, data, batch_id)
            self.stats["batches"] += 1
        finally:
            self.cache.release()
            self.stats["dead_letters"] = self.dead_letters.count
            clock.finish()
            self.last_clock, self._clock = clock, None

    def _apply_batch(self, spark: Any, data: Any, batch_id: int) -> None:
        """The general road: frame and cache the batch, find its schemas, then each topic."""
        from pyspark.sql import functions as F

        with self._phase("read"):
            framed, found = self._framed(data, split=True)
            if framed is None:  # a split that was wrong for this batch (see spark_jobs.frame)
                framed, found = self._framed(data, split=False)
        assert framed is not None
        self._steady = steady.steady_source(found)
        by_topic: dict[str, list[Any]] = {}
        for row in found:
            by_topic.setdefault(row.topic, []).append(row)
        for topic in sorted(by_topic):
            rows = sorted(by_topic[topic], key=lambda r: r.newest)
            where = F.col("topic") == topic
            self._apply_topic(spark, framed.where(where), data.where(where), topic, batch_id, rows)

    def _apply_steady(self, spark: Any, data: Any, batch_id: int) -> bool:
        """The batch in one pass with the previous batch's only schema (``spark_jobs.steady``); False
        (nothing written, the pass released) when the batch does not fit it."""
        source, self._steady = self._steady, None
        if source is None:
            return False
        topic = source.topic
        head = None if source._avro else self._heads.get(topic)
        if head is None and not source._avro:
            return False
        started = time.monotonic()
        path = table_path(self.cfg, topic)[1]
        with self._phase("schema"):
            state = self.tables.state(spark, path)
            planned = steady.plan(head, self.schemas, state) if head is not None else steady.plan_avro(
                source, self.avro_schemas, state)
        if state is None or planned is None:
            return False
        group, rec = planned
        # row blocks: building a columnar cache of them was ~19 % of the JVM's samples (JFR, 100k)
        events = self.cache.checkpoint(steady.events(data, topic, head, group, rec, state.keys, self.cfg.format),
                                       eager=False)
        with self._phase("decode"):
            stats = decode.batch_stats(events, rec.columns, state.keys, every=True)
        if not steady.confirmed(stats, state.keys, source):
            self.cache.drop(events)
            return False
        self._steady = source
        if stats.n:
            self._apply_decoded(spark, data, topic, batch_id, events.drop("_in_group", "_key_id", "key_str"), stats,
                                rec, list(state.keys), state, [], started)
        return True

    def _framed(self, data: Any, split: bool) -> tuple[Any | None, list[Any]]:
        """The batch framed and cached, and its distinct schemas, each in the schema cache; None
        when a split schema text is not a JSON object (frame again without splitting)."""
        framed = self.cache.persist(frame(data, split=split, fmt=self.cfg.format,
                                          heads=self._heads if split else None))
        found = discover(framed)
        keys = [SchemaKey(r._split, r._schema_hash, r._avro) for r in found]
        missing = self.schemas.missing(keys)
        if missing:
            for key, text in schema_texts(data, missing, split, self.cfg.format).items():
                self.schemas.add(key, text)
        if any(k.split and self.schemas.failed(k) for k in keys):
            self.cache.drop(framed)
            return None, []
        remember_heads(self._heads, found, self.schemas)
        return framed, found

    # -- one table ------------------------------------------------------------------------
    def _apply_topic(self, spark: Any, framed: Any, raw: Any, topic: str, batch_id: int, found: list[Any]) -> None:
        """Dead letters of a topic are written once per batch (the idempotent-write id is per topic
        and batch: a second append would be skipped as done)."""
        from pyspark.sql import functions as F

        started = time.monotonic()
        path = table_path(self.cfg, topic)[1]
        unreadable: list[Any] = []  # the records of groups whose schema cannot be used, with the reason
        try:
            with self._phase("schema"):
                state = self.tables.state(spark, path)
                groups = self._groups(spark, framed, state, found)
            for bad_group in [g for g in groups if g.error]:
                rows = decode.group_rows(frame(raw, split=bad_group.split, keep_raw=True, fmt=self.cfg.format),
                                         bad_group)
                unreadable.append(rows.select(*RAW).withColumn("reason", F.lit(bad_group.error or "")))
            groups = [g for g in groups if not g.error]
            if not groups:
                self._dead_letters(unreadable, topic, batch_id)
                return
            keys = decode.batch_keys(groups, state)
            rec = reconcile(state.columns if state else None, [g.columns for g in groups])
            if rec.error:
                raise BatchError(rec.error)
            missing = [k for k in keys if k not in {c.name for c in rec.columns}]
            if missing:
                raise BatchError(f"key column(s) {missing} are not columns of the row")
        except BatchError as exc:  # every record of the topic, the unreadable ones too
            self._dead_letter(raw, topic, str(exc), batch_id)
            return
        except (UnsupportedSchemaError, ValueError, KeyError, TypeError) as exc:
            self._dead_letter(raw, topic, f"cannot read the record schema: {exc}", batch_id)
            return
        parts = [decode.decode(framed, g, rec.columns, keys) for g in groups]
        events = parts[0]
        for part in parts[1:]:
            events = events.unionByName(part)
        events = self.cache.checkpoint(events, eager=False)  # row blocks: cheaper to build than a columnar cache
        with self._phase("decode"):
            stats = decode.batch_stats(events, rec.columns, keys)
        self._apply_decoded(spark, raw, topic, batch_id, events, stats, rec, keys, state, unreadable, started)

    def _apply_decoded(
        self, spark: Any, raw: Any, topic: str, batch_id: int, events: Any, stats: Any, rec: Reconciled,
        keys: list[str], state: TableState | None, unreadable: list[Any], started: float,
    ) -> None:
        """A topic's decoded ``events`` (counted in ``stats``): dead letters (``unreadable`` and the
        events with a ``_reason``, their records from ``raw``), DDL, then the writes."""
        from pyspark.sql import functions as F

        name, path = table_path(self.cfg, topic)
        if stats.bad:  # the raw records come from the batch, not through the decoded events
            bad = events.where(F.col("_reason").isNotNull()).select(*POSITION, F.col("_reason").alias("reason"))
            unreadable.append(raw.join(bad, on=list(POSITION)).select(*RAW, "reason"))
        self._dead_letters(unreadable, topic, batch_id, stats.bad if len(unreadable) == 1 and stats.bad else None)
        good = events.where("_reason IS NULL").drop("_reason", "topic", "partition")
        with self._phase("ddl"):
            self.tables.ensure(spark, path, name, state, rec, keys)
        self._apply_events(spark, good, rec.columns, keys, path, name, batch_id, state, stats)
        self.stats["events"] += stats.n
        print(f"apply_changes: batch {batch_id} {name}: {stats.n} event(s), {stats.bad} dead-lettered, "
              f"{stats.deletes} delete(s) in {time.monotonic() - started:.1f}s", file=sys.stderr)

    def _groups(self, spark: Any, framed: Any, state: TableState | None, found: list[Any]) -> list[Group]:
        return decode.groups(spark, framed, state, found, self.schemas, self.avro_schemas)

    def _apply_events(
        self, spark: Any, events: Any, columns: list[ColumnSpec], keys: list[str], path: str, name: str,
        batch_id: int, state: TableState | None, stats: Any,
    ) -> None:
        """Truncate, newest event per key, tombstones, then the append of new keys and the MERGE."""
        from pyspark.sql import functions as F

        writer, side = self.writer, None
        try:
            changes = events.where(F.col("_cdc_op") != "t")
            batch_trunc = sequence.seq_tuple(stats.trunc)
            horizon = state.truncated if state else None
            if batch_trunc is not None:
                with self._phase("truncate"):
                    if horizon is None or batch_trunc > horizon:
                        horizon = batch_trunc
                        self.tables.forget(path)
                        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({sql_string(PROP_TRUNCATED)} = "
                                  f"{sql_string(json.dumps(list(horizon)))})")
                    writer.truncate(spark, path, name, batch_id, horizon)
            if horizon is not None:
                changes = changes.where(F.col("_cdc_seq") > seq_literal(horizon))
            if stats.toasted:
                changes = decode.fill_unchanged(changes, columns, keys)
            latest = decode.newest_per_key(changes, keys)
            bounds = decode.key_bounds(stats, columns, keys)
            tomb_path = writer.tomb_path(path)
            latest, tombs_exist = writer.drop_tombstoned(spark, latest, keys, tomb_path, bounds, (changes, stats.n))
            # Materialized once: the plan reads the tombstone table and the target, which the writes
            # below change; both the append and the MERGE read it.
            with self._phase("order_dedup"):
                tagged = writer.tag(spark, latest, columns, keys, path, state, stats, bounds)
                tagged = self.cache.checkpoint(tagged, eager=True)
                counts = tagged.agg(
                    F.count(F.when(F.col("_dest") == "append", 1)).alias("append"),
                    F.count(F.when(F.col("_dest") == "merge", 1)).alias("merge"),
                    F.count(F.when((F.col("_dest") == "append") & (F.col("_cdc_op") == "r"), 1)).alias("append_reads"),
                ).first()
            if stats.deletes:  # beside the MERGE (another table), waited for after it
                side = writer.tombstones_beside(spark, tagged.where(F.col("_cdc_op") == "d"), columns, keys,
                                                tomb_path, name, batch_id, tombs_exist, self._clock)
            if fold_appends(counts.append, counts.merge, counts.append_reads):  # one commit: the MERGE inserts them
                with self._phase("merge"):
                    writer.merge(spark, tagged, columns, keys, path, name, batch_id, bounds,
                                 counts.append + counts.merge)
            else:
                if counts.append:
                    with self._phase("append"):
                        writer.append(spark, tagged.where(F.col("_dest") == "append"), columns, path, name,
                                      batch_id)
                if counts.merge:
                    with self._phase("merge"):
                        writer.merge(spark, tagged.where(F.col("_dest") == "merge"), columns, keys, path, name,
                                     batch_id, bounds, counts.merge)
            if side is not None:
                with self._phase("tombstones"):
                    side.wait()
            with self._phase("compaction"):
                writer.compact(spark, path)
            writer.widen_range(path, stats, columns, keys)
            with self._phase("tombstone_gc"):
                writer.collect_tombstones(spark, path, name, batch_id)
        finally:
            if side is not None:
                side.join()
            writer.clear_txn(spark)

    def _dead_letters(self, parts: list[Any], topic: str, batch_id: int, count: int | None = None) -> None:
        """One append of ``parts`` (raw columns and ``reason``), if any; ``count``: their rows, if known."""
        if not parts:
            return
        rows = parts[0]
        for part in parts[1:]:
            rows = rows.unionByName(part)
        with self._phase("dead_letters"):
            self.dead_letters.append(rows, topic, batch_id, count)

    def _dead_letter(self, rows: Any, topic: str, reason: str, batch_id: int) -> None:
        from pyspark.sql import functions as F

        with self._phase("dead_letters"):
            self.dead_letters.append(rows.select(*RAW).withColumn("reason", F.lit(reason)), topic, batch_id)


def start_query(spark: Any, cfg: ApplyJobConfig) -> Any:
    """Start the streaming query (not blocking); returns the ``StreamingQuery``."""
    writer = (
        change_stream(spark, cfg).writeStream.foreachBatch(BatchApplier(cfg))
        .option("checkpointLocation", cfg.checkpoint_location)
        .queryName("signaller-apply-changes")
    )
    writer = writer.trigger(availableNow=True) if cfg.available_now else writer.trigger(
        processingTime=cfg.trigger_interval
    )
    return writer.start()


def _is_spark_55271(exc: BaseException) -> bool:
    """Spark 4.1.1's Kafka source fails its progress report with a NullPointerException in
    ``KafkaMicroBatchStream.metrics`` after re-running the batch a crash left uncommitted
    (SPARK-55271 / SPARK-57438, fixed upstream). The batch is committed by then."""
    text = str(exc)
    return '"scala.Option.get()" is null' in text and "IterableOps.map" in text


def run(spark: Any, cfg: ApplyJobConfig, max_restarts: int = 3) -> None:
    """Run the query until it stops; restart it from its checkpoint after SPARK-55271 (see
    :func:`_is_spark_55271`), at most ``max_restarts`` times in a row."""
    from pyspark.errors import StreamingQueryException

    restarts = 0
    while True:
        query = start_query(spark, cfg)
        try:
            query.awaitTermination()
            return
        except StreamingQueryException as exc:
            if not _is_spark_55271(exc) or restarts >= max_restarts:
                raise
            restarts += 1
            print(f"apply_changes: restarting the query after Spark's Kafka metrics bug (SPARK-55271): "
                  f"{str(exc).splitlines()[0]}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    from spark_jobs.session import build_session

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="job configuration (JSON or YAML)")
    args = parser.parse_args(argv)
    cfg = load_job_config(args.config)
    spark = build_session("signaller-apply-changes", master=cfg.master, conf=cfg.spark_conf)
    run(spark, cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
