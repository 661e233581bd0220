"""Values as data between a graded run's two processes: the student's code and the checker.

    checker ──ask {"op", "name", "args"}──▶ supervisor ──▶ student's runner
            ◀──answer {"value"} ───────────            ◀──

``encode`` turns a value into plain JSON and ``decode`` turns it back, for exactly these kinds:
``None``, ``bool``, ``int``, ``float`` (NaN and infinities too), ``complex``, ``str``,
``bytes``, ``list``, ``tuple``, a ``namedtuple`` (as a tuple with its field names), ``dict``
(keys of those kinds), and arrays (NumPy's, JAX's, and their scalars) of numeric or boolean
dtype, and ``jax.ShapeDtypeStruct`` (a shape and a dtype, for ``eval_shape`` and the checks'
abstract calls). Anything else (a class of the student's, a function, an object dtype) is refused with
``Unsendable``: nothing crosses as code, never through pickle, and no ``__eq__`` or
``__array__`` of the student's reaches the checker, which receives only NumPy arrays and Python
builtins it builds itself. Both directions are bounded (depth, items, bytes), so a recursive or
huge value is a clear refusal, not a hang. Standard library and NumPy only.
"""

from __future__ import annotations

import base64
import keyword
import math

MAX_DEPTH = 32
MAX_ITEMS = 200_000
MAX_BYTES = 32 * 1024**2  # the array and string bytes of one value
MAX_NAME = 40

# Array dtypes that cross (by NumPy's name); bfloat16 and the float8s are ml_dtypes', which JAX loads.
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "float32", "float64", "complex64", "complex128", "bfloat16"})


class Unsendable(TypeError):
    """A value that cannot cross as data (its kind, size or depth)."""


class _Budget:
    def __init__(self):
        self.items = 0
        self.bytes = 0

    def take(self, items: int = 1, nbytes: int = 0) -> None:
        self.items += items
        self.bytes += nbytes
        if self.items > MAX_ITEMS:
            raise Unsendable(f"more than {MAX_ITEMS} items")
        if self.bytes > MAX_BYTES:
            raise Unsendable(f"more than {MAX_BYTES // 1024**2} MiB")


def _type_name(value) -> str:
    return short_name(type(value).__name__)


def short_name(name) -> str:
    """A name from the other side, as it may be shown: ASCII letters, digits and ``_``, cut to
    MAX_NAME (an exception class named after a check's inputs carries little of them)."""
    text = "".join(c for c in str(name) if c.isascii() and (c.isalnum() or c == "_"))[:MAX_NAME]
    return text or "?"


def _array(value):
    """``value`` as a NumPy array when it is an array or array scalar (NumPy's or JAX's); None otherwise."""
    import sys

    np = sys.modules.get("numpy")
    if np is None:
        return None
    if isinstance(value, (np.ndarray, np.generic)):
        return value
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(value, jax.Array):
        return np.asarray(value)
    return None


def encode(value, _depth: int = 0, _budget: _Budget | None = None):
    budget = _budget or _Budget()
    if _depth > MAX_DEPTH:
        raise Unsendable(f"nested deeper than {MAX_DEPTH} levels")
    budget.take()
    if value is None or type(value) is bool:
        return value
    array = _array(value)  # before int and float: NumPy's scalars are their subclasses
    if array is not None:
        return _encode_array(array, budget)
    # Subclasses go as their base kind: this side may be the student's, and what it sends is
    # only ever data to the other side, which builds plain values from it.
    if isinstance(value, int):
        value = int.__index__(value) if not isinstance(value, bool) else bool(value)
        if type(value) is int and value.bit_length() > 4096:
            raise Unsendable("an integer of more than 4096 bits")
        return value
    if isinstance(value, float):
        value = float.__float__(value)
        return value if math.isfinite(value) else {"$f": repr(value)}
    if isinstance(value, complex):
        value = complex(float(value.real), float(value.imag))
        return {"$c": [encode(float(value.real), _depth + 1, budget), encode(float(value.imag), _depth + 1, budget)]}
    if isinstance(value, str):
        value = str.__str__(value)
        budget.take(0, len(value))
        return value
    if isinstance(value, (bytes, bytearray)):
        budget.take(0, len(value))
        return {"$b": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, list):
        return [encode(v, _depth + 1, budget) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        items = [encode(v, _depth + 1, budget) for v in tuple.__iter__(value)]
        fields = getattr(type(value), "_fields", None)
        if type(value) is not tuple and isinstance(fields, tuple) and all(type(f) is str for f in fields) \
                and len(fields) == len(items):
            return {"$nt": short_name(type(value).__name__), "fields": [short_name(f) for f in fields], "items": items}
        return {"$t": items}
    if isinstance(value, dict):
        return {"$d": [[encode(k, _depth + 1, budget), encode(v, _depth + 1, budget)] for k, v in dict.items(value)]}
    spec = _shape_spec(value)
    if spec is not None:
        return {"$s": spec}
    raise Unsendable(f"a {_type_name(value)}")


def _shape_spec(value) -> dict | None:
    """A ``jax.ShapeDtypeStruct`` as data (its shape and dtype); None for anything else."""
    import sys

    jax = sys.modules.get("jax")
    if jax is None or type(value) is not jax.ShapeDtypeStruct:
        return None
    name = value.dtype.name
    if name not in DTYPES:
        raise Unsendable(f"a shape of dtype {short_name(name)}")
    return {"shape": [int(n) for n in value.shape], "dtype": name}


def _encode_array(array, budget: _Budget) -> dict:
    import numpy as np

    scalar = isinstance(array, np.generic)
    array = np.asarray(array)
    name = array.dtype.name
    if name not in DTYPES:
        raise Unsendable(f"an array of dtype {short_name(name)}")
    budget.take(int(array.size), int(array.nbytes))
    data = np.ascontiguousarray(array).tobytes()
    return {"$a": {"dtype": name, "shape": list(array.shape), "data": base64.b64encode(data).decode(),
                   "scalar": scalar}}


def decode(data, _depth: int = 0, _budget: _Budget | None = None):
    """A value from the other side's ``encode``: built from plain JSON only; raises Unsendable
    (a ValueError/TypeError kind) for anything malformed."""
    budget = _budget or _Budget()
    if _depth > MAX_DEPTH:
        raise Unsendable(f"nested deeper than {MAX_DEPTH} levels")
    budget.take()
    if data is None or type(data) in (bool, int, float):
        return data
    if type(data) is str:
        budget.take(0, len(data))
        return data
    if type(data) is list:
        return [decode(v, _depth + 1, budget) for v in data]
    if type(data) is not dict or len(data) < 1:
        raise Unsendable("a malformed value")
    for tag, fits, decoder in _TAGGED:
        if tag in data and fits(data[tag]):
            return decoder(data, _depth, budget)
    raise Unsendable("a malformed value")


def _decode_complex(data: dict, depth: int, budget: _Budget) -> complex:
    re_, im = (decode(v, depth + 1, budget) for v in data["$c"])
    if not all(type(v) in (int, float) for v in (re_, im)):
        raise Unsendable("a malformed complex number")
    return complex(re_, im)


def _decode_bytes(data: dict, depth: int, budget: _Budget) -> bytes:
    budget.take(0, len(data["$b"]))
    return base64.b64decode(data["$b"], validate=True)


def _decode_dict(data: dict, depth: int, budget: _Budget) -> dict:
    out = {}
    for pair in data["$d"]:
        if type(pair) is not list or len(pair) != 2:
            raise Unsendable("a malformed dict")
        key = decode(pair[0], depth + 1, budget)
        try:
            out[key] = decode(pair[1], depth + 1, budget)
        except TypeError as exc:  # an unhashable key
            raise Unsendable(f"a dict key that is a {type(key).__name__}") from exc
    return out


_NAMEDTUPLES: dict = {}


def _decode_namedtuple(data: dict, depth: int, budget: _Budget):
    import collections

    name, fields, items = data.get("$nt"), data.get("fields"), data.get("items")
    if type(items) is not list or type(fields) is not list or len(fields) != len(items):
        raise Unsendable("a malformed named tuple")
    values = tuple(decode(v, depth + 1, budget) for v in items)
    names = [f for f in fields if type(f) is str and f.isidentifier() and not keyword.iskeyword(f)
             and not f.startswith("_")]
    name = name if type(name) is str and name.isidentifier() and not keyword.iskeyword(name) else "NamedTuple"
    if len(set(names)) != len(fields):
        return values  # fields that cannot be a class's: the values alone
    key = (name, tuple(names))
    if key not in _NAMEDTUPLES and len(_NAMEDTUPLES) < 256:
        _NAMEDTUPLES[key] = collections.namedtuple(name, names)
    cls = _NAMEDTUPLES.get(key)
    return cls(*values) if cls is not None else values


def _decode_array(spec: dict, budget: _Budget):
    import numpy as np

    dtype, shape, text = spec.get("dtype"), spec.get("shape"), spec.get("data")
    if dtype not in DTYPES or type(text) is not str or type(shape) is not list \
            or not all(type(n) is int and n >= 0 for n in shape) or len(shape) > 32:
        raise Unsendable("a malformed array")
    budget.take(0, len(text) * 3 // 4)
    try:
        np_dtype = np.dtype(dtype)
    except TypeError as exc:  # bfloat16 without ml_dtypes loaded
        raise Unsendable(f"an array of dtype {dtype}, which this side cannot read") from exc
    raw = base64.b64decode(text, validate=True)
    size = math.prod(shape)
    if size * np_dtype.itemsize != len(raw):
        raise Unsendable("an array whose data does not match its shape")
    budget.take(size, 0)
    array = np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy()
    return array[()] if spec.get("scalar") is True and not shape else array


def _decode_shape(spec: dict):
    import jax
    import numpy as np

    dtype, shape = spec.get("dtype"), spec.get("shape")
    if dtype not in DTYPES or type(shape) is not list or len(shape) > 32 \
            or not all(type(n) is int and 0 <= n < 2**40 for n in shape):
        raise Unsendable("a malformed shape")
    return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype))


# A tagged value (a dict): its tag, what the tag's value must be, and how it is read; the first
# tag present whose value fits decides.
_TAGGED = (
    ("$f", lambda v: v in ("nan", "inf", "-inf"), lambda data, depth, budget: float(data["$f"])),
    ("$c", lambda v: type(v) is list and len(v) == 2, _decode_complex),
    ("$b", lambda v: type(v) is str, _decode_bytes),
    ("$t", lambda v: type(v) is list, lambda data, depth, budget: tuple(decode(v, depth + 1, budget)
                                                                        for v in data["$t"])),
    ("$nt", lambda v: True, _decode_namedtuple),
    ("$d", lambda v: type(v) is list, _decode_dict),
    ("$a", lambda v: type(v) is dict, lambda data, depth, budget: _decode_array(data["$a"], budget)),
    ("$s", lambda v: type(v) is dict, lambda data, depth, budget: _decode_shape(data["$s"])),
)
