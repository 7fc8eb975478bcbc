"""Configuration of the apply job, declared as data and read from a JSON or YAML file.

Property names follow Spark's Kafka source where one exists (``startingOffsets``,
``maxOffsetsPerTrigger``, ``minPartitions``, ``failOnDataLoss``, ``subscribe``, ``subscribePattern``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from spark_jobs.frame import FORMATS
from spark_jobs.kafka_source import MANAGED_BY_SPARK


class JobConfigError(ValueError):
    """A job property is unknown or invalid; the message names it, its value and what is accepted."""


@dataclass(frozen=True)
class ApplyJobConfig:
    """Everything the apply job needs.

    ``target_root``: one Delta table per source table at ``<target_root>/<schema>/<table>``
    (``<schema>.<table>`` from the topic name minus the prefix). ``checkpoint_location``: Spark's
    checkpoint; a new checkpoint needs a new ``app_id`` (the Delta idempotent-write id) or every
    write would be skipped as already done, so ``app_id`` defaults to one derived from it.

    ``target_catalog_prefix`` (e.g. ``"cdc."``) also registers each table in the session catalog
    as ``<prefix><schema>_<table>`` (an external Delta table at the same path).
    ``partition_by`` / ``cluster_by`` map ``"<schema>.<table>"`` to the column list a table is
    created with (``PARTITIONED BY`` / liquid ``CLUSTER BY``; ignored for existing tables).
    ``min_partitions``: Spark tasks a batch is read and decoded in (Kafka's ``minPartitions``: the
    offset range of a topic partition is split); default: the session's default parallelism, so a
    one-partition topic does not decode on one core.
    ``tombstone_retention_hours``: how long a delete is remembered against late, older events
    (0 = not at all). ``master: null`` leaves the master to ``spark-submit``.
    ``deletion_vectors``: create the tables with Delta deletion vectors (and turn them on for
    existing ones): a MERGE marks replaced rows instead of rewriting their files
    (``spark_jobs.dv_merge``). Off by default: delta-rs (``deltalake``, up to at least 1.6.6) reads
    such tables only through its DataFusion reader (``QueryBuilder``), its PyArrow reader
    (``to_pyarrow_table``, ``to_pandas``) refuses them, and replaced rows stay in the files until an
    ``OPTIMIZE``.
    ``compact_deleted_share`` (with ``deletion_vectors``): the job runs ``OPTIMIZE`` on a table
    right after a MERGE that leaves at least this share of its stored rows marked deleted
    (``spark_jobs.compaction``; default 0.3, 0 = never: compact the tables yourself).
    ``compact_max_files``: the job runs ``OPTIMIZE`` on a table after a MERGE leaves it with more
    than this many data files (default 40, 0 = never): past 50 its MERGEs would be Delta's, which
    replay the table's log every batch (``spark_jobs.compaction``).
    ``data_skipping_stats``: which columns Delta collects file statistics (min/max/null counts) on
    for the tables the job creates or writes: ``all`` (default: Delta's own, the first 32 columns;
    the job leaves ``delta.dataSkippingStatsColumns`` alone) or ``keys`` (the job sets that property
    to the key columns and ``_cdc_seq``: cheaper writes, since every rewritten row feeds the
    statistics, but readers' queries then skip files on those columns only; existing files keep
    their statistics until rewritten, and going back to ``all`` means unsetting the property).
    ``format``: how record values are read: ``auto`` (default: a value that starts with the magic
    byte 0 is Avro in the Confluent wire format, any other JSON), ``json`` or ``avro``.
    ``schema_registry_url`` (``schema.registry.url``; Apicurio: ``.../apis/ccompat/v7``) is where Avro
    writer schemas are fetched by id; ``schema_registry_user_info`` (``basic.auth.user.info``,
    ``user:password``) its basic authentication (else credentials in the URL, if any).
    """

    bootstrap_servers: str
    target_root: str
    checkpoint_location: str
    subscribe: str | None = None
    subscribe_pattern: str | None = None
    topic_prefix: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    trigger_interval: str = "2 seconds"
    available_now: bool = False
    app_id: str | None = None
    tombstone_retention_hours: float = 168.0
    dead_letter_path: str | None = None
    master: str | None = "local[2]"
    spark_conf: dict[str, str] = field(default_factory=dict)
    target_catalog_prefix: str | None = None
    partition_by: dict[str, list[str]] = field(default_factory=dict)
    cluster_by: dict[str, list[str]] = field(default_factory=dict)
    deletion_vectors: bool = False
    data_skipping_stats: str = "all"
    compact_deleted_share: float = 0.3
    compact_max_files: int = 40
    format: str = "auto"
    schema_registry_url: str | None = None
    schema_registry_user_info: str | None = None
    kafka_options: dict[str, str] = field(default_factory=dict)

    def layout_clause(self, table: str) -> str:
        """``PARTITIONED BY (...)`` / ``CLUSTER BY (...)`` for ``"<schema>.<table>"``, or ``""``."""
        from spark_jobs.connect_schema import quote

        if table in self.partition_by:
            return f"PARTITIONED BY ({', '.join(quote(c) for c in self.partition_by[table])})"
        if table in self.cluster_by:
            return f"CLUSTER BY ({', '.join(quote(c) for c in self.cluster_by[table])})"
        return ""

    def catalog_name(self, table: str) -> str | None:
        """The catalog name of ``"<schema>.<table>"`` (``cdc.public_orders``), or None."""
        if not self.target_catalog_prefix:
            return None
        return self.target_catalog_prefix + table.replace(".", "_")

    @property
    def effective_app_id(self) -> str:
        return self.app_id or f"signaller-apply:{self.checkpoint_location}"

    @property
    def effective_dead_letter_path(self) -> str:
        return self.dead_letter_path or f"{self.target_root.rstrip('/')}/_dead_letter"


ALIASES = {
    "kafka.bootstrap.servers": "bootstrap_servers",
    "subscribePattern": "subscribe_pattern",
    "startingOffsets": "starting_offsets",
    "maxOffsetsPerTrigger": "max_offsets_per_trigger",
    "minPartitions": "min_partitions",
    "failOnDataLoss": "fail_on_data_loss",
    "checkpointLocation": "checkpoint_location",
    "partitionBy": "partition_by",
    "clusterBy": "cluster_by",
    "deletionVectors": "deletion_vectors",
    "compactDeletedShare": "compact_deleted_share",
    "compactMaxFiles": "compact_max_files",
    "dataSkippingStats": "data_skipping_stats",
    "basic.auth.user.info": "schema_registry_user_info",
    "schema.registry.basic.auth.user.info": "schema_registry_user_info",
}
DATA_SKIPPING_STATS = ("all", "keys")
_CATALOG_PREFIX = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*\.){1,2}$")


def load_job_config(path: str | Path) -> ApplyJobConfig:
    """Read ``path`` (JSON or YAML); unknown keys and wrong types raise ``JobConfigError``."""
    text = Path(path).read_text()
    try:
        raw = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        msg = f"{path}: not valid JSON/YAML: {exc}"
        raise JobConfigError(msg) from None
    if not isinstance(raw, dict):
        msg = f"{path}: expected a mapping of job properties, got {type(raw).__name__}"
        raise JobConfigError(msg)
    return config_from_mapping(raw, origin=str(path))


def _kafka_option(key: str, value: Any, origin: str) -> str:
    """A ``kafka.*`` property's value as Spark's Kafka source takes it (a string)."""
    if key in MANAGED_BY_SPARK:
        msg = (f"{origin}: {key!r} is set by Spark's Kafka source itself and cannot be configured "
               "(startingOffsets says where a new query starts)")
        raise JobConfigError(msg)
    if isinstance(value, bool):
        return str(value).lower()
    if not isinstance(value, (str, int, float)) or value == "":
        msg = f"{origin}: {key!r} must be a string or a number (a Kafka consumer setting), got {value!r}"
        raise JobConfigError(msg)
    return str(value)


def config_from_mapping(raw: dict[str, Any], origin: str = "<mapping>") -> ApplyJobConfig:
    known = {f.name: f for f in fields(ApplyJobConfig)}
    values: dict[str, Any] = {}
    prefixed: dict[str, Any] = {}  # kafka.<setting>: checked below, with an explicit kafka_options mapping
    for key, value in raw.items():
        if key.startswith("kafka.") and key not in ALIASES:
            prefixed[key] = value
            continue
        name = ALIASES.get(key, key.replace(".", "_").replace("-", "_"))
        if name not in known:
            msg = f"{origin}: unknown job property {key!r}; accepted: {sorted(known)}"
            raise JobConfigError(msg)
        values[name] = value
    explicit = values.get("kafka_options") or {}
    if not isinstance(explicit, dict) or not all(str(k).startswith("kafka.") for k in explicit):
        msg = f"{origin}: 'kafka_options' must map 'kafka.<setting>' names to values, got {explicit!r}"
        raise JobConfigError(msg)
    values["kafka_options"] = {str(k): _kafka_option(str(k), v, origin) for k, v in {**explicit, **prefixed}.items()}
    for required in ("bootstrap_servers", "target_root", "checkpoint_location"):
        if not values.get(required):
            msg = f"{origin}: missing required job property {required!r}"
            raise JobConfigError(msg)
    if bool(values.get("subscribe")) == bool(values.get("subscribe_pattern")):
        msg = f"{origin}: set exactly one of 'subscribe' (comma-separated topics) and 'subscribePattern' (a regex)"
        raise JobConfigError(msg)
    for layout in ("partition_by", "cluster_by"):
        mapping = values.get(layout) or {}
        if not isinstance(mapping, dict) or not all(
            isinstance(cols, list) and cols and all(isinstance(c, str) and c for c in cols) for cols in mapping.values()
        ):
            msg = f"{origin}: {layout!r} must map '<schema>.<table>' to a non-empty list of columns, got {mapping!r}"
            raise JobConfigError(msg)
        values[layout] = {str(k): list(v) for k, v in mapping.items()}
    both = set(values.get("partition_by", {})) & set(values.get("cluster_by", {}))
    if both:
        msg = f"{origin}: table(s) {sorted(both)} have both partition_by and cluster_by; Delta allows one"
        raise JobConfigError(msg)
    prefix = values.get("target_catalog_prefix")
    if prefix is not None and not _CATALOG_PREFIX.match(str(prefix)):
        msg = f"{origin}: target_catalog_prefix {prefix!r} must be '<database>.' or '<catalog>.<database>.'"
        raise JobConfigError(msg)
    for name in ("max_offsets_per_trigger", "min_partitions"):
        if values.get(name) is not None and (not isinstance(values[name], int) or values[name] <= 0):
            msg = f"{origin}: {name!r} must be a positive integer, got {values[name]!r}"
            raise JobConfigError(msg)
    if not isinstance(values.get("deletion_vectors", False), bool):
        msg = f"{origin}: 'deletion_vectors' must be true or false, got {values['deletion_vectors']!r}"
        raise JobConfigError(msg)
    if values.get("data_skipping_stats", "all") not in DATA_SKIPPING_STATS:
        msg = (f"{origin}: 'data_skipping_stats' must be one of {list(DATA_SKIPPING_STATS)}, "
               f"got {values['data_skipping_stats']!r}")
        raise JobConfigError(msg)
    share = values.get("compact_deleted_share", 0.3)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1:
        msg = f"{origin}: 'compact_deleted_share' must be a number from 0 (never) to below 1, got {share!r}"
        raise JobConfigError(msg)
    limit = values.get("compact_max_files", 40)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        msg = f"{origin}: 'compact_max_files' must be a whole number of files, 0 (never) or more, got {limit!r}"
        raise JobConfigError(msg)
    if values.get("format", "auto") not in FORMATS:
        msg = f"{origin}: 'format' must be one of {list(FORMATS)}, got {values['format']!r}"
        raise JobConfigError(msg)
    if float(values.get("tombstone_retention_hours", 0)) < 0:
        msg = f"{origin}: 'tombstone_retention_hours' must be >= 0, got {values['tombstone_retention_hours']!r}"
        raise JobConfigError(msg)
    return ApplyJobConfig(**values)
