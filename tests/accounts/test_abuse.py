"""What keeps accounts safe from abuse: sign-ins throttled per account and per client (before any
password is hashed), every limit counting an IPv6 client per /64, tokens that expire and that a
password change revokes, and draft writes limited."""

from __future__ import annotations

import time

from datetime import timedelta

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken
from tests.people import PASSWORD

from .helpers import bearer, make_token

pytestmark = pytest.mark.django_db

# Two addresses of one IPv6 /64 (one host may hold all of it), and one of another /64.
SAME_64 = ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe")
OTHER_64 = "2001:db8:1:3::1"


def sign_in(username: str, password: str, address: str = "203.0.113.7"):
    return Client(REMOTE_ADDR=address).post("/accounts/login/", {"username": username, "password": password})


@pytest.fixture(autouse=True)
def one_window(monkeypatch):
    """The limits count in fixed windows (15 minutes for sign-ins): a test that crossed a
    window's end would see its count start again. Their clock stands still mid-window."""
    import time

    import web.ratelimit

    now = time.time()
    still = now - now % 3600 + 1800 + 0.5

    class Clock:
        @staticmethod
        def time() -> float:
            return still

    monkeypatch.setattr(web.ratelimit, "time", Clock)


@pytest.fixture
def counted_hashes(monkeypatch):
    """How many passwords were hashed (a third of a second of CPU each, as deployed)."""
    calls = []
    verify = MD5PasswordHasher.verify

    def counting(self, password, encoded):
        calls.append(password)
        return verify(self, password, encoded)

    monkeypatch.setattr(MD5PasswordHasher, "verify", counting)
    return calls


# Sign-ins ---------------------------------------------------------------------------------------

def test_an_account_is_locked_after_ten_failures_without_hashing_more(alice, settings, counted_hashes):
    settings.SIGNIN_FAILURES_PER_ACCOUNT, settings.SIGNIN_FAILURES_PER_CLIENT = 10, 1000
    for n in range(10):
        assert sign_in("alice", f"guess {n}", address=f"203.0.113.{n + 1}").status_code == 200
    hashed = len(counted_hashes)
    # From yet another address, even with the right password: the account's limit holds.
    response = sign_in("alice", PASSWORD, address="198.51.100.9")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "too many failed sign-ins to this account" in response.content.decode().lower()
    assert len(counted_hashes) == hashed  # refused before any hashing
    assert sign_in("ALICE", PASSWORD, address="198.51.100.9").status_code == 429  # any case of the name


def test_failures_astride_a_windows_turn_count_together(alice, settings, counted_hashes, monkeypatch):
    """Failures are counted over the last 15 minutes, not in fixed windows: ten just before a
    quarter hour turns and ten just after are twenty within two seconds, and only ten are checked."""
    import web.ratelimit

    settings.SIGNIN_FAILURES_PER_ACCOUNT, settings.SIGNIN_FAILURES_PER_CLIENT = 10, 1000
    turn = (time.time() // 900 + 1) * 900
    clock = {"now": turn - 1}
    monkeypatch.setattr(web.ratelimit, "time", type("Clock", (), {"time": staticmethod(lambda: clock["now"])}))
    for n in range(10):
        assert sign_in("alice", f"guess {n}", address=f"203.0.113.{n + 1}").status_code == 200
    clock["now"] = turn + 1
    refused = sign_in("alice", "guess 10", address="198.51.100.9")
    assert refused.status_code == 429
    assert 895 <= int(refused["Retry-After"]) <= 900  # when the first of the ten is 15 minutes old
    assert len(counted_hashes) == 10
    clock["now"] = turn + 900  # fifteen minutes after the first: its place is free again
    assert sign_in("alice", PASSWORD, address="198.51.100.9").status_code == 302


def test_a_client_is_stopped_after_thirty_failures_across_accounts(alice, bob, settings, counted_hashes):
    settings.SIGNIN_FAILURES_PER_ACCOUNT, settings.SIGNIN_FAILURES_PER_CLIENT = 1000, 30
    for n in range(30):
        sign_in(f"someone-{n}", "guess", address=SAME_64[n % 2])
    hashed = len(counted_hashes)
    response = sign_in("bob", PASSWORD, address=SAME_64[1])
    assert response.status_code == 429
    assert "from your address" in response.content.decode()
    assert len(counted_hashes) == hashed
    assert sign_in("bob", PASSWORD, address=OTHER_64).status_code == 302  # another /64 is another client


def test_signing_in_forgets_the_accounts_own_typos(alice, settings):
    settings.SIGNIN_FAILURES_PER_ACCOUNT = 3
    for _ in range(2):
        sign_in("alice", "typo")
    assert sign_in("alice", PASSWORD).status_code == 302
    for _ in range(2):
        sign_in("alice", "typo")
    assert sign_in("alice", PASSWORD).status_code == 302


def test_a_sign_in_with_the_right_password_gives_its_place_back(alice, settings):
    """Each attempt is counted as a failure before its password is checked; one that succeeded
    gives its place back, so signing in again and again from one address is never refused."""
    settings.SIGNIN_FAILURES_PER_ACCOUNT, settings.SIGNIN_FAILURES_PER_CLIENT = 2, 2
    for _ in range(5):
        assert sign_in("alice", PASSWORD).status_code == 302
    sign_in("alice", "typo")
    assert sign_in("alice", PASSWORD).status_code == 302
    assert sign_in("nobody", "typo").status_code == 200
    assert sign_in("alice", PASSWORD).status_code == 429  # the address's two failures are spent


def test_the_admins_sign_in_is_throttled_too(django_user_model, settings, counted_hashes):
    settings.SIGNIN_FAILURES_PER_ACCOUNT = 2
    django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)
    client = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(2):
        client.post("/admin/login/", {"username": "root", "password": "guess"})
    hashed = len(counted_hashes)
    response = client.post("/admin/login/", {"username": "root", "password": PASSWORD, "next": "/admin/"})
    assert response.status_code == 200  # the form again, not signed in
    assert "_auth_user_id" not in client.session
    assert len(counted_hashes) == hashed


# Every limit counts a client the same way: IPv6 per /64 -----------------------------------------

def test_sign_ups_count_an_ipv6_client_per_64(settings):
    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 1

    def sign_up(name, address):
        return Client(REMOTE_ADDR=address).post("/accounts/signup/", {
            "username": name, "password1": PASSWORD, "password2": PASSWORD})

    assert sign_up("one", SAME_64[0]).status_code == 302
    assert sign_up("two", SAME_64[1]).status_code == 429
    assert sign_up("three", OTHER_64).status_code == 302


def test_password_resets_count_an_ipv6_client_per_64(alice, settings, mailoutbox):
    settings.SIGNUP_RATE_LIMIT_PER_HOUR = 1
    assert Client(REMOTE_ADDR=SAME_64[0]).post("/accounts/password_reset/",
                                               {"email": "alice@example.com"}).status_code == 302
    assert Client(REMOTE_ADDR=SAME_64[1]).post("/accounts/password_reset/",
                                               {"email": "alice@example.com"}).status_code == 429


def test_snippets_and_the_formatter_count_an_ipv6_client_per_64(settings):
    settings.SNIPPET_RATE_LIMIT_PER_HOUR = 1
    settings.FORMAT_RATE_LIMIT_PER_MINUTE = 1

    def post(path, body, address):
        return Client(REMOTE_ADDR=address).post(path, body, content_type="application/json")

    assert post("/api/snippets", {"code": "a = 1\n"}, SAME_64[0]).status_code == 201
    refused = post("/api/snippets", {"code": "a = 2\n"}, SAME_64[1])
    assert refused.status_code == 429
    assert set(refused.json()) == {"error", "limit", "retry_after"}
    assert post("/api/format", {"code": "a=1\n"}, SAME_64[0]).status_code == 200
    assert post("/api/format", {"code": "a=1\n"}, SAME_64[1]).status_code == 429
    assert post("/api/format", {"code": "a=1\n"}, OTHER_64).status_code == 200


def test_a_signed_in_person_counts_as_their_account_alone(alice, settings):
    """From any address, the account's own limit: not one per address, nor account and address apart."""
    settings.SNIPPET_RATE_LIMIT_PER_HOUR = 1
    first = Client(REMOTE_ADDR="203.0.113.7")
    first.force_login(alice)
    second = Client(REMOTE_ADDR="198.51.100.9")
    second.force_login(alice)
    assert first.post("/api/snippets", {"code": "a = 1\n"}, content_type="application/json").status_code == 201
    assert second.post("/api/snippets", {"code": "a = 2\n"}, content_type="application/json").status_code == 429
    # The address itself, anonymous, is another client.
    assert Client(REMOTE_ADDR="203.0.113.7").post("/api/snippets", {"code": "a = 3\n"},
                                                  content_type="application/json").status_code == 201


# Drafts ----------------------------------------------------------------------------------------

def test_draft_writes_are_rate_limited(alice_client, settings):
    settings.DRAFT_RATE_LIMIT_PER_MINUTE = 2
    for n in range(2):
        assert alice_client.put("/api/me/drafts/own", {"code": f"x = {n}\n"},
                                content_type="application/json").status_code == 200
    refused = alice_client.put("/api/me/drafts/own", {"code": "x = 3\n"}, content_type="application/json")
    assert refused.status_code == 429
    assert set(refused.json()) == {"error", "limit", "retry_after"} and refused["Retry-After"]
    assert alice_client.delete("/api/me/drafts/own").status_code == 429
    assert alice_client.get("/api/me/drafts").status_code == 200  # reading is not limited


# Tokens ----------------------------------------------------------------------------------------

def test_a_token_made_to_expire_says_when(alice_client):
    response = alice_client.post("/api/me/tokens", {"name": "ci", "expires_in_days": 30},
                                 content_type="application/json")
    assert response.status_code == 201
    expires = timezone.datetime.fromisoformat(response.json()["expires_at"])
    assert timedelta(days=29, hours=23) < expires - timezone.now() <= timedelta(days=30)
    listed = alice_client.get("/api/me/tokens").json()["tokens"]
    assert listed[0]["expires_at"] == response.json()["expires_at"]


@pytest.mark.parametrize("days", [0, -1, 3651, "7", 1.5, True])
def test_a_bad_expiry_is_refused(alice_client, days):
    response = alice_client.post("/api/me/tokens", {"expires_in_days": days}, content_type="application/json")
    assert response.status_code == 400
    assert "expires_in_days" in response.json()["error"]


def test_an_expired_token_is_refused(alice):
    secret = make_token(alice)
    assert Client().get("/api/me/snippets", **bearer(secret)).status_code == 200
    ApiToken.objects.filter(user=alice).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = Client().get("/api/me/snippets", **bearer(secret))
    assert response.status_code == 401
    assert "expired" in response.json()["error"]


def test_the_account_page_makes_a_token_that_expires(alice_client, alice):
    alice_client.post("/accounts/tokens/", {"name": "laptop", "expires_in_days": "7"})
    token = ApiToken.objects.get(user=alice)
    assert timedelta(days=6) < token.expires_at - timezone.now() <= timedelta(days=7)
    assert "Expires" in alice_client.get("/accounts/").content.decode()


def test_changing_the_password_revokes_every_token(alice_client, alice, bob):
    secrets = [make_token(alice), make_token(alice, "another")]
    bobs = make_token(bob)
    new = "another long password 2"
    response = alice_client.post("/accounts/password_change/",
                                 {"old_password": PASSWORD, "new_password1": new, "new_password2": new})
    assert response.status_code == 302
    for secret in secrets:
        assert Client().get("/api/me/snippets", **bearer(secret)).status_code == 401
    assert Client().get("/api/me/snippets", **bearer(bobs)).status_code == 200


def test_a_password_reset_revokes_every_token(client, alice, mailoutbox):
    import re

    secret = make_token(alice)
    client.post("/accounts/password_reset/", {"email": "alice@example.com"})
    link = re.search(r"http://testserver(/accounts/reset/[^/\s]+/[^/\s]+/)", mailoutbox[0].body).group(1)
    form_url = client.get(link)["Location"]
    new = "a brand new password 3"
    assert client.post(form_url, {"new_password1": new, "new_password2": new}).status_code == 302
    assert Client().get("/api/me/snippets", **bearer(secret)).status_code == 401


def test_signing_in_keeps_the_tokens(alice):
    """Only a new password revokes them, not a sign-in (which may upgrade the stored hash)."""
    secret = make_token(alice)
    assert sign_in("alice", PASSWORD).status_code == 302
    alice.email = "new@example.com"
    alice.save()
    assert Client().get("/api/me/snippets", **bearer(secret)).status_code == 200


def test_while_redis_is_away_sign_ins_are_refused_not_let_through_uncounted(alice, monkeypatch, counted_hashes):
    import redis

    from bench.stack import free_port
    from web import ratelimit

    away = redis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=0.5)
    monkeypatch.setattr(ratelimit, "get_redis", lambda: away)
    response = sign_in("alice", PASSWORD)
    assert response.status_code == 503
    assert "unavailable for a moment" in response.content.decode()
    assert counted_hashes == []
