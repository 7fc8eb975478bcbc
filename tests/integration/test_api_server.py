"""signaller.api.serve: uvicorn on a real socket, on a daemon thread (no PostgreSQL or Kafka needed)."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Iterator

import httpx
import pytest

from signaller.api import ApiServer, MetricsRegistry, PortInUseError, create_app, serve
from signaller.errors import ConfigError, TransientError
from signaller.snapshot.control import SidecarControl, SidecarStatus
from tests.unit.test_api import FakeLoop

pytestmark = pytest.mark.integration

TOKEN = "tok-integration-7d2a"


@pytest.fixture
def control() -> Iterator[SidecarControl]:
    control = SidecarControl()
    with FakeLoop(control):
        yield control


@pytest.fixture
def server(control: SidecarControl) -> Iterator[ApiServer]:
    api = serve(create_app(control, token=None, metrics=MetricsRegistry()), "127.0.0.1", 0)
    try:
        api.wait_started(10)
        yield api
    finally:
        api.stop()


def test_serves_real_http_requests_until_stopped(server: ApiServer, control: SidecarControl) -> None:
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}"
    control.publish(SidecarStatus(streaming=True, committed_lsn=0x16B3748, events=3))

    health = httpx.get(f"{server.url}/health", timeout=5)
    accepted = httpx.post(f"{server.url}/signals", timeout=5,
                          json={"id": "it-1", "type": "execute-snapshot", "data": {"data-collections": ["public.t"]}})
    metrics = httpx.get(f"{server.url}/metrics", timeout=5)

    assert (health.status_code, health.json()["committed_lsn"]) == (200, "0/16B3748")
    assert (accepted.status_code, accepted.json()) == (202, {"id": "it-1", "status": "accepted"})
    assert 'signaller_signals_total{channel="http",outcome="accepted"} 1.0' in metrics.text
    assert "server" not in health.headers  # uvicorn's Server header is off

    server.stop()
    assert not server.running
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/health", timeout=2)
    server.stop()  # idempotent


def test_serving_installs_no_signal_handlers(control: SidecarControl) -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    api = serve(create_app(control, token=None, metrics=MetricsRegistry()), "127.0.0.1", 0)
    try:
        api.wait_started(10)
        assert {sig: signal.getsignal(sig) for sig in before} == before
        assert any(thread.daemon and thread.name == f"signaller-api-{api.port}" for thread in threading.enumerate())
    finally:
        api.stop()


def test_port_in_use_is_a_clear_transient_error(control: SidecarControl) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        with pytest.raises(PortInUseError) as caught:
            serve(create_app(control, token=None, metrics=MetricsRegistry()), "127.0.0.1", port)

    assert isinstance(caught.value, TransientError)
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "already in use" in str(caught.value)


def test_non_loopback_host_without_token_is_refused(control: SidecarControl) -> None:
    app = create_app(control, token=None, metrics=MetricsRegistry())
    with pytest.raises(ConfigError, match=r"signaller\.http\.token") as caught:
        serve(app, "0.0.0.0", 0)
    assert "'0.0.0.0'" in str(caught.value)


def test_non_loopback_host_with_token_serves_and_authenticates(control: SidecarControl) -> None:
    api = serve(create_app(control, token=TOKEN, metrics=MetricsRegistry()), "0.0.0.0", 0)
    try:
        api.wait_started(10)
        assert api.url == f"http://127.0.0.1:{api.port}"
        assert httpx.get(f"{api.url}/snapshots", timeout=5).status_code == 401
        answer = httpx.get(f"{api.url}/snapshots", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
        assert answer.status_code == 200
        assert httpx.get(f"{api.url}/health", timeout=5).status_code == 503  # open; not streaming yet
    finally:
        api.stop()
