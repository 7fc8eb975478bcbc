"""``spark_jobs.key_range``: the bounds' literals and file skipping from statistics (pure)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from spark_jobs.key_range import files_in_range, literal_value, range_sql
from spark_jobs.sqltext import sql_string


@dataclass(frozen=True)
class _File:
    """Stands in for a Delta ``AddFile``: its statistics JSON."""

    name: str
    minimum: dict[str, Any] | None
    maximum: dict[str, Any] | None

    def stats(self) -> str | None:
        if self.minimum is None:
            return None
        return json.dumps({"numRecords": 2, "minValues": self.minimum, "maxValues": self.maximum})


FILES = [_File("low", {"id": 1, "name": "a", "day": "2026-01-01"}, {"id": 9, "name": "c", "day": "2026-01-31"}),
         _File("high", {"id": 100, "name": "x"}, {"id": 109, "name": "z"}),
         _File("unknown", None, None)]


def _kept(bounds: list[tuple[str, str, str]], mapping: str | None = None) -> list[str]:
    return [f.name for f in files_in_range(FILES, bounds, mapping)]


@pytest.mark.parametrize(("bounds", "kept"), [
    ([("id", "5", "20")], ["low", "unknown"]),
    ([("id", "10", "99")], ["unknown"]),
    ([("id", "-5", "0")], ["unknown"]),
    ([("id", "109", "200")], ["high", "unknown"]),
    ([("name", "'b'", "'y'")], ["low", "high", "unknown"]),
    ([("name", "'d'", "'w'")], ["unknown"]),
    ([("id", "0", "200"), ("name", "'d'", "'y'")], ["high", "unknown"]),
    ([("day", "DATE'2026-02-01'", "DATE'2026-03-01'")], ["high", "unknown"]),  # high has no day statistics
    ([("day", "DATE'2026-01-31'", "DATE'2026-03-01'")], ["low", "high", "unknown"]),
    ([("id", "1.5", "2.5")], ["low", "high", "unknown"]),  # not a literal it reads: nothing skipped
    ([("name", "5", "6")], ["low", "high", "unknown"]),  # a string column against numbers: kept
    ([], ["low", "high", "unknown"]),
])
def test_files_whose_statistics_lie_outside_the_bounds_are_skipped(
    bounds: list[tuple[str, str, str]], kept: list[str],
) -> None:
    assert _kept(bounds) == kept


def test_with_column_mapping_every_file_is_kept() -> None:
    assert _kept([("id", "10", "99")], mapping="name") == ["low", "high", "unknown"]
    assert _kept([("id", "10", "99")], mapping="none") == ["unknown"]


def test_a_truncated_string_statistic_still_keeps_its_file() -> None:
    """Delta cuts string statistics to a prefix (the minimum) and a prefix plus a high character
    (the maximum): both still bound the file's keys, so a key past the prefix keeps the file."""
    long_key = "k" * 40
    cut = _File("cut", {"name": "k" * 32}, {"name": "k" * 32 + "\ufffd"})
    assert files_in_range([cut], [("name", sql_string(long_key), sql_string(long_key))], None) == [cut]


@pytest.mark.parametrize("text", ["plain", "it's", "back\\slash", "\\'both'\\", "ünï©ødé", ""])
def test_a_string_literal_reads_back_as_its_text(text: str) -> None:
    assert literal_value(sql_string(text)) == text


def test_literals() -> None:
    assert (literal_value("42"), literal_value("-7"), literal_value("DATE'2026-11-28'")) == (42, -7, "2026-11-28")
    assert literal_value("1.5") is None and literal_value("TIMESTAMP'2026-01-01 00:00:00'") is None


def test_range_sql() -> None:
    expected = "t.`id` BETWEEN 1 AND 9 AND t.`a b` BETWEEN 'x' AND 'y'"
    assert range_sql("t", [("id", "1", "9"), ("a b", "'x'", "'y'")]) == expected
    assert range_sql(None, [("id", "1", "9")]) == "`id` BETWEEN 1 AND 9"
