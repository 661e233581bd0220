"""Which executors are online: each worker writes a heartbeat to Redis; the web side reads it.

    executors:<kind>   sorted set, member = worker name, score = last heartbeat (unix time)
    executor:<name>    JSON with what the worker runs (platform, devices, JAX version, slots),
                       expiring a few heartbeats after the last one

A worker is online while its last heartbeat is younger than ONLINE_WINDOW_S. A worker that
dies simply stops beating; nothing has to clean up after it.
"""

from __future__ import annotations

import json
import time

ONLINE_WINDOW_S = 15.0


def queue_name(kind: str) -> str:
    return f"exec.{kind}"


def beat(redis, name: str, kind: str, info: dict) -> None:
    now = time.time()
    pipe = redis.pipeline()
    pipe.zadd(f"executors:{kind}", {name: now})
    pipe.set(f"executor:{name}", json.dumps({**info, "name": name, "kind": kind, "seen": now}),
             ex=int(ONLINE_WINDOW_S * 4))
    pipe.zremrangebyscore(f"executors:{kind}", 0, now - ONLINE_WINDOW_S * 20)
    pipe.execute()


def leave(redis, name: str, kind: str) -> None:
    redis.zrem(f"executors:{kind}", name)
    redis.delete(f"executor:{name}")


def online_workers(redis, kind: str) -> list[dict]:
    names = redis.zrangebyscore(f"executors:{kind}", time.time() - ONLINE_WINDOW_S, "+inf")
    if not names:
        return []
    infos = redis.mget([f"executor:{n.decode() if isinstance(n, bytes) else n}" for n in names])
    return [json.loads(i) for i in infos if i]


def describe_kind(redis, kind: str) -> dict:
    """What ``GET /api/devices`` says about one device kind."""
    workers = online_workers(redis, kind)
    first = workers[0] if workers else {}
    return {
        "kind": kind,
        "online": bool(workers),
        "workers": len(workers),
        "slots": sum(w.get("slots", 0) for w in workers),
        "busy": sum(w.get("busy", 0) for w in workers),
        "warm_runners": sum(w.get("warm", 0) for w in workers),
        "pool_size": sum(w.get("pool_size", 0) for w in workers),
        "platform": first.get("platform"),
        "device_kind": first.get("device_kind"),
        "device_count": first.get("device_count"),
        "jax_version": first.get("jax_version"),
        "libraries": first.get("libraries") or {},
        "sandboxed": all(w.get("sandboxed", False) for w in workers) if workers else None,
        "queue_depth": redis.llen(queue_name(kind)),
    }
