"""signaller.api: the HTTP API over a SidecarControl, driven in-process through httpx's ASGI transport.

``FakeLoop`` plays the capture loop: a thread draining the control's queue and resolving each
future (accept, or reject with a reason); the other test modules of the API reuse it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from signaller.api import MetricsRegistry, create_app
from signaller.api.app import ANSWER_TIMEOUT_S, MAX_SIGNAL_BYTES
from signaller.api.errors import UNAUTHORIZED
from signaller.api.models import iso_utc, progress_of
from signaller.errors import ConfigError, SignalError, SignalNotApplied
from signaller.signals.model import Signal, SignalOutcome
from signaller.signals.parsing import parse_action, signal_from_json
from signaller.snapshot.control import SidecarControl, SidecarStatus, TableProgress

pytestmark = pytest.mark.unit

TOKEN = "tok-3b1e-never-logged"
MISSING_TABLE = "public.missing"
MISSING_REASON = "table public.missing is not captured (no such table, or excluded by table.include.list)"
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "signal.schema.json"


class FakeLoop:
    """The capture loop's side of a ``SidecarControl``, on a thread.

    Accepts every signal except an ``execute-snapshot`` naming ``MISSING_TABLE`` (rejected with
    ``MISSING_REASON``) and every chunk size except those in ``refused_sizes``. While ``silent`` it
    leaves the futures pending (as a stuck loop would); ``received`` lists what was submitted.
    """

    def __init__(self, control: SidecarControl, refused_sizes: frozenset[int] = frozenset()) -> None:
        self.control = control
        self.refused_sizes = refused_sizes
        self.silent = False
        self.received: list[Signal | int] = []
        self.pending: list[tuple[Signal | int, Future[SignalOutcome]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-capture-loop", daemon=True)

    def __enter__(self) -> FakeLoop:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _serve(self) -> None:
        while not self._stop.is_set():
            self.pending.extend(self.control.drain())
            if not self.silent:
                for item, future in self.pending:
                    self.received.append(item)
                    future.set_result(self.outcome(item))
                self.pending.clear()
            time.sleep(0.002)

    def outcome(self, item: Signal | int) -> SignalOutcome:
        if isinstance(item, int):
            if item in self.refused_sizes:
                return SignalOutcome("", False, f"chunk size {item} refused by the engine")
            return SignalOutcome("", True)
        if MISSING_TABLE in item.data.get("data-collections", ()):
            return SignalOutcome(item.id, False, MISSING_REASON)
        return SignalOutcome(item.id, True)


@pytest.fixture
def control() -> SidecarControl:
    return SidecarControl()


@pytest.fixture
def loop(control: SidecarControl) -> Iterator[FakeLoop]:
    with FakeLoop(control, refused_sizes=frozenset({4242})) as fake:
        yield fake


@pytest.fixture
def metrics() -> MetricsRegistry:
    return MetricsRegistry()


@pytest.fixture
def app(control: SidecarControl, metrics: MetricsRegistry) -> FastAPI:
    return create_app(control, token=None, metrics=metrics)


def call(app: FastAPI, method: str, path: str, *, token: str | None = None,
         headers: dict[str, str] | None = None, **kwargs: Any) -> httpx.Response:
    """One request through the ASGI transport (no socket), in a fresh event loop, to 127.0.0.1:8089."""
    all_headers = dict(headers or {})
    if token is not None:
        all_headers["Authorization"] = f"Bearer {token}"

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8089") as client:
            return await client.request(method, path, headers=all_headers, **kwargs)

    return asyncio.run(send())


def parser_reason(raw: str) -> str:
    """What ``signals.parsing`` says about ``raw`` as an HTTP signal (it must reject it)."""
    try:
        parse_action(signal_from_json(raw, channel="http"))
    except SignalError as exc:
        return exc.reason
    raise AssertionError(f"the parser accepted {raw!r}")


def sample(metrics: MetricsRegistry, name: str, **labels: str) -> float | None:
    value: float | None = metrics.registry.get_sample_value(name, labels)
    return value


EXECUTE = {"id": "req-1", "type": "execute-snapshot",
           "data": {"data-collections": ["public\\.orders"], "type": "incremental",
                    "additional-conditions": [{"data-collection": "public\\.orders", "filter": "id > 10"}]}}


# -- POST /signals -------------------------------------------------------------------------------------------


def test_accepted_signal_is_submitted_and_answered_202(app: FastAPI, loop: FakeLoop, metrics: MetricsRegistry) -> None:
    response = call(app, "POST", "/signals", json=EXECUTE)

    assert response.status_code == 202
    assert response.json() == {"id": "req-1", "status": "accepted"}
    [signal] = loop.received
    assert isinstance(signal, Signal)
    assert (signal.id, signal.type, signal.channel) == ("req-1", "execute-snapshot", "http")
    assert signal.data == EXECUTE["data"]
    assert sample(metrics, "signaller_signals_total", channel="http", outcome="accepted") == 1.0


@pytest.mark.parametrize("kind", ["pause-snapshot", "resume-snapshot"])
def test_signals_without_data_fields_are_accepted(app: FastAPI, loop: FakeLoop, kind: str) -> None:
    response = call(app, "POST", "/signals", json={"id": "p-1", "type": kind, "data": {}})
    assert (response.status_code, response.json()) == (202, {"id": "p-1", "status": "accepted"})


@pytest.mark.parametrize(("raw", "status"), [
    pytest.param('{"id": "x", "type": ', 400, id="bad-json"),
    pytest.param("", 400, id="empty-body"),
    pytest.param('["execute-snapshot"]', 422, id="not-an-object"),
    pytest.param('{"id": "x", "type": "explode", "data": {}}', 422, id="unknown-type"),
    pytest.param('{"id": "x", "type": "Execute-Snapshot", "data": {}}', 422, id="type-is-case-sensitive"),
    pytest.param('{"id": "x", "type": "log", "data": "{\\"message\\": \\"hi\\"}"}', 422, id="data-not-an-object"),
    pytest.param('{"id": "x", "type": "log", "data": [1]}', 422, id="data-an-array"),
    pytest.param('{"id": "x", "type": "execute-snapshot", "data": {}}', 422, id="missing-data-collections"),
    pytest.param('{"id": "x", "type": "execute-snapshot", "data": {"data-collections": []}}', 422,
                 id="empty-data-collections"),
    pytest.param('{"id": "x", "type": "execute-snapshot", "data": {"data-collections": ["public.t"], '
                 '"type": "sideways"}}', 422, id="bad-snapshot-type"),
    pytest.param('{"type": "pause-snapshot", "data": {}}', 422, id="missing-id"),
    pytest.param('{"id": "w-open", "type": "snapshot-window-open", "data": {}}', 422, id="watermark-over-http"),
])
def test_invalid_signals_are_answered_with_the_parser_reason(
    app: FastAPI, loop: FakeLoop, metrics: MetricsRegistry, raw: str, status: int,
) -> None:
    response = call(app, "POST", "/signals", content=raw.encode(), headers={"Content-Type": "application/json"})

    assert response.status_code == status
    assert response.json() == {"error": parser_reason(raw)}
    assert loop.received == []
    assert sample(metrics, "signaller_signals_total", channel="http", outcome="invalid") == 1.0


JSON_HEADERS = {"Content-Type": "application/json"}


def test_body_that_is_not_utf8_is_a_400(app: FastAPI, loop: FakeLoop) -> None:
    response = call(app, "POST", "/signals", content=b'{"id": "\xff"}', headers=JSON_HEADERS)
    assert (response.status_code, response.json()) == (400, {
        "error": "the body is not UTF-8 text (invalid byte at offset 8); accepted: JSON encoded as UTF-8"})


def test_oversized_body_is_a_413_and_never_parsed(app: FastAPI, loop: FakeLoop) -> None:
    response = call(app, "POST", "/signals", content=b" " * (MAX_SIGNAL_BYTES + 1), headers=JSON_HEADERS)
    assert response.status_code == 413
    assert response.json() == {
        "error": f"the body is larger than {MAX_SIGNAL_BYTES} bytes; accepted: at most {MAX_SIGNAL_BYTES} bytes"}
    assert loop.received == []


def test_engine_rejection_passes_the_reason_and_id_through(
    app: FastAPI, loop: FakeLoop, metrics: MetricsRegistry,
) -> None:
    signal = {"id": "req-2", "type": "execute-snapshot", "data": {"data-collections": [MISSING_TABLE]}}

    response = call(app, "POST", "/signals", json=signal)

    assert response.status_code == 400
    assert response.json() == {"error": MISSING_REASON, "id": "req-2"}
    assert sample(metrics, "signaller_signals_total", channel="http", outcome="rejected") == 1.0


def test_signal_error_raised_by_the_loop_is_a_rejection(control: SidecarControl, app: FastAPI) -> None:
    def raise_from_loop() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            for _item, future in control.drain():
                future.set_exception(SignalError("filter: unsafe SQL (a semicolon)"))
                return
            time.sleep(0.002)

    thread = threading.Thread(target=raise_from_loop)
    thread.start()
    response = call(app, "POST", "/signals", json=EXECUTE)
    thread.join()

    assert response.status_code == 400
    assert response.json() == {"error": "filter: unsafe SQL (a semicolon)", "id": "req-1"}


def test_silent_loop_is_a_503_and_the_pending_future_stays_resolvable(
    control: SidecarControl, metrics: MetricsRegistry,
) -> None:
    app = create_app(control, token=None, metrics=metrics, answer_timeout_s=0.2)
    with FakeLoop(control) as loop:
        loop.silent = True
        response = call(app, "POST", "/signals", json=EXECUTE)
        assert response.status_code == 503
        assert response.json() == {"error": "the sidecar did not answer within 0.2 s"}
        # The request gave up, but the loop's future was not cancelled: answering it later must work.
        [(_, future)] = loop.pending
        assert not future.cancelled()
        loop.silent = False
        assert future.result(timeout=5).accepted
    assert sample(metrics, "signaller_signals_total", channel="http", outcome="timeout") == 1.0


def test_a_request_the_loop_could_not_apply_is_a_503_naming_why_at_once(
    control: SidecarControl, metrics: MetricsRegistry,
) -> None:
    """The capture session failed while handling the request (``HttpSignalChannel.fail_waiting``): 503 with the
    loop's reason and the signal's id, at once (not after the timeout), counted ``not_applied``."""
    app = create_app(control, token=None, metrics=metrics, answer_timeout_s=20)
    reason = "not applied: the capture session failed before the request's effect was stored (...): send it again"

    def fail_next() -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            for _, future in control.drain():
                future.set_exception(SignalNotApplied(reason))
                return
            time.sleep(0.002)

    for method, path, body in (("POST", "/signals", EXECUTE), ("PUT", "/snapshots/chunk-size", {"chunk_size": 10})):
        failer = threading.Thread(target=fail_next)
        failer.start()
        started = time.monotonic()
        response = call(app, method, path, json=body)
        failer.join()
        assert time.monotonic() - started < 5
        assert response.status_code == 503
        assert response.json() == ({"error": reason, "id": "req-1"} if path == "/signals" else {"error": reason})
    assert sample(metrics, "signaller_signals_total", channel="http", outcome="not_applied") == 1.0


def test_default_answer_timeout_is_30_seconds() -> None:
    assert ANSWER_TIMEOUT_S == 30.0
    assert f"the sidecar did not answer within {ANSWER_TIMEOUT_S:g} s" == "the sidecar did not answer within 30 s"


# -- authentication ------------------------------------------------------------------------------------------


@pytest.fixture
def secured(control: SidecarControl, metrics: MetricsRegistry) -> FastAPI:
    return create_app(control, token=TOKEN, metrics=metrics)


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/signals"), ("GET", "/snapshots"), ("PUT", "/snapshots/chunk-size"), ("GET", "/metrics"),
    ("GET", "/openapi.json"), ("GET", "/docs"), ("GET", "/no-such-route"),
])
@pytest.mark.parametrize("authorization", [None, f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}",
                                           TOKEN, "Bearer "])
def test_routes_need_the_bearer_token(
    secured: FastAPI, loop: FakeLoop, method: str, path: str, authorization: str | None,
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    response = call(secured, method, path, headers=headers, json=EXECUTE if method != "GET" else None)

    assert response.status_code == 401
    assert response.json() == {"error": UNAUTHORIZED}
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert loop.received == []


def test_right_token_is_let_through(secured: FastAPI, loop: FakeLoop) -> None:
    assert call(secured, "POST", "/signals", token=TOKEN, json=EXECUTE).status_code == 202
    assert call(secured, "GET", "/snapshots", token=TOKEN).status_code == 200
    assert call(secured, "GET", "/metrics", token=TOKEN).status_code == 200
    assert call(secured, "GET", "/openapi.json", token=TOKEN).status_code == 200
    # The scheme is case-insensitive (RFC 7235).
    assert call(secured, "GET", "/snapshots", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200


def test_health_is_open_even_with_a_token(secured: FastAPI) -> None:
    response = call(secured, "GET", "/health")
    assert response.status_code == 503
    assert response.json()["status"] == "starting"


def test_no_token_means_no_authentication(app: FastAPI, loop: FakeLoop) -> None:
    assert call(app, "GET", "/snapshots").status_code == 200
    assert call(app, "GET", "/snapshots", headers={"Authorization": "Bearer whatever"}).status_code == 200


def test_empty_token_is_refused(control: SidecarControl, metrics: MetricsRegistry) -> None:
    with pytest.raises(ConfigError, match=r"signaller\.http\.token"):
        create_app(control, token="", metrics=metrics)


# -- GET /snapshots ------------------------------------------------------------------------------------------

STARTED = 1787392800.123  # 2026-08-22T10:00:00.123Z


def test_snapshots_reports_every_table(control: SidecarControl, app: FastAPI) -> None:
    control.publish(SidecarStatus(
        running=True, paused=False, chunk_size=512, correlation_id="req-9",
        tables=(
            TableProgress("public.orders", "running", rows_emitted=50, estimated_rows=200, chunk_from="100",
                          chunk_to="150", maximum_key="9999", started_at=STARTED, correlation_id="req-9",
                          filter="(id > 10)"),
            TableProgress("public.lines", "completed", rows_emitted=300, estimated_rows=200, status="SUCCEEDED",
                          started_at=STARTED, ended_at=STARTED + 61.5, correlation_id="req-8"),
            TableProgress("public.fresh", "queued", estimated_rows=None),
            TableProgress("public.empty", "skipped", estimated_rows=0, status="EMPTY"),
        ),
    ))

    response = call(app, "GET", "/snapshots")

    assert response.status_code == 200
    body = response.json()
    assert {key: body[key] for key in ("running", "paused", "chunk_size", "correlation_id")} == {
        "running": True, "paused": False, "chunk_size": 512, "correlation_id": "req-9"}
    orders, lines, fresh, empty = body["tables"]
    assert orders == {
        "table": "public.orders", "state": "running", "rows_emitted": 50, "estimated_rows": 200, "progress": 0.25,
        "chunk_from": "100", "chunk_to": "150", "maximum_key": "9999", "status": None,
        "started_at": "2026-08-22T10:00:00.123Z", "ended_at": None, "correlation_id": "req-9", "filter": "(id > 10)",
    }
    assert lines["progress"] == 1.0  # more rows than the estimate: clipped
    assert (lines["status"], lines["ended_at"]) == ("SUCCEEDED", "2026-08-22T10:01:01.623Z")
    assert fresh["progress"] is None and fresh["rows_emitted"] == 0 and fresh["chunk_from"] is None
    assert empty["progress"] is None  # estimate 0: no ratio


def test_progress_and_times_helpers() -> None:
    assert progress_of(0, 10) == 0.0
    assert progress_of(5, 10) == 0.5
    assert progress_of(11, 10) == 1.0
    assert progress_of(-1, 10) == 0.0
    assert progress_of(5, None) is None
    assert progress_of(5, -1) is None
    assert iso_utc(None) is None
    assert iso_utc(0) == "1970-01-01T00:00:00.000Z"


# -- PUT /snapshots/chunk-size -------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2048, 1_000_000])
def test_chunk_size_is_handed_to_the_loop(app: FastAPI, loop: FakeLoop, size: int) -> None:
    response = call(app, "PUT", "/snapshots/chunk-size", json={"chunk_size": size})
    assert (response.status_code, response.json()) == (200, {"chunk_size": size})
    assert loop.received == [size]


@pytest.mark.parametrize("body", [
    {"chunk_size": 0}, {"chunk_size": -5}, {"chunk_size": 1_000_001}, {"chunk_size": "1024"}, {"chunk_size": 10.5},
    {"chunk_size": True}, {"chunk_size": None}, {}, {"chunk_size": 10, "extra": 1}, [1024],
])
def test_invalid_chunk_size_is_a_400(app: FastAPI, loop: FakeLoop, body: object) -> None:
    response = call(app, "PUT", "/snapshots/chunk-size", json=body)
    assert response.status_code == 400
    assert set(response.json()) == {"error"}
    assert response.json()["error"]
    assert loop.received == []


def test_chunk_size_out_of_range_names_the_field(app: FastAPI, loop: FakeLoop) -> None:
    response = call(app, "PUT", "/snapshots/chunk-size", json={"chunk_size": 0})
    assert response.json() == {
        "error": 'chunk_size: 0 is out of range; accepted: {"chunk_size": <integer from 1 to 1000000>}'}


def test_chunk_size_refused_by_the_loop_is_a_400(app: FastAPI, loop: FakeLoop) -> None:
    response = call(app, "PUT", "/snapshots/chunk-size", json={"chunk_size": 4242})
    assert (response.status_code, response.json()) == (400, {"error": "chunk size 4242 refused by the engine"})


# -- GET /health ---------------------------------------------------------------------------------------------


def test_health_ok_while_streaming(control: SidecarControl, app: FastAPI) -> None:
    control.publish(SidecarStatus(streaming=True, committed_lsn=0x1_016B3748, events=42))
    response = call(app, "GET", "/health")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})
    details = call(app, "GET", "/health/details")
    assert (details.status_code, details.json()) == (200, {
        "status": "ok", "streaming": True, "committed_lsn": "1/16B3748", "events": 42, "last_error": None})


def test_health_starting_and_error_are_503(control: SidecarControl, app: FastAPI) -> None:
    response = call(app, "GET", "/health")
    assert (response.status_code, response.json()) == (503, {"status": "starting"})
    control.publish(SidecarStatus(streaming=False, last_error="replication slot is active for PID 4711"))
    response = call(app, "GET", "/health")
    assert (response.status_code, response.json()) == (503, {"status": "error"})
    details = call(app, "GET", "/health/details")
    assert (details.status_code, details.json()) == (200, {
        "status": "error", "streaming": False, "committed_lsn": "0/0", "events": 0,
        "last_error": "replication slot is active for PID 4711"})


def test_health_discloses_nothing_about_the_database_without_the_token(
    control: SidecarControl, secured: FastAPI,
) -> None:
    error = 'connection to server at "db.internal" (10.0.0.7), port 5432 failed: password authentication ' \
            'failed for user "cdc_admin"'
    control.publish(SidecarStatus(streaming=False, committed_lsn=0x16B3748, events=9, last_error=error))

    response = call(secured, "GET", "/health")

    assert (response.status_code, response.json()) == (503, {"status": "error"})
    for secret in ("db.internal", "10.0.0.7", "cdc_admin", "5432", "16B3748"):
        assert secret not in response.text
    assert call(secured, "GET", "/health/details").status_code == 401
    details = call(secured, "GET", "/health/details", token=TOKEN)
    assert (details.status_code, details.json()["last_error"]) == (200, error)


# -- GET /metrics and MetricsRegistry ------------------------------------------------------------------------

METRIC_NAMES = ("signaller_events_total", "signaller_snapshot_rows_total", "signaller_signals_total",
                "signaller_committed_lsn", "signaller_streaming_lag_seconds", "signaller_kafka_in_flight",
                "signaller_snapshot_chunk_seconds")


def test_metrics_route_exposes_every_metric(app: FastAPI, metrics: MetricsRegistry) -> None:
    metrics.count_events("public.orders", "c", 3)
    metrics.count_snapshot_rows("public.orders", 1024)
    metrics.acknowledged(0x16B3748, commit_time=100.0, now=102.5)
    metrics.set_kafka_in_flight(7)
    metrics.observe_chunk(0.3)

    response = call(app, "GET", "/metrics")

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    for name in METRIC_NAMES:
        assert f"# TYPE {name.removesuffix('_total')}" in text, name
    assert 'signaller_events_total{op="c",table="public.orders"} 3.0' in text
    assert "signaller_streaming_lag_seconds 2.5" in text
    assert "signaller_snapshot_chunk_seconds_count 1.0" in text


def test_metrics_registry_counts_batches_and_is_isolated() -> None:
    first, second = MetricsRegistry(), MetricsRegistry()
    for _ in range(3):
        first.count_events("public.t", "u", 10)
    first.count_events("public.t", "d")
    first.count_snapshot_rows("public.t", 5)
    first.count_signal("kafka", "accepted")
    first.set_committed_lsn(123)
    first.set_streaming_lag(commit_time=50.0, now=40.0)  # clock skew: never negative

    assert sample(first, "signaller_events_total", table="public.t", op="u") == 30.0
    assert sample(first, "signaller_events_total", table="public.t", op="d") == 1.0
    assert sample(first, "signaller_snapshot_rows_total", table="public.t") == 5.0
    assert sample(first, "signaller_signals_total", channel="kafka", outcome="accepted") == 1.0
    assert sample(first, "signaller_committed_lsn") == 123.0
    assert sample(first, "signaller_streaming_lag_seconds") == 0.0
    assert sample(second, "signaller_events_total", table="public.t", op="u") is None
    assert b"signaller_events_total" in first.render()


# -- OpenAPI -------------------------------------------------------------------------------------------------


def test_openapi_lists_the_routes_and_documents_the_bodies(app: FastAPI) -> None:
    response = call(app, "GET", "/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["info"]["title"] == "signaller"
    paths = document["paths"]
    assert {path: sorted(methods) for path, methods in paths.items()} == {
        "/signals": ["post"], "/snapshots": ["get"], "/snapshots/chunk-size": ["put"], "/health": ["get"],
        "/health/details": ["get"], "/metrics": ["get"],
    }
    signals = paths["/signals"]["post"]
    assert signals["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SignalRequest"}
    assert {"202", "400", "403", "413", "415", "421", "422", "503"} <= set(signals["responses"])
    assert "422" not in paths["/snapshots/chunk-size"]["put"]["responses"]  # validation errors are 400s
    schemas = document["components"]["schemas"]
    for name in ("SignalRequest", "SignalAccepted", "ErrorBody", "SnapshotsBody", "TableProgressBody", "ChunkSize",
                 "HealthBody", "HealthDetails"):
        assert name in schemas, name
    assert set(schemas["TableProgressBody"]["properties"]) == {
        "table", "state", "rows_emitted", "estimated_rows", "progress", "chunk_from", "chunk_to", "maximum_key",
        "status", "started_at", "ended_at", "correlation_id", "filter"}
    assert call(app, "GET", "/docs").status_code == 200


def test_request_body_schema_mirrors_signal_schema_json(app: FastAPI) -> None:
    reference = json.loads(SCHEMA_FILE.read_text())
    schemas = call(app, "GET", "/openapi.json").json()["components"]["schemas"]
    request = schemas["SignalRequest"]
    variants = {ref.rsplit("/", 1)[1] for ref in request["discriminator"]["mapping"].values()}

    # One variant per signal type, each with the reference's envelope and a data schema of its own.
    assert sorted(request["discriminator"]["mapping"]) == sorted(reference["properties"]["type"]["enum"])
    for name in variants:
        variant = schemas[name]
        assert sorted(variant["required"]) == sorted(reference["required"]), name
        assert set(variant["properties"]) == set(reference["properties"]), name
        assert "additionalProperties" not in variant, name  # unknown top-level keys are ignored, as by the parser
    assert schemas["StopSnapshotSignal"]["properties"]["data"] == {"$ref": "#/components/schemas/StopSnapshotData"}
    for ours, theirs in (("ExecuteSnapshotData", "executeSnapshotData"), ("StopSnapshotData", "stopSnapshotData"),
                         ("LogData", "logData"), ("AdditionalCondition", "additionalCondition")):
        definition = reference["$defs"][theirs]
        assert set(schemas[ours]["properties"]) == set(definition["properties"]), ours
        assert sorted(schemas[ours].get("required", [])) == sorted(definition.get("required", [])), ours
    # A blocking snapshot is the same but for surrogate-key (the parser refuses it there) and needs its type.
    blocking = schemas["BlockingSnapshotData"]
    assert set(blocking["properties"]) == set(reference["$defs"]["executeSnapshotData"]["properties"]) - {
        "surrogate-key"}
    assert sorted(blocking["required"]) == ["data-collections", "type"]
    assert schemas["StopSnapshotData"]["properties"]["type"]["pattern"] == reference["$defs"]["snapshotType"]["pattern"]


def test_log_signal_without_message_is_documented_invalid_and_answered_422(app: FastAPI, loop: FakeLoop) -> None:
    schemas = call(app, "GET", "/openapi.json").json()["components"]["schemas"]
    assert schemas["LogSignal"]["properties"]["data"] == {"$ref": "#/components/schemas/LogData"}
    assert schemas["LogData"]["required"] == ["message"]

    response = call(app, "POST", "/signals", json={"id": "l-1", "type": "log", "data": {}})
    assert response.status_code == 422
    assert response.json()["error"].startswith("data.message: missing")
    logged = call(app, "POST", "/signals", json={"id": "l-2", "type": "log", "data": {"message": "hi"}})
    assert logged.status_code == 202


def test_openapi_declares_the_bearer_scheme_and_every_status(secured: FastAPI) -> None:
    document = call(secured, "GET", "/openapi.json", token=TOKEN).json()

    assert document["components"]["securitySchemes"] == {"bearerAuth": {
        "type": "http", "scheme": "bearer",
        "description": "signaller.http.token; every operation but GET /health requires it."}}
    assert document["security"] == [{"bearerAuth": []}]
    statuses = {path: sorted(operation["responses"]) for path, item in document["paths"].items()
                for operation in item.values()}
    assert statuses == {
        "/signals": ["202", "400", "401", "403", "413", "415", "422", "500", "503"],
        "/snapshots": ["200", "401", "403"],
        "/snapshots/chunk-size": ["200", "400", "401", "403", "413", "415", "500", "503"],
        "/health": ["200", "403", "503"],
        "/health/details": ["200", "401", "403"],
        "/metrics": ["200", "401", "403"],
    }
    assert document["paths"]["/health"]["get"]["security"] == []
    unauthorized = document["paths"]["/metrics"]["get"]["responses"]["401"]
    assert unauthorized["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    assert "WWW-Authenticate" in unauthorized["headers"]


def test_openapi_without_a_token_declares_no_security_and_the_host_check(app: FastAPI) -> None:
    document = call(app, "GET", "/openapi.json").json()
    assert "securitySchemes" not in document["components"]
    assert "security" not in document
    for item in document["paths"].values():
        for operation in item.values():
            assert "401" not in operation["responses"]
            assert {"403", "421"} <= set(operation["responses"])


def test_documented_examples_are_accepted_by_the_parser(app: FastAPI) -> None:
    request = call(app, "GET", "/openapi.json").json()["components"]["schemas"]["SignalRequest"]
    for example in request["examples"]:
        parse_action(signal_from_json(json.dumps(example), channel="http"))


# -- cross-site requests (finding 7) -------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [
    None, "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data",
    "application/json; charset=latin-1", "application/jsonx", "",
])
@pytest.mark.parametrize("path", ["/signals", "/snapshots/chunk-size"])
def test_state_changing_requests_need_application_json(
    app: FastAPI, loop: FakeLoop, metrics: MetricsRegistry, content_type: str | None, path: str,
) -> None:
    body = json.dumps(EXECUTE if path == "/signals" else {"chunk_size": 5}).encode()
    headers = {} if content_type is None else {"Content-Type": content_type}
    method = "POST" if path == "/signals" else "PUT"

    response = call(app, method, path, content=body, headers=headers)

    assert response.status_code == 415
    shown = "none" if not content_type else repr(content_type)
    assert response.json() == {"error": f"Content-Type {shown} is not accepted; accepted: application/json "
                                        "(optionally with charset=utf-8)"}
    assert loop.received == []


@pytest.mark.parametrize("content_type", ["application/json", "Application/JSON; charset=UTF-8",
                                          'application/json;charset="utf-8"'])
def test_json_content_types_are_accepted(app: FastAPI, loop: FakeLoop, content_type: str) -> None:
    response = call(app, "POST", "/signals", content=json.dumps(EXECUTE).encode(),
                    headers={"Content-Type": content_type})
    assert response.status_code == 202


def test_the_finding_a_foreign_page_cannot_start_a_snapshot(app: FastAPI, loop: FakeLoop) -> None:
    """Issue 10, finding 7: text/plain with a foreign Origin was accepted (202)."""
    response = call(app, "POST", "/signals", content=json.dumps(EXECUTE).encode(),
                    headers={"Content-Type": "text/plain", "Origin": "https://evil.example"})
    assert response.status_code == 403
    assert response.json()["error"].startswith("cross-site request refused: Origin 'https://evil.example'")
    assert loop.received == []


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://127.0.0.1:3000", "http://localhost:8089",
                                    "https://127.0.0.1:9999", "file://", "not a url", "http://127.0.0.1:99999"])
@pytest.mark.parametrize(("method", "path"), [("POST", "/signals"), ("PUT", "/snapshots/chunk-size"),
                                              ("GET", "/snapshots"), ("GET", "/health")])
def test_foreign_origins_are_refused_with_403(app: FastAPI, loop: FakeLoop, origin: str, method: str,
                                              path: str) -> None:
    response = call(app, method, path, headers={"Origin": origin},
                    json=None if method == "GET" else (EXECUTE if path == "/signals" else {"chunk_size": 5}))
    assert response.status_code == 403
    assert response.json() == {"error": f"cross-site request refused: Origin {origin!r} is not this API's origin; "
                                        "accepted: no Origin header, or the API's own origin "
                                        "(http(s)://127.0.0.1:8089)"}
    assert loop.received == []


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8089", "HTTP://127.0.0.1:8089"])
def test_the_apis_own_origin_is_accepted(app: FastAPI, loop: FakeLoop, origin: str) -> None:
    """The Swagger UI at /docs posts with the API's own Origin."""
    response = call(app, "POST", "/signals", json=EXECUTE, headers={"Origin": origin, "Sec-Fetch-Site": "same-origin"})
    assert response.status_code == 202


def test_origin_is_compared_with_the_default_port_of_its_scheme(app: FastAPI, loop: FakeLoop) -> None:
    async def send(host: str, origin: str) -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{host}") as client:
            response = await client.get("/snapshots", headers={"Origin": origin})
            return response.status_code

    assert asyncio.run(send("localhost", "http://localhost")) == 200
    assert asyncio.run(send("localhost", "https://localhost")) == 200  # TLS ended by a proxy: Host has no port
    assert asyncio.run(send("localhost", "http://localhost:80")) == 200
    assert asyncio.run(send("localhost", "http://localhost:8080")) == 403


@pytest.mark.parametrize("site", ["cross-site", "same-site", "CROSS-SITE", "bogus"])
def test_sec_fetch_site_from_another_site_is_refused(app: FastAPI, loop: FakeLoop, site: str) -> None:
    response = call(app, "POST", "/signals", json=EXECUTE, headers={"Sec-Fetch-Site": site})
    assert response.status_code == 403
    assert response.json() == {"error": f"cross-site request refused: Sec-Fetch-Site {site!r}; accepted: no "
                                        "Sec-Fetch-Site header, 'same-origin' or 'none' (a page of another site "
                                        "or port cannot drive this API)"}
    assert loop.received == []


@pytest.mark.parametrize("site", ["same-origin", "none"])
def test_sec_fetch_site_of_the_api_itself_is_accepted(app: FastAPI, loop: FakeLoop, site: str) -> None:
    assert call(app, "POST", "/signals", json=EXECUTE, headers={"Sec-Fetch-Site": site}).status_code == 202


def _with_host(app: FastAPI, host: str, method: str = "GET", path: str = "/snapshots", **kwargs: Any) -> httpx.Response:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.request(method, path, headers={"Host": host}, **kwargs)

    return asyncio.run(send())


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8089", "attacker.localhost", "10.0.0.7:8089",
                                  "localhost.evil.example", "[::2]:8089", "127.0.0.1.nip.io", "0.0.0.0:8089"])
def test_without_a_token_a_foreign_host_is_refused_with_421(app: FastAPI, loop: FakeLoop, host: str) -> None:
    """DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 still sends its own Host."""
    response = _with_host(app, host, "POST", "/signals", json=EXECUTE)
    assert response.status_code == 421
    assert response.json() == {"error": f"Host {host!r} is not a loopback address; accepted: localhost, 127.0.0.1 "
                                        "(any 127.0.0.0/8 address) or [::1], with any port (this API has no bearer "
                                        "token, so it answers only requests addressed to a loopback name, a defence "
                                        "against DNS rebinding; set signaller.http.token to serve other names)"}
    assert loop.received == []


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:8089", "127.0.0.1", "127.0.0.1:8089", "127.1.2.3:1",
                                  "[::1]", "[::1]:8089"])
def test_without_a_token_loopback_hosts_are_served(app: FastAPI, loop: FakeLoop, host: str) -> None:
    assert _with_host(app, host, "POST", "/signals", json=EXECUTE).status_code == 202


def test_with_a_token_any_host_is_served(secured: FastAPI, loop: FakeLoop) -> None:
    """The token is the defence there: proxies and service names must work."""
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=secured)
        async with httpx.AsyncClient(transport=transport, base_url="http://signaller.prod.svc:8089") as client:
            return await client.get("/snapshots", headers={"Authorization": f"Bearer {TOKEN}"})

    assert asyncio.run(send()).status_code == 200


def test_cross_site_checks_come_before_authentication(secured: FastAPI, loop: FakeLoop) -> None:
    response = call(secured, "POST", "/signals", token=TOKEN, json=EXECUTE, headers={"Origin": "https://evil.example"})
    assert response.status_code == 403


# -- malformed requests are 4xx {"error": ...}, never 5xx (finding 8) ----------------------------------------


@pytest.mark.parametrize(("method", "path", "depth"), [
    ("POST", "/signals", 65), ("POST", "/signals", 1025), ("POST", "/signals", 100_000),
    ("PUT", "/snapshots/chunk-size", 65), ("PUT", "/snapshots/chunk-size", 1025),
])
def test_deeply_nested_json_is_a_400(app: FastAPI, loop: FakeLoop, method: str, path: str, depth: int) -> None:
    """Issue 10, finding 8: 100,000 nested arrays were a 500 (RecursionError)."""
    for body in ("[" * depth + "]" * depth, '{"id": "d", "type": "log", "data": {"message": "x", "x": '
                 + "[" * depth + "]" * depth + "}}"):
        response = call(app, method, path, content=body.encode(), headers=JSON_HEADERS)
        assert response.status_code == 400
        assert response.json() == {"error": "the body nests arrays/objects deeper than 64 levels; accepted: JSON "
                                            "nested at most 64 levels deep"}
    assert loop.received == []


def test_nesting_up_to_the_limit_is_accepted(app: FastAPI, loop: FakeLoop) -> None:
    nested = "[" * 62 + "]" * 62  # + the signal object and data: 64 levels
    body = '{"id": "n", "type": "pause-snapshot", "data": {"x": ' + nested + "}}"
    assert call(app, "POST", "/signals", content=body.encode(), headers=JSON_HEADERS).status_code == 202


@pytest.mark.parametrize(("body", "reason"), [
    (b'{"chunk_size": "\xff"}', "the body is not UTF-8 text (invalid byte at offset 16); accepted: JSON encoded "
                                "as UTF-8"),
    (b'{"chunk_size": ', "the body is not valid JSON (unexpected end of data: line 1 column 16 (char 15)); "
                         "accepted: one JSON object"),
    (b"", "the body is not valid JSON (Input is a zero-length, empty document: line 1 column 1 (char 0)); "
          "accepted: one JSON object"),
    (b"[5]", 'body: expected a JSON object, got an array; accepted: {"chunk_size": <integer from 1 to 1000000>}'),
    (b'{"chunk_size": 5, "size": 6}', "body: unknown key(s) 'size'; accepted: {\"chunk_size\": <integer from 1 to "
                                      "1000000>}"),
    (b"{}", 'chunk_size: missing; accepted: {"chunk_size": <integer from 1 to 1000000>}'),
    (b'{"chunk_size": true}', 'chunk_size: expected an integer, got a boolean; accepted: {"chunk_size": <integer '
                              'from 1 to 1000000>}'),
    (b'{"chunk_size": 10.5}', 'chunk_size: expected an integer, got the number 10.5; accepted: {"chunk_size": '
                              '<integer from 1 to 1000000>}'),
    (b'{"chunk_size": 1e400}', "the body is not valid JSON (number is infinity when parsed as double: line 1 "
                               "column 16 (char 15)); accepted: one JSON object"),
    (b'{"chunk_size": ' + b"9" * 40 + b"}", 'chunk_size: 1e+40 is out of range; accepted: {"chunk_size": '
                                            '<integer from 1 to 1000000>}'),
    (b'{"chunk_size": 1000001}', 'chunk_size: 1000001 is out of range; accepted: {"chunk_size": <integer from 1 '
                                 'to 1000000>}'),
])
def test_malformed_chunk_size_bodies_are_400_with_the_reason(app: FastAPI, loop: FakeLoop, body: bytes,
                                                             reason: str) -> None:
    """Issue 10, finding 14: a body that is not UTF-8 was answered {"detail": ...}."""
    response = call(app, "PUT", "/snapshots/chunk-size", content=body, headers=JSON_HEADERS)
    assert (response.status_code, response.json()) == (400, {"error": reason})
    assert loop.received == []


def test_integral_number_is_a_chunk_size(app: FastAPI, loop: FakeLoop) -> None:
    """JSON Schema's integer (what the document says) includes 500.0."""
    response = call(app, "PUT", "/snapshots/chunk-size", content=b'{"chunk_size": 500.0}', headers=JSON_HEADERS)
    assert (response.status_code, response.json()) == (200, {"chunk_size": 500})


def test_oversized_chunk_size_body_is_a_413(app: FastAPI, loop: FakeLoop) -> None:
    response = call(app, "PUT", "/snapshots/chunk-size", content=b" " * 4097, headers=JSON_HEADERS)
    assert (response.status_code, response.json()) == (413, {
        "error": "the body is larger than 4096 bytes; accepted: at most 4096 bytes"})


@pytest.mark.parametrize("additional", ["[1]", '"x"', "null", "5"])
def test_additional_data_must_be_an_object(app: FastAPI, loop: FakeLoop, additional: str) -> None:
    body = '{"id": "a-1", "type": "pause-snapshot", "data": {}, "additionalData": ' + additional + "}"
    response = call(app, "POST", "/signals", content=body.encode(), headers=JSON_HEADERS)
    assert response.status_code == 422
    assert response.json()["error"].startswith("additionalData: expected a JSON object, got ")
    assert loop.received == []


def test_unknown_route_is_a_404_naming_the_routes(app: FastAPI) -> None:
    response = call(app, "GET", "/nowhere")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error.startswith("no route GET '/nowhere'; accepted: ")
    assert "POST /signals" in error and "PUT /snapshots/chunk-size" in error and "GET /health/details" in error


@pytest.mark.parametrize(("method", "path", "allowed"), [
    ("GET", "/signals", "POST"), ("DELETE", "/signals", "POST"), ("POST", "/snapshots", "GET"),
    ("POST", "/snapshots/chunk-size", "PUT"), ("TRACE", "/health", "GET"),
])
def test_wrong_method_is_a_405_with_allow(app: FastAPI, method: str, path: str, allowed: str) -> None:
    response = call(app, method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.json() == {"error": f"method {method} is not allowed on {path}; accepted: {allowed}"}


def test_an_unexpected_failure_is_still_a_json_error(control: SidecarControl, metrics: MetricsRegistry) -> None:
    app = create_app(control, token=None, metrics=metrics)

    def broken_status() -> SidecarStatus:
        raise LookupError("bug")

    control.status = broken_status  # type: ignore[method-assign]

    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8089") as client:
            return await client.get("/snapshots")

    response = asyncio.run(send())
    assert response.status_code == 500
    assert response.json() == {"error": "internal error of the HTTP API on GET /snapshots (LookupError); it is in "
                                        "the sidecar's log"}
