"""The websocket of a run: authenticate, then forward its events, replay first, then live.

Both come from one place, the run's Redis stream, read from ``0-<after>`` with a blocking XREAD:
the stream's ids are the events' seqs, so there is no gap between "replay" and "subscribe" for
an event to fall into, and a client that reconnects with ``after=N`` gets exactly N+1 onwards.
When the stream has expired (a day after the run), the events come from the database.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from executor import events as ev

from .access import access_run_for_user
from .redis import async_redis

CLOSE_NOT_FOUND = 4404
CLOSE_BAD_REQUEST = 4400
XREAD_BLOCK_MS = 5000
XREAD_COUNT = 500


@database_sync_to_async
def _load_run(run_id, user):
    return access_run_for_user(run_id, user)


@database_sync_to_async
def _stored_events(run_id, after: int) -> list[dict]:
    from .models import RunEvent

    return [e.data for e in RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")]


class RunConsumer(AsyncWebsocketConsumer):
    async def connect(self):
        self.streamer = None
        self.redis = None
        await self.accept()
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            after = int(query.get("after", ["0"])[0])
            if after < 0:
                raise ValueError
        except ValueError:
            await self.close(code=CLOSE_BAD_REQUEST, reason="'after' must be a non-negative integer")
            return
        run = await _load_run(self.scope["url_route"]["kwargs"]["run_id"], self.scope.get("user"))
        if run is None:
            await self.close(code=CLOSE_NOT_FOUND, reason="no such run")
            return
        self.redis = async_redis(block_s=XREAD_BLOCK_MS / 1000)
        self.streamer = asyncio.create_task(self.stream(str(run.id), after))

    async def disconnect(self, code):
        if self.streamer:
            self.streamer.cancel()
        if self.redis:
            await self.redis.aclose()

    async def stream(self, run_id: str, after: int) -> None:
        key = ev.log_key(run_id)
        last = after
        if not await self.redis.exists(key):
            # Expired from Redis: replay from the database, which has every recorded event.
            for event in await _stored_events(run_id, after):
                await self.send(text_data=json.dumps(event))
                last = event["seq"]
                if event["type"] == ev.FINISHED:
                    await self.close()
                    return
        while True:
            result = await self.redis.xread({key: ev.stream_id(last)}, block=XREAD_BLOCK_MS, count=XREAD_COUNT)
            for _stream, entries in result or ():
                for entry_id, fields in entries:
                    body = fields[b"e"].decode()
                    await self.send(text_data=body)
                    last = int(entry_id.split(b"-")[1])
                    if json.loads(body)["type"] == ev.FINISHED:
                        await self.close()
                        return
