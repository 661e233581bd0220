"""A dashboard socket opened with a token lasts only as long as the token: revoked (by its owner,
or by a password change) or expired, the socket is closed with 4401; an expired token cannot open
one. Opening sockets counts against the dashboard's rate like snapshots do."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.utils import timezone

from accounts.actions import do_create_token, do_revoke_token
from accounts.models import ApiToken
from tests.people import PASSWORD

from .test_dashboard_socket import connect, receive

pytestmark = pytest.mark.django_db(transaction=True)


def auth(secret: str) -> tuple[bytes, bytes]:
    return b"authorization", f"Bearer {secret}".encode()


async def open_with_token(course, instructor, **token_fields):
    token, secret = await sync_to_async(do_create_token)(instructor, "script")
    if token_fields:
        await sync_to_async(ApiToken.objects.filter(pk=token.pk).update)(**token_fields)
    comm = await connect(course.pk, auth(secret))
    return comm, token


async def test_revoking_the_token_closes_its_socket(course, instructor):
    comm, token = await open_with_token(course, instructor)
    try:
        assert (await receive(comm))["type"] == "snapshot"
        await sync_to_async(do_revoke_token)(token)
        closed = await receive(comm)
        assert closed["type"] == "websocket.close" and closed["code"] == 4401
    finally:
        await comm.disconnect()


async def test_a_password_change_closes_the_sockets_of_every_token(course, instructor):
    comm, _ = await open_with_token(course, instructor)
    try:
        assert (await receive(comm))["type"] == "snapshot"

        def change_password():
            client = Client()
            client.force_login(instructor)
            new = "another long password 2"
            client.post("/accounts/password_change/",
                        {"old_password": PASSWORD, "new_password1": new, "new_password2": new})

        await sync_to_async(change_password)()
        closed = await receive(comm)
        assert closed["type"] == "websocket.close" and closed["code"] == 4401
    finally:
        await comm.disconnect()


async def test_an_expired_token_opens_nothing(course, instructor):
    token, secret = await sync_to_async(do_create_token)(instructor, "old")
    await sync_to_async(ApiToken.objects.filter(pk=token.pk).update)(expires_at=timezone.now() - timedelta(seconds=1))
    # Said for what it is, on every socket (accounts.auth.SocketTokenMiddleware), as the API's 401.
    comm = await connect(course.pk, auth(secret))
    closed = await comm.receive_output(5)
    assert closed["type"] == "websocket.close" and closed["code"] == 4401
    assert closed["reason"].startswith("the API token is not valid")
    await comm.disconnect()


async def test_the_socket_closes_when_its_token_expires(course, instructor):
    # 3 s: the socket must open before the token expires, and a loaded machine may take a second
    # or more over the token's writes and the opening.
    comm, _ = await open_with_token(course, instructor, expires_at=timezone.now() + timedelta(seconds=3))
    try:
        assert (await receive(comm))["type"] == "snapshot"
        closed = await receive(comm, timeout=10)
        assert closed["type"] == "websocket.close" and closed["code"] == 4401
    finally:
        await comm.disconnect()


async def test_a_revocation_whose_message_was_lost_is_found_at_the_next_look(course, instructor, monkeypatch):
    from courses import consumers

    monkeypatch.setattr(consumers, "TOKEN_RECHECK_S", 0.2)
    comm, token = await open_with_token(course, instructor)
    try:
        assert (await receive(comm))["type"] == "snapshot"
        await sync_to_async(ApiToken.objects.filter(pk=token.pk).delete)()  # no message sent
        closed = await receive(comm, timeout=10)  # a look every 0.2 s; a loaded machine's may come late
        assert closed["type"] == "websocket.close" and closed["code"] == 4401
    finally:
        await comm.disconnect()


async def test_opening_sockets_counts_against_the_dashboards_rate(course, instructor, settings):
    settings.DASHBOARD_RATE_LIMIT_PER_MINUTE = 1
    _, secret = await sync_to_async(do_create_token)(instructor, "script")
    first = await connect(course.pk, auth(secret))
    try:
        assert (await receive(first))["type"] == "snapshot"
        second = await connect(course.pk, auth(secret))
        closed = await receive(second)
        assert closed["type"] == "websocket.close" and closed["code"] == 4429
        await second.disconnect()
    finally:
        await first.disconnect()
