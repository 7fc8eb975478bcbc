"""The OpenAPI 3.1 document of the HTTP API (``GET /openapi.json``, ``/docs``): FastAPI's, plus the
request bodies the routes parse by hand and the bearer security scheme when a token is required.

The request body of ``POST /signals`` is derived from the signal JSON Schema
(``signaller/signals/signal.schema.json``, the one statement of the contract, which the parser
validates with), never written here: ``signal_components`` turns it into components, so a change of the
schema is a change of the document. OpenAPI 3.1 schemas are JSON Schema 2020-12, so the derivation only
renames and re-points:

* each ``$defs`` entry that describes an object becomes the component of the same name with its first
  letter capitalised (``executeSnapshotData`` -> ``ExecuteSnapshotData``), and every ``$ref`` to it
  points at ``#/components/schemas/<Name>``;
* the other entries (value rules: an id, a snapshot type, a table pattern) are inlined where they are
  referenced, as a field of a component shows them;
* the schema's root becomes ``SignalRequest``: its envelope (``id``, ``type``, ``data``,
  ``additionalData``) and annotations as they are, its ``allOf`` dispatch on ``type`` (``if`` the type
  is T ``then`` the T signal) stated the OpenAPI way, as a ``oneOf`` with a ``discriminator``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI

from signaller.api.models import DOC_ONLY_MODELS
from signaller.api.security import OPEN_PATHS
from signaller.signals.parsing import signal_schema

SECURITY_SCHEME = "bearerAuth"
SIGNAL_REQUEST = "SignalRequest"
"""The component of ``POST /signals``' request body: the signal JSON Schema's root."""
TABLE_PATTERN_FORMAT = "table-pattern"
"""The ``format`` the signal schema gives regular expressions over 'schema.table': compiled as the signal
parser compiles them (RE2, leading and trailing whitespace trimmed). Not JSON Schema's ``regex`` (ECMA-262
syntax: it refuses a lone ``{``, which RE2 and Python accept); no JSON Schema keyword can state
"compiles", so the format carries it, beside the ``pattern`` that states "not blank"."""

_DEFS = "#/$defs/"
_COMPONENTS = "#/components/schemas/"
_ROOT_ONLY = ("$schema", "$id", "$comment", "$defs", "allOf")


class SignallerApp(FastAPI):
    """FastAPI whose OpenAPI also describes the request bodies the routes parse by hand and the security."""

    def openapi(self) -> dict[str, Any]:
        """The document, built once."""
        if self.openapi_schema is None:
            schema = super().openapi()
            components = schema.setdefault("components", {})
            schemas = components.setdefault("schemas", {})
            schemas.update(signal_components(signal_schema()))
            for model in DOC_ONLY_MODELS:
                model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                schemas.update(model_schema.pop("$defs", {}))
                schemas[model.__name__] = model_schema
            for name in ("HTTPValidationError", "ValidationError"):
                schemas.pop(name, None)
            if self.state.bearer_token_required:
                components["securitySchemes"] = {SECURITY_SCHEME: {
                    "type": "http", "scheme": "bearer",
                    "description": "signaller.http.token; every operation but GET /health requires it."}}
                schema["security"] = [{SECURITY_SCHEME: []}]
                for path, operations in schema.get("paths", {}).items():
                    for operation in operations.values():
                        if path in OPEN_PATHS:
                            operation["security"] = []
                        else:
                            operation["responses"]["401"]["headers"] = {
                                "WWW-Authenticate": {"schema": {"type": "string"},
                                                     "description": 'Bearer realm="signaller"'}}
            self.openapi_schema = schema
        return self.openapi_schema


def component_name(definition: str) -> str:
    """The component name of the signal schema's ``$defs`` entry ``definition``: its first letter capitalised."""
    return definition[:1].upper() + definition[1:]


def is_component(definition: Mapping[str, Any]) -> bool:
    """Whether a ``$defs`` entry becomes a named component (it describes an object) or is inlined (a value rule)."""
    return definition.get("type") == "object"


def signal_components(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAPI components of the signal JSON Schema ``schema`` (``signal_schema()``): one per object
    ``$defs`` entry (see the module docstring) and ``SignalRequest``, its root. Pure; a new dict each call."""
    definitions: Mapping[str, Any] = schema["$defs"]
    components = {component_name(name): _rewritten(definition, definitions)
                  for name, definition in definitions.items() if is_component(definition)}
    components[SIGNAL_REQUEST] = _request(schema, definitions)
    return components


def _request(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> dict[str, Any]:
    """The root: the envelope as it is; the ``allOf`` of ``if type = T then <T signal>`` as oneOf + discriminator."""
    request = {key: _rewritten(value, definitions) for key, value in schema.items() if key not in _ROOT_ONLY}
    mapping = {branch["if"]["properties"]["type"]["const"]: _rewritten(branch["then"], definitions)["$ref"]
               for branch in schema["allOf"]}
    request["oneOf"] = [{"$ref": target} for target in mapping.values()]
    request["discriminator"] = {"propertyName": "type", "mapping": mapping}
    return request


def _rewritten(node: Any, definitions: Mapping[str, Any]) -> Any:
    """``node`` with each ``$ref`` to a ``$defs`` entry pointed at its component, or replaced by the inlined entry."""
    if isinstance(node, list):
        return [_rewritten(item, definitions) for item in node]
    if not isinstance(node, Mapping):
        return node
    rewritten = {key: _rewritten(value, definitions) for key, value in node.items()}
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith(_DEFS):
        name = reference.removeprefix(_DEFS)
        target = definitions[name]
        if is_component(target):
            rewritten["$ref"] = _COMPONENTS + component_name(name)
        else:
            del rewritten["$ref"]
            rewritten = {**_rewritten(target, definitions), **rewritten}
    return rewritten
