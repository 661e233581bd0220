"""/courses/join/<code>: the link an instructor hands a room. Signed out, sixty people behind one
address open it at once, so only codes that name no course count against the address; signed in,
every lookup counts against the account, as joining does. Either way codes cannot be tried in bulk.
Its sign-up (/courses/join/<code>/signup) looks the code up as the page does."""

from __future__ import annotations

import pytest
from django.test import Client

from courses.actions import members

from .conftest import client_of

pytestmark = pytest.mark.django_db


def test_a_room_behind_one_address_opens_the_link_signed_out(course):
    for i in range(2 * members.JOINS_PER_HOUR):
        response = Client(REMOTE_ADDR="203.0.113.9").get(course.join_url)
        assert response.status_code == 200, i
        assert "JAX 101" in response.content.decode()


def test_codes_that_name_no_course_are_limited_per_address(course, monkeypatch):
    monkeypatch.setattr(members, "JOINS_PER_HOUR", 3)
    guesser = Client(REMOTE_ADDR="198.51.100.7")
    for code in ("ZZZZZZZZ", "YYYYYYYY", "XXXXXXXX"):
        assert guesser.get(f"/courses/join/{code}").status_code == 404
    refused = guesser.get(course.join_url)  # a real code too, once the address is over
    assert refused.status_code == 429
    assert "Too many join codes that name no course" in refused.content.decode()
    assert "JAX 101" not in refused.content.decode()
    assert Client(REMOTE_ADDR="198.51.100.8").get(course.join_url).status_code == 200


def test_signed_in_every_lookup_counts_against_the_account(course, outsider, monkeypatch):
    monkeypatch.setattr(members, "JOINS_PER_HOUR", 2)
    otto = client_of(outsider)
    assert [otto.get(course.join_url).status_code for _ in range(3)] == [200, 200, 429]


def names_the_course(response) -> bool:
    """A join link's sign-up page that names its course (not a sign-up like any other)."""
    assert response.status_code == 200, response
    page = response.content.decode()
    return 'id="signup-course"' in page and "JAX 101" in page


def test_a_join_links_sign_up_looks_its_code_up_as_the_join_page_does(course, monkeypatch):
    monkeypatch.setattr(members, "JOINS_PER_HOUR", 2)
    here = Client(REMOTE_ADDR="192.0.2.1")
    assert names_the_course(here.get(f"{course.join_url}/signup"))
    typed = f"/courses/join/{course.join_code[:4].lower()}-{course.join_code[4:]}/signup"  # as copied from a slide
    assert names_the_course(here.get(typed))
    for url in ("/courses/join/ZZZZZZZZ/signup", "/courses/join/WWWWWWWW/signup"):
        assert not names_the_course(here.get(url))
    # Over its misses, the address's sign-ups are counted as any sign-up (the page still opens).
    assert not names_the_course(here.get(f"{course.join_url}/signup"))
    assert names_the_course(Client(REMOTE_ADDR="192.0.2.2").get(f"{course.join_url}/signup"))


def test_the_join_page_offers_the_courses_own_sign_up(course):
    page = Client().get(course.join_url).content.decode()
    assert f'href="{course.join_url}/signup"' in page
