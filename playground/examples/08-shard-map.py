"""shard_map: the same, the modern way
jax.shard_map inside jit: the batch laid out over a mesh of 8 devices, the
parameters replicated, the per-device code written for one shard."""

from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P


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


mesh = jax.make_mesh((jax.device_count(),), ("batch",))
print("mesh:", dict(mesh.shape))


def local_update(params, inputs, targets, step_size=0.1):
    # Runs on every device, on its shard: 1/8 of the batch here.
    def global_loss(params):
        # The mean over all devices: the loss of the whole batch.
        return jax.lax.pmean(mse_loss(params, inputs, targets), "batch")

    # params are the same on every device, so grad sums their gradient over
    # the devices by itself: no pmean of the gradients (pmap needed one).
    loss, grads = jax.value_and_grad(global_loss)(params)
    params = jax.tree.map(lambda p, g: p - step_size * g, params, grads)
    return params, loss


# The results are laid out as the parameters come in (the same on every
# device), so each step's arguments look exactly like the last one's and
# update compiles once.
@partial(jax.jit, out_shardings=NamedSharding(mesh, P()))
def update(params, inputs, targets):
    return jax.shard_map(
        local_update,
        mesh=mesh,
        in_specs=(P(), P("batch"), P("batch")),  # params whole, batch split
        out_specs=(P(), P()),                     # the same on every device
    )(params, inputs, targets)


key_params, key_data = jax.random.split(jax.random.key(0))
inputs = jax.random.normal(key_data, (128, 3))
targets = jnp.sin(inputs.sum(axis=1, keepdims=True))
params = init_params(key_params, [3, 32, 32, 1])

# Lay the batch out over the devices (rows 0-15 on device 0, 16-31 on
# device 1, ...) and give every device the parameters.
batch = NamedSharding(mesh, P("batch"))
inputs, targets = jax.device_put(inputs, batch), jax.device_put(targets, batch)
params = jax.device_put(params, NamedSharding(mesh, P()))
jax.debug.visualize_array_sharding(inputs)

for step in range(151):
    params, loss = update(params, inputs, targets)
    if step % 50 == 0:
        print(f"step {step:3d}   loss {loss:.5f}")
