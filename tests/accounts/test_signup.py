"""POST /accounts/signup/: Django's sign-up form, signing the new person in, limited per address;
refused, the form comes back with what was typed but the passwords, and says so. (Through a
course's join link, bounded per course instead: tests/courses/test_join_signup.py.)"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.people import PASSWORD

pytestmark = pytest.mark.django_db


def sign_up(client, username: str, **extra):
    return client.post("/accounts/signup/", {"username": username, "password1": PASSWORD, "password2": PASSWORD,
                                             **extra})


def test_it_shows_djangos_field_names_for_password_managers(client):
    page = client.get("/accounts/signup/").content.decode()
    for name in ("username", "password1", "password2"):
        assert f'name="{name}"' in page
    assert 'autocomplete="new-password"' in page


def test_it_creates_the_account_and_signs_the_person_in(client):
    response = sign_up(client, "carol", email="carol@example.com")
    assert response.status_code == 302
    assert response["Location"] == "/"
    carol = get_user_model().objects.get(username="carol")
    assert carol.email == "carol@example.com"
    assert carol.check_password(PASSWORD)
    assert client.session["_auth_user_id"] == str(carol.pk)
    assert "carol" in client.get("/accounts/").content.decode()


def test_it_goes_on_to_a_next_page_of_this_site_only(client):
    assert sign_up(client, "dave", next="/me/snippets/")["Location"] == "/me/snippets/"
    assert sign_up(Client(), "erin", next="https://evil.example/")["Location"] == "/"


def test_it_keeps_its_next_page_for_the_form_when_that_page_has_no_sign_up_of_its_own(client):
    page = client.get("/accounts/signup/?next=/me/snippets/")
    assert page.status_code == 200
    assert 'name="next" value="/me/snippets/"' in page.content.decode()


def test_it_refuses_passwords_that_differ(client):
    response = client.post("/accounts/signup/", {"username": "frank", "password1": PASSWORD, "password2": "other"})
    assert response.status_code == 200
    assert "didn’t match" in response.content.decode()
    assert not get_user_model().objects.filter(username="frank").exists()
    assert "_auth_user_id" not in client.session


def test_it_refuses_a_taken_username(client, alice):
    response = sign_up(client, "alice")
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert get_user_model().objects.filter(username="alice").count() == 1


def test_it_answers_429_past_the_hourly_limit_per_address(settings):
    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 2
    assert sign_up(Client(), "one").status_code == 302
    assert sign_up(Client(), "two").status_code == 302
    response = sign_up(Client(), "three")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    page = response.content.decode()
    assert "Too many sign-ups from your address" in page
    assert "use your course&#x27;s join link" in page.lower()  # what a class does instead
    assert not get_user_model().objects.filter(username="three").exists()


# What was typed comes back -----------------------------------------------------------------------

def field_value(page: str, name: str) -> str | None:
    """The value an <input name=...> is rendered with (None: no value attribute)."""
    tag = re.search(rf'<input[^>]*name="{name}"[^>]*>', page)
    assert tag is not None, f"no input {name}"
    value = re.search(r'value="([^"]*)"', tag.group(0))
    return value.group(1) if value else None


def test_a_refused_sign_up_keeps_the_username_and_email_and_says_the_passwords_are_not(settings):
    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 1
    assert sign_up(Client(), "first").status_code == 302
    response = sign_up(Client(), "second", email="second@example.com")
    assert response.status_code == 429
    page = response.content.decode()
    assert field_value(page, "username") == "second" and field_value(page, "email") == "second@example.com"
    assert field_value(page, "password1") is None and field_value(page, "password2") is None
    assert "the password fields are emptied, so type the password again" in page


def test_a_sign_up_refused_by_a_field_keeps_what_was_typed(client, alice):
    response = client.post("/accounts/signup/", {"username": "alice", "email": "a2@example.com",
                                                 "password1": PASSWORD, "password2": "other"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "already exists" in page and "didn’t match" in page
    assert field_value(page, "username") == "alice" and field_value(page, "email") == "a2@example.com"
    assert "Check the fields below." in page and "type the password again" in page


def test_it_sends_a_signed_in_person_to_their_account(alice_client):
    assert alice_client.get("/accounts/signup/")["Location"] == "/accounts/"
