"""Examples from JAX's "Manual parallelism with shard_map" (docs/notebooks/shard_map.md).

Copyright 2026 The JAX Authors, Apache-2.0; read at the commit below. Each ``B<n>`` is the
n-th fenced block of the page, verbatim; an example joins the blocks it builds on, as the
notebook runs them in order (the page's own import lines first)."""
from jax_tutorials import example, normal

SOURCE = "jax-ml/jax cec06d116c05f0d52adfceee3d3b730fdbcb0ce5 docs/notebooks/shard_map.md"

#: § So, let's see a `shard_map`!
B3 = r'''
from functools import partial

import jax
import jax.numpy as jnp

from jax.sharding import Mesh, PartitionSpec as P
'''
#: the rest of block 3 (only the Auto mesh of block 13 uses them)
B3_AXIS_TYPES = r'''
Explicit = jax.sharding.AxisType.Explicit
Auto = jax.sharding.AxisType.Auto
'''

#: § So, let's see a `shard_map`!
B4 = r'''
mesh = jax.make_mesh((4, 2), ('x', 'y'))
jax.set_mesh(mesh)

a = jax.device_put(jnp.arange( 8 * 16.).reshape(8, 16), P('x', 'y'))
b = jax.device_put(jnp.arange(16 *  4.).reshape(16, 4), P('y', None))

@jax.shard_map(in_specs=(P('x', 'y'), P('y', None)), out_specs=P('x', None))
def matmul_basic(a_block, b_block):
  # a_block: f32[2, 8]
  # b_block: f32[8, 4]
  c_partialsum = jnp.dot(a_block, b_block)
  c_block = jax.lax.psum(c_partialsum, 'y')
  # c_block: f32[2, 4]
  return c_block

c = matmul_basic(a, b)   # c: f32[8, 4]
'''

#: § So, let's see a `shard_map`!
B5 = r'''
from jax.tree_util import tree_map, tree_all

def allclose(a, b):
  return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))
'''
#: the rest of block 5
B5_CHECK = r'''
allclose(c, jnp.dot(a, b, out_sharding=P('x', None)))
'''

#: § So, let's see a `shard_map`!
B6 = r'''
jax.debug.visualize_array_sharding(c)
'''

#: § So, let's see a `shard_map`!
B7 = r'''
from jax.sharding import NamedSharding

a = jax.device_put(a, P('x', 'y'))
b = jax.device_put(b, P('y', None))

@jax.jit
def matmul_reference(a, b):
  return jnp.dot(a, b, out_sharding=P('x', None))

c_ref = matmul_reference(a, b)
allclose(c_ref, jnp.dot(a, b, out_sharding=P('x', None)))
'''

#: § Rank-reducing vs rank-preserving maps
B9 = r'''
def check_vmap(f, xs):
  ans = jax.vmap(f, in_axes=(0,), out_axes=0)(xs)
  expected = jnp.stack([f(x) for x in xs])  # vmap reference semantics
  print(allclose(ans, expected))

check_vmap(lambda x: x @ x, jnp.arange(12).reshape(4, 3))
'''

#: § Rank-reducing vs rank-preserving maps
B10 = r'''
import numpy as np
devices = np.array(jax.devices()[:4])
mesh = Mesh(devices, ('i',))  # mesh.shape['i'] = 4
jax.set_mesh(mesh)

def check_shmap(f, y):
  ans = jax.shard_map(f, in_specs=P('i'), out_specs=P('i'))(y)
  expected = jnp.concatenate([f(y_blk) for y_blk in jnp.split(y, mesh.shape['i'])])
  print(allclose(ans, expected))

check_shmap(lambda x: x.T @ x, jnp.arange(32).reshape(8, 4))
'''

#: § Controlling how each input is split (unconcatenated) and tiled with `in_specs`
B11 = r'''
mesh = jax.make_mesh((4, 2), ('i', 'j'))
jax.set_mesh(mesh)

@jax.shard_map(in_specs=P('i', None), out_specs=P('i', 'j'))
def f1(x_block):
  print(x_block.shape)  # prints (3, 12)
  return x_block

x1 = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), P('i', None))
y = f1(x1)
'''

#: § Controlling how each input is split (unconcatenated) and tiled with `in_specs`
B12 = r'''
@jax.shard_map(in_specs=P('i', 'j'), out_specs=P('i', 'j'))
def f2(x_block):
  print(x_block.shape)
  return x_block

x = jnp.arange(12 * 12).reshape(12, 12)
x_ = jnp.tile(x, (1, mesh.shape['j']))  # x_ has shape (12, 24)
x_ = jax.device_put(x, P('i', 'j'))
y = f2(x_)  # prints (3,12), and f1(x) == f2(x_)
'''

#: § Controlling how each output assembled by concatenation, block transposition, and untiling u ...
B13 = r'''
auto_mesh = jax.make_mesh((4, 2), ('i', 'j'), (Auto, Auto))
with jax.set_mesh(auto_mesh):
  x = jnp.array([[3.]])

  z = jax.shard_map(lambda: x, in_specs=(), out_specs=P('i', 'j'))()
  print(z)  # prints the same as jnp.tile(x, (4, 2))

  z = jax.shard_map(lambda: x, in_specs=(), out_specs=P('i', None))()
  print(z)  # prints the same as jnp.tile(x, (4, 1)), or just jnp.tile(x, (4,))

  z = jax.shard_map(lambda: x, in_specs=(), out_specs=P(None, None))()
  print(z)  # prints the same as jnp.tile(x, (1, 1)), or just x
'''

#: § Controlling how each output assembled by concatenation, block transposition, and untiling u ...
B14 = r'''
@jax.shard_map(in_specs=P('i', 'j'), out_specs=P('i', None))
def f3(x_block):
  return jax.lax.psum(x_block, 'j')

x = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), P('i', 'j'))
y3 = f3(x)
print(y3.shape)
'''

#: § Controlling how each output assembled by concatenation, block transposition, and untiling u ...
B15 = r'''
@jax.shard_map(in_specs=P('i', 'j'), out_specs=P(None, 'j'))
def f4(x_block):
  return jax.lax.psum(x_block, 'i')

x = jax.device_put(jnp.arange(12 * 12).reshape(12, 12), P('i', 'j'))
y4 = f4(x)
print(y4.shape)  # (3,12)


@jax.shard_map(in_specs=P('i', 'j'), out_specs=P(None, None))
def f5(x_block):
  return jax.lax.psum(x_block, ('i', 'j'))

y5 = f5(x)
print(y5.shape)  # (3,6)
'''

#: § Tracking how values vary over manual mesh axes, and `check_vma=True`
B16 = r'''
mesh = jax.make_mesh((2,), ('i',))
jax.set_mesh(mesh)

@jax.shard_map(in_specs=P('i'), out_specs=P('i'))
def f(x):
  print(x)
  return 2 * x

x = jax.device_put(jnp.arange(6.), P('i'))
f(x)
'''

#: § Tracking how values vary over manual mesh axes, and `check_vma=True`
B18 = r'''
@jax.shard_map(in_specs=P('i'), out_specs=P())
def f(x):
  y = jax.lax.psum(x, 'i')
  print(y)
  return y

x = jax.device_put(jnp.arange(6.), P('i'))
f(x)
'''

#: § Tracking how values vary over manual mesh axes, and `check_vma=True`
B19 = r'''
@jax.shard_map(in_specs=P('i'), out_specs=P())
def f(x):
  print(jax.typeof(x))  # f32[3]{V:i}
  y = jax.lax.psum(x, 'i')
  print(jax.typeof(y))  # f32[3]
  return y

x = jax.device_put(jnp.arange(6.), P('i'))
f(x)
'''

#: § Tracking how values vary over manual mesh axes, and `check_vma=True`
B20 = r'''
mesh = jax.make_mesh((4, 2), ('i', 'j'))
jax.set_mesh(mesh)

@jax.shard_map(in_specs=P('i', 'j'), out_specs=P('i'))
def f(x):
  print(jax.typeof(x))  # f32[2,2]{V:(i,j)}
  y = jax.lax.psum(x, 'j')
  assert jax.typeof(y).manual_axis_type.varying == {'i'}
  print(jax.typeof(y))  # f32[2,2]{V:i}
  return y

x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), P('i', 'j'))
f(x)
'''

#: § Tracking how values vary over manual mesh axes, and `check_vma=True`
B21 = r'''
mesh = jax.make_mesh((2,), ('i',))
jax.set_mesh(mesh)

x = jax.device_put(jnp.arange(6.), P('i'))
try:
  y = jax.shard_map(lambda x: x, in_specs=P('i'), out_specs=P())(x)
except Exception as e:
  print(e)
'''

#: § Tracking how values vary over manual mesh axes, and `check_vma=True`
B22 = r'''
@jax.shard_map(in_specs=P(), out_specs=None)
def f(x):
  print(jax.typeof(x))  # f32[6]
  y = jax.lax.pcast(x, 'i', to='varying')
  print(jax.typeof(y))  # f32[6]{i}

x = jnp.arange(6.)
f(x)
'''

#: § Tracking how values vary over manual mesh axes, and `check_vma=True`
B24 = r'''
mesh = jax.make_mesh((2,), ('i',))
jax.set_mesh(mesh)

@jax.shard_map(in_specs=(P('i'), P()), out_specs=P('i'))
def f(x, y):
  def body(carry, _):
    c1, c2 = carry
    return (c2, c1), ()  # swap the carry
  (x_, y_), _ = jax.lax.scan(body, (x, y), (), length=2)
  return x_, y_

x = jnp.arange(6.)
y = jnp.arange(3.)

try:
  f(x, y)
except Exception as e:
  print(e)
'''

#: § Tracking how values vary over manual mesh axes, and `check_vma=True`
B25 = r'''
mesh = jax.make_mesh((2,), ('i',))
jax.set_mesh(mesh)

@jax.shard_map(in_specs=(P('i'), P()), out_specs=P('i'))
def f(x, y):
  def body(carry, _):
    c1, c2 = carry
    return (c2, c1), ()  # swap the carry

  y = jax.lax.pcast(y, 'i', to='varying')  # apply pcast to fix the error
  (x_, y_), _ = jax.lax.scan(body, (x, y), (), length=2)
  return x_, y_

x = jax.device_put(jnp.arange(6.), P('i'))
y = jnp.arange(3.)

f(x, y)
'''

#: § `psum`
B31 = r'''
import jax
import jax.numpy as jnp
from jax import lax

from jax.sharding import Mesh, PartitionSpec as P
'''

#: § `psum`
B32 = r'''
mesh1d = Mesh(jax.devices()[:4], ('i',))
jax.set_mesh(mesh1d)

@jax.shard_map(mesh=mesh1d, in_specs=P('i'), out_specs=P(None))
def f1(x_block):
  print('BEFORE:\n', x_block)
  y_block = jax.lax.psum(x_block, 'i')
  print('AFTER:\n', y_block)
  return y_block
'''

#: § `psum`
B33 = r'''
x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
y = f1(x)
print('FINAL RESULT:\n', y)
'''

#: § `psum`
B35 = r'''
mesh2d = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ('i', 'j'))
jax.set_mesh(mesh2d)

@jax.shard_map(mesh=mesh2d, in_specs=P('i', 'j'), out_specs=P(None, 'j'))
def f2(x_block):
  print('BEFORE:\n', x_block)
  y_block = jax.lax.psum(x_block, 'i')
  print('AFTER:\n', y_block)
  return y_block

y = f2(jnp.arange(16).reshape(4, 4))
print('FINAL RESULT:\n', y)
'''

#: § `psum`
B36 = r'''
@jax.shard_map(mesh=mesh2d, in_specs=P('i', 'j'), out_specs=P(None, None))
def f3(x_block):
  print('BEFORE:\n', x_block)
  y_block = jax.lax.psum(x_block, ('i', 'j'))
  print('AFTER:\n', y_block)
  return y_block

y = f3(jnp.arange(16).reshape(4, 4))
print('FINAL RESULT:\n', y)
'''

#: § `all_gather`
B37 = r'''
jax.set_mesh(mesh1d)

@jax.shard_map(mesh=mesh1d, in_specs=P('i'), out_specs=P('i'))
def f4(x_block):
  print('BEFORE:\n', x_block)
  y_block = jax.lax.all_gather(x_block, 'i', tiled=True)
  print('AFTER:\n', y_block)
  return y_block

x = jnp.array([3, 9, 5, 2])
y = f4(x)
print('FINAL RESULT:\n', y)
'''

#: § `all_gather`
B38 = r'''
@jax.shard_map(mesh=mesh1d, in_specs=P('i'), out_specs=P('i'))
def f5(x_block):
  print('BEFORE:\n', x_block)
  y_block = jax.lax.all_gather(x_block, 'i', tiled=False)
  print('AFTER:\n', y_block)
  return y_block

y = f5(x)
print('FINAL RESULT:\n', y)
'''

#: § `psum_scatter`
B40 = r'''
@jax.shard_map(in_specs=P('i'), out_specs=P('i'))
def f6(x_block):
  print('BEFORE:\n', x_block)
  y_block = jax.lax.psum_scatter(x_block, 'i', tiled=True)
  print('AFTER:\n', y_block)
  return y_block

x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
y = f6(x)
print('FINAL RESULT:\n', y)
'''

#: § `ppermute`
B43 = r'''
@jax.shard_map(in_specs=P('i'), out_specs=P('i'))
def f7(x_block):
  sz = jax.lax.axis_size('i')
  print('BEFORE:\n', x_block)
  y_block = jax.lax.ppermute(x_block, 'i', [(i, (i + 1) % sz) for i in range(sz)])
  print('AFTER:\n', y_block)
  return y_block

y = f7(jnp.arange(8))
print('FINAL RESULT:\n', y)
'''

#: § `ppermute`
B45 = r'''
def psum_scatter(x, axis_name, *, tiled=False):
  size = jax.lax.axis_size(axis_name)
  idx = jax.lax.axis_index(axis_name)  # function instance index along axis_name
  if tiled:
    x = x.reshape(size, -1, *x.shape[1:])  # split leading axis
  shift = partial(jax.lax.ppermute, axis_name=axis_name,
                  perm=[(i, (i - 1) % size) for i in range(size)])
  for i in range(1, size):
    update = shift(x[(idx + i) % size])
    x = x.at[(idx + i + 1) % size].add(update)
  return x[idx]
'''

#: § `ppermute`
B46 = r'''
@jax.shard_map(in_specs=P('i'), out_specs=P('i'))
def f8(x_block):
  print('BEFORE:\n', x_block)
  y_block = psum_scatter(x_block, 'i', tiled=True)
  print('AFTER:\n', y_block)
  return y_block

x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
y = f8(x)
print('FINAL RESULT:\n', y)
'''

#: § `all_to_all`
B47 = r'''
@jax.shard_map(mesh=mesh1d, in_specs=P('i'), out_specs=P('i'))
def f9(x_block):
  print('BEFORE:\n', x_block)
  y_block = jax.lax.all_to_all(x_block, 'i', split_axis=0, concat_axis=0,
                               tiled=True)
  print('AFTER:\n', y_block)
  return y_block

x = jnp.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2])
y = f9(x)
print('FINAL RESULT:\n', y)
'''

#: § Matrix multiplies
B49 = r'''
import jax
import jax.numpy as jnp

from jax.sharding import Mesh, PartitionSpec as P
'''

#: § Matrix multiplies
B50 = r'''
mesh = Mesh(jax.devices()[:4], ('i',))
jax.set_mesh(mesh)

def device_put(x, pspec):
  return jax.device_put(x, NamedSharding(mesh, pspec))
'''

#: § Example 1: `all-gather` on one side
B51 = r'''
lhs_spec = P('i', None)
lhs = device_put(jax.random.normal(jax.random.key(0), (8, 8)), lhs_spec)
'''

#: § Example 1: `all-gather` on one side
B52 = r'''
rhs_spec = P('i', None)
rhs = device_put(jax.random.normal(jax.random.key(1), (8, 4)), rhs_spec)
'''

#: § Example 1: `all-gather` on one side
B53 = r'''
@jax.jit
@jax.shard_map(in_specs=(lhs_spec, rhs_spec),
               out_specs=rhs_spec)
def matmul_allgather(lhs_block, rhs_block):
  rhs = jax.lax.all_gather(rhs_block, 'i', tiled=True)
  return lhs_block @ rhs
'''

#: § Example 1: `all-gather` on one side
B54 = r'''
out = matmul_allgather(lhs, rhs)
print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
'''

#: § Example 1: `all-gather` on one side
B55 = r'''
@jax.jit
@jax.shard_map(in_specs=(lhs_spec, rhs_spec),
               out_specs=rhs_spec)
def matmul_allgather_overlapped(lhs_block, rhs_block):
  size = jax.lax.axis_size('i')
  idx = jax.lax.axis_index('i')
  shift = partial(jax.lax.ppermute, axis_name='i',
                  perm=[(i, (i + 1) % size) for i in range(size)])

  B = lhs_block.shape[1] // size
  lhs_blocks = lambda i: lax.dynamic_slice_in_dim(lhs_block, i * B, B, 1)

  out_block = lhs_blocks(idx) @ rhs_block
  for i in range(1, size):
    rhs_block = shift(rhs_block)
    out_block += lhs_blocks((idx - i) % size) @ rhs_block
  return out_block
'''

#: § Example 1: `all-gather` on one side
B56 = r'''
out = matmul_allgather_overlapped(lhs, rhs)
print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
'''

#: § Example 1: `all-gather` on one side
B57 = r'''
@jax.jit
@jax.shard_map(in_specs=(lhs_spec, rhs_spec),
               out_specs=rhs_spec)
def matmul_allgather_overlapped_bidi(lhs_block, rhs_block):
  size = jax.lax.axis_size('i')
  idx = jax.lax.axis_index('i')
  shift_up = partial(jax.lax.ppermute, axis_name='i',
                     perm=[(i, (i + 1) % size) for i in range(size)])
  shift_dn = partial(jax.lax.ppermute, axis_name='i',
                     perm=[(i, (i - 1) % size) for i in range(size)])

  B = lhs_block.shape[1] // size // 2  # half-size blocks
  lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2*i+hi) * B, B, 1)

  def block_matmul(rhs_lo, rhs_hi, i_lo, i_hi):
    lhs_lo = jnp.pad(lhs_blocks(i_lo, 0), [(0, 0), (0, B)])
    lhs_hi = jnp.pad(lhs_blocks(i_hi, 1), [(0, 0), (B, 0)])
    rhs_lo = jnp.pad(rhs_lo, [(0, B), (0, 0)])
    rhs_hi = jnp.pad(rhs_hi, [(B, 0), (0, 0)])
    return (lhs_lo + lhs_hi) @ (rhs_lo + rhs_hi)

  rhs_block_lo, rhs_block_hi = jnp.split(rhs_block, 2, axis=0)
  out_block = block_matmul(rhs_block_lo, rhs_block_hi, idx, idx)
  for i in range(1, size):
    rhs_block_lo = shift_up(rhs_block_lo)
    rhs_block_hi = shift_dn(rhs_block_hi)
    out_block += block_matmul(rhs_block_lo, rhs_block_hi,
                              (idx - i) % size, (idx + i) % size)
  return out_block
'''

#: § Example 1: `all-gather` on one side
B58 = r'''
out = matmul_allgather_overlapped_bidi(lhs, rhs)
print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
'''

#: § Example 2: `psum_scatter` the result
B59 = r'''
lhs_spec = P(None, 'i')
lhs = device_put(lhs, lhs_spec)

rhs_spec = P('i', None)
rhs = device_put(rhs, rhs_spec)
'''

#: § Example 2: `psum_scatter` the result
B60 = r'''
@jax.shard_map(in_specs=(lhs_spec, rhs_spec),
               out_specs=rhs_spec)
def matmul_psumscatter(lhs_block, rhs_block):
  out_summand = lhs_block @ rhs_block
  return jax.lax.psum_scatter(out_summand, 'i', tiled=True)

out = matmul_psumscatter(lhs, rhs)
print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
'''

#: § Example 2: `psum_scatter` the result
B61 = r'''
@jax.shard_map(in_specs=(lhs_spec, rhs_spec),
               out_specs=rhs_spec)
def matmul_psumscatter_overlapped(lhs_block, rhs_block):
  size = jax.lax.axis_size('i')
  idx = jax.lax.axis_index('i')
  shift = partial(jax.lax.ppermute, axis_name='i',
                  perm=[(i, (i - 1) % size) for i in range(size)])
  lhs_block = lhs_block.reshape(size, -1, lhs_block.shape[1])  # split 1st axis

  out_summand = lhs_block[(idx + 1) % size] @ rhs_block
  for i in range(1, size):
    out_summand = shift(out_summand)
    out_summand += lhs_block[(idx + i + 1) % size] @ rhs_block
  return out_summand
'''

#: § Example 2: `psum_scatter` the result
B62 = r'''
out = matmul_psumscatter_overlapped(lhs, rhs)
print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
'''

#: § Example 2: `psum_scatter` the result
B63 = r'''
@jax.shard_map(in_specs=(lhs_spec, rhs_spec),
               out_specs=rhs_spec)
def matmul_psumscatter_overlapped_bidi(lhs_block, rhs_block):
  size = jax.lax.axis_size('i')
  idx = jax.lax.axis_index('i')
  shift_up = partial(jax.lax.ppermute, axis_name='i',
                     perm=[(i, (i + 1) % size) for i in range(size)])
  shift_dn = partial(jax.lax.ppermute, axis_name='i',
                     perm=[(i, (i - 1) % size) for i in range(size)])

  B = lhs_block.shape[0] // size // 2  # half-size blocks
  lhs_blocks = lambda i, hi: lax.dynamic_slice_in_dim(lhs_block, (2*i+hi) * B, B, 0)

  out_summand_lo = lhs_blocks((idx - 1) % size, 0) @ rhs_block
  out_summand_hi = lhs_blocks((idx + 1) % size, 1) @ rhs_block
  for i in range(1, size):
    out_summand_lo = shift_up(out_summand_lo)
    out_summand_hi = shift_dn(out_summand_hi)
    out_summand_lo += lhs_blocks((idx - i - 1) % size, 0) @ rhs_block
    out_summand_hi += lhs_blocks((idx + i + 1) % size, 1) @ rhs_block
  return jnp.concatenate([out_summand_lo, out_summand_hi])
'''

#: § Example 2: `psum_scatter` the result
B64 = r'''
out = matmul_psumscatter_overlapped_bidi(lhs, rhs)
print(jnp.allclose(out, lhs @ rhs, atol=1e-3, rtol=1e-3))
'''

#: § Neural networks
B65 = r'''
import jax
import jax.numpy as jnp

def predict(params, inputs):
  for W, b in params:
    outputs = jnp.dot(inputs, W) + b
    inputs = jax.nn.relu(outputs)
  return outputs

def loss(params, batch):
  inputs, targets = batch
  predictions = predict(params, inputs)
  return jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
'''

#: § Neural networks
B66 = r'''
def init_layer(key, n_in, n_out):
  k1, k2 = jax.random.split(key)
  W = jax.random.normal(k1, (n_in, n_out)) / jnp.sqrt(n_in)
  b = jax.random.normal(k2, (n_out,))
  return W, b

def init(key, layer_sizes, batch_size):
  key, *keys = jax.random.split(key, len(layer_sizes))
  params = list(map(init_layer, keys, layer_sizes[:-1], layer_sizes[1:]))

  key, *keys = jax.random.split(key, 3)
  inputs = jax.random.normal(keys[0], (batch_size, layer_sizes[0]))
  targets = jax.random.normal(keys[1], (batch_size, layer_sizes[-1]))

  return params, (inputs, targets)
'''

#: § Neural networks
B67 = r'''
layer_sizes = [784, 128, 128, 128, 128, 128, 8]
batch_size = 32

params, batch = init(jax.random.key(0), layer_sizes, batch_size)
'''

#: § 8-way batch data parallelism
B68 = r'''
from jax.sharding import Mesh, PartitionSpec as P

mesh = jax.make_mesh((8,), ('batch',))
jax.set_mesh(mesh)

# replicate initial params on all devices, shard data batch over devices
batch = jax.device_put(batch, NamedSharding(mesh, P('batch')))
params = jax.device_put(params, NamedSharding(mesh, P()))

# adapt the loss function to sum the losses across devices
@jax.shard_map(out_specs=P())
def loss_dp(params, local_batch):
  inputs, targets = local_batch
  predictions = predict(params, inputs)  # use reference 'predict`
  local_loss = jnp.mean(jnp.sum((predictions - targets)**2, axis=-1))
  return jax.lax.pmean(local_loss, 'batch')
'''

#: § 8-way batch data parallelism
B69 = r'''
print(jax.jit(loss)(params, batch))
print(jax.jit(loss_dp)(params, batch))
'''

#: § 8-way batch data parallelism
B70 = r'''
def allclose(a, b):
  return tree_all(tree_map(partial(jnp.allclose, atol=1e-2, rtol=1e-2), a, b))

print(allclose(jax.jit(jax.grad(loss))(params, batch),
               jax.jit(jax.grad(loss_dp))(params, batch)))
'''

#: § 8-way fully sharded data parallelism (FSDP)
B71 = r'''
# shard data batch *and params* over devices
mesh = jax.make_mesh((4,), ('batch',))
jax.set_mesh(mesh)
batch = jax.device_put(batch, P('batch'))
params = jax.device_put(params, P('batch'))

# adapt the prediction function to gather weights just before their use,
# and to re-gather them on the backward pass (rather than saving them)
@partial(jax.remat, policy=lambda op, *_, **__: str(op) != 'all_gather')
def predict_fsdp(params_frag, inputs):
  for W_frag, b_frag in params_frag:
    W = jax.lax.all_gather(W_frag, 'batch', tiled=True)
    b = jax.lax.all_gather(b_frag, 'batch', tiled=True)
    outputs = jnp.dot(inputs, W) + b
    inputs = jax.nn.relu(outputs)
  return outputs

@jax.shard_map(out_specs=P())
def loss_fsdp(local_params, local_batch):
  inputs, targets = local_batch
  predictions = predict_fsdp(local_params, inputs)
  local_loss = jnp.mean(jnp.sum((predictions - targets) ** 2, axis=-1))
  return jax.lax.pmean(local_loss, 'batch')
'''

#: § 8-way fully sharded data parallelism (FSDP)
B72 = r'''
repl_params = jax.device_put(params, P())
repl_batch = jax.device_put(batch, P())
print(jax.jit(loss)(repl_params, repl_batch))
print(jax.jit(loss_fsdp)(params, batch))

print(allclose(jax.jit(jax.grad(loss))(repl_params, repl_batch),
               jax.jit(jax.grad(loss_fsdp))(params, batch)))
'''

#: § FSDP + TP, with `shard_map` at the top level
B74 = r'''
mesh = jax.make_mesh((4, 2), ('batch', 'feats'))
jax.set_mesh(mesh)

batch = jax.device_put(batch, NamedSharding(mesh, P('batch', 'feats')))
params = jax.device_put(params, NamedSharding(mesh, P(('feats', 'batch'))))

# mostly same as previous predict_fsdp definition, except we call gemm_tp
@partial(jax.remat, policy=lambda op, *_, **__: str(op) != 'all_gather')
def predict_fsdp_tp(params_frag, inputs):
  for W_frag, b_frag in params_frag:
    W = jax.lax.all_gather(W_frag, 'batch', tiled=True)
    b = jax.lax.all_gather(b_frag, 'batch', tiled=True)
    block_result = jnp.dot(inputs, W)
    outputs = jax.lax.psum_scatter(block_result, 'feats',
                                   scatter_dimension=1, tiled=True) + b
    inputs = jax.nn.relu(outputs)
  return outputs

@jax.shard_map(in_specs=(P(('feats', 'batch')), P('batch', 'feats')),
               out_specs=P())
def loss_fsdp_tp(local_params, local_batch):
  inputs, targets = local_batch
  predictions = predict_fsdp_tp(local_params, inputs)
  sq_err = jax.lax.psum(jnp.sum((predictions - targets) ** 2, axis=-1), 'feats')
  return jax.lax.pmean(jnp.mean(sq_err), 'batch')
'''

#: § FSDP + TP, with `shard_map` at the top level
B75 = r'''
repl_params = jax.device_put(params, P())
repl_batch = jax.device_put(batch, P())
print(jax.jit(loss)(repl_params, repl_batch))
print(jax.jit(loss_fsdp_tp)(params, batch))

print(allclose(jax.jit(jax.grad(loss))(repl_params, repl_batch),
               jax.jit(jax.grad(loss_fsdp_tp))(params, batch)))
'''

#: § SPMD pipeline parallelism (PP)
B76 = r'''
L = len(params) - 2        # num layers, excluding first and last
N = batch_size             # batch size
F = params[0][0].shape[1]  # num features

# choose some pipeline parameters
S = 2      # number of stages
B = 8      # size of each microbatch
assert L % S == 0, "S (number of stages) must divide L (number of inner layers)"

# compute some useful quantities
M, ragged = divmod(N, B)  # M is number of microbatches
assert not ragged, "B (size of each microbatch) must divide total batch size"
K, ragged = divmod(M, S)  # K is microbatches per stage
assert not ragged, "S (number of stages) must divide number of microbatches"
print(f'{S} stages, {L // S} layer(s) per stage, {L} pipelined layers total')
print(f'{B} examples per microbatch, {M} microbatches total')
'''

#: § SPMD pipeline parallelism (PP)
B77 = r'''
mesh = Mesh(jax.devices()[:S], ('stages',))

def predict_pp(params, inputs):
  (W_first, b_first), inner_params, (W_last, b_last) = params
  inputs = jax.nn.relu(jnp.dot(inputs, W_first) + b_first)
  inputs = spmd_pipeline(lambda Wb, x: jax.nn.relu(x @ Wb[0] + Wb[1]),
                        inner_params, inputs)
  outputs = jnp.dot(inputs, W_last) + b_last
  return outputs

@jax.shard_map(in_specs=((P(), P('stages'), P()), P('stages')), out_specs=P())
def loss_pp(params, batch):
  inputs, targets = batch
  predictions = predict_pp(params, inputs.reshape(K, B, -1)).reshape(K * B, -1)
  local_loss = jnp.mean(jnp.sum((predictions - targets)**2, axis=-1))
  return jax.lax.pmean(local_loss, 'stages')
'''

#: § SPMD pipeline parallelism (PP)
B78 = r'''
def spmd_pipeline(fn, stage_params, inputs):
  stage = jax.lax.axis_index('stages')
  outputs = jnp.zeros_like(inputs) * jnp.nan
  state = jnp.zeros((L // S, B, F)) * jnp.nan
  for i in range(M+L-1):
    state = state.at[0].set(jnp.where(stage == 0, inputs[i % K], state[0]))
    state = jax.vmap(fn)(stage_params, state)
    outputs = outputs.at[(i-L+1) % K].set(jnp.where(stage == S-1, state[-1], outputs[(i-L+1) % K]))
    state, inputs, outputs = shift(i, state, inputs, outputs)
  outputs = jax.lax.ppermute(outputs, 'stages', [(i, (i+1) % S) for i in range(S)])
  return outputs

def shift(i, state, inputs, outputs):
  sh = lambda x, d: jax.lax.ppermute(x, 'stages', [(i, (i+d) % S) for i in range(S)])
  state = jnp.roll(state, +1, axis=0).at[0].set(sh(state[-1], +1))
  if (i % K) == (-1 % K):
    inputs = sh(inputs, +1)
  if ((i-L+1) % K) == (-1 % K):
    outputs = sh(outputs, +1)
  return state, inputs, outputs
'''

#: § SPMD pipeline parallelism (PP)
B79 = r'''
first_params, *inner_params, last_params = params
Ws, bs = zip(*inner_params)
params_stacked = jnp.stack(Ws), jnp.stack(bs)
first_params = jax.device_put(first_params, NamedSharding(mesh, P()))
params_stacked = jax.device_put(params_stacked, NamedSharding(mesh, P('stages')))
last_params = jax.device_put(last_params, NamedSharding(mesh, P()))
params_ = first_params, params_stacked, last_params

batch_ = jax.device_put(batch, NamedSharding(mesh, P('stages')))
'''

#: § SPMD pipeline parallelism (PP)
B80 = r'''
jax.set_mesh(mesh)
print(jax.jit(loss_pp)(params_, batch_))
'''

#: § SPMD pipeline parallelism (PP)
B81 = r'''
_ = jax.jit(jax.grad(loss_pp))(params_, batch_)   # don't crash
'''

# ----------------------------------------------------------------------------------------
# The port's lines that stay different on purpose
# ----------------------------------------------------------------------------------------
TOY_INPUTS = (normal("nx.random.key(0)", "(8, 8)"), normal("nx.random.key(1)", "(8, 4)"))
NN_INPUTS = (normal("k1", "(n_in, n_out)"), normal("k2", "(n_out,)"),
             normal("keys[0]", "(batch_size, layer_sizes[0])"),
             normal("keys[1]", "(batch_size, layer_sizes[-1])"))

# ----------------------------------------------------------------------------------------
# The examples
# ----------------------------------------------------------------------------------------
NUMPY = "import numpy as np\n"                  # block 10's import, which later blocks use
PARTIAL = "from functools import partial\n"    # block 3's
TREE = "from jax.tree_util import tree_map, tree_all\n"   # block 5's
NAMED = "from jax.sharding import NamedSharding\n"        # block 7's
MESH_P = "from jax.sharding import Mesh, PartitionSpec as P\n"   # block 68's
TOY = B49 + PARTIAL + "from jax import lax\n" + NAMED + B50 + B51 + B52
NN = B65 + B66 + B67
NN_DP = NN + NAMED + B68

EXAMPLES = [
    example("shard_map:matmul_basic", "§ So, let's see a shard_map! (blocks 3, 4)", B3 + B4,
            values=("c",), shardings=("a", "b", "c")),
    example("shard_map:matmul_basic_allclose", "§ So, let's see a shard_map! (blocks 3-5)",
            B3 + B4 + B5 + B5_CHECK, values=("_",)),
    example("shard_map:visualize_c", "§ So, let's see a shard_map! (blocks 3, 4, 6)",
            B3 + B4 + B6, pictures=("c",)),
    example("shard_map:matmul_reference", "§ So, let's see a shard_map! (blocks 3-5, 7)",
            B3 + B4 + B5 + B7, values=("c_ref", "_"), shardings=("a", "b", "c_ref")),
    example("shard_map:check_vmap", "§ Rank-reducing vs rank-preserving maps (blocks 3, 5, 9)",
            B3 + B5 + B9, stdout="text"),
    example("shard_map:check_shmap", "§ Rank-reducing vs rank-preserving maps (block 10)",
            B3 + B5 + B10, stdout="text"),
    example("shard_map:in_specs_f1", "§ Controlling how each input is split ... (block 11)",
            B3 + B11, values=("y",), shardings=("x1", "y"), stdout="text"),
    example("shard_map:in_specs_f2", "§ Controlling how each input is split ... (blocks 11, 12)",
            B3 + B11 + B12, values=("y", "x_"), shardings=("y",), stdout="text"),
    example("shard_map:out_specs_tile", "§ Controlling how each output assembled ... (block 13)",
            B3 + B3_AXIS_TYPES + B13, values=("z",), stdout="numbers"),
    example("shard_map:out_specs_psum_f3", "§ Controlling how each output assembled ... "
            "(blocks 11, 14)", B3 + B11 + B14, values=("y3",), shardings=("y3",),
            stdout="text"),
    example("shard_map:out_specs_psum_f4_f5", "§ Controlling how each output assembled ... "
            "(blocks 11, 15)", B3 + B11 + B15, values=("y4", "y5"), shardings=("y4", "y5"),
            stdout="text"),
    example("shard_map:vma_psum", "§ Tracking how values vary ... (blocks 16, 18)",
            B3 + B16 + B18, values=("_",)),
    example("shard_map:vma_typeof", "§ Tracking how values vary ... (block 19)",
            B3 + B16 + B19, values=("_",)),
    example("shard_map:vma_typeof_2d", "§ Tracking how values vary ... (block 20)",
            B3 + B20, values=("_",), stdout="text"),
    example("shard_map:vma_out_specs_error", "§ Tracking how values vary ... (block 21)",
            B3 + B21, absent=("y",), stdout="some"),
    example("shard_map:vma_pcast", "§ Tracking how values vary ... (blocks 21, 22)",
            B3 + B21 + B22),
    example("shard_map:vma_scan_carry_error", "§ Tracking how values vary ... (block 24)",
            B3 + B24, stdout="some"),
    example("shard_map:vma_scan_pcast", "§ Tracking how values vary ... (block 25)",
            B3 + B25, values=("_",)),
    example("shard_map:psum", "§ Collectives tutorial, psum (blocks 31-33)", B31 + B32 + B33,
            values=("y",)),
    example("shard_map:psum_2d", "§ Collectives tutorial, psum (block 35)",
            B31 + NUMPY + B35, values=("y",)),
    example("shard_map:psum_2d_both_axes", "§ Collectives tutorial, psum (blocks 35, 36)",
            B31 + NUMPY + B35 + B36, values=("y",)),
    example("shard_map:all_gather_tiled", "§ Collectives tutorial, all_gather (block 37)",
            B31 + B32 + B37, values=("y",)),
    example("shard_map:all_gather_untiled", "§ Collectives tutorial, all_gather (blocks 37, 38)",
            B31 + B32 + B37 + B38, values=("y",)),
    example("shard_map:psum_scatter", "§ Collectives tutorial, psum_scatter (block 40)",
            B31 + B32 + B40, values=("y",)),
    example("shard_map:ppermute", "§ Collectives tutorial, ppermute (block 43)",
            B31 + B32 + B43, values=("y",)),
    example("shard_map:psum_scatter_by_ppermute", "§ Collectives tutorial, ppermute "
            "(blocks 45, 46)", B31 + PARTIAL + B32 + B45 + B46, values=("y",)),
    example("shard_map:all_to_all", "§ Collectives tutorial, all_to_all (block 47)",
            B31 + B32 + B47, values=("y",)),
    example("shard_map:matmul_allgather", "§ Toy examples, Example 1 (blocks 49-54)",
            TOY + B53 + B54, values=("out",), shardings=("lhs", "rhs", "out"),
            stdout="numbers", deviations=TOY_INPUTS, rtol=1e-4, atol=1e-4),
    example("shard_map:matmul_allgather_overlapped", "§ Toy examples, Example 1 "
            "(blocks 49-52, 55, 56)", TOY + B55 + B56, values=("out",), stdout="numbers",
            deviations=TOY_INPUTS, rtol=1e-4, atol=1e-4),
    example("shard_map:matmul_allgather_overlapped_bidi", "§ Toy examples, Example 1 "
            "(blocks 49-52, 57, 58)", TOY + B57 + B58, values=("out",), stdout="numbers",
            deviations=TOY_INPUTS, rtol=1e-4, atol=1e-4),
    example("shard_map:matmul_psumscatter", "§ Toy examples, Example 2 (blocks 49-52, 59, 60)",
            TOY + B59 + B60, values=("out",), shardings=("lhs", "rhs", "out"),
            stdout="numbers", deviations=TOY_INPUTS, rtol=1e-4, atol=1e-4),
    example("shard_map:matmul_psumscatter_overlapped", "§ Toy examples, Example 2 "
            "(blocks 49-52, 59, 61, 62)", TOY + B59 + B61 + B62, values=("out",),
            stdout="numbers", deviations=TOY_INPUTS, rtol=1e-4, atol=1e-4),
    example("shard_map:matmul_psumscatter_overlapped_bidi", "§ Toy examples, Example 2 "
            "(blocks 49-52, 59, 63, 64)", TOY + B59 + B63 + B64, values=("out",),
            stdout="numbers", deviations=TOY_INPUTS, rtol=1e-4, atol=1e-4),
    example("shard_map:nn_data_parallel", "§ Neural networks, 8-way batch data parallelism "
            "(blocks 65-69)", NN_DP + B69, values=("params", "batch"),
            shardings=("params", "batch"), stdout="numbers", deviations=NN_INPUTS,
            rtol=1e-4, atol=1e-4),
    example("shard_map:nn_data_parallel_grad", "§ Neural networks, 8-way batch data "
            "parallelism (blocks 65-68, 70)", PARTIAL + TREE + NN_DP + B70, stdout="numbers",
            deviations=NN_INPUTS, rtol=1e-4, atol=1e-4),
    example("shard_map:nn_fsdp", "§ Neural networks, 8-way fully sharded data parallelism "
            "(blocks 65-68, 70-72)", PARTIAL + TREE + NN_DP + B70 + B71 + B72,
            shardings=("params", "batch"), stdout="numbers", deviations=NN_INPUTS,
            rtol=1e-4, atol=1e-4),
    example("shard_map:nn_fsdp_tp", "§ Neural networks, FSDP + TP (blocks 65-68, 70, 74, 75)",
            PARTIAL + TREE + NN_DP + B70 + B74 + B75, shardings=("params", "batch"),
            stdout="numbers", deviations=NN_INPUTS, rtol=1e-4, atol=1e-4),
    example("shard_map:nn_pipeline", "§ Neural networks, SPMD pipeline parallelism "
            "(blocks 65-67, 76-81)", MESH_P + NAMED + NN + B76 + B77 + B78 + B79 + B80 + B81,
            values=("_", "params_"), shardings=("params_", "batch_"), stdout="numbers",
            deviations=NN_INPUTS, rtol=1e-4, atol=1e-4),
]
