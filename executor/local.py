"""Run one snippet through the real launcher and supervisor, without Celery, Redis or Django.

    python -m executor.local snippet.py [--sandbox bwrap|none] [--wall 30] [--cpu-devices 8]

prints the run's events as JSON lines, exactly as a browser would receive them. This is how the
runner is used by itself on a GPU node, and what the sandbox tests drive.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from . import events as ev
from .sandbox import Limits, get_launcher
from .supervisor import Runner, supervise, wait_ready


def run_local(code: str, *, launcher, limits: Limits | None = None, options: dict | None = None,
              on_event=None) -> list[dict]:
    """Start a runner (cold), run ``code`` in it and return every event, ``finished`` last."""
    limits = limits or launcher.limits
    out: list[dict] = []

    def emit(type_: str, **fields) -> None:
        event = {"seq": len(out) + 1, "type": type_, "ts": round(time.time(), 3), **fields}
        out.append(event)
        if on_event:
            on_event(event)

    runner = Runner(proc=launcher.start(0), slot=0)
    try:
        info = wait_ready(runner, 120)
        emit(ev.STARTED, worker="local", **info)
        finished = supervise(runner, launcher, {"code": code, "options": options or {}}, limits, emit)
    finally:
        launcher.cleanup(runner.proc)
        runner.close()
    emit(ev.FINISHED, **finished)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m executor.local", description=__doc__.split("\n")[0])
    parser.add_argument("file", help="the snippet, or - for standard input")
    parser.add_argument("--sandbox", default="bwrap")
    parser.add_argument("--wall", type=float, default=Limits.wall_s)
    parser.add_argument("--cpu-devices", type=int, default=0)
    parser.add_argument("--device", action="append", default=[], help="a device node to bind (GPU)")
    args = parser.parse_args(argv)
    code = sys.stdin.read() if args.file == "-" else open(args.file).read()
    limits = Limits(wall_s=args.wall)
    launcher = get_launcher(args.sandbox, limits=limits, cpu_devices=args.cpu_devices,
                            devices=tuple(args.device))
    events = run_local(code, launcher=launcher, limits=limits,
                       on_event=lambda e: print(json.dumps(e), flush=True))
    return 0 if events[-1]["status"] == ev.SUCCEEDED else 1


if __name__ == "__main__":
    sys.exit(main())
