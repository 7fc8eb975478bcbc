"""One pass for a batch that looks like the last one: decoded straight from Kafka, confirmed after.

A job that follows one table sees the same envelope schema batch after batch. The general road
(``spark_jobs.apply_changes``) reads a batch twice: framing it and finding its distinct schemas
(:func:`spark_jobs.frame.discover`, with the framed batch cached), then decoding the cached
records per schema. When the previous batch held exactly one topic and one schema, a split JSON
schema or an Avro writer schema id (:func:`steady_source`), the next batch is instead decoded in
one pass with that schema, straight from the Kafka rows (:func:`events`): every record is decoded
as if it carried the schema and marked with whether it does (``_in_group``), and the batch's
counts, taken anyway, also count the records that do not (:func:`confirmed`). If there are none,
and the batch's first record key names the table's key columns (JSON and text keys: its field
names; Avro keys: its key schema id is the one the key columns were read from), the events are
exactly what the general road decodes for that one group, and the batch goes on from there.
Otherwise (a new schema, another topic, other key columns) the pass is thrown away and the batch
takes the general road: correct either way, one wasted pass when a schema changes.

Pure transforms and decisions; the caller times, caches and writes.
"""

from __future__ import annotations

from typing import Any

from spark_jobs import decode, sequence
from spark_jobs.avro_schemas import AvroSchemas
from spark_jobs.connect_schema import Reconciled, UnsupportedSchemaError, envelope_row_struct, reconcile, row_columns
from spark_jobs.decode import Group, StoredTable
from spark_jobs.frame import KnownHead, SchemaCache, SchemaKey, frame


def steady_source(found: list[Any]) -> Any | None:
    """The :func:`spark_jobs.frame.discover` row the next batch is decoded in one pass for: that of
    a batch whose records were all of one topic and carried one split JSON schema or one Avro
    writer schema id; else None."""
    if len(found) != 1:
        return None
    row = found[0]
    if row._schema_hash is None:
        return None
    if row._avro:
        return row
    return row if row._wrapped and row._split else None


def plan(head: KnownHead, schemas: SchemaCache, state: StoredTable | None) -> tuple[Group, Reconciled] | None:
    """The group of ``head``'s schema and its columns reconciled with the stored table's; None when
    the table does not exist yet, the schema is not held or not usable, or the columns conflict
    (the general road reports those)."""
    if state is None or not state.keys or not state.columns:
        return None
    try:
        schema = schemas.get(SchemaKey(True, head.schema_hash))
        columns = row_columns(envelope_row_struct(schema))
    except (UnsupportedSchemaError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return _with_stored(Group(True, head.schema_hash, schema, list(state.keys), columns, None, True), state)


def plan_avro(source: Any, avro: AvroSchemas, state: StoredTable | None) -> tuple[Group, Reconciled] | None:
    """As :func:`plan`, for the Avro records of ``source`` (a :func:`steady_source` row): the group of
    its writer schema id (``spark_jobs.decode.avro_group``, the schemas held by ``avro``). May raise
    ``RegistryUnavailableError`` like the general road."""
    if state is None or not state.keys or not state.columns:
        return None
    group = decode.avro_group(source, avro)
    if group.error or group.keys != list(state.keys):
        return None
    return _with_stored(group, state)


def _with_stored(group: Group, state: StoredTable) -> tuple[Group, Reconciled] | None:
    """``group`` and its columns reconciled with the stored table's (``state``, which has columns and
    keys); None when they conflict or the key columns are not among them."""
    assert state.columns is not None
    rec = reconcile(state.columns, [group.columns])
    names = {c.name for c in rec.columns}
    if rec.error or any(k not in names for k in state.keys):
        return None
    return group, rec


def events(data: Any, topic: str, head: KnownHead | None, group: Group, rec: Reconciled, keys: list[str],
           fmt: str) -> Any:
    """Every record of ``data`` (the batch's Kafka rows, non-null values) decoded with ``group``, with
    ``_in_group`` and ``key_str`` (:func:`spark_jobs.decode.decode` with ``every``); ``head``: the
    JSON schema's (None for an Avro group). Lazy."""
    framed = frame(data, split=True, fmt=fmt, heads={topic: head} if head is not None else None)
    return decode.decode(framed, group, rec.columns, keys, every=True)


def confirmed(stats: Any, keys: list[str], source: Any) -> bool:
    """Whether the pass stands (``stats``: :func:`spark_jobs.decode.batch_stats` with ``every``;
    ``source``: the :func:`steady_source` row the pass was planned from): every record carried the
    schema, and the batch's first record key names ``keys`` (an Avro key: has the key schema id
    of ``source``'s, which named them)."""
    if stats.others:
        return False
    if source._avro and source.key_id is not None:
        return stats.key_id is not None and int(stats.key_id) == int(source.key_id)
    return stats.key is None or sequence.key_names(stats.key) == keys
