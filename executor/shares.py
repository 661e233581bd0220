"""A run's fair share in Redis, given back: the one piece of playground/quotas.py both sides need.

The web side admits a run (playground/quotas.py: a slot in ``quota:active:<client>``, the client
remembered under ``quota:client:<run>``). The share is given back when the run ends: by the
executor as soon as it has appended the run's ``finished`` (so a person whose runs all ended is
never refused for them while the recorder catches up), and by the recorder once it stores the
end, as the backstop for an executor that died. ``GETDEL`` makes the two one release: whichever
comes first gives the slot back and counts the run's seconds; the other finds nothing.
"""

from __future__ import annotations

import time


def active_key(client: str) -> str:
    return f"quota:active:{client}"


def client_key(run_id: str) -> str:
    return f"quota:client:{run_id}"


def budget_key(client: str, kind: str, window: int, now: float) -> str:
    return f"quota:seconds:{client}:{kind}:{window}:{int(now // window)}"


BUDGET_WINDOWS = (3600, 86400)


def release(redis, run_id: str, *, wall_ms: float | None = None, kind: str | None = None) -> str | None:
    """The run ended: its slot is free and its seconds are counted, once. Whose run it was (their
    client key) if this call did, else None."""
    client = redis.getdel(client_key(run_id))
    if client is None:
        return None
    client = client.decode() if isinstance(client, bytes) else str(client)
    pipe = redis.pipeline()
    pipe.zrem(active_key(client), run_id)
    if wall_ms and kind:
        now = time.time()
        for window in BUDGET_WINDOWS:
            key = budget_key(client, kind, window, now)
            pipe.incrbyfloat(key, wall_ms / 1000)
            pipe.expire(key, window + 60)
    pipe.execute()
    return client
