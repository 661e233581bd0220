"""How a run's terminal status is decided, as a table: what the supervisor saw, and what the
person is told."""

from __future__ import annotations

import pytest

from executor.sandbox import LAUNCHERS
from executor.supervisor import decide_status

CASES = [
    # kill, sandbox's report, runner's exit, exit code, launcher -> status, message
    (("timed_out", "wall-clock limit of 30 s exceeded"), None, None, -9, "bwrap",
     "timed_out", "wall-clock limit of 30 s exceeded"),
    (("cancelled", "cancelled"), ("limit_exceeded", "memory limit of 2 GiB exceeded"), "succeeded", 0, "bwrap",
     "cancelled", "cancelled"),  # the supervisor's own kill is what happened first
    (None, ("limit_exceeded", "memory limit of 2 GiB exceeded"), None, 137, "bwrap",
     "limit_exceeded", "memory limit of 2 GiB exceeded"),
    (None, None, "failed", 1, "bwrap", "failed", ""),  # the snippet raised: its error event says how
    (None, None, "succeeded", 0, "bwrap", "succeeded", ""),
    (None, None, None, 0, "bwrap", "succeeded", ""),  # os._exit(0) before "exit"
    (None, None, None, 3, "bwrap", "failed", "the snippet's process exited with code 3"),
    (None, None, None, 139, "bwrap", "failed", "the snippet's process was killed by SIGSEGV"),
    (None, None, None, 139, "none", "failed", "the snippet's process exited with code 139"),  # no sandbox: a code
    (None, None, None, -11, "none", "failed", "the snippet's process was killed by SIGSEGV"),
    (None, None, None, 128 + 70, "bwrap", "failed", "the snippet's process exited with code 198"),
    # A forked runner is the template's child: its wait status, as Popen gives it.
    (None, None, None, -9, "fork", "failed", "the snippet's process was killed by SIGKILL"),
    (None, None, None, 137, "fork", "failed", "the snippet's process exited with code 137"),
    (None, None, "succeeded", -9, "fork", "succeeded", ""),  # killed after its "exit": cleanup
]


@pytest.mark.parametrize("kill, reason, runner_exit, code, launcher, status, message", CASES)
def test_it_decides_the_status_from_what_was_seen(kill, reason, runner_exit, code, launcher, status, message):
    assert decide_status(kill=kill, sandbox_reason=reason, runner_exit=runner_exit, returncode=code,
                         death_signal=LAUNCHERS[launcher].death_signal(code)) == (status, message)
