"""The local stacks' ports stay out of the kernel's client port range, and a start waits for a port a client
connection holds (then names the holder) instead of failing at once.

A clean clone's ``make test`` once failed to start PostgreSQL on the old default 55432: the port lay in Linux's
ephemeral range and a client connection had taken it as its source port ("Address already in use")."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.chaos.private_stack import PORTS as CHAOS_PORTS
from devtools.processes import (
    LINUX_DEFAULT_EPHEMERAL_RANGE,
    ServiceStartError,
    ephemeral_port_range,
    port_bindable,
    sockets_on_port,
    wait_until_bindable,
)
from devtools.settings import StackSettings

pytestmark = pytest.mark.unit

PORT_FIELDS = ("pg_port", "kafka_port", "kafka_controller_port", "http_port", "registry_port", "mariadb_port")


@pytest.mark.parametrize("port_field", PORT_FIELDS)
def test_default_ports_lie_below_the_client_port_range(port_field: str) -> None:
    low = min(LINUX_DEFAULT_EPHEMERAL_RANGE[0], ephemeral_port_range()[0])
    assert getattr(StackSettings(), port_field) < low
    assert CHAOS_PORTS[port_field] < low


def test_the_range_is_read_from_the_kernel_file_or_defaults(tmp_path: Path) -> None:
    source = tmp_path / "range"
    source.write_text("20000\t40000\n")
    assert ephemeral_port_range(source) == (20000, 40000)
    source.write_text("garbage")
    assert ephemeral_port_range(source) == LINUX_DEFAULT_EPHEMERAL_RANGE
    assert ephemeral_port_range(tmp_path / "missing") == LINUX_DEFAULT_EPHEMERAL_RANGE


@pytest.fixture
def client_holding_a_port() -> Iterator[tuple[int, int]]:
    """A live loopback connection whose client end has a known source port: (that port, the server's port)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.socket() as client:
            client.bind(("127.0.0.1", 0))
            client.connect(server.getsockname())
            accepted, _ = server.accept()
            with accepted:
                yield client.getsockname()[1], server.getsockname()[1]


def test_a_port_held_by_a_client_connection_is_not_bindable_and_its_holder_is_named(
        client_holding_a_port: tuple[int, int], tmp_path: Path) -> None:
    held, server_port = client_holding_a_port
    assert not port_bindable(held)
    assert f"ESTABLISHED to 127.0.0.1:{server_port}" in sockets_on_port(held)
    started = time.monotonic()
    with pytest.raises(ServiceStartError, match=rf"port {held} is held by a socket that does not listen "
                                                rf"\(ESTABLISHED to 127\.0\.0\.1:{server_port}"):
        wait_until_bindable(held, "PostgreSQL", tmp_path / "log", timeout_s=1.0)
    assert time.monotonic() - started >= 1.0


def test_a_start_waits_for_the_client_connection_to_end(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client = socket.socket()
        client.bind(("127.0.0.1", 0))
        client.connect(server.getsockname())
        held = client.getsockname()[1]
        accepted, _ = server.accept()
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset on close
        threading.Timer(0.7, client.close).start()
        wait_until_bindable(held, "PostgreSQL", tmp_path / "log", timeout_s=10.0)
        accepted.close()
    assert port_bindable(held)


def test_a_free_port_is_bindable_at_once(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    started = time.monotonic()
    wait_until_bindable(free, "Kafka", tmp_path / "log", timeout_s=5.0)
    assert time.monotonic() - started < 0.5
