"""POST /accounts/signup/: Django's sign-up form, signing the new person in, limited per address;
through a course's join link, bounded per course (and per address through any course's) instead;
refused, the form comes back with what was typed but the passwords, and says so."""

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


# Through a course's join link ---------------------------------------------------------------------

@pytest.fixture
def course(alice):
    from courses.actions import do_create_course

    return do_create_course(alice, "JAX 101")


def from_address(address: str) -> Client:
    return Client(REMOTE_ADDR=address)


def test_a_room_behind_one_address_signs_up_through_its_courses_join_link(settings, course):
    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 2
    settings.SIGNUP_RATE_LIMIT_PER_COURSE_HOUR = 60
    for i in range(60):
        response = sign_up(from_address("203.0.113.9"), f"student{i:02d}", next=course.join_url)
        assert response.status_code == 302 and response["Location"] == course.join_url, (i, response)
    # ...and none of them counted against the address's own sign-ups.
    assert sign_up(from_address("203.0.113.9"), "visitor1").status_code == 302
    assert sign_up(from_address("203.0.113.9"), "visitor2").status_code == 302
    assert sign_up(from_address("203.0.113.9"), "visitor3").status_code == 429
    assert get_user_model().objects.filter(username__startswith="student").count() == 60


def test_the_sign_up_page_names_the_course_of_its_join_link(client, course):
    page = client.get(f"/accounts/signup/?next={course.join_url}").content.decode()
    assert 'id="signup-course"' in page and "JAX 101" in page
    assert f'name="next" value="{course.join_url}"' in page
    assert 'id="signup-course"' not in client.get("/accounts/signup/?next=/courses/join/ZZZZZZZZ").content.decode()


def test_a_join_links_sign_ups_are_bounded_per_course_from_any_addresses(settings, course):
    settings.SIGNUP_RATE_LIMIT_PER_COURSE_HOUR = 3
    for i in range(3):
        assert sign_up(from_address(f"198.51.100.{i + 1}"), f"s{i}", next=course.join_url).status_code == 302
    response = sign_up(from_address("198.51.100.9"), "s3", next=course.join_url)
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "sign-ups through this course&#x27;s join link: at most 3 an hour" in response.content.decode()
    assert not get_user_model().objects.filter(username="s3").exists()


def test_courses_made_to_reuse_their_links_buy_an_address_nothing_more(settings, alice, course):
    """Anyone may make a course and hand out its link: an address's sign-ups through links of
    any courses share one bound."""
    from courses.actions import do_create_course

    settings.SIGNUP_RATE_LIMIT_PER_COURSE_HOUR = 3
    others = [do_create_course(alice, f"Bot course {i}") for i in range(3)]
    assert sign_up(from_address("192.0.2.5"), "b0", next=course.join_url).status_code == 302
    assert sign_up(from_address("192.0.2.5"), "b1", next=others[0].join_url).status_code == 302
    assert sign_up(from_address("192.0.2.5"), "b2", next=others[1].join_url).status_code == 302
    response = sign_up(from_address("192.0.2.5"), "b3", next=others[2].join_url)
    assert response.status_code == 429
    assert "through join links from your address" in response.content.decode()


@pytest.mark.parametrize("next_url", ["/courses/join/ZZZZZZZZ", "/courses/", "archived"])
def test_a_link_that_takes_no_one_lifts_nothing(settings, course, next_url):
    from django.utils import timezone

    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 1
    if next_url == "archived":
        course.archived_at = timezone.now()
        course.save(update_fields=["archived_at"])
        next_url = course.join_url
    assert sign_up(Client(), "one", next=next_url).status_code == 302
    response = sign_up(Client(), "two", next=next_url)
    assert response.status_code == 429 and "from your address" in response.content.decode()


def test_it_sends_a_signed_in_person_to_their_account(alice_client):
    assert alice_client.get("/accounts/signup/")["Location"] == "/accounts/"
