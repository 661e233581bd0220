"""The editor's questions about its code (completion, a completion's details, signature help,
docs on hover), answered by the analysers on the executor nodes, in the environment runs use
(``executor/analyser``), through Redis: the request goes on its runtime's list, the answer comes
back on its own key. Nothing waits in a thread: the view is async and waits in the event loop.

A page's editor (``editor``, a name of its own) numbers its requests (``seq``); one that a newer
request of the same kind has overtaken is answered "superseded" without being analysed, and a
request the analysers have not answered within ``ANALYSE_TIMEOUT_S`` is given up (its deadline
tells the analyser to skip it)."""

from __future__ import annotations

import json
import time
import uuid
from functools import lru_cache

from asgiref.sync import sync_to_async
from django.conf import settings

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from executor.analyser import wire
from playground.runtimes import check_runtime
from web.api import plain_text, text
from web.errors import ActionError
from web.clients import Client
from web.ratelimit import check_rate_in_room

MAX_POSITION = 10**6
MAX_SEQ = 2**53  # compared in Redis, whose numbers are doubles
EDITOR_REQUESTS = gettext_lazy("editor requests")


def reject_lone_surrogates(code: str) -> None:
    """Code is text: a lone surrogate (which JSON can carry) or a NUL is refused, not analysed."""
    plain_text(code, "code")


def check_analyse(payload, *, client: Client) -> dict:
    """The request to send the analysers; ``client``'s person key names its editor's requests
    (``wire.latest_key``), and its limit counts in their room too."""
    if not isinstance(payload, dict):
        raise ActionError(_('send {"op", "code", "line", "column"}: op is one of %(ops)s')
                          % {"ops": ", ".join(wire.OPS)})
    op = payload.get("op")
    if op not in wire.OPS:
        raise ActionError(_("'%(name)s' must be one of %(choices)s") % {"name": "op", "choices": ", ".join(wire.OPS)})
    code = text(payload, "code", settings.RUN_MAX_CODE_BYTES, required=True, status=413)
    position = {}
    for name in ("line", "column"):
        value = payload.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_POSITION:
            raise ActionError(_("'%(name)s' must be a whole number from 1 (Monaco's positions count from 1)")
                              % {"name": name})
        position[name] = value
    seq = payload.get("seq", 0)
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= MAX_SEQ:
        raise ActionError(_("'%(name)s' must be a whole number from 0 to %(maximum)s")
                          % {"name": "seq", "maximum": MAX_SEQ})
    reject_lone_surrogates(code)
    label = text(payload, "label", 200, default="") if op == "resolve" else ""
    editor = text(payload, "editor", 64, default="")
    # The runtime the run would use: its analysers answer, for its libraries.
    runtime = check_runtime(payload.get("runtime"))[0]
    return {"op": op, "code": code, **position, "seq": seq, "label": label, "client": client.person,
            "room": client.room, "editor": editor, "runtime": runtime}


@lru_cache(maxsize=8)
def _async_redis(loop_id: int):
    import redis.asyncio

    # Its reads outlast the wait for an answer (BLPOP up to ANALYSE_TIMEOUT_S).
    return redis.asyncio.Redis.from_url(settings.REDIS_URL, socket_timeout=settings.ANALYSE_TIMEOUT_S + 5)


async def do_analyse(request: dict) -> dict:
    import asyncio

    await sync_to_async(check_rate_in_room, thread_sensitive=False)(
        "analyse", request["client"], request.get("room"), settings.ANALYSE_RATE_LIMIT_PER_MINUTE, 60,
        EDITOR_REQUESTS)
    client = _async_redis(id(asyncio.get_running_loop()))
    request_id = uuid.uuid4().hex
    timeout = settings.ANALYSE_TIMEOUT_S
    runtime = request.get("runtime") or wire.DEFAULT_RUNTIME
    message = {**request, "id": request_id, "deadline": time.time() + timeout}
    if not await client.exists(wire.alive_key(runtime)):
        raise ActionError(_("the editor's analyser is not running on any node; the editor goes on without suggestions"),
                          status=503, headers={"Retry-After": "10"})
    latest = wire.latest_key(request["client"], request["editor"], request["op"])
    held = await client.eval(wire.RAISE_LATEST, 1, latest, request["seq"], 60)
    if int(held) > request["seq"]:
        return {"superseded": True}  # a newer request of this editor came first
    await client.lpush(wire.requests_key(runtime), json.dumps(message))
    popped = await client.blpop([wire.reply_key(request_id)], timeout=timeout)
    if popped is None:
        raise ActionError(_("no analyser answered within %(seconds)s s; the editor goes on without suggestions")
                          % {"seconds": f"{timeout:g}"}, status=503, headers={"Retry-After": "5"})
    return json.loads(popped[1])
