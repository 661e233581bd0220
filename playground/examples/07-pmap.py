"""pmap across devices
The training step on every device at once, each on its slice of the batch,
the gradients averaged across devices. On a CPU executor the 8 devices are
simulated."""

from functools import partial

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P


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


n = jax.device_count()
print(f"{n} devices:", jax.devices())


@partial(jax.pmap, axis_name="devices")
def update(params, inputs, targets, step_size=0.1):
    loss, grads = jax.value_and_grad(mse_loss)(params, inputs, targets)
    # Each device has the gradient of its own slice: average over devices.
    grads = jax.lax.pmean(grads, axis_name="devices")
    loss = jax.lax.pmean(loss, axis_name="devices")
    params = jax.tree.map(lambda p, g: p - step_size * g, params, grads)
    return params, loss


key_params, key_data = jax.random.split(jax.random.key(0))
inputs = jax.random.normal(key_data, (128, 3))
targets = jnp.sin(inputs.sum(axis=1, keepdims=True))
params = init_params(key_params, [3, 32, 32, 1])

# pmap maps over a leading device axis: one slice of the batch per device,
# and one copy of the parameters per device (kept identical by the averaged
# gradients).
def shard(x):
    return x.reshape(n, -1, *x.shape[1:])


replicated = jax.tree.map(lambda p: jnp.broadcast_to(p, (n, *p.shape)), params)
inputs_per_device, targets_per_device = shard(inputs), shard(targets)
print("inputs per device:", inputs_per_device.shape)

# Put each slice on its device from the start, as pmap lays out its own
# results; otherwise update compiles a second time when its results come
# back in as the next step's arguments.
spread = NamedSharding(Mesh(jax.devices(), ("devices",)), P("devices"))
replicated, inputs_per_device, targets_per_device = jax.device_put(
    (replicated, inputs_per_device, targets_per_device), spread)

for step in range(151):
    replicated, loss = update(replicated, inputs_per_device,
                              targets_per_device)
    if step % 50 == 0:
        print(f"step {step:3d}   loss {loss[0]:.5f}")

# pmap still works in JAX 0.12, but its documentation now calls it the old
# way: it is built on jit and shard_map, which the next example uses directly.
