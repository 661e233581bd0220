"""Example programs and the events they must produce, each run in its own sandboxed runner.

Sizes are small so the suite stays well under two minutes on a shared two-core machine; the
strict timing-fidelity check (±5 %) is a benchmark, not a test.
"""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import textwrap

import pytest

from executor.runner import notebook, recompile

TIMEIT_LINE = re.compile(
    r"^(?P<mean>[\d.]+) (?P<unit>s|ms|µs|ns) ± (?P<std>[\d.]+) (?:s|ms|µs|ns) per loop "
    r"\(mean ± std\. dev\. of (?P<runs>\d+) runs?, (?P<loops>[\d,]+) loops? each\)$",
    re.M,
)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def compiled_named(run, name: str) -> list[dict]:
    return [e for e in run.of("compiled") if e["name"] == name]


def test_a_jitted_function_compiles_once_and_again_for_a_new_shape(run):
    r = run(textwrap.dedent("""\
        import jax, jax.numpy as jnp
        x = jnp.ones(3)
        y = jnp.cos(x) + 1          # eager operations: JAX's own compilations
        z = jnp.linalg.norm(y)

        @jax.jit
        def f(x):
            return jnp.sin(x) * 2

        f(x)
        f(x)                        # cached: no compilation
        f(jnp.ones(4))              # a new shape: compiled again
        print("done")
        """))
    assert r.status == "succeeded", r
    assert r.stdout == "done\n"
    compiled = r.of("compiled")
    assert [e["name"] for e in compiled] == ["f", "f"], r  # nothing of JAX's own (cos, norm...)
    first, second = compiled
    assert "sin" in first["jaxpr"] and "mul" in first["jaxpr"]
    assert first["jaxpr_lines"][first["jaxpr"].splitlines().index(
        next(line for line in first["jaxpr"].splitlines() if "sin" in line))] == 8
    assert "stablehlo.sine" in first["stablehlo"]
    assert first["hlo"].startswith("HloModule") and "StackFrames" not in first["hlo"]
    assert first["line"] == 6 and first["call_line"] == 10 and first["origin"] == "snippet"
    assert first["signature"] == "f(x: f32[3])"
    for key in ("trace_ms", "lower_ms", "compile_ms"):
        assert first[key] is not None and first[key] >= 0, key
    assert first["flops"] is not None and first["bytes_accessed"] == 24
    assert first["memory"]["argument_bytes"] == 12 and first["memory"]["output_bytes"] == 12
    assert first["compiles"] == 1 and first["recompile"] is None and first["truncated"] == []
    assert second["compiles"] == 2
    assert second["recompile"]["kind"] == "shape"
    assert "f32[3] → f32[4]" in second["recompile"]["reason"]


def test_recompilation_reasons_and_a_loop_is_flagged(run):
    r = run(textwrap.dedent("""\
        import jax, jax.numpy as jnp
        from functools import partial
        x = jnp.ones(3)

        @partial(jax.jit, static_argnums=1)
        def scale(x, n):
            return x * n
        scale(x, 2)
        scale(x, 3)

        @jax.jit
        def mul(a, b):
            return a * b
        mul(x, 2.0)
        mul(x, jnp.float32(2.0))

        for i in range(3):
            jax.jit(lambda v: v + 1)(x)
        """))
    assert r.status == "succeeded", r
    scale = compiled_named(r, "scale")
    assert scale[1]["recompile"]["kind"] == "static"
    assert "n changed value: 2 → 3" in scale[1]["recompile"]["reason"]
    mul = compiled_named(r, "mul")
    assert mul[1]["recompile"]["kind"] == "weak_type"
    assert "Python scalar" in mul[1]["recompile"]["reason"]
    lam = compiled_named(r, "<lambda>")
    assert [e["compiles"] for e in lam] == [1, 2, 3]
    assert lam[1]["recompile"]["kind"] == "new_function"
    assert lam[0]["warning"] is None and lam[1]["warning"] is None
    assert "compiled 3 times by line 18, in a loop" in lam[2]["warning"]
    assert "outside the loop" in lam[2]["warning"]
    assert "compiled 3 times" in r.stderr
    # Each reason and the warning go with the sentences they were made from, for a page that says
    # them in another language, and those sentences make the English exactly.
    for event in (scale[1], mul[1], lam[1]):
        parts = event["recompile"]["reason_parts"]
        assert parts and all(part["template"] in recompile.TEMPLATES for part in parts), parts
        assert event["recompile"]["reason"] == recompile.COMPILED_AGAIN.format(
            name=event["name"], count=event["compiles"],
            reasons="; ".join(part["template"].format(**part["args"]) for part in parts))
    assert scale[1]["recompile"]["reason_parts"][0]["template"] == recompile.STATIC
    assert [part["template"] for part in lam[2]["warning_parts"]] == [recompile.COMPILED_MANY_IN_LOOP,
                                                                       recompile._ADVICE["new_function"]]
    assert lam[2]["warning_parts"][0]["args"]["line"] == 18
    assert " ".join(part["template"].format(**part["args"]) for part in lam[2]["warning_parts"]) == lam[2]["warning"]


def test_the_articles_speed_test_runs_as_printed(run):
    """SEED.md's speed test, word for word but for the size (1000×1000 instead of 10000×10000)."""
    r = run(textwrap.dedent("""\
        import numpy as np
        import jax.numpy as jnp
        from jax import jit
        def fn(x):
            return x + x*x + x*x*x
        x = np.random.randn(1000, 1000).astype(dtype='float32')
        %timeit -n5 fn(x)                        # NumPy: 436 ms ± 206 µs per loop
        jax_fn = jit(fn)
        x = jnp.array(x)
        %timeit jax_fn(x).block_until_ready()    # JAX: 3.67 ms ± 10.7 µs per loop
        """))
    assert r.status == "succeeded", r
    lines = TIMEIT_LINE.findall(r.stdout)
    assert len(lines) == 2, r.stdout
    (mean1, unit1, _std1, runs1, loops1), (_m2, _u2, _s2, runs2, loops2) = lines
    assert (runs1, loops1) == ("7", "5") and runs2 == "7"
    timings = r.of("timing", kind="timeit")
    assert [t["line"] for t in timings] == [7, 10]
    numpy_t, jax_t = timings
    assert numpy_t["label"] == "fn(x)" and numpy_t["loops"] == 5 and numpy_t["repeats"] == 7
    assert numpy_t["blocked"] is False and numpy_t["dispatch_only"] is False  # NumPy: no note
    assert jax_t["blocked"] is True and jax_t["dispatch_only"] is False
    assert jax_t["loops"] == int(loops2.replace(",", ""))
    for t in timings:
        assert t["min_ms"] <= t["median_ms"] <= t["max_ms"]
        assert len(t["runs_ms"]) == 7 and t["std_ms"] >= 0
    scale = {"s": 1e3, "ms": 1, "µs": 1e-3, "ns": 1e-6}[unit1]
    assert float(mean1) * scale == pytest.approx(numpy_t["mean_ms"], rel=0.01)
    assert [e["name"] for e in r.of("compiled")] == ["fn"]
    assert "only the dispatch" not in r.stdout


def test_time_dispatch_note_trailing_values_and_jaxprs(run):
    r = run(textwrap.dedent("""\
        import sys
        import jax, jax.numpy as jnp
        import jaxplay
        f = jax.jit(lambda x: x * 2)
        x = jnp.ones((8, 8))
        %timeit -n3 -r2 f(x)
        y = %time f(x).block_until_ready()
        def loss(w):
            return jnp.sum(jnp.sin(w) ** 2)
        jaxplay.jaxprs(loss, jnp.ones(3))
        print(sorted(m for m in ("matplotlib", "optax", "flax", "equinox", "chex", "einops",
                                 "rich", "scipy") if m in sys.modules))
        jnp.ones((2000, 1000))
        """))
    assert r.status == "succeeded", r
    assert "only the dispatch" in r.stdout and "f(x).block_until_ready()" in r.stdout
    timeit, time_ = r.of("timing", kind="timeit")[0], r.of("timing", kind="time")[0]
    assert timeit["dispatch_only"] is True and timeit["notes"]
    # Each note goes with the sentences it was made from, for a page in another language.
    assert len(timeit["notes_parts"]) == len(timeit["notes"])
    for note, parts in zip(timeit["notes"], timeit["notes_parts"]):
        assert all(part["template"] in notebook.TEMPLATES for part in parts), parts
        assert " ".join(part["template"].format(**part["args"]) for part in parts) == note
    assert timeit["notes_parts"][0][0] == {"template": notebook.DISPATCH_ONLY, "args": {"statement": "f(x)"}}
    assert timeit["notes_parts"][0][-1] == {"template": notebook.TIME_BLOCKING,
                                            "args": {"blocking": "f(x).block_until_ready()"}}
    assert (timeit["repeats"], timeit["loops"]) == (2, 3)
    assert re.search(r"^CPU times: user .+, sys: .+, total: .+\nWall time: .+$", r.stdout, re.M)
    assert time_["line"] == 7 and time_["wall_ms"] > 0
    (jaxprs,) = r.of("display", kind="jaxprs")
    assert [p["title"] for p in jaxprs["panels"]] == ["loss", "grad(loss)", "vmap(loss)"]
    assert "cos" in jaxprs["panels"][1]["jaxpr"] and "f32[8,3]" in jaxprs["panels"][2]["jaxpr"]
    # Nothing but numpy and jax was imported for this run (a forked runner finds pyplot already
    # imported by its template, at no cost to the run).
    assert ("['matplotlib']\n" if r.started.get("forked") else "[]\n") in r.stdout
    (array,) = r.of("display", kind="array")
    assert array["shape"] == [2000, 1000] and array["dtype"] == "float32"
    assert array["devices"] == ["cpu:0"] and "SingleDeviceSharding" in array["sharding"]
    assert array["stats"] == {"min": 1.0, "max": 1.0, "mean": 1.0, "std": 0.0}
    assert len(array["text"]) < 2000 and "..." in array["text"]


def test_bench_agrees_with_timeit_in_a_plain_process(run):
    size = 2000
    r = run(textwrap.dedent(f"""\
        import jax, jax.numpy as jnp
        import jaxplay
        def fn(x):
            return x + x*x + x*x*x
        x = jnp.asarray(jax.random.normal(jax.random.key(0), ({size}, {size})))
        res = jaxplay.bench(jax.jit(fn), x, label="jit", repeats=5)
        jaxplay.compare({{"eager": fn, "jit": jax.jit(fn)}}, x, repeats=3)
        """))
    assert r.status == "succeeded", r
    bench = r.of("timing", kind="bench")[0]
    assert bench["label"] == "jit" and bench["repeats"] == 5 and bench["blocked"] is True
    assert bench["compile_ms"] > 0 and bench["flops"] > 0 and bench["bytes_accessed"] > 0
    # From the unrounded median: the event's median_ms is rounded to the nanosecond.
    assert bench["gbs"] == pytest.approx(bench["bytes_accessed"] / bench["median_ms"] / 1e6, rel=1e-4)
    assert bench["min_ms"] <= bench["median_ms"] <= bench["max_ms"]
    (comparison,) = r.of("timing", kind="comparison")
    assert [row["label"] for row in comparison["rows"]] == ["eager", "jit"]
    assert comparison["rows"][0]["speedup"] == 1.0 and comparison["rows"][1]["speedup"] > 0
    assert comparison["rows"][0]["cost_from"] == "jit"

    def plain_ms() -> float:
        plain = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(f"""\
                import timeit, jax, jax.numpy as jnp
                jax.config.update("jax_num_cpu_devices", 8)  # as the runner is configured
                def fn(x):
                    return x + x*x + x*x*x
                f = jax.jit(fn)
                x = jnp.asarray(jax.random.normal(jax.random.key(0), ({size}, {size})))
                f(x).block_until_ready()
                t = timeit.Timer(lambda: f(x).block_until_ready())
                n, _ = t.autorange()
                runs = t.repeat(7, n)
                print(min(runs) / n * 1000)  # the best run, in ms
                """)],
            capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"},
        )
        assert plain.returncode == 0, plain.stderr
        return float(plain.stdout)

    def run_ms() -> float:
        again = run(textwrap.dedent(f"""\
            import jax, jax.numpy as jnp
            import jaxplay
            def fn(x):
                return x + x*x + x*x*x
            x = jnp.asarray(jax.random.normal(jax.random.key(0), ({size}, {size})))
            jaxplay.bench(jax.jit(fn), x, label="jit", repeats=5)
            """))
        return again.of("timing", kind="bench")[0]["min_ms"]

    # Loose: a shared two-core machine, two processes timed apart. The ±5 % fidelity check (in
    # one process, 4000×4000) is the benchmark's.
    # Best runs, not medians: the least sensitive to the other processes on this machine. Now
    # and then a whole process is 5-10x slower here, in a run under either launcher as in the
    # plain process (the host's memory management): both are measured again, up to three times.
    # The bounds still catch what this test is for: a timing that did not block (a few µs, under
    # 0.1x) or that counted the compile (tens of ms, over 10x); a CI run once saw the plain
    # process at 2.7x the run's best for all three of its tries, beside the suite's other worker.
    best, reference_ms = bench["min_ms"], plain_ms()
    for _ in range(3):
        if 0.25 < best / reference_ms < 4:
            break
        best, reference_ms = min(best, run_ms()), min(reference_ms, plain_ms())
    assert 0.25 < best / reference_ms < 4, (best, reference_ms)


def test_figures_come_back_as_png(run):
    r = run(textwrap.dedent("""\
        import matplotlib.pyplot as plt
        plt.plot([1, 2, 3], [1, 4, 9])
        plt.title("shown")
        plt.show()
        fig, ax = plt.subplots()
        ax.bar(["a", "b"], [3, 5])     # left open: sent when the run ends
        """))
    assert r.status == "succeeded", r
    figures = r.of("display", kind="figure")
    assert len(figures) == 2, r
    for fig in figures:
        assert fig["mime"] == "image/png"
        data = base64.b64decode(fig["data"])
        assert data[:8] == PNG_SIGNATURE
        assert fig["width"] > 100 and fig["height"] > 100
        assert fig["text"].startswith("<Figure size 640x480")


def test_an_error_points_at_its_line_after_magic_lines(run):
    r = run(textwrap.dedent("""\
        import numpy as np
        %time a = np.ones(3)
        %timeit -n1 -r1 np.ones(3)
        b = a.sum()
        c = b / 0 if False else np.ones(2) @ np.ones(3)
        """))
    assert r.status == "failed"
    error = r.error
    assert error["line"] == 5 and error["exc_type"] == "ValueError", error
    assert 'File "<snippet>", line 5' in error["traceback"]


def test_jax_errors_get_a_plain_explanation(run):
    r = run(textwrap.dedent("""\
        import jax, jax.numpy as jnp

        @jax.jit
        def f(x):
            if x > 0:
                return x
            return -x
        f(1.0)
        """))
    assert r.status == "failed"
    error = r.error
    assert error["exc_type"] == "TracerBoolConversionError" and error["line"] == 5
    assert "jnp.where" in error["explanation"] and "lax.cond" in error["explanation"]


@pytest.mark.parametrize(("code", "exc_type", "says"), [
    ("name = input('name? ')\n", "EOFError", "no keyboard"),
    ("import torch\n", "ModuleNotFoundError", "`torch` is not installed here"),
    ("import urllib.request\nurllib.request.urlopen('http://example.com')\n", "URLError", "no network"),
    ("import urllib.request\nurllib.request.urlopen('http://192.0.2.1')\n", "URLError", "no network"),
    ("import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=1)\n", "PermissionError",
     "no network"),
    ("import jax\njax.devices('gpu')\n", "RuntimeError", "on a CPU executor, which has no GPU"),
], ids=["input", "not-installed", "dns", "http", "socket", "no-gpu"])
def test_errors_from_the_sandbox_rather_than_the_code_say_so(run, code, exc_type, says):
    r = run(code)
    assert r.status == "failed"
    assert r.error["exc_type"] == exc_type and r.error["line"] == code.count("\n")
    assert says in r.error["explanation"]


@pytest.mark.parametrize("code", [
    "import jax.not_a_module\n",  # jax is installed: the name is wrong, not the environment
    "raise PermissionError('mine')\n",
    "raise EOFError('the end')\n",
])
def test_the_code_s_own_errors_get_no_environment_sentence(run, code):
    r = run(code)
    assert r.status == "failed" and "explanation" not in r.error


def test_pmap_and_shard_map_over_eight_simulated_devices(run):
    r = run(textwrap.dedent("""\
        import jax, jax.numpy as jnp
        from functools import partial
        from jax.sharding import NamedSharding, PartitionSpec as P
        print(jax.device_count())
        print(jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")(jnp.arange(8.0)))
        mesh = jax.make_mesh((8,), ("x",))
        x = jax.device_put(jnp.arange(32.0), NamedSharding(mesh, P("x")))

        @jax.jit
        @partial(jax.shard_map, mesh=mesh, in_specs=P("x"), out_specs=P())
        def total(v):
            return jax.lax.psum(jnp.sum(v), "x")
        print(total(x))
        """))
    assert r.status == "succeeded", r
    assert r.started["device_count"] == 8
    assert r.stdout == "8\n[28. 28. 28. 28. 28. 28. 28. 28.]\n496.0\n"
    names = [e["name"] for e in r.of("compiled")]
    assert names == ["pmap(<lambda>)", "shard_map(total)"], names
    assert all(e["num_devices"] == 8 for e in r.of("compiled"))
    assert "psum" in r.of("compiled")[0]["jaxpr"]


def test_libraries_are_listed_and_capture_can_be_turned_off(run):
    r = run("import jax\nprint(jax.jit(lambda x: x + 1)(1))\n{'a': 1, 'b': [1, 2]}\n",
            options={"capture": False})
    # The last expression's value is shown as Jupyter shows a cell's result.
    assert r.status == "succeeded" and r.stdout == "2\n{'a': 1, 'b': [1, 2]}\n", r
    assert r.of("compiled") == []
    libraries = r.started["libraries"]
    for name in ("numpy", "scipy", "jax", "optax", "flax", "equinox", "chex", "einops",
                 "matplotlib", "rich"):
        assert re.match(r"\d+\.\d+", libraries[name]), (name, libraries)


def test_timeit_of_an_unblocked_jit_matmul_ends_promptly_and_says_why(run):
    # Without block_until_ready() each loop only dispatches: the calls' computations queue up.
    # %timeit waits for them between repeats (untimed), so the loops it picks fit its budget,
    # and it says what it measured and what queued.
    r = run(textwrap.dedent("""\
        import jax, jax.numpy as jnp
        f = jax.jit(lambda a: a @ a)
        x = jnp.ones((1000, 1000))
        f(x).block_until_ready()
        %timeit f(x)
        print("after")
        """))
    assert r.status == "succeeded", r
    (timing,) = r.of("timing", kind="timeit")
    assert timing["dispatch_only"] is True and timing["line"] == 5
    assert any("kept the device busy" in note for note in timing["notes"])
    assert "only the dispatch" in r.stdout and "f(x).block_until_ready()" in r.stdout
    assert r.stdout.endswith("after\n")
    assert r.events[-1]["wall_ms"] < 15_000  # the budget is 10 s


def test_a_line_written_in_pieces_is_one_event_and_an_open_line_still_streams(run):
    # print() writes its text and its newline apart; a pause between them (a loaded machine)
    # longer than the quiet period must not split the line in two events. A line left open goes
    # alone after OPEN_LINE_MAX_S (0.15 s); the pauses after one are long enough that a loaded
    # machine keeping the supervisor from running a while does not join it to the next line.
    # So is the pause after the first line: what the supervisor reads at once goes as one event.
    r = run(textwrap.dedent("""\
        import sys, time
        sys.stdout.write("hel"); time.sleep(0.02); sys.stdout.write("lo\\n")
        time.sleep(1.0)
        sys.stdout.write("50%\\r"); time.sleep(1.0)
        sys.stdout.write("prompt> "); time.sleep(1.0)
        print("done")
        """))
    assert r.status == "succeeded", r
    texts = [e["text"] for e in r.of("stdout")]
    assert texts == ["hello\n", "50%\r", "prompt> ", "done\n"], texts


def test_under_the_tests_a_runner_that_sends_what_the_protocol_does_not_declare_fails(run):
    r = run(textwrap.dedent("""\
        import sys
        print("before")
        common = next(m for m in list(sys.modules.values())
                      if (getattr(m, "__file__", None) or "").endswith("/runner/common.py"))
        common.send("display", text="x", width=3, bogus=1)
        print("after")
        """))
    assert r.status == "failed" and r.message == "the snippet's process exited with code 70", r
    assert r.stdout == "before\n" and not r.of("display")
    assert "sent what the protocol does not declare: display: undeclared field 'bogus'" in r.text("stderr")


FORGED_PARTS = """\
import json, os
def send(message):
    os.write(3, (json.dumps(message) + "\\n").encode())
send({"type": "compiled", "name": "f", "recompile": {"count": 2, "kind": "shape", "reason": "f compiled again",
      "reason_parts": [{"template": "run {cmd}", "args": {"cmd": "rm -rf /"}}]},
      "warning": "f is fine", "warning_parts": [{"template": "f is fine", "args": {}}]})
send({"type": "timing", "kind": "timeit", "notes": ["Note: fast"],
      "notes_parts": [[{"template": "Note: {x}", "args": {"x": "fast"}}]]})
print("sent")
"""


def test_parts_the_code_forges_on_its_event_pipe_never_reach_a_page(run):
    """The code can write events as the runner does; parts whose templates are not the runner's
    are dropped (the English stays as sent, which the code could always write)."""
    r = run(FORGED_PARTS)
    assert r.status == "succeeded" and r.stdout == "sent\n", r
    (compiled,) = r.of("compiled")
    assert "reason_parts" not in compiled["recompile"] and "warning_parts" not in compiled
    assert compiled["recompile"]["reason"] == "f compiled again" and compiled["warning"] == "f is fine"
    (timing,) = r.of("timing")
    assert "notes_parts" not in timing and timing["notes"] == ["Note: fast"]


def test_a_snippet_cannot_import_the_runners_modules_and_the_runner_still_works(run):
    """runner/hiding.py: no spelling of the runner's modules imports once the snippet runs, even
    with their folder back on sys.path; what the runner imports later for itself (the names'
    shapes, a figure's backend) still loads, and an error is still reported at its line."""
    r = run(textwrap.dedent("""\
        import importlib, sys
        sys.path[:0] = ["/opt/playground"]
        refused = []
        for name in ("runner", "runner.answers", "runner.common", "executor.runner", "executor.runner.answers"):
            try:
                importlib.import_module(name)
            except ModuleNotFoundError:
                refused.append(name)
        print(len(refused), "refused;", [k for k in sys.modules if k.startswith(("runner", "executor"))])
        import matplotlib.pyplot as plt
        plt.plot([1, 2]); plt.show()
        import jax.numpy as jnp
        x = jnp.ones(3)
        jnp.ones(3) @ jnp.ones(4)
        """))
    assert r.stdout == "5 refused; []\n", r.stdout
    assert [e["kind"] for e in r.of("display")] == ["figure"], r
    (error,) = r.of("error")
    assert error["exc_type"] == "TypeError" and error["line"] == 14, error
    assert "x" in r.of("shapes")[0]["names"], r.of("shapes")
