"""The default sandbox: runners forked from a pre-imported template (runner/template.py).

    executor worker (root)
      ├─ Template ── enter.py (user namespace with one uid per slot) ── bwrap ── template
      │     control socket: "spawn" with the run's pipes ─▶ fork ─▶ runner (pid 1 of its own
      │     pid namespace), whose host pid comes back in SCM_CREDENTIALS
      └─ start(slot): a cgroup for the run; the runner is moved into it before it does
         anything ("placed"), then confines itself and says "ready"

Every wall of the one-shot bwrap launcher stays, per run: pid, mount, network, ipc, uts and
cgroup namespaces of its own; its own cgroup (memory, pids, CPU share); uid 1000+slot in the
template's namespace, host uid ``uid_base + slot``, with no capabilities; a capped /tmp of its
own; the environment and rlimits the launcher gives; no descriptor but its
stdio and event pipe; the seccomp filter. What changes is the cost: a fork of a process that
has imported numpy and jax (a few milliseconds) instead of a new interpreter importing them
(0.5 to 1.2 s of CPU), and the backend starts only when the snippet first uses jax.

The template is itself sandboxed (its own namespaces, the read-only layout of a run, uid 0 of a
user namespace that maps to an unprivileged host uid, a seccomp filter), holds nothing of any
user, and is started again when it dies; every runner it forked dies with it.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import json
import logging
import os
import socket
import struct
import subprocess
import threading
import time
import weakref
from dataclasses import dataclass, field

from .launcher import human_bytes
from .bwrap import STAGE_DIR, WORKDIR, BwrapLauncher
from .cgroups import CgroupError

log = logging.getLogger(__name__)

# Inside the template's user namespace: uid 0 is the template, RUNNER_UID_BASE + slot a runner.
RUNNER_UID_BASE = 1000
MAX_SLOTS = 256
TEMPLATE_START_TIMEOUT_S = 120.0
# What a template's "ready" says of itself, not of the runners' backend: not passed on to a lean one.
TEMPLATE_OWN = frozenset({"op", "template_ms", "template_rss_kb", "huge_bytes", "libraries", "font_cache",
                          "compile_cache", "lean"})
SPAWN_TIMEOUT_S = 30.0
TEMPLATE_TMP_BYTES = 16 * 1024**2
CONTROL_MAX = 64 * 1024
PLACED = b"placed\n"
# A forked runner's CPU starts at zero; this much more than cpu_s covers its setup until the
# run's own limits are set (restrict).
SETUP_CPU_S = 5


@dataclass
class _Spawn:
    """One runner, from the request to its exit as the template reports it."""

    id: int
    done: threading.Event = field(default_factory=threading.Event)
    pid: int | None = None  # on the host
    error: str | None = None
    exit_status: int | None = None  # a wait status
    cpu_s: float = 0.0
    maxrss_kb: int = 0
    exited: threading.Event = field(default_factory=threading.Event)
    exit_fd: int | None = field(default_factory=lambda: os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK))
    # The reader thread writes exit_fd while the run's thread may be closing it: under this
    # lock, never after the close (the number may already belong to a new runner's pipe).
    fd_lock: threading.Lock = field(default_factory=threading.Lock)

    def set_exit(self, status: int, cpu_s: float = 0.0, maxrss_kb: int = 0) -> None:
        if self.exited.is_set():
            return
        self.exit_status, self.cpu_s, self.maxrss_kb = status, cpu_s, maxrss_kb
        self.exited.set()
        with self.fd_lock:
            if self.exit_fd is not None:
                os.eventfd_write(self.exit_fd, 1)

    def close_exit_fd(self) -> None:
        with self.fd_lock:
            if self.exit_fd is not None:
                os.close(self.exit_fd)
                self.exit_fd = None


class ForkedProcess:
    """A forked runner, with the part of ``subprocess.Popen`` the pool and supervisor use. Its
    exit status comes from the template, which is its parent."""

    def __init__(self, spawn: _Spawn, stdin, stdout, stderr, event_fd: int):
        self._spawn = spawn
        self.pid = spawn.pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.event_fd = event_fd
        self.returncode: int | None = None

    def _settle(self) -> None:
        if self.returncode is None and self._spawn.exited.is_set():
            self.returncode = os.waitstatus_to_exitcode(self._spawn.exit_status)

    def poll(self) -> int | None:
        self._settle()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._spawn.exited.wait(timeout):
            raise subprocess.TimeoutExpired("runner", timeout)
        self._settle()
        return self.returncode

    def exit_fd(self) -> int:
        """Readable once the exit is known."""
        return self._spawn.exit_fd

    def wait_exit(self, block: bool) -> tuple[int, float, int] | None:
        """(return code, CPU seconds, peak RSS in KiB), or None while it runs."""
        if block:
            self._spawn.exited.wait()
        if not self._spawn.exited.is_set():
            return None
        self._settle()
        return self.returncode, self._spawn.cpu_s, self._spawn.maxrss_kb

    def release(self) -> None:
        self._spawn.close_exit_fd()


class Template:
    """One template process and its control socket."""

    # The templates this process runs (a worker has one; a test session may have several).
    running: weakref.WeakSet[Template] = weakref.WeakSet()

    def __init__(self, launcher: ForkLauncher, lean_info: dict | None = None):
        self.launcher = launcher
        self.lean = lean_info is not None
        self.info: dict = {}
        self._ids = itertools.count(1)
        self._spawns: dict[int, _Spawn] = {}
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self.dead = threading.Event()
        self.started_at = time.monotonic()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock = ours
        self.cgroup = launcher._new_cgroup("template-lean" if self.lean else "template")
        try:
            argv = launcher.template_wrapper_argv(theirs.fileno(), self.cgroup, lean_info)
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=None,
                pass_fds=(theirs.fileno(),), close_fds=True, start_new_session=True, cwd="/", env={},
            )
        except BaseException:
            self.cgroup.remove()
            ours.close()
            raise
        finally:
            theirs.close()
        try:
            self.info = self._wait_ready()
        except BaseException:
            self.stop()
            raise
        threading.Thread(target=self._read_loop, name="template-reader", daemon=True).start()
        Template.running.add(self)

    def _recv(self, timeout: float | None = None) -> tuple[dict | None, int | None]:
        """One message and the pid its credentials carry (None: the template is gone)."""
        if timeout is not None:
            self.sock.settimeout(timeout)
        data, ancdata, _flags, _addr = self.sock.recvmsg(CONTROL_MAX, socket.CMSG_SPACE(12))
        pid = None
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(payload) >= 12:
                pid = struct.unpack("3i", payload[:12])[0]
        return (json.loads(data) if data else None), pid

    def _wait_ready(self) -> dict:
        try:
            message, _ = self._recv(TEMPLATE_START_TIMEOUT_S)
        except TimeoutError:
            raise RuntimeError(f"the runner template did not start within {TEMPLATE_START_TIMEOUT_S:g} s") from None
        finally:
            self.sock.settimeout(None)
        if message is None or message.get("op") != "ready":
            code = self.proc.wait(timeout=5) if message is None else None
            raise RuntimeError(f"the runner template failed to start (exit code {code}); see the worker's log")
        return {k: v for k, v in message.items() if k != "op"}

    def _read_loop(self) -> None:
        try:
            while True:
                message, pid = self._recv()
                if message is None:
                    break
                with self._lock:
                    spawn = self._spawns.get(message.get("id"))
                if spawn is None:
                    continue
                op = message.get("op")
                if op == "spawned":
                    spawn.pid = pid
                    if pid is None or pid <= 0:
                        spawn.error = "the template sent no credentials with its runner"
                    spawn.done.set()
                elif op == "spawn_failed":
                    spawn.error = message.get("error") or "spawn failed"
                    spawn.done.set()
                elif op == "exited":
                    spawn.set_exit(int(message["status"]), float(message.get("cpu_s", 0)),
                                   int(message.get("maxrss_kb", 0)))
                    with self._lock:
                        self._spawns.pop(spawn.id, None)
        except (OSError, ValueError) as exc:
            log.warning("runner template's control socket failed: %s", exc)
        finally:
            self._die()

    def _die(self) -> None:
        """The template is gone, and with it every runner it forked (the kernel killed its pid
        namespace): report them as killed."""
        self.dead.set()
        with self._lock:
            spawns, self._spawns = list(self._spawns.values()), {}
        for spawn in spawns:
            if not spawn.done.is_set():
                spawn.error = "the runner template exited"
                spawn.done.set()
            spawn.set_exit(9)  # a wait status: killed by SIGKILL

    def alive(self) -> bool:
        return not self.dead.is_set() and self.proc.poll() is None

    def spawn(self, spec: dict, fds: list[int]) -> _Spawn:
        spawn = _Spawn(next(self._ids))
        with self._lock:
            self._spawns[spawn.id] = spawn
        message = json.dumps({"op": "spawn", "id": spawn.id, **spec}).encode()
        try:
            with self._send_lock:
                rights = struct.pack(f"{len(fds)}i", *fds)
                self.sock.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
        except OSError as exc:
            self._forget(spawn)
            raise RuntimeError(f"cannot reach the runner template: {exc}") from exc
        if not spawn.done.wait(SPAWN_TIMEOUT_S) or spawn.error:
            self._forget(spawn)
            raise RuntimeError(f"the runner template could not fork a runner: {spawn.error or 'no answer'}")
        return spawn

    def _forget(self, spawn: _Spawn) -> None:
        with self._lock:
            self._spawns.pop(spawn.id, None)
        spawn.close_exit_fd()

    def stop(self) -> None:
        Template.running.discard(self)
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # EOF: the template leaves its loop and exits
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            try:
                self.cgroup.kill(wait=False)
            except CgroupError:
                pass
        try:
            # Reaped before its cgroup goes: an unreaped child keeps a cgroup busy.
            self.proc.wait(timeout=5)
            self.cgroup.remove()
        except (subprocess.TimeoutExpired, CgroupError) as exc:
            log.warning("the runner template's cgroup stays for the next sweep: %s", exc)
        self.sock.close()


def _ancestors(path: str) -> list[str]:
    """/a/b/c → [/a, /a/b]"""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


class ForkLauncher(BwrapLauncher):
    """Runners forked from a template; everything about the layout comes from BwrapLauncher."""

    name = "fork"
    sandboxed = True
    lean_runners = True
    # A session's runner gets its whole CPU allowance as it is forked (runner_rlimits).
    sets_session_cpu = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # The full template (numpy, jax, matplotlib) and the lean one (numpy only), by lean.
        self._templates: dict[bool, Template] = {}
        self._template_lock = threading.Lock()
        self._starter = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="template-starter")
        self.template_starts = 0

    # -- the template --------------------------------------------------------------------------

    @property
    def template_uid(self) -> int:
        return self.uid_base - 1

    def check(self) -> None:
        super().check()
        from .bwrap import _check_uid_unused

        _check_uid_unused(self.template_uid)  # the template's, just below the slots'

    def uid(self, slot: int) -> int:
        if not 0 <= slot < MAX_SLOTS:
            raise RuntimeError(f"runner slot {slot} is beyond the {MAX_SLOTS} the template maps")
        return super().uid(slot)

    def id_map(self) -> str:
        return f"0 {self.template_uid} 1\n{RUNNER_UID_BASE} {self.uid_base} {MAX_SLOTS}\n"

    def template_argv(self, control_fd: int, lean_info: dict | None = None) -> list[str]:
        """bwrap, run as root of the template's user namespace (so it keeps its capabilities
        there, for the runners' namespaces), and the template inside it."""
        argv = [
            self.bwrap_path(),
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",  # the template is pid 1: it reaps what its runners leave
            "--hostname", "sandbox",
        ]
        # bwrap, as root of its namespace, makes the parents of what it binds 0700: runners,
        # whose uids are not root's, could not reach the interpreter, its loader (/usr/lib64) or
        # the runner below them.
        layout = self.layout_args()
        targets = [layout[i + 2] for i, arg in enumerate(layout)
                   if arg in ("--ro-bind", "--dev-bind", "--symlink") and i + 2 < len(layout)]
        for path in sorted({p for t in targets for p in _ancestors(t)}, key=lambda p: (p.count("/"), p)):
            argv += ["--perms", "0755", "--dir", path]
        argv += layout
        argv += ["--size", str(TEMPLATE_TMP_BYTES), "--tmpfs", "/tmp"]
        argv += ["--chdir", WORKDIR, "--remount-ro", "/"]
        argv += ["--", self.python, "-E", "-s", "-B", "-m", "runner.template", "--control-fd", str(control_fd)]
        argv += self.runner_flags()
        if lean_info is not None:
            argv += ["--lean", json.dumps(lean_info)]
        return argv

    def template_rlimits(self) -> list[tuple[str, int, int]]:
        """The runners' ceilings (a runner may lower its own, never raise them). No CPU limit:
        the template lives as long as the worker."""
        return [(name, soft, hard) for name, soft, hard in self.rlimits() if name != "RLIMIT_CPU"]

    def template_wrapper_argv(self, control_fd: int, cgroup, lean_info: dict | None = None) -> list[str]:
        return self.wrapper_command(self.template_argv(control_fd, lean_info), cgroup=cgroup,
                                    rlimits=self.template_rlimits(),
                                    uid=0, userns={"uid_map": self.id_map(), "gid_map": self.id_map()})

    def template(self, lean: bool = False) -> Template:
        """The live template, started (again) if there is none. The lean one is started with
        what the full one's probe found, which its runners say in their "ready" (it has no
        backend to probe)."""
        full = None if not lean else self.template()
        with self._template_lock:
            current = self._templates.get(lean)
            if current is None or not current.alive():
                if current is not None:
                    log.warning("the %s runner template died; starting a new one", "lean" if lean else "full")
                    current.stop()
                    del self._templates[lean]
                STAGE_DIR.mkdir(parents=True, exist_ok=True, mode=0o755)
                self._check_font_cache()
                lean_info = None
                if full is not None:
                    lean_info = {k: v for k, v in full.info.items() if k not in TEMPLATE_OWN}
                # Started by one long-lived thread: bwrap's --die-with-parent follows the thread
                # that started it, and a run's or the pool's thread may end before the template.
                current = self._templates[lean] = self._starter.submit(Template, self, lean_info).result()
                self.template_starts += 1
                log.info("%s runner template started in %.0f ms (%s resident)", "lean" if lean else "full",
                         (time.monotonic() - current.started_at) * 1000,
                         human_bytes(current.info.get("template_rss_kb", 0) * 1024))
            return current

    def prepare(self) -> None:
        super().prepare()
        self.close()  # a template started before the font list was ready goes without it
        try:
            self.template()  # the lean one, when the pool first asks for a lean runner
        except RuntimeError as exc:
            log.warning("the runner template did not start (tried again at the first run): %s", exc)

    def close(self) -> None:
        with self._template_lock:
            templates, self._templates = list(self._templates.values()), {}
        for template in templates:
            template.stop()

    # -- runners -------------------------------------------------------------------------------

    def runner_rlimits(self, session_cpu_s: int | None = None) -> list[tuple[str, int, int]]:
        """``session_cpu_s``: a notebook session's runner, whose hard CPU limit is the whole
        session's (each cell's is the soft limit the runner sets: runner/session.py)."""
        out = []
        for name, soft, hard in self.rlimits():
            if name == "RLIMIT_CPU":
                cpu = self.limits.cpu_s + SETUP_CPU_S
                soft, hard = cpu, (session_cpu_s + SETUP_CPU_S if session_cpu_s else cpu + 1)
            out.append((name, soft, hard))
        return out

    def start(self, slot: int, lean: bool = False, session_cpu_s: int | None = None,
              env: dict[str, str] | None = None):
        """A runner forked from the full template, or (``lean``) from the lean one: a runner for
        code that does not use jax, whose fork and exit cost a fraction of a full one's."""
        template = self.template(lean)
        uid = self.uid(slot) - self.uid_base + RUNNER_UID_BASE
        cgroup = self._new_cgroup(slot)
        ours: list[int] = []
        theirs: list[int] = []
        try:
            for _ in range(4):  # stdin, stdout, stderr, events
                r, w = os.pipe2(os.O_CLOEXEC)
                ours.append(w if not theirs else r)
                theirs.append(r if not theirs else w)
            spec = {
                "uid": uid, "gid": uid, "env": {**self.environment(slot), **(env or {})},
                "rlimits": self.runner_rlimits(session_cpu_s),
                "tmp_bytes": self.limits.tmp_bytes, "cwd": WORKDIR,
            }
            spawn = template.spawn(spec, theirs)
        except BaseException:
            for fd in ours:
                os.close(fd)
            cgroup.remove()
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        # Buffered, as Popen's are (the supervisor reads through fileno(), and read1 on errors).
        stdin = os.fdopen(ours[0], "wb")
        stdout = os.fdopen(ours[1], "rb")
        stderr = os.fdopen(ours[2], "rb")
        proc = ForkedProcess(spawn, stdin, stdout, stderr, ours[3])
        proc.sandbox_cgroup = cgroup
        proc.sandbox_report = None
        proc.sandbox_runner_pid = spawn.pid
        try:
            cgroup.add(spawn.pid)
            stdin.write(PLACED)
            stdin.flush()
        except OSError as exc:
            self.cleanup(proc)
            proc.stdin.close()
            proc.stdout.close()
            proc.stderr.close()
            os.close(proc.event_fd)
            proc.release()
            raise RuntimeError(f"cannot place the runner in its cgroup: {exc}") from exc
        return proc

    @staticmethod
    def death_signal(returncode: int) -> int | None:
        return -returncode if returncode < 0 else None
