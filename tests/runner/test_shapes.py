"""The ``shapes`` event's collection (executor/runner/shapes.py): arrays as JAX writes their
types, pytrees summarised, the line that last assigned each name, and its bounds."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from executor.runner import protocol
from executor.runner.shapes import MAX_ITEMS, MAX_NAMES, collect

SOURCE = """import jax.numpy as jnp
y = jnp.ones((1000, 1000))
params = {'w': jnp.zeros((784, 512)), 'b': jnp.zeros(512)}
n = np.arange(3, dtype=np.int32)
y = jnp.ones((2, 3), dtype=jnp.bfloat16)
"""


def test_arrays_and_pytrees_with_the_line_that_last_assigned_them():
    namespace = {"y": jnp.ones((2, 3), dtype=jnp.bfloat16), "params": {"w": jnp.zeros((784, 512)), "b": jnp.zeros(512)},
                 "n": np.arange(3, dtype=np.int32), "pair": (jnp.ones(2),), "label": "text", "count": 3,
                 "f": lambda x: x, "jnp": jnp, "_hidden": jnp.ones(1)}
    names = collect(namespace, SOURCE)["names"]
    assert names["y"] == {"type": "bf16[2,3]", "line": 5}
    assert names["params"] == {"type": "{'w': f32[784,512], 'b': f32[512]}", "line": 3}
    assert names["n"] == {"type": "i32[3]", "line": 4}
    assert names["pair"]["type"] == "(f32[2],)"
    assert set(names) == {"y", "params", "n", "pair"}  # not strings, numbers, functions, modules, _names


def test_a_sharded_array_says_how():
    mesh = jax.make_mesh((len(jax.devices()),), ("x",))
    sharded = jax.device_put(jnp.ones((8, 4)), jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x")))
    entry = collect({"s": sharded}, "s = 1\n")["names"]["s"]
    # As JAX writes it: the mesh axis a dimension is split over, after it; and the sharding.
    assert entry["type"] == "f32[8@x,4]"
    assert entry["sharding"] == "NamedSharding(P('x',))"


def test_bounded_in_count_items_and_text_and_valid_as_an_event():
    many = {f"a{i}": jnp.ones(1) for i in range(MAX_NAMES + 20)}
    shown = collect(many, "")
    assert len(shown["names"]) == MAX_NAMES and shown["truncated"] is True
    wide = collect({"w": [jnp.ones(i + 1) for i in range(MAX_ITEMS + 5)]}, "")["names"]["w"]["type"]
    assert wide.endswith(", …]") and wide.count("f32") == MAX_ITEMS
    problems = protocol.Problems()
    event = protocol.rebuild("shapes", shown, problems)
    assert not problems and len(event["names"]) == MAX_NAMES


def test_a_container_that_misbehaves_is_left_out():
    class Hostile(dict):
        def items(self):
            raise RuntimeError("no")

    assert collect({"h": Hostile(a=1), "ok": jnp.ones(2)}, "")["names"].keys() == {"ok"}
