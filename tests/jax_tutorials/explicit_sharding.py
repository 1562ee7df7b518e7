"""Examples from JAX's "Explicit sharding (a.k.a. sharding in types)"
(docs/notebooks/explicit-sharding.md, replaced in JAX's docs by docs/parallel.md in 2026).

Copyright The JAX Authors, Apache-2.0; read at the commit below, the last before its
removal. Each ``B<n>`` is the n-th fenced block of the page, verbatim. Every example needs
issue 45 item 4 (the page's import line names AxisType, get_abstract_mesh and reshard)."""
from jax_tutorials import example, narrow

SOURCE = "jax-ml/jax 220f0751106a31289082d7d0060eff2a8d3facfc docs/notebooks/explicit-sharding.md"

#: § Explicit sharding (a.k.a. "sharding in types")
B1 = r'''
import jax
import numpy as np
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P, AxisType, get_abstract_mesh, reshard

jax.config.update('jax_num_cpu_devices', 8)
'''

#: § Setting up an explicit mesh
B2 = r'''
some_array = np.arange(8)
print(f"JAX-level type of some_array: {jax.typeof(some_array)}")
'''

#: § Setting up an explicit mesh
B3 = r'''
@jax.jit
def foo(x):
  print(f"JAX-level type of x during tracing: {jax.typeof(x)}")
  return x + x

foo(some_array)
'''

#: § Setting up an explicit mesh
B4 = r'''
mesh = jax.make_mesh((2, 4), ("X", "Y"),
                     axis_types=(AxisType.Explicit, AxisType.Explicit))
jax.set_mesh(mesh)

print(f"Current mesh is: {get_abstract_mesh()}")
'''

#: § Setting up an explicit mesh
B5 = r'''
replicated_array = np.arange(8).reshape(4, 2)
sharded_array = reshard(replicated_array, P("X", None))

print(f"replicated_array type: {jax.typeof(replicated_array)}")
print(f"sharded_array type: {jax.typeof(sharded_array)}")
'''

#: § Setting up an explicit mesh
B6 = r'''
arg0 = reshard(np.arange(4).reshape(4, 1), P("X", None))
arg1 = reshard(np.arange(8).reshape(1, 8), P(None, "Y"))

result = arg0 + arg1

print(f"arg0 sharding: {jax.typeof(arg0)}")
print(f"arg1 sharding: {jax.typeof(arg1)}")
print(f"result sharding: {jax.typeof(result)}")
'''

#: § Setting up an explicit mesh
B7 = r'''
@jax.jit
def add_arrays(x, y):
  ans = x + y
  print(f"x sharding: {jax.typeof(x)}")
  print(f"y sharding: {jax.typeof(y)}")
  print(f"ans sharding: {jax.typeof(ans)}")
  return ans

add_arrays(arg0, arg1)
'''

#: § Working around unimplemented sharding rules using `auto_axes`
B8 = r'''
from jax.sharding import auto_axes, explicit_axes

some_x = reshard(np.arange(16).reshape(4, 4), P("X", None))
some_y = reshard(np.arange(16).reshape(4, 4), P(None, "X"))

try:
  some_x + some_y
except Exception as e:
  print("ERROR!")
  print(e)

print("=== try again with auto_axes ===")

@auto_axes
def add_with_out_sharding_kwarg(x, y):
  print(f"We're in auto-sharding mode here. This is the current mesh: {get_abstract_mesh()}")
  return x + y

result = add_with_out_sharding_kwarg(some_x, some_y, out_sharding=P("X", None))
print(f"Result type: {jax.typeof(result)}")
'''

#: § Using a mixture of sharding modes
B9 = r'''
print(f"Current mesh is: {get_abstract_mesh()}")
'''

#: § Using a mixture of sharding modes
B10 = r'''
import functools

@functools.partial(auto_axes, axes='X')
def g(y):
  print(f'mesh inside g: {get_abstract_mesh()}')
  print(f'y.sharding inside g: {jax.typeof(y) = }', end='\n\n')
  return y * 2

@jax.jit
def f(arr1):
  print(f'mesh inside f: {get_abstract_mesh()}')
  x = jnp.sin(arr1)
  print(f'x.sharding: {jax.typeof(x)}', end='\n\n')

  z = g(x, out_sharding=P("X", "Y"))

  print(f'z.sharding: {jax.typeof(z)}', end="\n\n")
  return z + 1

some_x = reshard(np.arange(16).reshape(4, 4), P("X", "Y"))
f(some_x)
'''

#: § Using a mixture of sharding modes
B11 = r'''
auto_mesh = jax.make_mesh((2, 4), ("X", "Y"),
                           axis_types=(AxisType.Auto, AxisType.Auto))

@functools.partial(explicit_axes, axes=('X', 'Y'))
def explicit_g(y):
  print(f'mesh inside g: {get_abstract_mesh()}')
  print(f'y.sharding inside g: {jax.typeof(y) = }')
  z = y * 2
  print(f'z.sharding inside g: {jax.typeof(z) = }', end='\n\n')
  return z

@jax.jit
def f(arr1):
  print(f'mesh inside f: {get_abstract_mesh()}', end='\n\n')
  x = jnp.sin(arr1)

  z = explicit_g(x, in_sharding=P("X", "Y"))

  return z + 1

with jax.set_mesh(auto_mesh):
  some_x = jax.device_put(np.arange(16).reshape(4, 4), P("X", "Y"))
  f(some_x)
'''

#: § Concrete array shardings can mention `Auto` mesh axis
B12 = r'''
def compare_shardings(x):
  print(f"=== with mesh: {get_abstract_mesh()} ===")
  print(f"Concrete value sharding: {x.sharding.spec}")
  print(f"Type-specified sharding: {jax.typeof(x).sharding.spec}")

my_array = jnp.sin(reshard(np.arange(8), P("X")))
compare_shardings(my_array)

@auto_axes
def check_in_auto_context(x):
  compare_shardings(x)
  return x

check_in_auto_context(my_array, out_sharding=P("X"))
'''


#: NumPy's int64 inputs as JAX takes them (int32)
A8, A4, A16 = (narrow(f"np.arange({n})", "int32") for n in (8, 4, 16))
IMPORTS = ("AxisType", "get_abstract_mesh", "reshard", "typeof")
MESH = B1 + B4                          # the explicit mesh, set as the context mesh
AUTO_AXES = "from jax.sharding import auto_axes, explicit_axes\n"   # block 8's import
FUNCTOOLS = "import functools\n"                                    # block 10's

EXAMPLES = [
    example("explicit_sharding:typeof_numpy", "§ Setting up an explicit mesh (block 2)",
            B1 + B2, stdout="text", deviations=(A8,)),
    example("explicit_sharding:typeof_traced", "§ Setting up an explicit mesh (blocks 2, 3)",
            B1 + B2 + B3, values=("_",), stdout="text", deviations=(A8,)),
    example("explicit_sharding:explicit_mesh", "§ Setting up an explicit mesh (block 4)",
            MESH, stdout="some"),
    example("explicit_sharding:reshard", "§ Setting up an explicit mesh (blocks 4, 5)",
            MESH + B5, values=("sharded_array",), shardings=("sharded_array",),
            stdout="numbers", deviations=(A8,)),
    example("explicit_sharding:binary_op_rule", "§ Setting up an explicit mesh (blocks 4, 6)",
            MESH + B6, values=("result",), shardings=("arg0", "arg1", "result"),
            stdout="numbers", deviations=(A4, A8)),
    example("explicit_sharding:binary_op_rule_jit", "§ Setting up an explicit mesh "
            "(blocks 4, 6, 7)", MESH + B6 + B7, values=("_",), shardings=("_",),
            stdout="numbers", deviations=(A4, A8)),
    example("explicit_sharding:auto_axes", "§ Working around unimplemented sharding rules "
            "using auto_axes (blocks 4, 8)", MESH + B8, values=("result",),
            shardings=("result",), stdout="some", deviations=(A16,)),
    example("explicit_sharding:current_mesh", "§ Using a mixture of sharding modes "
            "(blocks 4, 9)", MESH + B9, stdout="some"),
    example("explicit_sharding:auto_axes_in_jit", "§ Using a mixture of sharding modes "
            "(blocks 4, 8, 10)", MESH + AUTO_AXES + B10, values=("_",), shardings=("_",),
            stdout="some",
            deviations=(A16,)),
    example("explicit_sharding:explicit_axes", "§ Using a mixture of sharding modes "
            "(blocks 4, 8, 10, 11)", MESH + AUTO_AXES + FUNCTOOLS + B11, values=("some_x",),
            shardings=("some_x",),
            stdout="some", deviations=(A16,)),
    example("explicit_sharding:concrete_vs_type_sharding", "§ Concrete array shardings can "
            "mention Auto mesh axis (blocks 4, 8, 12)", MESH + AUTO_AXES + B12,
            values=("my_array",), shardings=("my_array",), stdout="some", deviations=(A8,)),
]
