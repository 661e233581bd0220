"""Staff see and revoke API tokens in the admin, never their secrets, and cannot make one there."""

from __future__ import annotations

import pytest

from accounts.models import ApiToken

from .helpers import make_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(admin_client):
    return admin_client


def test_staff_see_tokens_with_a_read_only_hash(staff_client, alice):
    secret = make_token(alice, "laptop")
    token = ApiToken.objects.get(user=alice)
    listing = staff_client.get("/admin/accounts/apitoken/").content.decode()
    assert token.prefix in listing and "laptop" in listing
    page = staff_client.get(f"/admin/accounts/apitoken/{token.pk}/change/").content.decode()
    assert token.key_hash in page
    assert 'name="key_hash"' not in page
    assert secret not in page


def test_staff_cannot_make_a_token_in_the_admin(staff_client):
    assert staff_client.get("/admin/accounts/apitoken/add/").status_code == 403


def test_staff_revoke_a_token(staff_client, alice):
    make_token(alice)
    token = ApiToken.objects.get(user=alice)
    response = staff_client.post(f"/admin/accounts/apitoken/{token.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not ApiToken.objects.exists()
