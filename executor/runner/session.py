"""A notebook's session: one runner that keeps its namespace between cells.

    supervisor ──stdin: request("session"), then request("cell", code, options, wall_s, cpu_s)
                 lines, one at a time (the next only after this one's "cell_done")──▶ runner
    runner ──event fd: the cell's events, then "cell_done" {status, stopped_by, memory_bytes}
                 (a profiled cell: "ended" with the same fields first, then its profile, then
                 "cell_done")

Each cell runs as a snippet does (``main.run_snippet``: notebook magics, a trailing expression's
value, errors mapped to the cell's lines) in the one ``__main__`` namespace every cell shares, so
a function the first cell jitted is compiled once and called by the next without compiling.

What stops a cell, and the session lives on:
- SIGINT from the supervisor (a cancel, the wall clock): a KeyboardInterrupt in the cell, as
  Jupyter interrupts. Between cells it is ignored (a late one must not end the session).
- Its CPU seconds: before each cell the soft RLIMIT_CPU is set to what the process has used plus
  the cell's ``cpu_s``; SIGXCPU there raises KeyboardInterrupt in the cell too. The hard limit is
  the session's whole allowance, set by the launcher, which no cell can raise.
What ends the session is the kernel's (the memory cgroup, the hard CPU limit) or the supervisor's
SIGKILL when a cell does not stop when interrupted; the supervisor says which.
"""

from __future__ import annotations

import builtins
import json
import math
import os
import resource
import signal

from . import common, compilecache, hooks
from .common import flush_user_streams


class _Cell:
    """Whether a cell is running, and what stopped it."""

    running = False
    stopped_by: str | None = None


def _interrupt(signum, frame) -> None:
    if _Cell.running:
        _Cell.stopped_by = "cpu" if signum == signal.SIGXCPU else "interrupted"
        raise KeyboardInterrupt("the cell's CPU limit" if signum == signal.SIGXCPU else None)


def _cpu_budget(cpu_s) -> None:
    """The cell's CPU seconds from now: the soft limit, under the session's hard one."""
    if not isinstance(cpu_s, (int, float)) or cpu_s <= 0:
        return
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = math.ceil(used.ru_utime + used.ru_stime + cpu_s)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (ValueError, OSError):
        pass  # the supervisor's own CPU watch still holds


def _resident_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def serve_session(request: dict, channel, stdin, run_snippet, end_profile) -> None:
    """Run each cell line in one namespace until stdin ends, each as ``run_snippet`` (main's)
    runs a snippet; never returns."""
    from .notebook import transform
    from .shapes import collect

    namespace = {"__name__": "__main__", "__builtins__": builtins}
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGXCPU, _interrupt)
    while True:
        try:
            line = stdin.readline()
        except KeyboardInterrupt:  # a late interrupt, between cells
            continue
        if not line:
            common.leave(channel.fd, 0)  # the session was ended
        try:
            cell = json.loads(line)
        except ValueError:
            continue
        if not isinstance(cell, dict) or cell.get("op") != "cell" or not isinstance(cell.get("code"), str):
            continue  # a compile cache's answer that came after its cell: nobody asks now
        if cell.get("fresh") is True:  # a run of its own (executor/chips.py): no earlier run's globals
            namespace = {"__name__": "__main__", "__builtins__": builtins}
        _cpu_budget(cell.get("cpu_s"))
        hooks.configure(cell.get("options"))
        compilecache.listen(stdin)
        common.set_wall_clock(cell.get("wall_s"))
        source = cell["code"]
        _Cell.running, _Cell.stopped_by = True, None
        cpu_at_start = common.cpu_ms()
        profile = None
        try:
            status, profile = run_snippet(source, channel, namespace)
            hooks.finish()
        except KeyboardInterrupt:  # between the code's end and the figures' flush
            status = "failed"
            if profile is not None:
                profile.finish(channel, interrupted=True)
                profile = None
        finally:
            _Cell.running = False
        compilecache.listen(None)
        flush_user_streams()
        channel.send("shapes", **collect(namespace, transform(source)[0]))
        compilecache.report(channel)
        done = {"status": status, "memory_bytes": _resident_bytes(), "device_peak_bytes": common.device_peak_bytes(),
                "host_peak_kb": common.host_peak_kb(), "cpu_ms": round(common.cpu_ms() - cpu_at_start, 1)}
        if _Cell.stopped_by:
            done["stopped_by"] = _Cell.stopped_by
        done = {k: v for k, v in done.items() if v is not None}
        end_profile(channel, profile, done)  # the cell's end said before its profile stops
        channel.send("cell_done", **done)
