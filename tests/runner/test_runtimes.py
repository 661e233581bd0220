"""The contract every runtime keeps (runtimes/runtimes.toml): the same snippets, through the real
supervisor and sandbox, on each runtime's own environment. What a run shows (its versions, the
compiled functions and why one compiled again, %timeit, a figure, an error explained, the shapes
of its names, a graded submission) is the same on JAX 0.4, 0.6 and 0.12; where JAX differs is
executor/runner/jaxcompat.py's business.
"""

from __future__ import annotations

import textwrap

import pytest

from executor import runtimes
from executor.local import RunResult, grade_local, run_local
from executor.sandbox import Limits, get_launcher

UID_BASE = 62500
CATALOG = runtimes.catalog()
# The host runtime is a node's own interpreter (bench/tpu_check.sh tries it on a TPU host).
IDS = CATALOG.own_ids


@pytest.fixture(scope="module", params=IDS)
def runtime_launcher(request):
    from tests.conftest import sandbox_backend

    runtime = CATALOG.runtimes[request.param]
    assert runtimes.is_built(runtime), f"build it: python -m executor.runtimes build {runtime.id}"
    launcher = get_launcher(sandbox_backend(), limits=Limits(wall_s=60), cpu_devices=8,
                            uid_base=UID_BASE + 100 * IDS.index(runtime.id), venv=str(runtimes.environment(runtime)))
    launcher.runtime = runtime
    yield launcher
    launcher.close()


def run(launcher, code: str) -> RunResult:
    return RunResult(run_local(textwrap.dedent(code), launcher=launcher))


def test_the_runner_says_and_uses_its_runtimes_versions(runtime_launcher):
    rt = runtime_launcher.runtime
    r = run(runtime_launcher, """\
        import jax, numpy, optax, flax
        print(jax.__version__, numpy.__version__, optax.__version__, jax.device_count())
        """)
    assert r.status == "succeeded", r
    assert r.stdout.split() == [rt.jax, rt.numpy, rt.packages["optax"], "8"]
    started = r.of("started")[0]
    assert started["jax_version"] == rt.jax and started["jaxlib_version"] == rt.jaxlib
    assert started["libraries"]["flax"] == rt.packages["flax"]


def test_compilations_their_reasons_timing_and_shapes_are_captured(runtime_launcher):
    r = run(runtime_launcher, """\
        import jax, jax.numpy as jnp

        @jax.jit
        def f(x):
            return jnp.sin(x) @ x.T + 1

        x = jnp.ones((8, 8))
        y = f(x)
        f(jnp.ones((4, 8)))             # a new shape: compiled again, and it says why
        g = jax.grad(lambda w: (w ** 2).sum())
        print(g(jnp.arange(3.0)))
        fast_sin = jax.jit(jnp.sin)     # a JAX function the snippet jits itself
        fast_sin(x)
        %timeit f(x).block_until_ready()
        params = {"w": jnp.zeros((3, 2)), "b": jnp.zeros(2)}
        """)
    assert r.status == "succeeded", r
    assert r.stdout.startswith("[0. 2. 4.]\n")
    compiled = r.of("compiled")
    by_name = [e["name"] for e in compiled]
    assert by_name.count("f") == 2 and "sin" in by_name, by_name
    first, again = [e for e in compiled if e["name"] == "f"]
    assert first["line"] == 3 and "jaxpr" in first and "stablehlo" in first and "hlo" in first
    assert "f32[8,8]" in first["jaxpr"], first["jaxpr"]
    # What a comparison's Timing tab sets side by side: each step's time, on every runtime.
    assert all(first[k] > 0 for k in ("trace_ms", "lower_ms", "compile_ms")), first
    assert again["recompile"]["kind"] == "shape" and "f32[8,8] → f32[4,8]" in again["recompile"]["reason"]
    timing = r.of("timing")
    assert timing and timing[0]["kind"] == "timeit" and timing[0]["median_ms"] > 0
    names = r.of("shapes")[0]["names"]
    assert names["y"]["type"] == "f32[8,8]" and names["y"]["line"] == 8
    assert names["params"]["type"] == "{'w': f32[3,2], 'b': f32[2]}"


def test_a_pmap_over_eight_devices_is_captured_and_its_new_shape_explained(runtime_launcher):
    r = run(runtime_launcher, """\
        import jax, jax.numpy as jnp
        def f(x):
            return jnp.sin(x) * 2
        p = jax.pmap(f)
        print(p(jnp.ones((8, 3))).shape)
        _ = p(jnp.ones((8, 4)))
        """)
    assert r.status == "succeeded" and r.stdout == "(8, 3)\n", r
    first, again = r.of("compiled")
    assert first["name"] == again["name"] == "pmap(f)" and first["via"] == "pmap" and first["line"] == 2
    assert again["recompile"]["kind"] == "shape" and "→" in again["recompile"]["reason"]


def test_a_figure_and_an_explained_error(runtime_launcher):
    r = run(runtime_launcher, """\
        import matplotlib.pyplot as plt
        plt.plot([1, 2, 3]); plt.show()
        import jax, jax.numpy as jnp
        @jax.jit
        def f(x):
            if x > 0:
                return x
            return -x
        f(jnp.float32(1.0))
        """)
    assert r.status == "failed"
    assert [e["mime"] for e in r.of("display")] == ["image/png"]
    error = r.error
    assert error["exc_type"] in ("TracerBoolConversionError", "ConcretizationTypeError"), error
    assert "jnp.where" in error.get("explanation", "") or "static" in error.get("explanation", ""), error
    assert error["line"] == 6, error


def test_a_profiled_pmap_has_a_lane_per_device(runtime_launcher):
    """A lane per simulated device, each with its ops named after their HLO instructions, the
    collective among them: JAX 0.12's ops say their device, 0.4's and 0.6's are found from their
    launches (each run is waited for, and its input already on the devices, so its parts are
    launched by its Execute: a part that waits for its input is launched later by whichever
    thread readies it, which the profile does not link, and goes on that thread's lane, said
    in ``cut``); and what the profiler
    logs itself (0.4 and 0.6: "Can't import tensorflow...", 0.6: "Profiler session tear down.")
    is not the snippet's stderr."""
    import gzip
    import json

    kept = {}
    events = run_local(textwrap.dedent("""\
        import jax, jax.numpy as jnp, numpy as np
        f = jax.pmap(lambda v: jax.lax.psum(jnp.sin(v) @ v, "i"), axis_name="i")
        x = jax.pmap(lambda v: v)(np.ones((jax.device_count(), 32, 32), np.float32)).block_until_ready()
        for _ in range(3):
            y = f(x).block_until_ready()
        print(np.asarray(y)[0, 0, 0] > 0)
        """), launcher=runtime_launcher, options={"profile": True},
        keep_profile=lambda trace: kept.setdefault("trace", trace) and "kept")
    r = RunResult(events)
    assert r.status == "succeeded" and r.stdout == "True\n", r
    assert "Can't import tensorflow" not in r.stderr and "Profiler session" not in r.stderr, r.stderr
    [event] = r.of("profile")
    assert not event.get("error") and event["url"] == "kept", event
    lanes = [f"TFRT_CPU_{i}" for i in range(8)]
    assert event["lanes"][:9] == ["Host"] + lanes and event["devices"] == 8, event
    threads = event["lanes"][9:]
    assert all(lane.startswith("XLA thread ") for lane in threads), threads
    assert (event["cut"] == "") == (not threads) and (not threads or "not in this JAX's profile" in event["cut"])
    trace = json.loads(gzip.decompress(kept["trace"]))
    name = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    ops: dict[str, list[dict]] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X" and "hlo_op" in e["args"]:
            ops.setdefault(name[e["pid"]], []).append(e)
    ops = {lane: events_ for lane, events_ in ops.items() if lane in lanes}
    assert sorted(ops) == lanes, sorted(ops)
    for lane, events_ in ops.items():
        assert all(e["name"] == e["args"]["hlo_op"] and e["args"]["device"] == lane for e in events_)
        assert any(e["cat"] == "collective" for e in events_), (lane, [e["name"] for e in events_])
    # The snippet's own Python lane (runner/pylane.py) on every runtime: its frame and its 3 calls
    # of the pmapped function, on the profile's clock (within the trace's span).
    python = [e for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") == "python"]
    assert any(e["name"] == "<module>" and e["args"]["file"] == "<snippet>" for e in python), python[:5]
    assert sum(1 for e in python if e["name"] == "<lambda>" and e["args"]["file"] == "<snippet>") >= 3, python
    assert all(e["ts"] >= 0 for e in python)


CHECKS = """\
from jaxplay.grading import allclose, check, max_compilations, no_float64
import numpy as np
check("square of 3", allclose(square(3.0), 9.0))
x = np.arange(3.0, dtype=np.float32)
check("no float64", no_float64(loss, x))
check("compiled once", max_compilations(loss, 1, (x,), (x + 1,)))
"""
SUBMISSION = """\
import jax, jax.numpy as jnp
def square(x):
    return x * x
@jax.jit
def loss(x):
    return (x ** 2).sum()
"""


def test_a_graded_submission_gets_its_points(runtime_launcher):
    _events, result = grade_local(SUBMISSION, CHECKS, launcher=runtime_launcher, limits=runtime_launcher.limits)
    assert {c["name"]: c["passed"] for c in result["checks"]} == {
        "square of 3": True, "no float64": True, "compiled once": True}, result
    assert result["score"] == result["max_score"] == 3.0


@pytest.mark.parametrize("runtime_id", IDS)
def test_the_editor_s_analysis_answers_for_each_runtime_s_own_jax(runtime_id):
    """The analyser (executor/analyser/engine.py) run in a runtime's interpreter, as that runtime's
    workers run it: jax.tree_m completes to tree_map only where that JAX still has it."""
    import json
    import subprocess

    rt = CATALOG.runtimes[runtime_id]
    probe = ("import json; from executor.analyser import engine; "
             "print(json.dumps([i['label'] for i in engine.complete('import jax\\njax.tree_m', 2, 11)['items']]))")
    out = subprocess.run([str(runtimes.python_of(rt)), "-c", probe], capture_output=True, text=True, timeout=120,
                         cwd=str(runtimes.ROOT), env={"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu", "HOME": "/tmp"})
    assert out.returncode == 0, out.stderr[-2000:]
    labels = json.loads(out.stdout.strip().splitlines()[-1])
    assert labels == (["tree_map"] if rt.jax == "0.4.38" else []), labels
