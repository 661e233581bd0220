"""Per-run cgroups on this host's hierarchy, and the cgroup v2 code on a real cgroup2 mount.

This development machine is cgroup v1 (memory and pids are v1 controllers), with a hybrid
cgroup2 mount at /sys/fs/cgroup/unified that has no memory or pids controller. The v2 tests use
that mount for what it has (joining, cgroup.kill, cpu.stat, removal) and for the error a v2
host without delegated controllers gets; on a v2 host the other tests here run on v2 itself.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from executor.sandbox import cgroups
from executor.sandbox.cgroups import CgroupError, Cgroups, RunCgroup

from .conftest import LIMITS

HYBRID_V2 = Path("/sys/fs/cgroup/unified")


def test_it_creates_cgroups_in_the_hierarchy_this_host_has():
    cgroups = Cgroups()
    v2_host = Path("/sys/fs/cgroup/cgroup.controllers").exists()

    assert cgroups.version == (2 if v2_host else 1)
    run = cgroups.create(f"run-{os.getpid()}-test-cgroup", memory_bytes=LIMITS.memory_bytes, pids=77)
    try:
        assert all(d.is_dir() for d in run.dirs.values())
        assert run.pids() == [] and not run.oom_killed() and not run.pids_limit_hit()
    finally:
        run.remove()
    assert not any(d.exists() for d in run.dirs.values())


def test_sweep_removes_run_cgroups_of_dead_workers_only():
    cgroups = Cgroups()
    dead_worker = 2**22 + 12345  # above pid_max: no such process
    stale = cgroups.create(f"run-{dead_worker}-0-stale", memory_bytes=LIMITS.memory_bytes, pids=64)
    mine = cgroups.create(f"run-{os.getpid()}-0-mine", memory_bytes=LIMITS.memory_bytes, pids=64)
    try:
        assert cgroups.sweep() >= 1
        assert not any(d.exists() for d in stale.dirs.values())
        assert all(d.exists() for d in mine.dirs.values())
    finally:
        mine.remove()
        stale.remove()


@pytest.fixture
def v2_cgroup():
    if not (HYBRID_V2 / "cgroup.controllers").exists():
        pytest.skip("no hybrid cgroup2 mount (on a v2 host, the tests above cover v2)")
    path = HYBRID_V2 / f"run-{os.getpid()}-v2-test"
    path.mkdir()
    yield RunCgroup({"": path}, v2=True, memory_bytes=LIMITS.memory_bytes, pids=LIMITS.pids)
    if path.exists():
        path.rmdir()


def test_v2_kill_ends_every_member_and_remove_deletes_it(v2_cgroup):
    path = v2_cgroup.dirs[""]
    # Joined the way enter.py joins: the child writes its own pid, then execs.
    members = [
        subprocess.Popen(["sh", "-c", f'echo $$ > {path}/cgroup.procs && exec sleep 60'])
        for _ in range(3)
    ]
    deadline = time.monotonic() + 5
    while len(v2_cgroup.pids()) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert v2_cgroup.pids() == sorted(p.pid for p in members)

    v2_cgroup.remove()

    assert [p.wait(timeout=5) for p in members] == [-9, -9, -9]
    assert not path.exists()


def test_v2_counts_cpu_time_from_cpu_stat(v2_cgroup):
    path = v2_cgroup.dirs[""]
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    subprocess.run(["sh", "-c", f'echo $$ > {path}/cgroup.procs && exec python3 -c "{spin}"'], check=True)

    assert 0.3 <= v2_cgroup.cpu_seconds() < 5
    assert not v2_cgroup.oom_killed()  # no memory controller here: no memory.events, no claim


def test_a_v2_parent_without_memory_and_pids_explains_delegation(monkeypatch):
    if not (HYBRID_V2 / "cgroup.controllers").exists():
        pytest.skip("no hybrid cgroup2 mount")
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", HYBRID_V2)
    v2 = Cgroups()
    assert v2.version == 2

    with pytest.raises(CgroupError, match="lacks the memory and pids controller.*Delegate=yes"):
        v2.bases()


SPIN_THREADS = """\
import os, time
for _ in range(8):  # processes, not threads: Python threads would share one core through the GIL
    if os.fork() == 0:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 6:
            pass
        os._exit(0)
time.sleep(6)
"""
ONE_THREAD = """\
import time
t0, c0 = time.monotonic(), time.thread_time()
while time.monotonic() - t0 < 2.5:
    pass
print(round((time.thread_time() - c0) / (time.monotonic() - t0), 2))
"""


@pytest.mark.serial
def test_each_run_has_a_cpu_share_so_a_spinning_neighbour_cannot_starve_it(run):
    """Each run has a cgroup of its own in the CPU controller, with the default weight like every
    sibling, so that under contention the kernel divides the CPU between runs, not processes. (On
    this development host the kernel's autogroup scheduling already groups each sandbox's session,
    so the share measured below holds with or without the cgroup; on a host without autogroup,
    one process beside eight spinning ones would get two ninths of two cores.)"""
    import threading
    from dataclasses import replace

    cgroups = Cgroups()
    run_cgroup = cgroups.create(f"run-{os.getpid()}-cpu-probe", memory_bytes=LIMITS.memory_bytes, pids=64)
    try:
        assert "cpu" in run_cgroup.dirs or run_cgroup.v2
    finally:
        run_cgroup.remove()

    limits = replace(LIMITS, wall_s=15, cpu_s=60, pids=96)
    alone = run(ONE_THREAD, limits)  # what this machine gives one thread now (it may be busy)
    spinner = threading.Thread(target=run, args=(SPIN_THREADS, limits))
    spinner.start()
    time.sleep(1.5)  # the spinner is warm and spinning
    beside = run(ONE_THREAD, limits)
    spinner.join()
    assert alone.status == beside.status == "succeeded", (alone, beside)
    share, baseline = float(beside.stdout), float(alone.stdout)
    assert share >= 0.5 * baseline, (
        f"one thread got {share:.0%} of a core beside a spinning run, {baseline:.0%} alone")
