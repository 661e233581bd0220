"""The OpenAPI document describes what the API does: every path is routed, and real responses
carry the fields the schema requires."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import resolve

pytestmark = pytest.mark.django_db(transaction=True)


def resolve_ref(doc: dict, schema: dict) -> dict:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return resolve_ref(doc, doc["components"]["schemas"][name])
    if "allOf" in schema:
        merged = {"required": [], "properties": {}}
        for part in schema["allOf"]:
            part = resolve_ref(doc, part)
            merged["required"] += part.get("required", [])
            merged["properties"].update(part.get("properties", {}))
        return merged
    return schema


def assert_matches(doc: dict, schema: dict, body: dict) -> None:
    schema = resolve_ref(doc, schema)
    missing = set(schema.get("required", [])) - set(body)
    assert not missing, f"response lacks {missing}"
    for key, value in body.items():
        prop = schema.get("properties", {}).get(key)
        if prop and "enum" in prop:
            assert value in prop["enum"], f"{key}={value!r} not in {prop['enum']}"


def response_schema(doc, path, method, status):
    return doc["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]


def test_every_documented_path_is_routed(live_stack):
    doc = Client().get("/api/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    for path in doc["paths"]:
        concrete = (path.replace("{run_id}", "00000000-0000-0000-0000-000000000000")
                    .replace("{slug}", "bcdfghjkmnpq").replace("{token_id}", "00000000-0000-0000-0000-000000000000"))
        assert resolve(concrete).url_name.startswith("api-"), path


def test_responses_match_the_schema(live_stack):
    client = Client()
    doc = client.get("/api/openapi.json").json()
    devices = client.get("/api/devices").json()
    assert_matches(doc, response_schema(doc, "/api/devices", "get", 200), devices)
    for device in devices["devices"]:
        assert_matches(doc, doc["components"]["schemas"]["Device"], device)

    created = client.post("/api/runs", {"code": "print(1)"}, content_type="application/json")
    assert created.status_code == 201
    assert_matches(doc, response_schema(doc, "/api/runs", "post", 201), created.json())
    live_stack.wait_finished(created.json()["id"])
    detail = client.get(f"/api/runs/{created.json()['id']}").json()
    assert_matches(doc, response_schema(doc, "/api/runs/{run_id}", "get", 200), detail)
    for event in detail["events"]:
        assert_matches(doc, doc["components"]["schemas"]["Event"], event)

    bad = client.post("/api/runs", {"code": 1}, content_type="application/json")
    assert bad.status_code == 400
    assert_matches(doc, response_schema(doc, "/api/runs", "post", 400), bad.json())
    conflict = client.post(f"/api/runs/{created.json()['id']}/cancel")
    assert conflict.status_code == 409
    assert_matches(doc, response_schema(doc, "/api/runs/{run_id}/cancel", "post", 409), conflict.json())
