"""An ASGI application that is slow to accept a websocket, as a busy web process is: it answers
``/healthz`` at once, and accepts a socket ``SLOW_ACCEPT_S`` (6) seconds after it arrives."""

from __future__ import annotations

import asyncio
import json
import os


async def application(scope, receive, send):
    if scope["type"] == "http":
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": json.dumps({"status": "ok"}).encode()})
    elif scope["type"] == "websocket":
        assert (await receive())["type"] == "websocket.connect"
        await asyncio.sleep(float(os.environ.get("SLOW_ACCEPT_S", "6")))
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.send", "text": json.dumps({"type": "hello"})})
        await send({"type": "websocket.close", "code": 1000})
        while (await receive())["type"] != "websocket.disconnect":
            pass
