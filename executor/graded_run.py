"""A graded run, on the executor's side: the student's runner and a checker runner of its own,
and the narrow channel between them, through this process.

    supervisor thread (supervisor.Supervision)        checking thread (GradedRun)
      student runner: the code, its output, events      checker runner, started with the run
        "student_done" ─────────────────────────────▶   request("check") → checker
        "answer" {id} ──── answers (a queue) ───────▶   "ask" → student stdin; wait for the answer
                                                        "check", "note" → kept; "grade" → done
                                                        then the student's stdin is closed: it exits

The checks, their reference values and whatever decides the grade live only in the checker: the
student's runner sees its own names and the inputs a check sends, nothing else. The supervisor
relays one question at a time and takes only the answer to it: an answer nobody asked for, a
second ``student_done``, or a checker message from the student's side is interference, and an
interfered grade is no score (``grades.OUTCOME_INTERFERED``). Output and events of the student's
side after its code ended are the instructor's (the checks' inputs show in them).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from . import events as ev
from .runner import grades, protocol

log = logging.getLogger("executor")

READ_CHUNK = 64 * 1024
GRADING_LOG_MAX_CHARS = grades.LOG_MAX
# The checker's time after the student's code ended: the run's wall clock again, at least this.
MIN_CHECKS_WALL_S = 10.0
# How long the checker may take to start (a warm one is ready at once).
CHECKER_START_S = 60.0
_GONE = object()
# Check code that uses one of these will have the student's compiled functions read.
COMPILATION_HELPERS = re.compile(
    r"\b(lowered|no_float64|flops_under|no_host_callbacks|compile_count|max_compilations)\b")


@dataclass
class GradedRun:
    """The hidden checks of one graded run and what became of them."""

    checks: str
    acquire: Callable  # () -> a ready Runner: the checker
    release: Callable  # (runner) -> None
    launcher: object
    limits: object
    phase: str = "student"  # → "checking" → "done"
    student_status: str | None = None
    reported: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    log: list = field(default_factory=list)
    log_chars: int = 0
    interference: list = field(default_factory=list)
    error: str | None = None
    outcome: str | None = None
    questions: int = 0
    analyses: int = 0

    def __post_init__(self):
        self.answers: queue.Queue = queue.Queue()
        self.outstanding: int | None = None
        self.given_up: set[int] = set()  # questions that timed out: a late answer is no interference
        self.begin = threading.Event()
        self.ended = threading.Event()
        self.student_gone = threading.Event()
        self.cancelled = threading.Event()
        self.write_student: Callable[[bytes, float], bool] | None = None
        self.close_student: Callable[[], None] | None = None
        self.stop_student: Callable[[], None] | None = None
        self.checks_wall_s = max(float(getattr(self.limits, "wall_s", 30) or 30), MIN_CHECKS_WALL_S)
        self.thread = threading.Thread(target=self._main, name="checking", daemon=True)
        # The analyst: a third runner, started at the first compiled function to read (runner/analyst.py).
        self.analyst = None
        self.analyst_buffer = b""
        self.analyst_failed: str | None = None
        self.analyst_ready: threading.Thread | None = None
        self.released = False
        self.lock = threading.Lock()

    # -- called by the supervisor thread --------------------------------------------------------

    def start(self) -> None:
        """At the run's start: the checker is taken (warm) while the student's code runs."""
        self.thread.start()

    def add_log(self, text: str) -> None:
        with self.lock:
            room = GRADING_LOG_MAX_CHARS - self.log_chars
            if room > 0 and text:
                self.log.append(text[:room])
                self.log_chars += min(len(text), room)

    def interfered(self, what: str) -> None:
        if len(self.interference) < 20:
            self.interference.append(what)

    def on_student_done(self, fields: dict | None, *, write: Callable, close: Callable, stop: Callable) -> None:
        if self.phase != "student" or fields is None:
            self.interfered("a second or malformed 'student_done'")
            return
        status = fields.get("status")
        self.student_status = status if status in (ev.SUCCEEDED, ev.FAILED) else ev.FAILED
        self.write_student, self.close_student, self.stop_student = write, close, stop
        self.phase = "checking"
        self.begin.set()

    def on_answer(self, message: dict) -> None:
        ask_id = message.get("id")
        with self.lock:
            expected = self.outstanding
            if type(ask_id) is int and ask_id in self.given_up:
                return
            if self.phase != "checking" or expected is None or ask_id != expected or type(ask_id) is not int:
                self.interfered("an answer to no question")
                return
            self.outstanding = None
        answer = {k: message[k] for k in ("kind", "value", "error") if k in message}
        self.answers.put((ask_id, answer))

    def on_student_ended(self, cancelled: bool = False) -> None:
        """The student's runner is gone (exited, killed, cancelled)."""
        self.student_gone.set()
        if cancelled:
            self.cancelled.set()
        self.answers.put(_GONE)
        self.begin.set()  # a checker still waiting for the code to end has nothing to wait for

    def deadline_after_done(self) -> float:
        return self.checks_wall_s + 5.0

    def finish(self, finished: dict) -> dict:
        """Wait for the checks to end; the result for the recorder (``protocol.grade_fields``)."""
        if self.thread.is_alive() or self.thread.ident is not None:
            self.thread.join(self.checks_wall_s + CHECKER_START_S + 10)
        outcome = self.outcome
        error = self.error
        if self.phase == "student" or self.student_status is None:
            outcome = grades.OUTCOME_NOT_RUN
            why = (f"the code ended the run before the checks could run ({finished.get('status')}"
                   f"{': ' + finished['message'] if finished.get('message') else ''})")
            error = why if not error else f"{why}\n{error}"
        if outcome is None:
            outcome = grades.OUTCOME_INCOMPLETE
        if self.interference:
            outcome = grades.OUTCOME_INTERFERED
            error = "; ".join(self.interference) + (f"\n{error}" if error else "")
        notes = "\n".join(self.notes)
        log_text = "".join(self.log)
        if notes:
            log_text = f"{notes}\n{log_text}" if log_text else notes
        return protocol.grade_fields(self.reported, outcome, student_status=self.student_status or
                                     finished.get("status"), error=error, log=log_text)

    # -- the checking thread --------------------------------------------------------------------

    def _main(self) -> None:
        checker = None
        try:
            try:
                checker = self.acquire()
            except Exception as exc:  # noqa: BLE001 - the grade says so
                self.error = f"the checker could not start: {exc}"
                self.outcome = grades.OUTCOME_NOT_RUN
                return
            if COMPILATION_HELPERS.search(self.checks):
                # The checks will read compiled functions: the analyst starts beside them.
                self.analyst_ready = threading.Thread(target=self._start_analyst_early, name="analyst", daemon=True)
                self.analyst_ready.start()
            self.begin.wait()
            if self.phase != "checking" or self.cancelled.is_set():
                return
            self._check(checker)
        except Exception as exc:
            log.exception("the checks of a graded run failed")
            self.error = f"the executor failed while checking: {exc}"
            self.outcome = grades.OUTCOME_INCOMPLETE
        finally:
            self.phase = "done" if self.phase == "checking" else self.phase
            if self.close_student is not None:
                self.close_student()  # the student's side has nothing more to answer: it exits
            if checker is not None:
                self.release(checker)
            with self.lock:
                self.released = True
                analyst, self.analyst = self.analyst, None
            if analyst is not None:
                self.release(analyst)
            self.ended.set()

    def _check(self, checker) -> None:
        deadline = time.monotonic() + self.checks_wall_s
        self.launcher.restrict(checker.proc, self.limits)
        request = protocol.request("check", checks=self.checks, wall_s=self.checks_wall_s)
        stdin_fd = checker.proc.stdin.fileno()
        if not write_all(stdin_fd, request, deadline):
            self.error = "the checker did not take the checks"
            return
        fds = {checker.proc.stdout.fileno(): "out", checker.proc.stderr.fileno(): "out", checker.event_fd: "event"}
        buffer = checker.event_buffer
        while fds:
            now = time.monotonic()
            if now >= deadline:
                self.error = f"the checks did not finish within {self.checks_wall_s:g} s"
                self.outcome = grades.OUTCOME_INCOMPLETE
                return
            if self.cancelled.is_set():
                self.error = "the run was cancelled while the checks ran"
                self.outcome = grades.OUTCOME_INCOMPLETE
                return
            if (hit := self.launcher.limit_hit(checker.proc)) is not None:
                self.error = f"the checks stopped: {hit[1]}"
                self.outcome = grades.OUTCOME_INCOMPLETE
                return
            ready, _, _ = select.select(list(fds), [], [], min(0.1, deadline - now))
            for fd in ready:
                data = os.read(fd, READ_CHUNK)
                if not data:
                    del fds[fd]
                    continue
                if fds[fd] == "out":
                    self.add_log(data.decode("utf-8", "replace"))
                    continue
                buffer += data
                if len(buffer) > protocol.ANSWER_MAX_BYTES:
                    self.error = "the checker sent a message too large"
                    self.outcome = grades.OUTCOME_INCOMPLETE
                    return
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip() and self._on_checker_line(line, stdin_fd, deadline):
                        self.outcome = grades.OUTCOME_CHECKED
                        return
        self.error = self.error or "the checker ended before it reported the end of the checks"
        self.outcome = grades.OUTCOME_INCOMPLETE

    def _on_checker_line(self, line: bytes, stdin_fd: int, deadline: float) -> bool:
        """One message of the checker; True when it is the end ("grade")."""
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            return False
        if not isinstance(message, dict):
            return False
        type_ = message.pop("type", None)
        if type_ not in protocol.CHECKER_MESSAGES:
            return False  # the check code's own compiled/display events: not the grade's
        if type_ == "ask":
            ask = {k: message.get(k) for k in ("id", "op", "name", "args", "kwargs", "transform")}
            answer = self._analyse(ask, deadline) if ask["op"] == "analyse" else self._relay(ask, deadline)
            try:
                line = wire({"id": ask["id"], "answer": answer})
            except (TypeError, ValueError):  # what no JSON carries: that question fails, not the grading
                line = wire({"id": ask["id"], "answer": {"error": {"type": "Unsendable",
                                                                   "reason": "the answer could not be relayed"}}})
            write_all(stdin_fd, (line + "\n").encode(), deadline)
            return False
        fields = protocol.rebuild(type_, message, protocol.Problems(), spec=protocol.CHECKER_MESSAGES)
        if fields is None:
            return False
        if type_ == "check":
            if len(self.reported) < grades.CHECKS_MAX:
                self.reported.append(fields)
        elif type_ == "note":
            if sum(map(len, self.notes)) < protocol.NOTES_MAX_CHARS:
                self.notes.append(fields["text"][: protocol.NOTES_MAX_CHARS])
        elif type_ == "grade":
            self.error = fields.get("error") or None
            return True
        return False

    def _relay(self, ask: dict, deadline: float) -> dict:
        """One question to the student's side, and its answer (or why there is none)."""
        if ask["op"] not in protocol.ASK_OPS or type(ask["id"]) is not int or type(ask["name"]) is not str:
            return {"error": {"type": "missing"}}
        if self.student_gone.is_set():
            return {"error": {"type": "gone"}}
        self.questions += 1
        with self.lock:
            self.outstanding = ask["id"]
        try:
            line = (wire(ask) + "\n").encode()
        except (TypeError, ValueError):
            line = b""
        if not line or len(line) > protocol.ANSWER_MAX_BYTES:
            with self.lock:
                self.outstanding = None
            return {"error": {"type": "Unsendable", "reason": "the question is too large"}}
        if not self.write_student(line, deadline):
            with self.lock:
                self.outstanding = None
            return {"error": {"type": "gone"}}
        # The checker needs a moment after the last answer to report: the call may use the rest.
        wait_s = max(deadline - time.monotonic() - 1.0, 0.1)
        try:
            got = self.answers.get(timeout=wait_s)
        except queue.Empty:
            got = None
        if got is _GONE:
            return {"error": {"type": "gone"}}
        if got is None:
            with self.lock:
                self.outstanding = None
                self.given_up.add(ask["id"])
            if self.stop_student is not None:
                self.stop_student()  # stuck in the call: later questions find it gone
            return {"error": {"type": "timeout"}}
        return got[1]


    def _analyse(self, ask: dict, deadline: float) -> dict:
        """A compiled function the student's side handed over, read by the analyst (never by the
        checker, which holds the checks)."""
        if self.analyst_failed:
            return {"error": {"type": "Unsendable", "reason": self.analyst_failed}}
        try:
            if self.analyst_ready is not None:
                self.analyst_ready.join(max(deadline - time.monotonic(), 0))
            if self.analyst is None:
                self._start_analyst()
            self.analyses += 1
            line = (wire({"id": ask["id"], "op": "analyse", "args": ask.get("args")}) + "\n").encode()
            if not write_all(self.analyst.proc.stdin.fileno(), line, deadline):
                raise RuntimeError("it did not take the module")
            return self._analyst_answer(ask["id"], deadline - 1.0)
        except Exception as exc:  # noqa: BLE001 - the module is what failed, not the grading
            self.analyst_failed = f"the compiled function could not be read ({exc})"
            return {"error": {"type": "Unsendable", "reason": self.analyst_failed}}

    def _start_analyst_early(self) -> None:
        try:
            self._start_analyst()
        except Exception:
            log.warning("the analyst of a graded run could not start early", exc_info=True)

    def _start_analyst(self) -> None:
        with self.lock:
            if self.analyst is not None or self.released:
                return
        analyst = self.acquire()
        with self.lock:
            if self.released:  # the checks ended meanwhile
                self.release(analyst)
                return
            self.analyst = analyst
        self.launcher.restrict(analyst.proc, self.limits)
        self.analyst_buffer = analyst.event_buffer
        if not write_all(analyst.proc.stdin.fileno(), protocol.request("analyse"), time.monotonic() + CHECKER_START_S):
            raise RuntimeError("it did not take its request")

    def _analyst_answer(self, ask_id: int, deadline: float) -> dict:
        proc = self.analyst.proc
        fds = {self.analyst.event_fd: "event", proc.stdout.fileno(): "out", proc.stderr.fileno(): "out"}
        while time.monotonic() < deadline:
            *lines, rest = self.analyst_buffer.split(b"\n")
            for i, line in enumerate(lines):
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(message, dict) and message.get("type") == "answer" and message.get("id") == ask_id:
                    self.analyst_buffer = b"\n".join(lines[i + 1:] + [rest])
                    return {k: message[k] for k in ("value", "error") if k in message}
            self.analyst_buffer = rest
            ready, _, _ = select.select(list(fds), [], [], min(0.2, max(deadline - time.monotonic(), 0)))
            for fd in ready:
                data = os.read(fd, READ_CHUNK)
                if not data:
                    raise RuntimeError("the analyst stopped")
                if fds[fd] == "out":
                    self.add_log(data.decode("utf-8", "replace"))
                else:
                    self.analyst_buffer += data
                    if len(self.analyst_buffer) > protocol.ANSWER_MAX_BYTES:
                        raise RuntimeError("the analyst's answer was too large")
        raise RuntimeError("the analyst did not answer in time")


def wire(message) -> str:
    """One line between the processes of a graded run: ASCII JSON (a lone surrogate or a NaN in a
    value crosses as JSON's escape or literal, which Python's json reads back)."""
    return json.dumps(message, ensure_ascii=True, allow_nan=True, separators=(",", ":"))


def write_all(fd: int, data: bytes, deadline: float) -> bool:
    """Write ``data`` to a pipe by ``deadline`` (a reader that stops reading does not hold us)."""
    view = memoryview(data)
    try:
        os.set_blocking(fd, False)
    except OSError:
        return False
    while view:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            _, writable, _ = select.select([], [fd], [], min(remaining, 0.5))
            if writable:
                view = view[os.write(fd, view):]
        except BlockingIOError:
            continue
        except (OSError, ValueError):
            return False
    return True
