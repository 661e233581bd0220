"""用 jit 编译更新步骤
用 jax.jit 编译梯度下降的一步，让 XLA 把它融合成一个程序；先跑几百步，
再分别计时有 jit 和没有 jit 的这一步。"""

import jax
import jax.numpy as jnp

import jaxplay


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


def update(params, inputs, targets, step_size=0.1):
    loss, grads = jax.value_and_grad(mse_loss)(params, inputs, targets)
    params = jax.tree.map(lambda p, g: p - step_size * g, params, grads)
    return params, loss


# 第一次调用时为这些形状和数据类型编译一次。
fast_update = jax.jit(update)

key_params, key_data = jax.random.split(jax.random.key(0))
inputs = jax.random.normal(key_data, (128, 3))
targets = jnp.sin(inputs.sum(axis=1, keepdims=True))
params = init_params(key_params, [3, 32, 32, 1])

for step in range(301):
    params, loss = fast_update(params, inputs, targets)
    if step % 50 == 0:
        print(f"step {step:3d}   loss {loss:.5f}")

# 整个一步作为一个 XLA 程序，对比每个运算各分派一次。
jaxplay.compare(
    {"without jit": update, "jit": fast_update},
    params, inputs, targets,
    label="one SGD step of a 3-32-32-1 network, batch of 128",
)
