"""An accelerator node's runners in the real sandbox, with a stand-in device node (CI has no chip):
the device nodes the node has are bound and the accelerator's variables passed, nothing else of
the worker's; a runner that cannot open its device is discarded with its cause; a run ends when
the person's code does, not after the runtime's teardown; the supervisor works where the kernel
has no pidfd_open (gVisor). bench/tpu_check.sh tries the same on a real TPU host."""

from __future__ import annotations

import json
import os
import stat
import textwrap
import time

import pytest

from executor.local import RunResult, run_local
from executor.sandbox import DirectLauncher, Limits, get_launcher, launcher as launcher_module
from executor.supervisor import RunnerStartError, run_request, supervise, wait_ready

from .conftest import BACKEND, LIMITS, UID_BASE, fake_runner

# A character device standing in for a TPU chip's node (/dev/accel<n>): the kernel's zero device,
# made under /dev by the test and removed after it.
STANDIN = "/dev/accel-standin-%d" % os.getpid()

ACCELERATOR_ENV = {"TPU_ACCELERATOR_TYPE": "v5litepod-4", "TPU_SKIP_MDS_QUERY": "true", "TPU_WORKER_ID": "0",
                   "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1", "XLA_PYTHON_CLIENT_MEM_FRACTION": ".45"}

SEES = textwrap.dedent(f"""
    import os
    with open({STANDIN!r}, "rb") as chip:
        print("chip", chip.read(4).hex())
    print("env", sorted(k for k in os.environ if k.startswith(("TPU_", "XLA_PYTHON", "REDIS", "SECRET"))))
    print("mds", os.environ.get("TPU_SKIP_MDS_QUERY"), "type", os.environ.get("TPU_ACCELERATOR_TYPE"))
""")


@pytest.fixture
def standin_device():
    os.mknod(STANDIN, 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    os.chmod(STANDIN, 0o666)
    try:
        yield STANDIN
    finally:
        os.unlink(STANDIN)


def test_the_sandbox_binds_the_device_and_passes_only_the_accelerators_variables(standin_device, monkeypatch):
    # The worker's own secrets are in its environment; none of them reaches a runner.
    monkeypatch.setenv("REDIS_URL", "redis://user:secret@127.0.0.1:6379/0")
    monkeypatch.setenv("SECRET_KEY", "not-for-snippets")
    launcher = get_launcher(BACKEND, limits=LIMITS, uid_base=UID_BASE, devices=(standin_device,),
                            device_env=ACCELERATOR_ENV)
    try:
        result = RunResult(run_local(SEES, launcher=launcher, limits=LIMITS))
    finally:
        launcher.close()
    assert result.status == "succeeded", result
    assert "chip 00000000" in result.stdout
    assert f"env {sorted(ACCELERATOR_ENV)}" in result.stdout
    assert "mds true type v5litepod-4" in result.stdout


def test_without_the_device_bound_a_runner_cannot_reach_it(standin_device):
    launcher = get_launcher(BACKEND, limits=LIMITS, uid_base=UID_BASE, device_env=ACCELERATOR_ENV)
    try:
        result = RunResult(run_local(SEES, launcher=launcher, limits=LIMITS))
    finally:
        launcher.close()
    assert result.status == "failed" and result.error["exc_type"] == "FileNotFoundError", result


def test_the_unsandboxed_launcher_passes_the_same_variables(monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "not-for-snippets")
    launcher = DirectLauncher(limits=LIMITS, device_env=ACCELERATOR_ENV)
    code = "import os; print(sorted(k for k in os.environ if k.startswith(('TPU_', 'XLA_PYTHON', 'SECRET'))))"
    result = RunResult(run_local(code, launcher=launcher, limits=LIMITS))
    assert result.status == "succeeded" and result.stdout.strip() == str(sorted(ACCELERATOR_ENV))


def test_where_the_kernel_has_no_pidfd_open_runs_still_end(monkeypatch):
    """gVisor answers pidfd_open with ENOSYS: the supervisor waits on a tick instead."""
    def enosys(pid, flags=0):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", enosys)
    monkeypatch.setattr(launcher_module, "_NO_PIDFD", [])
    launcher = DirectLauncher(limits=LIMITS)
    t0 = time.monotonic()
    result = RunResult(run_local("import os; print(os.getpid() > 0)", launcher=launcher, limits=LIMITS))
    assert result.status == "succeeded" and result.stdout == "True\n", result
    assert launcher_module._NO_PIDFD == [38]
    assert time.monotonic() - t0 < 30


HELD = ("import sys; sys.stderr.write('RuntimeError: Unable to initialize backend \\'tpu\\': ABORTED: Internal "
        "error when accessing libtpu multi-process lockfile.\\n'); sys.exit(1)")


def test_a_runner_that_finds_the_chip_held_is_discarded_with_that_cause():
    runner = fake_runner(HELD)
    with pytest.raises(RunnerStartError) as caught:
        wait_ready(runner, 10)
    assert caught.value.code == "device_busy"
    assert "held by another process" in str(caught.value) and "lockfile" in str(caught.value)
    runner.proc.wait()
    runner.close()


def test_a_runner_that_never_opens_its_device_is_given_up_at_the_bound():
    runner = fake_runner("import sys, time; sys.stderr.write('waiting for the TPU metadata server\\n'); "
                         "sys.stderr.flush(); time.sleep(60)")
    t0 = time.monotonic()
    with pytest.raises(RunnerStartError) as caught:
        wait_ready(runner, 1.5)
    assert 1.4 < time.monotonic() - t0 < 10
    assert caught.value.code == "no_metadata" and "not ready after 1.5 s" in str(caught.value)
    runner.proc.kill()
    runner.proc.wait()
    runner.close()


# Says "ready", reads its one request, reports how the code ended and what it used, closes its
# pipes, then takes three seconds to exit, as a TPU runtime's teardown does.
SLOW_TEARDOWN = textwrap.dedent("""
    import json, os, sys, time
    fd = int(sys.argv[1])
    os.write(fd, json.dumps({"type": "ready", "warmup_ms": 1}).encode() + b"\\n")
    sys.stdin.readline()
    os.write(1, b"1\\n")
    os.write(fd, json.dumps({"type": "exit", "status": "succeeded", "cpu_ms": 12.5, "host_peak_kb": 2048,
                             "device_peak_bytes": 67831296}).encode() + b"\\n")
    for f in (0, 1, 2, fd):
        os.close(f)
    time.sleep(30)
""")


def test_an_unsandboxed_run_ends_with_the_code_not_after_the_runtimes_teardown():
    runner = fake_runner(SLOW_TEARDOWN)
    launcher = DirectLauncher(limits=LIMITS)
    events = []
    try:
        wait_ready(runner, 10)
        t0 = time.monotonic()
        finished = supervise(runner, launcher, run_request("print(1)", None, ""), LIMITS,
                             lambda type_, **f: events.append({"type": type_, **f}))
        took = time.monotonic() - t0
    finally:
        launcher.cleanup(runner.proc)
        runner.proc.wait()
        runner.close()
    assert finished["status"] == "succeeded", finished
    # Well under the 30 s teardown, with room for a loaded machine that is slow to run the rest.
    assert took < 10.0 and finished["wall_ms"] < 10_000, (took, finished)
    # What the runner read of itself stands where there is no sandbox to count.
    assert finished["cpu_ms"] == 12.5 and finished["peak_memory_kb"] == 2048
    assert finished["device_peak_bytes"] == 67831296
    assert [e["text"] for e in events if e["type"] == "stdout"] == ["1\n"]


def test_a_real_run_reports_host_memory_without_the_runtimes_mappings():
    """On Linux the peak is anonymous memory: a run that maps a 256 MiB file and reads it all
    is not charged for it, one that allocates 256 MiB is."""
    launcher = DirectLauncher(limits=Limits(wall_s=20))
    mapped = RunResult(run_local(textwrap.dedent("""
        import mmap, os, tempfile
        with tempfile.TemporaryFile() as f:
            f.truncate(256 * 1024**2)
            m = mmap.mmap(f.fileno(), 0)
            print(sum(m[i] for i in range(0, len(m), 4096)))
    """), launcher=launcher, limits=Limits(wall_s=20)))
    allocated = RunResult(run_local("x = bytearray(256 * 1024**2); print(len(x))", launcher=launcher,
                                    limits=Limits(wall_s=20)))
    assert mapped.status == allocated.status == "succeeded", (mapped, allocated)
    assert allocated.finished["peak_memory_kb"] > 256 * 1024
    assert mapped.finished["peak_memory_kb"] < allocated.finished["peak_memory_kb"] - 200 * 1024, (
        json.dumps(mapped.finished), json.dumps(allocated.finished))
