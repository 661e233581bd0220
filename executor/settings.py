"""The executor worker's settings: the only place on the executor side that reads the
environment. An executor node holds the broker URL and its own limits, nothing else: no database
settings, no Django.

Every value has a default that works on a laptop, and a bad value stops the worker with a message
that says how to fix it.
"""

from __future__ import annotations

from . import celeryconf, registry, runtimes
from .envvars import ImproperlyConfigured, env_bool, env_choice, env_int, env_list, env_str
from .sandbox import Limits, cpu_seconds_for, devices

# A device string: a kind, or a kind and a specific device kind ("gpu:h200", "tpu:v5-lite").
DEVICE_PATTERN = registry.DEVICE_PATTERN

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
# The specific device kind this worker serves, when configured rather than learnt from its
# devices: "h200", or with its kind, "gpu:h200" (which then sets the kind). A worker whose
# devices are of another platform than its kind refuses to start, unless this says so
# explicitly: a CPU worker posing as "gpu:test" in the tests.
DEVICE_KIND = env_str("EXECUTOR_DEVICE_KIND", "").strip().lower()
if DEVICE_KIND and not DEVICE_PATTERN.fullmatch(DEVICE_KIND if ":" in DEVICE_KIND else f"cpu:{DEVICE_KIND}"):
    raise ImproperlyConfigured(
        f"EXECUTOR_DEVICE_KIND={DEVICE_KIND!r}: use a name such as h200, or a kind and a name such as "
        "gpu:h200 (lower-case letters, digits, '.', '_' and '-', at most 32)"
    )
_configured_kind, _, SPECIFIC = DEVICE_KIND.rpartition(":")
KIND = env_choice("EXECUTOR_KIND", _configured_kind or "cpu", registry.KINDS)
if _configured_kind and _configured_kind != KIND:
    raise ImproperlyConfigured(
        f"EXECUTOR_DEVICE_KIND={DEVICE_KIND!r} is a {_configured_kind} kind but EXECUTOR_KIND={KIND}; "
        "drop one of them or make them agree"
    )
# True when the configuration says which device kind this is (the device check then allows a
# platform other than the kind's: a pose, logged loudly).
DEVICE_KIND_CONFIGURED = bool(_configured_kind)
# The runtime this worker's runners use (runtimes/runtimes.toml), built under RUNTIMES_DIR by
# `python -m executor.runtimes build` (the first runtime is this environment itself). A node that
# offers several runtimes runs a worker for each.
RUNTIMES_DIR = env_str("EXECUTOR_RUNTIMES_DIR", str(runtimes.DEFAULT_DIR))
try:
    RUNTIME = runtimes.catalog().resolve(env_str("EXECUTOR_RUNTIME", "") or runtimes.FIRST)[0]
except runtimes.UnknownRuntime as exc:
    raise ImproperlyConfigured(f"EXECUTOR_RUNTIME: {exc}") from None
if not runtimes.is_built(RUNTIME, RUNTIMES_DIR):
    raise ImproperlyConfigured(
        f"runtime {RUNTIME.id} is not built under {RUNTIMES_DIR}: python -m executor.runtimes build {RUNTIME.id} "
        "(or set EXECUTOR_RUNTIMES_DIR to where it is)")
RUNTIME_ENV = str(runtimes.environment(RUNTIME, RUNTIMES_DIR))
# A host runtime's library folders (the worker's PYTHONPATH), given to its runners.
RUNTIME_PYTHONPATH = runtimes.host_pythonpath(RUNTIME)
QUEUE = registry.queue_name(registry.route(KIND, RUNTIME.id))
RECORD_QUEUE = env_str("RECORD_QUEUE", celeryconf.RECORD_QUEUE)
# Log lines as JSON objects (one a line, with the run they concern) or as text for people.
LOG_FORMAT = env_choice("LOG_FORMAT", "json", ("json", "text"))

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

# Task threads: runs at once on this node. A GPU node runs one snippet per GPU by default. A TPU
# node's take runs that wait there in its chips' line, each told where it stands (executor/chips.py).
CONCURRENCY = env_int("EXECUTOR_CONCURRENCY", {"cpu": 2, "tpu": 4}.get(KIND, 1), minimum=1)
# Warm runners kept ready: forked from the template, each costs about 2.5 MiB of its own (one-shot
# bwrap runners about 90 MiB). 0 disables the pool (every run starts cold).
POOL_SIZE = env_int("EXECUTOR_POOL_SIZE", 4, minimum=0)
# Lean runners kept ready besides them (the fork sandbox only): forked from a second template
# that has numpy but not jax, for code that names neither jax nor matplotlib (pool.py's NEEDS_FULL); a
# print(1) in one costs the node about half the CPU of one in a full runner. 0: every run takes a
# full runner.
LEAN_POOL_SIZE = env_int("EXECUTOR_LEAN_POOL_SIZE", CONCURRENCY, minimum=0)
# While no run is in progress, waiting runners start their backend and compile a tiny function,
# one at a time (executor/pool.py): about 0.2 s of CPU and 20 MiB each, which a run using jax
# then does not wait for. CPU nodes only by default: an accelerator's backend takes its device
# memory when it starts, which a waiting runner must not hold while another runs.
WARM_WHEN_IDLE = env_bool("EXECUTOR_WARM_WHEN_IDLE", KIND == "cpu")
# The node's compile cache (executor/compilecache.py): an executable XLA compiled for a module a
# run lowered is loaded by later runs instead of compiled again. Entries are made only by the
# executor (a module a run reported, compiled in a fresh runner while the node is idle), never by
# a run. CPU nodes only by default: a compile job on an accelerator would start its backend.
COMPILE_CACHE = env_bool("EXECUTOR_COMPILE_CACHE", KIND == "cpu")
# Where its entries live on the host (a folder per runtime and device set, listable by nobody but
# the executor), and how much they may weigh before the oldest go.
COMPILE_CACHE_DIR = env_str("EXECUTOR_COMPILE_CACHE_DIR", "")
COMPILE_CACHE_MAX_MB = env_int("EXECUTOR_COMPILE_CACHE_MAX_MB", 128, minimum=1)
# Runners end at a message the protocol does not declare (runner/main.py's EventChannel), so that
# a producer that drifts from executor/runner/protocol.py fails the tests; off in production,
# where the supervisor repairs or drops such a message and the run goes on.
CHECK_PROTOCOL = env_bool("EXECUTOR_CHECK_PROTOCOL", False)
# Simulated CPU devices so pmap/shard_map examples run on a CPU node.
CPU_DEVICES = env_int("EXECUTOR_CPU_DEVICES", 8 if KIND == "cpu" else 0)
# Device nodes bound into the sandbox on accelerator nodes: those the node has, found when the
# worker starts (/dev/accel*, /dev/vfio/* on a TPU node; /dev/nvidia* on a GPU node:
# sandbox/devices.py), or exactly these (EXECUTOR_DEVICES=/dev/nvidia0,/dev/nvidiactl).
DEVICES = tuple(env_list("EXECUTOR_DEVICES", ",".join(devices.device_nodes(KIND))))
# The accelerator's environment variables every runner is given (TPU_*, CUDA_VISIBLE_DEVICES,
# NVIDIA_*, XLA_PYTHON_CLIENT_*: devices.ACCELERATOR_ENV), read from the worker's own.
DEVICE_ENV = devices.accelerator_env()
# How long a runner may take to open its device and say "ready" before it is discarded with the
# reason (a TPU chip opens in 6 to 10 s; a CPU runner that imports jax cold on a loaded node may
# take far longer, and has no device to wait for).
READY_TIMEOUT_S = env_int("EXECUTOR_READY_TIMEOUT_S", 120 if KIND == "cpu" else 30, minimum=5)
# Further host paths the sandbox binds read-only, e.g. a GPU driver's libraries when they live
# outside the system's library folders (/usr/local/nvidia/lib64 in some containers).
RO_BINDS = tuple(env_list("EXECUTOR_RO_BINDS", ""))



def _per_kind(name: str, default: int, minimum: int) -> int:
    """``<name>_<KIND>`` (RUN_WALL_S_GPU) where it is set, else ``<name>``, else the default."""
    return env_int(f"{name}_{KIND.upper()}", env_int(name, default, minimum=minimum), minimum=minimum)


# The most a run may use on this node; a run's own request can only lower these. Each of wall
# time, memory and output may be set for one kind: RUN_WALL_S_GPU=120 on a GPU node.
WALL_S = _per_kind("RUN_WALL_S", 30, 1)
LIMITS = Limits(
    wall_s=float(WALL_S),
    cpu_s=env_int("RUN_CPU_S", cpu_seconds_for(WALL_S), minimum=1),  # wall × cores
    memory_bytes=_per_kind("RUN_MEMORY_MB", 2048, 256) * 1024**2,
    output_bytes=_per_kind("RUN_OUTPUT_KB", 1024, 1) * 1024,
    tmp_bytes=env_int("RUN_TMP_MB", 64, minimum=1) * 1024**2,
    # An idle runner already holds ~20 threads, plus ~2 per simulated CPU device.
    pids=env_int("RUN_PIDS", 128, minimum=64 + 4 * CPU_DEVICES),
    events=env_int("RUN_MAX_EVENTS", 10_000, minimum=100),
    events_per_s=env_int("RUN_EVENTS_PER_S", 200, minimum=10),
)

# How often the worker beats (web: EXECUTOR_ONLINE_WINDOW_S, 15 s, without a beat and a worker
# is offline).
HEARTBEAT_S = env_int("EXECUTOR_HEARTBEAT_S", 5, minimum=1)
# How long a worker waits at start for its first runner to say what devices it has.
DEVICE_CHECK_TIMEOUT_S = env_int("EXECUTOR_DEVICE_CHECK_TIMEOUT_S", 180, minimum=10)

# Notebook sessions (executor/sessions.py): the most this node holds at once (each a runner that
# keeps its cells' state: its memory, even while idle), how long one may sit idle before it is
# stopped (a session's own idle time, set by the web side, may only be shorter), and the CPU
# seconds one may use in all its cells together (each cell has a run's own).
MAX_SESSIONS = env_int("EXECUTOR_MAX_SESSIONS", 8, minimum=0)
SESSION_IDLE_S = env_int("EXECUTOR_SESSION_IDLE_S", 1200, minimum=5)
SESSION_CPU_S = env_int("EXECUTOR_SESSION_CPU_S", 3600, minimum=1)
# CPU seconds a session may use while no cell runs (a thread a cell left running) before it is
# stopped: the node counts CPU against a person's share only while their cell runs.
SESSION_IDLE_CPU_S = env_int("EXECUTOR_SESSION_IDLE_CPU_S", 5, minimum=1)

# Exclusive devices (executor/chips.py): a TPU chip is held by one process at a time (libtpu's
# lockfile), so a node of them has one slot per chip, one runner per chip that opens it while it
# waits. The number of chips this node splits its runs over; unset: counted for a TPU node
# (chips.count_chips), 0 elsewhere (a GPU is shared: its runners take their share of its memory).
EXCLUSIVE_DEVICES = env_int("EXECUTOR_EXCLUSIVE_DEVICES", -1, minimum=-1)
# libtpu's own word for this host's chips (2,2,1 on a v5litepod-4): counted, and given whole to a
# run that asks for every chip.
TPU_HOST_BOUNDS = env_str("TPU_CHIPS_PER_HOST_BOUNDS", "")
# A notebook session on an exclusive device leases its chip while it lives; it is stopped after
# this long idle (the CPU's is EXECUTOR_SESSION_IDLE_S, 20 minutes), so that a chip left open in a
# tab goes back to the line. The notebook's replay restores the person's session at their next cell.
ACCELERATOR_SESSION_IDLE_S = env_int("ACCELERATOR_SESSION_IDLE_S", 300, minimum=5)
# How long a chip's runner is kept for the same person's next run after theirs ended (their plain
# runs then wait for no open), unless someone else is next in line; 0: every run a fresh process.
CHIP_KEEP_S = env_int("EXECUTOR_CHIP_KEEP_S", 20, minimum=0)
# libtpu's host buffer for transfers between host and chip (TPU_PREMAPPED_BUFFER_SIZE), which it
# maps and pins when the chip opens and unmaps when its holder exits. libtpu's own 4 GiB made a
# v5e's open take 6.7-7.4 s and its holder's exit 1.8-2.3 s; 512 MiB, 2.6 s and 0.8 s, with
# transfers of up to 256 MiB as fast (docs/BENCHMARKS.md, "On a TPU v5e"); a larger one goes
# through a slower path. 0: libtpu's own. A TPU_PREMAPPED_BUFFER_SIZE in the worker's environment wins.
TPU_PREMAPPED_BYTES = env_int("EXECUTOR_TPU_PREMAPPED_BYTES", 512 * 1024 * 1024, minimum=0)
# The tests' stand-in for an exclusive device (runner/exclusive.py): a folder of lock files, one a
# chip, each held with flock by the runner that opened it, as libtpu holds its lockfile; and the
# milliseconds a stand-in chip takes to open (a v5e's takes 7 to 10 s). Unset on a real node.
STANDIN_DEVICE = env_str("EXECUTOR_STANDIN_DEVICE", "")
STANDIN_OPEN_MS = env_int("EXECUTOR_STANDIN_OPEN_MS", 0, minimum=0)
# Stamp each stage of a run's path in Redis (executor/stages.py), for bench.stages; off in production.
STAGE_TIMES = env_bool("RUN_STAGE_TIMES", False)
