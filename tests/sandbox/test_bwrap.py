"""The sandbox launchers driven directly, without the supervisor: the runner protocol through the
sandbox, what the host sees of a sandboxed runner, each isolation layer on its own, cleanup,
and check()'s explanations. Each test runs against both backends: runners forked from a
template (``fork``, the default) and the one-shot bubblewrap sandbox (``bwrap``)."""

from __future__ import annotations

import json
import os
import select
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from executor.runner import protocol
from executor.sandbox import bwrap, get_launcher
from executor.supervisor import Runner, discard

from .conftest import LIMITS, UID_BASE, host_processes_of, wait_gone

SLOT = 3  # apart from run_local's slot 0 and the neighbour's slot 1


def read_event(proc, timeout: float = 120.0) -> dict:
    buf = b""
    deadline = time.monotonic() + timeout
    while not buf.endswith(b"\n"):
        ready, _, _ = select.select([proc.event_fd], [], [], deadline - time.monotonic())
        assert ready, "no event from the runner"
        chunk = os.read(proc.event_fd, 1)
        assert chunk, f"runner died: {proc.stderr.read1(4096)!r}"
        buf += chunk
    return json.loads(buf)


def has_cap_sys_resource() -> bool:
    return bool(int(status_of(os.getpid())["CapEff"], 16) & (1 << 24))


def status_of(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, v in (line.split(":", 1) for line in lines)}


@pytest.fixture(scope="module", params=["fork", "bwrap"])
def launcher(request, launcher):
    if request.param == launcher.name:
        yield launcher
        return
    other = get_launcher(request.param, limits=LIMITS, uid_base=UID_BASE)
    yield other
    other.close()


@pytest.fixture
def started(launcher):
    """A sandboxed runner in SLOT, warm; cleaned up after the test."""
    proc = launcher.start(SLOT)
    try:
        ready = read_event(proc)
        assert ready["type"] == "ready"
        yield proc
    finally:
        discard(Runner(proc=proc, slot=SLOT), launcher)


def test_it_runs_the_runner_protocol_through_the_sandbox(launcher):
    proc = launcher.start(SLOT)
    ready = read_event(proc)
    assert ready["type"] == "ready" and ready["platform"] == "cpu", ready

    proc.stdin.write(protocol.request("run", code="print(6 * 7)", options={}, wall_s=LIMITS.wall_s))
    proc.stdin.close()
    assert proc.stdout.read() == b"42\n"
    # What its names held (none here: the snippet defines no array), then its end.
    assert read_event(proc) == {"type": "shapes", "names": {}, "truncated": False}
    exit_ = read_event(proc)
    # With what the runner read of its own use (the supervisor takes it only where no sandbox counts).
    assert exit_["type"] == "exit" and exit_["status"] == "succeeded"
    assert exit_["cpu_ms"] > 0 and exit_["host_peak_kb"] > 0 and "device_peak_bytes" not in exit_
    assert proc.wait(timeout=10) == 0
    cgroup_dirs = list(proc.sandbox_cgroup.dirs.values())

    assert launcher.exit_reason(proc) is None
    # Warm-up included: the one-shot runner imported jax; a forked one only confined itself.
    assert launcher.usage(proc)["cpu_ms"] > (100 if launcher.name == "bwrap" else 1)
    launcher.cleanup(proc)
    assert not any(d.exists() for d in cgroup_dirs)
    os.close(proc.event_fd)


def test_the_host_sees_an_unprivileged_confined_runner(launcher, started):
    uid = launcher.uid_base + SLOT
    pid = launcher.runner_pid(started)
    status = status_of(pid)

    assert status["Uid"].split() == [str(uid)] * 4
    assert status["Gid"].split() == [str(uid)] * 4
    assert status["Groups"] == ""
    assert status["CapEff"] == status["CapPrm"] == "0000000000000000"
    assert status["NoNewPrivs"] == "1"
    assert status["Seccomp"] == "2"  # filter mode: installed after warm-up, before "ready"
    # Every process of the sandbox (bwrap's two included) is the slot's uid, none is root.
    assert sorted(host_processes_of(uid)) == started.sandbox_cgroup.pids()


def test_the_runner_holds_only_its_stdio_and_the_event_pipe(launcher, started):
    fds = sorted(int(fd) for fd in os.listdir(f"/proc/{launcher.runner_pid(started)}/fd"))
    assert fds[:3] == [0, 1, 2] and len(fds) == 4
    assert os.readlink(f"/proc/{launcher.runner_pid(started)}/fd/{fds[3]}").startswith("pipe:")  # events


def test_its_limits_are_set_and_rlimit_as_is_not(launcher, started):
    limits = Path(f"/proc/{launcher.runner_pid(started)}/limits").read_text()
    row = {line[:26].strip(): line[26:].split()[:2] for line in limits.splitlines()[1:]}
    data = int(LIMITS.memory_bytes * (1 - bwrap.DATA_HEADROOM))

    assert row["Max address space"] == ["unlimited", "unlimited"]
    assert row["Max data size"] == [str(data), str(data)]
    assert row["Max file size"] == [str(LIMITS.tmp_bytes)] * 2
    assert row["Max core file size"] == ["0", "0"]
    soft, hard = (int(v) for v in row["Max cpu time"])
    assert LIMITS.cpu_s < soft <= LIMITS.cpu_s + 10 and hard == soft + 1  # warm-up + cpu_s
    cgroup = started.sandbox_cgroup
    if cgroup.v2:
        assert (cgroup.dirs[""] / "memory.max").read_text().strip() == str(LIMITS.memory_bytes)
        assert (cgroup.dirs[""] / "pids.max").read_text().strip() == str(LIMITS.pids)
    else:
        assert (cgroup.dirs["memory"] / "memory.limit_in_bytes").read_text().strip() == str(LIMITS.memory_bytes)
        assert (cgroup.dirs["pids"] / "pids.max").read_text().strip() == str(LIMITS.pids)


def test_cleanup_kills_a_running_sandbox_and_everything_it_started(launcher, started):
    uid = launcher.uid_base + SLOT
    code = "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(100)'])\n" \
           "print('started', flush=True)\ntime.sleep(100)\n"
    started.stdin.write(protocol.request("run", code=code, options={}, wall_s=LIMITS.wall_s))
    started.stdin.flush()
    assert started.stdout.readline() == b"started\n"
    dirs = list(started.sandbox_cgroup.dirs.values())
    # The runner (the sandbox's pid 1), the child, and under the one-shot sandbox bwrap itself.
    assert len(started.sandbox_cgroup.pids()) >= (3 if launcher.name == "bwrap" else 2)

    launcher.cleanup(started)

    assert wait_gone(uid) == []
    assert not any(d.exists() for d in dirs)
    assert started.wait(timeout=5) != 0


def test_without_seccomp_the_network_namespace_alone_keeps_loopback_private(launcher):
    # Redis listens on the host's 127.0.0.1:6379; the sandbox's loopback is its own and empty.
    code = "import socket\nsocket.create_connection(('127.0.0.1', 6379), timeout=3)\n"
    result = launcher.run_inside([launcher.python, "-c", code], slot=SLOT, timeout=60)

    assert result.returncode == 1
    assert b"ConnectionRefusedError" in result.stderr


def test_a_configured_device_is_bound_into_the_sandbox(launcher):
    # /dev/fuse stands in for /dev/nvidia0: a character device bwrap's /dev lacks.
    gpu_like = get_launcher("bwrap", limits=LIMITS, uid_base=launcher.uid_base, devices=("/dev/fuse",))
    code = "import os, stat\nprint(stat.S_ISCHR(os.stat('/dev/fuse').st_mode), os.path.exists('/dev/kmsg'))\n" \
           "os.close(os.open('/dev/fuse', os.O_RDWR))\n"
    with_device = gpu_like.run_inside([gpu_like.python, "-c", code], slot=SLOT, timeout=60)
    without = launcher.run_inside([launcher.python, "-c", code], slot=SLOT, timeout=60)

    assert (with_device.returncode, with_device.stdout) == (0, b"True False\n"), with_device.stderr
    assert without.returncode == 1 and b"FileNotFoundError" in without.stderr


def test_configured_host_paths_are_bound_read_only(launcher):
    # A GPU driver's library folder outside /usr/lib, say: readable in the sandbox, not writable.
    # Under a folder only root may enter, and not under /tmp (the sandbox's own /tmp hides it).
    parent = Path(tempfile.mkdtemp(dir="/var/tmp"))  # mode 0700
    try:
        folder = parent / "driver"
        folder.mkdir(mode=0o755)
        (folder / "libdriver.so").write_text("driver")
        with_binds = get_launcher("bwrap", limits=LIMITS, uid_base=launcher.uid_base,
                                  ro_binds=(str(folder),))
        code = f"print(open('{folder}/libdriver.so').read())\nopen('{folder}/new', 'w')\n"
        result = with_binds.run_inside([with_binds.python, "-c", code], slot=SLOT, timeout=60)
    finally:
        shutil.rmtree(parent)

    assert result.stdout == b"driver\n", result.stderr
    assert result.returncode == 1 and b"Read-only file system" in result.stderr
    with pytest.raises(RuntimeError, match="EXECUTOR_RO_BINDS"):
        get_launcher("bwrap", limits=LIMITS, uid_base=launcher.uid_base, ro_binds=("relative/lib",))


def test_check_explains_a_missing_bubblewrap(monkeypatch):
    monkeypatch.setattr(bwrap, "BWRAP", "/nonexistent/bwrap")
    monkeypatch.setenv("PATH", "/nonexistent")

    with pytest.raises(RuntimeError, match="apt-get install bubblewrap"):
        get_launcher("bwrap", limits=LIMITS, uid_base=UID_BASE)


def test_check_explains_a_cgroup_it_cannot_create(launcher):
    with pytest.raises(RuntimeError, match="cannot create cgroup .*must run as root"):
        get_launcher("bwrap", limits=LIMITS, uid_base=UID_BASE, cgroup_parent="/no/such/cgroup")


def test_check_refuses_a_uid_that_belongs_to_an_account():
    with pytest.raises(RuntimeError, match="belongs to the account 'root'"):
        get_launcher("bwrap", limits=LIMITS, uid_base=0)


def test_tmp_holds_no_more_than_tmp_bytes(launcher):
    small = replace(LIMITS, tmp_bytes=1024**2)
    tiny_tmp = get_launcher("bwrap", limits=small, uid_base=launcher.uid_base)
    code = "open('/tmp/x', 'wb').write(b'x' * 2 * 1024**2)\n"
    result = tiny_tmp.run_inside([tiny_tmp.python, "-c", code], slot=SLOT, timeout=60)

    assert result.returncode == 1
    assert b"File too large" in result.stderr or b"No space left" in result.stderr


def test_without_seccomp_user_namespaces_are_still_disabled(launcher):
    code = "import os\nos.unshare(os.CLONE_NEWUSER)\n"
    result = launcher.run_inside([launcher.python, "-c", code], slot=SLOT, timeout=60)

    assert result.returncode == 1
    assert b"OSError: [Errno 28]" in result.stderr  # --disable-userns: max_user_namespaces is 0


def test_restrict_lowers_a_warm_runners_limits_to_the_runs(launcher, started):
    run_limits = replace(LIMITS, memory_bytes=512 * 1024**2, pids=48, cpu_s=1, tmp_bytes=1024**2)
    launcher.restrict(started, run_limits)

    if has_cap_sys_resource():  # prlimit on the runner: not in a container root that lacks it
        pid = launcher.runner_pid(started)
        limits = Path(f"/proc/{pid}/limits").read_text()
        row = {line[:26].strip(): line[26:].split()[:2] for line in limits.splitlines()[1:]}
        data = int(run_limits.memory_bytes * (1 - bwrap.DATA_HEADROOM))
        assert row["Max data size"] == [str(data), str(data)]
        assert row["Max file size"] == [str(1024**2)] * 2
        soft, hard = (int(v) for v in row["Max cpu time"])
        assert 1 < soft <= 1 + 10 and hard == soft + 1
    cgroup = started.sandbox_cgroup
    memory_file = cgroup.dirs[""] / "memory.max" if cgroup.v2 else cgroup.dirs["memory"] / "memory.limit_in_bytes"
    pids_file = cgroup.dirs[""] / "pids.max" if cgroup.v2 else cgroup.dirs["pids"] / "pids.max"
    assert memory_file.read_text().strip() == str(512 * 1024**2)
    assert pids_file.read_text().strip() == "48"

    # It never raises them.
    launcher.restrict(started, replace(LIMITS, memory_bytes=4 * 1024**3, pids=1000))
    assert memory_file.read_text().strip() == str(512 * 1024**2)
    assert pids_file.read_text().strip() == "48"


def test_a_runner_whose_backend_is_deferred_is_confined_once_it_has_opened_it(launcher):
    """An exclusive device's next runner (executor/chips.py) is started while another process
    holds the chip: it starts no backend before "ready", opens it at "warm" outside the seccomp
    filter and the snippet's CPU limit (the runtime's, as a warm-up is), and is confined before
    any request runs: the same filter and limits as any runner."""
    from executor.runner.exclusive import DEFER_BACKEND_VAR

    proc = launcher.start(SLOT, env={DEFER_BACKEND_VAR: "1"})
    try:
        ready = read_event(proc)
        assert ready["type"] == "ready"
        pid = launcher.runner_pid(proc)
        if launcher.name == "bwrap":  # a forked runner is confined by its template before "ready"
            assert "device_kind" not in ready  # no backend yet
            assert status_of(pid)["Seccomp"] == "0"
        proc.stdin.write(protocol.request("warm"))
        proc.stdin.flush()
        warmed = read_event(proc)
        assert warmed["type"] == "warmed" and warmed["warm_ms"] > 0, warmed
        assert warmed["platform"] == "cpu" and warmed["device_count"] >= 1  # what "ready" says of others
        assert status_of(pid)["Seccomp"] == "2"
        limits = Path(f"/proc/{pid}/limits").read_text()
        soft, hard = (int(v) for v in next(line for line in limits.splitlines()
                                           if line.startswith("Max cpu time"))[26:].split()[:2])
        assert LIMITS.cpu_s < soft <= LIMITS.cpu_s + 10 and hard == soft + 1
        proc.stdin.write(protocol.request("run", code="print(6 * 7)", options={}, wall_s=LIMITS.wall_s))
        proc.stdin.close()
        assert proc.stdout.read() == b"42\n"
    finally:
        discard(Runner(proc=proc, slot=SLOT), launcher)
