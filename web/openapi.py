"""The OpenAPI 3.1 description of the public HTTP API, served at /api/openapi.json, assembled from
each app's part (its ``openapi`` module: ``paths()`` and ``schemas()``, beside the endpoints they
describe). Tests check that every path here is routed and that responses match these shapes."""

from __future__ import annotations

from importlib import import_module

from executor.registry import DEVICE_PATTERN as _DEVICE_PATTERN

# The apps whose parts make the document, in its order.
PARTS = ("playground.openapi", "snippets.openapi", "notebooks.openapi", "accounts.openapi", "courses.openapi")

DEVICE_PATTERN = _DEVICE_PATTERN.pattern
# A kind (cpu, gpu, tpu) or a specific device kind of one, as workers advertise it (gpu:h200).
DEVICE = {"type": "string", "pattern": DEVICE_PATTERN,
          "description": "A device kind (cpu, gpu, tpu) or a specific device kind of one (gpu:h200)"}


# A runtime's id (runtimes/runtimes.toml), as GET /api/runtimes lists them.
RUNTIME = {"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,39}$",
           "description": "A runtime's id (GET /api/runtimes), e.g. jax-0.4.38; default: the default runtime"}


def error(description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def reply(ref: str, description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


def body(ref: str) -> dict:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


def schema() -> dict:
    parts = [import_module(name) for name in PARTS]
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "JAX Playground API",
            "version": "1",
            "description": "Run NumPy/JAX snippets on remote executors. Live events of a run stream "
                           "over the websocket /ws/runs/{id}/?after={seq}.",
        },
        "paths": {
            **{path: item for part in parts for path, item in part.paths().items()},
            "/api/openapi.json": {"get": {
                "summary": "This document",
                "operationId": "getOpenApi",
                "responses": {"200": {"description": "OpenAPI 3.1",
                                      "content": {"application/json": {"schema": {"type": "object"}}}}},
            }},
        },
        "components": {"securitySchemes": {
            "token": {"type": "http", "scheme": "bearer",
                      "description": "A personal API token (POST /api/me/tokens or the account page)"},
            "session": {"type": "apiKey", "in": "cookie", "name": "sessionid",
                        "description": "A signed-in browser; unsafe methods also need X-CSRFToken"},
        }, "schemas": {
            "Error": {"type": "object", "required": ["error"],
                      "properties": {"error": {"type": "string"}}},
            **{name: item for part in parts for name, item in part.schemas().items()},
        }},
    }
