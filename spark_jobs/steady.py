"""One pass for a batch that looks like the last one: decoded straight from Kafka, confirmed after.

A job that follows one table sees the same envelope schema batch after batch. The general road
(``spark_jobs.apply_changes``) reads a batch twice: framing it and finding its distinct schemas
(:func:`spark_jobs.frame.discover`, with the framed batch cached), then decoding the cached
records per schema. When the previous batch held exactly one topic and one split JSON schema
(:func:`steady_topic`), the next batch is instead decoded in one pass with that schema, straight
from the Kafka rows (:func:`events`): every record is decoded as if it carried the schema and
marked with whether it does (``_in_group``), and the batch's counts, taken anyway, also count the
records that do not (:func:`confirmed`). If there are none, and a record key names the table's
key columns, the events are exactly what the general road decodes for that one group, and the
batch goes on from there. Otherwise (a new schema, another topic, other key columns) the pass is
thrown away and the batch takes the general road: correct either way, one wasted pass when a
schema changes.

Pure transforms and decisions; the caller times, caches and writes.
"""

from __future__ import annotations

from typing import Any

from spark_jobs import decode, sequence
from spark_jobs.connect_schema import Reconciled, UnsupportedSchemaError, envelope_row_struct, reconcile, row_columns
from spark_jobs.decode import Group, StoredTable
from spark_jobs.frame import KnownHead, SchemaCache, SchemaKey, frame


def steady_topic(found: list[Any]) -> str | None:
    """The topic the next batch is decoded in one pass for: the only topic of a batch whose
    records (``spark_jobs.frame.discover``'s rows) all carried one split JSON schema; else None."""
    if len(found) != 1:
        return None
    row = found[0]
    if not row._wrapped or not row._split or row._avro or row._schema_hash is None:
        return None
    topic: str = row.topic
    return topic


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
    rec = reconcile(state.columns, [columns])
    names = {c.name for c in rec.columns}
    if rec.error or any(k not in names for k in state.keys):
        return None
    return Group(True, head.schema_hash, schema, list(state.keys), columns, None, True), rec


def events(data: Any, topic: str, head: KnownHead, group: Group, rec: Reconciled, keys: list[str],
           fmt: str) -> Any:
    """Every record of ``data`` (the batch's Kafka rows, non-null values) decoded with ``group``, with
    ``_in_group`` and ``key_str`` (:func:`spark_jobs.decode.decode` with ``every``). Lazy."""
    framed = frame(data, split=True, fmt=fmt, heads={topic: head})
    return decode.decode(framed, group, rec.columns, keys, every=True)


def confirmed(stats: Any, keys: list[str]) -> bool:
    """Whether the pass stands (``stats``: :func:`spark_jobs.decode.batch_stats` with ``every``):
    every record carried the schema, and a record key names ``keys``."""
    if stats.others:
        return False
    return stats.key is None or sequence.key_names(stats.key) == keys
