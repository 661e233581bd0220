"""People and clients for the account tests, which need only the database and Redis (database 15):
alice owns things, bob is an outsider."""

from __future__ import annotations

import pytest
from django.test import Client

from .helpers import PASSWORD


@pytest.fixture(autouse=True)
def _plain_static_files(settings):
    """Pages link their CSS with {% static %}, which outside DEBUG reads collectstatic's manifest;
    a test run need not have collected anything."""
    settings.STORAGES = {**settings.STORAGES,
                         "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}


@pytest.fixture(autouse=True)
def _fast_password_hashes(settings):
    """PBKDF2 as deployed takes most of a second per password; these tests are about the flows."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Every test's client is 127.0.0.1: counts of sign-ups and snippets must not carry over."""
    from playground.redis import get_redis

    redis = get_redis()
    for key in redis.scan_iter("ratelimit:*"):
        redis.delete(key)


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.com", PASSWORD)


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.com", PASSWORD)


@pytest.fixture
def alice_client(alice):
    client = Client()
    client.force_login(alice)
    return client
