"""Two people for the notebook tests, which need only the database and Redis: alice keeps
notebooks, bob is someone else."""

from __future__ import annotations

import pytest

from tests import people
from tests.people import PASSWORD

_plain_static_files = people.plain_static_files
_fast_password_hashes = people.fast_password_hashes
_fresh_rate_limits = people.fresh_rate_limits


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.com", PASSWORD)


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.com", PASSWORD)


@pytest.fixture
def alice_client(alice):
    return people.client_of(alice)


@pytest.fixture
def bob_client(bob):
    return people.client_of(bob)
