"""Apply Debezium change topics to Delta tables with sequence-guarded MERGEs.

Run: ``python -m spark_jobs.apply_changes --config job.yaml`` (or through ``spark-submit``).

Per micro-batch and per topic (= per source table), in ``foreachBatch``:

1. skip Kafka tombstones (null values); decode the envelope with the schema embedded in the
   batch's newest record (or the target table's schema when records carry none);
2. records without a key, an ``op`` or a row go to the dead-letter Delta table with the reason;
3. compute ``_cdc_seq`` (see ``sequence``) and keep the newest event per key;
4. a truncate (``op: t``) deletes every stored row older than it;
5. deletes are remembered as tombstones (``<target_root>/_tombstones/<schema>/<table>``) so that a
   late, older event cannot bring a deleted row back; an event older than a kept tombstone is
   dropped; tombstones older than ``tombstone_retention_hours`` are removed;
6. MERGE: delete when matched and newer; update when matched and newer; insert when not matched
   and not a delete.

Every write carries Delta's idempotent-write id (``txnAppId`` = app id + operation + table,
``txnVersion`` = batch id), so a replayed batch is skipped; the sequence guard makes it a no-op
even without that.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from spark_jobs import sequence
from spark_jobs.connect_schema import (
    ColumnSpec,
    UnsupportedSchemaError,
    decode_decimal,
    envelope_row_struct,
    quote,
    row_columns,
)
from spark_jobs.job_config import ApplyJobConfig, load_job_config

UNAVAILABLE = "__debezium_unavailable_value"
META_COLUMNS = ("_cdc_seq", "_cdc_op", "_cdc_ts_ms")


def table_path(cfg: ApplyJobConfig, topic: str) -> tuple[str, str]:
    """``(qualified name, Delta path)`` for a topic ``<prefix>.<schema>.<table>``."""
    parts = topic.split(".")
    if cfg.topic_prefix and topic.startswith(cfg.topic_prefix + "."):
        parts = topic[len(cfg.topic_prefix) + 1 :].split(".")
    name = ".".join(parts[-2:])
    return name, f"{cfg.target_root.rstrip('/')}/{'/'.join(parts[-2:])}"


class BatchApplier:
    """Applies one micro-batch. Created once per query; ``__call__`` is the foreachBatch function.

    May be called again with the same ``batch_id`` after a crash: every write is idempotent.
    """

    def __init__(self, cfg: ApplyJobConfig) -> None:
        self.cfg = cfg
        self.stats: dict[str, int] = {"batches": 0, "events": 0, "dead_letters": 0}

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        spark = batch_df.sparkSession
        data = batch_df.where(F.col("value").isNotNull()).select(
            "topic", "partition", "offset",
            F.col("key").cast("string").alias("key_str"),
            F.col("value").cast("string").alias("value_str"),
        ).persist()
        try:
            topics = [row.topic for row in data.select("topic").distinct().collect()]
            for topic in sorted(topics):
                self._apply_topic(spark, data.where(F.col("topic") == topic), topic, batch_id)
            self.stats["batches"] += 1
        finally:
            data.unpersist()

    # -- one table ------------------------------------------------------------------------
    def _apply_topic(self, spark: Any, rows: Any, topic: str, batch_id: int) -> None:
        from pyspark.sql import functions as F

        name, path = table_path(self.cfg, topic)
        newest = rows.orderBy(F.col("partition").desc(), F.col("offset").desc()).first()
        try:
            envelope, keys = sequence.schemas_of(newest.value_str, newest.key_str)
            columns = row_columns(envelope_row_struct(envelope)) if envelope else self._target_columns(spark, path)
        except (UnsupportedSchemaError, ValueError) as exc:
            self._dead_letter(spark, rows, topic, f"cannot read the record schema: {exc}", batch_id)
            return
        if not keys:
            keys = self._target_keys(spark, path)
        if not keys:
            self._dead_letter(spark, rows, topic, "record has no key (table without primary key)", batch_id)
            return
        events = self._decode(rows, columns, embedded=envelope is not None)
        bad = events.where(F.col("_reason").isNotNull())
        if not bad.isEmpty():
            self._dead_letter_decoded(spark, bad, topic, batch_id)
        good = events.where(F.col("_reason").isNull()).drop("_reason", "value_str", "key_str")
        self._ensure_table(spark, path, columns, keys)
        self._apply_events(spark, good, columns, keys, path, name, batch_id)

    def _decode(self, rows: Any, columns: list[ColumnSpec], *, embedded: bool) -> Any:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        row_ddl = "STRUCT<" + ", ".join(f"{quote(c.name)}: {c.raw_ddl}" for c in columns) + ">"
        payload_ddl = (
            f"STRUCT<before: {row_ddl}, after: {row_ddl}, "
            "source: STRUCT<lsn: BIGINT, sequence: STRING, snapshot: STRING, ts_ms: BIGINT>, "
            "op: STRING, ts_ms: BIGINT>"
        )
        ddl = f"STRUCT<payload: {payload_ddl}>" if embedded else payload_ddl
        parsed = rows.withColumn("_env", F.from_json("value_str", ddl))
        payload = F.col("_env.payload") if embedded else F.col("_env")
        op = payload["op"]
        row = F.when(op == "d", payload["before"]).otherwise(payload["after"])
        seq = sequence.seq_column(payload["source"]["sequence"], payload["source"]["lsn"], F.col("offset"))
        out = parsed.select(
            "value_str", "key_str",
            row.alias("_row"), op.alias("_cdc_op"), payload["ts_ms"].alias("_cdc_ts_ms"), seq.alias("_cdc_seq"),
        )
        reason = (
            F.when(F.col("_cdc_op").isNull(), F.lit("no op (not a Debezium change event)"))
            .when((F.col("_cdc_op") != "t") & F.col("_row").isNull(), F.lit("no row image (before/after) for op"))
            .when((F.col("_cdc_op") != "t") & F.col("_cdc_seq").isNull(), F.lit("no log position"))
        )
        out = out.withColumn("_reason", reason)
        selected = []
        for c in columns:
            raw = F.col("_row")[c.name]
            if c.decimal is not None:
                precision, scale = c.decimal
                udf = F.udf(lambda b, s=scale: decode_decimal(b, s), T.DecimalType(precision, scale))
                selected.append(udf(raw).alias(c.name))
            else:
                selected.append(F.expr(c.target_expr.format(col=f"_row.{quote(c.name)}")).alias(c.name))
        return out.select(*selected, "_cdc_op", "_cdc_ts_ms", "_cdc_seq", "_reason", "value_str", "key_str")

    # -- writes ---------------------------------------------------------------------------
    def _txn(self, spark: Any, operation: str, name: str, batch_id: int) -> None:
        spark.conf.set("spark.databricks.delta.write.txnAppId", f"{self.cfg.effective_app_id}:{operation}:{name}")
        spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))

    def _clear_txn(self, spark: Any) -> None:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")

    def _ensure_table(self, spark: Any, path: str, columns: list[ColumnSpec], keys: list[str]) -> None:
        from delta.tables import DeltaTable

        cols = ", ".join(f"{quote(c.name)} {c.target_ddl}" for c in columns)
        meta = (
            "_cdc_seq STRUCT<commit_lsn: BIGINT, lsn: BIGINT, kafka_offset: BIGINT>, "
            "_cdc_op STRING, _cdc_ts_ms BIGINT"
        )
        if not DeltaTable.isDeltaTable(spark, path):
            spark.sql(
                f"CREATE TABLE IF NOT EXISTS delta.`{path}` ({cols}, {meta}) USING DELTA "
                f"TBLPROPERTIES (delta.enableChangeDataFeed = true, "
                f"'signaller.keys' = '{','.join(keys)}')"
            )
            return
        existing = {f.name for f in spark.read.format("delta").load(path).schema.fields}
        added = [c for c in columns if c.name not in existing]
        if added:
            adds = ", ".join(f"{quote(c.name)} {c.target_ddl}" for c in added)
            spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS ({adds})")

    def _apply_events(
        self, spark: Any, events: Any, columns: list[ColumnSpec], keys: list[str], path: str, name: str, batch_id: int
    ) -> None:
        from delta.tables import DeltaTable
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        events = events.persist()
        try:
            truncates = events.where(F.col("_cdc_op") == "t").agg(F.max("_cdc_seq").alias("s")).first().s
            changes = events.where(F.col("_cdc_op") != "t")
            if truncates is not None:
                self._txn(spark, "truncate", name, batch_id)
                DeltaTable.forPath(spark, path).delete(F.col("_cdc_seq") < F.struct(*[F.lit(v) for v in truncates]))
                changes = changes.where(F.col("_cdc_seq") > F.struct(*[F.lit(v) for v in truncates]))
            window = Window.partitionBy(*[F.col(quote(k)) for k in keys]).orderBy(F.col("_cdc_seq").desc())
            latest = changes.withColumn("_rn", F.row_number().over(window)).where("_rn = 1").drop("_rn")
            latest = self._tombstones(spark, latest, keys, path, name, batch_id)
            self._merge(spark, latest, columns, keys, path, name, batch_id)
            self.stats["events"] += events.count()
        finally:
            self._clear_txn(spark)
            events.unpersist()

    def _tombstones(self, spark: Any, latest: Any, keys: list[str], path: str, name: str, batch_id: int) -> Any:
        """Drop upserts older than a kept tombstone; record new deletes; GC old tombstones."""
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        tomb_path = path.replace(self.cfg.target_root.rstrip("/"), self.cfg.target_root.rstrip("/") + "/_tombstones", 1)
        key_cols = [F.col(quote(k)) for k in keys]
        if DeltaTable.isDeltaTable(spark, tomb_path):
            tombs = spark.read.format("delta").load(tomb_path).select(*key_cols, F.col("_cdc_seq").alias("_tomb_seq"))
            latest = latest.join(tombs, on=keys, how="left").where(
                F.col("_tomb_seq").isNull() | (F.col("_cdc_seq") > F.col("_tomb_seq"))
            ).drop("_tomb_seq")
        # Materialize now: the plan reads the tombstone table, which the MERGE below changes. A lazy
        # re-evaluation afterwards would see this batch's own new tombstones and drop its deletes.
        latest = latest.localCheckpoint(eager=True)
        new_tombs = latest.where(F.col("_cdc_op") == "d").select(
            *key_cols, "_cdc_seq", F.current_timestamp().alias("_deleted_at")
        )
        if not DeltaTable.isDeltaTable(spark, tomb_path):
            new_tombs.limit(0).write.format("delta").save(tomb_path)
        cond = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in keys)
        self._txn(spark, "tombstones", name, batch_id)
        (
            DeltaTable.forPath(spark, tomb_path).alias("t")
            .merge(latest.alias("s"), cond)
            .whenMatchedDelete(condition="s._cdc_op != 'd' AND s._cdc_seq > t._cdc_seq")
            .whenMatchedUpdate(
                condition="s._cdc_op = 'd' AND s._cdc_seq > t._cdc_seq",
                set={"_cdc_seq": "s._cdc_seq", "_deleted_at": "current_timestamp()"},
            )
            .whenNotMatchedInsert(
                condition="s._cdc_op = 'd'",
                values={**{quote(k): f"s.{quote(k)}" for k in keys}, "_cdc_seq": "s._cdc_seq",
                        "_deleted_at": "current_timestamp()"},
            )
            .execute()
        )
        horizon = f"current_timestamp() - INTERVAL {int(self.cfg.tombstone_retention_hours * 3600)} SECONDS"
        self._txn(spark, "tombstone-gc", name, batch_id)
        DeltaTable.forPath(spark, tomb_path).delete(f"_deleted_at < {horizon}")
        return latest

    def _merge(
        self, spark: Any, latest: Any, columns: list[ColumnSpec], keys: list[str], path: str, name: str, batch_id: int
    ) -> None:
        from delta.tables import DeltaTable

        cond = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in keys)
        update: dict[str, Any] = {}
        insert: dict[str, Any] = {}
        for c in columns:
            q = quote(c.name)
            if _toastable(c):
                unchanged = _placeholder_test(c, "s." + q)
                update[q] = f"CASE WHEN {unchanged} THEN t.{q} ELSE s.{q} END"
                insert[q] = f"CASE WHEN {unchanged} THEN NULL ELSE s.{q} END"
            else:
                update[q] = insert[q] = f"s.{q}"
        for m in META_COLUMNS:
            update[m] = insert[m] = f"s.{m}"
        self._txn(spark, "merge", name, batch_id)
        (
            DeltaTable.forPath(spark, path).alias("t")
            .merge(latest.alias("s"), cond)
            .whenMatchedDelete(condition="s._cdc_op = 'd' AND s._cdc_seq > t._cdc_seq")
            .whenMatchedUpdate(condition="s._cdc_op != 'd' AND s._cdc_seq > t._cdc_seq", set=update)
            .whenNotMatchedInsert(condition="s._cdc_op != 'd'", values=insert)
            .execute()
        )

    # -- dead letters ---------------------------------------------------------------------
    def _dead_letter(self, spark: Any, rows: Any, topic: str, reason: str, batch_id: int) -> None:
        from pyspark.sql import functions as F

        out = rows.select("topic", "partition", "offset", "key_str", "value_str").withColumn("reason", F.lit(reason))
        self._write_dead_letters(spark, out, topic, batch_id)

    def _dead_letter_decoded(self, spark: Any, bad: Any, topic: str, batch_id: int) -> None:
        from pyspark.sql import functions as F

        out = bad.select(
            F.lit(topic).alias("topic"), F.lit(None).cast("int").alias("partition"),
            F.lit(None).cast("bigint").alias("offset"), "key_str", "value_str", F.col("_reason").alias("reason"),
        )
        self._write_dead_letters(spark, out, topic, batch_id)

    def _write_dead_letters(self, spark: Any, out: Any, topic: str, batch_id: int) -> None:
        from pyspark.sql import functions as F

        out = out.withColumn("batch_id", F.lit(batch_id)).withColumn("recorded_at", F.current_timestamp())
        count = out.count()
        (
            out.write.format("delta").mode("append")
            .option("txnAppId", f"{self.cfg.effective_app_id}:dead-letter:{topic}")
            .option("txnVersion", batch_id)
            .option("mergeSchema", "true")
            .save(self.cfg.effective_dead_letter_path)
        )
        self.stats["dead_letters"] += count
        print(f"apply_changes: {count} record(s) of {topic} sent to the dead-letter table "
              f"{self.cfg.effective_dead_letter_path}", file=sys.stderr)

    def _target_columns(self, spark: Any, path: str) -> list[ColumnSpec]:
        from delta.tables import DeltaTable

        if not DeltaTable.isDeltaTable(spark, path):
            msg = "records carry no schema (schemas.enable=false) and the target table does not exist yet"
            raise ValueError(msg)
        fields = [f for f in spark.read.format("delta").load(path).schema.fields if f.name not in META_COLUMNS]
        return [
            ColumnSpec(f.name, f.dataType.simpleString(), "{col}", f.dataType.simpleString(), f.nullable)
            for f in fields
        ]

    def _target_keys(self, spark: Any, path: str) -> list[str]:
        from delta.tables import DeltaTable

        if not DeltaTable.isDeltaTable(spark, path):
            return []
        props = spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect()
        value = next((r.value for r in props if r.key == "signaller.keys"), "")
        return [k for k in value.split(",") if k]


def _toastable(column: ColumnSpec) -> bool:
    """Columns whose unchanged-TOAST placeholder can appear (strings, bytes, arrays)."""
    return column.target_ddl in ("STRING", "BINARY") or column.target_ddl.startswith("ARRAY")


def _placeholder_test(column: ColumnSpec, ref: str) -> str:
    if column.target_ddl == "STRING":
        return f"{ref} = '{UNAVAILABLE}'"
    if column.target_ddl == "BINARY":
        return f"{ref} = CAST('{UNAVAILABLE}' AS BINARY)"
    return f"array_contains(CAST({ref} AS ARRAY<STRING>), '{UNAVAILABLE}')"


def start_query(spark: Any, cfg: ApplyJobConfig) -> Any:
    """Start the streaming query (not blocking); returns the ``StreamingQuery``."""
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", cfg.bootstrap_servers)
        .option("startingOffsets", cfg.starting_offsets)
        .option("failOnDataLoss", str(cfg.fail_on_data_loss).lower())
    )
    reader = reader.option("subscribe", cfg.subscribe) if cfg.subscribe else reader.option(
        "subscribePattern", cfg.subscribe_pattern
    )
    if cfg.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(cfg.max_offsets_per_trigger))
    writer = (
        reader.load().writeStream.foreachBatch(BatchApplier(cfg))
        .option("checkpointLocation", cfg.checkpoint_location)
        .queryName("signaller-apply-changes")
    )
    writer = writer.trigger(availableNow=True) if cfg.available_now else writer.trigger(
        processingTime=cfg.trigger_interval
    )
    return writer.start()


def main(argv: list[str] | None = None) -> int:
    from spark_jobs.session import build_session

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", required=True, help="job configuration (JSON or YAML)")
    args = parser.parse_args(argv)
    cfg = load_job_config(args.config)
    spark = build_session("signaller-apply-changes", master=cfg.master, conf=cfg.spark_conf)
    query = start_query(spark, cfg)
    query.awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
