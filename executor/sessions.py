"""Notebook sessions on this node: runners that keep their cells' state, one per session.

    web ── a cell (POST /api/sessions/<id>/cells, or the session's socket) ──▶ the node's own
           stream (sessionstate.node_stream, read by executor/cellstream.py) once a node holds
           the session, else the run task on its kind's Celery queue
    executor (a task thread) ── SessionHost.run_cell ──▶ the session's runner (runner/session.py)
           "cell" line ──▶ events ──▶ the cell's run log, as a run's ──▶ "cell_done"
    SessionHost's pass, every PASS_S: stops the sessions idle past their time, those the web side
           asked to end, those whose runner died while idle or spent CPU while no cell ran

On a node of exclusive chips (executor/chips.py) a session leases a chip: its first cell waits in
the chips' line (its run says where it stands, as a run's does), then the session's runner is the
chip's warm one, which opened the chip before the session came, and holds it while the session
lives. Its idle limit is ACCELERATOR_SESSION_IDLE_S (shorter than a CPU session's), and its state
says which chip it holds, until when if it stays idle, and how many wait for one (the page:
"you hold TPU chip 0 until 14:32 · 3 waiting"). When the lease ends the runner goes, the chip to the
next in line, and the notebook's restore (its cells replayed) brings the person back.

A session's runner has the walls of a run's (uid, namespaces, seccomp, the cgroup's memory and
pids, no network): it is one, forked from the template, which stays alive between cells. Its
memory cap is the whole session's; each cell has a run's wall clock, output and events, and its
CPU seconds (the runner's soft limit; the hard one is the session's allowance). A cell is stopped
as Jupyter stops one, with a KeyboardInterrupt, at the wall clock or a cancel, and the session
keeps its state; a cell that does not stop within INTERRUPT_GRACE_S, and one that kills its
runner (memory, a segfault, ``os._exit``), ends the session with it, said on the cell and on the
session.
"""

from __future__ import annotations

import logging
import os
import platform
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

from . import events as ev
from . import sessionstate, settings
from .chips import Cancelled, ChipPool
from .runner import protocol
from .sandbox import Launcher, Limits
from .supervisor import Runner, Supervision, _Kill, decide_status

log = logging.getLogger("executor.sessions")

# What a session's state lists of its namespace (the runner's shapes event says at most as many).
MAX_NAMES = 200
# How long an interrupted cell has to stop before its session is ended.
INTERRUPT_GRACE_S = 5.0
# How often the node looks over its sessions (idle time, stop requests, runners that died).
PASS_S = 2.0
# A cell's CPU beyond its own seconds before the supervisor ends the session (the runner's soft
# limit interrupts it first; this is for code that does not return to Python).
CPU_GRACE_S = 3.0


class CellSupervision(Supervision):
    """One cell on a session's runner: a run's supervision, except that the runner does not exit
    at the end (it says ``cell_done`` and waits), and the wall clock and a cancel interrupt the
    cell rather than kill the runner."""

    def __init__(self, *args, cpu_s: float, should_end: callable, hold=None, **kwargs):
        super().__init__(*args, **kwargs)
        if hold is not None:
            # The cell's ``shapes``, written just before its "cell_done", goes out with its end.
            emit = self.emit
            self.emit = lambda type_, **fields: (hold if type_ == ev.SHAPES else emit)(type_, **fields)
        self.handlers["cell_done"] = self.on_cell_done
        self.cell_done: dict | None = None
        self.cpu_s = cpu_s
        self.should_end = should_end
        self.cpu_at_start: float | None = None
        self.stopping = False

    def on_cell_done(self, type_: str, message: dict, line: bytes, draining: bool) -> None:
        fields = protocol.rebuild(type_, message, self.problems, spec=protocol.RUNNER_MESSAGES)
        if fields and fields.get("status") in (ev.SUCCEEDED, ev.FAILED):
            self.cell_done = fields

    def on_lookup(self, type_: str, message: dict, line: bytes, draining: bool) -> None:
        """As a run's, except that the session's stdin never ends here: past the cell's answers the
        runner is told "spent" and compiles for itself until its next cell."""
        fields = protocol.rebuild(type_, message, self.problems, spec=protocol.RUNNER_MESSAGES)
        if not self.lookups.answer(fields, can_write=True):
            self.drop()

    def send_request(self, request: dict) -> None:
        fields = dict(request)
        fields["wall_s"] = self.limits.wall_s
        fields["cpu_s"] = self.cpu_s
        self.allow_profile(fields.get("options"))
        try:
            self.proc.stdin.write(protocol.request("cell", **fields))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # it died while idle; its exit says how

    def over(self) -> bool:
        if self.cell_done is not None and not self.cell_done.get("checked"):
            # The cell's own code can write on the event pipe: a "cell_done" counts only once the
            # runner's main thread waits for its next line, as the real one's does.
            if waits_for_input(self.launcher.runner_pid(self.proc)):
                self.cell_done["checked"] = True
            else:
                self.cell_done = None
                self.drop("a \"cell_done\" while the cell still ran (ignored)")
        return self.exited() or (self.cell_done is not None and not self.pending and not self.event_lines)

    def look_around(self) -> None:
        super().look_around()
        if self.should_end():
            raise _Kill(ev.CANCELLED, ev.ended("session_ended"))
        cpu = self.launcher.cpu_seconds(self.proc)
        if cpu is not None and self.cpu_at_start is not None and cpu - self.cpu_at_start > self.cpu_s + CPU_GRACE_S:
            raise _Kill(ev.LIMIT_EXCEEDED, ev.ended("cell_cpu", seconds=f"{self.cpu_s:g}"))

    def follow_cell(self, deadline_s: float | None = None) -> None:
        """Relay until the cell is over or the runner exited (a _Kill at a limit or a cancel)."""
        next_tick = 0.0
        while not self.over():
            now = time.monotonic()
            if deadline_s is None and now >= self.deadline:
                raise _Kill(ev.TIMED_OUT, ev.ended("wall_clock", seconds=f"{self.limits.wall_s:g}"))
            if deadline_s is not None and now >= deadline_s:
                return
            if deadline_s is None and now >= next_tick:
                next_tick = now + self.tick_every_s
                self.look_around()
            self.pump(TICK_S)
            if self.event_lines and not self.stopping:
                # What was just read, at once: "cell_done" must not wait out the next pump's tick
                # on pipes that, unlike a run's, stay open when the cell ends.
                self.handle_event_lines()
        self.read_output_left()

    def read_output_left(self) -> None:
        """What the cell printed before its "cell_done" is in the pipes already: read it now, so
        that it is this cell's and not the next one's."""
        self.read_output()
        self.handle_event_lines(draining=True)

    def on_output(self, kind: str, data: bytes) -> None:
        if self.stopping and self.output_bytes + len(data) > self.limits.output_bytes:
            self.truncated = True  # past the cap while it stops: dropped, not a second end
            return
        super().on_output(kind, data)

    def send(self, type_: str, *, draining: bool = False, **fields) -> None:
        super().send(type_, draining=draining or self.stopping, **fields)

    def pump(self, timeout: float) -> None:
        if not self.stopping:
            return super().pump(timeout)
        # While an interrupted cell stops: read everything, keep what fits, never wait on the
        # events' rate (a flood must not hold the pipes full and the cell with them).
        self.flush_output(draining=True)
        self.handle_event_lines(draining=True)
        self.read_ready(list(self.fds), timeout)
        self.junk_lines = 0

    def interrupt(self) -> bool:
        """SIGINT to the runner (a KeyboardInterrupt in the cell); True once the cell said it
        ended within INTERRUPT_GRACE_S. Meanwhile what it writes past its caps is dropped."""
        self.stopping = True
        try:
            os.kill(self.launcher.runner_pid(self.proc), signal.SIGINT)
        except (ProcessLookupError, PermissionError) as exc:
            log.warning("could not interrupt a session's cell: %s", exc)
            return False
        try:
            self.follow_cell(deadline_s=time.monotonic() + INTERRUPT_GRACE_S)
        except _Kill:
            return False
        return self.cell_done is not None and not self.exited()

    def run_cell(self, request: dict) -> tuple[dict, str | None]:
        """The cell's ``finished`` fields, and why its session ended with it (None: it lives on)."""
        t0 = self.t0 = time.monotonic()
        self.deadline = t0 + self.limits.wall_s
        self.cpu_at_start = self.launcher.cpu_seconds(self.proc)
        kill: _Kill | None = None
        ended: str | None = None
        try:
            self.send_request(request)
            self.follow_cell()
        except _Kill as k:
            kill = k
        if kill is not None and not self.exited():
            interruptible = kill.message != ev.ENDED["session_ended"] and kill.status in (
                ev.TIMED_OUT, ev.CANCELLED, ev.LIMIT_EXCEEDED) and not kill.message.startswith(("CPU", "process"))
            if interruptible and self.interrupt():
                kill = _Kill(kill.status, ev.ended("cell_interrupted", reason=kill.message))
            else:
                if kill.message == ev.ENDED["session_ended"]:
                    ended = "it was ended"
                elif interruptible:
                    ended = "its cell did not stop when interrupted"
                    kill = _Kill(kill.status, ev.ended("cell_did_not_stop", reason=kill.message))
                else:
                    ended = str(kill.message)
                    kill = _Kill(kill.status, ev.ended("session_ended_by", reason=kill.message))
                self.launcher.stop(self.proc)
        if self.exited() or ended is not None:
            finished, ended = self._ended(kill, t0, ended), ended or "its runner ended"
        else:
            finished = self._finished_alive(kill, t0)
            self.launcher.read_live(self.proc)  # the next cell's counters, and the idle watch's, are live
        if self.early is not None:  # ended at its "ended"; what came after was its profile's stop
            self.profile_not_kept(kill)
            finished = self.early
        return finished, ended

    def finished_early(self, said: dict) -> dict:
        return self._finished_alive(None, self.t0, said)

    def _finished_alive(self, kill: _Kill | None, t0: float, done: dict | None = None) -> dict:
        done = (self.cell_done or {}) if done is None else done
        if kill is not None:
            status, message = kill.status, kill.message
        elif done.get("stopped_by") == "cpu":
            status, message = ev.LIMIT_EXCEEDED, ev.ended(
                "cell_interrupted", reason=ev.ended("cell_cpu", seconds=f"{self.cpu_s:g}"))
        elif done.get("stopped_by") == "interrupted":
            status, message = ev.CANCELLED, ev.ended("interrupted")
        else:
            status, message = done.get("status", ev.FAILED), ""
        return self._fields(status, message, t0, done)

    def _ended(self, kill: _Kill | None, t0: float, ended: str | None) -> dict:
        """The runner is gone: the status from what was seen (the sandbox's report first)."""
        self.drain()
        returncode = 0
        if self.exit_info is None:
            self.exit_info = self.proc.wait_exit(block=True)
        if self.exit_info is not None:
            returncode = self.exit_info[0]
        status, message = decide_status(
            kill=(kill.status, kill.message) if kill is not None else None,
            sandbox_reason=self.launcher.exit_reason(self.proc, returncode) if kill is None else None,
            runner_exit=None, returncode=returncode, death_signal=self.launcher.death_signal(returncode),
        )
        if status == ev.SUCCEEDED:  # it left (os._exit(0), sys.exit in a thread): no cell ends so
            status, message = ev.FAILED, ev.ended("cell_ended_process")
        if ended is None or ended == "its runner ended":
            message = ev.ended("session_ended_with", reason=message)
        return self._fields(status, message, t0)

    def _fields(self, status: str, message: str, t0: float, done: dict | None = None) -> dict:
        """``done``: the runner's word on the cell ("cell_done", or a profiled cell's "ended")."""
        done = (self.cell_done or {}) if done is None else done
        cpu_ms = None
        cpu = self.launcher.cpu_seconds(self.proc)
        if cpu is not None and self.cpu_at_start is not None:
            cpu_ms = round((cpu - self.cpu_at_start) * 1000, 1)
        elif not self.launcher.sandboxed and done:
            cpu_ms = done.get("cpu_ms")  # no counters but the runner's own (a reused chip's run)
        peak = self.launcher.peak_memory_bytes(self.proc)
        if peak is None and not self.launcher.sandboxed and done.get("host_peak_kb"):
            # Unsandboxed, the runner's own reading, without a device's mappings (runner/common.py).
            peak = done["host_peak_kb"] * 1024
        return protocol.finished_fields(status, message, wall_ms=round((time.monotonic() - t0) * 1000, 1),
                                        cpu_ms=cpu_ms, peak_memory_kb=peak // 1024 if peak else None,
                                        output_bytes=self.output_bytes, events=self.budget.count + 1,
                                        truncated=self.truncated,
                                        device_peak_bytes=done.get("device_peak_bytes"))


TICK_S = 0.1
# How long the runner's main thread has, after its "cell_done", to be back at its stdin.
IDLE_PROOF_S = 2.0


# The read system call's number on this machine (None: one this does not know; not checked).
READ = {"x86_64": "0", "aarch64": "63"}.get(platform.machine())


def waits_for_input(pid: int, within_s: float = IDLE_PROOF_S) -> bool:
    """Whether the process's main thread is blocked reading its stdin (``read`` on fd 0), which
    is where a session's runner is between cells; True where /proc cannot say (not Linux, or a
    kernel without /proc/<pid>/syscall: gVisor's); False once the process is gone."""
    deadline = time.monotonic() + within_s
    # The runner reads its stdin microseconds after its "cell_done", so the first look usually
    # finds it there, and a miss is a matter of its being scheduled: look again soon, then less
    # often (a 5 ms pause after every miss was 2-3 ms of a cell's median).
    pause = 0.0002
    while True:
        try:
            with open(f"/proc/{pid}/syscall") as f:
                fields = f.read().split()
        except FileNotFoundError:
            # No /proc at all, or a /proc that does not offer it for a process that is there.
            return not os.path.isdir("/proc/self") or os.path.isdir(f"/proc/{pid}")
        except OSError:
            return True  # not ours to read: the other walls hold
        if READ is None:
            return True
        if len(fields) > 1 and fields[0] == READ and int(fields[1], 16) == 0:  # read(0, ...)
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.005)


@dataclass
class LiveSession:
    """A session this node holds."""

    id: str
    runner: Runner
    idle_s: float
    last_used: float = field(default_factory=time.monotonic)
    cells: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The sandbox's CPU when its last cell ended: what it uses while idle is counted from there.
    cpu_idle_from: float | None = None
    end_requested: bool = False
    names: dict = field(default_factory=dict)
    # On exclusive chips: the chips its runner holds (its lease) and how long its first cell waited.
    chips: str | None = None
    waited_ms: float | None = None

    def lease_until(self) -> float:
        """When its lease ends if no cell runs before (epoch seconds)."""
        return time.time() + self.idle_s - (time.monotonic() - self.last_used)


class SessionHost:
    """The sessions of one executor node."""

    def __init__(self, *, redis_client, name: str, launcher: Launcher, spawn, release,
                 chips: ChipPool | None = None):
        """``spawn``/``release``: a session's runner from the node's pool and back; on exclusive
        chips (``chips``), a chip's runner leased in the chips' line and given back to it."""
        self.redis = redis_client
        self.name = name
        self.launcher = launcher
        self.chips = chips
        self.spawn, self.release = spawn, (chips.release if chips is not None else release)
        self.sessions: dict[str, LiveSession] = {}
        # Slots reserved for runners being started (session_for).
        self.starting = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def queue(self) -> str:
        return sessionstate.node_queue(self.name)

    def count(self) -> int:
        """Sessions held, and those whose runner is starting (their slot is taken)."""
        return len(self.sessions) + self.starting

    def start(self) -> None:
        if self._thread is None:
            self.forget_held_before()
            self._thread = threading.Thread(target=self._pass_loop, name="sessions", daemon=True)
            self._thread.start()

    def stop_all(self, reason: str) -> None:
        self._stop.set()
        for session in list(self.sessions.values()):
            self.end(session, reason)

    # -- a cell ----------------------------------------------------------------------------------

    def session_for(self, session_id: str, idle_s: float, limits: Limits, *, person: str | Callable[[], str] = "",
                    on_wait=None, cancelled=None) -> tuple[LiveSession | None, str | None]:
        """The session's runner on this node, started now for its first cell; else why not. On
        exclusive chips, ``person``'s lease of a chip, waited for in line (``on_wait``, ``cancelled``:
        as ChipPool.take's); ``person`` may be a function, asked only when the runner is started."""
        with self._lock:
            session = self.sessions.get(session_id)
        if session is not None:
            return session, None
        state = sessionstate.read(self.redis, session_id)
        if state is None or state["state"] == sessionstate.STOPPED:
            return None, (state or {}).get("stopped_reason") or "the session is not known here"
        if state["node"] and state["node"] != self.name:
            return None, "the session's runner lives on another node, which no longer answers for it"
        if state["node"] == self.name:  # this node held it, and no longer does (a restart)
            return None, "its node restarted"
        # A slot of this node's EXECUTOR_MAX_SESSIONS is reserved before the runner is started
        # (a fork and a sandbox: tens of milliseconds), and given back if it is not: counted
        # apart, first cells arriving together each saw a free slot and all started.
        with self._lock:
            if len(self.sessions) + self.starting >= settings.MAX_SESSIONS:
                return None, (f"this node holds the most sessions it may ({settings.MAX_SESSIONS}); "
                              "stop one of yours or try again later")
            self.starting += 1
        try:
            return self._start(session_id, idle_s, limits, person=person() if callable(person) else person,
                               on_wait=on_wait, cancelled=cancelled)
        finally:
            with self._lock:
                self.starting -= 1

    def _start(self, session_id: str, idle_s: float, limits: Limits, *, person: str = "", on_wait=None,
               cancelled=None) -> tuple[LiveSession | None, str | None]:
        if not self.redis.hsetnx(sessionstate.key(session_id), "node", self.name):
            return None, "the session's runner was started on another node"
        try:
            if self.chips is not None:
                runner = self.chips.lease(person or f"session:{session_id}", on_wait=on_wait, cancelled=cancelled)
            else:
                runner = self.spawn()
        except Cancelled:
            return None, "it was cancelled while it waited for a chip"
        except Exception as exc:
            log.exception("could not start session %s's runner", session_id)
            self._give_up(session_id, f"its runner could not start: {exc}")
            return None, f"its runner could not start: {exc}"
        try:
            self.launcher.restrict(runner.proc, limits, cpu=False)
            # A chip's runner was started for a run, with a run's CPU: the session's allowance now.
            if self.chips is not None or not getattr(self.launcher, "sets_session_cpu", False):
                self.launcher.allow_session_cpu(runner.proc, settings.SESSION_CPU_S)
            runner.proc.stdin.write(protocol.request("session"))
            runner.proc.stdin.flush()
        except (RuntimeError, OSError, ValueError) as exc:  # its limits refused, or it died while starting
            self.release(runner)
            self._give_up(session_id, f"its runner could not start: {exc}")
            return None, f"its runner could not start: {exc}"
        most = settings.SESSION_IDLE_S if self.chips is None else settings.ACCELERATOR_SESSION_IDLE_S
        session = LiveSession(id=session_id, runner=runner, idle_s=min(idle_s or most, most))
        held = self.chips.held(runner) if self.chips is not None else None
        if held is not None:
            session.chips = ",".join(str(c.index) for c in held.chips)
            session.waited_ms = round(held.waited_ms, 1)
        with self._lock:
            self.sessions[session_id] = session
        try:
            self.redis.sadd(self.held_key, session_id)
        except redis.exceptions.RedisError:
            log.warning("could not note session %s among this node's", session_id)
        return session, None

    def lease_fields(self, session: LiveSession) -> dict:
        """What a leased session's state and its cells' ``started`` say of its lease."""
        if session.chips is None or self.chips is None:
            return {}
        return {"chips": session.chips, "lease_until": round(session.lease_until(), 1),
                "chip_waiting": self.chips.waiting()}

    def _give_up(self, session_id: str, reason: str) -> None:
        """A session this node took (its name is on it) but could not start: stopped, with why,
        so that it is not left naming a node that does not hold it."""
        try:
            sessionstate.stop(self.redis, session_id, reason)
        except redis.exceptions.RedisError:
            log.warning("session %s could not start (%s) and Redis could not be told", session_id, reason)

    @property
    def held_key(self) -> str:
        """The set of the sessions this node holds, by its name: what a restart of it stops."""
        return f"sessions:node:{self.name}"

    def forget_held_before(self) -> int:
        """At start: the sessions this node held before it restarted are gone with their runners;
        each is stopped, with why, so that the table and the node's count agree again (the web
        side counts live sessions against the nodes' slots). Returns how many."""
        try:
            held = [sid.decode() if isinstance(sid, bytes) else sid for sid in self.redis.smembers(self.held_key)]
            for session_id in held:
                state = sessionstate.read(self.redis, session_id)
                if state is not None and state["node"] == self.name:
                    sessionstate.stop(self.redis, session_id, "its node restarted")
            self.redis.delete(self.held_key)
        except redis.exceptions.RedisError:
            log.warning("could not stop the sessions this node held before it restarted")
            return 0
        if held:
            log.info("stopped %d sessions this node held before it restarted", len(held))
        return len(held)

    def run_cell(self, session: LiveSession, code: str, options: dict, limits: Limits, emit, *,
                 should_cancel, tick, on_message, lookup, keep_profile=None, hold=None, tell=None) -> dict:
        """Run one cell; the ``finished`` fields. The session's state is told as it changes; the
        state the cell left it in is told here, or with ``tell``, handed to ``tell(fields)`` for
        the caller to tell with the cell's end and the session's freedom for the next
        (``sessionstate.cell_over``), unless the session ended with the cell. ``hold``: where the
        cell's ``shapes`` goes (``RunRelay.hold``)."""
        with session.lock:
            session.last_used = time.monotonic()
            supervision = CellSupervision(
                session.runner, self.launcher, limits, emit, should_cancel=should_cancel, tick=tick,
                tick_every_s=0.2, on_message=on_message, lookup=lookup, keep_profile=keep_profile, cpu_s=limits.cpu_s,
                should_end=lambda: session.end_requested, hold=hold)
            supervision.handlers["shapes"] = self._shapes_to(session, supervision)
            try:
                finished, ended = supervision.run_cell({"code": code, "options": options})
            except Exception as exc:  # an executor fault: the session cannot be trusted to be whole
                log.exception("session %s: a cell's supervision failed", session.id)
                finished, ended = protocol.finished_fields(ev.LOST, ev.ended("executor_failed", error=str(exc))), \
                    "the executor failed while it ran a cell"
            session.cells += 1
            session.last_used = time.monotonic()
            session.cpu_idle_from = self.launcher.cpu_seconds(session.runner.proc)
            done = supervision.cell_done or {}
        if ended is not None:
            self.end(session, f"{ended}: {finished['message']}" if finished.get("message") else ended)
        else:
            fields = dict(state=sessionstate.IDLE, cells_run=session.cells, names=session.names,
                          memory_bytes=done.get("memory_bytes"), last_used=time.time(), **self.lease_fields(session))
            if tell is not None:
                tell(fields)
                return finished
            try:
                sessionstate.update(self.redis, session.id, **fields)
            except redis.exceptions.RedisError:
                log.warning("could not tell session %s's state", session.id)
        return finished

    def _shapes_to(self, session: LiveSession, supervision: CellSupervision):
        """The cell's ``shapes`` event goes to its log as ever, and what it says the namespace
        holds to the session's state (the API's and the page's "names")."""
        def on_shapes(type_: str, message: dict, line: bytes, draining: bool) -> None:
            fields = protocol.rebuild(type_, dict(message), protocol.Problems())
            supervision.on_event(type_, message, line, draining)
            names = (fields or {}).get("names")
            if isinstance(names, dict):  # the whole namespace as the cell left it, in place of the last
                session.names = {str(name)[:80]: str(value.get("type", ""))[:120]
                                 for name, value in list(names.items())[:MAX_NAMES] if isinstance(value, dict)}
        return on_shapes

    # -- the node's pass -------------------------------------------------------------------------

    def end(self, session: LiveSession, reason: str) -> None:
        """Stop the session: its runner goes, its slot with it, and its state says why."""
        with self._lock:
            if self.sessions.pop(session.id, None) is None:
                return
        session.end_requested = True
        with session.lock:  # a cell in flight ends first (it sees end_requested)
            try:
                self.release(session.runner)  # killed, reaped, its slot free
            except Exception:
                log.exception("ending session %s", session.id)
        try:
            sessionstate.stop(self.redis, session.id, reason)
            self.redis.srem(self.held_key, session.id)
        except redis.exceptions.RedisError:
            log.warning("session %s ended (%s) but Redis could not be told", session.id, reason)
        log.info("session %s ended: %s", session.id, reason)

    def _tell(self, session: LiveSession, **fields) -> None:
        try:
            sessionstate.update(self.redis, session.id, **fields)
        except redis.exceptions.RedisError:
            log.warning("could not tell session %s's state", session.id)

    def _pass_loop(self) -> None:
        while not self._stop.wait(PASS_S):
            for session in list(self.sessions.values()):
                try:
                    self._look_at(session)
                except Exception:
                    log.exception("looking at session %s", session.id)

    def _look_at(self, session: LiveSession) -> None:
        state = sessionstate.read(self.redis, session.id)
        if state is None or state["stop"] or state["state"] == sessionstate.STOPPED:
            session.end_requested = True
            self.end(session, (state or {}).get("stopped_reason") or "it was ended")
            return
        if session.lock.locked():  # a cell runs: its supervision watches it
            return
        idle = time.monotonic() - session.last_used
        if idle > session.idle_s:
            minutes = session.idle_s / 60
            self.end(session, f"it was idle for {minutes:g} minute{'s' if minutes != 1 else ''}"
                              if session.idle_s >= 60 else f"it was idle for {session.idle_s:g} s")
        elif not session.runner.alive() or session.runner.proc.wait_exit(block=False) is not None:
            self.end(session, "its runner ended while no cell ran")
        elif self._idle_cpu(session) > settings.SESSION_IDLE_CPU_S:
            self.end(session, f"it used over {settings.SESSION_IDLE_CPU_S} s of CPU while no cell ran "
                              "(a thread left running)")
        elif session.chips is not None and self.chips is not None and \
                self.chips.waiting() != state.get("chip_waiting"):
            self._tell(session, **self.lease_fields(session))  # how many wait for a chip, on its page
        else:
            self.redis.expire(sessionstate.key(session.id), sessionstate.TTL_S)

    def _idle_cpu(self, session: LiveSession) -> float:
        cpu = self.launcher.cpu_seconds(session.runner.proc)
        if cpu is None or session.cpu_idle_from is None:
            return 0.0
        return cpu - session.cpu_idle_from
