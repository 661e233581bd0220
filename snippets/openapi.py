"""The snippets' part of the OpenAPI document (web/openapi.py): sharing, a snippet, one's own."""

from __future__ import annotations

from django.conf import settings

from web.openapi import DEVICE, RUNTIME, error, reply
from playground.openapi import RUN_OPTIONS, STDIN

SLUG = {"name": "slug", "in": "path", "required": True, "schema": {"type": "string"}}


def paths() -> dict:
    return {
        "/api/snippets": {"post": {
            "summary": "Share code as an immutable snippet (the same content gives the same slug)",
            "operationId": "createSnippet",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/SnippetRequest"}}}},
            "responses": {"201": reply("SnippetCreated", "A new snippet"),
                          "200": reply("SnippetCreated", "This content was shared before: its snippet"),
                          "400": error("Bad input"), "403": error("CSRF check failed (cookie sessions)"),
                          "429": error("Too many snippets from this client or account; see Retry-After")},
        }},
        "/api/snippets/{slug}": {"get": {
            "summary": "A snippet: code, title, description, versions, parent and forks, its saved run",
            "operationId": "getSnippet",
            "parameters": [SLUG],
            "responses": {"200": reply("Snippet", "The snippet"), "404": error("No such snippet"),
                          "410": error("Removed by the staff")},
        }},
        "/api/comparisons": {"post": {
            "summary": "Run one code on two runtimes (or two devices) at once, both runs kept under one link",
            "operationId": "createComparison",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/ComparisonRequest"}}}},
            "responses": {"201": reply("Comparison", "Both runs started (or one reused); the link's page follows them"),
                          "400": error("Bad input: the two sides the same, an unknown runtime or device, a run "
                                       "of other code"),
                          "403": error("CSRF check failed (cookie sessions)"),
                          "429": error("A run would pass this client's share or rate; neither side started"),
                          "503": error("No executor of a side's runtime and device is online")},
        }},
        "/api/comparisons/{slug}": {"get": {
            "summary": "A comparison: its code and its two sides, each with its run (events: GET /api/runs/<id>)",
            "operationId": "getComparison",
            "parameters": [SLUG],
            "responses": {"200": reply("Comparison", "The comparison"), "404": error("No such comparison")},
        }},
        "/api/me/snippets": {"get": {
            "summary": "Your snippets (signed in, or a token), newest first; q searches",
            "operationId": "listMySnippets",
            "parameters": [{"name": "q", "in": "query", "required": False, "schema": {"type": "string"}},
                           {"name": "page", "in": "query", "required": False,
                            "schema": {"type": "integer", "minimum": 1}}],
            "responses": {"200": reply("SnippetList", "One page"), "401": error("Not signed in")},
        }},
        "/api/me/snippets/{slug}": {"delete": {
            "summary": "Delete one of your snippets: off your list and search engines; its link still works",
            "operationId": "deleteMySnippet",
            "parameters": [SLUG],
            "responses": {"204": {"description": "Deleted"}, "401": error("Not signed in"),
                          "404": error("No such snippet of yours")},
        }},
    }


def schemas() -> dict:
    return {
        "SnippetRequest": {"type": "object", "required": ["code"], "properties": {
            "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES},
            "stdin": {**STDIN, "description": "Its runs' standard input, part of its content (the same code with "
                                              "another stdin is another link)"},
            "title": {"type": "string", "maxLength": 200},
            "description": {"type": "string", "maxLength": 10000, "description": "Markdown"},
            "device": DEVICE,
            "runtime": {**RUNTIME, "description": "The runtime it is pinned to; default: its run's, else the default"},
            "run": {"type": "string", "format": "uuid",
                    "description": "The run it is shared from (kept when its code, stdin, device and runtime are "
                                   "these)"},
            "parent": {"type": "string", "description": "The slug of the snippet this one was forked from"},
        }},
        "ComparisonRequest": {"type": "object", "required": ["code", "sides"], "properties": {
            "code": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES},
            "stdin": {**STDIN, "description": "Both sides' standard input (a side's own stdin wins); default: "
                                              "the input of 'snippet', else none"},
            "title": {"type": "string", "maxLength": 200},
            "sides": {"type": "array", "minItems": 2, "maxItems": 2, "description": "A and B", "items": {"oneOf": [
                {"type": "object", "description": "A new run there", "properties": {
                    "runtime": {**RUNTIME, "description": "Default: the default runtime"},
                    "device": DEVICE,
                    "options": {**RUN_OPTIONS, "description": "This side's run options, over the request's"},
                    "stdin": {**STDIN, "description": "This side's standard input, over the request's"}}},
                {"type": "object", "required": ["run"],
                 "description": "One of your own runs of this code and input, or the saved run of 'snippet'",
                 "properties": {"run": {"type": "string", "format": "uuid"}}},
            ]}},
            "snippet": {"type": "string", "description": "The slug of the snippet whose page asked for it"},
            "options": {**RUN_OPTIONS, "description": "Both new runs' options: {\"profile\": true} profiles both"},
        }},
        "Comparison": {"type": "object", "required": ["slug", "url", "code", "sides", "created_at"], "properties": {
            "slug": {"type": "string"}, "url": {"type": "string", "format": "uri"}, "title": {"type": "string"},
            "code": {"type": "string"}, "created_at": {"type": "string", "format": "date-time"},
            "snippet": {"oneOf": [{"$ref": "#/components/schemas/SnippetSummary"}, {"type": "null"}]},
            "sides": {"type": "array", "minItems": 2, "maxItems": 2, "items": {
                "type": "object", "required": ["name", "label", "device", "runtime", "jax", "run"], "properties": {
                    "name": {"type": "string", "enum": ["A", "B"]},
                    "label": {"type": "string", "description": "How the page names it: JAX 0.4.38 · CPU"},
                    "device": DEVICE, "runtime": RUNTIME, "jax": {"type": "string"},
                    "saved": {"type": "boolean", "description": "The snippet's saved run, not a new one"},
                    "stdin": {"type": "string", "description": "What its run read as its standard input"},
                    "run": {"type": "object", "required": ["id", "status", "ws"], "properties": {
                        "id": {"type": "string", "format": "uuid"}, "status": {"type": "string"},
                        "device": DEVICE, "runtime": RUNTIME, "ws": {"type": "string"},
                        "wall_ms": {"type": ["number", "null"]},
                        "finished_at": {"type": ["string", "null"], "format": "date-time"}}},
                }}},
        }},
        "SnippetCreated": {"type": "object", "required": ["slug", "url", "created"], "properties": {
            "slug": {"type": "string"}, "url": {"type": "string", "format": "uri"},
            "created": {"type": "boolean"}, "run": {"type": ["string", "null"]}, "runtime": RUNTIME,
        }},
        "SnippetSummary": {"type": "object", "required": ["slug", "url", "title", "device", "created_at"],
                           "properties": {
            "slug": {"type": "string"}, "url": {"type": "string"}, "title": {"type": "string"},
            "device": DEVICE, "runtime": RUNTIME, "created_at": {"type": "string", "format": "date-time"},
            "first_line": {"type": "string"},
        }},
        "Snippet": {"allOf": [{"$ref": "#/components/schemas/SnippetSummary"}, {
            "type": "object",
            "required": ["code", "description", "jax_version", "parent", "forks", "run", "links"],
            "properties": {
                "code": {"type": "string"}, "description": {"type": "string"},
                "stdin": {"type": "string", "description": "Its runs' standard input (\"\": none)"},
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
    }
