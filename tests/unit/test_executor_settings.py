"""An executor refuses to start without a sandbox unless told explicitly, and says why."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench.stack import ROOT


def start_worker(**env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import executor.worker"],
        cwd=ROOT, env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("env, message", [
    ({"EXECUTOR_SANDBOX": "none"}, "set EXECUTOR_ALLOW_UNSANDBOXED=1"),
    ({"EXECUTOR_SANDBOX": "chroot"}, "unknown sandbox backend 'chroot'; choose one of bwrap, fork, none"),
    ({"EXECUTOR_POOL_SIZE": "two"}, "EXECUTOR_POOL_SIZE='two' is not an integer"),
    ({"RUN_PIDS": "16"}, "RUN_PIDS=16 must be at least 96"),
    ({"EXECUTOR_KIND": "fpga"}, "EXECUTOR_KIND='fpga': choose one of cpu, gpu, tpu"),
    ({"EXECUTOR_ALLOW_UNSANDBOXED": "maybe"}, "use 1/0, true/false"),
])
def test_it_refuses_to_start_with_a_bad_configuration(env, message):
    result = start_worker(**env)
    assert result.returncode != 0
    assert message in result.stderr


def test_it_starts_unsandboxed_only_when_allowed_and_warns_loudly():
    result = start_worker(EXECUTOR_SANDBOX="none", EXECUTOR_ALLOW_UNSANDBOXED="1")
    assert result.returncode == 0, result.stderr
    assert "WITHOUT A SANDBOX" in result.stderr
