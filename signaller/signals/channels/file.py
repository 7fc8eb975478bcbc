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

A line longer than ``MAX_LINE_BYTES`` (1 MiB, the HTTP body limit) is never read into memory whole: it
is scanned block by block up to its newline and answered with a ``SignalRecordError`` that names the
file, the line's byte offset and the limit; its position is past the line, so it is never read again,
and the lines after it are read as usual.

Lines may end in ``\\r\\n``. The file must be UTF-8.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import BinaryIO

from signaller.errors import SignalError
from signaller.signals.channels import MAX_SIGNAL_BYTES, SignalRecordError
from signaller.signals.model import Signal
from signaller.signals.parsing import signal_from_json

__all__ = ["MAX_BYTES_PER_READ", "MAX_LINE_BYTES", "READ_BLOCK_BYTES", "FilePosition", "FileSignalChannel"]

log = logging.getLogger(__name__)

FilePosition = tuple[int, int]
"""``(inode, byte offset just after the last consumed line)``."""

MAX_LINE_BYTES = MAX_SIGNAL_BYTES
"""The longest line read as a signal (1 MiB, the HTTP API's body limit), without its newline. A longer
line is skipped up to its newline without being held in memory, and answered with a
``SignalRecordError`` naming the file, the line's byte offset and this limit."""

MAX_BYTES_PER_READ = 4 * 1024 * 1024
"""One ``read()`` scans at most about this many bytes; the rest waits for the next call (a line that
straddles the limit is read again whole by the next call, or, if over-long, skipped on from there)."""

READ_BLOCK_BYTES = 64 * 1024
"""The file is read in blocks of this size: memory is bounded by ``MAX_LINE_BYTES`` plus one block."""


class FileSignalChannel:
    """Reads new complete lines of the signal file at ``path``, after position ``start_after``.

    ``start_after`` is the ``(inode, offset)`` position of the last line the caller consumed, or None to
    read the file from its start. The file is never modified.
    """

    name = "file"
    stores_positions = True
    rejections_notified = True

    def __init__(self, path: str | os.PathLike[str], start_after: FilePosition | None) -> None:
        self.path = Path(path)
        self._inode: int | None = None
        self._offset = 0
        if start_after is not None:
            self._inode, self._offset = int(start_after[0]), max(0, int(start_after[1]))
        self._last_problem: str | None = None
        # An over-long line whose newline was not reached yet: ((inode, line start), bytes scanned up to).
        self._skipping: tuple[FilePosition, int] | None = None

    @property
    def position(self) -> FilePosition | None:
        """The position after the last line consumed so far (None before anything was read)."""
        return None if self._inode is None else (self._inode, self._offset)

    def read(self) -> list[Signal | SignalError]:
        """The complete lines appended since the last call, parsed, in file order; returns at once.

        Each ``Signal`` has ``position`` = ``(inode, offset just after its line)`` and ``channel`` =
        ``"file"``; an invalid or over-long line (over ``MAX_LINE_BYTES``) gives a ``SignalRecordError``
        with that position instead. An I/O error (permissions, a directory at ``path``) is logged and
        gives an empty list. Never raises for a line's content.
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

    def _start_offset(self, handle: BinaryIO, inode: int, size: int) -> int:
        """The stored offset if it still applies to this file, else 0 (replaced, shrunk or rewritten)."""
        offset = self._offset if inode == self._inode else 0
        if inode != self._inode and self._inode is not None:
            log.info("signal file %s was replaced (inode %d -> %d): reading it from the start",
                     self.path, self._inode, inode)
        if offset > size:
            log.info("signal file %s shrank below offset %d (now %d bytes): reading it from the start",
                     self.path, offset, size)
            return 0
        if offset > 0:
            handle.seek(offset - 1)
            if handle.read(1) != b"\n":
                log.info("signal file %s was rewritten before offset %d: reading it from the start", self.path, offset)
                return 0
        return offset

    def _read_from(self, handle: BinaryIO) -> list[Signal | SignalError]:
        stat = os.fstat(handle.fileno())
        inode, size = stat.st_ino, stat.st_size
        offset = self._start_offset(handle, inode, size)
        self._inode, self._offset = inode, offset
        if size <= offset:
            return []
        out: list[Signal | SignalError] = []
        line_start = offset  # where the line being scanned starts
        position = offset  # the next byte to read
        pending = bytearray()  # the line being scanned, while it is within MAX_LINE_BYTES
        too_long = False
        if self._skipping is not None and self._skipping[0] == (inode, offset):
            position, too_long = self._skipping[1], True
        handle.seek(position)
        stop = min(size, position + MAX_BYTES_PER_READ)
        while position < stop:
            block = handle.read(min(READ_BLOCK_BYTES, stop - position))
            if not block:
                break
            start = 0
            while (newline := block.find(b"\n", start)) >= 0:
                line_end = position + newline + 1
                if not too_long:
                    pending += block[start:newline]
                    too_long = len(pending) > MAX_LINE_BYTES
                entry = self._too_long(inode, line_start, line_end) if too_long else self._parse(pending, inode,
                                                                                                  line_end)
                if entry is not None:
                    out.append(entry)
                pending.clear()
                too_long = False
                line_start, start = line_end, newline + 1
            if not too_long:
                pending += block[start:]
                if len(pending) > MAX_LINE_BYTES:
                    too_long = True
                    pending.clear()
            position += len(block)
        self._offset = line_start
        self._skipping = ((inode, line_start), position) if too_long else None
        self._last_problem = None
        return out

    def _parse(self, line: bytes | bytearray, inode: int, line_end: int) -> Signal | SignalError | None:
        """One complete line (without its newline): a signal, an error, or None for a blank line."""
        text = bytes(line).rstrip(b"\r")
        if not text.strip():
            return None
        position = (inode, line_end)
        try:
            return signal_from_json(text, "file", position=position)
        except SignalError as exc:
            reason, signal_id = exc.reason, exc.signal_id
        except Exception as exc:  # parsing is meant to be total; a bug must not stop the channel
            log.warning("signal file %s: parsing the line ending at byte %d failed", self.path, line_end,
                        exc_info=True)
            reason, signal_id = f"cannot be parsed ({type(exc).__name__}: {str(exc)[:200]})", None
        log.warning("signal file %s: line ending at byte %d is not a valid signal: %s", self.path, line_end, reason)
        return SignalRecordError(f"signal file {self.path} line ending at byte {line_end}: {reason}",
                                 signal_id, position=position)

    def _too_long(self, inode: int, line_start: int, line_end: int) -> SignalRecordError:
        length = line_end - 1 - line_start
        reason = (f"signal file {self.path} line at byte offset {line_start}: {length} bytes, longer than the limit "
                  f"of {MAX_LINE_BYTES} bytes for one signal line; skipped without being read; accepted: one JSON "
                  f"signal of at most {MAX_LINE_BYTES} bytes per line")
        log.warning("%s", reason)
        return SignalRecordError(reason, None, position=(inode, line_end))

    def close(self) -> None:
        """Nothing to release (the file is opened only during ``read()``); present for the channel protocol."""
