"""Which executors are online: each worker writes a heartbeat to Redis; the web side reads it.

    executors:<kind>             sorted set, member = worker name, score = last heartbeat (unix time)
    executors:<kind>:<specific>  the same for one specific device kind ("executors:gpu:h200")
    executor:<name>              JSON with what the worker runs (platform, devices, memory, JAX
                                 and jaxlib versions, slots, busy), expiring a few beats after the last

A device string names a kind (``cpu``, ``gpu``, ``tpu``: queue ``exec.gpu``) or a specific device
kind of it (``gpu:h200``: queue ``exec.gpu.h200``). A worker consumes its kind's queue and its
specific kind's, for the one runtime it serves: a route is a device string and a runtime
(``gpu:h200@jax-0.4.38``: queue ``exec.gpu.h200@jax-0.4.38``), and the first runtime's route is
the bare device string, so that queue names, like runtime ids, never change meaning
(``route``). Heartbeats say which runtime a worker serves; a worker that says none serves the
first. A worker is online while its last heartbeat is younger than the online window
(``ONLINE_WINDOW_S``, or the ``window`` a caller passes: the web side's
``EXECUTOR_ONLINE_WINDOW_S``). A worker that dies simply stops beating; nothing has to clean up
after it.
"""

from __future__ import annotations

import json
import re
import time

from . import runtimes

ONLINE_WINDOW_S = 15.0

# The device kinds, the web side's (RUN_DEVICE_KINDS) and the executor's (EXECUTOR_KIND).
KINDS = ("cpu", "gpu", "tpu")

DEVICE_PATTERN = re.compile(r"^(cpu|gpu|tpu)(:[a-z0-9][a-z0-9._-]{0,31})?$")
# Vendor words that say nothing a device string needs: "NVIDIA H200" is gpu:h200.
_VENDOR_WORDS = re.compile(r"^(nvidia|amd|google|tesla)\s+|^tpu\s+", re.IGNORECASE)


def parse_device(device: str) -> tuple[str, str | None]:
    """``"gpu:h200"`` → ``("gpu", "h200")``; ``"gpu"`` → ``("gpu", None)``; a route's runtime
    (``"gpu:h200@jax-0.4.38"``) is left out."""
    kind, _, specific = device.partition("@")[0].partition(":")
    return kind, specific or None


def route(device: str, runtime: str | None) -> str:
    """Where a run of ``runtime`` on ``device`` goes: ``"cpu@jax-0.4.38"``, or ``"cpu"`` for the
    first runtime (and for None)."""
    return device if not runtime or runtime == runtimes.FIRST else f"{device}@{runtime}"


def parse_route(value: str) -> tuple[str, str]:
    """``"gpu:h200@jax-0.4.38"`` → ``("gpu:h200", "jax-0.4.38")``; a bare device: the first runtime."""
    device, _, runtime = value.partition("@")
    return device, runtime or runtimes.FIRST


def queue_name(device: str) -> str:
    """The queue of a device string or a route."""
    kind, specific = parse_device(device)
    _, _, runtime = device.partition("@")
    return (f"exec.{kind}.{specific}" if specific else f"exec.{kind}") + (f"@{runtime}" if runtime else "")


# Kombu's Redis transport keeps a queue as one list per priority step, the lowest step first:
# "exec.cpu", then "exec.cpu\x06\x163" and so on (its default steps and separator, which every
# process here uses, Flower and celery inspect included). A worker takes from the lowest step
# that has a message. tests/unit/test_device_strings.py checks these against kombu's own.
PRIORITY_STEPS = (0, 3, 6, 9)
_PRIORITY_SEP = "\x06\x16"


def queue_lists(device: str) -> list[str]:
    """The Redis lists that hold a device's queue, in the order a worker takes from them."""
    return priority_lists(queue_name(device))


def priority_lists(queue: str) -> list[str]:
    """The Redis lists of a queue by its name (``exec.cpu``, ``sessions.<node>``), the first
    taken first."""
    return [queue if step == 0 else f"{queue}{_PRIORITY_SEP}{step}" for step in PRIORITY_STEPS]


def queue_list(queue: str, priority: int = 0) -> str:
    """The list of a queue by its name that holds its messages of ``priority``: the highest step
    at or below it, as kombu picks it."""
    step = max((s for s in PRIORITY_STEPS if s <= max(priority, 0)), default=0)
    return priority_lists(queue)[PRIORITY_STEPS.index(step)]


def queue_depth(redis, device: str) -> int:
    """Runs waiting in a device's queue, at every priority."""
    pipe = redis.pipeline(transaction=False)
    for key in queue_lists(device):
        pipe.llen(key)
    return sum(pipe.execute())


def specific_name(device_kind: str | None) -> str:
    """A device kind as jax names it, as the specific part of a device string: ``NVIDIA H200`` →
    ``h200``, ``TPU v5 lite`` → ``v5-lite``, ``cpu`` → ``cpu``."""
    name = _VENDOR_WORDS.sub("", (device_kind or "").strip()).lower()
    name = re.sub(r"[^a-z0-9._-]+", "-", name).strip("-._")[:32].rstrip("-._")
    return name or "unknown"


def beat(redis, name: str, kind: str, info: dict, specific: str | None = None,
         window: float = ONLINE_WINDOW_S) -> None:
    now = time.time()
    device = f"{kind}:{specific}" if specific else kind
    pipe = redis.pipeline()
    pipe.zadd(f"executors:{kind}", {name: now})
    if specific:
        pipe.zadd(f"executors:{device}", {name: now})
    pipe.set(f"executor:{name}",
             json.dumps({**info, "name": name, "kind": kind, "device": device, "seen": now}),
             ex=max(60, int(window * 4)))
    pipe.zremrangebyscore(f"executors:{kind}", 0, now - max(window, ONLINE_WINDOW_S) * 20)
    if specific:
        pipe.zremrangebyscore(f"executors:{device}", 0, now - max(window, ONLINE_WINDOW_S) * 20)
    pipe.execute()


def leave(redis, name: str, kind: str, specific: str | None = None) -> None:
    pipe = redis.pipeline()
    pipe.zrem(f"executors:{kind}", name)
    if specific:
        pipe.zrem(f"executors:{kind}:{specific}", name)
    pipe.delete(f"executor:{name}")
    pipe.execute()


def executors_key(device: str) -> str:
    """The zset of a kind's (or specific kind's) workers, each scored by its last beat."""
    return f"executors:{device.partition('@')[0]}"


# The workers of a kind seen since ARGV[1], and what each said last (its executor:<name> key).
_ONLINE_LUA = """
local names = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], '+inf')
if #names == 0 then return {} end
for i = 1, #names do names[i] = ARGV[2] .. names[i] end
return redis.call('MGET', unpack(names))
"""


def online_workers(redis, device: str, window: float | None = None) -> list[dict]:
    """What each online worker of a kind (``gpu``) or specific kind (``gpu:h200``) said last;
    of a route (``cpu@jax-0.4.38``), only those serving its runtime."""
    window = ONLINE_WINDOW_S if window is None else window
    device, _, runtime = device.partition("@")
    # The names and what each said, in one round trip (every run's start asks).
    infos = redis.eval(_ONLINE_LUA, 1, executors_key(device), f"{time.time() - window:.6f}", "executor:")
    workers = [json.loads(i) for i in infos if i]
    if runtime:
        workers = [w for w in workers if w.get("runtime", runtimes.FIRST) == runtime]
    return workers


# How long a worker's report that its runners fail to start stays said (it says it again while
# they keep failing, and takes it back when one starts).
FAULT_TTL_S = 300


def report_fault(redis, name: str, kind: str, code: str, reason: str) -> None:
    """Say that this worker's runners do not start, and why (``code``: sandbox/devices.py's
    device_busy, no_metadata, no_device_node, or timeout/exited): for /readyz, /metrics and an
    operator, while its heartbeat may be silent (a node is online only once a runner is ready)."""
    now = time.time()
    pipe = redis.pipeline()
    pipe.zadd(f"executor-faults:{kind}", {name: now})
    pipe.set(f"executor-fault:{name}", json.dumps({"name": name, "kind": kind, "code": code,
                                                    "reason": reason[:300], "seen": now}), ex=FAULT_TTL_S)
    pipe.zremrangebyscore(f"executor-faults:{kind}", 0, now - FAULT_TTL_S)
    pipe.execute()


def clear_fault(redis, name: str, kind: str) -> None:
    pipe = redis.pipeline()
    pipe.zrem(f"executor-faults:{kind}", name)
    pipe.delete(f"executor-fault:{name}")
    pipe.execute()


def faults(redis, kind: str) -> list[dict]:
    """The workers of a kind whose runners failed to start lately, each with its cause."""
    names = redis.zrangebyscore(f"executor-faults:{kind}", time.time() - FAULT_TTL_S, "+inf")
    if not names:
        return []
    found = redis.mget([f"executor-fault:{n.decode() if isinstance(n, bytes) else n}" for n in names])
    return [json.loads(f) for f in found if f]


def runtimes_online(workers: list[dict]) -> dict[str, list[str]]:
    """{runtime id: the kinds that serve it}, from online workers' beats."""
    found: dict[str, set[str]] = {}
    for w in workers:
        found.setdefault(w.get("runtime", runtimes.FIRST), set()).add(str(w.get("kind")))
    return {rid: sorted(kinds) for rid, kinds in found.items()}


def _totals(workers: list[dict]) -> dict:
    slots = sum(w.get("slots", 0) for w in workers)
    busy = sum(w.get("busy", 0) for w in workers)
    return {"workers": len(workers), "slots": slots, "busy": busy, "free_runners": max(0, slots - busy)}


def _chips(workers: list[dict]) -> dict:
    with_chips = [w for w in workers if w.get("chips")]
    if not with_chips:
        return {}
    turnarounds = [w["chip_turnaround_s"] for w in with_chips if isinstance(w.get("chip_turnaround_s"), (int, float))]
    return {"chips": sum(w["chips"] for w in with_chips),
            "chips_ready": sum(w.get("chips_ready", 0) for w in with_chips),
            "chip_waiting": sum(w.get("chip_waiting", 0) for w in with_chips),
            "chip_turnaround_s": max(turnarounds) if turnarounds else None,
            "chip_open_ms": max((w["chip_open_ms"] for w in with_chips if w.get("chip_open_ms")), default=None),
            "chip_start_ms": max((w["chip_start_ms"] for w in with_chips if w.get("chip_start_ms")), default=None)}


def describe_kind(redis, kind: str, window: float | None = None) -> dict:
    """What ``GET /api/devices`` says about one device kind, with its specific kinds online."""
    workers = online_workers(redis, kind, window)
    served = {w.get("runtime", runtimes.FIRST) for w in workers} | {runtimes.FIRST}
    # The versions said are those of the first runtime's workers where there are any.
    first = next((w for w in workers if w.get("runtime", runtimes.FIRST) == runtimes.FIRST), None) \
        or (workers[0] if workers else {})
    specifics: dict[str, list[dict]] = {}
    for w in workers:
        device = w.get("device") or kind
        if device != kind:
            specifics.setdefault(device, []).append(w)
    return {
        "kind": kind,
        "online": bool(workers),
        **_totals(workers),
        "warm_runners": sum(w.get("warm", 0) for w in workers),
        # Exclusive chips (executor/chips.py): how many, how many wait for one on the nodes, and
        # the turnaround of a chip between two holders (the longest of the nodes' medians).
        **_chips(workers),
        "pool_size": sum(w.get("pool_size", 0) for w in workers),
        "platform": first.get("platform"),
        "device_kind": first.get("device_kind"),
        "device_count": first.get("device_count"),
        "memory_bytes": first.get("memory_bytes"),
        "jax_version": first.get("jax_version"),
        "jaxlib_version": first.get("jaxlib_version"),
        "libraries": first.get("libraries") or {},
        "sandboxed": all(w.get("sandboxed", False) for w in workers) if workers else None,
        # Every runtime's queue of the kind (exec.cpu, exec.cpu@jax-0.4.38, ...) that a worker serves.
        "queue_depth": sum(queue_depth(redis, route(kind, rid)) for rid in served),
        "runtimes": sorted({w.get("runtime", runtimes.FIRST) for w in workers}),
        "specific": [
            {
                "device": device,
                **_totals(group),
                "platform": group[0].get("platform"),
                "device_kind": group[0].get("device_kind"),
                "device_count": group[0].get("device_count"),
                "memory_bytes": group[0].get("memory_bytes"),
                "jax_version": group[0].get("jax_version"),
                "jaxlib_version": group[0].get("jaxlib_version"),
                "queue_depth": queue_depth(redis, device),
                **_chips(group),
            }
            for device, group in sorted(specifics.items())
        ],
    }
