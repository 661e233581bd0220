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
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from . import events as ev
from .sandbox import Launcher, Limits, human_bytes

READ_CHUNK = 64 * 1024
# Structured events (jaxpr and HLO dumps) are bounded apart from the user's output.
EVENT_BYTES_CAP = 16 * 1024**2
TICK_S = 0.1
COALESCE_QUIET_S = 0.005
COALESCE_MAX_S = 0.05


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
    event_buffer = [runner.event_buffer]

    # Output is coalesced: a print() is several writes, and a tight loop of prints would
    # otherwise become thousands of one-byte events. Pending text is sent once its stream has
    # been quiet for COALESCE_QUIET_S, after COALESCE_MAX_S, or before any structured event.
    pending: dict[str, list[str]] = {ev.STDOUT: [], ev.STDERR: []}
    pending_since = [0.0]

    def flush_output() -> None:
        for kind, parts in pending.items():
            if parts:
                emit(kind, text="".join(parts))
                parts.clear()
        pending_since[0] = 0.0

    def on_output(kind: str, data: bytes) -> None:
        allowed = limits.output_bytes - state["output"]
        over = len(data) > allowed
        if over:
            data = data[: max(allowed, 0)]
        state["output"] += len(data)
        text = decoders[kind].decode(data)
        if text:
            other = ev.STDERR if kind == ev.STDOUT else ev.STDOUT
            if pending[other]:
                flush_output()  # keep stdout and stderr in the order they came
            pending[kind].append(text)
            if not pending_since[0]:
                pending_since[0] = time.monotonic()
        if over:
            state["truncated"] = True
            raise _Kill(ev.LIMIT_EXCEEDED, f"output limit of {human_bytes(limits.output_bytes)} exceeded")

    def on_events(data: bytes) -> None:
        state["event_bytes"] += len(data)
        if state["event_bytes"] > EVENT_BYTES_CAP:
            raise _Kill(ev.LIMIT_EXCEEDED, f"event limit of {human_bytes(EVENT_BYTES_CAP)} exceeded")
        event_buffer[0] += data
        *lines, event_buffer[0] = event_buffer[0].split(b"\n")
        if lines:
            flush_output()
        for line in lines:
            try:
                message = json.loads(line)
                type_ = message.pop("type")
            except (ValueError, AttributeError, KeyError, TypeError):
                continue  # not ours: the snippet wrote to the event pipe
            if type_ == "exit":
                state["exit"] = message.get("status")
            elif type_ in ev.RUNNER_EVENT_TYPES:
                message.pop("seq", None)
                emit(type_, **message)

    def pump(timeout: float) -> None:
        if pending_since[0]:
            if time.monotonic() - pending_since[0] >= COALESCE_MAX_S:
                flush_output()
            else:
                timeout = min(timeout, COALESCE_QUIET_S)
        ready, _, _ = select.select(list(fds), [], [], max(timeout, 0))
        if not ready:
            flush_output()
        # Output before events: the runner flushes the snippet's output before it reports an
        # error, so when both are readable the output came first.
        for fd in sorted(ready, key=lambda f: fds[f] == "event"):
            data = os.read(fd, READ_CHUNK)
            kind = fds[fd]
            if not data:
                del fds[fd]
            elif kind == "event":
                on_events(data)
            else:
                on_output(kind, data)

    exit_info: dict = {}

    def exited() -> bool:
        # os.wait4 rather than proc.poll(): it also gives the run's CPU time and peak memory.
        if not exit_info:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                exit_info.update(status=status, usage=usage)
        return bool(exit_info)

    # A pidfd becomes readable when the process exits (Linux); elsewhere (a Mac, unsandboxed)
    # the wait below is a plain tick.
    pidfd = os.pidfd_open(proc.pid) if hasattr(os, "pidfd_open") else None
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
        while fds or not exited():
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
            if fds:
                pump(min(TICK_S, deadline - now))
            else:
                # Pipes closed: it is exiting, or the snippet closed them and runs on. A pidfd
                # becomes readable when the process exits, so this wakes at once, not on a tick.
                wait_s = max(min(TICK_S, deadline - now), 0)
                if pidfd is not None:
                    select.select([pidfd], [], [], wait_s)
                else:
                    time.sleep(min(wait_s, 0.01))
    except _Kill as k:
        kill = k
    finally:
        launcher.cleanup(proc)
        if pidfd is not None:
            os.close(pidfd)

    # What was written before a kill is still in the pipes: keep it.
    try:
        while fds:
            pump(0.5)
    except _Kill:
        pass
    for kind, decoder in decoders.items():
        tail = decoder.decode(b"", final=True)
        if tail:
            pending[kind].append(tail)
    flush_output()

    if not exit_info:
        _, status_, usage_ = os.wait4(proc.pid, 0)
        exit_info.update(status=status_, usage=usage_)
    proc.returncode = os.waitstatus_to_exitcode(exit_info["status"])
    usage = exit_info["usage"]
    cpu_ms = round((usage.ru_utime + usage.ru_stime) * 1000, 1)
    peak_kb = usage.ru_maxrss // 1024 if sys.platform == "darwin" else usage.ru_maxrss  # bytes there
    # Under a sandbox, wait4 sees only its launcher process: ask the sandbox instead.
    if (cpu_now := launcher.cpu_seconds(proc)) is not None and cpu_at_start is not None:
        cpu_ms = round((cpu_now - cpu_at_start) * 1000, 1)
    if (peak := launcher.peak_memory_bytes(proc)) is not None:
        peak_kb = peak // 1024
    wall_ms = round((time.monotonic() - t0) * 1000, 1)

    if kill is not None:
        status, message = kill.status, kill.message
    elif (reason := launcher.exit_reason(proc)) is not None:
        status, message = reason
    elif state["exit"] in (ev.SUCCEEDED, ev.FAILED):
        status, message = state["exit"], ""
    elif proc.returncode == 0:
        status, message = ev.SUCCEEDED, ""
    elif (signum := _death_signal(launcher, proc.returncode)) is not None:
        status = ev.FAILED
        message = f"the snippet's process was killed by {_signal_name(signum)}"
    else:
        status, message = ev.FAILED, f"the snippet's process exited with code {proc.returncode}"
    runner.close()
    return {
        "status": status,
        "message": message,
        "wall_ms": wall_ms,
        "cpu_ms": cpu_ms,
        "peak_memory_kb": peak_kb,
        "output_bytes": state["output"],
        "truncated": state["truncated"],
    }


def _death_signal(launcher: Launcher, returncode: int) -> int | None:
    """The signal that killed the runner: a negative return code, or, under bubblewrap (which
    exits with 128+n when its child died of signal n), a code above 128."""
    if returncode < 0:
        return -returncode
    if launcher.sandboxed and 128 < returncode < 128 + 65:
        return returncode - 128
    return None


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
