"""A notebook session's websocket (``/ws/sessions/<id>/``): its state as ``GET /api/sessions/<id>``
says it, once on connect and again on every change (a cell taken or ended, what it holds, the
node stopping it after its idle time, its node lost), so that a page never learns late or
silently that its session is gone; and the shortest way to run a cell in it, with its events on
the same socket. Only its maker's: anyone else is closed with 4404.

    client → {"op": "cell", "code", "options"?}          as POST /api/sessions/<id>/cells
    server → {"type": "cell_started", "run": {id, status, device, runtime, ws, session}}
             then each of the cell's events, from seq 1 to its ``finished``, wrapped:
             {"type": "cell_event", "run": <id>, "event": <the event as on /ws/runs/<id>/>}
             (an event too large for one message comes as its parts, each wrapped so)
    server → {"type": "refused", "status", "error", ...}  nothing was started, as the POST
             answers it (400, 404, 409 busy, 410 stopped, 429, 503); the socket stays
    client → {"op": "state"}                              answered with the state (a ping)
    server → {"type": "state", ...}                       whenever the session changes

A message is a state (``type`` "state") or a cell's (``cell_started``, ``cell_event``, ``refused``):
the two never mix. One cell at a time on a socket (a session runs one at a time anyway): another
sent before the last one's ``finished`` is refused (409). A client that loses the socket mid-cell
follows the cell on ``/ws/runs/<id>/?after=<seq>``, as any run. The cell is admitted, counted and
recorded as the POST's (``check_run_cell``); its events cost the socket no slot of its own (it
holds one already), and its stream is waited for before the cell exists, as ``/ws/runs/new/``
does, so that no event falls between the start and the follow. A client whose cells are refused
over and over (REFUSALS_MAX, a 409 apart: a page waits out a busy session so) is closed (4429).

The changes are the session's Redis stream (``executor.sessionstate.log_key``), which its node
and the web side append to; a quiet stream is looked at every CHECK_S through the database and
the fleet's heartbeats too, which is how a session whose node vanished is found stopped."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid

from django.conf import settings
from django.utils.translation import gettext as _

from executor import logs, sessionstate
from executor.runner import protocol
from web.clients import Client, scope_client
from web.db import socket_db
from web.languages import activate_scope_language

from .access import access_session
from .actions.sessions import check_run_cell, session_state
from .consumers import REDIS_DOWN, REFUSAL_MAX_CHARS, REFUSALS_MAX, RunConsumer, run_socket_slots, too_many_sockets
from .serializers import run_summary, session_detail
from .streams import encode_messages, get_hub

log = logging.getLogger("playground")

CHECK_S = 10.0
# What wrapping an event's message adds (its head and the closing brace): a part is this much
# smaller than WS_MESSAGE_MAX_BYTES, so that a wrapped one stays within it.
WRAP_BYTES = 128
# How long a cell sent after a refusal waits before it is looked at.
REFUSED_PAUSE_S = 0.1
# How long a socket whose session stopped waits for its cell's end before it closes.
LAST_CELL_WAIT_S = 5.0


@socket_db
def _load(session_id, person):
    return access_session(session_id, person)


@socket_db
def _start_cell(session, payload, client: Client, user, run_id: uuid.UUID) -> tuple[str, dict]:
    """``session``: the socket's, found its maker's when it connected (which nothing changes)."""
    run = check_run_cell(session, payload, client=client, owner=user, run_id=run_id, held=True)
    return str(run.id), run_summary(run)


@socket_db
def _detail(session) -> dict:
    return session_detail(session, session_state(session, held=True))


class SessionConsumer(RunConsumer):
    TASKS = ("streamer", "follower")

    async def connect(self):
        activate_scope_language(self.scope)  # the reasons of its closes, in the page's language
        self.follower = self.streamer = self.waiter = None
        self.cell_run: str | None = None  # the cell whose events this socket carries
        self.refusals = 0
        self.refused_since_start = False
        self.closed = False
        self.answering = asyncio.Lock()
        self.state_answered = 0.0  # time.monotonic() of the last state asked for
        self.socket_id = uuid.uuid4().hex
        self.hub = get_hub()
        await self.accept()
        self.client = scope_client(self.scope, self.scope.get("user"))
        session = await _load(self.scope["url_route"]["kwargs"]["session_id"], self.client.person)
        if session is None:
            self.closed = True
            await self.close(code=protocol.CLOSE_CODES["not_found"], reason=_("no such session"))
            return
        full = await self.hub.take_slots(self.socket_id, run_socket_slots(self.client))
        if full is not None:
            self.closed = True
            await self.close(code=protocol.CLOSE_CODES["too_many"], reason=too_many_sockets(full))
            return
        self.socket_ids = (self.socket_id,)
        self.session = session
        self.follower = asyncio.create_task(self.follow_state(session))

    async def disconnect(self, code):
        if self.follower is not None:
            self.follower.cancel()
        await super().disconnect(code)

    async def receive(self, text_data=None, bytes_data=None):
        # Answered whole before the socket closes for a stopped session (follow_state): a cell
        # sent as the session stops hears its 410 first.
        async with self.answering:
            if not self.closed:
                await self.answer(text_data if text_data is not None else bytes_data)

    async def answer(self, text) -> None:
        activate_scope_language(self.scope)
        try:
            message = json.loads(text)
        except (TypeError, ValueError, RecursionError):
            message = None
        op = message.get("op") if isinstance(message, dict) else None
        if op == "state":
            # At most one a REFUSED_PAUSE_S: each costs a lookup, and a client asking in a loop
            # must not make the process answer as fast as it sends (web/server.py closes a socket
            # with WS_MAX_PENDING_MESSAGES waiting).
            wait = self.state_answered + REFUSED_PAUSE_S - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self.state_answered = time.monotonic()
            await self.send_state(None)
        elif op == "cell":
            if self.refused_since_start:
                # A cell after a refusal waits a moment: a client that sends them in a loop (a
                # busy session's 409s are not counted towards REFUSALS_MAX) costs a lookup a
                # REFUSED_PAUSE_S, not one a message.
                await asyncio.sleep(REFUSED_PAUSE_S)
            try:
                await self.start_cell({k: v for k, v in message.items() if k != "op"})
            except Exception:  # the socket answers, rather than dying with its slot
                log.exception("starting a cell on a session socket failed")
                await self.refuse(500, _("the cell could not be started; try again"))
        else:
            await self.refuse(400, _('a message is {"op": "cell", "code": ..., "options"?} or {"op": "state"}'))

    async def start_cell(self, payload: dict) -> None:
        if await self.token_revoked():
            return
        if self.cell_run is not None:
            await self.refuse(409, _("a cell is still running on this socket (run %(run)s); one at a time: wait for "
                                     "its finished event") % {"run": self.cell_run}, running=self.cell_run)
            return
        admitted = await self.admit(
            lambda new_id: _start_cell(self.session, payload, self.client, self.scope.get("user"), new_id),
            wait=not self.refused_since_start)
        if admitted is None:
            return
        run_id, summary, waiter = admitted
        self.refused_since_start = False
        self.refusals = 0
        self.cell_run = run_id
        logs.set_run(run_id)
        await self.send(text_data=protocol.dumps({"type": "cell_started", "run": summary}))
        self.streamer = asyncio.create_task(self.stream(run_id, 0, waiter))

    async def send_event(self, body: str) -> None:
        head = '{"type":"cell_event","run":"' + self.cell_run + '","event":'
        for message in encode_messages(body, settings.WS_MESSAGE_MAX_BYTES - WRAP_BYTES):
            await self.send(text_data=head + message + "}")

    async def after_finished(self) -> None:
        """The cell's ``finished`` was sent: the socket takes the next cell (it stays open)."""
        self.cell_run = None

    async def refuse(self, status: int, error: str, **data) -> None:
        """A cell that was not started, said as the POST says it. Past REFUSALS_MAX refusals in a
        row (a 409 is a page waiting out the cell before, and not counted) the socket is closed."""
        self.refused_since_start = True
        answer = protocol.dumps({**data, "type": "refused", "status": status, "error": error[:REFUSAL_MAX_CHARS]})
        if len(answer) > REFUSAL_MAX_CHARS * 2:
            answer = protocol.dumps({"type": "refused", "status": status, "error": error[:REFUSAL_MAX_CHARS]})
        await self.send(text_data=answer)
        if status != 409:
            self.refusals += 1
        if self.refusals >= REFUSALS_MAX:
            self.closed = True
            await self.close(code=protocol.CLOSE_CODES["too_many"],
                             reason=_("%(count)s cells refused on this socket; open another")
                             % {"count": REFUSALS_MAX})

    async def last_cell_ended(self) -> None:
        """A session that stopped with a cell in flight (one that killed its runner, say) ends
        that cell within moments: its ``finished`` is sent here before the socket closes (the
        client follows it on its run's socket past LAST_CELL_WAIT_S)."""
        streamer = self.streamer
        if self.cell_run is not None and streamer is not None and not streamer.done():
            try:
                await asyncio.wait_for(asyncio.shield(streamer), LAST_CELL_WAIT_S)
            except TimeoutError:  # the run's socket has it all
                pass

    async def send_state(self, session, announced: dict | None = None) -> dict | None:
        """The session's state, told; None when the socket's token no longer stands (it closed:
        what a session's state names, its cells' runs, is its owner's). ``announced``: the state
        a change told on the session's stream (the hash as the change left it), told as it is
        while it is a live session's: read again (and its node's beat looked at) otherwise, and
        every CHECK_S when nothing changes."""
        if await self.token_revoked():
            return None
        if announced is not None and announced["state"] != sessionstate.STOPPED and not announced["stop"]:
            detail = session_detail(session or self.session, announced)
        else:
            detail = await _detail(session or self.session)
        await self.send(text_data=json.dumps({"type": "state", **detail}))
        return detail

    async def follow_state(self, session) -> None:
        key = sessionstate.log_key(str(session.id))
        redis = self.hub.redis
        try:
            last = await redis.xrevrange(key, count=1)
            after = last[0][0] if last else b"0-0"
            detail = await self.send_state(session)
            while detail is not None and detail["state"] != sessionstate.STOPPED:
                try:
                    answer = await redis.xread({key: after}, block=int(CHECK_S * 1000), count=50)
                except REDIS_DOWN:
                    await asyncio.sleep(1.0)
                    answer = None
                announced = None
                if answer:
                    after, fields = answer[0][1][-1]
                    announced = sessionstate.from_hash(fields)
                detail = await self.send_state(session, announced)
            if detail is None:
                return
            await self.last_cell_ended()
            async with self.answering:
                self.closed = True
                await self.close()
        except asyncio.CancelledError:
            raise
        # Any fault (most often the client gone mid-send) ends this socket alone, said in one line:
        # the page reconnects and is told the whole state again, so nothing is lost by it.
        except Exception as exc:  # noqa: BLE001 - ends this socket alone; the page reconnects
            log.warning("following session %s stopped: %r", session.id, exc)
            await self.close(code=1011)
