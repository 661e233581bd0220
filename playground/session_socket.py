"""A notebook session's websocket (``/ws/sessions/<id>/``): its state as ``GET /api/sessions/<id>``
says it, once on connect and again on every change (a cell taken or ended, what it holds, the
node stopping it after its idle time, its node lost), so that a page never learns late or
silently that its session is gone. Only its maker's: anyone else is closed with 4404.

The changes are the session's Redis stream (``executor.sessionstate.log_key``), which its node
and the web side append to; a quiet stream is looked at every CHECK_S through the database and
the fleet's heartbeats too, which is how a session whose node vanished is found stopped."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils.translation import gettext as _

from executor import sessionstate
from executor.runner import protocol
from web.clients import scope_client
from web.db import socket_db
from web.languages import activate_scope_language
from web.metrics import CountedWebsocket

from .access import access_session
from .actions.sessions import session_state
from .consumers import REDIS_DOWN, run_socket_slots, too_many_sockets
from .serializers import session_detail
from .streams import get_hub

log = logging.getLogger("playground")

CHECK_S = 10.0


@socket_db
def _load(session_id, person):
    return access_session(session_id, person)


@socket_db
def _detail(session) -> dict:
    session.refresh_from_db()
    return session_detail(session, session_state(session))


class SessionConsumer(CountedWebsocket, AsyncWebsocketConsumer):
    channel_layer_alias = None

    async def connect(self):
        activate_scope_language(self.scope)  # the reasons of its closes, in the page's language
        self.follower = None
        self.socket_id = uuid.uuid4().hex
        self.hub = get_hub()
        await self.accept()
        client = scope_client(self.scope, self.scope.get("user"))
        session = await _load(self.scope["url_route"]["kwargs"]["session_id"], client.person)
        if session is None:
            await self.close(code=protocol.CLOSE_CODES["not_found"], reason=_("no such session"))
            return
        full = await self.hub.take_slots(self.socket_id, run_socket_slots(client))
        if full is not None:
            self.socket_id = None
            await self.close(code=protocol.CLOSE_CODES["too_many"], reason=too_many_sockets(full))
            return
        self.follower = asyncio.create_task(self.follow(session))

    async def disconnect(self, code):
        if self.follower is not None:
            self.follower.cancel()
        if self.socket_id is not None:
            await self.hub.free_slot(self.socket_id)

    async def receive(self, text_data=None, bytes_data=None):
        """Nothing is asked on this socket; a message is answered with the state (a ping)."""
        await self.send_state(None)

    async def send_state(self, session) -> dict:
        detail = await _detail(session or self.session)
        await self.send(text_data=json.dumps({"type": "state", **detail}))
        return detail

    async def follow(self, session) -> None:
        self.session = session
        key = sessionstate.log_key(str(session.id))
        redis = self.hub.redis
        try:
            last = await redis.xrevrange(key, count=1)
            after = last[0][0] if last else b"0-0"
            detail = await self.send_state(session)
            while detail["state"] != sessionstate.STOPPED:
                try:
                    answer = await redis.xread({key: after}, block=int(CHECK_S * 1000), count=50)
                except REDIS_DOWN:
                    await asyncio.sleep(1.0)
                    answer = None
                if answer:
                    after = answer[0][1][-1][0]
                detail = await self.send_state(session)
            await self.close()
        except asyncio.CancelledError:
            raise
        # Any fault (most often the client gone mid-send) ends this socket alone, said in one line:
        # the page reconnects and is told the whole state again, so nothing is lost by it.
        except Exception as exc:  # noqa: BLE001 - ends this socket alone; the page reconnects
            log.warning("following session %s stopped: %r", session.id, exc)
            await self.close(code=1011)
