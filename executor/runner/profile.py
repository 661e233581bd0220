"""A run under JAX's profiler: started before the snippet, stopped after it, and what it
recorded turned into one Chrome trace (Trace Event Format JSON, gzipped) that the supervisor
keeps with the run (``profile_trace``, a runner message) and the page draws.

    Profile.start()        jaxcompat.profiler_start: jax's own ProfileSession (0.12) or XLA's
                           ProfilerSession
    Profile.finish(ch)     stop into XSpace bytes, one "profile_trace" message with the raw
                           profile (``bundle``: the bytes and what the build needs of this process)
    build_bundle(bytes)    outside the run (executor/tracebuild.py): runner/xspace.py reads the
                           XSpace, build_trace, gzip

What the trace holds (docs/ARCHITECTURE.md, "Profiles"):

    pid 1  "Host"            tid 1 Python: the snippet's frames and what they called;
                             tid 2.. XLA dispatch: the host's calls that run an executable;
                             tid 6.. XLA compile
    pid 10+n  the device n   tid 1.. XLA Modules: each executable's run there;
                             tid 5.. XLA Ops: each HLO instruction, the waits inside a
                             collective nested under it
    pid 1000+n  XLA thread n the same rows, for ops whose device the profile does not show
    (a row's overlapping events go on the next tid: "XLA Ops 2")

A device's events are named after their HLO instruction (``args.hlo_op``, ``args.hlo_module``),
whose opcode, read from the optimised HLO of what the run compiled (``note_hlo``), gives the op
kind (``cat``). A simulated CPU device has no plane of its own: XLA runs its ops on host
threads, each op carrying the device's ordinal (JAX 0.12), so its lane is gathered from those
threads. On JAX 0.4 and 0.6 an op names no device, and its device is found from how XLA launched
it (``_Launches``); where the profile does not show that, its ops are drawn on the lane of the
thread that ran them ("XLA thread 2"), never on a device's, and ``cut`` says so.

Stopping the profiler is done in the run's own process, after its code, and only what this
process recorded is in it; reading it and building the trace (seconds for a pmap's 80,000 events)
is done after the run's end, in a process of the executor's (executor/tracebuild.py), so that it
costs the run neither wall clock nor CPU."""

from __future__ import annotations

import base64
import functools
import gzip
import zlib
import heapq
import json
import os
import re
import threading
import time
from collections import defaultdict

from . import common, jaxcompat, protocol, pylane
from .common import SNIPPET_FILENAME

# What a profile says when its trace was cut or not built: templates with named args, sent beside
# the English (``cut_parts``, ``error_parts``) so that a page says them in its reader's language.
PYTHON_STOPPED = "its Python lane stops {seconds} s in: the calls it recorded were filling the run's memory"
PYTHON_BOUNDED = "its Python lane stops {seconds} s in, after {calls} calls: as many as a run's lane records"
UNKNOWN_DEVICE = ("the device of {unknown} of {runs} runs of an executable on a CPU device is not in this JAX's "
                  "profile: their ops are on the lane of the thread that ran them (XLA thread n)")
DEVICE_OPS_CUT = "its device ops were {events} events: the first {kept} are kept"
HOST_CUT = "XLA's dispatches and compilations were {events}: the first {kept} are kept"
PYTHON_CUT = "its Python lane had {calls} calls: the {kept} longest are kept"
OVER_SIZE_PYTHON = "the trace was over {size} compressed: its Python lane was left out"
OVER_SIZE_EVENTS = "the trace was over {size} compressed: the first {kept} events are kept"
INTERRUPTED = "the code was interrupted (KeyboardInterrupt), so its trace was not built"
TOO_LITTLE_LEFT = "the run's wall clock had {seconds} s left, too little to build its trace"
WALL_RAN_OUT = "the run's wall clock ran out while its trace was built"
MEMORY_FULL = "the run's memory was too full to build its trace"
NOT_BUILT = "the trace could not be built: {error}"
TEMPLATES = (PYTHON_STOPPED, PYTHON_BOUNDED, UNKNOWN_DEVICE, DEVICE_OPS_CUT, HOST_CUT, PYTHON_CUT, OVER_SIZE_PYTHON,
             OVER_SIZE_EVENTS, INTERRUPTED, TOO_LITTLE_LEFT, WALL_RAN_OUT, MEMORY_FULL, NOT_BUILT)

# The trace's bounds: events, the Python lane's share of them, and its size before and after gzip
# (the supervisor refuses a message past PROFILE_MAX_BYTES; protocol.py says so too).
MAX_EVENTS = 200_000
MAX_PYTHON_EVENTS = 50_000
MAX_HOST_EVENTS = 20_000  # XLA's dispatches and compilations
# The Python tracer is taken off once the run's memory grew by this share of its limit
# (RLIMIT_DATA), or by PYTHON_MEMORY_MAX (some two million calls: more than a trace keeps, and
# seconds of the run's to read), looked at every MEMORY_WATCH_S.
PYTHON_MEMORY_SHARE = 0.3
PYTHON_MEMORY_MAX = 256 * 1024**2
MEMORY_WATCH_S = 0.2
# A trace is not built with less of the run's wall clock left than MIN_BUILD_S, and is given up
# BUILD_MARGIN_S before it ends, so that the run ends with its own status rather than timed out.
MIN_BUILD_S = 1.0
BUILD_MARGIN_S = 0.5
MAX_GZIP_BYTES = protocol.PROFILE_MAX_BYTES
TOP_OPS = 20
# Rows a lane may grow to for ops that overlap (XLA's CPU runtime runs independent ops of one
# device on several threads); past them, an op is drawn on the last row.
MAX_ROWS = 4
HOST_PID, DEVICE_PID, THREAD_PID = 1, 10, 1000

# Op kinds, from an HLO opcode.
_KINDS = {
    "collective": ("all-reduce", "all-reduce-start", "all-reduce-done", "all-gather", "all-gather-start",
                   "all-gather-done", "reduce-scatter", "all-to-all", "ragged-all-to-all", "collective-permute",
                   "collective-permute-start", "collective-permute-done", "collective-broadcast", "send",
                   "send-done", "recv", "recv-done"),
    "matmul": ("dot",),
    "convolution": ("convolution",),
    "copy": ("copy", "copy-start", "copy-done", "transpose", "slice", "dynamic-slice", "dynamic-update-slice",
             "concatenate", "pad", "gather", "scatter", "broadcast", "reshape", "bitcast", "iota"),
    "reduce": ("reduce", "reduce-window", "select-and-scatter", "sort", "reduce-precision"),
    "custom-call": ("custom-call",),
    "control": ("while", "conditional", "call", "tuple", "get-tuple-element", "parameter", "constant",
                "after-all", "optimization-barrier", "infeed", "outfeed"),
}
KIND_OF_OPCODE = {opcode: kind for kind, opcodes in _KINDS.items() for opcode in opcodes}
# An instruction's name when its module's HLO was not seen (compiled before the profile began).
_NAME_KINDS = (
    (re.compile(r"psum|pmax|pmin|ppermute|all[-_]reduce|all[-_]gather|reduce[-_]scatter|all[-_]to[-_]all|"
                r"collective|nccl|send|recv"), "collective"),
    (re.compile(r"gemm|dot|matmul|cublas"), "matmul"),
    (re.compile(r"conv(?!ert)"), "convolution"),
    (re.compile(r"fusion"), "fusion"),
    (re.compile(r"copy|transpose|slice|concatenate|gather|scatter|broadcast|reshape"), "copy"),
    (re.compile(r"reduce|sort"), "reduce"),
    (re.compile(r"custom"), "custom-call"),
)
_WAIT_NAMES = re.compile(r"^(Rendezvous|Wait|InvokeRendezvous|Wait for rendezvous)")
_PYTHON_NAME = re.compile(r"^\$(.*):(\d+) (.*)$")
_SKIP = re.compile(r"^(end: |ThreadpoolListener::|ThunkExecutor::Execute \(wait)")
_EXECUTE = re.compile(r"Execute \((.+)\)$|PjRt\w*Executable::Execute")
# XLA's launches on a CPU device (``_Launches``): the host's call that runs an executable, which
# hands each device's part to the thread pool in the executable's device order (a Record each);
# one device's part (which hands its ops to the pool: another Record); the pool's side of a Record.
_LAUNCH = re.compile(r"Executable::Execute(?:HelperOnSingleDevice)?(?: \(.+\))?$")
_DEVICE_PART = re.compile(r"Executable::ExecuteHelper$|^\[\d+\] ")
_RECORD, _START_REGION, _STOP_REGION = (
    "ThreadpoolListener::Record", "ThreadpoolListener::StartRegion", "ThreadpoolListener::StopRegion")
_POOL_FLOW = 15  # the flow type of the thread pool's Record → StartRegion
_COMPILE = re.compile(r"[Cc]ompile")
# What an event's name says it is (``_name_kind``): left out, not a Python frame, or the Python
# frame (file's last part, line, function, whether it is the snippet's). A Python frame is kept
# when it is the snippet's own or one the snippet called (a library's inner frames are left
# out: what the code called is what its author can change).
_SKIPPED, _OTHER, _CLOCK = object(), object(), object()


def _name_kind(name: str):
    if name == pylane.CLOCK_MARK:
        return _CLOCK
    if _SKIP.match(name):
        return _SKIPPED
    if not name.startswith("$"):
        return _OTHER
    found = _PYTHON_NAME.match(name)
    file, lineno, func = found.groups() if found else ("", "0", name[1:])
    return file.rsplit("/", 1)[-1], int(lineno), func, file == SNIPPET_FILENAME
_HLO_MODULE = re.compile(r"^HloModule ([^\s,]+)")
_HLO_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_HLO_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*.*?\s([a-z][a-z0-9\-]*)\(")
_CALLS = re.compile(r"calls=%?([\w.\-]+)")
_TARGET = re.compile(r'custom_call_target="([^"]+)"')

# {HLO module name: {instruction name: op kind}}, from the optimised HLO of every module the run
# compiled while profiled (texts.py calls note_hlo).
_KIND_OF_OP: dict[str, dict[str, str]] = {}
_active: list[Profile] = []


def active() -> bool:
    return bool(_active)


def note_hlo(text: str | None) -> None:
    """Learn each instruction's op kind from one module's optimised HLO text (what the trace's
    events name); a no-op unless a profile is running."""
    if not _active or not text:
        return
    try:
        module, kinds = hlo_kinds(text)
    except (ValueError, IndexError):
        return
    if module:
        _KIND_OF_OP[module] = kinds


def hlo_kinds(text: str) -> tuple[str | None, dict[str, str]]:
    """(the module's name, {instruction: op kind}) of an HLO module's text. A fusion is a matmul,
    a convolution or a collective when its computation has one; a ``wrapped_`` one (XLA's
    wrapper of a single op) is its op's kind."""
    lines = text.splitlines()
    found = _HLO_MODULE.match(lines[0]) if lines else None
    module = found.group(1) if found else None
    opcodes: dict[str, list[str]] = defaultdict(list)  # computation: its opcodes
    instructions: list[tuple[str, str, str]] = []  # (name, opcode, line)
    computation = ""
    for line in lines[1:]:
        if (head := _HLO_COMPUTATION.match(line)) and "=" not in line.split("{", 1)[0]:
            computation = head.group(1)
            continue
        if found := _HLO_INSTRUCTION.match(line):
            name, opcode = found.groups()
            opcodes[computation].append(opcode)
            instructions.append((name, opcode, line))
    kinds = {}
    for name, opcode, line in instructions:
        kinds[name] = _instruction_kind(name, opcode, line, opcodes)
    return module, kinds


def _instruction_kind(name: str, opcode: str, line: str, opcodes: dict[str, list[str]]) -> str:
    if opcode == "custom-call":
        target = _TARGET.search(line)
        return name_kind(target.group(1)) if target else "custom-call"
    if opcode != "fusion":
        return KIND_OF_OPCODE.get(opcode, "elementwise")
    called = _CALLS.search(line)
    inner = [KIND_OF_OPCODE.get(o, "elementwise") for o in opcodes.get(called.group(1), ())] if called else []
    for kind in ("collective", "matmul", "convolution"):
        if kind in inner:
            return kind
    if name.startswith("wrapped_"):
        real = [k for k in inner if k not in ("control", "copy")]
        return real[0] if len(set(real)) == 1 else "fusion"
    return "fusion"


@functools.lru_cache(maxsize=8192)
def name_kind(name: str) -> str:
    """An op's kind from its name alone (a pmap's 30,000 ops have a few dozen names)."""
    lower = name.lower()
    for pattern, kind in _NAME_KINDS:
        if pattern.search(lower):
            return kind
    return "other"


class Profile:
    """One run's profile, from ``start`` (before the snippet) to ``finish`` (after it)."""

    def __init__(self, session, lane=None, mark_ns: int | None = None):
        self.session = session
        self.python_stopped: str | None = None  # why the Python tracer was stopped early
        self.done = threading.Event()
        self.lane = lane  # the snippet's own Python lane (runner/pylane.py), where it is recorded so
        self.mark_ns = mark_ns  # its clock's mark (pylane.CLOCK_MARK)

    @classmethod
    def start(cls) -> Profile | str:
        """A running profile, or why there is none (a sentence for the page). Its Python lane is
        the snippet's own frames and calls (runner/pylane.py) where this Python can record them
        so, else JAX's Python tracer's (every call of the process, read and dropped after)."""
        lane = None
        if pylane.available():
            lane = pylane.SnippetLane()
            if not lane.start():
                lane = None
        try:
            session = jaxcompat.profiler_start(python_tracer=lane is None)
        # A JAX without a profiler (ImportError, AttributeError), or one already running
        # (RuntimeError, XLA's own errors among them).
        except (ImportError, AttributeError, RuntimeError, ValueError) as exc:
            if lane is not None:
                lane.stop()
            return f"the profiler could not start: {exc}"
        mark_ns = None
        if lane is not None:
            with jaxcompat.trace_annotation(pylane.CLOCK_MARK):
                mark_ns = time.perf_counter_ns()
        profile = cls(session, lane, mark_ns)
        _active.append(profile)
        if lane is None:
            profile.watch_memory()
        return profile

    def watch_memory(self) -> None:
        """JAX's Python tracer keeps every call in memory until the profile stops: a tight loop
        of Python calls fills the run's memory with them, and XLA's profiler then dies of it
        (a C++ bad_alloc, no trace and no output). Past PYTHON_MEMORY_SHARE of the run's memory
        grown since the start, the tracer is taken off every thread, and the trace says so."""
        import resource

        limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
        if limit in (resource.RLIM_INFINITY, -1) or limit <= 0:
            return
        budget = min(limit * PYTHON_MEMORY_SHARE, PYTHON_MEMORY_MAX)
        start, t0 = _resident_bytes(), time.monotonic()

        def watch() -> None:
            while not self.done.wait(MEMORY_WATCH_S):
                if _resident_bytes() - start > budget:
                    threading.setprofile_all_threads(None)
                    self.python_stopped = protocol.Templated(PYTHON_STOPPED,
                                                             seconds=f"{time.monotonic() - t0:.1f}")
                    return

        try:
            threading.Thread(target=watch, name="profile-memory", daemon=True).start()
        except RuntimeError:  # no thread to be had (the run is at its pids limit): unwatched
            pass

    def finish(self, channel, interrupted: bool = False) -> None:
        """Stop, send the raw profile (``profile_trace`` with ``raw``: the executor builds its
        trace after the run's end) or why not: not for a cell that was interrupted (its session
        is waiting for it to stop), nor with too little of the run's wall clock left to stop."""
        t0 = time.perf_counter()
        _active.clear()
        self.done.set()
        if self.lane is not None:
            self.lane.stop()
        deadline = common.deadline()
        left = None if deadline is None else deadline - time.monotonic()
        if interrupted:
            # Its session waits for the cell to stop: what was recorded is let go of, not read.
            try:
                jaxcompat.profiler_discard(self.session)
            except Exception:  # noqa: BLE001 - the profiler's own fault; the cell has stopped all the same
                pass
            _KIND_OF_OP.clear()
            _no_trace(channel, protocol.Templated(INTERRUPTED))
            return
        try:
            # JAX's own session (0.7 and later) is read by jaxlib's ProfileData, as it would read it.
            profile_data = self.session.quiet
            space = jaxcompat.profiler_stop_raw(self.session)
            if left is not None and left < MIN_BUILD_S:
                _no_trace(channel, protocol.Templated(TOO_LITTLE_LEFT, seconds=f"{max(left, 0):.1f}"))
                return
            stopped = self.python_stopped
            lane = self.lane_of()
            if lane and lane["stopped_ns"] is not None:
                stopped = protocol.Templated(PYTHON_BOUNDED, seconds=f"{lane['stopped_ns'] / 1e9:.1f}",
                                             calls=f"{pylane.MAX_CALLS:,}")
            data = bundle(space, {
                "python_lane": lane,
                "device_names": jaxcompat.device_names(),
                "executables": [[program, list(devices)] for program, devices in _executables().items()],
                "kinds": _KIND_OF_OP, "jax_version": jaxcompat.jax_version(), "platform": jaxcompat.platform(),
                "python_stopped": [stopped.template, stopped.args] if stopped else None,
                "profile_data": profile_data})
            del space
        except MemoryError:
            _no_trace(channel, protocol.Templated(MEMORY_FULL))
            return
        except Exception as exc:  # noqa: BLE001 - the run's result stands without its trace
            _no_trace(channel, protocol.Templated(NOT_BUILT, error=f"{type(exc).__name__}: {exc}"[:400]))
            return
        finally:
            _KIND_OF_OP.clear()
        if len(data) > protocol.PROFILE_MAX_BUNDLE_BYTES:
            _no_trace(channel, protocol.Templated(NOT_BUILT, error=(
                f"the raw profile was over {common.human_bytes(protocol.PROFILE_MAX_BUNDLE_BYTES)} compressed")))
            return
        channel.send("profile_trace", raw=base64.b64encode(data).decode("ascii"),
                     profile_ms=round((time.perf_counter() - t0) * 1000, 1))

    def lane_of(self) -> dict | None:
        """The snippet's own Python lane for the bundle: its longest MAX_PYTHON_EVENTS calls (the
        trace keeps no more), how many there were, and the clock's mark."""
        lane = self.lane
        if lane is None:
            return None
        calls = lane.calls
        count = len(calls)
        if count > MAX_PYTHON_EVENTS:
            calls = heapq.nlargest(MAX_PYTHON_EVENTS, calls, key=lambda c: c[4] - c[3])
        stopped = lane.stopped_at_ns - lane.started_ns if lane.stopped_at_ns is not None else None
        return {"calls": calls, "count": count, "mark_ns": self.mark_ns, "stopped_ns": stopped}


def _executables() -> dict:
    try:
        return jaxcompat.executable_devices(None)
    # A jaxlib without live_executables or hlo_modules: the build finds devices from the launches.
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return {}


def bundle(space: bytes, context: dict) -> bytes:
    """The raw profile: the context's JSON, a newline, the XSpace bytes; zlib at its fastest (an
    XSpace shrinks 4 to 8 times, and the pipe, the executor's memory and Redis carry less)."""
    return zlib.compress(json.dumps(context, separators=(",", ":")).encode() + b"\n" + space, 1)


def _read_space(space: bytes, profile_data: bool):
    """The planes of an XSpace: jaxlib's ProfileData where the run's JAX stopped into it and this
    process has it (C++, a million Python calls in a second), else runner/xspace.py's reading."""
    if profile_data:
        try:
            from jaxlib._profile_data import ProfileData
        except ImportError:
            pass
        else:
            return ProfileData.from_serialized_xspace(space)
    from .xspace import parse_xspace

    return parse_xspace(space)


def build_bundle(data: bytes, max_bytes: int, deadline: float | None = None) -> tuple[bytes, dict]:
    """The gzipped trace and its ``info`` (events, lanes, devices, summary, cut, cut_parts as
    parts, raw_bytes) from a raw profile (``bundle``), inflated to at most ``max_bytes``."""
    inflate = zlib.decompressobj()
    raw = inflate.decompress(data, max_bytes)
    if inflate.unconsumed_tail or not inflate.eof:
        raise ValueError(f"the raw profile is over {common.human_bytes(max_bytes)} uncompressed")
    header, _, space = raw.partition(b"\n")
    del raw
    context = json.loads(header)
    _KIND_OF_OP.update({str(m): dict(k) for m, k in dict(context.get("kinds") or {}).items()})
    try:
        executables = {int(p): tuple(int(d) for d in devices) for p, devices in context.get("executables") or ()}
        names = {int(k): str(v) for k, v in dict(context["device_names"]).items()}
        trace, info = build_trace(
            _read_space(space, bool(context.get("profile_data"))), device_names=names,
            jax_version=str(context.get("jax_version") or "unknown"),
            platform=str(context.get("platform") or "unknown"),
            executables=(lambda modules: executables) if executables else None, deadline=deadline,
            python_lane=context.get("python_lane"))
    finally:
        _KIND_OF_OP.clear()
    stopped = context.get("python_stopped")
    if stopped:
        set_cut(trace, info, [protocol.Templated(stopped[0], **stopped[1]), *info["cut_parts"]])
    gz, raw_bytes = encode(trace, info)
    info["raw_bytes"] = raw_bytes
    info["cut_parts"] = protocol.parts_of(info["cut_parts"]) if info["cut_parts"] else None
    return gz, info


def _no_trace(channel, why: protocol.Templated) -> None:
    channel.send("profile_trace", error=str(why), error_parts=protocol.parts_of([why]))


def set_cut(trace: dict, info: dict, cuts: list[protocol.Templated]) -> None:
    """What was cut of the trace, in its English (the trace's ``otherData`` keeps that) and parts."""
    info["cut_parts"] = cuts
    info["cut"] = trace["otherData"]["cut"] = "; ".join(cuts)
    # Its parts too, so that a page reading the trace (built after the run's end, with no
    # "profile" event to carry them) says it in its reader's language.
    trace["otherData"]["cut_parts"] = protocol.parts_of(cuts)


class OutOfTime(Exception):
    """The run's wall clock is about to end: the trace is given up so that the run ends first."""


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def encode(trace: dict, info: dict) -> tuple[bytes, int]:
    """The trace gzipped, within MAX_GZIP_BYTES: past it, the Python lane goes, then half the
    device events at a time (``info["cut"]`` says so)."""
    while True:
        raw = json.dumps(trace, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
        data = gzip.compress(raw, 6)
        if len(data) <= MAX_GZIP_BYTES or info["events"] == 0:
            return data, len(raw)
        events = trace["traceEvents"]
        timed = [e for e in events if e["ph"] == "X"]
        python = [e for e in timed if e.get("cat") == "python"]
        keep = ([e for e in timed if e.get("cat") != "python"] if python
                else sorted(timed, key=lambda e: e["ts"])[: len(timed) // 2])
        trace["traceEvents"] = [e for e in events if e["ph"] != "X"] + keep
        info["events"] = len(keep)
        size = common.human_bytes(MAX_GZIP_BYTES)
        set_cut(trace, info, [protocol.Templated(OVER_SIZE_PYTHON, size=size) if python else
                              protocol.Templated(OVER_SIZE_EVENTS, size=size, kept=f"{len(keep):,}")])


# Building the trace ---------------------------------------------------------------------------

def _stats(event) -> dict:
    return dict(event.stats)


class _Lane:
    """One (pid, tid) row's events, as Chrome trace "X" events."""

    def __init__(self, pid: int, tid: int, name: str):
        self.pid, self.tid, self.name = pid, tid, name
        self.events: list[dict] = []


class _Thread:
    """One host thread while its events are read: the Executes and device parts open there
    (innermost last: [end, "execute" or "part", its index or the launch it is part of, the
    latest end of the other events that opened in it]: a Record is directly in it when none of
    those is still open) and the thread pool's task it runs (its StartRegion, whose flow, the
    Record that scheduled it, is read only when something in it needs it)."""

    __slots__ = ("open", "task", "flow")

    def __init__(self):
        self.open, self.task, self.flow = [], None, None

    def start_task(self, event) -> None:
        self.task, self.flow = event, None

    def launch(self) -> tuple | None:
        """What launched the work this thread does now: the pool's task (its flow), else (an
        executable run inline) the innermost Execute open here."""
        if self.task is not None:
            if self.flow is None:
                stats = _stats(self.task)
                self.flow = stats.get("_c", False) if stats.get("_ct") == _POOL_FLOW else False
            return ("task", self.flow) if self.flow is not False else None
        for _end, what, ref, _inner in reversed(self.open):
            if what == "execute":
                return ("inline", ref)
        return None


class _Launches:
    """Which device ran an op that does not say (XLA's CPU runtime in JAX 0.4 and 0.6), from how
    XLA launched it, as the flows of the host's thread pool show:

        Execute (host) ─ its k-th Record ─▶ device k's part ─ a Record ─▶ the part's ops
                                            (ExecuteHelper,               (a pool thread)
                                            a pool thread)

    The k-th Record directly in an Execute launches the k-th of its executable's devices (the
    order of ``local_devices()``, ``jaxcompat.executable_devices``), as JAX 0.12's profile shows,
    whose ops say their device, and as each runtime's runs show (test_profile_trace.py checks
    both). An executable on one device may run its part, or its ops, inline in its Execute. A
    part whose inputs were not ready when it ran is launched later by whichever thread readied
    them (the previous run's last collective, a copy), and nothing in the profile ties that launch
    to its part: its ops' device is not known."""

    __slots__ = ("executes", "records")

    def __init__(self):
        self.executes: list[int] = []  # each Execute's Records so far (its devices)
        self.records: dict[int, tuple] = {}  # a Record's flow: ("execute", Execute, k) | ("task"|"inline", ...)

    def read(self, line, thread: _Thread, wanted: set[int]) -> dict[int, tuple | None]:
        """Note one host thread's Executes, parts and Records; the launch (``_Thread.launch``)
        of each of its events whose position is in ``wanted`` (ops without an ordinal)."""
        found = {}
        opened = thread.open
        for i, event in enumerate(line.events):
            name = event.name
            start = float(event.start_ns)
            while opened and opened[-1][0] <= start:
                opened.pop()
            if name.startswith("ThreadpoolListener::"):
                self.pool(thread, name, event, start)
                continue
            if _SKIP.match(name):
                continue
            end = start + float(event.duration_ns)
            if opened and end > opened[-1][3]:
                opened[-1][3] = end  # it may hold the Records after it
            if i in wanted:
                found[i] = thread.launch()
            elif "Executable::Execute" in name:
                self.opened(thread, name, start, end)
        return found

    def opened(self, thread: _Thread, name: str, start: float, end: float) -> None:
        """An event named "...Executable::Execute..." opens on ``thread``: an Execute or a part."""
        if _DEVICE_PART.search(name):
            thread.open.append([end, "part", thread.launch(), start])
        elif _LAUNCH.search(name):
            thread.open.append([end, "execute", len(self.executes), start])
            self.executes.append(0)

    def pool(self, thread: _Thread, name: str, event, start: float) -> None:
        """The thread pool's events: a task starts (StartRegion) or stops, or a Record: a task
        scheduled from what is open here, which matters directly in an Execute or a part."""
        if name == _START_REGION:
            thread.start_task(event)
        elif name == _STOP_REGION:
            thread.start_task(None)
        elif name == _RECORD and thread.open and thread.open[-1][3] <= start:
            _end, what, ref, _inner = thread.open[-1]
            stats = _stats(event)
            if stats.get("_pt") != _POOL_FLOW or "_p" not in stats:
                return
            if what == "execute":
                self.records[stats["_p"]] = ("execute", ref, self.executes[ref])
                self.executes[ref] += 1
            elif ref is not None:
                self.records[stats["_p"]] = ref

    def launched(self, launch: tuple | None) -> tuple[int, int, int] | None:
        """(the Execute, k, how many devices it launched) of the work ``launch`` names (a
        ``_Thread.launch``), or None where the profile does not show it."""
        for _hop in range(8):
            if launch is None:
                return None
            if launch[0] == "inline":  # a one-device executable's part, or its ops, in its Execute
                return (launch[1], 0, 1) if self.executes[launch[1]] == 0 else None
            launch = self.records.get(launch[1])
            if launch is not None and launch[0] == "execute":
                return launch[1], launch[2], self.executes[launch[1]]
        return None


class _Builder:
    def __init__(self, device_names: dict[int, str], use_ordinals: bool = True):
        self.device_names = device_names
        self.use_ordinals = use_ordinals  # False: every CPU op's device found from its launch (a test's)
        self.deadline: float | None = None  # time.monotonic() past which the build gives up (OutOfTime)
        self.pending: list[tuple[dict, int, int, object]] = []  # ops without an ordinal: (op, thread, position,
        # program id)
        self.thread_pids: dict[int, int] = {}  # host thread: the pid of its lane (ops of no known device)
        self.unknown = (0, 0)  # (runs on a device not known, runs whose ops have no ordinal)
        self.device_pids: dict[int, str] = {}  # pid: the device's lane name
        # (pid, row kind): [[the ends (ns) of the events open on the row, innermost last], lane]...
        self.rows: dict[tuple[int, str], list[list]] = {}
        self.lanes: dict[tuple[int, int], _Lane] = {}
        self.t0: float | None = None
        self.ops: list[dict] = []  # device ops, with their "device" and "start"/"end" in ns
        # The Python lane's longest MAX_PYTHON_EVENTS calls, a heap of (duration, n, name, start,
        # args) (a loop of calls records millions: only those kept become events), and how many.
        self.python: list[tuple] = []
        self.python_calls = 0
        self.names: dict[str, object] = {}  # what each event name is (_name_kind)
        self.clock_mark: float | None = None  # pylane.CLOCK_MARK's start
        self.modules: list[tuple[int, dict]] = []  # (pid, event): each executable's run on a device
        self.host: list[tuple[str, dict]] = []  # (row, event): dispatches and compilations

    # -- lanes ------------------------------------------------------------------------------------

    def device_pid(self, ordinal: int, name: str | None = None) -> int:
        pid = DEVICE_PID + ordinal
        if pid not in self.device_pids:
            self.device_pids[pid] = name or self.device_names.get(ordinal) or f"device {ordinal}"
        return pid

    def lane(self, pid: int, tid: int, name: str) -> _Lane:
        lane = self.lanes.get((pid, tid))
        if lane is None:
            lane = self.lanes[(pid, tid)] = _Lane(pid, tid, name)
        return lane

    def row(self, pid: int, kind: str, first_tid: int, start: float, end: float) -> _Lane:
        """The first row of ``kind`` in ``pid`` where an event from ``start`` to ``end`` (placed
        in time order) nests: after what is open there, or inside it. Events that overlap
        without nesting go on rows of their own, as a trace viewer nests only what nests."""
        rows = self.rows.setdefault((pid, kind), [])
        for slot in rows:
            open_ends = slot[0]
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if not open_ends or end <= open_ends[-1]:
                open_ends.append(end)
                return slot[1]
        if len(rows) >= MAX_ROWS:
            rows[-1][0][:] = [max([*rows[-1][0], end])]
            return rows[-1][1]
        n = len(rows)
        lane = self.lane(pid, first_tid + n, kind if n == 0 else f"{kind} {n + 1}")
        rows.append([[end], lane])
        return lane

    def x(self, name: str, cat: str, start: float, dur: float, args: dict) -> dict:
        self.t0 = start if self.t0 is None else min(self.t0, start)
        return {"ph": "X", "name": name, "cat": cat, "ts": start, "dur": dur, "args": args}

    # -- the host's threads: a CPU device's ops, executables, compilations -----------------------

    def host_line(self, line, thread: int) -> None:
        """One host thread: the Python frames JAX's tracer recorded there ("$file:line name"),
        the HLO ops it ran (each with its device's ordinal, or ``resolve`` finds it) and what
        nests in them, the executables it ran for a device, and XLA's compilations."""
        open_op: dict | None = None
        stack: list[tuple[float, bool]] = []  # Python's frames open here: (end, the snippet's)
        # What each name is, read once: a line's 80,000 events have a few thousand names, and
        # matching each event's against the patterns was a quarter of a build.
        names, pop = self.names, stack.pop
        for position, event in enumerate(line.events):
            if not position & 0x7FFF and self.deadline is not None and time.monotonic() > self.deadline:
                raise OutOfTime()
            name = event.name
            known = names.get(name)
            if known is None:
                known = names[name] = _name_kind(name)
            if known is _SKIPPED:
                continue
            start, dur = event.start_ns, event.duration_ns
            while stack and stack[-1][0] <= start:
                pop()
            if known is not _OTHER:  # a Python frame, or the snippet's own lane's clock mark
                self.python_frame(known, start, dur, stack)
                continue
            if open_op is not None and start < open_op["end"]:
                if start + dur <= open_op["end"] + 1:
                    cat = "wait" if _WAIT_NAMES.match(name) else "runtime"
                    open_op["children"].append(self.x(name, cat, start, dur, {}))
                    continue
            stats = _stats(event)
            if "hlo_op" in stats:
                if self.use_ordinals and "device_ordinal" in stats:
                    open_op = self.op(stats, start, dur, int(stats["device_ordinal"]))
                else:
                    open_op = self.op(stats, start, dur, None)
                    self.pending.append((open_op, thread, position, stats.get("program_id")))
                continue
            if _EXECUTE.search(name) and ("global_device_id" in stats or "device_ordinal" in stats):
                self.dispatch(stats, name, start, dur)
            elif _COMPILE.search(name) and dur >= 50_000:
                self.host.append(("XLA compile", self.x(name, "compile", start, dur, {})))
            elif stack and stack[-1][1]:  # what the snippet called straight into (a jitted function)
                self.python_call(name.removesuffix(" ()"), start, dur, {})

    def op(self, stats: dict, start: float, dur: float, ordinal: int | None, device: str | None = None) -> dict:
        """One op: on its device's lane (``ordinal``; None: not known yet, ``resolve``). Its
        "span": what one execution's ops on one device share (its run id), for the module event
        made of them; its "run": what the same execution's ops on every device share."""
        op_name, module = str(stats.get("hlo_op") or ""), str(stats.get("hlo_module") or "")
        kind = _KIND_OF_OP.get(module, {}).get(op_name) or name_kind(op_name)
        args = {"hlo_op": op_name, "hlo_module": module}
        run = stats.get("run_id")
        if run is not None:
            args["run_id"] = run
        op = {"event": self.x(op_name, kind, start, dur, args), "pid": None, "end": start + dur, "children": [],
              "span": run, "run": run}
        if ordinal is not None:
            op["pid"] = pid = self.device_pid(ordinal, device)
            args["device"] = self.device_pids[pid]
        self.ops.append(op)
        return op

    def resolve(self, lines: list, executables) -> None:
        """The device of each op that did not say it, from how it was launched (``_Launches``,
        reading the host's ``lines`` again) and ``executables`` ({program id: its devices'
        ordinals, in order}, asked for the modules launched); where the profile does not show it,
        the lane of the thread that ran the op. An execution whose every device is known is one
        "run" (for its collectives' waits)."""
        if not self.pending:
            return
        wanted: dict[int, set[int]] = defaultdict(set)
        for _op, thread, position, _program in self.pending:
            wanted[thread].add(position)
        launches, launch_of = _Launches(), {}
        for n, line in enumerate(lines):
            for position, launch in launches.read(line, _Thread(), wanted.get(n, set())).items():
                launch_of[(n, position)] = launch
        launched = {launch: launches.launched(launch) for launch in set(launch_of.values())}
        modules = {op["event"]["args"]["hlo_module"] for op, n, i, _p in self.pending if launched[launch_of[(n, i)]]}
        devices = {}
        if modules and executables is not None:
            try:
                devices = executables(modules)
            # A jaxlib without live_executables or hlo_modules, or a proto it cannot read: no
            # executable known, and the ops go on their threads' lanes.
            except (AttributeError, RuntimeError, ValueError, TypeError):
                devices = {}
        found: dict[int, set[int]] = defaultdict(set)  # Execute: the ordinals its ops were found on
        unknown = set()
        for op, thread, position, program in self.pending:
            launch = launch_of[(thread, position)]
            at = launched[launch]
            ordinals = devices.get(program) if at else None
            if op["span"] is None:
                op["span"] = launch  # no run id: one launch's ops are one execution's
            if ordinals is not None and len(ordinals) == at[2]:
                op["pid"] = self.device_pid(ordinals[at[1]])
                op["launch"] = at
                found[at[0]].add(ordinals[at[1]])
            else:
                op["pid"] = self.thread_pid(thread)
                unknown.add(launch if launch is not None else ("thread", thread))
            op["event"]["args"]["device"] = self.device_pids[op["pid"]]
        for op, _thread, _position, _program in self.pending:
            at = op.pop("launch", None)
            if at is not None and op["run"] is None and len(found[at[0]]) == at[2]:
                op["run"] = ("execute", at[0])
        self.unknown = (len(unknown), len({launch for launch in launch_of.values() if launch is not None} | unknown))

    def thread_pid(self, thread: int) -> int:
        """The lane of a host thread's ops whose device is not known."""
        pid = self.thread_pids.get(thread)
        if pid is None:
            pid = self.thread_pids[thread] = THREAD_PID + len(self.thread_pids) + 1
            self.device_pids[pid] = f"XLA thread {len(self.thread_pids)}"
        return pid

    def dispatch(self, stats: dict, name: str, start: float, dur: float) -> None:
        """The host's call that runs an executable on a device (PjRt's Execute): the host's side
        of the work, on the host's lane."""
        ordinal = int(stats.get("device_ordinal", stats.get("global_device_id", 0)))
        found = _EXECUTE.search(name)
        module = str(stats.get("name") or (found.group(1) if found and found.group(1) else name))
        device = self.device_names.get(ordinal, f"device {ordinal}")
        self.host.append(("XLA dispatch", self.x(module, "runtime", start, dur,
                                                 {"hlo_module": module, "device": device})))

    # -- a device's own plane (GPU, TPU) -----------------------------------------------------------

    def device_plane(self, plane) -> None:
        found = re.search(r"(\d+)$", plane.name)
        ordinal = int(found.group(1)) if found else len(self.device_pids)
        for line in plane.lines:
            lname = line.name
            for event in line.events:
                start, dur = float(event.start_ns), float(event.duration_ns)
                if "Modules" in lname:
                    pid = self.device_pid(ordinal, plane.name)
                    self.modules.append((pid, self.x(event.name, "module", start, dur,
                                                     {"hlo_module": event.name, "device": plane.name})))
                    continue
                stats = _stats(event)
                stats.setdefault("hlo_op", event.name)
                if "Ops" in lname:
                    self.op(stats, start, dur, ordinal, plane.name)

    # -- Python -------------------------------------------------------------------------------

    def python_frame(self, known, start: float, dur: float, stack: list) -> None:
        """One of JAX's Python tracer's frames (file, line, function, the snippet's), kept when it
        is the snippet's or one the snippet called; or the mark of the snippet's own lane's clock
        (pylane.CLOCK_MARK: where it is on this one's)."""
        if known is _CLOCK:
            self.clock_mark = start
            return
        mine = known[3]
        if mine or (stack and stack[-1][1]):
            self.python_call(known[2] if mine else f"{known[2]} ({known[0]})", start, dur,
                             {"file": known[0], "line": known[1]})
        stack.append((start + dur, mine))

    def python_lane(self, lane: dict) -> None:
        """The snippet's own Python lane (runner/pylane.py), on this profile's clock: each frame of
        the snippet's, and each call it made ("name (its file)")."""
        offset = pylane.clock_offset(self.clock_mark, lane.get("mark_ns"))
        if offset is None:
            return
        for name, file, line, start, end, mine in lane.get("calls") or ():
            where = str(file).rsplit("/", 1)[-1]
            own = mine or where == SNIPPET_FILENAME  # a frame of the snippet's, or a wrapper of one (jitted)
            self.python_call(str(name) if own else f"{name} ({where})", start + offset, max(end - start, 0),
                             {"file": where, "line": int(line)})
        self.python_calls += max(int(lane.get("count") or 0) - len(lane.get("calls") or ()), 0)

    def python_call(self, name: str, start: float, dur: float, args: dict) -> None:
        self.python_calls += 1
        item = (dur, self.python_calls, name, start, args)
        if len(self.python) < MAX_PYTHON_EVENTS:
            heapq.heappush(self.python, item)
        elif dur > self.python[0][0]:
            heapq.heapreplace(self.python, item)

    # -- the trace ------------------------------------------------------------------------------

    def place_ops(self, budget: int) -> int:
        """Device ops onto their rows, in time order, at most ``budget`` events with the module
        events made of them; the events kept. A device without a plane of its own (a CPU's)
        has its executables' runs made from their ops: one module event from an execution's
        (module, run id) first op to its last."""
        planed = {pid for pid, _ in self.modules}
        spans: dict[tuple, list] = {}
        self.ops.sort(key=lambda op: op["event"]["ts"])
        kept = 0
        for op in self.ops:
            event, args = op["event"], op["event"]["args"]
            key = (op["pid"], args["hlo_module"], op["span"])
            made = op["pid"] not in planed and op["span"] is not None
            size = 1 + len(op["children"]) + (made and key not in spans)
            if kept + size > budget:
                break
            if made:
                span = spans.setdefault(key, [event["ts"], op["end"]])
                span[1] = max(span[1], op["end"])
            lane = self.row(op["pid"], "XLA Ops", 1 + MAX_ROWS, event["ts"], op["end"])
            lane.events.append(event)
            lane.events.extend(op["children"])
            kept += size
        for (pid, module, _), (start, end) in spans.items():
            self.modules.append((pid, self.x(module, "module", start, end - start,
                                             {"hlo_module": module, "device": self.device_pids[pid]})))
        for pid, event in sorted(self.modules, key=lambda m: m[1]["ts"]):
            self.row(pid, "XLA Modules", 1, event["ts"], event["ts"] + event["dur"]).events.append(event)
        return kept

    def place_host(self) -> int:
        """XLA's dispatches and compilations onto the host's rows: the first MAX_HOST_EVENTS."""
        tids = {"XLA dispatch": 2, "XLA compile": 2 + MAX_ROWS}
        placed = sorted(self.host, key=lambda h: h[1]["ts"])[:MAX_HOST_EVENTS]
        for row, event in placed:
            self.row(HOST_PID, row, tids[row], event["ts"], event["ts"] + event["dur"]).events.append(event)
        return len(placed)

    def collective_waits(self) -> None:
        """Each collective's wait for its slowest peer: the same instruction of the same
        execution (module, op, run id) starts on every device taking part; a device that got
        there first waits until the last one does."""
        groups: dict[tuple, list[dict]] = defaultdict(list)
        for op in self.ops:
            event = op["event"]
            if event["cat"] == "collective" and op["run"] is not None:
                args = event["args"]
                groups[(args["hlo_module"], args["hlo_op"], op["run"])].append(event)
        for events in groups.values():
            if len(events) > 1:
                last = max(e["ts"] for e in events)
                for e in events:
                    e["args"]["wait_us"] = round((last - e["ts"]) / 1000, 3)

    def summary(self) -> list[dict]:
        """Per device: its span, busy time (ops' union), time per op kind, collective wait,
        top ops. The span is all devices' window, so a device idle while others work shows it."""
        by_pid: dict[int, list[dict]] = defaultdict(list)
        for op in self.ops:
            by_pid[op["pid"]].append(op["event"])
        if not by_pid:
            return []
        first = min(e["ts"] for events in by_pid.values() for e in events)
        last = max(e["ts"] + e["dur"] for events in by_pid.values() for e in events)
        out = []
        for pid in sorted(by_pid):
            events = sorted(by_pid[pid], key=lambda e: e["ts"])
            busy, end = 0.0, float("-inf")
            kinds: dict[str, float] = defaultdict(float)
            ops: dict[str, list] = {}
            wait = 0.0
            for e in events:
                s, f = e["ts"], e["ts"] + e["dur"]
                busy += max(0.0, f - max(s, end))
                end = max(end, f)
                kinds[e["cat"]] += e["dur"]
                wait += e["args"].get("wait_us", 0.0) * 1000
                row = ops.setdefault(e["name"], [e["name"], e["cat"], 0, 0.0])
                row[2] += 1
                row[3] += e["dur"]
            top = sorted(ops.values(), key=lambda r: -r[3])[:TOP_OPS]
            by_time = sorted(kinds.items(), key=lambda kv: -kv[1])
            out.append({"device": self.device_pids[pid], "span_us": _us(last - first), "busy_us": _us(busy),
                        "wait_us": _us(wait), "kinds": {k: _us(v) for k, v in by_time},
                        "ops": [[r[0], r[1], r[2], _us(r[3])] for r in top]})
        return out


def _us(ns: float) -> float:
    return round(ns / 1000, 3)


def build_trace(space, device_names: dict[int, str] | None = None, jax_version: str = "",
                platform: str = "", executables=None, use_ordinals: bool = True,
                deadline: float | None = None, python_lane: dict | None = None) -> tuple[dict, dict]:
    """(the Chrome trace, what the ``profile_trace`` message says of it) from a profile's planes
    (jaxlib's ProfileData, or runner/xspace.py's reading of an older JAX's XSpace).
    ``executables(module names)``: {program id: its devices' ordinals}, for the ops that do not
    say their device (``jaxcompat.executable_devices``); ``use_ordinals=False`` finds every op's
    device so, whether or not it says it (to check that against what it says). Past ``deadline``
    (time.monotonic()), between two of the host's threads, OutOfTime."""
    b = _Builder(device_names or {}, use_ordinals)
    b.deadline = deadline
    for plane in space.planes:
        if plane.name.startswith("/device:") and not plane.name.startswith("/device:CUSTOM"):
            b.device_plane(plane)
        elif plane.name == "/host:CPU":
            host = list(plane.lines)
            for n, line in enumerate(host):
                b.host_line(line, n)
            b.resolve(host, executables)
    if python_lane:
        b.python_lane(python_lane)
    b.collective_waits()
    summary = b.summary()
    # The bound's share of each: the Python the snippet's author wrote, then the host's, then the
    # devices' (the largest, and the summary above already counts all of theirs).
    python = sorted(b.python, key=lambda p: p[3])
    lane = b.lane(HOST_PID, 1, "Python") if python else None
    for dur, _, name, start, args in python:
        lane.events.append(b.x(name, "python", start, dur, args))
    host = b.place_host()
    kept_device = b.place_ops(MAX_EVENTS - len(python) - host - len(b.modules))
    cuts = []
    if b.unknown[0]:
        cuts.append(protocol.Templated(UNKNOWN_DEVICE, unknown=f"{b.unknown[0]:,}", runs=f"{b.unknown[1]:,}"))
    all_device = sum(1 + len(op["children"]) for op in b.ops)
    if kept_device < all_device:
        cuts.append(protocol.Templated(DEVICE_OPS_CUT, events=f"{all_device:,}", kept=f"{kept_device:,}"))
    if host < len(b.host):
        cuts.append(protocol.Templated(HOST_CUT, events=f"{len(b.host):,}", kept=f"{host:,}"))
    if len(python) < b.python_calls:
        cuts.append(protocol.Templated(PYTHON_CUT, calls=f"{b.python_calls:,}", kept=f"{len(python):,}"))
    trace, info = _assemble(b, summary, "; ".join(cuts), jax_version or jaxcompat.jax_version(),
                            platform or jaxcompat.platform())
    info["cut_parts"] = cuts
    if cuts:
        trace["otherData"]["cut_parts"] = protocol.parts_of(cuts)
    return trace, info


def _assemble(b: _Builder, summary: list[dict], cut: str, jax_version: str, platform: str) -> tuple[dict, dict]:
    t0 = b.t0 or 0.0
    meta: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": HOST_PID, "args": {"name": "Host"}},
        {"ph": "M", "name": "process_sort_index", "pid": HOST_PID, "args": {"sort_index": 0}},
    ]
    for pid, name in sorted(b.device_pids.items()):
        label = "device" if pid < THREAD_PID else "host thread, device not known"
        meta += [{"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}},
                 {"ph": "M", "name": "process_labels", "pid": pid, "args": {"labels": label}},
                 {"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}}]
    timed: list[dict] = []
    for (pid, tid), lane in sorted(b.lanes.items()):
        if not lane.events:
            continue
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": lane.name}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
        for event in lane.events:
            event["pid"], event["tid"] = pid, tid
            event["ts"] = round((event["ts"] - t0) / 1000, 3)
            event["dur"] = round(event["dur"] / 1000, 3)
            timed.append(event)
    trace = {"displayTimeUnit": "ns",
             "otherData": {"producer": "JAX Playground", "format": "1", "jax_version": jax_version,
                           "platform": platform, "cut": cut},
             "traceEvents": meta + timed}
    lanes = ["Host"] + [name for _, name in sorted(b.device_pids.items())]
    devices = sum(pid < THREAD_PID for pid in b.device_pids)
    return trace, {"events": len(timed), "lanes": lanes, "devices": devices, "summary": summary, "cut": cut}
