# About 1 GiB of the device's memory at its peak: the run's finished event says so.
import jax.numpy as jnp

x = jnp.ones((16384, 16384), jnp.float32)  # 1 GiB
print(float(x.sum()))
