"""The web process's side of run event streams: one Redis connection pool and one live reader
for every websocket of the process, and the framing of events into websocket messages.

    websocket ─┐ catch-up: XREAD (no block) from ``after`` on the shared pool
    websocket ─┼─▶ Hub: ONE blocking XREAD over every stream a socket waits on ─▶ Redis
    websocket ─┘        (and a wake-up stream of its own, so a new waiter joins at once)

A thousand open pages cost the process one blocking connection and a small pool, not a
thousand connections. A Redis that goes away is retried with backoff; the sockets wait and
carry on where they were once it is back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
import weakref
from dataclasses import dataclass, field

import redis.asyncio
import redis.exceptions
from django.conf import settings

from executor.runner import protocol

log = logging.getLogger("playground")

BLOCK_MS = 10_000
READ_COUNT = 500
POOL_CONNECTIONS = 16
# A socket's slot in its client's count lives this long unless refreshed (a process that died
# without closing its sockets frees their slots by then).
SLOT_TTL_S = 90
REFRESH_EVERY_S = 30
RETRY_MAX_S = 5.0
# With at least this many streams waited on, a read that returned entries is followed by a pause
# this long before the next (a read costs about 7 µs a stream in the process: under a class's
# burst it was a quarter of the web process's CPU, and 4 reads a run).
COALESCE_WAITERS = 16
COALESCE_S = 0.002


def encode_messages(body: str, limit: int | None = None) -> list[str]:
    """The websocket messages of one event (its JSON text): itself, or, past ``limit`` bytes,
    ``{"seq", "type": "part", "of", "part", "parts", "data"}`` messages whose ``data`` joined in
    order is the event's JSON text."""
    limit = limit or settings.WS_MESSAGE_MAX_BYTES
    raw = body.encode("utf-8")
    if len(raw) <= limit:
        return [body]
    event = json.loads(body)
    # Escaping a piece of JSON text inside JSON can at most double it (quotes, backslashes).
    step = max((limit - 200) // 2, 64)
    pieces, i = [], 0
    while i < len(raw):
        j = min(i + step, len(raw))
        while j < len(raw) and (raw[j] & 0xC0) == 0x80:  # not inside a UTF-8 character
            j -= 1
        pieces.append(raw[i:j].decode("utf-8"))
        i = j
    return [protocol.dumps({"seq": event["seq"], "type": protocol.PART, "of": event["type"], "part": n,
                            "parts": len(pieces), "data": piece})
            for n, piece in enumerate(pieces, 1)]


# A client's open sockets: a sorted set of socket ids scored by when each slot expires. Atomic,
# so that sockets opened at once cannot all see the same free slot, and a slot in every set the
# socket counts in (a person's, their room's) or in none. KEYS: the sets; ARGV: now, expiry,
# socket id, ttl, then each set's cap. Returns 0, or the number of the set that is full.
_TAKE_SLOT_LUA = """
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[1])
  if redis.call('ZCARD', key) >= tonumber(ARGV[4 + i]) then
    return i
  end
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, ARGV[2], ARGV[3])
  redis.call('EXPIRE', key, ARGV[4])
end
return 0
"""


@dataclass(eq=False)
class Waiter:
    """One socket waiting for the entries of one run's stream after ``last``."""

    key: str
    last: int
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)


def packed_in_c(url: str) -> dict:
    """``from_url`` options for a client whose commands hiredis packs, where it is installed.
    The hub's one XREAD names every stream a socket waits on, twice (key, id): with 200 runs
    streaming, redis-py's asyncio client packed its 400 arguments in Python, one call at a
    time, a tenth of the web process's CPU in a burst. The connection class is the one the URL
    asks for (TLS, a unix socket), packing in C."""
    try:
        import hiredis
    except ImportError:
        return {}
    scheme = url.partition("://")[0]
    base = {"rediss": redis.asyncio.SSLConnection,
            "unix": redis.asyncio.UnixDomainSocketConnection}.get(scheme, redis.asyncio.Connection)

    class PackedInC(base):
        def pack_command(self, *args):
            # As redis-py's own packer: a first argument "CLIENT SETINFO" is two words.
            if isinstance(args[0], str):
                args = (*args[0].encode().split(), *args[1:])
            elif b" " in args[0]:
                args = (*args[0].split(), *args[1:])
            try:
                return [hiredis.pack_command(args)]
            except TypeError as exc:
                raise redis.exceptions.DataError(str(exc)) from None

    return {"connection_class": PackedInC}


class Hub:
    """The process's (its event loop's) live reads: see the module's docstring."""

    def __init__(self):
        url = settings.REDIS_URL
        self.redis = redis.asyncio.Redis(connection_pool=redis.asyncio.BlockingConnectionPool.from_url(
            url, max_connections=POOL_CONNECTIONS, timeout=30, socket_timeout=30))
        # Its own connection: a blocking read holds it for up to BLOCK_MS.
        self.blocking = redis.asyncio.Redis.from_url(url, socket_timeout=BLOCK_MS / 1000 + 20,
                                                     **packed_in_c(url))
        self.wake_key = f"ws:wake:{uuid.uuid4().hex}"
        self.wake_id = "0-0"
        self.waiters: dict[str, set[Waiter]] = {}
        self.sockets: dict[str, list[str]] = {}  # socket id -> the slot keys it holds
        self.changed = asyncio.Event()
        self.coalesce_s = 0.0  # set after a read that returned entries
        self._wakes: set[asyncio.Task] = set()
        self._take_slot = self.redis.register_script(_TAKE_SLOT_LUA)
        self.reader = asyncio.create_task(self._read_loop())
        self.refresher = asyncio.create_task(self._refresh_loop())

    # Waiting for a stream -------------------------------------------------------------------

    def wait(self, key: str, last: int) -> Waiter:
        """Register at once (so that the caller can always ``leave`` it) and wake the reader."""
        waiter = Waiter(key, last)
        self.waiters.setdefault(key, set()).add(waiter)
        self.changed.set()
        task = asyncio.create_task(self._wake())
        self._wakes.add(task)
        task.add_done_callback(self._wakes.discard)
        return waiter

    def leave(self, waiter: Waiter) -> None:
        group = self.waiters.get(waiter.key)
        if group is not None:
            group.discard(waiter)
            if not group:
                del self.waiters[waiter.key]

    async def _wake(self) -> None:
        try:
            pipe = self.redis.pipeline(transaction=False)
            pipe.xadd(self.wake_key, {"w": 1}, maxlen=16, approximate=True)
            pipe.expire(self.wake_key, 3600)
            await pipe.execute()
        except redis.exceptions.RedisError:
            pass  # the reader is retrying anyway, and reads every stream when it gets through

    async def _read_loop(self) -> None:
        delay = 0.1
        while True:
            try:
                await self._read_once()
                delay = 0.1
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # this loop serves every socket of the process: never let it die
                if not isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)):
                    log.exception("reading run streams failed")
                else:
                    log.warning("reading run streams failed (%s); retrying in %.1f s", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    async def _read_once(self) -> None:
        if not self.waiters:
            self.changed.clear()
            await self.changed.wait()
            return
        if self.coalesce_s and len(self.waiters) >= COALESCE_WAITERS:
            # Many sockets wait: let their next events gather for a moment, so that one read
            # (whose size grows with the sockets) takes several rather than one each.
            await asyncio.sleep(self.coalesce_s)
        keys, ids = [self.wake_key], [self.wake_id]
        start: dict[str, int] = {}
        for key, group in self.waiters.items():
            start[key] = last = min(w.last for w in group)
            keys.append(key)
            ids.append(f"0-{last}")
        # As xread() sends it, without building its dict and argument list a second time.
        result = await self.blocking.execute_command("XREAD", "BLOCK", BLOCK_MS, "COUNT", READ_COUNT,
                                                     "STREAMS", *keys, *ids)
        self.coalesce_s = COALESCE_S if result else 0.0
        for raw_key, entries in result or ():
            key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
            if key == self.wake_key:
                self.wake_id = entries[-1][0].decode()
                continue
            parsed = [(int(entry_id.split(b"-")[1]), fields[b"e"].decode()) for entry_id, fields in entries]
            for waiter in list(self.waiters.get(key, ())):
                # A waiter that joined behind where this read started is served by the next read,
                # which starts from it: fed from here, it would miss what lies in between.
                if waiter.last < start.get(key, waiter.last):
                    continue
                mine = [(seq, body) for seq, body in parsed if seq > waiter.last]
                if mine:
                    waiter.last = mine[-1][0]
                    waiter.queue.put_nowait(mine)

    # How many sockets each client holds -------------------------------------------------------

    async def take_slot(self, client: str, socket_id: str, pool: str = "client", limit: int | None = None) -> bool:
        """A slot among the client's WS_MAX_PER_CLIENT sockets (or ``limit`` of another ``pool``);
        False when all are taken."""
        return await self.take_slots(socket_id, [(client, limit or settings.WS_MAX_PER_CLIENT)], pool) is None

    async def take_slots(self, socket_id: str, counted: list[tuple[str, int]], pool: str = "client") -> tuple | None:
        """A slot for the socket among each of ``counted``'s (who, at most), or none: None when
        taken, else the (who, at most) whose slots were all taken."""
        keys = [f"ws:{pool}:{who}" for who, _ in counted]
        now = time.time()
        try:
            full = await self._take_slot(keys=keys, args=[now, now + SLOT_TTL_S, socket_id, SLOT_TTL_S,
                                                         *[limit for _, limit in counted]])
        except redis.exceptions.RedisError:
            return None  # Redis is away: the socket can only wait anyway; do not refuse it for that
        if int(full):
            return counted[int(full) - 1]
        self.sockets[socket_id] = keys
        return None

    async def free_slot(self, socket_id: str) -> None:
        keys = self.sockets.pop(socket_id, None)
        if keys:
            try:
                pipe = self.redis.pipeline(transaction=False)
                for key in keys:
                    pipe.zrem(key, socket_id)
                await pipe.execute()
            except redis.exceptions.RedisError:
                pass  # they expire

    async def _refresh_loop(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_EVERY_S)
            if not self.sockets:
                continue
            expires = time.time() + SLOT_TTL_S
            try:
                pipe = self.redis.pipeline(transaction=False)
                for socket_id, keys in list(self.sockets.items()):
                    for key in keys:
                        pipe.zadd(key, {socket_id: expires})
                        pipe.expire(key, SLOT_TTL_S)
                await pipe.execute()
            except redis.exceptions.RedisError as exc:
                log.warning("refreshing websocket slots failed: %s", exc)


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def get_hub() -> Hub:
    """The hub of the running event loop (daphne has one; tests may run several in turn)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = Hub()
    return hub
