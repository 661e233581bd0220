"""A profile's Python lane on Python 3.12 and later: the snippet's own frames and the calls they
made, recorded with ``sys.monitoring`` in the snippet's code alone (runner/profile.py).

JAX's Python tracer records every call of the process: a run that traces and lowers its functions
anew (each run is a fresh process) makes some 460,000 of JAX's own, which cost the run while it
records them, the profiler's stop while it serializes them, and the trace's build while it reads
and drops them (the trace keeps the snippet's frames and what they called). Here only the
snippet's code objects raise events:

    PY_START (every code object, once)  the snippet's: its events switched on; any other's:
                                        DISABLE (never raised there again)
    PY_START / PY_RESUME  a frame of the snippet's opens      PY_RETURN / PY_YIELD / PY_UNWIND  closes
    CALL                  a call from the snippet's code opens (a function of the snippet's
                          itself is its frame, not a call)
    C_RETURN / C_RAISE / LINE / the next CALL / the frame's end   closes it

Times are ``time.perf_counter_ns``; ``clock`` ties them to the profiler's (a TraceAnnotation
named CLOCK_MARK, whose start in the XSpace is the ``perf_counter_ns`` taken inside it). At most
MAX_CALLS are kept; past them the lane stops and says so (``stopped_at_s``).
"""

from __future__ import annotations

import sys
import threading
import time

from .common import SNIPPET_FILENAME

CLOCK_MARK = "playground:clock"
MAX_CALLS = 200_000


def available() -> bool:
    return hasattr(sys, "monitoring")


def _callee(fn) -> tuple[str, str, int] | None:
    """(name, file, line) of what a call calls: a Python function's code, the function a wrapper
    (a jitted function) wraps, else its qualified name and module; None for a function of the
    snippet's own (its frame says it)."""
    own = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if own is not None and own.co_filename == SNIPPET_FILENAME:
        return None
    target = getattr(fn, "__wrapped__", fn)
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__
    if code is not None:
        return str(name), code.co_filename, code.co_firstlineno
    module = getattr(fn, "__module__", None) or type(fn).__module__ or ""
    return str(name), str(module), 0


class SnippetLane:
    """The recorder: ``start`` before the snippet, ``stop`` after it; ``calls`` then holds
    [name, file, line, start_ns, end_ns, the snippet's own frame] for each frame and call."""

    def __init__(self, max_calls: int = MAX_CALLS):
        self.max_calls = max_calls
        self.calls: list[list] = []
        self.stacks = threading.local()  # per thread: [[frame entry, its open call or None], ...]
        self.instrumented: set = set()
        self.tool: int | None = None
        self.stopped_at_ns: int | None = None
        self.started_ns = 0

    # -- switching on and off -------------------------------------------------------------------

    def start(self) -> bool:
        """False where no tool id is free (a snippet's own profiler holds it)."""
        monitoring = sys.monitoring
        for tool in (monitoring.PROFILER_ID, 4, 5):
            try:
                monitoring.use_tool_id(tool, "playground profile")
            except ValueError:
                continue
            self.tool = tool
            break
        else:
            return False
        for event, callback in self._callbacks():
            monitoring.register_callback(self.tool, event, callback)
        self.started_ns = time.perf_counter_ns()
        monitoring.set_events(self.tool, monitoring.events.PY_START | monitoring.events.PY_UNWIND)
        return True

    def stop(self) -> None:
        """Every event off, every frame still open closed now (the run's end)."""
        if self.tool is None:
            return
        monitoring, tool = sys.monitoring, self.tool
        self.tool = None
        monitoring.set_events(tool, 0)
        for code in self.instrumented:
            monitoring.set_local_events(tool, code, 0)
        for event, _callback in self._callbacks():
            monitoring.register_callback(tool, event, None)
        monitoring.free_tool_id(tool)
        now = time.perf_counter_ns()
        stack = getattr(self.stacks, "frames", None) or []
        while stack:
            self._close(stack.pop(), now)
        self.instrumented.clear()

    def full(self) -> None:
        """MAX_CALLS kept: the lane stops here."""
        if self.stopped_at_ns is None:
            self.stopped_at_ns = time.perf_counter_ns()
            self.stop()

    def _callbacks(self) -> tuple:
        events = sys.monitoring.events
        return ((events.PY_START, self._on_start), (events.PY_RESUME, self._on_resume),
                (events.PY_RETURN, self._on_end), (events.PY_YIELD, self._on_end),
                (events.PY_UNWIND, self._on_unwind), (events.CALL, self._on_call),
                (events.C_RETURN, self._on_c_end), (events.C_RAISE, self._on_c_end), (events.LINE, self._on_line))

    # -- what the events say --------------------------------------------------------------------

    def _frames(self) -> list:
        frames = getattr(self.stacks, "frames", None)
        if frames is None:
            frames = self.stacks.frames = []
        return frames

    def _open(self, code) -> None:
        if code not in self.instrumented:
            events = sys.monitoring.events
            self.instrumented.add(code)
            sys.monitoring.set_local_events(self.tool, code, events.PY_RESUME | events.PY_RETURN | events.PY_YIELD
                                            | events.CALL | events.LINE)
        entry = [code.co_qualname, SNIPPET_FILENAME, code.co_firstlineno, time.perf_counter_ns(), 0, True]
        self._frames().append([entry, None])

    def _on_start(self, code, offset):
        if code.co_filename != SNIPPET_FILENAME:
            return sys.monitoring.DISABLE
        if self.tool is not None:
            self._open(code)
        return None

    def _on_resume(self, code, offset):
        if self.tool is not None:
            self._open(code)

    def _close(self, frame: list, now: int) -> None:
        entry, call = frame
        if call is not None:
            call[4] = now
            self._keep(call)
        entry[4] = now
        self._keep(entry)

    def _keep(self, entry: list) -> None:
        self.calls.append(entry)
        if len(self.calls) >= self.max_calls:
            self.full()

    def _on_end(self, code, offset, value):
        frames = self._frames()
        if frames and code.co_filename == SNIPPET_FILENAME:
            self._close(frames.pop(), time.perf_counter_ns())

    def _on_unwind(self, code, offset, exc):
        if code.co_filename == SNIPPET_FILENAME:
            self._on_end(code, offset, exc)

    def _end_call(self) -> list | None:
        """The top frame's call, closed now (its callee returned: the frame goes on)."""
        frames = self._frames()
        if not frames or frames[-1][1] is None:
            return frames[-1] if frames else None
        call = frames[-1][1]
        call[4] = time.perf_counter_ns()
        frames[-1][1] = None
        self._keep(call)
        return frames[-1] if frames else None

    def _on_call(self, code, offset, fn, arg0):
        frame = self._end_call()
        if frame is None or self.tool is None:
            return
        callee = _callee(fn)
        if callee is not None:
            frame[1] = [*callee, time.perf_counter_ns(), 0, False]

    def _on_c_end(self, code, offset, fn, arg0):
        self._end_call()

    def _on_line(self, code, line):
        self._end_call()


def clock_offset(space_mark_ns: float | None, mark_ns: int | None) -> float | None:
    """What to add to a ``perf_counter_ns`` time to place it on the profile's clock."""
    if space_mark_ns is None or mark_ns is None:
        return None
    return space_mark_ns - mark_ns
