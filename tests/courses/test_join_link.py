"""/courses/join/<code>: the link an instructor hands a room. Signed out, sixty people behind one
address open it at once, so only codes that name no course count against the address; signed in,
every lookup counts against the account, as joining does. Either way codes cannot be tried in bulk."""

from __future__ import annotations

import pytest
from django.test import Client

from courses import actions

from .conftest import client_of

pytestmark = pytest.mark.django_db


def test_a_room_behind_one_address_opens_the_link_signed_out(course):
    for i in range(2 * actions.JOINS_PER_HOUR):
        response = Client(REMOTE_ADDR="203.0.113.9").get(course.join_url)
        assert response.status_code == 200, i
        assert "JAX 101" in response.content.decode()


def test_codes_that_name_no_course_are_limited_per_address(course, monkeypatch):
    monkeypatch.setattr(actions, "JOINS_PER_HOUR", 3)
    guesser = Client(REMOTE_ADDR="198.51.100.7")
    for code in ("ZZZZZZZZ", "YYYYYYYY", "XXXXXXXX"):
        assert guesser.get(f"/courses/join/{code}").status_code == 404
    refused = guesser.get(course.join_url)  # a real code too, once the address is over
    assert refused.status_code == 429
    assert "Too many join codes that name no course" in refused.content.decode()
    assert "JAX 101" not in refused.content.decode()
    assert Client(REMOTE_ADDR="198.51.100.8").get(course.join_url).status_code == 200


def test_signed_in_every_lookup_counts_against_the_account(course, outsider, monkeypatch):
    monkeypatch.setattr(actions, "JOINS_PER_HOUR", 2)
    otto = client_of(outsider)
    assert [otto.get(course.join_url).status_code for _ in range(3)] == [200, 200, 429]


def test_a_join_link_looked_up_for_a_sign_up_counts_as_on_the_join_page(course, monkeypatch):
    monkeypatch.setattr(actions, "JOINS_PER_HOUR", 2)
    assert actions.course_of_join_link(course.join_url, client="ip:192.0.2.1") == course
    typed = f"/courses/join/{course.join_code[:4].lower()}-{course.join_code[4:]}"  # as copied from a slide
    assert actions.course_of_join_link(typed, client="ip:192.0.2.1") == course
    for url in ("/courses/join/ZZZZZZZZ", "/courses/join/WWWWWWWW"):
        assert actions.course_of_join_link(url, client="ip:192.0.2.1") is None
    # Over its misses, the address's sign-ups are counted as any sign-up (the page still opens).
    assert actions.course_of_join_link(course.join_url, client="ip:192.0.2.1") is None
    assert actions.course_of_join_link(course.join_url, client="ip:192.0.2.2") == course
    # Only a join link is looked up at all.
    assert actions.course_of_join_link("/courses/", client="ip:192.0.2.3") is None
    assert actions.course_of_join_link(f"{course.join_url}/../../admin/", client="ip:192.0.2.3") is None
