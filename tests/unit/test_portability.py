"""The unsandboxed development mode on a machine that is not Linux (a Mac): the executor's code
must not need Linux-only calls there. Simulated by removing them from ``os``; the snippet is
trusted (print), as it must be outside the sandbox."""

from __future__ import annotations

import os

from executor.local import RunResult, run_local
from executor.sandbox import Limits, get_launcher


def test_limits_default_their_cpu_time_without_sched_getaffinity(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert Limits(wall_s=30).cpu_s == 120


def test_a_run_is_supervised_without_pidfds(monkeypatch):
    monkeypatch.delattr(os, "pidfd_open")
    limits = Limits(wall_s=60)
    launcher = get_launcher("none", limits=limits)
    result = RunResult(run_local("import sys\nprint('hello')\nsys.stdout.close()\n", launcher=launcher,
                                 limits=limits))
    assert result.status == "succeeded", result.stderr
    assert result.stdout == "hello\n"
