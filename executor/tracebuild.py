"""A profiled run's trace, built from its raw profile after the run has ended, outside its wall
clock and outside its sandbox's CPU budget.

    executor worker (a builder thread, one build at a time)
      └─ python -m executor.tracebuild      stdin: the raw profile (runner/profile.py's bundle)
                                            stdout: the info's JSON line, then the gzipped trace

The runner stops the profiler and hands over what it recorded (the XSpace bytes, and what the
build needs of its process: device names, executables' devices, HLO op kinds). Reading it is
pure Python over bytes the run's code could have written, so it runs in a process of its own with
a memory limit, a CPU limit and a wall-clock limit, never in the worker's (where seconds of it
would hold the GIL from the node's other runs), and what it gives back is checked as the
supervisor checks a runner's trace."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from .runner import protocol

# Limits of one build. The pmap example's 80,000 events take some 2 s and 600 MiB here.
BUILD_WALL_S = 60
BUILD_CPU_S = 60
BUILD_MEMORY_BYTES = 3 * 1024**3
# An inflated raw profile, at most.
MAX_RAW_PROFILE_BYTES = 512 * 1024**2

_ROOT = str(Path(__file__).resolve().parent.parent)


def _limit() -> None:
    """The build's own limits, set by its process first (a preexec_fn would run in a fork of the
    worker's threads)."""
    resource.setrlimit(resource.RLIMIT_AS, (BUILD_MEMORY_BYTES, BUILD_MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (BUILD_CPU_S, BUILD_CPU_S + 5))
    os.nice(5)  # behind the node's runs


def build(bundle: bytes) -> tuple[bytes | None, dict]:
    """(the gzipped trace, its info) or (None, {"error": why}) from a raw profile."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "executor.tracebuild"], input=bundle, capture_output=True,
                              timeout=BUILD_WALL_S, cwd=_ROOT,
                              env={"PATH": os.environ.get("PATH", os.defpath), "PYTHONPATH": _ROOT})
    except subprocess.TimeoutExpired:
        return None, {"error": f"building the trace took over {BUILD_WALL_S} s"}
    except OSError as exc:
        return None, {"error": f"the trace could not be built: {exc}"}
    header, _, trace = done.stdout.partition(b"\n")
    try:
        info = json.loads(header) if done.returncode == 0 else None
    except ValueError:
        info = None
    if not isinstance(info, dict):
        why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return None, {"error": f"the trace could not be built: {why[0][:400]}"}
    if info.get("error"):
        return None, info
    info["build_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    info["bytes"] = len(trace)
    return trace, info


def main() -> int:
    _limit()
    from .runner import profile

    bundle = sys.stdin.buffer.read()
    try:
        trace, info = profile.build_bundle(bundle, MAX_RAW_PROFILE_BYTES,
                                           deadline=time.monotonic() + BUILD_WALL_S - 5)
    except profile.OutOfTime:
        trace, info = b"", {"error": str(protocol.Templated(profile.WALL_RAN_OUT))}
    except MemoryError:
        trace, info = b"", {"error": str(protocol.Templated(profile.MEMORY_FULL))}
    except Exception as exc:  # noqa: BLE001 - said to the run's page rather than raised
        why = protocol.Templated(profile.NOT_BUILT, error=f"{type(exc).__name__}: {exc}"[:400])
        trace, info = b"", {"error": str(why), "error_parts": protocol.parts_of([why])}
    sys.stdout.buffer.write(json.dumps(info, separators=(",", ":")).encode() + b"\n" + trace)
    return 0


if __name__ == "__main__":
    sys.exit(main())
