"""A websocket closed for sending faster than it is answered (web/server.py): what it had sent
and its consumer had not taken is dropped, never acted on; the rest of what waits stays, in
order."""

from __future__ import annotations

import asyncio

from web.server import drop_received


def test_what_a_flooding_client_sent_is_dropped_and_the_rest_kept_in_order():
    queue: asyncio.Queue = asyncio.Queue()
    for message in ({"type": "websocket.connect"}, {"type": "websocket.receive", "text": "cell 1"},
                    {"type": "websocket.receive", "bytes": b"cell 2"}, {"type": "websocket.receive", "text": "3"},
                    {"type": "websocket.disconnect", "code": 4429}):
        queue.put_nowait(message)
    assert drop_received(queue) == 3
    left = [queue.get_nowait() for _ in range(queue.qsize())]
    assert left == [{"type": "websocket.connect"}, {"type": "websocket.disconnect", "code": 4429}]
    assert drop_received(queue) == 0
