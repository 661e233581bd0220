"""The checker's side of JAX transformations of a student's function (``runner.transforms`` says
why there are two ways): jax's own transformations wrapped so that, given a student's function,
they return it with one more step (``install``); what a student's function does when a check
calls it, asks for its jaxpr or lowers it (``call``, ``make_jaxpr``, ``lower``: the checks
session's stand-in, given to ``checking.Session`` by the checker); the stand-in as a JAX function
of the checker's when the check's own code traces through it (``traced_call``); what
``make_jaxpr`` and ``lower`` give back (``StudentJaxpr``, ``StudentLowered``); and the checks of
what came back against the function's own values (``verify``). Nothing here runs student code:
every value is asked of the student's side and arrives as data.
"""

from __future__ import annotations

import functools
import inspect

from . import transforms
from .transforms import SAME_VALUES

# jax's functions wrapped in the checker: a student's function given to one grows that step.
WRAPPED = ("grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian", "vmap", "jit", "pmap",
           "checkpoint", "remat")
# Steps that change no value: a result under them must equal a plain call's.


def _student_function_type():
    from .checking import StudentFunction

    return StudentFunction


def step_params(name: str, original, fun, args: tuple, kwargs: dict) -> dict:
    """The parameters a check gave ``jax.<name>(fun, ...)``, by name, as the step takes them; a
    TypeError (the instructor's) for one the student's side does not take."""
    from . import values

    try:
        bound = inspect.signature(original).bind(fun, *args, **kwargs)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"jax.{name}: {exc}") from None
    params = {k: v for k, v in bound.arguments.items() if k not in ("fun", "f")}
    for key, value in list(params.items()):
        if key == "kwargs" and isinstance(value, dict):  # a **kwargs parameter
            params.pop(key)
            params.update(value)
    allowed = transforms.STEPS[name]
    for key in params:
        if key not in allowed:
            raise TypeError(f"jax.{name}(...) of a student's function takes {', '.join(allowed)}; not {key}")
    try:
        values.encode(params)
    except values.Unsendable as exc:
        raise TypeError(f"jax.{name}: its parameters must be data ({exc})") from None
    return params


def _wrap(name: str, original, of_student):
    """``jax.<name>`` in the checker: ``of_student(fun, args, kwargs)`` for a student's function,
    jax's own for anything else."""
    @functools.wraps(original)
    def wrapper(fun=None, *args, **kwargs):
        if isinstance(fun, _student_function_type()):
            return of_student(fun, args, kwargs)
        _not_a_student_value(name, fun)
        return original(*args, **kwargs) if fun is None else original(fun, *args, **kwargs)

    wrapper.__jaxplay_original__ = original
    return wrapper


def _make_jaxpr(fun, args: tuple, kwargs: dict):
    if args or kwargs:
        raise TypeError("jax.make_jaxpr(f) of a student's function takes no other parameters")
    return fun.make_jaxpr


def _not_a_student_value(name: str, fun) -> None:
    """A value of the student's code given where a function goes (``f = 0.5`` and a check's
    ``jax.grad(f)``) is the student's failure, as calling it would be: not the checks' crash."""
    from .checking import StudentError, session

    sess = session()
    student_name = sess.student_value_name(fun) if sess is not None and not callable(fun) else None
    if student_name is not None:
        raise StudentError(f"{student_name} is not a function, so jax.{name} cannot take it")


def install() -> None:
    """Wrap jax's transformations in this process (the checker's: no student code runs here),
    once. Anything but a student's function goes to jax's own, unchanged."""
    import jax

    if getattr(jax.grad, "__jaxplay_original__", None) is not None:
        return
    for name in WRAPPED:
        original = getattr(jax, name, None)
        if original is not None:
            setattr(jax, name, _wrap(name, original, functools.partial(_step, name, original)))
    jax.eval_shape = _wrap("eval_shape", jax.eval_shape, lambda fun, args, kwargs: fun.eval_shape(*args, **kwargs))
    jax.make_jaxpr = _wrap("make_jaxpr", jax.make_jaxpr, _make_jaxpr)


def _step(name: str, original, fun, args: tuple, kwargs: dict):
    """``jax.<name>(fun, ...)`` of a student's function: it with that step more."""
    return fun.then(name, step_params(name, original, fun, args, kwargs))


# -- what a student's function does here (the session's stand-in: checking.StudentFunction) ------


def call(fn, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)``: traced by the check's own JAX function (``traced_call``), else
    asked of the student's side, and what a transformed function answers verified (``verify``)."""
    if has_tracer((args, kwargs)):
        return traced_call(fn, args, kwargs)
    result = fn._ask("call", args, kwargs)
    return verify(fn, args, kwargs, result) if fn.chain else result


def make_jaxpr(fn, args: tuple, kwargs: dict):
    """``jax.make_jaxpr(fn)(*args)``, by the student's JAX: the jaxpr is the side's word, so the
    function must first be proven traceable at these arguments."""
    proven_traceable(fn.without(SAME_VALUES), args, kwargs)
    return StudentJaxpr(fn._ask("jaxpr", args, kwargs), fn.name)


def lower(fn, args: tuple, kwargs: dict):
    """``jax.jit(fn).lower(*args)``: the module the student's side hands over, read and run by
    the analyst."""
    from .checklib import lowered

    return StudentLowered(lowered(fn, *args, **kwargs))


# -- the stand-in traced by the check's own code ---------------------------------------------------


def has_tracer(tree) -> bool:
    import jax

    from . import jaxcompat

    return any(jaxcompat.is_tracer(leaf) for leaf in jax.tree_util.tree_leaves(tree))


def traced_call(fn, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)`` where some arguments are tracers of the check's own transformation:
    a ``custom_jvp`` function of those leaves (``_standin``) called on them."""
    import jax
    import jax.numpy as jnp

    from . import jaxcompat

    leaves, tree = jax.tree_util.tree_flatten((list(args), dict(kwargs)))
    positions = tuple(i for i, leaf in enumerate(leaves) if jaxcompat.is_tracer(leaf))
    wrt = tuple(j for j, p in enumerate(positions) if jnp.issubdtype(leaves[p].dtype, jnp.inexact))
    template = tuple(None if i in positions else leaf for i, leaf in enumerate(leaves))
    call = _Call(fn, tree, template, positions, wrt)
    return _standin(call, 0)(*[leaves[p] for p in positions])


class _Call:
    """One traced call site: the stand-in, the call's structure, its fixed leaves, and which
    leaves are the traced ones (``positions``) and of those the differentiable (``wrt``)."""

    def __init__(self, fn, tree, template, positions, wrt):
        self.fn, self.tree, self.template, self.positions, self.wrt = fn, tree, template, positions, wrt

    def arguments(self, dyn):
        import jax

        filled = list(self.template)
        for p, value in zip(self.positions, dyn):
            filled[p] = value
        args, kwargs = jax.tree_util.tree_unflatten(self.tree, filled)
        return tuple(args), kwargs

    def chain(self, order: int) -> list:
        if not order:
            return list(self.fn.chain)
        return [*self.fn.chain, ("derivative", {"positions": list(self.positions), "wrt": list(self.wrt),
                                                "order": order})]

    def ask(self, op: str, order: int, dyn):
        from .checking import session

        args, kwargs = self.arguments(dyn)
        if op == "call":
            proven_traceable(self.fn, args, kwargs)
        return session().ask(op, self.fn.name, args=args, kwargs=kwargs, transform=self.chain(order))


def _standin(call: _Call, order: int):
    """The ``order``-th derivative of the call as a JAX function of its traced leaves: its value
    is the student's side's, its JVP the next order's (a Jacobian) contracted with the tangents,
    which is linear in them, so reverse mode transposes it."""
    import jax

    @jax.custom_jvp
    def standin(*dyn):
        return _evaluate(call, order, dyn)

    @standin.defjvp
    def standin_jvp(primals, tangents):
        out = standin(*primals)
        jacobian = _standin(call, order + 1)(*primals)
        return out, _answered(call, lambda: _contract(out, jacobian, tangents, call.wrt))

    return standin


def _arrays_only(call: _Call, value) -> None:
    """What a function JAX traces returns: arrays and numbers, at least one (``None``, a string,
    an empty structure are the student's failure, which JAX would report at home)."""
    import jax
    import numpy as np

    try:
        leaves = jax.tree_util.tree_leaves(value)
    except (TypeError, ValueError):
        leaves = [None]
    if not leaves or not all(isinstance(leaf, (np.ndarray, np.generic, int, float, complex, bool)) for leaf in leaves):
        from .checking import StudentError

        kind = "None" if value is None else "no arrays" if not leaves else "what is not an array"
        raise StudentError(f"{call.fn.name} returned {kind}, where the check's function traced by JAX needs arrays")


def _answered(call: _Call, use):
    """``use()`` of what the student's side answered; a value shaped unlike what JAX needs there
    (a string, a Jacobian of the wrong structure) is the side's failure, not the check's."""
    try:
        return use()
    except (TypeError, ValueError, OverflowError, IndexError) as exc:
        from .checking import StudentError

        raise StudentError(f"{call.fn.name} answered with values JAX cannot use here",
                           f"{type(exc).__name__}: {str(exc)[:200]}") from None


def _evaluate(call: _Call, order: int, dyn):
    """The value at ``dyn``: asked at once when they are concrete, else through a
    ``pure_callback`` whose result's shapes the student's side gives (``jax.eval_shape``)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from . import jaxcompat

    if not any(jaxcompat.is_tracer(d) for d in dyn):
        value = call.ask("call", order, [np.asarray(d) for d in dyn])
        _arrays_only(call, value)
        return _answered(call, lambda: jax.tree_util.tree_map(jnp.asarray, value))
    specs = [jax.ShapeDtypeStruct(tuple(d.shape), d.dtype) for d in dyn]
    shape = call.ask("shape", order, specs)
    out_leaves, out_tree = jax.tree_util.tree_flatten(shape)
    if not out_leaves or not all(type(leaf) is jax.ShapeDtypeStruct for leaf in out_leaves):
        from .checking import StudentError

        raise StudentError(f"{call.fn.name} answered jax.eval_shape of it with what is no shape")

    def callback(*concrete):
        from .checking import StudentError, session

        try:
            value = call.ask("call", order, [np.asarray(c) for c in concrete])
            leaves = out_tree.flatten_up_to(value)
            return [_as_spec(leaf, spec, call.fn.name) for leaf, spec in zip(leaves, out_leaves)]
        except StudentError as exc:
            session().callback_error = exc  # JAX re-raises its own error; the check reports this one
            raise
        except (ValueError, TypeError) as exc:
            error = StudentError(f"{call.fn.name} returned values shaped unlike what jax.eval_shape of it gives",
                                 str(exc)[:200])
            session().callback_error = error
            raise error from None

    result = _pure_callback(callback, out_leaves, *dyn)
    return jax.tree_util.tree_unflatten(out_tree, list(result))


def _as_spec(leaf, spec, name: str):
    import numpy as np

    array = np.asarray(leaf)
    if array.shape != tuple(spec.shape):
        raise ValueError(f"{name} returned shape {array.shape}, expected {tuple(spec.shape)}")
    return array.astype(spec.dtype, copy=False)


def _pure_callback(callback, specs, *args):
    import jax

    try:
        return jax.pure_callback(callback, specs, *args, vmap_method="sequential")
    except TypeError:  # a JAX before vmap_method
        return jax.pure_callback(callback, specs, *args, vectorized=False)


def _contract(out, jacobian, tangents, wrt):
    """The tangent of ``out``: each output leaf's Jacobian with respect to each differentiable
    input (``jacfwd``'s layout: the output's shape then the input's) times that input's tangent."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    out_leaves, out_tree = jax.tree_util.tree_flatten(out)
    per_leaf = out_tree.flatten_up_to(jacobian)
    result = []
    for leaf, blocks in zip(out_leaves, per_leaf):
        if not jnp.issubdtype(jnp.result_type(leaf), jnp.inexact) or not wrt:
            result.append(np.zeros(np.shape(leaf), dtype=jax.dtypes.float0))
            continue
        total = None
        for block, j in zip(blocks, wrt):
            t = tangents[j]
            term = jnp.tensordot(block, t, axes=jnp.ndim(t)).astype(jnp.result_type(leaf))
            total = term if total is None else total + term
        result.append(total)
    return jax.tree_util.tree_unflatten(out_tree, result)


# -- what make_jaxpr and lower give ------------------------------------------------------------------


class _Primitive:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


class StudentEqn:
    """One equation of a student's jaxpr, as its side described it: ``primitive.name``,
    ``params`` (as text), ``str()``."""

    def __init__(self, data: dict):
        self.primitive = _Primitive(str(data.get("primitive", "")))
        params = data.get("params")
        self.params = params if isinstance(params, dict) else {}
        self.text = str(data.get("text", ""))

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


class StudentJaxpr:
    """``jax.make_jaxpr`` of a student's function, made by the student's JAX: its text
    (``str()``, ``pretty_print()``), ``eqns`` (``.jaxpr.eqns`` too), ``in_avals`` and
    ``out_avals`` as ShapeDtypeStructs."""

    def __init__(self, data: dict, name: str = "f"):
        import jax

        def avals(key):
            value = data.get(key)
            if not isinstance(value, list) or not all(a is None or type(a) is jax.ShapeDtypeStruct for a in value):
                raise ValueError(key)
            return value

        try:
            if not isinstance(data, dict) or not isinstance(data.get("text"), str) \
                    or not isinstance(data.get("eqns"), list) or not all(isinstance(e, dict) for e in data["eqns"]):
                raise ValueError("the jaxpr")
            self.text = data["text"]
            self.eqns = [StudentEqn(e) for e in data["eqns"]]
            self.in_avals, self.out_avals = avals("in_avals"), avals("out_avals")
        except ValueError as exc:
            from .checking import StudentError

            raise StudentError(f"{name} answered jax.make_jaxpr of it in a form the checks cannot read",
                               str(exc)) from None
        self.eqn_count = data.get("eqn_count") if type(data.get("eqn_count")) is int else len(self.eqns)
        self.consts = []

    @property
    def jaxpr(self):
        return self

    def pretty_print(self, **_) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


class StudentCompiled:
    """``.compile()`` of a student's lowering: compiled by the analyst, never here."""

    def __init__(self, low):
        self._low = low

    def cost_analysis(self) -> dict:
        return {"flops": self._low.flops} if self._low.flops is not None else {}

    def as_text(self) -> str:
        return self._low.text

    def __call__(self, *args):
        return self._low.call(*args)


class StudentLowered:
    """``jax.jit(f).lower(x)`` of a student's function: the module its side handed over, read and
    run by the analyst (``checklib.Lowered``): ``as_text()``, ``compile()``, and ``lowered``,
    the helpers' object (``faithful``, ``float64``, ``flops``)."""

    def __init__(self, low):
        self.lowered = low

    def as_text(self, *_, **__) -> str:
        if self.lowered.problem:
            from .checking import StudentError

            raise StudentError(self.lowered.problem, self.lowered.detail)
        return self.lowered.text

    def compile(self, *_, **__) -> StudentCompiled:
        return StudentCompiled(self.lowered)


# -- what came back, against the function's own values ---------------------------------------------------


def verify(fn, args: tuple, kwargs: dict, result):
    """What a check gets for a transformed function, checked against the function's own values.

    Under jit (and checkpoint), and under a plain vmap, the value is the one the *analyst*
    computes with the module the student's side lowered the transformed function to, and that
    module must compute what the plain function returns, on the check's arguments and on fresh
    ones (``checklib.Lowered``; for a vmap, its first and last rows against calls on those rows):
    a function JAX cannot compile or batch cannot pass by answering plain calls. A module that
    calls back to the host cannot be run by the analyst: the side's answer stands, checked against
    plain calls on the same arguments, and the instructor is told. ``value_and_grad``'s value
    must be the plain call's; a gradient is compared with central differences of the function's
    own values, and a disagreement goes to the instructor's log."""
    try:
        return _verify(fn, args, kwargs, result)
    except (TypeError, ValueError, OverflowError, IndexError, KeyError, AttributeError) as exc:
        from .checking import StudentError

        raise StudentError(f"{fn.name} answered {fn!r} with values the checks cannot compare",
                           f"{type(exc).__name__}: {str(exc)[:200]}") from None


def _verify(fn, args: tuple, kwargs: dict, result):
    from .checking import session

    steps = [(s, p) for s, p in fn.chain if s not in SAME_VALUES]
    plain = fn.plain()
    if not steps or (len(steps) == 1 and steps[0][0] == "vmap" and _default_axes(steps[0][1]) and not kwargs):
        batched = bool(steps)
        low = _runnable(fn, args, kwargs)
        for inputs, output in zip(low.inputs, low.outputs):
            if batched:
                _rows_agree(fn, plain, inputs, output)
            else:
                _agree(fn, output, plain(*inputs, **kwargs), "as compiled")
        return low.outputs[0]
    if any(step in transforms.DERIVATIVES for step, _ in steps):
        _traceable(fn, plain, args, kwargs)
    if len(steps) == 1 and steps[0][0] == "value_and_grad" and not steps[0][1].get("has_aux"):
        _agree(fn, result[0], plain(*args, **kwargs), "as value_and_grad's value")
    if len(steps) == 1 and steps[0][0] == "grad" and not steps[0][1] and args and not kwargs:
        detail = _central_difference_gap(plain, args, result)
        if detail:
            session().note(f"jax.grad({fn.name}) at the check's arguments: {detail}")
    return result


def _runnable(fn, args, kwargs):
    """The transformed function lowered by the student's side and run by the analyst. Text alone
    (a module that calls back to the host, which the analyst cannot run) never passes: what the
    side says of such a function cannot be held against anything but its own word."""
    from .checking import StudentError
    from .checklib import lowered

    low = lowered(fn, *args, **kwargs)
    if low.problem:
        raise StudentError(low.problem, low.detail)
    if not low.runnable():
        raise StudentError(f"{fn.name} calls back to the host (jax.debug.print, a callback), so the checks cannot "
                           "run what it compiles to", f"custom calls: {', '.join(low.custom_calls) or 'none'}")
    return low


def proven_traceable(fn, args: tuple, kwargs: dict) -> None:
    """A check's own function traces through ``fn``: on the student's machine that needs JAX to
    trace it, so its lowering at these arguments must compute its values (``_traceable``), once
    per shapes and static values in a grading (a vmap's rows share one)."""
    from .checking import session

    sess = session()
    done = sess.__dict__.setdefault("traceable", set())
    key = (fn.name, repr(fn.chain), _signature((args, kwargs)))
    if key in done:
        return
    _traceable(fn, fn, args, kwargs)
    done.add(key)


def _signature(tree) -> str:
    """The shapes and dtypes of a call's arrays and the values of everything else."""
    import jax
    import numpy as np

    leaves, treedef = jax.tree_util.tree_flatten(tree)
    parts = [f"{np.shape(leaf)}{np.asarray(leaf).dtype}" if isinstance(leaf, (np.ndarray, np.generic, float))
             else repr(leaf)[:200] for leaf in leaves]
    return f"{treedef}|{'|'.join(parts)}"


def _traceable(fn, plain, args, kwargs) -> None:
    """A derivative is taken only of a function JAX can trace: the plain function, lowered by the
    student's side at the check's arguments (Python numbers as float32 arrays, so that fresh
    values are drawn for them too), must be a module that computes its values."""
    import numpy as np

    args = tuple(np.asarray(a, dtype=np.float32) if type(a) is float else a for a in args)
    low = _runnable(plain, args, kwargs)
    if not low.faithful:
        from .checking import StudentError

        raise StudentError(f"what {fn.name} compiles to does not compute what {fn.name} returns",
                           "the module's outputs differ from the function's on the check's arguments or fresh ones")


def _rows_agree(fn, plain, args, result) -> None:
    """A vmap's first and last rows against plain calls on them."""
    import jax
    import numpy as np

    arrays = [np.asarray(a) for a in args]
    sizes = {a.shape[0] for a in arrays if a.ndim}
    if len(sizes) != 1 or any(not a.ndim for a in arrays):
        return
    size = sizes.pop()
    if any(np.ndim(leaf) < 1 or np.shape(leaf)[0] != size for leaf in jax.tree_util.tree_leaves(result)):
        from .checking import StudentError

        raise StudentError(f"{fn.name} under jax.vmap gives results without the batch axis of {size}")
    for row in sorted({0, size - 1}) if size else ():
        got = jax.tree_util.tree_map(lambda x, r=row: np.asarray(x)[r], result)
        _agree(fn, got, plain(*[a[row] for a in arrays]), "under jax.vmap (a row)")


def _default_axes(params: dict) -> bool:
    return params.get("in_axes", 0) == 0 and params.get("out_axes", 0) == 0


def _agree(fn, got, expected, how: str) -> None:
    from .checking import StudentError
    from .checklib import allclose

    verdict = allclose(got, expected, rtol=1e-3, atol=1e-5)
    if not verdict:
        raise StudentError(f"{fn.name} gives other values {how} than called plainly", verdict.detail)


def _central_difference_gap(plain, args: tuple, grad) -> str:
    """Where ``grad`` (of the first argument) disagrees with central differences of the
    function's own values along a direction drawn here; "" when they agree or cannot be compared."""
    import numpy as np

    x = args[0]
    if isinstance(x, float):
        x = np.float64(x)
    if not isinstance(x, (np.ndarray, np.floating)) or not np.issubdtype(np.asarray(x).dtype, np.floating):
        return ""
    x = np.asarray(x)
    try:
        g = np.asarray(grad, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return ""
    if g.shape != x.shape:
        return ""
    direction = np.random.default_rng().normal(size=x.shape)
    eps = 1e-3 * (1 + float(np.max(np.abs(x))) if x.size else 1)
    try:
        up = float(np.asarray(plain((x + eps * direction).astype(x.dtype), *args[1:])))
        down = float(np.asarray(plain((x - eps * direction).astype(x.dtype), *args[1:])))
        estimate, claimed = (up - down) / (2 * eps), float(np.sum(g * direction))
    except (TypeError, ValueError, OverflowError):
        return ""
    if abs(estimate - claimed) <= 0.05 * max(abs(estimate), abs(claimed)) + 1e-3:
        return ""
    return f"its derivative along a random direction is {claimed:.4g}, central differences of its values give " \
           f"{estimate:.4g} (a kink, stop_gradient or a custom_vjp disagree honestly)"
