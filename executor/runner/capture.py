"""Automatic capture: one ``compiled`` event per XLA compilation of a user function.

The hook. Every ``jax.jit`` compilation in JAX 0.12 — a first call, a call with new shapes, the
AOT ``jit(f).lower(x).compile()``, ``pmap`` (now jit + shard_map) — goes through two places:

    pjit._pjit_lower ─▶ pxla.lower_sharding_computation(jaxpr, ...) ─▶ MeshComputation
    MeshComputation.compile() ─▶ UnloadedMeshExecutable.from_hlo ─▶ XLA ─▶ MeshExecutable

``lower_sharding_computation`` receives the traced jaxpr (with its ``debug_info``: the traced
function's name and ``<snippet>:LINE``) and returns the StableHLO module that is handed to XLA;
``MeshComputation.compile`` returns the executable, whose optimised HLO, ``cost_analysis()`` and
``memory_analysis()`` are what XLA really built. Wrapping these two (module attributes looked up
at call time) captures exactly what JAX compiled, without lowering or compiling anything a second
time, and costs nothing on the dispatch fast path (a cached call never reaches either). Trace time
comes from ``jax.monitoring``'s public duration events (``/jax/core/compile/jaxpr_trace_duration``
carries ``fun_name``); its compile events carry only a name, not the executable, which is why
they are not enough by themselves.

What is a user function: one whose source (``debug_info.func_filename``) is the snippet, or a
library outside JAX (optax, flax...). JAX's own jitted helpers (``jit(cos)`` for an eager
``jnp.cos``, ``broadcast_in_dim``, ``jnp.linalg.norm``...) are skipped, except where they carry
user code: ``pmap(f)`` (JAX's ``_fun`` wrapping ``f``), an eager ``lax.scan``/``fori_loop`` of
a user body, and a JAX function the snippet jitted itself (``fast_sin = jax.jit(jnp.sin)``). The
last is told from JAX's own ``@jit`` on ``jnp.sin`` by where the jit wrapper was made: a third,
cheap wrapper around ``pjit.make_jit`` notes each wrapper that ``jax.jit`` made when called
directly from the snippet (its ``PjitInfo``, which ``cache_miss`` and ``jit_lower`` see again).

Only real XLA compilations are reported: a lowering whose module XLA's in-memory cache already
compiled (e.g. ``P()`` then the equivalent ``P(None, None)``: a new lowering, the same module)
reuses the executable and is neither an event nor a recompilation. Whether XLA ran is read from
``backend_compile_duration``, which JAX records only when it really compiles.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import sys
import threading
import time
import weakref

from . import common

SNIPPET = common.SNIPPET_FILENAME
LOOP_WARNING_AT = 3

_tls = threading.local()
_lock = threading.Lock()
_installed = False
_originals: dict = {}


class Stats:
    """Counters other modules read (%timeit notes when a compile happened while timing)."""

    compiles = 0  # every XLA compilation, JAX's own included
    compile_s = 0.0
    user_compiles = 0
    user_compile_s = 0.0
    last_user: str | None = None


stats = Stats()
_history: dict[tuple, _History] = {}


class _History:
    def __init__(self):
        self.signatures: list[dict] = []
        self.compile_ms = 0.0
        self.call_lines: list[int | None] = []
        self.warned = False


# An XLA compile still running after this long is announced with a "compiling" event.
COMPILING_NOTICE_S = 0.5

# jax.jit wrappers the snippet made itself, ``jax.jit(jnp.sin)`` included: id(their PjitInfo) ->
# (a weak reference to the wrapper, the snippet line that made it or None).
_user_jits: dict[int, tuple] = {}
# The frames between ``pjit.make_jit`` and whoever called ``jax.jit``: the decorator form's
# lambda, jax.jit itself, its api_boundary wrapper, and the old ``pjit.pjit``.
_JIT_ENTRY = frozenset({("api.py", "jit"), ("api.py", "<lambda>"), ("pjit.py", "pjit"),
                        ("traceback_util.py", "reraise_with_filtered_traceback")})


# -- where a function comes from ---------------------------------------------------------------

_JAX_DIRS: tuple[str, ...] = ()
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep


def _jax_dirs() -> tuple[str, ...]:
    import jax
    import jaxlib

    return tuple(os.path.dirname(m.__file__) + os.sep for m in (jax, jaxlib))


def file_kind(filename: str | None) -> str:
    """"snippet", "other" (another pseudo-file such as exec's "<string>"), "library", "jax"
    (jax, jaxlib, the standard library) or "runner"."""
    if not filename:
        return "jax"
    if filename == SNIPPET:
        return "snippet"
    if filename.startswith("<"):
        return "other"
    if filename.startswith(common.RUNNER_DIR + os.sep):
        return "runner"
    if filename.startswith(_JAX_DIRS) or filename.startswith(_STDLIB_DIR):
        return "jax"
    return "library"


def _jit_maker(frame) -> tuple[int | None] | None:
    """Who called ``jax.jit`` (``frame`` is ``make_jit``'s caller): ``(line,)`` when it was the
    snippet (line None for code the snippet exec'd), None when JAX itself (``@jit`` on
    ``jnp.sin``, pmap's inner jit, a jit made on the fly for an eager op) or a library."""
    f = frame
    for _ in range(8):
        if f is None:
            return None
        code = f.f_code
        filename = code.co_filename
        if filename.startswith(_JAX_DIRS) and (os.path.basename(filename), code.co_name) in _JIT_ENTRY:
            f = f.f_back
            continue
        kind = file_kind(filename)
        if kind == "snippet":
            return (f.f_lineno,)
        if kind == "other" and not filename.startswith("<frozen"):
            return (None,)
        return None
    return None


def _note_jit(jitted, frame) -> None:
    made = _jit_maker(frame)
    ji = getattr(jitted, "_jit_info", None)
    if made is None or ji is None:
        return
    key = id(ji)

    def forget(ref, key=key):
        entry = _user_jits.get(key)
        if entry is not None and entry[0] is ref:
            _user_jits.pop(key, None)

    _user_jits[key] = (weakref.ref(jitted, forget), made[0])


def _user_jit(ji) -> tuple | None:
    """(wrapper, line) when ``ji`` is the PjitInfo of a jax.jit wrapper the snippet made."""
    entry = _user_jits.get(id(ji)) if ji is not None else None
    if entry is None:
        return None
    jitted = entry[0]()
    if jitted is None or getattr(jitted, "_jit_info", None) is not ji:
        return None
    return jitted, entry[1]


def _transform_name(fun, base: str) -> str:
    """``grad(loss)``, ``vmap(grad(loss))``, ``partial(loss)``: the JAX transformations wrapped
    around the jitted function, read from the wrapper chain JAX builds (jax's ``wraps`` keeps
    the user's name on the outside; the transformation's own closure is inside)."""
    names = []
    g = fun
    for _ in range(16):
        if g is None:
            break
        if isinstance(g, functools.partial):
            names.append("partial")
            g = g.func
            continue
        inner = g
        code = getattr(g, "__code__", None)
        if code is not None and code.co_name == "reraise_with_filtered_traceback":
            for cell in g.__closure__ or ():
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                if callable(value) and hasattr(value, "__code__"):
                    inner = value
                    break
        qual = getattr(inner, "__qualname__", "") or ""
        module = getattr(inner, "__module__", "") or ""
        if ".<locals>." in qual and module.startswith("jax"):
            names.append(qual.split(".<locals>.")[0].rsplit(".", 1)[-1].lstrip("_"))
        g = getattr(g, "__wrapped__", None)
    name = base
    for t in reversed(names):
        name = f"{t}({name})"
    return name


def _walk_jaxprs(jaxpr, depth=0):
    """Sub-jaxprs in the equations' parameters (scan bodies, shard_map, pjit calls...)."""
    if depth > 3:
        return
    from jax._src import core

    for eqn in jaxpr.eqns:
        for value in eqn.params.values():
            for v in value if isinstance(value, (tuple, list)) else (value,):
                sub = v if isinstance(v, core.Jaxpr) else getattr(v, "jaxpr", None)
                if isinstance(sub, core.Jaxpr):
                    yield eqn.primitive.name, sub
                    yield from _walk_jaxprs(sub, depth + 1)


def _user_function_in_eqns(jaxpr) -> tuple[str, int] | None:
    """The first user function (not the module level) that produced an equation."""
    from jax._src import source_info_util

    def eqns(j, depth=0):
        yield from j.eqns
        if depth < 3:
            for _, sub in _walk_jaxprs(j):
                yield from eqns(sub, depth + 1)

    for eqn in eqns(jaxpr):
        frame = source_info_util.user_frame(eqn.source_info.traceback)
        if frame and frame.file_name == SNIPPET and frame.function_name != "<module>":
            return frame.function_name, frame.start_line
    return None


def _jit_frame_info(start) -> dict:
    """From pjit's ``cache_miss`` (a call) or ``jit_lower``/``jit_trace`` (AOT) frame above
    us: the jitted callable, its static arguments, and the user's line that made the call."""
    out: dict = {"fun": None, "jit_info": None, "static": {}, "call_line": None,
                 "call_site": None, "aot": False}
    f = start
    found = False
    while f is not None:
        code = f.f_code
        if (not found and code.co_filename.endswith("pjit.py")
                and code.co_name in ("cache_miss", "jit_trace", "jit_lower")):
            found = True
            loc = f.f_locals
            try:
                if code.co_name == "cache_miss":
                    fun, ji = loc.get("fun"), loc.get("jit_info")
                else:
                    jf = loc.get("jit_func")
                    fun, ji = getattr(jf, "_fun", None), getattr(jf, "_jit_info", None)
                    out["aot"] = True
                out["fun"], out["jit_info"] = fun, ji
                args, kwargs = loc.get("args") or (), loc.get("kwargs") or {}
                if ji is not None:
                    for i in ji.static_argnums or ():
                        if i < len(args):
                            out["static"][_arg_label(fun, i)] = _short_repr(args[i])
                    for name in ji.static_argnames or ():
                        if name in kwargs:
                            out["static"][name] = _short_repr(kwargs[name])
            except (AttributeError, TypeError, IndexError):
                pass  # pjit's private locals changed shape: the event only lacks static arguments
        if code.co_filename == SNIPPET:
            out["call_line"] = f.f_lineno
            try:
                pos = next(itertools.islice(code.co_positions(), f.f_lasti // 2, None))
                out["call_site"] = (pos[0], pos[2])
            except (StopIteration, TypeError, ValueError):
                out["call_site"] = (f.f_lineno, None)
            break
        f = f.f_back
    return out


def _arg_label(fun, i: int) -> str:
    try:
        import inspect

        params = list(inspect.signature(fun).parameters)
        return params[i] if i < len(params) else f"args[{i}]"
    except (TypeError, ValueError):
        return f"args[{i}]"


def _short_repr(value, limit: int = 80) -> str:
    try:
        text = repr(value)
    # A static argument is the user's object: its __repr__ may raise anything.
    except Exception:  # noqa: BLE001
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pmap_name(jaxpr, start) -> tuple[str, int | None]:
    f = start
    while f is not None:
        if f.f_code.co_filename.endswith("pmap.py"):
            infer = f.f_locals.get("infer_params")
            for cell in getattr(infer, "__closure__", None) or ():
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                dbg = getattr(value, "debug_info", None)
                if dbg is not None and getattr(dbg, "func_filename", None) == SNIPPET:
                    return dbg.func_name, dbg.func_lineno
        f = f.f_back
    found = _user_function_in_eqns(jaxpr)
    return (found[0], None) if found else ("<function>", None)


def classify(jaxpr, frame) -> dict | None:
    """Who this compilation is for, or None when it is JAX's own."""
    dbg = jaxpr.debug_info
    filename = getattr(dbg, "func_filename", None)
    kind = file_kind(filename)
    if kind in ("snippet", "other", "library"):
        info = _jit_frame_info(frame)
        base = dbg.func_name or "<function>"
        name = _transform_name(info["fun"], base) if info["fun"] is not None else base
        return {
            "name": name,
            "origin": kind,
            "via": "aot" if info["aot"] else "jit",
            "line": dbg.func_lineno if kind == "snippet" else None,
            "file": None if kind == "snippet" else filename,
            "fun": info["fun"],
            "static": info["static"],
            "call_line": info["call_line"],
            "call_site": info["call_site"],
            "key": (dbg.func_src_info, name),
        }
    if kind != "jax":
        return None
    if filename.endswith(os.sep + "pmap.py"):
        user, line = _pmap_name(jaxpr, frame)
        info = _jit_frame_info(frame)
        return {
            "name": f"pmap({user})", "origin": "snippet", "via": "pmap", "line": line, "file": None,
            "fun": None, "static": {}, "call_line": info["call_line"],
            "call_site": info["call_site"], "key": ("pmap", user, line),
        }
    if filename.endswith(os.sep + "dispatch.py"):
        # An eager primitive: only a higher-order one running the user's own function (an eager
        # lax.scan / fori_loop / while_loop / cond) is the user's compilation.
        for prim, sub in _walk_jaxprs(jaxpr):
            sdbg = sub.debug_info
            if sdbg is not None and file_kind(sdbg.func_filename) in ("snippet", "other"):
                info = _jit_frame_info(frame)
                name = f"{prim}({sdbg.func_name})"
                return {
                    "name": name, "origin": "snippet", "via": "eager", "line": sdbg.func_lineno,
                    "file": None, "fun": None, "static": {}, "call_line": info["call_line"],
                    "call_site": info["call_site"], "key": (sdbg.func_src_info, name),
                }
        return None
    # A JAX function is the user's when the snippet jitted it itself (``jax.jit(jnp.sin)``);
    # the same function run eagerly goes through JAX's own jit of it, made when JAX was imported.
    if not _user_jits:
        return None
    info = _jit_frame_info(frame)
    made = _user_jit(info["jit_info"])
    if made is not None:
        base = dbg.func_name or "<function>"
        name = _transform_name(info["fun"], base) if info["fun"] is not None else base
        return {
            "name": name, "origin": "jax", "via": "aot" if info["aot"] else "jit",
            "line": made[1], "file": filename, "fun": info["fun"], "static": info["static"],
            "call_line": info["call_line"], "call_site": info["call_site"],
            "key": (dbg.func_src_info, name),
        }
    return None


# -- recompilation reasons ---------------------------------------------------------------------


def _signature(jaxpr, info: dict, in_shardings, donated) -> dict:
    from jax._src import config

    names = getattr(jaxpr.debug_info, "arg_names", None) or ()
    args = []
    for i, aval in enumerate(jaxpr.in_avals):
        name = names[i] if i < len(names) and names[i] else f"args[{i}]"
        args.append({
            "name": name,
            "type": _aval_str(aval),
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
    try:
        ctx = config.trace_context()
        hash(ctx)
    except (AttributeError, TypeError):  # private API gone, or a context that cannot be compared
        ctx = None
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


def _aval_str(aval) -> str:
    try:
        return aval.str_short(short_dtypes=True)  # private, and its signature has changed before
    except (AttributeError, TypeError):
        return str(aval)


def _same_fun(a: dict, b: dict) -> bool:
    if a["fun_ref"] is None or b["fun_ref"] is None:
        return a["fun_id"] == b["fun_id"]
    old = b["fun_ref"]()
    return old is not None and a["fun_ref"]() is old


def _diff(new: dict, old: dict) -> tuple[list[tuple[str, str]], int]:
    """[(kind, sentence)] of what differs, and a distance for choosing the closest old one."""
    reasons: list[tuple[str, str]] = []
    na, oa = new["args"], old["args"]
    if [a["name"] for a in na] != [a["name"] for a in oa]:
        before = ", ".join(f"{a['name']}: {a['type']}" for a in oa) or "no arguments"
        after = ", ".join(f"{a['name']}: {a['type']}" for a in na) or "no arguments"
        reasons.append(("structure", f"its arguments' structure changed ({before} → {after})"))
    else:
        for a, b in zip(na, oa):
            if a["shape"] != b["shape"] and a["dtype"] == b["dtype"]:
                reasons.append(("shape", f"{a['name']} has a new shape: {b['type']} → {a['type']}"))
            elif a["dtype"] != b["dtype"]:
                reasons.append(("dtype", f"{a['name']} has a new dtype: {b['type']} → {a['type']}"))
            elif a["weak"] != b["weak"]:
                if a["weak"]:
                    reasons.append(("weak_type", f"{a['name']} is now a Python scalar (weakly typed "
                                                 f"{a['type']}) where it was a typed array {b['type']}"))
                else:
                    reasons.append(("weak_type", f"{a['name']} is now a typed array {a['type']} where it "
                                                 f"was a Python scalar (weakly typed {b['type']})"))
            elif a["type"] != b["type"]:
                reasons.append(("sharding", f"{a['name']} changed: {b['type']} → {a['type']}"))
    for key in sorted(set(new["static"]) | set(old["static"])):
        before, after = old["static"].get(key, "—"), new["static"].get(key, "—")
        if before != after:
            reasons.append(("static", f"static argument {key} changed value: {before} → {after}"))
    if not reasons and (new["shardings"] != old["shardings"] or
                        [a.get("sharding") for a in na] != [a.get("sharding") for a in oa]):
        reasons.append(("sharding", "an argument is on a different device or has a different sharding"))
    if new["donated"] != old["donated"]:
        reasons.append(("donation", "the donated arguments differ"))
    if not reasons and new["ctx"] != old["ctx"]:
        reasons.append(("context", "a JAX setting or context changed (e.g. enable_x64, "
                                   "default_device, a mesh)"))
    distance = len(reasons)
    if not reasons and not _same_fun(new, old):
        reasons.append(("new_function", "it is a new function object (defined again, e.g. a "
                                        "lambda or def inside a loop), so jit's cache for it "
                                        "started empty"))
    if not reasons:
        reasons.append(("other", "the same function and argument types were compiled before: its "
                                 "cache was cleared or evicted (e.g. jax.clear_caches())"))
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


def _recompile_info(key, sig: dict, name: str, call_site, compile_ms: float) -> tuple[int, dict | None, str | None]:
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
    sentence = f"{name} compiled again (compilation {count}) because " + "; ".join(r for _, r in reasons) + "."
    recompile = {"count": count, "kind": kind, "kinds": [k for k, _ in reasons], "reason": sentence}
    warning = None
    if count >= LOOP_WARNING_AT:
        where = ""
        if lines and lines[0] is not None and all(site == lines[0] for site in lines):
            where = f" by line {lines[0][0]}, in a loop"
        warning = (f"{name} has been compiled {count} times{where} ({total_ms:.0f} ms of compiling "
                   f"in all). " + _ADVICE.get(kind, "Check what changes between its calls."))
        with _lock:
            first_warning = not hist.warned
            hist.warned = True
        if first_warning:
            common._stderr(f"[playground] {warning}")
    return count, recompile, warning


# -- texts ------------------------------------------------------------------------------------

_SRC_COMMENT = re.compile(r"\s+#(?: (.+?):(\d+)(?::\d+)? \((.*)\))?\s*$")


def jaxpr_text(jaxpr) -> tuple[str, list]:
    """The jaxpr as ``jax.make_jaxpr`` prints it, and for each of its lines the snippet line that
    produced it (or None)."""
    try:
        annotated = jaxpr.pretty_print(source_info=True, name_stack=False)
        first = annotated.split("\n", 1)[0]
        m = _SRC_COMMENT.search(first)
        body = first[: m.start()] if m else first
        if " let " in body and body.rstrip().endswith("}"):
            # A small jaxpr fits on one line; one equation per line reads (and diffs) better.
            annotated = jaxpr.pretty_print(source_info=True, name_stack=False,
                                           width=max(len(body.rstrip()) - 1, 20))
    # A jaxpr prints its parameters, user objects among them, whose repr may raise anything.
    except Exception:  # noqa: BLE001
        return str(jaxpr), []
    lines, where = [], []
    for line in annotated.split("\n"):
        m = _SRC_COMMENT.search(line)
        if m:
            lines.append(line[: m.start()].rstrip())
            where.append(int(m.group(2)) if m.group(1) == SNIPPET else None)
        else:
            lines.append(line.rstrip())
            where.append(None)
    return "\n".join(lines), where


_HLO_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_STACK_FRAME = re.compile(r",? ?stack_frame_id=(\d+)")


def hlo_text(text: str) -> tuple[str, list]:
    """Optimised HLO with XLA's stack-frame tables taken out (they name the runner's own files);
    each op's ``stack_frame_id`` becomes a line mapping to the snippet instead."""
    if "StackFrames" not in text:
        return text, []
    files, locations, frames = {}, {}, {}
    out: list[str] = []
    section = None
    for line in text.split("\n"):
        if line in _HLO_SECTIONS:
            section = line
            continue
        if section:
            if not line.strip():
                section = None
                continue
            ident, _, rest = line.partition(" ")
            try:
                ident = int(ident)
            except ValueError:
                section = None
                out.append(line)
                continue
            if section == "FileNames":
                files[ident] = rest.strip().strip('"')
            elif section == "FileLocations":
                m_file = re.search(r"file_name_id=(\d+)", rest)
                m_line = re.search(r"\bline=(\d+)", rest)
                if m_file and m_line:
                    locations[ident] = (int(m_file.group(1)), int(m_line.group(1)))
            elif section == "StackFrames":
                m_loc = re.search(r"file_location_id=(\d+)", rest)
                m_parent = re.search(r"parent_frame_id=(\d+)", rest)
                if m_loc:
                    frames[ident] = (int(m_loc.group(1)), int(m_parent.group(1)) if m_parent else 0)
            continue
        out.append(line)

    def snippet_line(frame_id: int):
        seen = set()
        while frame_id in frames and frame_id not in seen:
            seen.add(frame_id)
            loc, parent = frames[frame_id]
            file_id, line = locations.get(loc, (None, None))
            if files.get(file_id) == SNIPPET:
                return line
            frame_id = parent
        return None

    while len(out) > 1 and not out[0].strip() and not out[1].strip():
        out.pop(0)
    lines, where = [], []
    for line in out:
        m = _STACK_FRAME.search(line)
        where.append(snippet_line(int(m.group(1))) if m else None)
        lines.append(_STACK_FRAME.sub("", line) if m else line)
    # Collapse the blank lines the removed tables leave behind.
    text_lines, text_where = [], []
    for line, w in zip(lines, where):
        if not line.strip() and text_lines and not text_lines[-1].strip():
            continue
        text_lines.append(line)
        text_where.append(w)
    return "\n".join(text_lines), text_where


def _cost(executable) -> dict:
    out: dict = {}
    try:
        cost = executable.cost_analysis()
        if isinstance(cost, (list, tuple)):
            cost = cost[0] if cost else {}
        if cost:
            for src, dst in (("flops", "flops"), ("transcendentals", "transcendentals"),
                             ("bytes accessed", "bytes_accessed"),
                             ("optimal_seconds", "optimal_seconds")):
                if src in cost and cost[src] is not None:
                    value = float(cost[src])
                    out[dst] = int(value) if value.is_integer() and dst != "optimal_seconds" else value
    except (NotImplementedError, RuntimeError, TypeError, ValueError):
        pass  # a backend without a cost model raises (XlaRuntimeError is a RuntimeError)
    return out


def _memory(executable) -> dict | None:
    try:
        m = executable.get_compiled_memory_stats()
    except (AttributeError, NotImplementedError, RuntimeError):  # not on every backend
        return None
    out = {}
    for src, dst in (("argument_size_in_bytes", "argument_bytes"),
                     ("output_size_in_bytes", "output_bytes"),
                     ("temp_size_in_bytes", "temp_bytes"),
                     ("alias_size_in_bytes", "alias_bytes"),
                     ("generated_code_size_in_bytes", "generated_code_bytes"),
                     ("peak_memory_in_bytes", "peak_bytes")):
        value = getattr(m, src, None)
        if isinstance(value, int) and value >= 0:
            out[dst] = value
    return out or None


def _texts(jaxpr, computation, executable) -> dict:
    fields: dict = {}
    truncated = []

    def put(name: str, text: str | None, where: list | None = None):
        text, cut = common.cap_text(text)
        if text is None:
            fields[name] = None
            return
        if not common.outbox.take_text_budget(len(text)):
            fields[name] = (f"[not sent: this run has already sent "
                            f"{common.human_bytes(common.TEXT_BUDGET_BYTES)} of compiled code]")
            truncated.append(name)
            return
        fields[name] = text
        if cut:
            truncated.append(name)
        if where is not None:
            fields[name + "_lines"] = where[: text.count("\n") + 1]

    put("jaxpr", *jaxpr_text(jaxpr))  # jaxpr_text falls back to str() itself
    try:
        from jax._src.interpreters import mlir

        put("stablehlo", mlir.module_to_string(computation.stablehlo(), enable_debug_info=False))
    # JAX's private MLIR helpers: whatever they raise is shown in the pane, not swallowed.
    except Exception as exc:  # noqa: BLE001
        fields["stablehlo"] = f"[StableHLO unavailable: {exc}]"
    try:
        text, where = hlo_text(executable.as_text())
        put("hlo", text, where)
    # Backends differ in what they can print: whatever they raise is shown in the pane.
    except Exception as exc:  # noqa: BLE001
        fields["hlo"] = f"[optimised HLO unavailable on this backend: {exc}]"
    fields["truncated"] = truncated
    return fields


# -- the hooks --------------------------------------------------------------------------------


def _on_duration(event: str, duration: float, **kwargs) -> None:
    if event == "/jax/core/compile/jaxpr_trace_duration":
        _tls.trace = (kwargs.get("fun_name"), duration)
    elif event == "/jax/core/compile/backend_compile_duration":
        stats.compiles += 1
        stats.compile_s += duration
        _tls.backend_compiles = getattr(_tls, "backend_compiles", 0) + 1


def install() -> bool:
    """Wrap JAX's lowering and compile steps. Returns False (and captures nothing) if this JAX
    does not have them where 0.12 has them."""
    global _installed, _JAX_DIRS
    if _installed:
        return True
    try:
        from jax._src import monitoring, pjit, source_info_util, traceback_util
        from jax._src.interpreters import pxla

        orig_lower = pxla.lower_sharding_computation
        orig_compile = pxla.MeshComputation.compile
        orig_make_jit = pjit.make_jit
    except (ImportError, AttributeError):
        return False
    _JAX_DIRS = _jax_dirs()
    # The runner's own frames are not the user's: keep them out of jaxpr source lines and out
    # of JAX's filtered tracebacks.
    source_info_util.register_exclusion(common.RUNNER_DIR + os.sep)
    traceback_util.register_exclusion(common.RUNNER_DIR + os.sep)
    monitoring.register_event_duration_secs_listener(_on_duration)

    @functools.wraps(orig_lower)
    def lower_sharding_computation(closed_jaxpr, api_name, fun_name, *args, **kwargs):
        t0 = time.perf_counter()
        computation = orig_lower(closed_jaxpr, api_name, fun_name, *args, **kwargs)
        lower_s = time.perf_counter() - t0
        trace = getattr(_tls, "trace", None)
        _tls.trace = None
        try:
            info = classify(closed_jaxpr, sys._getframe(1))
            if info is not None:
                in_shardings = args[0] if args else kwargs.get("in_shardings")
                donated = args[4] if len(args) > 4 else kwargs.get("donated_invars")
                info["signature"] = _signature(closed_jaxpr, info, in_shardings, donated)
                info["jaxpr"] = closed_jaxpr
                info["lower_ms"] = common.ms(lower_s)
                info["trace_ms"] = common.ms(trace[1]) if trace and trace[0] == fun_name else None
                info.pop("fun", None)
                computation._jaxplay_capture = info
        # This runs inside JAX's own lowering: raising would fail the user's jit call. On a
        # failure the function is only left out of the Compiled pane.
        except Exception:  # noqa: BLE001
            pass
        return computation

    @functools.wraps(orig_compile)
    def compile(self, compiler_options=None, **kwargs):
        info = getattr(self, "_jaxplay_capture", None)
        if info is None or (self._executable is not None and compiler_options is None
                            and not kwargs.get("device_assignment")):
            return orig_compile(self, compiler_options, **kwargs)
        before = getattr(_tls, "backend_compiles", 0)
        # A long compile says so while it lasts: the page shows what is being compiled rather
        # than a run that seems to do nothing (XLA can take seconds, or never finish).
        notice = _CompileNotice(info)
        t0 = time.perf_counter()
        try:
            executable = orig_compile(self, compiler_options, **kwargs)
        except BaseException:
            notice.cancel(withdraw=True)  # the snippet may catch the error and go on
            raise
        compile_s = time.perf_counter() - t0
        if getattr(_tls, "backend_compiles", 0) == before:
            # XLA did not run: JAX's compilation cache already held this module's executable (a
            # re-lowering for an equivalent sharding, P() then P(None, None)). Nothing new was
            # compiled, so nothing to show and no recompilation to count.
            notice.cancel(withdraw=True)
            return executable
        notice.cancel()  # its "compiled" event follows
        try:
            _emit(self, info, executable, compile_s)
        # Reported as the event's capture_error, not swallowed; the user's call goes on.
        except Exception as exc:  # noqa: BLE001
            common.send("compiled", name=info.get("name"), capture_error=f"{type(exc).__name__}: {exc}")
        return executable

    @functools.wraps(orig_make_jit)
    def make_jit(*args, **kwargs):
        jitted = orig_make_jit(*args, **kwargs)
        try:
            _note_jit(jitted, sys._getframe(1))
        except (AttributeError, TypeError):  # jax.jit's private wrapper changed: only naming suffers
            pass
        return jitted

    pxla.lower_sharding_computation = lower_sharding_computation
    pxla.MeshComputation.compile = compile
    pjit.make_jit = make_jit
    _originals.update(lower=orig_lower, compile=orig_compile, make_jit=orig_make_jit)
    _installed = True
    return True


def uninstall() -> None:
    """Put JAX back as it was (a run that asked for no capture: the overhead baseline)."""
    global _installed
    if not _installed:
        return
    from jax._src import monitoring, pjit
    from jax._src.interpreters import pxla

    pxla.lower_sharding_computation = _originals["lower"]
    pxla.MeshComputation.compile = _originals["compile"]
    pjit.make_jit = _originals["make_jit"]
    try:
        monitoring.unregister_event_duration_listener(_on_duration)
    except (AssertionError, AttributeError):
        pass
    _installed = False


def _call_text(info: dict) -> str:
    """``f(x: f32[3], n=2)``: the function, its arguments' types and its static arguments."""
    sig = info["signature"]
    args_text = ", ".join(f"{a['name']}: {a['type']}" for a in sig["args"])
    statics = ", ".join(f"{k}={v}" for k, v in sig["static"].items())
    return f"{info['name']}({args_text}{', ' if args_text and statics else ''}{statics})"


class _CompileNotice:
    """Sends a "compiling" event if the compile is still running after COMPILING_NOTICE_S. A
    notice that fires is sent before ``cancel`` returns, so it can never arrive after the
    compile's own "compiled" event (which would leave the page saying it still compiles). A
    compile that ends without one (an error, or XLA's cache) withdraws it: the same event with
    ``done: true``."""

    def __init__(self, info: dict):
        self.info = info
        self.lock = threading.Lock()
        self.done = False
        self.sent = False
        self.timer = threading.Timer(COMPILING_NOTICE_S, self._fire)
        self.timer.daemon = True
        try:
            self.timer.start()
        except RuntimeError:  # no thread to be had (the run is at its pids limit): no notice
            self.timer = None

    def _fire(self) -> None:
        with self.lock:
            if not self.done:
                self.sent = self._send()

    def _send(self, **extra) -> bool:
        info = self.info
        return common.send("compiling", name=info["name"], signature=_call_text(info),
                           via=info["via"], line=info["line"], call_line=info["call_line"],
                           after_s=COMPILING_NOTICE_S, **extra)

    def cancel(self, withdraw: bool = False) -> None:
        if self.timer is not None:
            self.timer.cancel()
        with self.lock:  # waits for a notice being sent right now
            self.done = True
            if withdraw and self.sent:
                self._send(done=True)


def _emit(computation, info: dict, executable, compile_s: float) -> None:
    stats.user_compiles += 1
    stats.user_compile_s += compile_s
    stats.last_user = info["name"]
    compile_ms = common.ms(compile_s)
    sig = info["signature"]
    count, recompile, warning = _recompile_info(info["key"], sig, info["name"], info.get("call_site"),
                                                compile_ms)
    jaxpr = info.pop("jaxpr", None)
    xla_exe = getattr(executable, "xla_executable", None)
    fields = {
        "name": info["name"],
        "module": getattr(computation, "_name", None),
        "origin": info["origin"],
        "via": info["via"],
        "line": info["line"],
        "file": info["file"],
        "call_line": info["call_line"],
        "signature": _call_text(info),
        "in_types": [a["type"] for a in sig["args"]],
        "out_types": [_aval_str(a) for a in getattr(jaxpr, "out_avals", ())],
        "static_args": sig["static"],
        "num_devices": len(getattr(computation, "_device_list", None) or ()) or None,
        "trace_ms": info.get("trace_ms"),
        "lower_ms": info.get("lower_ms"),
        "compile_ms": compile_ms,
        "flops": None,
        "transcendentals": None,
        "bytes_accessed": None,
        "memory": _memory(xla_exe),
        "compiles": count,
        "recompile": recompile,
        "warning": warning,
    }
    fields.update(_cost(xla_exe))
    fields.update(_texts(jaxpr, computation, executable))
    common.send("compiled", **fields)


def compile_counts() -> tuple[int, float]:
    """(user compilations so far, their total seconds): %timeit compares before and after."""
    return stats.user_compiles, stats.user_compile_s
