"""Snippets more than one test suite runs: the runner's tests check the events they produce,
the browser's tests what the page makes of them."""

# An XLA compilation that takes about 3 s on a 2-core machine (500 small matmuls in one
# jitted function; a chain that used each step twice instead ran exponentially long): long
# enough for the runner's "compiling" notice, which comes after 0.5 s.
SLOW_COMPILE = """\
import jax, jax.numpy as jnp

@jax.jit
def long_chain(x):
    for i in range(500):
        x = jnp.sin(x @ x) * 1.0001 + i
    return x

quick = jax.jit(lambda x: x + 1)
quick(jnp.ones((8, 8)))
print(long_chain(jnp.ones((8, 8))).shape)
"""
