"""A notebook session's state in Redis, shared by the web side (which creates a session, admits
and routes its cells, ends it) and the one executor node that holds its runner.

    session:<id>        a hash: state (idle, live, stopped), node (the worker holding its runner,
                        once its first cell started it), busy (the run id of the cell in flight),
                        cells_run, names (JSON: what its namespace holds), memory_bytes,
                        last_used, idle_s, stopped_reason, stop (the web side's request to end it);
                        on an exclusive chip its lease: chips, lease_until, chip_waiting
    session:<id>:log    a stream of the hash as it changes, for the session's websocket
    cells:node:<name>   a stream of the cells sent to the node that holds their sessions' runners
                        (``node_stream``): each entry a run's message (``submit.run_message``),
                        read by the node's consumer group (executor/cellstream.py)

Standard library and redis only: the web side imports it (executor/__init__.py's shared modules).
A cell is a run (``playground.Run`` with its session): its events are a run's, in the run's log.
"""

from __future__ import annotations

import json
import time

IDLE, LIVE, STOPPED = "idle", "live", "stopped"
STATES = (IDLE, LIVE, STOPPED)
# A stopped session's hash is kept this long (its page says why it stopped); a live one's is
# refreshed with every change and by its node's pass over its sessions.
TTL_S = 24 * 3600
LOG_MAXLEN = 64
# The queue of one node's sessions: a session's cells go to the node that holds its runner.
QUEUE_PREFIX = "sessions."


def key(session_id: str) -> str:
    return f"session:{session_id}"


def log_key(session_id: str) -> str:
    return f"session:{session_id}:log"


def node_queue(node: str) -> str:
    """The Celery queue of the sessions a node holds (``sessions.<worker name>``)."""
    return QUEUE_PREFIX + node


# The node's cells: one entry a cell, read at once by the node that holds the sessions, which
# deletes it as it takes it (executor/cellstream.py). What stays is what no node has read (a node
# away): at most this many, gone with the stream's TTL (an entry no node reads is ended as any
# queued run no one takes); far more than a node's sessions, so that none of theirs is dropped.
NODE_STREAM_MAXLEN = 1024
NODE_STREAM_GROUP = "node"


def node_stream(node: str) -> str:
    """The Redis stream of the cells sent to the node ``node`` (``cells:node:<worker name>``)."""
    return f"cells:node:{node}"


def send_cell(redis, node: str, message: dict) -> str:
    """Append a cell's run message to its node's stream (one round trip); the entry's id."""
    pipe = redis.pipeline(transaction=False)
    send_cell_in(pipe, node, message)
    return _text(pipe.execute()[0])


def send_cell_in(pipe, node: str, message: dict) -> None:
    """``send_cell``'s commands on a pipeline the caller sends (with what else it holds)."""
    pipe.xadd(node_stream(node), {"m": json.dumps(message)}, maxlen=NODE_STREAM_MAXLEN, approximate=True)
    pipe.expire(node_stream(node), TTL_S)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read(redis, session_id: str) -> dict | None:
    """The session's state as the API says it (None: Redis does not know it)."""
    raw = redis.hgetall(key(session_id))
    if not raw:
        return None
    return from_hash(raw)


def from_hash(raw: dict) -> dict:
    """The state from the session's hash as Redis answers it (bytes or text), or from an entry
    of its stream, which holds the hash as a change left it."""
    return decode({_text(k): _text(v) for k, v in raw.items()})


def decode(fields: dict[str, str]) -> dict:
    def number(name, kind=int):
        try:
            return kind(fields[name])
        except (KeyError, ValueError):
            return None

    try:
        names = json.loads(fields.get("names") or "{}")
    except ValueError:
        names = {}
    state = fields.get("state") if fields.get("state") in STATES else STOPPED
    return {
        "state": state,
        "node": fields.get("node") or None,
        "started": bool(fields.get("node")),
        "busy": fields.get("busy") or None,
        "cells_run": number("cells_run") or 0,
        "names": names if isinstance(names, dict) else {},
        "memory_bytes": number("memory_bytes"),
        "last_used": number("last_used", float),
        "idle_s": number("idle_s"),
        "stopped_reason": fields.get("stopped_reason") or None,
        "stop": bool(fields.get("stop")),
        # A session on an exclusive chip (executor/chips.py): the chips it leases, until when
        # if it stays idle (epoch seconds), and how many wait for a chip.
        "chips": fields.get("chips") or None,
        "lease_until": number("lease_until", float),
        "chip_waiting": number("chip_waiting"),
    }


def create(redis, session_id: str, *, idle_s: int) -> None:
    update(redis, session_id, state=IDLE, idle_s=idle_s, cells_run=0, last_used=time.time())


def forget(redis, session_id: str) -> None:
    """A session whose row was never made: nothing of it is kept."""
    redis.delete(key(session_id), log_key(session_id))


def update(redis, session_id: str, **fields) -> None:
    """Set fields (dicts as JSON) and tell the session's sockets its whole state: one round trip."""
    pipe = redis.pipeline()
    _set(pipe, session_id, fields)
    pipe.eval(_ANNOUNCE_LUA, 2, key(session_id), log_key(session_id))
    pipe.execute()


def cell_over(redis, session_id: str, run_id: str, **fields) -> bool:
    """A cell ended and its session lives on: its fields set (``update``'s) and the session given
    back for the next cell (``give_back``'s), its sockets told the state once: one round trip.
    A session stopped meanwhile (ended from another tab, say) stays stopped, and one Redis no
    longer knows is not made again. Whether ``run_id`` was the cell in flight."""
    mapping, drop = _encoded(fields)
    pairs = [str(item) for pair in mapping.items() for item in pair]
    return bool(redis.eval(_CELL_OVER_LUA, 2, key(session_id), log_key(session_id), run_id, len(mapping),
                           *pairs, *drop))


def _encoded(fields: dict) -> tuple[dict, list[str]]:
    """A change of fields as the hash stores it: what to set (dicts and lists as JSON), and the
    fields a None removes."""
    mapping = {k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in fields.items() if v is not None}
    return mapping, [k for k, v in fields.items() if v is None]


def _set(pipe, session_id: str, fields: dict) -> None:
    mapping, drop = _encoded(fields)
    if mapping:
        pipe.hset(key(session_id), mapping=mapping)
    if drop:
        pipe.hdel(key(session_id), *drop)
    pipe.expire(key(session_id), TTL_S)


def announce(redis, session_id: str) -> None:
    """Tell the session's sockets its whole state."""
    redis.eval(_ANNOUNCE_LUA, 2, key(session_id), log_key(session_id))


# A change is told on the session's stream (log_key), which its sockets follow: an entry holding
# the session's hash as it is after the change (its fields, as ``read`` decodes them), appended
# by the same script as the change, so that telling costs no round trip of its own. KEYS[1] the
# session, KEYS[2] its stream.
_ANNOUNCE = f"""
local function announce()
  local raw = redis.call('HGETALL', KEYS[1])
  if #raw > 0 then
    redis.call('XADD', KEYS[2], 'MAXLEN', '~', {LOG_MAXLEN}, '*', unpack(raw))
    redis.call('EXPIRE', KEYS[2], {TTL_S})
  end
end
"""

_ANNOUNCE_LUA = _ANNOUNCE + "announce()\nreturn 1\n"

# Take the session for one cell: only when it is not stopped and no other cell is in flight.
_TAKE_LUA = _ANNOUNCE + """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 'missing' end
if state == 'stopped' or redis.call('HGET', KEYS[1], 'stop') then return 'stopped' end
local busy = redis.call('HGET', KEYS[1], 'busy')
if busy and busy ~= ARGV[1] then return 'busy:' .. busy .. ':' .. (redis.call('HGET', KEYS[1], 'busy_at') or '0') end
redis.call('HSET', KEYS[1], 'busy', ARGV[1], 'busy_at', ARGV[2], 'state', 'live')
announce()
return 'ok'
"""

_GIVE_BACK = """
local function give_back()
  if redis.call('HGET', KEYS[1], 'busy') == ARGV[1] then
    redis.call('HDEL', KEYS[1], 'busy', 'busy_at')
    if redis.call('HGET', KEYS[1], 'state') == 'live' then redis.call('HSET', KEYS[1], 'state', 'idle') end
    return 1
  end
  return 0
end
"""

_GIVE_BACK_LUA = _ANNOUNCE + _GIVE_BACK + """
local given = give_back()
if given == 1 then announce() end
return given
"""

# ARGV: the cell's run id, how many fields to set, those fields' names and values, the names to drop.
_CELL_OVER_LUA = _ANNOUNCE + _GIVE_BACK + f"""
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 0 end
local i = 3
for _ = 1, tonumber(ARGV[2]) do
  if not (state == 'stopped' and ARGV[i] == 'state') then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
  i = i + 2
end
while i <= #ARGV do
  redis.call('HDEL', KEYS[1], ARGV[i])
  i = i + 1
end
redis.call('EXPIRE', KEYS[1], {TTL_S})
local given = give_back()
announce()
return given
"""

# The session's hash, and when its node (if it has one) last beat in KEYS[2] (the zset of its
# device's executors, executor/registry.py): its state and whether its node is online, at once.
_READ_LIVE_LUA = """
local raw = redis.call('HGETALL', KEYS[1])
local node = redis.call('HGET', KEYS[1], 'node')
local seen = false
if node and node ~= '' then seen = redis.call('ZSCORE', KEYS[2], node) end
return {raw, seen}
"""


def take(redis, session_id: str, run_id: str) -> str:
    """"ok", "missing", "stopped" or "busy:<run id>:<since>" (the cell in flight, taken at that
    time.time())."""
    return _text(redis.eval(_TAKE_LUA, 2, key(session_id), log_key(session_id), run_id, f"{time.time():.3f}"))


# Take the session for a cell only where nothing needs a second look: it is idle or live, not
# asked to stop, no cell is in flight, and its node (if it has one yet) beat since ARGV[3]; then
# the hash as it was. Otherwise nothing is changed (false). KEYS[3]: its kind's heartbeats.
_TAKE_LIVE_LUA = _ANNOUNCE + """
local raw = redis.call('HGETALL', KEYS[1])
if #raw == 0 then return false end
local state = redis.call('HGET', KEYS[1], 'state')
if (state ~= 'idle' and state ~= 'live') or redis.call('HGET', KEYS[1], 'stop')
    or redis.call('HGET', KEYS[1], 'busy') then
  return false
end
local node = redis.call('HGET', KEYS[1], 'node')
if node and node ~= '' then
  local seen = redis.call('ZSCORE', KEYS[3], node)
  if not seen or tonumber(seen) < tonumber(ARGV[3]) then return false end
end
redis.call('HSET', KEYS[1], 'busy', ARGV[1], 'busy_at', ARGV[2], 'state', 'live')
announce()
return raw
"""


def take_live(redis, session_id: str, run_id: str, executors_key: str, window_s: float) -> dict | None:
    """``read_live`` and ``take`` in one round trip, for a session that is plainly free: its
    state as it was (``read``'s) once taken for ``run_id``; None, with nothing changed, when
    it is stopped, asked to stop, forgotten, busy, or its node did not beat within ``window_s``
    in ``executors_key`` (each of which the caller says as it does step by step)."""
    now = time.time()
    raw = redis.eval(_TAKE_LIVE_LUA, 3, key(session_id), log_key(session_id), executors_key, run_id,
                     f"{now:.3f}", f"{now - window_s:.6f}")
    if not raw:
        return None
    return decode({_text(raw[i]): _text(raw[i + 1]) for i in range(0, len(raw), 2)})


def give_back(redis, session_id: str, run_id: str) -> bool:
    """The cell ``run_id`` is over (or never ran): the session takes the next."""
    return bool(redis.eval(_GIVE_BACK_LUA, 2, key(session_id), log_key(session_id), run_id))


def read_live(redis, session_id: str, executors_key: str, window_s: float) -> tuple[dict | None, bool]:
    """The session's state (``read``'s) and whether its node beat within ``window_s`` in
    ``executors_key`` (registry.executors_key of its device), in one round trip."""
    raw, seen = redis.eval(_READ_LIVE_LUA, 2, key(session_id), executors_key)
    if not raw:
        return None, False
    fields = {_text(raw[i]): _text(raw[i + 1]) for i in range(0, len(raw), 2)}
    beats = seen is not None and seen is not False and float(_text(seen)) >= time.time() - window_s
    return decode(fields), beats


def stop(redis, session_id: str, reason: str, *, request: bool = False) -> None:
    """Mark it stopped with why (the first reason stays). ``request``: the web side asks the node
    that holds its runner to end it (the node looks every few seconds)."""
    current = read(redis, session_id)
    if current is not None and current["state"] == STOPPED:
        return
    update(redis, session_id, state=STOPPED, stopped_reason=reason, stop=1 if request else None, busy=None)
