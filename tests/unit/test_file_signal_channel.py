"""signaller.signals.channels.file: complete lines only, positions, append, rotation, truncation, restart."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from signaller.errors import SignalError
from signaller.signals.channels import SignalRecordError
from signaller.signals.channels.file import MAX_BYTES_PER_READ, MAX_LINE_BYTES, FileSignalChannel
from signaller.signals.model import Signal

pytestmark = pytest.mark.unit


def line(signal_id: str, type_: str = "log", data: Any = None) -> bytes:
    payload = {"id": signal_id, "type": type_, "data": {"message": signal_id} if data is None else data}
    return json.dumps(payload).encode() + b"\n"


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def ids(entries: list[Signal | SignalError]) -> list[str]:
    return [entry.id if isinstance(entry, Signal) else f"error:{entry.reason[:40]}" for entry in entries]


def test_missing_file_reads_nothing(tmp_path: Path) -> None:
    channel = FileSignalChannel(tmp_path / "absent.txt", None)
    assert channel.read() == []
    assert channel.position is None
    channel.close()


def test_reads_lines_in_order_with_positions(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    first, second = line("f-1", "execute-snapshot", {"data-collections": ["public.orders"]}), line("f-2")
    path.write_bytes(first + second)
    inode = path.stat().st_ino
    channel = FileSignalChannel(path, None)
    entries = channel.read()
    assert entries == [
        Signal("f-1", "execute-snapshot", {"data-collections": ["public.orders"]}, "file", (inode, len(first))),
        Signal("f-2", "log", {"message": "f-2"}, "file", (inode, len(first) + len(second))),
    ]
    assert channel.position == (inode, len(first) + len(second))
    assert channel.read() == []
    assert path.read_bytes() == first + second, "the file is never modified"


def test_partial_last_line_waits_until_complete(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    full = line("p-1")
    path.write_bytes(line("p-0") + full[:10])
    channel = FileSignalChannel(path, None)
    assert ids(channel.read()) == ["p-0"]
    assert channel.read() == []
    append(path, full[10:-1])
    assert channel.read() == [], "still no newline"
    append(path, b"\n")
    entries = channel.read()
    assert ids(entries) == ["p-1"]
    assert entries[0].position == (path.stat().st_ino, path.stat().st_size)  # type: ignore[union-attr]


def test_appends_are_read_once(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    channel = FileSignalChannel(path, None)
    seen: list[str] = []
    for batch in range(5):
        append(path, b"".join(line(f"a-{batch}-{n}") for n in range(3)))
        seen += ids(channel.read())
    assert seen == [f"a-{batch}-{n}" for batch in range(5) for n in range(3)]


def test_blank_lines_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    path.write_bytes(b"\n   \n" + line("c-1").replace(b"\n", b"\r\n") + b"\r\n\t\n" + line("c-2"))
    channel = FileSignalChannel(path, None)
    entries = channel.read()
    assert ids(entries) == ["c-1", "c-2"]
    assert entries[-1].position == (path.stat().st_ino, path.stat().st_size)  # type: ignore[union-attr]


def test_bad_lines_become_errors_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    good, bad, no_data = line("g-1"), b'{"id": "b-1", "type": "log"\n', b'{"id": "b-2", "type": "log"}\n'
    path.write_bytes(good + bad + b"\xff\xfe\n" + no_data + line("g-2"))
    inode = path.stat().st_ino
    entries = FileSignalChannel(path, None).read()
    assert [type(entry).__name__ for entry in entries] == [
        "Signal", "SignalRecordError", "SignalRecordError", "SignalRecordError", "Signal"]
    errors = [entry for entry in entries if isinstance(entry, SignalRecordError)]
    assert errors[0].position == (inode, len(good + bad))
    assert errors[0].reason.startswith(f"signal file {path} line ending at byte {len(good + bad)}: value: not valid "
                                       "JSON")
    assert "not UTF-8 text" in errors[1].reason
    assert errors[2].signal_id == "b-2" and errors[2].reason.endswith(
        "data: missing; accepted: a JSON object ({} if the signal needs no data)")
    assert ids(entries)[-1] == "g-2"


def test_restart_resumes_exactly_after_the_stored_position(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    path.write_bytes(b"".join(line(f"r-{n}") for n in range(4)))
    entries = FileSignalChannel(path, None).read()
    applied = entries[1]  # the caller applied r-0 and r-1, then crashed
    assert isinstance(applied, Signal)
    append(path, line("r-4"))
    resumed = FileSignalChannel(path, applied.position)
    assert ids(resumed.read()) == ["r-2", "r-3", "r-4"]
    last = FileSignalChannel(path, resumed.position)
    assert last.read() == []


def test_replaced_file_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    path.write_bytes(line("old-1") + line("old-2"))
    channel = FileSignalChannel(path, None)
    assert ids(channel.read()) == ["old-1", "old-2"]
    old_inode = path.stat().st_ino
    keep = tmp_path / "signals.txt.1"
    os.rename(path, keep)  # rotation: the old inode stays alive under another name
    assert channel.read() == []
    new = tmp_path / "signals.new"
    new.write_bytes(line("new-1"))
    os.replace(new, path)
    assert path.stat().st_ino != old_inode
    entries = channel.read()
    assert ids(entries) == ["new-1"]
    assert entries[0].position == (path.stat().st_ino, len(line("new-1")))  # type: ignore[union-attr]


def test_stored_position_of_another_inode_starts_at_zero(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    path.write_bytes(line("x-1") + line("x-2"))
    inode = path.stat().st_ino
    assert ids(FileSignalChannel(path, (inode + 1, 5)).read()) == ["x-1", "x-2"]


def test_truncated_file_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    path.write_bytes(line("t-1") + line("t-2"))
    channel = FileSignalChannel(path, None)
    assert ids(channel.read()) == ["t-1", "t-2"]
    inode = path.stat().st_ino
    with path.open("r+b") as handle:  # same inode, shorter content
        handle.truncate(0)
        handle.write(line("t-3"))
    assert path.stat().st_ino == inode
    assert ids(channel.read()) == ["t-3"]


def test_rewritten_in_place_is_detected_when_the_stored_offset_is_mid_line(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    path.write_bytes(line("w-1"))
    channel = FileSignalChannel(path, None)
    assert ids(channel.read()) == ["w-1"]
    with path.open("r+b") as handle:  # rewritten, longer than before, no newline where the old line ended
        handle.truncate(0)
        handle.write(line("rewritten-long-id-1") + line("w-2"))
    assert ids(channel.read()) == ["rewritten-long-id-1", "w-2"]


def test_unreadable_path_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    channel = FileSignalChannel(directory, None)
    assert channel.read() == []
    assert channel.read() == []
    assert sum("cannot read it" in record.getMessage() for record in caplog.records) == 1


def test_large_batch(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    path.write_bytes(b"".join(line(f"n-{n}") for n in range(2000)))
    channel = FileSignalChannel(path, None)
    assert ids(channel.read()) == [f"n-{n}" for n in range(2000)]


def test_over_long_line_is_skipped_answered_with_its_offset_and_later_lines_are_read(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    before = line("l-0")
    huge = b'{"id": "huge", "type": "log", "data": {"message": "' + b"x" * (5 * 1024 * 1024) + b'"}}\n'
    path.write_bytes(before + huge + line("l-1"))
    inode = path.stat().st_ino
    channel = FileSignalChannel(path, None)
    entries: list[Signal | SignalError] = []
    for _ in range(5):  # one read() scans a bounded number of bytes; the skip goes on in the next one
        entries += channel.read()
    assert [type(entry).__name__ for entry in entries] == ["Signal", "SignalRecordError", "Signal"]
    rejected = entries[1]
    assert isinstance(rejected, SignalRecordError)
    assert rejected.position == (inode, len(before + huge)), "the position moves past the long line"
    assert str(path) in rejected.reason
    assert f"at byte offset {len(before)}" in rejected.reason
    assert f"{MAX_LINE_BYTES} bytes" in rejected.reason
    assert ids(entries)[-1] == "l-1"
    assert channel.position == (inode, path.stat().st_size)


def test_a_line_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    head = b'{"id": "edge", "type": "log", "data": {"message": "'
    tail = b'"}}'
    body = head + b"y" * (MAX_LINE_BYTES - len(head) - len(tail)) + tail
    assert len(body) == MAX_LINE_BYTES
    path.write_bytes(body + b"\n" + body + b"z\n" + line("after"))
    entries = FileSignalChannel(path, None).read()
    assert [type(entry).__name__ for entry in entries] == ["Signal", "SignalRecordError", "Signal"]
    assert ids(entries)[0] == "edge" and ids(entries)[-1] == "after"
    assert f"longer than the limit of {MAX_LINE_BYTES} bytes" in entries[1].reason  # type: ignore[union-attr]


def test_over_long_line_is_never_held_in_memory_whole(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    size = 24 * 1024 * 1024
    with path.open("wb") as handle:
        for _ in range(size // (1024 * 1024)):
            handle.write(b"x" * (1024 * 1024))
        handle.write(b"\n" + line("after-huge"))
    channel = FileSignalChannel(path, None)
    entries: list[Signal | SignalError] = []
    tracemalloc.start()
    try:
        for _ in range(size // MAX_BYTES_PER_READ + 2):
            entries += channel.read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ids(entries)[-1] == "after-huge"
    assert isinstance(entries[0], SignalRecordError)
    assert peak < 3 * MAX_LINE_BYTES, f"peak {peak} bytes while skipping a {size}-byte line"


def test_over_long_line_still_being_written_is_skipped_once_complete(tmp_path: Path) -> None:
    path = tmp_path / "signals.txt"
    path.write_bytes(b"x" * (MAX_LINE_BYTES + 10))
    channel = FileSignalChannel(path, None)
    assert channel.read() == [], "no newline yet: nothing to answer"
    append(path, b"x" * (MAX_LINE_BYTES * 2))
    assert channel.read() == []
    assert channel.position == (path.stat().st_ino, 0), "nothing consumed before the newline"
    append(path, b"\n" + line("done"))
    entries = channel.read()
    assert [type(entry).__name__ for entry in entries] == ["SignalRecordError", "Signal"]
    assert f"{MAX_LINE_BYTES * 3 + 10} bytes" in entries[0].reason  # type: ignore[union-attr]
