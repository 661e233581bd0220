"""The websocket of a course's dashboard, /ws/courses/<id>/: instructors only, signed in by the
session cookie (a browser) or ``Authorization: Bearer <token>`` (a script). Anyone else is
closed with 4404, as if the course did not exist.

On connect it joins the course's group and sends ``{"type": "snapshot", ...}``
(``courses.dashboard.snapshot``), then ``{"type": "update", "item": ...}`` for each item sent to
the group. It joins before taking the snapshot, so an update may repeat what the snapshot holds
but none is missed between the two.
"""

from __future__ import annotations

import uuid

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from accounts.auth import token_for_secret
from playground.clients import scope_client_address
from playground.consumers import CLOSE_NOT_FOUND, CLOSE_TOO_MANY
from playground.streams import get_hub

from .access import access_course_for_user
from .dashboard import group_name, snapshot
from .models import INSTRUCTOR


def _bearer(scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, secret = value.decode("latin1").strip().partition(" ")
            if scheme.lower() == "bearer":
                return secret.strip()
    return None


@database_sync_to_async
def _instructor_of(course_id, scope):
    """(user id, course id) when the connecting person teaches the course; None otherwise."""
    user = scope.get("user")
    secret = _bearer(scope)
    if secret is not None:
        token = token_for_secret(secret)
        user = token.user if token is not None else None
    membership = access_course_for_user(course_id, user)
    if membership is None or membership.role != INSTRUCTOR:
        return None
    return membership.user_id, membership.course_id


@database_sync_to_async
def _snapshot(course_id: int):
    from .models import Course

    return snapshot(Course.objects.get(pk=course_id))


class CourseConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.group = None
        self.socket_id = uuid.uuid4().hex
        self.hub = get_hub()
        # Accepted first, so that a refusal reaches the client as a close code it can read.
        await self.accept()
        found = await _instructor_of(self.scope["url_route"]["kwargs"]["course_id"], self.scope)
        if found is None:
            await self.close(code=CLOSE_NOT_FOUND, reason="no such course")
            return
        self.user_id, course_id = found
        if not await self.hub.take_slot(scope_client_address(self.scope), self.socket_id):
            await self.close(code=CLOSE_TOO_MANY, reason=(
                f"too many open websockets from your address (at most {settings.WS_MAX_PER_CLIENT})"))
            return
        self.group = group_name(course_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.send_json({"type": "snapshot", **await _snapshot(course_id)})

    async def disconnect(self, code):
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
        await self.hub.free_slot(self.socket_id)

    async def receive_json(self, content, **kwargs):
        pass  # the dashboard only listens

    async def course_update(self, event):
        item = event["item"]
        if item.get("kind") == "member" and item.get("user") == self.user_id and item.get("role") != INSTRUCTOR:
            await self.close(code=CLOSE_NOT_FOUND, reason="no such course")
            return
        await self.send_json({"type": "update", "item": item})
