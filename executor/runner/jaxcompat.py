"""Every use the runner makes of JAX's internals, in one place.

The default runtime's JAX is 0.12; the others (``runtimes/runtimes.toml``) carry 0.6 and 0.4,
and a node's image may carry another (a GPU image had 0.11.2). Every function here answers for
all of them; tests/runner/test_runtimes.py runs the capture suite on each. Public APIs
are used where the pinned JAX has them (``jax.monitoring``'s listeners, ``jax.core.Tracer``,
``Jaxpr.pretty_print``, the compiled executable's ``cost_analysis``); the rest are JAX's private
modules and the names of its frames and their locals, which capture reads to learn what a
compilation is for. Each function here degrades rather than fails: an internal that moved costs
the Compiled pane a detail (or, for the hooks, the pane itself: ``hook_points`` raises and
capture stays off), never a user's run.

    capture      hook_points, exclude_from_tracebacks, listen_durations
    origin       the frames below: JIT_ENTRY, JIT_CALLS, PMAP_FILE, EAGER_FILE; is_jaxpr,
                 debug_info
    recompile    trace_context, aval_str
    texts        stablehlo_text, user_frame
    shapes       type_text
    display      is_tracer
"""

from __future__ import annotations

import sys

# The frames between ``pjit.make_jit`` and whoever called ``jax.jit``: the decorator form's
# lambda, jax.jit itself, its api_boundary wrapper (JAX 0.6's keyword-checking ``wrapped``), and
# the old ``pjit.pjit``.
JIT_ENTRY = frozenset({("api.py", "jit"), ("api.py", "<lambda>"), ("api.py", "wrapped"), ("pjit.py", "pjit"),
                       ("traceback_util.py", "reraise_with_filtered_traceback")})
# pjit's frames for a call that missed jit's cache (locals ``fun``, ``jit_info``, ``args``,
# ``kwargs``) and for the AOT path (``jit_func`` with ``_fun`` and ``_jit_info``).
JIT_FILE = "pjit.py"
JIT_CALL = "cache_miss"
JIT_AOT = ("jit_trace", "jit_lower")
# The file whose jitted wrapper runs a pmap (its frame's ``infer_params`` closes over the user's
# function's debug info) and the one whose jit runs an eager primitive.
PMAP_FILE = "pmap.py"
EAGER_FILE = "dispatch.py"
# XLA's duration events (public, through jax.monitoring): tracing a function (with its
# ``fun_name``) and a real backend compilation (absent when XLA's cache answered).
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


class HookPoints:
    """The three places capture wraps, looked up at call time by JAX (module attributes):
    ``pxla.lower_sharding_computation`` (the traced jaxpr in, the StableHLO module out),
    ``pxla.MeshComputation.compile`` (the executable out) and ``pjit.make_jit`` (each jit
    wrapper made). Raises ImportError or AttributeError when this JAX has them elsewhere."""

    def __init__(self):
        from jax._src import pjit
        from jax._src.interpreters import pxla

        self._pjit, self._pxla = pjit, pxla
        self.lower = pxla.lower_sharding_computation
        self.compile = pxla.MeshComputation.compile
        self.make_jit = pjit.make_jit

    def replace(self, lower, compile, make_jit) -> None:
        self._pxla.lower_sharding_computation = lower
        self._pxla.MeshComputation.compile = compile
        self._pjit.make_jit = make_jit


def hook_points() -> HookPoints:
    return HookPoints()


class PmapPoints:
    """Before pmap became jit + shard_map (JAX 0.4 to 0.6 here), it lowered and compiled on a path
    of its own: ``pxla.lower_parallel_callable`` (the traced jaxpr in, a ``PmapComputation`` out)
    and ``PmapComputation.compile``."""

    def __init__(self):
        from jax._src.interpreters import pxla

        self._pxla = pxla
        self.lower = pxla.lower_parallel_callable
        self.compile = pxla.PmapComputation.compile

    def replace(self, lower, compile) -> None:
        self._pxla.lower_parallel_callable = lower
        self._pxla.PmapComputation.compile = compile


def pmap_points() -> PmapPoints | None:
    """pmap's own lowering, where this JAX still has one; None where pmap is jit's."""
    try:
        import jax

        if getattr(jax.config, "jax_pmap_shmap_merge", None) is not None and jax.config.jax_pmap_shmap_merge:
            return None
        return PmapPoints()
    except (ImportError, AttributeError):
        return None


def exclude_from_tracebacks(folder: str) -> None:
    """The runner's own frames are not the user's: keep them out of jaxpr source lines and out
    of JAX's filtered tracebacks."""
    from jax._src import source_info_util, traceback_util

    source_info_util.register_exclusion(folder)
    traceback_util.register_exclusion(folder)


def listen_durations(listener) -> None:
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(listener)


def unlisten_durations(listener) -> None:
    import jax.monitoring

    try:
        jax.monitoring.unregister_event_duration_listener(listener)
    except (AssertionError, AttributeError, ValueError):  # not registered, or an older JAX
        pass


class DebugInfo:
    """What a traced function's debug info says, as JAX 0.12 names it (``func_filename``,
    ``func_name``, ``func_lineno``, ``func_src_info``, ``arg_names``). JAX 0.4 keeps it on the
    open jaxpr only, as a ``JaxprDebugInfo`` with ``func_src_info`` (``"f at file.py:3"``) and no
    file or line of its own: they are read from that text."""

    __slots__ = ("func_filename", "func_name", "func_lineno", "func_src_info", "arg_names")

    def __init__(self, raw):
        self.func_src_info = getattr(raw, "func_src_info", None)
        self.arg_names = getattr(raw, "arg_names", None) or ()
        if hasattr(raw, "func_filename"):
            self.func_filename, self.func_name = raw.func_filename, raw.func_name
            self.func_lineno = raw.func_lineno
            return
        name, filename, line = None, None, None
        text = self.func_src_info or ""
        head, sep, place = text.rpartition(" at ")
        if sep:
            name = head
            filename, colon, number = place.rpartition(":")
            if not colon or not number.isdigit():
                filename, number = place, ""
            line = int(number) if number else None
        else:
            name = text or None
        self.func_filename, self.func_name, self.func_lineno = filename, name, line


def debug_info(jaxpr) -> DebugInfo | None:
    """The debug info of a closed or open jaxpr, or of a jitted function's traced info, or None."""
    raw = getattr(jaxpr, "debug_info", None)
    if raw is None:
        raw = getattr(getattr(jaxpr, "jaxpr", None), "debug_info", None)
    return None if raw is None else DebugInfo(raw)


def jit_info(jitted):
    """The ``PjitInfo`` behind a ``jax.jit`` wrapper: its ``_jit_info`` since JAX 0.5, before
    that only in the closure of its ``_cache_miss`` (under its api_boundary wrapper)."""
    found = getattr(jitted, "_jit_info", None)
    if found is not None:
        return found
    todo, seen = [getattr(jitted, "_cache_miss", None)], 0
    while todo and seen < 4:
        fn = todo.pop()
        seen += 1
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if type(value).__name__ == "PjitInfo":
                return value
            if callable(value) and getattr(value, "__closure__", None):
                todo.append(value)
    return None


# Environment variables set here for JAX's sake; a forked runner, whose environment is the
# launcher's, sets them again.
FLAGS_SET: dict[str, str] = {}


def prepare_cpu_devices(count: int) -> None:
    """Before jax is imported: JAX 0.4 has no option for simulated CPU devices, only XLA's flag,
    which XLA reads once, when jaxlib loads. The installed version is read without importing it."""
    from importlib import metadata

    try:
        version = tuple(int(p) for p in metadata.version("jax").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return
    if version < (0, 5):
        import os

        flags = [f for f in os.environ.get("XLA_FLAGS", "").split() if "xla_force_host_platform_device_count" not in f]
        os.environ["XLA_FLAGS"] = FLAGS_SET["XLA_FLAGS"] = " ".join(
            [*flags, f"--xla_force_host_platform_device_count={count}"])
        # Its CPU client logs "(re)initializing LLVM with options fingerprint …" at INFO on
        # stderr in every run: noise in the snippet's output, which later XLAs keep to themselves.
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = FLAGS_SET["TF_CPP_MIN_LOG_LEVEL"] = os.environ.get(
            "TF_CPP_MIN_LOG_LEVEL", "1")


def set_cpu_devices(count: int) -> None:
    """Simulate ``count`` CPU devices; after jax is imported, before the backend starts (with
    ``prepare_cpu_devices`` before the import)."""
    import jax

    try:
        jax.config.update("jax_num_cpu_devices", count)
    except AttributeError:  # JAX 0.4: the flag prepare_cpu_devices set
        pass


def preload_lowering() -> None:
    """Import what JAX imports lazily at its first lowering, the MHLO dialect's bindings (10-20
    ms of a runner's first operation otherwise); in the template, where it starts no thread and
    every runner shares it. Older JAX imports them with jax itself."""
    try:
        from jax._src.lib.mlir import dialects
    except ImportError:
        return
    for name in ("builtin", "chlo", "mhlo"):
        getattr(dialects, name, None)


def is_jaxpr(value) -> bool:
    core = sys.modules.get("jax._src.core")
    return core is not None and isinstance(value, core.Jaxpr)


def is_tracer(value) -> bool:
    core = sys.modules.get("jax.core")
    tracer = getattr(core, "Tracer", None) if core is not None else None
    return tracer is not None and isinstance(value, tracer)


def user_frame(source_info):
    """The first frame of an equation's traceback that is not JAX's (nor the runner's)."""
    from jax._src import source_info_util

    return source_info_util.user_frame(source_info.traceback)


def trace_context():
    """JAX's settings that are part of jit's cache key (enable_x64, default_device, a mesh...),
    hashable; None where this JAX cannot say."""
    try:
        from jax._src import config

        context = config.trace_context()
        hash(context)
    except (ImportError, AttributeError, TypeError):
        return None
    return context


def aval_str(aval) -> str:
    """``f32[3,4]`` as JAX prints an abstract value in short form."""
    try:
        return aval.str_short(short_dtypes=True)  # private, and its signature has changed before
    except (AttributeError, TypeError):
        return str(aval)


def type_text(array) -> str:
    """``f32[8@x,4]``: a concrete array's type as JAX writes it (``jax.typeof`` since 0.6; before,
    the array's ``aval``)."""
    import jax

    typeof = getattr(jax, "typeof", None)
    return aval_str(typeof(array) if typeof is not None else array.aval)


def stablehlo_text(computation) -> str:
    """The StableHLO module a lowering hands to XLA, without location annotations."""
    from jax._src.interpreters import mlir

    return mlir.module_to_string(computation.stablehlo(), enable_debug_info=False)


# The custom calls a module may make and still be compiled and run by a graded run's checker:
# those JAX guarantees stable for export (linear algebra, sharding annotations); a host callback's
# target is not among them.
_STABLE_FALLBACK = frozenset({"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
                              "AllocateBuffer", "LuDecomposition", "Qr", "Eigh", "ApproxTopK",
                              "ProductOfElementaryHouseholderReflectors"})


def stable_custom_calls() -> frozenset:
    try:
        from jax._src.export import _export

        return frozenset(_export._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE) | _STABLE_FALLBACK
    except (ImportError, AttributeError):
        return _STABLE_FALLBACK


def cost_value(compiled, key: str) -> float | None:
    """One figure of a compiled executable's cost analysis (a dict, or a list of one per device
    in older JAX)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - a backend without it
        return None
    if isinstance(cost, list):
        cost = cost[0] if cost else {}
    value = (cost or {}).get(key)
    return float(value) if isinstance(value, (int, float)) else None


class CompilePoint:
    """Where XLA compiles a lowered module (``compiler.compile_or_get_cached``, looked up by
    pxla at call time) and what the node's compile cache (runner/compilecache.py) needs around
    it: a module's bytes, an executable serialized and loaded again, and a module compiled from
    its bytes alone. JAX 0.6 and later pass the executable's devices (``executable_devices``);
    0.4 does not. Raises ImportError or AttributeError where this JAX has them elsewhere."""

    def __init__(self):
        import inspect

        from jax._src import compiler
        from jax._src.interpreters import mlir

        self._compiler, self._mlir = compiler, mlir
        self.original = compiler.compile_or_get_cached
        self.parameters = list(inspect.signature(self.original).parameters)
        if self.parameters[:5] != ["backend", "computation", "devices", "compile_options", "host_callbacks"]:
            raise AttributeError(f"compile_or_get_cached({', '.join(self.parameters)})")
        self.with_devices = "executable_devices" in self.parameters
        self.compile_and_load = getattr(compiler, "backend_compile_and_load", None) or compiler.backend_compile

    def replace(self, compile_or_get_cached) -> None:
        self._compiler.compile_or_get_cached = compile_or_get_cached

    def module_bytes(self, computation) -> bytes:
        return self._mlir.module_to_bytecode(computation)

    def arguments(self, args: tuple, kwargs: dict) -> dict:
        bound = dict(zip(self.parameters, args))
        bound.update(kwargs)
        return bound

    def load(self, backend, serialized: bytes, executable_devices, compile_options):
        if self.with_devices:
            return backend.deserialize_executable(serialized, executable_devices, compile_options)
        return backend.deserialize_executable(serialized, compile_options)

    def compile_bytes(self, module: bytes, options: bytes, device_ids: list[int], shape: list[int]) -> bytes:
        """The module (as ``module_bytes`` gave it) compiled as the run that sent it would have
        compiled it, serialized."""
        import jax
        import numpy as np
        from jax._src.lib import xla_client as xc
        from jax._src.lib.mlir import ir

        backend = jax.devices()[0].client
        by_id = {d.id: d for d in backend.devices()}
        devices = np.array([by_id[i] for i in device_ids], dtype=object).reshape(shape)
        compile_options = xc.CompileOptions.ParseFromString(options)
        with self._mlir.make_ir_context():
            computation = ir.Module.parse(module)
            args = [backend, computation]
            if self.with_devices:
                args.append(xc.DeviceList(tuple(devices.flat)))
            args += [compile_options, []]  # no host callbacks: such modules are never cached
            executable = self.compile_and_load(*args)
        return executable.serialize()


def compile_point() -> CompilePoint:
    return CompilePoint()
