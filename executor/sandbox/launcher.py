"""What every sandbox backend is: a ``Launcher`` starts runner processes within a run's
``Limits``; ``spawn_runner`` starts one as the worker's own child with its pipes; the runner's
command-line flags are built once (``Launcher.runner_flags``), for a runner and for a template
alike. ``DirectLauncher`` is the backend with no sandbox at all (development only); the real ones
are bwrap.py and fork.py, chosen by name in ``executor.sandbox``.
"""

from __future__ import annotations

import errno
import math
import os
import subprocess
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path

RUNNER_PARENT = Path(__file__).resolve().parent.parent  # the folder holding runner/
PROJECT_ROOT = RUNNER_PARENT.parent


def human_bytes(n: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def cpu_seconds_for(wall_s: float) -> int:
    """The default CPU-time limit for a run of this wall clock on this node. CPU time counts all
    of a run's threads, and XLA spreads one call across every core: a run may keep the node's
    cores busy for its whole wall clock, so a multi-threaded snippet ends at the wall clock
    rather than at a CPU limit reached sooner (30 CPU seconds last 15 s on 2 cores)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()  # macOS
    return max(1, math.ceil(wall_s)) * (cores or 1)


@dataclass(frozen=True)
class Limits:
    """Everything that bounds one run. Defined once, here; the worker's settings give the
    maximums and a run's message may only lower them."""

    wall_s: float = 30.0
    cpu_s: int | None = None  # None: cpu_seconds_for(wall_s), the wall clock times the cores
    memory_bytes: int = 2 * 1024**3
    output_bytes: int = 1024**2
    tmp_bytes: int = 64 * 1024**2
    pids: int = 128
    # Events one run may send: in all, and per second (output is coalesced into fewer, larger
    # events meanwhile, and a snippet that outpaces the rate waits on its pipe).
    events: int = 10_000
    events_per_s: int = 200

    def __post_init__(self):
        if self.cpu_s is None:
            object.__setattr__(self, "cpu_s", cpu_seconds_for(self.wall_s))

    def clamp(self, requested: dict | None) -> Limits:
        """The stricter of these limits and those a run asked for."""
        if not requested:
            return self
        values = asdict(self)
        for f in fields(self):
            if f.name in requested and requested[f.name] is not None:
                values[f.name] = min(values[f.name], type(values[f.name])(requested[f.name]))
        return Limits(**values)

    def as_dict(self) -> dict:
        return asdict(self)


class Launcher:
    """Starts runner processes. Subclasses set ``name`` and ``sandboxed``."""

    name = "base"
    sandboxed = False
    # Whether start(slot, lean=True) gives a lean runner (numpy, no jax: executor/sandbox/fork.py).
    lean_runners = False

    def __init__(self, *, limits: Limits, cpu_devices: int = 0, devices: tuple[str, ...] = (),
                 ro_binds: tuple[str, ...] = (), venv: str | None = None, device_env: dict | None = None,
                 pythonpath: str = ""):
        """``devices``: device nodes a runner may open (a GPU's). ``ro_binds``: further host
        paths it must read, e.g. a GPU driver's libraries outside the system's library folders.
        Both matter only to a sandbox, which shows a runner nothing else of the host. ``venv``:
        the environment the runner's Python and libraries come from, its runtime's (default:
        this interpreter's). ``device_env``: the accelerator's variables every runner is given
        (``devices.accelerator_env``: the worker's TPU_*, CUDA_VISIBLE_DEVICES...). ``pythonpath``:
        a host runtime's library folders (runtimes.py: ``environment = "host"``)."""
        self.limits = limits
        self.venv = venv or sys.prefix
        self.cpu_devices = cpu_devices
        self.devices = tuple(devices)
        self.ro_binds = tuple(ro_binds)
        self.device_env = dict(device_env or {})
        self.pythonpath = pythonpath
        # A slot's own variables on top of device_env (one chip of a multi-chip host: set by the
        # pool before the slot's first runner starts).
        self.slot_env: dict[int, dict[str, str]] = {}

    def runner_env(self, slot: int | None = None) -> dict[str, str]:
        """The variables a runner gets beyond the backend's own few: the accelerator's, and its
        slot's. Nothing else of the worker's environment."""
        return {**self.device_env, **(self.slot_env.get(slot, {}) if slot is not None else {})}

    @property
    def python(self) -> str:
        """The runner's interpreter on the host: its environment's, or this one where the
        runtime is the interpreter the worker runs on (a host without a venv: /usr/bin/python3)."""
        if os.path.realpath(self.venv) == os.path.realpath(sys.prefix):
            return sys.executable
        return os.path.join(self.venv, "bin", "python")

    # Where runners find the worker's prepared matplotlib font list (see runner/fonts.py), as a
    # path they can read; None when there is none.
    font_cache: str | None = None
    # The node's compile cache (executor/compilecache.py): the host's folder, and its path as
    # runners see it (read-only); None when there is none.
    compile_cache_host: str | None = None
    compile_cache: str | None = None
    # Whether its runners end at a message the protocol does not declare (runner/main.py's
    # EventChannel; EXECUTOR_CHECK_PROTOCOL, which the tests set). Set before the first runner.
    check_protocol: bool = False

    def use_compile_cache(self, host_folder: str) -> None:
        """Before the first runner starts: runners read compiled executables from there."""
        self.compile_cache_host = self.compile_cache = host_folder

    def check(self) -> None:
        """Raise RuntimeError with a fix if this backend cannot run on this host."""

    def prepare(self) -> None:
        """Once, when a worker starts and before its first runner: build what every runner
        shares. Never fatal: without it runners are only slower."""

    def start(self, slot: int, lean: bool = False, session_cpu_s: int | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start a runner. Its stdin, stdout and stderr are pipes; its event pipe's read end is
        returned as ``proc.event_fd`` (an int the caller owns and closes). ``lean``: a lean
        runner where the launcher has them (``lean_runners``), else a full one.
        ``session_cpu_s``: a notebook session's, allowed that many CPU seconds in all its cells
        where the launcher sets it at the start (else ``allow_session_cpu`` tries later).
        ``env``: this runner's own variables, over the launcher's environment and applied last
        (executor/chips.py: the chip a slot opens, ``TPU_VISIBLE_CHIPS`` and its bounds)."""
        raise NotImplementedError

    def exit_reason(self, proc: subprocess.Popen, returncode: int | None = None) -> tuple[str, str] | None:
        """After the runner exited: ``(status, message)`` when a limit enforced by the sandbox
        (not the supervisor) ended it, e.g. the memory cgroup's OOM killer."""
        return None

    def cleanup(self, proc: subprocess.Popen) -> None:
        """Kill whatever the runner left behind and release per-run resources."""

    def stop(self, proc: subprocess.Popen) -> None:
        """Kill whatever the runner left behind, at once, keeping what the sandbox knows about
        the run for exit_reason and usage; ``cleanup`` releases the rest later, after the run's
        result has gone out."""
        self.cleanup(proc)

    def background(self, proc: subprocess.Popen) -> None:
        """A runner taken for the node's own work (a compile job): it yields the CPU to runs."""

    def restrict(self, proc: subprocess.Popen, limits: Limits, cpu: bool = True) -> None:
        """Lower a warm runner's limits to a run's own (stricter) ones before it gets the code.
        ``cpu=False``: all but its CPU (a session's runner, whose CPU is its cells')."""

    def read_live(self, proc: subprocess.Popen) -> None:
        """The runner lives on after what was measured (a session's cell): its counters are to be
        read afresh next time, not from what was kept for its end."""

    def allow_session_cpu(self, proc: subprocess.Popen, total_s: int) -> bool:
        """A session's runner: its hard CPU limit becomes what it used so far plus ``total_s``, the
        session's whole allowance (each cell's own is the soft limit the runner sets itself:
        runner/session.py). False where the limit cannot be raised (a cell then has what is left
        of one run's)."""
        return False

    def limit_hit(self, proc: subprocess.Popen) -> tuple[str, str] | None:
        """While the runner runs: ``(status, message)`` for a sandbox limit that should end it
        now (a fork bomb that ignores EAGAIN at the pids limit, say)."""
        return None

    @staticmethod
    def death_signal(returncode: int) -> int | None:
        """The signal that ended the runner, from its return code (a negative one here)."""
        return -returncode if returncode < 0 else None

    def close(self) -> None:
        """When the worker stops: end what the backend keeps running between runs."""

    def runner_pid(self, proc: subprocess.Popen) -> int:
        """The runner's pid on the host (the fork launcher's: the template's child)."""
        return getattr(proc, "sandbox_runner_pid", None) or proc.pid

    def cpu_seconds(self, proc: subprocess.Popen) -> float | None:
        """CPU time the sandbox has used so far (all its processes), or None when only the
        supervisor's wait4 can tell."""
        return None

    def peak_memory_bytes(self, proc: subprocess.Popen) -> int | None:
        return None

    def runner_flags(self) -> list[str]:
        """What every runner of this backend is told on its command line, whether it starts on
        its own (``runner_args``) or is forked from a template started with them (fork.py)."""
        flags = []
        if self.cpu_devices:
            flags += ["--cpu-devices", str(self.cpu_devices)]
        if self.font_cache:
            flags += ["--font-cache", self.font_cache]
        if self.compile_cache:
            flags += ["--compile-cache", self.compile_cache]
        if self.check_protocol:
            flags += ["--check-protocol"]
        return flags

    def runner_args(self, event_fd: int) -> list[str]:
        return ["--event-fd", str(event_fd), *self.runner_flags()]


# Set when the kernel has no pidfd_open (gVisor answers ENOSYS): the supervisor then waits for a
# runner's exit on a short tick instead.
_NO_PIDFD: list[int] = []


class RunnerPopen(subprocess.Popen):
    """A runner that is the worker's own child: what the supervisor needs beyond Popen, which
    forked runners (fork.ForkedProcess) provide too."""

    event_fd: int

    def exit_fd(self) -> int | None:
        """A descriptor that becomes readable when the runner exits (a pidfd), or None."""
        if getattr(self, "_pidfd", None) is None and hasattr(os, "pidfd_open") and not _NO_PIDFD:
            try:
                self._pidfd = os.pidfd_open(self.pid)
            except OSError as exc:  # ENOSYS under gVisor (many hosted accelerators), EPERM in some seccomp
                if exc.errno not in (errno.ENOSYS, errno.EPERM, errno.EINVAL):
                    raise
                _NO_PIDFD.append(exc.errno)  # asked once a process, not once a run
        return getattr(self, "_pidfd", None)

    def wait_exit(self, block: bool) -> tuple[int, float, int] | None:
        """(return code, CPU seconds, peak RSS in KiB) once it exited, else None. wait4 rather
        than poll(): it also gives the process's CPU time and peak memory."""
        if self.returncode is not None and hasattr(self, "_usage"):
            return self._usage
        pid, status, usage = os.wait4(self.pid, 0 if block else os.WNOHANG)
        if not pid:
            return None
        self.returncode = os.waitstatus_to_exitcode(status)
        peak_kb = usage.ru_maxrss // 1024 if sys.platform == "darwin" else usage.ru_maxrss  # bytes there
        self._usage = (self.returncode, usage.ru_utime + usage.ru_stime, peak_kb)
        return self._usage

    def release(self) -> None:
        if getattr(self, "_pidfd", None) is not None:
            os.close(self._pidfd)
            self._pidfd = None


def spawn_runner(argv_for, *, cwd, env: dict) -> RunnerPopen:
    """Start a runner with pipes for stdin, stdout and stderr and the write end of its event
    pipe (``argv_for(fd)`` gives the command that tells the runner which descriptor it is). The
    read end is returned as ``proc.event_fd``. Nothing else is inherited, and the runner leads a
    session of its own, so that everything it starts can be killed with it."""
    event_r, event_w = os.pipe()
    try:
        proc = RunnerPopen(
            argv_for(event_w),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(event_w,),
            close_fds=True,
            start_new_session=True,
            cwd=cwd,
            env=env,
        )
    except BaseException:
        os.close(event_r)
        raise
    finally:
        os.close(event_w)
    proc.event_fd = event_r
    return proc


class DirectLauncher(Launcher):
    """A plain child process: no isolation at all. Only for development on a machine without
    bubblewrap, and only when settings allow it explicitly."""

    name = "none"
    sandboxed = False

    def start(self, slot: int, lean: bool = False, session_cpu_s: int | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen:
        runner_env = {"PATH": os.defpath, "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8", **self.runner_env(slot)}
        if self.pythonpath:
            runner_env["PYTHONPATH"] = self.pythonpath
        return spawn_runner(
            lambda event_w: [self.python, "-m", "executor.runner", *self.runner_args(event_w)],
            cwd=PROJECT_ROOT, env={**runner_env, **(env or {})},
        )

    def cleanup(self, proc: subprocess.Popen) -> None:
        try:
            os.killpg(proc.pid, 9)  # the runner's session: children it forked too
        except (ProcessLookupError, PermissionError):
            pass
