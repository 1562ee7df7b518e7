"""Examples from JEP 14273, "shmap (shard_map) for simple per-device code"
(docs/jep/14273-shard-map.md), in the API it proposed: ``jax.experimental.shard_map``'s
``shard_map(f, mesh, in_specs, out_specs)``.

Copyright The JAX Authors, Apache-2.0; read at the commit below. Each ``B<n>`` is the n-th
fenced block of the page, verbatim; the page's names are JAX's as of 2023 (block 6 reads
``mesh.axis_size['j']``, which no JAX had, and blocks 3, 4, 10 and 11 are pseudo-code: they
are left out)."""
from jax_tutorials import example, narrow

SOURCE = "jax-ml/jax cec06d116c05f0d52adfceee3d3b730fdbcb0ce5 docs/jep/14273-shard-map.md"

#: § TL;DR example (with a more detailed explanation to follow)
B1 = r'''
from functools import partial

import numpy as np

import jax
import jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
from jax.experimental.shard_map import shard_map

mesh = jax.make_mesh((4, 2), ('i', 'j'))

a = jnp.arange( 8 * 16.).reshape(8, 16)
b = jnp.arange(16 * 32.).reshape(16, 32)

@partial(shard_map, mesh=mesh, in_specs=(P('i', 'j'), P('j', None)),
         out_specs=P('i', None))
def matmul_basic(a_block, b_block):
  # a_block: f32[2, 8]
  # b_block: f32[8, 32]
  z_partialsum = jnp.dot(a_block, b_block)
  z_block = jax.lax.psum(z_partialsum, 'j')
  return z_block

c = matmul_basic(a, b)  # c: f32[8, 32]
'''

#: § TL;DR example (with a more detailed explanation to follow)
B2 = r'''
@partial(shard_map, mesh=mesh, in_specs=(P('i', 'j'), P('j', None)),
         out_specs=P('i', 'j'))
def matmul_reduce_scatter(a_block, b_block):
  # c_partialsum: f32[8/X, 32]
  c_partialsum = jnp.matmul(a_block, b_block)
  # c_block: f32[8/X, 32/Y]
  c_block = jax.lax.psum_scatter(c_partialsum, 'j', scatter_dimension=1, tiled=True)
  return c_block

c = matmul_reduce_scatter(a, b)
'''

#: § Controlling how each input is split (unconcatenated) and tiled with `in_specs`
B5 = r'''
devices = np.array(jax.devices())
m = Mesh(devices.reshape(4, 2), ('i', 'j'))

@partial(shard_map, mesh=m, in_specs=P('i', None), out_specs=P('i', 'j'))
def f1(x_block):
  print(x_block.shape)
  return x_block

x1 = np.arange(12 * 12).reshape(12, 12)
y = f1(x1)  # prints (3,12)
'''

#: § Controlling how each output assembled by concatenation, block transposition, and untiling u ...
B7 = r'''
x = jnp.array([[3.]])

z = shard_map(lambda: x, mesh=m, in_specs=(), out_specs=P('i', 'j'))()
print(z)  # prints the same as jnp.tile(x, (4, 2))

z = shard_map(lambda: x, mesh=m, in_specs=(), out_specs=P('i', None))()
print(z)  # prints the same as jnp.tile(x, (4, 1)), or just jnp.tile(x, (4,))

z = shard_map(lambda: x, mesh=m, in_specs=(), out_specs=P(None, None))()
print(z)  # prints the same as jnp.tile(x, (1, 1)), or just x
'''

#: § Controlling how each output assembled by concatenation, block transposition, and untiling u ...
B8 = r'''
@partial(shard_map, mesh=m, in_specs=P('i', 'j'), out_specs=P('i', None))
def f3(x_block):
  return jax.lax.psum(x_block, 'j')

x = np.arange(12 * 12).reshape(12, 12)
y3 = f3(x)
print(y3.shape)  # (12,6)
'''

#: § Controlling how each output assembled by concatenation, block transposition, and untiling u ...
B9 = r'''
@partial(shard_map, mesh=m, in_specs=P('i', 'j'), out_specs=P(None, 'j'))
def f4(x_block):
  return jax.lax.psum(x_block, 'i')

x = np.arange(12 * 12).reshape(12, 12)
y4 = f4(x)
print(y4.shape)  # (3,12)


@partial(shard_map, mesh=m, in_specs=P('i', 'j'), out_specs=P(None, None))
def f5(x_block):
  return jax.lax.psum(x_block, ('i', 'j'))

y5 = f5(x)
print(y5.shape)  # (3,6)
'''


IMPORTS = B1[:B1.index("mesh = ")]    # block 1's import lines
MESH = "Mesh(devices, axis_names)"
#: the JEP predates make_mesh's Explicit default (JAX 0.9), under which block 1's unplaced
#: arrays do not match its in_specs: its mesh made Auto, as the JEP meant it
AUTO = (("jax.make_mesh((4, 2), ('i', 'j'))",
         "jax.make_mesh((4, 2), ('i', 'j'), axis_types=(jax.sharding.AxisType.Auto,) * 2)",
         "the JEP predates make_mesh's Explicit default (JAX 0.9): an Auto mesh"),)
I32 = (narrow("np.arange(12 * 12)", "int32"),)

EXAMPLES = [
    example("jep_14273:matmul_basic", "§ TL;DR example (block 1)", B1, values=("c",), edits=AUTO),
    example("jep_14273:matmul_reduce_scatter", "§ TL;DR example (blocks 1, 2)", B1 + B2,
            values=("c",), edits=AUTO),
    example("jep_14273:in_specs", "§ Controlling how each input is split (block 5)",
            IMPORTS + B5, values=("y",), stdout="text", deviations=I32),
    example("jep_14273:out_specs_tile", "§ Controlling how each output assembled "
            "(blocks 5, 7)", IMPORTS + B5 + B7, values=("z",), stdout="numbers"),
    example("jep_14273:out_specs_psum_f3", "§ Controlling how each output assembled "
            "(blocks 5, 8)", IMPORTS + B5 + B8, values=("y3",), stdout="text",
            deviations=I32),
    example("jep_14273:out_specs_psum_f4_f5", "§ Controlling how each output assembled "
            "(blocks 5, 9)", IMPORTS + B5 + B9, values=("y4", "y5"), stdout="text",
            deviations=I32),
]
