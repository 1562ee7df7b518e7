"""Examples from JAX's "Distributed arrays and automatic parallelization"
(docs/notebooks/Distributed_arrays_and_automatic_parallelization.md, replaced in JAX's docs
by docs/parallel.md in 2026).

Copyright The JAX Authors, Apache-2.0; read at the commit below, the last before its
removal. Each ``B<n>`` is the n-th fenced block of the page, verbatim. The page's arrays
are 8192 x 8192 and its network 8192 wide: the tests run them at 64 (the same edit for
JAX and for nxpy)."""
from jax_tutorials import example, normal

SOURCE = ("jax-ml/jax 220f0751106a31289082d7d0060eff2a8d3facfc "
          "docs/notebooks/Distributed_arrays_and_automatic_parallelization.md")

#: § Distributed arrays and automatic parallelization
B1 = r'''
from typing import Optional

import numpy as np

import jax
import jax.numpy as jnp
'''

#: § Intro and a quick example
B3 = r'''
from jax.sharding import PartitionSpec as P, NamedSharding
'''

#: § Intro and a quick example
B4 = r'''
# Create a Sharding object to distribute a value across devices:
mesh = jax.make_mesh((4, 2), ('x', 'y'))
'''

#: § Intro and a quick example
B5 = r'''
# Create an array of random values:
x = jax.random.normal(jax.random.key(0), (8192, 8192))
# and use jax.device_put to distribute it across devices:
y = jax.device_put(x, NamedSharding(mesh, P('x', 'y')))
jax.debug.visualize_array_sharding(y)
'''

#: § Intro and a quick example
B6 = r'''
z = jnp.sin(y)
jax.debug.visualize_array_sharding(z)
'''

#: § Sharding basics, and the `NamedSharding` subclass
B9 = r'''
import jax
x = jax.random.normal(jax.random.key(0), (8192, 8192))
'''

#: § Sharding basics, and the `NamedSharding` subclass
B10 = r'''
jax.debug.visualize_array_sharding(x)
'''

#: § Sharding basics, and the `NamedSharding` subclass
B11 = r'''
from jax.sharding import Mesh, PartitionSpec, NamedSharding

P = PartitionSpec

mesh = jax.make_mesh((4, 2), ('a', 'b'))
y = jax.device_put(x, NamedSharding(mesh, P('a', 'b')))
jax.debug.visualize_array_sharding(y)
'''

#: § Sharding basics, and the `NamedSharding` subclass
B12 = r'''
default_mesh = jax.make_mesh((4, 2), ('a', 'b'))

def mesh_sharding(
    pspec: PartitionSpec, mesh: Optional[Mesh] = None,
  ) -> NamedSharding:
  if mesh is None:
    mesh = default_mesh
  return NamedSharding(mesh, pspec)
'''

#: § Sharding basics, and the `NamedSharding` subclass
B13 = r'''
y = jax.device_put(x, mesh_sharding(P('a', 'b')))
jax.debug.visualize_array_sharding(y)
'''

#: § Sharding basics, and the `NamedSharding` subclass
B14 = r'''
y = jax.device_put(x, mesh_sharding(P('b', 'a')))
jax.debug.visualize_array_sharding(y)
'''

#: § Sharding basics, and the `NamedSharding` subclass
B15 = r'''
# This `None` means that `x` is not sharded on its second dimension,
# and since the Mesh axis name 'b' is not mentioned, shards are
# replicated across it.
y = jax.device_put(x, mesh_sharding(P('a', None)))
jax.debug.visualize_array_sharding(y)
'''

#: § Sharding basics, and the `NamedSharding` subclass
B16 = r'''
y = jax.device_put(x, mesh_sharding(P(None, 'b')))
jax.debug.visualize_array_sharding(y)
'''

#: § Sharding basics, and the `NamedSharding` subclass
B17 = r'''
y = jax.device_put(x, mesh_sharding(P(None, 'a')))
jax.debug.visualize_array_sharding(y)
'''

#: § Sharding basics, and the `NamedSharding` subclass
B18 = r'''
y = jax.device_put(x, mesh_sharding(P(('a', 'b'), None)))
jax.debug.visualize_array_sharding(y)
'''

#: § Computation follows data sharding and is automatically parallelized
B19 = r'''
mesh = jax.make_mesh((4, 2), ('a', 'b'))
'''

#: § Computation follows data sharding and is automatically parallelized
B20 = r'''
x = jax.device_put(x, NamedSharding(mesh, P('a', 'b')))
print('input sharding:')
jax.debug.visualize_array_sharding(x)

y = jnp.sin(x)
print('output sharding:')
jax.debug.visualize_array_sharding(y)
'''

#: § Computation follows data sharding and is automatically parallelized
B21 = r'''
y = jax.device_put(x, NamedSharding(mesh, P('a', None)))
z = jax.device_put(x, NamedSharding(mesh, P(None, 'b')))
print('lhs sharding:')
jax.debug.visualize_array_sharding(y)
print('rhs sharding:')
jax.debug.visualize_array_sharding(z)

w = jnp.dot(y, z)
print('out sharding:')
jax.debug.visualize_array_sharding(w)
'''

#: § Computation follows data sharding and is automatically parallelized
B22 = r'''
x_single = jax.device_put(x, jax.devices()[0])
jax.debug.visualize_array_sharding(x_single)
'''

#: § Computation follows data sharding and is automatically parallelized
B23 = r'''
np.allclose(jnp.dot(x_single, x_single),
            jnp.dot(y, z))
'''

#: § Computation follows data sharding and is automatically parallelized
B26 = r'''
w_copy = jnp.copy(w)
jax.debug.visualize_array_sharding(w_copy)
'''

#: § When explicit shardings disagree, JAX errors
B27 = r'''
import textwrap
from termcolor import colored

def print_exception(e):
  name = colored(f'{type(e).__name__}', 'red', force_color=True)
  print(textwrap.fill(f'{name}: {str(e)}'))
'''

#: § When explicit shardings disagree, JAX errors
B28 = r'''
sharding1 = NamedSharding(Mesh(jax.devices()[:4], 'x'), P('x'))
sharding2 = NamedSharding(Mesh(jax.devices()[4:], 'x'), P('x'))

y = jax.device_put(x, sharding1)
z = jax.device_put(x, sharding2)
try: y + z
except ValueError as e: print_exception(e)
'''

#: § When explicit shardings disagree, JAX errors
B29 = r'''
devices = jax.devices()
permuted_devices = [devices[i] for i in [0, 1, 2, 3, 6, 7, 4, 5]]

sharding1 = NamedSharding(Mesh(devices, 'x'), P('x'))
sharding2 = NamedSharding(Mesh(permuted_devices, 'x'), P('x'))

y = jax.device_put(x, sharding1)
z = jax.device_put(x, sharding2)
try: y + z
except ValueError as e: print_exception(e)
'''

#: § When explicit shardings disagree, JAX errors
B30 = r'''
y = jax.device_put(x, sharding1)
y + jnp.ones_like(y)
y + jnp.arange(y.size).reshape(y.shape)
print('no error!')
'''

#: § Constraining shardings of intermediates in `jit`ted code
B31 = r'''
mesh = jax.make_mesh((4, 2), ('x', 'y'))
'''

#: § Constraining shardings of intermediates in `jit`ted code
B32 = r'''
x = jax.random.normal(jax.random.key(0), (8192, 8192))
x = jax.device_put(x, NamedSharding(mesh, P('x', 'y')))
'''

#: § Constraining shardings of intermediates in `jit`ted code
B33 = r'''
@jax.jit
def f(x):
  x = x + 1
  y = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P('y', 'x')))
  return y
'''

#: § Constraining shardings of intermediates in `jit`ted code
B34 = r'''
jax.debug.visualize_array_sharding(x)
y = f(x)
jax.debug.visualize_array_sharding(y)
'''

#: § Constraining shardings of intermediates in `jit`ted code
B35 = r'''
@jax.jit
def f(x):
  x = x + 1
  y = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P()))
  return y
'''

#: § Constraining shardings of intermediates in `jit`ted code
B36 = r'''
jax.debug.visualize_array_sharding(x)
y = f(x)
jax.debug.visualize_array_sharding(y)
'''

#: § Examples: neural networks
B37 = r'''
import jax
import jax.numpy as jnp
'''

#: § Examples: neural networks
B38 = r'''
def predict(params, inputs):
  for W, b in params:
    outputs = jnp.dot(inputs, W) + b
    inputs = jnp.maximum(outputs, 0)
  return outputs

def loss(params, batch):
  inputs, targets = batch
  predictions = predict(params, inputs)
  return jnp.mean(jnp.sum((predictions - targets)**2, axis=-1))
'''

#: § Examples: neural networks
B39 = r'''
loss_jit = jax.jit(loss)
gradfun = jax.jit(jax.grad(loss))
'''

#: § Examples: neural networks
B40 = r'''
def init_layer(key, n_in, n_out):
  k1, k2 = jax.random.split(key)
  W = jax.random.normal(k1, (n_in, n_out)) / jnp.sqrt(n_in)
  b = jax.random.normal(k2, (n_out,))
  return W, b

def init_model(key, layer_sizes, batch_size):
  key, *keys = jax.random.split(key, len(layer_sizes))
  params = list(map(init_layer, keys, layer_sizes[:-1], layer_sizes[1:]))

  key, *keys = jax.random.split(key, 3)
  inputs = jax.random.normal(keys[0], (batch_size, layer_sizes[0]))
  targets = jax.random.normal(keys[1], (batch_size, layer_sizes[-1]))

  return params, (inputs, targets)

layer_sizes = [784, 8192, 8192, 8192, 10]
batch_size = 8192

params, batch = init_model(jax.random.key(0), layer_sizes, batch_size)
'''

#: § 8-way batch data parallelism
B41 = r'''
mesh = jax.make_mesh((8,), ('batch',))
'''

#: § 8-way batch data parallelism
B42 = r'''
sharding = NamedSharding(mesh, P('batch'))
replicated_sharding = NamedSharding(mesh, P())
'''

#: § 8-way batch data parallelism
B43 = r'''
batch = jax.device_put(batch, sharding)
params = jax.device_put(params, replicated_sharding)
'''

#: § 8-way batch data parallelism
B44 = r'''
loss_jit(params, batch)
'''

#: § 8-way batch data parallelism
B45 = r'''
step_size = 1e-5

for _ in range(30):
  grads = gradfun(params, batch)
  params = [(W - step_size * dW, b - step_size * db)
            for (W, b), (dW, db) in zip(params, grads)]

print(loss_jit(params, batch))
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B49 = r'''
mesh = jax.make_mesh((4, 2), ('batch', 'model'))
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B50 = r'''
batch = jax.device_put(batch, NamedSharding(mesh, P('batch', None)))
jax.debug.visualize_array_sharding(batch[0])
jax.debug.visualize_array_sharding(batch[1])
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B51 = r'''
replicated_sharding = NamedSharding(mesh, P())
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B52 = r'''
(W1, b1), (W2, b2), (W3, b3), (W4, b4) = params

W1 = jax.device_put(W1, replicated_sharding)
b1 = jax.device_put(b1, replicated_sharding)

W2 = jax.device_put(W2, NamedSharding(mesh, P(None, 'model')))
b2 = jax.device_put(b2, NamedSharding(mesh, P('model')))

W3 = jax.device_put(W3, NamedSharding(mesh, P('model', None)))
b3 = jax.device_put(b3, replicated_sharding)

W4 = jax.device_put(W4, replicated_sharding)
b4 = jax.device_put(b4, replicated_sharding)

params = (W1, b1), (W2, b2), (W3, b3), (W4, b4)
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B53 = r'''
jax.debug.visualize_array_sharding(W2)
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B54 = r'''
jax.debug.visualize_array_sharding(W3)
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B55 = r'''
print(loss_jit(params, batch))
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B56 = r'''
step_size = 1e-5

for _ in range(30):
    grads = gradfun(params, batch)
    params = [(W - step_size * dW, b - step_size * db)
              for (W, b), (dW, db) in zip(params, grads)]
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B57 = r'''
print(loss_jit(params, batch))
'''

#: § 4-way batch data parallelism and 2-way model tensor parallelism
B58 = r'''
(W1, b1), (W2, b2), (W3, b3), (W4, b4) = params
jax.debug.visualize_array_sharding(W2)
jax.debug.visualize_array_sharding(W3)
'''


SMALL = (("(8192, 8192)", "(64, 64)", "the page's arrays, smaller"),)
NN_SMALL = (("layer_sizes = [784, 8192, 8192, 8192, 10]", "layer_sizes = [784, 64, 64, 64, 10]",
             "the page's network, narrower"),
            ("batch_size = 8192", "batch_size = 64", "the page's batch, smaller"))
NO_TERMCOLOR = (("from termcolor import colored",
                 "colored = lambda text, *args, **kwargs: text  # termcolor, not installed",
                 "termcolor's colored (not installed) as plain text"),)


def auto(mesh_call: str) -> tuple:
    """The page predates make_mesh's Explicit default (JAX 0.9): where an example's result
    depends on it, its mesh is made Auto, as the page meant it."""
    return (mesh_call, mesh_call[:-1] + ", axis_types=(jax.sharding.AxisType.Auto,) * 2)",
            "the page predates make_mesh's Explicit default (JAX 0.9): an Auto mesh")


AUTO_AB = auto("jax.make_mesh((4, 2), ('a', 'b'))")
AUTO_XY = auto("jax.make_mesh((4, 2), ('x', 'y'))")
AUTO_TP = auto("jax.make_mesh((4, 2), ('batch', 'model'))")
X = (normal("nx.random.key(0)", "(64, 64)"),)
NN_INPUTS = (normal("k1", "(n_in, n_out)"), normal("k2", "(n_out,)"),
             normal("keys[0]", "(batch_size, layer_sizes[0])"),
             normal("keys[1]", "(batch_size, layer_sizes[-1])"))
MESH_AB = B1 + B9 + B11 + B12           # x, the mesh ('a', 'b') and mesh_sharding
FOLLOWS = B1 + B3 + B9 + B19 + B20      # computation follows data
NN = B37 + B1 + B3 + B38 + B39 + B40
NN_DP = NN + B41 + B42 + B43
NN_TP = NN + B49 + B50 + B51 + B52


def shown(name, where, code, pictures, **kw):
    """An example showing the sharding of ``pictures`` (and comparing their values and
    shardings with JAX's)."""
    return example(name, where, code, values=kw.pop("values", pictures),
                   shardings=kw.pop("shardings", pictures), pictures=pictures,
                   edits=kw.pop("edits", SMALL), deviations=kw.pop("deviations", X), **kw)


EXAMPLES = [
    shown("distributed_arrays:quick_example", "§ Intro and a quick example (blocks 1, 3-5)",
          B1 + B3 + B4 + B5, ("y",)),
    shown("distributed_arrays:sin", "§ Intro and a quick example (blocks 1, 3-6)",
          B1 + B3 + B4 + B5 + B6, ("z",)),
    shown("distributed_arrays:unsharded", "§ Sharding basics (blocks 9, 10)", B1 + B9 + B10,
          ("x",), shardings=(),),
    shown("distributed_arrays:mesh_a_b", "§ Sharding basics (blocks 9, 11)", B1 + B9 + B11,
          ("y",)),
    shown("distributed_arrays:spec_a_b", "§ Sharding basics (blocks 9, 11-13)", MESH_AB + B13,
          ("y",)),
    shown("distributed_arrays:spec_b_a", "§ Sharding basics (block 14)", MESH_AB + B14,
          ("y",)),
    shown("distributed_arrays:spec_a_none", "§ Sharding basics (block 15)", MESH_AB + B15,
          ("y",)),
    shown("distributed_arrays:spec_none_b", "§ Sharding basics (block 16)", MESH_AB + B16,
          ("y",)),
    shown("distributed_arrays:spec_none_a", "§ Sharding basics (block 17)", MESH_AB + B17,
          ("y",)),
    shown("distributed_arrays:spec_ab_none", "§ Sharding basics (block 18)", MESH_AB + B18,
          ("y",)),
    shown("distributed_arrays:sin_follows", "§ Computation follows data sharding "
          "(blocks 19, 20)", FOLLOWS, ("x", "y")),
    shown("distributed_arrays:dot_follows", "§ Computation follows data sharding (block 21)",
          FOLLOWS + B21, ("y", "z", "w")),
    shown("distributed_arrays:single_device", "§ Computation follows data sharding "
          "(blocks 22, 23)", FOLLOWS + B21 + B22 + B23, ("x_single",), values=("_", "x_single"),
          shardings=(), edits=SMALL + (AUTO_AB,)),
    shown("distributed_arrays:copy", "§ Computation follows data sharding (block 26)",
          FOLLOWS + B21 + B26, ("w_copy",)),
    example("distributed_arrays:disagree_devices", "§ When explicit shardings disagree, JAX "
            "errors (blocks 27, 28)", B1 + B3 + B9 + B11 + B27 + B28, stdout="some",
            edits=SMALL + NO_TERMCOLOR, deviations=X),
    example("distributed_arrays:disagree_order", "§ When explicit shardings disagree, JAX "
            "errors (blocks 27, 29)", B1 + B3 + B9 + B11 + B27 + B29, stdout="some",
            edits=SMALL + NO_TERMCOLOR, deviations=X),
    example("distributed_arrays:committed_with_uncommitted", "§ When explicit shardings "
            "disagree, JAX errors (blocks 27-30)", B1 + B3 + B9 + B11 + B27 + B28 + B30,
            stdout="some", edits=SMALL + NO_TERMCOLOR, deviations=X),
    shown("distributed_arrays:with_sharding_constraint", "§ Constraining shardings of "
          "intermediates (blocks 31-34)", B1 + B3 + B31 + B32 + B33 + B34, ("x", "y"),
          edits=SMALL + (AUTO_XY,)),
    shown("distributed_arrays:with_sharding_constraint_replicated", "§ Constraining "
          "shardings of intermediates (blocks 31, 32, 35, 36)", B1 + B3 + B31 + B32 + B35 + B36,
          ("x", "y"), edits=SMALL + (AUTO_XY,)),
    example("distributed_arrays:nn_data_parallel", "§ 8-way batch data parallelism "
            "(blocks 37-44)", NN_DP + B44, values=("_", "params"),
            shardings=("params", "batch"), edits=NN_SMALL, deviations=NN_INPUTS,
            rtol=1e-4, atol=1e-4),
    example("distributed_arrays:nn_data_parallel_train", "§ 8-way batch data parallelism "
            "(blocks 37-45)", NN_DP + B45, values=("params",), shardings=("params",),
            stdout="numbers", edits=NN_SMALL, deviations=NN_INPUTS, rtol=1e-4, atol=1e-4),
    example("distributed_arrays:nn_tensor_parallel", "§ 4-way batch data parallelism and "
            "2-way model tensor parallelism (blocks 37-40, 49-55)", NN_TP + B53 + B54 + B55,
            values=("params",), shardings=("params", "batch"),
            pictures=("W2", "W3"), stdout="numbers", edits=NN_SMALL + (AUTO_TP,),
            deviations=NN_INPUTS, rtol=1e-4, atol=1e-4),
    example("distributed_arrays:nn_tensor_parallel_train", "§ 4-way batch data parallelism "
            "and 2-way model tensor parallelism (blocks 37-40, 49-52, 55-58)",
            NN_TP + B55 + B56 + B57 + B58, values=("params",), shardings=("params",),
            pictures=("W2", "W3"), stdout="numbers", edits=NN_SMALL + (AUTO_TP,),
            deviations=NN_INPUTS, rtol=1e-4, atol=1e-4),
]
