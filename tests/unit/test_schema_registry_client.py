"""The schema registry client's logic against a fake transport: requests it sends, caches, and how it
classifies the registry's answers (409 incompatible, 5xx/unreachable transient, the rest terminal)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from signaller.errors import SignallerError, SinkError, is_transient
from signaller.sinks.registry import (
    Compatibility,
    HttpResponse,
    IncompatibleSchemaError,
    RegistryRequestError,
    RegistryUnavailableError,
    SchemaRegistryClient,
)

pytestmark = pytest.mark.unit

URL = "http://registry.test:8081/apis/ccompat/v7"
SCHEMA = json.dumps({"type": "record", "name": "Value", "fields": [{"name": "id", "type": "int"}]})


@dataclass
class Sent:
    method: str
    url: str
    body: object
    headers: dict[str, str]


@dataclass
class FakeTransport:
    """Answers each request with the next queued response (or raises it if it is an exception)."""

    replies: list[HttpResponse | OSError]
    sent: list[Sent] = field(default_factory=list)

    def __call__(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str], timeout_s: float
    ) -> HttpResponse:
        self.sent.append(Sent(method, url, None if body is None else json.loads(body), dict(headers)))
        reply = self.replies.pop(0)
        if isinstance(reply, OSError):
            raise reply
        return reply


def reply(status: int, payload: object) -> HttpResponse:
    return HttpResponse(status, json.dumps(payload).encode())


def client(*replies: HttpResponse | OSError, **kwargs: str) -> tuple[SchemaRegistryClient, FakeTransport]:
    transport = FakeTransport(list(replies))
    return SchemaRegistryClient(URL + "/", transport=transport, **kwargs), transport


def test_register_posts_the_schema_under_the_subject_and_returns_the_id() -> None:
    registry, transport = client(reply(200, {"id": 7}))
    assert registry.register("pg1.public.t-value", SCHEMA) == 7
    [sent] = transport.sent
    assert (sent.method, sent.url) == ("POST", f"{URL}/subjects/pg1.public.t-value/versions")
    assert sent.body == {"schema": SCHEMA}, "Avro is the default type: no schemaType, as Confluent's clients"
    assert sent.headers["Content-Type"] == "application/vnd.schemaregistry.v1+json"
    assert "Authorization" not in sent.headers


def test_register_caches_the_id_per_subject_and_schema() -> None:
    registry, transport = client(reply(200, {"id": 7}), reply(200, {"id": 7}), reply(200, {"id": 8}))
    assert [registry.register("a-value", SCHEMA) for _ in range(3)] == [7, 7, 7]
    assert registry.register("b-value", SCHEMA) == 7
    assert registry.register("a-value", SCHEMA.replace("Value", "Other")) == 8
    assert len(transport.sent) == 3


def test_other_schema_types_are_named_and_subjects_are_one_path_segment() -> None:
    registry, transport = client(reply(200, {"id": 1}))
    registry.register("odd/subject?x=1%", "{}", schema_type="JSON")
    assert transport.sent[0].url == f"{URL}/subjects/odd%2Fsubject%3Fx%3D1%25/versions"
    assert transport.sent[0].body == {"schema": "{}", "schemaType": "JSON"}


def test_schema_by_id_is_fetched_once() -> None:
    registry, transport = client(reply(200, {"schema": SCHEMA}))
    assert registry.schema_by_id(3) == SCHEMA
    assert registry.schema_by_id(3) == SCHEMA
    assert [(s.method, s.url) for s in transport.sent] == [("GET", f"{URL}/schemas/ids/3")]


def test_an_incompatible_schema_names_the_subject_and_the_registry_reason() -> None:
    reason = "Incompatible artifact: t-value [AVRO], reader type: STRING not compatible with writer type: INT"
    registry, _ = client(reply(409, {"error_code": 409, "message": reason}))
    with pytest.raises(IncompatibleSchemaError) as caught:
        registry.register("t-value", SCHEMA)
    error = caught.value
    assert (error.subject, error.reason) == ("t-value", reason)
    assert "'t-value'" in str(error) and reason in str(error) and "incompatible" in str(error)
    assert isinstance(error, SinkError) and isinstance(error, SignallerError)
    assert not is_transient(error)


def test_a_failed_register_is_not_cached() -> None:
    registry, transport = client(reply(503, {"message": "starting"}), reply(200, {"id": 4}))
    with pytest.raises(RegistryUnavailableError):
        registry.register("t-value", SCHEMA)
    assert registry.register("t-value", SCHEMA) == 4
    assert len(transport.sent) == 2


@pytest.mark.parametrize("status", [500, 502, 503, 504, 408, 429])
def test_server_errors_timeouts_and_throttling_are_transient(status: int) -> None:
    registry, _ = client(reply(status, {"error_code": 50001, "message": "store unavailable"}))
    with pytest.raises(RegistryUnavailableError) as caught:
        registry.schema_by_id(1)
    assert is_transient(caught.value) and isinstance(caught.value, SinkError)
    assert f"HTTP {status}" in str(caught.value) and URL in str(caught.value)


@pytest.mark.parametrize("failure", [ConnectionRefusedError(111, "Connection refused"), TimeoutError("timed out")])
def test_an_unreachable_registry_is_transient(failure: OSError) -> None:
    registry, _ = client(failure)
    with pytest.raises(RegistryUnavailableError) as caught:
        registry.register("t-value", SCHEMA)
    assert is_transient(caught.value)
    assert caught.value.__cause__ is failure
    assert "unreachable" in str(caught.value) and "'t-value'" in str(caught.value)


def test_other_refusals_are_terminal_with_the_registry_code_and_reason() -> None:
    registry, _ = client(reply(404, {"error_code": 40403, "message": "No content with ID '9' was found."}),
                         reply(422, {"error_code": 42201, "message": "Invalid schema"}),
                         HttpResponse(401, b"<html>Unauthorized</html>"))
    with pytest.raises(RegistryRequestError) as unknown:
        registry.schema_by_id(9)
    assert (unknown.value.status, unknown.value.error_code) == (404, 40403)
    assert "schema id 9" in str(unknown.value) and "No content with ID '9'" in str(unknown.value)
    with pytest.raises(RegistryRequestError) as invalid:
        registry.register("t-value", "not a schema")
    assert (invalid.value.status, invalid.value.error_code, invalid.value.reason) == (422, 42201, "Invalid schema")
    with pytest.raises(RegistryRequestError) as denied:
        registry.compatibility()
    denial = (denied.value.status, denied.value.error_code, denied.value.reason)
    assert denial == (401, None, "<html>Unauthorized</html>")
    assert not any(is_transient(e.value) for e in (unknown, invalid, denied))


def test_a_409_outside_register_is_a_plain_refusal() -> None:
    registry, _ = client(reply(409, {"error_code": 409, "message": "conflict"}))
    with pytest.raises(RegistryRequestError):
        registry.set_compatibility(Compatibility.FULL)


def test_an_answer_without_the_expected_field_is_a_terminal_error() -> None:
    registry, _ = client(reply(200, {"unexpected": True}), HttpResponse(200, b"<html>proxy</html>"))
    with pytest.raises(RegistryRequestError, match="without the int field 'id'"):
        registry.register("t-value", SCHEMA)
    with pytest.raises(RegistryRequestError, match="without the str field 'schema'"):
        registry.schema_by_id(1)


def test_compatibility_set_and_read_globally_and_per_subject() -> None:
    registry, transport = client(reply(200, {"compatibility": "BACKWARD"}),
                                 reply(200, {"compatibilityLevel": "BACKWARD"}),
                                 reply(200, {"compatibility": "NONE"}),
                                 reply(200, {"compatibilityLevel": "NONE"}))
    assert registry.set_compatibility(Compatibility.BACKWARD) is Compatibility.BACKWARD
    assert registry.compatibility() is Compatibility.BACKWARD
    assert registry.set_compatibility(Compatibility.NONE, subject="t-value") is Compatibility.NONE
    assert registry.compatibility("t-value") is Compatibility.NONE
    assert [(s.method, s.url, s.body) for s in transport.sent] == [
        ("PUT", f"{URL}/config", {"compatibility": "BACKWARD"}),
        ("GET", f"{URL}/config", None),
        ("PUT", f"{URL}/config/t-value", {"compatibility": "NONE"}),
        ("GET", f"{URL}/config/t-value?defaultToGlobal=true", None),
    ]


def test_an_unknown_compatibility_level_is_a_terminal_error() -> None:
    registry, _ = client(reply(200, {"compatibilityLevel": "SIDEWAYS"}))
    with pytest.raises(RegistryRequestError, match="SIDEWAYS"):
        registry.compatibility()


def test_user_info_becomes_basic_authentication() -> None:
    registry, transport = client(reply(200, {"id": 1}), user_info="alice:s3cret")
    registry.register("t-value", SCHEMA)
    token = base64.b64encode(b"alice:s3cret").decode()
    assert transport.sent[0].headers["Authorization"] == f"Basic {token}"
