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
import re
import time
from typing import Any

from .runner import protocol
from .runner.protocol import EVENT_TYPES, TERMINAL_STATUSES

# Types, in the order a run produces them; declared with their fields in runner/protocol.py.
QUEUED = "queued"
WAITING = "waiting"
STARTED = "started"
STDOUT = "stdout"
STDERR = "stderr"
COMPILING = "compiling"
COMPILED = "compiled"
TIMING = "timing"
DISPLAY = "display"
ERROR = "error"
SHAPES = "shapes"
PROFILE = "profile"
FINISHED = "finished"

assert EVENT_TYPES == (QUEUED, WAITING, STARTED, STDOUT, STDERR, COMPILING, COMPILED, TIMING, DISPLAY, ERROR, SHAPES,
                       PROFILE, FINISHED)

# Terminal statuses of a run. Every run ends in exactly one of them.
SUCCEEDED = "succeeded"
FAILED = "failed"
TIMED_OUT = "timed_out"
CANCELLED = "cancelled"
LIMIT_EXCEEDED = "limit_exceeded"
LOST = "lost"
assert TERMINAL_STATUSES == (SUCCEEDED, FAILED, TIMED_OUT, CANCELLED, LIMIT_EXCEEDED, LOST)

# How a run ended, in words: the ``finished`` event's message, made from one of these templates
# (``protocol.Templated``) by whoever ends the run, so that a page can say it in its reader's
# language (frontend/src/explanations.ts). An arg is a number or a short text as it reads ("10",
# "512 MiB", "SIGKILL"); ``reason`` is another of these messages. The English is the API's.
ENDED = {
    # The supervisor's (executor/supervisor.py), and a session's cell's (executor/sessions.py).
    "wall_clock": "wall-clock limit of {seconds} s exceeded",
    "cancelled": "cancelled",
    "output": "output limit of {size} exceeded",
    "events": "event limit of {events} events exceeded",
    "event_bytes": "event limit of {size} exceeded",
    "junk_lines": "the run wrote over {lines} lines on its event pipe that are not events",
    "answer_size": "an answer to the checks was larger than {size}",
    "while_checking": "the code sent over {events} events or {size} while the checks called it",
    "checks_call": "a call of the checks into the code did not return in time",
    "killed_by": "the snippet's process was killed by {signal}",
    "exit_code": "the snippet's process exited with code {code}",
    # The sandbox's own limits (executor/sandbox/bwrap.py).
    "memory": "memory limit of {size} exceeded",
    "processes": "process limit of {pids} exceeded",
    "cpu_time": "CPU time limit of {seconds} s exceeded",
    # A notebook's session (executor/sessions.py).
    "session_ended": "the session was ended",
    "cell_cpu": "CPU limit of {seconds} s exceeded",
    "interrupted": "interrupted (KeyboardInterrupt); the session keeps its state",
    "cell_interrupted": "{reason}: the cell was interrupted (KeyboardInterrupt); the session keeps its state",
    "cell_did_not_stop": "{reason}; the cell did not stop when interrupted, so its session was ended (its state "
                         "is lost: restore it to run its cells again)",
    "session_ended_by": "{reason}; its session was ended (its state is lost: restore it to run its cells again)",
    "session_ended_with": "{reason}; the session ended with it (its state is lost: restore it to run its cells "
                          "again)",
    "cell_ended_process": "the cell ended its session's process",
    # The executor's faults (executor/execution.py), and the web side's endings of a run no
    # executor ends (playground/actions/runs.py).
    "no_runner": "the executor could not start a runner: {error}",
    "executor_failed": "the executor failed: {error}",
    "cancelled_before_start": "cancelled before it started",
    "stopped_responding": "the executor running this snippet stopped responding; it was not re-run",
    "not_taken": "no executor took this run within {seconds} s (its queue may have been lost); it was not run",
}


# What the sandbox says when one of its limits ended a run (executor/sandbox/bwrap.py, which knows
# no events and writes its English itself).
SANDBOX_ENDINGS = ("memory", "processes", "cpu_time")


def ended(why: str, **args: Any) -> protocol.Templated:
    """The finished event's message ``ENDED[why]``, filled: ``ended("memory", size="512 MiB")``."""
    return protocol.Templated(ENDED[why], **args)


def recognised(message: str, among: tuple[str, ...]) -> str:
    """A message written in English elsewhere, made from the first of ``ENDED[among]`` it reads
    as (its args as the text they read); else the message as it is."""
    for why in among:
        parts = re.split(r"\{(\w+)\}", ENDED[why])
        pattern = "".join(f"(?P<{part}>.+?)" if i % 2 else re.escape(part) for i, part in enumerate(parts))
        if m := re.fullmatch(pattern, message, re.S):
            return ended(why, **m.groupdict())
    return message


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


def profile_key(run_id: str) -> str:
    """A profiled run's trace (gzipped), from the executor until the recorder has stored it."""
    return f"run:{run_id}:profile"


def profile_state_key(run_id: str) -> str:
    """A profiled run's trace being built after its end (executor/profiles.py): "building", then
    JSON {"ready": true, "info": what it holds} or {"error", "error_parts"?} when it could not be."""
    return f"run:{run_id}:profile-state"


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

# _APPEND_LUA behind a guard: KEYS[4] (a claim) holds ARGV[7], and the hash KEYS[5] (a session's)
# is neither stopped nor asked to stop.
_APPEND_IF_LUA = """
if redis.call('GET', KEYS[4]) ~= ARGV[7] or redis.call('HGET', KEYS[5], 'state') == 'stopped'
    or redis.call('HGET', KEYS[5], 'stop') then
  return 0
end
""" + _APPEND_LUA

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
        return self.appended(self.append_in(None, run_id, event, after, expect))

    def append_in(self, pipe, run_id: str, event: dict[str, Any], after: int = 0, expect: int = 0):
        """``append``'s script, on ``pipe`` (a pipeline: its answer is then ``appended``'s to
        read, one round trip with what else the pipeline sends) or, with None, at once."""
        keys = [log_key(run_id), seq_key(run_id), done_key(run_id)]
        args = [encode(event), "1" if event["type"] == FINISHED else "0", EVENT_LOG_TTL_S, self.max_events, after,
                expect]
        if pipe is None:
            return self._append(keys=keys, args=args)
        # On a pipeline as EVAL with the script's text: redis-py checks a registered script's
        # SHA (SCRIPT EXISTS) before each pipeline that holds one, a round trip more than this.
        return pipe.eval(_APPEND_LUA, len(keys), *keys, *args)

    def append_if_in(self, pipe, run_id: str, event: dict[str, Any], *, claim_key: str, owner: str,
                     session_key: str, after: int, expect: int):
        """``append_in``, only where ``claim_key`` holds ``owner`` and the session's hash
        (``session_key``) is neither stopped nor asked to stop: a cell's ``started``, in the
        transaction that claims it, for a cell that will run (otherwise its answer is 0)."""
        keys = [log_key(run_id), seq_key(run_id), done_key(run_id), claim_key, session_key]
        return pipe.eval(_APPEND_IF_LUA, len(keys), *keys, encode(event), "0", EVENT_LOG_TTL_S, self.max_events,
                         after, expect, owner)

    @staticmethod
    def appended(res) -> dict[str, Any] | None:
        """What ``append`` returns, from the script's answer."""
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
