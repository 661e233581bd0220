"""How a run's terminal status is decided, as a table: what the supervisor saw, and what the
person is told."""

from __future__ import annotations

import pytest

from executor.supervisor import decide_status

CASES = [
    # kill, sandbox's report, runner's exit, exit code, sandboxed -> status, message
    (("timed_out", "wall-clock limit of 30 s exceeded"), None, None, -9, True,
     "timed_out", "wall-clock limit of 30 s exceeded"),
    (("cancelled", "cancelled"), ("limit_exceeded", "memory limit of 2 GiB exceeded"), "succeeded", 0, True,
     "cancelled", "cancelled"),  # the supervisor's own kill is what happened first
    (None, ("limit_exceeded", "memory limit of 2 GiB exceeded"), None, 137, True,
     "limit_exceeded", "memory limit of 2 GiB exceeded"),
    (None, None, "failed", 1, True, "failed", ""),  # the snippet raised: its error event says how
    (None, None, "succeeded", 0, True, "succeeded", ""),
    (None, None, None, 0, True, "succeeded", ""),  # os._exit(0) before "exit"
    (None, None, None, 3, True, "failed", "the snippet's process exited with code 3"),
    (None, None, None, 139, True, "failed", "the snippet's process was killed by SIGSEGV"),
    (None, None, None, 139, False, "failed", "the snippet's process exited with code 139"),  # no sandbox: a code
    (None, None, None, -11, False, "failed", "the snippet's process was killed by SIGSEGV"),
    (None, None, None, 128 + 70, True, "failed", "the snippet's process exited with code 198"),
]


@pytest.mark.parametrize("kill, reason, runner_exit, code, sandboxed, status, message", CASES)
def test_it_decides_the_status_from_what_was_seen(kill, reason, runner_exit, code, sandboxed, status, message):
    assert decide_status(kill=kill, sandbox_reason=reason, runner_exit=runner_exit, returncode=code,
                         sandboxed=sandboxed) == (status, message)
