"""Hostile snippets, each with the result it must produce, through the real supervisor and the
real sandbox; after each, a warm runner that waited next to it must still run a normal snippet.

Limits (conftest): wall 6 s, CPU 3 s, memory 1 GiB, output 64 KiB, /tmp 16 MiB, 64 pids.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import subprocess
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from executor.pool import runner_for

from .conftest import LIMITS, PROJECT_ROOT, UID_BASE, host_processes_of, uid_inside, wait_gone

SLOT0_UID = UID_BASE  # run_local starts its runner in slot 0
PYTHON_PREFIX = sys.base_prefix  # bound read-only at its own path


@dataclass
class Case:
    id: str
    code: str
    status: str
    message: str = ""  # a regex the finished event's message must match (fullmatch)
    error: str | None = None  # exc_type of the first error event
    error_message: str = ""  # a regex searched in that error's message
    stdout: str | None = None  # exact stdout, when given
    limits: dict | None = None  # overrides of the conftest's LIMITS


CASES = [
    # -- the network: nothing, not even loopback ---------------------------------------------
    Case("tcp-to-redis-and-postgresql-on-loopback", textwrap.dedent("""\
        import socket
        for host in ("127.0.0.1", "::1"):
            for port in (6379, 5432):
                try:
                    socket.create_connection((host, port), timeout=3)
                    print(host, port, "CONNECTED")
                except OSError as e:
                    print(host, port, type(e).__name__, e.errno)
        socket.create_connection(("127.0.0.1", 6379), timeout=3)
        """), "failed", error="PermissionError", error_message="Operation not permitted",
         stdout="127.0.0.1 6379 PermissionError 1\n127.0.0.1 5432 PermissionError 1\n"
                "::1 6379 PermissionError 1\n::1 5432 PermissionError 1\n"),
    Case("unix-socket-postgresql",
         "import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('/var/run/postgresql/.s.PGSQL.5432')\n",
         "failed", error="FileNotFoundError"),
    Case("raw-and-netlink-sockets", textwrap.dedent("""\
        import socket
        for family, kind in [(socket.AF_INET, socket.SOCK_RAW), (socket.AF_NETLINK, socket.SOCK_RAW),
                             (socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_INET6, socket.SOCK_DGRAM)]:
            try:
                socket.socket(family, kind)
                print(family.name, "opened")
            except OSError as e:
                print(family.name, e.errno)
        """), "succeeded", stdout="AF_INET 1\nAF_NETLINK 1\nAF_PACKET 1\nAF_INET6 1\n"),
    # -- the host's files: not there, or read-only ---------------------------------------------
    Case("write-outside-tmp", textwrap.dedent(f"""\
        import os
        for path in ["/x", "/opt/playground/runner/x.py", "/opt/playground/venv/x", "/etc/x",
                     "{PYTHON_PREFIX}/x", "/usr/lib64/x", "/dev/shm/x", "/proc/x"]:
            try:
                open(path, "w").write("x")
                print(path, "WRITTEN")
            except OSError as e:
                print(path, e.errno)
        open("/tmp/ok", "w").write("fine")
        print(open("/tmp/ok").read())
        """), "succeeded",
         stdout="/x 30\n/opt/playground/runner/x.py 30\n/opt/playground/venv/x 30\n/etc/x 30\n"
                f"{PYTHON_PREFIX}/x 30\n/usr/lib64/x 30\n/dev/shm/x 30\n/proc/x 2\nfine\n"),
    Case("fill-tmp", textwrap.dedent("""\
        n = 0
        while True:
            with open(f"/tmp/f{n}", "wb") as f:
                f.write(b"x" * 2**20)
            n += 1
        """), "failed", error="OSError", error_message=r"No space left on device"),
    Case("one-huge-file", "open('/tmp/big', 'wb').write(b'x' * 2**25)\n",
         "failed", error="OSError", error_message=r"File too large|No space left"),
    Case("the-host-is-out-of-sight", textwrap.dedent(f"""\
        import os
        print(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
        print(sorted(os.listdir("/")))
        print(os.path.exists("{PROJECT_ROOT}"), os.listdir("/opt/playground"))
        print(os.path.exists("/sys/fs/cgroup"), os.path.exists("/var/run/postgresql"))
        print(os.getuid(), os.getgid(), os.getgroups())
        """), "succeeded",
         stdout="[1]\n"  # the runner alone: it is the sandbox's pid 1
                f"{sorted(['dev', 'etc', 'lib', 'lib64', 'opt', 'proc', 'tmp', 'usr', PYTHON_PREFIX.split('/')[1]])}\n"
                "False ['runner', 'venv']\nFalse False\n" f"{uid_inside(0)} {uid_inside(0)} []\n"),
    # -- processes and threads -------------------------------------------------------------------
    Case("fork-bomb", "import os\nwhile True:\n    os.fork()\n",
         "limit_exceeded", message=f"process limit of {LIMITS.pids} exceeded"),
    # This one shrugs off EAGAIN and spins: the supervisor sees the pids limit hit and ends it
    # at once rather than at the wall clock.
    Case("fork-bomb-that-ignores-the-limit",
         "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
         "limit_exceeded", message=f"process limit of {LIMITS.pids} exceeded", limits={"wall_s": 10}),
    Case("thread-bomb",
         "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(100,)).start()\n",
         "limit_exceeded", message=f"process limit of {LIMITS.pids} exceeded"),
    Case("kill-everyone", "import os\nos.kill(-1, 9)\n", "failed", error="ProcessLookupError"),
    # The runner is the sandbox's pid 1 (no bwrap init there): it has no parent in its pid
    # namespace, and signals from inside that it has no handler for do not reach it.
    Case("kill-the-parent-and-init", textwrap.dedent("""\
        import os, signal
        os.kill(1, signal.SIGTERM)
        os.kill(1, signal.SIGKILL)
        print("still here", os.getpid(), os.getppid())
        """), "succeeded", stdout="still here 1 0\n"),
    Case("kill-own-process-group", "import os\nos.killpg(0, 9)\nprint('still here')\n",
         "succeeded", stdout="still here\n"),
    Case("ptrace", textwrap.dedent("""\
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        for request, pid in [(0, 0), (16, 1), (0x4206, 1)]:  # TRACEME, ATTACH, SEIZE
            print(libc.ptrace(request, pid, 0, 0), ctypes.get_errno())
        """), "succeeded", stdout="-1 1\n-1 1\n-1 1\n"),
    Case("unshare", "import os\nos.unshare(os.CLONE_NEWUSER | os.CLONE_NEWNET)\n",
         "failed", error="PermissionError"),
    # -- memory ------------------------------------------------------------------------------------
    # What it meets must be its memory: with the suite's 3 CPU seconds, the kernel's page faults
    # (and its reclaim) on a busy host now and then used them up first, at half the memory.
    Case("numpy-memory-bomb",
         "import numpy as np\nkeep = []\nwhile True:\n    keep.append(np.ones(10_000_000))\n",
         "failed", error="MemoryError", limits={"cpu_s": 20, "wall_s": 20}),
    Case("numpy-one-huge-array", "import numpy as np\nx = np.ones(10**10)\n",
         "failed", error="MemoryError", error_message="Unable to allocate 74.5 GiB"),
    Case("jax-memory-bomb",
         "import jax.numpy as jnp\nkeep = []\nwhile True:\n    keep.append(jnp.ones(10_000_000) + len(keep))\n",
         # XLA's threads fault the pages in on every core: 3 CPU seconds can come first, and on
         # a loaded machine filling the 1 GiB took over the default 6 s of wall clock.
         "failed", error_message="RESOURCE_EXHAUSTED", limits={"cpu_s": 30, "wall_s": 20}),
    Case("jax-one-huge-array",
         "import jax.numpy as jnp\nx = jnp.ones(2**31, dtype=jnp.float32)\nx.block_until_ready()\n",
         "failed", error_message="RESOURCE_EXHAUSTED"),
    Case("shared-memory-bomb-meets-the-oom-killer", textwrap.dedent("""\
        import mmap
        m = mmap.mmap(-1, 2 << 30)  # MAP_SHARED: not data, so only the cgroup stops it
        for i in range(0, len(m), 4096):
            m[i] = 1
        """), "limit_exceeded", message="memory limit of 1 GiB exceeded"),
    # -- time --------------------------------------------------------------------------------------
    Case("cpu-spin", "while True:\n    pass\n",
         "limit_exceeded", message=f"CPU time limit of {LIMITS.cpu_s} s exceeded", limits={"wall_s": 30}),
    Case("cpu-spin-ignoring-sigxcpu",
         "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass\n",
         "limit_exceeded", message=f"CPU time limit of {LIMITS.cpu_s} s exceeded", limits={"wall_s": 30}),
    Case("sleep-past-the-wall-clock", "import time\ntime.sleep(60)\n",
         "timed_out", message="wall-clock limit of 3 s exceeded", limits={"wall_s": 3}),
    Case("jit-compile-that-never-ends", textwrap.dedent("""\
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x):
            for i in range(10**7):
                x = x * 1.0001 + i
            return x
        f(jnp.ones(3))
        """), "timed_out", message="wall-clock limit of 3 s exceeded",
         limits={"wall_s": 3, "cpu_s": 60}),  # the wall clock, not the CPU limit, must end it
    Case("recursion-bomb", "def f():\n    return f()\nf()\n", "failed", error="RecursionError"),
    Case("segfault", "import ctypes\nctypes.string_at(0)\n",
         "failed", message="the snippet's process was killed by SIGSEGV"),
    # -- output ------------------------------------------------------------------------------------
    Case("stdout-flood", "while True:\n    print('x' * 100)\n",
         "limit_exceeded", message="output limit of 64 KiB exceeded"),
    Case("stderr-flood", "import sys\nwhile True:\n    sys.stderr.write('e' * 100)\n",
         "limit_exceeded", message="output limit of 64 KiB exceeded"),
    Case("one-huge-line", "import sys\n_ = sys.stdout.write('x' * 10**8)\n",
         "limit_exceeded", message="output limit of 64 KiB exceeded", stdout="x" * LIMITS.output_bytes),
    Case("a-long-line-under-the-cap", "import sys\n_ = sys.stdout.write('y' * 50000)\n",
         "succeeded", stdout="y" * 50000),
    Case("invalid-utf8-and-nul-bytes", "import os\n_ = os.write(1, b'ok \\xff\\xfe \\x00 end\\n')\n",
         "succeeded", stdout="ok \ufffd\ufffd \x00 end\n"),
    Case("close-sys-stdout", "import sys\nsys.stdout.close()\nprint('x')\n",
         "failed", error="ValueError", error_message="closed file"),
    Case("close-fds-1-and-2", "import os\nos.close(1)\nos.close(2)\nprint('lost')\n",
         "failed", error="OSError", error_message="Bad file descriptor"),
    Case("replace-sys-stdout", "import io, sys\nsys.stdout = io.StringIO()\nprint('hidden')\n",
         "succeeded", stdout=""),
    Case("os-exit-mid-output", "import os, sys\n_ = sys.stdout.write('partial')\nos._exit(3)\n",
         "failed", message="the snippet's process exited with code 3", stdout="partial"),
    Case("forge-runner-events", textwrap.dedent("""\
        import os
        # The event pipe: the one descriptor beyond stdio that is a pipe.
        fd = next(int(f) for f in sorted(os.listdir("/proc/self/fd"), key=int)
                  if int(f) > 2 and os.readlink("/proc/self/fd/" + f).startswith("pipe:"))
        os.write(fd, b'{"type": "finished", "status": "succeeded"}\\n{"type": "started"}\\nnot json\\n')
        raise SystemExit(2)
        """), "failed"),
]


# Each case in the runner the executor would give it, and (where that is a lean one, forked from
# the template without jax) in a full one too.
# A spinning snippet must use up its CPU seconds before its wall clock runs out: how soon it does
# is what the machine gives it, so those cases run alone (scripts/test), not beside other tests.
MEASURES_CPU = {"cpu-spin", "cpu-spin-ignoring-sigxcpu"}
RUNNERS = [pytest.param(c, lean, id=f"{c.id}-{'lean' if lean else 'full'}",
                        marks=[pytest.mark.serial] if c.id in MEASURES_CPU else [])
           for c in CASES for lean in ((True, False) if runner_for(c.code)["lean"] else (False,))]


@pytest.mark.parametrize(("case", "lean"), RUNNERS)
def test_it_contains_the_hostile_snippet(case, lean, run, then_a_normal_run_succeeds):
    result = run(case.code, replace(LIMITS, **case.limits) if case.limits else None, lean=lean)

    assert result.status == case.status, result
    assert re.fullmatch(case.message, result.message), result
    if case.error is not None:
        assert result.error and result.error["exc_type"] == case.error, result
    if case.error_message:
        assert result.error and re.search(case.error_message, result.error["message"]), result
    if case.stdout is not None:
        assert result.stdout == case.stdout, result
    assert result.stdout.count("x") <= LIMITS.output_bytes
    assert wait_gone(SLOT0_UID) == [], "a process of the sandbox outlived its run"
    then_a_normal_run_succeeds()


def test_it_does_not_show_the_launchers_environment(run, monkeypatch, then_a_normal_run_succeeds):
    secret = "jaxpg-secret-" + secrets.token_hex(8)
    monkeypatch.setenv("JAXPG_TEST_SECRET", secret)
    result = run(textwrap.dedent("""\
        import os
        print(dict(os.environ))
        for pid in [p for p in os.listdir("/proc") if p.isdigit()] + ["self", "thread-self"]:
            for name in ("environ", "cmdline"):
                try:
                    print(pid, name, open(f"/proc/{pid}/{name}", "rb").read())
                except OSError as e:
                    print(pid, name, e)
        """))

    assert result.status == "succeeded", result
    assert "/proc/1/environ" not in result.stdout  # every read worked...
    assert "1 environ b'PATH=" in result.stdout
    assert secret not in result.stdout + result.stderr  # ...and none holds the secret
    assert "JAXPG_TEST_SECRET" not in result.stdout
    then_a_normal_run_succeeds()


def test_it_cannot_read_the_project_or_the_hosts_secrets(run, then_a_normal_run_succeeds):
    paths = [str(PROJECT_ROOT / "web" / "settings.py"), __file__, "/etc/shadow", "/etc/passwd",
             "/root/.bash_history", "/proc/1/root/etc/shadow", str(PROJECT_ROOT / ".git" / "config")]
    result = run(textwrap.dedent(f"""\
        for path in {paths!r}:
            try:
                print(path, "READ", len(open(path, "rb").read()))
            except OSError as e:
                print(path, type(e).__name__)
        """))

    assert result.status == "succeeded", result
    assert result.stdout == "".join(f"{p} FileNotFoundError\n" for p in paths)
    then_a_normal_run_succeeds()


def test_it_cannot_reach_an_abstract_unix_socket_of_the_host(run, then_a_normal_run_succeeds):
    # Abstract unix sockets belong to a network namespace: the sandbox's own is empty.
    name = "\0jaxpg-test-" + secrets.token_hex(6)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(name)
        listener.listen()
        listener.setblocking(False)
        result = run(f"import socket\nsocket.socket(socket.AF_UNIX).connect({name!r})\n")
        with pytest.raises(BlockingIOError):
            listener.accept()

    assert result.status == "failed", result
    assert result.error["exc_type"] == "ConnectionRefusedError", result
    then_a_normal_run_succeeds()


def test_it_cannot_send_udp_to_the_host(run, then_a_normal_run_succeeds):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        receiver.setblocking(False)
        port = receiver.getsockname()[1]
        result = run("import socket\n"
                     f"socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'hi', ('127.0.0.1', {port}))\n")
        with pytest.raises(BlockingIOError):
            receiver.recv(100)

    assert result.status == "failed", result
    assert result.error["exc_type"] == "PermissionError", result
    then_a_normal_run_succeeds()


def test_kill_minus_one_spares_the_host_and_the_slots_own_uid(run, then_a_normal_run_succeeds):
    # A canary with the very uid of the sandbox: without the pid namespace, kill(-1) would reach it.
    canary = subprocess.Popen(["sleep", "60"], user=SLOT0_UID, group=SLOT0_UID, extra_groups=[])
    try:
        result = run("import os\nfor sig in (15, 9):\n    try:\n        os.kill(-1, sig)\n"
                     "    except ProcessLookupError:\n        print('nobody to kill')\n")
        assert result.status == "succeeded", result
        assert result.stdout == "nobody to kill\nnobody to kill\n"
        assert canary.poll() is None
    finally:
        canary.kill()
        canary.wait()
    then_a_normal_run_succeeds()


@pytest.mark.parametrize("keeps_output_open", [False, True], ids=["daemon-closes-its-fds", "daemon-keeps-stdout"])
def test_a_double_fork_daemon_dies_with_its_run(keeps_output_open, run, then_a_normal_run_succeeds):
    close = "" if keeps_output_open else "        os.closerange(0, 100)\n"
    result = run(
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"{close}"
        "        time.sleep(1000)\n"
        "    os._exit(0)\n"
        "print('parent done')\n"
    )

    assert result.status == "succeeded", result
    assert result.stdout == "parent done\n"
    assert wait_gone(SLOT0_UID) == [], "the daemon survived its run"
    then_a_normal_run_succeeds()


@pytest.mark.serial  # the CPU cap or the memory's, whichever the machine reaches first
def test_a_deep_recursion_ends_at_a_limit(run, then_a_normal_run_succeeds):
    code = "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1)\nf(0)\n"
    result = run(code, replace(LIMITS, wall_s=30))

    # Frames live on the heap since Python 3.11: this grows until the CPU or memory cap.
    assert (result.status, result.message) in [
        ("limit_exceeded", f"CPU time limit of {LIMITS.cpu_s} s exceeded"),
        ("failed", ""),
    ], result
    if result.status == "failed":
        # Out of memory for frames CPython raises MemoryError or, when a frame push fails,
        # SystemError ("error return without exception set"); either way the run says why.
        assert result.error["exc_type"] in ("MemoryError", "RecursionError", "SystemError"), result
        if result.error["exc_type"] != "RecursionError":
            assert "calls deep and used up the run's memory" in result.error["explanation"], result.error
    then_a_normal_run_succeeds()


def test_a_deep_recursion_that_fills_the_memory_is_reported_with_its_reason(run, then_a_normal_run_succeeds):
    # Memory runs out before CPU time here: the frames fill the run's memory, and describing the
    # error must not need more of it (listing 400,000 frames did, and the runner died, 127).
    code = "import sys\nsys.setrecursionlimit(10**7)\ndef f(n):\n    return f(n + 1)\nf(0)\n"
    result = run(code, replace(LIMITS, wall_s=30, cpu_s=20, memory_bytes=300 * 1024**2))

    assert (result.status, result.message) == ("failed", ""), result
    error = result.error
    assert error["exc_type"] in ("MemoryError", "SystemError") and error["line"] == 4, error
    assert "calls deep and used up the run's memory" in error["explanation"], error
    assert "more calls of the snippet's own]" in error["traceback"], error
    assert len(error["traceback"]) < 4000, error
    then_a_normal_run_succeeds()


def test_no_process_or_cgroup_is_left_behind(launcher):
    # Runs last in this file: every run above has been cleaned up.
    assert host_processes_of(SLOT0_UID) == []
    # A fork launcher's template lives as long as its launcher: the cgroups of the templates
    # still running (this suite's, and the runner suite's in the same session) are kept.
    from executor.sandbox.fork import Template

    kept = {Path(f).parent.name for t in Template.running for f in t.cgroup.procs_files}
    for base in launcher.cgroups.bases().values():
        mine = [d.name for d in base.iterdir() if d.name.startswith(f"run-{os.getpid()}-")]
        assert set(mine) <= kept
