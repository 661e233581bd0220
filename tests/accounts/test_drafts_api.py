"""/api/me/drafts: a signed-in person's drafts (their own code, each example or snippet they
edited), saved by key, listed newest first, deleted; nobody else's, ever."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.actions import DRAFTS_MAX
from accounts.models import Draft

from .helpers import bearer, make_token

pytestmark = pytest.mark.django_db


def put(client, key, body, **extra):
    return client.put(f"/api/me/drafts/{key}", body, content_type="application/json", **extra)


def test_it_saves_lists_replaces_and_deletes_drafts(alice_client, alice):
    assert put(alice_client, "own", {"code": "x = 1\n"}).status_code == 200
    saved = put(alice_client, "example:grad", {"code": "grad edited\n", "title": "grad of the loss"})
    assert saved.status_code == 200
    assert saved.json() | {"updated_at": None} == {"key": "example:grad", "title": "grad of the loss",
                                                    "code": "grad edited\n", "updated_at": None}

    listed = alice_client.get("/api/me/drafts").json()["drafts"]
    assert [(d["key"], d["code"]) for d in listed] == [("example:grad", "grad edited\n"), ("own", "x = 1\n")]

    # The same key again replaces, and comes first.
    put(alice_client, "own", {"code": "x = 2\n"})
    listed = alice_client.get("/api/me/drafts").json()["drafts"]
    assert [(d["key"], d["code"]) for d in listed] == [("own", "x = 2\n"), ("example:grad", "grad edited\n")]
    assert Draft.objects.filter(user=alice).count() == 2

    assert alice_client.delete("/api/me/drafts/own").status_code == 204
    assert [d["key"] for d in alice_client.get("/api/me/drafts").json()["drafts"]] == ["example:grad"]
    assert alice_client.delete("/api/me/drafts/own").status_code == 404


def test_drafts_are_their_owner_s_alone(alice_client, alice, bob):
    put(alice_client, "snippet:bcdfghjklmnp", {"code": "alice's secret\n"})
    bob_client = Client()
    bob_client.force_login(bob)
    assert bob_client.get("/api/me/drafts").json() == {"drafts": []}
    assert bob_client.delete("/api/me/drafts/snippet:bcdfghjklmnp").status_code == 404
    # Bob's draft of the same key is his own, beside hers.
    put(bob_client, "snippet:bcdfghjklmnp", {"code": "bob's\n"})
    assert Draft.objects.get(user=alice).code == "alice's secret\n"

    anonymous = Client()
    response = anonymous.get("/api/me/drafts")
    assert response.status_code == 401
    assert "sign in" in response.json()["error"]
    assert put(anonymous, "own", {"code": "x"}).status_code == 401


def test_a_token_reaches_the_drafts_as_its_owner(alice):
    secret = make_token(alice)
    client = Client()
    assert put(client, "own", {"code": "from a script\n"}, **bearer(secret)).status_code == 200
    assert client.get("/api/me/drafts", **bearer(secret)).json()["drafts"][0]["code"] == "from a script\n"


def test_a_session_needs_the_csrf_token_to_save(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = put(client, "own", {"code": "x"})
    assert response.status_code == 403
    assert not Draft.objects.exists()


@pytest.mark.parametrize("key, body, status, words", [
    ("mine", {"code": "x"}, 404, "'own', 'example:<slug>'"),
    ("example:", {"code": "x"}, 404, "'own', 'example:<slug>'"),
    ("snippet:a-b", {"code": "x"}, 404, "'own', 'example:<slug>'"),
    ("own", ["x"], 400, "JSON object"),
    ("own", {"code": 3}, 400, "'code' must be a string"),
    ("own", {"code": "x", "title": "t" * 201}, 400, "'title'"),
])
def test_it_refuses_malformed_drafts_with_a_clear_error(alice_client, key, body, status, words):
    response = put(alice_client, key, body)
    assert response.status_code == status
    assert words in response.json()["error"]
    assert not Draft.objects.exists()


def test_it_refuses_a_draft_longer_than_a_run_s_code(alice_client, settings):
    settings.RUN_MAX_CODE_BYTES = 1000
    response = put(alice_client, "own", {"code": "é" * 501})
    assert response.status_code == 413
    assert "1002 bytes" in response.json()["error"]
    assert put(alice_client, "own", {"code": "é" * 500}).status_code == 200


def test_it_keeps_the_newest_drafts_when_there_are_too_many(alice_client, alice):
    from accounts.actions import do_save_draft

    for i in range(DRAFTS_MAX + 3):
        do_save_draft(alice, f"example:e{i}", f"code {i}", "")
    keys = [d["key"] for d in alice_client.get("/api/me/drafts").json()["drafts"]]
    assert len(keys) == DRAFTS_MAX
    assert keys[0] == f"example:e{DRAFTS_MAX + 2}"
    assert "example:e0" not in keys and "example:e2" not in keys


def test_the_drafts_api_is_in_the_openapi_schema(client):
    paths = client.get("/api/openapi.json").json()["paths"]
    assert set(paths["/api/me/drafts/{key}"]) >= {"put", "delete"}
    assert "get" in paths["/api/me/drafts"]
