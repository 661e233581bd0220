"""shard_map：同样的事，更现代的写法
在 jit 中使用 jax.shard_map：批量分布在由 8 个设备组成的网格上，参数在各
设备上复制，每个设备的代码只为一个分片而写。"""

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
    # 在每个设备上、针对它自己的分片运行：这里是批量的 1/8。
    def global_loss(params):
        # 所有设备上的平均值：整个批量的损失。
        return jax.lax.pmean(mse_loss(params, inputs, targets), "batch")

    # params 在每个设备上都相同，所以 grad 会自行把它们的梯度在设备之间求和：
    # 不需要对梯度做 pmean（pmap 需要）。
    loss, grads = jax.value_and_grad(global_loss)(params)
    params = jax.tree.map(lambda p, g: p - step_size * g, params, grads)
    return params, loss


# 结果的布局与传入的参数相同（每个设备上都一样），所以每一步的参数看起来
# 都和上一步完全一样，update 只编译一次。
@partial(jax.jit, out_shardings=NamedSharding(mesh, P()))
def update(params, inputs, targets):
    return jax.shard_map(
        local_update,
        mesh=mesh,
        in_specs=(P(), P("batch"), P("batch")),  # 参数完整，批量切分
        out_specs=(P(), P()),                     # 每个设备上都相同
    )(params, inputs, targets)


key_params, key_data = jax.random.split(jax.random.key(0))
inputs = jax.random.normal(key_data, (128, 3))
targets = jnp.sin(inputs.sum(axis=1, keepdims=True))
params = init_params(key_params, [3, 32, 32, 1])

# 把批量分布到各设备上（第 0-15 行在设备 0，第 16-31 行在设备 1，……），
# 并给每个设备一份参数。
batch = NamedSharding(mesh, P("batch"))
inputs, targets = jax.device_put(inputs, batch), jax.device_put(targets, batch)
params = jax.device_put(params, NamedSharding(mesh, P()))
jax.debug.visualize_array_sharding(inputs)

for step in range(151):
    params, loss = update(params, inputs, targets)
    if step % 50 == 0:
        print(f"step {step:3d}   loss {loss:.5f}")
