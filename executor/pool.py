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

import logging
import threading
import time
from collections import deque

from .sandbox import Launcher
from .supervisor import Runner, discard, wait_ready

log = logging.getLogger(__name__)

WARMUP_TIMEOUT_S = 120.0


class RunnerPool:
    def __init__(self, launcher: Launcher, *, size: int, concurrency: int):
        self.launcher = launcher
        self.size = size
        # One slot (and sandbox uid) per runner that can exist at once: the warm ones plus three
        # per task thread (a graded run's student, its checker and its analyst), out of the pool
        # while they run.
        self._free_slots = deque(range(size + 3 * concurrency + 1))
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
        if self.size and self._thread is None:
            self._thread = threading.Thread(target=self._refill_loop, name="runner-pool", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        with self._lock:
            runners, self._ready = list(self._ready), deque()
        for runner in runners:
            self._discard(runner)

    # Use ---------------------------------------------------------------------------------------

    def acquire(self) -> Runner:
        """A ready runner: a warm one if there is one, else one started now (cold)."""
        while True:
            with self._lock:
                runner = self._ready.popleft() if self._ready else None
            self._wake.set()
            self.changed.set()
            if runner is None:
                return self._spawn()
            if runner.alive():
                return runner
            log.warning("warm runner in slot %s died while idle; replacing it", runner.slot)
            self._discard(runner)

    def release(self, runner: Runner) -> None:
        """After its one run: clean up and free the slot."""
        self._discard(runner)

    def idle_count(self) -> int:
        with self._lock:
            return len(self._ready)

    # Internals ---------------------------------------------------------------------------------

    def _take_slot(self) -> int:
        with self._lock:
            if not self._free_slots:
                raise RuntimeError("no free runner slot")
            return self._free_slots.popleft()

    def _spawn(self) -> Runner:
        slot = self._take_slot()
        try:
            proc = self.launcher.start(slot)
        except BaseException:
            with self._lock:
                self._free_slots.append(slot)
            raise
        runner = Runner(proc=proc, slot=slot)
        try:
            self.last_info = wait_ready(runner, WARMUP_TIMEOUT_S)
        except BaseException:
            self._discard(runner)
            raise
        return runner

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
                missing = self.size - len(self._ready)
            for r in dead:
                log.warning("warm runner in slot %s died while idle; replacing it", r.slot)
                self._discard(r)
            if missing > 0:
                t0 = time.monotonic()
                try:
                    runner = self._spawn()
                except Exception as exc:  # keep the worker up; try again shortly
                    log.exception("could not start a runner")
                    self.failures += 1
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    self._stop.wait(2.0)
                    continue
                self.failures = 0
                self.refill_times_ms.append((time.monotonic() - t0) * 1000)
                with self._lock:
                    self._ready.append(runner)
                self.changed.set()
                continue
            self._wake.wait(1.0)
            self._wake.clear()
