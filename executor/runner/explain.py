"""One plain sentence for JAX's own errors, added to the ``error`` event as ``explanation``.

JAX's messages are precise but written for people who already know what a tracer is. The
sentence says what went wrong in the user's terms and the usual fix; the full message stays in
``message``. Matching is by exception class (``jax.errors``) first, then by the wording of the
few ``TypeError``/``NameError`` messages that JAX raises for shapes, immutability and gradients.

A few errors come from where the code runs rather than from the code: a run has no input, no
network, only the listed libraries and only its executor's devices. Code pasted from a notebook
meets these first, so they get a sentence too.
"""

from __future__ import annotations

import re

_TRACER = ("inside jit (and grad, vmap...) your function runs on tracers (abstract stand-ins "
           "whose values are only known when the compiled code runs)")

# (exception class name in jax.errors, sentence), most specific first (checked along the MRO).
_BY_CLASS = [
    ("TracerBoolConversionError",
     "A Python `if`, `while`, `and`/`or` or `bool()` needs a concrete True or False, but "
     + _TRACER + ": use jnp.where or jax.lax.cond / jax.lax.while_loop, or mark the argument "
     "static with static_argnums if it is a plain Python value."),
    ("TracerIntegerConversionError",
     "A traced value was used where Python needs a concrete integer (a list index, range(), a "
     "shape), but " + _TRACER + ": index JAX arrays instead (or use jax.lax.dynamic_slice), or "
     "mark the argument static with static_argnums."),
    ("TracerArrayConversionError",
     "A traced value was handed to NumPy (np.asarray, np.sin, np.array...), which needs real "
     "data, but " + _TRACER + ": use jax.numpy (jnp) functions inside transformed code."),
    ("ConcretizationTypeError",
     "JAX needed a concrete Python value here (a shape, a float(), a branch), but "
     + _TRACER + ": compute with jnp/lax operations, or mark that argument static with "
     "static_argnums."),
    ("UnexpectedTracerError",
     "A tracer leaked: a value from inside a jit/grad/vmap'd function was saved outside it (in a "
     "global, a list or an object) and used after the function returned; return values from "
     "the function instead of storing them as a side effect."),
    ("KeyReuseError",
     "The same random key was used twice, which gives correlated random numbers: split it with "
     "jax.random.split and use each key once."),
    ("NonConcreteBooleanIndexError",
     "Boolean masks give arrays whose size depends on the data, which jit cannot compile: use "
     "jnp.where(mask, x, 0) or pass a static size= to jnp.nonzero."),
]

# (regex on the message, sentence or function of the match).
_BY_MESSAGE = [
    (re.compile(r"(\w+) got incompatible shapes for broadcasting: (.*?)\.?$", re.S),
     lambda m: f"`{m.group(1)}` cannot combine arrays of shapes {m.group(2)}: broadcasting needs "
               f"each dimension, counted from the right, to be equal or 1; reshape one of them "
               f"(e.g. x[:, None]) or fix the sizes."),
    (re.compile(r"dot_general requires contracting dimensions to have the same shape, got "
                r"(\(.*?\)) and (\(.*?\))"),
     lambda m: f"A matrix product needs the inner sizes to match ((m, k) @ (k, n)), but they are "
               f"{m.group(1)} and {m.group(2)}: transpose or reshape one operand."),
    (re.compile(r"Shapes must be 1D sequences of concrete values of integer type"),
     "Array shapes must be known when JAX traces the function, but this one is computed from a "
     "traced argument: pass the size as a static argument (static_argnums) or use a fixed size."),
    (re.compile(r"JAX arrays are immutable"),
     "JAX arrays cannot be changed in place: write x = x.at[i].set(v) to get an updated copy."),
    (re.compile(r"Gradient only defined for scalar-output functions"),
     "jax.grad differentiates functions that return a single number: reduce the output "
     "(.sum(), .mean()) or use jax.jacobian, or jax.vmap(jax.grad(f)) for per-example gradients."),
    (re.compile(r"grad requires real- or complex-valued inputs"),
     "jax.grad needs floating-point inputs: pass 3.0 rather than 3, or cast with "
     ".astype(jnp.float32)."),
    (re.compile(r"Error interpreting argument to .* as an abstract array", re.S),
     "A jitted function was called with something that is not an array (a string, an object...): "
     "mark that argument static (static_argnums / static_argnames) or pass arrays only."),
    (re.compile(r"unbound axis name"),
     "A collective (psum, pmean, all_gather...) names an axis that no enclosing pmap, shard_map or "
     "vmap defines: call it inside the mapped function, with the same axis_name."),
    (re.compile(r"invalid PRNG key|PRNG key", re.I),
     "jax.random functions take a key made with jax.random.key(seed), not a plain integer: "
     "key = jax.random.key(0), then split it for each use."),
    (re.compile(r"RESOURCE_EXHAUSTED|[Oo]ut of memory"),
     "The device ran out of memory for this computation: use smaller arrays or batches, or donate "
     "inputs (donate_argnums) so their buffers can be reused."),
    (re.compile(r"Unknown backend: '(\w+)' requested.*Platforms present are: (\w+)", re.S),
     lambda m: f"This run is on a {m.group(2).upper()} executor, which has no {m.group(1).upper()}: "
               f"choose the device kind in the menu next to Run (when one is online), or use "
               f"jax.devices() for what the run has."),
    (re.compile(r"requires (\d+) replicas, but only (\d+) XLA devices are available|"
                r"cannot select an axis to squeeze out which has size not equal to one"),
     "pmap maps over the leading axis, one slice per device, so that axis must not be longer "
     "than the number of devices (jax.device_count()): reshape the input to "
     "(devices, per-device, ...)."),
]


_NO_NETWORK = ("A run has no network (no internet, no local services), so nothing can be "
               "downloaded or fetched: make the data in the code (np.random, jax.random, a small "
               "literal) instead.")


def _raised_in(exc: BaseException, *names: str) -> bool:
    """Whether the innermost frame of ``exc``'s traceback is in a module file named so."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.endswith(names)


def _importable(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# A traceback this deep is a recursion that ran into the run's memory limit rather than Python's
# recursion limit (which the snippet raised): every call keeps a frame on the heap.
DEEP_RECURSION_FRAMES = 10_000


def traceback_depth(exc: BaseException, cap: int = 10_000_000) -> int:
    tb, depth = exc.__traceback__, 0
    while tb is not None and depth < cap:
        depth += 1
        tb = tb.tb_next
    return depth


def deep_recursion(exc: BaseException, depth: int | None = None) -> str | None:
    """Out of memory for frames, CPython raises MemoryError, or (3.12, when pushing a frame
    fails) SystemError "error return without exception set", which reads like a crash.
    ``depth``: the traceback's, when it is already known (its frames may be gone)."""
    out_of_memory = isinstance(exc, MemoryError) or (
        isinstance(exc, SystemError) and "without exception set" in str(exc))
    if not out_of_memory:
        return None
    if depth is None:
        depth = traceback_depth(exc)
    if depth >= DEEP_RECURSION_FRAMES:
        return (f"The recursion went {depth:,} calls deep and used up the run's memory: every "
                f"Python call keeps a frame until it returns. Write it as a loop (in JAX code, "
                f"jax.lax.fori_loop or jax.lax.scan), or recurse less deeply.")
    return None


def environment_explanation(exc: BaseException) -> str | None:
    """The sentence for an error that comes from the sandbox rather than the code."""
    import socket

    if text := deep_recursion(exc):
        return text

    if isinstance(exc, EOFError) and "reading a line" in str(exc):
        return ("A run gets no input: there is no keyboard or terminal behind it, so input() "
                "finds nothing. Put the value in the code instead.")
    if isinstance(exc, ModuleNotFoundError) and exc.name and not _importable(exc.name.partition(".")[0]):
        from .common import LIBRARIES

        top = exc.name.partition(".")[0]
        listed = ", ".join(name for name in LIBRARIES if name != "jaxlib")
        return (f"`{top}` is not installed here, and a run cannot install packages (no network, "
                f"no pip). A run can import Python's standard library and {listed}; the "
                f"Libraries menu lists their versions.")
    reason = getattr(exc, "reason", None)  # urllib's URLError wraps the socket's error
    for cause in (exc, reason, exc.__cause__, exc.__context__):
        if isinstance(cause, socket.gaierror):  # no resolver: there is no network to ask
            return _NO_NETWORK
    # The sandbox refuses any socket but a unix one: EPERM where the socket is made.
    if isinstance(reason, PermissionError):
        return _NO_NETWORK
    if isinstance(exc, PermissionError) and _raised_in(exc, "socket.py"):
        return _NO_NETWORK
    return None


def _is_jax_error(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    if module.startswith(("jax", "jaxlib")):
        return True
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if "/jax/" in filename or "/jaxlib/" in filename:
            return True
        tb = tb.tb_next
    return False


# Names JAX removed that code of its time still uses: what replaced each. Those in _KEPT_BY_0_4
# the jax-0.4.38 runtime (runtimes/runtimes.toml) still has.
_REMOVED = {
    "tree_map": "jax.tree.map", "tree_leaves": "jax.tree.leaves", "tree_flatten": "jax.tree.flatten",
    "tree_unflatten": "jax.tree.unflatten", "tree_structure": "jax.tree.structure",
    "tree_transpose": "jax.tree.transpose", "tree_reduce": "jax.tree.reduce", "tree_all": "jax.tree.all",
    "xla_computation": "jax.jit(f).lower(*args).compiler_ir('hlo')",
}
_KEPT_BY_0_4 = {"tree_map", "tree_leaves", "tree_flatten", "tree_unflatten", "tree_structure", "tree_transpose"}
_REMOVED_KEPT_BY = "jax-0.4.38"


def removed_explanation(exc: BaseException) -> str | None:
    """``jax.tree_map`` on a JAX that no longer has it: what replaced it, and where it still runs."""
    if not isinstance(exc, AttributeError) or exc.name not in _REMOVED:
        return None
    module = getattr(exc, "obj", None)
    if getattr(module, "__name__", None) != "jax":
        return None
    version = getattr(module, "__version__", "this version")
    sentence = (f"`jax.{exc.name}` was removed from JAX (this run has JAX {version}); "
                f"use `{_REMOVED[exc.name]}` instead.")
    if exc.name in _KEPT_BY_0_4 and not str(version).startswith("0.4."):
        sentence += (f" Code written for an older JAX can run as it was on the {_REMOVED_KEPT_BY} runtime, "
                     "which still has it.")
    return sentence


def explanation(exc: BaseException) -> str | None:
    """The sentence for ``exc``, or None when it is not one of JAX's errors we know."""
    removed = removed_explanation(exc)
    if removed:
        return removed
    names = [cls.__name__ for cls in type(exc).__mro__]
    for name, sentence in _BY_CLASS:
        if name in names and type(exc).__module__.startswith("jax"):
            return sentence
    if not _is_jax_error(exc):
        return environment_explanation(exc)
    message = str(exc)
    for pattern, sentence in _BY_MESSAGE:
        m = pattern.search(message)
        if m:
            return sentence(m) if callable(sentence) else sentence
    return None


def add_explanation(exc: BaseException, event: dict) -> dict:
    try:
        text = explanation(exc)
    except Exception:  # noqa: BLE001 - an explanation is a nicety, never a second error
        text = None
    if text:
        event = dict(event, explanation=text)
    return event
