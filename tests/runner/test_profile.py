"""A profiled run's trace (runner/profile.py) from a real run in the sandbox: the lanes and events
the page draws. What the trace makes of planes made here, and of each runtime's own profile run
outside the sandbox, is test_profile_trace.py's (no sandbox needed)."""

from __future__ import annotations

import gzip
import json

from executor.runner import profile

PMAP = """\
import jax, jax.numpy as jnp
n = jax.device_count()
x = jnp.ones((n, 32, 32))
f = jax.pmap(lambda v: jax.lax.psum(v @ v, "i"), axis_name="i")
def step():
    return f(x)
for _ in range(2):
    y = step()
print(float(y[0, 0, 0]))
"""


def test_a_profiled_pmap_in_the_sandbox_has_eight_device_lanes(run):
    result = run(PMAP, options={"profile": True})
    assert result.status == "succeeded", result.events
    assert result.stdout.strip() == "256.0"
    [event] = result.of("profile")
    assert not event.get("error"), event
    assert event["lanes"] == ["Host"] + [f"TFRT_CPU_{i}" for i in range(8)]
    assert event["bytes"] > 0 and event["raw_bytes"] > event["bytes"] and event["events"] > 8 * 4
    assert event["url"] is None  # kept by nobody here: executor.local's caller gave no keeper
    ops = {row["device"]: {name for name, *_ in row["ops"]} for row in event["summary"]}
    assert len(ops) == 8 and all(any(name.startswith("psum") for name in names) for names in ops.values()), ops


def test_a_run_that_does_not_ask_has_no_profile(run):
    result = run("print(1)")
    assert result.of("profile") == []


def test_a_profile_of_code_without_jax_still_has_its_python(launcher):
    """numpy only: the host's lane alone, no device and an empty summary; the keeper given gets
    the trace and names its URL."""
    kept = {}
    from executor.local import run_local

    events = run_local("import numpy as np\ndef f():\n    return np.ones(10).sum()\nprint(f())\n",
                       launcher=launcher, options={"profile": True},
                       keep_profile=lambda trace: kept.setdefault("trace", trace) and "kept")
    event = next(e for e in events if e["type"] == "profile")
    assert event["lanes"] == ["Host"] and event["devices"] == 0 and event["summary"] == [], event
    assert event["url"] == "kept"
    trace = json.loads(gzip.decompress(kept["trace"]))
    assert {e["name"] for e in trace["traceEvents"] if e.get("cat") == "python"} >= {"<module>", "f"}


def test_a_python_loop_under_the_profiler_ends_well_and_says_what_was_cut(run):
    """JAX's Python tracer keeps every call until it stops: a tight loop of calls would fill the
    run's memory and kill it. It is taken off in time, the run ends as it would have, and the
    trace says where its Python lane stops."""
    result = run("import jax, time\ndef g(i):\n    return i\nt = time.time()\nn = 0\n"
                 "while time.time() - t < 4:\n    for i in range(1000):\n        g(i)\n    n += 1\nprint(n > 0)\n",
                 options={"profile": True})
    assert result.status == "succeeded", result.events[-3:]
    assert result.stdout.strip() == "True"
    [event] = result.of("profile")
    assert not event.get("error"), event
    assert "its Python lane stops" in event["cut"] and "filling the run's memory" in event["cut"]
    # ... with the sentences it was made from, which the supervisor vouched for.
    assert event["cut_parts"][0]["template"] == profile.PYTHON_STOPPED
    assert "; ".join(part["template"].format(**part["args"]) for part in event["cut_parts"]) == event["cut"]
