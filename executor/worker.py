"""The executor worker: a Celery worker that takes the runs of ``exec.<kind>`` and
``exec.<kind>.<specific>`` (``exec.gpu.h200``, added by itself once it knows its devices) and
needs only the broker URL.

    celery -A executor.worker worker -Q exec.cpu -P threads -c 2
      ├─ at start              learn the devices from a first runner; refuse a kind they do not match
      ├─ heartbeat thread      executors:<kind> in Redis, every HEARTBEAT_S
      ├─ runner pool thread    keeps POOL_SIZE warm runners
      ├─ run threads           one a slot (-c): take a run off the exec queues' lists when free
                               (executor/runqueue.py), supervise its runner, relay its events
      ├─ cells thread          the cells of the sessions it holds, from its Redis stream
      │                        (executor/cellstream.py), each in a thread of its own
      └─ task threads          Celery's: executor.run from the node's sessions queue (scripts)

The exec queues are Celery's lists, read by the run threads, not by Celery's consumer: a run's
delivery through Celery cost the node a few milliseconds of CPU, a BRPOP one round trip.

The threads pool, not prefork: a task mostly waits on its runner's pipes, and all task threads
share one warm pool (a prefork child would each need its own, 200 MiB a runner).
"""

from __future__ import annotations

import logging
import socket
import sys
import threading

import redis
from celery import Celery, signals

from . import logs, registry, runtimes, settings, submit
from .cellstream import CellReader
from .runqueue import RunReader
from .celeryconf import COMMON, broker_url, share_redis_clients
from .execution import Executor, build_launcher
from .sandbox import human_bytes

log = logging.getLogger("executor")

# Checked at import, so that `celery worker` stops at once with the reason (no bubblewrap, no
# cgroups, EXECUTOR_SANDBOX=none without EXECUTOR_ALLOW_UNSANDBOXED) instead of taking runs it
# cannot execute safely.
LAUNCHER = build_launcher()

# A run's thread mostly waits on its runner's pipes and wakes for a few lines of work; the
# default switch interval (5 ms) would let a busy thread (the pool's refill, Celery's consumer)
# hold the GIL that long before a woken run's thread gets it.
sys.setswitchinterval(0.001)

share_redis_clients()
# No fix-ups: Celery's Django one, on wherever DJANGO_SETTINGS_MODULE is set (a shared env file),
# would set up Django, import every view and run its system checks in this process, which never
# touches the database, while its run threads already take runs (an idle node: 114 MB against 65).
app = Celery("executor", broker=broker_url(settings.REDIS_URL), fixups=[])
app.conf.update(COMMON, task_default_queue=settings.QUEUE)

_executor: Executor | None = None
_executor_lock = threading.Lock()


def get_executor(hostname: str | None = None) -> Executor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = Executor(
                app=app,
                redis=redis.Redis.from_url(settings.REDIS_URL),
                name=hostname or f"{settings.KIND}@{socket.gethostname()}",
                launcher=LAUNCHER,
            )
            _executor.start()
        return _executor


@signals.setup_logging.connect
def _setup_logging(loglevel=None, **_):
    """Celery leaves logging to us: JSON lines (or text, LOG_FORMAT) with the run they concern,
    at the worker's -l level."""
    logs.configure(settings.LOG_FORMAT, loglevel or "INFO", process="executor")


# jax's platform names for each kind (a CUDA or ROCm backend says "gpu", older ones their own).
PLATFORMS = {"cpu": ("cpu",), "gpu": ("gpu", "cuda", "rocm"), "tpu": ("tpu",)}


def device_problem(info: dict, consumed: list[str]) -> str | None:
    """Why this worker must not take runs (its devices or its -Q list do not match its kind and
    runtime), or None. A configured EXECUTOR_DEVICE_KIND of another platform is a pose, allowed (and logged)."""
    def ours(queue: str) -> bool:  # exec.<kind>[.<specific>][@<runtime>] of this kind and runtime
        device, _, runtime = queue.removeprefix("exec.").partition("@")
        return device.split(".")[0] == settings.KIND and (runtime or runtimes.FIRST) == settings.RUNTIME.id

    foreign = [q for q in consumed if q.startswith("exec.") and not ours(q)]
    platform = str(info.get("platform") or "none")
    found = f"{info.get('device_count')} × {info.get('device_kind')} on the {platform} platform"
    if foreign:
        return (f"this worker serves {settings.KIND} (EXECUTOR_KIND) but was told to consume "
                f"{', '.join(foreign)} (-Q); its runners found {found}. Start it with -Q {settings.QUEUE} "
                "or set EXECUTOR_KIND")
    if platform in PLATFORMS[settings.KIND] or settings.DEVICE_KIND_CONFIGURED:
        return None
    return (f"this worker serves {settings.KIND} (queue {settings.QUEUE}) but its runners found only "
            f"{found}. "
            + {"gpu": "Bind the GPU into the sandbox (EXECUTOR_DEVICES=/dev/nvidia0,/dev/nvidiactl,/dev/nvidia-uvm "
                      "and the driver's libraries with EXECUTOR_RO_BINDS) and install jax[cuda13]",
               "tpu": "Install jax[tpu] and bind the TPU (EXECUTOR_DEVICES=/dev/vfio/...,/dev/accel0)",
               "cpu": "Set EXECUTOR_KIND to this node's kind"}[settings.KIND]
            + ", or set EXECUTOR_KIND to what it has.")


@signals.celeryd_after_setup.connect
def _on_after_setup(sender=None, instance=None, **_):
    """Before the worker consumes anything: start the executor, learn what devices its runners
    find, refuse to start when they do not match its kind, and consume the specific kind's queue
    (exec.gpu.h200) besides the kind's."""
    executor = get_executor(sender if isinstance(sender, str) else None)
    queues = instance.app.amqp.queues if instance is not None else None
    consumed = list(queues.consume_from) if queues is not None else [settings.QUEUE]
    try:
        info = executor.learn_devices(settings.DEVICE_CHECK_TIMEOUT_S)
        problem = device_problem(info, consumed)
    except RuntimeError as exc:
        info, problem = {}, str(exc)
    if problem:
        log.critical("executor %s refuses to start: %s", executor.name, problem)
        print(f"executor {executor.name} refuses to start: {problem}", file=sys.stderr, flush=True)
        executor.stop()
        raise SystemExit(1)
    executor.start_heartbeat()
    # The exec queues it was told (-Q) and its own: read by its run threads, not Celery's consumer.
    run_queues = list(dict.fromkeys([*(q for q in consumed if q.startswith("exec.")), settings.QUEUE,
                                     registry.queue_name(executor.route)]))
    _start_cells(executor)
    _start_runs(executor, run_queues)
    _start_analysers()
    if queues is not None:
        # Celery's consumer takes only the queue of the notebook sessions it holds
        # (executor/sessions.py), which scripts send cells to.
        if executor.sessions.queue not in queues.consume_from:
            queues.select_add(executor.sessions.queue)
        queues.deselect([q for q in run_queues if q in queues.consume_from])
    memory = info.get("memory_bytes")
    log.info("executor %s is %s (runtime %s): %s × %s on the %s platform, %s, JAX %s, jaxlib %s; consuming %s",
             executor.name, executor.device, settings.RUNTIME.id, info.get("device_count"), info.get("device_kind"),
             info.get("platform"),
             "memory unknown" if not memory else f"{human_bytes(memory)} of host memory"
             if info.get("platform") == "cpu" else f"{human_bytes(memory)} each",
             info.get("jax_version"), info.get("jaxlib_version"),
             ", ".join(run_queues))
    if settings.DEVICE_KIND_CONFIGURED and str(info.get("platform")) not in PLATFORMS[settings.KIND]:
        log.warning("!!! executor %s poses as %s on a %s platform (EXECUTOR_DEVICE_KIND=%s): runs for %s "
                    "run on %s", executor.name, executor.device, info.get("platform"), settings.DEVICE_KIND,
                    executor.device, info.get("platform"))


logs.name_runs_in_task_logs()


# With prefetch off (celeryconf) a worker whose task slots are all busy stops reading its queue,
# and its event loop looks again only when something wakes it: so the end of a task Celery
# handed over (a cell on the node's sessions queue, the one queue its consumer takes) wakes the
# loop, which looks again once the slot is marked free (the task's thread does that just after
# the end: REFILL_AFTER_S). Runs and the page's cells come through the node's own threads, so
# nothing else needs the loop awake (a tick 50 times a second cost an idle node 2% of a core).
REFILL_AFTER_S = 0.001
_hub = None


@signals.worker_ready.connect
def _on_worker_ready(sender=None, **_):
    global _hub
    get_executor(getattr(sender, "hostname", None)).start_heartbeat()
    _hub = getattr(sender, "hub", None)


def _tick() -> None:
    """Nothing: being due is the point (the loop then runs its poll-start, which takes a task
    from the queue when a slot is free)."""


@signals.task_postrun.connect
def _on_task_postrun(**_):
    hub = _hub
    if hub is not None:  # thread-safe: wakes the loop, which then schedules the look
        hub.call_soon(lambda: hub.call_later(REFILL_AFTER_S, _tick))


_analysers = None
_cells: CellReader | None = None
_runs: RunReader | None = None


def _start_runs(executor: Executor, queues: list[str]) -> None:
    """A thread a slot, each taking the node's next run off its queues when it is free."""
    global _runs
    if _runs is None:
        _runs = RunReader(executor, redis.Redis.from_url(settings.REDIS_URL, socket_timeout=RUN_READ_TIMEOUT_S),
                          queues, settings.CONCURRENCY).start()


# A BRPOP blocks a second (runqueue.BLOCK_S); a connection silent much longer than that is dead
# (a host cut off), and a thread waiting on it would never take a run again.
RUN_READ_TIMEOUT_S = 15


def _start_cells(executor: Executor) -> None:
    """The cells of the sessions this node holds, read from its stream once it can run them."""
    global _cells
    if _cells is None:
        _cells = CellReader(executor, redis.Redis.from_url(settings.REDIS_URL), executor.name).start()


def _start_analysers() -> None:
    """The editor's analysers, beside the runners, in the environment the runs use (the runtime's
    interpreter: its jax, its libraries)."""
    global _analysers
    import os

    from executor.analyser import service

    if _analysers is None and service.PROCESSES:
        _analysers = service.Service(settings.REDIS_URL, runtime=settings.RUNTIME.id,
                                     python=os.path.join(settings.RUNTIME_ENV, "bin", "python")).start()


# A node told to stop (SIGTERM: systemd, Kubernetes, an autoscaler scaling down) drains. Celery's
# warm shutdown stops consuming and waits for the task threads, so the runs in progress finish as
# any run does; the sandboxes (template, warm runners) and the analysers go only once they have.
# Stopping them when the signal came, as this did, ended every run in progress `failed`.
@signals.worker_shutting_down.connect
def _on_shutting_down(**_):
    if _executor is not None:
        _executor.drain()


@signals.worker_shutdown.connect
def _on_shutdown(**_):
    if _runs is not None:  # the runs in progress end as any run does, before the runners go
        _runs.stop(wait_s=settings.LIMITS.wall_s + 30)
    if _cells is not None:  # the cells in progress end as the tasks did, before the runners go
        _cells.stop(wait_s=settings.LIMITS.wall_s + 30)
    if _analysers is not None:
        _analysers.stop()
    if _executor is not None:
        _executor.stop()


@app.task(name=submit.RUN_TASK, ignore_result=True)
def run(run_id: str, code: str, options: dict | None = None, limits: dict | None = None,
        grade: dict | None = None, session: dict | None = None, stdin: str = "") -> None:
    """A cell a script sent to this node's sessions queue, the one queue Celery's consumer takes
    (a node's runs come through its run threads, whose drain hands a run taken then back:
    executor/runqueue.py). A cell taken while draining ends here, with its session: it lives on
    this node only."""
    get_executor().execute(run_id, code, options or {}, limits or {}, grade, session, stdin=stdin)
