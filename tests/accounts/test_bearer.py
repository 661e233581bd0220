"""A script with a token and no cookies: acts as the token's owner, and a revoked or mistyped token
is refused with 401 rather than taken for an anonymous caller."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import ApiToken
from snippets.models import Snippet

from .helpers import bearer, make_token

pytestmark = pytest.mark.django_db


def test_a_script_shares_a_snippet_as_the_tokens_owner(alice):
    script = Client(**bearer(make_token(alice)))
    response = script.post("/api/snippets", {"code": "print('from a script')"}, content_type="application/json")
    assert response.status_code == 201
    slug = response.json()["slug"]
    assert Snippet.objects.get(slug=slug).owner == alice
    listed = script.get("/api/me/snippets")
    assert listed.status_code == 200
    assert [s["slug"] for s in listed.json()["snippets"]] == [slug]


def test_it_records_when_a_token_was_last_used(alice):
    secret = make_token(alice)
    assert ApiToken.objects.get(user=alice).last_used_at is None
    assert Client(**bearer(secret)).get("/api/me/snippets").status_code == 200
    assert ApiToken.objects.get(user=alice).last_used_at is not None


def test_a_revoked_token_gets_401(alice):
    secret = make_token(alice)
    ApiToken.objects.filter(user=alice).delete()
    response = Client(**bearer(secret)).post("/api/snippets", {"code": "x = 1"}, content_type="application/json")
    assert response.status_code == 401
    assert "not valid" in response.json()["error"]
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert not Snippet.objects.exists()


@pytest.mark.parametrize("secret", ["jpg_" + "x" * 43, "not-even-ours", ""])
def test_a_mistyped_token_gets_401(alice, secret):
    make_token(alice)
    response = Client(**bearer(secret)).get("/api/me/snippets")
    assert response.status_code == 401
    assert "error" in response.json()


def test_a_disabled_accounts_token_gets_401(alice):
    secret = make_token(alice)
    alice.is_active = False
    alice.save()
    assert Client(**bearer(secret)).get("/api/me/snippets").status_code == 401


def test_another_authorization_scheme_is_left_alone(alice):
    # A password of a proxy in front of the site, say: the request is anonymous, not refused.
    response = Client(HTTP_AUTHORIZATION="Basic dXNlcjpwYXNz").post(
        "/api/snippets", {"code": "y = 2"}, content_type="application/json")
    assert response.status_code == 201
    assert Snippet.objects.get(slug=response.json()["slug"]).owner is None


def test_a_token_needs_no_csrf_token_even_beside_a_session(alice, bob):
    client = Client(enforce_csrf_checks=True, **bearer(make_token(alice)))
    client.force_login(bob)
    response = client.post("/api/snippets", {"code": "z = 3"}, content_type="application/json")
    assert response.status_code == 201
    assert Snippet.objects.get(slug=response.json()["slug"]).owner == alice
