"""jaxplay: the playground's helpers for what cannot be captured automatically.

    import jaxplay

    jaxplay.jaxprs(f, x)                    # jaxprs of f, grad(f) and vmap(f), side by side
    jaxplay.bench(jax.jit(f), x)            # a correct timing: compile apart, warm-up,
                                            # block_until_ready, repeats, median and spread,
                                            # GFLOP/s and GB/s, share of the device's peak
    jaxplay.compare({"numpy": f, "jit": jax.jit(f)}, x)   # one table, speed-ups vs the first
    jaxplay.show(x)                         # an array's shape, dtype, devices, sharding, summary

Every jitted function the snippet compiles already appears in the Compiled pane, and figures
(``plt.show()``) in the Figures pane, without any of this. Notebook magics work as in Jupyter:
``%timeit -n5 fn(x)``, ``%time fn(x)``, and a cell's last expression is shown.

jaxprs(f, *args, grad=True, vmap=True, batch=8, argnums=0, **kwargs)
    Shows ``jax.make_jaxpr`` of ``f``, ``jax.grad(f, argnums)`` and ``jax.vmap(f)`` for these
    arguments (only their shapes and dtypes matter: ``jax.ShapeDtypeStruct`` works too). vmap
    maps every argument over a new leading axis of size ``batch``. A transformation that does
    not apply (grad of a function whose output is not a scalar) shows why instead. Returns a
    dict-like ``Jaxprs`` {title: jaxpr text}.

bench(f, *args, label=None, repeats=7, number=None, warmup=1, target_s=0.2, flops=None,
      bytes_accessed=None, quiet=False, **kwargs)
    Times ``f(*args, **kwargs)``. A jitted ``f`` is first lowered and compiled by itself
    (``trace_ms``/``compile_ms``, and XLA's cost analysis gives the FLOPs and bytes). Then
    ``warmup`` calls, then ``repeats`` runs of ``number`` calls each (chosen so that a run lasts
    about ``target_s``), every call waited for with ``jax.block_until_ready``. Reports the median
    per call and the spread, GFLOP/s and GB/s from the cost analysis (or from ``flops=`` /
    ``bytes_accessed=``), and the share of the device's peak memory bandwidth and FLOP rate where
    the device is in ``PEAKS``. For a function jitted with ``donate_argnums``, each call's output
    is fed back as the donated argument (the arguments you passed are copied first, never
    consumed). Returns a ``BenchResult``; emits a ``timing`` event of kind "bench".

compare(impls, *args, label=None, repeats=7, quiet=False, note=None, **kwargs)
    ``impls`` maps a label to a function, or to a tuple ``(function, *its own args)`` when the
    implementations take different inputs (a NumPy array for NumPy, a JAX array for JAX). Each
    is timed with ``bench``; speed-ups are relative to the first. Rows whose function cannot
    be cost-analysed (NumPy, un-jitted JAX) borrow the FLOPs and bytes of a jitted row, so
    their GB/s are the effective rate for the same computation (``cost_from`` says whose).
    ``note``: a sentence shown with the table, e.g. why the numbers come out as they do.
    Returns a ``Comparison``; emits one ``timing`` event of kind "comparison".

What jaxprs, bench and compare return has been shown already (printed, or in its pane): as the
snippet's last expression it is not shown again, here as in Jupyter. ``print(result)`` prints
its text; ``result.text``, ``result.median``, ``result[i].speedup`` and the like are there to use.

show(value, label=None)
    Displays a value as a cell's result would be: an array's summary, a figure, a repr.

PEAKS
    {device kind: {"bandwidth": bytes/s, "flops": {dtype: FLOP/s}}}, dense peak figures from
    the vendors' data sheets. CPUs are not listed (their peak depends on the machine).
"""

from __future__ import annotations

import math
import statistics
import time

from . import common, compilecache, display, jaxcompat, notebook

__all__ = ["jaxprs", "bench", "compare", "show", "PEAKS", "BenchResult", "Comparison", "Jaxprs"]

# Vendor data sheets, dense (no sparsity) figures.
PEAKS: dict[str, dict] = {
    "H200": {"bandwidth": 4.8e12, "flops": {"bfloat16": 989e12, "float16": 989e12,
                                            "float8_e4m3fn": 1979e12, "float32": 67e12}},
    "H100": {"bandwidth": 3.35e12, "flops": {"bfloat16": 989e12, "float16": 989e12,
                                             "float32": 67e12}},
    "A100": {"bandwidth": 2.039e12, "flops": {"bfloat16": 312e12, "float16": 312e12,
                                              "float32": 19.5e12}},
    "L4": {"bandwidth": 300e9, "flops": {"bfloat16": 121e12, "float16": 121e12, "float32": 30.3e12}},
    "T4": {"bandwidth": 320e9, "flops": {"float16": 65e12, "float32": 8.1e12}},
    "V100": {"bandwidth": 900e9, "flops": {"float16": 125e12, "float32": 15.7e12}},
    "TPU v4": {"bandwidth": 1.2e12, "flops": {"bfloat16": 275e12}},
    "TPU v5 lite": {"bandwidth": 819e9, "flops": {"bfloat16": 197e12}},
    "TPU v5e": {"bandwidth": 819e9, "flops": {"bfloat16": 197e12}},
    "TPU v5p": {"bandwidth": 2.765e12, "flops": {"bfloat16": 459e12}},
    "TPU v6 lite": {"bandwidth": 1.64e12, "flops": {"bfloat16": 918e12}},
    "TPU v6e": {"bandwidth": 1.64e12, "flops": {"bfloat16": 918e12}},
}


def device_peak(device_kind: str | None) -> tuple[str, dict] | None:
    if not device_kind:
        return None
    for name in sorted(PEAKS, key=len, reverse=True):
        if name.lower() in device_kind.lower():
            return name, PEAKS[name]
    return None


# -- jaxprs ---------------------------------------------------------------------------------


class Jaxprs(display.Shown, dict):
    """{title: jaxpr text}; its repr stays short because the page shows the texts."""

    def __repr__(self) -> str:
        return f"<jaxprs: {', '.join(self)}>"

    def __str__(self) -> str:
        return "\n\n".join(f"# {title}\n{text}" for title, text in self.items())


def _fname(f) -> str:
    from . import origin

    base = getattr(f, "__name__", None) or getattr(getattr(f, "func", None), "__name__", None) or "f"
    return origin.transform_name(f, base) if callable(f) else base


def jaxprs(f, *args, grad: bool = True, vmap: bool = True, batch: int = 8, argnums=0, **kwargs):
    import jax

    from . import texts

    name = _fname(getattr(f, "_fun", f))
    specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype)
                                   if hasattr(a, "shape") and hasattr(a, "dtype") else a, args)
    panels = []

    def panel(title: str, make):
        try:
            closed = make()
            text, where = texts.jaxpr_text(closed.jaxpr if hasattr(closed, "jaxpr") and
                                           not hasattr(closed, "eqns") else closed)
            text, _cut = common.cap_text(text)
            panels.append({"title": title, "jaxpr": text, "jaxpr_lines": where[: text.count("\n") + 1],
                           "error": None})
        except Exception as exc:  # noqa: BLE001 - the panel says why it does not apply
            panels.append({"title": title, "jaxpr": None, "jaxpr_lines": [],
                           "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"})

    panel(name, lambda: jax.make_jaxpr(f)(*specs, **kwargs))
    if grad:
        panel(f"grad({name})", lambda: jax.make_jaxpr(jax.grad(f, argnums=argnums))(*specs, **kwargs))
    if vmap:
        batched = jax.tree_util.tree_map(
            lambda s: jax.ShapeDtypeStruct((batch, *s.shape), s.dtype)
            if isinstance(s, jax.ShapeDtypeStruct) else s, specs)
        panel(f"vmap({name})", lambda: jax.make_jaxpr(jax.vmap(f))(*batched, **kwargs))
    text = "\n\n".join(f"# {p['title']}\n{p['jaxpr'] if p['jaxpr'] is not None else p['error']}"
                       for p in panels)
    common.send("display", kind="jaxprs", mime="text/plain", name=name, panels=panels, text=text)
    return Jaxprs((p["title"], p["jaxpr"] if p["jaxpr"] is not None else p["error"]) for p in panels)


# -- bench ----------------------------------------------------------------------------------


class BenchResult(display.Shown):
    """One function's timing. Times are seconds per call; ``timings`` holds one per run."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def as_event(self) -> dict:
        d = {k: v for k, v in self.__dict__.items()
             if not k.startswith("_") and k not in ("peak_name", "peak_dtype")}
        for key in ("median", "mean", "std", "min", "max", "iqr", "first_call", "trace", "compile"):
            value = d.pop(key, None)
            d[f"{key}_ms"] = common.ms(value, 6)
        d["runs_ms"] = [common.ms(t, 6) for t in d.pop("timings", [])]
        return d

    def summary(self) -> str:
        parts = [f"{self.label}: {common.format_time(self.median)} median per call "
                 f"(± {common.format_time(self.std)} std. dev.; min {common.format_time(self.min)}; "
                 f"{self.repeats} runs × {self.loops} loop{'s' if self.loops != 1 else ''})"]
        extra = []
        if self.compile is not None:
            loaded = " (loaded from the node's compile cache)" if getattr(self, "compile_cached", False) else ""
            extra.append(f"compile {common.format_time(self.compile)} apart{loaded}")
        if self.gflops is not None:
            extra.append(f"{self.gflops:.3g} GFLOP/s")
        if self.gbs is not None:
            extra.append(f"{self.gbs:.3g} GB/s")
        if self.bandwidth_share is not None:
            extra.append(f"{self.bandwidth_share:.1%} of {self.peak_name}'s memory bandwidth")
        if self.flops_share is not None:
            extra.append(f"{self.flops_share:.1%} of its {self.peak_dtype} peak")
        if extra:
            parts.append("  " + " · ".join(extra))
        return "\n".join(parts)

    def __repr__(self) -> str:
        return f"<BenchResult {self.label}: median {common.format_time(self.median)}>"

    def __str__(self) -> str:
        return self.summary()


def _device_of(args) -> tuple[str | None, str | None]:
    import jax

    for leaf in jax.tree_util.tree_leaves(args):
        if isinstance(leaf, jax.Array):
            try:
                d = next(iter(leaf.devices()))
                return d.platform, d.device_kind
            except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
                break
    try:
        d = jax.devices()[0]
        return d.platform, d.device_kind
    except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
        return None, None


def _main_dtype(args) -> str | None:
    import jax

    best = None
    for leaf in jax.tree_util.tree_leaves(args):
        if hasattr(leaf, "dtype") and hasattr(leaf, "size"):
            if best is None or leaf.size > best[0]:
                best = (leaf.size, str(leaf.dtype))
    return best[1] if best else None


def _copy_donated(args, donate: tuple[int, ...]):
    import jax

    return tuple(
        jax.tree_util.tree_map(lambda a: a.copy() if hasattr(a, "copy") else a, a)
        if i in donate else a
        for i, a in enumerate(args)
    )


def bench(f, *args, label: str | None = None, repeats: int = 7, number: int | None = None,
          warmup: int = 1, target_s: float = 0.2, flops: float | None = None,
          bytes_accessed: float | None = None, quiet: bool = False, _emit: bool = True, **kwargs):
    import jax

    if not callable(f):
        raise TypeError(f"bench needs a function, got {type(f).__name__}")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    label = label or _fname(getattr(f, "_fun", f))

    jit_info = jaxcompat.jit_info(f)
    donate = tuple(getattr(jit_info, "donate_argnums", ()) or ())
    args = _copy_donated(args, donate) if donate else args

    trace_s, compile_s, compile_cached, cost = _compile_apart(f, args, kwargs)
    flops = flops if flops is not None else cost.get("flops")
    bytes_accessed = bytes_accessed if bytes_accessed is not None else cost.get("bytes_accessed")

    call = _caller(f, args, kwargs, donate)
    first_call, number, timings = _time_calls(call, jax.block_until_ready, warmup=warmup, number=number,
                                              repeats=repeats, target_s=target_s)
    median, mean, std, iqr = _spread(timings)

    platform, device_kind = _device_of(args)
    dtype = _main_dtype(args)
    gflops = flops / median / 1e9 if flops else None
    gbs = bytes_accessed / median / 1e9 if bytes_accessed else None
    peak_fields, bandwidth_share, flops_share = _peak_shares(device_kind, dtype, gflops, gbs)
    result = BenchResult(
        kind="bench", label=label, repeats=repeats, loops=number, warmup=warmup,
        median=median, mean=mean, std=std, min=min(timings), max=max(timings), iqr=iqr,
        timings=timings, first_call=first_call, trace=trace_s, compile=compile_s,
        compile_cached=compile_cached, flops=flops, bytes_accessed=bytes_accessed, gflops=gflops, gbs=gbs,
        platform=platform, device_kind=device_kind, dtype=dtype, peak=peak_fields,
        peak_name=peak_fields["name"] if peak_fields else None,
        peak_dtype=peak_fields["dtype"] if peak_fields else None,
        bandwidth_share=bandwidth_share, flops_share=flops_share, donated=bool(donate),
        blocked=True, cost_from=label if cost else None,
    )
    if _emit:
        text = result.summary()
        if not quiet:
            print(text, flush=True)
        common.send("timing", text=text, **result.as_event())
    return result


def _compile_apart(f, args: tuple, kwargs: dict) -> tuple[float | None, float | None, bool, dict]:
    """A jitted ``f`` lowered and compiled by itself, before it is timed: (trace seconds, compile
    seconds, whether the compilation was a load from the node's compile cache, XLA's cost
    analysis: flops and bytes_accessed). Anything else: (None, None, False, {})."""
    if not (hasattr(f, "lower") and hasattr(f, "_fun")):
        return None, None, False, {}
    timer = time.perf_counter
    t0 = timer()
    lowered = f.lower(*args, **kwargs)
    t1 = timer()
    loaded = compilecache.loaded()
    compiled = lowered.compile()
    t2 = timer()
    compile_cached = compilecache.loaded() > loaded  # the node's compile cache: a load, not XLA
    try:
        analysis = compiled.cost_analysis()
        if isinstance(analysis, (list, tuple)):
            analysis = analysis[0] if analysis else {}
        cost = {k: int(v) if isinstance(v, float) and v.is_integer() else v
                for k, v in (("flops", analysis.get("flops")),
                             ("bytes_accessed", analysis.get("bytes accessed")))}
    except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
        cost = {}
    return t1 - t0, t2 - t1, compile_cached, cost


def _caller(f, args: tuple, kwargs: dict, donate: tuple[int, ...]):
    """One call of ``f`` as bench makes it: for a function that donates arguments, each call's
    output fed back as the donated argument of the next."""
    state = {"args": args}
    if not donate:
        def call():
            return f(*state["args"], **kwargs)

        return call

    def call_donating():
        out = f(*state["args"], **kwargs)
        leaves = out if isinstance(out, tuple) else (out,)
        new = list(state["args"])
        for slot, i in enumerate(donate):
            if slot < len(leaves) and hasattr(leaves[slot], "shape") and \
                    getattr(leaves[slot], "shape", None) == getattr(new[i], "shape", None):
                new[i] = leaves[slot]
            else:
                raise ValueError(
                    f"bench feeds a donated argument back from the output, but output {slot} "
                    f"does not have the shape of argument {i}: return the updated array first")
        state["args"] = tuple(new)
        return out

    return call_donating


def _time_calls(call, block, *, warmup: int, number: int | None, repeats: int,
                target_s: float) -> tuple[float, int, list[float]]:
    """(the first call's seconds, calls per repeat, seconds per call of each repeat): ``warmup``
    calls, then ``repeats`` runs of ``number`` calls (by default as many as last about
    ``target_s``), every call waited for."""
    timer = time.perf_counter
    t0 = timer()
    block(call())
    first_call = timer() - t0
    for _ in range(max(warmup - 1, 0)):
        block(call())
    if number is None:
        t0 = timer()
        block(call())
        one = max(timer() - t0, 1e-7)
        number = max(1, min(int(target_s / one), 1_000_000))
    timings = []
    for _ in range(repeats):
        t0 = timer()
        for _ in range(number):
            block(call())
        timings.append((timer() - t0) / number)
    return first_call, number, timings


def _spread(timings: list[float]) -> tuple[float, float, float, float]:
    """(median, mean, standard deviation, interquartile range) of the timings."""
    median = statistics.median(timings)
    mean = math.fsum(timings) / len(timings)
    std = (math.fsum((t - mean) ** 2 for t in timings) / len(timings)) ** 0.5
    if len(timings) >= 4:
        q = statistics.quantiles(timings, n=4)
        iqr = q[2] - q[0]
    else:
        iqr = max(timings) - min(timings)
    return median, mean, std, iqr


def _peak_shares(device_kind: str | None, dtype: str | None, gflops: float | None,
                 gbs: float | None) -> tuple[dict | None, float | None, float | None]:
    """The device's peak (``PEAKS``; None for a device not there) and the shares of its memory
    bandwidth and of its FLOP rate for the dtype that the measured rates reach."""
    peak = device_peak(device_kind)
    if not peak:
        return None, None, None
    peak_name, table = peak
    peak_dtype = dtype if dtype in table["flops"] else None
    peak_fields = {"name": peak_name, "bandwidth_gbs": table["bandwidth"] / 1e9,
                   "tflops": table["flops"].get(dtype, None) and table["flops"][dtype] / 1e12,
                   "dtype": peak_dtype}
    bandwidth_share = gbs * 1e9 / table["bandwidth"] if gbs is not None else None
    flops_share = gflops * 1e9 / table["flops"][peak_dtype] if gflops is not None and peak_dtype else None
    return peak_fields, bandwidth_share, flops_share


# -- compare --------------------------------------------------------------------------------


class Comparison(display.Shown, list):
    """The rows of a comparison (BenchResults), fastest speed-up last read off ``speedup``."""

    def __init__(self, rows, text: str):
        super().__init__(rows)
        self.text = text

    def __repr__(self) -> str:
        return f"<Comparison of {', '.join(r.label for r in self)}>"

    def __str__(self) -> str:
        return self.text


def compare(impls: dict, *args, label: str | None = None, repeats: int = 7, quiet: bool = False,
            note: str | None = None, **kwargs):
    if not isinstance(impls, dict) or not impls:
        raise TypeError("compare takes a dict {label: function or (function, *args)}")
    rows: list[BenchResult] = []
    for name, impl in impls.items():
        if isinstance(impl, tuple):
            fn, fn_args = impl[0], impl[1:]
        else:
            fn, fn_args = impl, args
        rows.append(bench(fn, *fn_args, label=str(name), repeats=repeats, quiet=True, _emit=False,
                          **kwargs))
    donor = next((r for r in rows if r.flops or r.bytes_accessed), None)
    for r in rows:
        if r.cost_from is None and donor is not None:
            r.flops, r.bytes_accessed, r.cost_from = donor.flops, donor.bytes_accessed, donor.label
            r.gflops = r.flops / r.median / 1e9 if r.flops else None
            r.gbs = r.bytes_accessed / r.median / 1e9 if r.bytes_accessed else None
            if r.peak and r.gbs is not None:
                r.bandwidth_share = r.gbs * 1e9 / (r.peak["bandwidth_gbs"] * 1e9)
    base = rows[0].median
    for r in rows:
        r.speedup = base / r.median if r.median > 0 else None
    header = f"{'':<16} {'median':>10} {'± std':>10} {'speed-up':>9} {'GB/s':>8} {'GFLOP/s':>9}"
    lines = [header]
    for r in rows:
        lines.append(
            f"{r.label[:16]:<16} {common.format_time(r.median):>10} {common.format_time(r.std):>10} "
            f"{(f'{r.speedup:.2f}×' if r.speedup else '—'):>9} "
            f"{(f'{r.gbs:.3g}' if r.gbs is not None else '—'):>8} "
            f"{(f'{r.gflops:.3g}' if r.gflops is not None else '—'):>9}")
    lines.append(f"(median per call; {repeats} runs each; speed-up relative to {rows[0].label})")
    text = "\n".join(lines)
    if not quiet:
        print(text, flush=True)
    common.send(
        "timing",
        kind="comparison",
        label=label or " vs ".join(r.label for r in rows),
        baseline=rows[0].label,
        repeats=repeats,
        rows=[dict(r.as_event(), speedup=r.speedup) for r in rows],
        note=str(note) if note else None,
        text=text,
    )
    return Comparison(rows, text)


# -- show -----------------------------------------------------------------------------------


def show(value, label: str | None = None) -> None:
    if isinstance(value, display.Shown):  # asked for again: its text, as print() gives it
        print(value, flush=True)
    elif display._is_array(value):
        display.show_array(value, label=label)
    elif type(value).__module__.startswith("matplotlib") and hasattr(value, "savefig"):
        display.send_figure(value)
    else:
        display.show_value(value)


# -- entry points of the source transformation (notebook.py) ----------------------------------

UsageError = notebook.UsageError


def _line_magic(name, args, lineno, col, glob, loc):
    return notebook.line_magic(name, args, lineno, col, glob, loc)


def _cell_magic(name, args, body, body_lineno, glob, loc):
    return notebook.cell_magic(name, args, body, body_lineno, glob, loc, display.show_value)
