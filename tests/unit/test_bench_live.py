"""The bench's loaded latency windows (``bench.live.LiveSession.loaded_snapshot``): pure logic, a fake session."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bench.live import LiveSession
from bench.options import SnapshotOptions


class _FakeSession(LiveSession):
    """Snapshots of fixed lengths on a fake clock; live changes committed every 10 ms, read 5 ms later, except
    those committed during the second snapshot (50 ms) and those between snapshots (900 ms)."""

    def __init__(self, seconds: list[float]) -> None:
        super().__init__(SnapshotOptions(warmup_s=0.0), "t", SimpleNamespace())  # type: ignore[arg-type]
        self._seconds = list(seconds)
        self.now_us = 1_000_000
        self.stamper = SimpleNamespace(stamps=[])  # type: ignore[assignment]
        self.calls = 0

    def start_writer(self) -> Any:
        return None

    def stop_writer(self, writer: Any) -> tuple[int, float]:
        return 0, 2000.0

    def _stamp(self, start_us: int, end_us: int, delay_ms: float) -> None:
        assert self.stamper is not None
        for committed in range(start_us, end_us + 1, 10_000):
            self.stamper.stamps.append((committed + int(delay_ms * 1000), committed, committed))
        self.live_rows = len(self.stamper.stamps)

    def snapshot(self, chunk: int, limit: int | None = None, timeout_s: float = 900) -> dict[str, float]:
        self.calls += 1
        gap = self.now_us + 100_000
        self._stamp(self.now_us, gap - 1, 900.0)  # between snapshots: not measured
        start = gap
        seconds = self._seconds.pop(0)
        end = start + int(seconds * 1e6)
        self._stamp(start, end, 50.0 if self.calls == 2 else 5.0)
        self.now_us = end + 1
        rows = 131_072 if self.calls != 2 else 65_536
        return {"rows_per_s": rows / seconds, "seconds": seconds, "start_us": start, "end_us": end}


def test_one_snapshot_when_no_minimum_is_asked() -> None:
    session = _FakeSession([0.8, 0.8])
    result = session.loaded_snapshot(1024, 131_072)
    assert session.calls == 1
    assert result["snapshots"] == 1
    assert result["rows_per_s"] == 131_072 / 0.8
    assert result["live_p99_ms"] == 5.0
    assert result["live_measured"] == 81  # every 10 ms over 0.8 s, both ends included


def test_snapshots_repeat_until_they_lasted_the_minimum_and_only_their_windows_count() -> None:
    session = _FakeSession([0.8, 0.7, 0.6, 5.0])
    result = session.loaded_snapshot(1024, 131_072, min_loaded_s=2.0)
    assert session.calls == 3  # 0.8 + 0.7 < 2.0 <= 0.8 + 0.7 + 0.6
    assert result["snapshots"] == 3
    assert result["seconds"] == 0.8 + 0.7 + 0.6
    assert abs(result["rows_per_s"] - (131_072 + 65_536 + 131_072) / 2.1) < 1e-6
    assert result["live_measured"] == 81 + 71 + 61  # the 900 ms changes between snapshots are left out
    assert result["live_p50_ms"] == 5.0
    assert result["live_p99_ms"] == 50.0  # the second snapshot's 71 of 213 changes are in the top 1 %
    assert result["live_missing"] == 0
