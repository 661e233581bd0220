"""The checker: a runner of its own that runs an assignment's hidden checks, and the only process
that ever holds them. No student code runs here.

    supervisor ──{"checks", "wall_s"}──▶ checker      (stdin: the request, then one answer a line)
               ◀──ask {"id", "op", "name", ...}──      a name of the student's code: its value,
               ──{"id", "answer"}──▶                   a call, a lowering (relayed to the student's
                                                       runner, which holds no secret)
               ◀──check {name, passed, points, message}  one per check, as it is decided
               ◀──note {text}                          the instructor's: tracebacks, details
               ◀──grade {error}; exit

The check code runs with globals of its own (``StudentScope``): a name it does not define and
that is not a builtin is asked of the student's side. A function comes back as a
``StudentFunction``, which calls over the channel with data in and data out
(``runner.values``); a module name comes back as the checker's own import of that module; a
value comes back as data. Whatever the student's code did to its own modules, seeds or builtins
stays in its process.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import json
import linecache
import sys
import time
import traceback

from . import grades, values

CHECKS_FILENAME = "<checks>"

_session: list = [None]  # the checks session of this process (a checker runs one)


def session():
    return _session[0]


class StudentError(Exception):
    """What the student's side answered instead of a value: its function raised (type and line),
    returned what cannot be sent, took too long, or its process is gone. ``student_message`` is
    what the student may be told; nothing of the check's inputs or values is in it."""

    def __init__(self, student_message: str, detail: str = ""):
        super().__init__(student_message)
        self.student_message = student_message
        self.detail = detail


def _answer_error(name: str, error) -> StudentError:
    error = error if type(error) is dict else {}
    kind = values.short_name(error.get("type") or "Exception")
    line = error.get("line") if type(error.get("line")) is int else None
    reason = error.get("reason") if type(error.get("reason")) is str else ""
    if kind == "timeout":
        return StudentError(f"{name} did not return in time")
    if kind == "gone":
        return StudentError(f"{name} could not be called: your code's process had ended")
    if kind == "Unsendable":
        return StudentError(f"{name} returned a value the checks cannot receive "
                            "(arrays, numbers, strings, lists, tuples, dicts and None can)", reason[:200])
    if kind == "missing":
        return StudentError(f"your code does not define {name}")
    where = f" at line {line} of your code" if line else ""
    return StudentError(f"{name} raised {kind}{where}")


class StudentFunction:
    """A function of the student's code, called in the student's process: arguments go as data,
    the result comes back as data (or a StudentError)."""

    def __init__(self, name: str, transform: str | None = None):
        self.__name__ = self.name = name
        self.transform = transform

    def __call__(self, *args, **kwargs):
        return session().ask("call", self.name, args=args, kwargs=kwargs, transform=self.transform)

    def __repr__(self) -> str:
        return f"<your {'gradient of ' if self.transform == 'grad' else ''}function {self.name}>"


# The modules a student's name may stand for in the checks (``np`` for numpy): the checker's own
# import of one of the playground's libraries (or a module it has already loaded), never a module
# that runs something when imported (``__main__``s, the runner's own).
IMPORTABLE_PACKAGES = frozenset({"numpy", "scipy", "jax", "jaxlib", "optax", "flax", "equinox", "chex", "einops",
                                 "matplotlib", "math", "cmath", "functools", "itertools", "collections", "operator",
                                 "statistics", "random", "string", "re", "json", "dataclasses", "typing"})


def importable(module):
    if type(module) is not str or not all(part.isidentifier() for part in module.split(".")):
        return None
    if "__main__" in module or module.split(".")[0] not in IMPORTABLE_PACKAGES:
        return None
    if module in sys.modules:
        return sys.modules[module]
    try:
        return importlib.import_module(module)  # the checker's own
    except ImportError:
        return None


class StudentScope(dict):
    """The check code's globals: what it defines, else the student's names (asked once each)."""

    def __missing__(self, name):
        if not isinstance(name, str) or name.startswith("__") or hasattr(builtins, name):
            raise KeyError(name)
        value = session().lookup(name)
        self[name] = value
        return value


class Session:
    def __init__(self, channel, stdin, wall_s: float | None):
        self.channel = channel
        self.stdin = stdin
        self.next_id = 0
        self.deadline = time.monotonic() + wall_s if wall_s else None
        self.reported: set[str] = set()

    # -- the channel ---------------------------------------------------------------------------

    def _read_answer(self, ask_id: int) -> dict:
        line = self.stdin.readline()
        if not line:
            raise SystemExit(0)  # the supervisor ended the checks
        message = json.loads(line)
        if message.get("id") != ask_id:
            raise RuntimeError("the supervisor answered another question")
        return message.get("answer") or {}

    def ask(self, op: str, name: str, *, args=(), kwargs=None, transform=None):
        """Ask the student's side; the decoded value, or a StudentError."""
        self.next_id += 1
        ask_id = self.next_id
        try:
            payload = {"args": values.encode(list(args)), "kwargs": values.encode(dict(kwargs or {}))}
        except values.Unsendable as exc:
            raise TypeError(f"the checks cannot send {exc} to the student's code") from None
        self.channel.send("ask", id=ask_id, op=op, name=name, transform=transform, **payload)
        answer = self._read_answer(ask_id)
        if "error" in answer:
            raise _answer_error(name, answer["error"])
        if op == "get":
            return answer
        try:
            return values.decode(answer.get("value"))
        except (values.Unsendable, ValueError, TypeError) as exc:
            raise StudentError(f"{name} sent back a value the checks cannot read", str(exc)[:200]) from None

    def lookup(self, name: str):
        """A name of the student's code, as the checks see it."""
        answer = self.ask("get", name)
        kind = answer.get("kind")
        if kind == "callable":
            return StudentFunction(name)
        if kind == "module":
            module = importable(answer.get("value"))
            if module is not None:
                return module
            raise KeyError(name)
        if kind == "value":
            try:
                return values.decode(answer.get("value"))
            except (values.Unsendable, ValueError, TypeError) as exc:
                raise StudentError(f"{name} holds a value the checks cannot read", str(exc)[:200]) from None
        raise KeyError(name)  # missing: a NameError in the check

    # -- results -------------------------------------------------------------------------------

    def record(self, name, passed, points, message, detail: str = "") -> None:
        result = grades.check_result({"name": name if type(name) is str else str(name), "passed": passed is True,
                                      "points": points, "message": message if type(message) is str else str(message)})
        if result is None:
            self.note("a check without a name was not reported")
            return
        self.reported.add(result["name"])
        self.channel.send("check", **result)
        if detail:
            self.note(f"check {result['name']!r}: {detail}")

    def note(self, text: str) -> None:
        self.channel.send("note", text=text[: grades.LOG_MAX])


def instructor_traceback(exc: BaseException) -> str:
    """The traceback for the instructor: the check code's frames (and the checker's helpers)."""
    try:
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:  # noqa: BLE001 - an exception whose message cannot be formatted (its __str__ raised)
        return f"{type(exc).__name__} (its message could not be read)\n"


def student_message(exc: BaseException) -> str:
    """What a student is told of a check that raised: the student's side's own words (type and
    line), an assertion's message (the instructor wrote it), or only that the check could not
    use the result."""
    if isinstance(exc, StudentError):
        return exc.student_message
    if isinstance(exc, AssertionError):
        return grades.text(str(exc), grades.CHECK_MESSAGE_MAX) or "assertion failed"
    return f"the check could not use your code's result ({type(exc).__name__})"


def run_checks(source: str, sess: Session) -> str | None:
    """Run the check source one top-level statement at a time; the instructor's error, if any."""
    _session[0] = sess
    linecache.cache[CHECKS_FILENAME] = (len(source), None, source.splitlines(True), CHECKS_FILENAME)
    try:
        tree = ast.parse(source, CHECKS_FILENAME)
    except (SyntaxError, ValueError) as exc:
        return f"the checks do not compile: {getattr(exc, 'msg', exc)} (line {getattr(exc, 'lineno', '?')})"
    scope = StudentScope(__name__="__checks__", __builtins__=builtins)
    from . import checklib

    scope["check"] = checklib.check
    errors = []
    for stmt in tree.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        declared = grades.declared_check(call) if call is not None else None
        code = compile(ast.Module([stmt], []), CHECKS_FILENAME, "exec", dont_inherit=True)
        try:
            exec(code, scope)
        except Exception as exc:  # noqa: BLE001 - a check's failure is a result
            tb = instructor_traceback(exc)
            if isinstance(exc, StudentError) and exc.detail:
                tb += f"({exc.detail})\n"
            if declared is not None and declared["name"] not in sess.reported:
                sess.record(declared["name"], False, declared["points"], student_message(exc))
                sess.note(f"check {declared['name']!r}:\n{tb}")
            else:
                errors.append(tb)
        except BaseException as exc:  # noqa: BLE001 - SystemExit: the checks end here
            errors.append(instructor_traceback(exc))
            break
    return "\n".join(errors) or None


def serve_checks(request: dict, channel, stdin) -> None:
    """The checker's one job. Never returns."""
    from . import common

    common.flush_user_streams()
    sess = Session(channel, stdin, request.get("wall_s"))
    error = None
    try:
        error = run_checks(str(request.get("checks") or ""), sess)
    except BaseException as exc:  # noqa: BLE001 - reported, then the process ends
        error = instructor_traceback(exc)
    common.flush_user_streams()
    channel.send("grade", error=error)
    common.leave(channel.fd, 0)

