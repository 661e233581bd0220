"""The JSON API and the session cookie: a signed-in browser's unsafe requests carry the CSRF token,
or another site could act as the person; anonymous callers (scripts without cookies) need none."""

from __future__ import annotations

import pytest
from django.test import Client

from snippets.models import Snippet

from .helpers import share

pytestmark = pytest.mark.django_db

CSRF_REFUSED = "CSRF token missing or wrong: send the csrftoken cookie's value in the X-CSRFToken header"


@pytest.fixture
def browser(alice):
    """Alice's browser: signed in, CSRF enforced as in production, holding the csrftoken cookie."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    client.get("/accounts/")  # a page with a form sets the cookie
    assert client.cookies["csrftoken"].value
    return client


def test_a_signed_in_post_without_the_csrf_token_is_refused(browser):
    response = browser.post("/api/snippets", {"code": "a = 1"}, content_type="application/json")
    assert response.status_code == 403
    assert response.json() == {"error": CSRF_REFUSED}
    assert not Snippet.objects.exists()


def test_a_signed_in_post_with_the_csrf_token_is_accepted(browser, alice):
    response = browser.post("/api/snippets", {"code": "a = 1"}, content_type="application/json",
                            HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value)
    assert response.status_code == 201
    assert Snippet.objects.get(slug=response.json()["slug"]).owner == alice


def test_a_wrong_csrf_token_is_refused(browser):
    response = browser.post("/api/snippets", {"code": "a = 1"}, content_type="application/json",
                            HTTP_X_CSRFTOKEN="x" * 32)
    assert response.status_code == 403
    assert response.json()["error"] == CSRF_REFUSED


def test_a_signed_in_delete_without_the_csrf_token_is_refused(browser, alice):
    snippet = share(alice, "b = 2")
    response = browser.delete(f"/api/me/snippets/{snippet.slug}")
    assert response.status_code == 403
    snippet.refresh_from_db()
    assert snippet.hidden_at is None


def test_a_signed_in_get_needs_no_csrf_token(browser, alice):
    share(alice, "c = 3")
    response = browser.get("/api/me/snippets")
    assert response.status_code == 200
    assert len(response.json()["snippets"]) == 1


def test_an_anonymous_post_needs_no_csrf_token():
    response = Client(enforce_csrf_checks=True).post("/api/snippets", {"code": "d = 4"},
                                                     content_type="application/json")
    assert response.status_code == 201
    assert Snippet.objects.get(slug=response.json()["slug"]).owner is None
