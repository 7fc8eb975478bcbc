"""Every PostgreSQL type, side by side with Debezium (``tests.compat.all_types``), in every mode.

``make test`` (so CI) runs the catalog check: every ``pg_type`` base, range and multirange type of
``pg_catalog`` has values or a reason. The side-by-side runs (the default modes, then one run per
other value of each mode property: ``decimal.handling.mode``, ``time.precision.mode``,
``binary.handling.mode``, ``interval.handling.mode``, ``hstore.handling.mode`` and
``include.unknown.datatypes``), and the default modes in Avro (Debezium with Apicurio's AvroConverter
beside the sidecar's Avro converter, records decoded, registered schemas compared), run under
``make compat-full`` (``COMPAT_FULL=1``) only, to keep CI's budget (about 25 s each). Every difference
must be covered by the allow-list (``compare.ALLOWED``, the README's "Differences from Debezium"); the
columns Debezium cannot read in a snapshot are compared in streamed events only (``all_types.STREAM_ONLY``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools import StackSettings
from tests.compat import all_types, avro_output
from tests.compat.compare import Renames, compare, report, unexplained
from tests.integration.capture_helpers import capture_env

pytestmark = pytest.mark.compat

DEFAULT_MODES: dict[str, str] = {}
MODE_MATRIX: tuple[dict[str, str], ...] = (
    {"decimal.handling.mode": "double"},
    {"decimal.handling.mode": "string"},
    {"time.precision.mode": "adaptive_time_microseconds"},
    {"time.precision.mode": "connect"},
    {"binary.handling.mode": "base64"},
    {"binary.handling.mode": "base64-url-safe"},
    {"binary.handling.mode": "hex"},
    {"interval.handling.mode": "string"},
    {"hstore.handling.mode": "map"},
    {"include.unknown.datatypes": "true"},
    {"include.unknown.datatypes": "true", "binary.handling.mode": "hex"},
)
"""Each non-default value of each mode property once (``make compat-full``; the defaults run in ``make test``)."""



def test_every_catalog_type_has_values_or_a_reason(stack: StackSettings, unique_name: str, tmp_path: Path) -> None:
    with capture_env(stack, unique_name, tmp_path) as env:
        types = all_types.catalog_types(env)
    assert len(types) > 80, types
    assert all_types.uncovered(types) == [], (
        "pg_type lists types the compatibility suite has no values for: add them to all_types.VALUES "
        "(or to EXCLUDED with the reason)")
    assert set(all_types.VALUES) | set(all_types.EXCLUDED) == {t.name for t in types}, "stale entries"


def _mode_id(modes: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in modes.items()) or "defaults"


@pytest.mark.parametrize(
    ("modes", "avro"),
    [pytest.param(DEFAULT_MODES, False, id=_mode_id(DEFAULT_MODES))]
    + [pytest.param(m, False, id=_mode_id(m), marks=pytest.mark.compat_full) for m in MODE_MATRIX]
    + [pytest.param(DEFAULT_MODES, True, id="avro", marks=pytest.mark.compat_full)],
)
def test_every_type_matches_debezium(stack: StackSettings, unique_name: str, tmp_path: Path,
                                     modes: dict[str, str], avro: bool, request: pytest.FixtureRequest) -> None:
    if avro:
        request.getfixturevalue("schema_registry")  # the registry must be ready
    with capture_env(stack, unique_name, tmp_path) as env:
        table, names, (debezium, signaller) = all_types.run(env, tmp_path, modes, avro=avro)
    (tmp_path / "outputs.json").write_text(json.dumps([debezium, signaller], indent=1))
    renames = [Renames(n.prefix, n.signal_table) for n in names]
    differences = compare(debezium, signaller, *renames)
    if avro:  # Debezium with Apicurio's AvroConverter, the sidecar's Avro converter: the schemas registered
        differences += avro_output.compare_subjects(
            *(avro_output.subjects(stack.registry_url, n.prefix) for n in names), *renames)
    left = unexplained(differences)
    assert not left, f"{report(left)}\n(both outputs: {tmp_path / 'outputs.json'})"
    records = next(iter(debezium.values()))
    ops = [None if r["value"] is None else r["value"]["payload"]["op"] for r in records]
    assert ops.count("c") == table.rows + 1 and ops.count("r") == table.rows - 1, ops
    assert ops.count("u") == table.rows and ops.count("d") == 1, ops
    streamed = list(debezium.values())[1]  # the stream-only table: no snapshot
    ops = [None if r["value"] is None else r["value"]["payload"]["op"] for r in streamed]
    assert ops.count("c") == table.rows + 1 and ops.count("u") == table.rows and "r" not in ops, ops
