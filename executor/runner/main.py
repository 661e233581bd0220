"""Warm up, wait for the one request, be what it asks (``ROLES``), report, exit.

    supervisor ──stdin: {"op": "warm"} lines, then one request (protocol.request)──▶ runner
        "run"      run a snippet (its "stdin" becomes the snippet's sys.stdin); a graded run's
                   student side then answers the checks' questions
        "check"    be a graded run's checker (runner/checker.py)
        "compile"  be a compile job for the node's compile cache (runner/compilecache.py)
        "analyse"  be a graded run's analyst (runner/analyst.py)
        "session"  be a notebook's session: run each "cell" line in one namespace (runner/session.py)
    runner ──event fd: JSON lines (ready, warmed, events, exit...)──▶ supervisor

The runner's own modules are hidden from the snippet (runner/hiding.py): a runner forked from the
template is born with them hidden (the template did it once); one started on its own hides them
before a snippet's first line (``hide_runner``: a run's, a session's first cell). A graded run's
answering code is built before the snippet runs, holding what it calls in closures.

A runner never runs two snippets, a session's cells aside (they share one namespace on purpose,
and one person's): it leaves with ``os._exit`` so that nothing the snippet did
(threads, atexit hooks, monkey-patched modules, a jax cache) can reach the next run.
"""

from __future__ import annotations

import argparse
import builtins
import ctypes
import io
import json
import linecache
import os
import signal
import sys
import threading
import time
import traceback

from . import common, compilecache, exclusive, hooks, jaxcompat
from .common import SNIPPET_FILENAME, flush_user_streams
from .tracebacks import describe_exception, last_user_line


# How a runner that sent what the protocol does not declare exits, when it checks (``check``).
UNDECLARED_EXIT = 70


class EventChannel:
    """JSON lines on a private pipe to the supervisor. Thread-safe: jax may report compilations
    from other threads.

    With ``check`` (``--check-protocol``, which the tests' launchers pass), every message is
    first held against its declaration (``protocol.RUNNER_SENDS``): one the protocol does not
    declare ends the runner with UNDECLARED_EXIT, its faults on stderr, so that a producer that
    drifts from the declaration fails its tests rather than have the supervisor repair or drop
    its messages unseen. The supervisor's ``rebuild`` stays the guard either way."""

    def __init__(self, fd: int, check: bool = False):
        self.fd = fd
        self.lock = threading.Lock()
        self.check = check
        if check:  # imported now: a run that has filled its memory could not import it later
            from . import protocol

            self.protocol = protocol

    def send(self, type_: str, **fields) -> None:
        line = (json.dumps({"type": type_, **fields}, default=str) + "\n").encode()
        if self.check:
            self._check(type_, line)
        with self.lock:
            view = memoryview(line)
            while view:
                try:
                    n = os.write(self.fd, view)
                except OSError:
                    return  # the snippet closed our pipe; the supervisor judges by exit code
                view = view[n:]

    def _check(self, type_: str, line: bytes) -> None:
        try:
            fields = json.loads(line)
            fields.pop("type", None)
            faults = self.protocol.undeclared(type_, fields)
        except MemoryError:  # a run that filled its memory: its message goes unchecked
            return
        if faults:
            os.write(2, f"[runner] sent what the protocol does not declare: {'; '.join(faults)}\n".encode())
            os._exit(UNDECLARED_EXIT)


def _die_with_parent() -> None:
    # Outside bubblewrap (whose --die-with-parent does this) a runner must not outlive the
    # worker that launched it.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux (a Mac, unsandboxed): no such call
        pass


def backend_deferred() -> bool:
    """Whether this runner starts no backend before "ready" (exclusive.DEFER_BACKEND_VAR)."""
    return os.environ.get(exclusive.DEFER_BACKEND_VAR) == "1"


def warm_up(cpu_devices: int | None) -> dict:
    """Import numpy and jax and initialise the backend: the second this takes is paid while the
    runner waits in the pool, not by the user. Where the backend is deferred (an exclusive
    device's next runner), only the imports: the chip is opened at "warm"."""
    deferred = backend_deferred()
    if not deferred:
        exclusive.open_device()  # a stand-in exclusive device's lock, where the tests set one
    if cpu_devices:
        jaxcompat.prepare_cpu_devices(cpu_devices)
    import numpy  # noqa: F401

    import jax

    if cpu_devices:
        jaxcompat.set_cpu_devices(cpu_devices)
    import jaxlib

    info = {"jax_version": jax.__version__, "jaxlib_version": getattr(jaxlib, "__version__", None)}
    if deferred:
        return info
    jax.numpy.zeros(1).block_until_ready()
    return {**backend_info(), **info}


def backend_info() -> dict:
    """What the started backend has: its platform, devices and (a GPU's or TPU's) memory."""
    import jax

    devices = jax.devices()
    info = {"platform": jax.default_backend(), "device_kind": devices[0].device_kind,
            "device_count": len(devices)}
    try:  # a GPU's or TPU's memory; the CPU backend has no stats (the worker adds the host's)
        stats = devices[0].memory_stats() or {}
    except Exception:  # noqa: BLE001 - a backend without them
        stats = {}
    if isinstance(stats.get("bytes_limit"), int):
        info["memory_bytes"] = stats["bytes_limit"]
    return info


def warm_backend(channel: EventChannel) -> None:
    """Start the backend and compile one tiny function, as the snippet's first use of jax would:
    the pool asks a waiting runner for this while the node is idle (executor/pool.py), so a run
    that uses jax finds the backend started, its first operation's one-time set-up done and
    XLA's compiler warm. Nothing of it is captured or counted (``capture.quiet``), and it runs
    confined as the snippet will (the same process, after "ready"). A runner whose backend was
    deferred says with "warmed" what the backend has (what "ready" says of others)."""
    t0 = time.perf_counter()
    from . import capture

    exclusive.open_device()  # outside the quiet: a chip held elsewhere is this warm-up's failure
    with capture.quiet():
        import jax
        import jax.numpy as jnp

        x = jnp.zeros((), jnp.float32)
        jax.jit(lambda v: v + 1)(x).block_until_ready()
    found = {}
    if backend_deferred():
        found = backend_info()
        common.mark_ready()  # the chip's host mappings are the runtime's, not a run's (host_peak_kb)
        confine()  # before it says so: from "warmed" on, it is as confined as any runner
    channel.send("warmed", warm_ms=round((time.perf_counter() - t0) * 1000, 1), **found)


def _user_stream(fd: int) -> io.TextIOWrapper:
    # write_through: every write reaches the pipe at once, so output streams as it is produced.
    return io.TextIOWrapper(
        io.FileIO(fd, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        write_through=True,
        line_buffering=True,
    )


def error_event(exc: BaseException) -> dict:
    """The error event, even when the run's memory is full (a recursion that filled it holds
    all its frames through the traceback): then the frames go first and the event says less."""
    try:
        return hooks.error_event(exc, describe_exception(exc))
    except MemoryError:
        pass
    from . import explain

    depth, line = explain.traceback_depth(exc), last_user_line(exc.__traceback__)
    exc.__traceback__ = None  # the frames' memory back
    event = {"exc_type": type(exc).__name__, "message": str(exc), "line": line,
             "traceback": "".join(["Traceback (most recent call last):\n",
                                   f"  [{depth:,} calls; the run's memory was too full to list them]\n",
                                   *traceback.format_exception_only(type(exc), exc)])}
    return dict(event, **explain.explanation_fields(explain.deep_recursion(exc, depth)))


def run_snippet(source: str, channel: EventChannel, namespace: dict | None = None):
    """Run the snippet as ``__main__``; return "succeeded" or "failed", and its profile when the
    run asked for one (still running: ``end_profile`` stops it after the run's end is said). A
    crash in user code is a result, never an exception out of here."""
    linecache.cache[SNIPPET_FILENAME] = (len(source), None, source.splitlines(True), SNIPPET_FILENAME)
    status = "succeeded"
    if namespace is None:
        namespace = {"__name__": "__main__", "__builtins__": builtins}
    profile = hooks.start_profile(channel)
    interrupted = False  # a session's cell that was interrupted builds no trace: its session waits
    try:
        # Notebook magics and a trailing expression's value (hooks.py → notebook.py).
        hooks.run(source, namespace)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            status = "failed"
            flush_user_streams()
            channel.send(
                "error", exc_type="SystemExit", message=f"exited with code {exc.code}",
                line=None, traceback="",
            )
    except BaseException as exc:  # noqa: BLE001 - the snippet's failure is the result
        status = "failed"
        interrupted = isinstance(exc, KeyboardInterrupt)
        flush_user_streams()
        channel.send("error", **error_event(exc))
    if profile is not None and interrupted:
        profile.finish(channel, interrupted=True)  # let go of, not read
        profile = None
    return status, profile


def end_profile(channel: EventChannel, profile, said: dict) -> None:
    """A profiled run's end: "ended" first (the code's end, with what it used: the run's
    ``finished`` goes out now, executor/supervisor.py), then the profiler stopped and what it
    recorded handed over, outside the run's wall clock. Nothing without a profile."""
    if profile is not None:
        channel.send("ended", **said)
        profile.finish(channel)


# The confinement still to set, where it waits for the backend (a deferred one: see ``confine``).
_unconfined: list = []


def confine(args=None) -> None:
    """Set the confinement (``_confine``) now, or, for a runner whose backend is deferred, once the
    chip is open: its open is the runtime's, as a warm-up is, so it is neither under the
    snippet's CPU limit nor inside the seccomp filter (libtpu's open makes calls the filter
    refuses to a snippet). Called with ``args`` before "ready", without after the chip's open
    and before any request runs; the second time it does nothing."""
    if args is not None:
        if backend_deferred():
            _unconfined.append(args)
        else:
            _confine(args)
    elif _unconfined:
        _confine(_unconfined[0])  # kept until it has held: a runner that cannot confine itself runs nothing
        _unconfined.clear()


def _confine(args) -> None:
    """What the sandbox must set from inside, after warm-up and before the runner's request."""
    if args.cpu_s:
        # RLIMIT_CPU counts from the process's start; the launcher's hard limit leaves room for
        # the warm-up, and this gives the snippet its own cpu_s from here on.
        import math
        import resource

        used = resource.getrusage(resource.RUSAGE_SELF)
        spent = math.ceil(used.ru_utime + used.ru_stime)
        _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = spent + args.cpu_s
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        # SIGXCPU at soft ends the runner; one that ignores it gets SIGKILL a second later.
        hard = soft + 1 if hard == resource.RLIM_INFINITY else min(hard, soft + 1)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    if args.seccomp:
        from . import seccomp

        seccomp.install()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="runner")
    parser.add_argument("--event-fd", type=int, required=True)
    parser.add_argument("--cpu-devices", type=int, default=0)
    parser.add_argument("--seccomp", action="store_true", help="confine the snippet's syscalls")
    parser.add_argument("--cpu-s", type=int, default=0, help="CPU seconds for the snippet")
    parser.add_argument("--font-cache", help="the worker's matplotlib font list (a file)")
    parser.add_argument("--compile-cache", help="the node's compile cache (a folder, read-only)")
    parser.add_argument("--check-protocol", action="store_true",
                        help="end the runner at a message the protocol does not declare (the tests)")
    args = parser.parse_args(argv)

    _die_with_parent()
    channel = EventChannel(args.event_fd, check=args.check_protocol)
    os.set_inheritable(args.event_fd, False)
    t0 = time.perf_counter()
    info = warm_up(args.cpu_devices or None)
    hooks.prepare(channel, font_cache=args.font_cache, compile_cache=args.compile_cache)  # capture, figures
    info["libraries"] = hooks.libraries()
    confine(args)
    common.mark_ready()
    channel.send("ready", warmup_ms=round((time.perf_counter() - t0) * 1000, 1), **info)
    serve(channel, sys.stdin.buffer)


def serve(channel: EventChannel, stdin) -> None:
    """Answer "warm" lines until the one request that decides what this runner is (its "op",
    ``protocol.RUNNER_REQUESTS``), then be that (``ROLES``) until it exits. Never returns."""
    request = _first_request(channel, stdin)
    exclusive.open_device()  # a chip is held from before the code runs (done at the warm-up, if any)
    confine()
    role = ROLES.get(request.get("op"))
    if role is None:
        raise ValueError(f"a runner is not asked {str(request.get('op'))[:40]!r}: it is one of {', '.join(ROLES)}")
    common.set_wall_clock(request.get("wall_s"))
    sys.stdin = snippet_stdin(request.pop("stdin", None))
    sys.stdout = _user_stream(1)
    sys.stderr = _user_stream(2)
    role(request, channel, stdin)


def snippet_stdin(text: str | None) -> io.TextIOWrapper:
    """The snippet's ``sys.stdin``: a text stream over exactly the run's input, UTF-8, then its
    end (none: at its end at once). Lines end at "\n" alone and nothing is translated, as in
    Python's own stdin on Linux: "\r\n" reads as it was sent. ``sys.stdin.buffer`` is the
    bytes. The runner's own stdin, fd 0, stays the supervisor's channel."""
    common.set_input(text)
    data = text.encode("utf-8", errors="surrogatepass") if text else b""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogatepass", newline="\n")


def _first_request(channel: EventChannel, stdin) -> dict:
    """The first request that is not "warm": those before it (the pool's, on an idle node) are
    answered here, with "warmed"."""
    while True:
        line = stdin.readline()
        if not line:
            os._exit(0)  # the pool is shutting down
        request = json.loads(line)
        if request.get("op") != "warm":
            return request
        try:
            warm_backend(channel)
        except Exception as exc:  # noqa: BLE001 - only slower: the snippet starts the backend itself
            channel.send("warmed", warm_ms=None, error=f"{type(exc).__name__}: {exc}"[:500])


def hide_runner() -> None:
    """Before a snippet's first line: the runner's modules are no longer importable by name
    (runner/hiding.py). The runner keeps the references it holds."""
    from . import hiding

    hiding.hide(__name__.rpartition(".")[0])


def serve_snippet(request: dict, channel: EventChannel, stdin) -> None:
    """Run the snippet, report, exit. A graded run's student side then answers the checker's
    questions about the names the code left (``answers.serve_questions``) until its stdin ends."""
    graded = request.get("graded") is True
    hooks.configure(None if graded else request.get("options"))  # a graded run is always captured
    compilecache.listen(stdin)  # the supervisor names the node's compile cache's entries

    namespace = {"__name__": "__main__", "__builtins__": builtins}
    source = request.pop("code")
    if graded:  # built now, holding what it calls, before the code could reassign any of it
        from .answers import server

        serve_questions = server(namespace, channel, stdin)
    hide_runner()
    status, profile = run_snippet(source, channel, namespace)
    hooks.finish()  # figures left open
    flush_user_streams()
    if not graded:
        from .notebook import transform
        from .shapes import collect

        # Read as Python: a %timeit line is no syntax error here, and keeps its line.
        channel.send("shapes", **collect(namespace, transform(source)[0]))
        compilecache.report(channel)  # what this run compiled, for the executor to cache
    if graded:
        compilecache.listen(None)  # stdin carries the checks' questions now
        serve_questions(status)
    said = {"status": status, **common.usage()}
    end_profile(channel, profile, said)
    channel.send("exit", **said)
    common.leave(channel.fd, 0 if status == "succeeded" else 1)


def serve_check(request: dict, channel: EventChannel, stdin) -> None:
    """A graded run's checker (runner/checker.py): the hidden checks, and no snippet."""
    from .checker import serve_checks

    hooks.configure({"capture": False})
    serve_checks(request, channel, stdin)


def serve_compile(request: dict, channel: EventChannel, stdin) -> None:
    """A compile job (executor/compilecache.py): the modules compiled from their bytes alone for
    the node's cache, and no snippet."""
    hooks.configure({"capture": False})
    compilecache.compile_modules(request["modules"], channel)
    common.leave(channel.fd, 0)


def serve_analyst(request: dict, channel: EventChannel, stdin) -> None:
    """A graded run's analyst (runner/analyst.py): the student's compiled functions read, one
    question a line, and no snippet."""
    from .analyst import serve_analyses

    hooks.configure({"capture": False})
    serve_analyses(channel, stdin)
    common.leave(channel.fd, 0)


# What a runner becomes for its request's "op" (protocol.RUNNER_REQUESTS; "warm" is answered
# before, by ``_first_request``). Each takes (request, channel, stdin) and never returns; each
# imports its own modules when a runner becomes it, so that the template, which imports this
# module for every runner to share, loads none it will not use.
def serve_session(request: dict, channel: EventChannel, stdin) -> None:
    """A notebook's session (runner/session.py): cells, one at a time, in one namespace."""
    from .session import serve_session as serve

    hide_runner()
    serve(request, channel, stdin, run_snippet, end_profile)


ROLES = {"run": serve_snippet, "check": serve_check, "compile": serve_compile, "analyse": serve_analyst,
         "session": serve_session}
