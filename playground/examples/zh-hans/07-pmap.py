"""用 pmap 跨设备并行
训练步骤同时在每个设备上运行，各自处理批量中的一片，梯度在设备之间取平均。
在 CPU 执行器上，这 8 个设备是模拟的。"""

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
    # 每个设备只有自己那一片的梯度：在设备之间取平均。
    grads = jax.lax.pmean(grads, axis_name="devices")
    loss = jax.lax.pmean(loss, axis_name="devices")
    params = jax.tree.map(lambda p, g: p - step_size * g, params, grads)
    return params, loss


key_params, key_data = jax.random.split(jax.random.key(0))
inputs = jax.random.normal(key_data, (128, 3))
targets = jnp.sin(inputs.sum(axis=1, keepdims=True))
params = init_params(key_params, [3, 32, 32, 1])

# pmap 沿最前面的设备维度映射：每个设备一片批量，每个设备一份参数（平均后的
# 梯度让各份保持一致）。
def shard(x):
    return x.reshape(n, -1, *x.shape[1:])


replicated = jax.tree.map(lambda p: jnp.broadcast_to(p, (n, *p.shape)), params)
inputs_per_device, targets_per_device = shard(inputs), shard(targets)
print("inputs per device:", inputs_per_device.shape)

# 一开始就把每一片放到它的设备上，就像 pmap 摆放自己的结果那样；否则结果作为
# 下一步的参数传回来时，update 会再编译一次。
spread = NamedSharding(Mesh(jax.devices(), ("devices",)), P("devices"))
replicated, inputs_per_device, targets_per_device = jax.device_put(
    (replicated, inputs_per_device, targets_per_device), spread)

for step in range(151):
    replicated, loss = update(replicated, inputs_per_device,
                              targets_per_device)
    if step % 50 == 0:
        print(f"step {step:3d}   loss {loss[0]:.5f}")

# pmap 在 JAX 0.12 中仍然可用，但它的文档如今称之为旧写法：它建立在 jit 和
# shard_map 之上，下一个示例就直接使用它们。
