"""Graded runs: an assignment's hidden checks run after the student's code, in its globals, where
that code can neither read, change nor forge them.

    supervisor                                   runner
      request {"code", "grade": {"nonce"}} ──▶   install(): the guard, a snapshot of the libraries
                                                 the student's code runs
                                            ◀──  "student_done" {nonce, status}  (restore() first)
      {"checks", "token"} ──▶ (stdin, closed)     the checks run (grade()); their output and
                                                 events reach the instructor only
                                            ◀──  "grade" {token, checks, error}; exit

The checks are not in the process while the student's code runs: they are sent only once the
supervisor has the ``student_done`` that carries the request's nonce. Their results count only
with the token that came with them. Both secrets live in the runner's own frames, and a graded
run cannot reach a frame: the guard (an audit hook, which nothing can remove) refuses every way
to one (``sys._getframe``, a traceback's, generator's or coroutine's frame, ``sys._current_frames``)
to all code but the runner's, and everything that reads memory around Python's rules (ctypes,
``gc.get_objects``/``get_referrers``), swaps a function's code, traces or monitors execution, adds
audit hooks, starts threads or processes. What the student's code changed in the libraries
(functions and classes of every module imported before it ran, builtins, ``sys.modules``, the
import system, signal handlers) is put back before the checks run, so a patched
``numpy.allclose`` or ``jax.Array.__array__`` does not reach them. ``check`` is handed to the
check code alone and takes reports only from it: a student function that a check calls, and
that calls ``check`` (or the ``jaxplay.grading.check`` stub), reports nothing.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import signal
import sys
import threading
import types

from . import common

CHECKS_FILENAME = "<checks>"
# Events a graded run refuses (a prefix ends with a dot).
REFUSED = (
    "ctypes.", "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "sys._current_frames", "sys._current_exceptions", "sys.settrace", "sys.setprofile",
    "sys._settraceallthreads", "sys._setprofileallthreads", "sys.monitoring.", "_thread.start_new_thread",
    "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system", "subprocess.Popen",
    "os.kill", "os.killpg", "signal.pthread_kill",
)
FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
FUNCTION_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
LOG_MAX_CHARS = 64 * 1024
MESSAGE_MAX_CHARS = 2000
NAME_MAX_CHARS = 200
_MISSING = object()


def _is_refused(event: str) -> bool:
    return any(event.startswith(r) if r.endswith(".") else event == r for r in REFUSED)


def _code_objects(code: types.CodeType, into: set) -> set:
    into.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_objects(const, into)
    return into


def _module_codes(module) -> set:
    """Every code object of a module's functions and classes, nested ones included."""
    codes: set = set()
    for value in list(vars(module).values()):
        items = [value]
        if isinstance(value, type) and getattr(value, "__module__", None) == module.__name__:
            items += list(vars(value).values())
        for item in items:
            item = getattr(item, "__func__", item)  # staticmethod, classmethod
            if isinstance(item, property):
                items += [item.fget, item.fset, item.fdel]
                continue
            code = getattr(item, "__code__", None)
            if isinstance(code, types.CodeType):
                _code_objects(code, codes)
    return codes


# Library modules whose functions look at frames and hand none out: JAX's lazy loader (it names
# its caller's module when a JAX package is first imported), JAX's traceback filter (it looks
# for itself up an exception's stack) and matplotlib's warn_external (it finds the caller to warn).
TRUSTED_LIBRARY_MODULES = ("jax._src.lazy_loader", "jax._src.traceback_util", "matplotlib._api")


def trusted_codes() -> frozenset:
    """The code that may reach frames in a graded run: the runner's own and TRUSTED_LIBRARY_MODULES."""
    package = __name__.rpartition(".")[0]
    codes: set = set()
    for name, module in list(sys.modules.items()):
        if name == package or name.startswith(package + ".") or name in TRUSTED_LIBRARY_MODULES:
            codes |= _module_codes(module)
    return frozenset(codes)


def install_guard(trusted: frozenset) -> None:
    """The audit hook of a graded run. It holds no secret: it only refuses."""
    getframe = sys._getframe
    get_ident = threading.get_ident
    thread_start = threading.Thread.start.__code__  # the runner's own threads start through it
    inside: set[int] = set()

    def guard(event: str, args: tuple) -> None:
        ident = get_ident()
        if ident in inside:
            return  # the guard's own look at its caller
        if event == "sys._getframe" or (event == "object.__getattr__" and args[1] in FRAME_ATTRIBUTES):
            inside.add(ident)
            try:
                allowed = getframe(1).f_code in trusted
            finally:
                inside.discard(ident)
            if not allowed:
                raise PermissionError(f"a graded run cannot inspect stack frames ({_what(event, args)})")
        elif event == "_thread.start_new_thread":
            inside.add(ident)
            try:  # Thread.start, called by the runner's own code
                frame = getframe(1)
                allowed = frame.f_code is thread_start and frame.f_back is not None and frame.f_back.f_code in trusted
            finally:
                inside.discard(ident)
            if not allowed:
                raise PermissionError("a graded run cannot start threads")
        elif event == "sys.addaudithook":
            raise RuntimeError("a graded run cannot add audit hooks")  # Python drops the new hook silently
        elif event == "object.__setattr__" and isinstance(args[0], types.FunctionType) \
                and args[1] in FUNCTION_ATTRIBUTES:
            raise PermissionError(f"a graded run cannot replace a function's {args[1]}")
        elif _is_refused(event):
            raise PermissionError(f"a graded run cannot use {event}")

    sys.addaudithook(guard)


def _what(event: str, args: tuple) -> str:
    return event if event != "object.__getattr__" else f".{args[1]}"


class Snapshot:
    """The libraries as they were before the student's code: the functions, classes and modules
    each module's namespace held, the callables each of their classes held, builtins, sys.modules
    and the import system. ``restore`` puts back what changed; data the libraries keep (caches,
    the JAX backend) is left as it is. Flat lists, so that a look costs milliseconds."""

    def __init__(self):
        self.module_entries = []  # (name, module)
        self.entries = []  # (namespace, key, value, owner's name): module and builtins namespaces
        self.class_entries = []  # (class, key, value)
        self.sizes = []  # (namespace, keys it had): a name added to a library namespace
        classes = {}
        for name, module in list(sys.modules.items()):
            if not isinstance(module, types.ModuleType):
                continue
            namespace = vars(module)
            self.module_entries.append((name, module))
            self.sizes.append((name, namespace, frozenset(namespace)))
            for key, value in namespace.items():
                if _is_api(value) or module is builtins:
                    self.entries.append((namespace, key, value, name))
                    if isinstance(value, type) and id(value) not in classes:
                        classes[id(value)] = value
        for cls in classes.values():
            proxy = vars(cls)
            for key, value in proxy.items():
                if _is_api(value):
                    self.class_entries.append((cls, proxy, key, value))
        self.class_sizes = [(cls, frozenset(vars(cls))) for cls in classes.values()]
        self.sys = {k: getattr(sys, k) for k in ("displayhook", "excepthook", "unraisablehook", "breakpointhook",
                                                  "stdin", "stdout", "stderr")}
        self.lists = {k: list(getattr(sys, k)) for k in ("meta_path", "path_hooks", "path")}

    def rebase(self) -> None:
        """Take what changed since as the new baseline (a template's snapshot, taken before the
        fork, brought up to date in the runner: a few milliseconds rather than tens)."""
        self.entries = [(ns, key, ns.get(key, value), owner) for ns, key, value, owner in self.entries]
        self.class_entries = [(cls, proxy, key, proxy.get(key, value)) for cls, proxy, key, value in self.class_entries]
        self.sizes = [(owner, ns, frozenset(ns) if len(ns) != len(keys) else keys) for owner, ns, keys in self.sizes]
        self.class_sizes = [(cls, frozenset(vars(cls)) if len(vars(cls)) != len(keys) else keys)
                            for cls, keys in self.class_sizes]
        self.sys = {k: getattr(sys, k) for k in self.sys}
        self.lists = {k: list(getattr(sys, k)) for k in self.lists}

    def restore(self) -> list[str]:
        """Put back what changed; return the names that had (``module.name``, ``Class.name``)."""
        changed = []
        modules = sys.modules
        for name, module in self.module_entries:
            if modules.get(name) is not module:
                modules[name] = module
                changed.append(f"sys.modules[{name!r}]")
        for namespace, key, value, owner in self.entries:
            if namespace.get(key, _MISSING) is not value:
                namespace[key] = value
                changed.append(f"{owner}.{key}")
        for owner, namespace, keys in self.sizes:
            if len(namespace) != len(keys):
                for key in [k for k in namespace if k not in keys]:
                    if owner == "builtins" or (isinstance(key, str) and hasattr(builtins, key)):
                        del namespace[key]  # a name that shadows a builtin in a library's globals
                        changed.append(f"{owner}.{key}")
        for cls, proxy, key, value in self.class_entries:
            if proxy.get(key, _MISSING) is not value:
                changed.append(f"{cls.__module__}.{cls.__qualname__}.{key}")
                try:
                    setattr(cls, key, value)
                except (TypeError, AttributeError):
                    pass
        for cls, keys in self.class_sizes:
            current = vars(cls)
            if len(current) != len(keys):
                for key in [k for k, v in current.items() if k not in keys and _is_api(v)]:
                    changed.append(f"{cls.__module__}.{cls.__qualname__}.{key}")
                    try:
                        delattr(cls, key)
                    except (TypeError, AttributeError):
                        pass
        for key, value in self.sys.items():
            if getattr(sys, key) is not value:
                setattr(sys, key, value)
        for key, value in self.lists.items():
            if getattr(sys, key) != value:
                getattr(sys, key)[:] = value
                sys.path_importer_cache.clear()
        return changed


def _is_api(value) -> bool:
    """What a library's namespace offers: its functions (NumPy's dispatchers and JAX's jitted
    ones included), classes, modules and descriptors; not its data."""
    return callable(value) or isinstance(value, (types.ModuleType, staticmethod, classmethod, property))


def prepare_template() -> None:
    """In a runner template, before it forks: the snapshot every graded run starts from."""
    globals()["_template_snapshot"] = Snapshot()


def reset_signals() -> None:
    """A handler the student's code set would run amid the checks, with their frame in hand."""
    for which in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):
        signal.setitimer(which, 0)
    signal.alarm(0)
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
        except (OSError, ValueError):
            pass


# -- check ------------------------------------------------------------------------------------


def _text(value, limit: int) -> str:
    text = value if type(value) is str else str(value)
    return "".join(text[:limit])  # an exact str, whatever __str__ returned


def _points(value) -> float:
    try:
        points = float(value)
    except (TypeError, ValueError):
        return 1.0
    return points if 0 <= points < float("inf") else 0.0


class Checks:
    """The results of one grading. Each report first puts back what the student's functions,
    called by the checks, may have changed in the libraries since the last one: a check computed
    with a patched library fails, saying so."""

    def __init__(self, codes: frozenset, snapshot: Snapshot):
        self.codes = codes
        self.snapshot = snapshot
        self.results: list[dict] = []
        self.tracebacks: list[str] = []

    def from_checks(self, depth: int) -> bool:
        """Whether the caller ``depth`` frames up from the caller is the check code itself."""
        return sys._getframe(depth + 1).f_code in self.codes

    def record(self, name, passed: bool, points, message) -> None:
        changed = self.snapshot.restore()
        if changed:
            passed = False
            message = (f"your code changed {', '.join(changed[:3])}{' and more' if len(changed) > 3 else ''} "
                       f"while the checks ran")
            self.tracebacks.append(f"check {_text(name, NAME_MAX_CHARS)!r}: changed while it ran: "
                                   + ", ".join(changed[:50]))
        self.results.append({"name": _text(name, NAME_MAX_CHARS), "passed": passed is True,
                             "points": _points(points), "message": _text(message, MESSAGE_MAX_CHARS)})


def grading_local(name: str, depth: int = 2):
    """A local of the grading in progress (``checks``, ``evidence``), found in ``Grading.grade``'s
    frame; None outside a grading. Only the runner's code can walk frames in a graded run."""
    frame = sys._getframe(depth)
    while frame is not None:
        if frame.f_code is Grading.grade.__code__:
            return frame.f_locals.get(name)
        frame = frame.f_back
    return None


def check(name, passed=_MISSING, points=1, message=""):
    """``check(name, passed, points=1, message="")`` reports one check; ``with check(name,
    points=1):`` passes unless its block raises (an AssertionError's message is then shown).
    ``passed`` may be a helper's ``Verdict``, whose message is used when none is given."""
    checks = grading_local("checks")
    if checks is None or not checks.from_checks(1):
        raise RuntimeError("check() reports only from an assignment's checks")
    if passed is _MISSING:
        return _Block(checks, name, points)
    if not message and hasattr(passed, "message") and type(passed).__module__ == __name__:
        message = passed.message
    ok = bool(passed)
    checks.record(name, ok, points, message)
    return ok


class _Block:
    def __init__(self, checks: Checks, name, points):
        self.checks, self.name, self.points = checks, name, points

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            self.checks.record(self.name, True, self.points, "")
            return False
        if not isinstance(exc, Exception):
            return False  # SystemExit, KeyboardInterrupt: the checks end
        self.checks.record(self.name, False, self.points, student_message(exc, self.checks.codes))
        self.checks.tracebacks.append(f"check {self.name!r}:\n{instructor_traceback(exc)}")
        return True


def declared_check(stmt) -> tuple[str, float] | None:
    """(name, points) of a statement that is a ``check("name", ..., points)`` call with a literal
    name; None for any other statement."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not isinstance(call, ast.Call) or not call.args:
        return None
    func = call.func
    if (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) != "check":
        return None
    name = call.args[0]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return None
    points = call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "points"), None)
    value = points.value if isinstance(points, ast.Constant) else 1
    return name.value, _points(value)


def _frames(tb):
    """(code, line) of each frame of a traceback, without handing a frame to anyone."""
    out = []
    while tb is not None:
        out.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    return out


def student_message(exc: BaseException, codes: frozenset) -> str:
    """What a student is told of a check that raised: an assertion's message when the check code
    itself asserted, else the exception's type and the student's line. Never the check code's
    text or values."""
    frames = _frames(exc.__traceback__)
    if isinstance(exc, AssertionError) and frames and frames[-1][0] in codes:
        return _text(exc, MESSAGE_MAX_CHARS) or "assertion failed"
    lines = [line for code, line in frames if code.co_filename == common.SNIPPET_FILENAME]
    where = f" at line {lines[-1]} of your code" if lines else ""
    return f"raised {type(exc).__name__}{where}"


def instructor_traceback(exc: BaseException) -> str:
    """A traceback for the instructor, with the check code's lines (which are not in linecache,
    where a student's function could read them)."""
    import linecache
    import traceback

    check_lines = grading_local("check_lines") or []
    lines = ["Traceback (most recent call last):\n"]
    for code, line in _frames(exc.__traceback__):
        lines.append(f'  File "{code.co_filename}", line {line}, in {code.co_name}\n')
        if code.co_filename == CHECKS_FILENAME:
            text = check_lines[line - 1].strip() if 0 < line <= len(check_lines) else ""
        else:
            text = linecache.getline(code.co_filename, line).strip()
        if text:
            lines.append(f"    {text}\n")
    try:
        lines += traceback.format_exception_only(type(exc), exc)
    except Exception:  # noqa: BLE001 - a hostile __str__
        lines.append(f"{type(exc).__name__}: (its message could not be read)\n")
    return "".join(lines)


# -- the run's two phases ---------------------------------------------------------------------


class Grading:
    """Installed before the student's code (``install``); ``grade`` after it. Never returns."""

    def __init__(self, nonce: str, event_fd: int):
        self.nonce = nonce
        self.event_fd = event_fd
        self.snapshot: Snapshot | None = None
        self.trusted = trusted_codes()

    def install(self) -> None:
        import logging

        # logging looks for its caller's frame (refused here): it then logs without a source line.
        logging.currentframe = lambda: None
        try:
            import jax

            # JAX trims its tracebacks by walking their frames; a graded run shows them whole.
            jax.config.update("jax_traceback_filtering", "off")
        except Exception:  # noqa: BLE001 - only longer tracebacks
            pass
        # The template's snapshot (taken once, before forking) brought up to date, or a new one.
        # Taken out of the module, where the student's code could reach it.
        template = globals().pop("_template_snapshot", None)
        if template is not None:
            template.rebase()
        self.snapshot = template or Snapshot()
        install_guard(self.trusted)

    def grade(self, status: str, namespace: dict, read_line) -> None:
        changed = self.snapshot.restore()
        reset_signals()
        common.flush_user_streams()
        # A channel of its own: the run's (common.outbox.channel) is within the student's reach.
        from .main import EventChannel

        channel = EventChannel(self.event_fd)
        channel.send("student_done", nonce=self.nonce, status=status)
        try:
            request = json.loads(read_line())
            source, token = request["checks"], request["token"]
            compilations = request.get("compilations") or []
        except (ValueError, KeyError, TypeError, AttributeError):
            os._exit(3)  # the supervisor ended the run
        del request
        # What the grading helpers read (jaxplay.grading finds it in this frame; nothing else can).
        evidence = {"compilations": compilations, "changed": changed}  # noqa: F841 - read by grading_local()
        check_lines = source.splitlines()  # noqa: F841 - instructor_traceback's
        error, units = None, []
        try:
            units = [(declared_check(stmt), compile(ast.Module([stmt], []), CHECKS_FILENAME, "exec", dont_inherit=True))
                     for stmt in ast.parse(source, CHECKS_FILENAME).body]
        except SyntaxError as exc:
            error = f"the checks do not compile: {exc.msg} (line {exc.lineno})"
        del source
        codes: set = set()
        for _, code in units:
            _code_objects(code, codes)
        checks = Checks(frozenset(codes), self.snapshot)
        scope = dict(namespace)
        scope.update(check=check, __name__="__checks__", __builtins__=builtins)
        # One top-level statement at a time: a statement that raises fails the check it reports
        # (``check("name", ...)``) or is the instructor's error, and the next one runs.
        for declared, code in units:
            try:
                exec(code, scope)
            except Exception as exc:  # noqa: BLE001 - a check's failure is a result
                if declared is not None:
                    checks.record(declared[0], False, declared[1], student_message(exc, checks.codes))
                    checks.tracebacks.append(f"check {declared[0]!r}:\n{instructor_traceback(exc)}")
                else:
                    checks.tracebacks.append(instructor_traceback(exc))
            except BaseException as exc:  # noqa: BLE001 - SystemExit: the checks end here
                checks.tracebacks.append(instructor_traceback(exc))
                break
        del scope
        common.flush_user_streams()
        if changed:
            checks.tracebacks.append("the code changed these library names, put back before the checks ran: "
                                     + ", ".join(changed[:50]))
        errors = [e for e in [error, *checks.tracebacks] if e]
        channel.send("grade", token=token, checks=checks.results, error="\n".join(errors) or None)
        channel.send("exit", status=status)


# -- the helpers check code imports: ``from jaxplay.grading import check, allclose, ...`` ------


class Verdict:
    """A helper's answer: true when the check passes, with a message for the student."""

    def __init__(self, passed: bool, message: str = ""):
        self.passed, self.message = bool(passed), message

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"Verdict({self.passed}, {self.message!r})"


def compilations() -> list[dict]:
    """What JAX compiled while the student's code ran, in order, as the supervisor saw it (the
    Compiled pane's events): ``name``, ``jaxpr`` (text), ``flops``, ``bytes_accessed``,
    ``compile_ms``, ``compiles`` (how many times this function had been compiled by then),
    ``in_types``, ``out_types``. Empty outside a grading."""
    evidence = grading_local("evidence")
    return [dict(c) for c in (evidence or {}).get("compilations", [])]


def _tampered() -> list[str]:
    evidence = grading_local("evidence", depth=3) or {}
    return [n for n in evidence.get("changed", [])
            if n.startswith(("jax", "executor.runner", "numpy", "sys.modules['jax"))]


def _compilation_verdict(passed: bool, message: str) -> Verdict:
    tampered = _tampered()
    if tampered:
        return Verdict(False, "the code changed JAX's own functions, so what it compiled cannot be trusted")
    return Verdict(passed, message)


def _name(f) -> str:
    return f if isinstance(f, str) else getattr(f, "__name__", None) or getattr(getattr(f, "__wrapped__", None),
                                                                               "__name__", str(f))


def compile_count(f) -> int:
    """How many times ``f`` (a function or its name) was compiled while the student's code ran."""
    name = _name(f)
    return sum(1 for c in compilations() if c.get("name") == name)


def max_compilations(f, n: int) -> Verdict:
    """At most ``n`` compilations of ``f`` (recompiling on every call is the usual jit mistake)."""
    count = compile_count(f)
    if count == 0:
        return Verdict(False, f"{_name(f)} was never compiled: is it jitted, and called?")
    return _compilation_verdict(count <= n, f"{_name(f)} was compiled {count} time{'s' * (count != 1)}"
                                           f"{'' if count <= n else f'; at most {n} expected'}")


_FLOAT64 = ("f64", "float64", "c128", "complex128")


def no_float64() -> Verdict:
    """No float64 (or complex128) in any compiled function's types or jaxpr."""
    for c in compilations():
        texts = [c.get("jaxpr") or "", *map(str, c.get("in_types") or []), *map(str, c.get("out_types") or [])]
        if any(t in text for text in texts for t in _FLOAT64):
            return _compilation_verdict(False, f"{c.get('name')} computes in float64")
    return _compilation_verdict(True, "")


def flops_under(budget: float, f=None) -> Verdict:
    """The FLOPs XLA's cost analysis counted, summed over the compilations (of ``f`` alone when
    given: its last compilation), under ``budget``."""
    found = [c for c in compilations() if f is None or c.get("name") == _name(f)]
    if f is not None:
        found = found[-1:]
    if not found:
        return Verdict(False, f"nothing{' named ' + _name(f) if f is not None else ''} was compiled")
    flops = sum(float(c.get("flops") or 0) for c in found)
    return _compilation_verdict(flops <= budget, f"{flops:.3g} FLOPs (budget {budget:.3g})")


_CALLBACKS = ("pure_callback", "io_callback", "debug_callback", "callback[", "host_callback", "debug_print")


def no_host_callbacks() -> Verdict:
    """No compiled function calls back into Python (pure_callback, io_callback, jax.debug.print)."""
    for c in compilations():
        jaxpr = c.get("jaxpr") or ""
        for name in _CALLBACKS:
            if name in jaxpr:
                return _compilation_verdict(False, f"{c.get('name')} calls back to the host ({name.rstrip('[')})")
    return _compilation_verdict(True, "")


def allclose(actual, expected, *, rtol: float = 1e-5, atol: float = 1e-6) -> Verdict:
    """Values (arrays, scalars, pytrees of them) equal within tolerances; the message says where
    they differ most. Compared as float64 NumPy arrays, whatever their type."""
    import numpy as np

    try:
        import jax

        a_leaves, a_tree = jax.tree_util.tree_flatten(actual)
        e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    except Exception:  # noqa: BLE001 - no jax: one value each
        (a_leaves, a_tree), (e_leaves, e_tree) = ([actual], None), ([expected], None)
    if a_tree != e_tree:
        return Verdict(False, f"expected a structure like {e_tree}, got {a_tree}")
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        where = f" (leaf {i})" if len(a_leaves) > 1 else ""
        try:
            a = np.array(a, dtype=np.float64 if not np.iscomplexobj(e) else np.complex128)
        except (TypeError, ValueError) as exc:
            return Verdict(False, f"expected a number or array{where}, got {type(a).__name__} ({exc})")
        e = np.asarray(e, dtype=a.dtype)
        if a.shape != e.shape:
            return Verdict(False, f"expected shape {e.shape}{where}, got {a.shape}")
        if not np.all(np.isfinite(a) == np.isfinite(e)) or not np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
            diff = np.abs(np.nan_to_num(a - e, nan=np.inf))
            at = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
            return Verdict(False, f"values differ{where}: largest difference {float(diff.max()):.3g}"
                                  f"{f' at index {tuple(int(i) for i in at)}' if at else ''}"
                                  f" (rtol={rtol:g}, atol={atol:g})")
    return Verdict(True, "")


def finite_differences(f, x, *, eps: float = 1e-3):
    """The gradient of scalar ``f`` at ``x`` by central differences, in float64 NumPy."""
    import numpy as np

    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    flat, g = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = float(f(x.astype(np.float32)))
        flat[i] = old - eps
        down = float(f(x.astype(np.float32)))
        flat[i] = old
        g[i] = (up - down) / (2 * eps)
    return grad


def grad_check(f, x, grad=None, *, eps: float = 1e-3, rtol: float = 1e-2, atol: float = 1e-3) -> Verdict:
    """``grad`` (a function of ``x``; ``jax.grad(f)`` by default) against central finite
    differences of ``f`` at ``x``."""
    import numpy as np

    if grad is None:
        import jax

        grad = jax.grad(f)
    expected = finite_differences(f, x, eps=eps)
    verdict = allclose(np.asarray(grad(np.asarray(x, dtype=np.float32))), expected, rtol=rtol, atol=atol)
    if not verdict:
        verdict.message = "the gradient does not match finite differences: " + verdict.message
    return verdict
