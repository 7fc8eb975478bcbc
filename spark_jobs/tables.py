"""The Delta tables the job writes: where each lives, what it says about itself, and its DDL.

:class:`DeltaTables` reads a table's state (columns as the job declared them, key columns, truncate
horizon, Delta types, properties) once and keeps it while this job, the tables' only writer, does
not change it; :meth:`DeltaTables.ensure` creates a table or evolves it (new columns, widened
types, the declared schema and keys as table properties, Parquet's dictionary encoding off for the
columns unique per row (``spark_jobs.parquet_encoding``), the catalog name). Call on the driver,
inside a batch; a restart re-reads every state from the tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from spark_jobs import parquet_encoding, sequence
from spark_jobs.connect_schema import ColumnSpec, Reconciled, column_spec, connect_node_of_spark, quote
from spark_jobs.job_config import ApplyJobConfig, JobConfigError
from spark_jobs.sqltext import sql_string

META_COLUMNS = ("_cdc_seq", "_cdc_op", "_cdc_ts_ms")
META_DDL = "_cdc_seq STRUCT<commit_lsn: BIGINT, lsn: BIGINT, kafka_offset: BIGINT>, _cdc_op STRING, _cdc_ts_ms BIGINT"
PROP_SCHEMA = "signaller.connect_schema"
PROP_KEYS = "signaller.keys"
PROP_TRUNCATED = "signaller.truncated_before"
DV_PROP = "delta.enableDeletionVectors"
STATS_PROP = "delta.dataSkippingStatsColumns"


def stats_columns(keys: list[str]) -> str:
    """``delta.dataSkippingStatsColumns`` for ``data_skipping_stats: keys``: the key columns and
    ``_cdc_seq`` (what the job's own file skipping reads), quoted as Delta parses the list."""
    return ",".join(quote(c) for c in [*keys, "_cdc_seq"])


def _property_pairs(properties: dict[str, str]) -> list[str]:
    """``'key' = 'value'`` per property, as ``TBLPROPERTIES (...)`` lists them."""
    return [f"{sql_string(k)} = {sql_string(v)}" for k, v in properties.items()]


def table_path(cfg: ApplyJobConfig, topic: str) -> tuple[str, str]:
    """``(<schema>.<table>, Delta path)`` for a topic ``<prefix>.<schema>.<table>``."""
    parts = topic.split(".")
    if cfg.topic_prefix and topic.startswith(cfg.topic_prefix + "."):
        parts = topic[len(cfg.topic_prefix) + 1 :].split(".")
    name = ".".join(parts[-2:])
    return name, f"{cfg.target_root.rstrip('/')}/{'/'.join(parts[-2:])}"


@dataclass
class TableState:
    """What the stored Delta table says about itself."""

    columns: list[ColumnSpec] | None
    keys: list[str]
    truncated: tuple[int, int, int] | None
    delta_types: dict[str, str]
    properties: dict[str, str]


class DeltaTables:
    """The target tables' states and DDL (see the module docstring)."""

    def __init__(self, cfg: ApplyJobConfig) -> None:
        self.cfg = cfg
        self._registered: set[str] = set()
        self._states: dict[str, TableState] = {}  # this job is the tables' only writer

    def forget(self, path: str) -> None:
        """Read the table's state again next time (after DDL or a property change)."""
        self._states.pop(path, None)

    def state(self, spark: Any, path: str) -> TableState | None:
        """The stored table's state, or None when there is no Delta table at ``path``."""
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

    def ensure(
        self, spark: Any, path: str, name: str, state: TableState | None, rec: Reconciled, keys: list[str]
    ) -> None:
        """Create the table for ``rec``'s columns and ``keys``, or evolve it to them."""
        target = f"delta.`{path}`"
        schema_json = json.dumps([c.node for c in rec.columns], separators=(",", ":"))
        changed = state is None or bool(rec.added or rec.widened) or (
            state.properties.get(PROP_SCHEMA) != schema_json or not state.keys
        )
        if changed:
            self.forget(path)  # re-read after this batch's DDL
        if state is None:
            layout = self.cfg.layout_clause(name)
            chosen = self.cfg.partition_by.get(name) or self.cfg.cluster_by.get(name) or []
            unknown = [c for c in chosen if c not in {col.name for col in rec.columns}]
            if unknown:
                msg = f"partition_by/cluster_by of {name}: column(s) {unknown} are not columns of the table"
                raise JobConfigError(msg)
            cols = ", ".join(f"{quote(c.name)} {c.target_ddl}" for c in rec.columns)
            dv = f", {DV_PROP} = true" if self.cfg.deletion_vectors else ""
            if self.cfg.data_skipping_stats == "keys":
                dv += f", {sql_string(STATS_PROP)} = {sql_string(stats_columns(keys))}"
            dv += "".join(f", {pair}" for pair in _property_pairs(parquet_encoding.dictionary_off(keys)))
            spark.sql(
                f"CREATE TABLE IF NOT EXISTS {target} ({cols}, {META_DDL}) USING DELTA {layout} "
                f"TBLPROPERTIES (delta.enableChangeDataFeed = true{dv}, {sql_string(PROP_KEYS)} = "
                f"{sql_string(','.join(keys))}, {sql_string(PROP_SCHEMA)} = {sql_string(schema_json)})"
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
                    f"ALTER TABLE {target} SET TBLPROPERTIES ({sql_string(PROP_SCHEMA)} = {sql_string(schema_json)}, "
                    f"{sql_string(PROP_KEYS)} = {sql_string(','.join(keys))}{widening})"
                )
            for column, new_type in widen:
                spark.sql(f"ALTER TABLE {target} ALTER COLUMN {quote(column)} TYPE {new_type}")
            if self.cfg.deletion_vectors and state.properties.get(DV_PROP) != "true":
                spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ({DV_PROP} = true)")
                self.forget(path)
            wanted = stats_columns(keys)
            if self.cfg.data_skipping_stats == "keys" and state.properties.get(STATS_PROP) != wanted:
                spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ({sql_string(STATS_PROP)} = {sql_string(wanted)})")
                self.forget(path)
            plain = parquet_encoding.dictionary_off(keys, state.properties)
            if plain:  # a table created before the job set them: once
                spark.sql(f"ALTER TABLE {target} SET TBLPROPERTIES ({', '.join(_property_pairs(plain))})")
                self.forget(path)
        catalog_name = self.cfg.catalog_name(name)
        if catalog_name and catalog_name not in self._registered:
            database = catalog_name.rsplit(".", 1)[0]
            spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
            spark.sql(f"CREATE TABLE IF NOT EXISTS {catalog_name} USING DELTA LOCATION {sql_string(path)}")
            self._registered.add(catalog_name)
