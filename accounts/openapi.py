"""The accounts' part of the OpenAPI document (web/openapi.py): API tokens, drafts."""

from __future__ import annotations

from django.conf import settings

from web.openapi import error, reply

from .actions import DRAFT_KEY, DRAFT_TITLE_MAX



def paths() -> dict:
    return {
        "/api/me/tokens": {
            "get": {"summary": "Your API tokens (without their secrets)", "operationId": "listTokens",
                    "responses": {"200": {"description": "The tokens"}, "401": error("Not signed in")}},
            "post": {"summary": "Create a personal API token (from a signed-in session); it lasts until "
                                "revoked, or expires_in_days; a password change revokes every token",
                     "operationId": "createToken",
                     "requestBody": {"required": False, "content": {"application/json": {"schema": {
                         "type": "object", "properties": {
                             "name": {"type": "string", "maxLength": 100},
                             "expires_in_days": {"type": ["integer", "null"], "minimum": 1,
                                                 "maximum": 3650}}}}}},
                     "responses": {"201": reply("TokenCreated", "The token, shown once"),
                                   "401": error("Not signed in"),
                                   "403": error("Tokens cannot create tokens; CSRF check failed")}},
        },
        "/api/me/tokens/{token_id}": {"delete": {
            "summary": "Revoke one of your tokens", "operationId": "revokeToken",
            "parameters": [{"name": "token_id", "in": "path", "required": True,
                            "schema": {"type": "string", "format": "uuid"}}],
            "responses": {"204": {"description": "Revoked"}, "404": error("No such token of yours")},
        }},
        "/api/me/drafts": {"get": {
            "summary": "Your drafts: the code you are working on, kept for another browser",
            "operationId": "listDrafts",
            "responses": {"200": reply("DraftList", "Newest first"), "401": error("Not signed in")},
        }},
        "/api/me/drafts/{key}": {
            "parameters": [{"name": "key", "in": "path", "required": True,
                            "schema": {"type": "string", "pattern": DRAFT_KEY.pattern},
                            "description": "own, example:<slug> or snippet:<slug>"}],
            "put": {"summary": "Save a draft (replacing the one with this key)", "operationId": "saveDraft",
                    "requestBody": {"required": True, "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/DraftRequest"}}}},
                    "responses": {"200": reply("Draft", "Saved"), "400": error("Malformed"),
                                  "401": error("Not signed in"), "404": error("Not a draft's key"),
                                  "413": error("The code is too long")}},
            "delete": {"summary": "Delete a draft", "operationId": "deleteDraft",
                       "responses": {"204": {"description": "Deleted"}, "404": error("No such draft of yours")}},
        },
    }


def schemas() -> dict:
    return {
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
        "TokenCreated": {"type": "object", "required": ["id", "token", "name", "prefix", "created_at"],
                         "properties": {
            "id": {"type": "string", "format": "uuid"}, "token": {"type": "string", "description": "Shown once"},
            "name": {"type": "string"}, "prefix": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "expires_at": {"type": ["string", "null"], "format": "date-time"},
        }},
    }
