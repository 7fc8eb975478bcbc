"""Fuzz tier: hostile signals through every channel into one running sidecar (real PostgreSQL and Kafka).

One sidecar runs with all four channels (signal table, Kafka topic, file, HTTP). Hypothesis draws
batches of hostile payloads (see ``hostile.py``) and sends each batch through one channel, followed by
a well-formed ``log`` signal, the sentinel. Because a channel is read in order, once the sentinel is
answered every payload before it has been answered too. After each batch the test asserts:

* the sidecar is alive (no signal stopped it) and the sentinel was answered within seconds (none froze it);
* every payload got exactly one answer (accepted or rejected) on the signal-table, Kafka and file
  channels, and HTTP answered every body with 2xx or 4xx, never 5xx;

and at the end, that the stream still flows (a row inserted afterwards reaches Kafka), that the Kafka and
file channel positions are stored, and that after a restart no payload is read again.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.hostile import channel_payload, signal_row
from tests.integration.capture_helpers import CaptureEnv, Sidecar, wait_until
from tests.integration.snapshot_helpers import Api, create_signal_table, snapshot_config, start, stored_offsets
from tests.kafka_helpers import create_topic, produce

pytestmark = [pytest.mark.fuzz, pytest.mark.integration]

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
"""Batches per run (each one to 1-4 payloads); ``FUZZ_EXAMPLES`` raises it for long runs."""
ANSWER_TIMEOUT_S = 20.0
HTTP_MAX_BYTES = 1 << 20
ANSWER = re.compile(r"^signal (?P<id>.*) from (?P<channel>source|kafka|file|http) (?P<verdict>accepted|rejected)",
                    re.DOTALL)
CHANNELS = tuple(os.environ.get("FUZZ_CHANNELS", "source,kafka,file,http").split(","))
"""Channels to fuzz (all by default; ``FUZZ_CHANNELS=kafka,file`` narrows a run while debugging)."""


class Answers:
    """Counts the sidecar's answers per channel from its JSON log (``signal <id> from <channel> accepted``
    at INFO, ``... rejected: <reason>`` at WARNING), reading only what was appended since last time."""

    def __init__(self, car: Sidecar) -> None:
        self.car = car
        self._offset = 0
        self._partial = b""
        self.counts: Counter[str] = Counter()
        self.ids: dict[str, list[str]] = {channel: [] for channel in CHANNELS}
        self.records: list[dict[str, Any]] = []

    def refresh(self) -> None:
        import json

        with self.car.log_path.open("rb") as log:
            log.seek(self._offset)
            chunk = log.read()
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if not isinstance(record, dict):
                    continue
                self.records.append(record)
                match = ANSWER.match(str(record.get("msg", "")))
                if match:
                    self.counts[match["channel"]] += 1
                    self.ids[match["channel"]].append(match["id"])

    def wait_for(self, channel: str, signal_id: str) -> None:
        def answered() -> bool:
            if not self.car.alive():
                raise AssertionError(f"the sidecar exited ({self.car.returncode})\n{self.car.log_tail()}")
            self.refresh()
            return signal_id in self.ids[channel]

        wait_until(answered, ANSWER_TIMEOUT_S, f"an answer to sentinel {signal_id} on the {channel} channel",
                   interval_s=0.05, describe=self.car.log_tail)


class Senders:
    """Puts payloads on each channel of one sidecar."""

    def __init__(self, capture: CaptureEnv, api: Api, signal_table: str, topic: str, path: Path,
                 prefix: str) -> None:
        self.capture, self.api, self.signal_table, self.topic, self.path = capture, api, signal_table, topic, path
        self.prefix = prefix.encode()
        self.http_statuses: Counter[int] = Counter()

    def kafka(self, payloads: list[bytes]) -> None:
        produce(self.capture.stack.bootstrap_servers, self.topic, [(self.prefix, p) for p in payloads])

    def file(self, payloads: list[bytes]) -> None:
        with self.path.open("ab") as out:
            for payload in payloads:
                out.write(payload.replace(b"\n", b" ").replace(b"\r", b" ") + b"\n")

    def source(self, rows: list[tuple[str, str, str | None]]) -> None:
        for row in rows:
            self.capture.sql(f"INSERT INTO {self.signal_table} (id, type, data) VALUES (%s, %s, %s)", row)

    def http(self, payloads: list[bytes]) -> None:
        for payload in payloads:
            response = self.api.client.post("/signals", content=payload,
                                            headers={"Content-Type": "application/json"})
            self.http_statuses[response.status_code] += 1
            assert 200 <= response.status_code < 500, (response.status_code, response.text[:300])
            assert response.headers.get("content-type", "").startswith("application/json"), response.headers
            assert isinstance(response.json(), dict)


def sentinel(signal_id: str) -> bytes:
    return b'{"id": "%s", "type": "log", "data": {"message": "sentinel"}}' % signal_id.encode()


def test_hostile_signals_on_every_channel_never_stop_freeze_or_replay(capture: CaptureEnv, tmp_path: Path) -> None:
    data_table = capture.create_table("id int PRIMARY KEY, name text, note text")
    capture.sql(f"INSERT INTO {data_table} SELECT n, 'a' || n, 'b' || n FROM generate_series(1, 30) n")
    signal_table = create_signal_table(capture, f"{capture.table}_sig")
    capture.sql(f"ALTER TABLE {signal_table} ALTER COLUMN data TYPE text, ALTER COLUMN id TYPE text")
    topic = f"{capture.prefix}-signals"
    create_topic(capture.stack.bootstrap_servers, topic)
    signal_file = tmp_path / "signals.txt"
    signal_file.touch()
    config = snapshot_config(capture, [data_table], signal_table=signal_table, chunk_size=7, extra={
        "signal.enabled.channels": "source,kafka,file",
        "signal.kafka.topic": topic,
        "signal.file": str(signal_file),
        "offset.flush.interval.ms": "200",
    })
    car = capture.sidecar(config)
    api = start(car)
    answers = Answers(car)
    senders = Senders(capture, api, signal_table, topic, signal_file, capture.prefix)
    pattern = f"public\\.{data_table}"
    sent: Counter[str] = Counter()
    serial = iter(range(10**9))

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def one_batch(data: st.DataObject) -> None:
        channel = data.draw(st.sampled_from(CHANNELS), label="channel")
        count = data.draw(st.integers(1, 4), label="count")
        ids = [f"fz-{next(serial)}" for _ in range(count)]
        mark = f"fz-sentinel-{next(serial)}"
        if channel == "source":
            rows = [data.draw(signal_row(pattern, signal_id)) for signal_id in ids]
            senders.source([*rows, (mark, "log", '{"message": "sentinel"}')])
        else:
            limit = HTTP_MAX_BYTES if channel == "http" else 600_000
            payloads = [data.draw(channel_payload(pattern, signal_id, limit)) for signal_id in ids]
            getattr(senders, channel)([*payloads, sentinel(mark)])
        sent[channel] += count + 1
        if channel == "http":
            return  # HTTP answers in the response; the senders checked every status
        answers.wait_for(channel, mark)
        assert answers.counts[channel] == sent[channel], (
            f"{channel}: {sent[channel]} signals sent, {answers.counts[channel]} answered\n{car.log_tail()}")

    one_batch()

    # The stream still flows, and the sidecar still answers every channel.
    reader = capture.reader(capture.topic(data_table))
    capture.sql(f"INSERT INTO {data_table} VALUES (1000001, 'after', 'fuzz')")
    reader.wait_for(lambda records: any(not r.tombstone and (r.payload.get("after") or {}).get("id") == 1000001
                                        for r in records), 30, "a row inserted after the fuzz run")
    assert senders.http_statuses[500] == 0
    errors = [r for r in answers.records if str(r.get("level", "")).lower() in ("error", "critical")]
    assert not errors, f"errors were logged: {errors[:3]}"
    # Every rejection was an ordinary one: no signal reached the guard that catches unexpected exceptions.
    unexpected = [r for r in answers.records if "exc" in r]
    assert not unexpected, f"{len(unexpected)} signal(s) raised unexpectedly, first: {unexpected[0]}"

    # Positions are stored: the Kafka offset of the last record and the file's end.
    last_offset = sent["kafka"] - 1

    def positions() -> dict[str, Any] | None:
        stored = stored_offsets(capture).get("snapshot") or {}
        found = stored.get("channel_positions") or {}
        kafka_ok = sent["kafka"] == 0 or found.get("kafka") == last_offset
        file_ok = sent["file"] == 0 or (found.get("file") or [0, 0])[1] == signal_file.stat().st_size
        return found if kafka_ok and file_ok else None

    wait_until(positions, 20, "the Kafka and file channel positions to be stored",
               describe=lambda: f"{stored_offsets(capture)}\n{car.log_tail()}")

    # After a restart nothing is read again: only the new sentinels are answered.
    assert car.stop() == 0, car.log_tail()
    before = dict(answers.counts)
    start(car)
    for channel in ("source", "kafka", "file"):
        mark = f"fz-restart-{channel}"
        if channel == "source":
            senders.source([(mark, "log", '{"message": "sentinel"}')])
        else:
            getattr(senders, channel)([sentinel(mark)])
        answers.wait_for(channel, mark)
    replayed = {channel: answers.counts[channel] - before.get(channel, 0) - 1
                for channel in ("source", "kafka", "file")}
    assert replayed == {"source": 0, "kafka": 0, "file": 0}, f"signals read again after a restart: {replayed}"
    print(f"fuzz: {sum(sent.values())} signals sent ({dict(sent)}), HTTP statuses {dict(senders.http_statuses)}, "
          f"crashes 0")
