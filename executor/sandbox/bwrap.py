"""The production sandbox: bubblewrap, a cgroup per run, rlimits, and seccomp in the runner.

    executor worker (root)
      └─ python -I -S enter.py          root, ~25 ms: joins the run's cgroup, sets rlimits,
         │                              stages the read-only sources, drops to uid 60000+slot
         └═ bwrap (exec, same pid)       uid 60000+slot: new user, pid, net, ipc, uts, mount and
            │                            cgroup namespaces; this pid is ``proc.pid``
            └─ bwrap, pid 1 inside       reaps; when it dies the kernel kills the namespace
               └─ python -m runner       pid 2: warms up, installs seccomp, says "ready"

When the runner (pid 2) exits, the outer bwrap exits with its status (128+n for signal n), and
--die-with-parent takes pid 1 and with it everything the snippet left running: a daemon that
double-forked and kept stdout open does not outlive its run.

What the snippet sees: a read-only root holding only the Python installation, the runner's
virtualenv, the runner package (alone, at /opt/playground/runner), the system's shared
libraries, a fresh /proc and a minimal /dev (both with nothing of the host's processes or
devices), and a size-capped tmpfs /tmp, the only writable place. A network namespace of its
own, whose loopback is empty: Redis and PostgreSQL on the host's 127.0.0.1 are out of reach, and
so are the host's abstract unix sockets. Its environment holds PATH, LANG, HOME and TMPDIR,
nothing of the worker's, and it holds no descriptor but its stdio and the event pipe.

Limits: a memory cgroup is the hard cap (the OOM killer ends the run, reported as
limit_exceeded), RLIMIT_DATA a little below it is the soft cap (an allocation fails first, so
user code gets a MemoryError); a pids cgroup bounds processes and threads; RLIMIT_CPU,
RLIMIT_FSIZE and RLIMIT_CORE=0 as usual. Never RLIMIT_AS: XLA reserves ~1.5 GB of address space
at start-up and crashes under it. The supervisor enforces the wall clock and the output cap and
calls ``cleanup``, which kills everything in the run's cgroup.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import pwd
import resource
import secrets
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from ..runner import fonts
from .launcher import RUNNER_PARENT, Launcher, Limits, human_bytes, spawn_runner
from .cgroups import RUN_PREFIX, CgroupError, Cgroups, RunCgroup

log = logging.getLogger(__name__)

ENTER = Path(__file__).resolve().parent / "enter.py"
BWRAP = "/usr/bin/bwrap"
# Where the wrapper stages bind sources, inside a private mount namespace of its own. Must be an
# existing directory that only root can write to; nothing is ever mounted on it in the host's
# namespace.
STAGE_DIR = Path("/run/jax-playground/stage")
# The worker's matplotlib font list (runner/fonts.py), shared read-only by its runners.
FONT_CACHE_DIR = Path("/run/jax-playground/matplotlib")
# Inside the sandbox.
WORKDIR = "/opt/playground"
VENV_DEST = f"{WORKDIR}/venv"
FONT_CACHE_DEST = f"{WORKDIR}/matplotlib"
COMPILE_CACHE_DEST = f"{WORKDIR}/compile-cache"
UID_BASE = 60000
# The runner lowers RLIMIT_CPU to (what warm-up used + cpu_s) once it is warm; until then it
# may use this much more. Measured: warm-up takes ~2 CPU seconds here; a GPU backend's more.
WARMUP_CPU_S = 60
# RLIMIT_DATA sits this far below the memory cgroup's limit, so that a growing allocation fails
# with MemoryError before the OOM killer fires: the cgroup also counts the /tmp tmpfs, page
# tables and the libraries' file pages, which RLIMIT_DATA does not.
DATA_HEADROOM = 0.125



class BwrapLauncher(Launcher):
    name = "bwrap"
    sandboxed = True

    def __init__(
        self,
        *,
        limits: Limits,
        cpu_devices: int = 0,
        devices: tuple[str, ...] = (),
        ro_binds: tuple[str, ...] = (),
        python_prefix: str | None = None,
        venv: str | None = None,
        uid_base: int = UID_BASE,
        cgroup_parent: str | None = None,
        device_env: dict | None = None,
        pythonpath: str = "",
    ):
        """``devices``: device nodes bound with --dev-bind (e.g. /dev/nvidia0, /dev/nvidiactl,
        /dev/nvidia-uvm). ``ro_binds``: further host paths bound read-only at the same place,
        e.g. a GPU driver's files outside /usr/lib. ``python_prefix``/``venv``: the Python
        installation and virtualenv the runner uses (default: this interpreter's), bound
        read-only: the installation at its own path (the venv's python links to it by absolute
        path), the venv at VENV_DEST, since its own path may lie under /tmp, which the sandbox's
        tmpfs hides (a checkout in /tmp, as CI's may be)."""
        super().__init__(limits=limits, cpu_devices=cpu_devices, devices=devices, ro_binds=ro_binds, venv=venv,
                         device_env=device_env, pythonpath=pythonpath)
        self.python_prefix = python_prefix or sys.base_prefix
        self.uid_base = uid_base
        self.cgroups = Cgroups(cgroup_parent)
        self._warned_prlimit = False

    def background(self, proc: subprocess.Popen) -> None:
        cgroup: RunCgroup | None = getattr(proc, "sandbox_cgroup", None)
        if cgroup is not None:
            try:
                cgroup.yield_cpu()
            except OSError as exc:
                log.debug("a background runner keeps its CPU weight: %s", exc)

    def use_compile_cache(self, host_folder: str) -> None:
        self.compile_cache_host, self.compile_cache = host_folder, COMPILE_CACHE_DEST

    # -- the sandbox's layout ---------------------------------------------------------------

    @functools.cached_property
    def has_venv(self) -> bool:
        return os.path.realpath(self.venv) != os.path.realpath(self.python_prefix)

    @functools.cached_property
    def python(self) -> str:
        """The interpreter's path inside the sandbox."""
        return os.path.join(VENV_DEST if self.has_venv else self.python_prefix, "bin", "python")

    def staged_binds(self) -> list[tuple[str, str]]:
        """(host source, sandbox path) of the binds that go through the wrapper's staging."""
        binds = [(self.python_prefix, self.python_prefix)]
        if self.has_venv:
            binds.append((self.venv, VENV_DEST))
        binds.append((str(RUNNER_PARENT / "runner"), f"{WORKDIR}/runner"))
        if self.font_cache:  # the one file, so that other versions' lists stay out
            binds.append((str(FONT_CACHE_DIR / os.path.basename(self.font_cache)), self.font_cache))
        if self.compile_cache_host:  # read-only, and not listable (0711): entries are read by name
            binds.append((self.compile_cache_host, COMPILE_CACHE_DEST))
        # At their own place; staged like the rest, since bwrap (no longer root) may not be
        # allowed to walk to them.
        binds += [(path, path) for path in self.ro_binds]
        return binds

    def system_args(self) -> list[str]:
        """The shared libraries the interpreter, numpy and jaxlib load: the dynamic loader
        and the system's library folders, bound read-only; nothing else of /usr or /etc."""
        args = []
        for path in ("/lib", "/lib64", "/lib32"):
            if os.path.islink(path):  # merged /usr: /lib -> usr/lib
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
        multiarch = getattr(sys.implementation, "_multiarch", "")
        for path in (f"/usr/lib/{multiarch}" if multiarch else "/usr/lib", "/usr/lib64"):
            if os.path.isdir(path) and not os.path.islink(path):
                args += ["--ro-bind", path, path]
        if os.path.exists("/etc/ld.so.cache"):
            args += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
        return args

    def bwrap_path(self) -> str:
        return BWRAP if os.path.exists(BWRAP) else shutil.which("bwrap") or BWRAP

    def layout_args(self) -> list[str]:
        """What a sandbox's file system holds, in bwrap's terms: the staged read-only sources,
        the system's libraries, a fresh /proc, a minimal /dev (and the configured devices),
        read-only. The one-shot sandbox and the template share it."""
        argv = []
        for i, (_source, dest) in enumerate(self.staged_binds()):
            argv += ["--ro-bind", f"{STAGE_DIR}/{i}", dest]
        argv += self.system_args()
        argv += ["--proc", "/proc", "--dev", "/dev"]
        for device in self.devices:
            argv += ["--dev-bind", device, device]
        argv += ["--remount-ro", "/dev"]  # bwrap's /dev is a writable tmpfs: /dev/shm
        return argv

    def bwrap_argv(self, event_fd: int, env: dict[str, str] | None = None) -> list[str]:
        """``env``: the runner's own variables over bwrap's environment (Launcher.start)."""
        limits = self.limits
        argv = [
            self.bwrap_path(),
            "--unshare-all",  # user, pid, net, ipc, uts, cgroup: no network, not even loopback
            "--unshare-user",
            "--disable-userns",  # and the snippet cannot make namespaces of its own
            "--die-with-parent",
            "--new-session",  # no TIOCSTI into a terminal the worker may have
            # The runner itself is pid 1: no bwrap init inside the sandbox. That init would run
            # as the runner's uid, dumpable and outside the seccomp filter (which the runner
            # installs on itself), so a snippet could take it over through /proc/1/mem and make
            # the calls the filter denies. As pid 1 the runner also ignores signals it has no
            # handler for from inside (kill(0, SIGKILL) included); the kernel's own (a fault,
            # the OOM killer, the hard CPU limit) and the supervisor's still end it.
            "--as-pid-1",
            "--hostname", "sandbox",
        ]
        argv += self.layout_args()
        argv += ["--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
        argv += ["--chdir", WORKDIR, "--remount-ro", "/"]
        for name, value in (env or {}).items():
            argv += ["--setenv", name, value]
        argv += ["--", self.python, "-u", "-E", "-s", "-B", "-m", "runner"]
        argv += self.runner_args(event_fd) + ["--seccomp", "--cpu-s", str(limits.cpu_s)]
        return argv

    def rlimits(self) -> list[tuple[str, int, int]]:
        limits = self.limits
        data = int(limits.memory_bytes * (1 - DATA_HEADROOM))
        cpu = limits.cpu_s + WARMUP_CPU_S
        return [
            ("RLIMIT_DATA", data, data),
            ("RLIMIT_CPU", cpu, cpu),
            ("RLIMIT_FSIZE", limits.tmp_bytes, limits.tmp_bytes),
            ("RLIMIT_CORE", 0, 0),
        ]

    def uid(self, slot: int) -> int:
        uid = self.uid_base + slot
        _check_uid_unused(uid)
        return uid

    def environment(self, slot: int | None = None) -> dict[str, str]:
        # bwrap's own environment, so also that of pid 1 in the sandbox (/proc/1/environ) and
        # of the runner: nothing of the worker's but the accelerator's variables (devices.py).
        return {**self.runner_env(slot), "PATH": f"{self.venv}/bin", "LANG": "C.UTF-8", "HOME": "/tmp",
                "TMPDIR": "/tmp"}

    # -- Launcher ---------------------------------------------------------------------------

    def check(self) -> None:
        if not (os.path.exists(BWRAP) or shutil.which("bwrap")):
            raise RuntimeError(
                "bubblewrap is not installed: `apt-get install bubblewrap` (Debian/Ubuntu) or "
                "`dnf install bubblewrap`; or run with EXECUTOR_SANDBOX=none on a development "
                "machine only"
            )
        if os.geteuid() != 0:
            raise RuntimeError(
                "the bwrap sandbox needs the worker to run as root: it places each runner in "
                "its own cgroup and drops it to an unprivileged uid per slot "
                f"({self.uid_base}+slot) before bubblewrap starts"
            )
        for path in self.devices:
            if not os.path.exists(path):
                raise RuntimeError(f"device {path} (EXECUTOR_DEVICES) does not exist on this host")
        for path in self.ro_binds:
            if not os.path.isabs(path) or not os.path.exists(path):
                raise RuntimeError(f"{path} (EXECUTOR_RO_BINDS) is not an existing absolute path")
        if self.pythonpath:
            raise RuntimeError(
                "a host runtime whose libraries come from PYTHONPATH runs only without a sandbox "
                "(EXECUTOR_SANDBOX=none): bwrap's runners read nothing of the host but the Python "
                "installation and the runtime's own environment")
        try:
            STAGE_DIR.mkdir(parents=True, exist_ok=True, mode=0o755)
        except OSError as exc:
            raise RuntimeError(f"cannot create {STAGE_DIR}: {exc}") from exc
        try:
            self.cgroups.bases()
            self.cgroups.sweep()
        except CgroupError as exc:
            raise RuntimeError(str(exc)) from None
        self._probe()

    def _probe(self) -> None:
        """Start a real sandbox that runs `python -c pass`: namespaces, staging, uid, cgroup."""
        result = self.run_inside([self.python, "-I", "-c", "pass"], slot=0, timeout=60)
        if result.returncode != 0:
            err = result.stderr.decode(errors="replace").strip()
            hint = ""
            if "namespace" in err or "uid map" in err or "Permission denied" in err:
                hint = (
                    " Unprivileged user namespaces must be allowed: sysctl "
                    "user.max_user_namespaces > 0 (and on Debian 11 or older "
                    "kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 "
                    "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile "
                    "for /usr/bin/bwrap)."
                )
            raise RuntimeError(f"bubblewrap cannot create its sandbox here: {err}.{hint}")

    def prepare(self) -> None:
        """Build matplotlib's font list once, in a sandbox like a run's (so it lists exactly the
        fonts a run can see), for every runner to copy: a run's first figure then skips the
        font scan (about 0.15 s here, over a second on slower machines)."""
        try:
            result = self.run_inside(
                [self.python, "-E", "-s", "-B", "-m", "runner.fonts"], slot=0, timeout=120
            )
            if result.returncode != 0:
                raise RuntimeError(result.stderr.decode(errors="replace").strip()[-500:])
            built = json.loads(result.stdout)
            name, text = built["name"], built["text"]
            if not (isinstance(name, str) and fonts.CACHE_NAME.fullmatch(name) and isinstance(text, str)):
                raise RuntimeError(f"unexpected font list {name!r}")
            json.loads(text)
            FONT_CACHE_DIR.mkdir(parents=True, exist_ok=True, mode=0o755)
            partial = FONT_CACHE_DIR / f".{name}.{os.getpid()}"
            partial.write_text(text, encoding="utf-8")
            partial.chmod(0o644)
            partial.replace(FONT_CACHE_DIR / name)  # atomic: workers on one host share the folder
        except (OSError, ValueError, KeyError, RuntimeError, subprocess.TimeoutExpired) as exc:
            log.warning("matplotlib's font list was not prepared (each run's first figure "
                        "scans the fonts instead): %s", exc)
            return
        self.font_cache = f"{FONT_CACHE_DEST}/{name}"

    def run_inside(self, command: list[str], *, slot: int, timeout: float,
                   input: bytes | None = None) -> subprocess.CompletedProcess:
        """Run ``command`` in this sandbox (same layout, limits and uid as a runner, without the
        runner and its seccomp filter) and wait for it. For check() and tests of the layers."""
        argv = self.bwrap_argv(0)
        argv = argv[: argv.index("--") + 1] + command
        cgroup = self._new_cgroup(slot)
        try:
            return subprocess.run(
                self._wrapper_argv(argv, slot=slot, cgroup=cgroup), input=input, env={},
                close_fds=True, capture_output=True, timeout=timeout, cwd="/",
            )
        finally:
            cgroup.remove()

    def _new_cgroup(self, slot: int | str) -> RunCgroup:
        """A run's cgroup (or, named by a word, another sandbox's: the template's), with the
        node's limits; a run may lower its own later (restrict)."""
        try:
            return self.cgroups.create(
                f"{RUN_PREFIX}{os.getpid()}-{slot}-{secrets.token_hex(4)}",
                memory_bytes=self.limits.memory_bytes, pids=self.limits.pids,
            )
        except CgroupError as exc:
            raise RuntimeError(str(exc)) from None

    def _wrapper_argv(self, bwrap_argv: list[str], *, slot: int, cgroup: RunCgroup) -> list[str]:
        uid = self.uid(slot)
        return self.wrapper_command(bwrap_argv, cgroup=cgroup, rlimits=self.rlimits(), uid=uid, slot=slot)

    def wrapper_command(self, bwrap_argv: list[str], *, cgroup: RunCgroup, rlimits: list, uid: int,
                        userns: dict | None = None, slot: int | None = None) -> list[str]:
        """enter.py's command line: join ``cgroup``, set ``rlimits``, stage the binds, (make the
        user namespace ``userns`` describes,) become ``uid`` and exec ``bwrap_argv``."""
        spec = {
            "cgroup_procs": cgroup.procs_files,
            "rlimits": rlimits,
            "stage": str(STAGE_DIR),
            "binds": [[source, str(i)] for i, (source, _dest) in enumerate(self.staged_binds())],
            "uid": uid,
            "gid": uid,
            "argv": bwrap_argv,
            "env": self.environment(slot),
        }
        if userns:
            spec["userns"] = userns
        return [sys.executable, "-I", "-S", "-B", str(ENTER), json.dumps(spec)]

    def _check_font_cache(self) -> None:
        if self.font_cache and not (FONT_CACHE_DIR / os.path.basename(self.font_cache)).is_file():
            # Gone from /run since the worker made it: runners do without rather than not start.
            log.warning("matplotlib's font list %s disappeared; runners scan the fonts again",
                        FONT_CACHE_DIR / os.path.basename(self.font_cache))
            self.font_cache = None

    def start(self, slot: int, lean: bool = False, session_cpu_s: int | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen:
        STAGE_DIR.mkdir(parents=True, exist_ok=True, mode=0o755)  # /run is a tmpfs: a reboot empties it
        self._check_font_cache()
        cgroup = self._new_cgroup(slot)
        try:
            # bwrap hands every inherited descriptor to the sandbox: only the event pipe.
            proc = spawn_runner(
                lambda event_w: self._wrapper_argv(self.bwrap_argv(event_w, env), slot=slot, cgroup=cgroup),
                cwd="/", env={},
            )
        except BaseException:
            cgroup.remove()
            raise
        proc.sandbox_cgroup = cgroup
        proc.sandbox_report = None
        proc.sandbox_runner_pid = None
        return proc

    def restrict(self, proc: subprocess.Popen, limits: Limits, cpu: bool = True) -> None:
        """Lower a warm runner's sandbox limits to a run's own, which may only be stricter than
        the launcher's (Limits.clamp). Call after "ready" and before sending the code: a warm
        runner was started with the node's maximums before anyone knew the run.

        The memory and pids caps are the cgroup's; RLIMIT_DATA, RLIMIT_FSIZE and RLIMIT_CPU are
        set on the runner process from outside with prlimit, the CPU budget counted from what
        the runner has used so far. prlimit on another uid's process needs CAP_SYS_RESOURCE,
        which a container's root may lack (the development VM's does): then only the cgroup
        caps are lowered, so a run over its lowered memory meets the OOM killer rather than a
        MemoryError, and its CPU is bounded by the node's cpu_s and the wall clock. /tmp's
        size stays as started.
        """
        limits = self.limits.clamp(limits.as_dict())
        cgroup: RunCgroup = proc.sandbox_cgroup
        try:
            cgroup.lower_limits(memory_bytes=limits.memory_bytes, pids=limits.pids)
        except OSError as exc:
            raise RuntimeError(f"cannot lower the run's cgroup limits: {exc}") from exc
        pid = self.runner_pid(proc)
        data = int(limits.memory_bytes * (1 - DATA_HEADROOM))
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        used_s = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
        cpu_limit = math.ceil(used_s) + limits.cpu_s
        try:
            for name, value, hard in (
                (resource.RLIMIT_DATA, data, data),
                (resource.RLIMIT_FSIZE, limits.tmp_bytes, limits.tmp_bytes),
                *([(resource.RLIMIT_CPU, cpu_limit, cpu_limit + 1)] if cpu else []),
            ):
                old_soft, old_hard = resource.prlimit(pid, name)
                resource.prlimit(pid, name, (min(value, old_soft), min(hard, old_hard)))
        except PermissionError:
            if not self._warned_prlimit:
                self._warned_prlimit = True
                log.warning("no CAP_SYS_RESOURCE: a run's own lower rlimits are not applied, "
                            "only its lower memory and pids caps")

    def allow_session_cpu(self, proc: subprocess.Popen, total_s: int) -> bool:
        pid = self.runner_pid(proc)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            used_s = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
            hard = math.ceil(used_s) + total_s
            soft = min(resource.prlimit(pid, resource.RLIMIT_CPU)[0], hard)
            resource.prlimit(pid, resource.RLIMIT_CPU, (soft, hard))
        except (OSError, ValueError, IndexError) as exc:
            log.warning("a session's CPU allowance could not be set (%s): its cells share one run's", exc)
            return False
        return True

    def runner_pid(self, proc: subprocess.Popen) -> int:
        """The runner's pid on the host: the Python among the sandbox's processes (the other is
        bwrap itself, outside the sandbox's pid namespace)."""
        if getattr(proc, "sandbox_runner_pid", None) is None:
            for pid in proc.sandbox_cgroup.pids():
                try:
                    exe = os.readlink(f"/proc/{pid}/exe")
                except OSError:
                    continue
                if os.path.basename(exe) != "bwrap":
                    proc.sandbox_runner_pid = pid
                    break
            else:
                raise RuntimeError("the runner is not running")
        return proc.sandbox_runner_pid

    def read_live(self, proc: subprocess.Popen) -> None:
        proc.sandbox_report = None

    def _report(self, proc: subprocess.Popen) -> dict:
        """What the cgroup knows about the run, read once, before cleanup removes it."""
        if getattr(proc, "sandbox_report", None) is None:
            cgroup: RunCgroup = proc.sandbox_cgroup
            proc.sandbox_report = {
                "oom_killed": cgroup.oom_killed(),
                "pids_limit_hit": cgroup.pids_limit_hit(),
                "cpu_s": cgroup.cpu_seconds(),
                "peak_memory_bytes": cgroup.peak_memory_bytes(),
            }
        return proc.sandbox_report

    def limit_hit(self, proc: subprocess.Popen) -> tuple[str, str] | None:
        """While the runner runs: a limit that should end the run now. A fork bomb only gets
        EAGAIN at pids.max, which it may ignore forever; the supervisor can poll this."""
        cgroup: RunCgroup = proc.sandbox_cgroup
        if cgroup.pids_limit_hit():
            return "limit_exceeded", f"process limit of {self.limits.pids} exceeded"
        if cgroup.oom_killed():
            return "limit_exceeded", f"memory limit of {human_bytes(self.limits.memory_bytes)} exceeded"
        return None

    def exit_reason(self, proc: subprocess.Popen, returncode: int | None = None) -> tuple[str, str] | None:
        report = self._report(proc)
        if report["oom_killed"]:
            return "limit_exceeded", f"memory limit of {human_bytes(self.limits.memory_bytes)} exceeded"
        # bwrap exits with 128+n when the runner died of signal n.
        # The runner's soft RLIMIT_CPU is (warm-up CPU, rounded up) + cpu_s: SIGXCPU there; one
        # that ignores SIGXCPU gets SIGKILL a second later, so by then the sandbox has used at
        # least cpu_s + 1 CPU seconds more than its warm-up. (Not + 2: a warm-up of 0.99 s rounds
        # up to only 1, and the cgroup's count can trail the rlimit's by a tick or two: 3.988 s
        # against a hard limit at 4 s was seen under load, hence the tenth of a second given.
        # A snippet that SIGKILLs itself after using as much is reported as over its CPU limit,
        # which it nearly was.)
        code = proc.returncode if returncode is None else returncode
        signum = self.death_signal(code) if code is not None else None
        if signum == signal.SIGXCPU or (
            signum == signal.SIGKILL
            and report["cpu_s"] is not None
            and report["cpu_s"] >= self.limits.cpu_s + 0.9
        ):
            return "limit_exceeded", f"CPU time limit of {self.limits.cpu_s} s exceeded"
        if report["pids_limit_hit"] and code not in (0, None):
            return "limit_exceeded", f"process limit of {self.limits.pids} exceeded"
        return None

    @staticmethod
    def death_signal(returncode: int) -> int | None:
        """The signal that ended the runner: bwrap exits with 128+n when its child died of n."""
        return returncode - 128 if 128 < returncode < 128 + 65 else None

    def cpu_seconds(self, proc: subprocess.Popen) -> float | None:
        report = getattr(proc, "sandbox_report", None)
        if report is not None:
            return report["cpu_s"]
        return proc.sandbox_cgroup.cpu_seconds()

    def peak_memory_bytes(self, proc: subprocess.Popen) -> int | None:
        return self._report(proc)["peak_memory_bytes"]

    def usage(self, proc: subprocess.Popen) -> dict:
        """CPU time and peak memory of the whole sandbox (all its processes, warm-up
        included), from its cgroup; None where this kernel does not say."""
        report = self._report(proc)
        cpu = report["cpu_s"]
        return {
            "cpu_ms": None if cpu is None else round(cpu * 1000, 1),
            "peak_memory_bytes": report["peak_memory_bytes"],
        }

    def stop(self, proc: subprocess.Popen) -> None:
        """Kill the sandbox's processes but keep its cgroup: removing one waits on the kernel's
        cgroup lock, which a runner being placed in its own cgroup holds for milliseconds."""
        cgroup: RunCgroup | None = getattr(proc, "sandbox_cgroup", None)
        if cgroup is None:
            return
        self._report(proc)
        try:
            cgroup.kill(wait=False)  # cleanup waits until they are gone
        except CgroupError:
            pass  # cleanup tries again, and the next worker's sweep after it

    def cleanup(self, proc: subprocess.Popen) -> None:
        """Kill everything the runner left, then remove its cgroup. Idempotent. Does not reap
        ``proc`` itself: the supervisor waits for it (for its rusage)."""
        cgroup: RunCgroup | None = getattr(proc, "sandbox_cgroup", None)
        if cgroup is None:
            return
        self._report(proc)
        # Everything is in the cgroup, bwrap itself included (the wrapper joined it before it
        # became bwrap), so killing the cgroup's members kills the sandbox: its pid 1 dies and
        # the kernel kills the rest of its pid namespace. Not proc.kill(): Popen.send_signal
        # polls, and reaping here would take the exit status from the supervisor's wait4().
        try:
            cgroup.remove()
        except CgroupError:
            # Something unkillable (a process in uninterruptible sleep): leave it for the next
            # worker's sweep rather than fail the run.
            return
        proc.sandbox_cgroup = None


@functools.cache
def _check_uid_unused(uid: int) -> None:
    """A slot's uid must belong to no account: its processes would share files, signals and
    rlimits with that account's."""
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        return
    raise RuntimeError(
        f"uid {uid} belongs to the account {name!r}; choose a sandbox uid range that no account "
        "uses (BwrapLauncher uid_base)"
    )
