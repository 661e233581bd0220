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

Who a compilation is for (the snippet, a library, or JAX itself, which is not shown) is decided
in ``origin``; why a function compiled again, in ``recompile``; the texts and figures shown, in
``texts``; every use of JAX's internals, in ``jaxcompat``.

Only real XLA compilations are reported: a lowering whose module XLA's in-memory cache already
compiled (e.g. ``P()`` then the equivalent ``P(None, None)``: a new lowering, the same module)
reuses the executable and is neither an event nor a recompilation. Whether XLA ran is read from
``backend_compile_duration``, which JAX records only when it really compiles.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time

from . import common, compilecache, jaxcompat, origin, protocol, recompile, texts

_tls = threading.local()
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

# An XLA compile still running after this long is announced with a "compiling" event.
COMPILING_NOTICE_S = 0.5


# -- the hooks --------------------------------------------------------------------------------


@contextlib.contextmanager
def quiet():
    """Compilations made meanwhile by this thread are the runner's own (its warm-up): neither
    captured nor counted, and nothing of them is left for the snippet's first compilation."""
    _tls.quiet = True
    try:
        yield
    finally:
        _tls.quiet = False
        _tls.trace = None


def _on_duration(event: str, duration: float, **kwargs) -> None:
    if getattr(_tls, "quiet", False):
        return
    if event == jaxcompat.TRACE_EVENT:
        _tls.trace = (kwargs.get("fun_name"), duration)
    elif event == jaxcompat.BACKEND_COMPILE_EVENT:
        stats.compiles += 1
        stats.compile_s += duration
        _tls.backend_compiles = getattr(_tls, "backend_compiles", 0) + 1


def install() -> bool:
    """Wrap JAX's lowering and compile steps. Returns False (and captures nothing) if this JAX
    does not have them where 0.12 has them."""
    global _installed
    if _installed:
        return True
    try:
        points = jaxcompat.hook_points()
    except (ImportError, AttributeError):
        return False
    orig_lower, orig_compile, orig_make_jit = points.lower, points.compile, points.make_jit
    origin.init()
    jaxcompat.exclude_from_tracebacks(common.RUNNER_DIR + os.sep)
    jaxcompat.listen_durations(_on_duration)

    @functools.wraps(orig_lower)
    def lower_sharding_computation(closed_jaxpr, api_name, fun_name, *args, **kwargs):
        if getattr(_tls, "quiet", False):
            return orig_lower(closed_jaxpr, api_name, fun_name, *args, **kwargs)
        t0 = time.perf_counter()
        computation = orig_lower(closed_jaxpr, api_name, fun_name, *args, **kwargs)
        lower_s = time.perf_counter() - t0
        trace = getattr(_tls, "trace", None)
        _tls.trace = None
        try:
            info = origin.classify(closed_jaxpr, sys._getframe(1))
            if info is not None:
                in_shardings = args[0] if args else kwargs.get("in_shardings")
                donated = args[4] if len(args) > 4 else kwargs.get("donated_invars")
                info["signature"] = recompile.signature(closed_jaxpr, info, in_shardings, donated)
                info["jaxpr"] = closed_jaxpr
                info["lower_ms"] = common.ms(lower_s)
                # (JAX 0.4 reports the trace without naming its function: the last one is this one.)
                info["trace_ms"] = common.ms(trace[1]) if trace and trace[0] in (fun_name, None) else None
                info.pop("fun", None)
                computation._jaxplay_capture = info
        # This runs inside JAX's own lowering: raising would fail the user's jit call. On a
        # failure the function is only left out of the Compiled pane.
        except Exception:  # noqa: BLE001
            pass
        return computation

    compile = _capturing_compile(orig_compile)

    @functools.wraps(orig_make_jit)
    def make_jit(*args, **kwargs):
        jitted = orig_make_jit(*args, **kwargs)
        try:
            origin.note_jit(jitted, sys._getframe(1))
        except (AttributeError, TypeError):  # jax.jit's private wrapper changed: only naming suffers
            pass
        return jitted

    points.replace(lower_sharding_computation, compile, make_jit)
    _originals.update(points=points, lower=orig_lower, compile=orig_compile, make_jit=orig_make_jit)
    _install_pmap()
    _installed = True
    return True


def _capturing_compile(orig_compile):
    """A computation's ``compile`` that reports the user's compilations it makes (jit's
    MeshComputation, and pmap's own PmapComputation on older JAX)."""

    @functools.wraps(orig_compile)
    def compile(self, compiler_options=None, **kwargs):
        info = getattr(self, "_jaxplay_capture", None)
        if info is None or (self._executable is not None and compiler_options is None
                            and not kwargs.get("device_assignment")):
            return orig_compile(self, compiler_options, **kwargs)
        before = getattr(_tls, "backend_compiles", 0)
        loaded_before = compilecache.loaded()
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
            _emit(self, info, executable, compile_s, cached=compilecache.loaded() > loaded_before)
        # Reported as the event's capture_error, not swallowed; the user's call goes on.
        except Exception as exc:  # noqa: BLE001
            common.send("compiled", name=info.get("name"), capture_error=f"{type(exc).__name__}: {exc}")
        return executable

    return compile


def uninstall() -> None:
    """Put JAX back as it was (a run that asked for no capture: the overhead baseline)."""
    global _installed
    if not _installed:
        return
    _originals["points"].replace(_originals["lower"], _originals["compile"], _originals["make_jit"])
    if "pmap_points" in _originals:
        _originals["pmap_points"].replace(_originals["pmap_lower"], _originals["pmap_compile"])
    jaxcompat.unlisten_durations(_on_duration)
    _installed = False


def _install_pmap() -> None:
    """On a JAX whose pmap lowers on its own path: capture that path too."""
    points = jaxcompat.pmap_points()
    if points is None:
        return
    orig_lower, orig_compile = points.lower, points.compile

    @functools.wraps(orig_lower)
    def lower_parallel_callable(*args, **kwargs):
        t0 = time.perf_counter()
        computation = orig_lower(*args, **kwargs)
        try:
            closed_jaxpr = kwargs.get("closed_jaxpr")
            info = origin.classify_pmap(closed_jaxpr, sys._getframe(1)) if closed_jaxpr is not None else None
            if info is not None:
                donated = kwargs.get("donated_invars", args[7] if len(args) > 7 else None)
                info["signature"] = recompile.signature(closed_jaxpr, info, None, donated)
                info["jaxpr"] = closed_jaxpr
                info["lower_ms"] = common.ms(time.perf_counter() - t0)
                info["trace_ms"] = None
                info.pop("fun", None)
                computation._jaxplay_capture = info
        # As in lower_sharding_computation: this runs inside JAX's own pmap lowering, and an
        # internal that moved must cost the Compiled pane this function, never the user's call.
        except Exception:  # noqa: BLE001
            pass
        return computation

    points.replace(lower_parallel_callable, _capturing_compile(orig_compile))
    _originals.update(pmap_points=points, pmap_lower=orig_lower, pmap_compile=orig_compile)


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


def _emit(computation, info: dict, executable, compile_s: float, cached: bool = False) -> None:
    stats.user_compiles += 1
    stats.user_compile_s += compile_s
    stats.last_user = info["name"]
    compile_ms = common.ms(compile_s)
    sig = info["signature"]
    count, recompiled, warning = recompile.recompile_info(info["key"], sig, info["name"], info.get("call_site"),
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
        "out_types": [jaxcompat.aval_str(a) for a in getattr(jaxpr, "out_avals", ())],
        "static_args": sig["static"],
        "num_devices": len(getattr(computation, "_device_list", None) or ()) or None,
        "trace_ms": info.get("trace_ms"),
        "lower_ms": info.get("lower_ms"),
        "compile_ms": compile_ms,
        "flops": None,
        "transcendentals": None,
        "bytes_accessed": None,
        "memory": texts.memory(xla_exe),
        "compiles": count,
        "recompile": recompiled,
        "warning": " ".join(warning) if warning else None,
        "warning_parts": protocol.parts_of(warning) if warning else None,
    }
    if cached:  # loaded from the node's compile cache: compile_ms is the load
        fields["cached"] = True
    fields.update(texts.cost(xla_exe))
    fields.update(texts.texts(jaxpr, computation, executable))
    common.send("compiled", **fields)


def compile_counts() -> tuple[int, float]:
    """(user compilations so far, their total seconds): %timeit compares before and after."""
    return stats.user_compiles, stats.user_compile_s

