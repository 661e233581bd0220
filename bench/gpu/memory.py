# What a GPU run sees of its device's memory, and that a run may fill part of it and give it back.
import jax
import jax.numpy as jnp

device = jax.devices()[0]
stats = device.memory_stats() or {}
print("limit GiB", round(stats.get("bytes_limit", 0) / 2**30, 1))
gib = 8 if device.platform == "gpu" else 1 / 16
big = jnp.ones((int(gib * 1024), 1024, 256), jnp.float32)
print("sum of a slice", float(big[0].sum()), "GiB held", gib)
print("in use GiB", round((device.memory_stats() or {}).get("bytes_in_use", 0) / 2**30, 2))
