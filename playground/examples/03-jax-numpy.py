"""The same network with jax.numpy
Swap numpy for jax.numpy and the same code runs through XLA, on a CPU, GPU or
TPU. Printed at the end: the jaxpr that JAX traces it into."""

import jax
import jax.numpy as jnp


def init_params(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    return [(jax.random.normal(k, (m, n)) / jnp.sqrt(m), jnp.zeros(n))
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]


def predict(params, inputs):
    for W, b in params:
        outputs = jnp.dot(inputs, W) + b
        inputs = jnp.tanh(outputs)
    return outputs


def mse_loss(params, inputs, targets):
    preds = predict(params, inputs)
    return jnp.mean((preds - targets) ** 2)


key_params, key_data = jax.random.split(jax.random.key(0))
inputs = jax.random.normal(key_data, (128, 3))
targets = jnp.sin(inputs.sum(axis=1, keepdims=True))
params = init_params(key_params, [3, 32, 32, 1])

loss = mse_loss(params, inputs, targets)
print("loss:", loss)
print("computed on:", loss.devices())

# What JAX sees when it traces predict: each jnp call becomes a primitive
# (dot_general, add, tanh...) on typed arrays. grad, jit, vmap and pmap are
# transformations of this jaxpr.
print(jax.make_jaxpr(predict)(params, inputs))
