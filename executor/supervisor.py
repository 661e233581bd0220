"""Drive one runner through one run: send the code, relay what it produces, enforce the wall
clock, the output cap and cancellation, and decide the terminal status.

    supervisor (a thread of the executor worker)
      ├─ stdin ──────────▶ runner     one JSON line: {"code", "options"}
      ├─ fd 1, fd 2 ◀───── runner     the snippet's raw output → stdout/stderr events
      └─ event fd ◀─────── runner     JSON lines → compiled/timing/display/error events

The runner is untrusted once user code runs in it: its events are checked against
``RUNNER_EVENT_TYPES``, malformed lines are dropped, and the terminal status is decided here from
what the supervisor itself saw (its own kill reason, the sandbox's limit report, the exit code).
"""

from __future__ import annotations

import codecs
import json
import os
import select
import signal
import subprocess
import time
from collections import deque
from dataclasses import dataclass, field
from collections.abc import Callable

from . import events as ev
from .runner import protocol
from .sandbox import Launcher, Limits, human_bytes

READ_CHUNK = 64 * 1024
# Structured events (jaxpr and HLO dumps) are bounded apart from the user's output.
EVENT_BYTES_CAP = 16 * 1024**2
TICK_S = 0.1
COALESCE_QUIET_S = 0.005
COALESCE_MAX_S = 0.05
# One stdout/stderr event carries at most this much text; more is sent as several events, so
# every event fits a websocket message and a database row comfortably.
OUTPUT_EVENT_MAX_CHARS = 64 * 1024
# While this much output waits to be sent (events per second spent), the pipes are not read.
PENDING_MAX_CHARS = 4 * OUTPUT_EVENT_MAX_CHARS
# Malformed runner events are noted on stderr, each kind of fault once, in at most this many lines.
MAX_PROTOCOL_NOTES = 5
# Runner event lines handled between two looks at the wall clock and cancel.
LINES_PER_PUMP = 256
# After the end (exit or kill), how long what is still in the pipes is read.
DRAIN_S = 0.5


@dataclass
class Runner:
    """A started runner process and what it told us when it became ready."""

    proc: subprocess.Popen
    slot: int
    info: dict = field(default_factory=dict)
    event_buffer: bytes = b""
    started_at: float = field(default_factory=time.monotonic)
    closed: bool = False

    @property
    def event_fd(self) -> int:
        return self.proc.event_fd

    def alive(self) -> bool:
        return self.proc.returncode is None and self.proc.poll() is None

    def close(self) -> None:
        """Close our ends of its pipes, once (a second os.close could hit a reused fd)."""
        if self.closed:
            return
        self.closed = True
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if f:
                    f.close()
            except OSError:
                pass
        os.close(self.event_fd)
        self.proc.release()


def discard(runner: Runner, launcher) -> None:
    """End a runner that will run no (more) snippets: kill what is left of its sandbox, reap
    it, close our ends of its pipes."""
    try:
        launcher.cleanup(runner.proc)
        if runner.proc.returncode is None:
            try:
                runner.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass  # cleanup killed it; the kernel reaps it with us at worst
    finally:
        runner.close()


def wait_ready(runner: Runner, timeout: float) -> dict:
    """Read the runner's first event, "ready", and keep whatever followed it."""
    deadline = time.monotonic() + timeout
    buf = runner.event_buffer
    while b"\n" not in buf:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"runner not ready after {timeout:g} s")
        r, _, _ = select.select([runner.event_fd], [], [], remaining)
        if r:
            chunk = os.read(runner.event_fd, READ_CHUNK)
            if not chunk:
                err = b""
                try:
                    err = runner.proc.stderr.read1(4096)
                except (OSError, ValueError):
                    pass
                raise RuntimeError(
                    f"runner exited during warm-up: {err.decode(errors='replace').strip()[-500:]}"
                )
            buf += chunk
    line, _, rest = buf.partition(b"\n")
    message = json.loads(line)
    if message.get("type") != "ready":
        raise RuntimeError(f"runner sent {message.get('type')!r} before ready")
    runner.event_buffer = rest
    # Whatever jax printed while warming up (platform warnings) is not the snippet's output.
    for stream in (runner.proc.stdout, runner.proc.stderr):
        while select.select([stream], [], [], 0)[0] and os.read(stream.fileno(), READ_CHUNK):
            pass
    runner.info = {k: v for k, v in message.items() if k != "type"}
    return runner.info


class _Kill(Exception):
    def __init__(self, status: str, message: str):
        self.status, self.message = status, message


def supervise(
    runner: Runner,
    launcher: Launcher,
    request: dict,
    limits: Limits,
    emit: Callable[..., None],
    *,
    should_cancel: Callable[[], bool] = lambda: False,
    tick: Callable[[], None] = lambda: None,
    tick_every_s: float = 0.2,
) -> dict:
    """Run ``request`` on ``runner`` and return the fields of the ``finished`` event.

    ``emit(type, **fields)`` is called for each event, in order, from this thread.
    """
    proc = runner.proc
    t0 = time.monotonic()
    deadline = t0 + limits.wall_s
    fds = {proc.stdout.fileno(): ev.STDOUT, proc.stderr.fileno(): ev.STDERR, runner.event_fd: "event"}
    decoders = {
        ev.STDOUT: codecs.getincrementaldecoder("utf-8")(errors="replace"),
        ev.STDERR: codecs.getincrementaldecoder("utf-8")(errors="replace"),
    }
    state = {"output": 0, "event_bytes": 0, "exit": None, "truncated": False}
    budget = _Budget(limits.events_per_s, limits.events)
    problems = protocol.Problems()
    event_buffer = [runner.event_buffer]
    event_lines: deque[bytes] = deque()

    def send(type_: str, *, draining: bool = False, **fields) -> None:
        """Every event of the run but ``finished`` goes out through here, counted. One slot is
        kept for ``finished``; while draining after the end, what does not fit is dropped."""
        if budget.count >= limits.events - 1:
            state["truncated"] = True
            if draining:
                return
            raise _Kill(ev.LIMIT_EXCEEDED, f"event limit of {limits.events} events exceeded")
        budget.take()
        emit(type_, **fields)

    # Output is coalesced: a print() is several writes, and a tight loop of prints would
    # otherwise become thousands of one-byte events. Pending text (stdout and stderr segments,
    # in the order they came) is sent once output has been quiet for COALESCE_QUIET_S, after
    # COALESCE_MAX_S, or before any structured event, in events of at most
    # OUTPUT_EVENT_MAX_CHARS, and never faster than the run's events per second: meanwhile it
    # keeps coalescing, and past PENDING_MAX_CHARS the pipes are not read, so the snippet waits.
    pending: list[list] = []  # [kind, [texts], chars]
    timing = {"since": 0.0, "last": 0.0, "chars": 0}

    def flush_output(draining: bool = False) -> bool:
        """Send pending output as the budget allows; True when none is left."""
        while pending:
            kind, parts, _ = pending[0]
            text = "".join(parts)
            while text:
                if not draining and not budget.available():
                    pending[0][1:] = [[text], len(text)]
                    timing["chars"] = sum(seg[2] for seg in pending)
                    return False
                piece, text = text[:OUTPUT_EVENT_MAX_CHARS], text[OUTPUT_EVENT_MAX_CHARS:]
                send(kind, draining=draining, text=piece)
            pending.pop(0)
        timing.update(since=0.0, chars=0)
        return True

    def on_output(kind: str, data: bytes) -> None:
        allowed = limits.output_bytes - state["output"]
        over = len(data) > allowed
        if over:
            data = data[: max(allowed, 0)]
        state["output"] += len(data)
        text = decoders[kind].decode(data)
        if text:
            if pending and pending[-1][0] == kind:
                pending[-1][1].append(text)
                pending[-1][2] += len(text)
            else:
                pending.append([kind, [text], len(text)])
            timing["chars"] += len(text)
            now = time.monotonic()
            timing["last"] = now
            if not timing["since"]:
                timing["since"] = now
        if over:
            state["truncated"] = True
            raise _Kill(ev.LIMIT_EXCEEDED, f"output limit of {human_bytes(limits.output_bytes)} exceeded")

    def on_event_bytes(data: bytes) -> None:
        state["event_bytes"] += len(data)
        if state["event_bytes"] > EVENT_BYTES_CAP:
            raise _Kill(ev.LIMIT_EXCEEDED, f"event limit of {human_bytes(EVENT_BYTES_CAP)} exceeded")
        event_buffer[0] += data
        *lines, event_buffer[0] = event_buffer[0].split(b"\n")
        event_lines.extend(line for line in lines if line.strip())

    notes = [0]

    def note_problems(before: int) -> None:
        """One stderr line for what one runner message got wrong; at most MAX_PROTOCOL_NOTES."""
        new = problems.seen[before:]
        if new and notes[0] < MAX_PROTOCOL_NOTES:
            notes[0] += 1
            send(ev.STDERR, draining=True,
                 text=f"[playground] an event from the run was not valid and was repaired or dropped: "
                      f"{'; '.join(new)}\n")

    def handle_event_line(line: bytes, draining: bool = False) -> None:
        before = len(problems.seen)
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            problems.add("a line that is not JSON (dropped)")
            message = None
        if isinstance(message, dict):
            type_ = message.pop("type", None)
            message.pop("seq", None)
            if not isinstance(type_, str):
                problems.add("an event whose type is not a string (dropped)")
            elif type_ == "exit":
                exit_ = protocol.rebuild(type_, message, problems, spec=protocol.RUNNER_MESSAGES)
                if exit_ and exit_["status"] in (ev.SUCCEEDED, ev.FAILED):
                    state["exit"] = exit_["status"]
            elif type_ not in protocol.RUNNER_EVENT_TYPES and type_ in ev.EVENT_TYPES:
                problems.add(f"a {str(type_)!r} event, which only the executor sends (dropped)")
            elif (fields := protocol.rebuild(type_, message, problems)) is not None:
                send(type_, draining=draining, **fields)
        elif message is not None:
            problems.add("an event that is not a JSON object (dropped)")
        note_problems(before)

    def handle_event_lines(draining: bool = False) -> None:
        """Structured events, in order, after the output that came before them; at most
        LINES_PER_PUMP at a time, so that the wall clock and cancel are looked at in between
        however many lines the runner sent."""
        for _ in range(len(event_lines) if draining else LINES_PER_PUMP):
            if not event_lines:
                return
            if not flush_output(draining):
                return
            if not draining and not budget.available():
                return
            handle_event_line(event_lines.popleft(), draining)

    def pump(timeout: float) -> None:
        now = time.monotonic()
        if pending and (now - timing["last"] >= COALESCE_QUIET_S or now - timing["since"] >= COALESCE_MAX_S
                        or timing["chars"] >= OUTPUT_EVENT_MAX_CHARS):
            flush_output()
        handle_event_lines()
        # Read only what can be passed on: nothing while event lines wait for the budget (what the
        # snippet writes meanwhile comes after them), no more output while much waits. What is not
        # read waits in the pipe, and the snippet with it. While an event line is half read (a
        # large one, a compilation's texts), only the rest of it: the runner flushes the snippet's
        # output before it writes an event, so output that is readable now came after it.
        mid_event = bool(event_buffer[0])
        readable = [] if event_lines else [
            fd for fd, kind in fds.items()
            if kind == "event" or (not mid_event and timing["chars"] < PENDING_MAX_CHARS)]
        if event_lines and budget.available():
            timeout = 0  # more lines to handle now; only the wall clock and cancel come first
        elif pending or event_lines:
            timeout = min(timeout, max(budget.wait_s(), COALESCE_QUIET_S))
        ready, _, _ = select.select(readable, [], [], max(timeout, 0))
        # Output before events: the runner flushes the snippet's output before it reports an
        # error, so when both are readable the output came first.
        for fd in sorted(ready, key=lambda f: fds[f] == "event"):
            data = os.read(fd, READ_CHUNK)
            kind = fds[fd]
            if not data:
                del fds[fd]
            elif kind == "event":
                on_event_bytes(data)
            else:
                on_output(kind, data)

    exit_info: dict = {}

    def exited() -> bool:
        if not exit_info and (done := proc.wait_exit(block=False)) is not None:
            exit_info["done"] = done
        return bool(exit_info)

    # Readable when the process exits (a pidfd, or the template's report); elsewhere (a Mac,
    # unsandboxed) the wait below is a plain tick.
    exit_fd = proc.exit_fd()
    kill: _Kill | None = None
    # The sandbox's CPU counter includes the warm-up; the run's share is what it adds from here.
    cpu_at_start = launcher.cpu_seconds(proc)
    try:
        launcher.restrict(proc, limits)
        try:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it died while idle; its exit status says how
        next_tick = t0
        while fds or pending or event_lines or not exited():
            now = time.monotonic()
            if now >= deadline:
                raise _Kill(ev.TIMED_OUT, f"wall-clock limit of {limits.wall_s:g} s exceeded")
            if now >= next_tick:
                next_tick = now + tick_every_s
                tick()
                if should_cancel():
                    raise _Kill(ev.CANCELLED, "cancelled")
                if (hit := launcher.limit_hit(proc)) is not None:
                    raise _Kill(*hit)
            if fds or pending or event_lines:
                pump(min(TICK_S, deadline - now))
            else:
                # Pipes closed: it is exiting, or the snippet closed them and runs on. A pidfd
                # becomes readable when the process exits, so this wakes at once, not on a tick.
                wait_s = max(min(TICK_S, deadline - now), 0)
                if exit_fd is not None:
                    select.select([exit_fd], [], [], wait_s)
                else:
                    time.sleep(min(wait_s, 0.01))
    except _Kill as k:
        kill = k
    finally:
        launcher.stop(proc)

    # What was written before the end is still in the pipes: keep it, as far as the limits go.
    drain_until = time.monotonic() + DRAIN_S
    try:
        while fds and time.monotonic() < drain_until:
            ready, _, _ = select.select(list(fds), [], [], max(drain_until - time.monotonic(), 0))
            if not ready:
                break
            for fd in sorted(ready, key=lambda f: fds[f] == "event"):
                data = os.read(fd, READ_CHUNK)
                if not data:
                    del fds[fd]
                elif fds[fd] == "event":
                    on_event_bytes(data)
                else:
                    on_output(fds[fd], data)
    except _Kill:
        pass
    for kind, decoder in decoders.items():
        tail = decoder.decode(b"", final=True)
        if tail:
            pending.append([kind, [tail], len(tail)])
    try:
        flush_output(draining=True)
        handle_event_lines(draining=True)
        flush_output(draining=True)
    except _Kill:
        pass

    if not exit_info:
        exit_info["done"] = proc.wait_exit(block=True)
    returncode, cpu_s, peak_kb = exit_info["done"]
    cpu_ms = round(cpu_s * 1000, 1)
    # Under a sandbox, wait4 sees only its launcher process: ask the sandbox instead.
    if (cpu_now := launcher.cpu_seconds(proc)) is not None and cpu_at_start is not None:
        cpu_ms = round((cpu_now - cpu_at_start) * 1000, 1)
    if (peak := launcher.peak_memory_bytes(proc)) is not None:
        peak_kb = peak // 1024
    wall_ms = round((time.monotonic() - t0) * 1000, 1)

    status, message = decide_status(
        kill=(kill.status, kill.message) if kill is not None else None,
        sandbox_reason=launcher.exit_reason(proc) if kill is None else None,
        runner_exit=state["exit"], returncode=returncode, death_signal=launcher.death_signal(returncode),
    )
    runner.close()
    return protocol.finished_fields(status, message, wall_ms=wall_ms, cpu_ms=cpu_ms, peak_memory_kb=peak_kb,
                                    output_bytes=state["output"], events=budget.count + 1,
                                    truncated=state["truncated"])


class _Budget:
    """A run's events: at most ``total``, and ``per_s`` a second (a bucket that holds one
    second's worth, so short bursts pass at once)."""

    def __init__(self, per_s: int, total: int):
        self.per_s, self.total = per_s, total
        self.tokens = float(per_s)
        self.at = time.monotonic()
        self.count = 0

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(float(self.per_s), self.tokens + (now - self.at) * self.per_s)
        self.at = now

    def available(self) -> bool:
        self._refill()
        return self.tokens >= 1

    def wait_s(self) -> float:
        """Until the next event may go."""
        self._refill()
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.per_s

    def take(self) -> None:
        self.tokens -= 1
        self.count += 1


def decide_status(*, kill: tuple[str, str] | None, sandbox_reason: tuple[str, str] | None,
                  runner_exit: str | None, returncode: int, death_signal: int | None) -> tuple[str, str]:
    """A run's terminal status and message, from what the supervisor saw, in order of trust: its
    own kill (wall clock, output, events, cancel), the sandbox's report (memory, pids, CPU), the
    runner's "exit" message (the snippet raised or not), then the process's exit code. Pure:
    tests/unit/test_status.py holds its table."""
    if kill is not None:
        return kill
    if sandbox_reason is not None:
        return sandbox_reason
    if runner_exit in (ev.SUCCEEDED, ev.FAILED):
        return runner_exit, ""
    if returncode == 0:
        return ev.SUCCEEDED, ""
    if death_signal is not None:
        return ev.FAILED, f"the snippet's process was killed by {_signal_name(death_signal)}"
    return ev.FAILED, f"the snippet's process exited with code {returncode}"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
