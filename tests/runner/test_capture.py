"""Which compilations the ``compiled`` events show, and how a recompilation is explained: the
cases where JAX's own caches and wrappers could mislead the capture (each in its own sandboxed
runner, 8 simulated CPU devices)."""

from __future__ import annotations

import textwrap

from tests.snippets import SLOW_COMPILE


def compiled_named(run, name: str) -> list[dict]:
    return [e for e in run.of("compiled") if e["name"] == name]


def test_a_jax_function_the_snippet_jits_is_shown_but_eager_operations_are_not(run):
    r = run(textwrap.dedent("""\
        import jax, jax.numpy as jnp
        from functools import partial
        x = jnp.ones(3)
        y = jnp.sin(x) + jnp.cos(x)           # eager: JAX's own jit of jnp.sin, not shown
        fast_sin = jax.jit(jnp.sin)
        fast_sin(x)
        fast_sin(x)                           # cached
        jnp.sin(jnp.ones(5))                  # eager again, a new shape: still not shown
        z = jnp.linalg.norm(jnp.ones((2, 2)))
        jax.jit(jnp.tanh).lower(x).compile()  # ahead of time
        total = jax.jit(partial(jnp.sum, axis=0))
        total(x)
        fast_sin(jnp.ones(4))
        print("done")
        """))
    assert r.status == "succeeded", r
    assert r.stdout == "done\n"
    names = [e["name"] for e in r.of("compiled")]
    assert names == ["sin", "tanh", "partial(sum)", "sin"], names
    sin, tanh, total, sin_again = r.of("compiled")
    assert sin["via"] == "jit" and sin["origin"] == "jax"
    assert sin["line"] == 5 and sin["call_line"] == 6  # where the snippet jitted it, and called it
    assert sin["signature"] == "sin(x: f32[3])" and "sin" in sin["jaxpr"]
    assert sin["file"].endswith("ufuncs.py")
    assert sin["compiles"] == 1 and sin["recompile"] is None
    assert tanh["via"] == "aot" and tanh["line"] == 10
    assert total["line"] == 11 and total["call_line"] == 12 and "reduce_sum" in total["jaxpr"]
    assert sin_again["compiles"] == 2 and sin_again["recompile"]["kind"] == "shape"


def test_a_pmap_recompiled_for_a_new_sharding_says_so(run):
    r = run(textwrap.dedent("""\
        import jax, jax.numpy as jnp
        double = jax.pmap(lambda v: v * 2)
        x = jnp.arange(8.0)      # on one device
        y = double(x)            # spread over the 8 devices, with pmap's own sharding
        double(y)                # same shape and dtype, another sharding: compiled again
        double(y)                # cached
        """))
    assert r.status == "succeeded", r
    first, second = compiled_named(r, "pmap(<lambda>)")
    assert first["recompile"] is None
    assert second["compiles"] == 2 and second["call_line"] == 5
    recompile = second["recompile"]
    assert recompile["kind"] == "sharding", recompile
    assert "different device or has a different sharding" in recompile["reason"]
    assert "cleared" not in recompile["reason"]


def test_an_equivalent_sharding_that_xla_has_compiled_is_no_recompilation(run):
    r = run(textwrap.dedent("""\
        import jax, jax.numpy as jnp
        from jax.sharding import NamedSharding, PartitionSpec as P
        mesh = jax.make_mesh((8,), ("x",))
        f = jax.jit(lambda a: a + 1)
        replicated = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P()))
        also_replicated = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P(None, None)))
        split = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x")))
        f(replicated)
        f(also_replicated)       # re-lowered, but the same module: XLA's cache, no compilation
        f(split)                 # really compiled again
        print("done")
        """))
    assert r.status == "succeeded", r
    events = compiled_named(r, "<lambda>")
    assert [e["call_line"] for e in events] == [8, 10], events
    first, second = events
    assert first["compiles"] == 1 and first["recompile"] is None
    assert second["compiles"] == 2 and second["recompile"]["kind"] == "sharding"
    assert "compiled 2 times" not in r.stderr and "compiled 3 times" not in r.stderr




def test_a_long_compile_is_announced_while_it_lasts_and_a_quick_one_is_not(run):
    r = run(SLOW_COMPILE)
    assert r.status == "succeeded", r
    # (The quick function's compile is announced only if a loaded machine makes it slow.)
    [compiling] = [e for e in r.of("compiling") if e["name"] == "long_chain"]
    assert compiling["signature"] == "long_chain(x: f32[8,8])" and "done" not in compiling
    [compiled] = compiled_named(r, "long_chain")
    assert (compiling["line"], compiling["call_line"]) == (compiled["line"], compiled["call_line"]) == (3, 11)
    assert compiling["after_s"] == 0.5
    assert compiled["compile_ms"] > 500
    # In the order it happened: announced during the compile, before its result and the print.
    [printed] = r.of("stdout")
    assert compiling["seq"] < compiled["seq"] < printed["seq"]
