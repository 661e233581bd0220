"""/api/me/tokens: made from a signed-in session only (never by a token), listed without secrets,
revoked by their owner alone."""

from __future__ import annotations

import hashlib

import pytest
from django.test import Client

from accounts.models import ApiToken

from .helpers import TOKEN_RE, bearer, make_token

pytestmark = pytest.mark.django_db


def test_it_makes_a_token_and_answers_its_secret_once(alice_client, alice):
    response = alice_client.post("/api/me/tokens", {"name": "ci"}, content_type="application/json")
    assert response.status_code == 201
    body = response.json()
    assert set(body) >= {"id", "token", "name", "prefix", "created_at"}
    assert TOKEN_RE.fullmatch(body["token"])
    assert body["name"] == "ci"
    assert body["prefix"] == body["token"][:12]
    token = ApiToken.objects.get(id=body["id"], user=alice)
    assert token.key_hash == hashlib.sha256(body["token"].encode()).hexdigest()
    assert body["token"] not in {token.name, token.prefix, token.key_hash}


def test_it_makes_an_unnamed_token_from_an_empty_body(alice_client):
    response = alice_client.post("/api/me/tokens", content_type="application/json")
    assert response.status_code == 201
    assert response.json()["name"] == ""


def test_it_refuses_a_name_that_is_not_a_string(alice_client, alice):
    response = alice_client.post("/api/me/tokens", {"name": 3}, content_type="application/json")
    assert response.status_code == 400
    assert "'name'" in response.json()["error"]
    assert not ApiToken.objects.exists()


def test_it_lists_tokens_without_their_secrets(alice_client, alice, bob):
    secret = make_token(alice, "laptop")
    make_token(bob, "bob's")
    response = alice_client.get("/api/me/tokens")
    assert response.status_code == 200
    tokens = response.json()["tokens"]
    assert [t["name"] for t in tokens] == ["laptop"]
    assert "token" not in tokens[0] and "key_hash" not in tokens[0]
    assert secret not in response.content.decode()
    assert tokens[0]["prefix"] == secret[:12]


def test_it_revokes_ones_own_token(alice_client, alice):
    make_token(alice)
    token = ApiToken.objects.get(user=alice)
    response = alice_client.delete(f"/api/me/tokens/{token.id}")
    assert response.status_code == 204
    assert not ApiToken.objects.filter(pk=token.pk).exists()


@pytest.mark.parametrize("whose", ["bob", "nobody"])
def test_it_answers_404_for_a_token_that_is_not_yours(alice_client, bob, whose):
    make_token(bob)
    token_id = ApiToken.objects.get(user=bob).id if whose == "bob" else "not-a-uuid"
    response = alice_client.delete(f"/api/me/tokens/{token_id}")
    assert response.status_code == 404
    assert "error" in response.json()
    assert ApiToken.objects.filter(user=bob).count() == 1


def test_a_token_cannot_make_tokens(alice):
    secret = make_token(alice)
    response = Client().post("/api/me/tokens", {"name": "successor"}, content_type="application/json",
                             **bearer(secret))
    assert response.status_code == 403
    assert "a token cannot make tokens" in response.json()["error"]
    assert ApiToken.objects.filter(user=alice).count() == 1


def test_a_token_can_list_and_revoke_itself(alice):
    secret = make_token(alice)
    script = Client(**bearer(secret))
    (listed,) = script.get("/api/me/tokens").json()["tokens"]
    assert script.delete(f"/api/me/tokens/{listed['id']}").status_code == 204
    assert script.get("/api/me/tokens").status_code == 401


@pytest.mark.parametrize("method", ["get", "post"])
def test_it_answers_401_to_a_stranger(client, method):
    response = getattr(client, method)("/api/me/tokens")
    assert response.status_code == 401
    assert "sign in" in response.json()["error"]
    assert not ApiToken.objects.exists()
