"""jaxplay, the JAX Playground's helpers, for a notebook downloaded from the playground.

The playground has a module ``jaxplay``. This is the same functions with the same arguments in
plain Python (jax, numpy and the standard library), so that code which imports it runs in
Jupyter or Colab too: what the playground shows in its Compiled and Timing panes is printed
here instead. Left out: the share of the device's peak memory bandwidth and FLOP rate.

    jaxplay.jaxprs(f, x)                    # the jaxprs of f, grad(f) and vmap(f)
    jaxplay.bench(jax.jit(f), x)            # compile apart, warm-up, block_until_ready, repeats
    jaxplay.compare({"numpy": f, "jit": jax.jit(f)}, x)   # one table, speed-ups vs the first
    jaxplay.show(x)                         # an array's shape, dtype, devices and values

What they return has been printed already: left as a cell's last line it is not shown again.
"""

import math
import statistics
import time

__all__ = ["jaxprs", "bench", "compare", "show", "BenchResult", "Comparison", "Jaxprs"]


class _Shown:
    """Printed as it was made: Jupyter shows an object with ``_ipython_display_`` by that method
    alone, so a cell that ends with a helper's call does not print its repr after its table."""

    def _ipython_display_(self):
        pass


def format_time(seconds):
    """A duration as IPython's %timeit writes it: "436 ms", "10.7 µs"."""
    if seconds >= 60.0:
        minutes, rest = divmod(seconds, 60)
        return f"{int(minutes)}min {int(rest)}s"
    for unit, scale in (("s", 1), ("ms", 1e3), ("µs", 1e6), ("ns", 1e9)):
        if seconds * scale >= 1 or unit == "ns":
            return f"{seconds * scale:.3g} {unit}"


def _name(f):
    return getattr(f, "__name__", None) or getattr(getattr(f, "func", None), "__name__", None) or "f"


# -- jaxprs -------------------------------------------------------------------------------------


class Jaxprs(_Shown, dict):
    """{title: jaxpr text}."""

    def __repr__(self):
        return f"<jaxprs: {', '.join(self)}>"

    def __str__(self):
        return "\n\n".join(f"# {title}\n{text}" for title, text in self.items())


def jaxprs(f, *args, grad=True, vmap=True, batch=8, argnums=0, **kwargs):
    """Prints ``jax.make_jaxpr`` of ``f``, of ``jax.grad(f, argnums)`` and of ``jax.vmap(f)`` (every
    argument mapped over a new leading axis of size ``batch``) for these arguments' shapes and
    dtypes; a transformation that does not apply says why."""
    import jax

    name = _name(f)
    specs = jax.tree_util.tree_map(
        lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype) if hasattr(a, "shape") and hasattr(a, "dtype") else a,
        args)
    batched = jax.tree_util.tree_map(
        lambda s: jax.ShapeDtypeStruct((batch, *s.shape), s.dtype) if isinstance(s, jax.ShapeDtypeStruct) else s,
        specs)
    makers = [(name, lambda: jax.make_jaxpr(f)(*specs, **kwargs))]
    if grad:
        makers.append((f"grad({name})", lambda: jax.make_jaxpr(jax.grad(f, argnums=argnums))(*specs, **kwargs)))
    if vmap:
        makers.append((f"vmap({name})", lambda: jax.make_jaxpr(jax.vmap(f))(*batched, **kwargs)))
    result = Jaxprs()
    for title, make in makers:
        try:
            result[title] = str(make())
        except Exception as exc:  # noqa: BLE001 - the panel says why the transformation does not apply
            first = str(exc).splitlines()[0] if str(exc) else ""
            result[title] = f"{type(exc).__name__}: {first}"
    print(result, flush=True)
    return result


# -- bench --------------------------------------------------------------------------------------


class BenchResult(_Shown):
    """One function's timing. Times are seconds per call; ``timings`` holds one per run."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def summary(self):
        loops = f"{self.loops} loop{'s' if self.loops != 1 else ''}"
        line = (f"{self.label}: {format_time(self.median)} median per call (± {format_time(self.std)} std. dev.; "
                f"min {format_time(self.min)}; {self.repeats} runs × {loops})")
        extra = []
        if self.compile is not None:
            extra.append(f"compile {format_time(self.compile)} apart")
        if self.gflops is not None:
            extra.append(f"{self.gflops:.3g} GFLOP/s")
        if self.gbs is not None:
            extra.append(f"{self.gbs:.3g} GB/s")
        return line + ("\n  " + " · ".join(extra) if extra else "")

    def __repr__(self):
        return f"<BenchResult {self.label}: median {format_time(self.median)}>"

    def __str__(self):
        return self.summary()


def _donated(lowered):
    """The positions of the arguments a jitted function donates (``Lowered.args_info``)."""
    import jax

    try:
        positional = lowered.args_info[0]
        return tuple(i for i, info in enumerate(positional)
                     if any(getattr(leaf, "donated", False) for leaf in jax.tree_util.tree_leaves(info)))
    except Exception:  # noqa: BLE001 - an older JAX without args_info: no donation known
        return ()


def bench(f, *args, label=None, repeats=7, number=None, warmup=1, target_s=0.2, flops=None,
          bytes_accessed=None, quiet=False, **kwargs):
    """Times ``f(*args, **kwargs)``: a jitted ``f`` is lowered and compiled apart first (and XLA's
    cost analysis gives its FLOPs and bytes), then ``warmup`` calls, then ``repeats`` runs of
    ``number`` calls each (about ``target_s`` a run), every call waited for with
    ``jax.block_until_ready``. A donated argument is fed back from the output, call after call
    (the arguments passed are copied first, never consumed)."""
    import jax

    if not callable(f):
        raise TypeError(f"bench needs a function, got {type(f).__name__}")
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    label = label or _name(f)
    timer = time.perf_counter
    trace_s = compile_s = None
    cost = {}
    donate = ()
    if hasattr(f, "lower"):
        t0 = timer()
        lowered = f.lower(*args, **kwargs)
        t1 = timer()
        compiled = lowered.compile()
        trace_s, compile_s = t1 - t0, timer() - t1
        donate = _donated(lowered)
        try:
            analysis = compiled.cost_analysis()
            if isinstance(analysis, (list, tuple)):
                analysis = analysis[0] if analysis else {}
            cost = {"flops": analysis.get("flops"), "bytes_accessed": analysis.get("bytes accessed")}
        except Exception:  # noqa: BLE001 - not every backend has a cost analysis
            cost = {}
    flops = flops if flops is not None else cost.get("flops")
    bytes_accessed = bytes_accessed if bytes_accessed is not None else cost.get("bytes_accessed")

    state = {"args": tuple(jax.tree_util.tree_map(lambda a: a.copy() if hasattr(a, "copy") else a, a)
                           if i in donate else a for i, a in enumerate(args))}

    def call():
        out = f(*state["args"], **kwargs)
        if donate:
            leaves = out if isinstance(out, tuple) else (out,)
            new = list(state["args"])
            for slot, i in enumerate(donate):
                if slot < len(leaves) and getattr(leaves[slot], "shape", None) == getattr(new[i], "shape", None):
                    new[i] = leaves[slot]
                else:
                    raise ValueError(f"bench feeds a donated argument back from the output, but output {slot} "
                                     f"does not have the shape of argument {i}: return the updated array first")
            state["args"] = tuple(new)
        return out

    block = jax.block_until_ready
    t0 = timer()
    block(call())
    first_call = timer() - t0
    for _ in range(max(warmup - 1, 0)):
        block(call())
    if number is None:
        t0 = timer()
        block(call())
        number = max(1, min(int(target_s / max(timer() - t0, 1e-7)), 1_000_000))
    timings = []
    for _ in range(repeats):
        t0 = timer()
        for _ in range(number):
            block(call())
        timings.append((timer() - t0) / number)
    median = statistics.median(timings)
    mean = math.fsum(timings) / len(timings)
    std = (math.fsum((t - mean) ** 2 for t in timings) / len(timings)) ** 0.5
    result = BenchResult(
        label=label, repeats=repeats, loops=number, warmup=warmup, median=median, mean=mean, std=std,
        min=min(timings), max=max(timings), timings=timings, first_call=first_call, trace=trace_s,
        compile=compile_s, flops=flops, bytes_accessed=bytes_accessed,
        gflops=flops / median / 1e9 if flops else None,
        gbs=bytes_accessed / median / 1e9 if bytes_accessed else None,
        donated=bool(donate), cost_from=label if cost.get("flops") or cost.get("bytes_accessed") else None,
    )
    if not quiet:
        print(result.summary(), flush=True)
    return result


# -- compare ------------------------------------------------------------------------------------


class Comparison(_Shown, list):
    """The rows of a comparison (BenchResults), each with its ``speedup`` over the first."""

    def __init__(self, rows, text):
        super().__init__(rows)
        self.text = text

    def __repr__(self):
        return f"<Comparison of {', '.join(r.label for r in self)}>"

    def __str__(self):
        return self.text


def compare(impls, *args, label=None, repeats=7, quiet=False, note=None, **kwargs):
    """Times each of ``impls`` ({label: function, or (function, *its own arguments)}) with
    ``bench`` and prints one table, speed-ups relative to the first. Rows that XLA cannot
    cost-analyse (NumPy, JAX without jit) borrow a jitted row's FLOPs and bytes."""
    if not isinstance(impls, dict) or not impls:
        raise TypeError("compare takes a dict {label: function or (function, *args)}")
    rows = []
    for name, impl in impls.items():
        fn, fn_args = (impl[0], impl[1:]) if isinstance(impl, tuple) else (impl, args)
        rows.append(bench(fn, *fn_args, label=str(name), repeats=repeats, quiet=True, **kwargs))
    donor = next((r for r in rows if r.cost_from), None)
    for r in rows:
        if r.cost_from is None and donor is not None:
            r.flops, r.bytes_accessed, r.cost_from = donor.flops, donor.bytes_accessed, donor.label
            r.gflops = r.flops / r.median / 1e9 if r.flops else None
            r.gbs = r.bytes_accessed / r.median / 1e9 if r.bytes_accessed else None
    for r in rows:
        r.speedup = rows[0].median / r.median if r.median > 0 else None
    # The table is all there is to see here (the playground has a pane too): labels are not cut.
    width = max(16, *(len(r.label) for r in rows))
    lines = [label] if label else []
    lines.append(f"{'':<{width}} {'median':>10} {'± std':>10} {'speed-up':>9} {'GB/s':>8} {'GFLOP/s':>9}")
    for r in rows:
        lines.append(
            f"{r.label:<{width}} {format_time(r.median):>10} {format_time(r.std):>10} "
            f"{(f'{r.speedup:.2f}×' if r.speedup else '—'):>9} "
            f"{(f'{r.gbs:.3g}' if r.gbs is not None else '—'):>8} "
            f"{(f'{r.gflops:.3g}' if r.gflops is not None else '—'):>9}")
    lines.append(f"(median per call; {repeats} runs each; speed-up relative to {rows[0].label})")
    if note:
        lines.append(f"\n{note}")
    text = "\n".join(lines)
    if not quiet:
        print(text, flush=True)
    return Comparison(rows, text)


# -- show ---------------------------------------------------------------------------------------


def show(value, label=None):
    """Shows a value as a cell's result would be: an array with its shape, dtype and devices."""
    if isinstance(value, _Shown):
        print(value, flush=True)
        return
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        devices = getattr(value, "devices", None)
        where = f" on {', '.join(str(d) for d in devices())}" if callable(devices) else ""
        head = f"{label}: " if label else ""
        print(f"{head}{dtype}{list(shape)}{where}\n{value!r}", flush=True)
        return
    try:
        from IPython.display import display
    except ImportError:
        print(repr(value), flush=True)
    else:
        display(value)
