"""The checker: a runner of its own that runs an assignment's hidden checks, and the only process
that ever holds them. No student code runs here.

    supervisor ──{"op": "check", "checks", "wall_s"}──▶ checker   (stdin: the request, then one answer a line)
               ◀──ask {"id", "op", "name", ...}──      a name of the student's code: its value,
               ──{"id", "answer"}──▶                   a call, a lowering (relayed to the student's
                                                       runner, which holds no secret)
               ◀──check {name, passed, points, message}  one per check, as it is decided
               ◀──note {text}                          the instructor's: tracebacks, details
               ◀──grade {error}; exit

The check code runs with globals of its own (``ChecksScope``, a ``checking.StudentScope``): a
name it does not define and that is not a builtin is asked of the student's side
(runner/checking.py: the session, the student's functions and errors). This module runs the
checks one top-level statement at a time and decides whose fault an exception is: the student's,
or the checks' own crash.
"""

from __future__ import annotations

import ast
import builtins
import linecache

from . import checking, grades
from .checking import MissingName, Session, StudentError, StudentScope, instructor_traceback, student_message

CHECKS_FILENAME = "<checks>"


def run_checks(source: str, sess: Session) -> str | None:
    """Run the check source one top-level statement at a time; the instructor's error, if any.

    Whose fault a raised exception is (``crashed_by_checks``): the student's when their side
    answered with an error (a ``StudentError``), or, in a check, a failed assertion or a name their
    code lacks; any other is the checks' own crash. A check statement that crashed is reported
    crashed (it could not run, the grade needs a regrade) and its traceback is the instructor's
    error. A statement outside the checks that raised leaves the names it would have bound
    undefined (``ChecksScope.unbound``): a later check that uses one fails the same way, the
    student's failure or a crash, and the name is never asked of the student's code instead."""
    checking.begin(sess)
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
    from . import standin

    sess = Session(channel, stdin, request.get("wall_s"), standin)
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
