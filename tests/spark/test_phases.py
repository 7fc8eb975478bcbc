"""The per-phase clock of a batch: wall time and the Spark jobs each phase ran (by job tag)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from spark_jobs.phases import PhaseClock

pytestmark = pytest.mark.spark


def test_phases_count_their_own_jobs_and_time(spark: Any) -> None:
    clock = PhaseClock(spark, 7)
    with clock.phase("one"):
        spark.range(10).count()
    with clock.phase("two"):
        spark.range(10).count()
        spark.range(10).count()
        with clock.phase("nested"):  # charged to the outer phase
            time.sleep(0.01)
    with clock.phase("one"):
        pass
    clock.finish()
    time.sleep(0.5)  # the status tracker is fed asynchronously
    work = clock.spark_work()
    assert list(clock.ms) == ["one", "two"]
    assert work["one"]["jobs"] == 1 and work["two"]["jobs"] == 2
    assert all(w["stages"] >= w["jobs"] and w["tasks"] >= w["stages"] for w in work.values())
    breakdown = clock.breakdown()
    assert breakdown["two"] >= 10
    assert breakdown["total"] >= breakdown["one"] + breakdown["two"]
    assert "signaller-apply" not in ",".join(spark.sparkContext.getJobTags())
