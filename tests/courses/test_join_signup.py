"""/courses/join/<code>/signup: signing up through a course's join link. The page names the course
and brings the new person back to the link; a room behind one address signs up there, so those
sign-ups are bounded per course (and per address through any course's) instead of per address;
a link that takes no one is a sign-up like any other."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from courses.actions.courses import do_create_course
from tests.people import PASSWORD

pytestmark = pytest.mark.django_db


def sign_up(client, url: str, username: str):
    return client.post(url, {"username": username, "password1": PASSWORD, "password2": PASSWORD})


def signup_url(course) -> str:
    return f"{course.join_url}/signup"


def from_address(address: str) -> Client:
    return Client(REMOTE_ADDR=address)


def test_a_room_behind_one_address_signs_up_through_its_courses_join_link(settings, course):
    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 2
    settings.SIGNUP_RATE_LIMIT_PER_COURSE_HOUR = 60
    for i in range(60):
        response = sign_up(from_address("203.0.113.9"), signup_url(course), f"student{i:02d}")
        assert response.status_code == 302 and response["Location"] == course.join_url, (i, response)
    # ...and none of them counted against the address's own sign-ups.
    assert sign_up(from_address("203.0.113.9"), "/accounts/signup/", "visitor1").status_code == 302
    assert sign_up(from_address("203.0.113.9"), "/accounts/signup/", "visitor2").status_code == 302
    assert sign_up(from_address("203.0.113.9"), "/accounts/signup/", "visitor3").status_code == 429
    assert get_user_model().objects.filter(username__startswith="student").count() == 60


def test_the_new_person_is_signed_in_and_back_on_the_link_one_click_from_joining(course):
    client = Client()
    assert sign_up(client, signup_url(course), "newcomer")["Location"] == course.join_url
    page = client.get(course.join_url).content.decode()
    assert 'id="join-button"' in page and "JAX 101" in page


def test_the_sign_up_page_names_the_course_of_its_join_link(client, course):
    page = client.get(signup_url(course)).content.decode()
    assert 'id="signup-course"' in page and "JAX 101" in page
    assert f'name="next" value="{course.join_url}"' in page  # the sign-in link brings them back too
    assert f'action="{signup_url(course)}"' in page
    assert 'id="signup-course"' not in client.get("/courses/join/ZZZZZZZZ/signup").content.decode()


def test_the_sign_in_pages_sign_up_link_from_a_join_link_leads_to_the_courses_sign_up(client, course):
    """Sign in to join, then "Create an account" on the sign-in page: the course's sign-up all the
    same (the sign-up page hands over to the page's own)."""
    login = client.get(f"/accounts/login/?next={course.join_url}", follow=True).content.decode()
    assert f'href="{signup_url(course)}"' in login  # the course's own sign-in (test_teaching_pages.py)
    response = client.get(f"/accounts/signup/?next={course.join_url}")
    assert response.status_code == 302 and response["Location"] == signup_url(course)
    assert client.get("/accounts/signup/?next=/courses/").status_code == 200  # a page with no sign-up of its own


def test_a_join_links_sign_ups_are_bounded_per_course_from_any_addresses(settings, course):
    settings.SIGNUP_RATE_LIMIT_PER_COURSE_HOUR = 3
    for i in range(3):
        assert sign_up(from_address(f"198.51.100.{i + 1}"), signup_url(course), f"s{i}").status_code == 302
    response = sign_up(from_address("198.51.100.9"), signup_url(course), "s3")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    page = response.content.decode()
    assert "sign-ups through this course&#x27;s join link: at most 3 an hour" in page
    assert 'id="signup-course"' in page  # still the course's sign-up
    assert not get_user_model().objects.filter(username="s3").exists()


def test_courses_made_to_reuse_their_links_buy_an_address_nothing_more(settings, instructor, course):
    """Anyone may make a course and hand out its link: an address's sign-ups through links of
    any courses share one bound."""
    settings.SIGNUP_RATE_LIMIT_PER_COURSE_HOUR = 3
    others = [do_create_course(instructor, f"Bot course {i}") for i in range(3)]
    assert sign_up(from_address("192.0.2.5"), signup_url(course), "b0").status_code == 302
    assert sign_up(from_address("192.0.2.5"), signup_url(others[0]), "b1").status_code == 302
    assert sign_up(from_address("192.0.2.5"), signup_url(others[1]), "b2").status_code == 302
    response = sign_up(from_address("192.0.2.5"), signup_url(others[2]), "b3")
    assert response.status_code == 429
    assert "through join links from your address" in response.content.decode()


@pytest.mark.parametrize("through", ["a code that names no course", "an archived course's link",
                                     "the sign-up page with the link as its next page"])
def test_a_link_that_takes_no_one_lifts_nothing(settings, course, through):
    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 1
    url = {"a code that names no course": "/courses/join/ZZZZZZZZ/signup",
           "an archived course's link": signup_url(course),
           "the sign-up page with the link as its next page": f"/accounts/signup/?next={course.join_url}"}[through]
    if through == "an archived course's link":
        course.archived_at = timezone.now()
        course.save(update_fields=["archived_at"])
    assert sign_up(Client(), url, "one").status_code == 302
    response = sign_up(Client(), url, "two")
    assert response.status_code == 429 and "from your address" in response.content.decode()


def test_it_sends_a_signed_in_person_to_their_account(student_client, course):
    assert student_client.get(signup_url(course))["Location"] == "/accounts/"
