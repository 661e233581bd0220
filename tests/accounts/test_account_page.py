"""/accounts/: who you are, your email, and your API tokens: made with a name (the secret shown
once), listed by prefix, revoked."""

from __future__ import annotations

import hashlib

import pytest

from accounts.models import ApiToken

from .helpers import TOKEN_RE, make_token

pytestmark = pytest.mark.django_db


def test_it_shows_the_username_and_email(alice_client):
    page = alice_client.get("/accounts/").content.decode()
    assert "alice" in page
    assert 'value="alice@example.com"' in page
    assert "accounts/pages.css" in page


def test_it_creates_a_token_and_shows_its_secret_once(alice_client, alice):
    response = alice_client.post("/accounts/tokens/", {"name": "laptop"}, follow=True)
    page = response.content.decode()
    assert response.redirect_chain == [("/accounts/", 302)]
    assert "Token created" in page
    assert "shown only this once" in page
    secret = TOKEN_RE.search(page).group(0)
    token = ApiToken.objects.get(user=alice)
    assert token.name == "laptop"
    assert token.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert token.prefix == secret[:12]

    again = alice_client.get("/accounts/").content.decode()
    assert secret not in again
    assert token.prefix in again and "laptop" in again


def test_it_revokes_a_token(alice_client, alice):
    make_token(alice, "ci")
    token = ApiToken.objects.get(user=alice)
    response = alice_client.post(f"/accounts/tokens/{token.id}/revoke/", follow=True)
    assert "revoked" in response.content.decode()
    assert not ApiToken.objects.filter(user=alice).exists()


def test_it_does_not_revoke_someone_elses_token(alice_client, bob):
    make_token(bob, "bob's")
    token = ApiToken.objects.get(user=bob)
    assert alice_client.post(f"/accounts/tokens/{token.id}/revoke/").status_code == 404
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_it_refuses_a_name_over_the_limit(alice_client, alice):
    response = alice_client.post("/accounts/tokens/", {"name": "x" * 101}, follow=True)
    assert "the limit is 100" in response.content.decode()
    assert not ApiToken.objects.filter(user=alice).exists()


def test_it_saves_a_new_email(alice_client, alice):
    response = alice_client.post("/accounts/email/", {"email": "new@example.com"}, follow=True)
    assert "Email saved" in response.content.decode()
    alice.refresh_from_db()
    assert alice.email == "new@example.com"


def test_it_refuses_an_email_that_is_not_one(alice_client, alice):
    assert alice_client.post("/accounts/email/", {"email": "not an email"}).status_code == 400
    alice.refresh_from_db()
    assert alice.email == "alice@example.com"
