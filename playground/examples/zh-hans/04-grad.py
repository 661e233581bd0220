"""损失函数的 grad
jax.grad(mse_loss) 返回损失对每个参数的梯度。另外：f、grad(f) 和 vmap(f)
的 jaxpr 并排对照，以及导数的导数。"""

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


key_params, key_data = jax.random.split(jax.random.key(0))
inputs = jax.random.normal(key_data, (128, 3))
targets = jnp.sin(inputs.sum(axis=1, keepdims=True))
params = init_params(key_params, [3, 32, 32, 1])

grad_loss = jax.grad(mse_loss)     # 对第一个参数求导
grads = grad_loss(params, inputs, targets)
for i, (dW, db) in enumerate(grads):
    norm = jnp.linalg.norm(dW)
    print(f"layer {i}: dW {dW.shape}, db {db.shape}, |dW| = {norm:.4f}")


# 变换对一个函数做了什么：f、grad(f) 和 vmap(f) 的 jaxpr，并排显示在“编译”
# 标签页中。grad 加上反向传播；vmap 给每个形状加上一个批量维度。
def f(x):
    return jnp.sum(jnp.tanh(x) ** 2)


jaxplay.jaxprs(f, jnp.ones(3))


# Python 的控制流照样可用：grad 沿着值实际走过的分支求导。还有导数的导数：
# grad 的 grad。
def cube_if_positive(x):
    if x > 0:
        return x ** 3
    return 0.0


d1 = jax.grad(cube_if_positive)
d2 = jax.grad(d1)
print(f"f'(3) = {d1(3.0)}   f''(3) = {d2(3.0)}   f'(-1) = {d1(-1.0)}")
