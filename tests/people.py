"""What the tests of signed-in people share (accounts, courses): one password, a client signed in
as someone, and the fixtures that make those tests quick and independent. A conftest.py takes the
fixtures by naming them (``_fast_password_hashes = people.fast_password_hashes``); autouse goes
with them, for the tests below that conftest."""

from __future__ import annotations

import pytest
from django.test import Client

PASSWORD = "a long test password 1"


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture(autouse=True)
def plain_static_files(settings):
    """Pages link their CSS with {% static %}, which outside DEBUG reads collectstatic's manifest;
    a test run need not have collected anything."""
    settings.STORAGES = {**settings.STORAGES,
                         "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}


@pytest.fixture(autouse=True)
def fast_password_hashes(settings):
    """PBKDF2 as deployed takes most of a second per password; these tests are about the flows."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Every test's client is 127.0.0.1 and its people are made again (with the last test's ids):
    counts of sign-ups, snippets and runs must not carry over."""
    from playground.redis import get_redis

    redis = get_redis()
    for key in redis.scan_iter("ratelimit:*"):
        redis.delete(key)


# Two people (take them by naming them, as above): alice owns things, bob is someone else.

@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.com", PASSWORD)


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.com", PASSWORD)


@pytest.fixture
def alice_client(alice):
    return client_of(alice)


@pytest.fixture
def bob_client(bob):
    return client_of(bob)
