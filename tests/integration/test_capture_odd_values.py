"""Issue 10, findings 5 and 12, against the real PostgreSQL and Kafka.

* Values the configured mode cannot express (numeric NaN/±Infinity with decimal.handling.mode=precise, a
  2-D array in an int[] column) do not stop capture: the field is null (NOT NULL: zero), a warning names
  table, column and kind, ``signaller_values_unrepresentable_total`` counts them, later rows still arrive.
  Date ±infinity uses Debezium's sentinels.
* A record bigger than the producer's limit: with ``event.processing.failure.handling.mode=fail`` the
  sidecar exits non-zero naming table, size, limit and setting, and again after a restart; with ``skip``
  it is left out (log, notification, metric), later rows arrive, and a restart does not retry it.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.integration.capture_helpers import CaptureEnv, Record, closed_port, wait_until

pytestmark = pytest.mark.integration


def _metrics(port: str) -> str:
    return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text


def _metric(text: str, name: str, **labels: str) -> float:
    """The sample of ``name`` with exactly ``labels`` (in any order), 0 if absent."""
    for match in re.finditer(rf"^{name}\{{(.*)\}} (\S+)$", text, re.M):
        if dict(re.findall(r'(\w+)="([^"]*)"', match.group(1))) == labels:
            return float(match.group(2))
    return 0.0


def _by_id(records: list[Record]) -> dict[int, dict[str, Any]]:
    return {r.payload["after"]["id"]: r.payload["after"] for r in records if r.value is not None and r.op == "c"}


def test_values_the_mode_cannot_express_become_null_and_capture_goes_on(capture: CaptureEnv) -> None:
    capture.create_table("id int PRIMARY KEY, amount numeric, price numeric(8,2) NOT NULL, grid int[], "
                         "born date")
    port = str(closed_port())
    car = capture.start_streaming(capture.sidecar(capture.connector_config(extra={"signaller.http.port": port})))
    reader = capture.reader()
    capture.sql("INSERT INTO " + capture.table + " VALUES "
                "(1, 'NaN', 'NaN', '{{1,2},{3,4}}', 'infinity'),"
                "(2, 'Infinity', 'NaN', '{1,2}', '-infinity'),"  # numeric(p,s) holds NaN, not infinities
                "(3, '-Infinity', 'NaN', '[0:1][0:0]={{5},{6}}', '2024-01-02')")
    capture.sql(f"INSERT INTO {capture.table} VALUES (4, 1.5, 2.25, '{{7}}', '1970-01-02')")
    rows = _by_id(reader.wait_for(lambda rs: len(_by_id(rs)) >= 4, 60, "4 inserts", describe=car.log_tail))

    assert car.alive(), car.log_tail()
    zero = "AA=="  # Decimal 0.00, scale 2: NOT NULL column, no default -> the type's zero
    assert [rows[i]["amount"] for i in (1, 2, 3)] == [None, None, None]
    assert [rows[i]["price"] for i in (1, 2, 3)] == [zero, zero, zero]
    assert [rows[i]["grid"] for i in (1, 2, 3)] == [None, [1, 2], None]
    assert [rows[i]["born"] for i in (1, 2, 3)] == [2146033979, -2147472691, 19724]  # Debezium 3.7 streamed
    assert rows[4] == {"id": 4, "amount": {"scale": 1, "value": "Dw=="}, "price": "AOE=", "grid": [7], "born": 1}

    table = f"public.{capture.table}"
    expected = {("amount", "nan"): 1, ("amount", "infinity"): 2, ("price", "nan"): 3,
                ("grid", "multidimensional_array"): 2}

    def counted() -> bool:
        text = _metrics(port)
        return all(_metric(text, "signaller_values_unrepresentable_total", table=table, column=column, kind=kind)
                   == count for (column, kind), count in expected.items())

    wait_until(counted, 20, "signaller_values_unrepresentable_total to count every value",
               describe=lambda: _metrics(port))
    warnings = [r["msg"] for r in car.log_records() if r.get("level") == "warning"
                and r.get("logger") == "signaller.values"]
    assert any("'amount'" in w and "NaN" in w and "precise" in w for w in warnings), warnings
    assert any("'grid'" in w and "multi-dimensional" in w for w in warnings), warnings
    # rate-limited: one warning per (table, column, kind), however many values
    assert len(warnings) == len(expected), warnings


def _oversize_config(capture: CaptureEnv, mode: str, port: str) -> dict[str, Any]:
    return capture.connector_config(extra={
        "event.processing.failure.handling.mode": mode,
        "producer.override.message.max.bytes": "20000",
        "notification.enabled.channels": "sink",
        "notification.sink.topic.name": f"{capture.prefix}-notifications",
        "signaller.http.port": port,
    })


def test_oversized_record_with_fail_stops_with_a_clear_message_every_time(capture: CaptureEnv) -> None:
    capture.create_table("id int PRIMARY KEY, body text")
    car = capture.start_streaming(capture.sidecar(_oversize_config(capture, "fail", str(closed_port()))))
    capture.sql(f"INSERT INTO {capture.table} VALUES (7, repeat('x', 50000))")

    for run in (1, 2):
        assert car.wait_exit(60) != 0
        log = car.log_text().split(f"--- run {run} ---")[-1]
        assert re.search(rf"stopping on error: .*too large.*table public\.{capture.table}, key .*7.*"
                         r"\d+ bytes > limit 20000 \(producer\.override\.message\.max\.bytes\).*"
                         r"event\.processing\.failure\.handling\.mode=warn or skip", log), log
        if run == 1:
            car.start()  # a restart replays the change and fails again with the same message, not silently


def test_oversized_record_with_skip_is_left_out_reported_and_not_retried(capture: CaptureEnv) -> None:
    capture.create_table("id int PRIMARY KEY, body text")
    port = str(closed_port())
    car = capture.start_streaming(capture.sidecar(_oversize_config(capture, "skip", port)))
    reader = capture.reader()
    notifications = capture.reader(f"{capture.prefix}-notifications")
    capture.sql(f"INSERT INTO {capture.table} VALUES (1, 'small')")
    capture.sql(f"INSERT INTO {capture.table} VALUES (2, repeat('x', 50000))")
    capture.sql(f"INSERT INTO {capture.table} VALUES (3, 'after')")
    rows = _by_id(reader.wait_for(lambda rs: 3 in _by_id(rs), 60, "the row after the big one",
                                  describe=car.log_tail))
    assert sorted(rows) == [1, 3] and car.alive()

    def skipped(records: list[Record]) -> list[Record]:
        return [r for r in records if r.payload.get("type") == "RECORD_SKIPPED"]

    [note] = skipped(notifications.wait_for(lambda rs: bool(skipped(rs)), 30, "a RECORD_SKIPPED notification"))
    data = note.payload["additional_data"]
    assert note.payload["aggregate_type"] == "Event Processing"
    assert data["data_collection"] == f"public.{capture.table}"
    assert data["topic"] == capture.topic() and '"id":2' in data["key"] and int(data["size"]) > 50000
    assert data["limit"] == "20000" and data["lsn"]
    wait_until(lambda: _metric(_metrics(port), "signaller_records_skipped_total", topic=capture.topic(),
                               reason="too_large") == 1.0, 20, "signaller_records_skipped_total to be 1")
    assert any("left out a record too large" in r.get("msg", "") and data["lsn"] in r["msg"]
               for r in car.log_records()), car.log_tail()

    # After a restart the skipped change is not retried: no second notification, only new rows.
    assert car.stop() == 0
    car.start()
    capture.wait_slot_active(car)
    capture.sql(f"INSERT INTO {capture.table} VALUES (4, 'later')")
    reader.wait_for(lambda rs: 4 in _by_id(rs), 60, "the row inserted after the restart", describe=car.log_tail)
    notifications.read_available(2.0)
    assert len(skipped(notifications.records)) == 1, car.log_tail()
    assert sum(1 for r in car.log_records() if "left out a record too large" in r.get("msg", "")) == 1
