"""Keeping the C allocator from handing freed memory back to the kernel on every record batch.

glibc's ``malloc`` returns freed memory at the top of a heap to the kernel once more than its *trim
threshold* is free there, and serves a request above its *mmap threshold* with a fresh ``mmap``. Both start
at 128 KiB and only grow with what the process frees. The sidecar's producer builds ~1 MB record batches
(librdkafka's ``batch.size``) and frees them once Kafka acknowledges them, many times a second, on threads
with heaps of their own: each batch's memory went back to the kernel and came back as new pages, zeroed and
faulted in one by one. Measured on the bench's snapshot table (2,817-byte READ values, 65,536-row chunks,
:mod:`bench.snapshot`'s session, alternated runs): librdkafka's broker thread spent 3.0-3.3 µs of CPU per READ,
most of it page faults and zeroing, against 1.0-1.4 µs with the thresholds below; the whole sidecar 7.1-7.8 against
4.9-5.7 µs (``snapshot.best_cpu_us_per_read``); peak RSS 107 against 109 MB. READs/s at that chunk size moved less
than the machine's noise: the loop's thread, not the CPU, bounds it.

:func:`keep_freed_memory` sets both thresholds once per process, from the producer's largest buffer: the
mmap threshold to twice that (at least 4 MiB, at most glibc's 32 MiB), the trim threshold to four times the
mmap threshold. What it costs: up to the trim threshold of freed memory stays mapped per heap (the loop's,
the chunk reader's and librdkafka's threads have one each) instead of going back to the kernel.

It leaves the allocator alone where the user set these thresholds (``GLIBC_TUNABLES`` naming
``glibc.malloc.trim_threshold``, ``mmap_threshold``, ``top_pad`` or ``mmap_max``, or their ``MALLOC_*_``
environment variables: theirs win, and ``GLIBC_TUNABLES=glibc.malloc.trim_threshold=131072`` restores glibc's
behaviour; an arena limit such as ``MALLOC_ARENA_MAX`` tunes something else and does not count), and where the C
library is not glibc (``mallopt`` is glibc's). Pure logic (:func:`tuning_for`, :func:`user_tuning`) apart from
:func:`keep_freed_memory` (the process's allocator).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("signaller.allocator")

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""``mallopt`` parameters (glibc's ``malloc.h``)."""
MIB = 1 << 20
MIN_MMAP_THRESHOLD = 4 * MIB
MAX_MMAP_THRESHOLD = 32 * MIB
"""glibc refuses an mmap threshold above ``HEAP_MAX_SIZE / 2`` (32 MiB on 64-bit systems)."""
TRIM_PER_MMAP = 4
LIBRDKAFKA_BUFFER_SETTINGS = {"batch.size": 1_000_000, "message.max.bytes": 1_000_000}
"""The producer settings that bound its largest buffers, with librdkafka's defaults."""
USER_THRESHOLD_VARIABLES = ("MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_")
"""glibc's environment variables for the same thresholds (``MALLOC_ARENA_MAX`` and the like tune something else)."""
USER_THRESHOLD_TUNABLES = ("glibc.malloc.mmap_max", "glibc.malloc.mmap_threshold", "glibc.malloc.top_pad",
                           "glibc.malloc.trim_threshold")


@dataclass(frozen=True, slots=True)
class AllocatorTuning:
    """The two glibc thresholds, in bytes."""

    mmap_threshold: int
    trim_threshold: int


def tuning_for(producer_config: Mapping[str, Any]) -> AllocatorTuning:
    """The thresholds for a producer with ``producer_config`` (librdkafka names; values as strings or numbers,
    an unreadable one counts as librdkafka's default: the producer itself refuses it)."""
    largest = max(_int_or(producer_config.get(name), default) for name, default in LIBRDKAFKA_BUFFER_SETTINGS.items())
    mmap_threshold = min(MAX_MMAP_THRESHOLD, max(MIN_MMAP_THRESHOLD, 2 * largest))
    return AllocatorTuning(mmap_threshold, TRIM_PER_MMAP * mmap_threshold)


def user_tuning(environ: Mapping[str, str]) -> str | None:
    """The environment variable by which the user set glibc's mmap or trim thresholds (or the settings that go with
    them) themselves, None if they did not."""
    tunables = {item.partition("=")[0] for item in environ.get("GLIBC_TUNABLES", "").split(":")}
    if tunables.intersection(USER_THRESHOLD_TUNABLES):
        return "GLIBC_TUNABLES"
    return next((name for name in USER_THRESHOLD_VARIABLES if name in environ), None)


_applied: AllocatorTuning | None = None


def keep_freed_memory(producer_config: Mapping[str, Any], environ: Mapping[str, str] | None = None,
                      ) -> AllocatorTuning | None:
    """Set the process's allocator thresholds for ``producer_config`` (:func:`tuning_for`); returns what is in
    effect, None when left alone (the user's own tuning, a C library other than glibc, or ``mallopt`` refusing).
    Call it before the producer starts. Once per process: later calls (a restarted session) return the first
    call's tuning and change nothing. Never raises."""
    global _applied
    if _applied is not None:
        return _applied
    tuned_by = user_tuning(os.environ if environ is None else environ)
    if tuned_by is not None:
        log.info("allocator: left as %s sets it", tuned_by)
        return None
    libc = _glibc()
    if libc is None:
        log.info("allocator: not glibc, left alone")
        return None
    tuning = tuning_for(producer_config)
    if not (libc.mallopt(M_MMAP_THRESHOLD, tuning.mmap_threshold) and libc.mallopt(M_TRIM_THRESHOLD,
                                                                                     tuning.trim_threshold)):
        log.warning("allocator: glibc refused mmap threshold %d / trim threshold %d; left as it was",
                    tuning.mmap_threshold, tuning.trim_threshold)
        return None
    log.info("allocator: freed memory kept for reuse (mmap threshold %d MiB, trim threshold %d MiB)",
             tuning.mmap_threshold // MIB, tuning.trim_threshold // MIB,
             extra={"mmap_threshold": tuning.mmap_threshold, "trim_threshold": tuning.trim_threshold})
    _applied = tuning
    return tuning


def _glibc() -> Any:
    """The process's C library if it is glibc (it has ``mallopt``), else None."""
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except (ValueError, OSError, AttributeError):
        return None
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return libc


def _int_or(value: Any, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except (TypeError, ValueError):
        return default
