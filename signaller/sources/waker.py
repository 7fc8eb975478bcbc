"""A file descriptor another thread can make readable, to end a ``select`` early.

A log reader waits for its source in ``select``; :meth:`Waker.wake` (any thread) makes that wait
return at once, :meth:`Waker.clear` (the waiting thread) consumes the wake-ups. A socket pair,
non-blocking on both ends: waking never blocks, however often it is called, and a wake after
:meth:`Waker.close` does nothing.
"""

from __future__ import annotations

import contextlib
import socket


class Waker:
    """One wake-up channel; ``fileno`` is the end to ``select`` on for reading."""

    def __init__(self) -> None:
        self._read, self._write = socket.socketpair()
        self._read.setblocking(False)
        self._write.setblocking(False)

    def fileno(self) -> int:
        """The read end's descriptor (what ``select`` waits on)."""
        return self._read.fileno()

    def wake(self) -> None:
        """Make the read end readable (thread-safe; never blocks or raises)."""
        with contextlib.suppress(OSError):  # buffer full: already readable; closed: nobody waits
            self._write.send(b"\0")

    def clear(self) -> bool:
        """Consume every pending wake-up; whether there was one."""
        woken = False
        with contextlib.suppress(OSError):
            while self._read.recv(4096):
                woken = True
        return woken

    def close(self) -> None:
        """Close both ends; never raises."""
        for end in (self._read, self._write):
            with contextlib.suppress(OSError):
                end.close()

    def __del__(self) -> None:  # a reader lives as long as its source; its waker goes with it
        self.close()
