"""The sidecar under test, in a process of its own: ``python -m bench.sidecar CONFIG.json [PROFILE] [--control]``.

Runs one :class:`~signaller.runtime.capture.CaptureLoop` (what ``signaller run`` runs, with its
control queue and metrics, minus the HTTP server and the supervisor's retries) on the Debezium
properties in ``CONFIG.json``, with an offset store that
reports each commit. It never touches the loop's hot path: a watcher thread samples the loop's
counters. Stops on SIGTERM (``CaptureLoop.stop()``: final flush and offset commit), then exits.

One JSON object per line on stdout, each with ``t`` (``time.time()``, the clock PostgreSQL's
commit timestamps use):

* ``{"event": "run"}``: just before ``CaptureLoop.run()`` (imports done);
* ``{"event": "first_change"}``: the loop has produced its first change event;
* ``{"event": "commit", "lsn": N}``: ``OffsetStore.commit()`` returned (durable) for LSN ``N``;
* ``{"event": "sample", "events": N, "cpu_s": S, "rss_kb": K, "threads": {kind: S}}`` every
  100 ms (``threads``: CPU seconds of the loop's thread, librdkafka's threads and the rest);
* ``{"event": "exit", "events": N, "cpu_s": S, "rss_kb": K, "rss_peak_kb": K, "error": ...}``.

With ``--control`` (the snapshot benchmark), stdin carries commands for the loop's
:class:`~signaller.snapshot.control.SidecarControl`, one JSON object per line, as the HTTP API
would send them: ``{"cmd": "submit", "id": ..., "type": ..., "data": {...}}`` (``control.submit``
of a ``Signal`` on the ``http`` channel) and ``{"cmd": "chunk_size", "size": N}``
(``control.set_chunk_size``). Extra reports in that mode:

* ``{"event": "submitted", "id": ...}``: just before ``control.submit()`` (``t`` starts the clock);
* ``{"event": "outcome", "id": ..., "accepted": bool, "reason": ...}``: the loop answered;
* ``{"event": "status", "tables": [[table, state, rows_emitted, correlation_id], ...]}``: whenever
  ``control.status()`` changed (checked every 100 ms; the loop publishes it every offset flush);
* ``commit`` reports also carry ``finished``: ``[[correlation_id, table, status, rows], ...]`` of
  the snapshot state stored with that commit, i.e. tables whose every READ Kafka acknowledged.

With ``PROFILE``, the loop runs under a profiler: a ``*.txt`` file gets pyinstrument's call tree
(sampling, low overhead; ``pip install pyinstrument``), any other name cProfile's stats.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from signaller.api import MetricsRegistry
from signaller.config import config_from_mapping
from signaller.runtime.capture import CaptureLoop
from signaller.runtime.logging_setup import configure_logging
from signaller.snapshot.control import SidecarControl
from signaller.state import Offsets, open_store

_lock = threading.Lock()


def report(event: str, **fields: Any) -> None:
    line = json.dumps({"event": event, "t": time.time(), **fields})
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def memory_kb() -> tuple[int, int]:
    """``(VmRSS, VmHWM)`` of this process in kB (current and peak resident set)."""
    values = {"VmRSS": 0, "VmHWM": 0}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in values:
            values[key] = int(rest.split()[0])
    return values["VmRSS"], values["VmHWM"]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def thread_cpu_seconds() -> dict[str, float]:
    """CPU seconds by kind of thread: ``main`` (the loop), ``librdkafka`` (``rdk:*`` threads),
    ``other`` (this watcher and anything else)."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {"main": 0.0, "librdkafka": 0.0, "other": 0.0}
    for task in Path("/proc/self/task").iterdir():
        try:
            comm = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        kind = "main" if task.name == str(os.getpid()) else "librdkafka" if comm.startswith("rdk:") else "other"
        out[kind] += (int(fields[11]) + int(fields[12])) / ticks
    return out


class ReportingStore:
    """The configured offset store, reporting every durable commit (with ``snapshot``: also the
    finished tables of the snapshot state stored with it)."""

    def __init__(self, inner: Any, snapshot: bool = False) -> None:
        self.inner = inner
        self.snapshot = snapshot

    def load(self) -> Offsets | None:
        result: Offsets | None = self.inner.load()
        return result

    def commit(self, offsets: Offsets) -> None:
        self.inner.commit(offsets)
        if not self.snapshot:
            report("commit", lsn=offsets.lsn)
            return
        state = offsets.snapshot or {}
        finished = [[f.get("correlation_id"), f.get("table"), f.get("status"), f.get("rows")]
                    for f in state.get("finished", ())]
        report("commit", lsn=offsets.lsn, finished=finished)

    def close(self) -> None:
        self.inner.close()


def _watch(loop: CaptureLoop, done: threading.Event, control: SidecarControl | None = None) -> None:
    seen_first = False
    next_sample = time.monotonic()
    last_tables: list[list[Any]] = []
    while not done.wait(0.002):
        if not seen_first and loop.stats.events > 0:
            report("first_change")
            seen_first = True
        if time.monotonic() >= next_sample:
            rss, _ = memory_kb()
            report("sample", events=loop.stats.events, cpu_s=cpu_seconds(), rss_kb=rss, threads=thread_cpu_seconds())
            next_sample += 0.1
            if control is not None:
                tables = [[p.table, p.state, p.rows_emitted, p.correlation_id] for p in control.status().tables]
                if tables != last_tables:
                    report("status", tables=tables)
                    last_tables = tables


def _serve_commands(control: SidecarControl) -> None:
    """``--control``: apply the commands on stdin (see the module docstring) until EOF."""
    from signaller.signals.model import Signal

    def answer(ident: str) -> Any:
        def done(future: Any) -> None:
            try:
                outcome = future.result()
                report("outcome", id=ident, accepted=outcome.accepted, reason=outcome.reason)
            except Exception as exc:  # the loop failed the future
                report("outcome", id=ident, accepted=False, reason=f"{type(exc).__name__}: {exc}")
        return done

    for line in sys.stdin:
        try:
            command = json.loads(line)
        except ValueError:
            continue
        if command.get("cmd") == "submit":
            signal = Signal(command["id"], command["type"], command.get("data") or {}, "http")
            report("submitted", id=signal.id)
            control.submit(signal).add_done_callback(answer(signal.id))
        elif command.get("cmd") == "chunk_size":
            ident = f"chunk-size-{command['size']}"
            report("submitted", id=ident)
            control.set_chunk_size(int(command["size"])).add_done_callback(answer(ident))


def main(argv: list[str]) -> int:
    configure_logging()
    logging.getLogger().setLevel(logging.WARNING)
    commands = "--control" in argv
    argv = [arg for arg in argv if arg != "--control"]
    properties = json.loads(Path(argv[0]).read_text())
    config = config_from_mapping(properties, origin=argv[0])
    # As ``signaller run`` wires it (control queue and metrics), minus the HTTP server.
    control = SidecarControl()
    loop = CaptureLoop(config, store=ReportingStore(open_store(config), snapshot=commands), control=control,
                       metrics=MetricsRegistry())
    signal.signal(signal.SIGTERM, lambda *_: loop.stop())
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(loop, done, control if commands else None), daemon=True)
    watcher.start()
    if commands:
        threading.Thread(target=_serve_commands, args=(control,), daemon=True).start()
    error = None
    report("run")
    try:
        if len(argv) > 1 and argv[1].endswith(".txt"):
            from pyinstrument import Profiler  # optional: pip install pyinstrument

            sampler = Profiler(interval=0.0005)
            sampler.start()
            try:
                loop.run()
            finally:
                sampler.stop()
                Path(argv[1]).write_text(sampler.output_text(unicode=True, color=False))
        elif len(argv) > 1:
            import cProfile

            profiler = cProfile.Profile()
            try:
                profiler.runcall(loop.run)
            finally:
                profiler.dump_stats(argv[1])
        else:
            loop.run()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    done.set()
    watcher.join()
    rss, peak = memory_kb()
    report("exit", events=loop.stats.events, cpu_s=cpu_seconds(), rss_kb=rss, rss_peak_kb=peak, error=error)
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
