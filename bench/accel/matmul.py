# jaxplay.bench of an 8192² bf16 matrix product: its share of the chip's bf16 peak.
import jax.numpy as jnp
import jaxplay

a = jnp.ones((8192, 8192), jnp.bfloat16)
jaxplay.bench(lambda m: m @ m, a, label="8192² bf16 matmul")
