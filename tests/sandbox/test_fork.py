"""Runners forked from one template: each run still holds nothing of any other run or of the
template. Two runs from the same template at once cannot see, signal, trace or share files,
memory or IPC with each other or with the template; state a run leaves in the modules it shares
copy-on-write with the template stays in that run; every process is under the seccomp filter;
the backend starts only when a snippet first uses jax; a template that dies is replaced."""

from __future__ import annotations

import os
import signal
import textwrap
import time
from pathlib import Path

import pytest

from executor.local import RunResult, run_local
from executor.runner import protocol
from executor.supervisor import Runner, discard, wait_ready

from .conftest import LIMITS, UID_BASE


@pytest.fixture(scope="module")
def launcher(launcher):
    """A fork launcher whichever backend the rest of the suite runs (SANDBOX_TEST_BACKEND)."""
    from executor.sandbox import get_launcher

    if launcher.name == "fork":
        yield launcher
        return
    own = get_launcher("fork", limits=LIMITS, uid_base=UID_BASE)
    yield own
    own.close()


@pytest.fixture(scope="module")
def run(launcher):
    return lambda code: RunResult(run_local(code, launcher=launcher, limits=LIMITS))

# A run that leaves something of itself everywhere it could be shared, says so, and waits.
HOLDER = textwrap.dedent("""\
    import ctypes, os, socket, sys, time, numpy, json
    libc = ctypes.CDLL(None, use_errno=True)
    open("/tmp/secret-of-A", "w").write("A")
    shm = libc.shmget(0x4A5047, 4096, 0o1666)          # IPC_CREAT | 0666: a SysV segment
    msq = libc.msgget(0x4A5047, 0o1666)                # and a message queue
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\\0jaxpg-run-A")                     # an abstract socket
    listener.listen()
    numpy.A_WAS_HERE = True                             # a module the template imported
    json.dumps = None
    print("holding", shm >= 0, msq >= 0, os.getpid(), flush=True)
    time.sleep(60)
    """)

PROBE = textwrap.dedent("""\
    import ctypes, errno, os, socket, sys, numpy, json
    libc = ctypes.CDLL(None, use_errno=True)
    print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
    print("ppid", os.getppid())
    print("tmp", sorted(os.listdir("/tmp")))
    print("shm", libc.shmget(0x4A5047, 4096, 0), ctypes.get_errno() == errno.ENOENT)
    print("msq", libc.msgget(0x4A5047, 0), ctypes.get_errno() == errno.ENOENT)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\\0jaxpg-run-A")
        print("abstract", "CONNECTED")
    except ConnectionRefusedError:
        print("abstract", "refused")
    print("module", hasattr(numpy, "A_WAS_HERE"), json.dumps is not None)
    try:
        os.kill(-1, 0)
        print("kill-all REACHED")
    except ProcessLookupError:
        print("kill-all nobody")
    own = {int(t) for t in os.listdir("/proc/self/task")}  # its threads answer to kill too
    reachable = []
    for pid in range(2, 5000):
        try:
            os.kill(pid, 0)
            reachable.append(pid)
        except ProcessLookupError:
            pass
    print("kill-any", sorted(set(reachable) - own))
    libc.ptrace.restype = ctypes.c_long
    print("ptrace", libc.ptrace(16, 1, 0, 0), ctypes.get_errno() == errno.EPERM)  # PTRACE_ATTACH
    print("uid", os.getuid())
    """)


def start(launcher, slot: int, lean: bool = False) -> Runner:
    runner = Runner(proc=launcher.start(slot, lean=lean), slot=slot)
    wait_ready(runner, 60)
    return runner


def send(runner: Runner, code: str) -> None:
    runner.proc.stdin.write(protocol.request("run", code=code, options={}, wall_s=LIMITS.wall_s))
    runner.proc.stdin.flush()


def host_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, v in (line.split(":", 1) for line in lines if ":" in line)}


def template_pid(launcher, lean: bool = False) -> int:
    """The template's host pid: the Python in the template's cgroup (the other is bwrap)."""
    for pid in launcher.template(lean).cgroup.pids():
        if os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("python"):
            return pid
    raise AssertionError("no template process")


def test_two_runs_from_one_template_share_nothing(launcher):
    holder = start(launcher, 2)
    try:
        send(holder, HOLDER)
        line = holder.proc.stdout.readline().decode()
        assert line.startswith("holding True True 1"), line  # its own pid namespace: pid 1

        result = RunResult(run_local(PROBE, launcher=launcher))
        assert result.status == "succeeded", result
        seen = dict(line.split(" ", 1) for line in result.stdout.splitlines())
        assert seen["pids"] == "[1]"  # neither the other run nor the template
        assert seen["ppid"] == "0"  # its parent, the template, is outside its pid namespace
        assert "secret-of-A" not in seen["tmp"]  # its own /tmp
        assert seen["shm"] == "-1 True" and seen["msq"] == "-1 True"  # its own IPC namespace
        assert seen["abstract"] == "refused"  # its own network namespace
        assert seen["module"] == "False True"  # copy-on-write: A's changes stayed in A
        assert seen["kill-all"] == "nobody" and seen["kill-any"] == "[]"  # no other process to signal
        assert seen["ptrace"] == "-1 True"
        assert seen["uid"] == "1000"  # slot 0; the holder is 1002

        # From the host: two uids, two cgroups, neither process the other's or the template's.
        holder_status = host_status(holder.proc.pid)
        assert holder_status["Uid"].split()[0] == str(UID_BASE + 2)
        assert holder_status["NSpid"].split()[-1] == "1"
        template = host_status(template_pid(launcher))
        assert template["Uid"].split()[0] == str(UID_BASE - 1)  # unprivileged on the host
        assert template["Seccomp"] == "2"  # the template is filtered too
        assert template["Threads"] == "1"  # never a thread: it forks
    finally:
        discard(holder, launcher)


def test_every_process_of_a_forked_run_is_filtered_and_unprivileged(launcher):
    runner = start(launcher, 2)
    try:
        send(runner, "import subprocess, sys, time\n"
                     "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
                     "print('up', flush=True)\ntime.sleep(30)\n")
        assert runner.proc.stdout.readline() == b"up\n"
        deadline = time.monotonic() + 10
        while len(pids := runner.proc.sandbox_cgroup.pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(pids) == 2
        for pid in pids:
            status = host_status(pid)
            assert status["Seccomp"] == "2" and int(status["Seccomp_filters"]) == 2  # template's + runner's
            assert status["CapEff"] == status["CapPrm"] == status["CapBnd"] == "0000000000000000"
            assert status["Uid"].split() == [str(UID_BASE + 2)] * 4
            assert status["NoNewPrivs"] == "1"
    finally:
        discard(runner, launcher)


def test_state_a_run_leaves_does_not_reach_the_next_run(run):
    first = run("import numpy, jax\nnumpy.LEFT = 1\njax.config.update('jax_enable_x64', True)\n"
                "print(numpy.random.randint(1 << 30))\n")
    second = run("import numpy, jax\nprint(hasattr(numpy, 'LEFT'), jax.config.jax_enable_x64)\n"
                 "print(numpy.random.randint(1 << 30))\n")
    assert first.status == second.status == "succeeded", (first, second)
    assert second.stdout.splitlines()[0] == "False False"
    # numpy's global generator is seeded afresh in each runner, not inherited from the template.
    assert first.stdout.splitlines()[-1] != second.stdout.splitlines()[-1]


def test_the_backend_starts_when_the_snippet_first_uses_jax(run):
    result = run(textwrap.dedent("""\
        import os
        from jax._src import xla_bridge
        print(len(xla_bridge._backends), len(os.listdir("/proc/self/task")))
        import jax
        print(jax.device_count(), jax.default_backend())
        """))
    assert result.status == "succeeded", result
    backends, threads = (int(v) for v in result.stdout.splitlines()[0].split())
    assert backends == 0 and threads <= 2  # the main thread and at most OpenBLAS's
    assert result.stdout.splitlines()[1] == "1 cpu"
    assert result.started["device_count"] == 1 and result.started["platform"] == "cpu"


def test_a_configured_device_reaches_a_forked_runner():
    # /dev/fuse stands in for /dev/nvidia0: bound into the template's /dev, opened by the runner
    # (a GPU run initialises its device there, never in the template).
    from executor.sandbox import Limits, get_launcher

    gpu_like = get_launcher("fork", limits=Limits(wall_s=10), uid_base=UID_BASE, devices=("/dev/fuse",))
    try:
        result = RunResult(run_local("import os, stat\nprint(stat.S_ISCHR(os.stat('/dev/fuse').st_mode))\n"
                                     "os.close(os.open('/dev/fuse', os.O_RDWR))\n", launcher=gpu_like))
    finally:
        gpu_like.close()
    assert result.status == "succeeded" and result.stdout == "True\n", result


def test_a_template_that_dies_is_replaced_and_its_runners_die_with_it(launcher):
    idle = start(launcher, 2)
    try:
        os.kill(template_pid(launcher), signal.SIGKILL)
        assert idle.proc.wait(timeout=10) < 0  # killed with the template's pid namespace
    finally:
        discard(idle, launcher)
    starts = launcher.template_starts
    result = RunResult(run_local("print('after')", launcher=launcher, lean=False))
    assert result.status == "succeeded" and result.stdout == "after\n", result
    assert launcher.template_starts == starts + 1


def test_a_lean_template_that_dies_is_replaced_and_the_full_one_lives_on(launcher):
    full = template_pid(launcher)
    RunResult(run_local("print('first')", launcher=launcher, lean=True))  # the lean one is started
    lean = template_pid(launcher, lean=True)
    idle = start(launcher, 2, lean=True)
    try:
        os.kill(lean, signal.SIGKILL)
        assert idle.proc.wait(timeout=10) < 0
    finally:
        discard(idle, launcher)
    result = RunResult(run_local("print('after')", launcher=launcher, lean=True))
    assert result.status == "succeeded" and result.stdout == "after\n", result
    assert template_pid(launcher, lean=True) != lean and template_pid(launcher) == full


def test_a_template_started_by_a_thread_that_ends_outlives_the_thread(launcher):
    # A lean template is started when the pool first asks for a lean runner: on the pool's or a
    # run's thread. bwrap's --die-with-parent follows the thread that started it, so a template
    # started there died with that thread (and was left a zombie under the host's init).
    import threading

    launcher.close()
    started = []
    thread = threading.Thread(target=lambda: started.append(start(launcher, 3, lean=True)))
    thread.start()
    thread.join(timeout=60)
    try:
        assert started, "no lean runner started"
        pids = (template_pid(launcher), template_pid(launcher, lean=True))
        time.sleep(0.5)
        assert all(launcher.template(lean).alive() for lean in (False, True))
        assert started[0].alive()
        assert (template_pid(launcher), template_pid(launcher, lean=True)) == pids
    finally:
        for runner in started:
            discard(runner, launcher)


def test_a_lean_runner_has_no_jax_and_says_what_the_full_template_found(launcher):
    code = "import sys\nprint(*(name in sys.modules for name in ('ja' + 'x', 'numpy', 'mat' + 'plotlib')))\n"
    full = RunResult(run_local(code, launcher=launcher, lean=False))
    lean = RunResult(run_local(code, launcher=launcher))  # code that names no jax: a lean one

    assert full.status == lean.status == "succeeded", (full, lean)
    assert full.stdout == "True True True\n" and lean.stdout == "False True False\n"
    assert lean.started["lean"] is True and "lean" not in full.started
    for key in ("platform", "device_kind", "device_count", "jax_version", "jaxlib_version", "libraries"):
        assert lean.started[key] == full.started[key], key
    sizes = [launcher.template(lean).info["template_rss_kb"] for lean in (False, True)]
    assert sizes[1] < sizes[0] / 3, sizes


def test_a_lean_runner_whose_code_imports_jax_after_all_gets_what_a_full_one_has():
    # By a name built at run time: the code does not name jax, so it is given a lean runner.
    from executor.sandbox import get_launcher

    code = textwrap.dedent("""\
        import importlib, sys
        name = "ja" + "x"
        print(name in sys.modules)
        m = importlib.import_module(name)
        print(m.device_count())
        double = m.jit(lambda x: x * 2)
        print(double(m.numpy.arange(4)).sum())
        """)
    own = get_launcher("fork", limits=LIMITS, uid_base=UID_BASE, cpu_devices=4)
    try:
        result = RunResult(run_local(code, launcher=own))
    finally:
        own.close()
    assert result.status == "succeeded", result
    assert result.started["lean"] is True
    assert result.stdout == "False\n4\n12\n"  # the simulated devices, set as jax was imported
    # and the capture hooks: the compilation is in the Compiled pane, with its jaxpr
    compiled = result.of("compiled")
    assert [c["name"] for c in compiled] == ["<lambda>"], compiled
    assert "mul" in compiled[0]["jaxpr"]


def test_a_late_exit_report_never_writes_to_a_reused_descriptor():
    # The run's thread may be done (the runner said "exit" and closed its pipes) and have closed
    # the runner's exit descriptor before the template's report arrives; the number may by then
    # belong to a new runner's pipe, which must not receive the report's 8 bytes.
    from executor.sandbox.fork import _Spawn

    spawn = _Spawn(1)
    number = spawn.exit_fd
    r, w = os.pipe()
    spawn.close_exit_fd()
    os.dup2(w, number)  # a new pipe's write end takes the number, as a new runner's may
    try:
        spawn.set_exit(0)
        os.set_blocking(r, False)
        with pytest.raises(BlockingIOError):
            os.read(r, 8)  # nothing was written into the pipe that took the number
        assert spawn.exited.is_set() and spawn.exit_fd is None
    finally:
        for fd in {r, w, number}:
            os.close(fd)


def test_a_runner_waiting_in_the_pool_spends_no_cpu(launcher):
    # A runner gives OpenBLAS one thread per core as it is forked; OpenBLAS's new threads spun
    # about 0.1 s before sleeping (OPENBLAS_THREAD_TIMEOUT now ends that at about 0.1 ms).
    runner = Runner(proc=launcher.start(0), slot=0)
    try:
        wait_ready(runner, 120)
        at_ready = launcher.cpu_seconds(runner.proc)
        time.sleep(0.5)
        waited = launcher.cpu_seconds(runner.proc) - at_ready
    finally:
        launcher.cleanup(runner.proc)
        runner.close()
    assert waited < 0.03, f"a waiting runner spent {waited * 1000:.0f} ms of CPU in 0.5 s"
