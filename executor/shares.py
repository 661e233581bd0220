"""A run's fair share in Redis, given back: the one piece of playground/quotas.py both sides need.

The web side admits a run (playground/quotas.py: a slot in ``quota:active:<client>``, the client
remembered under ``quota:client:<run>``; a run of someone signed out takes one in their room's
too, ``quota:active:<room>``, the room remembered under ``quota:room:<run>``). The share is given
back when the run ends: by the executor just before it appends the run's ``finished`` (so a
person who reads that end and starts the next run is never refused for it, nor for runs the
recorder has not stored yet), and by the recorder once it stores the end, as the backstop for an
executor that died. One script takes both keys and does the rest, so the two are one release:
whichever comes first gives the slots back and counts the run's seconds; the other finds nothing.

A run that ended before its runner did (a profiled run: its ``finished`` goes out at its code's
end, its profiler stops after) keeps its share until the runner has gone: ``hold_in`` with that
early end, and only the executor's ``release(..., held=True)`` at the runner's end gives it back
(billed the runner's whole time); the recorder's release meanwhile finds it held and does
nothing. A hold lapses after HOLD_S, should its node die.
"""

from __future__ import annotations

import time


ACTIVE_PREFIX = "quota:active:"
SECONDS_PREFIX = "quota:seconds:"


def active_key(client: str) -> str:
    return f"{ACTIVE_PREFIX}{client}"


def client_key(run_id: str) -> str:
    return f"quota:client:{run_id}"


def room_key(run_id: str) -> str:
    return f"quota:room:{run_id}"


def hold_key(run_id: str) -> str:
    return f"quota:held:{run_id}"


# How long a share is held for a run whose runner outlived its end, at most: its runner's tail
# (supervisor.PROFILE_STOP_S) with room to spare.
HOLD_S = 120


def hold_in(redis, run_id: str) -> None:
    """The run has ended but its runner has not: its share stays taken until ``release(...,
    held=True)``, whatever else releases it meanwhile."""
    redis.set(hold_key(run_id), "1", ex=HOLD_S)


def budget_key(client: str, kind: str, window: int, now: float) -> str:
    return f"{SECONDS_PREFIX}{client}:{kind}:{window}:{int(now // window)}"


BUDGET_WINDOWS = (3600, 86400)


def release(redis, run_id: str, *, wall_ms: float | None = None, kind: str | None = None,
            held: bool = False) -> str | None:
    """The run ended: its slots are free and its seconds are counted, once, in one script (a
    run's person key gone means its slots are free), unless its share is held (``hold_in``);
    ``held``: this is the holder's release, which lifts the hold. Whose run it was (the person
    key it was admitted for) if this call did, else None."""
    return released(release_in(redis, run_id, wall_ms=wall_ms, kind=kind, held=held))


def release_in(redis, run_id: str, *, wall_ms: float | None = None, kind: str | None = None, held: bool = False):
    """``release``'s script on ``redis``, a client (its answer) or a pipeline (its answer comes
    with the pipeline's, for ``released`` to read)."""
    seconds = f"{wall_ms / 1000:.6f}" if wall_ms and kind else ""
    return redis.eval(_RELEASE_LUA, 3, client_key(run_id), room_key(run_id), hold_key(run_id), run_id, seconds,
                      kind or "", f"{time.time():.6f}", "1" if held else "")


def released(answer) -> str | None:
    """Whose run ``release``'s script gave back, from its answer (None: it gave nothing back)."""
    if not answer:
        return None
    client = answer.decode() if isinstance(answer, bytes) else answer
    return client or None


# KEYS: the run's person key, room key and hold key; ARGV: the run id, its seconds ("" to count
# none), the device kind, the time, "1" for the holder's release. Whichever release comes first
# takes both keys and does the rest; the other finds nothing. A held share is released only by
# its holder. Returns the person key ("" when only a room was held), false when none.
_RELEASE_LUA = f"""
if ARGV[5] == '1' then
  redis.call('DEL', KEYS[3])
elseif redis.call('EXISTS', KEYS[3]) == 1 then
  return false
end
local client = redis.call('GET', KEYS[1])
local room = redis.call('GET', KEYS[2])
if not client and not room then return false end
redis.call('DEL', KEYS[1], KEYS[2])
local owners = {{}}
if client then table.insert(owners, client) end
if room then table.insert(owners, room) end
for _, owner in ipairs(owners) do
  redis.call('ZREM', '{ACTIVE_PREFIX}' .. owner, ARGV[1])
  if ARGV[2] ~= '' then
    for _, window in ipairs({{{", ".join(str(w) for w in BUDGET_WINDOWS)}}}) do
      local key = '{SECONDS_PREFIX}' .. owner .. ':' .. ARGV[3] .. ':' .. window
        .. ':' .. math.floor(tonumber(ARGV[4]) / window)
      redis.call('INCRBYFLOAT', key, ARGV[2])
      redis.call('EXPIRE', key, window + 60)
    end
  end
end
return client or ''
"""
