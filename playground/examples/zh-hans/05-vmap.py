"""用 vmap 求逐样本梯度
vmap(grad(loss), in_axes=(None, 0, 0))：每个训练样本一个梯度，无需为批量
改写 predict() 或损失函数。"""

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

# 每个样本用同一份参数（None）；样本沿 inputs 和 targets 的第 0 维排列。
# jit 把整个批量化的计算一次编译完。
perexample_grads = jax.vmap(jax.grad(mse_loss), in_axes=(None, 0, 0))
grads = jax.jit(perexample_grads)(params, inputs, targets)
for i, (dW, db) in enumerate(grads):
    print(f"layer {i}: dW {dW.shape}, db {db.shape}")   # 各有 128 个

# 它们的平均值就是整个批量平均损失的梯度。
batch_grads = jax.grad(mse_loss)(params, inputs, targets)
mean_grads = jax.tree.map(lambda g: g.mean(axis=0), grads)
same = jax.tree.map(lambda a, b: jnp.allclose(a, b, atol=1e-6),
                    mean_grads, batch_grads)
print("mean of per-example gradients == batch gradient:",
      all(jax.tree.leaves(same)))

# 逐样本的梯度范数，例如用来裁剪梯度，差分隐私训练就是这样做的。
squares = [jnp.sum(g.reshape(len(g), -1) ** 2, axis=1)
           for g in jax.tree.leaves(grads)]
norms = jnp.sqrt(sum(squares))
print(f"per-example gradient norms: {norms.min():.4f} to {norms.max():.4f}")
