"""Why a decoded value is missing: the dead-letter reason for a value a record carries but that did
not decode into its column's type. Pure column expressions; :mod:`spark_jobs.decode` calls them.

A column whose decoding may fail (:func:`may_fail`) is checked per record: :func:`suspect` says
where its decoded value is null although the record may carry one, and :func:`with_reasons`
names the first such column whose record does carry a value, quoting up to 200 characters of it.

Telling a value that did not decode from a JSON null costs a second parse of the row image, as
text, for columns parsed as another type (a number, a boolean, an array). That parse is made at
most once per record, only when such a column is suspect, and serves all of them; a column parsed
as text needs none (its parse is its text, null only for a JSON null). Before, each suspect column
parsed the payload twice on its own, so a row of many null numbers, dates or timestamps, or a
delete's before image holding only its key, paid two parses per null column (measured with a
dev script on 20,000-event batches of a table of twelve nullable int8, timestamptz and numeric
columns, ten of them null: the decode phase ~1.55 s a batch before, ~1.1 s after).

A null decoded value is only suspect where the record may hold a value: the parsed value is not
null (its conversion failed), or the payload parse reported a value that did not parse into its
type (Spark's corrupt-record field, :data:`FAILED`: the record's text when any of its values
failed, null otherwise, JSON nulls included). A record whose nulls are all JSON nulls is no longer
parsed again: an incremental snapshot of a table with a nullable number column, every row null
there (the bench's backfill), parsed each record three times. Measured with a dev micro-benchmark
(the steady decode of 100,000 such records, in memory, two passes a round, one session each):
1.93 s a round before, 1.62 s after (1.34 s with no check at all).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Any

from spark_jobs.connect_schema import ColumnSpec
from spark_jobs.json_parse import parse_json

IMAGES_DDL = "STRUCT<before: STRING, after: STRING>"
"""The envelope's row images as JSON texts."""
SUSPECT, ROW, PAYLOAD, TEXTS = "_cdc_suspect", "_cdc_row", "_cdc_payload", "_cdc_texts"
"""The internal columns :func:`with_reasons` reads: each check's flag (numbered), the row image as
parsed, a JSON record's payload text; and the one it adds (the row image's texts)."""
FAILED = "_cdc_failed"
"""The payload parse's field for a record with a value that did not parse (see :func:`suspect`)."""


@dataclass(frozen=True)
class Check:
    """One column to check: its record spec, the stored column and its suspect flag (a column)."""

    spec: ColumnSpec
    target: ColumnSpec
    suspect: Any


def may_fail(spec: ColumnSpec, target: ColumnSpec) -> bool:
    """Whether a value of ``spec`` present in a record can fail to decode: any conversion or
    non-text parse can; a text column stored as text cannot."""
    return spec.converted or not spec.parsed_as_text or target.target_ddl != "STRING"


def suspect(spec: ColumnSpec, raw: Any, value: Any, is_placeholder: Any, parse_failed: Any) -> Any:
    """Whether the record may carry a value of ``spec`` that did not decode: ``value`` (decoded)
    is null and the value is not an unchanged-TOAST placeholder, and either ``raw`` (as parsed) is
    not null (its conversion failed) or ``parse_failed`` (a boolean column: some value of the
    record did not parse into its type; always false for Avro); for a column parsed as text,
    only where ``raw`` is not null; for an array, also where it lost elements."""
    from pyspark.sql import functions as F

    # text parses whatever the value, so a text column holds a value exactly where raw is not null
    may_hold = raw.isNotNull() if spec.parsed_as_text else raw.isNotNull() | parse_failed
    flag = ~is_placeholder & value.isNull() & may_hold
    if spec.converted and spec.raw_ddl.startswith("ARRAY"):
        flag = flag | (raw.isNotNull() & (
            F.size(F.filter(value, lambda x: x.isNull())) != F.size(F.filter(raw, lambda x: x.isNull()))
        ))
    return flag


def reason_inputs(checks: list[Check], avro: bool) -> list[Any]:
    """The columns :func:`with_reasons` reads, for the projection before it to carry (from its
    ``_row``, the row image as parsed, and ``_payload``, a JSON record's payload text): each check's
    flag, and what the reasons quote, only where one does (the row image for Avro records and JSON
    columns parsed as text, the payload text for other JSON columns)."""
    from pyspark.sql import functions as F

    quoted = []
    if avro or any(c.spec.parsed_as_text for c in checks):
        quoted.append(F.col("_row").alias(ROW))
    if not avro and any(not c.spec.parsed_as_text for c in checks):
        quoted.append(F.col("_payload").alias(PAYLOAD))
    return [*[c.suspect.alias(f"{SUSPECT}{i}") for i, c in enumerate(checks)], *quoted]


def with_reasons(staged: Any, checks: list[Check], avro: bool, kept: list[str]) -> Any:
    """``staged``'s ``kept`` columns and ``_bad``: the reason naming the first checked column whose
    value the record carries but did not decode (null: none). ``staged`` holds ``_cdc_op`` and
    :func:`reason_inputs`. Lazy."""
    from pyspark.sql import functions as F

    if not checks:
        return staged.select(*kept, F.lit(None).cast("string").alias("_bad"))
    flags = [F.col(f"{SUSPECT}{i}") for i in range(len(checks))]
    typed = [f for f, c in zip(flags, checks, strict=True) if not c.spec.parsed_as_text]
    if typed and not avro:  # its own projection: one parse, read by every column's reason
        staged = staged.select("*", F.when(reduce(lambda a, b: a | b, typed), _row_texts()).alias(TEXTS))
    reasons = []
    for flag, check in zip(flags, checks, strict=True):
        spec, raw = check.spec, F.col(ROW)[check.spec.name]
        text = _avro_text_of(raw, spec) if avro else raw if spec.parsed_as_text else F.col(TEXTS)[spec.name]
        reasons.append(F.when(flag, F.when(text.isNotNull(), F.concat(
            F.lit(f"undecodable value of column {spec.name!r} ({spec.raw_ddl} → {check.target.target_ddl}): "),
            F.substring(text, 1, 200),
        ))))
    return staged.select(*kept, F.coalesce(*reasons).alias("_bad"))


def _row_texts() -> Any:
    """The JSON texts of a JSON record's row image by column name (a JSON null: a null value)."""
    from pyspark.sql import functions as F

    images = parse_json(PAYLOAD, IMAGES_DDL)
    image = F.when(F.col("_cdc_op") == "d", images["before"]).otherwise(images["after"])
    return F.from_json(image, "MAP<STRING, STRING>")


def _avro_text_of(raw: Any, spec: ColumnSpec) -> Any:
    """The text of an Avro-decoded value, for a dead letter's reason (JSON but for plain strings)."""
    from pyspark.sql import functions as F

    if spec.parsed_as_text:
        return raw
    wrapped = F.to_json(F.struct(raw.alias("v")))  # {"v":<value>}
    return F.when(raw.isNotNull(), F.regexp_extract(wrapped, r'^\{"v":(.*)\}$', 1))
