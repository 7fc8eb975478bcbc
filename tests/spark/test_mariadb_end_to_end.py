"""MariaDB rows → the sidecar's MariaDB binlog source → Kafka → the apply job → Delta, end to end on the
stack's services: after each of two rounds of inserts, updates, deletes and primary-key changes (one of
them a multi-row key change in a single rows event) the Delta table equals the MariaDB table."""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from devtools import StackSettings
from spark_jobs.apply_changes import start_query
from spark_jobs.job_config import ApplyJobConfig
from tests.integration.capture_helpers import Record
from tests.integration.mariadb_helpers import MariaEnv

pytestmark = pytest.mark.spark

TIMEOUT_S = 120.0


@pytest.fixture
def env(stack: StackSettings, mariadb: Any, unique_name: str, tmp_path: Path) -> Iterator[MariaEnv]:
    environment = MariaEnv(stack, mariadb, unique_name, tmp_path)
    try:
        yield environment
    finally:
        environment.close()


def _source_rows(env: MariaEnv) -> dict[int, tuple[Any, ...]]:
    return {r[0]: tuple(r[1:]) for r in env.sql(f"SELECT id, name, qty, price FROM `{env.table}`")}


def _delta_rows(spark: Any, path: Path) -> dict[int, tuple[Any, ...]]:
    return {r.id: (r.name, r.qty, r.price) for r in spark.read.format("delta").load(str(path)).collect()}


def _has_key(key: int) -> Any:
    def done(records: list[Record]) -> bool:
        return any(not r.tombstone and r.key_payload == {"id": key} for r in records)
    return done


def _apply(spark: Any, cfg: ApplyJobConfig) -> None:
    query = start_query(spark, cfg)
    query.awaitTermination(600)
    assert query.exception() is None, query.exception()




@pytest.fixture
def pipeline(spark: Any, env: MariaEnv) -> Iterator[Pipeline]:
    env.create_table("id INT PRIMARY KEY, name VARCHAR(40), qty INT NOT NULL, price DECIMAL(10,2)")
    car = env.start_streaming(env.sidecar())
    root = env.workdir / "apply"
    cfg = ApplyJobConfig(bootstrap_servers=env.stack.bootstrap_servers, subscribe=env.topic(),
                         topic_prefix=env.prefix, target_root=str(root / "delta"),
                         checkpoint_location=str(root / "checkpoint"), available_now=True)
    yield Pipeline(spark, env, car, env.reader(), cfg, root / "delta" / env.db / env.table)
    assert car.stop() == 0


class Pipeline:
    """The table, its sidecar, a reader of its topic and the apply job's config; :meth:`round` writes
    transactions, waits for them in Kafka and runs the job once."""

    def __init__(self, spark: Any, env: MariaEnv, car: Any, reader: Any, cfg: ApplyJobConfig, delta: Path) -> None:
        self.spark, self.env, self.car, self.reader, self.cfg, self.delta = spark, env, car, reader, cfg, delta
        self.t = f"`{env.table}`"

    def round(self, transactions: list[list[str]], last_key: int) -> dict[int, tuple[Any, ...]]:
        """Run each transaction, the insert of ``last_key`` last; apply; the MariaDB table's rows (Delta's
        must be equal)."""
        for statements in transactions:
            self.env.sql(*statements)
        self.env.sql(f"INSERT INTO {self.t} VALUES ({last_key}, 'last of the round', 0, NULL)")
        self.reader.wait_for(_has_key(last_key), TIMEOUT_S, f"the row {last_key}", self.car.log_tail)
        _apply(self.spark, self.cfg)
        return _source_rows(self.env)

    def delta_rows(self) -> dict[int, tuple[Any, ...]]:
        return _delta_rows(self.spark, self.delta)


def test_mariadb_inserts_updates_and_deletes_reach_delta(pipeline: Pipeline) -> None:
    t = pipeline.t
    expected = pipeline.round([
        [f"INSERT INTO {t} VALUES (1, 'one', 1, 1.50), (2, 'two', 2, NULL), (3, 'three', 3, 3.25), "
         "(4, 'four', 4, 4.00), (5, 'five', 5, 5.55)"],  # one rows event: five rows at one pos
        [f"UPDATE {t} SET name = 'uno', price = 9.99 WHERE id = 1"],
        [f"UPDATE {t} SET qty = qty + 10 WHERE id IN (2, 3)"],
        [f"DELETE FROM {t} WHERE id = 4"],
        [f"INSERT INTO {t} VALUES (6, 'six', 6, 6.00)", f"UPDATE {t} SET name = 'seis' WHERE id = 6",
         f"DELETE FROM {t} WHERE id = 2"],
    ], 999)
    assert expected == {1: ("uno", 1, Decimal("9.99")), 3: ("three", 13, Decimal("3.25")),
                        5: ("five", 5, Decimal("5.55")), 6: ("seis", 6, Decimal("6.00")),
                        999: ("last of the round", 0, None)}
    assert pipeline.delta_rows() == expected

    # Round 2, applied onto the stored rows: a deleted key comes back, every row changes in one statement
    # (one rows event), a delete and an insert in one transaction.
    expected = pipeline.round([
        [f"INSERT INTO {t} VALUES (4, 'four again', 44, 4.40)"],
        [f"UPDATE {t} SET qty = qty * 2, name = CONCAT(name, '!')"],
        [f"DELETE FROM {t} WHERE id = 5", f"INSERT INTO {t} VALUES (7, NULL, 7, 0.01)"],
    ], 2000)
    assert set(expected) == {1, 3, 4, 6, 7, 999, 2000} and expected[4] == ("four again!", 88, Decimal("4.40"))
    assert pipeline.delta_rows() == expected

    sources = [r.payload["source"] for r in pipeline.reader.records if not r.tombstone]
    assert all(s["connector"] == "mariadb" and re.fullmatch(r"mariadb-bin\.\d{6}", s["file"]) for s in sources)
    assert any(s["row"] == 4 for s in sources)  # the five-row insert's last row


def test_mariadb_primary_key_changes_reach_delta(pipeline: Pipeline) -> None:
    t = pipeline.t
    expected = pipeline.round([
        [f"INSERT INTO {t} VALUES (1, 'one', 1, 1.50), (2, 'two', 2, NULL), (3, 'three', 3, 3.25)"],
        [f"UPDATE {t} SET id = 50 WHERE id = 3"],
        # every key moves in one statement (one rows event; descending so no key collides), then the freed
        # key 1 is reused
        [f"UPDATE {t} SET id = id + 1 ORDER BY id DESC"],
        [f"INSERT INTO {t} VALUES (1, 'new one', 1, 0.01)"],
    ], 999)
    assert set(expected) == {1, 2, 3, 51, 999}
    assert pipeline.delta_rows() == expected
