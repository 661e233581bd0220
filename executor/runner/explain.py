"""One plain sentence for JAX's own errors, added to the ``error`` event as ``explanation``.

JAX's messages are precise but written for people who already know what a tracer is. The
sentence says what went wrong in the user's terms and the usual fix; the full message stays in
``message``. Matching is by exception class (``jax.errors``) first, then by the wording of the
few ``TypeError``/``NameError`` messages that JAX raises for shapes, immutability and gradients.
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
    (re.compile(r"requires (\d+) replicas, but only (\d+) XLA devices are available|"
                r"cannot select an axis to squeeze out which has size not equal to one"),
     "pmap maps over the leading axis, one slice per device, so that axis must not be longer "
     "than the number of devices (jax.device_count()): reshape the input to "
     "(devices, per-device, ...)."),
]


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


def explanation(exc: BaseException) -> str | None:
    """The sentence for ``exc``, or None when it is not one of JAX's errors we know."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    for name, sentence in _BY_CLASS:
        if name in names and type(exc).__module__.startswith("jax"):
            return sentence
    if not _is_jax_error(exc):
        return None
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
