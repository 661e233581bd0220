"""Two people for the notebook tests, which need only the database and Redis: alice keeps
notebooks, bob is someone else."""

from __future__ import annotations


from tests import people

_plain_static_files = people.plain_static_files
_fast_password_hashes = people.fast_password_hashes
_fresh_rate_limits = people.fresh_rate_limits


alice, bob = people.alice, people.bob
alice_client, bob_client = people.alice_client, people.bob_client
