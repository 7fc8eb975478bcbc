"""Framing a batch of Kafka records: which envelope schema each record carries, and its payload.

Pure transforms over the Kafka source's rows (``topic``, ``partition``, ``offset``, ``key``,
``value``), plus :class:`SchemaCache`, the driver's memory of the schemas it has parsed.

A record written by a JsonConverter with ``schemas.enable=true`` is ``{"schema":<schema>,
"payload":<payload>}``; Debezium's and signaller's converters write it compactly, schema first.
:func:`frame` keeps per record only what the job needs later (its position, key text, a hash of
its schema and its payload text): the schema text (most of a record's bytes) is hashed, not kept,
so the cached frame is small. The compact form is split with string functions (no JSON parse:
the first ``,"payload":`` after the schema ends it, since a schema object never has a
``payload`` key at its top level and quotes inside JSON strings are escaped); every other form
(whitespace, other key order, no schema) is parsed with ``from_json``. A schema text that a split
produced is parsed on the driver (:class:`SchemaCache`); if it is not a JSON object, the split was
wrong for that batch and :func:`frame` runs again with ``split=False``: records are never decoded
with a schema they do not carry.

The schema text of a hash the cache has not seen is read back from the records themselves
(:func:`schema_texts`): one extra pass over the batch when a table's schema is new or changed,
none otherwise.

Avro records (``fmt`` ``avro``, or ``auto``: a value that starts with the magic byte 0 and holds a
schema id) are in the Confluent wire format: ``_avro`` is true, ``_schema_hash`` is the writer
schema's registry id (bytes 2..5; null when the record is not in the wire format), ``_body`` the
whole value (``spark_jobs.decode`` decodes from byte 6) and ``_key_id`` the key's schema id when
the key is in the wire format too. Their schemas come from the registry
(:mod:`spark_jobs.avro_schemas`), never from the batch. JSON records have ``_avro`` false and
null ``_body``/``_key_id``.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from spark_jobs.json_parse import parse_json

RAW = ("topic", "partition", "offset", "key", "value")
"""The Kafka record as the dead-letter table stores it."""
POSITION = ("topic", "partition", "offset")
"""A record's identity within a batch."""
_SCHEMA_PREFIX = '{"schema":'
_PAYLOAD_KEY = ',"payload":'


FORMATS = ("auto", "json", "avro")
"""How record values are read: detected per record by the magic byte, or all of one format."""


@dataclass(frozen=True)
class SchemaKey:
    """A distinct envelope schema of a batch: how it was framed and its hash (None: no schema);
    for an Avro record (``avro``) the hash is the writer schema's registry id."""

    split: bool
    schema_hash: int | None
    avro: bool = False


def _wire_id(column: str) -> Any:
    """The schema id of a value in the Confluent wire format, else null."""
    from pyspark.sql import functions as F

    framed = F.expr(f"octet_length({column}) >= 5 AND substring({column}, 1, 1) = X'00'")
    return F.when(framed, F.expr(f"CAST(conv(hex(substring({column}, 2, 4)), 16, 10) AS BIGINT)"))


def frame(data: Any, split: bool = True, keep_raw: bool = False, fmt: str = "json",
          heads: Mapping[str, KnownHead] | None = None) -> Any:
    """``data`` (Kafka rows with a non-null ``value``) framed: ``topic``, ``partition``, ``offset``,
    ``key_str``, ``_wrapped`` (``schema``/``payload`` envelope), ``_split`` (framed by string
    split), ``_avro``, ``_schema_hash`` (null: no schema), ``_payload`` (the payload's JSON text; the
    whole value when not wrapped; null for Avro), ``_body`` and ``_key_id`` (Avro, see the module
    docstring); with ``keep_raw`` also ``key``, ``value`` and ``_schema_text``.

    ``heads`` (split framing, without ``keep_raw``): per topic the schema its records carried last
    (:class:`KnownHead`). A record that starts with exactly that schema's envelope head is framed
    by one comparison of its first bytes instead of a search for ``,"payload":`` and a hash of the
    schema text (most of the record): the same columns, since the head holds no
    ``,"payload":`` and that text cannot overlap itself. Any other record takes the search.

    Lazy: nothing runs until an action; the caller decides what to cache."""
    from pyspark.sql import functions as F

    if fmt not in FORMATS:
        msg = f"unknown record format {fmt!r}; accepted: {FORMATS}"
        raise ValueError(msg)
    value_id = _wire_id("value")
    avro = F.lit(False) if fmt == "json" else F.lit(True) if fmt == "avro" else value_id.isNotNull()
    json_only = (lambda c: c) if fmt == "json" else (lambda c: F.when(~avro, c))
    value = F.col("value").cast("string")
    # Two steps. The first reads the record's bytes (string functions, compiled into one stage
    # with the Kafka read) and keeps only what is small: the payload text of a split record, not
    # its value. The second parses with from_json what could not be split, and from_json keeps a
    # step out of the compiled stage: every column it passes on is copied into a row, and every
    # use of a binary column there copies its bytes again. When the value (~3 KB, most of it the
    # schema) and the known head went on to it, copying them was ~20 % of the decode's samples;
    # now only the records it parses carry their text. Measured in one JVM, alternating, the
    # bench's 100,000 records framed and their payloads parsed: median 1.03 -> 0.89 s.
    if split:
        lookup = _expected_head(heads if heads and not keep_raw and fmt != "avro" else {})
        framed = data if lookup is None else data.select("*", lookup.alias("_expected"))  # one look-up a record
        expected = None if lookup is None else F.col("_expected")
        known = F.lit(False) if expected is None else F.coalesce(
            expected.isNotNull() & value.startswith(expected["prefix"]) & value.endswith("}"), F.lit(False))
        framed = framed.select("*", known.alias("_known"))
        head = json_only(F.when(~F.col("_known"), F.substring_index(value, _PAYLOAD_KEY, 1)))  # '{"schema":<schema>'
        framed = framed.select("*", head.alias("_head"))
        head = F.col("_head")
        head_length = F.octet_length(head) if expected is None else F.when(
            F.col("_known"), F.octet_length(expected["prefix"]) - len(_PAYLOAD_KEY)).otherwise(F.octet_length(head))
        compact = value.startswith(_SCHEMA_PREFIX) & value.endswith("}")
        framed = framed.select("*", head_length.alias("_head_length"), (F.col("_known") | (
            compact & (F.octet_length(head) < F.octet_length("value")))).alias("_split"))
        skip = len(_PAYLOAD_KEY) + 1
        tail = F.expr(  # the bytes after ',"payload":', without the closing brace
            f"CAST(substring(value, _head_length + {skip}, octet_length(value) - _head_length - {skip}) AS STRING)")
        hashed = F.xxhash64(head) if expected is None else F.when(F.col("_known"), expected["hash"]).otherwise(
            F.xxhash64(head))
        no_schema = ~F.col("_known") & (head == _SCHEMA_PREFIX + "null")
        split_payload = F.when(F.col("_split"), F.when(tail != "null", tail))
        split_columns = [
            F.col("_split"), split_payload.alias("_split_payload"),
            F.when(F.col("_split"), F.when(~no_schema, hashed)).alias("_split_hash"),
            *([F.when(F.col("_split") & ~no_schema, F.substring(head, len(_SCHEMA_PREFIX) + 1, 1 << 30))
               .alias("_split_schema")] if keep_raw else []),
        ]
        parsed_needed = ~F.col("_split")
        payload_found = split_payload.isNotNull()
    else:
        framed = data
        split_columns = [F.lit(False).alias("_split"), F.lit(None).cast("string").alias("_split_payload"),
                         F.lit(None).cast("bigint").alias("_split_hash"),
                         *([F.lit(None).cast("string").alias("_split_schema")] if keep_raw else [])]
        parsed_needed = F.lit(True)
        payload_found = F.lit(False)
    framed = framed.select(
        *POSITION, "key", *(["value"] if keep_raw else []), *split_columns, avro.alias("_avro"),
        value_id.alias("_value_id"), F.when(avro, F.col("value")).alias("_body"),
        # the text from_json parses (not split) or that is the payload itself (no envelope)
        json_only(F.when(parsed_needed | ~payload_found, value)).alias("_text"),
    )
    # json_only over the first step's columns (the value is gone)
    json_framed = (lambda c: c) if fmt == "json" else (lambda c: F.when(~F.col("_avro"), c))
    envelope = parse_json("_text", "STRUCT<schema: STRING, payload: STRING>")
    parsed_schema, parsed_payload = envelope["schema"], envelope["payload"]
    split_col = F.col("_split")
    env_payload = json_framed(F.when(split_col, F.col("_split_payload")).otherwise(parsed_payload))
    schema_hash = F.when(split_col, F.col("_split_hash")).otherwise(
        F.when(parsed_schema.isNotNull(), F.xxhash64(parsed_schema)))
    framed = framed.select("*", env_payload.alias("_env_payload"))
    raw = ["key", "value", json_framed(F.when(split_col, F.col("_split_schema")).otherwise(parsed_schema))
           .alias("_schema_text")] if keep_raw else []
    is_avro = F.col("_avro")
    return framed.select(
        *POSITION, F.col("key").cast("string").alias("key_str"), *raw,
        F.col("_env_payload").isNotNull().alias("_wrapped"), (split_col & ~is_avro).alias("_split"), is_avro,
        F.when(is_avro, F.col("_value_id")).otherwise(schema_hash).alias("_schema_hash"),
        F.when(~is_avro, F.coalesce(F.col("_env_payload"), F.col("_text"))).alias("_payload"),
        F.col("_body"),
        (F.lit(None).cast("bigint") if fmt == "json" else F.when(is_avro, _wire_id("key"))).alias("_key_id"),
    )


@dataclass(frozen=True)
class KnownHead:
    """A JSON schema a topic's records carried (split framing): its text and its hash as
    :func:`frame` computes it (``xxhash64`` of ``{"schema":<text>``)."""

    text: str
    schema_hash: int


def _expected_head(heads: Mapping[str, KnownHead]) -> Any | None:
    """Per record, ``{prefix, hash}`` of its topic's known head (null: none), or None without heads.
    One map literal: Spark passes it to the generated code by reference, so the code is the same
    whatever the schemas are."""
    from pyspark.sql import functions as F

    if not heads:
        return None
    entries = []
    for topic, head in sorted(heads.items()):
        prefix = _SCHEMA_PREFIX + head.text + _PAYLOAD_KEY
        value = F.struct(F.lit(prefix).alias("prefix"), F.lit(head.schema_hash).cast("bigint").alias("hash"))
        entries += [F.lit(topic), value]
    return F.try_element_at(F.create_map(*entries), F.col("topic"))


def discover(framed: Any) -> list[Any]:
    """One row per (topic, framing, schema) of the batch: ``topic``, ``_wrapped``, ``_split``,
    ``_avro``, ``_schema_hash``, ``key`` (a record key's text, to name the key columns), ``key_id``
    (an Avro key's schema id) and ``newest`` (the highest offset, to order a topic's schemas oldest
    first). One Spark job."""
    from pyspark.sql import functions as F

    return list(
        framed.groupBy("topic", "_wrapped", "_split", "_avro", "_schema_hash")
        .agg(F.first("key_str", ignorenulls=True).alias("key"), F.first("_key_id", ignorenulls=True).alias("key_id"),
             F.max("offset").alias("newest"))
        .collect()
    )


def schema_texts(data: Any, wanted: list[SchemaKey], split: bool, fmt: str = "json") -> dict[SchemaKey, str]:
    """The schema text of each of ``wanted`` (JSON records; read back from the batch's records ``data``)."""
    from pyspark.sql import functions as F

    hashes = [k.schema_hash for k in wanted if k.schema_hash is not None and not k.avro]
    if not hashes:
        return {}
    rows = (
        frame(data, split=split, keep_raw=True, fmt=fmt).where(~F.col("_avro") & F.col("_schema_hash").isin(*hashes))
        .groupBy("_split", "_schema_hash").agg(F.first("_schema_text").alias("text"))
        .collect()
    )
    return {SchemaKey(r._split, r._schema_hash): r.text for r in rows}


class SchemaCache:
    """Parsed envelope schemas by :class:`SchemaKey`, kept across batches (the job's driver).

    A schema text that is not a JSON object is remembered as its error: ``get`` raises
    ``ValueError`` with it (the records are dead-lettered, or reframed when the text came from a
    split). At most ``capacity`` entries, least recently used dropped first; a dropped schema is
    read back from its records when seen again."""

    def __init__(self, capacity: int = 1024) -> None:
        self._entries: OrderedDict[SchemaKey, dict[str, Any] | str] = OrderedDict()
        self._texts: dict[SchemaKey, str] = {}  # of the JSON-object schemas held
        self._capacity = capacity

    def missing(self, keys: list[SchemaKey]) -> list[SchemaKey]:
        """The keys of JSON records with a schema this cache does not hold (Avro schemas are the
        registry's: ``spark_jobs.avro_schemas``)."""
        return [k for k in keys if k.schema_hash is not None and not k.avro and k not in self._entries]

    def add(self, key: SchemaKey, text: str) -> bool:
        """Parse ``text`` and keep it (or its error); whether it is a JSON object."""
        try:
            schema = json.loads(text)
            entry: dict[str, Any] | str = schema if isinstance(schema, dict) else (
                f"the envelope schema is not a JSON object: {text[:80]!r}")
        except ValueError as exc:
            entry = str(exc)
        self._entries[key] = entry
        self._entries.move_to_end(key)
        if isinstance(entry, dict):
            self._texts[key] = text
        while len(self._entries) > self._capacity:
            dropped, _ = self._entries.popitem(last=False)
            self._texts.pop(dropped, None)
        return isinstance(entry, dict)

    def text(self, key: SchemaKey) -> str | None:
        """The text of ``key``'s schema, if held and a JSON object."""
        return self._texts.get(key)

    def failed(self, key: SchemaKey) -> bool:
        """Whether ``key``'s text was held and is not a JSON object."""
        return isinstance(self._entries.get(key), str)

    def get(self, key: SchemaKey) -> dict[str, Any]:
        """The parsed schema of ``key``: ``ValueError`` if its text was not a JSON object,
        ``KeyError`` if not held."""
        entry = self._entries[key]
        self._entries.move_to_end(key)
        if isinstance(entry, str):
            raise ValueError(entry)
        return entry


KNOWN_HEADS = 64
"""Topics whose last schema the job remembers for framing (:func:`frame`'s ``heads``); a record of
another topic is framed by searching it, as the first batch's records are."""


def remember_heads(heads: dict[str, KnownHead], found: list[Any], schemas: SchemaCache) -> None:
    """Update ``heads`` (per topic, insertion order = least recently seen first) from a batch's
    :func:`discover` rows: per topic the split schema its newest records carried, so that the next
    batch frames the records that carry it again with one comparison each. At most
    :data:`KNOWN_HEADS` topics, the least recently seen forgotten first."""
    for row in sorted(found, key=lambda r: r.newest):
        if not row._split or row._avro or row._schema_hash is None:
            continue
        text = schemas.text(SchemaKey(True, row._schema_hash))
        if text is not None:
            heads.pop(row.topic, None)
            heads[row.topic] = KnownHead(text, int(row._schema_hash))
    while len(heads) > KNOWN_HEADS:
        heads.pop(next(iter(heads)))
