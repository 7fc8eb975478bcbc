"""Apply Debezium change topics to Delta tables with sequence-guarded MERGEs.

Run: ``python -m spark_jobs.apply_changes --config job.yaml`` (or through ``spark-submit``).

Per micro-batch and per topic (= per source table), in ``foreachBatch``:

1. skip Kafka tombstones (null values); parse each record's envelope once (the framed batch is
   cached); group the records by their embedded envelope schema
   (JsonConverter ``schemas.enable=true``) or, for records without one, take the columns from
   the target table and infer the types of new columns from the batch's ``after``/``before``;
2. reconcile those columns with the stored table: new columns are added, types Delta can widen
   are widened, an incompatible change (e.g. INT → STRING, other key columns) sends the table's
   records of this batch to the dead-letter table, naming the column and both types;
3. decode every record; records without a key, an ``op``, a row image or a log position, or with
   a value that cannot be converted to its column's type, go to the dead-letter Delta table with
   the raw record (topic, partition, offset, key, value) and the reason;
4. compute ``_cdc_seq`` (see ``sequence``) and keep the newest event per key;
5. a truncate (``op: t``) deletes every stored row older than it and is remembered as the
   table's truncate horizon (older events arriving later are dropped);
6. deletes are remembered as tombstones (``<target_root>/_tombstones/<schema>/<table>``) so that a
   late, older event cannot bring a deleted row back; an event older than a kept tombstone is
   dropped (the tombstone MERGE sees only the batch's deletes and the keys that had a tombstone);
   tombstones older than ``tombstone_retention_hours`` are removed;
7. split by shape (``spark_jobs.split``): rows whose keys are provably new (new table, key outside
   the table's key range, or a snapshot read an anti-join did not find) are appended;
8. MERGE the rest: delete when matched and newer; update when matched and newer (keeping the stored
   value of columns whose new value is Debezium's unchanged-TOAST placeholder); insert when not
   matched and not a delete. ``deletion_vectors`` in the config turns Delta's deletion vectors on.

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
from dataclasses import dataclass
from typing import Any

from spark_jobs import sequence, split
from spark_jobs.connect_schema import (
    ColumnSpec,
    Reconciled,
    UnsupportedSchemaError,
    column_spec,
    connect_node_of_spark,
    envelope_row_struct,
    quote,
    reconcile,
    row_columns,
)
from spark_jobs.job_config import ApplyJobConfig, JobConfigError, load_job_config
from spark_jobs.phases import PhaseClock

META_COLUMNS = ("_cdc_seq", "_cdc_op", "_cdc_ts_ms")
META_DDL = "_cdc_seq STRUCT<commit_lsn: BIGINT, lsn: BIGINT, kafka_offset: BIGINT>, _cdc_op STRING, _cdc_ts_ms BIGINT"
PROP_SCHEMA = "signaller.connect_schema"
PROP_KEYS = "signaller.keys"
PROP_TRUNCATED = "signaller.truncated_before"
DV_PROP = "delta.enableDeletionVectors"
PAYLOAD_DDL = (
    "STRUCT<before: STRING, after: STRING, source: STRUCT<lsn: BIGINT, sequence: STRING>, op: STRING, ts_ms: BIGINT>"
)
OPS = ("c", "u", "d", "r", "t")
RAW = ("topic", "partition", "offset", "key", "value")
POSITION = ("topic", "partition", "offset")  # a record's identity within a batch


def table_path(cfg: ApplyJobConfig, topic: str) -> tuple[str, str]:
    """``(<schema>.<table>, Delta path)`` for a topic ``<prefix>.<schema>.<table>``."""
    parts = topic.split(".")
    if cfg.topic_prefix and topic.startswith(cfg.topic_prefix + "."):
        parts = topic[len(cfg.topic_prefix) + 1 :].split(".")
    name = ".".join(parts[-2:])
    return name, f"{cfg.target_root.rstrip('/')}/{'/'.join(parts[-2:])}"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@dataclass
class TableState:
    """What the stored Delta table says about itself."""

    columns: list[ColumnSpec] | None
    keys: list[str]
    truncated: tuple[int, int, int] | None
    delta_types: dict[str, str]
    properties: dict[str, str]


@dataclass
class Group:
    """The records of one topic in one batch that share an envelope schema (or have none)."""

    wrapped: bool
    schema_hash: int | None
    schema: dict[str, Any] | None
    keys: list[str]
    columns: list[ColumnSpec]
    error: str | None = None  # the schema cannot be used: the group's records are dead-lettered


class BatchError(Exception):
    """The table's records of this batch cannot be applied; the message is the dead-letter reason."""


class BatchApplier:
    """Applies one micro-batch. Created once per query; ``__call__`` is the foreachBatch function.

    May be called again with the same ``batch_id`` after a crash: every write is idempotent.
    """

    def __init__(self, cfg: ApplyJobConfig) -> None:
        self.cfg = cfg
        self.stats: dict[str, int] = {"batches": 0, "events": 0, "dead_letters": 0}
        self._registered: set[str] = set()
        self._known: set[str] = set()  # Delta tables known to exist
        self._states: dict[str, TableState] = {}  # this job is the tables' only writer
        self._last_gc: dict[str, float] = {}
        self._ranges: dict[str, split.KeyRange | None] = {}  # per table: its keys lie inside
        self.last_clock: PhaseClock | None = None  # where the last batch's time went (see phases)
        self._clock: PhaseClock | None = None

    def _phase(self, name: str) -> Any:
        assert self._clock is not None
        return self._clock.phase(name)

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        spark = batch_df.sparkSession
        clock = self._clock = PhaseClock(spark, batch_id)
        data = batch_df.where(F.col("value").isNotNull()).select(
            "topic", "partition", "offset", "key", "value", F.col("key").cast("string").alias("key_str"),
        )
        # The envelope is parsed once, here: the cache holds the framed records, not the raw text.
        framed = self._frame(data).persist()
        try:
            # One pass over the batch finds every topic and the distinct schemas in each.
            found: dict[str, list[Any]] = {}
            with self._phase("read"):
                discovered = (
                    framed.groupBy("topic", "_wrapped", "_schema_hash")
                    .agg(F.first("_schema_text", ignorenulls=True).alias("schema"),
                         F.first("key_str", ignorenulls=True).alias("key"), F.max("offset").alias("newest"))
                    .collect()
                )
            for row in discovered:
                found.setdefault(row.topic, []).append(row)
            for topic in sorted(found):
                rows = sorted(found[topic], key=lambda r: r.newest)
                self._apply_topic(spark, framed.where(F.col("topic") == topic), topic, batch_id, rows)
            self.stats["batches"] += 1
        finally:
            framed.unpersist()
            clock.finish()
            self.last_clock, self._clock = clock, None

    # -- one table ------------------------------------------------------------------------
    def _apply_topic(self, spark: Any, framed: Any, topic: str, batch_id: int, found: list[Any]) -> None:
        from pyspark.sql import functions as F

        started = time.monotonic()
        name, path = table_path(self.cfg, topic)
        try:
            with self._phase("schema"):
                state = self._table_state(spark, path)
                groups = self._groups(spark, framed, state, found)
            for bad_group in [g for g in groups if g.error]:
                self._dead_letter(spark, self._group_rows(framed, bad_group), topic, bad_group.error or "", batch_id)
            groups = [g for g in groups if not g.error]
            if not groups:
                return
            keys = self._keys(groups, state)
            rec = reconcile(state.columns if state else None, [g.columns for g in groups])
            if rec.error:
                raise BatchError(rec.error)
            missing = [k for k in keys if k not in {c.name for c in rec.columns}]
            if missing:
                raise BatchError(f"key column(s) {missing} are not columns of the row")
        except BatchError as exc:
            self._dead_letter(spark, framed, topic, str(exc), batch_id)
            return
        except (UnsupportedSchemaError, ValueError, KeyError, TypeError) as exc:
            self._dead_letter(spark, framed, topic, f"cannot read the record schema: {exc}", batch_id)
            return
        parts = [self._decode(framed, g, rec.columns, keys) for g in groups]
        events = parts[0]
        for part in parts[1:]:
            events = events.unionByName(part)
        events = events.persist()
        try:
            with self._phase("decode"):
                stats = events.agg(
                    F.count(F.lit(1)).alias("n"),
                    F.count(F.col("_reason")).alias("bad"),
                    F.count(F.when((F.col("_cdc_op") == "d") & F.col("_reason").isNull(), 1)).alias("deletes"),
                    F.max(F.when((F.col("_cdc_op") == "t") & F.col("_reason").isNull(), F.col("_cdc_seq")))
                    .alias("trunc"),
                    F.count(F.when(F.size("_cdc_unchanged") > 0, 1)).alias("toasted"),
                    F.count(F.when((F.col("_cdc_op") == "r") & F.col("_reason").isNull(), 1)).alias("reads"),
                    *_key_range_aggregates(rec.columns, keys),
                ).first()
            if stats.bad:  # the raw records come from the cached batch, not through the decoded events
                bad = events.where(F.col("_reason").isNotNull()).select(*POSITION, F.col("_reason").alias("reason"))
                raw = framed.select(*RAW).join(bad, on=list(POSITION)).select(*RAW, "reason")
                self._write_dead_letters(spark, raw, topic, batch_id, stats.bad)
            good = events.where(F.col("_reason").isNull()).drop("_reason", "topic", "partition")
            with self._phase("ddl"):
                self._ensure_table(spark, path, name, state, rec, keys)
            self._apply_events(spark, good, rec.columns, keys, path, name, batch_id, state, stats)
            self.stats["events"] += stats.n
            print(f"apply_changes: batch {batch_id} {name}: {stats.n} event(s), {stats.bad} dead-lettered, "
                  f"{stats.deletes} delete(s) in {time.monotonic() - started:.1f}s", file=sys.stderr)
        finally:
            events.unpersist()

    def _frame(self, rows: Any) -> Any:
        """Per record: is it ``{"schema":..., "payload":...}``, its schema's text and hash, the payload."""
        from pyspark.sql import functions as F

        value_str = F.col("value").cast("string")
        env = F.from_json(value_str, "STRUCT<schema: STRING, payload: STRING>")
        framed = rows.withColumn("_env", env)
        schema_text = F.col("_env.schema")
        return framed.select(
            *RAW, "key_str",
            F.col("_env.payload").isNotNull().alias("_wrapped"),
            schema_text.alias("_schema_text"),
            F.when(schema_text.isNotNull(), F.xxhash64(schema_text)).alias("_schema_hash"),
            F.coalesce(F.col("_env.payload"), value_str).alias("_payload"),
        )

    def _groups(self, spark: Any, framed: Any, state: TableState | None, found: list[Any]) -> list[Group]:
        """One :class:`Group` per distinct envelope schema of the topic's records (oldest first)."""
        groups = []
        for row in found:
            keys = sequence.key_names(row.key)
            if row.schema is None:
                columns = self._schemaless_columns(spark, framed, row._wrapped, state)
                groups.append(Group(row._wrapped, None, None, keys, columns))
                continue
            try:
                schema = json.loads(row.schema)
                columns = row_columns(envelope_row_struct(schema))
            except (UnsupportedSchemaError, ValueError, KeyError, TypeError, AttributeError) as exc:
                error = f"cannot read the record schema: {exc}"
                groups.append(Group(row._wrapped, row._schema_hash, None, [], [], error))
                continue
            groups.append(Group(row._wrapped, row._schema_hash, schema, keys, columns))
        return groups

    @staticmethod
    def _group_rows(framed: Any, group: Group) -> Any:
        from pyspark.sql import functions as F

        match = (F.col("_schema_hash") == group.schema_hash) if group.schema_hash is not None else (
            F.col("_schema_hash").isNull()
        )
        return framed.where((F.col("_wrapped") == group.wrapped) & match)

    def _schemaless_columns(self, spark: Any, framed: Any, wrapped: bool, state: TableState | None) -> list[ColumnSpec]:
        """Columns for records without an embedded schema: the stored table's, plus new columns
        whose types Spark infers from this batch's ``after``/``before`` JSON."""
        from pyspark.sql import functions as F

        stored = list(state.columns) if state and state.columns else []
        known = {c.name for c in stored}
        payload = F.from_json("_payload", PAYLOAD_DDL)
        texts = (
            framed.where((F.col("_wrapped") == wrapped) & F.col("_schema_hash").isNull())
            .where(payload["op"].isin(*OPS))  # only change events describe the row
            .select(F.explode(F.array(payload["after"], payload["before"])).alias("t"))
            .where(F.col("t").isNotNull())
        )
        if known:  # infer only when the batch brings columns the table does not have
            names = texts.select(F.explode(F.json_object_keys("t")).alias("k")).distinct().collect()
            if {r.k for r in names} <= known:
                return stored
        inferred = spark.read.option("mode", "DROPMALFORMED").json(texts.rdd.map(lambda r: r[0])).schema
        new = [
            column_spec(connect_node_of_spark(f["type"], f["name"]))
            for f in inferred.jsonValue().get("fields", [])
            if f["name"] not in known and f["name"] != "_corrupt_record"
        ]
        return stored + new

    def _keys(self, groups: list[Group], state: TableState | None) -> list[str]:
        seen = [g.keys for g in groups if g.keys]
        keys = seen[-1] if seen else (state.keys if state else [])
        for other in seen:
            if other != keys:
                raise BatchError(f"key columns change within the batch: {other} and {keys}")
        if state and state.keys and keys != state.keys:
            raise BatchError(f"incompatible schema change: key columns change from {state.keys} to {keys}")
        if not keys:
            raise BatchError("record has no key (table without primary key)")
        return keys

    def _decode(self, framed: Any, group: Group, columns: list[ColumnSpec], keys: list[str]) -> Any:
        """The group's records as events: the row's columns in the stored types, ``_cdc_*``, the
        names of unchanged-TOAST columns, and ``_reason`` (non-null: dead-letter)."""
        from pyspark.sql import functions as F

        payload = F.from_json("_payload", PAYLOAD_DDL)
        op = payload["op"]
        base = self._group_rows(framed, group).select(
            *POSITION, "key_str",
            op.alias("_cdc_op"), payload["ts_ms"].alias("_cdc_ts_ms"),
            sequence.seq_column(payload["source"]["sequence"], payload["source"]["lsn"], F.col("offset")).alias(
                "_cdc_seq"),
            F.when(op == "d", payload["before"]).otherwise(payload["after"]).alias("_row_text"),
        )
        mine = {c.name: c for c in group.columns}
        row_ddl = "STRUCT<" + ", ".join(f"{quote(c.name)}: {c.raw_ddl}" for c in group.columns) + ">"
        base = base.select(
            "*", F.from_json("_row_text", row_ddl).alias("_row"), F.from_json("_row_text", "MAP<STRING, STRING>")
            .alias("_raw"),
        )
        values, unchanged, bad = [], [], []
        for target in columns:
            spec = mine.get(target.name)
            if spec is None:
                values.append(F.lit(None).cast(target.target_ddl).alias(target.name))
                continue
            ref = f"_row.{quote(spec.name)}"
            raw = F.col("_row")[spec.name]
            decoded = F.expr(spec.target_expr.replace("{col}", ref))
            is_placeholder = F.coalesce(F.expr(spec.toast_test.replace("{col}", ref)), F.lit(False)) if (
                spec.toast_test) else F.lit(False)
            value = F.when(is_placeholder, F.lit(None)).otherwise(decoded).cast(target.target_ddl)
            values.append(value.alias(target.name))
            if spec.toast_test:
                unchanged.append(F.when(is_placeholder, F.lit(spec.name)))
            text = F.col("_raw")[spec.name]
            failed = text.isNotNull() & ~is_placeholder & value.isNull()
            if spec.converted and spec.raw_ddl.startswith("ARRAY"):
                failed = failed | (raw.isNotNull() & (
                    F.size(F.filter(value, lambda x: x.isNull())) != F.size(F.filter(raw, lambda x: x.isNull()))
                ))
            bad.append(F.when(failed, F.concat(
                F.lit(f"undecodable value of column {spec.name!r} ({spec.raw_ddl} → {target.target_ddl}): "),
                F.substring(text, 1, 200),
            )))
        row_op = F.col("_cdc_op") != "t"
        before_values = F.coalesce(
            F.when(F.col("_cdc_op").isNull(), F.lit("no op (not a Debezium change event)")),
            F.when(~F.col("_cdc_op").isin(*OPS), F.concat(F.lit("unknown op "), F.col("_cdc_op"))),
            F.when(row_op & F.col("_row_text").isNull(), F.lit("no row image (before/after) for the op")),
            F.when(row_op & F.col("_cdc_seq").isNull(), F.lit("no log position (source.sequence and source.lsn)")),
            F.when(row_op & F.col("key_str").isNull(), F.lit("no key")),
        )
        unchanged_col = F.array_compact(F.array(*unchanged)) if unchanged else F.array().cast("array<string>")
        staged = base.select(
            *POSITION, *values, "_cdc_op", "_cdc_ts_ms", "_cdc_seq", unchanged_col.alias("_cdc_unchanged"),
            before_values.alias("_pre"), (F.coalesce(*bad) if bad else F.lit(None).cast("string")).alias("_bad"),
        )
        key_null = F.lit(False)
        for k in keys:
            key_null = key_null | F.col(quote(k)).isNull()
        reason = F.coalesce(
            F.col("_pre"), F.when((F.col("_cdc_op") != "t") & key_null, F.lit(f"null key column (key: {keys})")),
            F.col("_bad"),
        )
        return staged.withColumn("_reason", reason).drop("_pre", "_bad")

    # -- table state and DDL --------------------------------------------------------------
    def _table_state(self, spark: Any, path: str) -> TableState | None:
        from delta.tables import DeltaTable

        if path in self._states:
            return self._states[path]
        if not DeltaTable.isDeltaTable(spark, path):
            return None
        table = DeltaTable.forPath(spark, path)
        detail = table.detail().first()
        props = dict(detail.properties or {}) if detail is not None else {}
        fields = table.toDF().schema.fields
        delta_types = {f.name: f.dataType.simpleString().upper() for f in fields}
        if PROP_SCHEMA in props:
            columns = [column_spec(node) for node in json.loads(props[PROP_SCHEMA])]
        else:  # a table this job did not create: describe its columns as Spark sees them
            columns = [
                column_spec(connect_node_of_spark(f.jsonValue()["type"], f.name))
                for f in fields if f.name not in META_COLUMNS
            ]
        keys = [k for k in props.get(PROP_KEYS, "").split(",") if k]
        truncated = sequence.seq_tuple(props.get(PROP_TRUNCATED))
        self._states[path] = TableState(columns, keys, truncated, delta_types, props)
        return self._states[path]

    def _ensure_table(
        self, spark: Any, path: str, name: str, state: TableState | None, rec: Reconciled, keys: list[str]
    ) -> None:
        target = f"delta.`{path}`"
        schema_json = json.dumps([c.node for c in rec.columns], separators=(",", ":"))
        changed = state is None or bool(rec.added or rec.widened) or (
            state.properties.get(PROP_SCHEMA) != schema_json or not state.keys
        )
        if changed:
            self._states.pop(path, None)  # re-read after this batch's DDL
        if state is None:
            layout = self.cfg.layout_clause(name)
            chosen = self.cfg.partition_by.get(name) or self.cfg.cluster_by.get(name) or []
            unknown = [c for c in chosen if c not in {col.name for col in rec.columns}]
            if unknown:
                msg = f"partition_by/cluster_by of {name}: column(s) {unknown} are not columns of the table"
                raise JobConfigError(msg)
            cols = ", ".join(f"{quote(c.name)} {c.target_ddl}" for c in rec.columns)
            dv = f", {DV_PROP} = true" if self.cfg.deletion_vectors else ""
            spark.sql(
                f"CREATE TABLE IF NOT EXISTS {target} ({cols}, {META_DDL}) USING DELTA {layout} "
                f"TBLPROPERTIES (delta.enableChangeDataFeed = true{dv}, {_sql_string(PROP_KEYS)} = "
                f"{_sql_string(','.join(keys))}, {_sql_string(PROP_SCHEMA)} = {_sql_string(schema_json)})"
            )
        else:
            added = [c for c in rec.added if c.name not in state.delta_types]
            if added:
                adds = ", ".join(f"{quote(c.name)} {c.target_ddl}" for c in added)
                spark.sql(f"ALTER TABLE {target} ADD COLUMNS ({adds})")
            widen = [(n, t) for n, _, t in rec.widened if state.delta_types.get(n) != t]
            if widen or state.properties.get(PROP_SCHEMA) != schema_json or not state.keys:
                widening = ", 'delta.enableTypeWidening' = 'true'" if widen else ""
                spark.sql(
                    f"ALTER TABLE {target} SET TBLPROPERTIES ({_sql_string(PROP_SCHEMA)} = {_sql_string(schema_json)}, "
                    f"{_sql_string(PROP_KEYS)} = {_sql_string(','.join(keys))}{widening})"
                )
            for column, new_type in widen:
                spark.sql(f"ALTER TABLE {target} ALTER COLUMN {quote(column)} TYPE {new_type}")
            if self.cfg.deletion_vectors and state.properties.get(DV_PROP) != "true":
                spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ({DV_PROP} = true)")
                self._states.pop(path, None)
        catalog_name = self.cfg.catalog_name(name)
        if catalog_name and catalog_name not in self._registered:
            database = catalog_name.rsplit(".", 1)[0]
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
            spark.sql(f"CREATE TABLE IF NOT EXISTS {catalog_name} USING DELTA LOCATION {_sql_string(path)}")
            self._registered.add(catalog_name)

    # -- writes ---------------------------------------------------------------------------
    def _txn(self, spark: Any, operation: str, name: str, batch_id: int) -> None:
        spark.conf.set("spark.databricks.delta.write.txnAppId", f"{self.cfg.effective_app_id}:{operation}:{name}")
        spark.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))

    def _clear_txn(self, spark: Any) -> None:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")

    def _apply_events(
        self, spark: Any, events: Any, columns: list[ColumnSpec], keys: list[str], path: str, name: str,
        batch_id: int, state: TableState | None, stats: Any,
    ) -> None:
        from delta.tables import DeltaTable
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        try:
            changes = events.where(F.col("_cdc_op") != "t")
            batch_trunc = sequence.seq_tuple(stats.trunc)
            horizon = state.truncated if state else None
            if batch_trunc is not None:
                with self._phase("truncate"):
                    if horizon is None or batch_trunc > horizon:
                        horizon = batch_trunc
                        self._states.pop(path, None)
                        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ({_sql_string(PROP_TRUNCATED)} = "
                                  f"{_sql_string(json.dumps(list(horizon)))})")
                    self._txn(spark, "truncate", name, batch_id)
                    DeltaTable.forPath(spark, path).delete(F.col("_cdc_seq") < _seq_literal(horizon))
                    self._clear_txn(spark)
            if horizon is not None:
                changes = changes.where(F.col("_cdc_seq") > _seq_literal(horizon))
            if stats.toasted:
                changes = _fill_unchanged(changes, columns, keys)
            window = Window.partitionBy(*[F.col(quote(k)) for k in keys]).orderBy(F.col("_cdc_seq").desc())
            latest = changes.withColumn("_rn", F.row_number().over(window)).where("_rn = 1").drop("_rn")
            bounds = _key_bounds(stats, columns, keys)
            tomb_path = self._tomb_path(path)
            latest, tombs_exist = self._drop_tombstoned(spark, latest, keys, tomb_path, bounds)
            # Materialized once: the plan reads the tombstone table and the target, which the writes
            # below change; both the append and the MERGE read it.
            with self._phase("order_dedup"):
                tagged = self._split(spark, latest, columns, keys, path, state, stats, bounds)
                tagged = tagged.localCheckpoint(eager=True)
                counts = tagged.agg(
                    F.count(F.when(F.col("_dest") == "append", 1)).alias("append"),
                    F.count(F.when(F.col("_dest") == "merge", 1)).alias("merge"),
                ).first()
            if stats.deletes:
                with self._phase("tombstones"):
                    touching = tagged.where((F.col("_cdc_op") == "d") | F.col("_tombed"))
                    self._write_tombstones(spark, touching, columns, keys, tomb_path, name, batch_id, tombs_exist,
                                           bounds)
            if counts.append:
                with self._phase("append"):
                    self._append(spark, tagged.where(F.col("_dest") == "append"), columns, path, name, batch_id)
            if counts.merge:
                with self._phase("merge"):
                    self._merge(spark, tagged.where(F.col("_dest") == "merge"), columns, keys, path, name, batch_id,
                                bounds)
            self._widen_range(path, stats, columns, keys)
            with self._phase("tombstone_gc"):
                self._collect_tombstones(spark, path, name, batch_id)
        finally:
            self._clear_txn(spark)

    def _tomb_path(self, path: str) -> str:
        root = self.cfg.target_root.rstrip("/")
        return root + "/_tombstones" + path[len(root):]

    def _drop_tombstoned(
        self, spark: Any, latest: Any, keys: list[str], tomb_path: str, bounds: list[tuple[str, str, str]],
    ) -> tuple[Any, bool]:
        """Drop upserts older than a kept tombstone; mark (``_tombed``) the keys that have one.
        Returns the events and whether the tombstone table exists.

        The tombstone MERGE (``_write_tombstones``) then only sees the events it can change: the
        batch's deletes and the keys that have a tombstone (an upsert of any other key matches
        nothing and inserts nothing)."""
        from delta.tables import DeltaTable
        from pyspark.sql import functions as F

        key_cols = [F.col(quote(k)) for k in keys]
        with self._phase("tombstones"):
            exists = tomb_path in self._known or DeltaTable.isDeltaTable(spark, tomb_path)
        if not exists:
            return latest.withColumn("_tombed", F.lit(False)), False
        self._known.add(tomb_path)
        tombs = spark.read.format("delta").load(tomb_path)
        if bounds:  # file skipping: only tombstones in the batch's key range can matter
            tombs = tombs.where(_range_sql(None, bounds))
        tombs = tombs.select(*key_cols, F.col("_cdc_seq").alias("_tomb_seq"))
        # ">=": a delete replayed after its tombstone was written (crash between the two MERGEs)
        # must still reach the target; an upsert never has exactly a tombstone's sequence.
        latest = latest.join(tombs, on=keys, how="left").where(
            F.col("_tomb_seq").isNull() | (F.col("_cdc_seq") >= F.col("_tomb_seq"))
        ).withColumn("_tombed", F.col("_tomb_seq").isNotNull()).drop("_tomb_seq")
        return latest, True

    def _split(
        self, spark: Any, latest: Any, columns: list[ColumnSpec], keys: list[str], path: str,
        state: TableState | None, stats: Any, bounds: list[tuple[str, str, str]],
    ) -> Any:
        """``latest`` tagged with ``_dest``: ``append`` for provably new keys, else ``merge`` (see
        ``spark_jobs.split``)."""
        from pyspark.sql import functions as F

        if state is None:  # created in this batch: empty
            self._ranges.pop(path, None)
            return split.tag(latest, True, None, None)
        target = spark.read.format("delta").load(path)
        if path not in self._ranges:
            self._ranges[path] = split.stored_key_range(target, columns, keys)
        target_keys = None
        if stats.reads:  # snapshot reads inside the range: an anti-join against the stored keys
            ranged = target.where(_range_sql(None, bounds)) if bounds else target
            target_keys = ranged.select(*[F.col(quote(k)) for k in keys])
        return split.tag(latest, False, self._ranges[path], target_keys)

    def _widen_range(self, path: str, stats: Any, columns: list[ColumnSpec], keys: list[str]) -> None:
        """After the batch's writes: the table's key range includes the batch's (``_kmin_<i>`` /
        ``_kmax_<i>`` of ``_key_range_aggregates``, over every good change event)."""
        names = split.rangeable_keys(columns, keys)
        if not names:
            return
        found = stats.asDict()
        batch = {k: (found.get(f"_kmin_{keys.index(k)}"), found.get(f"_kmax_{keys.index(k)}")) for k in names}
        have = self._ranges.get(path) or split.KeyRange({k: None for k in names})
        self._ranges[path] = have.widened(batch)

    def _append(self, spark: Any, rows: Any, columns: list[ColumnSpec], path: str, name: str, batch_id: int) -> None:
        """Provably new rows: a plain Delta append (no join with the table, no file rewritten)."""
        self._txn(spark, "append", name, batch_id)
        (
            rows.select(*[quote(c) for c in split.appended_columns(columns, META_COLUMNS)])
            .write.format("delta").mode("append").save(path)
        )

    def _write_tombstones(
        self, spark: Any, latest: Any, columns: list[ColumnSpec], keys: list[str], tomb_path: str, name: str,
        batch_id: int, exists: bool, bounds: list[tuple[str, str, str]],
    ) -> None:
        from delta.tables import DeltaTable

        if not exists:
            types = {c.name: c.target_ddl for c in columns}
            cols = ", ".join(f"{quote(k)} {types[k]}" for k in keys)
            spark.sql(
                f"CREATE TABLE IF NOT EXISTS delta.`{tomb_path}` ({cols}, "
                "_cdc_seq STRUCT<commit_lsn: BIGINT, lsn: BIGINT, kafka_offset: BIGINT>, _deleted_at TIMESTAMP) "
                "USING DELTA"
            )
            self._known.add(tomb_path)
        cond = _merge_condition(keys, bounds)
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

    def _collect_tombstones(self, spark: Any, path: str, name: str, batch_id: int) -> None:
        """Remove tombstones older than the retention, after the target MERGE has used them: every
        ``min(retention, 1 h)`` per table while the job runs (every batch with retention 0)."""
        from delta.tables import DeltaTable

        tomb_path = self._tomb_path(path)
        retention_s = int(self.cfg.tombstone_retention_hours * 3600)
        now = time.monotonic()
        last = self._last_gc.setdefault(tomb_path, now if retention_s else -1e18)
        if tomb_path not in self._known or now - last < min(retention_s, 3600):
            return
        self._txn(spark, "tombstone-gc", name, batch_id)
        horizon = f"current_timestamp() - INTERVAL {retention_s} SECONDS"
        DeltaTable.forPath(spark, tomb_path).delete(f"_deleted_at < {horizon}")
        self._last_gc[tomb_path] = now

    def _merge(
        self, spark: Any, latest: Any, columns: list[ColumnSpec], keys: list[str], path: str, name: str, batch_id: int,
        bounds: list[tuple[str, str, str]],
    ) -> None:
        """The sequence-guarded MERGE. ``bounds`` (the batch's key range) in the condition lets
        Delta skip the files whose key statistics lie outside it: they cannot match."""
        from delta.tables import DeltaTable

        cond = _merge_condition(keys, bounds)
        update: dict[str, Any] = {}
        insert: dict[str, Any] = {}
        for c in columns:
            q = quote(c.name)
            insert[q] = f"s.{q}"
            if c.toast_test:
                kept = f"array_contains(s._cdc_unchanged, {_sql_string(c.name)})"
                update[q] = f"CASE WHEN {kept} THEN t.{q} ELSE s.{q} END"
            else:
                update[q] = f"s.{q}"
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

        self._write_dead_letters(spark, rows.select(*RAW).withColumn("reason", F.lit(reason)), topic, batch_id)

    def _write_dead_letters(self, spark: Any, out: Any, topic: str, batch_id: int, count: int | None = None) -> None:
        with self._phase("dead_letters"):
            self._append_dead_letters(out, topic, batch_id, count)

    def _append_dead_letters(self, out: Any, topic: str, batch_id: int, count: int | None) -> None:
        from pyspark.sql import functions as F

        out = out.withColumn("batch_id", F.lit(batch_id).cast("bigint"))
        out = out.withColumn("recorded_at", F.current_timestamp())
        count = out.count() if count is None else count
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


def _fill_unchanged(changes: Any, columns: list[ColumnSpec], keys: list[str]) -> Any:
    """An unchanged-TOAST column takes the value of the newest earlier non-delete event of the same
    key in the batch that carries one (the stored row is only consulted when there is none)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_key = Window.partitionBy(*[F.col(quote(k)) for k in keys])
    unchanged = F.col("_cdc_unchanged")
    values, filled = [], []
    for c in columns:
        if not c.toast_test:
            values.append(F.col(quote(c.name)))
            continue
        is_unchanged = F.array_contains(unchanged, c.name)
        order = F.when((F.col("_cdc_op") != "d") & ~is_unchanged, F.col("_cdc_seq"))
        prev = F.max_by(F.struct(F.col(quote(c.name)).alias("v")), order).over(by_key)
        fill = is_unchanged & prev.isNotNull()
        values.append(F.when(fill, prev["v"]).otherwise(F.col(quote(c.name))).alias(c.name))
        filled.append(F.when(fill, F.lit(c.name)))
    others = [F.col(n) for n in changes.columns if n not in {c.name for c in columns} and n != "_cdc_unchanged"]
    rest = F.array_except(unchanged, F.array_compact(F.array(*filled))) if filled else unchanged
    return changes.select(*values, *others, rest.alias("_cdc_unchanged"))


_RANGED_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "STRING", "DATE")
"""Key column types whose batch range becomes a literal predicate (exact literals, total order)."""


def _key_range_aggregates(columns: list[ColumnSpec], keys: list[str]) -> list[Any]:
    """``min``/``max`` of each rangeable key column over the batch's good change events."""
    from pyspark.sql import functions as F

    types = {c.name: c.target_ddl for c in columns}
    good = F.col("_reason").isNull() & (F.col("_cdc_op") != "t")
    out = []
    for i, k in enumerate(keys):
        if types.get(k) in _RANGED_TYPES:
            value = F.when(good, F.col(quote(k)))
            out += [F.min(value).alias(f"_kmin_{i}"), F.max(value).alias(f"_kmax_{i}")]
    return out


def _key_bounds(stats: Any, columns: list[ColumnSpec], keys: list[str]) -> list[tuple[str, str, str]]:
    """``(column, low literal, high literal)`` per rangeable key column: every event that reaches a
    MERGE has its key inside these bounds (dedup and tombstones only remove events)."""
    types = {c.name: c.target_ddl for c in columns}
    found = stats.asDict()
    out = []
    for i, k in enumerate(keys):
        low, high = found.get(f"_kmin_{i}"), found.get(f"_kmax_{i}")
        if low is None or high is None:
            continue
        if types[k] == "STRING":
            out.append((k, _sql_string(low), _sql_string(high)))
        elif types[k] == "DATE":
            out.append((k, f"DATE'{low.isoformat()}'", f"DATE'{high.isoformat()}'"))
        else:
            out.append((k, str(int(low)), str(int(high))))
    return out


def _merge_condition(keys: list[str], bounds: list[tuple[str, str, str]]) -> str:
    """Target ``t`` and source ``s`` rows match on the keys; the key range only prunes files."""
    matches = [f"t.{quote(k)} <=> s.{quote(k)}" for k in keys]
    return " AND ".join(matches + ([_range_sql("t", bounds)] if bounds else []))


def _range_sql(alias: str | None, bounds: list[tuple[str, str, str]]) -> str:
    prefix = f"{alias}." if alias else ""
    return " AND ".join(f"{prefix}{quote(k)} BETWEEN {low} AND {high}" for k, low, high in bounds)


def _seq_literal(seq: tuple[int, int, int]) -> Any:
    from pyspark.sql import functions as F

    return F.struct(
        F.lit(seq[0]).cast("bigint").alias("commit_lsn"), F.lit(seq[1]).cast("bigint").alias("lsn"),
        F.lit(seq[2]).cast("bigint").alias("kafka_offset"),
    )


def min_partitions(spark: Any, cfg: ApplyJobConfig) -> int:
    """Spark tasks per batch read (Kafka's ``minPartitions``): ``cfg.min_partitions``, else the
    session's default parallelism. Change topics often have one partition per table; without this a
    table's whole batch is read, parsed and decoded by one task, on one core."""
    return cfg.min_partitions or int(spark.sparkContext.defaultParallelism)


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
    reader = reader.option("minPartitions", str(min_partitions(spark, cfg)))
    writer = (
        reader.load().writeStream.foreachBatch(BatchApplier(cfg))
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
