"""The per-key sequence the apply job stores as ``_cdc_seq`` and orders events by.

``_cdc_seq = (commit_lsn, lsn, kafka_offset)``, three BIGINTs compared left to right, whose first two
members depend on the source connector (a Delta table holds the events of one source table, so
the sequences compared are always of one kind):

PostgreSQL (``source.sequence`` / ``source.lsn``):

* ``commit_lsn``, ``lsn`` come from Debezium's ``source.sequence`` = ``["<lastCommitLsn>",
  "<lsn>"]``, which increases along the change stream (the stream is in commit order; inside a
  transaction the LSN grows). ``source.lsn`` alone is not enough: a transaction that changed a
  row earlier in the WAL can commit later than another one. When ``sequence`` is missing, the
  pair is ``(0, source.lsn)``.

MariaDB / MySQL (``source.file`` / ``source.pos`` / ``source.row``, present when ``source.file`` is):

* ``commit_lsn`` is the binlog position ``(file number << 32) | pos``: the number of the binlog
  file (``mariadb-bin.000042`` → 42) and the start position of the event in it (positions are
  below 4 GiB: the binlog event header stores them in 4 bytes), so it orders like the log, which
  is the commit order; ``lsn`` is ``source.row``, the row's index in its rows event (the rows of
  one multi-row statement share ``pos``). The GTID is not used: GTIDs of different replication
  domains are not ordered against each other, the binlog position is.
  The position belongs to one server's binlog: after ``RESET MASTER`` or a fail-over to another
  server the numbering restarts, and the table needs a new snapshot into a fresh target.
  A ``file`` without a number or a null ``pos`` is no position (the record is dead-lettered).

Both sources:

* Incremental snapshot reads (``op: r``) carry the stream position of the window that emitted
  them (PostgreSQL: the sequence of the window's close; MariaDB: ``file``/``pos`` of the high
  watermark's rows event, ``row`` 0), so a read sorts after every change the sidecar emitted before
  it and before every change after it: exactly its place in the log. A key changed while the
  window was open has no READ (the window drops it), so a READ never overwrites a newer
  streamed change, even when it reaches Kafka after one.
* ``kafka_offset`` breaks ties between events at the same position (a replayed duplicate, reads
  of one window); per key it grows because a key always maps to the same partition (records are
  keyed by primary key and partitioned by murmur2, so this holds as long as the topic's partition
  count does not change). Offsets of different partitions are never compared for one key.

So for one key, ``_cdc_seq`` grows in the order the source applied the changes, and an older
version, whether late, duplicated or replayed, never has a larger sequence than a newer one. A
duplicate of an event (re-sent after a sidecar restart) has the same first two members and a
larger offset: it wins the tie, which is harmless because it carries the same row.

Records without a position are dead-lettered; truncates (``op: t``) are positioned like any change
and remove every older row of the table.
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

    ``source.sequence`` is read with string functions, not a second JSON parse: split at the
    comma, each part's brackets, quotes and spaces trimmed from its ends; a part that is not an
    integer (``null``) is missing. (``trim``, not ``translate``: Spark's ``translate`` looks every
    character up in a map of strings, and was a quarter of the decode phase's CPU.)"""
    from pyspark.sql import functions as F

    parts = F.split(sequence_text, ",")
    junk = F.lit('[]" ')
    commit = F.coalesce(F.trim(parts[0], junk).try_cast("bigint"), F.lit(0).cast("bigint"))
    position = F.coalesce(F.trim(F.get(parts, 1), junk).try_cast("bigint"), lsn)
    return F.when(
        position.isNull(), F.lit(None)
    ).otherwise(
        F.struct(commit.alias("commit_lsn"), position.alias("lsn"), offset.cast("bigint").alias("kafka_offset"))
    )


BINLOG_FILE_NUMBER = r"\.([0-9]+)$"
"""The number at the end of a binlog file name (``<basename>.<digits>``), as a Spark regex."""
BINLOG_POS_BITS = 32


def binlog_sequence(file: str | None, pos: int | None, row: int | None) -> tuple[int, int] | None:
    """``(commit_lsn, lsn)`` of a MariaDB/MySQL source block (the pure reference of
    :func:`binlog_seq_column`): ``("mariadb-bin.000003", 1234, 2)`` → ``(3 << 32 | 1234, 2)``; None
    when the file name has no number or ``pos`` is missing; a missing ``row`` is 0."""
    if file is None or pos is None:
        return None
    _, _, number = file.rpartition(".")
    if not (number.isascii() and number.isdigit()):
        return None
    return (int(number) << BINLOG_POS_BITS) | pos, row or 0


def binlog_seq_column(file: Any, pos: Any, row: Any, offset: Any) -> Any:
    """The Spark column of ``_cdc_seq`` for a binlog source block (see the module docstring and
    :func:`binlog_sequence`); null when the block has no usable position."""
    from pyspark.sql import functions as F

    number = F.regexp_extract(file, BINLOG_FILE_NUMBER, 1).try_cast("bigint")
    position = F.shiftleft(number, BINLOG_POS_BITS) + pos.cast("bigint")
    return F.when(position.isNull(), F.lit(None)).otherwise(F.struct(
        position.alias("commit_lsn"), F.coalesce(row.cast("bigint"), F.lit(0).cast("bigint")).alias("lsn"),
        offset.cast("bigint").alias("kafka_offset"),
    ))


SOURCE_FIELDS = ("lsn", "sequence", "file", "pos", "row")
"""The ``source`` members the sequence is built from (PostgreSQL's, then the binlog connectors')."""


SOURCE_DDL = {"lsn": "bigint", "sequence": "string", "file": "string", "pos": "bigint", "row": "bigint"}


def source_fields(envelope: dict[str, Any] | None) -> tuple[str, ...]:
    """The members of :data:`SOURCE_FIELDS` that the ``source`` struct of Connect envelope schema
    ``envelope`` has (an Avro writer schema has only its connector's); all of them when there is no
    schema (JSON parsed with a DDL reads a missing member as null)."""
    if envelope is None:
        return SOURCE_FIELDS
    source: dict[str, Any] = next((f for f in envelope.get("fields") or [] if f.get("field") == "source"), {})
    names = {f.get("field") for f in source.get("fields") or []}
    return tuple(name for name in SOURCE_FIELDS if name in names)


def source_member(source: Any, name: str, fields: tuple[str, ...]) -> Any:
    """Member ``name`` of the ``source`` struct column, or a typed null when ``fields`` lacks it."""
    from pyspark.sql import functions as F

    return source[name] if name in fields else F.lit(None).cast(SOURCE_DDL[name])


def source_seq_column(source: Any, offset: Any, fields: tuple[str, ...] = SOURCE_FIELDS) -> Any:
    """``_cdc_seq`` of a record's ``source`` struct column, whichever connector wrote it: the binlog
    sequence when ``source.file`` is set, else PostgreSQL's (see :func:`source_fields`)."""
    from pyspark.sql import functions as F

    def member(name: str) -> Any:
        return source_member(source, name, fields)

    return F.when(member("file").isNotNull(), binlog_seq_column(member("file"), member("pos"), member("row"), offset)
                  ).otherwise(seq_column(member("sequence"), member("lsn"), offset))


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
