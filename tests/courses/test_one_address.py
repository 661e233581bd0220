"""A class behind one address (a school's NAT, a workshop's Wi-Fi): everyone signed in has a fair
share of their own, keyed on the account, and their runs take nothing of the address's; requests
signed out with no browser identity (scripts: these clients never loaded a page) share the
address's, which is larger than a person's, and a refusal tells them so and how to have their own.
Browsers signed out, each with a share of its own within the address's room: test_room.py."""

from __future__ import annotations

import pytest
from django.test import Client

from playground.redis import get_redis

from .conftest import client_of
from .helpers import post

pytestmark = pytest.mark.django_db

SCHOOL = "203.0.113.50"


@pytest.fixture
def shares(settings):
    """Fair shares on, small: 2 runs at once per person, 3 per address for those with no identity,
    5 for everyone signed out there."""
    settings.RUN_QUOTAS = {kind: {"active": 2, "address_active": 3, "room_active": 5, "per_hour_s": 0,
                                  "per_day_s": 0, "queue_max": 0}
                           for kind in settings.RUN_DEVICE_KINDS}
    _forget_shares()
    yield settings.RUN_QUOTAS
    _forget_shares()


def _forget_shares():
    redis = get_redis()
    for key in redis.scan_iter("quota:*"):
        redis.delete(key)


def at_school(user=None) -> Client:
    client = client_of(user) if user is not None else Client()
    client.defaults["REMOTE_ADDR"] = SCHOOL
    return client


def start(client) -> tuple[int, dict]:
    response = post(client, "/api/runs", {"code": "print(1)"})
    return response.status_code, response.json()


def test_people_signed_in_behind_one_address_each_have_their_own_share(shares, student, outsider, executor_online):
    for person in (student, outsider):
        client = at_school(person)
        assert [start(client)[0] for _ in range(2)] == [201, 201]
        status, body = start(client)
        assert status == 429 and body["limit"] == "active_runs"
        assert body["error"].startswith("you already have 2 runs") and "sign in" not in body["error"]


def test_an_accounts_runs_take_nothing_of_its_addresss_share(shares, student, executor_online):
    from playground import quotas

    signed_in = at_school(student)
    for _ in range(2):
        status, run = start(signed_in)
        assert status == 201 and quotas.client_of(run["id"]) == f"user:{student.pk}"
    signed_out = at_school()
    assert [start(signed_out)[0] for _ in range(3)] == [201, 201, 201]
    status, body = start(signed_out)
    assert status == 429 and body["limit"] == "active_runs"
    assert body["error"].startswith("your address already has 3 runs queued or running (at most 3 at once)")
    assert "without the cookie this site's pages give each browser" in body["error"]
    assert "everyone at your address who has none" in body["error"]
    assert body["error"].endswith("run from the playground's page, or sign in, to have a share of your own")
    # Another address is another client.
    assert post(Client(REMOTE_ADDR="203.0.113.51"), "/api/runs", {"code": "print(1)"}).status_code == 201


def test_every_refusal_of_someone_signed_out_says_signing_in_helps(settings, student, executor_online):
    settings.RUN_RATE_LIMIT_PER_MINUTE = 1
    assert start(at_school())[0] == 201
    status, body = start(at_school())
    assert status == 429 and body["limit"] == "rate" and body["error"].startswith("too many runs: at most 1 a minute")
    assert body["error"].endswith("or sign in, to have a share of your own")
    assert start(at_school(student))[0] == 201
    status, body = start(at_school(student))
    assert status == 429 and body["limit"] == "rate" and "sign in" not in body["error"]


def test_an_addresss_share_is_twice_a_persons_unless_set(monkeypatch):
    from web.settings import _quotas

    monkeypatch.setenv("RUN_MAX_ACTIVE_PER_CLIENT", "4")
    monkeypatch.delenv("RUN_MAX_ACTIVE_PER_ADDRESS", raising=False)
    assert (_quotas("cpu")["active"], _quotas("cpu")["address_active"]) == (4, 8)
    monkeypatch.setenv("RUN_MAX_ACTIVE_PER_ADDRESS_GPU", "5")
    assert _quotas("gpu")["address_active"] == 5 and _quotas("cpu")["address_active"] == 8
    monkeypatch.setenv("RUN_MAX_ACTIVE_PER_CLIENT", "0")  # shares off: off for addresses too
    assert _quotas("cpu")["address_active"] == 0
