"""The websocket of a course's dashboard, /ws/courses/<id>/: instructors only, signed in by the
session cookie (a browser) or ``Authorization: Bearer <token>`` (a script). Anyone else is
closed with 4404, as if the course did not exist.

On connect it joins the course's group and sends ``{"type": "snapshot", ...}``
(``courses.dashboard.snapshot``), then ``{"type": "update", "item": ...}`` for each item sent to
the group. It joins before taking the snapshot, so an update may repeat what the snapshot holds
but none is missed between the two. Snapshots count against the client's dashboard rate
(a socket over it is closed with 4429).

A socket opened with a token lasts as long as the token: it joins the token's group, and
revoking the token (a password change revokes them all) closes it with 4401; it closes at the
token's expiry too, and looks the token up again every TOKEN_RECHECK_S in case a revocation's
message was lost. The reason of a close is in the page's language
(``web.languages.activate_scope_language``).
"""

from __future__ import annotations

import asyncio
import uuid

from web.db import SocketDatabase, socket_db
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.auth import token_still_valid
from executor.runner import protocol
from playground.streams import get_hub
from web.clients import scope_client_address, scope_client_key
from web.errors import ActionError
from web.languages import activate_scope_language
from web.metrics import CountedWebsocket

from .access import access_course_for_user
from .dashboard import check_snapshot_rate, group_name, snapshot
from .models import INSTRUCTOR

TOKEN_RECHECK_S = 60.0


def _reason(text: str) -> str:
    """A close's reason, cut to the 123 bytes a close frame has room for (a Chinese character
    takes three), never inside a character."""
    return text.encode("utf-8")[:123].decode("utf-8", errors="ignore")




@socket_db
def _instructor_of(course_id, scope):
    """(user, course id, token or None) when the connecting person teaches the course; None
    otherwise."""
    # A token's owner, or no one for a token that is not valid (accounts.auth.SocketTokenMiddleware).
    user, token = scope.get("user"), scope.get("auth_token")
    membership = access_course_for_user(course_id, user)
    if membership is None or membership.role != INSTRUCTOR:
        return None
    return membership.user, membership.course_id, token


@socket_db
def _snapshot(course_id: int):
    from .models import Course

    return snapshot(Course.objects.get(pk=course_id))


_token_alive = socket_db(token_still_valid)


@socket_db
def _check_snapshot_rate(who: str) -> str | None:
    try:
        check_snapshot_rate(who)
    except ActionError as exc:
        return exc.message
    return None


class CourseConsumer(CountedWebsocket, SocketDatabase, AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.group = None
        self.token_group = None
        self.watcher = None
        self.socket_id = uuid.uuid4().hex
        self.hub = get_hub()
        activate_scope_language(self.scope)
        # Accepted first, so that a refusal reaches the client as a close code it can read.
        await self.accept()
        found = await _instructor_of(self.scope["url_route"]["kwargs"]["course_id"], self.scope)
        if found is None:
            await self.close(code=protocol.CLOSE_CODES["not_found"], reason=_("no such course"))
            return
        user, course_id, token = found
        self.user_id = user.pk
        refused = await _check_snapshot_rate(scope_client_key(self.scope, user))
        if refused is not None:
            await self.close(code=protocol.CLOSE_CODES["too_many"], reason=_reason(refused))
            return
        if not await self.hub.take_slot(scope_client_address(self.scope), self.socket_id):
            refused = _("too many open websockets from your address (at most %(cap)s)")
            await self.close(code=protocol.CLOSE_CODES["too_many"],
                             reason=_reason(refused % {"cap": settings.WS_MAX_PER_CLIENT}))
            return
        if token is not None:
            self.token_group = token.group
            await self.channel_layer.group_add(self.token_group, self.channel_name)
            self.watcher = asyncio.create_task(self._watch_token(token.pk, token.expires_at))
        self.group = group_name(course_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.send_json({"type": "snapshot", **await _snapshot(course_id)})

    async def _watch_token(self, token_id, expires_at) -> None:
        """Close at the token's expiry, and when a look-up finds it gone."""
        while True:
            wait = TOKEN_RECHECK_S
            if expires_at is not None:
                wait = max(0.0, min(wait, (expires_at - timezone.now()).total_seconds()))
            await asyncio.sleep(wait)
            if not await _token_alive(token_id):
                activate_scope_language(self.scope)
                await self._token_gone(_("the API token expired or was revoked"))
                return

    async def _token_gone(self, reason: str) -> None:
        await self.close(code=protocol.CLOSE_CODES["unauthorized"], reason=reason)

    async def disconnect(self, code):
        if self.watcher is not None and self.watcher is not asyncio.current_task():
            self.watcher.cancel()
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if self.token_group:
            await self.channel_layer.group_discard(self.token_group, self.channel_name)
        await self.hub.free_slot(self.socket_id)

    async def receive_json(self, content, **kwargs):
        pass  # the dashboard only listens

    async def token_revoked(self, event):
        activate_scope_language(self.scope)
        await self._token_gone(_("the API token was revoked"))

    async def course_update(self, event):
        item = event["item"]
        if item.get("kind") == "member" and item.get("user") == self.user_id and item.get("role") != INSTRUCTOR:
            activate_scope_language(self.scope)
            await self.close(code=protocol.CLOSE_CODES["not_found"], reason=_("no such course"))
            return
        await self.send_json({"type": "update", "item": item})
