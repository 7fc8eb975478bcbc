"""Faults the sidecar must ride out: Kafka unreachable, and the replication slot held by someone else.
In both it keeps running, says clearly what is wrong, and retries with backoff."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import psycopg2.extras
import pytest

from tests.integration.capture_helpers import CaptureEnv, Sidecar, closed_port, wait_until

pytestmark = pytest.mark.integration


def _ts(record: dict[str, Any]) -> float:
    return datetime.fromisoformat(record["ts"].replace("Z", "+00:00")).timestamp()


def _matching(car: Sidecar, level: str, *needles: str) -> list[dict[str, Any]]:
    return [r for r in car.log_records()
            if r.get("level") == level and all(needle in r.get("msg", "") for needle in needles)]


def _session_starts(car: Sidecar) -> list[dict[str, Any]]:
    return [r for r in car.log_records() if r.get("logger") == "signaller.capture" and "capturing" in r["msg"]]


def test_kafka_unreachable_keeps_running_warns_and_retries_with_backoff(capture: CaptureEnv) -> None:
    t = capture.table
    port = closed_port()
    address = f"127.0.0.1:{port}"
    capture.create_table("id integer PRIMARY KEY, note text")
    car = capture.start_streaming(capture.sidecar(capture.connector_config(kafka_bootstrap_servers=address)))
    # Before any change: a warning that names the unreachable broker.
    wait_until(lambda: _matching(car, "warning", address), 15, f"a warning naming {address}",
               describe=car.log_tail)
    capture.sql(f"INSERT INTO {t} VALUES (1, 'cannot be published yet')")
    # Publishing fails: the session ends with a retry warning naming Kafka and the broker, not an exit.
    retries = wait_until(lambda: _matching(car, "warning", "retrying in", "Kafka", address), 40,
                         "a retry warning about Kafka", describe=car.log_tail)
    assert car.alive(), f"the sidecar exited ({car.returncode}) instead of retrying\n{car.log_tail()}"
    # The next session starts only after the backoff: no tight crash loop.
    starts = wait_until(lambda: s if len(s := _session_starts(car)) >= 2 else None, 15,
                        "the session to be retried", describe=car.log_tail)
    assert _ts(starts[1]) - _ts(retries[0]) >= 0.9
    assert len(_session_starts(car)) <= 3
    assert car.alive()
    # Nothing was acknowledged, so no stream position was stored. (The snapshot state of the
    # initial snapshot that snapshot.mode=initial queues may be stored, at the start position.)
    if capture.offsets_file.exists():
        assert json.loads(capture.offsets_file.read_text())["lsn"] == 0
    assert car.stop(30) == 0, car.log_tail()


def test_slot_held_by_another_connection_is_reported_in_use_and_retried(capture: CaptureEnv) -> None:
    t = capture.table
    capture.create_table("id integer PRIMARY KEY, note text")
    capture.sql(f"CREATE PUBLICATION {capture.publication} FOR TABLE {t}")
    capture.sql("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (capture.slot,))
    holder = capture.extra_connection(connection_factory=psycopg2.extras.LogicalReplicationConnection)
    holder.cursor().start_replication(slot_name=capture.slot, decode=False,
                                      options={"proto_version": "1", "publication_names": capture.publication})
    holder_pid = wait_until(lambda: capture.slot_active_pid(capture.slot), 10, "the holder to take the slot")

    car = capture.sidecar().start()
    in_use = wait_until(lambda: m if len(m := _matching(car, "warning", "in use", capture.slot)) >= 2 else None,
                        20, "two 'in use' warnings", describe=car.log_tail)
    assert all("retrying" in r["msg"] and str(holder_pid) in r["msg"] for r in in_use), in_use
    assert _ts(in_use[1]) - _ts(in_use[0]) >= 0.9, "retries must back off"
    assert car.alive(), car.log_tail()
    assert capture.slot_active_pid(capture.slot) == holder_pid

    holder.close()
    wait_until(lambda: capture.slot_active_pid(capture.slot) not in (None, holder_pid), 30,
               "the sidecar to take the slot once it is free", describe=car.log_tail)
    capture.sql(f"INSERT INTO {t} VALUES (1, 'after the slot was freed')")
    records = capture.reader().wait_for_count(1, 30, describe=car.log_tail)
    assert records[0].payload["after"] == {"id": 1, "note": "after the slot was freed"}
    assert car.stop() == 0, car.log_tail()
