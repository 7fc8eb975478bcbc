"""The decimal encodings decoded in the JVM (``spark_jobs.decimals``) equal the Python reference
decoders (``decode_decimal``, ``decode_variable_decimal``) on random values: negatives, zero, the
largest and smallest 38-digit values, values too wide for their column, every scale, minimal and
sign-extended byte strings, empty bytes and NULL; scalars and arrays, through ``column_spec``."""

from __future__ import annotations

import random
from decimal import Context, Decimal, localcontext
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jobs.connect_schema import (
    DECIMAL,
    VARIABLE_SCALE_DECIMAL,
    column_spec,
    decode_decimal,
    decode_variable_decimal,
)

pytestmark = pytest.mark.spark

COLUMNS = [(38, 0), (38, 10), (38, 38), (10, 2), (1, 0), (5, 5), (20, 3), (18, 0), (19, 0)]


def two_complement(number: int, extra: int = 0) -> bytes:
    """Minimal big-endian two's complement (Java's ``BigInteger.toByteArray``), plus ``extra``
    sign-extension bytes."""
    length = max(1, (number + (number < 0)).bit_length() // 8 + 1) + extra
    return number.to_bytes(length, "big", signed=True)


def decimal_node(name: str, precision: int, scale: int) -> dict[str, Any]:
    return {"field": name, "type": "bytes", "optional": True, "name": DECIMAL,
            "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)}}


VSD_NODE = {"field": "v", "type": "struct", "optional": True, "name": VARIABLE_SCALE_DECIMAL,
            "fields": [{"field": "scale", "type": "int32", "optional": False},
                       {"field": "value", "type": "bytes", "optional": False}]}


def edge_numbers() -> list[int]:
    out = [0, 1, -1, 127, 128, -128, -129, 255, 256, -256, 2**23, -(2**23), 2**24, -(2**24), 2**63 - 1, -(2**63),
           2**63, -(2**63) - 1, 2**64, -(2**64), 10**38 - 1, -(10**38 - 1), 10**38, -(10**38), 2**127 - 1,
           -(2**127), 2**127, 10**18, 10**19, -(10**19)]
    for digits in range(1, 41):
        out += [10 ** (digits - 1), 10**digits - 1, -(10**digits - 1)]
    rng = random.Random(20261123)
    for _ in range(300):
        digits = rng.randint(1, 40)
        out.append(rng.choice((-1, 1)) * rng.randint(0, 10**digits - 1))
    return out


def check_decimals(spark: Any, numbers: list[int]) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    rows: list[tuple[bytes | None]] = [(None,), (b"",)]
    rows += [(two_complement(n, extra),) for n in numbers for extra in (0, 2)]
    frame = spark.createDataFrame(rows, T.StructType([T.StructField("b", T.BinaryType())]))
    specs = [column_spec(decimal_node(f"c{i}", p, s)) for i, (p, s) in enumerate(COLUMNS)]
    array_spec = column_spec({"field": "a", "type": "array", "optional": True,
                              "items": decimal_node("item", 38, 4) | {"optional": True}})
    assert array_spec.udf == ("decimal_array", 38, 4)
    out = frame.select(
        "b", *[F.expr(s.target_expr.replace("{col}", "b")).alias(s.name) for s in specs],
        F.expr(array_spec.target_expr.replace("{col}", "array(b, NULL, b)")).alias("a"),
    )
    assert [f.dataType.simpleString() for f in out.schema.fields[1:]] == [
        f"decimal({p},{s})" for p, s in COLUMNS] + ["array<decimal(38,4)>"]
    out = out.collect()
    assert len(out) == len(rows)
    for row in out:
        raw = None if row.b is None else bytes(row.b)
        for spec, (precision, scale) in zip(specs, COLUMNS, strict=True):
            expected = decode_decimal(raw, scale, precision)
            assert row[spec.name] == expected, (raw, precision, scale, row[spec.name], expected)
        item = decode_decimal(raw, 4, 38)
        assert row.a == [item, None, item]


def check_variable_decimals(spark: Any, values: list[tuple[int | None, int | None]]) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    rows: list[tuple[Any]] = [(None,)]
    for scale, number in values:
        rows.append(((scale, None if number is None else two_complement(number)),))
    struct = T.StructType([T.StructField("scale", T.IntegerType()), T.StructField("value", T.BinaryType())])
    frame = spark.createDataFrame(rows, T.StructType([T.StructField("v", struct)]))
    spec = column_spec(VSD_NODE)
    array_spec = column_spec({"field": "a", "type": "array", "optional": True, "items": VSD_NODE})
    out = frame.select(
        "v", F.expr(spec.target_expr.replace("{col}", "v")).alias("text"),
        F.expr(array_spec.target_expr.replace("{col}", "array(v)")).alias("a"),
    ).collect()
    for row in out:
        value = None if row.v is None else {"scale": row.v.scale,
                                            "value": None if row.v.value is None else bytes(row.v.value)}
        expected = decode_variable_decimal(value)
        assert row.text == expected, (value, row.text, expected)
        assert row.a == [expected]
        if expected is not None:  # exact: the text times 10^scale is the unscaled integer
            assert value is not None
            with localcontext(Context(prec=500)):
                assert Decimal(expected).scaleb(value["scale"]) == int.from_bytes(value["value"], "big", signed=True)


def test_decimal_bytes_decode_like_the_python_decoder(spark: Any) -> None:
    check_decimals(spark, edge_numbers())


def test_variable_scale_decimals_decode_like_the_python_decoder(spark: Any) -> None:
    rng = random.Random(11)
    values: list[tuple[int | None, int | None]] = [(0, 0), (2, 0), (-3, 0), (-3, 12), (-2, -5), (5, -5), (None, 1),
                                                   (1, None), (0, 10**60 + 7), (30, -(10**75) - 3)]
    for _ in range(300):
        number = rng.choice((-1, 1)) * rng.randint(0, 10 ** rng.randint(1, 80))
        values.append((rng.randint(-5, 45), number))
    check_variable_decimals(spark, values)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(min_value=-(2**130), max_value=2**130) | st.integers(-(10**40), 10**40), min_size=50,
                max_size=300))
def test_random_decimals_decode_like_the_python_decoder(spark: Any, numbers: list[int]) -> None:
    check_decimals(spark, numbers)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(-6, 50), st.integers(-(10**90), 10**90)), min_size=50, max_size=300))
def test_random_variable_scale_decimals_decode_like_the_python_decoder(spark: Any,
                                                                       values: list[tuple[int, int]]) -> None:
    check_variable_decimals(spark, list(values))
