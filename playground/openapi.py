"""The OpenAPI 3.1 description of the public HTTP API, served at /api/openapi.json. Tests check
that every path here is routed and that responses match these shapes."""

from __future__ import annotations

from django.conf import settings

from accounts.actions import DRAFT_KEY, DRAFT_TITLE_MAX
from executor import events as ev


def _error(description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _json(ref: str, description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


SLUG = {"name": "slug", "in": "path", "required": True, "schema": {"type": "string"}}
RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}


def schema() -> dict:
    kinds = list(settings.RUN_DEVICE_KINDS)
    nullable_num = {"type": ["number", "null"]}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "JAX Playground API",
            "version": "1",
            "description": "Run NumPy/JAX snippets on remote executors. Live events of a run stream "
                           "over the websocket /ws/runs/{id}/?after={seq}.",
        },
        "paths": {
            "/api/devices": {"get": {
                "summary": "Device kinds and their live availability",
                "operationId": "listDevices",
                "responses": {"200": _json("DeviceList", "Every known device kind")},
            }},
            "/api/runs": {"post": {
                "summary": "Start a run",
                "operationId": "startRun",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/RunRequest"}}}},
                "responses": {
                    "201": _json("RunSummary", "The run was queued"),
                    "400": _error("Bad input: malformed JSON, missing or non-string code, code too large, "
                                  "unknown device"),
                    "415": _error("The body is not JSON"),
                    "429": _error("Too many runs from this client; see Retry-After"),
                    "503": _error("No executor of that kind is online"),
                },
            }},
            "/api/runs/{run_id}": {"get": {
                "summary": "A run's status and its events so far, a page at a time",
                "operationId": "getRun",
                "parameters": [
                    RUN_ID,
                    {"name": "after", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 0, "default": 0},
                     "description": "Only events with a larger seq (the previous page's events_next)"},
                    {"name": "limit", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 1},
                     "description": "Events per page, at most RUN_EVENTS_PAGE (1000 by default)"},
                ],
                "responses": {"200": _json("RunDetail", "The run"), "400": _error("A bad after or limit"),
                              "404": _error("No such run")},
            }},
            "/api/runs/{run_id}/cancel": {"post": {
                "summary": "Cancel a queued or running run",
                "operationId": "cancelRun",
                "parameters": [RUN_ID],
                "responses": {
                    "202": _json("CancelResult", "Cancelled, or cancelling within a second"),
                    "404": _error("No such run"),
                    "409": _error("The run already finished"),
                },
            }},
            "/api/snippets": {"post": {
                "summary": "Share code as an immutable snippet (the same content gives the same slug)",
                "operationId": "createSnippet",
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/SnippetRequest"}}}},
                "responses": {"201": _json("SnippetCreated", "A new snippet"),
                              "200": _json("SnippetCreated", "This content was shared before: its snippet"),
                              "400": _error("Bad input"), "403": _error("CSRF check failed (cookie sessions)"),
                              "429": _error("Too many snippets from this client or account; see Retry-After")},
            }},
            "/api/snippets/{slug}": {"get": {
                "summary": "A snippet: code, title, description, versions, parent and forks, its saved run",
                "operationId": "getSnippet",
                "parameters": [SLUG],
                "responses": {"200": _json("Snippet", "The snippet"), "404": _error("No such snippet"),
                              "410": _error("Removed by the staff")},
            }},
            "/api/me/snippets": {"get": {
                "summary": "Your snippets (signed in, or a token), newest first; q searches",
                "operationId": "listMySnippets",
                "parameters": [{"name": "q", "in": "query", "required": False, "schema": {"type": "string"}},
                               {"name": "page", "in": "query", "required": False,
                                "schema": {"type": "integer", "minimum": 1}}],
                "responses": {"200": _json("SnippetList", "One page"), "401": _error("Not signed in")},
            }},
            "/api/me/snippets/{slug}": {"delete": {
                "summary": "Delete one of your snippets: off your list and search engines; its link still works",
                "operationId": "deleteMySnippet",
                "parameters": [SLUG],
                "responses": {"204": {"description": "Deleted"}, "401": _error("Not signed in"),
                              "404": _error("No such snippet of yours")},
            }},
            "/api/me/tokens": {
                "get": {"summary": "Your API tokens (without their secrets)", "operationId": "listTokens",
                        "responses": {"200": {"description": "The tokens"}, "401": _error("Not signed in")}},
                "post": {"summary": "Create a personal API token (from a signed-in session)",
                         "operationId": "createToken",
                         "responses": {"201": _json("TokenCreated", "The token, shown once"),
                                       "401": _error("Not signed in"),
                                       "403": _error("Tokens cannot create tokens; CSRF check failed")}},
            },
            "/api/me/tokens/{token_id}": {"delete": {
                "summary": "Revoke one of your tokens", "operationId": "revokeToken",
                "parameters": [{"name": "token_id", "in": "path", "required": True,
                                "schema": {"type": "string", "format": "uuid"}}],
                "responses": {"204": {"description": "Revoked"}, "404": _error("No such token of yours")},
            }},
            "/api/format": {"post": {
                "summary": "Format code with ruff's formatter (%-magics and !-lines kept as they are)",
                "operationId": "formatCode",
                "requestBody": {"required": True, "content": {"application/json": {"schema": {
                    "type": "object", "required": ["code"],
                    "properties": {"code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES}}}}}},
                "responses": {"200": {"description": "The formatted code", "content": {"application/json": {
                    "schema": {"type": "object", "required": ["code"], "properties": {"code": {"type": "string"}}}}}},
                              "400": _error("Malformed"), "413": _error("Too long"),
                              "422": _error("Not valid Python (the message names the line)"),
                              "429": _error("Too many requests")},
            }},
            "/api/me/drafts": {"get": {
                "summary": "Your drafts: the code you are working on, kept for another browser",
                "operationId": "listDrafts",
                "responses": {"200": _json("DraftList", "Newest first"), "401": _error("Not signed in")},
            }},
            "/api/me/drafts/{key}": {
                "parameters": [{"name": "key", "in": "path", "required": True,
                                "schema": {"type": "string", "pattern": DRAFT_KEY.pattern},
                                "description": "own, example:<slug> or snippet:<slug>"}],
                "put": {"summary": "Save a draft (replacing the one with this key)", "operationId": "saveDraft",
                        "requestBody": {"required": True, "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/DraftRequest"}}}},
                        "responses": {"200": _json("Draft", "Saved"), "400": _error("Malformed"),
                                      "401": _error("Not signed in"), "404": _error("Not a draft's key"),
                                      "413": _error("The code is too long")}},
                "delete": {"summary": "Delete a draft", "operationId": "deleteDraft",
                           "responses": {"204": {"description": "Deleted"}, "404": _error("No such draft of yours")}},
            },
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
            "DraftRequest": {"type": "object", "required": ["code"], "properties": {
                "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES},
                "title": {"type": "string", "maxLength": DRAFT_TITLE_MAX},
            }},
            "Draft": {"type": "object", "required": ["key", "title", "code", "updated_at"], "properties": {
                "key": {"type": "string"}, "title": {"type": "string"}, "code": {"type": "string"},
                "updated_at": {"type": "string", "format": "date-time"},
            }},
            "DraftList": {"type": "object", "required": ["drafts"], "properties": {
                "drafts": {"type": "array", "items": {"$ref": "#/components/schemas/Draft"}},
            }},
            "RunRequest": {"type": "object", "required": ["code"], "properties": {
                "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES,
                         "description": f"At most {settings.RUN_MAX_CODE_BYTES} bytes of UTF-8"},
                "device": {"type": "string", "enum": kinds, "default": settings.RUN_DEFAULT_DEVICE},
                "snippet": {"type": "string", "description": "The slug of the snippet this code comes from: a "
                            "snippet shared unrun keeps its first run as its saved output"},
            }},
            "SnippetRequest": {"type": "object", "required": ["code"], "properties": {
                "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES},
                "title": {"type": "string", "maxLength": 200},
                "description": {"type": "string", "maxLength": 10000, "description": "Markdown"},
                "device": {"type": "string", "enum": kinds},
                "run": {"type": "string", "format": "uuid",
                        "description": "The run it is shared from (kept when its code and device are these)"},
                "parent": {"type": "string", "description": "The slug of the snippet this one was forked from"},
            }},
            "SnippetCreated": {"type": "object", "required": ["slug", "url", "created"], "properties": {
                "slug": {"type": "string"}, "url": {"type": "string", "format": "uri"},
                "created": {"type": "boolean"}, "run": {"type": ["string", "null"]},
            }},
            "SnippetSummary": {"type": "object", "required": ["slug", "url", "title", "device", "created_at"],
                               "properties": {
                "slug": {"type": "string"}, "url": {"type": "string"}, "title": {"type": "string"},
                "device": {"type": "string", "enum": kinds}, "created_at": {"type": "string", "format": "date-time"},
                "first_line": {"type": "string"},
            }},
            "Snippet": {"allOf": [{"$ref": "#/components/schemas/SnippetSummary"}, {
                "type": "object",
                "required": ["code", "description", "jax_version", "parent", "forks", "run", "links"],
                "properties": {
                    "code": {"type": "string"}, "description": {"type": "string"},
                    "description_html": {"type": "string", "description": "The description rendered, without raw HTML"},
                    "options": {"type": "object"},
                    "jax_version": {"type": ["string", "null"]}, "jaxlib_version": {"type": ["string", "null"]},
                    "owner": {"type": ["string", "null"]},
                    "parent": {"oneOf": [{"$ref": "#/components/schemas/SnippetSummary"}, {"type": "null"}]},
                    "forks": {"type": "array", "items": {"$ref": "#/components/schemas/SnippetSummary"}},
                    "forks_count": {"type": "integer"},
                    "run": {"oneOf": [{"$ref": "#/components/schemas/RunDetail"}, {"type": "null"}],
                            "description": "The saved run with (a page of) its events"},
                    "links": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            }]},
            "SnippetList": {"type": "object", "required": ["snippets", "next_page"], "properties": {
                "snippets": {"type": "array", "items": {"$ref": "#/components/schemas/SnippetSummary"}},
                "next_page": {"type": ["integer", "null"]},
            }},
            "TokenCreated": {"type": "object", "required": ["id", "token", "name", "prefix", "created_at"],
                             "properties": {
                "id": {"type": "string", "format": "uuid"}, "token": {"type": "string", "description": "Shown once"},
                "name": {"type": "string"}, "prefix": {"type": "string"},
                "created_at": {"type": "string", "format": "date-time"},
            }},
            "RunSummary": {"type": "object", "required": ["id", "status", "device", "ws"], "properties": {
                "id": {"type": "string", "format": "uuid"},
                "status": {"type": "string", "enum": list(ev.STATUSES)},
                "device": {"type": "string", "enum": kinds},
                "ws": {"type": "string", "description": "Websocket path of the run's events"},
            }},
            "RunDetail": {"allOf": [{"$ref": "#/components/schemas/RunSummary"}, {
                "type": "object",
                "required": ["created_at", "events"],
                "properties": {
                    "message": {"type": "string"},
                    "worker": {"type": "string"},
                    "code": {"type": "string"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "started_at": {"type": ["string", "null"], "format": "date-time"},
                    "finished_at": {"type": ["string", "null"], "format": "date-time"},
                    "wall_ms": nullable_num, "cpu_ms": nullable_num,
                    "peak_memory_kb": {"type": ["integer", "null"]},
                    "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"},
                               "description": "One page of the run's events, in seq order"},
                    "events_next": {"type": ["integer", "null"],
                                    "description": "Pass as ?after= for the next page; null on the last"},
                },
            }]},
            "CancelResult": {"type": "object", "required": ["id", "status"], "properties": {
                "id": {"type": "string", "format": "uuid"},
                "status": {"type": "string", "enum": list(ev.STATUSES)},
            }},
            "Event": {"type": "object", "required": ["seq", "type"], "properties": {
                "seq": {"type": "integer", "minimum": 1},
                "type": {"type": "string", "enum": list(ev.EVENT_TYPES)},
            }, "additionalProperties": True},
            "Device": {"type": "object", "required": ["kind", "online", "workers", "queue_depth"], "properties": {
                "kind": {"type": "string", "enum": kinds},
                "online": {"type": "boolean"},
                "workers": {"type": "integer"},
                "slots": {"type": "integer"},
                "busy": {"type": "integer"},
                "warm_runners": {"type": "integer"},
                "pool_size": {"type": "integer"},
                "platform": {"type": ["string", "null"]},
                "device_kind": {"type": ["string", "null"]},
                "device_count": {"type": ["integer", "null"]},
                "jax_version": {"type": ["string", "null"]},
                "libraries": {"type": "object", "additionalProperties": {"type": "string"},
                              "description": "Libraries importable in runs, with their versions"},
                "sandboxed": {"type": ["boolean", "null"]},
                "queue_depth": {"type": "integer"},
            }},
            "DeviceList": {"type": "object", "required": ["devices", "server_time"], "properties": {
                "devices": {"type": "array", "items": {"$ref": "#/components/schemas/Device"}},
                "server_time": {"type": "number",
                                "description": "The server's clock, Unix seconds (events' ts are on it)"}}},
        }},
    }
