"""``jaxplay.grading``: what an assignment's check code imports (``from jaxplay.grading import
check, allclose, ...``). It runs in the checker (``runner.checker``), never beside the student's
code; in a student's run, ``check`` refuses.

Values the student's functions return arrive as data (NumPy arrays and Python builtins built by
the checker), so every comparison here is the checker's own. Compilation checks judge what the
student's side hands over when asked to lower a function for given arguments (a ``jax.export``
module): the checker reads its types and custom calls itself, compiles it itself for XLA's cost
analysis, runs it on the same arguments and requires it to compute what the student's function
returns. Nothing of the student's run (its ``compiled`` events) is used.

A helper's answer is a ``Verdict``: its ``message`` is what the student sees (never the check's
inputs, expected values or budgets), its ``detail`` goes to the instructor alone.
"""

from __future__ import annotations

import hashlib
import re

from .transforms import SAME_VALUES  # steps that change no value

_MISSING = object()


class Verdict:
    """A helper's answer: true when the check passes, a message for the student, a detail for the
    instructor."""

    is_verdict = True

    def __init__(self, passed: bool, message: str = "", detail: str = ""):
        self.passed, self.message, self.detail = bool(passed), message, detail

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"Verdict({self.passed}, {self.message!r})"


def _session():
    from . import checking

    sess = checking.session()
    if sess is None:
        raise RuntimeError("check() reports only from an assignment's checks")
    return sess


def check(name, passed=_MISSING, points=1, message=""):
    """``check(name, passed, points=1, message="")`` reports one check; ``with check(name,
    points=1):`` passes unless its block raises. Returns whether it passed."""
    sess = _session()
    if passed is _MISSING:
        return _Block(name, points)
    detail = ""
    if getattr(passed, "is_verdict", False) is True:
        message = message or passed.message
        detail = passed.detail
    ok = bool(passed)
    sess.record(name, ok, points, message, detail)
    return ok


class _Block:
    def __init__(self, name, points):
        self.name, self.points = name, points

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        from . import checking

        sess = _session()
        if exc is None:
            sess.record(self.name, True, self.points, "")
            return False
        if not isinstance(exc, Exception):
            return False  # SystemExit, KeyboardInterrupt: the checks end
        exc = sess.student_cause(exc)
        sess.record(self.name, False, self.points, checking.student_message(exc))
        sess.note(f"check {self.name!r}:\n{checking.instructor_traceback(exc)}")
        return True


def student_function(f, transform: str | None = None):
    """A function of the student's code, by name or as the checks found it."""
    from .checking import StudentFunction

    if isinstance(f, StudentFunction):
        return f.then(transform, {}) if transform else f
    if isinstance(f, str):
        return StudentFunction(f, transform)
    raise TypeError(f"expected a function of the student's code (or its name), got {type(f).__name__}")


# -- values ---------------------------------------------------------------------------------------


def allclose(actual, expected, *, rtol: float = 1e-5, atol: float = 1e-6) -> Verdict:
    """Values (arrays, scalars, pytrees of them) equal within tolerances, compared as float64
    NumPy arrays. The student is told only that they differ; the instructor where and by how much."""
    import jax
    import numpy as np

    try:
        a_leaves, a_tree = jax.tree_util.tree_flatten(actual)
    except (TypeError, ValueError) as exc:  # a dict whose keys cannot be sorted, say
        return Verdict(False, "the result is not structured like the expected one", str(exc)[:200])
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    if a_tree != e_tree:
        return Verdict(False, "the result is not structured like the expected one",
                       f"expected {e_tree}, got {a_tree}")
    for i, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        where = f" (leaf {i})" if len(a_leaves) > 1 else ""
        try:
            a = np.array(a, dtype=np.complex128 if np.iscomplexobj(e) or np.iscomplexobj(a) else np.float64)
        except (TypeError, ValueError, OverflowError):
            return Verdict(False, f"the result{where} is not a number or an array", f"got {type(a).__name__}")
        e = np.asarray(e, dtype=a.dtype)  # the expected value is the check's: its failure is the check's
        if a.shape != e.shape:
            return Verdict(False, f"the result{where} has shape {a.shape}, not the expected shape",
                           f"expected shape {e.shape}")
        if not np.all(np.isfinite(a) == np.isfinite(e)) or not np.allclose(a, e, rtol=rtol, atol=atol,
                                                                             equal_nan=True):
            diff = np.abs(np.nan_to_num(a - e, nan=np.inf))
            at = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
            return Verdict(False, f"the values{where} differ from the expected ones",
                           f"largest difference {float(diff.max()):.3g}"
                           f"{f' at index {tuple(int(i) for i in at)}' if at else ''} (rtol={rtol:g}, atol={atol:g})")
    return Verdict(True, "")


def finite_differences(f, x, *, eps: float = 1e-3):
    """The gradient of scalar ``f`` at ``x`` by central differences, in float64 NumPy: ``f`` is
    called (in the student's process, for a student's function) at ``x ± eps`` along each axis."""
    import numpy as np

    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    flat, g = x.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = float(np.asarray(f(x.astype(np.float32))))
        flat[i] = old - eps
        down = float(np.asarray(f(x.astype(np.float32))))
        flat[i] = old
        g[i] = (up - down) / (2 * eps)
    return grad


def grad_check(f, x, grad=None, *, eps: float = 1e-3, rtol: float = 1e-2, atol: float = 1e-3) -> Verdict:
    """``grad`` (a function of ``x``; by default ``jax.grad`` of the student's ``f``, taken in the
    student's process) against central finite differences of ``f`` at ``x``."""
    import numpy as np

    if grad is None:
        grad = student_function(f, "grad")
    expected = finite_differences(f, x, eps=eps)
    verdict = allclose(np.asarray(grad(np.asarray(x, dtype=np.float32))), expected, rtol=rtol, atol=atol)
    if not verdict:
        verdict.message = "the gradient does not match finite differences"
    return verdict


# -- compilation ------------------------------------------------------------------------------------

# A module's custom-call targets, in the StableHLO text (the checker's reading and the analyst's).
CUSTOM_CALL = re.compile(r'(?:stablehlo\.custom_call\s*@|call_target_name\s*=\s*")([A-Za-z0-9_.$\-]+)')
_FLOAT64 = re.compile(r"\b(f64|complex<f64>)\b")
_LOCATION = re.compile(r"\s*loc\([^)]*\)|^#loc.*$", re.M)


class Lowered:
    """What the student's side handed over for ``f`` lowered on given arguments: a ``jax.export``
    module, or, where JAX cannot serialise it (host callbacks), its StableHLO text. The checker
    never parses the module: the analyst (a runner of its own, with no secret) reads it and runs
    it on the check's arguments and on fresh ones the checker draws afterwards; ``faithful`` says
    whether it computes what the student's function returns on all of them. A verdict passes only
    on a faithful module: text alone can show a fault (a host callback), never a pass."""

    def __init__(self, name: str, args: tuple, kwargs: dict, answer, fn=None):
        from . import jaxcompat

        self.name, self.args, self.kwargs = name, args, kwargs
        self.fn = fn if fn is not None else student_function(name)  # with the check's transformations
        self.text, self.problem, self.detail = "", "", ""
        self.flops: float | None = None
        self.outputs = None
        self.inputs = [args]
        if isinstance(answer, bytes):
            self.inputs = [args, *_fresh_inputs(args)]
            from .checking import StudentError

            try:
                report = _session().ask("analyse", name, args=(answer, [list(a) for a in self.inputs], kwargs))
            except (StudentError, TypeError) as exc:  # the analyst could not read or run it; inputs it cannot take
                self.problem = f"what your side sent for {name} is not a compiled function the checks can read"
                self.detail = str(exc)[:300]
                report = {}
            if isinstance(report, dict):
                self.text = report.get("text") if isinstance(report.get("text"), str) else ""
                flops = report.get("flops")
                self.flops = float(flops) if type(flops) in (int, float) else None
                outputs = report.get("outputs")
                self.outputs = outputs if isinstance(outputs, list) and len(outputs) == len(self.inputs) else None
        elif isinstance(answer, dict) and isinstance(answer.get("text"), str):
            self.text = answer["text"]
        else:
            self.problem = f"{name} could not be lowered"
        self.custom_calls = sorted(set(CUSTOM_CALL.findall(self.text)))
        stable = jaxcompat.stable_custom_calls()
        self.callbacks = [t for t in self.custom_calls if t not in stable]
        self.float64 = bool(_FLOAT64.search(self.text))
        body = _LOCATION.sub("", self.text)
        body = re.sub(r"^module @\S+", "module", body, count=1, flags=re.M)
        self.fingerprint = hashlib.sha256(body.encode()).hexdigest()
        self._faithful = _MISSING

    def runnable(self) -> bool:
        """Whether the analyst ran it (a module with no custom call outside JAX's stable list)."""
        return self.outputs is not None

    def call(self, *args):
        """The module run (by the analyst) on other arguments."""
        if not self.runnable():
            raise RuntimeError(self.problem or f"{self.name} could not be run by the checks")
        low = lowered(self.fn, *args, **self.kwargs)
        if not low.runnable():
            raise RuntimeError(f"{self.name} could not be run by the checks")
        return low.outputs[0]

    @property
    def faithful(self) -> bool:
        """The module computes what the student's function returns, on the check's arguments and
        on fresh ones drawn after it was handed over."""
        from .checking import StudentError

        if isinstance(self._faithful, StudentError):
            raise self._faithful  # the function's own failure, the same each time it is asked
        if self._faithful is _MISSING:
            self._faithful = False
            if self.runnable():
                fn = self.fn.without(SAME_VALUES)  # compared with the values, not the compilation
                try:
                    self._faithful = all(bool(allclose(fn(*inputs, **self.kwargs), output, rtol=1e-3, atol=1e-5))
                                         for inputs, output in zip(self.inputs, self.outputs))
                except StudentError as exc:
                    self._faithful = exc
                    raise
        return self._faithful


def _fresh_inputs(args: tuple, n: int = 2) -> list[tuple]:
    """Arguments like ``args`` with new values (arrays of the same shape and dtype),
    drawn by the checker's own generator: a module made to match the check's arguments alone
    does not match these."""
    import numpy as np

    rng = np.random.default_rng()
    out = []
    for _ in range(n):
        fresh = []
        for a in args:
            if isinstance(a, np.ndarray) and a.dtype.kind == "f":
                fresh.append((a + rng.normal(size=a.shape) * (np.abs(a) + 1) * 0.1).astype(a.dtype))
            elif isinstance(a, np.ndarray) and a.dtype.kind == "c":
                fresh.append((a + rng.normal(size=a.shape) * 0.1).astype(a.dtype))
            else:
                fresh.append(a)  # Python numbers, structures: as the check gave them (they may be static)
        out.append(tuple(fresh))
    return out


def lowered(f, *args, **kwargs) -> Lowered:
    """The student's ``f`` lowered (under ``jax.jit``, or its own jit) for these arguments; asked
    once per function and arguments in a grading (several helpers judge the same lowering)."""
    import json

    from . import values

    fn = student_function(f)
    sess = _session()
    try:
        key = (fn.name, repr(fn.chain), json.dumps(values.encode([list(args), dict(kwargs)]), sort_keys=True))
    except (values.Unsendable, TypeError, ValueError):
        key = None
    cache = sess.__dict__.setdefault("lowerings", {})
    if key is not None and key in cache:
        return cache[key]
    low = Lowered(fn.name, args, kwargs, fn._ask("lower", args, kwargs), fn)
    if key is not None and len(cache) < 64:
        cache[key] = low
    return low


def _needs_arguments(helper: str, args: tuple) -> None:
    if not args:
        raise TypeError(f"{helper} needs the function and the arguments to lower it with, "
                        f"e.g. {helper}(loss, x): the checks lower it themselves")


def _judged(low: Lowered, passed: bool, message: str, detail: str = "") -> Verdict:
    """A compilation verdict, provided the module is the student's function: the analyst ran it
    and it agrees with the function. Anything else (text only, a module that cannot be read or
    run, one that computes something else) fails."""
    if low.problem:
        return Verdict(False, low.problem, low.detail)
    if not low.runnable():
        return Verdict(False, f"{low.name} could not be compiled and run by the checks"
                              + (" (it calls back to the host)" if low.callbacks else ""),
                       f"custom calls: {', '.join(low.custom_calls) or 'none'}")
    if not low.faithful:
        return Verdict(False, f"what {low.name} compiles to does not compute what {low.name} returns",
                       "the module's outputs differ from the function's on the check's arguments or fresh ones")
    return Verdict(passed, message, detail)


def no_float64(f=None, *args, **kwargs) -> Verdict:
    """``f`` lowered for ``args`` has no float64 (or complex128) anywhere."""
    _needs_arguments("no_float64", (f, *args) if f is not None else ())
    low = lowered(f, *args, **kwargs)
    return _judged(low, not low.float64, f"{low.name} computes in float64" if low.float64 else "")


def no_host_callbacks(f=None, *args, **kwargs) -> Verdict:
    """``f`` lowered for ``args`` calls no Python on the host (``pure_callback``, ``io_callback``,
    ``jax.debug.print``)."""
    _needs_arguments("no_host_callbacks", (f, *args) if f is not None else ())
    low = lowered(f, *args, **kwargs)
    if low.callbacks:
        return Verdict(False, f"{low.name} calls back to the host", f"custom calls: {', '.join(low.callbacks)}")
    return _judged(low, True, "")


def flops_under(budget: float, f=None, *args, **kwargs) -> Verdict:
    """XLA's FLOP count of ``f`` lowered for ``args`` (compiled by the checker) is within ``budget``."""
    _needs_arguments("flops_under", (f, *args) if f is not None else ())
    low = lowered(f, *args, **kwargs)
    if low.callbacks:
        return Verdict(False, f"{low.name} calls back to the host, so its cost cannot be measured")
    flops = low.flops if not low.problem else None
    if flops is None:
        verdict = _judged(low, False, f"the cost of {low.name} could not be measured")
        return verdict if not verdict.passed else Verdict(False, verdict.message)
    return _judged(low, flops <= budget, f"{low.name} takes {flops:.3g} FLOPs" + ("" if flops <= budget
                                                                                 else ", over the budget"),
                   f"{flops:.6g} FLOPs, budget {budget:.6g}")


def compile_count(f, *calls) -> int:
    """How many different compilations the student's ``f`` needs for these calls (each an argument
    tuple): the distinct modules it lowers to."""
    if not calls:
        raise TypeError("compile_count needs the calls to count, e.g. compile_count(loss, (x3,), (x4,))")
    return len({lowered(f, *call).fingerprint for call in calls})


def max_compilations(f, n: int, *calls) -> Verdict:
    """The calls (argument tuples) need at most ``n`` compilations of ``f`` (a function that
    recompiles for every shape or Python value is the usual jit mistake)."""
    if not calls:
        raise TypeError("max_compilations needs the calls, e.g. max_compilations(loss, 1, (x,), (2 * x,))")
    lows = [lowered(f, *(call if isinstance(call, tuple) else (call,))) for call in calls]
    for low in lows:
        verdict = _judged(low, True, "")
        if not verdict:
            return verdict  # every lowering counted must be the function's own
    count = len({low.fingerprint for low in lows})
    name = lows[0].name
    return Verdict(count <= n, f"{name} compiles {count} time{'s' * (count != 1)} for these calls"
                               f"{'' if count <= n else f'; at most {n} expected'}")


__all__ = ["Verdict", "check", "allclose", "finite_differences", "grad_check", "lowered", "Lowered", "no_float64",
           "no_host_callbacks", "flops_under", "compile_count", "max_compilations", "student_function"]


def compilations():
    """Gone: it read the compilations the student's own process reported, which it could forge."""
    raise TypeError("compilations() is gone: the student's run could forge it. Lower the function yourself: "
                    "lowered(f, x), max_compilations(f, n, (x,), ...), no_float64(f, x)")
