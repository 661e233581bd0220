"""The executor worker's settings: the only place on the executor side that reads the
environment. An executor node holds the broker URL and its own limits, nothing else: no database
settings, no Django.

Every value has a default that works on a laptop, and a bad value stops the worker with a message
that says how to fix it.
"""

from __future__ import annotations

import os

from .sandbox import Limits


class ImproperlyConfigured(RuntimeError):
    pass


def _str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _int(name: str, default: int, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def _bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={raw!r}: use 1/0, true/false, yes/no or on/off")


def _choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name) or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r}: choose one of {', '.join(choices)}")
    return value


KINDS = ("cpu", "gpu", "tpu")

REDIS_URL = _str("REDIS_URL", "redis://127.0.0.1:6379/0")
KIND = _choice("EXECUTOR_KIND", "cpu", KINDS)
QUEUE = f"exec.{KIND}"
RECORD_QUEUE = _str("RECORD_QUEUE", "record")

# Sandbox backend: "bwrap" (production) or "none" (development only, and only when
# EXECUTOR_ALLOW_UNSANDBOXED says so explicitly).
SANDBOX = _str("EXECUTOR_SANDBOX", "bwrap")
ALLOW_UNSANDBOXED = _bool("EXECUTOR_ALLOW_UNSANDBOXED", False)
if SANDBOX == "none" and not ALLOW_UNSANDBOXED:
    raise ImproperlyConfigured(
        "EXECUTOR_SANDBOX=none runs untrusted code without isolation; set "
        "EXECUTOR_ALLOW_UNSANDBOXED=1 to allow it on a development machine, or install bubblewrap"
    )

# Task threads: runs at once on this node. A GPU node runs one snippet per GPU by default.
CONCURRENCY = _int("EXECUTOR_CONCURRENCY", 2 if KIND == "cpu" else 1, minimum=1)
# Warm runners kept ready; each costs about 200 MiB. 0 disables the pool (every run starts cold).
POOL_SIZE = _int("EXECUTOR_POOL_SIZE", 2, minimum=0)
# Simulated CPU devices so pmap/shard_map examples run on a CPU node.
CPU_DEVICES = _int("EXECUTOR_CPU_DEVICES", 8 if KIND == "cpu" else 0)
# Device nodes bound into the sandbox on accelerator nodes, e.g. /dev/nvidia0,/dev/nvidiactl.
DEVICES = tuple(p for p in _str("EXECUTOR_DEVICES", "").split(",") if p)

# The most a run may use on this node; a run's own request can only lower these.
LIMITS = Limits(
    wall_s=float(_int("RUN_WALL_S", 30, minimum=1)),
    cpu_s=_int("RUN_CPU_S", 30, minimum=1),
    memory_bytes=_int("RUN_MEMORY_MB", 2048, minimum=256) * 1024**2,
    output_bytes=_int("RUN_OUTPUT_KB", 1024, minimum=1) * 1024,
    tmp_bytes=_int("RUN_TMP_MB", 64, minimum=1) * 1024**2,
    # An idle runner already holds ~20 threads, plus ~2 per simulated CPU device.
    pids=_int("RUN_PIDS", 128, minimum=64 + 4 * CPU_DEVICES),
)

HEARTBEAT_S = 5
