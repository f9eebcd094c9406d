"""JAX/XLA allocator: an array larger than the device."""
import jax
import jax.numpy as jnp

print(jax.devices())
x = jnp.zeros((400 * 2**30,), dtype=jnp.uint8)
print(x.block_until_ready().shape)
