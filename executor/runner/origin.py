"""Who a compilation is for: the snippet, a library, or JAX itself (then it is not shown).

What is a user function: one whose source (``debug_info.func_filename``) is the snippet, or a
library outside JAX (optax, flax...). JAX's own jitted helpers (``jit(cos)`` for an eager
``jnp.cos``, ``broadcast_in_dim``, ``jnp.linalg.norm``...) are skipped, except where they carry
user code: ``pmap(f)`` (JAX's ``_fun`` wrapping ``f``), an eager ``lax.scan``/``fori_loop`` of
a user body, and a JAX function the snippet jitted itself (``fast_sin = jax.jit(jnp.sin)``). The
last is told from JAX's own ``@jit`` on ``jnp.sin`` by where the jit wrapper was made: capture's
wrapper around ``pjit.make_jit`` calls ``note_jit`` for each wrapper made, and the ones
``jax.jit`` made when called directly from the snippet are kept (their ``PjitInfo``, which
``cache_miss`` and ``jit_lower`` see again).

The frames and locals of JAX's that this reads are named in ``jaxcompat``.
"""

from __future__ import annotations

import functools
import itertools
import os
import weakref

from . import common, jaxcompat

SNIPPET = common.SNIPPET_FILENAME

# jax.jit wrappers the snippet made itself, ``jax.jit(jnp.sin)`` included: id(their PjitInfo) ->
# (a weak reference to the wrapper, the snippet line that made it or None).
_user_jits: dict[int, tuple] = {}



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


def jit_maker(frame) -> tuple[int | None] | None:
    """Who called ``jax.jit`` (``frame`` is ``make_jit``'s caller): ``(line,)`` when it was the
    snippet (line None for code the snippet exec'd), None when JAX itself (``@jit`` on
    ``jnp.sin``, pmap's inner jit, a jit made on the fly for an eager op) or a library."""
    f = frame
    for _ in range(8):
        if f is None:
            return None
        code = f.f_code
        filename = code.co_filename
        if filename.startswith(_JAX_DIRS) and (os.path.basename(filename), code.co_name) in jaxcompat.JIT_ENTRY:
            f = f.f_back
            continue
        kind = file_kind(filename)
        if kind == "snippet":
            return (f.f_lineno,)
        if kind == "other" and not filename.startswith("<frozen"):
            return (None,)
        return None
    return None


def note_jit(jitted, frame) -> None:
    made = jit_maker(frame)
    ji = jaxcompat.jit_info(jitted)
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
    if jitted is None or jaxcompat.jit_info(jitted) is not ji:
        return None
    return jitted, entry[1]


def transform_name(fun, base: str) -> str:
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


def walk_jaxprs(jaxpr, depth=0):
    """Sub-jaxprs in the equations' parameters (scan bodies, shard_map, pjit calls...)."""
    if depth > 3:
        return
    for eqn in jaxpr.eqns:
        for value in eqn.params.values():
            for v in value if isinstance(value, (tuple, list)) else (value,):
                sub = v if jaxcompat.is_jaxpr(v) else getattr(v, "jaxpr", None)
                if jaxcompat.is_jaxpr(sub):
                    yield eqn.primitive.name, sub
                    yield from walk_jaxprs(sub, depth + 1)


def _user_function_in_eqns(jaxpr) -> tuple[str, int] | None:
    """The first user function (not the module level) that produced an equation."""
    def eqns(j, depth=0):
        yield from j.eqns
        if depth < 3:
            for _, sub in walk_jaxprs(j):
                yield from eqns(sub, depth + 1)

    for eqn in eqns(jaxpr):
        frame = jaxcompat.user_frame(eqn.source_info)
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
        if (not found and code.co_filename.endswith(jaxcompat.JIT_FILE)
                and (code.co_name == jaxcompat.JIT_CALL or code.co_name in jaxcompat.JIT_AOT)):
            found = True
            loc = f.f_locals
            try:
                if code.co_name == jaxcompat.JIT_CALL:
                    fun, ji = loc.get("fun"), loc.get("jit_info")
                else:
                    jf = loc.get("jit_func")
                    fun, ji = getattr(jf, "_fun", None), jaxcompat.jit_info(jf)
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
        if f.f_code.co_filename.endswith(jaxcompat.PMAP_FILE):
            infer = f.f_locals.get("infer_params")
            for cell in getattr(infer, "__closure__", None) or ():
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                dbg = jaxcompat.debug_info(value)
                if dbg is not None and dbg.func_filename == SNIPPET:
                    return dbg.func_name, dbg.func_lineno
        f = f.f_back
    found = _user_function_in_eqns(jaxpr)
    return (found[0], None) if found else ("<function>", None)


def classify_pmap(jaxpr, frame) -> dict | None:
    """A pmap of the user's function lowered on pmap's own path (older JAX), or None."""
    dbg = jaxcompat.debug_info(jaxpr)
    if dbg is None or file_kind(dbg.func_filename) not in ("snippet", "other"):
        return None
    info = _jit_frame_info(frame)
    name = dbg.func_name or "<function>"
    line = dbg.func_lineno if file_kind(dbg.func_filename) == "snippet" else None
    return {
        "name": f"pmap({name})", "origin": "snippet", "via": "pmap", "line": line, "file": None,
        "fun": None, "static": {}, "call_line": info["call_line"], "call_site": info["call_site"],
        "key": ("pmap", name, line),
    }


def classify(jaxpr, frame) -> dict | None:
    """Who this compilation is for, or None when it is JAX's own."""
    dbg = jaxcompat.debug_info(jaxpr)
    if dbg is None:
        return None
    filename = dbg.func_filename
    kind = file_kind(filename)
    if kind in ("snippet", "other", "library"):
        info = _jit_frame_info(frame)
        base = dbg.func_name or "<function>"
        name = transform_name(info["fun"], base) if info["fun"] is not None else base
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
    if filename.endswith(os.sep + jaxcompat.PMAP_FILE):
        user, line = _pmap_name(jaxpr, frame)
        info = _jit_frame_info(frame)
        return {
            "name": f"pmap({user})", "origin": "snippet", "via": "pmap", "line": line, "file": None,
            "fun": None, "static": {}, "call_line": info["call_line"],
            "call_site": info["call_site"], "key": ("pmap", user, line),
        }
    if filename.endswith(os.sep + jaxcompat.EAGER_FILE):
        # An eager primitive: only a higher-order one running the user's own function (an eager
        # lax.scan / fori_loop / while_loop / cond) is the user's compilation.
        for prim, sub in walk_jaxprs(jaxpr):
            sdbg = jaxcompat.debug_info(sub)
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
        name = transform_name(info["fun"], base) if info["fun"] is not None else base
        return {
            "name": name, "origin": "jax", "via": "aot" if info["aot"] else "jit",
            "line": made[1], "file": filename, "fun": info["fun"], "static": info["static"],
            "call_line": info["call_line"], "call_site": info["call_site"],
            "key": (dbg.func_src_info, name),
        }
    return None




def init() -> None:
    """Where jax and jaxlib live, once they are imported (install time)."""
    global _JAX_DIRS
    _JAX_DIRS = _jax_dirs()
