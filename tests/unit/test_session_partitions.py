"""Shuffle partitions of a local master: one per core (spark_jobs.session.local_shuffle_partitions)."""

from __future__ import annotations

import os

import pytest

from spark_jobs.session import local_shuffle_partitions


@pytest.mark.parametrize(
    ("master", "expected"),
    [("local", 1), ("local[2]", 2), ("local[8]", 8), ("local[3,2]", 3), ("local[0]", 1)],
)
def test_a_local_master_gets_one_partition_per_core(master: str, expected: int) -> None:
    assert local_shuffle_partitions(master) == expected


def test_local_star_counts_the_machines_cores() -> None:
    assert local_shuffle_partitions("local[*]") == (os.cpu_count() or 1)


@pytest.mark.parametrize(
    "master",
    ["yarn", "spark://host:7077", "k8s://https://api:6443", "local-cluster[2,1,1024]", "localhost", "local[two]"],
)
def test_other_masters_keep_the_default(master: str) -> None:
    assert local_shuffle_partitions(master) is None
