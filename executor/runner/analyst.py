"""The analyst: a runner of its own that reads the compiled functions a graded run's student side
hands over (``jax.export`` modules), for the checker, which never parses them itself. It holds
no secret: what it is sent is the student's module and the inputs the checks chose, so a module
crafted to break JAX's or XLA's parsers breaks only this process, and can at worst forge this
process's own report (which the checker then tests against the student's function).

    supervisor ──{"op": "analyse"}──▶ analyst, then {"id", "op": "analyse", "args": [blob, [inputs...], kwargs]}
               ◀──answer {"id", "value": {"text", "flops", "outputs"}} | {"id", "error"}

For each module: its StableHLO text, XLA's FLOP count of it compiled here, and its outputs on
each input set, when its custom calls are all among those JAX guarantees stable (a host
callback's would reach into a process that is not there).
"""

from __future__ import annotations

import json

from . import values
from .checklib import CUSTOM_CALL

TEXT_MAX_CHARS = 4 * 1024**2


def analyse(blob: bytes, input_sets: list, kwargs: dict) -> dict:
    import jax
    from jax import export  # an attribute of jax only once imported, before JAX 0.7

    from . import jaxcompat

    exported = export.deserialize(bytearray(blob))
    text = exported.mlir_module()
    calls = set(CUSTOM_CALL.findall(text))
    report = {"text": text[:TEXT_MAX_CHARS], "flops": None, "outputs": None}
    if calls - jaxcompat.stable_custom_calls():
        return report
    if input_sets:
        # One compilation: its cost analysis, and the same executable run on every input set
        # (they share shapes and dtypes: the module takes no other).
        compiled = jax.jit(exported.call).lower(*_traced(exported, input_sets[0]), **kwargs).compile()
        report["flops"] = jaxcompat.cost_value(compiled, "flops")
        report["outputs"] = [jax.device_get(compiled(*_traced(exported, args), **kwargs)) for args in input_sets]
    else:
        report["outputs"] = []
    return report


def _traced(exported, args: list) -> list:
    """The arguments the module takes: all of them, or, for a function with static arguments
    (baked into the module), only the arrays."""
    expected = exported.in_tree.children()[0].num_leaves if exported.in_tree.children() else len(args)
    if expected == len(args):
        return args
    import numpy as np

    return [a for a in args if isinstance(a, np.ndarray)]


def serve_analyses(channel, stdin) -> None:
    """Answer until the supervisor closes stdin."""
    while True:
        line = stdin.readline()
        if not line:
            return
        question: dict = {}
        try:
            question = json.loads(line)
            if not isinstance(question, dict):
                question = {}
                raise values.Unsendable("a malformed question")
            blob, input_sets, kwargs = values.decode(question.get("args"))
            if type(blob) is not bytes or type(input_sets) is not list or type(kwargs) is not dict:
                raise values.Unsendable("a malformed question")
            reply = {"value": values.encode(analyse(blob, [list(a) for a in input_sets], kwargs))}
        except Exception as exc:  # noqa: BLE001 - a module that is not one is an answer
            reply = {"error": {"type": "Unsendable", "reason": f"{type(exc).__name__}: {str(exc)[:300]}"}}
        channel.send("answer", id=question.get("id"), **reply)
