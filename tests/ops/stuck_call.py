"""An ASGI application with a call that never ends, as a database call stuck behind a lock is: it
answers ``/healthz`` at once, and ``/stuck`` runs ``time.sleep(300)`` in a thread, as
``sync_to_async`` runs a view's database calls."""

from __future__ import annotations

import asyncio
import json
import time


def wait_behind_a_lock() -> None:
    time.sleep(300)


async def application(scope, receive, send):
    if scope["type"] != "http":
        return
    await receive()
    if scope["path"] == "/stuck":
        await asyncio.to_thread(wait_behind_a_lock)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps({"status": "ok"}).encode()})
