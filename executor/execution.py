"""One executor node: its launcher, its warm pool, its heartbeat, and the life of a run on it.

A run's events go two ways as they happen: into the run's Redis stream (the live feed and
replay log that websockets read) and, batched, to the recorder queue, which writes them to the
database. The executor never touches the database.
"""

from __future__ import annotations

import logging
import os
import threading
import time

import redis.exceptions
from kombu.exceptions import OperationalError

from . import events as ev
from . import compilecache, logs, registry, sessionstate, settings, shares, stages
from .chips import Cancelled, ChipPool, count_chips
from .compilecache import CompileCache
from .profiles import Builder, ProfileKeeper
from .pulse import Pulse
from .submit import GRADE_TASK, queued_key, send_batch, task_reprs
from .pool import RunnerPool, runner_for
from .runner import protocol
from .sandbox import get_launcher
from .graded_run import GradedRun
from .sessions import SessionHost
from .supervisor import run_request, supervise

log = logging.getLogger("executor")

# Events reach the database in batches: at most this old.
RECORD_EVERY_S = 0.5
# The heartbeat follows the pool's changes at most this often (20 a second cost a burst of
# print(1) a tenth of the executor's Python time).
BEAT_GAP_S = 0.25
CLAIM_TTL_S = 7 * 24 * 3600



# How long a run waits for a Redis that went away (a restart) before it is given up as lost.
REDIS_PATIENCE_S = 15.0


def patiently(what: str, call, patience_s: float = REDIS_PATIENCE_S):
    """``call()``, retried with backoff while Redis is unreachable, for up to ``patience_s``."""
    deadline = time.monotonic() + patience_s
    delay = 0.1
    while True:
        try:
            return call()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OperationalError) as exc:
            if time.monotonic() + delay > deadline:
                raise
            log.warning("%s failed (%s); retrying in %.1f s", what, exc, delay)
            time.sleep(delay)
            delay = min(delay * 2, 2.0)


class RunRelay:
    """Appends a run's events to its log and batches them to the recorder. A Redis that
    restarts mid-run is waited for: the run's events go on where they were (the log's seqs
    continue from the last one this relay appended).

    The recorder gets a run's events at most RECORD_EVERY_S apart, and at its end: a run of a
    few milliseconds is one batch ("started" to "finished"), so the database does one write
    where it did two, and the recorder's work does not compete with the run for the CPU. Live
    readers never wait for the database: they read the log."""

    def __init__(self, executor: Executor, run_id: str):
        self.executor = executor
        self.run_id = run_id
        self.pending: list[dict] = []
        self.last_flush = time.monotonic()
        self.last_seq = 1  # "queued" is 1
        # The log took someone else's end for this run: the watchdog gave it up as lost while
        # this node could not reach Redis (a network cut off, then back). Nothing more of it is
        # shown to anyone, so the run is stopped rather than left to hold its slot.
        self.ended_elsewhere = False
        # A profiled run's raw profile, built once its end is logged (executor/profiles.py).
        self.profile = ProfileKeeper(executor, run_id)
        self.output_stamped = False  # the first output's stages (bench.stages)
        # Events held for the run's end (``hold``): appended in its round trip, before
        # ``finished``, or before the next event emitted meanwhile.
        self.held: list[dict] = []

    def stamp(self, stage: str) -> None:
        if settings.STAGE_TIMES:
            stages.record(self.executor.redis, self.run_id, stage)

    def hold(self, type_: str, **fields) -> None:
        """An event that is the last before the run ends (a cell's ``shapes``): logged with the
        end, in its round trip, rather than in one of its own; in order all the same (an event
        emitted meanwhile logs it first)."""
        self.held.append(ev.make_event(type_, **fields))

    def emit_held(self) -> None:
        held, self.held = self.held, []
        for event in held:
            self.emit(event.pop("type"), **{k: v for k, v in event.items() if k != "ts"})

    def emit(self, type_: str, **fields) -> None:
        if self.held:
            self.emit_held()
        first = settings.STAGE_TIMES and type_ == ev.STDOUT and not self.output_stamped
        if first:
            self.output_stamped = True
            self.stamp("first_byte")
        event = ev.make_event(type_, **fields)
        # Retried while Redis is away; a retry of an append that did happen finds it (expect).
        stored = patiently(f"appending to run {self.run_id}'s log",
                           lambda: self.executor.log.append(self.run_id, event, after=self.last_seq,
                                                            expect=self.last_seq + 1))
        self.logged(type_, stored, first)

    def logged(self, type_: str, stored: dict | None, first: bool = False) -> None:
        """What follows an event's append (``stored``: the event as logged, None if the log
        refused it): kept for the recorder, and at the end sent to it."""
        if stored is not None:
            self.last_seq = stored["seq"]
            self.pending.append(stored)
        elif type_ != ev.FINISHED and not self.ended_elsewhere and self._finished_in_log():
            self.end_elsewhere()
        if first:
            self.stamp("relayed")
        if type_ == ev.FINISHED:
            self.stamp("ended")
            self.flush(REDIS_PATIENCE_S)
        elif time.monotonic() - self.last_flush >= RECORD_EVERY_S:
            self.flush()

    def end_elsewhere(self) -> None:
        if not self.ended_elsewhere:
            self.ended_elsewhere = True
            log.warning("run %s was ended without this node (lost while it was unreachable); stopping it",
                        self.run_id)

    def _finished_in_log(self) -> bool:
        try:
            return self.executor.log.is_finished(self.run_id)
        except redis.exceptions.RedisError:
            return False  # asked again at the next refused event

    def flush(self, patience_s: float = 0.0) -> None:
        """Send what is pending to the recorder; kept for the next flush if the broker is away
        (the run's log in Redis has it all the same, and the watchdog completes a row from it)."""
        if self.pending:
            batch = self.pending
            try:
                patiently("sending events to the recorder", lambda: send_batch(
                    self.executor.redis, settings.RECORD_QUEUE, self.run_id, batch), patience_s)
                self.pending = []
            except redis.exceptions.RedisError as exc:
                log.warning("run %s: %d events wait for the recorder (%s)", self.run_id, len(batch), exc)
        self.last_flush = time.monotonic()


def build_launcher():
    """The configured sandbox backend, checked on this host (raises with how to fix it)."""
    launcher = get_launcher(
        settings.SANDBOX,
        limits=settings.LIMITS,
        cpu_devices=settings.CPU_DEVICES,
        devices=settings.DEVICES,
        ro_binds=settings.RO_BINDS,
        venv=settings.RUNTIME_ENV,
        device_env=settings.DEVICE_ENV,
        pythonpath=settings.RUNTIME_PYTHONPATH,
    )
    launcher.check_protocol = settings.CHECK_PROTOCOL
    if not launcher.sandboxed:
        log.warning(
            "!!! this executor runs snippets WITHOUT A SANDBOX (EXECUTOR_SANDBOX=%s): any "
            "snippet can read this machine's files and reach its network. Development only.",
            settings.SANDBOX,
        )
    return launcher


class Executor:
    def __init__(self, *, app, redis, name: str, launcher):
        self.app = app
        self.redis = redis
        self.name = name
        # The log refuses a run's events past its limit (and a few for what a kill drains).
        self.log = ev.EventLog(redis, max_events=settings.LIMITS.events + 64)
        self.launcher = launcher
        self.busy = 0
        self.idle_since = time.monotonic()
        # A node of exclusive chips (a TPU's: executor/chips.py) runs its snippets and sessions on
        # the chips' runners, one a chip; its pool keeps none warm and starts only the runners
        # beside them (a graded run's checker and analyst), on the CPU.
        chips = count_chips(settings.KIND, settings.EXCLUSIVE_DEVICES, settings.TPU_HOST_BOUNDS)
        if chips:
            self.pool = RunnerPool(self.launcher, size=0, concurrency=settings.CONCURRENCY, lean_size=0,
                                   busy=lambda: self.busy > 0, env={"JAX_PLATFORMS": "cpu"})
        else:
            self.pool = RunnerPool(self.launcher, size=settings.POOL_SIZE, concurrency=settings.CONCURRENCY,
                                   lean_size=settings.LEAN_POOL_SIZE,
                                   idle=self.idle if settings.WARM_WHEN_IDLE else None,
                                   busy=lambda: self.busy > 0, sessions=settings.MAX_SESSIONS,
                                   session_cpu_s=settings.SESSION_CPU_S, ready_timeout_s=settings.READY_TIMEOUT_S,
                                   on_fault=self._on_fault)
        self.chips: ChipPool | None = ChipPool(
            self.launcher, count=chips, first_slot=self.pool.slot_count, standin=settings.STANDIN_DEVICE,
            standin_open_ms=settings.STANDIN_OPEN_MS, host_bounds=settings.TPU_HOST_BOUNDS,
            keep_s=settings.CHIP_KEEP_S,
            premapped_bytes=settings.TPU_PREMAPPED_BYTES if settings.KIND == "tpu" else 0) if chips else None
        # Notebook sessions held here (executor/sessions.py): their cells come on the node's queue.
        # On exclusive chips a session leases a chip's runner, in the chips' line.
        self.sessions = SessionHost(redis_client=redis, name=name, launcher=launcher,
                                    spawn=self.pool.spawn_session, release=self.pool.release,
                                    chips=self.chips)
        self._busy_lock = threading.Lock()
        self._stop = threading.Event()
        self._info: dict = {}
        # The specific device kind served ("h200" of gpu:h200): configured, or learnt from the
        # devices by learn_devices().
        self.specific: str | None = settings.SPECIFIC or None
        self._beating = False
        self._heartbeat: threading.Thread | None = None
        # Told to stop (drain): it finishes the runs it has and offers no free slot meanwhile.
        self.draining = False
        self.compile_cache: CompileCache | None = None
        self.profile_builder = Builder(self)
        # The runs' pulse while they wait for a runner, a session's or a chip's (pulse.py).
        self.pulse = Pulse(redis, name)

    def _on_fault(self, code: str | None, reason: str | None) -> None:
        """The pool's runners fail to start (``code``, ``reason``), or start again (None): said
        in Redis for /readyz and /metrics, since a node none of whose runners is ready sends no
        heartbeat."""
        if code is None:
            registry.clear_fault(self.redis, self.name, settings.KIND)
        else:
            registry.report_fault(self.redis, self.name, settings.KIND, code, reason or "")

    # Lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        # A compile job's runner would open a chip (or compile for the CPU, beside one): none on
        # exclusive chips.
        self.compile_cache = compilecache.for_node(self.launcher) if self.chips is None else None
        self.launcher.prepare()  # what all runners share, before the first one starts
        self.pool.start()
        if self.chips is not None:
            self.chips.start()
        self.sessions.start()
        if self.compile_cache is not None:
            threading.Thread(target=self._compile_loop, name="compile-cache", daemon=True).start()
        if not self.pool.size and self.chips is None:
            # Learn what this node runs (platform, devices) from one runner, once.
            runner = self.pool.acquire()
            self._info = dict(runner.info)
            self.pool.release(runner)

    # How long the node must have run nothing before its waiting runners warm up: between two
    # runs of a queue it is idle for a few milliseconds, which must not count.
    IDLE_GRACE_S = 0.05

    def idle(self) -> bool:
        """No run in progress for IDLE_GRACE_S, and none waiting in this node's queues (a burst
        keeps every core for its runs). Asked by the pool before it warms a runner."""
        if self.busy or time.monotonic() - self.idle_since < self.IDLE_GRACE_S:
            return False
        try:
            routes = {registry.route(settings.KIND, settings.RUNTIME.id), self.route}
            return not any(registry.queue_depth(self.redis, route) for route in routes)
        except redis.exceptions.RedisError:
            return False

    def start_heartbeat(self) -> None:
        """Online from now on (once the worker has checked its devices): beat every HEARTBEAT_S."""
        with self._busy_lock:
            if self._beating:
                return
            self._beating = True
        self._heartbeat = threading.Thread(target=self._heartbeat_loop, name="heartbeat", daemon=True)
        self._heartbeat.start()

    @property
    def device(self) -> str:
        """This worker's device string: ``gpu:h200``, or its kind until its devices are known."""
        return f"{settings.KIND}:{self.specific}" if self.specific else settings.KIND

    @property
    def route(self) -> str:
        """Its device string and runtime, as its queue is named: ``gpu:h200@jax-0.4.38``."""
        return registry.route(self.device, settings.RUNTIME.id)

    def learn_devices(self, timeout: float) -> dict:
        """What this node's runners find (platform, device kind and count, memory, versions),
        from its first runner, waiting up to ``timeout``; sets ``specific`` unless configured."""
        deadline = time.monotonic() + timeout
        starter = self.chips or self.pool
        while not self.runner_info():
            if starter.failures >= 3:
                raise RuntimeError(f"its runners fail to start ({starter.failures} in a row): {starter.last_error}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no runner started within {timeout:.0f} s, so this worker cannot say "
                                   "what devices it has; see the log above")
            time.sleep(0.1)
        info = self.device_info(self.runner_info())
        if not self.specific:
            self.specific = registry.specific_name(info.get("device_kind"))
        return info

    def runner_info(self) -> dict:
        """What the node's runners said of its devices when ready (a chip's runner, on a node of
        chips), or nothing yet."""
        if self.chips is not None:
            return self.chips.last_info
        return self.pool.last_info or self._info

    @staticmethod
    def device_info(info: dict) -> dict:
        """A runner's ready info as the heartbeat and ``started`` tell it: memory per device
        (a GPU's or TPU's from jax; on CPU the host's)."""
        described = {k: info.get(k) for k in ("platform", "device_kind", "device_count", "memory_bytes",
                                              "jax_version", "jaxlib_version", "libraries")}
        if not described.get("memory_bytes"):
            try:
                described["memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            except (ValueError, OSError, AttributeError):
                described["memory_bytes"] = None
        return described

    def drain(self) -> None:
        """The worker was told to stop (SIGTERM) and takes no new run (Celery stops consuming);
        until the runs it has end (then ``stop``), its heartbeat says it offers no free slot, so
        that its kind stays online, runs posted meanwhile wait in the queue for the next node,
        and no one counts on a slot it will not fill. Only sets flags: called in a signal handler."""
        self.draining = True
        self.pool.changed.set()  # beat now

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self.pulse.stop()
        self.pool.changed.set()
        # The last beat first, so that none lands after the goodbye and keeps the node listed.
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)
        registry.leave(self.redis, self.name, settings.KIND, self.specific)
        self.sessions.stop_all("its node stopped")
        if self.chips is not None:
            self.chips.stop()
        self.pool.stop()
        self.launcher.close()  # the runner template, if the launcher keeps one

    def _heartbeat_loop(self) -> None:
        # The first beat waits for a warm runner so /api/devices can say what the node runs;
        # a worker is not "online" before it could take a run.
        while not self._stop.is_set():
            info = self.runner_info()
            if info:
                try:
                    if not self.specific:
                        self.specific = registry.specific_name(info.get("device_kind"))
                    registry.beat(self.redis, self.name, settings.KIND, {
                        **self.device_info(info),
                        # Draining, the slots it offers are those its last runs hold.
                        "slots": self.busy if self.draining else settings.CONCURRENCY,
                        "draining": self.draining,
                        "busy": self.busy,
                        "warm": self.chips.idle_count() if self.chips is not None else self.pool.idle_count(),
                        "sandboxed": self.launcher.sandboxed,
                        "pool_size": self.pool.size,
                        "runtime": settings.RUNTIME.id,
                        "sessions": self.sessions.count(),
                        "session_slots": 0 if self.draining else settings.MAX_SESSIONS,
                        **(self.chips.describe() if self.chips is not None else {}),
                    }, self.specific)
                except Exception:  # Redis may be restarting; beat again later
                    log.exception("heartbeat failed")
                # Beat again after HEARTBEAT_S, or as soon as the pool changes, so /api/devices
                # says how many runners are warm right now: at most every BEAT_GAP_S (a burst
                # changes the pool with every run, and a beat is a pipeline and a JSON document).
                self._stop.wait(BEAT_GAP_S)
                changed = self.chips.changed if self.chips is not None else self.pool.changed
                changed.wait(settings.HEARTBEAT_S)
                changed.clear()
            else:
                self._stop.wait(0.2)

    # A run -------------------------------------------------------------------------------------

    def execute(self, run_id: str, code: str, options: dict, requested_limits: dict,
                grade: dict | None = None, session: dict | None = None, stdin: str = "") -> None:
        """``session``: the run is a notebook session's cell ({"id", "idle_s", "cell"}).
        ``stdin``: the snippet's standard input (a cell has none)."""
        # Every line logged meanwhile, by this thread, names the run (executor/logs.py).
        if settings.STAGE_TIMES:
            stages.record(self.redis, run_id, "received")
        with logs.run_context(run_id):
            self._claim_and_execute(run_id, code, options, requested_limits, grade, session, stdin)

    def _claim_and_execute(self, run_id: str, code: str, options: dict, requested_limits: dict,
                           grade: dict | None, session: dict | None = None, stdin: str = "") -> None:
        # Alive before the claim: the watchdog treats a claimed run without an alive key as lost.
        alive = ev.alive_key(run_id)
        # A cell of a session this node holds says it started in the claim's own round trip.
        claimed_start = self._cell_started(session) if session is not None else None
        # Compare-and-set: a cancel of the queued run may have claimed it first. One round trip
        # for both, in this order (a transaction: nothing comes between them).
        pipe = self.redis.pipeline(transaction=True)
        pipe.set(alive, self.name, ex=ev.ALIVE_TTL_S)
        pipe.set(ev.claim_key(run_id), self.name, nx=True, ex=CLAIM_TTL_S)
        pipe.delete(queued_key(run_id))  # taken off its queue: nothing is left to take out
        if session is not None:
            # A cell sent as its session was ended (from another tab) is not run: the session's
            # end was asked for before this claim, and the node's pass would end it only later.
            pipe.hmget(sessionstate.key(str(session.get("id"))), "state", "stop")
            if claimed_start is not None:  # logged only if this claim holds and the session stands
                self.log.append_if_in(pipe, run_id, claimed_start[0], claim_key=ev.claim_key(run_id), owner=self.name,
                                      session_key=sessionstate.key(str(session.get("id"))), after=1, expect=2)
        answers = pipe.execute()
        if not answers[1]:
            log.info("run %s was claimed before it started (cancelled); skipping", run_id)
            self.redis.delete(alive)
            return
        with self._busy_lock:
            self.busy += 1
        relay = RunRelay(self, run_id)
        started = time.monotonic()
        log.info("run %s started on %s", run_id, self.name)
        try:
            if session is not None:
                state, stop = answers[3]
                logged = ev.EventLog.appended(answers[4]) if claimed_start is not None else None
                self._execute_cell(run_id, code, options, requested_limits, relay, alive, session,
                                   ended=state == b"stopped" or bool(stop),
                                   started=(claimed_start[1], logged) if logged is not None else None)
            else:
                self._execute(run_id, code, options, requested_limits, relay, alive, grade, stdin)
        finally:
            relay.flush()
            relay.profile.build()  # after "finished": the trace is built outside the run's time
            self.redis.delete(alive)
            with self._busy_lock:
                self.busy -= 1
                if self.busy == 0:
                    self.idle_since = time.monotonic()
            self.pool.changed.set()  # the next heartbeat says the slot is free, now
            self.pool.wake()  # and, the node idle, its waiting runners may warm up
            log.info("run %s ended after %.0f ms", run_id, (time.monotonic() - started) * 1000)

    def _cancelled(self, run_id: str) -> bool:
        try:
            return bool(self.redis.exists(ev.cancel_key(run_id)))
        except redis.exceptions.RedisError:
            return False  # asked again next tick

    def _execute(self, run_id, code, options, requested_limits, relay, alive, grade=None, stdin="") -> None:
        limits = self.launcher.limits.clamp(requested_limits)
        grading = None
        if isinstance(grade, dict) and isinstance(grade.get("checks"), str):
            # The checks get a runner of their own (runner/checker.py), taken while the code runs.
            grading = GradedRun(checks=grade["checks"], acquire=self.pool.acquire, release=self.pool.release,
                                launcher=self.launcher, limits=limits)
        compiled: list = []  # what the run had to compile, for the compile cache

        def on_message(type_: str, fields: dict) -> None:
            # At most what one run may report is kept, however many reports it writes.
            if type_ == "compiled_modules" and grading is None and not (options or {}).get("private_compiles"):
                compiled.extend(fields["modules"][:compilecache.MAX_REPORTED - len(compiled)])

        try:
            with self.pulse.meanwhile(run_id):
                runner, held, as_cell = self._runner_for_run(run_id, code, options, relay, grading, stdin)
        except Cancelled:  # while it waited for a chip
            finished = protocol.finished_fields(ev.CANCELLED, ev.ended("cancelled_before_start"), wall_ms=0)
            if grading is not None:
                self._send_grade(run_id, grading.finish(finished))
            self._end(run_id, relay, finished)
            return
        except Exception as exc:  # the run must still end
            log.exception("could not start a runner for run %s", run_id)
            finished = protocol.finished_fields(ev.LOST, ev.ended("no_runner", error=str(exc)), wall_ms=0)
            if grading is not None:
                self._send_grade(run_id, grading.finish(finished))
            self._end(run_id, relay, finished)
            return
        keep = [False]  # the runner lives on after a cell: kept for its person's next run

        def release(runner) -> None:
            if self.chips is not None:
                self.chips.release(runner, keep=keep[0])
            else:
                self.pool.release(runner)

        tick = self._ticker(run_id, relay, alive)
        relay.stamp("runner")
        # A profiled run ends at its code's end, before its profiler has stopped (supervisor.py):
        # its end is logged then, once, and its share held until the runner has gone.
        ended_early: list = []

        def end_early(finished: dict) -> None:
            self._end(run_id, relay, finished, hold=True)
            ended_early.append(time.monotonic())

        # From here the runner goes back to the pool whatever happens (even a "started" that
        # cannot be logged because Redis stays away): a runner kept would hold its slot forever.
        try:
            relay.emit(
                ev.STARTED,
                worker=self.name,
                kind=settings.KIND,
                device=self.device,
                runtime=settings.RUNTIME.id,
                sandboxed=self.launcher.sandboxed,
                **self.device_info(runner.info),
                **held,
            )
            relay.stamp("handed")
            finished, keep[0] = self._supervise(run_id, runner, code, options, stdin, limits, relay, tick,
                                                on_message, grading, as_cell, end_early)
        except Exception as exc:  # an executor fault is not the snippet's
            log.exception("supervising run %s failed", run_id)
            finished = protocol.finished_fields(ev.LOST, ev.ended("executor_failed", error=str(exc)))
        except BaseException:
            release(runner)
            raise
        # The result first, then the runner's cgroup is removed (which can wait on the kernel);
        # on a chip, then the runner's exit, which frees the chip for the next in line.
        try:
            if grading is not None:
                self._send_grade(run_id, grading.finish(finished))
            client = self._end_after(run_id, relay, finished, ended_early[0] if ended_early else None)
        finally:
            release(runner)
        if compiled and self.compile_cache is not None:
            self.compile_cache.submit(compiled, reporter=client or run_id)

    def _supervise(self, run_id, runner, code, options, stdin, limits, relay, tick, on_message, grading, as_cell,
                   end_early) -> tuple[dict, bool]:
        """The run on its runner: its ``finished`` fields, and whether the runner lives on for its
        person's next run (a chip's, run as a cell). A graded run never ends early: its end is
        its grade's."""
        end_early = end_early if grading is None else None
        if as_cell:
            finished, ended = self._run_as_cell(run_id, runner, code, options, limits, relay, tick, on_message,
                                                end_early)
            return finished, ended is None
        return supervise(
            runner, self.launcher, run_request(code, options, stdin), limits, relay.emit,
            should_cancel=lambda: relay.ended_elsewhere or self._cancelled(run_id),
            tick=tick,
            grading=grading,
            on_message=on_message,
            lookup=self.compile_cache.lookups() if self.compile_cache is not None else None,
            keep_profile=relay.profile,
            end_early=end_early,
        ), False

    def person_of(self, run_id: str) -> str:
        """Whose run it is, as the web side admitted it (its share's client: a person, or a guest's
        browser); a run sent without the web side is its own."""
        try:
            client = self.redis.get(shares.client_key(run_id))
        except redis.exceptions.RedisError:
            client = None
        return client.decode() if isinstance(client, bytes) else client or f"run:{run_id}"

    def chip_waiter(self, run_id: str, relay: RunRelay):
        """What a run or a cell is told while it waits for a chip: a ``waiting`` event (where it
        stands) when that changes; and how its wait ends early (a cancel, an end elsewhere)."""
        def on_wait(where: dict) -> None:
            relay.emit(ev.WAITING, worker=self.name, device=self.device,
                       **{k: v for k, v in where.items() if k != "device"})

        return on_wait, (lambda: relay.ended_elsewhere or self._cancelled(run_id))

    def _runner_for_run(self, run_id, code, options, relay, grading, stdin) -> tuple:
        """The run's runner, what its ``started`` says of it, and whether it runs as a cell: on a
        chip, a plain run may reuse the runner its person's last run left there (chips.py)."""
        if self.chips is None:
            runner = self.pool.acquire(**runner_for(code, graded=grading is not None,
                                                     profile=(options or {}).get("profile") is True))
            return runner, {}, False
        reusable = grading is None and not stdin and self.chips.keep_s > 0
        runner, held = self._take_chips(run_id, options, relay, reusable)
        return runner, held, reusable and "," not in held["chips"]

    def _run_as_cell(self, run_id, runner, code, options, limits, relay, tick, on_message,
                     end_early=None) -> tuple[dict, str | None]:
        """A plain run on a chip's runner that lives on: a cell in a namespace of its own
        (runner/session.py), so that the runner can be kept for its person's next run. The
        ``finished`` fields, and why the runner cannot be kept (None: it can)."""
        from .sessions import CellSupervision

        self.launcher.restrict(runner.proc, limits, cpu=False)
        if not self.chips.runs_cells(runner):
            # The runner's CPU for all the runs it may serve; each cell's own is its soft limit.
            self.launcher.allow_session_cpu(runner.proc, settings.SESSION_CPU_S)
            runner.proc.stdin.write(protocol.request("session"))
            runner.proc.stdin.flush()
            self.chips.set_runs_cells(runner)
        supervision = CellSupervision(
            runner, self.launcher, limits, relay.emit,
            should_cancel=lambda: relay.ended_elsewhere or self._cancelled(run_id), tick=tick, tick_every_s=0.2,
            on_message=on_message, lookup=None, keep_profile=relay.profile, end_early=end_early,
            cpu_s=limits.cpu_s, should_end=lambda: False)
        return supervision.run_cell({"code": code, "options": options, "fresh": True})

    def _take_chips(self, run_id: str, options: dict, relay: RunRelay, reusable: bool = False) -> tuple:
        """A chip's runner for the run (``options["chips"]``: 1, or all the node's), in its turn;
        and what its ``started`` says of it (the chips, the wait, whether its runner is reused)."""
        wanted = (options or {}).get("chips", 1)
        if wanted == "all":
            wanted = self.chips.count
        if isinstance(wanted, bool) or not isinstance(wanted, int):
            raise ValueError(f"chips is a number of chips (1 or {self.chips.count}), not {str(wanted)[:40]!r}")
        on_wait, cancelled = self.chip_waiter(run_id, relay)
        runner = self.chips.take(self.person_of(run_id), wanted, reusable=reusable, on_wait=on_wait,
                                 cancelled=cancelled)
        held = self.chips.held(runner)
        return runner, {"chips": ",".join(str(c.index) for c in held.chips), "waited_ms": round(held.waited_ms, 1),
                        **({"reused": True} if held.reused else {})}

    def keep_profile(self, run_id: str, trace: bytes) -> str:
        """A profiled run's trace (gzipped, checked by the supervisor), kept in Redis beside its
        log until the recorder stores it with the run; the URL that answers it."""
        patiently(f"keeping run {run_id}'s profile",
                  lambda: self.redis.set(ev.profile_key(run_id), trace, ex=ev.EVENT_LOG_TTL_S))
        return f"/api/runs/{run_id}/profile"

    def _ticker(self, run_id: str, relay: RunRelay, alive: str):
        """What the supervisor calls every tick: the run's pulse, and its events to the recorder."""
        last_alive = [time.monotonic()]

        def tick() -> None:
            now = time.monotonic()
            if now - last_alive[0] >= ev.ALIVE_EVERY_S:
                try:
                    # With the pulse, whether the run was ended without us (a quiet run is
                    # otherwise told only when it next prints, or never).
                    pipe = self.redis.pipeline(transaction=False)
                    pipe.set(alive, self.name, ex=ev.ALIVE_TTL_S)
                    pipe.exists(ev.done_key(run_id))
                    if pipe.execute()[1]:
                        relay.end_elsewhere()
                    last_alive[0] = now
                except redis.exceptions.RedisError as exc:  # a restart: beat again next tick
                    log.warning("run %s: could not refresh its alive key (%s)", run_id, exc)
            if now - relay.last_flush >= RECORD_EVERY_S:
                relay.flush()

        return tick

    def _cell_started(self, cell: dict) -> tuple[dict, object] | None:
        """The ``started`` event of a cell of a session this node holds, as ``_execute_cell``
        would log it, and the session it names; None where that is decided only once claimed (a
        first cell, a chip's lease, a node that drains)."""
        if self.draining or self.chips is not None:
            return None
        session = self.sessions.sessions.get(str(cell.get("id")))
        if session is None:
            return None
        return ev.make_event(ev.STARTED, **self._cell_started_fields(session, started_now=False)), session

    def _cell_started_fields(self, session, started_now: bool) -> dict:
        """What a cell's ``started`` says: where it runs, and which cell of its session."""
        return dict(worker=self.name, kind=settings.KIND, device=self.device, runtime=settings.RUNTIME.id,
                    sandboxed=self.launcher.sandboxed, session=session.id, cell=session.cells + 1,
                    session_started=started_now, **self.device_info(session.runner.info),
                    **self.sessions.lease_fields(session),
                    **({"waited_ms": session.waited_ms} if started_now and session.waited_ms is not None else {}))

    def _execute_cell(self, run_id, code, options, requested_limits, relay, alive, cell: dict,
                      ended: bool = False, started: tuple | None = None) -> None:
        """A notebook session's cell, on the session's runner (started here for its first cell):
        a run as the API and the page see it, whose runner outlives it (executor/sessions.py).
        ``ended``: its session's end was asked for before the cell was claimed: it is not run.
        ``started``: (the session, its ``started`` as logged) where the claim logged it."""
        limits = self.launcher.limits.clamp(requested_limits)
        session_id = str(cell.get("id"))
        compiled: list = []

        def on_message(type_: str, fields: dict) -> None:
            if type_ == "compiled_modules" and not (options or {}).get("private_compiles"):
                compiled.extend(fields["modules"][:compilecache.MAX_REPORTED - len(compiled)])

        if started is not None:
            relay.logged(ev.STARTED, started[1])
        started_now = session_id not in self.sessions.sessions
        left: list[dict] = []  # the state the cell left its session in (run_cell's ``tell``)
        on_wait, cancelled = self.chip_waiter(run_id, relay)
        with self.pulse.meanwhile(run_id):
            session, why_not = (None, "its node is stopping") if self.draining else (None, None) if ended else \
                self.sessions.session_for(session_id, cell.get("idle_s") or 0, limits,
                                          person=lambda: self.person_of(run_id), on_wait=on_wait, cancelled=cancelled)
        relay.stamp("runner")
        given_back = False
        try:
            if ended:
                log.info("session %s: cell %s not run: the session was ended", session_id, run_id)
                finished = protocol.finished_fields(ev.CANCELLED, ev.ended("session_ended"), wall_ms=0)
            elif session is None:
                log.warning("session %s: cell %s not run: %s", session_id, run_id, why_not)
                sessionstate.stop(self.redis, session_id, why_not)
                finished = protocol.finished_fields(ev.LOST, f"the session could not run this cell: {why_not}",
                                                    wall_ms=0)
            else:
                if started is None:  # else the claim logged it
                    relay.emit(ev.STARTED, **self._cell_started_fields(session, started_now))
                relay.stamp("handed")
                finished = self.sessions.run_cell(
                    session, code, options, limits, relay.emit,
                    should_cancel=lambda: relay.ended_elsewhere or self._cancelled(run_id),
                    tick=self._ticker(run_id, relay, alive), on_message=on_message,
                    lookup=self.compile_cache.lookups() if self.compile_cache is not None else None,
                    keep_profile=relay.profile, hold=relay.hold, tell=left.append)
                # The session's state and its freedom for the next cell go with the cell's end
                # (below), or it ended with the cell (told then).
                given_back = True
        except Exception as exc:  # an executor fault is not the cell's
            log.exception("session %s: cell %s failed", session_id, run_id)
            finished = protocol.finished_fields(ev.LOST, ev.ended("executor_failed", error=str(exc)))
        if not given_back:
            try:  # free for the next cell before anyone hears this one ended
                sessionstate.give_back(self.redis, session_id, run_id)
            except redis.exceptions.RedisError:
                log.warning("session %s: could not mark its cell %s done", session_id, run_id)
        # Free for the next cell (its state told once) before anyone hears this one ended, in the
        # end's round trip.
        over = (lambda redis_: sessionstate.cell_over(redis_, session_id, run_id, **left[0])) if left else None
        client = self._end(run_id, relay, finished, first=over)
        if compiled and self.compile_cache is not None:
            self.compile_cache.submit(compiled, reporter=client or run_id)

    def _compile_loop(self) -> None:
        """While the node is idle, the modules runs reported are compiled, one per fresh runner
        (executor/compilecache.py)."""
        cache = self.compile_cache
        limits = self.launcher.limits.clamp({"wall_s": compilecache.JOB_WALL_S})
        while not self._stop.is_set():
            job = cache.next_job(timeout=1.0)
            if job is None:
                continue
            if self.draining or not self.idle():
                self._stop.wait(0.05)
                continue
            entries, status = self._compile_job(job["request"], limits)
            # A module XLA refused waits long before it is tried again; one whose job was cut
            # short (its time spent while the node's runs took the CPU), or found no runner, less.
            ended = status in (ev.SUCCEEDED, ev.FAILED)
            cache.done(job, entries, retry_after=compilecache.RETRY_AFTER_S if ended else compilecache.RETRY_SOON_S)

    def _compile_job(self, module: dict, limits) -> tuple[list[dict], str | None]:
        """One module compiled by a runner that never ran a snippet: its ``compiled_entry``, and
        how the job ended (None: it did not run)."""
        entries: list[dict] = []
        status = None

        def on_message(type_: str, fields: dict) -> None:
            if type_ == "compiled_entry":
                entries.append(fields)

        try:
            runner = self.pool.acquire(warm=True, background=True)
        except Exception as exc:  # noqa: BLE001 - as for a run: a launcher fails in its own ways; the module stays uncached
            log.warning("compile cache: no runner for a compile job (%s)", exc)
            return entries, status
        try:
            finished = supervise(runner, self.launcher, {"op": "compile", "modules": [module]}, limits,
                                 lambda *_a, **_k: None, on_message=on_message)
            status = finished.get("status")
            if status != ev.SUCCEEDED:
                log.info("compile cache: a compile job ended %s: %s", status, finished.get("message"))
        except Exception:
            log.exception("compile cache: a compile job failed")
        finally:
            self.pool.release(runner)
        return entries, status

    def _end(self, run_id: str, relay: RunRelay, finished: dict, first=None, hold: bool = False) -> str | None:
        """``first(redis_or_pipeline)`` (a cell's: its session free for the next), the run's
        share given back, the events it held, then its ``finished`` logged: in this order (free
        before anyone hears it ended), in one round trip. Should that fail, each again on its own
        (all are idempotent: a session given back or a share released finds nothing the second
        time, an append its own event). Whose run it was, as ``_give_share_back`` says. ``hold``:
        the run ended before its runner (a profiled run's early end): its share is held, not
        given back, until ``_give_share_back(held=True)`` once the runner has gone."""
        held, relay.held = relay.held, []
        events = [*held, ev.make_event(ev.FINISHED, **finished)]
        try:
            pipe = self.redis.pipeline(transaction=False)
            if first is not None:
                first(pipe)
            if hold:
                shares.hold_in(pipe, run_id)
            else:
                shares.release_in(pipe, run_id, wall_ms=finished.get("wall_ms"), kind=settings.KIND)
            for n, event in enumerate(events):
                self.log.append_in(pipe, run_id, event, after=relay.last_seq + n, expect=relay.last_seq + n + 1)
            answers = pipe.execute()
        except redis.exceptions.RedisError as exc:
            log.warning("run %s: ending it in one round trip failed (%s); again step by step", run_id, exc)
            if first is not None:
                try:
                    first(self.redis)
                except redis.exceptions.RedisError as again:
                    log.warning("run %s: its session could not be given back (%s)", run_id, again)
            if hold:  # as below: the end is logged after (without it, the recorder's release frees it)
                try:
                    shares.hold_in(self.redis, run_id)
                except redis.exceptions.RedisError as again:
                    log.warning("run %s: its share could not be held for its runner's tail (%s)", run_id, again)
                client = None
            else:
                client = self._give_share_back(run_id, finished)
            relay.held = held
            relay.emit(ev.FINISHED, **finished)
            return client
        answers = answers[1:] if first is not None else answers
        for event, appended in zip(events, answers[1:], strict=True):
            relay.logged(event["type"], ev.EventLog.appended(appended))
        return None if hold else shares.released(answers[0])

    def _end_after(self, run_id: str, relay: RunRelay, finished: dict, ended_at: float | None) -> str | None:
        """Once the runner has gone: the run's end (``_end``); or, for a run that ended before
        (``ended_at``: its early end), its share alone, held since, given back and billed the
        runner's whole time."""
        if ended_at is None:
            return self._end(run_id, relay, finished)
        tail_ms = (time.monotonic() - ended_at) * 1000
        return self._give_share_back(run_id, {"wall_ms": (finished.get("wall_ms") or 0) + tail_ms}, held=True)

    def _give_share_back(self, run_id: str, finished: dict, held: bool = False) -> str | None:
        """The person's share of the executors is theirs again now that the run has ended, not
        when the recorder stores it (which may trail under a burst): before its ``finished`` is
        logged, so that a script that starts its next run when it reads this one's end is never
        refused for it. The recorder's release is the backstop, and only one of the two counts.
        Returns whose run it was, if this call released it (the compile cache takes each
        person's reports in turn)."""
        try:
            return shares.release(self.redis, run_id, wall_ms=finished.get("wall_ms"), kind=settings.KIND, held=held)
        except redis.exceptions.RedisError as exc:
            log.warning("run %s: its share is given back when the recorder stores its end (%s)", run_id, exc)
            return None

    def _send_grade(self, run_id: str, result: dict) -> None:
        """The grade goes to the recorder before the run's ``finished``, so that whoever sees the
        run end finds its submission graded (or about to be) rather than still grading."""
        try:
            patiently("sending a grade to the recorder", lambda: self.app.send_task(
                GRADE_TASK, args=[run_id, result], queue=settings.RECORD_QUEUE, **task_reprs(run_id)), REDIS_PATIENCE_S)
        except (redis.exceptions.RedisError, OperationalError):
            log.exception("run %s: its grade could not be sent; the recorder grades it from the run's end", run_id)

