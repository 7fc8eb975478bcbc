"""``runtime.allocator``: the thresholds follow the producer's largest buffer, the user's own tuning wins, and
applied, a thread that allocates and frees megabyte buffers (as librdkafka's broker thread does with record
batches) reuses its memory instead of faulting fresh pages in each time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from signaller.runtime.allocator import MIB, AllocatorTuning, tuning_for, user_tuning

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def test_the_defaults_keep_four_mib_allocations_off_mmap_and_sixteen_mib_free_per_heap() -> None:
    assert tuning_for({}) == AllocatorTuning(4 * MIB, 16 * MIB)
    assert tuning_for({"batch.size": "1000000", "message.max.bytes": 1_000_000}) == AllocatorTuning(4 * MIB, 16 * MIB)


def test_larger_batches_or_records_raise_the_thresholds_up_to_glibcs_limit() -> None:
    assert tuning_for({"batch.size": "8000000"}) == AllocatorTuning(16_000_000, 64_000_000)
    assert tuning_for({"message.max.bytes": 5_000_000}) == AllocatorTuning(10_000_000, 40_000_000)
    assert tuning_for({"batch.size": 100_000_000}) == AllocatorTuning(32 * MIB, 128 * MIB)


def test_an_unreadable_size_counts_as_librdkafkas_default() -> None:
    assert tuning_for({"batch.size": "lots", "message.max.bytes": None}) == AllocatorTuning(4 * MIB, 16 * MIB)


def test_the_users_own_allocator_settings_are_found() -> None:
    assert user_tuning({}) is None
    assert user_tuning({"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2"}) is None
    assert user_tuning({"GLIBC_TUNABLES": "glibc.cpu.x=1:glibc.malloc.trim_threshold=131072"}) == "GLIBC_TUNABLES"
    assert user_tuning({"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536"}) == "GLIBC_TUNABLES"
    assert user_tuning({"MALLOC_TRIM_THRESHOLD_": "131072"}) == "MALLOC_TRIM_THRESHOLD_"
    assert user_tuning({"MALLOC_MMAP_THRESHOLD_": "131072"}) == "MALLOC_MMAP_THRESHOLD_"


def test_an_arena_limit_is_not_a_threshold_of_the_users() -> None:
    # MALLOC_ARENA_MAX (set for the Spark job's JVM by spark_jobs.session, and common in containers) caps the number
    # of heaps, not what a heap keeps: the thresholds still apply.
    assert user_tuning({"MALLOC_ARENA_MAX": "2"}) is None
    assert user_tuning({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) is None


PROBE = textwrap.dedent("""
    import ctypes, json, resource, sys, threading
    from signaller.runtime.allocator import keep_freed_memory
    environ = json.loads(sys.argv[1])
    applied = [keep_freed_memory({}, environ) for _ in range(2)] if sys.argv[2] == "apply" else [None, None]
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes, libc.memset.argtypes = [ctypes.c_void_p], [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    faults = []
    def batches():
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        for _ in range(100):
            buffers = [libc.malloc(1_000_000) for _ in range(3)]
            for buffer in buffers:
                libc.memset(buffer, 1, 1_000_000)
            for buffer in buffers:
                libc.free(buffer)
        faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before)
    thread = threading.Thread(target=batches)
    thread.start()
    thread.join()
    print(json.dumps({"faults": faults[0], "applied": [a and [a.mmap_threshold, a.trim_threshold] for a in applied]}))
""")


def _probe(mode: str, environ: dict[str, str]) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES" and not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(environ), mode], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True, timeout=60)
    result: dict[str, object] = json.loads(out.stdout)
    return result


@pytest.mark.skipif(not os.confstr("CS_GNU_LIBC_VERSION"), reason="glibc's allocator only")
def test_applied_a_threads_megabyte_buffers_reuse_their_memory() -> None:
    untouched = _probe("leave", {})
    tuned = _probe("apply", {})
    # 100 rounds of three 1 MB buffers: glibc's own thresholds give ~700 pages back and fault them in again each
    # round (~70,000 faults); kept, the heap's pages are faulted in once.
    assert isinstance(untouched["faults"], int) and untouched["faults"] > 20_000
    assert isinstance(tuned["faults"], int) and tuned["faults"] < untouched["faults"] / 20
    assert tuned["applied"] == [[4 * MIB, 16 * MIB], [4 * MIB, 16 * MIB]]  # the second call: the first's tuning


@pytest.mark.skipif(not os.confstr("CS_GNU_LIBC_VERSION"), reason="glibc's allocator only")
def test_the_users_own_tuning_is_left_alone() -> None:
    theirs = _probe("apply", {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=131072"})
    assert theirs["applied"] == [None, None]
    assert isinstance(theirs["faults"], int) and theirs["faults"] > 20_000
