"""The local schema registry (Apicurio, Confluent-compatible API) with signaller's client: ids, BACKWARD
compatibility, errors, and schemas that survive a restart of the registry (they live in PostgreSQL)."""

from __future__ import annotations

import json

import pytest

from devtools import Stack
from devtools.processes import port_open
from signaller.errors import is_transient
from signaller.sinks.registry import (
    Compatibility,
    IncompatibleSchemaError,
    RegistryRequestError,
    RegistryUnavailableError,
    SchemaRegistryClient,
)

pytestmark = pytest.mark.integration


def record(name: str, *fields: dict[str, object]) -> str:
    return json.dumps({"type": "record", "name": name, "namespace": "pg1.public", "fields": list(fields)})


ID_INT = {"name": "id", "type": "int"}
NOTE = {"name": "note", "type": ["null", "string"], "default": None}


def test_registering_returns_an_id_and_the_same_schema_gets_the_same_id(schema_registry: str, unique_name: str) -> None:
    subject = f"pg1.public.t_{unique_name}-value"
    schema = record(f"Value_{unique_name}", ID_INT)
    schema_id = SchemaRegistryClient(schema_registry).register(subject, schema)
    again = SchemaRegistryClient(schema_registry).register(subject, schema)
    assert again == schema_id, "a fresh client (no cache) gets the id the registry already gave"
    evolved = SchemaRegistryClient(schema_registry).register(subject, record(f"Value_{unique_name}", ID_INT, NOTE))
    assert evolved != schema_id
    fetched = SchemaRegistryClient(schema_registry).schema_by_id(schema_id)
    assert json.loads(fetched) == json.loads(schema)


def test_an_incompatible_change_is_refused_with_the_subject_and_the_reason(
    schema_registry: str, unique_name: str
) -> None:
    client = SchemaRegistryClient(schema_registry)
    assert client.compatibility() is Compatibility.BACKWARD, "the stack sets BACKWARD (Apicurio's default is NONE)"
    subject = f"pg1.public.t_{unique_name}-value"
    client.register(subject, record("Value", ID_INT))
    with pytest.raises(IncompatibleSchemaError) as caught:
        client.register(subject, record("Value", {"name": "id", "type": "string"}))
    error = caught.value
    assert error.subject == subject
    assert "STRING" in error.reason and "INT" in error.reason, error.reason
    assert subject in str(error) and error.reason in str(error)
    assert not is_transient(error)


def test_a_subject_may_have_its_own_compatibility(schema_registry: str, unique_name: str) -> None:
    """A field added without a default breaks BACKWARD but not FORWARD."""
    client = SchemaRegistryClient(schema_registry)
    subject = f"pg1.public.t_{unique_name}-value"
    client.register(subject, record("Value", ID_INT))
    assert client.set_compatibility(Compatibility.FORWARD, subject) is Compatibility.FORWARD
    assert client.compatibility(subject) is Compatibility.FORWARD
    assert client.compatibility() is Compatibility.BACKWARD
    client.register(subject, record("Value", ID_INT, {"name": "extra", "type": "int"}))


def test_apicurio_keeps_the_global_level_for_a_subject_set_to_none(schema_registry: str, unique_name: str) -> None:
    """Pinned quirk of Apicurio 3.0.9 (Confluent differs): NONE on a subject removes the subject's rule, so the
    global BACKWARD still applies; relaxing one subject takes a level other than NONE."""
    client = SchemaRegistryClient(schema_registry)
    subject = f"pg1.public.t_{unique_name}-value"
    client.register(subject, record("Value", ID_INT))
    assert client.set_compatibility(Compatibility.NONE, subject) is Compatibility.NONE
    assert client.compatibility(subject) is Compatibility.BACKWARD
    with pytest.raises(IncompatibleSchemaError):
        client.register(subject, record("Value", {"name": "id", "type": "string"}))


def test_an_unknown_id_is_a_terminal_not_found(schema_registry: str) -> None:
    with pytest.raises(RegistryRequestError) as caught:
        SchemaRegistryClient(schema_registry).schema_by_id(2_000_000_000)
    assert caught.value.status == 404
    assert not is_transient(caught.value)


def test_a_registry_that_does_not_answer_is_transient(schema_registry: str) -> None:
    port = 1
    assert not port_open(port)
    client = SchemaRegistryClient(f"http://127.0.0.1:{port}/apis/ccompat/v7", timeout_s=2)
    with pytest.raises(RegistryUnavailableError) as caught:
        client.register("t-value", record("Value", ID_INT))
    assert is_transient(caught.value)


def test_ids_survive_a_restart_of_the_registry(local_stack: Stack, schema_registry: str, unique_name: str) -> None:
    """Apicurio stores schemas in the stack's PostgreSQL: after a restart every id still resolves, and
    registering the same schema again returns the same id."""
    subject = f"pg1.public.t_{unique_name}-value"
    schema = record(f"Value_{unique_name}", ID_INT)
    schema_id = SchemaRegistryClient(schema_registry).register(subject, schema)
    local_stack.restart_registry()
    client = SchemaRegistryClient(schema_registry)
    assert json.loads(client.schema_by_id(schema_id)) == json.loads(schema)
    assert client.register(subject, schema) == schema_id
    assert client.compatibility() is Compatibility.BACKWARD
