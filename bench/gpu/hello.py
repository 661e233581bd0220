# Where am I? The quickest run: its latency is the node's, not the snippet's.
import jax
print(jax.default_backend(), jax.devices()[0].device_kind)
