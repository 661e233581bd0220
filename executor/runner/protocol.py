"""The run protocol, declared once: every event a run's log holds, every field each may carry,
what a runner is asked on its stdin, and the runner's own messages to its supervisor. Standard
library only, so the sandboxed runner, the executor and the web side all import this one module.

    supervisor ──request() lines──▶ runner stdin   RUNNER_REQUESTS: warm, run, check, compile, analyse,
                                                   session (then cell lines)
    runner ──JSON lines──▶ supervisor ──rebuild()──▶ run log (Redis) ──▶ websocket, database

Whatever comes out of the sandbox is untrusted: the supervisor passes each runner event through
``rebuild``, which keeps only declared types and fields, turns ``NaN``/``Infinity`` into
``null``, replaces NUL and lone surrogates in strings, and cuts nesting deeper than
``MAX_DEPTH``; what it changed comes back as a list of problems, which the run shows as one
``stderr`` note. Nothing a snippet prints or sends can make an event that JSON, PostgreSQL or a
browser refuses.

``frontend/src/protocol.gen.ts`` is generated from this module
(``python -m executor.runner.protocol > frontend/src/protocol.gen.ts``); a test fails when the
two disagree. Extend, never rename: stored runs and browsers depend on these names.
"""

from __future__ import annotations

import json
import math
import string
import sys
from dataclasses import dataclass, field

# Field kinds. "json" is any JSON value; "int" accepts integral floats; "num" any finite number.
STR, INT, NUM, BOOL, LIST, DICT, JSON = "str", "int", "num", "bool", "list", "dict", "json"
STR_LIST = "str[]"
_TS = {STR: "string", INT: "number", NUM: "number", BOOL: "boolean", LIST: "unknown[]",
       DICT: "Record<string, unknown>", JSON: "unknown", STR_LIST: "string[]"}

# Deeper values (a display's table of tables of ...) are cut: a browser and the database both
# have to walk them.
MAX_DEPTH = 12
NUL_SHOWN_AS = "\u2400"  # ␀: PostgreSQL's jsonb refuses \u0000 in text


@dataclass(frozen=True)
class Event:
    doc: str
    fields: dict[str, str]
    required: tuple[str, ...] = ()
    # May the runner (untrusted) send it? "started" and "finished" are the supervisor's alone.
    from_runner: bool = False


# Common to every event in a run's log.
BASE_FIELDS = {"seq": INT, "type": STR, "ts": NUM}

_CALL = {"name": STR, "signature": STR, "via": STR, "line": INT, "call_line": INT}
_TIMES = {
    f"{k}_ms": NUM
    for k in ("mean", "std", "min", "max", "median", "iqr", "first_call", "trace", "compile", "wall",
              "cpu_user", "cpu_sys")
}

EVENTS: dict[str, Event] = {
    "queued": Event("The run is waiting for an executor.", {"position": INT}),
    "waiting": Event(
        "An executor took the run, which waits there for an exclusive device (a TPU chip: "
        "executor/chips.py): how many wait ahead of it, about how long it will wait (from the "
        "turnarounds measured lately; absent before there are any), how many chips it asked for, "
        "and whether it is a notebook session's lease. Sent when that changes; the wait is not "
        "the run's own time (its wall time starts at \"started\").",
        {"worker": STR, "device": STR, "ahead": INT, "eta_s": NUM, "chips": INT, "lease": BOOL},
    ),
    "started": Event(
        "An executor took the run: where it runs. On an exclusive device, the chips it holds, how "
        "long it waited for them (apart from its own time), whether it runs on the runner its person's "
        "last run left on the chip (reused) and, for a notebook session, until when its lease lasts "
        "idle and how many wait for a chip.",
        {"worker": STR, "kind": STR, "device": STR, "runtime": STR, "sandboxed": BOOL, "platform": STR,
         "device_kind": STR, "session": STR, "cell": INT, "session_started": BOOL,
         "device_count": INT, "memory_bytes": INT, "jax_version": STR, "jaxlib_version": STR,
         "libraries": DICT, "chips": STR, "waited_ms": NUM, "lease_until": NUM, "chip_waiting": INT,
         "reused": BOOL},
    ),
    "stdout": Event("Text the snippet wrote to stdout, in order, as it was produced.", {"text": STR},
                    required=("text",)),
    "stderr": Event("Text the snippet wrote to stderr (and the playground's own notes).", {"text": STR},
                    required=("text",)),
    "compiling": Event(
        "An XLA compilation of a user function that is taking a while; withdrawn with done=true "
        "when no compiled event follows.",
        {**_CALL, "after_s": NUM, "done": BOOL}, from_runner=True,
    ),
    "compiled": Event(
        "One XLA compilation of a user function: its texts, times and costs.",
        {**_CALL, "module": STR, "origin": STR, "file": STR, "in_types": STR_LIST, "out_types": STR_LIST,
         "static_args": JSON, "num_devices": INT, "trace_ms": NUM, "lower_ms": NUM, "compile_ms": NUM,
         "flops": NUM, "transcendentals": NUM, "bytes_accessed": NUM, "optimal_seconds": NUM,
         "memory": DICT, "compiles": INT, "recompile": DICT, "warning": STR, "warning_parts": LIST,
         "jaxpr": STR, "stablehlo": STR, "hlo": STR,
         "jaxpr_lines": LIST, "stablehlo_lines": LIST, "hlo_lines": LIST,
         "truncated": STR_LIST, "capture_error": STR, "cached": BOOL},
        required=("name",), from_runner=True,
    ),
    "timing": Event(
        "A measurement: %timeit, %time, jaxplay.bench, or a jaxplay.compare table (rows).",
        {"kind": STR, "label": STR, "line": INT, "text": STR, "repeats": INT, "loops": INT,
         "warmup": INT, **_TIMES, "runs_ms": LIST, "blocked": BOOL, "dispatch_only": BOOL,
         "notes": STR_LIST, "notes_parts": LIST, "note": STR, "flops": NUM, "bytes_accessed": NUM,
         "gflops": NUM, "gbs": NUM,
         "platform": STR, "device_kind": STR, "dtype": STR, "peak": DICT, "bandwidth_share": NUM,
         "flops_share": NUM, "donated": BOOL, "cost_from": STR, "baseline": STR, "rows": LIST,
         "compile_cached": BOOL},
        from_runner=True,
    ),
    "display": Event(
        "A rich value: a figure (PNG), jaxprs side by side, an array's summary.",
        {"kind": STR, "mime": STR, "data": STR, "text": STR, "label": STR, "name": STR, "line": INT,
         "width": INT, "height": INT, "figure": INT, "panels": LIST,
         "shape": LIST, "dtype": STR, "size": INT, "nbytes": INT, "array_type": STR,
         "devices": STR_LIST, "sharding": STR, "partition_spec": STR, "stats": DICT},
        from_runner=True,
    ),
    "error": Event(
        "The snippet raised: type, message, the snippet's line, a trimmed traceback; for an error we "
        "know, a plain explanation, with the template and args it was made from (a page says it in its "
        "reader's language).",
        {"exc_type": STR, "message": STR, "line": INT, "traceback": STR, "explanation": STR,
         "explanation_template": STR, "explanation_args": DICT},
        required=("exc_type", "message"), from_runner=True,
    ),
    "shapes": Event(
        "What the snippet's top-level names held when it ended (arrays and pytrees of them), for "
        "the editor's hover: {name: {type, line, sharding}}.",
        {"names": DICT, "truncated": BOOL}, required=("names",), from_runner=True,
    ),
    "profile": Event(
        "The run's profile (options.profile): where its trace is (Chrome Trace Event Format, gzipped), its "
        "size and events, its lanes (the host, then one per device), a summary per device (span, busy time, "
        "time per op kind, collective wait, top ops), what was cut, what the profile cost; or why there is none. "
        "\"building\": the trace is built from the raw profile after the run's end, outside its wall clock; its "
        "URL answers 202 until it is ready, and the trace itself says the rest.",
        {"url": STR, "bytes": INT, "raw_bytes": INT, "events": INT, "lanes": STR_LIST, "devices": INT,
         "summary": LIST, "cut": STR, "cut_parts": LIST, "profile_ms": NUM, "error": STR, "error_parts": LIST,
         "building": BOOL},
    ),
    "finished": Event(
        "The last event of every run: its terminal status and what it used; its message's template and "
        "args where the executor made it from one (an arg may be a message of its own: {template, args}).",
        {"status": STR, "message": STR, "wall_ms": NUM, "cpu_ms": NUM, "peak_memory_kb": INT,
         "device_peak_bytes": INT, "output_bytes": INT, "events": INT, "truncated": BOOL,
         "message_template": STR, "message_args": DICT},
        required=("status",),
    ),
}
EVENT_TYPES = tuple(EVENTS)
RUNNER_EVENT_TYPES = frozenset(t for t, e in EVENTS.items() if e.from_runner)

# Terminal statuses, one of which every run ends in.
TERMINAL_STATUSES = ("succeeded", "failed", "timed_out", "cancelled", "limit_exceeded", "lost")

# The codes a websocket is closed with, the run's (/ws/runs/<id>/) and a course dashboard's
# (/ws/courses/<id>/): a bad query, a token revoked or expired, no such run or course (or not
# yours to see), too many sockets or snapshots from one client.
CLOSE_CODES = {"bad_request": 4400, "unauthorized": 4401, "not_found": 4404, "too_many": 4429}

# A websocket message is one event, or, for an event too large for one message, one of its parts:
# the event's JSON text is the ``data`` of parts 1..``parts`` joined in order.
PART = "part"
PART_FIELDS = {"seq": INT, "type": STR, "of": STR, "part": INT, "parts": INT, "data": STR}

# What a runner is asked on its stdin: one JSON line {"op", ...}, built only by ``request``. Any
# number of "warm" lines may come first (the pool's, while the node is idle); the first other line
# decides what the runner is until it exits (runner/main.py ``ROLES``, one role an op). A new kind
# of runner (a persistent session, say) is one more op here and one more role there.
RUNNER_REQUESTS: dict[str, Event] = {
    "warm": Event("Start the backend and compile a tiny function, then wait for the real request "
                  "(answered with \"warmed\"; executor/pool.py).", {}),
    "run": Event("Run a snippet: its code, the run's options, its standard input (the snippet's sys.stdin; "
                 "none when absent), whether it is a graded run's student side (which then answers the checks' "
                 "questions, runner/answers.py) and the run's wall clock.",
                 {"code": STR, "options": DICT, "stdin": STR, "graded": BOOL, "wall_s": NUM},
                 required=("code", "wall_s")),
    "check": Event("Be a graded run's checker (runner/checker.py): run the hidden checks, asking the student's "
                   "side through the supervisor.", {"checks": STR, "wall_s": NUM}, required=("checks", "wall_s")),
    "compile": Event("Be a compile job (executor/compilecache.py): compile each module from its bytes alone "
                     "for the node's compile cache.", {"modules": LIST, "wall_s": NUM},
                     required=("modules", "wall_s")),
    "analyse": Event("Be a graded run's analyst (runner/analyst.py): read the compiled functions the student's "
                     "side hands over, one question a line.", {}),
    "session": Event("Be a notebook's session (runner/session.py): keep one namespace and run each \"cell\" "
                     "line in it, until stdin ends.", {}),
    "cell": Event("A session's next cell (only after \"session\"): its code, the run's options, its wall clock "
                  "and CPU seconds; \"fresh\": in a namespace of its own (a run of one person's on the "
                  "runner that holds their chip: executor/chips.py).",
                  {"code": STR, "options": DICT, "wall_s": NUM, "cpu_s": NUM, "fresh": BOOL},
                  required=("code", "wall_s")),
}

# The runner's own messages on its event pipe, read by the supervisor and never logged.
RUNNER_MESSAGES: dict[str, Event] = {
    "ready": Event(
        "Warm: sent once, before the runner reads its request. A runner forked from a template "
        "(executor/sandbox/fork.py) says so, whether it is a lean one (no jax imported), and the "
        "template's memory collapsed into huge pages.",
        {"warmup_ms": NUM, "platform": STR, "device_kind": STR, "device_count": INT,
         "memory_bytes": INT, "jax_version": STR, "jaxlib_version": STR, "libraries": DICT,
         "forked": BOOL, "lean": BOOL, "huge_bytes": INT},
    ),
    "warmed": Event("After the pool's {\"op\": \"warm\"} (an idle node): the backend is started and a tiny "
                    "function compiled; null when that failed, and why (a chip held by another process: "
                    "executor/chips.py). A runner that started no backend before \"ready\" (an exclusive "
                    "device's next runner, started while the chip is still held) says here what it found.",
                    {"warm_ms": NUM, "error": STR, "platform": STR, "device_kind": STR, "device_count": INT,
                     "memory_bytes": INT}),
    "exit": Event("The snippet ended without a crash: succeeded or failed; with what it used as the runner "
                  "reads it (CPU, host memory without a device's mappings, the accelerator's peak), which the "
                  "supervisor takes where the sandbox has no counters of its own.",
                  {"status": STR, "cpu_ms": NUM, "host_peak_kb": INT, "device_peak_bytes": INT},
                  required=("status",)),
    "ended": Event("A profiled run's or cell's code has ended (the fields of the \"exit\" or \"cell_done\" that "
                   "follows it): the run's \"finished\" may go out now, its profile (\"profile_trace\") and then "
                   "that \"exit\" or \"cell_done\" come after, once the profiler has stopped.",
                   {"status": STR, "stopped_by": STR, "memory_bytes": INT, "device_peak_bytes": INT,
                    "host_peak_kb": INT, "cpu_ms": NUM},
                   required=("status",)),
    "cell_done": Event("A session's cell ended and the runner waits for the next: succeeded or failed, "
                       "\"interrupted\" or \"cpu\" when a KeyboardInterrupt or its CPU limit stopped it, and "
                       "the process's resident memory, the accelerator's peak memory so far, and the CPU "
                       "the cell took (the runner's own reading, for a launcher with no counters).",
                       {"status": STR, "stopped_by": STR, "memory_bytes": INT, "device_peak_bytes": INT,
                        "host_peak_kb": INT, "cpu_ms": NUM},
                       required=("status",)),
    "profile_trace": Event("A profiled run's trace (runner/profile.py): the Chrome trace gzipped (base64), what it "
                           "holds and a summary per device, which the executor keeps and logs as a \"profile\" "
                           "event; or the raw profile (\"raw\": base64 of runner/profile.py's bundle, the XSpace "
                           "and what building its trace needs of the run's process), which the executor builds "
                           "into the trace after the run's end; or why there is none.",
                           {"data": STR, "bytes": INT, "raw_bytes": INT, "events": INT, "lanes": STR_LIST,
                            "devices": INT, "summary": LIST, "cut": STR, "cut_parts": LIST, "profile_ms": NUM,
                            "error": STR, "error_parts": LIST, "raw": STR}),
    # The node's compile cache (executor/compilecache.py).
    "compiled_modules": Event("At a run's end: the modules it had to compile (base64 bytes, compile options, "
                              "devices), for the executor to have compiled by a fresh runner.",
                              {"modules": LIST}, required=("modules",)),
    "compile_lookup": Event("A runner about to compile asks its supervisor for the entry of this key (answered "
                            "on its stdin: the entry's name, or none).", {"key": STR}, required=("key",)),
    "compiled_entry": Event("A compile job's one module, compiled and serialized (base64), or why not.",
                            {"key": STR, "executable": STR, "error": STR}),
    # A graded run's student side (runner/answers.py), once the student's code has ended.
    "student_done": Event("The student's code ended; from now on the runner answers questions.",
                          {"status": STR}, required=("status",)),
    "answer": Event("The student's side's answer to one question: a value (runner/values.py) or an "
                    "error (its type and the student's line).",
                    {"id": INT, "kind": STR, "value": JSON, "error": DICT}, required=("id",)),
}

# A graded run (executor/graded_run.py). The checks run in a runner of their own, the checker
# (runner/checker.py), which no student code reaches; it asks the student's side through the
# supervisor, which relays one question at a time and checks every answer's id.
#
#   supervisor → checker stdin:   request("check"), then {"id", "answer": {kind, value, error}} a line
#   supervisor → student stdin:   {"id", "op", "name", "args", "kwargs", "transform"} a line
ASK_OPS = ("get", "call", "lower", "shape", "jaxpr", "analyse")  # "analyse": to the analyst (runner/analyst.py)
CHECK_FIELDS = {"name": STR, "passed": BOOL, "points": NUM, "message": STR, "crashed": BOOL}
CHECKER_MESSAGES: dict[str, Event] = {
    "ask": Event("A question for the student's side: a name's value, a call, a lowering.",
                 {"id": INT, "op": STR, "name": STR, "args": JSON, "kwargs": JSON, "transform": JSON},
                 required=("id", "op", "name")),
    "check": Event("One check's result, sent as it is decided.", CHECK_FIELDS, required=("name",)),
    "note": Event("Text for the instructor alone (a traceback, a helper's detail).", {"text": STR},
                  required=("text",)),
    "grade": Event("The checks ended; the instructor's error, if any.", {"error": STR}),
}
# Messages only the checker sends: from the student's side, they are interference.
CHECKER_ONLY = frozenset(CHECKER_MESSAGES)
# Everything a runner may write on its event pipe, whichever it is: the run's events, its own
# messages, a checker's (runner/main.py's EventChannel checks itself against these in the tests).
RUNNER_SENDS: dict[str, Event] = {**{t: e for t, e in EVENTS.items() if e.from_runner}, **RUNNER_MESSAGES,
                                  **CHECKER_MESSAGES}
# A profile's trace: at most this many bytes gzipped and uncompressed (runner/profile.py keeps
# within them; the supervisor refuses what does not).
PROFILE_MAX_BYTES = 8 * 1024**2
PROFILE_MAX_RAW_BYTES = 64 * 1024**2
# A raw profile (the XSpace and its context, zlib-compressed, before base64), at most.
PROFILE_MAX_BUNDLE_BYTES = 48 * 1024**2
# What one answer, one question and the checker's notes may weigh.
ANSWER_MAX_BYTES = 48 * 1024**2
NOTES_MAX_CHARS = 64 * 1024
# An error's explanation is sent with its template and args (runner/explain.py) when each arg is
# at most this long; the supervisor keeps them only then.
EXPLANATION_ARG_MAX_CHARS = 500
# What a graded run's executor sends the recorder (recorder.record_grade): the checks as the
# checker reported them, and how the run ended. ``runner/grades.py`` turns it into a score.
GRADE_FIELDS = {"checks": LIST, "outcome": STR, "student_status": STR, "error": STR, "log": STR}


def grade_fields(checks: list, outcome: str, *, student_status: str | None, error: str | None,
                 log: str = "") -> dict:
    """The fields of a graded run's result: built here, by whoever ends a graded run."""
    from .grades import OUTCOMES

    if outcome not in OUTCOMES:
        raise ValueError(f"not a grading outcome: {outcome!r}")
    return {"checks": list(checks), "outcome": outcome, "student_status": student_status,
            "error": error or None, "log": clean_text(log or "")}


# Rebuilding untrusted values ------------------------------------------------------------------

@dataclass
class Problems:
    """What ``rebuild`` had to change, said once each, the first MAX_PROBLEMS of them (the texts
    can name what the runner sent, so a hostile runner could otherwise make a new one a line)."""

    MAX_PROBLEMS = 20
    seen: list[str] = field(default_factory=list)
    _known: set[str] = field(default_factory=set)

    def add(self, text: str) -> None:
        if text not in self._known and len(self.seen) < self.MAX_PROBLEMS:
            self._known.add(text)
            self.seen.append(text)

    def __bool__(self) -> bool:
        return bool(self.seen)


def clean_text(s: str) -> str:
    """``s`` as text every consumer accepts: NUL shown as ␀, lone surrogates as U+FFFD."""
    if "\x00" in s:
        s = s.replace("\x00", NUL_SHOWN_AS)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return s


def clean_json(value, problems: Problems | None = None, where: str = "", depth: int = 0):
    """A copy of ``value`` that is plain, finite, storable JSON."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if problems is not None:
            shown = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            problems.add(f"{where}: {shown} is not a JSON number (sent as null)")
        return None
    if isinstance(value, str):
        return clean_text(value)
    if depth >= MAX_DEPTH:
        if problems is not None:
            problems.add(f"{where}: nested deeper than {MAX_DEPTH} levels (cut)")
        return None
    if isinstance(value, (list, tuple)):
        return [clean_json(v, problems, where, depth + 1) for v in value]
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_json(v, problems, where, depth + 1) for k, v in value.items()}
    if problems is not None:
        problems.add(f"{where}: a {type(value).__name__} is not JSON (sent as text)")
    return clean_text(str(value))


def _fits(kind: str, value) -> bool:
    if value is None or kind == JSON:
        return True
    if kind == STR:
        return isinstance(value, str)
    if kind == BOOL:
        return isinstance(value, bool)
    if kind in (INT, NUM):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == LIST:
        return isinstance(value, list)
    if kind == STR_LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == DICT:
        return isinstance(value, dict)
    return False


def rebuild(type_, fields: dict, problems: Problems, *, spec: dict[str, Event] = EVENTS) -> dict | None:
    """The declared fields of one untrusted message, cleaned; None when its type is unknown or a
    required field is missing or wrong. Every change is added to ``problems``."""
    event = spec.get(type_) if isinstance(type_, str) else None
    if event is None:
        problems.add(f"an event of unknown type {str(type_)[:40]!r} (dropped)")
        return None
    out = {}
    for name, value in fields.items():
        kind = event.fields.get(name)
        if kind is None:
            if name not in BASE_FIELDS:
                problems.add(f"{type_}: unknown field {str(name)[:40]!r} (dropped)")
            continue
        where = f"{type_}.{name}"
        value = clean_json(value, problems, where)
        if not _fits(kind, value):
            problems.add(f"{where}: expected {kind}, got {type(value).__name__} (dropped)")
            continue
        if kind == INT and isinstance(value, float):
            value = int(value) if value.is_integer() else value
        out[name] = value
    for name in event.required:
        if out.get(name) is None:
            problems.add(f"{type_}: required field {name!r} missing (event dropped)")
            return None
    return out


def undeclared(type_: str, fields: dict, spec: dict[str, Event] = RUNNER_SENDS) -> list[str]:
    """What of one message (its fields as JSON gives them back) its declaration does not allow:
    an unknown type, a field it does not declare, a value of another kind. For a sender that
    checks itself: a receiver rebuilds what it is sent instead, and NaN, depth and odd text
    are repairs there, not faults here."""
    event = spec.get(type_)
    if event is None:
        return [f"a message of undeclared type {type_!r}"]
    faults = []
    for name, value in fields.items():
        kind = event.fields.get(name)
        if kind is None and name not in BASE_FIELDS:
            faults.append(f"{type_}: undeclared field {name!r}")
        elif kind is not None and not _fits(kind, value):
            faults.append(f"{type_}.{name}: a {type(value).__name__}, declared {kind}")
    return faults


def finished_fields(status: str, message: str = "", *, wall_ms=None, cpu_ms=None, peak_memory_kb=None,
                    output_bytes=None, events=None, truncated: bool = False, device_peak_bytes=None) -> dict:
    """The fields of a ``finished`` event: built here, by whoever ends a run. A ``Templated``
    message brings its template and args along."""
    if status not in TERMINAL_STATUSES:
        raise ValueError(f"not a terminal status: {status!r}")
    templated = isinstance(message, Templated)
    return {"status": status, "message": str(message or ""), "wall_ms": wall_ms, "cpu_ms": cpu_ms,
            "peak_memory_kb": peak_memory_kb, "output_bytes": output_bytes, "events": events,
            "truncated": bool(truncated), "message_template": message.template if templated else None,
            "message_args": message.json_args() if templated else None, "device_peak_bytes": device_peak_bytes}


class Templated(str):
    """A text for people made from a template: the English (it is the str), and the template and
    named args it was filled from, so that a page can say it in its reader's language instead.
    Placeholders are plain ``{name}`` (no format spec: the page fills them too); an arg is a
    short text or a number, already formatted as it reads, or a Templated of its own."""

    template: str
    args: dict

    def __new__(cls, template: str, **args):
        self = super().__new__(cls, template.format(**args))
        self.template, self.args = template, args
        return self

    def __getnewargs_ex__(self):  # copied and pickled from its template, not its English
        return (self.template,), self.args

    def json_args(self) -> dict:
        """The args as an event carries them: a Templated one as {"template", "args"}."""
        return {name: {"template": value.template, "args": value.json_args()} if isinstance(value, Templated)
                else value for name, value in self.args.items()}


def parts_of(sentences: list[Templated]) -> list[dict] | None:
    """Sentences as an event carries them beside their English: [{"template", "args"}]; None
    when an arg is too long to send (then the English alone)."""
    if any(len(str(value)) > EXPLANATION_ARG_MAX_CHARS for said in sentences for value in said.args.values()):
        return None
    return [{"template": said.template, "args": said.json_args()} for said in sentences]


def placeholders(template: str) -> frozenset[str]:
    """The names a template is filled with: {"line", "column"} for "Line {line}, column {column}"."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(template) if name)


def request(op: str, **fields) -> bytes:
    """One line of a runner's stdin, checked against ``RUNNER_REQUESTS``: an unknown op, a field
    it does not declare, a required one missing or a field of the wrong kind is a ValueError here,
    in the executor, not a runner that takes a typo for something else. ASCII JSON (code may hold
    lone surrogates, which cross as JSON's escapes and come back as they were)."""
    spec = RUNNER_REQUESTS.get(op) if isinstance(op, str) else None
    if spec is None:
        raise ValueError(f"a runner is not asked {op!r}: the ops are {', '.join(RUNNER_REQUESTS)}")
    for name, value in fields.items():
        kind = spec.fields.get(name)
        if kind is None:
            raise ValueError(f"a {op!r} request has no field {name!r}")
        if not _fits(kind, value):
            raise ValueError(f"a {op!r} request's {name!r} must be {kind}, not {type(value).__name__}")
    missing = [name for name in spec.required if fields.get(name) is None]
    if missing:
        raise ValueError(f"a {op!r} request needs {', '.join(map(repr, missing))}")
    return (json.dumps({"op": op, **fields}) + "\n").encode()


def dumps(obj) -> str:
    """JSON for the wire: UTF-8 text, never NaN."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# TypeScript --------------------------------------------------------------------------------

def _pascal(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def typescript() -> str:
    """``frontend/src/protocol.gen.ts``: the event types and their fields, for the page."""
    out = [
        "// Generated from executor/runner/protocol.py by `python -m executor.runner.protocol`.",
        "// Do not edit: change the Python and regenerate (tests/unit/test_protocol.py checks it).",
        "",
        f"export const EVENT_TYPES = {json.dumps(list(EVENT_TYPES))} as const;",
        "export type EventType = (typeof EVENT_TYPES)[number];",
        f"export const TERMINAL_STATUSES = {json.dumps(list(TERMINAL_STATUSES))} as const;",
        "export type TerminalStatus = (typeof TERMINAL_STATUSES)[number];",
        "",
        "/** The codes the server closes a websocket with. */",
        f"export const CLOSE_CODES = {json.dumps(CLOSE_CODES)} as const;",
        "",
        "/** Fields every event has. */",
        "export interface BaseFields {",
        "  seq: number;",
        "  type: EventType;",
        "  /** Server time in seconds. */",
        "  ts?: number;",
        "}",
    ]
    for type_, event in EVENTS.items():
        out += ["", f"/** {event.doc} */", f"export interface {_pascal(type_)}Fields {{"]
        for name, kind in event.fields.items():
            opt = "" if name in event.required else "?"
            null = "" if name in event.required else " | null"
            out.append(f"  {name}{opt}: {_TS[kind]}{null};")
        out.append("}")
    out += ["", "/** A websocket message that carries one part of a large event's JSON text. */",
            f"export const PART = {json.dumps(PART)};", "export interface PartMessage {"]
    out += [f"  {name}: {_TS[kind] if name != 'type' else 'typeof PART'};" for name, kind in PART_FIELDS.items()]
    out += ["}", "", "export interface EventFields {"]
    out += [f"  {type_}: {_pascal(type_)}Fields;" for type_ in EVENTS]
    out += ["}", ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(typescript())
