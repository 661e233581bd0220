"""Signing in and out, changing and resetting a password: Django's views at Django's URLs, with our
templates (not the admin's) and the email through Django's email backend."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.people import PASSWORD

pytestmark = pytest.mark.django_db

RESET_LINK = re.compile(r"http://testserver(/accounts/reset/[^/\s]+/[^/\s]+/)")


def signed_in_user_id(client):
    return client.session.get("_auth_user_id")


def test_it_signs_in_with_djangos_field_names(client, alice):
    page = client.get("/accounts/login/").content.decode()
    assert 'name="username"' in page and 'name="password"' in page
    assert "accounts/pages.css" in page
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert signed_in_user_id(client) == str(alice.pk)


def test_it_refuses_a_wrong_password(client, alice):
    response = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "correct username and password" in response.content.decode()
    assert signed_in_user_id(client) is None


def test_a_refused_sign_in_keeps_the_username_and_says_the_password_is_not(client, alice):
    page = client.post("/accounts/login/", {"username": "alice", "password": "wrong"}).content.decode()
    username = re.search(r'<input[^>]*name="username"[^>]*>', page).group(0)
    password = re.search(r'<input[^>]*name="password"[^>]*>', page).group(0)
    assert 'value="alice"' in username and "value=" not in password
    assert "the password field is emptied, so type the password again" in page


def test_it_signs_out_with_a_post(alice_client):
    response = alice_client.post("/accounts/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert signed_in_user_id(alice_client) is None
    assert alice_client.get("/accounts/")["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("path", ["/accounts/", "/me/snippets/", "/me/runs/", "/accounts/password_change/"])
def test_its_pages_send_a_stranger_to_sign_in(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


def test_it_changes_a_password(alice_client, alice):
    page = alice_client.get("/accounts/password_change/").content.decode()
    assert 'name="old_password"' in page and "accounts/pages.css" in page
    new = "another long password 2"
    response = alice_client.post("/accounts/password_change/",
                                 {"old_password": PASSWORD, "new_password1": new, "new_password2": new})
    assert response["Location"] == "/accounts/password_change/done/"
    alice.refresh_from_db()
    assert alice.check_password(new)
    assert "Password changed" in alice_client.get("/accounts/password_change/done/").content.decode()


def test_it_keeps_the_password_when_the_old_one_is_wrong(alice_client, alice):
    new = "another long password 2"
    response = alice_client.post("/accounts/password_change/",
                                 {"old_password": "wrong", "new_password1": new, "new_password2": new})
    assert response.status_code == 200
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)


def test_it_resets_a_password_through_the_emailed_link(client, alice, mailoutbox):
    response = client.post("/accounts/password_reset/", {"email": "alice@example.com"})
    assert response["Location"] == "/accounts/password_reset/done/"
    assert len(mailoutbox) == 1
    mail = mailoutbox[0]
    assert mail.to == ["alice@example.com"]
    assert mail.subject == "Reset your JAX Playground password"
    assert '"alice"' in mail.body
    link = RESET_LINK.search(mail.body).group(1)

    # Django swaps the token in the link for one in the session before showing the form.
    form_url = client.get(link)["Location"]
    assert 'name="new_password1"' in client.get(form_url).content.decode()
    new = "a brand new password 3"
    response = client.post(form_url, {"new_password1": new, "new_password2": new})
    assert response["Location"] == "/accounts/reset/done/"
    assert Client().login(username="alice", password=new)
    assert not Client().login(username="alice", password=PASSWORD)

    # The link worked once.
    assert "no longer works" in Client().get(link, follow=True).content.decode()


def test_it_sends_no_email_for_an_unknown_address_and_says_the_same(client, alice, mailoutbox):
    response = client.post("/accounts/password_reset/", {"email": "nobody@example.com"})
    assert response["Location"] == "/accounts/password_reset/done/"
    assert mailoutbox == []


def test_it_limits_reset_emails_per_address(client, alice, mailoutbox, settings):
    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 1
    client.post("/accounts/password_reset/", {"email": "alice@example.com"})
    response = client.post("/accounts/password_reset/", {"email": "alice@example.com"})
    assert response.status_code == 429
    assert "too many password reset emails" in response.content.decode()
    assert len(mailoutbox) == 1
