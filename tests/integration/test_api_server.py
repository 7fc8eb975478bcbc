"""signaller.api.serve: uvicorn on a real socket, on a daemon thread (no PostgreSQL or Kafka needed)."""

from __future__ import annotations

import json
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

    health = httpx.get(f"{server.url}/health/details", timeout=5)
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
        health = httpx.get(f"{api.url}/health", timeout=5)  # open; not streaming yet
        assert (health.status_code, health.json()) == (503, {"status": "starting"})
    finally:
        api.stop()


SIGNAL = {"id": "it-x", "type": "execute-snapshot", "data": {"data-collections": ["public.t"]}}


def test_a_web_page_cannot_drive_the_api_over_real_http(server: ApiServer, control: SidecarControl) -> None:
    """Issue 10, finding 7: what a browser page could send (text/plain, foreign Origin, rebound Host) is refused."""
    body = json.dumps(SIGNAL).encode()
    with httpx.Client(base_url=server.url, timeout=5) as client:
        simple = client.post("/signals", content=body, headers={"Content-Type": "text/plain",
                                                                  "Origin": "https://evil.example"})
        no_origin = client.post("/signals", content=body, headers={"Content-Type": "text/plain"})
        cross_site = client.post("/signals", content=body, headers={"Content-Type": "application/json",
                                                                      "Sec-Fetch-Site": "cross-site"})
        rebound = client.post("/signals", content=body, headers={"Content-Type": "application/json",
                                                                   "Host": f"evil.example:{server.port}"})
        own_page = client.post("/signals", content=body, headers={
            "Content-Type": "application/json", "Origin": server.url, "Sec-Fetch-Site": "same-origin"})

    assert (simple.status_code, simple.json()["error"][:44]) == (403, "cross-site request refused: Origin 'https://")
    assert no_origin.status_code == 415
    assert no_origin.json()["error"].endswith("accepted: application/json (optionally with charset=utf-8)")
    assert cross_site.status_code == 403
    assert rebound.status_code == 421
    assert rebound.json()["error"].startswith(f"Host 'evil.example:{server.port}' is not a loopback address")
    assert own_page.status_code == 202


def test_malformed_requests_over_real_http_are_4xx_with_a_reason(server: ApiServer) -> None:
    """Issue 10, finding 8: deep nesting was a 500; a non-UTF-8 chunk size was {"detail": ...}."""
    json_type = {"Content-Type": "application/json"}
    with httpx.Client(base_url=server.url, timeout=10) as client:
        deep = client.post("/signals", content=b"[" * 100_000 + b"]" * 100_000, headers=json_type)
        not_utf8 = client.put("/snapshots/chunk-size", content=b'{"chunk_size": "\xff"}', headers=json_type)
        wrong_method = client.delete("/signals")
        nowhere = client.get("/nowhere")

    assert (deep.status_code, deep.json()["error"]) == (400, "the body nests arrays/objects deeper than 64 levels; "
                                                             "accepted: JSON nested at most 64 levels deep")
    assert (not_utf8.status_code, list(not_utf8.json())) == (400, ["error"])
    assert (wrong_method.status_code, wrong_method.headers["allow"]) == (405, "POST")
    assert set(wrong_method.json()) == set(nowhere.json()) == {"error"}
    assert nowhere.status_code == 404


def test_health_without_the_token_discloses_nothing(control: SidecarControl) -> None:
    """Issue 10, finding 6: /health (no token) showed last_error, naming the database host and user."""
    error = 'connection to server at "db.internal" (10.0.0.7), port 5432 failed: FATAL: role "cdc_admin" is locked'
    api = serve(create_app(control, token=TOKEN, metrics=MetricsRegistry()), "127.0.0.1", 0)
    try:
        api.wait_started(10)
        control.report_error(error)
        health = httpx.get(f"{api.url}/health", timeout=5)
        details = httpx.get(f"{api.url}/health/details", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5)
        anonymous_details = httpx.get(f"{api.url}/health/details", timeout=5)
    finally:
        api.stop()

    assert (health.status_code, health.json()) == (503, {"status": "error"})
    assert "db.internal" not in health.text and "cdc_admin" not in health.text
    assert (details.status_code, details.json()["last_error"]) == (200, error)
    assert anonymous_details.status_code == 401
