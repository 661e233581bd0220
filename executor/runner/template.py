"""The template: imports numpy, jax and the runner once, then forks one runner per run.

    executor worker (root on the host)
      └─ enter.py: new user namespace, uid 0 → host uid_base-1, 1000+slot → host uid_base+slot
         └─ bwrap (root in that namespace; pid, net, ipc, uts and mount namespaces)
            └─ python -m runner.template           pid 1, single-threaded, no backend
               │   control socket (fd 3): spawn requests carrying the run's four descriptors
               └─ fork() into a new pid namespace ─▶ runner, pid 1 of its own namespace:
                    waits until the worker has put it in its run's cgroup, then makes its own
                    mount, net, ipc, uts and cgroup namespaces, a fresh /proc and /tmp,
                    drops to uid 1000+slot with no capabilities, sets its rlimits,
                    closes every other descriptor, clears its environment, installs the seccomp
                    filter and says "ready"

Importing numpy and jax costs about 0.7 s of CPU; a fork costs a few milliseconds and shares
those pages copy-on-write. The template never initialises a backend and never starts a thread:
forking after XLA's thread pools exist deadlocks the child, and CUDA does not survive a fork. A
run's backend starts in the runner: when the snippet first uses jax, or before, while the runner
waits on an idle node (executor/pool.py asks it to warm up); what it will find is learnt once, by
a probe child, and sent with every "ready".

The template runs no user code and reads nothing but the worker's control socket. Its own
seccomp filter is the runner's without the namespace and mount calls it needs for its children;
each runner stacks the full filter on top.

Control messages (SOCK_SEQPACKET, one JSON object per packet):

    worker → template   {"op": "spawn", "id", "uid", "gid", "env", "rlimits", "tmp_bytes",
                        "cwd"} + SCM_RIGHTS [stdin, stdout, stderr, events]
    template → worker   {"op": "ready", ...what a run's "ready" says}     once, after the probe
                        {"op": "spawned", "id", "pid"} + SCM_CREDENTIALS(runner): the kernel
                                                        gives the worker the runner's host pid
                        {"op": "spawn_failed", "id", "error"}
                        {"op": "exited", "id", "status", "cpu_s", "maxrss_kb"}

Only the standard library and the runner's own modules: it is bound into the sandbox alone.
"""

from __future__ import annotations

import argparse
import array
import ctypes
import importlib
import json
import os
import select
import signal
import socket
import struct
import sys
import time

# Before numpy is imported: OpenBLAS would otherwise start its thread pool in the template.
# Each runner sets its own thread count (_blas_threads).
os.environ["OPENBLAS_NUM_THREADS"] = "1"
# OpenBLAS's idle threads spin 2**28 cycles (about 0.1 s) before they sleep, after they start and
# after each call: a runner's, started as it is forked, spun on every core but one while the
# runner waited in the pool or ran a print(1), 60 ms of CPU a runner on this 2-core host. 2**18
# cycles (about 0.1 ms) keeps a loop of BLAS calls from sleeping between them.
os.environ["OPENBLAS_THREAD_TIMEOUT"] = "18"

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
SIOCSIFFLAGS = 0x8914
IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x1, 0x8, 0x40
# What each runner unshares after it is in its cgroup (the pid namespace it is born into).
RUNNER_NAMESPACES = os.CLONE_NEWNS | os.CLONE_NEWNET | os.CLONE_NEWIPC | os.CLONE_NEWUTS | os.CLONE_NEWCGROUP
CONTROL_MAX = 64 * 1024
PLACED = b"placed\n"


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else s.encode()
    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def thread_count() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


# -- the runner, after the fork ---------------------------------------------------------------


def _read_line(fd: int, limit: int = 64) -> bytes:
    """One line from ``fd`` a byte at a time: what follows it is the run's request, read later."""
    out = b""
    while not out.endswith(b"\n") and len(out) < limit:
        b = os.read(fd, 1)
        if not b:
            break
        out += b
    return out


def _loopback_up() -> None:
    # Through an AF_UNIX socket: the template's filter refuses other families, and any socket
    # reaches the interface ioctls.
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        import fcntl

        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))


def _drop_capability_bounding_set() -> None:
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)


def _blas_setter():
    """numpy's OpenBLAS thread count setter, found once in the template (its library opened by
    name, its symbol looked up: half a millisecond a runner); None where numpy has none."""
    try:
        import numpy

        libs = os.path.join(os.path.dirname(os.path.dirname(numpy.__file__)), "numpy.libs")
        for name in sorted(os.listdir(libs)) if os.path.isdir(libs) else ():
            if "openblas" in name:
                lib = ctypes.CDLL(os.path.join(libs, name))
                for symbol in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                               "openblas_set_num_threads"):
                    if hasattr(lib, symbol):
                        return getattr(lib, symbol)
    except OSError:
        pass  # only slower: numpy's BLAS stays on one thread
    return None


_SET_BLAS_THREADS = None  # the template's _blas_setter(), for its runners


def _blas_threads() -> None:
    """The template imported numpy with one OpenBLAS thread; a runner gets one per core, as a
    process started afresh would."""
    os.environ.pop("OPENBLAS_NUM_THREADS", None)
    if _SET_BLAS_THREADS is not None:
        _SET_BLAS_THREADS(len(os.sched_getaffinity(0)))


# The runner's modules that every run imports, loaded in the template so that every runner shares
# them: a module a runner imports itself is read and compiled from source there (2-4 ms of its CPU
# a run, where print(1) needs 3 all told). Those a run imports after its code (the names it left,
# the runner's hiding) are here too; tests/runner/test_template.py checks that a run needs no other.
RUN_MODULES = ("main", "bindings", "hiding", "shapes")


def become_runner(spec: dict, fds: list[int], ready_info: dict, t_fork: float, check_protocol: bool = False) -> None:
    """In the forked child, pid 1 of a new pid namespace, still root of the template's user
    namespace. Confines itself, says "ready", runs one snippet, exits. Never returns."""
    for target, fd in enumerate(fds):  # stdin, stdout, stderr, events → 0, 1, 2, 3
        if fd != target:
            os.dup2(fd, target, inheritable=False)
    os.closerange(4, os.sysconf("SC_OPEN_MAX"))  # the control socket, the template's own
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)

    # Nothing happens until the worker has moved this process into its run's cgroup: from here
    # on, every page and every process it makes is counted against the run's limits.
    if _read_line(0) != PLACED:
        os._exit(0)  # the worker gave up on this runner

    os.unshare(RUNNER_NAMESPACES)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # This pid namespace's /proc, over the template's (the kernel lets a user namespace mount a
    # proc only where a fully visible one is already mounted, so the old one stays beneath).
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['tmp_bytes']},mode=1777")
    _loopback_up()

    import resource

    for name, soft, hard in spec["rlimits"]:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    os.setgroups([])  # (the capability bounding set is empty: the template emptied its own)
    os.setresgid(spec["gid"], spec["gid"], spec["gid"])
    os.setresuid(spec["uid"], spec["uid"], spec["uid"])  # clears every capability
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # a change of uid clears it
    # and makes the process undumpable, which hides its own /proc/self/environ and fd from it
    # (their owner becomes the namespace's root). Other processes of the run, the only ones
    # it can see, are the snippet's own; ptrace is refused by the filter anyway.
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    os.environ.clear()
    os.environ.update(spec["env"])
    from . import jaxcompat

    os.environ.update(jaxcompat.FLAGS_SET)  # XLA reads them when the backend starts, in the runner
    os.chdir(spec["cwd"])

    _blas_threads()
    import numpy

    # The template's global state would otherwise repeat in every run. Seeded from a whole
    # state's worth of the kernel's entropy (624 words, MT19937's), which costs a tenth of
    # seed()'s hashing of 128 bits (0.2 ms).
    numpy.random.seed(numpy.frombuffer(os.urandom(2496), dtype=numpy.uint32))

    from . import hooks, main, seccomp

    channel = main.EventChannel(3, check=check_protocol)
    hooks.prepare_run(channel, font_cache=ready_info.get("font_cache"), compile_cache=ready_info.get("compile_cache"))
    seccomp.install()
    info = {k: v for k, v in ready_info.items() if k not in ("font_cache", "compile_cache")}
    channel.send("ready", warmup_ms=round((time.perf_counter() - t_fork) * 1000, 1), forked=True, **info)
    # Buffered: a request line is read whole, not a byte a read (a run's input, a few hundred KiB,
    # took a fifth of a second so). Whoever reads the supervisor's lines after it reads this object.
    main.serve(channel, os.fdopen(0, "rb", closefd=False))


# -- the template ---------------------------------------------------------------------------


def probe(cpu_devices: int) -> dict:
    """What a runner's backend will find, learnt in a child so that the template itself never
    starts one (the child's threads and device handles die with it)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            from .main import warm_up

            os.write(w, json.dumps(warm_up(cpu_devices or None)).encode())
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - reported to the worker as the failure
            os.write(w, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
            os._exit(1)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    info = json.loads(data or b'{"error": "the probe died"}')
    if "error" in info:
        raise RuntimeError(f"the backend probe failed: {info['error']}")
    return info


class Template:
    def __init__(self, control: socket.socket, ready_info: dict, check_protocol: bool = False):
        self.control = control
        self.ready_info = ready_info
        self.check_protocol = check_protocol  # each runner's channel checks what it sends
        self.own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY)
        self.children: dict[int, int] = {}  # pid → spawn id

    def send(self, message: dict, pid: int | None = None) -> None:
        ancillary = []
        if pid is not None:
            # The runner's credentials: the kernel translates the pid into the worker's namespace.
            ancillary = [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("3i", pid, 0, 0))]
        self.control.sendmsg([json.dumps(message).encode()], ancillary)

    def spawn(self, spec: dict, fds: list[int]) -> None:
        if len(fds) != 4:
            raise ValueError(f"a spawn carries 4 descriptors, not {len(fds)}")
        if (threads := thread_count()) != 1:
            # Never fork a process with other threads: the worker replaces this template.
            raise SystemExit(f"template has {threads} threads; it must be single-threaded")
        os.unshare(os.CLONE_NEWPID)
        try:
            t_fork = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                try:
                    become_runner(spec, fds, self.ready_info, t_fork, self.check_protocol)
                except BaseException as exc:  # noqa: BLE001 - reported on the run's stderr
                    try:
                        os.write(2, f"sandbox: the runner could not start: {type(exc).__name__}: {exc}\n".encode())
                    finally:
                        os._exit(127)
        finally:
            os.setns(self.own_pid_ns, os.CLONE_NEWPID)  # the next child gets a new one too
        self.children[pid] = spec["id"]
        self.send({"op": "spawned", "id": spec["id"], "pid": pid}, pid=pid)

    def reap(self) -> None:
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            spawn_id = self.children.pop(pid, None)
            if spawn_id is not None:
                self.send({"op": "exited", "id": spawn_id, "status": status,
                           "cpu_s": usage.ru_utime + usage.ru_stime, "maxrss_kb": usage.ru_maxrss})

    def handle(self) -> bool:
        """One control message; False when the worker has gone."""
        fds = array.array("i")
        data, ancdata, _flags, _addr = self.control.recvmsg(CONTROL_MAX, socket.CMSG_SPACE(16 * fds.itemsize))
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        if not data:
            return False
        try:
            message = json.loads(data)
            if message.get("op") != "spawn":
                raise ValueError(f"unknown op {message.get('op')!r}")
            try:
                self.spawn(message, list(fds))
            except OSError as exc:
                self.send({"op": "spawn_failed", "id": message.get("id"), "error": str(exc)})
        finally:
            for fd in fds:
                os.close(fd)
        return True

    def serve(self) -> None:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        poller = select.poll()
        poller.register(self.control.fileno(), select.POLLIN)
        poller.register(wake_r, select.POLLIN)
        while True:
            for fd, _event in poller.poll():
                if fd == wake_r:
                    while True:
                        try:
                            if not os.read(wake_r, 4096):
                                break
                        except BlockingIOError:
                            break
                elif not self.handle():
                    return
            self.reap()


def preload_matplotlib(font_cache: str | None) -> None:
    """pyplot and its font list, loaded once here rather than in every run that draws (about
    0.3 s a run): the runner's backend is chosen by name and imported only when a figure is
    drawn, and the font list comes from the worker's prepared file, so nothing is scanned."""
    from . import hooks

    hooks.prepare_run(None, font_cache)  # MPLBACKEND, MPLCONFIGDIR and the font list
    try:
        import matplotlib.pyplot  # noqa: F401 - loaded here so that every run shares it
    except Exception as exc:  # noqa: BLE001 - only slower: each run imports it itself
        print(f"template: matplotlib not preloaded: {exc}", file=sys.stderr)


MADV_COLLAPSE = 25
HUGE = 2 * 1024 * 1024


def collapse_heap() -> int:
    """Back the template's anonymous memory (the interpreter's heap: about 100 MB once jax is
    imported) with 2 MiB pages where the kernel can: each fork then copies one entry per 2 MiB
    instead of 512, and each runner's exit frees as few; a runner's write still copies 4 KiB
    (the kernel splits the page it writes in). Measured (bench.timeline --runner, 40 runs,
    three times each way): 17.8-18.8 ms of the machine's CPU per print(1) against 22.8-31.
    Only MADV_COLLAPSE, never MADV_HUGEPAGE: runners' own allocations stay in 4 KiB pages (their
    memory is counted and capped as before). Returns the bytes collapsed (0 where the kernel
    cannot: no MADV_COLLAPSE before Linux 6.1, or transparent huge pages turned off)."""
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    done = 0
    with open("/proc/self/maps") as maps:
        regions = maps.read().splitlines()
    for line in regions:
        fields = line.split()
        if len(fields) > 5 and fields[5] != "[heap]" or not fields[1].startswith("rw"):
            continue  # only the heap and anonymous memory, never a file's or the stack
        start, end = (int(x, 16) for x in fields[0].split("-"))
        start = (start + HUGE - 1) // HUGE * HUGE
        end = end // HUGE * HUGE
        if end <= start:
            continue
        if libc.madvise(start, end - start, MADV_COLLAPSE) == 0:
            done += end - start
    return done


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="runner.template")
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--cpu-devices", type=int, default=0)
    parser.add_argument("--font-cache")
    parser.add_argument("--compile-cache")
    parser.add_argument("--check-protocol", action="store_true", help="its runners check what they send (the tests)")
    parser.add_argument("--lean", metavar="INFO",
                        help="a lean template: numpy and the runner only, no jax, no matplotlib; INFO is "
                             "what the full template's probe found (JSON), said in every runner's ready")
    args = parser.parse_args(argv)
    control = socket.socket(fileno=args.control_fd)
    os.set_inheritable(args.control_fd, False)
    t0 = time.perf_counter()

    from . import jaxcompat

    if args.cpu_devices:
        jaxcompat.prepare_cpu_devices(args.cpu_devices)
    # numpy, and numpy.random, which numpy loads at first use (8 ms a runner; jax loads it in the
    # full template), here so that every run shares them.
    import numpy.random  # noqa: F401 - imported for every runner to share, not used here

    if args.lean is None:
        import jax  # noqa: F401 - loaded here so that every run shares it (after prepare_cpu_devices)

    from . import hiding, hooks, seccomp

    if args.lean is None:
        if args.cpu_devices:
            jaxcompat.set_cpu_devices(args.cpu_devices)
        jaxcompat.preload_lowering()
    for name in RUN_MODULES:
        importlib.import_module(f"{__package__}.{name}")

    if args.lean is None:
        hooks.prepare_process()
        preload_matplotlib(args.font_cache)
        info = probe(args.cpu_devices)
    else:
        # A runner of this template that imports jax after all gets what the full one has
        # (the simulated devices, the capture and compile-cache hooks) as the import ends.
        hooks.prepare_process(defer_jax=True, cpu_devices=args.cpu_devices)
        info = {**json.loads(args.lean), "lean": True}
    info["libraries"] = hooks.libraries()
    if args.font_cache:
        info["font_cache"] = args.font_cache
    if args.compile_cache:
        info["compile_cache"] = args.compile_cache
    # What every runner would otherwise work out anew after the fork, in memory it copies.
    global _SET_BLAS_THREADS
    _SET_BLAS_THREADS = _blas_setter()
    seccomp.prepare()
    # The runner's modules, hidden here once rather than in each runner (runner/hiding.py). This
    # module runs as __main__ (python -m runner.template): its own relative imports follow them.
    hidden = hiding.hide(__package__)
    globals()["__package__"] = hidden
    if __spec__ is not None:
        __spec__.name = f"{hidden}.template"
    info["huge_bytes"] = collapse_heap()  # last: what the imports and the probe allocated
    # No capability can come back through an execve, in the template or in any runner it forks
    # (the bounding set is inherited; the template keeps its own effective ones for the runners'
    # namespaces and mounts).
    _drop_capability_bounding_set()
    seccomp.install(allow=seccomp.TEMPLATE_ALLOWS)
    if (threads := thread_count()) != 1:
        raise SystemExit(f"template has {threads} threads after its imports; it must be single-threaded")
    rss_kb = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
    control.sendmsg([json.dumps({"op": "ready", "template_ms": round((time.perf_counter() - t0) * 1000, 1),
                                 "template_rss_kb": rss_kb, **info}).encode()])
    Template(control, info, check_protocol=args.check_protocol).serve()


if __name__ == "__main__":
    main(sys.argv[1:])
