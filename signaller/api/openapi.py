"""The OpenAPI 3.1 document of the HTTP API (``GET /openapi.json``, ``/docs``): FastAPI's, plus the
request bodies the routes parse by hand and the bearer security scheme when a token is required.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from signaller.api.models import DOC_ONLY_MODELS
from signaller.api.security import OPEN_PATHS

SECURITY_SCHEME = "bearerAuth"


class SignallerApp(FastAPI):
    """FastAPI whose OpenAPI also describes the request bodies the routes parse by hand and the security."""

    def openapi(self) -> dict[str, Any]:
        """The document, built once."""
        if self.openapi_schema is None:
            schema = super().openapi()
            components = schema.setdefault("components", {})
            schemas = components.setdefault("schemas", {})
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
