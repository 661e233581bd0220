"""A profiled run's trace (runner/profile.py) from a real run in the sandbox: the lanes and events
the page draws. What the trace makes of planes made here, and of each runtime's own profile run
outside the sandbox, is test_profile_trace.py's (no sandbox needed)."""

from __future__ import annotations

import gzip
import json

from executor.runner import profile, pylane

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
    """A tight loop of calls would fill the run's memory with its Python lane: the snippet's own
    lane (Python 3.12) stops at its bound of calls, the run ends as it would have, and the trace
    says where its Python lane stops and why."""
    result = run("import jax, time\ndef g(i):\n    return i\nt = time.time()\nn = 0\n"
                 "while time.time() - t < 4:\n    for i in range(1000):\n        g(i)\n    n += 1\nprint(n > 0)\n",
                 options={"profile": True})
    assert result.status == "succeeded", result.events[-3:]
    assert result.stdout.strip() == "True"
    [event] = result.of("profile")
    assert not event.get("error"), event
    assert "its Python lane stops" in event["cut"] and "after 200,000 calls" in event["cut"], event["cut"]
    # ... with the sentences it was made from, which the supervisor vouched for.
    assert event["cut_parts"][0]["template"] == profile.PYTHON_BOUNDED
    assert event["cut_parts"][0]["args"]["calls"] == f"{pylane.MAX_CALLS:,}"
    assert "; ".join(part["template"].format(**part["args"]) for part in event["cut_parts"]) == event["cut"]


def test_the_snippets_python_lane_is_on_the_devices_clock(launcher):
    """The snippet's own Python lane (runner/pylane.py, Python 3.12) is timed apart from the
    profiler and placed on its clock by a mark: each call of the pmapped function holds the start
    of what it ran on the devices, and the module's frame holds all of it."""
    from executor.local import run_local

    kept = {}
    events = run_local(PMAP, launcher=launcher, options={"profile": True},
                       keep_profile=lambda trace: kept.setdefault("trace", trace) and "kept")
    assert next(e for e in events if e["type"] == "finished")["status"] == "succeeded"
    trace = json.loads(gzip.decompress(kept["trace"]))
    timed = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    python = [e for e in timed if e.get("cat") == "python"]
    # The code's frames: its body, then its last line apart (a trailing expression's value is shown).
    modules = [e for e in python if e["name"] == "<module>"]
    begin, end = min(e["ts"] for e in modules), max(e["ts"] + e["dur"] for e in modules)
    steps = sorted((e for e in python if e["name"] == "step"), key=lambda e: e["ts"])
    assert len(steps) == 2, sorted({e["name"] for e in python})
    device = [e for e in timed if e["pid"] >= 10 and "hlo_op" in e["args"]]
    assert device
    slack = 1000.0  # µs
    for e in device:
        assert begin - slack <= e["ts"] <= end + slack, (e, begin, end)
    # The last step's ops start inside it or after it began (dispatch is asynchronous), never before.
    last = [e for e in device if e["ts"] >= steps[1]["ts"] - slack]
    assert last and min(e["ts"] for e in last) <= steps[1]["ts"] + steps[1]["dur"] + slack
