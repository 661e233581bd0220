"""Per-example gradients with vmap
vmap(grad(loss), in_axes=(None, 0, 0)): one gradient per training example,
without rewriting predict or the loss for batches."""

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

# The same parameters for every example (None); the examples along axis 0 of
# inputs and targets. jit compiles the whole batched computation at once.
perexample_grads = jax.vmap(jax.grad(mse_loss), in_axes=(None, 0, 0))
grads = jax.jit(perexample_grads)(params, inputs, targets)
for i, (dW, db) in enumerate(grads):
    print(f"layer {i}: dW {dW.shape}, db {db.shape}")   # 128 of each

# Their mean is the gradient of the mean loss over the batch.
batch_grads = jax.grad(mse_loss)(params, inputs, targets)
mean_grads = jax.tree.map(lambda g: g.mean(axis=0), grads)
same = jax.tree.map(lambda a, b: jnp.allclose(a, b, atol=1e-6),
                    mean_grads, batch_grads)
print("mean of per-example gradients == batch gradient:",
      all(jax.tree.leaves(same)))

# Per-example gradient norms, e.g. to clip them, as differentially private
# training does.
squares = [jnp.sum(g.reshape(len(g), -1) ** 2, axis=1)
           for g in jax.tree.leaves(grads)]
norms = jnp.sqrt(sum(squares))
print(f"per-example gradient norms: {norms.min():.4f} to {norms.max():.4f}")
