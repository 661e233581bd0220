"""A run's fair share in Redis, given back: the one piece of playground/quotas.py both sides need.

The web side admits a run (playground/quotas.py: a slot in ``quota:active:<client>``, the client
remembered under ``quota:client:<run>``; a run of someone signed out takes one in their room's
too, ``quota:active:<room>``, the room remembered under ``quota:room:<run>``). The share is given
back when the run ends: by the executor as soon as it has appended the run's ``finished`` (so a
person whose runs all ended is never refused for them while the recorder catches up), and by the
recorder once it stores the end, as the backstop for an executor that died. ``GETDEL`` of both in
one transaction makes the two one release: whichever comes first gives the slots back and counts
the run's seconds; the other finds nothing.
"""

from __future__ import annotations

import time


def active_key(client: str) -> str:
    return f"quota:active:{client}"


def client_key(run_id: str) -> str:
    return f"quota:client:{run_id}"


def room_key(run_id: str) -> str:
    return f"quota:room:{run_id}"


def budget_key(client: str, kind: str, window: int, now: float) -> str:
    return f"quota:seconds:{client}:{kind}:{window}:{int(now // window)}"


BUDGET_WINDOWS = (3600, 86400)


def release(redis, run_id: str, *, wall_ms: float | None = None, kind: str | None = None) -> str | None:
    """The run ended: its slots are free and its seconds are counted, once. Whose run it was
    (the person key it was admitted for) if this call did, else None."""
    taking = redis.pipeline()  # MULTI: one release takes both
    taking.getdel(client_key(run_id))
    taking.getdel(room_key(run_id))
    client, room = (o.decode() if isinstance(o, bytes) else o for o in taking.execute())
    owners = [o for o in (client, room) if o is not None]
    if not owners:
        return None
    pipe = redis.pipeline()
    now = time.time()
    for owner in owners:
        pipe.zrem(active_key(owner), run_id)
        if wall_ms and kind:
            for window in BUDGET_WINDOWS:
                key = budget_key(owner, kind, window, now)
                pipe.incrbyfloat(key, wall_ms / 1000)
                pipe.expire(key, window + 60)
    pipe.execute()
    return client
