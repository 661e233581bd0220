"""The notebooks' part of the OpenAPI document (web/openapi.py): one's notebooks, shared ones,
imports and the names each cell binds and reads."""

from __future__ import annotations

from django.conf import settings

from web.openapi import DEVICE, RUNTIME, body, error, reply

NOTEBOOK_ID = {"name": "notebook_id", "in": "path", "required": True, "schema": {"type": "string", "format": "uuid"}}
SLUG = {"name": "slug", "in": "path", "required": True, "schema": {"type": "string"}}
MINE = "Not found, or not yours (another person's notebook answers as if there were none)"


def paths() -> dict:
    return {
        "/api/notebooks": {
            "get": {
                "summary": "Your notebooks, the last saved first",
                "operationId": "listNotebooks",
                "responses": {"200": reply("NotebookList", "Your notebooks"), "401": error("Not signed in")},
            },
            "post": {
                "summary": "Save a new notebook (signed in; signed out, a notebook is a draft in the browser)",
                "operationId": "createNotebook",
                "requestBody": body("NotebookRequest"),
                "responses": {"201": reply("Notebook", "The new notebook, at version 1"),
                              "400": error("Bad input: cells malformed or too large, an unknown runtime or device"),
                              "403": error("Not signed in, or the CSRF check failed (cookie sessions)"),
                              "409": error("You keep the most notebooks one person may")},
            },
        },
        "/api/notebooks/{notebook_id}": {
            "get": {
                "summary": "One of your notebooks",
                "operationId": "getNotebook",
                "parameters": [NOTEBOOK_ID],
                "responses": {"200": reply("Notebook", "The notebook"), "404": error(MINE)},
            },
            "put": {
                "summary": "Save a notebook: the fields given change, and its version goes up by one",
                "operationId": "saveNotebook",
                "parameters": [NOTEBOOK_ID],
                "requestBody": body("NotebookSave"),
                "responses": {"200": reply("Notebook", "Saved"), "400": error("Bad input"), "404": error(MINE),
                              "409": reply("NotebookConflict", "Saved elsewhere since 'version': the current one")},
            },
            "delete": {
                "summary": "Delete one of your notebooks (the runs its cells name stay)",
                "operationId": "deleteNotebook",
                "parameters": [NOTEBOOK_ID],
                "responses": {"204": {"description": "Deleted"}, "404": error(MINE)},
            },
        },
        "/api/notebooks/{notebook_id}/fork": {"post": {
            "summary": "Copy one of your notebooks into a new one",
            "operationId": "forkNotebook",
            "parameters": [NOTEBOOK_ID],
            "responses": {"201": reply("Notebook", "The copy"), "404": error(MINE),
                          "409": error("You keep the most notebooks one person may")},
        }},
        "/api/notebooks/share": {"post": {
            "summary": "Share a notebook as an immutable link (the same content gives the same slug); the runs "
                       "its code cells name are kept as their outputs",
            "operationId": "shareNotebook",
            "requestBody": body("NotebookShareRequest"),
            "responses": {"201": reply("SharedNotebookCreated", "A new link"),
                          "200": reply("SharedNotebookCreated", "This content was shared before: its link"),
                          "400": error("Bad input"), "403": error("CSRF check failed (cookie sessions)"),
                          "429": error("Too many shared notebooks from this client; see Retry-After")},
        }},
        "/api/notebooks/shared/{slug}": {"get": {
            "summary": "A shared notebook: its cells, each code cell with the run that is its output",
            "operationId": "getSharedNotebook",
            "parameters": [SLUG],
            "responses": {"200": reply("SharedNotebook", "The shared notebook"), "404": error("No such link")},
        }},
        "/api/notebooks/shared/{slug}/fork": {"post": {
            "summary": "Make a shared notebook yours: a new notebook (signed in) or a draft for the browser",
            "operationId": "forkSharedNotebook",
            "parameters": [SLUG],
            "responses": {"201": reply("Notebook", "A new notebook of yours"),
                          "200": reply("NotebookDraft", "Signed out: the draft to keep in the browser"),
                          "404": error("No such link"),
                          "409": error("You keep the most notebooks one person may")},
        }},
        "/api/notebooks/import": {"post": {
            "summary": "Read a .ipynb file (multipart field 'file'), or one of this site's own export links "
                       "(JSON {\"url\"}: /n/<slug>.ipynb or /s/<slug>.ipynb), as cells; nothing is saved",
            "operationId": "importNotebook",
            "requestBody": {"required": True, "content": {
                "multipart/form-data": {"schema": {"type": "object", "required": ["file"], "properties": {
                    "file": {"type": "string", "format": "binary",
                             "maxLength": settings.NOTEBOOK_IMPORT_MAX_BYTES}}}},
                "application/json": {"schema": {"type": "object", "required": ["url"], "properties": {
                    "url": {"type": "string", "description": "A link of this site's: never fetched from another"}}}},
            }},
            "responses": {"200": reply("NotebookDraft", "The notebook's title and cells (outputs dropped)"),
                          "400": error("Not JSON, not nbformat 4, too large, too many cells, or a link that is "
                                       "not one of this site's export links"),
                          "404": error("The link names nothing"), "410": error("The snippet was removed")},
        }},
        "/api/cells/names": {"post": {
            "summary": "The names each code cell binds at its top level and the global names it reads (parsed, "
                       "never run), for telling which cells a rerun makes stale",
            "operationId": "cellNames",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["cells"], "properties": {
                    "cells": {"type": "array", "maxItems": settings.NOTEBOOK_MAX_CELLS,
                              "items": {"type": "string"}}}}}}},
            "responses": {"200": reply("CellNames", "One answer a cell, in order"), "400": error("Malformed"),
                          "413": error("The cells are over NOTEBOOK_MAX_BYTES in all")},
        }},
    }


def cell() -> dict:
    return {"type": "object", "required": ["type", "source"], "properties": {
        "id": {"type": "string", "maxLength": 64, "description": "Stable, made by the page (one is made if absent)"},
        "type": {"type": "string", "enum": ["code", "markdown"]},
        "source": {"type": "string", "maxLength": settings.RUN_MAX_CODE_BYTES},
        "run": {"type": "string", "format": "uuid", "description": "The run that last ran this code cell: its outputs"},
    }}


LINKS = {"slug": {"type": "string"}, "url": {"type": "string"}, "ipynb_url": {"type": "string"}}


def schemas() -> dict:
    cells = {"type": "array", "maxItems": settings.NOTEBOOK_MAX_CELLS,
             "items": {"$ref": "#/components/schemas/Cell"}}
    return {
        "Cell": cell(),
        "NotebookRequest": {"type": "object", "properties": {
            "title": {"type": "string", "maxLength": 200}, "cells": cells, "runtime": RUNTIME, "device": DEVICE}},
        "NotebookSave": {"type": "object", "properties": {
            "title": {"type": "string", "maxLength": 200}, "cells": cells, "runtime": RUNTIME, "device": DEVICE,
            "version": {"type": "integer", "minimum": 1,
                        "description": "The version last loaded or saved: refused (409) if it was saved since"}}},
        "Notebook": {"type": "object", "required": ["id", "title", "cells", "runtime", "device", "version", "url"],
                     "properties": {
            "id": {"type": "string", "format": "uuid"}, "title": {"type": "string"}, "cells": cells,
            "runtime": RUNTIME, "device": DEVICE, "version": {"type": "integer"},
            "created_at": {"type": "string", "format": "date-time"},
            "updated_at": {"type": "string", "format": "date-time"},
            "url": {"type": "string"}, "ipynb_url": {"type": "string"}, "save_url": {"type": "string"},
            "forked_from": {"oneOf": [{"type": "object", "properties": LINKS}, {"type": "null"}]}}},
        "NotebookConflict": {"type": "object", "required": ["error", "version", "notebook"], "properties": {
            "error": {"type": "string"}, "version": {"type": "integer"},
            "notebook": {"$ref": "#/components/schemas/Notebook"}}},
        "NotebookList": {"type": "object", "required": ["notebooks"], "properties": {"notebooks": {
            "type": "array", "items": {"type": "object", "required": ["id", "title", "updated_at", "cells", "url"],
                                       "properties": {
                "id": {"type": "string", "format": "uuid"}, "title": {"type": "string"},
                "updated_at": {"type": "string", "format": "date-time"},
                "cells": {"type": "integer", "description": "How many"}, "url": {"type": "string"}}}}}},
        "NotebookDraft": {"type": "object", "required": ["title", "cells"], "properties": {
            "title": {"type": "string"}, "cells": cells, "runtime": RUNTIME, "device": DEVICE}},
        "NotebookShareRequest": {"type": "object", "required": ["cells"], "properties": {
            "title": {"type": "string", "maxLength": 200}, "cells": {**cells, "minItems": 1},
            "runtime": {**RUNTIME, "description": "The runtime it is pinned to; default: the default runtime"},
            "device": DEVICE}},
        "SharedNotebookCreated": {"type": "object", "required": ["slug", "url", "ipynb_url", "created"],
                                  "properties": {**LINKS, "created": {"type": "boolean"}}},
        "SharedNotebook": {"type": "object", "required": ["slug", "url", "ipynb_url", "title", "cells", "runtime"],
                           "properties": {**LINKS, "title": {"type": "string"}, "cells": cells, "runtime": RUNTIME,
                                          "device": DEVICE, "created_at": {"type": "string", "format": "date-time"}}},
        "CellNames": {"type": "object", "required": ["cells"], "properties": {"cells": {"type": "array", "items": {
            "type": "object", "required": ["defines", "uses", "error"], "properties": {
                "defines": {"type": "array", "items": {"type": "string"}},
                "uses": {"type": "array", "items": {"type": "string"}},
                "error": {"type": ["string", "null"], "description": "Why the cell does not parse"}}}}}},
    }
