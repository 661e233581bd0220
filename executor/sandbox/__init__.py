"""Where a runner process is started: the sandbox backends.

A backend ("launcher") starts one runner process with its limits and, after the run, tells the
supervisor whether a limit it enforces (memory cgroup, pids cgroup) ended it. Backends are chosen
by name from ``LAUNCHERS``; an unknown name is an error at start-up, not at the first run.
What every backend is, and the runner's command line, is in launcher.py; bubblewrap's sandbox in
bwrap.py; the default, runners forked from a sandboxed template, in fork.py.

    executor worker (Celery, threads pool)
      └─ launcher.start()  ──▶  [bwrap pid 1 ──▶] python -m runner   (one per run)
"""

from __future__ import annotations

from .launcher import (PROJECT_ROOT, RUNNER_PARENT, DirectLauncher, Launcher, Limits, RunnerPopen,
                       cpu_seconds_for, human_bytes, spawn_runner)
from .bwrap import BwrapLauncher
from .fork import ForkLauncher
from . import devices

__all__ = ["PROJECT_ROOT", "RUNNER_PARENT", "DirectLauncher", "Launcher", "Limits", "RunnerPopen", "cpu_seconds_for",
           "human_bytes", "spawn_runner", "devices", "BwrapLauncher", "ForkLauncher", "LAUNCHERS", "get_launcher"]

LAUNCHERS: dict[str, type[Launcher]] = {launcher.name: launcher for launcher in (DirectLauncher, BwrapLauncher,
                                                                                 ForkLauncher)}


def get_launcher(name: str, **kwargs) -> Launcher:
    try:
        cls = LAUNCHERS[name]
    except KeyError:
        raise RuntimeError(
            f"unknown sandbox backend {name!r}; choose one of {', '.join(sorted(LAUNCHERS))}"
        ) from None
    launcher = cls(**kwargs)
    launcher.check()
    return launcher
