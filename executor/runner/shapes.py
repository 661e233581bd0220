"""What the snippet's top-level names held when it ended, for the editor's hover (``y:
f32[1000,1000]``): arrays as JAX writes their types, with the sharding when it is sharded, and
pytrees of arrays summarised (``{'w': f32[784,512], 'b': f32[512]}``), each with the line that
last assigned it. Only the snippet's own globals, only arrays and containers of them, bounded in
count and text; nothing is computed or moved (shape, dtype and sharding are metadata)."""

from __future__ import annotations

import sys

from . import jaxcompat
from .bindings import bindings

MAX_NAMES = 200
MAX_TEXT = 300
MAX_ITEMS = 8
MAX_DEPTH = 3
SHORT = {"bfloat16": "bf16", "bool": "bool", "float8_e4m3fn": "f8e4m3fn", "float8_e5m2": "f8e5m2"}


def dtype_text(dtype) -> str:
    name = str(dtype)
    if name in SHORT:
        return SHORT[name]
    kind = getattr(dtype, "kind", "")
    bits = getattr(dtype, "itemsize", 0) * 8
    return f"{ {'f': 'f', 'i': 'i', 'u': 'u', 'c': 'c'}.get(kind, name) }{bits if kind in 'fiuc' else ''}".strip()


def array_type(value) -> tuple[str, str | None] | None:
    """``("f32[3,4]", sharding)`` for an array (JAX's or NumPy's), else None."""
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(value, jax.Array):
        try:
            text = jaxcompat.type_text(value)
        except Exception:  # noqa: BLE001 - a deleted or donated array has no type to show
            return None
        sharding = getattr(value, "sharding", None)
        spec = getattr(sharding, "spec", None)
        shown = None
        if spec is not None and any(p is not None for p in spec):
            shown = f"{type(sharding).__name__}({spec})"
        return text, shown
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, (numpy.ndarray, numpy.generic)):
        return f"{dtype_text(value.dtype)}[{','.join(str(d) for d in value.shape)}]", None
    return None


def describe(value, depth: int = 0) -> tuple[str, str | None] | None:
    """The text for a value that is an array or a pytree of arrays (dict, list, tuple), else None."""
    found = array_type(value)
    if found is not None or depth >= MAX_DEPTH:
        return found
    if isinstance(value, dict) and value and all(isinstance(k, (str, int)) for k in list(value)[:MAX_ITEMS]):
        parts = [(repr(k), describe(v, depth + 1)) for k, v in list(value.items())[:MAX_ITEMS]]
        if any(d is None for _, d in parts):
            return None
        more = ", …" if len(value) > MAX_ITEMS else ""
        return "{" + ", ".join(f"{k}: {d[0]}" for k, d in parts) + more + "}", None
    if isinstance(value, (list, tuple)) and value:
        parts = [describe(v, depth + 1) for v in value[:MAX_ITEMS]]
        if any(d is None for d in parts):
            return None
        more = ", …" if len(value) > MAX_ITEMS else ""
        inner = ", ".join(d[0] for d in parts) + more
        return (f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"), None
    return None


def collect(namespace: dict, source: str) -> dict:
    """The ``shapes`` event's fields: ``names`` ({name: {type, line?, sharding?}}), ``truncated``."""
    lines = dict(bindings(source))  # the last binding of each
    names: dict[str, dict] = {}
    truncated = False
    for name, value in list(namespace.items()):
        if name.startswith("_") or name in ("In", "Out"):
            continue
        try:
            found = describe(value)
        except Exception:  # noqa: BLE001 - a value whose container misbehaves is left out
            found = None
        if found is None:
            continue
        if len(names) >= MAX_NAMES:
            truncated = True
            break
        text, sharding = found
        entry = {"type": text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"}
        if name in lines:
            entry["line"] = lines[name]
        if sharding:
            entry["sharding"] = sharding[:MAX_TEXT]
        names[name] = entry
    return {"names": names, "truncated": truncated}
