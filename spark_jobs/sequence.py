"""The per-key sequence the apply job stores as ``_cdc_seq`` and orders events by.

``_cdc_seq = (commit_lsn, lsn, kafka_offset)``, compared left to right:

* ``commit_lsn``, ``lsn`` come from Debezium's ``source.sequence`` = ``["<lastCommitLsn>",
  "<lsn>"]``, which increases along the change stream (the stream is in commit order; inside a
  transaction the LSN grows). ``source.lsn`` alone is not enough: a transaction that changed a
  row earlier in the WAL can commit later than another one. When ``sequence`` is missing, the
  pair is ``(0, source.lsn)``.
* Incremental snapshot reads (``op: r``) carry the stream position of the window that emitted
  them, so a read sorts after every change the sidecar emitted before it and before every change
  after it: exactly its place in the topic.
* ``kafka_offset`` breaks ties between events at the same position (a replayed duplicate, reads
  of one window); per key it grows because a key always maps to the same partition (records are
  keyed by primary key and partitioned by murmur2, so this holds as long as the topic's partition
  count does not change). Offsets of different partitions are never compared for one key.

So for one key, ``_cdc_seq`` grows in the order the source applied the changes, and an older
version, whether late, duplicated or replayed, never has a larger sequence than a newer one. A
duplicate of an event (re-sent after a sidecar restart) has the same ``(commit_lsn, lsn)`` and a
larger offset: it wins the tie, which is harmless because it carries the same row.

Records without ``source.sequence`` and ``source.lsn`` have no position and are dead-lettered;
truncates (``op: t``) are positioned like any change and remove every older row of the table.
"""

from __future__ import annotations

import json
from typing import Any


def parse_sequence(text: str | None) -> tuple[int | None, int | None]:
    """``'["24023128","24023160"]'`` → ``(24023128, 24023160)``; missing parts are None."""
    if not text:
        return None, None
    try:
        items = json.loads(text)
    except json.JSONDecodeError:
        return None, None
    if not isinstance(items, list) or len(items) != 2:
        return None, None
    return tuple(int(v) if v is not None else None for v in items)  # type: ignore[return-value]


def seq_column(sequence_text: Any, lsn: Any, offset: Any) -> Any:
    """The Spark column expression for ``_cdc_seq`` (see the module docstring).

    ``source.sequence`` is read with string functions, not a second JSON parse: brackets, quotes
    and spaces dropped, split at the comma; a part that is not an integer (``null``) is missing."""
    from pyspark.sql import functions as F

    parts = F.split(F.translate(sequence_text, '[]" ', ""), ",")
    commit = F.coalesce(parts[0].try_cast("bigint"), F.lit(0).cast("bigint"))
    position = F.coalesce(F.get(parts, 1).try_cast("bigint"), lsn)
    return F.when(
        position.isNull(), F.lit(None)
    ).otherwise(
        F.struct(commit.alias("commit_lsn"), position.alias("lsn"), offset.cast("bigint").alias("kafka_offset"))
    )


def schemas_of(value_json: str, key_json: str | None) -> tuple[dict[str, Any] | None, list[str]]:
    """From one record: its envelope schema (None when the converter embeds none) and its key
    column names (see :func:`key_names`)."""
    value = json.loads(value_json)
    envelope = value.get("schema") if isinstance(value, dict) and "payload" in value else None
    return envelope, key_names(key_json)


def key_names(key_json: str | None) -> list[str]:
    """Key column names of a record key: the fields of its embedded ``...Key`` schema, else the
    members of the key object (``schemas.enable=false``); empty for a null or non-object key."""
    if not key_json:
        return []
    try:
        key = json.loads(key_json)
    except json.JSONDecodeError:
        return []
    if isinstance(key, dict) and "schema" in key and "payload" in key:
        schema = key["schema"] if isinstance(key["schema"], dict) else {}
        if schema.get("fields"):
            return [f["field"] for f in schema["fields"]]
        payload = key["payload"]
        return list(payload) if isinstance(payload, dict) else []
    if isinstance(key, dict):
        return list(key)
    return []


def seq_tuple(value: Any) -> tuple[int, int, int] | None:
    """A ``_cdc_seq`` value (Row, dict, list or JSON text) as a comparable tuple; None if absent."""
    if value is None:
        return None
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, dict):
        value = (value["commit_lsn"], value["lsn"], value["kafka_offset"])
    commit, lsn, offset = value
    return int(commit), int(lsn), int(offset)
