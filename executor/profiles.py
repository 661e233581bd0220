"""Profiled runs' traces, built after the runs' ends (executor/tracebuild.py), one at a time, on
a thread of the executor worker's that only waits for the build's process.

    supervisor ── keep_profile.later(raw) ──▶ ProfileKeeper    (the run's "profile" event: its URL,
                                                                "building": true; Redis: building)
      (a run that ends at its code's end, before the profiler has stopped: ``reserve`` at its
       "ended", then ``give(raw)`` or ``fail(why)`` once the runner has handed it over or not)
    executor, once "finished" is logged ──▶ Builder.submit ──▶ python -m executor.tracebuild
                                                             ──▶ Redis: the trace; ready, with
                                                                 what it holds (its summary)
                                                             ──▶ recorder: store_profile

Until it is ready the trace's URL answers 202 ("building the timeline…" on the page); a build
that fails leaves its reason where the URL answers it."""

from __future__ import annotations

import base64
import json
import logging
import queue
import threading

import redis

from . import events as ev
from . import settings
from .submit import PROFILE_TASK, task_reprs

log = logging.getLogger("executor")

# Raw profiles waiting for their build, at most (each some megabytes of the worker's memory).
MAX_WAITING = 8
BUILDING = b"building"
# How long a trace's URL says "building" before its state lapses (then: no profile) should its
# node never say more (it died while the runner stopped the profiler, or with builds waiting):
# MAX_WAITING builds of tracebuild.BUILD_WALL_S each, after the runner's tail, fit in it.
BUILDING_TTL_S = 15 * 60


class ProfileKeeper:
    """One run's ``keep_profile`` for the supervisor: a built trace is kept now (``__call__``),
    a raw one (``later``) is held until the run has ended and then handed to the builder."""

    def __init__(self, executor, run_id: str):
        self.executor, self.run_id = executor, run_id
        self.bundle: bytes | None = None
        self.stop_ms: float | None = None  # what stopping the profiler took, after an early end
        self.waiting = False  # its URL was reserved, and neither a raw profile nor why not came

    def __call__(self, trace: bytes) -> str:
        return self.executor.keep_profile(self.run_id, trace)

    def later(self, bundle: bytes) -> str:
        url = self.reserve()
        self.give(bundle)
        return url

    def reserve(self) -> str:
        """The trace's URL, answering 202 ("building") from now until it is built or failed.
        RuntimeError, saying why, where it cannot be: too many waiting, or Redis unreachable."""
        if self.executor.profile_builder.waiting() >= MAX_WAITING:
            raise RuntimeError(f"{MAX_WAITING} traces are waiting to be built on this node")
        try:
            self.executor.redis.set(ev.profile_state_key(self.run_id), BUILDING, ex=BUILDING_TTL_S)
        except redis.exceptions.RedisError as exc:
            raise RuntimeError(f"Redis could not be told: {exc}") from exc
        self.waiting = True
        return f"/api/runs/{self.run_id}/profile"

    def give(self, bundle: bytes, stop_ms: float | None = None) -> None:
        """The raw profile behind a reserved URL, built once the run has ended (``build``);
        ``stop_ms``: what stopping the profiler took, where the run had ended before it."""
        self.bundle, self.stop_ms, self.waiting = bundle, stop_ms, False

    def fail(self, state: dict) -> None:
        """A reserved URL's trace will not come: it answers why ({"error", "error_parts"?})."""
        self.bundle, self.waiting = None, False
        try:
            self.executor.redis.set(ev.profile_state_key(self.run_id), json.dumps(state), ex=ev.EVENT_LOG_TTL_S)
        except redis.exceptions.RedisError:  # the URL answers 202 until its "building" lapses
            log.warning("run %s: why its trace is missing could not be kept", self.run_id)

    def build(self) -> None:
        """After the run's ``finished``: its raw profile, if any, to the builder (once: the
        supervisor calls it as soon as a run that ended early hands its profile over, the
        executor after every run)."""
        if self.bundle is not None:
            self.executor.profile_builder.submit(self.run_id, self.bundle, self.stop_ms)
            self.bundle = None
        elif self.waiting:  # the run's supervision failed between its end and its profile
            self.fail({"error": "the node lost the run's profile before it was handed over"})


class Builder:
    def __init__(self, executor):
        self.executor = executor
        self.queue: queue.Queue = queue.Queue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def waiting(self) -> int:
        return self.queue.qsize()

    def submit(self, run_id: str, bundle: bytes, stop_ms: float | None = None) -> None:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name="trace-builder", daemon=True)
                self.thread.start()
        self.queue.put((run_id, bundle, stop_ms))

    def _loop(self) -> None:
        while True:
            run_id, bundle, stop_ms = self.queue.get()
            try:
                self.build(run_id, bundle, stop_ms)
            except Exception:  # the next run's trace is still built
                log.exception("run %s: building its trace failed", run_id)

    def build(self, run_id: str, bundle: bytes, stop_ms: float | None = None) -> None:
        from . import tracebuild
        from .supervisor import bounded_profile, check_trace

        redis = self.executor.redis
        trace, info = tracebuild.build(bundle)
        problem = info.get("error")
        if trace is not None:
            trace, problem = check_trace(base64.b64encode(trace).decode("ascii"))
        if trace is None:
            state = {"error": problem or "the trace could not be built"}
            if info.get("error_parts") and problem == info.get("error"):
                state["error_parts"] = info["error_parts"]
            redis.set(ev.profile_state_key(run_id), json.dumps(state), ex=ev.EVENT_LOG_TTL_S)
            log.warning("run %s: its trace was not built: %s", run_id, state["error"])
            return
        # What the trace holds, as the profile event of a trace built at once says it (bounded as
        # that event is: the bytes read were the run's), for whoever wants it without the trace.
        held = bounded_profile({k: info.get(k) for k in ("events", "lanes", "devices", "summary", "cut", "cut_parts",
                                                          "raw_bytes", "build_ms")})
        held["bytes"] = len(trace)
        if stop_ms is not None:
            held["profile_ms"] = stop_ms  # the profiler's stop, after the run's end
        pipe = redis.pipeline()
        pipe.set(ev.profile_key(run_id), trace, ex=ev.EVENT_LOG_TTL_S)
        pipe.set(ev.profile_state_key(run_id), json.dumps({"ready": True, "info": held}), ex=ev.EVENT_LOG_TTL_S)
        pipe.execute()
        self.executor.app.send_task(PROFILE_TASK, args=[run_id], queue=settings.RECORD_QUEUE, **task_reprs(run_id))
        log.info("run %s: its trace built in %.0f ms (%d events, %d bytes)", run_id, info.get("build_ms", 0),
                 info.get("events", 0), len(trace))
