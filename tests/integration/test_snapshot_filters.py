"""Snapshot filters reach PostgreSQL exactly as written (issue 10, findings 3 and 9), end to end.

One sidecar on the real PostgreSQL and Kafka runs incremental snapshots with ``%`` in LIKE patterns and
as the modulo operator, with ``now() - interval '1 day'``, on a table and a column whose names hold a
``%`` (watermarks go to a signal table whose name holds one too), and a blocking snapshot with a ``%``
filter. Each snapshot must emit exactly the READ rows its filter selects (the rows are made here, so the
expected keys are computed independently of PostgreSQL), and the sidecar must keep streaming afterwards.
Before the fix these snapshots ended ``SQL_EXCEPTION`` with no rows, and the blocking one stopped the
sidecar.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from devtools.env import sidecar_env
from tests.integration.capture_helpers import SIGNALLER, CaptureEnv, Record, Sidecar, TopicReader
from tests.integration.snapshot_helpers import Api, Notifications, reads, snapshot_config, start

pytestmark = pytest.mark.integration

ROWS = 60
NAMES = ("a", "b", "ab", "ba", "c")


def _name(i: int) -> str:
    return f"{NAMES[i % 5]}{i}"


def _days_old(i: int) -> int:
    return (i % 3) * 2  # 0 (an hour old), 2 or 4 days old


class Run:
    """The sidecar, its API, its notifications, and a count of what was read so far per topic."""

    def __init__(self, capture: CaptureEnv, car: Sidecar, api: Api) -> None:
        self.capture, self.car, self.api = capture, car, api
        self.notes = Notifications(capture)
        self.seen: dict[str, int] = {}

    def snapshot(self, signal_id: str, table: str, topic: TopicReader, filter_text: str, key: str,
                 expected: set[int], blocking: bool = False, cli: bool = False) -> None:
        """Run one filtered snapshot of ``table`` and assert its READs carry exactly the keys ``expected``;
        with ``cli``, the signal goes through ``signaller signal execute --channel source`` (an INSERT into
        the signal table) instead of ``POST /signals``."""
        topic.read_available(0.5)  # the topic need not exist yet; earlier snapshots were read whole
        before = len(topic.records)
        pattern = table.replace(".", "\\.")
        data: dict[str, Any] = {"data-collections": [pattern],
                                "additional-conditions": [{"data-collection": pattern, "filter": filter_text}]}
        if blocking:
            data["type"] = "blocking"
        if cli:
            sent = subprocess.run(
                [str(SIGNALLER), "signal", "execute", pattern, "--filter", f"{pattern}={filter_text}", "--id",
                 signal_id, "--channel", "source", "--config", str(self.car.config_path)],
                capture_output=True, text=True, timeout=60, check=False, env=sidecar_env())
            assert sent.returncode == 0, (sent.stdout, sent.stderr)
        else:
            self.api.accepted("execute-snapshot", data, signal_id)
        if blocking:
            scan = self.notes.wait_for("TABLE_SCAN_COMPLETED", 60, self.car.log_tail, aggregate="Initial Snapshot",
                                       scanned_collection=table)
        else:
            scan = self.notes.wait(lambda n: n["type"] == "TABLE_SCAN_COMPLETED" and n["id"] == signal_id, 60,
                                   f"the scan of {signal_id}", self.car.log_tail)
        assert scan["additional_data"]["status"] == "SUCCEEDED", (filter_text, scan, self.car.log_tail())
        assert scan["additional_data"]["total_rows_scanned"] == str(len(expected)), (filter_text, scan)
        topic.wait_for(lambda records: len(reads(records[before:])) >= len(expected), 60,
                       f"{len(expected)} READs for {filter_text!r}", self.car.log_tail)
        topic.read_available(1.0)  # anything more would be an extra row
        got = [record.key_payload[key] for record in reads(topic.records[before:])]
        assert sorted(got) == sorted(expected), (filter_text, sorted(got), sorted(expected))
        assert self.car.alive(), self.car.log_tail()

    def assert_streams(self, statement: str, topic: TopicReader, key: str, value: int) -> None:
        """After the snapshots, a new row still arrives as a create event."""
        self.capture.sql(statement)

        def arrived(records: list[Record]) -> bool:
            return any(not r.tombstone and r.op == "c" and r.key_payload[key] == value for r in records)

        topic.wait_for(arrived, 60, f"the insert of {key}={value} after the snapshots", self.car.log_tail)
        assert self.car.alive(), self.car.log_tail()


def test_filters_with_percent_now_and_odd_names_select_exactly_their_rows(capture: CaptureEnv) -> None:
    plain = f"{capture.table}_f"
    capture.create_table("id integer PRIMARY KEY, name text NOT NULL, note text, created_at timestamptz NOT NULL",
                         plain)
    capture.sql(f"INSERT INTO {plain} SELECT i, (ARRAY{list(NAMES)})[i % 5 + 1] || i, "
                "CASE WHEN i % 4 = 0 THEN 'x%b' ELSE 'plain' END, "
                f"now() - interval '1 hour' - (i % 3) * interval '2 days' FROM generate_series(1, {ROWS}) AS i")
    odd = f"{capture.table}_p%ct"  # a table name with '%', its topic name sanitized to '_'
    capture.create_table('"k%" integer PRIMARY KEY, "v%" text NOT NULL', f'"{odd}"')
    capture.sql(f"INSERT INTO \"{odd}\" SELECT i, 'v' || i FROM generate_series(1, {ROWS}) AS i")
    signal = f"{capture.table}_sig%nal"  # the watermark INSERTs carry this name
    capture.create_table("id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048)", f'"{signal}"')

    car = capture.sidecar(snapshot_config(capture, [plain, odd], signal_table=signal, chunk_size=7))
    run = Run(capture, car, start(car))
    plain_topic = capture.reader(capture.topic(plain))
    odd_topic = capture.reader(capture.topic(odd.replace("%", "_")))
    ids = range(1, ROWS + 1)
    table = f"public.{plain}"

    run.snapshot("like", table, plain_topic, "name LIKE 'a%'", "id", {i for i in ids if _name(i).startswith("a")})
    run.snapshot("modulo", table, plain_topic, "id % 2 = 1", "id", {i for i in ids if i % 2 == 1})
    run.snapshot("recent", table, plain_topic, "created_at > now() - interval '1 day'", "id",
                 {i for i in ids if _days_old(i) == 0})
    run.snapshot("ilike", table, plain_topic, "note ILIKE '%B%' AND id % 3 <> 0", "id",
                 {i for i in ids if i % 4 == 0 and i % 3 != 0}, cli=True)
    run.snapshot("odd-names", f"public.{odd}", odd_topic, "\"k%\" % 5 = 0 AND \"v%\" LIKE 'v%0'", "k%",
                 {i for i in ids if i % 10 == 0})
    run.snapshot("blocking", table, plain_topic, "name LIKE '%b%' AND id % 2 = 0", "id",
                 {i for i in ids if "b" in _name(i) and i % 2 == 0}, blocking=True)

    run.assert_streams(f"INSERT INTO {plain} VALUES (1000, 'late', NULL, now())", plain_topic, "id", 1000)
    run.assert_streams(f"INSERT INTO \"{odd}\" VALUES (1000, 'late')", odd_topic, "k%", 1000)
    watermarks = capture.sql(f"SELECT count(*) FROM \"{signal}\" WHERE type LIKE 'snapshot-window-%'")[0][0]
    assert watermarks >= 2 * 5, "the incremental snapshots wrote their windows into the '%' signal table"
