"""速度测试
文章中的基准测试 x + x*x + x*x*x：分别用 NumPy、不带 jit 的 JAX、jit，
以及带 donate_argnums 的 jit 来算；先是文章里的计时语句，再把四者并排对比。"""

import numpy as np
import jax
import jax.numpy as jnp
from jax import jit

import jaxplay


def fn(x):
    return x + x*x + x*x*x


# 文章用的是 10000×10000（每个数组 400 MB）。4000×4000（64 MB）让这次运行
# 在小型 CPU 上也只需几秒。
x = np.random.randn(4000, 4000).astype(dtype='float32')
%timeit -n5 fn(x)                        # NumPy（文章：436 ms）

jax_fn = jit(fn)
x = jnp.array(x)
%timeit jax_fn(x).block_until_ready()    # JAX（文章：T4 GPU 上 3.67 ms）

# 四种写法并排，每种都用同样的方式计时（见“计时”标签页）。
# （带 donate_argnums 时，jaxplay 把每次的输出作为下一次的输入传回去。）
WHY = ("On a CPU, plain jit barely beats NumPy: XLA fuses the arithmetic into "
       "one pass, but every call still gets a fresh 64 MB output buffer, and "
       "faulting its pages in costs about as much as the arithmetic. With "
       "donate_argnums=0, XLA writes the result into the input's buffer "
       "instead: no new memory, and the speed-up appears.")
jaxplay.compare(
    {
        "NumPy": (fn, np.asarray(x)),
        "JAX, no jit": (fn, x),
        "jit": (jax_fn, x),
        "jit, donate_argnums=0": (jit(fn, donate_argnums=0), x),
    },
    label="x + x*x + x*x*x on 4000×4000 float32",
    repeats=5,
    note=WHY if jax.default_backend() == "cpu" else None,
)
