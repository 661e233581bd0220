"""The student's side of a graded run: once the student's code has ended, its runner answers the
checker's questions about the names the code left, one JSON line a question on stdin, one
``answer`` event each. This process holds no secret: it sees only the questions (a name, and the
inputs a check chose), and what it answers is data the checker judges for itself.

    {"id", "op": "get", "name"}                    → {"kind": "callable" | "module" | "value" | "missing", "value"?}
    {"id", "op": "call", "name", "args", "kwargs", "transform"?}
                                                   → {"value"} | {"error": {"type", "line"}}
    {"id", "op": "lower", "name", "args", "kwargs"} → {"value": a jax.export module (bytes), or {"text"}}
    {"id", "op": "shape", ...}                      → {"value": jax.eval_shape's ShapeDtypeStructs}
    {"id", "op": "jaxpr", ...}                      → {"value": make_jaxpr's text, equations and avals}

``transform`` is a chain of JAX transformations to apply to the function first (encoded as
data: ``[[step, params], ...]``, ``runner.transforms.STEPS``): ``[["grad", {}]]`` answers
``jax.grad(f)(*args)``, built and run by this process's own JAX as the student's code would.
"""

from __future__ import annotations

import json
import types

from . import common, transforms, values
from .tracebacks import last_user_line

_MISSING = object()


def _error(exc: BaseException) -> dict:
    if isinstance(exc, values.Unsendable):
        return {"type": "Unsendable", "reason": str(exc)[:200]}
    return {"type": values.short_name(type(exc).__name__), "line": last_user_line(exc.__traceback__)}


def _get(namespace: dict, name: str) -> dict:
    value = namespace.get(name, _MISSING)
    if value is _MISSING:
        return {"kind": "missing"}
    if isinstance(value, types.ModuleType):
        return {"kind": "module", "value": str(getattr(value, "__name__", ""))[:200]}
    if callable(value):
        return {"kind": "callable"}
    return {"kind": "value", "value": values.encode(value)}


def _function(namespace: dict, name: str, transform):
    """The student's function with the question's chain of transformations: (function, the
    derivative step that takes the call's leaves, or None)."""
    f = namespace.get(name, _MISSING)
    if f is _MISSING:
        raise NameError(name)
    chain = transforms.clean_chain(values.decode(transform) if isinstance(transform, (dict, list)) else transform)
    if not chain:
        return f, None
    return transforms.build(f, chain)


def _call(f, args, kwargs):
    return f(*args, **kwargs)


def _shape(f, args, kwargs):
    import jax

    return transforms.shape_tree(jax.eval_shape(f, *args, **kwargs))


def _jaxpr(f, args, kwargs):
    import jax

    return transforms.jaxpr_summary(jax.make_jaxpr(f)(*args, **kwargs))


def _lower(f, args: list, kwargs: dict):
    import jax
    from jax import export  # an attribute of jax only once imported, before JAX 0.7

    jitted = f if hasattr(f, "lower") and hasattr(f, "trace") else jax.jit(f)
    try:
        return export.export(jitted)(*args, **kwargs).serialize()
    except NotImplementedError:  # host callbacks cannot be serialised: their text says what they are
        return {"text": jitted.lower(*args, **kwargs).as_text()}


def answer(question: dict, namespace: dict) -> dict:
    op, name = question.get("op"), question.get("name")
    if not isinstance(name, str):
        return {"error": {"type": "missing"}}
    try:
        if op == "get":
            return _get(namespace, name)
        args = values.decode(question.get("args") or [])
        kwargs = values.decode(question.get("kwargs") or {})
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise values.Unsendable("malformed arguments")
        f, derivative = _function(namespace, name, question.get("transform"))
        how = {"call": _call, "lower": _lower, "shape": _shape, "jaxpr": _jaxpr}.get(op)
        if how is None:
            return {"error": {"type": "missing"}}
        return {"value": values.encode(transforms.call_with(f, derivative, args, kwargs, how))}
    except NameError as exc:
        if exc.args == (name,):
            return {"error": {"type": "missing"}}
        return {"error": _error(exc)}
    except Exception as exc:  # noqa: BLE001 - the student's function failing is an answer
        return {"error": _error(exc)}


def serve_questions(namespace: dict, status: str, channel, stdin) -> None:
    """Say the code ended, then answer until the supervisor closes stdin."""
    common.flush_user_streams()
    channel.send("student_done", status=status)
    while True:
        line = stdin.readline()
        if not line:
            return
        try:
            question = json.loads(line)
        except ValueError:
            continue
        if not isinstance(question, dict):
            continue
        reply = answer(question, namespace)
        common.flush_user_streams()
        channel.send("answer", id=question.get("id"), **reply)
