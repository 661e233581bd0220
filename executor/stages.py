"""Where a run's time goes: the moment each process reaches a stage of a run's path, for
``bench.stages``. Off unless RUN_STAGE_TIMES is set (web and executor settings): in production a
run pays one flag test per stage and nothing else.

    web        parsed · admitted · stored · queued           (playground/stages.py)
    executor   received · runner · handed · first_byte · relayed · ended
    recorder   recorded

Each stamp is one field of the hash ``stages:<run id>``: ``"<wall s> <process CPU s> <pid>"``
(time.time(), time.process_time()), so that a stage's wall clock is the difference of two stamps
on one machine and its CPU the difference of two stamps of the same process. Written with one
pipelined round trip; an error is ignored (a measurement must not fail a run)."""

from __future__ import annotations

import os
import time

STAGES_TTL_S = 3600
# The order of a run's path, which bench.stages prints.
ORDER = ("parsed", "admitted", "stored", "queued", "received", "runner", "handed", "first_byte", "relayed",
         "ended", "recorded")


def key(run_id: str) -> str:
    return f"stages:{run_id}"


def now() -> str:
    return f"{time.time():.6f} {time.process_time():.6f} {os.getpid()}"


def record(redis, run_id: str, stage: str, at: str | None = None) -> None:
    """Stamp ``stage`` of ``run_id`` (``at``: a stamp taken earlier with ``now()``)."""
    try:
        pipe = redis.pipeline(transaction=False)
        pipe.hset(key(run_id), stage, at or now())
        pipe.expire(key(run_id), STAGES_TTL_S)
        pipe.execute()
    except Exception:  # noqa: BLE001 - a measurement never fails a run
        pass


def read(redis, run_id: str) -> dict[str, tuple[float, float, int]]:
    """A run's stamps: {stage: (wall s, process CPU s, pid)}."""
    out = {}
    for stage, value in (redis.hgetall(key(run_id)) or {}).items():
        wall, cpu, pid = value.decode().split()
        out[stage.decode()] = (float(wall), float(cpu), int(pid))
    return out
