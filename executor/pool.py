"""A pool of warm, one-shot runners.

    executor worker
      ├─ refill thread ── launcher.start(slot) ──▶ runner (imports numpy+jax, says "ready", waits)
      └─ task threads ─── pool.acquire() takes a ready runner, runs one snippet, discards it

Importing jax and initialising its backend takes about a second and 200 MiB; a warm runner has
paid that before the user presses Run. A runner serves exactly one run, so nothing a snippet
does survives into the next one. Runners are never forked from a warm parent: forking after the
JAX backend is initialised deadlocks the child.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable

from .runner import protocol
from .sandbox import Launcher
from .supervisor import Runner, RunnerStartError, discard, wait_ready

log = logging.getLogger(__name__)

WARMUP_TIMEOUT_S = 120.0
# Code that names any of these will start JAX's backend: it takes a warm runner first. Any
# other (plain Python, NumPy) takes a cold one and leaves the warm ones for code that needs them.
JAX_NAMES = ("jax", "jaxlib", "jaxplay", "flax", "optax", "equinox", "chex", "orbax")
USES_JAX = re.compile(rf"\b(?:{'|'.join(JAX_NAMES)})\b")
# Code that names neither these nor matplotlib (which only the full template has imported) takes a
# lean runner, forked from a template without jax: its fork and exit cost the node a fraction of a
# full runner's. Should it import jax after all (by a name built at run time), it imports it then.
NEEDS_FULL = re.compile(rf"\b(?:{'|'.join(JAX_NAMES + ('matplotlib', 'pyplot', 'pylab'))})\b")


def runner_for(code: str, graded: bool = False, profile: bool = False) -> dict[str, bool]:
    """What ``acquire`` is asked for a run of ``code``: a warm runner for code that uses jax (and
    for a graded run, whose checks may, and a profiled one, whose profiler is jax's), a lean one
    for code that needs nothing of the full template's."""
    full = graded or profile
    return {"warm": full or bool(USES_JAX.search(code)), "lean": not full and not NEEDS_FULL.search(code)}


# A warming runner's CPU priority until a run takes it (threads it starts meanwhile inherit it).
WARM_NICE = 19


class RunnerPool:
    def __init__(self, launcher: Launcher, *, size: int, concurrency: int, lean_size: int = 0,
                 idle: Callable[[], bool] | None = None, busy: Callable[[], bool] | None = None,
                 sessions: int = 0, session_cpu_s: int | None = None, env: dict[str, str] | None = None,
                 ready_timeout_s: float = WARMUP_TIMEOUT_S,
                 on_fault: Callable[[str | None, str | None], None] | None = None):
        """``env``: every runner's own variables (Launcher.start); on a node of exclusive chips
        (executor/chips.py), the runners beside the chips' (a graded run's checker and analyst)
        are told JAX_PLATFORMS=cpu, so that none of them tries to open a chip.
        ``ready_timeout_s``: how long a runner may take to open its device and say "ready"
        before it is discarded with its cause. ``on_fault(code, reason)``: told when runners
        start failing, with why, and ``(None, None)`` when one starts again (the worker says it
        in Redis for /readyz and /metrics)."""
        self.launcher = launcher
        self.env = dict(env or {})
        self.ready_timeout_s = ready_timeout_s
        self.on_fault = on_fault
        self.size = size
        # Lean runners kept ready besides (numpy, no jax), where the launcher has them.
        self.lean_size = lean_size if launcher is not None and launcher.lean_runners else 0
        # When this says the node is idle, waiting runners are warmed (None: never).
        self.idle = idle
        # While this says a run is in progress, a runner it took is replaced only if fewer than
        # ``concurrency`` wait (None: at once). Starting one is a fork of the template and its
        # confinement, tens of milliseconds of CPU that a run on a small node competed with
        # (and the next run still finds a warm runner).
        self.busy = busy
        self.concurrency = concurrency
        self.warm_times_ms: deque[float] = deque(maxlen=100)
        # Only root can give a runner its priority back after a warm-up at nice 19.
        self.renice = os.geteuid() == 0
        # One slot (and sandbox uid) per runner that can exist at once: the warm ones plus three
        # per task thread (a graded run's student, its checker and its analyst), out of the pool
        # while they run; and one per notebook session the node may hold (executor/sessions.py).
        self.slot_count = size + self.lean_size + 3 * concurrency + 1 + sessions
        self._free_slots = deque(range(self.slot_count))
        self.session_cpu_s = session_cpu_s
        self._ready: deque[Runner] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._warming = 0
        self.last_info: dict = {}
        # Runners that failed to start in a row, and why the last did (a worker's start says so).
        self.failures = 0
        self.last_error: str | None = None
        # Set whenever the number of warm runners changes, so the heartbeat can report it at once.
        self.changed = threading.Event()
        self.refill_times_ms: deque[float] = deque(maxlen=100)

    # Lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if (self.size or self.lean_size) and self._thread is None:
            self._thread = threading.Thread(target=self._refill_loop, name="runner-pool", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Discard the waiting runners, once the refill thread has ended: a runner (or a template)
        it was starting would otherwise outlive the pool and the launcher's close."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=WARMUP_TIMEOUT_S)
        with self._lock:
            runners, self._ready = list(self._ready), deque()
        for runner in runners:
            self._discard(runner)

    # Use ---------------------------------------------------------------------------------------

    def acquire(self, warm: bool = True, background: bool = False, lean: bool = False) -> Runner:
        """A ready runner, else one started now (cold). ``warm``: the run will use JAX, so a
        runner whose backend is started is taken first; else a cold one is, and the warm ones
        are kept for the runs that need them. ``lean``: the code does not name jax, so a lean
        runner is taken (started now if none waits). ``background``: for the node's own
        work (a compile job), which runs at nice 19."""
        lean = lean and not warm and self.lean_size > 0
        while True:
            with self._lock:
                runner = self._best_ready(warm, lean)
            self._wake.set()
            self.changed.set()
            if runner is None:
                runner = self._spawn(lean)
                if background:
                    self._background(runner)
                return runner
            if runner.alive():
                if background:
                    self._background(runner)
                elif runner.warmth != "cold":
                    self._set_nice(runner, os.getpriority(os.PRIO_PROCESS, 0), every_thread=True)
                return runner
            log.warning("warm runner in slot %s died while idle; replacing it", runner.slot)
            self._discard(runner)

    def spawn_session(self) -> Runner:
        """A fresh full runner for a notebook's session, never one of the waiting ones: those were
        started for one run each (their limits, their warm-up), and the pool keeps them for runs."""
        runner = self._spawn(lean=False, session_cpu_s=self.session_cpu_s)
        self.changed.set()
        return runner

    def release(self, runner: Runner) -> None:
        """After its one run (or its session): clean up and free the slot."""
        self._discard(runner)

    def wake(self) -> None:
        """Look again now (the node may have become idle: its cold runners can warm up)."""
        self._wake.set()

    def idle_count(self) -> int:
        with self._lock:
            return len(self._ready)

    def warm_count(self) -> int:
        """Waiting runners whose backend is started."""
        with self._lock:
            return sum(1 for r in self._ready if r.warmth == "warm")

    # Internals ---------------------------------------------------------------------------------

    def _best_ready(self, warm: bool = True, lean: bool = False) -> Runner | None:
        """Under the lock: for a run that will use JAX (``warm``), the oldest warm runner, else
        the oldest still warming (what is left of its warm-up is less than a cold one's start,
        and the run gets its priority back), else the oldest cold one; for any other run, the
        oldest cold one, else a warm one, else one warming (which would make it wait); for code
        that may run in a lean runner, the oldest lean one, else none (one is started)."""
        if lean:
            # Never a full one: its replacement would cost the node more than starting a lean
            # runner now (a few milliseconds), and a burst of plain code would drain the full
            # ones that code using jax needs.
            order = [(True, "cold")]
        else:
            order = [(False, w) for w in (("warm", "warming", "cold") if warm else ("cold", "warm", "warming"))]
        for want_lean, warmth in order:
            for runner in self._ready:
                if runner.lean == want_lean and runner.warmth == warmth:
                    self._ready.remove(runner)
                    return runner
        return None

    def _warm_one(self) -> bool:
        """While the node is idle, ask one more waiting cold runner to warm up (as many warm or
        warming at once as the node has slots: at nice 19 they take only idle cores, and one at
        a time left runs that came in quick succession with cold ones); note those that have.
        True while one is warming (the refill loop then looks again soon)."""
        with self._lock:
            # Read under the lock: a runner taken by acquire() is no longer here, and its event
            # pipe is then its supervisor's alone (which ignores a late "warmed").
            for runner in self._ready:
                if runner.warmth == "warming":
                    self._read_warmed(runner)
            warming = any(r.warmth == "warming" for r in self._ready)
            runner = self._to_warm()
            if runner is None or not self.idle():
                return warming
            self._set_nice(runner, WARM_NICE)
            try:
                # Before any request: acquire() takes runners from here under this same lock.
                runner.proc.stdin.write(protocol.request("warm"))
                runner.proc.stdin.flush()
            except (OSError, ValueError):
                return False  # it died; the refill loop replaces it
            runner.warmth = "warming"
            runner.warm_sent = time.monotonic()
            return True

    def _to_warm(self) -> Runner | None:
        """Under the lock: the runner to warm next, if fewer are warm or warming than the node has slots.
        (A runner started on its own, not forked, started its backend before "ready".)"""
        if self.idle is None or sum(1 for r in self._ready if r.warmth in ("warm", "warming")) >= self.concurrency:
            return None
        return next((r for r in self._ready if r.warmth == "cold" and r.info.get("forked") and not r.lean), None)

    def _background(self, runner: Runner) -> None:
        self._set_nice(runner, 19, every_thread=True)
        self.launcher.background(runner.proc)

    def _set_nice(self, runner: Runner, value: int, every_thread: bool = False) -> None:
        """The runner's main thread (what it starts inherits it), or every thread it has."""
        if not self.renice:
            return
        try:
            pid = self.launcher.runner_pid(runner.proc)
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")] if every_thread else [pid]
        except (OSError, RuntimeError, ValueError):
            return
        for tid in tids:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, value)
            except OSError:
                pass  # it has ended

    def _read_warmed(self, runner: Runner) -> None:
        """Take a ``warmed`` line off a warming runner's event pipe, if it has come."""
        try:
            chunk = os.read(runner.event_fd, 4096) if _readable(runner.event_fd) else b""
        except OSError:
            return
        runner.event_buffer += chunk
        while b"\n" in runner.event_buffer:
            line, _, rest = runner.event_buffer.partition(b"\n")
            try:
                message = json.loads(line)
            except ValueError:
                return  # not ours: left for the supervisor, which judges it
            if not isinstance(message, dict) or message.get("type") != "warmed":
                return
            runner.event_buffer = rest
            runner.warmth = "warm"
            self.warm_times_ms.append((time.monotonic() - runner.warm_sent) * 1000)
            log.debug("runner in slot %s warmed up in %.0f ms", runner.slot, self.warm_times_ms[-1])
            self.changed.set()

    def _defer_refill(self, lean: bool) -> bool:
        """Whether to start the missing runners (lean or full) only once the runs in progress
        have ended."""
        if self.busy is None:
            return False
        with self._lock:
            enough = sum(1 for r in self._ready if r.lean == lean) >= min(self.concurrency, self._wanted(lean))
        return enough and self.busy()

    def _wanted(self, lean: bool) -> int:
        return self.lean_size if lean else self.size

    def _missing(self) -> list[bool]:
        """Under the lock: the kinds of runner (lean or not) fewer of which wait than wanted,
        full ones first."""
        return [lean for lean in (False, True)
                if sum(1 for r in self._ready if r.lean == lean) < self._wanted(lean)]

    def _take_slot(self) -> int:
        with self._lock:
            if not self._free_slots:
                raise RuntimeError("no free runner slot")
            return self._free_slots.popleft()

    def _spawn(self, lean: bool = False, session_cpu_s: int | None = None) -> Runner:
        slot = self._take_slot()
        try:
            proc = self.launcher.start(slot, lean=lean, **({"session_cpu_s": session_cpu_s} if session_cpu_s else {}),
                                       **({"env": self.env} if self.env else {}))
        except BaseException:
            with self._lock:
                self._free_slots.append(slot)
            raise
        runner = Runner(proc=proc, slot=slot)
        try:
            info = wait_ready(runner, self.ready_timeout_s)
            if not runner.lean:
                self.last_info = info
        except BaseException:
            self._discard(runner)
            raise
        return runner

    def _tell_fault(self, code: str | None, reason: str | None) -> None:
        if self.on_fault is not None:
            try:
                self.on_fault(code, reason)
            except Exception:  # Redis away: the log has said it
                log.debug("could not report the runners' fault", exc_info=True)

    def _discard(self, runner: Runner) -> None:
        try:
            discard(runner, self.launcher)
        finally:
            with self._lock:
                self._free_slots.append(runner.slot)

    def _refill_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                dead = [r for r in self._ready if not r.alive()]
                for r in dead:
                    self._ready.remove(r)
                missing = self._missing()
            for r in dead:
                log.warning("warm runner in slot %s died while idle; replacing it", r.slot)
                self._discard(r)
            if not missing and self._warm_one():
                self._wake.wait(0.02)
                self._wake.clear()
                continue
            now = [lean for lean in missing if not self._defer_refill(lean)]
            if missing and not now:
                self._wake.wait(0.05)  # a run's end wakes this
                self._wake.clear()
                continue
            if now:
                lean = now[0]
                t0 = time.monotonic()
                try:
                    runner = self._spawn(lean)
                except Exception as exc:  # keep the worker up; try again shortly
                    if isinstance(exc, RunnerStartError):  # its cause is said; no traceback of ours
                        log.error("could not start a runner (%s): %s", exc.code, exc)
                    else:
                        log.exception("could not start a runner")
                    self.failures += 1
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    self._tell_fault(getattr(exc, "code", "error"), str(exc))
                    self._stop.wait(2.0)
                    continue
                if self.failures:
                    self._tell_fault(None, None)
                self.failures = 0
                self.refill_times_ms.append((time.monotonic() - t0) * 1000)
                with self._lock:
                    self._ready.append(runner)
                self.changed.set()
                continue
            # Cold runners an idle node would warm: look again soon (the node's idleness has a grace).
            with self._lock:
                cold = self._to_warm() is not None
            self._wake.wait(0.05 if cold else 1.0)
            self._wake.clear()


def _readable(fd: int) -> bool:
    import select

    return bool(select.select([fd], [], [], 0)[0])
