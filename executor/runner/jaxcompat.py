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


# The profiler (runner/profile.py) ---------------------------------------------------------------

def profiler_start(python_tracer: bool = True):
    """A profiler session, started. JAX's own ``ProfileSession`` where it has one (0.7 and
    later: a snippet's own ``jax.profiler.start_trace`` then says one is running), which stops
    into jaxlib's ProfileData; before it, XLA's ``ProfilerSession``, which stops into XSpace
    bytes (read by runner/xspace.py). The backend is started first, as JAX does, or its devices'
    tracers would miss the run."""
    from jax._src import xla_bridge

    xla_bridge.get_backend()
    try:
        from jax._src.profiler import ProfileSession
    except ImportError:
        ProfileSession = None
    try:
        from jax._src.lib import _profiler as xla_profiler
    except ImportError:  # JAX 0.4: under xla_client
        from jax._src.lib import xla_client

        xla_profiler = xla_client.profiler
    options = xla_profiler.ProfileOptions()
    options.python_tracer_level = 1 if python_tracer else 0
    # 2 is its default, but JAX 0.6.2's default options record no HLO op unless it is set.
    options.host_tracer_level = 2
    profiler_settled()
    saved = _stderr_off()
    try:
        if ProfileSession is not None:
            return _Profiling(ProfileSession(profiler_options=options).start(), quiet=True)
        return _Profiling(xla_profiler.ProfilerSession(options), quiet=False)
    finally:
        _stderr_on(saved)


def trace_annotation(name: str):
    """A host event of the running profile's, named ``name``, for as long as the ``with`` lasts."""
    from jax.profiler import TraceAnnotation

    return TraceAnnotation(name)


class _Profiling:
    """A started profiler session, which ``profiler_stop`` stops and lets go of while fd 2 is
    quiet (JAX 0.6's logs "Profiler session tear down." as it goes). ``quiet``: stopping it writes
    nothing to stderr (JAX's own ProfileSession)."""

    __slots__ = ("session", "quiet")

    def __init__(self, session, quiet: bool):
        self.session, self.quiet = session, quiet


# A profile let go of in the background (``profiler_discard``): the next one starts after it.
_discarding: list = []


def profiler_discard(profiling: _Profiling) -> None:
    """Stop ``profiling`` without reading what it recorded: an interrupted cell's, whose session
    waits for it to stop. Gathering a Python loop's million calls takes seconds, so where
    stopping is quiet it happens in the background (on the snippet's stderr nothing would show
    that is not the snippet's); elsewhere now, as ``profiler_stop`` does."""
    import threading

    session, profiling.session = profiling.session, None
    if not profiling.quiet:
        saved = _stderr_off()
        try:
            session.stop()
        finally:
            _stderr_on(saved)
        return
    thread = threading.Thread(target=session.stop, name="profile-discard", daemon=True)
    thread.start()
    _discarding.append(thread)


def profiler_settled(timeout_s: float = 60.0) -> None:
    """Wait for a profile being let go of in the background: one profile runs at a time."""
    while _discarding:
        _discarding.pop().join(timeout_s)


def profiler_stop(profiling: _Profiling):
    """What ``profiling`` recorded: planes of lines of events (``.planes``)."""
    saved = _stderr_off()
    try:
        session, profiling.session = profiling.session, None
        data = session.stop()
        del session
    finally:
        _stderr_on(saved)
    if hasattr(data, "planes"):
        return data
    from .xspace import parse_xspace

    return parse_xspace(data)


def profiler_stop_raw(profiling: _Profiling) -> bytes:
    """What ``profiling`` recorded, as XLA serialized it (the XSpace bytes, read by
    runner/xspace.py), without reading it here: JAX 0.12's ProfileSession would gather it into
    ProfileData in this process; its XLA session gives the bytes. JAX's own state is then reset
    as its ``stop`` resets it, so that a later profile (a cell's, the snippet's) can start."""
    saved = _stderr_off()
    try:
        session, profiling.session = profiling.session, None
        raw = getattr(session, "_raw_session", None)
        if raw is None:  # XLA's ProfilerSession (0.4, 0.6): stop() is the bytes
            data = session.stop()
            # Its tear-down logs "Profiler session tear down." on stderr: while stderr is still off.
            del session, raw
            return data
        from jax._src import profiler as jax_profiler

        with jax_profiler._profile_state.lock:
            data = raw.stop()
            session._is_running = False
            session._raw_session = None
            jax_profiler._profile_state.reset()
            jax_profiler.clear_metadata()
        return data
    finally:
        _stderr_on(saved)


def _stderr_off() -> int | None:
    """fd 2 on /dev/null while the profiler starts or stops (``_stderr_on`` puts it back): XLA's
    C++ logs there ("Can't import tensorflow.python.profiler.trace", twice a session on JAX 0.4
    and 0.6), which would be the snippet's stderr. The snippet's code does not run meanwhile,
    and a failure still raises. The saved fd, or None where there is none to move."""
    import os

    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    try:
        saved = os.dup(2)
    except OSError:
        return None
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        os.close(saved)
        return None
    os.dup2(null, 2)
    os.close(null)
    return saved


def _stderr_on(saved: int | None) -> None:
    import os

    if saved is not None:
        os.dup2(saved, 2)
        os.close(saved)


def executable_devices(modules) -> dict[int, tuple[int, ...]]:
    """{program id: the ordinals of its devices, in its order}, of the live executables whose
    module is named in ``modules`` (None: every one): the k-th device an op's program was launched on
    (runner/profile.py, where an op does not say its device). The program id is the HLO
    module's unique id (the ops' ``program_id``), read from its serialized HloModuleProto (field
    5), as no JAX says it otherwise; an executable gone by now is not there."""
    import jax

    from .xspace import _fields

    local = jax.local_devices()
    ordinal = {device: n for n, device in enumerate(local)}
    found: dict[int, tuple[int, ...]] = {}
    for client in {device.client for device in local}:
        for executable in client.live_executables():
            hlo = executable.hlo_modules()
            if len(hlo) != 1 or (modules is not None and hlo[0].name not in modules):
                continue
            proto = hlo[0].as_serialized_hlo_module_proto()
            program = next((v for field, wire, v in _fields(proto, 0, len(proto)) if field == 5 and wire == 0), None)
            devices = [ordinal.get(device) for device in executable.local_devices()]
            if program is not None and None not in devices:
                found[program] = tuple(devices)
    return found


def device_names() -> dict[int, str]:
    """{local device ordinal: the name its profile lane has}: a CPU device as XLA names it
    (``TFRT_CPU_3``, JAX's own name before 0.8), any other as its platform's profile plane is
    named (``/device:GPU:0``)."""
    import jax

    names = {}
    for ordinal, device in enumerate(jax.local_devices()):
        if device.platform == "cpu":
            names[ordinal] = f"TFRT_CPU_{device.id}"
        else:
            names[ordinal] = f"/device:{device.platform.upper()}:{ordinal}"
    return names


def jax_version() -> str:
    import jax

    return jax.__version__


def platform() -> str:
    import jax

    return jax.default_backend()
