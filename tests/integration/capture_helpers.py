"""Shared helpers for the streaming-capture integration tests (real PostgreSQL, real Kafka).

* ``CaptureEnv``: one test's unique names (table, slot, publication, topic prefix, offsets file), an
  autocommit PostgreSQL connection, and clean-up of everything it handed out (sidecar processes,
  slots, publications, tables, topics). The ``capture`` fixture in ``conftest.py`` builds one.
* ``Sidecar``: ``signaller run --config <generated connector JSON>`` as a subprocess, logging to a
  file, killed (SIGKILL) or stopped (SIGTERM) on demand, and always reaped at teardown.
* ``TopicReader``: a consumer that keeps reading one topic and parses records (``Record``).
* ``replay``: a topic's records applied in order into a key -> row map.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson
import psycopg2
import psycopg2.errors
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from devtools import StackSettings
from devtools.env import sidecar_env

SIGNALLER = Path(sys.executable).with_name("signaller")
"""The console script installed next to the interpreter running the tests (``.venv/bin/signaller``)."""

T = TypeVar("T")


# --- polling --------------------------------------------------------------------------------------------


def wait_until(probe: Callable[[], T | None], timeout_s: float, what: str,
               interval_s: float = 0.1, describe: Callable[[], str] | None = None) -> T:
    """Call ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() > deadline:
            detail = f"\n{describe()}" if describe is not None else ""
            raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}{detail}")
        time.sleep(interval_s)


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the sidecar process ----------------------------------------------------------------------------------


class Sidecar:
    """``signaller run`` on a connector JSON file, as a subprocess whose stderr/stdout go to a log file.

    The same object can be started again after a kill (same config file, same offsets file); the log
    file accumulates every run, and ``runs`` counts them.
    """

    def __init__(self, config: dict[str, Any], workdir: Path, label: str = "sidecar",
                 env: dict[str, str] | None = None) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.config_path = workdir / f"{label}-connector.json"
        self.config_path.write_text(json.dumps(config, indent=2))
        self.log_path = workdir / f"{label}.log"
        self.log_path.touch()
        self.env = sidecar_env(SIGNALLER_LOG_FORMAT="json", **(env or {}))
        if "signaller.http.port" not in config.get("config", config):
            # Every sidecar serves its HTTP API; concurrent ones (and a developer's) need their own port.
            # Set through the environment so that the connector JSON stays exactly as given.
            self.env.setdefault("SIGNALLER_HTTP_PORT", str(closed_port()))
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = 0

    @property
    def slot(self) -> str:
        return str(self.config["config"]["slot.name"])

    def start(self) -> Sidecar:
        assert not self.alive(), "the sidecar is already running"
        with self.log_path.open("ab") as log:
            log.write(f"--- run {self.runs + 1} ---\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                [str(SIGNALLER), "run", "--config", str(self.config_path)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env,
                start_new_session=True,
            )
        self.runs += 1
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def kill(self) -> None:
        """SIGKILL, then reap. No clean-up code of the sidecar runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(10)

    def stop(self, timeout_s: float = 20.0) -> int:
        """SIGTERM (an orderly stop) and the exit code; SIGKILL if it does not stop in time."""
        assert self.proc is not None, "never started"
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(f"sidecar ignored SIGTERM for {timeout_s}s\n{self.log_tail()}") from None
        return int(self.proc.returncode)

    def wait_exit(self, timeout_s: float) -> int:
        assert self.proc is not None, "never started"
        try:
            return int(self.proc.wait(timeout_s))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"sidecar still running after {timeout_s}s\n{self.log_tail()}") from None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_records(self) -> list[dict[str, Any]]:
        """The JSON log lines (other lines, like the run separators, are skipped)."""
        out = []
        for line in self.log_text().splitlines():
            with contextlib.suppress(ValueError):
                item = json.loads(line)
                if isinstance(item, dict):
                    out.append(item)
        return out

    def log_tail(self, lines: int = 40) -> str:
        return "sidecar log tail:\n" + "\n".join(self.log_text().splitlines()[-lines:])


# --- records ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One Kafka record, key and value parsed as JSON (None for a null key or a tombstone)."""

    key: Any
    value: Any
    partition: int
    offset: int
    raw_key: bytes | None = field(repr=False, default=None)

    @property
    def tombstone(self) -> bool:
        return self.value is None

    @property
    def payload(self) -> dict[str, Any]:
        """The envelope payload (``value.converter.schemas.enable`` true or false)."""
        assert self.value is not None, "a tombstone has no payload"
        return self.value["payload"] if "schema" in self.value and "payload" in self.value else self.value

    @property
    def key_payload(self) -> Any:
        if isinstance(self.key, dict) and "schema" in self.key and "payload" in self.key:
            return self.key["payload"]
        return self.key

    @property
    def op(self) -> str | None:
        return None if self.value is None else self.payload["op"]


def _parse(data: bytes | None) -> Any:
    return None if data is None else orjson.loads(data)


class TopicReader:
    """Reads one topic from the beginning and keeps up with it; waits for the topic to exist. Keys and
    values are parsed as JSON, or by ``decode`` (e.g. Avro in the Confluent wire format)."""

    def __init__(self, bootstrap: str, topic: str, decode: Callable[[bytes | None], Any] = _parse) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self._decode = decode
        self.records: list[Record] = []
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"it-{uuid.uuid4().hex}",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": False,
        })
        self._assigned = False

    def _assign(self) -> bool:
        meta = self._consumer.list_topics(self.topic, timeout=5)
        info = meta.topics.get(self.topic)
        if info is None or info.error is not None or not info.partitions:
            return False
        self._consumer.assign([TopicPartition(self.topic, p, 0) for p in sorted(info.partitions)])
        self._assigned = True
        return True

    def read_available(self, wait_s: float = 0.2) -> list[Record]:
        """Whatever arrives within ``wait_s`` (consumed in batches); appended to ``records``."""
        if not self._assigned and not self._assign():
            time.sleep(wait_s)
            return []
        new: list[Record] = []
        deadline = time.monotonic() + wait_s
        while True:
            batch = self._consumer.consume(10000, timeout=max(0.0, min(0.2, deadline - time.monotonic())))
            for msg in batch:
                if msg.error():
                    continue
                new.append(Record(self._decode(msg.key()), self._decode(msg.value()), msg.partition(),
                                  msg.offset(), msg.key()))
            if not batch and time.monotonic() >= deadline:
                break
        self.records.extend(new)
        return new

    def wait_for(self, done: Callable[[list[Record]], bool], timeout_s: float, what: str,
                 describe: Callable[[], str] | None = None) -> list[Record]:
        """Read until ``done(records)`` holds; fail naming ``what`` (and ``describe()``) on timeout."""
        deadline = time.monotonic() + timeout_s
        while not done(self.records):
            if time.monotonic() > deadline:
                detail = f"\n{describe()}" if describe is not None else ""
                raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what} on {self.topic} "
                                     f"({len(self.records)} record(s) read){detail}")
            self.read_available(0.3)
        return self.records

    def wait_for_count(self, count: int, timeout_s: float, describe: Callable[[], str] | None = None
                       ) -> list[Record]:
        return self.wait_for(lambda records: len(records) >= count, timeout_s, f"{count} record(s)", describe)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._consumer.close()


def row_key(record: Record) -> str:
    """A hashable form of a record's key payload (canonical JSON)."""
    return json.dumps(record.key_payload, sort_keys=True)


def replay(records: Iterable[Record]) -> dict[str, dict[str, Any]]:
    """Apply change events in topic order: c/u/r put ``after`` under the key, d removes the key, t clears
    everything; a tombstone only removes what may still be there (nothing, after its delete)."""
    state: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.tombstone:
            state.pop(row_key(record), None)
            continue
        op = record.op
        payload = record.payload
        if op in ("c", "u", "r"):
            state[row_key(record)] = payload["after"]
        elif op == "d":
            state.pop(row_key(record), None)
        elif op == "t":
            state.clear()
        else:
            raise AssertionError(f"unexpected op {op!r} in {record}")
    return state


def schema_fields(struct_schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``field name -> schema node`` of a JsonConverter struct schema."""
    assert struct_schema["type"] == "struct", struct_schema
    return {item["field"]: item for item in struct_schema["fields"]}


def value_row_schema(record: Record) -> dict[str, Any]:
    """The ``after`` (row) struct schema of a change event with schemas enabled."""
    return schema_fields(record.value["schema"])["after"]


# --- one test's world --------------------------------------------------------------------------------------


class CaptureEnv:
    """Unique names and clean-up for one test. ``variant(tag)`` hands out another slot/publication/prefix."""

    def __init__(self, stack: StackSettings, suffix: str, workdir: Path) -> None:
        self.stack = stack
        self.suffix = suffix
        self.workdir = workdir
        self.table = f"t_{suffix}"
        self.slot = f"slot_{suffix}"
        self.publication = f"pub_{suffix}"
        self.prefix = f"it{suffix}"
        self.offsets_file = workdir / "offsets.json"
        self.conn = psycopg2.connect(stack.pg_dsn())
        self.conn.autocommit = True
        self.sidecars: list[Sidecar] = []
        self.readers: list[TopicReader] = []
        self.slots = [self.slot]
        self.publications = [self.publication]
        self.prefixes = [self.prefix]
        self.tables: list[str] = []
        self.types: list[str] = []
        self.extra_connections: list[Any] = []

    # names
    def topic(self, table: str | None = None, prefix: str | None = None) -> str:
        return f"{prefix or self.prefix}.public.{table or self.table}"

    def variant(self, tag: str) -> tuple[str, str, str]:
        """A further (slot, publication, topic prefix) triple, cleaned up like the first."""
        slot, publication, prefix = f"slot_{self.suffix}_{tag}", f"pub_{self.suffix}_{tag}", f"it{self.suffix}{tag}"
        self.slots.append(slot)
        self.publications.append(publication)
        self.prefixes.append(prefix)
        return slot, publication, prefix

    # SQL
    def sql(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(statement, params)
            return list(cur.fetchall()) if cur.description else []

    def create_table(self, columns: str, table: str | None = None) -> str:
        name = table or self.table
        self.tables.append(name)
        self.sql(f"CREATE TABLE {name} ({columns})")
        return name

    def create_enum(self, name: str, labels: Iterable[str]) -> str:
        self.types.append(name)
        quoted = ", ".join("'" + label.replace("'", "''") + "'" for label in labels)
        self.sql(f"CREATE TYPE {name} AS ENUM ({quoted})")
        return name

    def table_rows(self, table: str | None = None, key: str = "id") -> dict[int, tuple[Any, ...]]:
        rows = self.sql(f"SELECT * FROM {table or self.table} ORDER BY {key}")
        return {row[0]: row for row in rows}

    # sidecars and readers
    def connector_config(self, *, slot: str | None = None, publication: str | None = None,
                         prefix: str | None = None, tables: Iterable[str] | None = None,
                         offsets_file: Path | None = None, **overrides: Any) -> dict[str, Any]:
        """A Kafka Connect style connector JSON body for this test; ``overrides`` use Debezium names
        with ``_`` for ``.`` (``decimal_handling_mode="string"``) or a literal dict via ``extra``."""
        tables = list(tables) if tables is not None else [self.table]
        config: dict[str, Any] = {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "tasks.max": "1",
            "database.hostname": "127.0.0.1",
            "database.port": str(self.stack.pg_port),
            "database.user": self.stack.pg_user,
            "database.password": self.stack.pg_password,
            "database.dbname": self.stack.pg_db,
            "topic.prefix": prefix or self.prefix,
            "slot.name": slot or self.slot,
            "publication.name": publication or self.publication,
            "publication.autocreate.mode": "filtered",
            "table.include.list": ",".join(f"public.{t}" for t in tables),
            "snapshot.mode": "no_data",
            "kafka.bootstrap.servers": self.stack.bootstrap_servers,
            "offset.storage": "file",
            "offset.storage.file.filename": str(offsets_file or self.offsets_file),
            "offset.flush.interval.ms": "200",
            "poll.interval.ms": "100",
        }
        extra = overrides.pop("extra", {})
        config.update({name.replace("_", "."): value for name, value in overrides.items()})
        config.update(extra)
        return {"name": f"it-{self.suffix}", "config": config}

    def sidecar(self, config: dict[str, Any] | None = None, label: str = "sidecar",
                env: dict[str, str] | None = None) -> Sidecar:
        car = Sidecar(config or self.connector_config(), self.workdir, label, env)
        self.sidecars.append(car)
        return car

    def start_streaming(self, car: Sidecar | None = None, timeout_s: float = 30.0) -> Sidecar:
        """Start ``car`` (default: a new sidecar with the default config) and wait until it holds its slot."""
        car = car or self.sidecar()
        car.start()
        self.wait_slot_active(car, timeout_s)
        return car

    def slot_active_pid(self, slot: str) -> int | None:
        rows = self.sql("SELECT active_pid FROM pg_replication_slots WHERE slot_name = %s AND active", (slot,))
        return rows[0][0] if rows else None

    def wait_slot_active(self, car: Sidecar, timeout_s: float = 30.0) -> int:
        def probe() -> int | None:
            if not car.alive():
                raise AssertionError(f"sidecar exited with {car.returncode} before streaming\n{car.log_tail()}")
            return self.slot_active_pid(car.slot)

        return wait_until(probe, timeout_s, f"slot {car.slot} to be active", describe=car.log_tail)

    def wait_slot_inactive(self, slot: str, timeout_s: float = 15.0) -> None:
        wait_until(lambda: self.slot_active_pid(slot) is None, timeout_s, f"slot {slot} to be released")

    def reader(self, topic: str | None = None) -> TopicReader:
        reader = TopicReader(self.stack.bootstrap_servers, topic or self.topic())
        self.readers.append(reader)
        return reader

    def extra_connection(self, **kwargs: Any) -> Any:
        conn = psycopg2.connect(self.stack.pg_dsn(), **kwargs)
        self.extra_connections.append(conn)
        return conn

    # teardown
    def close(self) -> None:
        """Kill every sidecar, then drop slots, publications, tables, types and topics. Never raises
        before everything was attempted; re-raises the first failure at the end."""
        errors: list[BaseException] = []

        def attempt(action: Callable[[], object]) -> None:
            try:
                action()
            except BaseException as exc:
                errors.append(exc)

        for car in self.sidecars:
            attempt(car.kill)
        for reader in self.readers:
            attempt(reader.close)
        for conn in self.extra_connections:
            attempt(conn.close)
        for slot in self.slots:
            attempt(lambda slot=slot: self._drop_slot(slot))
        for publication in self.publications:
            attempt(lambda publication=publication: self.sql(f'DROP PUBLICATION IF EXISTS "{publication}"'))
        for table in self.tables:
            attempt(lambda table=table: self.sql(f"DROP TABLE IF EXISTS {table}"))
        for type_name in self.types:
            attempt(lambda type_name=type_name: self.sql(f"DROP TYPE IF EXISTS {type_name}"))
        attempt(self._delete_topics)
        attempt(self.conn.close)
        if errors:
            raise errors[0]

    def _drop_slot(self, slot: str) -> None:
        deadline = time.monotonic() + 15
        while True:
            pid = self.slot_active_pid(slot)
            if pid is not None:
                self.sql("SELECT pg_terminate_backend(%s)", (pid,))
            try:
                self.sql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                         "WHERE slot_name = %s", (slot,))
                return
            except psycopg2.errors.ObjectInUse:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _delete_topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.stack.bootstrap_servers})
        topics = [name for name in admin.list_topics(timeout=10).topics
                  if any(name.startswith(prefix + ".") or name.startswith(prefix + "-") or
                         name.endswith("." + prefix) for prefix in self.prefixes)]
        if topics:
            for future in admin.delete_topics(topics, operation_timeout=10).values():
                with contextlib.suppress(Exception):
                    future.result(15)


@contextlib.contextmanager
def capture_env(stack: StackSettings, suffix: str, workdir: Path) -> Iterator[CaptureEnv]:
    env = CaptureEnv(stack, suffix, workdir)
    try:
        yield env
    finally:
        env.close()
