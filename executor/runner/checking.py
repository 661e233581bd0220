"""A graded run's checks, as the checker's own code sees them: the session with the student's
side (``Session``: one question at a time through the supervisor, the results as they are
decided), what the check code's globals find (``StudentScope``: a name it does not define is asked
of the student's side), a function of the student's code (``StudentFunction``: data in, data out),
the student's errors (``StudentError``), and whose words a student is told of a check that raised
(``student_message``; the instructor gets ``instructor_traceback``).

The checker (runner/checker.py) runs the checks with these; the helpers the checks import
(runner/checklib.py, ``jaxplay.grading``) and jax's transformations of a student's function
(runner/standin.py) use them too, and this module imports none of the three.

A function comes back as a ``StudentFunction``, which calls over the channel with data in and data
out (``runner.values``); a module name comes back as the checker's own import of that module; a
value comes back as data. Whatever the student's code did to its own modules, seeds or builtins
stays in its process.
"""

from __future__ import annotations

import builtins
import importlib
import json
import sys
import threading
import time
import traceback

from . import grades, values

MAX_LINE = 1_000_000  # a student's line as the student is told it: a number, not a channel

_session: list = [None]  # the checks session of this process (a checker runs one)


def session():
    """This process's checks session (None outside a checker's checks)."""
    return _session[0]


def begin(sess: Session) -> None:
    """The checks about to run use ``sess`` (runner/checker.py)."""
    _session[0] = sess


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
    line = error.get("line") if type(error.get("line")) is int and 0 < error.get("line") <= MAX_LINE else None
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
    the result comes back as data (or a StudentError). ``chain`` is the JAX transformations a
    check applied to it (``jax.grad(f)``: ``[("grad", {})]``, ``runner.transforms``), which the
    student's side applies with its own JAX; called with tracers (the check's own function
    transformed), it is a JAX function of the checker's (``standin.traced_call``). What a call,
    ``make_jaxpr`` and ``lower`` do is the session's stand-in's (runner/standin.py)."""

    def __init__(self, name: str, transform=None):
        from . import transforms

        self.__name__ = self.name = name
        self.chain = tuple(transforms.clean_chain(transform))

    def then(self, step: str, params: dict) -> StudentFunction:
        """This function with one more transformation (``jax.<step>(self, **params)``)."""
        return StudentFunction(self.name, [*self.chain, (step, params)])

    def plain(self) -> StudentFunction:
        return StudentFunction(self.name)

    def without(self, steps) -> StudentFunction:
        """This function without the given steps (jit: the same values, uncompiled)."""
        return StudentFunction(self.name, [(s, p) for s, p in self.chain if s not in steps])

    def _ask(self, op: str, args, kwargs):
        return session().ask(op, self.name, args=args, kwargs=kwargs, transform=list(self.chain) or None)

    def __call__(self, *args, **kwargs):
        return session().standin.call(self, args, kwargs)

    def eval_shape(self, *args, **kwargs):
        """``jax.eval_shape`` of it, by the student's JAX: ShapeDtypeStructs."""
        return self._ask("shape", args, kwargs)

    def make_jaxpr(self, *args, **kwargs):
        """``jax.make_jaxpr`` of it, by the student's JAX (``standin.StudentJaxpr``)."""
        return session().standin.make_jaxpr(self, args, kwargs)

    def lower(self, *args, **kwargs):
        """``jax.jit(f).lower(*args)``: the module the student's side hands over, read and run by
        the analyst (``standin.StudentLowered``)."""
        return session().standin.lower(self, args, kwargs)

    def __repr__(self) -> str:
        text = f"your function {self.name}"
        for step, _ in self.chain:
            text = f"jax.{step}({text})"
        return f"<{text}>"


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
    """The checks' one session in the checker: the channel to the student's side through the
    supervisor, one question at a time, and the checks' results as they are decided.

    ``standin`` is what a student's function does in this process when called, traced, or asked
    for its jaxpr or lowering (runner/standin.py: ``call``, ``make_jaxpr``, ``lower``). The
    checker gives it: standin imports this module, never the other way round."""

    def __init__(self, channel, stdin, wall_s: float | None, standin):
        self.channel = channel
        self.stdin = stdin
        self.standin = standin
        self.next_id = 0
        self.deadline = time.monotonic() + wall_s if wall_s else None
        self.reported: set[str] = set()
        # A question asked from a JAX callback (XLA's thread, while the check waits in it): one
        # at a time, and the student's error kept, since JAX raises its own in its place.
        self.lock = threading.Lock()
        self.callback_error: StudentError | None = None
        self.student_values: dict[int, tuple[str, object]] = {}  # id -> (name, the value itself)

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
        try:
            payload = {"args": values.encode(list(args)), "kwargs": values.encode(dict(kwargs or {})),
                       "transform": values.encode(transform) if transform else None}
        except values.Unsendable as exc:
            raise TypeError(f"the checks cannot send {exc} to the student's code") from None
        with self.lock:
            self.next_id += 1
            ask_id = self.next_id
            self.channel.send("ask", id=ask_id, op=op, name=name, **payload)
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
                return self.remember(name, values.decode(answer.get("value")))
            except (values.Unsendable, ValueError, TypeError) as exc:
                raise StudentError(f"{name} holds a value the checks cannot read", str(exc)[:200]) from None
        raise KeyError(name)  # missing: a NameError in the check

    def remember(self, name: str, value):
        """A value of the student's code, as the checks got it: known by its identity after."""
        self.student_values[id(value)] = (name, value)
        return value

    def student_value_name(self, value) -> str | None:
        """The student's name of a value the checks got from their code, else None."""
        known = self.student_values.get(id(value))
        return known[0] if known is not None and known[1] is value else None

    def student_cause(self, exc: BaseException) -> BaseException:
        """The student's error behind an exception JAX raised in its place (a check's jitted
        function whose callback asked the student's side, which answered an error), else ``exc``."""
        error, self.callback_error = self.callback_error, None
        if error is not None and not isinstance(exc, StudentError):
            return error
        if type(exc) is TypeError and "object is not callable" in str(exc):
            # ``square = 9`` in the student's code, and a check's ``square(3.0)``: theirs.
            for name, value in self.student_values.values():
                if not callable(value) and f"'{type(value).__name__}' object is not callable" in str(exc):
                    return StudentError(f"{name} is not a function")
        return exc

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


class MissingName(NameError):
    """A name the check code used that neither it nor the student's code defines: in a check, the
    student's failure (their code lacks it); elsewhere, the checks' own."""

    def __init__(self, name: str):
        super().__init__(f"name {name!r} is not defined (not by the checks, nor by the student's code)", name=name)


def instructor_traceback(exc: BaseException) -> str:
    """The traceback for the instructor: the check code's frames (and the checker's helpers)."""
    try:
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:  # noqa: BLE001 - an exception whose message cannot be formatted (its __str__ raised)
        return f"{type(exc).__name__} (its message could not be read)\n"


def student_message(exc: BaseException) -> str:
    """What a student is told of a check that raised: the student's side's own words (type and
    line), an assertion's message (the instructor wrote it), that their code lacks a name the check
    used, or, for anything else the check's own code raised, only that the check could not run
    (``grades.CHECK_CRASHED_MESSAGE``: the check is reported crashed, the instructor's to fix)."""
    if isinstance(exc, StudentError):
        return exc.student_message
    if isinstance(exc, AssertionError):
        return grades.text(str(exc), grades.CHECK_MESSAGE_MAX) or "assertion failed"
    if isinstance(exc, MissingName):
        return f"your code does not define {exc.name}"
    return grades.CHECK_CRASHED_MESSAGE
