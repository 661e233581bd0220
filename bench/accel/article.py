# The article's path on one accelerator: a NumPy-style MLP in jax.numpy, its loss's gradient
# (grad), per-example gradients (vmap), a compiled update step (jit) and the same over the
# devices (pmap).
import jax
import jax.numpy as jnp
from jax import grad, jit, pmap, vmap


def predict(params, inputs):
    for w, b in params:
        inputs = jnp.tanh(inputs @ w + b)
    return inputs


def mse_loss(params, inputs, targets):
    return jnp.mean((predict(params, inputs) - targets) ** 2)


key = jax.random.PRNGKey(0)
sizes = [64, 256, 256, 1]
params = [(jax.random.normal(k, (m, n)) * 0.1, jnp.zeros(n))
          for k, m, n in zip(jax.random.split(key, 3), sizes[:-1], sizes[1:])]
x = jax.random.normal(key, (512, 64))
y = jnp.sin(x[:, :1])

g = grad(mse_loss)(params, x, y)
per_example = vmap(grad(mse_loss), in_axes=(None, 0, 0))(params, x[:, None], y[:, None])


@jit
def update(params, x, y, lr=0.1):
    grads = grad(mse_loss)(params, x, y)
    return [(w - lr * gw, b - lr * gb) for (w, b), (gw, gb) in zip(params, grads)]


for _ in range(20):
    params = update(params, x, y)
n = jax.local_device_count()
losses = pmap(mse_loss, in_axes=(None, 0, 0))(params, x.reshape(n, -1, 64), y.reshape(n, -1, 1))
print("devices", n, jax.devices()[0].device_kind)
print("grad shapes", [w.shape for w, _ in g], "per-example", per_example[0][0].shape)
print("loss after 20 jitted steps", float(mse_loss(params, x, y)), "pmap", losses.shape)
