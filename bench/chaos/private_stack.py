"""The chaos run's own PostgreSQL and Kafka broker: own home directory, own ports.

The run restarts, kills and stops these services on purpose, so they must never be the shared local stack
(``python -m devtools stack``) other developers and ``make test`` use. :class:`PrivateStack` starts them with
the same launchers as ``devtools`` (:mod:`devtools.postgres`, :mod:`devtools.kafka`, Spark's jars), under
``home`` (default ``.cache/chaos-stack``, ignored by git) and on :data:`PORTS`, each of which an environment
variable may change (:data:`PORT_ENV`: ``SIGNALLER_CHAOS_PG_PORT``... as ``devtools`` reads
``SIGNALLER_STACK_*_PORT``), so two clones (a CI run beside a developer's) can run at once; it refuses to start
when one of those ports is taken by something it did not start. ``down()`` stops both.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from devtools import kafka, postgres, spark
from devtools.processes import port_open, read_pid, stop_pid
from devtools.settings import ENV_NAMES, REPO_ROOT, StackSettings

DEFAULT_HOME = REPO_ROOT / ".cache" / "chaos-stack"
PORTS = {"pg_port": 26432, "kafka_port": 30092, "kafka_controller_port": 30093, "http_port": 28181,
         "registry_port": 28281, "mariadb_port": 24306}
"""Default ports of the private stack; none of them is a port of the shared stack (:class:`StackSettings` defaults).
All lie below Linux's ephemeral range (32768-60999): the run restarts its servers while hundreds of client
connections come and go, and a server's port taken meanwhile as a client's source port fails its restart
("Address already in use"; seen with the earlier 56432/60092)."""
PORT_ENV = {name: ENV_NAMES[name].replace("SIGNALLER_STACK_", "SIGNALLER_CHAOS_") for name in PORTS}
"""The environment variable that overrides each port of :data:`PORTS` (``SIGNALLER_CHAOS_PG_PORT``...)."""


class PrivateStackError(RuntimeError):
    """A port of the private stack is taken by a process this stack did not start, or a service failed."""


def ports_from_env(env: Mapping[str, str] | None = None) -> dict[str, int]:
    """:data:`PORTS`, each overridden by its :data:`PORT_ENV` variable when set in ``env`` (default: the process
    environment); ``PrivateStackError`` naming the variable and its value when one is not a TCP port (1..65535)
    or two ports are the same."""
    env = os.environ if env is None else env
    ports = dict(PORTS)
    for name, variable in PORT_ENV.items():
        raw = env.get(variable)
        if raw is None or not raw.strip():
            continue
        try:
            port = int(raw.strip())
        except ValueError:
            port = 0
        if not 1 <= port <= 65535:
            raise PrivateStackError(f"{variable}={raw!r} (environment) is not a TCP port; accepted: 1..65535")
        ports[name] = port
    taken: dict[int, str] = {}
    for name, port in ports.items():
        if port in taken:
            raise PrivateStackError(f"the chaos stack's {name} and {taken[port]} are both port {port} (see "
                                    f"{PORT_ENV[name]} and {PORT_ENV[taken[port]]}); each needs its own")
        taken[port] = name
    return ports


class PrivateStack:
    """PostgreSQL and Kafka for one chaos run, with the faults the run injects into them."""

    def __init__(self, home: Path = DEFAULT_HOME, ports: Mapping[str, int] | None = None) -> None:
        """The stack under ``home`` on ``ports`` (default: :func:`ports_from_env`)."""
        chosen = ports_from_env() if ports is None else ports
        self.settings = StackSettings(home=home, **chosen)  # type: ignore[arg-type]
        self._kafka = kafka.paths_for(self.settings)
        self._pg = postgres.paths_for(self.settings, postgres.ensure_binaries())

    def _check_ports_are_ours(self) -> None:
        ours = {
            self.settings.pg_port: (self._pg.data_dir / "postmaster.pid").exists(),
            self.settings.kafka_port: read_pid(self._kafka.pid_file) is not None,
        }
        for port, owned in ours.items():
            if port_open(port) and not owned:
                msg = (f"port {port} is taken by a process the chaos stack under {self.settings.home} did not start; "
                       "stop it or run the chaos harness with another --home")
                raise PrivateStackError(msg)

    def up(self) -> None:
        """Start PostgreSQL and Kafka unless they run (started by this home), and copy Spark's jars."""
        self.settings.home.mkdir(parents=True, exist_ok=True)
        self._check_ports_are_ours()
        postgres.start(self.settings, self._pg)
        kafka.start(self.settings, self._kafka)
        spark.ensure_jars(self.settings)

    def down(self) -> None:
        """Stop Kafka and PostgreSQL (harmless when they do not run)."""
        kafka.stop(self._kafka)
        postgres.stop(self._pg)

    @property
    def jars_dir(self) -> Path:
        return spark.jars_dir(self.settings)

    @property
    def logs(self) -> Path:
        return self.settings.home / "logs"

    # -- PostgreSQL faults --------------------------------------------------------------------------
    def _pg_ctl(self, *args: str) -> None:
        argv = [str(self._pg.bin_dir / "pg_ctl"), "-D", str(self._pg.data_dir), "-l", str(self._pg.log_file),
                "-o", f"-p {self.settings.pg_port}", "-w", "-t", "120", *args]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", *argv]
        result = subprocess.run(argv, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise PrivateStackError(f"pg_ctl {' '.join(args)} failed: {result.stdout}{result.stderr}")

    def restart_postgres(self, mode: str) -> None:
        """``pg_ctl restart -m fast`` or ``-m immediate`` (no checkpoint: crash recovery at start)."""
        self._pg_ctl("restart", "-m", mode)

    # -- Kafka faults ----------------------------------------------------------------------------------
    def kafka_pid(self) -> int | None:
        return read_pid(self._kafka.pid_file)

    def stop_kafka(self) -> None:
        """Stop the broker gracefully (SIGTERM; it writes a clean shutdown marker)."""
        kafka.stop(self._kafka)

    def kill_kafka(self) -> None:
        """``kill -9`` of the broker's process group; waits until the process is gone."""
        pid = self.kafka_pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        stop_pid(pid, timeout_s=10)
        self._kafka.pid_file.unlink(missing_ok=True)
        deadline = time.monotonic() + 30
        while port_open(self.settings.kafka_port) and time.monotonic() < deadline:
            time.sleep(0.2)

    def start_kafka(self) -> None:
        """Start the broker again (waits until its port accepts connections)."""
        kafka.start(self.settings, self._kafka, timeout_s=180.0)
