"""The OpenAPI request body of ``POST /signals`` is derived from the signal JSON Schema, never written apart.

Compared by meaning, independently of how ``signaller.api.openapi`` derives it: every ``$ref`` of either
document is expanded in place (the schema's ``#/$defs/...``, the document's ``#/components/schemas/...``),
and the expansions must be equal: each object ``$defs`` entry against its component, the schema's root
against ``SignalRequest`` (whose ``oneOf`` + ``discriminator`` must say what the root's ``allOf`` of
``if type = T then <T signal>`` says). Then an edited schema must give an edited document.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from signaller.api import MetricsRegistry, create_app, models
from signaller.api import openapi as openapi_module
from signaller.api.openapi import SIGNAL_REQUEST, TABLE_PATTERN_FORMAT
from signaller.signals.parsing import signal_schema
from signaller.snapshot.control import SidecarControl

pytestmark = pytest.mark.unit

DEFS = "#/$defs/"
COMPONENTS = "#/components/schemas/"
ROOT_ONLY = {"$schema", "$id", "$comment", "$defs", "allOf"}
"""Keys of the schema's root that are about the file (identity, comment, definitions) or its dispatch."""


def _document() -> dict[str, Any]:
    app = create_app(SidecarControl(), token=None, metrics=MetricsRegistry())
    document: dict[str, Any] = app.openapi()
    return json.loads(json.dumps(document))  # as served: plain JSON


def _expanded(node: Any, prefix: str, targets: Mapping[str, Any]) -> Any:
    """``node`` with every ``$ref`` under ``prefix`` replaced by its target, expanded in turn."""
    if isinstance(node, list):
        return [_expanded(item, prefix, targets) for item in node]
    if not isinstance(node, dict):
        return node
    expanded = {key: _expanded(value, prefix, targets) for key, value in node.items() if key != "$ref"}
    reference = node.get("$ref")
    if reference is None:
        return expanded
    assert reference.startswith(prefix), reference
    target = _expanded(targets[reference.removeprefix(prefix)], prefix, targets)
    return {**target, **expanded}


def _component_name(definition: str) -> str:
    return definition[0].upper() + definition[1:]


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return _document()


@pytest.fixture(scope="module")
def in_schema() -> Callable[[Any], Any]:
    definitions = signal_schema()["$defs"]
    return lambda node: _expanded(node, DEFS, definitions)


@pytest.fixture(scope="module")
def in_document(document: dict[str, Any]) -> Callable[[Any], Any]:
    components = document["components"]["schemas"]
    return lambda node: _expanded(node, COMPONENTS, components)


def test_every_object_definition_is_a_component_equal_to_it(
    document: dict[str, Any], in_schema: Callable[[Any], Any], in_document: Callable[[Any], Any],
) -> None:
    components = document["components"]["schemas"]
    definitions = signal_schema()["$defs"]
    objects = [name for name, definition in definitions.items() if definition.get("type") == "object"]
    assert {"executeSnapshotData", "blockingSnapshotData", "stopSnapshotData", "logData", "additionalCondition",
            "executeSnapshotSignal", "logSignal"} <= set(objects)
    for name in objects:
        component = components[_component_name(name)]
        assert in_document(component) == in_schema(definitions[name]), name
        assert json.dumps(component).count(DEFS) == 0, name  # no reference left into the schema file


def test_value_definitions_are_inlined_where_used(document: dict[str, Any]) -> None:
    """The entries that are not objects (an id, a snapshot type, a table pattern) are no component: each use shows
    the rule itself, as ``StopSnapshotData.type`` shows its pattern."""
    components = document["components"]["schemas"]
    definitions = signal_schema()["$defs"]
    values = {name for name, definition in definitions.items() if definition.get("type") != "object"}
    assert {"signalId", "snapshotType", "dataCollection"} <= values
    assert not {_component_name(name) for name in values} & set(components)
    assert components["StopSnapshotData"]["properties"]["type"] == definitions["snapshotType"]
    patterns = components["ExecuteSnapshotData"]["properties"]["data-collections"]["items"]
    assert patterns == definitions["dataCollection"]
    assert patterns["format"] == TABLE_PATTERN_FORMAT


def test_signal_request_is_the_schema_root(
    document: dict[str, Any], in_schema: Callable[[Any], Any], in_document: Callable[[Any], Any],
) -> None:
    root = signal_schema()
    request = document["components"]["schemas"][SIGNAL_REQUEST]
    body = document["paths"]["/signals"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": COMPONENTS + SIGNAL_REQUEST}

    # The envelope and the annotations (title, description, examples, x-accepted), as the root states them.
    envelope = {key: value for key, value in root.items() if key not in ROOT_ONLY}
    assert in_document({key: value for key, value in request.items() if key not in {"oneOf", "discriminator"}}) \
        == in_schema(envelope)

    # The dispatch: the root's "if type is T then <signal>" is the discriminator's T -> <signal>, and the oneOf
    # lists exactly those signals, each fixing its type (so exactly one of them applies to a valid type).
    dispatch = {branch["if"]["properties"]["type"]["const"]: branch["then"] for branch in root["allOf"]}
    mapping = request["discriminator"]["mapping"]
    assert request["discriminator"]["propertyName"] == "type"
    assert list(mapping) == list(dispatch) == root["properties"]["type"]["enum"]
    assert request["oneOf"] == [{"$ref": target} for target in mapping.values()]
    for signal_type, target in mapping.items():
        variant = in_document({"$ref": target})
        assert variant == in_schema(dispatch[signal_type]), signal_type
        assert variant["properties"]["type"] == {"const": signal_type}
        assert variant["required"] == root["required"]


def test_an_edited_schema_edits_the_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """The document follows the schema it is given: nothing of the request body is written elsewhere."""
    edited = copy.deepcopy(dict(signal_schema()))
    edited["$defs"]["logData"]["properties"]["level"] = {"enum": ["INFO", "WARN"]}
    edited["$defs"]["logData"]["required"] = ["message", "level"]
    edited["$defs"]["signalId"]["maxLength"] = 64
    edited["examples"] = edited["examples"][:1]
    monkeypatch.setattr(openapi_module, "signal_schema", lambda: edited)

    components = _document()["components"]["schemas"]

    assert components["LogData"]["properties"]["level"] == {"enum": ["INFO", "WARN"]}
    assert components["LogData"]["required"] == ["message", "level"]
    assert components["LogSignal"]["properties"]["id"]["maxLength"] == 64
    assert components[SIGNAL_REQUEST]["properties"]["id"]["maxLength"] == 64
    assert components[SIGNAL_REQUEST]["examples"] == edited["examples"]


def test_the_request_body_has_no_model_of_its_own() -> None:
    """The pydantic models of the signal (documentation only) are gone: the schema is the one statement."""
    assert [model.__name__ for model in models.DOC_ONLY_MODELS] == ["ChunkSize"]
    for name in ("SignalRequest", "ExecuteSnapshotData", "BlockingSnapshotData", "StopSnapshotData", "LogData",
                 "AdditionalCondition", "ExecuteSnapshotSignal"):
        assert not hasattr(models, name), name
