"""Why a function compiled again: each compilation's signature (argument names, types, shapes,
dtypes, weak types, shardings, static arguments, donation, JAX's trace context and the function
object itself), compared with the closest earlier one of the same function; and the warning for
a function compiled over and over (in a loop, say) with what to do about it."""

from __future__ import annotations

import threading
import weakref

from . import common, jaxcompat
from .protocol import Templated, parts_of

LOOP_WARNING_AT = 3

_lock = threading.Lock()


class _History:
    def __init__(self):
        self.signatures: list[dict] = []
        self.compile_ms = 0.0
        self.call_lines: list[int | None] = []
        self.warned = False




_history: dict[tuple, _History] = {}



def signature(jaxpr, info: dict, in_shardings, donated) -> dict:
    names = getattr(jaxcompat.debug_info(jaxpr), "arg_names", None) or ()
    args = []
    for i, aval in enumerate(jaxpr.in_avals):
        name = names[i] if i < len(names) and names[i] else f"args[{i}]"
        args.append({
            "name": name,
            "type": jaxcompat.aval_str(aval),
            "shape": tuple(getattr(aval, "shape", ()) or ()),
            "dtype": str(getattr(aval, "dtype", "")),
            "weak": bool(getattr(aval, "weak_type", False)),
            "sharding": _aval_sharding(aval),
        })
    shardings = []
    for s in in_shardings or ():
        text = type(s).__name__ if type(s).__name__ == "UnspecifiedValue" else str(s)
        shardings.append(text)
    fun = info.get("fun")
    try:
        fun_ref = weakref.ref(fun) if fun is not None else None
    except TypeError:
        fun_ref = None
    ctx = jaxcompat.trace_context()
    return {
        "args": args,
        "static": dict(info.get("static") or {}),
        "shardings": shardings,
        "donated": tuple(bool(d) for d in donated or ()),
        "fun_ref": fun_ref,
        "fun_id": id(fun) if fun is not None else None,
        "ctx": ctx,
    }


def _aval_sharding(aval) -> str | None:
    """The sharding JAX keeps on an argument's abstract value: part of jit's tracing cache key, and
    not always in its printed type (a pmap's output carries pmap's mesh, printed plain ``f32[8]``)."""
    sharding = getattr(aval, "sharding", None)
    return None if sharding is None else repr(sharding)


def _same_fun(a: dict, b: dict) -> bool:
    if a["fun_ref"] is None or b["fun_ref"] is None:
        return a["fun_id"] == b["fun_id"]
    old = b["fun_ref"]()
    return old is not None and a["fun_ref"]() is old


# The sentences a reason or a warning is made from: each a template with named args (the
# snippet's names and types, as they read), sent beside the English so that a page fills them in
# its reader's language (frontend/src/panes/compiled.ts; the Chinese in
# frontend/src/i18n/zh-hans/explanations.json).
STRUCTURE = "its arguments' structure changed: {before} → {after}"
SHAPE = "argument {name} has a new shape: {before} → {after}"
DTYPE = "argument {name} has a new dtype: {before} → {after}"
NOW_SCALAR = "argument {name} is now a Python scalar (weakly typed {after}) where it was a typed array {before}"
NOW_TYPED = "argument {name} is now a typed array {after} where it was a Python scalar (weakly typed {before})"
MOVED = "argument {name} changed: {before} → {after}"
STATIC = "static argument {name} changed value: {before} → {after}"
SHARDING = "an argument is on a different device or has a different sharding"
DONATION = "the donated arguments differ"
CONTEXT = "a JAX setting or context changed (e.g. enable_x64, default_device, a mesh)"
NEW_FUNCTION = ("it is a new function object (defined again, e.g. a lambda or def inside a loop), so jit's "
                "cache for it started empty")
EVICTED = ("the same function and argument types were compiled before: its cache was cleared or evicted "
           "(e.g. jax.clear_caches())")
COMPILED_AGAIN = "{name} compiled again (compilation {count}) because {reasons}."
COMPILED_MANY = "{name} has been compiled {count} times ({ms} ms of compiling in all)."
COMPILED_MANY_IN_LOOP = ("{name} has been compiled {count} times by line {line}, in a loop "
                         "({ms} ms of compiling in all).")


def _diff(new: dict, old: dict) -> tuple[list[tuple[str, Templated]], int]:
    """[(kind, sentence)] of what differs, and a distance for choosing the closest old one. Each
    sentence opens with a word of ours ("argument x has a new shape"), never with a name from the
    user's code: the page starts a sentence with a capital, which would rename ``x`` to ``X``."""
    reasons: list[tuple[str, Templated]] = []
    na, oa = new["args"], old["args"]
    if [a["name"] for a in na] != [a["name"] for a in oa]:
        before = "(" + ", ".join(f"{a['name']}: {a['type']}" for a in oa) + ")"
        after = "(" + ", ".join(f"{a['name']}: {a['type']}" for a in na) + ")"
        reasons.append(("structure", Templated(STRUCTURE, before=before, after=after)))
    else:
        for a, b in zip(na, oa):
            changed = {"name": a["name"], "before": b["type"], "after": a["type"]}
            if a["shape"] != b["shape"] and a["dtype"] == b["dtype"]:
                reasons.append(("shape", Templated(SHAPE, **changed)))
            elif a["dtype"] != b["dtype"]:
                reasons.append(("dtype", Templated(DTYPE, **changed)))
            elif a["weak"] != b["weak"]:
                reasons.append(("weak_type", Templated(NOW_SCALAR if a["weak"] else NOW_TYPED, **changed)))
            elif a["type"] != b["type"]:
                reasons.append(("sharding", Templated(MOVED, **changed)))
    for key in sorted(set(new["static"]) | set(old["static"])):
        before, after = old["static"].get(key, "—"), new["static"].get(key, "—")
        if before != after:
            reasons.append(("static", Templated(STATIC, name=key, before=before, after=after)))
    if not reasons and (new["shardings"] != old["shardings"] or
                        [a.get("sharding") for a in na] != [a.get("sharding") for a in oa]):
        reasons.append(("sharding", Templated(SHARDING)))
    if new["donated"] != old["donated"]:
        reasons.append(("donation", Templated(DONATION)))
    if not reasons and new["ctx"] != old["ctx"]:
        reasons.append(("context", Templated(CONTEXT)))
    distance = len(reasons)
    if not reasons and not _same_fun(new, old):
        reasons.append(("new_function", Templated(NEW_FUNCTION)))
    if not reasons:
        reasons.append(("other", Templated(EVICTED)))
    return reasons, distance


_ADVICE = {
    "shape": "Its argument shapes keep changing: pad or bucket them to a few fixed shapes.",
    "dtype": "Its argument dtypes keep changing: cast the arguments to one dtype.",
    "weak_type": "It gets Python scalars and arrays in turn: pass the same kind each time "
                 "(e.g. jnp.float32(x)).",
    "static": "A static argument keeps changing value: pass it as a regular (traced) argument "
              "if it changes often.",
    "new_function": "It is defined anew each time: define and jit it once, outside the loop.",
    "structure": "The structure of its arguments keeps changing: keep the same pytree shape.",
    "sharding": "Its arguments keep moving between devices or shardings: place them once.",
}
ADVICE_OTHERWISE = "Check what changes between its calls."

TEMPLATES = (STRUCTURE, SHAPE, DTYPE, NOW_SCALAR, NOW_TYPED, MOVED, STATIC, SHARDING, DONATION, CONTEXT,
             NEW_FUNCTION, EVICTED, COMPILED_MANY, COMPILED_MANY_IN_LOOP, *_ADVICE.values(), ADVICE_OTHERWISE)


def recompile_info(key, sig: dict, name: str, call_site, compile_ms: float) -> tuple[int, dict | None, str | None]:
    with _lock:
        hist = _history.setdefault(key, _History())
        previous = list(hist.signatures)
        hist.signatures.append(sig)
        hist.compile_ms += compile_ms
        hist.call_lines.append(call_site)
        count = len(hist.signatures)
        total_ms = hist.compile_ms
        lines = list(hist.call_lines[-LOOP_WARNING_AT:])
    if not previous:
        return count, None, None
    best = None
    for old in reversed(previous):
        reasons, distance = _diff(sig, old)
        if best is None or distance < best[1]:
            best = (reasons, distance)
    reasons = best[0]
    kind = reasons[0][0]
    sentence = COMPILED_AGAIN.format(name=name, count=count, reasons="; ".join(r for _, r in reasons))
    recompile = {"count": count, "kind": kind, "kinds": [k for k, _ in reasons], "reason": sentence,
                 "reason_parts": parts_of([r for _, r in reasons])}
    warning = None
    if count >= LOOP_WARNING_AT:
        total = f"{total_ms:.0f}"
        if lines and lines[0] is not None and all(site == lines[0] for site in lines):
            said = Templated(COMPILED_MANY_IN_LOOP, name=name, count=count, line=lines[0][0], ms=total)
        else:
            said = Templated(COMPILED_MANY, name=name, count=count, ms=total)
        warning = [said, Templated(_ADVICE.get(kind, ADVICE_OTHERWISE))]
        with _lock:
            first_warning = not hist.warned
            hist.warned = True
        if first_warning:
            common._stderr(f"[playground] {' '.join(warning)}")
    return count, recompile, warning
