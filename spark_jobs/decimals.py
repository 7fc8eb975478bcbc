"""Connect's decimal encodings decoded by Spark SQL expressions: no Python UDF, no row leaves the JVM.

* ``org.apache.kafka.connect.data.Decimal``: the unscaled value as big-endian two's-complement
  bytes (base64 in JSON, already bytes after ``from_json`` into ``BINARY``), the scale in the schema;
  stored as ``DECIMAL(precision, scale)``.
* ``io.debezium.data.VariableScaleDecimal``: ``{scale, value}`` per value; stored as exact text.

Both go through :func:`unscaled_sql`, which turns the bytes into a sign and the decimal digits of
the magnitude with exact integer arithmetic of any length: the bytes (complemented when negative)
are read 3 at a time into base-10⁹ limbs (``aggregate`` over ``BIGINT``s, carries always fit), plus
one for a negative value. The text is then placed around the decimal point and cast. The results
equal the Python reference decoders in :mod:`spark_jobs.connect_schema` (``decode_decimal``,
``decode_variable_decimal``), which the tests compare them with: a value with more digits than its
column's precision is NULL (the record is dead-lettered), NULL stays NULL, empty bytes are 0.

The SQL is over ``{col}`` like every other conversion in :mod:`spark_jobs.connect_schema`; ``tag``
keeps the lambda variables of nested uses (arrays of decimals) apart.
"""

from __future__ import annotations

_LIMB = 1_000_000_000  # base of the limbs: 10^9, so 9 digits per limb
_CHUNK = 16_777_216  # 2^24: 3 bytes at a time, so limb * chunk + carry < 2^63


def _mul_add(limbs: str, factor: str, addend: str, tag: str) -> str:
    """``limbs * factor + addend`` over little-endian base-10⁹ limbs (``ARRAY<BIGINT>``)."""
    s, x = f"s_{tag}", f"l_{tag}"
    step = f"({x} * {factor} + {s}.c)"
    return (
        f"aggregate({limbs}, named_struct('o', CAST(array() AS ARRAY<BIGINT>), 'c', CAST({addend} AS BIGINT)), "
        f"({s}, {x}) -> named_struct('o', array_append({s}.o, {step} % {_LIMB}), 'c', {step} div {_LIMB}), "
        f"{s} -> IF({s}.c > 0, array_append({s}.o, {s}.c), {s}.o))"
    )


def unscaled_sql(binary: str, tag: str) -> str:
    """SQL: ``named_struct('neg', BOOLEAN, 'digits', STRING)`` of big-endian two's-complement bytes
    ``binary`` (the magnitude's digits, no sign, no leading zeros; ``'0'`` for zero or no bytes)."""
    h, m, p, lim, i, x, j = (f"{v}_{tag}" for v in ("h", "m", "p", "L", "i", "x", "j"))
    neg = f"(length({h}) > 0 AND substr({h}, 1, 1) >= '8')"
    magnitude_hex = f"IF({neg}, translate({h}, '0123456789ABCDEF', 'FEDCBA9876543210'), {h})"
    padded = f"lpad({m}, CAST(greatest(6, ceil(length({m}) / 6) * 6) AS INT), '0')"
    chunk = f"CAST(conv(substr({p}, {i} * 6 + 1, 6), 16, 10) AS BIGINT)"
    limbs = (
        f"aggregate(sequence(0, CAST(length({p}) / 6 AS INT) - 1), array(CAST(0 AS BIGINT)), "
        f"({lim}, {i}) -> {_mul_add(lim, str(_CHUNK), chunk, tag + 'a')})"
    )
    plus_one = _mul_add(limbs, "1", f"IF({neg}, 1, 0)", tag + "b")
    digits = (
        f"array_join(transform(reverse({plus_one}), ({x}, {j}) -> "
        f"IF({j} = 0, CAST({x} AS STRING), lpad(CAST({x} AS STRING), 9, '0'))), '')"
    )
    body = f"named_struct('neg', {neg}, 'digits', {digits})"
    with_padded = f"transform(array({padded}), {p} -> {body})[0]"
    with_magnitude = f"transform(array({magnitude_hex}), {m} -> {with_padded})[0]"
    return f"transform(array(hex({binary})), {h} -> {with_magnitude})[0]"


def _point(digits: str, scale: str) -> str:
    """``digits`` with the decimal point ``scale`` (>= 1) places from the right, zero-padded."""
    padded = f"lpad({digits}, greatest(length({digits}), {scale} + 1), '0')"  # lpad cuts longer text
    return f"concat(left({padded}, length({padded}) - {scale}), '.', right({padded}, {scale}))"


def decimal_sql(precision: int, scale: int, tag: str = "d") -> str:
    """SQL over ``{col}`` (``BINARY``): the ``DECIMAL(precision, scale)`` it encodes, or NULL."""
    r = f"r_{tag}"
    text = f"{r}.digits" if scale == 0 else _point(f"{r}.digits", str(scale))
    value = f"try_cast(concat(IF({r}.neg, '-', ''), {text}) AS DECIMAL({precision},{scale}))"
    checked = f"IF(length({r}.digits) > {precision}, NULL, {value})"
    decoded = f"transform(array({unscaled_sql('{col}', tag)}), {r} -> {checked})[0]"
    return f"CASE WHEN {{col}} IS NULL THEN NULL ELSE {decoded} END"


def variable_decimal_sql(tag: str = "v") -> str:
    """SQL over ``{col}`` (``STRUCT<scale: INT, value: BINARY>``): the exact decimal text
    (plain notation, as ``format(Decimal, 'f')``), or NULL."""
    r = f"r_{tag}"
    scale = "{col}.scale"
    sign = f"IF({r}.neg, '-', '')"
    text = (
        f"CASE WHEN {scale} = 0 THEN concat({sign}, {r}.digits) "
        f"WHEN {scale} > 0 THEN concat({sign}, {_point(f'{r}.digits', scale)}) "
        f"WHEN {r}.digits = '0' THEN '0' "
        f"ELSE concat({sign}, {r}.digits, repeat('0', -{scale})) END"
    )
    decoded = f"transform(array({unscaled_sql('{col}.value', tag)}), {r} -> {text})[0]"
    return f"CASE WHEN {{col}} IS NULL OR {scale} IS NULL OR {{col}}.value IS NULL THEN NULL ELSE {decoded} END"
