"""One plain sentence for JAX's own errors, added to the ``error`` event as ``explanation``.

JAX's messages are precise but written for people who already know what a tracer is. The
sentence says what went wrong in the user's terms and the usual fix; the full message stays in
``message``. Matching is by exception class (``jax.errors``) first, then by the wording of the
few ``TypeError``/``NameError`` messages that JAX raises for shapes, immutability and gradients.

A few errors come from where the code runs rather than from the code: a run has no input (or
only the input it was given, which ``input()`` reads to its end), no network, only the listed
libraries and only its executor's devices. Code pasted from a notebook meets these first, so they
get a sentence too. So does the full-width punctuation a Chinese input method types into code
(``print（1）``), which Python refuses before anything runs.

Each sentence is one template below, filled with named args (``protocol.Templated``). The event
carries the English, and the template and args beside it, so that a page can say it in its
reader's language (frontend/src/explanations.ts): every template in ``TEMPLATES`` has its Chinese
in frontend/src/i18n/zh-hans/explanations.json.
"""

from __future__ import annotations

import linecache
import re

from .protocol import EXPLANATION_ARG_MAX_CHARS, Templated, placeholders

# (exception class name in jax.errors, sentence), most specific first (checked along the MRO).
_BY_CLASS = [
    ("TracerBoolConversionError",
     "A Python `if`, `while`, `and`/`or` or `bool()` needs a concrete True or False, but inside jit (and "
     "grad, vmap...) your function runs on tracers (abstract stand-ins whose values are only known when the "
     "compiled code runs): use jnp.where or jax.lax.cond / jax.lax.while_loop, or mark the argument static "
     "with static_argnums if it is a plain Python value."),
    ("TracerIntegerConversionError",
     "A traced value was used where Python needs a concrete integer (a list index, range(), a shape), but "
     "inside jit (and grad, vmap...) your function runs on tracers (abstract stand-ins whose values are only "
     "known when the compiled code runs): index JAX arrays instead (or use jax.lax.dynamic_slice), or mark "
     "the argument static with static_argnums."),
    ("TracerArrayConversionError",
     "A traced value was handed to NumPy (np.asarray, np.sin, np.array...), which needs real data, but "
     "inside jit (and grad, vmap...) your function runs on tracers (abstract stand-ins whose values are only "
     "known when the compiled code runs): use jax.numpy (jnp) functions inside transformed code."),
    ("ConcretizationTypeError",
     "JAX needed a concrete Python value here (a shape, a float(), a branch), but inside jit (and grad, "
     "vmap...) your function runs on tracers (abstract stand-ins whose values are only known when the "
     "compiled code runs): compute with jnp/lax operations, or mark that argument static with "
     "static_argnums."),
    ("UnexpectedTracerError",
     "A tracer leaked: a value from inside a jit/grad/vmap'd function was saved outside it (in a global, a "
     "list or an object) and used after the function returned; return values from the function instead of "
     "storing them as a side effect."),
    ("KeyReuseError",
     "The same random key was used twice, which gives correlated random numbers: split it with "
     "jax.random.split and use each key once."),
    ("NonConcreteBooleanIndexError",
     "Boolean masks give arrays whose size depends on the data, which jit cannot compile: use "
     "jnp.where(mask, x, 0) or pass a static size= to jnp.nonzero."),
]

# (regex on the message, sentence, its args from the match or None).
_BY_MESSAGE = [
    (re.compile(r"(\w+) got incompatible shapes for broadcasting: (.*?)\.?$", re.S),
     "`{op}` cannot combine arrays of shapes {shapes}: broadcasting needs each dimension, counted from the "
     "right, to be equal or 1; reshape one of them (e.g. x[:, None]) or fix the sizes.",
     lambda m: {"op": m.group(1), "shapes": m.group(2)}),
    (re.compile(r"dot_general requires contracting dimensions to have the same shape, got "
                r"(\(.*?\)) and (\(.*?\))"),
     "A matrix product needs the inner sizes to match ((m, k) @ (k, n)), but they are {left} and {right}: "
     "transpose or reshape one operand.",
     lambda m: {"left": m.group(1), "right": m.group(2)}),
    (re.compile(r"Shapes must be 1D sequences of concrete values of integer type"),
     "Array shapes must be known when JAX traces the function, but this one is computed from a traced "
     "argument: pass the size as a static argument (static_argnums) or use a fixed size.",
     None),
    (re.compile(r"JAX arrays are immutable"),
     "JAX arrays cannot be changed in place: write x = x.at[i].set(v) to get an updated copy.",
     None),
    (re.compile(r"Gradient only defined for scalar-output functions"),
     "jax.grad differentiates functions that return a single number: reduce the output (.sum(), .mean()) "
     "or use jax.jacobian, or jax.vmap(jax.grad(f)) for per-example gradients.",
     None),
    (re.compile(r"grad requires real- or complex-valued inputs"),
     "jax.grad needs floating-point inputs: pass 3.0 rather than 3, or cast with .astype(jnp.float32).",
     None),
    (re.compile(r"Error interpreting argument to .* as an abstract array", re.S),
     "A jitted function was called with something that is not an array (a string, an object...): mark "
     "that argument static (static_argnums / static_argnames) or pass arrays only.",
     None),
    (re.compile(r"unbound axis name"),
     "A collective (psum, pmean, all_gather...) names an axis that no enclosing pmap, shard_map or vmap "
     "defines: call it inside the mapped function, with the same axis_name.",
     None),
    (re.compile(r"invalid PRNG key|PRNG key", re.I),
     "jax.random functions take a key made with jax.random.key(seed), not a plain integer: key = "
     "jax.random.key(0), then split it for each use.",
     None),
    (re.compile(r"RESOURCE_EXHAUSTED|[Oo]ut of memory"),
     "The device ran out of memory for this computation: use smaller arrays or batches, or donate inputs "
     "(donate_argnums) so their buffers can be reused.",
     None),
    (re.compile(r"Unknown backend: '(\w+)' requested.*Platforms present are: (\w+)", re.S),
     "This run is on a {present} executor, which has no {requested}: choose the device kind in the menu "
     "next to Run (when one is online), or use jax.devices() for what the run has.",
     lambda m: {"present": m.group(2).upper(), "requested": m.group(1).upper()}),
    (re.compile(r"requires (\d+) replicas, but only (\d+) XLA devices are available|"
                r"cannot select an axis to squeeze out which has size not equal to one"),
     "pmap maps over the leading axis, one slice per device, so that axis must not be longer than the "
     "number of devices (jax.device_count()): reshape the input to (devices, per-device, ...).",
     None),
]

# Where the code runs rather than the code.
NO_INPUT = ("A run gets no input: there is no keyboard or terminal behind it, so input() finds nothing. "
            "Put the value in the code instead.")
# The run was given an input, and input() asked for a line after its last (one sentence for one
# line, one for more: Chinese says both alike, English does not).
INPUT_RAN_OUT_ONE = ("input() found no more input: the run's input had one line, and it has been read. Give "
                     "the run more lines, or stop reading where its input ends (a `for line in sys.stdin:` "
                     "loop stops there by itself).")
INPUT_RAN_OUT = ("input() found no more input: the run's input had {lines} lines, and all of them have been read. "
                 "Give the run more lines, or stop reading where its input ends (a `for line in sys.stdin:` loop "
                 "stops there by itself).")
NO_NETWORK = ("A run has no network (no internet, no local services), so nothing can be downloaded or "
              "fetched: make the data in the code (np.random, jax.random, a small literal) instead.")
NOT_INSTALLED = ("`{module}` is not installed here, and a run cannot install packages (no network, no pip). "
                 "A run can import Python's standard library and {libraries}; the Libraries menu lists "
                 "their versions.")
DEEP_RECURSION = ("The recursion went {depth} calls deep and used up the run's memory: every Python call "
                  "keeps a frame until it returns. Write it as a loop (in JAX code, jax.lax.fori_loop or "
                  "jax.lax.scan), or recurse less deeply.")
REMOVED = "`jax.{name}` was removed from JAX (this run has JAX {version}); use `{replacement}` instead."
REMOVED_BUT_KEPT = ("`jax.{name}` was removed from JAX (this run has JAX {version}); use `{replacement}` "
                    "instead. Code written for an older JAX can run as it was on the {runtime} runtime, "
                    "which still has it.")

# Full-width punctuation in code: one sentence a kind of mark, so that each reads naturally in
# Chinese too. Args: the 1-based line and column (as the editor counts them), the character, its
# code point ("U+FF08") and the ASCII character Python needs in its place.
FULL_WIDTH = {
    "parenthesis":
        "Line {line}, column {column}: '{char}' ({code_point}) is a full-width parenthesis; Python only reads "
        "the half-width '{ascii}'. Switch your input method to English punctuation, or use the editor's quick "
        "fix to replace them all.",
    "bracket":
        "Line {line}, column {column}: '{char}' ({code_point}) is a full-width bracket; Python only reads the "
        "half-width '{ascii}'. Switch your input method to English punctuation, or use the editor's quick fix "
        "to replace them all.",
    "comma":
        "Line {line}, column {column}: '{char}' ({code_point}) is a full-width comma; Python only reads the "
        "half-width '{ascii}'. Switch your input method to English punctuation, or use the editor's quick fix "
        "to replace them all.",
    "colon":
        "Line {line}, column {column}: '{char}' ({code_point}) is a full-width colon; Python only reads the "
        "half-width '{ascii}'. Switch your input method to English punctuation, or use the editor's quick fix "
        "to replace them all.",
    "semicolon":
        "Line {line}, column {column}: '{char}' ({code_point}) is a full-width semicolon; Python only reads "
        "the half-width '{ascii}'. Switch your input method to English punctuation, or use the editor's quick "
        "fix to replace them all.",
    # In backticks: a single quote between single quotes would not read as one.
    "quote":
        "Line {line}, column {column}: `{char}` ({code_point}) is a full-width quotation mark; Python only "
        "reads the half-width `{ascii}`. Switch your input method to English punctuation, or use the editor's "
        "quick fix to replace them all.",
    "full_stop":
        "Line {line}, column {column}: '{char}' ({code_point}) is a full-width full stop; Python only reads "
        "the half-width '{ascii}'. Switch your input method to English punctuation, or use the editor's quick "
        "fix to replace them all.",
    # Invisible: named by its code point alone.
    "space":
        "Line {line}, column {column}: there is a full-width space ({code_point}); Python only reads the "
        "half-width space. Switch your input method to half-width (English) mode, or use the editor's quick "
        "fix to replace them all.",
    "other":
        "Line {line}, column {column}: '{char}' ({code_point}) is a full-width character; Python only reads "
        "the half-width '{ascii}'. Switch your input method to English punctuation, or use the editor's quick "
        "fix to replace them all.",
}

# Every sentence this module says, for the page's translations.
TEMPLATES = (
    *(sentence for _, sentence in _BY_CLASS),
    *(sentence for _, sentence, _ in _BY_MESSAGE),
    NO_INPUT, INPUT_RAN_OUT_ONE, INPUT_RAN_OUT, NO_NETWORK, NOT_INSTALLED, DEEP_RECURSION, REMOVED, REMOVED_BUT_KEPT,
    *FULL_WIDTH.values(),
)


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


def deep_recursion(exc: BaseException, depth: int | None = None) -> Templated | None:
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
        return Templated(DEEP_RECURSION, depth=f"{depth:,}")
    return None


def input_explanation() -> Templated:
    """input() found nothing more: the run had no input, or it has read all of it."""
    from .common import input_lines

    lines = input_lines()
    if lines is None:
        return Templated(NO_INPUT)
    if lines == 1:
        return Templated(INPUT_RAN_OUT_ONE)
    return Templated(INPUT_RAN_OUT, lines=f"{lines:,}")


def environment_explanation(exc: BaseException) -> Templated | None:
    """The sentence for an error that comes from the sandbox rather than the code."""
    import socket

    if text := deep_recursion(exc):
        return text

    if isinstance(exc, EOFError) and "reading a line" in str(exc):
        return input_explanation()
    if isinstance(exc, ModuleNotFoundError) and exc.name and not _importable(exc.name.partition(".")[0]):
        from .common import LIBRARIES

        listed = ", ".join(name for name in LIBRARIES if name != "jaxlib")
        return Templated(NOT_INSTALLED, module=exc.name.partition(".")[0], libraries=listed)
    reason = getattr(exc, "reason", None)  # urllib's URLError wraps the socket's error
    for cause in (exc, reason, exc.__cause__, exc.__context__):
        if isinstance(cause, socket.gaierror):  # no resolver: there is no network to ask
            return Templated(NO_NETWORK)
    # The sandbox refuses any socket but a unix one: EPERM where the socket is made.
    if isinstance(reason, PermissionError):
        return Templated(NO_NETWORK)
    if isinstance(exc, PermissionError) and _raised_in(exc, "socket.py"):
        return Templated(NO_NETWORK)
    return None


# What Python needs in place of each full-width mark, and so which kind of mark it is: the
# full-width forms of ASCII's punctuation (U+FF01..U+FF5E, but for "＿", which names may hold as
# they may hold its letters and digits), and the marks a Chinese input method types that have
# none. The same table as the editor's quick fix (frontend/src/fullwidth.ts), which this sentence
# points to.
_HALF_WIDTH = {chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)
               if not (chr(code - 0xFEE0).isalnum() or chr(code - 0xFEE0) == "_")}
_HALF_WIDTH.update({"\u3000": " ", "。": ".", "【": "[", "】": "]", "《": "<", "》": ">",
                    "“": '"', "”": '"', "‘": "'", "’": "'"})
_KINDS = {"(": "parenthesis", ")": "parenthesis", "[": "bracket", "]": "bracket", ",": "comma",
          ":": "colon", ";": "semicolon", '"': "quote", "'": "quote", ".": "full_stop", " ": "space"}
# Python's words (3.12): "invalid character '（' (U+FF08)", "invalid non-printable character U+3000".
_INVALID_CHARACTER = re.compile(r"invalid (?:non-printable )?character (?:'.' )?\(?U\+([0-9A-Fa-f]{4,6})\)?")


def full_width_explanation(exc: BaseException) -> Templated | None:
    """The snippet has a full-width mark where Python needs ASCII: which, where, and the fix."""
    from .common import SNIPPET_FILENAME

    if not isinstance(exc, SyntaxError) or exc.filename != SNIPPET_FILENAME or not exc.lineno:
        return None
    m = _INVALID_CHARACTER.search(exc.msg or "")
    char = chr(int(m.group(1), 16)) if m else ""
    if char not in _HALF_WIDTH:
        return None
    # The line as typed: a magic's statement is parsed apart (``exc.text`` is the statement
    # alone), though at its place in the line.
    text = linecache.getline(SNIPPET_FILENAME, exc.lineno) or exc.text or ""
    index = (exc.offset or 0) - 1
    if text[index:index + 1] != char:
        index = text.find(char)
    if index < 0:
        return None
    # Python counts characters; the editor counts UTF-16 units (an emoji before it is two).
    column = len(text[:index].encode("utf-16-le")) // 2 + 1
    ascii_ = _HALF_WIDTH[char]
    template = FULL_WIDTH[_KINDS.get(ascii_, "other")]
    args = {"line": exc.lineno, "column": column, "char": char, "code_point": f"U+{ord(char):04X}",
            "ascii": ascii_}
    return Templated(template, **{name: value for name, value in args.items() if name in placeholders(template)})


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


def removed_explanation(exc: BaseException) -> Templated | None:
    """``jax.tree_map`` on a JAX that no longer has it: what replaced it, and where it still runs."""
    if not isinstance(exc, AttributeError) or exc.name not in _REMOVED:
        return None
    module = getattr(exc, "obj", None)
    if getattr(module, "__name__", None) != "jax":
        return None
    version = str(getattr(module, "__version__", "this version"))
    args = {"name": exc.name, "version": version, "replacement": _REMOVED[exc.name]}
    if exc.name in _KEPT_BY_0_4 and not version.startswith("0.4."):
        return Templated(REMOVED_BUT_KEPT, **args, runtime=_REMOVED_KEPT_BY)
    return Templated(REMOVED, **args)


def explanation(exc: BaseException) -> Templated | None:
    """The sentence for ``exc`` (a str), or None when it is not one of the errors we know."""
    removed = removed_explanation(exc)
    if removed:
        return removed
    names = [cls.__name__ for cls in type(exc).__mro__]
    for name, sentence in _BY_CLASS:
        if name in names and type(exc).__module__.startswith("jax"):
            return Templated(sentence)
    if not _is_jax_error(exc):
        return full_width_explanation(exc) or environment_explanation(exc)
    message = str(exc)
    for pattern, sentence, args in _BY_MESSAGE:
        m = pattern.search(message)
        if m:
            return Templated(sentence, **(args(m) if args else {}))
    return None


def explanation_fields(text: str | None) -> dict:
    """An error event's fields for ``text``: the explanation, and the template and args it was
    made from (unless an arg is too long to send: then the English alone)."""
    if not text:
        return {}
    fields = {"explanation": str(text)}
    if isinstance(text, Templated) and all(
            len(str(value)) <= EXPLANATION_ARG_MAX_CHARS for value in text.args.values()):
        fields.update(explanation_template=text.template, explanation_args=text.json_args())
    return fields


def add_explanation(exc: BaseException, event: dict) -> dict:
    try:
        text = explanation(exc)
    except MemoryError:
        raise  # the memory is still full: the caller frees the frames and says less (main.error_event)
    except Exception:  # noqa: BLE001 - an explanation is a nicety, never a second error
        text = None
    return dict(event, **explanation_fields(text))
