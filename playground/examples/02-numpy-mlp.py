"""A neural network in plain NumPy
The article's starting point: a feed-forward network's predict(params,
inputs), dot products and tanh, and its mean-squared-error loss."""

import numpy as np


def init_params(sizes, seed=0):
    """One (weights, biases) pair per layer."""
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(m, n)) / np.sqrt(m), np.zeros(n))
            for m, n in zip(sizes[:-1], sizes[1:])]


def predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs                # the last layer has no activation


def mse_loss(params, inputs, targets):
    preds = predict(params, inputs)
    return np.mean((preds - targets) ** 2)


# A small regression problem: learn a smooth function of three numbers.
rng = np.random.default_rng(1)
inputs = rng.normal(size=(128, 3))
targets = np.sin(inputs.sum(axis=1, keepdims=True))

params = init_params([3, 32, 32, 1])
print("layers:", [W.shape for W, b in params])
print("predictions:", predict(params, inputs).shape)
print("loss:", mse_loss(params, inputs, targets))

# NumPy stops here: to train this network we would have to derive and code
# its gradient by hand, and it runs on the CPU only. The next example changes
# one import.
