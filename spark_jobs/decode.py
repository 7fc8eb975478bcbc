"""Decoding a table's framed records into change events: pure transforms, no Delta I/O.

Per batch and table: :func:`groups` turns each distinct envelope schema into a :class:`Group`
(its key and row columns, or the error that sends its records to the dead-letter table);
:func:`batch_keys` checks that the batch agrees with the table about the key; :func:`decode`
builds the events of one group in the table's reconciled columns (``_cdc_seq``, ``_cdc_op``,
``_cdc_ts_ms``, the unchanged-TOAST column names, and ``_reason``: why a record cannot be
applied); :func:`batch_stats` counts the batch in one job (events, dead letters, deletes, reads,
the newest truncate, the key range); :func:`fill_unchanged` carries unchanged-TOAST values
forward within the batch.

Avro records (see :mod:`spark_jobs.avro_schemas`) form one group per writer schema id: their
columns come from the registered schema read as Connect nodes, the bodies are decoded by
``from_avro`` in one pass per id, and from the row image on everything is the JSON path's code.
A record ``from_avro`` cannot decode (truncated, another schema) is a dead letter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from spark_jobs import sequence
from spark_jobs.avro_schemas import HEADER_BYTES, AvroSchemas, key_fields
from spark_jobs.coarse_bounds import coarsen_values
from spark_jobs.connect_schema import (
    ColumnSpec,
    UnsupportedSchemaError,
    column_spec,
    connect_node_of_spark,
    envelope_row_struct,
    quote,
    row_columns,
)
from spark_jobs.frame import POSITION, SchemaCache, SchemaKey
from spark_jobs.json_parse import parse_json
from spark_jobs.sqltext import sql_string
from spark_jobs.undecodable import FAILED, Check, may_fail, reason_inputs, suspect, with_reasons

PAYLOAD_DDL = (
    "STRUCT<before: STRING, after: STRING, source: STRUCT<lsn: BIGINT, sequence: STRING, file: STRING, pos: BIGINT, "
    "row: BIGINT>, op: STRING, ts_ms: BIGINT>"
)
"""The envelope members decoding reads; ``source`` holds PostgreSQL's and the binlog connectors' positions."""
OPS = ("c", "u", "d", "r", "t")
RANGED_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "STRING", "DATE")
"""Key column types whose batch range becomes a literal predicate (exact literals, total order)."""


class BatchError(Exception):
    """The table's records of this batch cannot be applied; the message is the dead-letter reason."""


class StoredTable(Protocol):
    """What decoding needs to know of the stored table (``spark_jobs.tables.TableState`` has it)."""

    @property
    def columns(self) -> list[ColumnSpec] | None: ...

    @property
    def keys(self) -> list[str]: ...


@dataclass
class Group:
    """The records of one topic in one batch that share an envelope schema (or have none)."""

    wrapped: bool
    schema_hash: int | None
    schema: dict[str, Any] | None
    keys: list[str]
    columns: list[ColumnSpec]
    error: str | None = None  # the schema cannot be used: the group's records are dead-lettered
    split: bool = False  # framed by string split (see spark_jobs.frame)
    avro: bool = False  # Confluent wire format: schema_hash is the writer schema's id
    reader: str | None = None  # Avro: the schema text from_avro decodes with


def groups(spark: Any, framed: Any, state: StoredTable | None, found: list[Any],
           schemas: SchemaCache, avro: AvroSchemas | None = None) -> list[Group]:
    """One :class:`Group` per distinct envelope schema of the topic's records (oldest first).

    Avro schemas are looked up in ``avro`` (may raise ``RegistryUnavailableError``: the batch fails)."""
    groups = []
    for row in found:
        if row._avro:
            groups.append(avro_group(row, avro or AvroSchemas(None)))
            continue
        keys = sequence.key_names(row.key)
        if row._schema_hash is None:
            columns = schemaless_columns(spark, framed, row._wrapped, row._split, state)
            groups.append(Group(row._wrapped, None, None, keys, columns, None, row._split))
            continue
        try:
            schema = schemas.get(SchemaKey(row._split, row._schema_hash))
            columns = row_columns(envelope_row_struct(schema))
        except (UnsupportedSchemaError, ValueError, KeyError, TypeError, AttributeError) as exc:
            error = f"cannot read the record schema: {exc}"
            groups.append(Group(row._wrapped, row._schema_hash, None, [], [], error, row._split))
            continue
        groups.append(Group(row._wrapped, row._schema_hash, schema, keys, columns, None, row._split))
    return groups


def avro_group(row: Any, avro: AvroSchemas) -> Group:
    """The :class:`Group` of a :func:`spark_jobs.frame.discover` row of Avro records: its columns from
    the writer schema, its key columns from the key's schema (or the key's JSON text)."""
    schema_id = row._schema_hash
    if schema_id is None:
        error = "not in the Confluent wire format (magic byte 0, 4-byte schema id, Avro body)"
        return Group(row._wrapped, None, None, [], [], error, row._split, avro=True)
    try:
        schema = avro.get(schema_id)
        columns = row_columns(envelope_row_struct(schema.connect))
        keys = key_fields(avro.get(row.key_id)) if row.key_id is not None else sequence.key_names(row.key)
    except (UnsupportedSchemaError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return Group(row._wrapped, schema_id, None, [], [], f"cannot read the record schema: {exc}", row._split,
                     avro=True)
    return Group(row._wrapped, schema_id, schema.connect, keys, columns, None, row._split, avro=True,
                 reader=schema.reader)


def group_match(group: Group) -> Any:
    """True for a framed record of ``group``."""
    from pyspark.sql import functions as F

    match = (F.col("_schema_hash") == group.schema_hash) if group.schema_hash is not None else (
        F.col("_schema_hash").isNull()
    )
    return (F.col("_wrapped") == group.wrapped) & (F.col("_split") == group.split) & (
        F.col("_avro") == group.avro) & match


def group_rows(framed: Any, group: Group) -> Any:
    """The framed records of ``group``."""
    return framed.where(group_match(group))


def schemaless_columns(spark: Any, framed: Any, wrapped: bool, split: bool, state: StoredTable | None,
                       ) -> list[ColumnSpec]:
    """Columns for records without an embedded schema: the stored table's, plus new columns
    whose types Spark infers from this batch's ``after``/``before`` JSON."""
    from pyspark.sql import functions as F

    stored = list(state.columns) if state and state.columns else []
    known = {c.name for c in stored}
    payload = parse_json("_payload", PAYLOAD_DDL)
    texts = (
        framed.where((F.col("_wrapped") == wrapped) & (F.col("_split") == split) & F.col("_schema_hash").isNull())
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


def batch_keys(groups: list[Group], state: StoredTable | None) -> list[str]:
    """The key columns of the batch's records; ``BatchError`` when they disagree with each other or
    with the stored table, or there are none."""
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


def decode(framed: Any, group: Group, columns: list[ColumnSpec], keys: list[str], every: bool = False) -> Any:
    """The group's records as events: the row's columns in the stored types, ``_cdc_*``, the
    names of unchanged-TOAST columns, and ``_reason`` (non-null: dead-letter).

    ``every``: every framed record, decoded as if of ``group``, with more columns: ``_in_group``
    (whether it is), ``key_str`` and, for an Avro group, ``_key_id``; :func:`batch_stats` with
    ``every`` counts the others (``spark_jobs.steady``). A record of another Avro schema decoded
    with ``group``'s gives nulls or nonsense, never a failed job (``from_avro`` is PERMISSIVE); it
    is counted, and the pass dropped.

    The payload is parsed once, with the row images in the group's raw types. A value is
    undecodable when its stored form is null although the record carries one: only then (the
    stored value null, the column one whose decoding can fail) is the row image parsed again as
    text, to tell a JSON null from a value that did not convert and to quote it in the reason."""
    from pyspark.sql import functions as F

    rows = framed.select("*", group_match(group).alias("_in_group")) if every else group_rows(framed, group)
    if group.avro:
        payload = F.col("_envelope")
        rows = rows.select("*", _from_avro(group).alias("_envelope"))
    else:
        row_ddl = "STRUCT<" + ", ".join(f"{quote(c.name)}: {c.raw_ddl}" for c in group.columns) + ">"
        typed_ddl = PAYLOAD_DDL.replace("before: STRING, after: STRING", f"before: {row_ddl}, after: {row_ddl}")
        payload = parse_json("_payload", typed_ddl, failed_field=FAILED)
    flag = ["_in_group", *(["_key_id"] if group.avro else [])] if every else []
    op = payload["op"]
    fields = sequence.source_fields(group.schema) if group.avro else sequence.SOURCE_FIELDS  # Avro: the writer's
    base = rows.select(
        *POSITION, "key_str", "_payload", *flag,
        op.alias("_cdc_op"), payload["ts_ms"].alias("_cdc_ts_ms"),
        sequence.source_seq_column(payload["source"], F.col("offset"), fields).alias("_cdc_seq"),
        sequence.source_member(payload["source"], "file", fields).isNotNull().alias("_binlog"),
        F.when(op == "d", payload["before"]).otherwise(payload["after"]).alias("_row"),
        (F.lit(False) if group.avro else payload[FAILED].isNotNull()).alias(FAILED),
    )
    mine = {c.name: c for c in group.columns}
    values, unchanged, checks = [], [], []
    for target in columns:
        spec = mine.get(target.name)
        if spec is None:
            values.append(F.lit(None).cast(target.target_ddl).alias(target.name))
            continue
        ref = f"_row.{quote(spec.name)}"
        if group.avro and _small_ints(spec.node):  # Avro has no int8/int16: ints, narrowed as JSON parses them
            ref = f"try_cast({ref} AS {spec.raw_ddl})"
        raw = F.col("_row")[spec.name]
        decoded = F.expr(spec.target_expr.replace("{col}", ref))
        is_placeholder = F.coalesce(F.expr(spec.toast_test.replace("{col}", ref)), F.lit(False)) if (
            spec.toast_test) else F.lit(False)
        value = F.when(is_placeholder, F.lit(None)).otherwise(decoded).cast(target.target_ddl)
        values.append(value.alias(target.name))
        if spec.toast_test:
            unchanged.append(F.when(is_placeholder, F.lit(spec.name)))
        if may_fail(spec, target):
            checks.append(Check(spec, target, suspect(spec, raw, value, is_placeholder, F.col(FAILED))))
    row_op = F.col("_cdc_op") != "t"
    undecodable = f"undecodable Avro record (writer schema id {group.schema_hash})"
    before_values = F.coalesce(
        *([F.when(F.col("_cdc_op").isNull(), F.lit(undecodable))] if group.avro else []),
        F.when(F.col("_cdc_op").isNull(), F.lit("no op (not a Debezium change event)")),
        F.when(~F.col("_cdc_op").isin(*OPS), F.concat(F.lit("unknown op "), F.col("_cdc_op"))),
        F.when(row_op & F.col("_row").isNull(), F.lit("no row image (before/after) for the op")),
        F.when(row_op & F.col("_cdc_seq").isNull() & F.col("_binlog"), F.lit(
            "no binlog position (source.file without a number <basename>.<digits>, or no source.pos)")),
        F.when(row_op & F.col("_cdc_seq").isNull(), F.lit("no log position (source.sequence and source.lsn)")),
        F.when(row_op & F.col("key_str").isNull(), F.lit("no key")),
    )
    unchanged_col = F.array_compact(F.array(*unchanged)) if unchanged else F.array().cast("array<string>")
    kept = [*POSITION, *[t.name for t in columns], "_cdc_op", "_cdc_ts_ms", "_cdc_seq", "_cdc_unchanged", "_pre",
            *([*flag, "key_str"] if every else [])]
    staged = base.select(
        *POSITION, *values, "_cdc_op", "_cdc_ts_ms", "_cdc_seq", unchanged_col.alias("_cdc_unchanged"),
        before_values.alias("_pre"), *reason_inputs(checks, group.avro),
        *([*flag, "key_str"] if every else []),
    )
    staged = with_reasons(staged, checks, group.avro, kept)
    key_null = F.lit(False)
    for k in keys:
        key_null = key_null | F.col(quote(k)).isNull()
    reason = F.coalesce(
        F.col("_pre"), F.when((F.col("_cdc_op") != "t") & key_null, F.lit(f"null key column (key: {keys})")),
        F.col("_bad"),
    )
    return staged.withColumn("_reason", reason).drop("_pre", "_bad")


def _from_avro(group: Group) -> Any:
    """The Avro body (after the 5-byte header) of the group's records decoded with its writer
    schema; an undecodable body gives a null ``op`` (PERMISSIVE), never a failed job."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    assert group.reader is not None
    return from_avro(F.expr(f"substring(_body, {HEADER_BYTES + 1})"), group.reader, {"mode": "PERMISSIVE"})


def _small_ints(node: dict[str, Any]) -> bool:
    """Whether ``node`` holds an ``int8``/``int16`` (read by Avro as ``int``)."""
    if node.get("type") in ("int8", "int16"):
        return True
    inner = [node.get("items"), node.get("values"), *(node.get("fields") or [])]
    return any(isinstance(n, dict) and _small_ints(n) for n in inner)


def fill_unchanged(changes: Any, columns: list[ColumnSpec], keys: list[str]) -> Any:
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


def key_range_aggregates(columns: list[ColumnSpec], keys: list[str]) -> list[Any]:
    """``min``/``max`` of each rangeable key column over the batch's good change events."""
    from pyspark.sql import functions as F

    types = {c.name: c.target_ddl for c in columns}
    good = F.col("_reason").isNull() & (F.col("_cdc_op") != "t")
    out = []
    for i, k in enumerate(keys):
        if types.get(k) in RANGED_TYPES:
            value = F.when(good, F.col(quote(k)))
            out += [F.min(value).alias(f"_kmin_{i}"), F.max(value).alias(f"_kmax_{i}")]
    return out


def key_bounds(stats: Any, columns: list[ColumnSpec], keys: list[str]) -> list[tuple[str, str, str]]:
    """``(column, low literal, high literal)`` per rangeable key column: every event that reaches a
    MERGE has its key inside these bounds (dedup and tombstones only remove events). Integer and
    date bounds are rounded outward (:func:`spark_jobs.coarse_bounds.coarsen`): the literals then
    stay the same over many batches, and so does the code Spark generates and compiles for them."""
    types = {c.name: c.target_ddl for c in columns}
    found = stats.asDict()
    out = []
    for i, k in enumerate(keys):
        low, high = found.get(f"_kmin_{i}"), found.get(f"_kmax_{i}")
        if low is None or high is None:
            continue
        if types[k] == "STRING":  # a string literal is not written into generated code
            out.append((k, sql_string(low), sql_string(high)))
        else:
            first, last = coarsen_values(low, high, types[k])
            if types[k] == "DATE":
                out.append((k, f"DATE'{first.isoformat()}'", f"DATE'{last.isoformat()}'"))
            else:
                out.append((k, str(first), str(last)))
    return out


def batch_stats(events: Any, columns: list[ColumnSpec], keys: list[str], every: bool = False) -> Any:
    """One row counting the decoded ``events`` (one Spark job): ``n``, ``bad`` (with a
    ``_reason``), ``deletes``, ``trunc`` (the newest truncate's ``_cdc_seq``), ``toasted`` (with
    unchanged-TOAST columns), ``reads`` and the key range (:func:`key_range_aggregates`); with
    ``every`` (events of :func:`decode` with ``every``) also ``others`` (records not of the group),
    ``key`` (a record key's text) and, for Avro events, ``key_id`` (a key's schema id), as
    :func:`spark_jobs.frame.discover` takes them."""
    from pyspark.sql import functions as F

    good = F.col("_reason").isNull()
    extra = [F.count(F.when(~F.col("_in_group"), 1)).alias("others"),
             F.first("key_str", ignorenulls=True).alias("key"),
             *([F.first("_key_id", ignorenulls=True).alias("key_id")] if "_key_id" in events.columns else [])
             ] if every else []
    return events.agg(
        F.count(F.lit(1)).alias("n"),
        F.count(F.col("_reason")).alias("bad"),
        F.count(F.when((F.col("_cdc_op") == "d") & good, 1)).alias("deletes"),
        F.max(F.when((F.col("_cdc_op") == "t") & good, F.col("_cdc_seq"))).alias("trunc"),
        F.count(F.when(F.size("_cdc_unchanged") > 0, 1)).alias("toasted"),
        F.count(F.when((F.col("_cdc_op") == "r") & good, 1)).alias("reads"),
        *key_range_aggregates(columns, keys), *extra,
    ).first()


def newest_per_key(changes: Any, keys: list[str]) -> Any:
    """The newest event (highest ``_cdc_seq``) of each key of ``changes``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    window = Window.partitionBy(*[F.col(quote(k)) for k in keys]).orderBy(F.col("_cdc_seq").desc())
    return changes.withColumn("_rn", F.row_number().over(window)).where("_rn = 1").drop("_rn")
