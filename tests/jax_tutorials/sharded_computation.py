"""Examples from JAX's "Introduction to parallel programming" (docs/sharded-computation.md,
removed from JAX's docs in April 2026 for docs/parallel.md).

Copyright 2024 The JAX Authors, Apache-2.0; read at the commit below, the last before its
removal. Each ``B<n>`` is the n-th fenced block of the page, verbatim."""
from jax_tutorials import example, missing, narrow

SOURCE = "jax-ml/jax eaa32d470f4c7e062feed96175d6fdd976b52fdc docs/sharded-computation.md"

#: § Introduction to parallel programming
B1 = r'''
import jax

jax.config.update('jax_num_cpu_devices', 8)
'''

#: § Key concept: Data sharding
B3 = r'''
import numpy as np
import jax.numpy as jnp

arr = jnp.arange(32.0).reshape(4, 8)
'''
#: the rest of block 3
B3_DEVICES = r'''
arr.devices()
'''

#: § Key concept: Data sharding
B4 = r'''
arr.sharding
'''

#: § Key concept: Data sharding
B5 = r'''
jax.debug.visualize_array_sharding(arr)
'''

#: § Key concept: Data sharding
B6 = r'''
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((2, 4), ('x', 'y'))
sharding = jax.sharding.NamedSharding(mesh, P('x', 'y'))
print(sharding)
'''

#: § Key concept: Data sharding
B7 = r'''
arr_sharded = jax.device_put(arr, sharding)

print(arr_sharded)
'''
#: the rest of block 7
B7_VISUALIZE = r'''
jax.debug.visualize_array_sharding(arr_sharded)
'''

#: § 1. Automatic parallelism via `jit`
B8 = r'''
@jax.jit
def f_elementwise(x):
  return 2 * jnp.sin(x) + 1

result = f_elementwise(arr_sharded)

print("shardings match:", result.sharding == arr_sharded.sharding)
'''

#: § 1. Automatic parallelism via `jit`
B9 = r'''
@jax.jit
def f_contract(x):
  return x.sum(axis=0)

result = f_contract(arr_sharded)
jax.debug.visualize_array_sharding(result)
print(result)
'''

#: § 2. Explicit sharding
B10 = r'''
some_array = np.arange(8)
print(f"JAX-level type of some_array: {jax.typeof(some_array)}")
'''

#: § 2. Explicit sharding
B11 = r'''
@jax.jit
def foo(x):
  print(f"JAX-level type of x during tracing: {jax.typeof(x)}")
  return x + x

foo(some_array)
'''

#: § 2. Explicit sharding
B12 = r'''
from jax.sharding import AxisType

mesh = jax.make_mesh((2, 4), ("X", "Y"),
                     axis_types=(AxisType.Explicit, AxisType.Explicit))
'''

#: § 2. Explicit sharding
B13 = r'''
replicated_array = np.arange(8).reshape(4, 2)
sharded_array = jax.device_put(replicated_array, jax.NamedSharding(mesh, P("X", None)))

print(f"replicated_array type: {jax.typeof(replicated_array)}")
print(f"sharded_array type: {jax.typeof(sharded_array)}")
'''

#: § 2. Explicit sharding
B14 = r'''
arg0 = jax.device_put(np.arange(4).reshape(4, 1),
                      jax.NamedSharding(mesh, P("X", None)))
arg1 = jax.device_put(np.arange(8).reshape(1, 8),
                      jax.NamedSharding(mesh, P(None, "Y")))

@jax.jit
def add_arrays(x, y):
  ans = x + y
  print(f"x sharding: {jax.typeof(x)}")
  print(f"y sharding: {jax.typeof(y)}")
  print(f"ans sharding: {jax.typeof(ans)}")
  return ans

with jax.set_mesh(mesh):
  add_arrays(arg0, arg1)
'''

#: § 3. Manual parallelism with `shard_map`
B15 = r'''
mesh = jax.make_mesh((8,), ('x',))

f_elementwise_sharded = jax.shard_map(
    f_elementwise,
    mesh=mesh,
    in_specs=P('x'),
    out_specs=P('x'))

arr = jax.device_put(jnp.arange(32), jax.NamedSharding(mesh, P('x')))
f_elementwise_sharded(arr)
'''

#: § 3. Manual parallelism with `shard_map`
B16 = r'''
x = jax.device_put(jnp.arange(32), jax.NamedSharding(mesh, P('x')))
print(f"global shape: {x.shape=}")

def f(x):
  print(f"device local shape: {x.shape=}")
  return x * 2

y = jax.shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(x)
'''

#: § 3. Manual parallelism with `shard_map`
B17 = r'''
def f(x):
  return jnp.sum(x, keepdims=True)

jax.shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(x)
'''

#: § 3. Manual parallelism with `shard_map`
B18 = r'''
def f(x):
  sum_in_shard = x.sum()
  return jax.lax.psum(sum_in_shard, 'x')

jax.shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P())(x)
'''

#: § Comparing the three approaches
B19 = r'''
@jax.jit
def layer(x, weights, bias):
  return jax.nn.sigmoid(x @ weights + bias)
'''

#: § Comparing the three approaches
B20 = r'''
import numpy as np
rng = np.random.default_rng(0)

x = rng.normal(size=(32,))
weights = rng.normal(size=(32, 4))
bias = rng.normal(size=(4,))

layer(x, weights, bias)
'''

#: § Comparing the three approaches
B21 = r'''
mesh = jax.make_mesh((8,), ('x',))
x_sharded = jax.device_put(x, jax.NamedSharding(mesh, P('x')))
weights_sharded = jax.device_put(weights, jax.NamedSharding(mesh, P()))

layer(x_sharded, weights_sharded, bias)
'''

#: § Comparing the three approaches
B22 = r'''
explicit_mesh = jax.make_mesh((8,), ('X',), axis_types=(AxisType.Explicit,))

x_sharded = jax.device_put(x, jax.NamedSharding(explicit_mesh, P('X')))
weights_sharded = jax.device_put(weights, jax.NamedSharding(explicit_mesh, P()))

@jax.jit
def layer_auto(x, weights, bias):
  print(f"x sharding: {jax.typeof(x)}")
  print(f"weights sharding: {jax.typeof(weights)}")
  print(f"bias sharding: {jax.typeof(bias)}")
  out = layer(x, weights, bias)
  print(f"out sharding: {jax.typeof(out)}")
  return out

with jax.set_mesh(explicit_mesh):
  layer_auto(x_sharded, weights_sharded, bias)
'''

#: § Comparing the three approaches
B23 = r'''
from functools import partial

@jax.jit
@partial(jax.shard_map, mesh=mesh,
         in_specs=(P('x'), P('x', None), P(None)),
         out_specs=P(None))
def layer_sharded(x, weights, bias):
  return jax.nn.sigmoid(jax.lax.psum(x @ weights, 'x') + bias)

rep_s = jax.NamedSharding(mesh, P())
sharded_s = jax.NamedSharding(mesh, P('x'))
x, weights, bias = jax.device_put((x, weights, bias), (sharded_s, sharded_s, rep_s))
layer_sharded(x, weights, bias)
'''

#: § Controlling data and computation placement on devices
B25 = r'''
import jax
from jax import device_put
arr = device_put(1, jax.devices()[2])  # doctest: +SKIP
print(arr.devices())  # doctest: +SKIP
'''  # the doctest's statements


AXIS_TYPE = "from jax.sharding import AxisType\n"   # block 12's import, which block 22 uses
#: rng's f64 arrays as JAX takes them (f32)
RNG = (narrow("rng.normal(size=(32,))"), narrow("rng.normal(size=(32, 4))"),
       narrow("rng.normal(size=(4,))"))
A4, A8 = narrow("np.arange(4)", "int32"), narrow("np.arange(8)", "int32")
SOME = (A8,)
#: the page's arrays, placed (blocks 1, 3, 6, 7); its mesh needs make_mesh
PLACED = B1 + B3 + B6 + B7

#: block 6's print of a NamedSharding, set-up for later blocks that compare printed text: a
#: mesh prints as nxpy's repr (docs/sharding_from_jax.md, "What stays different")
QUIET_B6 = ("print(sharding)\n", "", "a NamedSharding prints its mesh with nxpy's repr")

EXAMPLES = [
    example("sharded_computation:devices", "§ Key concept: Data sharding (blocks 1, 3)",
            B1 + B3 + B3_DEVICES, values=("arr",)),
    example("sharded_computation:single_device_sharding", "§ Key concept: Data sharding "
            "(blocks 1, 3, 4)", B1 + B3 + B4, shardings=("arr",),
            xfail=missing("SingleDeviceSharding (.sharding of an unplaced array)")),
    example("sharded_computation:visualize_unsharded", "§ Key concept: Data sharding "
            "(blocks 1, 3, 5)", B1 + B3 + B5, pictures=("arr",)),
    example("sharded_computation:named_sharding", "§ Key concept: Data sharding "
            "(blocks 1, 3, 6)", B1 + B3 + B6, stdout="some"),
    example("sharded_computation:device_put", "§ Key concept: Data sharding (blocks 1, 3, 6, 7)",
            PLACED + B7_VISUALIZE, values=("arr_sharded",), shardings=("arr_sharded",),
            pictures=("arr_sharded",)),
    example("sharded_computation:jit_elementwise", "§ 1. Automatic parallelism via jit "
            "(block 8)", PLACED + B8, values=("result",), shardings=("result",),
            stdout="numbers"),
    example("sharded_computation:jit_contract", "§ 1. Automatic parallelism via jit (block 9)",
            PLACED + B9, values=("result",), shardings=("result",), pictures=("result",)),
    example("sharded_computation:typeof", "§ 2. Explicit sharding (block 10)",
            B1 + B3 + B10, deviations=SOME, stdout="text"),
    example("sharded_computation:typeof_traced", "§ 2. Explicit sharding (blocks 10, 11)",
            B1 + B3 + B10 + B11, values=("_",), deviations=SOME, stdout="text"),
    example("sharded_computation:explicit_mesh_typeof", "§ 2. Explicit sharding "
            "(blocks 12, 13)", B1 + B3 + B6 + B12 + B13, deviations=(A8,),
            values=("sharded_array",), shardings=("sharded_array",), stdout="text",
            edits=(QUIET_B6,)),
    example("sharded_computation:explicit_add", "§ 2. Explicit sharding (blocks 12, 14)",
            B1 + B3 + B6 + B12 + B14, deviations=(A4, A8), values=("arg0", "arg1"), stdout="text",
            edits=(QUIET_B6,)),
    example("sharded_computation:shard_map_elementwise", "§ 3. Manual parallelism with "
            "shard_map (block 15)", PLACED + B8 + B15, values=("_",), shardings=("_",)),
    example("sharded_computation:shard_map_local_shape", "§ 3. Manual parallelism with "
            "shard_map (blocks 15, 16)", PLACED + B8 + B15 + B16, values=("y",),
            shardings=("y",), stdout="numbers"),
    example("sharded_computation:shard_map_keepdims", "§ 3. Manual parallelism with "
            "shard_map (blocks 15-17)", PLACED + B8 + B15 + B16 + B17, values=("_",),
            shardings=("_",)),
    example("sharded_computation:shard_map_psum", "§ 3. Manual parallelism with shard_map "
            "(blocks 15, 16, 18)", PLACED + B8 + B15 + B16 + B18, values=("_",),
            shardings=("_",)),
    example("sharded_computation:layer", "§ Comparing the three approaches (blocks 19, 20)",
            B1 + B3 + B19 + B20, deviations=RNG, values=("_",)),
    example("sharded_computation:layer_auto", "§ Comparing the three approaches "
            "(blocks 19-21)", B1 + B3 + B6 + B19 + B20 + B21, deviations=RNG, values=("_",),
            shardings=("_",)),
    example("sharded_computation:layer_explicit", "§ Comparing the three approaches "
            "(blocks 19, 20, 22)", B1 + B3 + B6 + AXIS_TYPE + B19 + B20 + B22,
            deviations=RNG, values=("x_sharded",), stdout="text", edits=(QUIET_B6,)),
    example("sharded_computation:layer_shard_map", "§ Comparing the three approaches "
            "(blocks 19-21, 23)", B1 + B3 + B6 + B19 + B20 + B21 + B23, deviations=RNG,
            values=("_",), shardings=("_", "x", "weights", "bias")),
    example("sharded_computation:device_put_device", "§ Controlling data and computation "
            "placement on devices (block 25)", B25, values=("arr",), stdout="text"),
]
