"""纯 NumPy 实现的神经网络
文章的起点：一个前馈网络的 predict(params, inputs)，由点积和 np.tanh 组成，
以及它的均方误差损失。"""

import numpy as np


def init_params(sizes, seed=0):
    """每层一对 (权重, 偏置)。"""
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(m, n)) / np.sqrt(m), np.zeros(n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs                # 最后一层没有激活函数


def mse_loss(params, inputs, targets):
    preds = predict(params, inputs)
    return np.mean((preds - targets) ** 2)


# 一个小小的回归问题：学习三个数的一个光滑函数。
rng = np.random.default_rng(1)
inputs = rng.normal(size=(128, 3))
targets = np.sin(inputs.sum(axis=1, keepdims=True))

params = init_params([3, 32, 32, 1])
print("layers:", [W.shape for W, b in params])
print("predictions:", predict(params, inputs).shape)
print("loss:", mse_loss(params, inputs, targets))

# NumPy 到此为止：要训练这个网络，我们得手工推导并编写它的梯度，而且它只能
# 在 CPU 上运行。下一个示例只改一行 import。
