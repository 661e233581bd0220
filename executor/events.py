"""The run event schema, shared by the executor and the web side.

Every event a browser receives is a JSON object ``{"seq": n, "type": ..., ...}``. The types and
their fields are declared in ``runner/protocol.py`` (which the sandboxed runner imports too, and
from which ``frontend/src/protocol.gen.ts`` is generated); this module knows how an event enters a
run's log and the Redis keys of a run.

The per-run event log is a Redis stream whose entry ids are ``0-<seq>``, so ``seq`` *is* the
stream position: a client that asks for events after ``seq`` N reads the stream from ``0-N``
and then blocks on it for live ones, with no window between "replay" and "subscribe" in which
an event could be missed or seen twice.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .runner import protocol
from .runner.protocol import EVENT_TYPES, TERMINAL_STATUSES

# Types, in the order a run produces them; declared with their fields in runner/protocol.py.
QUEUED = "queued"
STARTED = "started"
STDOUT = "stdout"
STDERR = "stderr"
COMPILING = "compiling"
COMPILED = "compiled"
TIMING = "timing"
DISPLAY = "display"
ERROR = "error"
SHAPES = "shapes"
FINISHED = "finished"

assert EVENT_TYPES == (QUEUED, STARTED, STDOUT, STDERR, COMPILING, COMPILED, TIMING, DISPLAY, ERROR, SHAPES,
                       FINISHED)

# Terminal statuses of a run. Every run ends in exactly one of them.
SUCCEEDED = "succeeded"
FAILED = "failed"
TIMED_OUT = "timed_out"
CANCELLED = "cancelled"
LIMIT_EXCEEDED = "limit_exceeded"
LOST = "lost"
assert TERMINAL_STATUSES == (SUCCEEDED, FAILED, TIMED_OUT, CANCELLED, LIMIT_EXCEEDED, LOST)

# Non-terminal statuses.
STATUS_QUEUED = "queued"
STATUS_RUNNING = "running"
STATUSES = (STATUS_QUEUED, STATUS_RUNNING) + TERMINAL_STATUSES

# Redis keys of one run. All expire EVENT_LOG_TTL_S after the last event.
EVENT_LOG_TTL_S = 24 * 3600


def log_key(run_id: str) -> str:
    return f"run:{run_id}:events"


def seq_key(run_id: str) -> str:
    return f"run:{run_id}:seq"


def done_key(run_id: str) -> str:
    return f"run:{run_id}:done"


def claim_key(run_id: str) -> str:
    """Set once, by whoever decides the run's fate first: the executor that starts it, or a
    cancel of a queued run. A compare-and-set (SET NX) on it settles that race."""
    return f"run:{run_id}:claim"


def cancel_key(run_id: str) -> str:
    return f"run:{run_id}:cancel"


# The executor refreshes a run's alive key every ALIVE_EVERY_S while it has the run; the watchdog
# marks a claimed run whose key has expired (a few missed beats) as lost.
ALIVE_TTL_S = 10
ALIVE_EVERY_S = 2.0


def suspect_key(run_id: str) -> str:
    """Set by the watchdog when it first finds a claimed run without a pulse."""
    return f"run:{run_id}:suspect"


def alive_key(run_id: str) -> str:
    """Refreshed by the executor while the run is in its hands; the watchdog marks a running
    run whose key has expired as lost."""
    return f"run:{run_id}:alive"


# Appends one event to a run's log and returns {seq, body}; 0 when the run already finished, -1
# when the log is full (ARGV[4] events; a "finished" always fits). Its seq is above ARGV[5], the
# last seq the writer knows of, so a Redis that restarted (and forgot the counter) does not hand
# out seqs the database already has. ARGV[6], when not 0, is the seq the writer expects its event
# to get: if the log already holds this very event there (an append whose reply was lost, now
# retried), that entry is the answer, and nothing is appended twice. Atomic: seq allocation, the
# append and the "only one finished" rule cannot interleave with another writer (the executor, a
# cancel, the watchdog).
_APPEND_LUA = """
local expect = tonumber(ARGV[6])
if expect > 0 then
  local found = redis.call('XRANGE', KEYS[1], '0-' .. expect, '0-' .. expect)
  if #found > 0 then
    local mine = string.gsub(ARGV[1], '"seq":0', '"seq":' .. expect, 1)
    if found[1][2][2] == mine then
      return {expect, mine}
    end
  end
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  return 0
end
local cur = tonumber(redis.call('GET', KEYS[2]) or '0')
local floor = tonumber(ARGV[5])
if cur < floor then
  cur = floor
end
local cap = tonumber(ARGV[4])
if ARGV[2] ~= '1' and cap > 0 and cur >= cap then
  return -1
end
local seq = cur + 1
redis.call('SET', KEYS[2], seq)
local body = string.gsub(ARGV[1], '"seq":0', '"seq":' .. seq, 1)
redis.call('XADD', KEYS[1], '0-' .. seq, 'e', body)
if ARGV[2] == '1' then
  redis.call('SET', KEYS[3], seq, 'EX', ARGV[3])
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return {seq, body}
"""

# The most events one run's log holds; the supervisor ends a run before (Limits.events), so this
# only stops a writer that does not.
LOG_MAX_EVENTS = 100_000


def make_event(type_: str, **fields: Any) -> dict[str, Any]:
    if type_ not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type_!r}")
    return {"seq": 0, "type": type_, "ts": round(time.time(), 3), **fields}


def finished_event(status: str, message: str = "", **fields: Any) -> dict[str, Any]:
    """The ``finished`` event, whoever ends the run (supervisor, executor, cancel, watchdog)."""
    return make_event(FINISHED, **protocol.finished_fields(status, message, **fields))


def encode(event: dict[str, Any]) -> str:
    """An event as stored and sent: plain, finite JSON (NUL shown as ␀, since PostgreSQL's jsonb
    refuses it; NaN as null), with "seq" first as a placeholder the Lua script fills in."""
    body = {"seq": 0, **{k: v for k, v in event.items() if k != "seq"}}
    return protocol.dumps(protocol.clean_json(body))


class EventLog:
    """Writes and reads run event logs in Redis. Used by the executor, the web side's cancel and
    the watchdog (writers) and the websocket consumer (reader)."""

    def __init__(self, redis_client, max_events: int = LOG_MAX_EVENTS):
        self.redis = redis_client
        self.max_events = max_events
        self._append = redis_client.register_script(_APPEND_LUA)

    def append(self, run_id: str, event: dict[str, Any], after: int = 0,
               expect: int = 0) -> dict[str, Any] | None:
        """Append and return the event with its seq, or None if the run had already finished
        (the event is dropped: a run has exactly one ``finished``, always last) or its log is
        full. ``after``: the last seq this writer knows the run has; ``expect``: the seq a retry
        of this same event would have had (see the script)."""
        res = self._append(
            keys=[log_key(run_id), seq_key(run_id), done_key(run_id)],
            args=[encode(event), "1" if event["type"] == FINISHED else "0", EVENT_LOG_TTL_S,
                  self.max_events, after, expect],
        )
        if not isinstance(res, list):
            return None
        body = res[1]
        return json.loads(body if isinstance(body, str) else body.decode())

    def is_finished(self, run_id: str) -> bool:
        return bool(self.redis.exists(done_key(run_id)))


def decode_entries(entries) -> list[dict[str, Any]]:
    """Stream entries (``[(id, {b'e': body})]``) to events."""
    out = []
    for _id, fields in entries:
        body = fields.get(b"e") or fields.get("e")
        out.append(json.loads(body if isinstance(body, str) else body.decode()))
    return out


def stream_id(seq: int) -> str:
    return f"0-{seq}"
