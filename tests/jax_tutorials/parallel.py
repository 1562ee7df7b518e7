"""Examples from JAX's "Distributed arrays and automatic parallelization" (docs/parallel.md,
the page that replaced sharded-computation, the distributed-arrays notebook and
explicit-sharding in 2026).

Copyright 2021 The JAX Authors, Apache-2.0; read at the commit below. Each ``B<n>`` is the
n-th fenced block of the page, verbatim (its first block is the licence, its second
``from __future__ import annotations``, which only its illustrative class blocks 7 and 8
need)."""
from jax_tutorials import example, missing, narrow

SOURCE = "jax-ml/jax cec06d116c05f0d52adfceee3d3b730fdbcb0ce5 docs/parallel.md"

#: § Distributed arrays and automatic parallelization
B3 = r'''
import jax
import jax.numpy as jnp
jax.config.update('jax_num_cpu_devices', 8)
'''

#: § Distributed arrays and automatic parallelization
B4 = r'''
jax.set_mesh(jax.make_mesh((4, 2), ('X', 'Y')))  # explicit mode by default

x = jnp.arange(8 * 4.).reshape(8, 4)
x = jax.device_put(x, jax.P('X', 'Y'))
'''
#: the rest of block 4
B4_TYPEOF = r'''
print(jax.typeof(x))  # f32[8@X, 4@Y]
'''

#: § Distributed arrays and automatic parallelization
B5 = r'''
jax.debug.visualize_array_sharding(x)
'''

#: § Distributed arrays and automatic parallelization
B6 = r'''
y = jnp.sin(x).T
print(jax.typeof(y))  # f32[4@Y, 8@X]
'''

#: § A `Mesh` is a grid of devices with named axes
B9 = r'''
mesh = jax.make_mesh((4, 2), ('X', 'Y'))
print(mesh)
'''

#: § A `Mesh` is a grid of devices with named axes
B10 = r'''
jax.set_mesh(mesh)
'''

#: § A `Mesh` is a grid of devices with named axes
B11 = r'''
@jax.jit
def f(x):
  abstract_mesh = jax.sharding.AbstractMesh((8,), ('A',), (jax.sharding.AxisType.Explicit,))
  with jax.sharding.use_abstract_mesh(abstract_mesh):
    y = jax.reshard(x, jax.P('A', None))
    return y * 2

z = f(x)
print(jax.typeof(z))  # f32[8@A, 4]
'''

#: § A `Sharding` describes how array values are laid out over a `Mesh`
B12 = r'''
print(x.sharding)
jax.debug.visualize_array_sharding(x)
'''

#: § A `Sharding` describes how array values are laid out over a `Mesh`
B13 = r'''
for s in x.addressable_shards:
  print(s.device, s.data, sep='\n', end='\n\n')
'''

#: § A `Sharding` describes how array values are laid out over a `Mesh`
B14 = r'''
y = jax.device_put(x, jax.P('Y', 'X'))
print(y.sharding)
jax.debug.visualize_array_sharding(y)
'''

#: § A `Sharding` describes how array values are laid out over a `Mesh`
B15 = r'''
y = jax.device_put(x, jax.P('X', None))
print(y.sharding)
jax.debug.visualize_array_sharding(y)
'''

#: § A `Sharding` describes how array values are laid out over a `Mesh`
B16 = r'''
for s in y.addressable_shards:
  print(s.device, s.data, sep='\n', end='\n\n')
'''

#: § A `Sharding` describes how array values are laid out over a `Mesh`
B17 = r'''
y = jax.device_put(x, jax.P(('X', 'Y')))
print(y.sharding)
jax.debug.visualize_array_sharding(y)
'''

#: § A `Sharding` describes how array values are laid out over a `Mesh`
B18 = r'''
y = jax.device_put(x, jax.P('X', None, unreduced={'Y'}))
print(y.sharding)
'''

#: § A `Sharding` describes how array values are laid out over a `Mesh`
B19 = r'''
for s in y.addressable_shards:
  print(s.device, s.data, sep='\n', end='\n\n')
'''

#: § A `Sharding` describes how array values are laid out over a `Mesh`
B20 = r'''
mesh2 = jax.make_mesh((8,), ('A',))
z = jax.device_put(x, jax.NamedSharding(mesh2, jax.P('A', None)))
print(z.sharding)
print(y.sharding)
'''

#: § Explicit sharding mode makes sharding queryable at trace-time
B21 = r'''
print(jax.typeof(x).sharding)
'''

#: § Explicit sharding mode makes sharding queryable at trace-time
B22 = r'''
jax.jit(lambda x: print(jax.typeof(x).sharding))(x)
'''

#: § Explicit sharding mode makes sharding queryable at trace-time
B24 = r'''
arg0 = jax.device_put(np.arange(4).reshape(4, 1), jax.P("X", None))
arg1 = jax.device_put(np.arange(8).reshape(1, 8), jax.P(None, "Y"))

result = arg0 + arg1

print(f"{jax.typeof(arg0)=!s}")
print(f"{jax.typeof(arg1)=!s}")
print(f"{jax.typeof(result)=!s}")
'''

#: § Explicit sharding mode makes sharding queryable at trace-time
B25 = r'''
@jax.jit
def add_arrays(x, y):
  ans = x + y
  print(f"{jax.typeof(arg0)=!s}")
  print(f"{jax.typeof(arg1)=!s}")
  print(f"{jax.typeof(result)=!s}")
  return ans

add_arrays(arg0, arg1)
'''

#: § Explicit sharding mode makes sharding queryable at trace-time
B26 = r'''
x = jax.random.normal(jax.random.key(0), (8, 4),
                      out_sharding=jax.P('X', 'Y'))
print(jax.typeof(x))
'''

#: § Explicit sharding mode makes sharding queryable at trace-time
B27 = r'''
y = x.sum(0)
print(jax.typeof(y))
'''

#: § Explicit sharding mode makes sharding queryable at trace-time
B28 = r'''
compile_txt = jax.jit(lambda x: x.sum(0)).lower(x).compile().as_text()
print('all-reduce(' in compile_txt)
'''

#: § Result shardings follow simple rules, or error and require annotation
B29 = r'''
x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4), jax.P(None, 'X'))
y = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('X', None))

try:
  jnp.dot(x, y)
except Exception as e:
  print("ERROR!")
  print(e)
'''

#: § Result shardings follow simple rules, or error and require annotation
B30 = r'''
z = jnp.dot(x, y, out_sharding=jax.P('X', None))

print(jax.typeof(z))
'''

#: § With `@auto_axes` the compiler chooses shardings within the decorated function
B31 = r'''
from jax.sharding import auto_axes, explicit_axes

x = jax.device_put(np.arange(16).reshape(4, 4), jax.P("X", None))
y = jax.device_put(np.arange(16).reshape(4, 4), jax.P(None, "X"))

try:
  x + y
except Exception as e:
  print("ERROR!")
  print(e)
'''

#: § With `@auto_axes` the compiler chooses shardings within the decorated function
B32 = r'''
@auto_axes
def add2(x, y):
  print("We're in auto-sharding mode here. This is the current mesh:\n"
        f"{jax.sharding.get_abstract_mesh()}")
  return x + y

result = add2(x, y, out_sharding=jax.P("X", None))
print(f"Result type: {jax.typeof(result)}")
'''

#: § Auto sharding mode decides shardings automatically during compilation
B33 = r'''
Auto = jax.sharding.AxisType.Auto
auto_mesh = jax.make_mesh((4, 2), ('X', 'Y'), (Auto, Auto))
jax.set_mesh(auto_mesh)

x = jax.device_put(jnp.arange(8 * 4. ).reshape(8, 4 ), jax.P(None, 'X'))
y = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('X', None))

z = jnp.dot(x, y)  # not an error!
'''

#: § Auto sharding mode decides shardings automatically during compilation
B34 = r'''
print(z.sharding)  # works at the top-level only (i.e. outside `jit`)
'''

#: § Auto sharding mode decides shardings automatically during compilation
B35 = r'''
@jax.jit
def f(x, y):
  z = jnp.dot(x, y)
  z = jax.lax.with_sharding_constraint(z, jax.P('X', None))
  return z

z = f(x, y)
print(z.sharding)
'''

#: § Auto sharding mode decides shardings automatically during compilation
B36 = r'''
@explicit_axes
def explicit_g(y):
  print(f'mesh inside g: {jax.sharding.get_abstract_mesh()}')
  print(f'y.sharding inside g: {jax.typeof(y) = }')
  z = y * 2
  print(f'z.sharding inside g: {jax.typeof(z) = }', end='\n\n')
  return z

@jax.jit
def f(arr1):
  print(f'mesh inside f: {jax.sharding.get_abstract_mesh()}', end='\n\n')
  x = jnp.sin(arr1)
  z = explicit_g(x, in_sharding=jax.P("X", "Y"))
  return z + 1

x = jax.device_put(np.arange(16).reshape(4, 4), jax.P("X", "Y"))
f(x)
'''

#: § Concrete array shardings can mention `Auto` mesh axis
B37 = r'''
jax.set_mesh(jax.make_mesh((4, 2), ('X', 'Y')))  # Explicit mode

def compare_shardings(x):
  print(f"=== with mesh: {jax.sharding.get_abstract_mesh()} ===")
  print(f"Concrete value sharding: {x.sharding.spec}")
  print(f"Type-specified sharding: {jax.typeof(x).sharding.spec}\n")

my_array = jnp.sin(jax.device_put(np.arange(8), jax.P("X")))
compare_shardings(my_array)

@auto_axes
def check_in_auto_context(x):
  compare_shardings(x)
  return x

check_in_auto_context(my_array, out_sharding=jax.P("X"))
'''

#: § Manual mode lets you write explicit collectives with a per-device view of data
B38 = r'''
mesh = jax.make_mesh((4, 2), ('X', 'Y'))
jax.set_mesh(mesh)

x = jax.device_put(jnp.arange(8 * 4. ).reshape(8, 4 ), jax.P(None, 'X'))
y = jax.device_put(jnp.arange(4 * 16.).reshape(4, 16), jax.P('X', None))

@jax.shard_map(out_specs=jax.P('X', None))
def matmul(x_shard, y_shard):
  z_summand = jnp.dot(x_shard, y_shard)
  return jax.lax.psum_scatter(z_summand, 'X', tiled=True)

z = matmul(x, y)
print(jax.typeof(z))

z_ref = jnp.dot(x, y, out_sharding=jax.P('X', None))
print(jnp.allclose(z_ref, z))
'''


NUMPY = "import numpy as np\n"                                   # block 8's import
AUTO_AXES = "from jax.sharding import auto_axes, explicit_axes\n"  # block 31's
A4, A8, A16 = (narrow(f"np.arange({n})", "int32") for n in (4, 8, 16))
#: jax.random.normal(key, shape, out_sharding=) as nxpy.random spells it (normal_split)
RANDOM = (("nx.random.normal(nx.random.key(0), (8, 4),",
           "nx.random.normal_split(nx.random.key(0), shape=(8, 4),",
           "nxpy.random is Nx.Random's API (jax.random.normal(key, shape) is its "
           "normal_split(key, shape=shape))"),)
X = B3 + B4                             # the page's x, on its explicit 4 x 2 mesh

EXAMPLES = [
    example("parallel:typeof", "§ Distributed arrays ... (blocks 3, 4)", X + B4_TYPEOF,
            values=("x",), shardings=("x",), stdout="text"),
    example("parallel:visualize", "§ Distributed arrays ... (blocks 3-5)", X + B5,
            pictures=("x",)),
    example("parallel:sin_transpose", "§ Distributed arrays ... (blocks 3, 4, 6)", X + B6,
            values=("y",), shardings=("y",), stdout="text"),
    example("parallel:mesh", "§ A Mesh is a grid of devices with named axes (blocks 9, 10)",
            B3 + B9 + B10, stdout="some"),
    example("parallel:abstract_mesh", "§ A Mesh is a grid of devices with named axes "
            "(block 11)", X + B9 + B10 + B11, values=("z",), stdout="text",
            xfail="not in issue 45: AbstractMesh, use_abstract_mesh"),
    example("parallel:sharding", "§ A Sharding describes how array values are laid out "
            "(block 12)", X + B12, shardings=("x",), pictures=("x",)),
    example("parallel:addressable_shards", "§ A Sharding describes how array values are "
            "laid out (block 13)", X + B13, stdout="numbers"),
    example("parallel:spec_y_x", "§ A Sharding describes how array values are laid out "
            "(block 14)", X + B14, values=("y",), shardings=("y",), pictures=("y",)),
    example("parallel:spec_x_none", "§ A Sharding describes how array values are laid out "
            "(block 15)", X + B15, values=("y",), shardings=("y",), pictures=("y",)),
    example("parallel:spec_xy", "§ A Sharding describes how array values are laid out "
            "(block 17)", X + B17, values=("y",), shardings=("y",), pictures=("y",)),
    example("parallel:unreduced", "§ A Sharding describes how array values are laid out "
            "(blocks 18, 19)", X + B18 + B19, stdout="numbers",
            xfail=missing("P(..., unreduced=)")),
    example("parallel:another_mesh", "§ A Sharding describes how array values are laid out "
            "(blocks 17, 20)", X + B17 + B20, values=("z",), shardings=("z", "y")),
    example("parallel:typeof_sharding", "§ Explicit sharding mode makes sharding queryable "
            "at trace-time (blocks 21, 22)", X + B21 + B22, stdout="some"),
    example("parallel:binary_op_rule", "§ Explicit sharding mode makes sharding queryable "
            "at trace-time (block 24)", X + NUMPY + B24, values=("result",),
            shardings=("result",), stdout="text", deviations=(A4, A8)),
    example("parallel:binary_op_rule_jit", "§ Explicit sharding mode makes sharding "
            "queryable at trace-time (blocks 24, 25)", X + NUMPY + B24 + B25, values=("_",),
            shardings=("_",), stdout="text", deviations=(A4, A8)),
    example("parallel:random_out_sharding", "§ Explicit sharding mode makes sharding "
            "queryable at trace-time (blocks 26, 27)", X + B26 + B27, values=("x", "y"),
            shardings=("x", "y"), stdout="text", deviations=RANDOM),
    example("parallel:compiled_all_reduce", "§ Explicit sharding mode makes sharding "
            "queryable at trace-time (blocks 26, 28)", X + B26 + B28, stdout="text",
            deviations=RANDOM,
            xfail="not in issue 45: jit(f).lower(x).compile().as_text()"),
    example("parallel:dot_error", "§ Result shardings follow simple rules, or error and "
            "require annotation (block 29)", X + B29, stdout="some"),
    example("parallel:dot_out_sharding", "§ Result shardings follow simple rules, or error "
            "and require annotation (blocks 29, 30)", X + B29 + B30, values=("z",),
            shardings=("z",), stdout="some"),
    example("parallel:auto_axes", "§ With @auto_axes the compiler chooses shardings "
            "(blocks 31, 32)", X + NUMPY + B31 + B32, values=("result",), shardings=("result",),
            stdout="some", deviations=(A16,)),
    example("parallel:auto_mesh_dot", "§ Auto sharding mode decides shardings automatically "
            "(blocks 33, 34)", B3 + B33 + B34, values=("z",), shardings=("z",),
            stdout="some"),
    example("parallel:auto_mesh_constraint", "§ Auto sharding mode decides shardings "
            "automatically (blocks 33, 35)", B3 + B33 + B35, values=("z",), shardings=("z",),
            stdout="some"),
    example("parallel:explicit_axes", "§ Auto sharding mode decides shardings automatically "
            "(blocks 31, 33, 36)", B3 + NUMPY + AUTO_AXES + B33 + B36, values=("_",),
            shardings=("_",), stdout="some", deviations=(A16,)),
    example("parallel:concrete_vs_type_sharding", "§ Concrete array shardings can mention "
            "Auto mesh axis (blocks 31, 37)", B3 + NUMPY + AUTO_AXES + B37,
            values=("my_array",), shardings=("my_array",), stdout="some", deviations=(A8,)),
    example("parallel:shard_map_matmul", "§ Manual mode lets you write explicit collectives "
            "(block 38)", B3 + B38, values=("z",), shardings=("z",), stdout="numbers"),
]
