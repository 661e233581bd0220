"""The run event schema, shared by the executor and the web side.

Every event a browser receives is a JSON object ``{"seq": n, "type": ..., ...}``. This module is
the only Python place that knows the types, their fields and how an event enters a run's log;
``frontend/src/events.ts`` is its TypeScript twin.

The per-run event log is a Redis stream whose entry ids are ``0-<seq>``, so ``seq`` *is* the
stream position: a client that asks for events after ``seq`` N reads the stream from ``0-N``
and then blocks on it for live ones, with no window between "replay" and "subscribe" in which
an event could be missed or seen twice.
"""

from __future__ import annotations

import json
import time
from typing import Any

# Types, in the order a run produces them. Extend, never rename: browsers and stored runs
# depend on these names.
QUEUED = "queued"
STARTED = "started"
STDOUT = "stdout"
STDERR = "stderr"
COMPILING = "compiling"
COMPILED = "compiled"
TIMING = "timing"
DISPLAY = "display"
ERROR = "error"
FINISHED = "finished"

EVENT_TYPES = (QUEUED, STARTED, STDOUT, STDERR, COMPILING, COMPILED, TIMING, DISPLAY, ERROR, FINISHED)

# What the runner inside the sandbox may report. It is untrusted (user code can write to its
# event pipe), so "finished" and "started" are never taken from it: the supervisor decides.
RUNNER_EVENT_TYPES = frozenset({COMPILING, COMPILED, TIMING, DISPLAY, ERROR})

# Terminal statuses of a run. Every run ends in exactly one of them.
SUCCEEDED = "succeeded"
FAILED = "failed"
TIMED_OUT = "timed_out"
CANCELLED = "cancelled"
LIMIT_EXCEEDED = "limit_exceeded"
LOST = "lost"
TERMINAL_STATUSES = (SUCCEEDED, FAILED, TIMED_OUT, CANCELLED, LIMIT_EXCEEDED, LOST)

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


def alive_key(run_id: str) -> str:
    """Refreshed by the executor while the run is in its hands; the watchdog marks a running
    run whose key has expired as lost."""
    return f"run:{run_id}:alive"


# Appends one event to a run's log and returns its seq, or 0 when the run already finished.
# Atomic: seq allocation, the append and the "only one finished" rule cannot interleave with
# another writer (the executor, a cancel, the watchdog).
_APPEND_LUA = """
if redis.call('EXISTS', KEYS[3]) == 1 then
  return 0
end
local seq = redis.call('INCR', KEYS[2])
local body = string.gsub(ARGV[1], '"seq": 0', '"seq": ' .. seq, 1)
redis.call('XADD', KEYS[1], '0-' .. seq, 'e', body)
if ARGV[2] == '1' then
  redis.call('SET', KEYS[3], seq, 'EX', ARGV[3])
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return {seq, body}
"""


def make_event(type_: str, **fields: Any) -> dict[str, Any]:
    if type_ not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type_!r}")
    return {"seq": 0, "type": type_, "ts": round(time.time(), 3), **fields}


def encode(event: dict[str, Any]) -> str:
    # "seq" first with a placeholder the Lua script replaces; NUL is replaced because
    # PostgreSQL's jsonb refuses \u0000.
    body = {"seq": 0, **{k: v for k, v in event.items() if k != "seq"}}
    return json.dumps(body, ensure_ascii=False).replace("\\u0000", "\u2400")


class EventLog:
    """Writes and reads run event logs in Redis. Used by the executor, the web side's cancel and
    the watchdog (writers) and the websocket consumer (reader)."""

    def __init__(self, redis_client):
        self.redis = redis_client
        self._append = redis_client.register_script(_APPEND_LUA)

    def append(self, run_id: str, event: dict[str, Any]) -> dict[str, Any] | None:
        """Append and return the event with its seq, or None if the run had already finished
        (the event is dropped: a run has exactly one ``finished``, always last)."""
        res = self._append(
            keys=[log_key(run_id), seq_key(run_id), done_key(run_id)],
            args=[encode(event), "1" if event["type"] == FINISHED else "0", EVENT_LOG_TTL_S],
        )
        if not res:
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
