"""Drive one runner through one run: send the code, relay what it produces, enforce the wall
clock, the output cap and cancellation, and decide the terminal status.

    supervisor (a thread of the executor worker)
      ├─ stdin ──────────▶ runner     one request line (protocol.request): {"op": "run", "code",
      │                               "options", "stdin"?, "wall_s"}; then, while it runs, the compile
      │                               cache's answers (compilecache.RunLookups)
      ├─ fd 1, fd 2 ◀───── runner     the snippet's raw output → stdout/stderr events
      └─ event fd ◀─────── runner     JSON lines, each to its family's handler (``handlers``):
                                      the run's events → its log; "exit"; a graded run's messages
                                      → graded_run.GradedRun; the compile cache's → the executor

A profiled run ends when its code does: the runner says "ended" before it stops the profiler, and
with ``end_early`` the run's ``finished`` goes out then (``on_ended``), its trace's URL answering
202 until the node has built it; the runner is followed on, for its raw profile alone, until it
exits (PROFILE_STOP_S at most).

The runner is untrusted once user code runs in it: its events are checked against
``RUNNER_EVENT_TYPES``, malformed lines are dropped, and the terminal status is decided here from
what the supervisor itself saw (its own kill reason, the sandbox's limit report, the exit code).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import os
import select
import signal
import subprocess
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from collections.abc import Callable

from . import events as ev
from .compilecache import RunLookups
from .graded_run import GradedRun, write_all
from .runner import explain, notebook, profile, protocol, recompile
from .runner.compilecache import MAX_REPORTED
from .sandbox import Launcher, Limits, devices, human_bytes

READ_CHUNK = 64 * 1024
# Structured events (jaxpr and HLO dumps) are bounded apart from the user's output.
EVENT_BYTES_CAP = 16 * 1024**2
TICK_S = 0.1
COALESCE_QUIET_S = 0.005
COALESCE_MAX_S = 0.05
# A line left open (a prompt, a progress bar) waits longer for its end before it goes alone: a
# print()'s text and its newline, written apart, stay one event on a loaded machine too.
OPEN_LINE_MAX_S = 0.15
# One stdout/stderr event carries at most this much text; more is sent as several events, so
# every event fits a websocket message and a database row comfortably.
OUTPUT_EVENT_MAX_CHARS = 64 * 1024
# While this much output waits to be sent (events per second spent), the pipes are not read.
PENDING_MAX_CHARS = 4 * OUTPUT_EVENT_MAX_CHARS
# Malformed runner events are noted on stderr, each kind of fault once, in at most this many lines.
MAX_PROTOCOL_NOTES = 5
# Runner event lines handled between two looks at the wall clock and cancel.
LINES_PER_PUMP = 256
# After the end (exit or kill), how long what is still in the pipes is read.
DRAIN_S = 0.5
# After a profiled run's "ended" (its ``finished`` out), how long its runner has to stop the
# profiler and hand over what it recorded, within the run's wall clock; then it is stopped as a
# run at its wall clock is, and its trace says why there is none.
PROFILE_STOP_S = 15.0


@dataclass
class Runner:
    """A started runner process and what it told us when it became ready."""

    proc: subprocess.Popen
    slot: int
    info: dict = field(default_factory=dict)
    event_buffer: bytes = b""
    started_at: float = field(default_factory=time.monotonic)
    closed: bool = False
    # Its backend, while it waits in the pool: "cold", "warming" (asked to warm up, not done)
    # or "warm" (executor/pool.py).
    warmth: str = "cold"
    warm_sent: float = 0.0

    @property
    def lean(self) -> bool:
        """Forked from the lean template (numpy, no jax): for code that does not use jax."""
        return self.info.get("lean") is True

    @property
    def event_fd(self) -> int:
        return self.proc.event_fd

    def alive(self) -> bool:
        return self.proc.returncode is None and self.proc.poll() is None

    def close(self) -> None:
        """Close our ends of its pipes, once (a second os.close could hit a reused fd)."""
        if self.closed:
            return
        self.closed = True
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if f:
                    f.close()
            except OSError:
                pass
        os.close(self.event_fd)
        self.proc.release()


def discard(runner: Runner, launcher) -> None:
    """End a runner that will run no (more) snippets: kill what is left of its sandbox, reap
    it, close our ends of its pipes."""
    try:
        launcher.stop(runner.proc)
        if runner.proc.returncode is None:
            try:
                runner.proc.wait(timeout=5)  # reaped before its cgroup goes: a zombie keeps it busy
            except subprocess.TimeoutExpired:
                pass  # cleanup kills it again; the kernel reaps it with us at worst
        launcher.cleanup(runner.proc)
    finally:
        runner.close()


class RunnerStartError(RuntimeError):
    """A runner did not become ready: ``code`` names the cause where its output shows one
    (sandbox/devices.py's START_FAILURES: the device is held, no metadata server, no device node),
    else "timeout" or "exited"; the message says it for an operator, with what the runner said."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


def _stderr_so_far(runner: Runner, wait_s: float = 0.0) -> str:
    """What the runner wrote on stderr so far, without blocking for more than ``wait_s``."""
    out = b""
    try:
        while len(out) < 65536 and select.select([runner.proc.stderr], [], [], wait_s)[0]:
            chunk = os.read(runner.proc.stderr.fileno(), READ_CHUNK)
            if not chunk:
                break
            out += chunk
            wait_s = 0.0
    except (OSError, ValueError):
        pass
    return out.decode(errors="replace")


def start_error(runner: Runner, what: str, said: str) -> RunnerStartError:
    """The error for a runner that did not start, named by its cause where its output shows one."""
    known = devices.start_failure(said)
    tail = said.strip()[-500:]
    if known is not None:
        return RunnerStartError(known[0], f"{what}: {known[1]}" + (f" [{tail[-300:]}]" if tail else ""))
    return RunnerStartError("timeout" if "not ready" in what else "exited", f"{what}: {tail}" if tail else what)


def wait_ready(runner: Runner, timeout: float) -> dict:
    """Read the runner's first event, "ready", and keep whatever followed it. Raises
    RunnerStartError, with the cause, when it exits first or is not ready within ``timeout``."""
    deadline = time.monotonic() + timeout
    buf = runner.event_buffer
    while b"\n" not in buf:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise start_error(runner, f"runner not ready after {timeout:g} s", _stderr_so_far(runner))
        r, _, _ = select.select([runner.event_fd], [], [], remaining)
        if r:
            chunk = os.read(runner.event_fd, READ_CHUNK)
            if not chunk:
                raise start_error(runner, "runner exited during warm-up", _stderr_so_far(runner, 1.0))
            buf += chunk
    line, _, rest = buf.partition(b"\n")
    message = json.loads(line)
    if message.get("type") != "ready":
        raise RuntimeError(f"runner sent {message.get('type')!r} before ready")
    runner.event_buffer = rest
    # Whatever jax printed while warming up (platform warnings) is not the snippet's output.
    for stream in (runner.proc.stdout, runner.proc.stderr):
        while select.select([stream], [], [], 0)[0] and os.read(stream.fileno(), READ_CHUNK):
            pass
    runner.info = {k: v for k, v in message.items() if k != "type"}
    return runner.info


# Messages of a graded run on the student's event pipe (or, the checker's, forged there).
GRADED_RUN_MESSAGES = frozenset({"student_done", "answer"}) | protocol.CHECKER_ONLY
# The compile cache's messages (executor/compilecache.py): for the executor, never the run's log.
COMPILE_MESSAGES = frozenset({"compiled_modules", "compiled_entry"})
# Lines on the event pipe that are no event (not JSON, not an object, no type, a type the runner
# may not send, fields that cannot be repaired, lookups past the run's answers): a runner never
# writes one, so past this many the run is ended rather than have the executor parse its junk.
MAX_JUNK_LINES = 1000
# Events the code sends while the checks call it are not the run's and are dropped (a compiled
# function's, say); past this many, or EVENT_BYTES_CAP of them, the run is ended.
MAX_LINES_WHILE_CHECKING = 10_000


# A profile_trace message: its trace in base64, and the rest of it.
PROFILE_MESSAGE_BYTES = max(protocol.PROFILE_MAX_BYTES, protocol.PROFILE_MAX_BUNDLE_BYTES) * 4 // 3 + 1024**2


# A trace's JSON compresses 8 to 15 times; past this, what inflates is padding, and whoever
# fetches it (a page, the web side for a client without gzip) would pay for it.
PROFILE_MAX_RATIO = 40
# What the profile event may say of a node's devices: their lanes and summary rows, each row's top
# ops and op kinds, and any name in them.
PROFILE_MAX_LANES = 257
PROFILE_MAX_OPS = 20
PROFILE_MAX_KINDS = 24
PROFILE_MAX_NAME = 200


def bounded_profile(fields: dict) -> dict:
    """The profile event's fields (rebuilt against the protocol), held to what a node's devices
    can make of them: the runner sends them, so the code can too."""
    event = {k: v for k, v in fields.items() if v is not None}
    if "lanes" in event:
        event["lanes"] = [lane[:PROFILE_MAX_NAME] for lane in event["lanes"][:PROFILE_MAX_LANES]]
    if "summary" in event:
        event["summary"] = [_summary_row(row) for row in event["summary"][:PROFILE_MAX_LANES - 1]
                            if isinstance(row, dict)]
    for key in ("cut", "error"):
        if key in event:
            event[key] = event[key][:1000]
    # Each of cut and error goes with the sentences it was made from only when they make it.
    for key, makes in (("cut", lambda said: "; ".join(said) == event.get("cut")),
                       ("error", lambda said: said == [event.get("error")])):
        kept = _vouched(event.pop(f"{key}_parts", None), makes)
        if kept is not None:
            event[f"{key}_parts"] = kept
    return event


def _summary_row(row: dict) -> dict:
    def number(value) -> float | None:
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    kinds = row.get("kinds") if isinstance(row.get("kinds"), dict) else {}
    ops = row.get("ops") if isinstance(row.get("ops"), list) else []
    return {
        "device": str(row.get("device", ""))[:PROFILE_MAX_NAME],
        **{k: number(row.get(k)) for k in ("span_us", "busy_us", "wait_us")},
        "kinds": {str(k)[:PROFILE_MAX_NAME]: number(v) for k, v in list(kinds.items())[:PROFILE_MAX_KINDS]},
        "ops": [[str(op[0])[:PROFILE_MAX_NAME], str(op[1])[:PROFILE_MAX_NAME], number(op[2]), number(op[3])]
                for op in ops[:PROFILE_MAX_OPS] if isinstance(op, list) and len(op) == 4],
    }


def check_bundle(data: str) -> tuple[bytes | None, str | None]:
    """(a raw profile's bytes, None) or (None, why it is refused): base64 of at most
    PROFILE_MAX_BUNDLE_BYTES. What is inside is read only by executor/tracebuild.py's process."""
    try:
        bundle = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None, "the raw profile was not base64"
    if len(bundle) > protocol.PROFILE_MAX_BUNDLE_BYTES:
        return None, f"the raw profile was over {human_bytes(protocol.PROFILE_MAX_BUNDLE_BYTES)} compressed"
    return bundle, None


def check_trace(data: str) -> tuple[bytes | None, str | None]:
    """(the gzipped trace, None), or (None, why it is refused): base64 of one whole gzip stream,
    at most PROFILE_MAX_BYTES, that inflates to at most PROFILE_MAX_RAW_BYTES and at most
    PROFILE_MAX_RATIO times itself, of a JSON object's text. Inflated in steps, so that a small
    bomb costs the node no more than the bound."""
    try:
        trace = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None, "the trace was not base64"
    if len(trace) > protocol.PROFILE_MAX_BYTES:
        return None, f"the trace was over {human_bytes(protocol.PROFILE_MAX_BYTES)} compressed"
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    size, first, last, rest = 0, b"", b"", trace
    bound = min(protocol.PROFILE_MAX_RAW_BYTES, max(len(trace), 4096) * PROFILE_MAX_RATIO)
    try:
        while rest and not inflate.eof:
            chunk = inflate.decompress(rest, 1024**2)
            rest = inflate.unconsumed_tail
            size += len(chunk)
            if size > bound:
                return None, (f"the trace was over {human_bytes(protocol.PROFILE_MAX_RAW_BYTES)} uncompressed"
                              if bound == protocol.PROFILE_MAX_RAW_BYTES else
                              f"the trace inflated over {PROFILE_MAX_RATIO} times its size, as no trace does")
            first = first or chunk.lstrip()[:1]
            last = chunk.rstrip()[-1:] or last
    except zlib.error:
        return None, "the trace was not gzip"
    if not inflate.eof or inflate.unused_data or (first, last) != (b"{", b"}"):
        return None, "the trace was not one gzipped JSON object"
    return trace, None


# The sentences an error's explanation may be made from (runner/explain.py).
_EXPLANATIONS = frozenset(explain.TEMPLATES)


def checked_explanation(fields: dict, problems: protocol.Problems) -> dict:
    """An error event's explanation goes with the template and args it was made from, which a page
    fills in its reader's language: it keeps them only when the template is one of the runner's,
    the args are exactly its placeholders, each a number or a short text, and they make the very
    explanation sent. Else the page shows the explanation as it came."""
    template, args = fields.pop("explanation_template", None), fields.pop("explanation_args", None)
    if template is None and args is None:
        return fields
    if (template in _EXPLANATIONS and isinstance(args, dict) and set(args) == protocol.placeholders(template)
            and all(map(_plain_arg, args.values())) and fields.get("explanation") == template.format(**args)):
        return {**fields, "explanation_template": template, "explanation_args": args}
    problems.add("error: an explanation_template that is not the runner's, or whose args do not make the "
                 "explanation (dropped)")
    return fields


# The sentences a compilation's reason and warning, a measurement's notes and what a profile says
# of its trace may be made from (runner/recompile.py, runner/notebook.py, runner/profile.py).
_RUNNER_SENTENCES = frozenset((*recompile.TEMPLATES, *notebook.TEMPLATES, *profile.TEMPLATES))


def _said(part, depth: int = 0) -> str | None:
    """A part's sentence ({"template", "args"}, an arg a number, a short text or a part of its
    own) when its template is the runner's and its args exactly its placeholders; else None."""
    template, args = (part.get("template"), part.get("args")) if isinstance(part, dict) else (None, None)
    if not (template in _RUNNER_SENTENCES and isinstance(args, dict) and set(args) == protocol.placeholders(template)):
        return None
    filled = {}
    for name, value in args.items():
        filled[name] = _said(value, depth + 1) if isinstance(value, dict) and depth < 2 else \
            (value if _plain_arg(value) else None)
        if filled[name] is None:
            return None
    return template.format(**filled)


def _vouched(parts, makes: Callable[[list[str]], bool]) -> list[dict] | None:
    """The parts as a page gets them ([{"template", "args"}]) when every one is the runner's and
    their sentences make what was sent (``makes``); else None."""
    if not isinstance(parts, list) or not parts:
        return None
    said = [_said(part) for part in parts]
    if None in said or not makes(said):
        return None
    return [{"template": part["template"], "args": part["args"]} for part in parts]


def checked_recompile_parts(fields: dict, problems: protocol.Problems) -> dict:
    """A compiled event's reason and warning go with the sentences they were made from (which a page
    says in its reader's language) only when those are the runner's and make the English sent."""
    fields, dropped = dict(fields), False
    recompiled = fields.get("recompile")
    if isinstance(recompiled, dict) and "reason_parts" in recompiled:
        recompiled = fields["recompile"] = dict(recompiled)
        parts = recompiled.pop("reason_parts")
        kept = _vouched(parts, lambda said: recompiled.get("reason") == recompile.COMPILED_AGAIN.format(
            name=fields.get("name"), count=recompiled.get("count"), reasons="; ".join(said)))
        if kept is not None:
            recompiled["reason_parts"] = kept
        dropped = kept is None and parts is not None
    if "warning_parts" in fields:
        parts = fields.pop("warning_parts")
        kept = _vouched(parts, lambda said: fields.get("warning") == " ".join(said))
        if kept is not None:
            fields["warning_parts"] = kept
        dropped = dropped or (kept is None and parts is not None)
    if dropped:
        problems.add("compiled: reason_parts or warning_parts that are not the runner's, or that do not make "
                     "the English sent (dropped)")
    return fields


def checked_notes_parts(fields: dict, problems: protocol.Problems) -> dict:
    """A measurement's notes go with the sentences each was made from only when those are the
    runner's and make each note sent."""
    if "notes_parts" not in fields:
        return fields
    fields = dict(fields)
    parts, notes = fields.pop("notes_parts"), fields.get("notes")
    kept = None
    if isinstance(parts, list) and isinstance(notes, list) and len(parts) == len(notes):
        kept = [_vouched(note_parts, lambda said, note=note: " ".join(said) == note)
                for note_parts, note in zip(parts, notes)]
    if kept is not None and None not in kept:
        fields["notes_parts"] = kept
    elif parts is not None:
        problems.add("timing: notes_parts that are not the runner's, or that do not make the notes sent (dropped)")
    return fields


def _plain_arg(value) -> bool:
    if isinstance(value, str):
        return len(value) <= protocol.EXPLANATION_ARG_MAX_CHARS
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class _Kill(Exception):
    def __init__(self, status: str, message: str):
        self.status, self.message = status, message


def _ignore(type_: str, message: dict, line: bytes, draining: bool) -> None:
    """A message that means nothing to the run."""


def run_request(code: str, options: dict | None = None, stdin: str = "") -> dict:
    """A snippet's request, as ``supervise`` takes it: its code, its options and, when it has one,
    its standard input (which the runner gives the snippet as ``sys.stdin``; runner/main.py)."""
    return {"op": "run", "code": code, "options": options or {}, **({"stdin": stdin} if stdin else {})}


def supervise(
    runner: Runner,
    launcher: Launcher,
    request: dict,
    limits: Limits,
    emit: Callable[..., None],
    *,
    should_cancel: Callable[[], bool] = lambda: False,
    tick: Callable[[], None] = lambda: None,
    tick_every_s: float = 0.2,
    grading: GradedRun | None = None,
    on_message: Callable[[str, dict], None] | None = None,
    lookup: Callable[[str], dict] | None = None,
    keep_profile: Callable[[bytes], str | None] | None = None,
    end_early: Callable[[dict], None] | None = None,
) -> dict:
    """Run ``request`` on ``runner`` and return the fields of the ``finished`` event.

    ``request`` is the fields of the runner's request (protocol.RUNNER_REQUESTS) and its "op",
    "run" unless it says (``run_request``: a snippet); the supervisor adds the run's wall
    clock, and "graded" for a graded run. ``emit(type, **fields)`` is called for each event, in
    order, from this thread. With ``grading``, the run is graded: once the student's code ended,
    its runner answers the checker's questions (executor/graded_run.py), and
    ``grading.finish(finished)`` is its result.
    ``on_message(type, fields)`` gets the compile cache's messages (COMPILE_MESSAGES), and
    ``lookup(key)`` answers the runner's ``compile_lookup`` (CompileCache.lookups, through
    compilecache.RunLookups). ``keep_profile(trace)`` keeps a profiled run's trace (gzipped
    bytes, checked here) and answers its URL (``on_profile``); one that can build a raw profile
    after the run (``reserve``, ``give``, ``build``, ``fail``: executor/profiles.py) lets a profiled run end
    at its code's end, with ``end_early(finished)`` called then, from this thread: the fields
    returned are the same, and are not to be logged twice (``on_ended``).
    """
    return Supervision(runner, launcher, limits, emit, should_cancel=should_cancel, tick=tick,
                       tick_every_s=tick_every_s, grading=grading, on_message=on_message,
                       lookup=lookup, keep_profile=keep_profile, end_early=end_early).run(request)


class Supervision:
    """One run on one runner: what it has sent, what waits to be sent, and how it ended. The
    end is decided by ``decide_status``, a pure function of what was seen.

    Output is coalesced: a print() is several writes, and a tight loop of prints would
    otherwise become thousands of one-byte events. Pending text (stdout and stderr segments, in
    the order they came) is sent once output has been quiet for COALESCE_QUIET_S at the end of a
    line, after COALESCE_MAX_S (OPEN_LINE_MAX_S for a line left open), or before any structured
    event, in events of at most OUTPUT_EVENT_MAX_CHARS, and never faster than the run's events per
    second: meanwhile it keeps coalescing, and past PENDING_MAX_CHARS the pipes are not read, so
    the snippet waits.
    """

    def __init__(self, runner: Runner, launcher: Launcher, limits: Limits, emit: Callable[..., None], *,
                 should_cancel: Callable[[], bool], tick: Callable[[], None], tick_every_s: float,
                 grading: GradedRun | None = None, on_message: Callable[[str, dict], None] | None = None,
                 lookup: Callable[[str], dict] | None = None,
                 keep_profile: Callable[[bytes], str | None] | None = None,
                 end_early: Callable[[dict], None] | None = None):
        self.grading = grading
        self.on_message = on_message
        self.keep_profile = keep_profile
        self.end_early = end_early
        # The ``finished`` fields sent at a profiled run's "ended" (``on_ended``); from then on
        # nothing more is logged, and the runner is followed for its raw profile alone.
        self.early: dict | None = None
        self.profile_kept = False  # after the early end: its raw profile was handed to the keeper
        self.wants_profile = False  # the run asked for one (options.profile)
        self.profiled = False  # a run keeps one trace
        # A profiled run's events may weigh its trace more (``send_request``).
        self.event_bytes_cap = EVENT_BYTES_CAP
        self.lookups = RunLookups(lookup, self.write_student)
        # What each of the runner's messages that is no event of the run goes to, by its type;
        # any other type is an event of the run (``on_event``).
        self.handlers: dict[str, Callable[[str, dict, bytes, bool], None]] = {
            "exit": self.on_exit,
            "ended": self.on_ended,
            "warmed": _ignore,  # the pool asked for a warm-up that ended after the run began: not the run's
            "compile_lookup": self.on_lookup,
            **dict.fromkeys(GRADED_RUN_MESSAGES, self.on_graded_message),
            **dict.fromkeys(COMPILE_MESSAGES, self.on_compile_message),
            "profile_trace": self.on_profile,
        }
        self.junk_lines = 0
        self.lines_while_checking = self.bytes_while_checking = 0
        self.deadline = 0.0
        self.stop_requested = False
        self.runner, self.proc, self.launcher, self.limits = runner, runner.proc, launcher, limits
        self.emit, self.should_cancel, self.tick, self.tick_every_s = emit, should_cancel, tick, tick_every_s
        self.fds = {self.proc.stdout.fileno(): ev.STDOUT, self.proc.stderr.fileno(): ev.STDERR,
                    runner.event_fd: "event"}
        self.decoders = {
            ev.STDOUT: codecs.getincrementaldecoder("utf-8")(errors="replace"),
            ev.STDERR: codecs.getincrementaldecoder("utf-8")(errors="replace"),
        }
        self.output_bytes = 0
        self.event_bytes = 0
        self.logged_bytes = 0  # of the lines that became the run's events
        self.runner_exit: str | None = None
        # What the runner said it used, with its "exit" (cpu_ms, host_peak_kb, device_peak_bytes).
        self.runner_usage: dict = {}
        self.truncated = False
        self.budget = _Budget(limits.events_per_s, limits.events)
        self.problems = protocol.Problems()
        self.notes = 0
        self.event_buffer = bytearray(runner.event_buffer)
        self.event_lines: deque[bytes] = deque()
        self.pending: list[list] = []  # [kind, [texts], chars]
        self.since = self.last = 0.0  # when pending output began, when it last grew
        self.pending_chars = 0
        self.exit_info: tuple[int, float, int] | None = None
        self.t0 = 0.0  # when the request went (the run's wall clock counts from it)
        self.cpu_at_start: float | None = None

    # -- sending ---------------------------------------------------------------------------------

    def send(self, type_: str, *, draining: bool = False, **fields) -> None:
        """Every event of the run but ``finished`` goes out through here, counted. One slot is
        kept for ``finished``; while draining after the end, what does not fit is dropped. After
        an early end (``on_ended``) the run's log is closed: nothing is sent."""
        if self.early is not None:
            return
        if self.budget.count >= self.limits.events - 1:
            self.truncated = True
            if draining:
                return
            raise _Kill(ev.LIMIT_EXCEEDED, ev.ended("events", events=self.limits.events))
        self.budget.take()
        self.emit(type_, **fields)

    def flush_output(self, draining: bool = False) -> bool:
        """Send pending output as the budget allows; True when none is left."""
        pending = self.pending
        while pending:
            kind, parts, _ = pending[0]
            text = "".join(parts)
            while text:
                if not draining and not self.budget.available():
                    pending[0][1:] = [[text], len(text)]
                    self.pending_chars = sum(seg[2] for seg in pending)
                    return False
                piece, text = text[:OUTPUT_EVENT_MAX_CHARS], text[OUTPUT_EVENT_MAX_CHARS:]
                self.send(kind, draining=draining, text=piece)
            pending.pop(0)
        self.since, self.pending_chars = 0.0, 0
        return True

    def line_ended(self) -> bool:
        """Whether pending output ends a line: print() writes its text and its newline apart,
        and a pause between the two (a loaded machine) would otherwise split one line in two
        events. A line left open (a prompt, a progress bar) still goes after OPEN_LINE_MAX_S."""
        return self.pending[-1][1][-1].endswith(("\n", "\r"))

    # -- receiving -------------------------------------------------------------------------------

    def on_output(self, kind: str, data: bytes) -> None:
        allowed = self.limits.output_bytes - self.output_bytes
        over = len(data) > allowed
        if over:
            data = data[: max(allowed, 0)]
        self.output_bytes += len(data)
        text = self.decoders[kind].decode(data)
        if text and self.checking:
            self.grading.add_log(text)  # output while the checks call the code: the instructor's alone
            text = ""
        if text:
            if self.pending and self.pending[-1][0] == kind:
                self.pending[-1][1].append(text)
                self.pending[-1][2] += len(text)
            else:
                self.pending.append([kind, [text], len(text)])
            self.pending_chars += len(text)
            now = time.monotonic()
            self.last = now
            if not self.since:
                self.since = now
        if over:
            self.truncated = True
            raise _Kill(ev.LIMIT_EXCEEDED, ev.ended("output", size=human_bytes(self.limits.output_bytes)))

    def on_event_bytes(self, data: bytes) -> None:
        if self.checking:
            # Answers to the checks (arrays) are bounded one by one, not by the run's event budget.
            if len(self.event_buffer) + len(data) > protocol.ANSWER_MAX_BYTES:
                raise _Kill(ev.LIMIT_EXCEEDED, ev.ended("answer_size", size=human_bytes(protocol.ANSWER_MAX_BYTES)))
        else:
            self.event_bytes += len(data)
            if self.event_bytes > self.event_bytes_cap:
                raise _Kill(ev.LIMIT_EXCEEDED, ev.ended("event_bytes", size=human_bytes(self.event_bytes_cap)))
        # A line's pieces are gathered, and split only once its end has come: a profile's line of
        # tens of megabytes, read 64 KiB at a time, is not copied and scanned again for each.
        self.event_buffer += data
        if b"\n" not in data:
            return
        *lines, rest = self.event_buffer.split(b"\n")
        self.event_buffer = bytearray(rest)
        self.event_lines.extend(bytes(line) for line in lines if line.strip())

    def note_problems(self, before: int) -> None:
        """One stderr line for what one runner message got wrong; at most MAX_PROTOCOL_NOTES."""
        new = self.problems.seen[before:]
        if new and self.notes < MAX_PROTOCOL_NOTES:
            self.notes += 1
            self.send(ev.STDERR, draining=True,
                      text=f"[playground] an event from the run was not valid and was repaired or dropped: "
                           f"{'; '.join(new)}\n")

    def drop(self, problem: str | None = None) -> None:
        """A line that is no event: said once (the first MAX_PROBLEMS kinds), and counted
        towards MAX_JUNK_LINES."""
        if problem:
            self.problems.add(problem)
        self.junk_lines += 1

    def handle_event_line(self, line: bytes, draining: bool = False) -> None:
        """One line of the runner's event pipe, to its type's handler (``handlers``), else an
        event of the run's (``on_event``)."""
        before = len(self.problems.seen)
        message = self.parse(line)
        if message is not None:
            type_ = message.pop("type", None)
            message.pop("seq", None)
            if isinstance(type_, str):
                self.handlers.get(type_, self.on_event)(type_, message, line, draining)
            else:
                self.drop("an event whose type is not a string (dropped)")
        self.note_problems(before)
        if self.junk_lines > MAX_JUNK_LINES and not draining:
            raise _Kill(ev.LIMIT_EXCEEDED, ev.ended("junk_lines", lines=MAX_JUNK_LINES))

    def parse(self, line: bytes) -> dict | None:
        """The line's JSON object; None, dropped as junk, for anything else (``null`` aside)."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            self.drop("a line that is not JSON (dropped)")
            return None
        if message is not None and not isinstance(message, dict):
            self.drop("an event that is not a JSON object (dropped)")
        return message if isinstance(message, dict) else None

    def on_event(self, type_: str, message: dict, line: bytes, draining: bool) -> None:
        """An event for the run's log, rebuilt against the protocol. What the code compiled or
        displayed while the checks called it is not the run's: counted, and dropped."""
        if self.checking:
            self.lines_while_checking += 1
            self.bytes_while_checking += len(line)
            if (self.lines_while_checking > MAX_LINES_WHILE_CHECKING
                    or self.bytes_while_checking > EVENT_BYTES_CAP) and not draining:
                raise _Kill(ev.LIMIT_EXCEEDED, ev.ended("while_checking", events=MAX_LINES_WHILE_CHECKING,
                                                        size=human_bytes(EVENT_BYTES_CAP)))
        elif type_ not in protocol.RUNNER_EVENT_TYPES and type_ in ev.EVENT_TYPES:
            self.drop(f"a {str(type_)!r} event, which only the executor sends (dropped)")
        elif (fields := protocol.rebuild(type_, message, self.problems)) is not None:
            if type_ == ev.ERROR:
                fields = checked_explanation(fields, self.problems)
            elif type_ == ev.COMPILED:
                fields = checked_recompile_parts(fields, self.problems)
            elif type_ == ev.TIMING:
                fields = checked_notes_parts(fields, self.problems)
            # A profiled run's larger allowance is its trace's: its events are held to the cap.
            self.logged_bytes += len(line)
            if self.logged_bytes > EVENT_BYTES_CAP and not draining:
                raise _Kill(ev.LIMIT_EXCEEDED, ev.ended("event_bytes", size=human_bytes(EVENT_BYTES_CAP)))
            self.send(type_, draining=draining, **fields)
        else:
            self.drop()  # rebuild said why

    def on_exit(self, type_: str, message: dict, line: bytes, draining: bool) -> None:
        """The runner's word on how the snippet ended: succeeded or failed (it raised)."""
        exit_ = protocol.rebuild(type_, message, self.problems, spec=protocol.RUNNER_MESSAGES)
        if exit_ and exit_["status"] in (ev.SUCCEEDED, ev.FAILED):
            self.runner_exit = exit_["status"]
            self.runner_usage = {k: v for k, v in exit_.items() if k != "status" and v is not None}

    def on_ended(self, type_: str, message: dict, line: bytes, draining: bool) -> None:
        """A profiled run's code has ended, and its runner stops the profiler next: the run ends
        now for whoever waits on it. Its output so far is sent, then its ``profile`` event (the
        trace's URL, answering 202 until the node has built it), and ``end_early`` is given the
        ``finished`` fields as of now. The runner is then followed for its raw profile alone
        (``on_profile``), within PROFILE_STOP_S. Where the run cannot end so (no ``end_early``,
        a keeper that builds in place, a graded run, one already ended), this changes nothing:
        its "exit" or "cell_done" ends it, as any run's."""
        said = protocol.rebuild(type_, message, self.problems, spec=protocol.RUNNER_MESSAGES)
        if not said or said["status"] not in (ev.SUCCEEDED, ev.FAILED):
            self.drop()
            return
        reserve = getattr(self.keep_profile, "reserve", None)
        if (self.early is not None or self.end_early is None or reserve is None or not self.wants_profile
                or self.profiled or self.grading is not None):
            return
        self.read_output()
        try:
            event = {"url": reserve(), "building": True}
        except RuntimeError as exc:  # the keeper's why not (reserve's contract): the run stands without it
            event = {"error": f"the trace could not be kept: {exc}"}
            self.profile_kept = True  # nothing to hand over
        self.send(ev.PROFILE, draining=True, **event)
        self.early = self.finished_early(said)
        self.launcher.read_live(self.proc)  # the sandbox's report is read afresh at the runner's exit
        self.deadline = min(self.deadline, time.monotonic() + PROFILE_STOP_S)
        self.end_early(self.early)

    def finished_early(self, said: dict) -> dict:
        """A run's ``finished`` fields at its "ended": the runner's word on its status, what it
        used so far (the sandbox's counters where it has them, else the runner's own)."""
        launcher, proc = self.launcher, self.proc
        cpu_ms = said.get("cpu_ms")
        if (cpu_now := launcher.cpu_seconds(proc)) is not None and self.cpu_at_start is not None:
            cpu_ms = round((cpu_now - self.cpu_at_start) * 1000, 1)
        elif cpu_ms is not None and self.cpu_at_start is not None:
            cpu_ms = round(cpu_ms - self.cpu_at_start * 1000, 1)
        peak = launcher.peak_memory_bytes(proc)
        return protocol.finished_fields(
            said["status"], "", wall_ms=round((time.monotonic() - self.t0) * 1000, 1), cpu_ms=cpu_ms,
            peak_memory_kb=peak // 1024 if peak is not None else said.get("host_peak_kb"),
            output_bytes=self.output_bytes, events=self.budget.count + 1, truncated=self.truncated,
            device_peak_bytes=said.get("device_peak_bytes"))

    def hand_over(self, fields: dict) -> None:
        """After an early end, the runner's profile: its raw profile to the keeper, built once the
        runner has gone; or why there is none, where the trace's URL answers it."""
        self.profile_kept = True
        raw, problem = fields.get("raw"), None
        if raw is not None and fields.get("data") is None and not fields.get("error"):
            bundle, problem = check_bundle(raw)
            if bundle is not None:
                self.keep_profile.give(bundle, fields.get("profile_ms"))
                self.keep_profile.build()  # its run's end is logged: built now, not after the runner's exit
                return
        self.keep_profile.fail(bounded_profile(
            {"error": problem} if problem else
            {"error": fields.get("error") or "the run sent no raw profile", "error_parts": fields.get("error_parts")}))

    def on_lookup(self, type_: str, message: dict, line: bytes, draining: bool) -> None:
        """A runner about to compile asks for the compile cache's entry of a key: answered on its
        stdin (compilecache.RunLookups), except while a graded run's checks ask theirs there. Once
        an ordinary run is answered no more, its stdin ends, so that nothing waits for an answer."""
        fields = protocol.rebuild(type_, message, self.problems, spec=protocol.RUNNER_MESSAGES)
        stdin = self.proc.stdin
        if not self.lookups.answer(fields, can_write=not self.checking and stdin is not None and not stdin.closed):
            self.drop()
        elif self.lookups.over and self.grading is None:
            self.close_student()

    def on_compile_message(self, type_: str, message: dict, line: bytes, draining: bool) -> None:
        """The modules a run compiled, or a compile job's entry: for the executor (``on_message``)."""
        if isinstance(message.get("modules"), list):  # no more than a run may report
            message["modules"] = message["modules"][:MAX_REPORTED]
        fields = protocol.rebuild(type_, message, self.problems, spec=protocol.RUNNER_MESSAGES)
        if fields is not None and self.on_message is not None and not self.checking:
            self.on_message(type_, fields)

    def allow_profile(self, options) -> None:
        """A profiled run's events may weigh its trace's message more."""
        self.wants_profile = isinstance(options, dict) and options.get("profile") is True
        self.event_bytes_cap = EVENT_BYTES_CAP + (PROFILE_MESSAGE_BYTES if self.wants_profile else 0)

    def on_profile(self, type_: str, message: dict, line: bytes, draining: bool) -> None:
        """A profiled run's trace: checked (base64 of a whole gzip stream, within the protocol's
        bounds both ways, a JSON object's text), kept (``keep_profile``: its URL) and logged as
        the run's ``profile`` event, without the bytes. One per run that asked for it; none while
        checks run."""
        fields = protocol.rebuild(type_, message, self.problems, spec=protocol.RUNNER_MESSAGES)
        if fields is None or self.profiled or self.checking or not self.wants_profile:
            self.drop("a profile the run did not ask for, a second one, or one while the checks ran (dropped)"
                      if fields is not None else None)
            return
        self.profiled = True
        # The trace's line had its own allowance (allow_profile): the run's other events are held
        # to EVENT_BYTES_CAP without it.
        self.event_bytes -= len(line)
        self.event_bytes_cap = EVENT_BYTES_CAP
        if self.early is not None:
            if not self.profile_kept:  # its URL could not be kept at the end: nothing to hand over to
                self.hand_over(fields)
            return
        if self.budget.count >= self.limits.events - 1:
            return  # no room left to say where it is: not kept either
        data = fields.pop("data", None)
        raw = fields.pop("raw", None)
        event = bounded_profile(fields)
        if raw is not None and data is None and not event.get("error"):
            # The raw profile: built into its trace after the run's end by a keeper that can
            # (``keep_profile.later``: the executor's), else here and now (executor.local).
            bundle, problem = check_bundle(raw)
            later = getattr(self.keep_profile, "later", None)
            if bundle is not None and later is not None:
                try:
                    event.update(url=later(bundle), building=True)
                except Exception as exc:  # noqa: BLE001 - as below: the run stands without it
                    problem = f"the trace could not be kept: {exc}"
            elif bundle is not None:
                from . import tracebuild

                trace, info = tracebuild.build(bundle)
                if trace is None:
                    event, problem = bounded_profile({"error": info.get("error"),
                                                      "error_parts": info.get("error_parts")}), None
                else:
                    event.update(bounded_profile({k: v for k, v in info.items() if k in protocol.EVENTS[
                        ev.PROFILE].fields}))
                    data = base64.b64encode(trace).decode("ascii")
            if problem:
                event = {"error": problem}
        if data is not None and not event.get("error"):
            trace, problem = check_trace(data)
            url = None
            if trace is not None and self.keep_profile is not None:
                try:
                    url = self.keep_profile(trace)
                except Exception as exc:  # noqa: BLE001 - the caller's keeper (Redis, a file): the run stands without it
                    problem = f"the trace could not be kept: {exc}"
            event.update(url=url, bytes=len(trace) if trace is not None else None)
            if problem:
                event = {"error": problem}
        self.send(ev.PROFILE, draining=draining, **event)

    @property
    def checking(self) -> bool:
        """The student's code has ended and its runner answers the checks."""
        return self.grading is not None and self.grading.phase != "student"

    def on_graded_message(self, type_: str, message: dict, line: bytes = b"", draining: bool = False) -> None:
        """``student_done``: the code ended, the checks may ask. ``answer``: to the question asked.
        A checker's message from the student's side is interference. In an ordinary run, none of
        these mean anything and they are dropped."""
        grading = self.grading
        if grading is None:
            return
        if type_ in protocol.CHECKER_ONLY:
            grading.interfered(f"a {type_!r} message from the student's side")
        elif type_ == "student_done":
            fields = protocol.rebuild(type_, message, protocol.Problems(), spec=protocol.RUNNER_MESSAGES)
            self.flush_output(draining=True)
            grading.on_student_done(fields, write=self.write_student, close=self.close_student,
                                    stop=self.request_stop)
            self.deadline = max(self.deadline, time.monotonic() + grading.deadline_after_done())
        elif type_ == "answer":
            grading.on_answer(message)

    def write_student(self, data: bytes, deadline: float) -> bool:
        """A question to the student's runner (from the checking thread)."""
        try:
            return write_all(self.proc.stdin.fileno(), data, deadline)
        except (OSError, ValueError):
            return False

    def close_student(self) -> None:
        try:
            self.proc.stdin.close()
        except (OSError, ValueError):
            pass

    def request_stop(self) -> None:
        self.stop_requested = True

    def handle_event_lines(self, draining: bool = False) -> None:
        """Structured events, in order, after the output that came before them; at most
        LINES_PER_PUMP at a time, so that the wall clock and cancel are looked at in between
        however many lines the runner sent."""
        for _ in range(len(self.event_lines) if draining else LINES_PER_PUMP):
            if not self.event_lines:
                return
            if not self.flush_output(draining):
                return
            if not draining and not self.checking and not self.budget.available():
                return
            self.handle_event_line(self.event_lines.popleft(), draining)

    def read_output(self) -> None:
        """What the code printed before the runner said it ended is in the pipes already: read it
        and send it now, ahead of what comes after (the end, a session's next cell)."""
        outputs = [fd for fd, kind in self.fds.items() if kind != "event"]
        while outputs and select.select(outputs, [], [], 0)[0]:
            if not self.read_ready(outputs, 0):
                break
            outputs = [fd for fd, kind in self.fds.items() if kind != "event"]
        self.flush_output(draining=True)

    def read_ready(self, readable: list[int], timeout: float) -> bool:
        """Read what of ``readable`` becomes readable within ``timeout``; False if nothing did."""
        ready, _, _ = select.select(readable, [], [], max(timeout, 0))
        # Output before events: the runner flushes the snippet's output before it reports an
        # error, so when both are readable the output came first.
        for fd in sorted(ready, key=lambda f: self.fds[f] == "event"):
            data = os.read(fd, READ_CHUNK)
            kind = self.fds[fd]
            if not data:
                del self.fds[fd]
            elif kind == "event":
                self.on_event_bytes(data)
            else:
                self.on_output(kind, data)
        return bool(ready)

    def pump(self, timeout: float) -> None:
        if self.pending and not self.line_ended() and time.monotonic() - self.since >= OPEN_LINE_MAX_S:
            # The supervisor may itself have been kept from running that long (a loaded machine):
            # what the snippet wrote meanwhile, the line's end often, is read before the open
            # line goes alone.
            self.read_ready(self.readable(), 0)
        now = time.monotonic()
        if self.pending and ((now - self.last >= COALESCE_QUIET_S and self.line_ended())
                             or now - self.since >= (COALESCE_MAX_S if self.line_ended() else OPEN_LINE_MAX_S)
                             or self.pending_chars >= OUTPUT_EVENT_MAX_CHARS):
            self.flush_output()
        self.handle_event_lines()
        if self.event_lines and self.budget.available():
            timeout = 0  # more lines to handle now; only the wall clock and cancel come first
        elif self.pending or self.event_lines:
            timeout = min(timeout, max(self.budget.wait_s(), COALESCE_QUIET_S))
        self.read_ready(self.readable(), timeout)

    def readable(self) -> list[int]:
        """The pipes to read now. Only what can be passed on: nothing while event lines wait for
        the budget (what the snippet writes meanwhile comes after them), no more output while
        much waits. What is not read waits in the pipe, and the snippet with it. While an event
        line is half read (a large one, a compilation's texts), only the rest of it: the runner
        flushes the snippet's output before it writes an event, so output that is readable now
        came after it."""
        if self.event_lines:
            return []
        mid_event = bool(self.event_buffer)
        return [fd for fd, kind in self.fds.items()
                if kind == "event" or (not mid_event and self.pending_chars < PENDING_MAX_CHARS)]

    def exited(self) -> bool:
        if self.exit_info is None:
            self.exit_info = self.proc.wait_exit(block=False)
        return self.exit_info is not None

    def done(self) -> bool:
        """The runner has exited, or it said how the run ended and closed its pipes (it is
        exiting: its sandbox's report says the rest, and stop() ends what is left). Unsandboxed,
        its own word on what it used stands for the sandbox's counters, so the run ends with
        the person's code rather than after the runtime's teardown (a TPU's takes 1.5 s)."""
        if self.exited():
            return True
        if self.runner_exit is None or self.fds:
            return False
        return self.launcher.cpu_seconds(self.proc) is not None or (
            not self.launcher.sandboxed and "cpu_ms" in self.runner_usage)

    # -- the run ---------------------------------------------------------------------------------

    def run(self, request: dict) -> dict:
        proc, launcher = self.proc, self.launcher
        t0 = self.t0 = time.monotonic()
        self.deadline = t0 + self.limits.wall_s
        if self.grading is not None:
            self.grading.start()
        # Readable when the process exits (a pidfd, or the template's report); elsewhere (a Mac,
        # unsandboxed) the wait below is a plain tick.
        exit_fd = proc.exit_fd()
        kill: _Kill | None = None
        # The sandbox's CPU counter includes the warm-up; the run's share is what it adds from here.
        cpu_at_start = self.cpu_at_start = launcher.cpu_seconds(proc)
        try:
            launcher.restrict(proc, self.limits)
            self.send_request(request)
            self.follow(exit_fd)
        except _Kill as k:
            kill = k
        finally:
            launcher.stop(proc)
        self.drain()
        if self.grading is not None:
            self.grading.on_student_ended(cancelled=kill is not None and kill.status == ev.CANCELLED)
        if self.early is not None:
            self.runner.close()
            self.profile_not_kept(kill)
            return self.early
        return self.finished(kill, t0, cpu_at_start)

    def profile_not_kept(self, kill: _Kill | None) -> None:
        """After an early end, a runner that went without handing its profile over: why, where
        its trace's URL answers."""
        if self.profile_kept:
            return
        self.profile_kept = True
        if kill is not None and kill.status == ev.TIMED_OUT:
            why = f"stopping the profiler took over {PROFILE_STOP_S:g} s or the run's wall clock"
        elif kill is not None:
            why = f"the profiler's stop was ended: {kill.message}"
        else:
            why = "the runner ended before it handed its profile over"
        self.keep_profile.fail({"error": why})

    def send_request(self, request: dict) -> None:
        """The runner's one request line (protocol.request). The wall clock goes with it, so that
        what waits in the run (%timeit) can stop before it rather than be killed at it. Its stdin
        then ends, unless the compile cache's answers or a graded run's questions come that way."""
        fields = dict(request)
        op = fields.pop("op", "run")
        if self.grading is not None:
            fields["graded"] = True
        fields["wall_s"] = self.limits.wall_s
        self.allow_profile(fields.get("options"))
        line = protocol.request(op, **fields)
        try:
            self.proc.stdin.write(line)
            if self.grading is None and not self.lookups.answering:
                self.proc.stdin.close()
            else:
                self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died while idle; its exit status says how

    def follow(self, exit_fd: int | None) -> None:
        """Relay what the runner sends until it has ended and all of it is handled; a _Kill at the
        wall clock, a call of the checks that does not return, a cancel or a sandbox limit."""
        next_tick = 0.0
        while self.fds or self.pending or self.event_lines or not self.done():
            now = time.monotonic()
            deadline = self.deadline
            if now >= deadline:
                raise _Kill(ev.TIMED_OUT, ev.ended("wall_clock", seconds=f"{self.limits.wall_s:g}"))
            if self.stop_requested:
                raise _Kill(ev.TIMED_OUT, ev.ended("checks_call"))
            if now >= next_tick:
                next_tick = now + self.tick_every_s
                self.look_around()
            if self.fds or self.pending or self.event_lines:
                self.pump(min(TICK_S, deadline - now))
            else:
                # Pipes closed: it is exiting, or the snippet closed them and runs on. The exit
                # descriptor becomes readable when the process exits: this wakes at once, not on
                # a tick.
                wait_s = max(min(TICK_S, deadline - now), 0)
                if exit_fd is not None:
                    select.select([exit_fd], [], [], wait_s)
                else:
                    time.sleep(min(wait_s, 0.01))

    def look_around(self) -> None:
        """Every ``tick_every_s``: the caller's tick, then a _Kill if the run was cancelled or the
        sandbox says a limit of its own should end it now."""
        self.tick()
        if self.early is None and self.should_cancel():  # a run that has ended is not cancelled
            raise _Kill(ev.CANCELLED, ev.ended("cancelled"))
        if (hit := self.launcher.limit_hit(self.proc)) is not None:
            raise _Kill(hit[0], ev.recognised(hit[1], ev.SANDBOX_ENDINGS))

    def finished(self, kill: _Kill | None, t0: float, cpu_at_start: float | None) -> dict:
        """The ``finished`` fields: the status ``decide_status`` gives from what was seen, and
        what the run used."""
        proc, launcher = self.proc, self.launcher
        if self.exit_info is None and self.runner_exit is None:
            self.exit_info = proc.wait_exit(block=True)
        if self.exit_info is not None:
            returncode, cpu_s, peak_kb = self.exit_info
        else:  # ended by its own "exit": the code it exits with, the sandbox's counters below
            returncode, cpu_s, peak_kb = (0 if self.runner_exit == ev.SUCCEEDED else 1), 0.0, 0
            if not launcher.sandboxed:  # no counters but the runner's own (done() waited for them)
                cpu_s = (self.runner_usage.get("cpu_ms") or 0.0) / 1000 - (cpu_at_start or 0.0)
        if not launcher.sandboxed and "host_peak_kb" in self.runner_usage:
            # wait4's peak counts a runtime's device mappings (a TPU's 14 GB of libtpu): the runner's
            # reading leaves them out (runner/common.py host_peak_kb).
            peak_kb = self.runner_usage["host_peak_kb"]
        cpu_ms = round(cpu_s * 1000, 1)
        # Under a sandbox, wait4 sees only its launcher process: ask the sandbox instead.
        if (cpu_now := launcher.cpu_seconds(proc)) is not None and cpu_at_start is not None:
            cpu_ms = round((cpu_now - cpu_at_start) * 1000, 1)
        if (peak := launcher.peak_memory_bytes(proc)) is not None:
            peak_kb = peak // 1024
        wall_ms = round((time.monotonic() - t0) * 1000, 1)

        status, message = decide_status(
            kill=(kill.status, kill.message) if kill is not None else None,
            sandbox_reason=launcher.exit_reason(proc, returncode) if kill is None else None,
            runner_exit=self.runner_exit, returncode=returncode, death_signal=launcher.death_signal(returncode),
        )
        self.runner.close()
        return protocol.finished_fields(status, message, wall_ms=wall_ms, cpu_ms=cpu_ms, peak_memory_kb=peak_kb,
                                        output_bytes=self.output_bytes, events=self.budget.count + 1,
                                        truncated=self.truncated,
                                        device_peak_bytes=self.runner_usage.get("device_peak_bytes"))

    def drain(self) -> None:
        """What was written before the end is still in the pipes: keep it, as far as the limits go."""
        drain_until = time.monotonic() + DRAIN_S
        try:
            while self.fds and time.monotonic() < drain_until:
                if not self.read_ready(list(self.fds), drain_until - time.monotonic()):
                    break
        except _Kill:
            pass
        for kind, decoder in self.decoders.items():
            tail = decoder.decode(b"", final=True)
            if tail:
                self.pending.append([kind, [tail], len(tail)])
        try:
            self.flush_output(draining=True)
            self.handle_event_lines(draining=True)
            self.flush_output(draining=True)
        except _Kill:
            pass


class _Budget:
    """A run's events: at most ``total``, and ``per_s`` a second (a bucket that holds one
    second's worth, so short bursts pass at once)."""

    def __init__(self, per_s: int, total: int):
        self.per_s, self.total = per_s, total
        self.tokens = float(per_s)
        self.at = time.monotonic()
        self.count = 0

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(float(self.per_s), self.tokens + (now - self.at) * self.per_s)
        self.at = now

    def available(self) -> bool:
        self._refill()
        return self.tokens >= 1

    def wait_s(self) -> float:
        """Until the next event may go."""
        self._refill()
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.per_s

    def take(self) -> None:
        self.tokens -= 1
        self.count += 1


def decide_status(*, kill: tuple[str, str] | None, sandbox_reason: tuple[str, str] | None,
                  runner_exit: str | None, returncode: int, death_signal: int | None) -> tuple[str, str]:
    """A run's terminal status and message, from what the supervisor saw, in order of trust: its
    own kill (wall clock, output, events, cancel), the sandbox's report (memory, pids, CPU), the
    runner's "exit" message (the snippet raised or not), then the process's exit code. Pure:
    tests/unit/test_status.py holds its table."""
    if kill is not None:
        return kill
    if sandbox_reason is not None:
        return sandbox_reason[0], ev.recognised(sandbox_reason[1], ev.SANDBOX_ENDINGS)
    if runner_exit in (ev.SUCCEEDED, ev.FAILED):
        return runner_exit, ""
    if returncode == 0:
        return ev.SUCCEEDED, ""
    if death_signal is not None:
        return ev.FAILED, ev.ended("killed_by", signal=_signal_name(death_signal))
    return ev.FAILED, ev.ended("exit_code", code=returncode)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
