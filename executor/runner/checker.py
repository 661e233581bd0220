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
import threading
import time
import traceback

from . import grades, values

CHECKS_FILENAME = "<checks>"
MAX_LINE = 1_000_000  # a student's line as the student is told it: a number, not a channel

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
    transformed), it is a JAX function of the checker's (``standin.traced_call``)."""

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
        from . import standin

        if standin.has_tracer((args, kwargs)):
            return standin.traced_call(self, args, kwargs)
        result = self._ask("call", args, kwargs)
        return standin.verify(self, args, kwargs, result) if self.chain else result

    def eval_shape(self, *args, **kwargs):
        """``jax.eval_shape`` of it, by the student's JAX: ShapeDtypeStructs."""
        return self._ask("shape", args, kwargs)

    def make_jaxpr(self, *args, **kwargs):
        """``jax.make_jaxpr`` of it, by the student's JAX (``standin.StudentJaxpr``)."""
        from .standin import StudentJaxpr, proven_traceable
        from .transforms import SAME_VALUES

        proven_traceable(self.without(SAME_VALUES), args, kwargs)  # the jaxpr is the side's word
        return StudentJaxpr(self._ask("jaxpr", args, kwargs), self.name)

    def lower(self, *args, **kwargs):
        """``jax.jit(f).lower(*args)``: the module the student's side hands over, read and run by
        the analyst (``standin.StudentLowered``)."""
        from .checklib import lowered
        from .standin import StudentLowered

        return StudentLowered(lowered(self, *args, **kwargs))

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
    def __init__(self, channel, stdin, wall_s: float | None):
        self.channel = channel
        self.stdin = stdin
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


def run_checks(source: str, sess: Session) -> str | None:
    """Run the check source one top-level statement at a time; the instructor's error, if any.

    Whose fault a raised exception is (``crashed_by_checks``): the student's when their side
    answered with an error (a ``StudentError``), or, in a check, a failed assertion or a name their
    code lacks; any other is the checks' own crash. A check statement that crashed is reported
    crashed (it could not run, the grade needs a regrade) and its traceback is the instructor's
    error. A statement outside the checks that raised leaves the names it would have bound
    undefined (``ChecksScope.unbound``): a later check that uses one fails the same way, the
    student's failure or a crash, and the name is never asked of the student's code instead."""
    _session[0] = sess
    linecache.cache[CHECKS_FILENAME] = (len(source), None, source.splitlines(True), CHECKS_FILENAME)
    try:
        tree = ast.parse(source, CHECKS_FILENAME)
    except (SyntaxError, ValueError) as exc:
        return f"the checks do not compile: {getattr(exc, 'msg', exc)} (line {getattr(exc, 'lineno', '?')})"
    scope = ChecksScope(__name__="__checks__", __builtins__=builtins)
    from . import checklib

    scope["check"] = checklib.check
    errors = []
    for stmt in tree.body:
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        declared = grades.declared_check(call) if call is not None else None
        code = compile(ast.Module([stmt], []), CHECKS_FILENAME, "exec", dont_inherit=True)
        sess.callback_error = None
        try:
            exec(code, scope)
        except Exception as exc:  # noqa: BLE001 - a check's failure is a result
            exc = sess.student_cause(exc)
            tb = instructor_traceback(exc)
            if isinstance(exc, StudentError) and exc.detail:
                tb += f"({exc.detail})\n"
            if declared is not None and declared["name"] not in sess.reported:
                crashed = crashed_by_checks(exc, in_check=True)
                sess.record(declared["name"], False, declared["points"], student_message(exc))
                if crashed:
                    errors.append(f"check {declared['name']!r} could not run:\n{tb}")
                else:
                    sess.note(f"check {declared['name']!r}:\n{tb}")
                continue
            crashed = crashed_by_checks(exc, in_check=False)
            scope.leave_undefined(bound_names(stmt), exc, stmt.lineno, crashed=crashed)
            if not crashed:
                sess.note(f"line {stmt.lineno} of the checks raised in the student's code:\n{tb}")
                continue
            errors.append(tb)
            report_unrun_checks(sess, stmt)
        except BaseException as exc:  # noqa: BLE001 - SystemExit: the checks end here
            errors.append(instructor_traceback(exc))
            break
        else:
            # A ``with check(...):`` block that failed ended quietly (its check reported why): what
            # it would have bound fails the checks that need it, as that check did.
            block = check_block_name(stmt)
            if block is not None:
                scope.leave_undefined(bound_names(stmt), StudentError(f"this check needs what check {block} "
                                                                      "computes, which failed"),
                                      stmt.lineno, crashed=False)
    return "\n".join(errors) or None


def serve_checks(request: dict, channel, stdin) -> None:
    """The checker's one job. Never returns."""
    from . import common

    common.flush_user_streams()
    sess = Session(channel, stdin, request.get("wall_s"))
    from . import standin

    standin.install()  # jax.grad(f) of a student's f, and the rest (the template imported jax)
    error = None
    try:
        error = run_checks(str(request.get("checks") or ""), sess)
    except BaseException as exc:  # noqa: BLE001 - reported, then the process ends
        error = instructor_traceback(exc)
    common.flush_user_streams()
    channel.send("grade", error=error)
    common.leave(channel.fd, 0)


# -- whose fault: the student's code, or the checks' own -----------------------------------------


class MissingName(NameError):
    """A name the check code used that neither it nor the student's code defines: in a check, the
    student's failure (their code lacks it); elsewhere, the checks' own."""

    def __init__(self, name: str):
        super().__init__(f"name {name!r} is not defined (not by the checks, nor by the student's code)", name=name)


class NotDefined(NameError):
    """A name an earlier statement of the checks would have bound, had it not crashed."""

    def __init__(self, name: str, line: int, cause: BaseException):
        super().__init__(f"name {name!r} is not defined: line {line} of the checks, which binds it, raised "
                         f"{type(cause).__name__}", name=name)


def crashed_by_checks(exc: BaseException, *, in_check: bool) -> bool:
    """Whether an exception of the check code is the checks' own crash (the instructor's to fix)
    rather than the student's failure: their side's error, or in a check a failed assertion or a
    name their code lacks."""
    if isinstance(exc, StudentError):
        return False
    return not (in_check and isinstance(exc, (AssertionError, MissingName)))


class ChecksScope(StudentScope):
    """The check code's globals (``StudentScope``), which also remember the names a statement that
    raised left unbound: such a name raises again what kept it unbound (the student's error, or
    ``NotDefined``) rather than being asked of the student's code, whose own value would take the
    checks' place."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.unbound: dict[str, tuple[BaseException, int, bool]] = {}

    def leave_undefined(self, names, cause: BaseException, line: int, *, crashed: bool) -> None:
        for name in names:
            if name not in self:
                self.unbound[name] = (cause, line, crashed)

    def __missing__(self, name):
        if isinstance(name, str) and name in self.unbound:
            cause, line, crashed = self.unbound[name]
            if not crashed and isinstance(cause, StudentError):
                raise StudentError(cause.student_message, f"{name} was not bound: line {line} raised")
            raise NotDefined(name, line, cause)
        try:
            return super().__missing__(name)
        except KeyError:
            if isinstance(name, str) and not name.startswith("__") and not hasattr(builtins, name):
                raise MissingName(name) from None
            raise


def bound_names(stmt: ast.stmt) -> set[str]:
    """The global names a top-level statement binds (assigned, imported, defined, loop and
    ``with``/``except`` targets), not those of the functions, classes and comprehensions in it."""
    names: set[str] = set()
    pending: list[ast.AST] = [stmt]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*")
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        pending.extend(ast.iter_child_nodes(node))
    return names


def report_unrun_checks(sess: Session, stmt: ast.stmt) -> None:
    """The checks inside a statement that crashed (a loop of checks, a function that reports
    some) could not run: each declared one it had not reported, and, when it has checks with
    computed names, one for those (their names are not known)."""
    computed = False
    for _, declared in grades.check_calls(stmt):
        if declared is None:
            computed = True
        elif declared["name"] not in sess.reported:
            sess.record(declared["name"], False, declared["points"], grades.CHECK_CRASHED_MESSAGE)
    if computed:
        sess.record(f"the checks at line {stmt.lineno}", False, 0, grades.CHECK_CRASHED_MESSAGE)


def check_block_name(stmt: ast.stmt) -> str | None:
    """The name of the check a top-level ``with check(...):`` statement is ("a check" when
    computed); None for any other statement."""
    if not isinstance(stmt, ast.With):
        return None
    for item in stmt.items:
        if grades.is_check_call(item.context_expr):
            declared = grades.declared_check(item.context_expr, context_manager=True)
            return repr(declared["name"]) if declared else "a check"
    return None
