"""Run one snippet through the real launcher and supervisor, without Celery, Redis or Django.

    python -m executor.local snippet.py [--sandbox bwrap|none] [--wall 30] [--cpu-devices 8] [--stdin FILE]

prints the run's events as JSON lines, exactly as a browser would receive them. This is how the
runner is used by itself on a GPU node, and what the sandbox tests drive.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field

from . import events as ev
from . import runtimes
from .sandbox import Limits, devices, get_launcher
from .graded_run import GradedRun
from .pool import runner_for
from .runner import grades
from .supervisor import Runner, discard, run_request, supervise, wait_ready


@dataclass
class RunResult:
    """A run's events, with what tests and tools ask of them."""

    events: list[dict]
    finished: dict = field(init=False)

    def __post_init__(self):
        self.finished = self.events[-1]
        assert self.finished["type"] == ev.FINISHED, self.events

    @property
    def status(self) -> str:
        return self.finished["status"]

    @property
    def message(self) -> str:
        return self.finished["message"]

    @property
    def started(self) -> dict:
        return self.events[0]

    def of(self, type_: str, **match) -> list[dict]:
        return [e for e in self.events if e["type"] == type_
                and all(e.get(k) == v for k, v in match.items())]

    def text(self, kind: str) -> str:
        return "".join(e["text"] for e in self.of(kind))

    @property
    def stdout(self) -> str:
        return self.text(ev.STDOUT)

    @property
    def stderr(self) -> str:
        return self.text(ev.STDERR)

    @property
    def errors(self) -> list[dict]:
        return self.of(ev.ERROR)

    @property
    def error(self) -> dict | None:
        return self.errors[0] if self.errors else None

    def __repr__(self) -> str:
        short = [{k: (v[:200] + "…" if isinstance(v, str) and len(v) > 200 else v)
                  for k, v in e.items() if k != "data"} for e in self.events]
        return f"RunResult({short})"


def checker_runners(launcher):
    """``(acquire, release)`` of a graded run's checker and analyst: cold runners, each in a slot
    of its own (1 and 2; the student's is 0)."""
    slots = [2, 1]

    def acquire() -> Runner:
        slot = slots.pop() if slots else 3
        runner = Runner(proc=launcher.start(slot), slot=slot)
        try:
            wait_ready(runner, 120)
        except BaseException:
            discard(runner, launcher)
            raise
        return runner

    return acquire, lambda runner: discard(runner, launcher)


def graded_run(checks: str, launcher, limits: Limits) -> GradedRun:
    acquire, release = checker_runners(launcher)
    return GradedRun(checks=checks, acquire=acquire, release=release, launcher=launcher, limits=limits)


def grade_local(code: str, checks: str, *, launcher, limits: Limits | None = None, on_event=None) -> tuple[list, dict]:
    """Grade ``code`` with ``checks`` as the site does: the run's events, and the grade
    (``grades.grade``: score, checks, messages)."""
    limits = limits or launcher.limits
    grading = graded_run(checks, launcher, limits)
    events = run_local(code, launcher=launcher, limits=limits, on_event=on_event, grading=grading)
    result = grading.finish(events[-1])
    grade = grades.grade(result["checks"], grades.declared_checks(checks), outcome=result["outcome"],
                         student_status=result["student_status"], error=result["error"], log=result["log"])
    return events, grade


def run_local(code: str, *, launcher, limits: Limits | None = None, options: dict | None = None,
              on_event=None, grading: GradedRun | None = None, lean: bool | None = None,
              keep_profile=None, stdin: str = "") -> list[dict]:
    """Start a runner (cold), run ``code`` in it and return every event, ``finished`` last.
    With ``grading``, the run is graded: ``grading.finish(events[-1])`` is its result. ``lean``:
    a lean runner (where the launcher has them) or a full one; by default, the one an executor's
    pool would give the code (pool.runner_for). ``keep_profile(trace)``: a profiled run's trace
    (``options={"profile": True}``; gzipped bytes), and the URL its ``profile`` event gives.
    ``stdin``: what the snippet reads as its standard input."""
    limits = limits or launcher.limits
    out: list[dict] = []

    def emit(type_: str, **fields) -> None:
        event = {"seq": len(out) + 1, "type": type_, "ts": round(time.time(), 3), **fields}
        out.append(event)
        if on_event:
            on_event(event)

    if lean is None:
        lean = runner_for(code, graded=grading is not None, profile=(options or {}).get("profile") is True)["lean"]
    runner = Runner(proc=launcher.start(0, lean=lean), slot=0)
    try:
        info = wait_ready(runner, 120)
        emit(ev.STARTED, worker="local", **info)
        finished = supervise(runner, launcher, run_request(code, options, stdin), limits, emit,
                             grading=grading, keep_profile=keep_profile)
    finally:
        launcher.cleanup(runner.proc)
        runner.close()
    emit(ev.FINISHED, **finished)
    return out


def _write(path: str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return os.path.abspath(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m executor.local", description=__doc__.split("\n")[0])
    parser.add_argument("file", help="the snippet, or - for standard input")
    parser.add_argument("--sandbox", default="fork", choices=("fork", "bwrap", "none"))
    parser.add_argument("--wall", type=float, default=Limits.wall_s)
    parser.add_argument("--cpu-devices", type=int, default=0)
    parser.add_argument("--device", action="append", default=[], help="a device node to bind (GPU)")
    parser.add_argument("--checks", help="an assignment's check code (a file): grade the snippet with it")
    parser.add_argument("--runtime", help="the runtime to run on (python -m executor.runtimes list); "
                        "default: this interpreter's environment")
    parser.add_argument("--runtimes-dir", default=str(runtimes.DEFAULT_DIR), help="where runtimes are built")
    parser.add_argument("--stdin", metavar="FILE", help="the snippet's standard input: a file's text (UTF-8), "
                        "or - for this command's own standard input")
    parser.add_argument("--profile", metavar="TRACE", help="run under jax's profiler and write its trace here "
                        "(Chrome Trace Event Format, gzipped: chrome://tracing and Perfetto open it)")
    args = parser.parse_args(argv)
    venv, pythonpath = None, ""
    if args.runtime:
        try:
            runtime = runtimes.catalog().resolve(args.runtime)[0]
        except runtimes.UnknownRuntime as exc:
            parser.error(str(exc))
        if not runtimes.is_built(runtime, args.runtimes_dir):
            parser.error(f"runtime {runtime.id} is not built here: python -m executor.runtimes build {runtime.id}")
        venv = str(runtimes.environment(runtime, args.runtimes_dir))
        pythonpath = runtimes.host_pythonpath(runtime)
    if args.file == "-" and args.stdin == "-":
        parser.error("the snippet and its --stdin cannot both be this command's standard input")
    code = sys.stdin.read() if args.file == "-" else open(args.file).read()
    stdin = ""
    if args.stdin is not None:
        # As bytes: a file's "\r\n" reach the snippet as they are, not as Python's text mode reads them.
        raw = sys.stdin.buffer.read() if args.stdin == "-" else open(args.stdin, "rb").read()
        try:
            stdin = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            parser.error(f"--stdin is not UTF-8 text: {exc}")
    limits = Limits(wall_s=args.wall)
    # The accelerator's variables and device nodes, as a worker passes them (sandbox/devices.py).
    found = sorted({node for kind in devices.DEVICE_GLOBS for node in devices.device_nodes(kind)})
    launcher = get_launcher(args.sandbox, limits=limits, cpu_devices=args.cpu_devices,
                            devices=tuple(args.device or found), venv=venv,
                            device_env=devices.accelerator_env(), pythonpath=pythonpath)
    show = lambda e: print(json.dumps(e), flush=True)
    try:
        if args.checks:
            events, grade = grade_local(code, open(args.checks).read(), launcher=launcher, limits=limits,
                                        on_event=show)
            print(json.dumps({"grade": grade}, indent=2))
        else:
            events = run_local(code, launcher=launcher, limits=limits, on_event=show,
                               options={"profile": True} if args.profile else None,
                               keep_profile=lambda trace: _write(args.profile, trace), stdin=stdin)
    finally:
        launcher.close()
    return 0 if events[-1]["status"] == ev.SUCCEEDED else 1


if __name__ == "__main__":
    sys.exit(main())
