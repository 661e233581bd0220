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

What answers is built before the student's code runs (``server``): every function it calls is held
in its closures, not looked up in a module's globals, so code that reaches this module (it is not
importable by name: runner/hiding.py) and reassigns its names, or ``jax.jit``, changes nothing.
Code in the same process can still reach the closures themselves (``gc``); docs/CHECKS.md says
what that can gain: the verdicts that rest on this side's word, never a value check's.
"""

from __future__ import annotations

import json
import types

from . import common, transforms, values
from .tracebacks import last_user_line


def _hows(jax) -> dict:
    """What a question's "op" does with the function it names, over ``jax``'s functions as they are
    now."""
    from jax import export  # an attribute of jax only once imported, before JAX 0.7

    shape_tree, jaxpr_summary = transforms.shape_tree, transforms.jaxpr_summary
    jit, eval_shape, make_jaxpr, export_ = jax.jit, jax.eval_shape, jax.make_jaxpr, export.export

    def call(f, args, kwargs):
        return f(*args, **kwargs)

    def shape(f, args, kwargs):
        return shape_tree(eval_shape(f, *args, **kwargs))

    def jaxpr(f, args, kwargs):
        return jaxpr_summary(make_jaxpr(f)(*args, **kwargs))

    def lower(f, args: list, kwargs: dict):
        jitted = f if hasattr(f, "lower") and hasattr(f, "trace") else jit(f)
        try:
            return export_(jitted)(*args, **kwargs).serialize()
        except NotImplementedError:  # host callbacks cannot be serialised: their text says what they are
            return {"text": jitted.lower(*args, **kwargs).as_text()}

    return {"call": call, "lower": lower, "shape": shape, "jaxpr": jaxpr}


def _names(namespace: dict, build):
    """(get, function): what a name is, and the student's function with a question's chain of
    transformations applied (``build``'s)."""
    missing, encode, decode = object(), values.encode, values.decode
    clean_chain, ModuleType, lookup = transforms.clean_chain, types.ModuleType, dict.get

    def get(name: str) -> dict:
        value = lookup(namespace, name, missing)
        if value is missing:
            return {"kind": "missing"}
        if isinstance(value, ModuleType):
            return {"kind": "module", "value": str(getattr(value, "__name__", ""))[:200]}
        if callable(value):
            return {"kind": "callable"}
        return {"kind": "value", "value": encode(value)}

    def function(name: str, transform):
        """(function, the derivative step that takes the call's leaves, or None)."""
        f = lookup(namespace, name, missing)
        if f is missing:
            raise NameError(name)
        chain = clean_chain(decode(transform) if isinstance(transform, (dict, list)) else transform)
        if not chain:
            return f, None
        return build(f, chain)

    return get, function


def answerer(namespace: dict):
    """``answer(question) -> reply`` for the names in ``namespace``, with JAX's functions and the
    runner's own as they are now (before the student's code runs)."""
    import jax

    encode, decode, Unsendable, short_name = values.encode, values.decode, values.Unsendable, values.short_name
    build, call_with = transforms.bound(jax)
    get, function = _names(namespace, build)
    hows, user_line = _hows(jax), last_user_line

    def error(exc: BaseException) -> dict:
        if isinstance(exc, Unsendable):
            return {"type": "Unsendable", "reason": str(exc)[:200]}
        return {"type": short_name(type(exc).__name__), "line": user_line(exc.__traceback__)}

    def answer(question: dict) -> dict:
        op, name = question.get("op"), question.get("name")
        if not isinstance(name, str):
            return {"error": {"type": "missing"}}
        try:
            if op == "get":
                return get(name)
            args = decode(question.get("args") or [])
            kwargs = decode(question.get("kwargs") or {})
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise Unsendable("malformed arguments")
            f, derivative = function(name, question.get("transform"))
            how = hows.get(op)
            if how is None:
                return {"error": {"type": "missing"}}
            return {"value": encode(call_with(f, derivative, args, kwargs, how))}
        except NameError as exc:
            if exc.args == (name,):
                return {"error": {"type": "missing"}}
            return {"error": error(exc)}
        except Exception as exc:  # noqa: BLE001 - the student's function failing is an answer
            return {"error": error(exc)}

    return answer


def server(namespace: dict, channel, stdin):
    """``serve(status)``, built before the student's code runs: say the code ended, then answer
    until the supervisor closes stdin."""
    answer = answerer(namespace)
    send, readline, loads, flush = channel.send, stdin.readline, json.loads, common.flush_user_streams

    def serve(status: str) -> None:
        flush()
        send("student_done", status=status)
        while True:
            line = readline()
            if not line:
                return
            try:
                question = loads(line)
            except ValueError:
                continue
            if not isinstance(question, dict):
                continue
            reply = answer(question)
            flush()
            send("answer", id=question.get("id"), **reply)

    return serve
