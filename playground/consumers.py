"""The websocket of a run: check access and the client's socket count, then forward its events,
replay first, then live.

Both come from one place, the run's Redis stream, read from ``0-<after>``: the stream's ids are
the events' seqs, so there is no gap between "replay" and "subscribe" for an event to fall into,
and a client that reconnects with ``after=N`` gets exactly N+1 onwards. Live reads are shared by
every socket of the process (``streams.Hub``). Events too large for one websocket message are
sent in parts. When the stream has expired (a day after the run) or is younger than the run (a
Redis that restarted), the events come from the database. The socket closes after ``finished``.
What a socket says to a person (a refusal, the reason of a close) is in their page's language
(``web.languages.activate_scope_language``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from urllib.parse import parse_qs

import redis.exceptions
from web.db import SocketDatabase, socket_db
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from executor import events as ev
from executor import logs
from executor.runner import protocol
from web.api import QUEUE_UNREACHABLE
from web.clients import Client, scope_client
from web.errors import ActionError
from web.languages import activate_scope_language
from web.metrics import CountedWebsocket

from .access import access_run_for_user
from .streams import encode_messages, get_hub

log = logging.getLogger("playground")

RETRY_MAX_S = 5.0
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
OPEN_SOCKETS = gettext_lazy("open websockets")
WAITING_SOCKETS = gettext_lazy("sockets waiting for a run")


@socket_db
def _load_run(run_id, user):
    return access_run_for_user(run_id, user)


@socket_db
def _stored_events(run_id, after: int, before: int | None = None) -> list[dict]:
    from .models import RunEvent

    events = RunEvent.objects.filter(run_id=run_id, seq__gt=after)
    if before is not None:
        events = events.filter(seq__lt=before)
    return [e.data for e in events.order_by("seq")[:ev.LOG_MAX_EVENTS]]


# A hole in a run's events (its log younger than the run) is waited for this long, asked again
# this often, before the socket gives up (the client reconnects from where it was).
HOLE_WAIT_S = 30.0
HOLE_RETRY_S = 0.25


class HoleError(Exception):
    """Events between what a socket sent and what it has are neither in the log nor stored."""


class RunConsumer(CountedWebsocket, SocketDatabase, AsyncWebsocketConsumer):
    # Run pages read their run's stream, not the channel layer: no channel to subscribe to.
    channel_layer_alias = None
    socket_ids: tuple[str, ...] = ()
    # The consumer's own tasks, cancelled however it ends.
    TASKS: tuple[str, ...] = ("streamer", "idle")

    async def __call__(self, scope, receive, send):
        # A consumer that raises ends without disconnect(): its socket's slots are given back
        # here whatever ended it (kept, they would be refreshed for as long as the process runs).
        try:
            return await super().__call__(scope, receive, send)
        finally:
            for task in (getattr(self, name, None) for name in self.TASKS):
                if task is not None:
                    task.cancel()
            hub = getattr(self, "hub", None)
            if hub is not None and getattr(self, "waiter", None) is not None:
                hub.leave(self.waiter)
            for socket_id in self.socket_ids:
                if hub is not None:
                    await hub.free_slot(socket_id)

    async def connect(self):
        activate_scope_language(self.scope)
        self.streamer = None
        self.waiter = None
        self.socket_id = uuid.uuid4().hex
        self.socket_ids = (self.socket_id,)
        self.hub = get_hub()
        await self.accept()
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            after = int(query.get("after", ["0"])[0])
            if after < 0:
                raise ValueError
        except ValueError:
            await self.close(code=protocol.CLOSE_CODES["bad_request"],
                             reason=_("'%(name)s' must be a non-negative integer") % {"name": "after"})
            return
        run = await _load_run(self.scope["url_route"]["kwargs"]["run_id"], self.scope.get("user"))
        if run is None:
            await self.close(code=protocol.CLOSE_CODES["not_found"], reason=_("no such run"))
            return
        logs.set_run(run.id)  # this socket's task logs with its run (executor/logs.py)
        # Counted as runs are: the person (the account, else the browser, else the address) and,
        # signed out, their room.
        client = scope_client(self.scope, self.scope.get("user"))
        full = await self.hub.take_slots(self.socket_id, run_socket_slots(client))
        if full is not None:
            await self.close(code=protocol.CLOSE_CODES["too_many"], reason=too_many_sockets(full))
            return
        self.streamer = asyncio.create_task(self.stream(str(run.id), after))

    async def token_revoked(self) -> bool:
        """A socket opened with an API token acts and tells only while the token stands, asked
        again each time (``accounts.auth.SocketTokenMiddleware``): once it is revoked, expired or
        its owner disabled, the socket is closed 4401, as the API answers 401."""
        alive = self.scope.get("token_alive")
        if alive is None or await alive():
            return False
        self.closed = True
        await self.close(code=protocol.CLOSE_CODES["unauthorized"],
                         reason=_("the API token is no longer valid (revoked or expired)"))
        return True

    async def disconnect(self, code):
        if self.streamer:
            self.streamer.cancel()
        if self.waiter:
            self.hub.leave(self.waiter)
        for socket_id in self.socket_ids:
            await self.hub.free_slot(socket_id)

    async def send_event(self, body: str) -> None:
        for message in encode_messages(body):
            await self.send(text_data=message)

    async def admit(self, start, *, wait: bool, undo=None) -> tuple[str, dict, object] | None:
        """A run started on this socket: ``start(new_id)`` admits and stores it under that id.
        With ``wait``, its stream is waited for before it exists (the hub's read takes it in
        while the run is admitted, so the executor's first events reach the socket at once; not
        after a refusal, since each wait wakes the process's one read). (its id, its summary,
        the waiter), or None when it was refused, said to the client (``refuse``) after ``undo()``."""
        new_id = uuid.uuid4()
        waiter = None
        if wait:
            waiter = self.waiter = self.hub.wait(ev.log_key(str(new_id)), 0)  # left in disconnect()
        try:
            run_id, summary = await start(new_id)
        except BaseException as exc:
            if waiter is not None:
                self.hub.leave(waiter)
                self.waiter = None
            if undo is not None:
                await undo()
            if isinstance(exc, ActionError):
                await self.refuse(exc.status, exc.message, **exc.data)
            elif isinstance(exc, REDIS_DOWN):
                await self.refuse(503, str(QUEUE_UNREACHABLE))
            else:
                raise
            return None
        return run_id, summary, waiter

    async def stream(self, run_id: str, after: int, waiter=None) -> None:
        """Catch up from ``after``, then follow; with ``waiter`` (a new run's, registered with
        the hub before the run was queued) there is nothing to catch up: it has every event."""
        self.last = after
        try:
            if waiter is not None or not await self.catch_up(run_id):
                await self.follow(run_id, waiter)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the client reconnects from where it was
            # Most often the client went away mid-send (the server's "send on a closed socket").
            log.warning("streaming run %s to a websocket stopped: %r", run_id, exc)
            await self.close(code=1011)

    async def deliver(self, run_id: str, entries: list[tuple[int, str]]) -> bool:
        """Send entries after ``last`` in order (a hole is filled from the database); True once
        ``finished`` has been sent (and ``after_finished`` done)."""
        for seq, body in entries:
            if seq <= self.last:
                continue
            if seq > self.last + 1:
                for hole_seq, hole_body in await self.fill(run_id, seq):
                    await self.send_event(hole_body)
                    self.last = hole_seq
            await self.send_event(body)
            self.last = seq
            if json.loads(body)["type"] == ev.FINISHED:
                await self.after_finished()
                return True
        return False

    async def after_finished(self) -> None:
        """The run's ``finished`` was sent: a run's socket closes (it carries one run)."""
        await self.close()

    async def fill(self, run_id: str, before: int) -> list[tuple[int, str]]:
        """The events between ``last`` and ``before``: from the run's log where it has them, else
        from the database (a log younger than the run: a Redis that restarted). Never fewer: the
        database may not have them yet (the recorder is behind), so this waits for them, and a
        socket that cannot have them within HOLE_WAIT_S is closed for the client to come back
        (1011), rather than skip an event."""
        deadline = asyncio.get_running_loop().time() + HOLE_WAIT_S
        missing = before - 1 - self.last
        while True:
            try:
                entries = await self.hub.redis.xrange(ev.log_key(run_id), ev.stream_id(self.last + 1),
                                                      ev.stream_id(before - 1))
            except REDIS_DOWN:
                entries = []
            found = [(int(i.split(b"-")[1]), f[b"e"].decode()) for i, f in entries]
            if len(found) == missing:
                return found
            stored = [(e["seq"], protocol.dumps(e)) for e in await _stored_events(run_id, self.last, before)]
            if len(stored) == missing:
                return stored
            if asyncio.get_running_loop().time() > deadline:
                raise HoleError(f"events {self.last + 1}..{before - 1} of run {run_id} are nowhere yet")
            await asyncio.sleep(HOLE_RETRY_S)

    async def catch_up(self, run_id: str) -> bool:
        """Replay what the run has after ``last``; True when it has finished (socket closed)."""
        key = ev.log_key(run_id)
        client = self.hub.redis
        delay = 0.1
        while True:
            try:
                result = await client.xread({key: ev.stream_id(self.last)}, count=500)
                if result:
                    entries = [(int(i.split(b"-")[1]), f[b"e"].decode()) for i, f in result[0][1]]
                    if await self.deliver(run_id, entries):
                        return True
                    continue
                pipe = client.pipeline(transaction=False)
                pipe.get(ev.done_key(run_id))
                pipe.exists(key)
                done, exists = await pipe.execute()
            except REDIS_DOWN:
                # Redis is away: wait for it, as the page does for us.
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            if done is not None and int(done) <= self.last:
                await self.after_finished()  # the client has seen everything, "finished" included
                return True
            if not exists:
                # Expired, or lost with a Redis that restarted: the database has what was recorded.
                stored = await _stored_events(run_id, self.last)
                if await self.deliver(run_id, [(e["seq"], protocol.dumps(e)) for e in stored]):
                    return True
            return False

    async def follow(self, run_id: str, waiter=None) -> None:
        self.waiter = waiter or self.hub.wait(ev.log_key(run_id), self.last)
        try:
            while True:
                entries = await self.waiter.queue.get()
                if await self.deliver(run_id, entries):
                    return
        finally:
            self.hub.leave(self.waiter)



def run_socket_slots(client: Client) -> list[tuple[str, int]]:
    """Where a socket that carries a run counts: the person's WS_MAX_PER_CLIENT and, signed out,
    their room's WS_MAX_PER_ROOM."""
    return [(client.person, settings.WS_MAX_PER_CLIENT),
            *([(client.room, settings.WS_MAX_PER_ROOM)] if client.room is not None else [])]


def waiting_socket_slots(client: Client) -> list[tuple[str, int]]:
    """Where a socket waiting for its run counts: WS_MAX_NEW_PER_CLIENT, WS_MAX_NEW_PER_ROOM."""
    return [(client.person, settings.WS_MAX_NEW_PER_CLIENT),
            *([(client.room, settings.WS_MAX_NEW_PER_ROOM)] if client.room is not None else [])]


def too_many_sockets(full: tuple[str, int], what: str = OPEN_SOCKETS) -> str:
    """A refusal's reason (a close's: at most 123 bytes, autobahn cuts a longer one), for the (key,
    cap) that was full."""
    key, cap = full
    if key.startswith("room:"):
        message = _("too many %(what)s from everyone signed out at your address (at most %(cap)s)")
    else:
        message = _("too many %(what)s from you (at most %(cap)s)")
    return message % {"what": what, "cap": cap}


@socket_db
def _start_run(payload, client: Client, user, run_id: uuid.UUID) -> tuple[str, dict]:
    from .actions.runs import check_start_run
    from .serializers import run_summary

    run = check_start_run(payload, client=client, owner=user, run_id=run_id)
    return str(run.id), run_summary(run)


class NewRunConsumer(RunConsumer):
    """``/ws/runs/new/``: a socket a page opens before its next run, to start it with one message
    rather than a POST and then a socket of its own (the request and the opening handshake are
    no longer between pressing Run and the first output).

        client → {"op": "start", "code", "device"?, "runtime"?, "snippet"?, "stdin"?}   as POST /api/runs
        server → {"type": "started_run", "run": {id, status, device, runtime, ws, note?}}
                 then the run's events from seq 1, as on /ws/runs/<id>/, and closes after finished
        server → {"type": "refused", "status", "error", ...}   nothing was started: the socket
                 stays open for another start (429, 503 and 400 as the POST answers them), and
                 is closed (4429) after REFUSALS_MAX refusals

    The same admission as the POST (``check_start_run``), counted against the same person (the
    account signed in on the page, else the browser's identity in its cookie, else the address)
    and, signed out, their room (web/clients.py). Waiting, the socket takes a slot among the
    person's WS_MAX_NEW_PER_CLIENT and the room's WS_MAX_NEW_PER_ROOM (holding one costs nothing,
    so waiting sockets never take the slots of sockets that carry runs), and is closed after
    WS_NEW_IDLE_S; its start takes one of the person's WS_MAX_PER_CLIENT and the room's
    WS_MAX_PER_ROOM, as a run's socket does, or is refused (429). One run per socket: a client
    that loses it mid-run follows the run on /ws/runs/<id>/?after=<seq>."""

    async def connect(self):
        activate_scope_language(self.scope)
        self.streamer = None
        self.waiter = None
        self.socket_id = uuid.uuid4().hex
        self.waiting_id = self.socket_id + ":new"
        self.socket_ids = (self.waiting_id, self.socket_id)
        self.hub = get_hub()
        self.run_id = None
        self.refused = False
        self.refusals = 0
        self.client = scope_client(self.scope, self.scope.get("user"))
        await self.accept()
        full = await self.hub.take_slots(self.waiting_id, waiting_socket_slots(self.client), pool="new")
        if full is not None:
            self.refused = True
            await self.close(code=protocol.CLOSE_CODES["too_many"],
                             reason=_("%(reason)s; POST /api/runs")
                             % {"reason": too_many_sockets(full, WAITING_SOCKETS)})
            return
        self.idle = asyncio.create_task(self._close_when_idle())

    async def _close_when_idle(self) -> None:
        await asyncio.sleep(settings.WS_NEW_IDLE_S)
        if self.run_id is None:
            await self.close(code=1000, reason=_("no run started; open another for the next run"))

    async def disconnect(self, code):
        if getattr(self, "idle", None):
            self.idle.cancel()
        await super().disconnect(code)

    async def receive(self, text_data=None, bytes_data=None):
        if self.run_id is not None or self.refused:
            return  # one run per socket; and nothing on a socket refused at its opening
        activate_scope_language(self.scope)
        try:
            await self.start(text_data if text_data is not None else bytes_data)
        except Exception:  # the socket answers, rather than dying with its slots
            log.exception("starting a run on a run socket failed")
            await self.refuse(500, _("the run could not be started; try again"))

    async def start(self, text) -> None:
        if await self.token_revoked():
            return
        try:
            message = json.loads(text)
        except (TypeError, ValueError, RecursionError):
            message = None
        if not isinstance(message, dict) or message.get("op") != "start":
            await self.refuse(400, _('a message is {"op": "start", "code": ..., "device"?, "runtime"?, "snippet"?}'))
            return
        full = await self.hub.take_slots(self.socket_id, run_socket_slots(self.client))
        if full is not None:
            await self.refuse(429, too_many_sockets(full))
            return
        payload = {k: v for k, v in message.items() if k != "op"}
        # The run's stream is waited for before the run exists: the hub's read takes it in while
        # the run is admitted and stored, so the executor's first events reach the page at once
        # (waiting after the start cost a wake of the hub's read and a catch-up, 3-4 ms). Not on
        # a socket whose start was refused before: each wait wakes the process's one read, and
        # a client sending refused starts in a loop must not make it read for every one.
        admitted = await self.admit(lambda new_id: _start_run(payload, self.client, self.scope.get("user"), new_id),
                                    wait=not self.refusals, undo=lambda: self.hub.free_slot(self.socket_id))
        if admitted is None:
            return
        run_id, summary, waiter = admitted
        self.run_id = run_id
        await self.hub.free_slot(self.waiting_id)  # a socket that carries a run now
        logs.set_run(run_id)
        await self.send(text_data=protocol.dumps({"type": "started_run", "run": summary}))
        self.streamer = asyncio.create_task(self.stream(run_id, 0, waiter))

    async def refuse(self, status: int, error: str, **data) -> None:
        """Answer a start that started nothing; the socket stays for another, up to
        REFUSALS_MAX of them (a page tries again a few times at most; a client sending refused
        starts in a loop kept the web process's CPU busy for everyone), then it is closed."""
        answer = protocol.dumps({**data, "type": "refused", "status": status, "error": error[:REFUSAL_MAX_CHARS]})
        if len(answer) > REFUSAL_MAX_CHARS * 2:  # what the refusal adds is never a flood either
            answer = protocol.dumps({"type": "refused", "status": status, "error": error[:REFUSAL_MAX_CHARS]})
        await self.send(text_data=answer)
        self.refusals += 1
        if self.refusals >= REFUSALS_MAX:
            self.refused = True  # whatever else it sends is not read
            await self.close(code=protocol.CLOSE_CODES["too_many"],
                             reason=_("%(count)s starts refused on this socket; open another")
                             % {"count": REFUSALS_MAX})


# A refusal's message, at most (it may quote what was sent).
REFUSAL_MAX_CHARS = 2000
# Refused starts a run socket answers before it is closed.
REFUSALS_MAX = 8
