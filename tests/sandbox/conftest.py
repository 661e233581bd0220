"""The real bubblewrap sandbox, driven directly (the launcher) and through the real supervisor
(``executor.local.run_local``). Hostile snippets run only inside it: without bubblewrap, or
without root, these tests are skipped, never run unsandboxed.

Small limits keep the suite fast: wall 6 s, CPU 3 s, memory 1 GiB, output 64 KiB, /tmp 16 MiB,
64 processes and threads. A uid range of its own (61000+) keeps these runners apart from a
worker or another test session using the default one (60000+) on the same machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from executor.local import RunResult
from tests.sandboxed import skip_unless_sandbox

from executor.sandbox import Launcher, Limits, get_launcher, launcher as launcher_module
from executor.supervisor import Runner

# Every runner these tests start ends at a message the protocol does not declare (runner/main.py's
# EventChannel), as the executor's do under EXECUTOR_CHECK_PROTOCOL.
Launcher.check_protocol = True

# Sessions on one machine (a developer's and CI's, or the full suite next to this folder) must
# not share sandbox uids: the tests look for leftover processes by uid.
UID_BASE = 61000 + (os.getpid() % 1000) * 2
LIMITS = Limits(wall_s=6.0, cpu_s=3, memory_bytes=1024**3, output_bytes=64 * 1024,
                tmp_bytes=16 * 1024**2, pids=64)
PROJECT_ROOT = Path(__file__).resolve().parents[2]
# The production backend (runners forked from a template); SANDBOX_TEST_BACKEND=bwrap runs the
# same suite against the one-shot launcher kept for comparison.
BACKEND = os.environ.get("SANDBOX_TEST_BACKEND", "fork")


def pytest_collection_modifyitems(config, items):
    skip_unless_sandbox(items, Path(__file__).parent)


Result = RunResult


@pytest.fixture(scope="session")
def launcher():
    launcher = get_launcher(BACKEND, limits=LIMITS, uid_base=UID_BASE)
    yield launcher
    launcher.close()


def uid_inside(slot: int) -> int:
    """A runner's uid as the snippet sees it: the host's under the one-shot sandbox, the
    template's user namespace's under the fork launcher (the host sees uid_base + slot)."""
    from executor.sandbox.fork import RUNNER_UID_BASE

    return (RUNNER_UID_BASE if BACKEND == "fork" else UID_BASE) + slot


@pytest.fixture(scope="session")
def run(launcher):
    """run(code, limits=None) -> Result, through the real supervisor, in slot 0. Other limits
    get a launcher of their own: the sandbox's (CPU, memory, pids) are set when it starts."""
    from executor.local import run_local

    def run_(code: str, limits: Limits | None = None, lean: bool | None = None) -> Result:
        """``lean``: in a lean runner or a full one (default: the one the executor would take)."""
        limits = limits or LIMITS
        if limits == LIMITS:
            return Result(run_local(code, launcher=launcher, limits=limits, lean=lean))
        other = get_launcher(BACKEND, limits=limits, uid_base=UID_BASE)
        try:
            return Result(run_local(code, launcher=other, limits=limits, lean=lean))
        finally:
            other.close()  # a template of its own: not kept alive beside the session's

    return run_


def host_processes_of(uid: int) -> list[int]:
    """Host pids owned by a sandbox uid, from the host's /proc."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
            pids.append(int(entry))  # a zombie is not running: it waits for its parent's wait()
    return pids


def wait_gone(uid: int, timeout: float = 3.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := host_processes_of(uid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


class Neighbour:
    """A warm runner waiting in slot 1 while a hostile snippet runs in slot 0, as runners wait
    in the pool next to a running one. After the hostile run it must run a normal snippet."""

    def __init__(self, launcher):
        from executor.supervisor import Runner

        self.launcher = launcher
        self.runner = Runner(proc=launcher.start(1), slot=1)

    def run(self, code: str) -> Result:
        from executor.supervisor import supervise, wait_ready

        events: list[dict] = []
        try:
            info = wait_ready(self.runner, 120)
            events.append({"type": "started", **info})
            finished = supervise(self.runner, self.launcher, {"code": code, "options": {}}, LIMITS,
                                 lambda type_, **f: events.append({"type": type_, **f}))
        finally:
            self.close()
        events.append({"type": "finished", **finished})
        return Result(events)

    def close(self) -> None:
        self.launcher.cleanup(self.runner.proc)
        if not self.runner.closed:
            try:
                self.runner.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - the supervisor reaped it
                pass
            self.runner.close()


NORMAL_SNIPPET = "import jax.numpy as jnp\nprint(int(jnp.arange(5).sum()))\n"


@pytest.fixture
def neighbour(launcher):
    n = Neighbour(launcher)
    yield n
    n.close()


@pytest.fixture
def then_a_normal_run_succeeds(neighbour):
    """Call after the hostile run: the warm neighbour runs a normal snippet."""

    def check():
        result = neighbour.run(NORMAL_SNIPPET)
        assert (result.status, result.stdout) == ("succeeded", "10\n"), result

    return check


def fake_runner(script: str) -> Runner:
    """A process that speaks as a runner does on its event pipe (fd 3), for what no real runtime
    here can do: fail to open a chip, or take seconds to tear down after the code ended."""
    r, w = os.pipe()
    proc = launcher_module.RunnerPopen(
        [sys.executable, "-c", script, str(w)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, pass_fds=(w,), start_new_session=True)
    os.close(w)
    proc.event_fd = r
    return Runner(proc=proc, slot=0)
