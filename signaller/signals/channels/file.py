"""The ``file`` signal channel: one JSON signal per line of ``signal.file``.

Line format as Debezium's ``FileSignalChannel``: ``{"id": "...", "type": "...", "data": {...}}``; blank
lines are skipped; a line that is not a valid signal envelope is reported as a ``SignalRecordError``
and the following lines are still read.

**Difference from Debezium:** Debezium reads every line and then truncates the file, so lines appended
between its read and its truncation are lost. signaller never writes to the file. It remembers a
position ``(inode, byte offset after the last consumed line)`` instead, which the caller persists with
its durable state and passes back as ``start_after``:

* only complete lines (ending in ``\\n``) are consumed; a partly written last line waits for the next
  ``read()``, so a writer may append at any pace and no line is lost or read twice;
* the file being absent is not an error (``read()`` returns nothing until it appears);
* a file replaced by another (a different inode: rotation, ``mv new signals.txt``) is read from
  its start; so is a file that shrank below the stored offset (truncated), or whose byte before the
  stored offset is no longer a newline (rewritten in place). A file truncated and then rewritten past
  the stored offset with a newline at that very byte cannot be told from an appended one.

Lines may end in ``\\r\\n``. The file must be UTF-8.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import BinaryIO

from signaller.errors import SignalError
from signaller.signals.channels import SignalRecordError
from signaller.signals.model import Signal
from signaller.signals.parsing import signal_from_json

__all__ = ["MAX_BYTES_PER_READ", "FilePosition", "FileSignalChannel"]

log = logging.getLogger(__name__)

FilePosition = tuple[int, int]
"""``(inode, byte offset just after the last consumed line)``."""

MAX_BYTES_PER_READ = 4 * 1024 * 1024
"""One ``read()`` consumes at most about this many bytes (always whole lines); the rest waits."""


class FileSignalChannel:
    """Reads new complete lines of the signal file at ``path``, after position ``start_after``.

    ``start_after`` is the ``(inode, offset)`` position of the last line the caller consumed, or None to
    read the file from its start. The file is never modified.
    """

    def __init__(self, path: str | os.PathLike[str], start_after: FilePosition | None) -> None:
        self.path = Path(path)
        self._inode: int | None = None
        self._offset = 0
        if start_after is not None:
            self._inode, self._offset = int(start_after[0]), max(0, int(start_after[1]))
        self._last_problem: str | None = None

    @property
    def position(self) -> FilePosition | None:
        """The position after the last line consumed so far (None before anything was read)."""
        return None if self._inode is None else (self._inode, self._offset)

    def read(self) -> list[Signal | SignalError]:
        """The complete lines appended since the last call, parsed, in file order; returns at once.

        Each ``Signal`` has ``position`` = ``(inode, offset just after its line)`` and ``channel`` =
        ``"file"``; an invalid line gives a ``SignalRecordError`` with that position instead. An I/O
        error (permissions, a directory at ``path``) is logged and gives an empty list.
        """
        try:
            with self.path.open("rb") as handle:
                return self._read_from(handle)
        except FileNotFoundError:
            return []
        except OSError as exc:
            problem = f"signal file {self.path}: cannot read it: {exc}"
            if problem != self._last_problem:
                log.warning("%s", problem)
                self._last_problem = problem
            return []

    def _read_from(self, handle: BinaryIO) -> list[Signal | SignalError]:
        stat = os.fstat(handle.fileno())
        inode, size = stat.st_ino, stat.st_size
        offset = self._offset if inode == self._inode else 0
        if inode != self._inode and self._inode is not None:
            log.info("signal file %s was replaced (inode %d -> %d): reading it from the start",
                     self.path, self._inode, inode)
        if offset > size:
            log.info("signal file %s shrank below offset %d (now %d bytes): reading it from the start",
                     self.path, offset, size)
            offset = 0
        elif offset > 0:
            handle.seek(offset - 1)
            if handle.read(1) != b"\n":
                log.info("signal file %s was rewritten before offset %d: reading it from the start", self.path, offset)
                offset = 0
        self._inode, self._offset = inode, offset
        if size <= offset:
            return []
        handle.seek(offset)
        chunk = handle.read(min(size - offset, MAX_BYTES_PER_READ))
        end = chunk.rfind(b"\n")
        if end < 0:
            if len(chunk) >= MAX_BYTES_PER_READ:
                log.warning("signal file %s: a line longer than %d bytes at offset %d is not read",
                            self.path, MAX_BYTES_PER_READ, offset)
            return []
        out: list[Signal | SignalError] = []
        line_start = 0
        for line in chunk[: end + 1].split(b"\n")[:-1]:
            line_end = offset + line_start + len(line) + 1
            line_start += len(line) + 1
            text = line.rstrip(b"\r")
            if not text.strip():
                continue
            position = (inode, line_end)
            try:
                out.append(signal_from_json(text, "file", position=position))
            except SignalError as exc:
                log.warning("signal file %s: line ending at byte %d is not a valid signal: %s",
                            self.path, line_end, exc.reason)
                out.append(SignalRecordError(f"signal file {self.path} line ending at byte {line_end}: {exc.reason}",
                                             exc.signal_id, position=position))
        self._offset = offset + end + 1
        self._last_problem = None
        return out

    def close(self) -> None:
        """Nothing to release (the file is opened only during ``read()``); present for the channel protocol."""
