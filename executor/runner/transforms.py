"""JAX's transformations of a student's function, in an assignment's checks.

A check writes ``jax.grad(f)(0.3)``, ``jax.vmap(f)(xs)``, ``jax.jit(f)(x)``,
``jax.hessian(f)(0.3)``, ``jax.make_jaxpr(f)(0.3)`` or ``jax.jit(f).lower(x)`` of the student's
``f`` as it would at home. ``f`` is a stand-in in the checker (``checking.StudentFunction``); the
function itself lives in the student's process. Two ways reach it, and no student code ever runs
in the checker:

    jax.grad(f)                 the transformation is applied to the stand-in itself (jax's own
                                functions are wrapped in the checker, ``install``): the stand-in
                                grows a *chain* of steps, [("grad", {argnums...})], and a call
                                asks the student's side to build ``jax.grad(f, ...)`` with its own
                                JAX and call it, so what a check sees is what the student would see
                                running the check themselves (a function JAX cannot trace fails,
                                with the student's line)
    jax.grad(lambda x: f(x)**2) the check's own function calls the stand-in with tracers: the
                                stand-in becomes a JAX function of the checker's (``traced_call``):
                                a ``custom_jvp`` whose value is asked of the student's side (at
                                once when its inputs are concrete, through ``pure_callback`` under
                                jit and vmap) and whose derivative is the student's Jacobian, itself
                                such a function, so every order and mode composes (grad, jacrev,
                                jacfwd, hessian)

What comes back is checked against the function's own values where the two must agree exactly
(``verify``): a result under jit against a plain call on the same inputs, a vmap's rows against
calls on each row. A derivative is the student's JAX's; it is compared with central differences
of the function's own values along a direction the checker draws, and a disagreement goes to the
instructor's log (a kink, ``stop_gradient`` or a ``custom_vjp`` disagree honestly).

The steps and the parameters each may carry are one table (``STEPS``), read by both sides: the
student's side (``answers``) builds only what it lists, with data parameters only.
"""

from __future__ import annotations

# A step: jax's function of that name, and the keyword parameters a check may give it (data
# only: ints, tuples, None, strings, bools, dicts of axes). "derivative" is the checker's own:
# the Jacobian, ``order`` times, of the function of the call's array leaves at ``positions``
# with respect to those at ``wrt`` (indices into ``positions``).
_GRAD = ("argnums", "has_aux", "holomorphic", "allow_int")
STEPS: dict[str, tuple[str, ...]] = {
    "grad": _GRAD,
    "value_and_grad": _GRAD,
    "jacfwd": ("argnums", "has_aux", "holomorphic"),
    "jacrev": _GRAD,
    "jacobian": _GRAD,
    "hessian": ("argnums", "has_aux", "holomorphic"),
    "vmap": ("in_axes", "out_axes", "axis_name", "axis_size", "spmd_axis_name"),
    "jit": ("static_argnums", "static_argnames", "keep_unused", "inline"),
    "pmap": ("axis_name", "in_axes", "out_axes", "static_broadcasted_argnums", "axis_size"),
    "checkpoint": ("prevent_cse", "static_argnums"),
    "remat": ("prevent_cse", "static_argnums"),
    "derivative": ("positions", "wrt", "order"),
}
# What each reads of its function's derivative, for the checker's verification.
DERIVATIVES = frozenset({"grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian", "derivative"})
# Steps that change no value: a result under them must equal a plain call's.
SAME_VALUES = frozenset({"jit", "checkpoint", "remat"})
MAX_STEPS = 16
JAXPR_TEXT_MAX = 1024**2
JAXPR_EQNS_MAX = 5000


class BadChain(ValueError):
    """A chain no honest checker sends: an unknown step, a parameter not in the table."""


def clean_chain(chain) -> list[tuple[str, dict]]:
    """A decoded chain as the student's side accepts it: [(step, params)], each step and
    parameter from ``STEPS``; "derivative" last (it takes the call's leaves, not its arguments)."""
    if chain is None or chain == "":
        return []
    if chain == "grad":  # the earlier form of grad_check's question
        return [("grad", {})]
    if not isinstance(chain, (list, tuple)) or len(chain) > MAX_STEPS:
        raise BadChain("a malformed chain")
    out = []
    for item in chain:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise BadChain("a malformed step")
        step, params = item
        if step not in STEPS or not isinstance(params, dict):
            raise BadChain(f"an unknown step {str(step)[:40]!r}")
        unknown = set(params) - set(STEPS[step])
        if unknown:
            raise BadChain(f"{step} takes no {sorted(map(str, unknown))[0][:40]}")
        if out and out[-1][0] == "derivative":
            raise BadChain("a derivative is the last step")
        out.append((step, dict(params)))
    return out


def bound(jax) -> tuple:
    """(build, call_with), holding ``jax``'s functions as they are now: the student's side binds
    them before the student's code runs (``answers.server``), so that code reassigning
    ``jax.grad`` or this module's names changes nothing its answers are built from.

    ``build(f, chain)``: ``f`` with the chain's steps applied, up to a "derivative" step, which
    ``call_with`` applies to the call's leaves; returns (function, derivative step or None).
    ``call_with(f, derivative, args, kwargs, how)``: ``how(f, args, kwargs)`` (a call, an
    eval_shape, a make_jaxpr...) of ``f``, or of its derivative with respect to the leaves the
    step names."""
    steps = {step: getattr(jax, step) for step in STEPS if step != "derivative"}
    jacfwd, flatten, unflatten = jax.jacfwd, jax.tree_util.tree_flatten, jax.tree_util.tree_unflatten

    def build(f, chain):
        derivative = None
        for step, params in chain:
            if step == "derivative":
                derivative = params
                break
            f = steps[step](f, **params)
        return f, derivative

    def call_with(f, derivative, args, kwargs, how):
        if derivative is None:
            return how(f, args, kwargs)
        leaves, tree = flatten((list(args), dict(kwargs)))
        positions = [int(p) for p in derivative.get("positions", ())]
        wrt = tuple(int(w) for w in derivative.get("wrt", ()))
        order = int(derivative.get("order", 1))
        if not positions or any(not 0 <= p < len(leaves) for p in positions) \
                or any(not 0 <= w < len(positions) for w in wrt) or not 0 <= order <= 8:
            raise BadChain("a derivative of leaves the call does not have")

        def flat(*dyn):
            filled = list(leaves)
            for p, value in zip(positions, dyn):
                filled[p] = value
            a, k = unflatten(tree, filled)
            return f(*a, **k)

        g = flat
        for _ in range(order):
            g = jacfwd(g, argnums=wrt)
        return how(g, [leaves[p] for p in positions], {})

    return build, call_with


def shape_tree(value):
    """A result's shapes and dtypes (``jax.eval_shape``'s) as data: ShapeDtypeStructs cross."""
    import jax

    return jax.tree_util.tree_map(lambda s: jax.ShapeDtypeStruct(tuple(s.shape), s.dtype), value)


def jaxpr_summary(closed) -> dict:
    """What ``make_jaxpr`` gave, as data: its text, its equations (primitive, parameters as text),
    the avals in and out."""
    import jax

    jaxpr = closed.jaxpr
    eqns = []
    for eqn in jaxpr.eqns[:JAXPR_EQNS_MAX]:
        params = {str(k)[:80]: str(v)[:200] for k, v in list(eqn.params.items())[:32]}
        eqns.append({"primitive": str(eqn.primitive.name)[:80], "params": params, "text": str(eqn)[:2000]})

    def aval(a):
        return jax.ShapeDtypeStruct(tuple(a.shape), a.dtype) if hasattr(a, "shape") else None

    return {"text": str(closed)[:JAXPR_TEXT_MAX], "eqns": eqns, "eqn_count": len(jaxpr.eqns),
            "in_avals": [aval(a) for a in closed.in_avals], "out_avals": [aval(a) for a in closed.out_avals]}
