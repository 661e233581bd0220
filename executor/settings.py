"""The executor worker's settings: the only place on the executor side that reads the
environment. An executor node holds the broker URL and its own limits, nothing else: no database
settings, no Django.

Every value has a default that works on a laptop, and a bad value stops the worker with a message
that says how to fix it.
"""

from __future__ import annotations

from .envvars import ImproperlyConfigured, env_bool, env_choice, env_int, env_list, env_str
from .sandbox import Limits, cpu_seconds_for

KINDS = ("cpu", "gpu", "tpu")

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
KIND = env_choice("EXECUTOR_KIND", "cpu", KINDS)
QUEUE = f"exec.{KIND}"
RECORD_QUEUE = env_str("RECORD_QUEUE", "record")

# Sandbox backend: "fork" (production: runners forked from a pre-imported template), "bwrap"
# (the same walls, one fresh interpreter per run: for comparison) or "none" (development only,
# and only when EXECUTOR_ALLOW_UNSANDBOXED says so explicitly).
SANDBOX = env_str("EXECUTOR_SANDBOX", "fork")
ALLOW_UNSANDBOXED = env_bool("EXECUTOR_ALLOW_UNSANDBOXED", False)
if SANDBOX == "none" and not ALLOW_UNSANDBOXED:
    raise ImproperlyConfigured(
        "EXECUTOR_SANDBOX=none runs untrusted code without isolation; set "
        "EXECUTOR_ALLOW_UNSANDBOXED=1 to allow it on a development machine, or install bubblewrap"
    )

# Task threads: runs at once on this node. A GPU node runs one snippet per GPU by default.
CONCURRENCY = env_int("EXECUTOR_CONCURRENCY", 2 if KIND == "cpu" else 1, minimum=1)
# Warm runners kept ready: forked from the template, each costs about 2.5 MiB of its own (one-shot
# bwrap runners about 90 MiB). 0 disables the pool (every run starts cold).
POOL_SIZE = env_int("EXECUTOR_POOL_SIZE", 4, minimum=0)
# Simulated CPU devices so pmap/shard_map examples run on a CPU node.
CPU_DEVICES = env_int("EXECUTOR_CPU_DEVICES", 8 if KIND == "cpu" else 0)
# Device nodes bound into the sandbox on accelerator nodes, e.g. /dev/nvidia0,/dev/nvidiactl.
DEVICES = tuple(env_list("EXECUTOR_DEVICES", ""))
# Further host paths the sandbox binds read-only, e.g. a GPU driver's libraries when they live
# outside the system's library folders (/usr/local/nvidia/lib64 in some containers).
RO_BINDS = tuple(env_list("EXECUTOR_RO_BINDS", ""))

# The most a run may use on this node; a run's own request can only lower these.
WALL_S = env_int("RUN_WALL_S", 30, minimum=1)
LIMITS = Limits(
    wall_s=float(WALL_S),
    cpu_s=env_int("RUN_CPU_S", cpu_seconds_for(WALL_S), minimum=1),  # wall × cores
    memory_bytes=env_int("RUN_MEMORY_MB", 2048, minimum=256) * 1024**2,
    output_bytes=env_int("RUN_OUTPUT_KB", 1024, minimum=1) * 1024,
    tmp_bytes=env_int("RUN_TMP_MB", 64, minimum=1) * 1024**2,
    # An idle runner already holds ~20 threads, plus ~2 per simulated CPU device.
    pids=env_int("RUN_PIDS", 128, minimum=64 + 4 * CPU_DEVICES),
    events=env_int("RUN_MAX_EVENTS", 10_000, minimum=100),
    events_per_s=env_int("RUN_EVENTS_PER_S", 200, minimum=10),
)

HEARTBEAT_S = 5
