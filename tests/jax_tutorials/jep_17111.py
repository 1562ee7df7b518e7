"""Examples from JEP 17111, "Efficient transposition of replication-inducing collectives"
(docs/jep/17111-shmap-transpose.md): shard_maps whose gradients (transposes) depend on
whether values vary across devices, the case JAX's varying-value typing decides and nxpy's
``grad`` follows (nxpy/defn/sharding/varying.py).

Copyright The JAX Authors, Apache-2.0; read at the commit below. The JEP's code is
pseudo-code over free names (``shmap``, ``g``, the transpose ``t(f)``): each example is one
of its lines, verbatim, after the test's definitions of those names (``FREE``, not the
JEP's) and followed by the calls that evaluate it and its transpose (``DRIVE``, not the
JEP's). The transpose ``t(f, args, ybar, argnum)`` is the VJP of ``f`` at ``args`` along
``ybar`` (``grad`` of ``sum(f(*args) * ybar)``), and ``tt`` the transpose of that.
Left out: block 1 (a syntax error, an unbalanced parenthesis), block 15 (``pbroadcast``,
since renamed ``pcast(..., to="varying")``: jax.lax.pbroadcast is now another function),
the lines writing
``t(f1) = ...`` (the JEP's notation for what the transpose is) and those with type
annotations in the JEP's aval syntax (``f32[3,4]{i}``)."""
from jax_tutorials import example

SOURCE = "jax-ml/jax cec06d116c05f0d52adfceee3d3b730fdbcb0ce5 docs/jep/17111-shmap-transpose.md"

#: the test's mesh, 8 devices along 'i', each in its own spelling (JAX: an Auto mesh, as
#: in 2023; nxpy: a Mesh with a name), so that the examples do not need issue 45 item 1
MESH = ("import jax\nmesh = jax.sharding.Mesh(jax.devices(), ('i',))\n",
        "import nxpy as nx\nmesh = nx.Mesh('mesh', (8,), axis_names=('i',))\n")

#: the JEP's free names, as the test defines them (not the JEP's)
FREE = r'''
from functools import partial
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P
from jax.lax import psum, all_gather, psum_scatter

def shmap(f, in_specs, out_specs):  # the JEP's shmap: a shard_map over the 8 devices
  return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)

def g(x):  # the JEP's g: any per-device function of the block (here to a scalar)
  return jnp.sum(jnp.sin(x) * x)

def t(f, args, ybar, argnum=0):  # the JEP's t(f): the transpose (VJP) of f at args
  return jax.grad(lambda *a: jnp.sum(f(*a) * ybar), argnums=argnum)(*args)

def tt(f, args, ybar, xdot, argnum=0):  # the transpose of t(f): along xdot
  return jax.grad(lambda w: jnp.sum(t(f, args, w, argnum) * xdot))(ybar)

x = jnp.arange(8 * 3 * 4.).reshape(8 * 3, 4) / 10   # x: f32[3,4]{i} on each device
'''

#: Example 1: shmap involving psum and unmapped output (block 2)
F1 = r'''
f1 = shmap(lambda x: psum(g(x), 'i'),
           in_specs=P('i'), out_specs=P())
'''
#: Example 2: shmap involving psum and *mapped* output (block 5's first statement)
F2 = r'''
f2 = shmap(lambda x, y: psum(g(x), 'i') * y,
          in_specs=(P('i'), P('i')), out_specs=P('i'))
'''
#: Example 3: cursed identity (block 6's first statement)
CURSED = r'''
cursed_identity = shmap(lambda x: x, P(), P())
'''
#: Example 4: all_gather to an unmapped output (block 7's first statement)
F4 = r'''
f4 = shmap(lambda x: all_gather(x, 'i'), P('i'), P())
'''
#: Example 5: all_gather to a mapped output (block 8's first statement)
F5 = r'''
f5 = shmap(lambda x, y: all_gather(x, 'i') * y,
           in_specs=(P('i'), P('i')), out_specs=P('i'))
'''
#: Example 4 again, "why didn't we just write it like this?" (block 9's second statement)
F4_BETTER = r'''
f4_better = shmap(lambda x: x, P('i'), P('i'))
'''
#: the calls that evaluate each (not the JEP's)
DRIVE_F1 = r'''
y = f1(x)
xbar = t(f1, (x,), 2.0)
ybar = tt(f1, (x,), 2.0, x)
'''
DRIVE_F2 = r'''
w = jnp.arange(16.) / 4
z = f2(x, w)
xbar = t(f2, (x, w), w + 1)
wbar = t(f2, (x, w), w + 1, argnum=1)
zbar = tt(f2, (x, w), w + 1, x)
'''
DRIVE_CURSED = r'''
v = jnp.arange(3.)
y = cursed_identity(v)
vbar = t(cursed_identity, (v,), v + 1)
ybar = tt(cursed_identity, (v,), v + 1, v * 2)
'''
#: (JAX raises here: an all_gather's result varies over 'i', so out_specs=P() is an error
#: unless check_vma=False; the JEP's all_gather_invariant is not public in jax.lax)
DRIVE_F4 = r'''
v = jnp.arange(8.)
try:
  y = f4(v)
except ValueError as e:
  print(e)
'''
DRIVE_F5 = r'''
v, w = jnp.arange(8.), jnp.arange(64.) / 8
y = f5(v, w)
vbar = t(f5, (v, w), jnp.ones((64, 8)))
wbar = t(f5, (v, w), jnp.ones((64, 8)), argnum=1)
'''
DRIVE_F4_BETTER = r'''
v = jnp.arange(8.)
y = f4_better(v)
vbar = t(f4_better, (v,), v + 1)
'''


EXAMPLES = [
    example("jep_17111:psum_unmapped_output", "§ Problem: Example 1 (block 2)",
            FREE + F1 + DRIVE_F1, prelude=MESH, values=("y", "xbar", "ybar"),
            rtol=1e-4, atol=1e-4),
    example("jep_17111:psum_mapped_output", "§ Problem: Example 2 (block 5)",
            FREE + F2 + DRIVE_F2, prelude=MESH, values=("z", "xbar", "wbar", "zbar"),
            rtol=1e-4, atol=1e-4),
    example("jep_17111:cursed_identity", "§ Problem: Example 3 (block 6)",
            FREE + CURSED + DRIVE_CURSED, prelude=MESH, values=("y", "vbar", "ybar")),
    example("jep_17111:all_gather_unmapped_output", "§ Problem: Example 4 (block 7)",
            FREE + F4 + DRIVE_F4, prelude=MESH, absent=("y",), stdout="some",
            xfail="not in issue 45: nxpy's all_gather result is "
            "invariant (out_specs=P() accepted), JAX's varies (out_specs=P() an error)"),
    example("jep_17111:all_gather_mapped_output", "§ Problem: Example 5 (block 8)",
            FREE + F5 + DRIVE_F5, prelude=MESH, values=("y", "vbar", "wbar")),
    example("jep_17111:identity_mapped", "§ Partial solution: Example 4 again (block 9)",
            FREE + F4_BETTER + DRIVE_F4_BETTER, prelude=MESH, values=("y", "vbar")),
]
