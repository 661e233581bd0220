"""用 jax.numpy 实现同一个网络
把 numpy 换成 jax.numpy，同样的代码就会经由 XLA 在 CPU、GPU 或 TPU 上运行。
最后打印出 JAX 追踪它得到的 jaxpr。"""

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

# JAX 追踪 predict 时看到的东西：每个 jnp 调用都成为作用在带类型数组上的一个
# 原语（dot_general、add、tanh……）。grad、jit、vmap 和 pmap 都是对这个 jaxpr
# 的变换。
print(jax.make_jaxpr(predict)(params, inputs))
