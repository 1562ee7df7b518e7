"""Numerical definitions: trace a Python function into an Expr graph, compile, cache;
control flow, collectives and sharded programs (``shard_jit``, ``shard_map``).

This package is the defn layer's public face; the pieces live in its modules:

==============  =========================================================================
``expr``        Expr nodes, the Expr backend that records ops, graph printing
``tree``        flattening/unflattening of argument and result containers
``compiler``    the Compiler protocol and the compiler registry
``tracing``     trace: a function into a graph; argument names, static keys, donation
``core``        defn, jit, compile, debug_expr, default_options
``kernel``      cond, while_loop, fori_loop; hook, print_value, print_expr, runtime_call
``varying``     which mesh axes each value of a shard_map body varies along
``grad``        grad, value_and_grad, stop_grad, custom_grad: the reverse-mode transform
``grad_rules``  the gradient rule of each op
``custom_vjp``  custom_vjp: JAX's fwd/bwd rules, over custom_grad
``checkpoint``  checkpoint (remat), checkpoint_name, checkpoint_policies: rematerialization
``call``        call: a function traced once, called as a function of the program
``vmap``        vmap: automatic batching, a transform of Expr graphs (and batch_paths)
``jvp_rules``   the forward-mode (JVP) rule of each op
``jvp``         jvp, linearize: the forward-mode transform
``custom_jvp``  custom_jvp: a custom forward-mode rule, transposed for reverse mode
``jacobian``    jacobian (jacrev), jacfwd, hessian: Jacobians, vmap of grad or of jvp
``scan``        scan, map, associative_scan (``jax.lax``'s), over while_loop and slices
``batch_rules`` the batching rule of each op
``collectives`` all_gather, psum and the other collectives, axis_index, the mesh context
``sharding``    sharding specs, splitting/assembling shards, propagation over graphs
``sharded``     sharded programs: traced over a mesh, called with sharded tensors
``shard_jit``   a defn across a device mesh (global view)
``placement``   device_put, with_sharding_constraint, eager ops on sharded tensors
``shard_map``   per-shard programs (local view)
==============  =========================================================================

>>> import nxpy as nx
>>> from nxpy.defn import defn, debug_expr
>>> @defn
... def f(x, y):
...     return nx.sum(x * y, axes=[1])
>>> f(nx.tensor([[1, 2], [3, 4]]), nx.tensor([[1, 1], [2, 2]])).tolist()
[3, 14]
>>> print(debug_expr(f)(nx.template((2, 2), "f32"), nx.template((2, 2), "f32")))
#Nx.Tensor<
  f32[2]
<BLANKLINE>
  Nx.Defn.Expr
  parameter a:0                            f32[2][2]
  parameter b:1                            f32[2][2]
  c = multiply a, b                        f32[2][2]
  d = sum c, axes: [1], keep_axes: false   f32[2]
>
"""
from __future__ import annotations

from . import sharding
from .sharding.collectives import (all_gather, all_reduce, all_slice, all_to_all, axis_index,
                                   axis_size, collective_broadcast, collective_permute, pcast,
                                   pmax, pmean, pmin, ppermute, psum, psum_scatter, pvary,
                                   reduce_scatter, shift)
from .compiler import Compiler, register_compiler, register_compiler_factory
from .core import (Compiled, Jit, compatible, compile, debug_expr, default_options, defn, jit,
                   trace)
from .expr import EXPR, Expr, Fn
from .transforms.grad import custom_grad, grad, stop_grad, value_and_grad
from .transforms.custom_vjp import custom_vjp
from .transforms.call import call
from .transforms.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat
from .kernel import cond, fori_loop, hook, print_expr, print_value, runtime_call, while_loop
from .shard_jit import ShardJit, shard_jit
from .placement import device_put, with_sharding_constraint
from .shard_map import ShardMap, shard_map
from .tree import register_container
from .transforms.vmap import batch_paths, vmap
from .transforms.jvp import jvp, linearize
from .transforms.custom_jvp import custom_jvp
from .transforms.jacobian import hessian, jacfwd, jacobian, jacrev
from .transforms.scan import associative_scan, map, scan  # jax.lax.map's name
from . import portable  # registers the linear-algebra primitives' portable implementations

__all__ = ["defn", "jit", "compile", "debug_expr", "default_options", "Compiler", "Jit",
           "Compiled", "register_compiler", "register_compiler_factory", "trace", "cond",
           "while_loop", "hook", "print_value", "print_expr", "runtime_call", "fori_loop", "grad",
           "value_and_grad", "stop_grad", "custom_grad", "custom_vjp", "vmap", "batch_paths",
           "jacobian", "hessian", "Fn", "Expr", "EXPR", "shard_jit",
           "ShardJit", "shard_map", "ShardMap", "sharding", "register_container", "all_gather",
           "all_reduce", "psum", "pmax", "pmin",
           "pmean", "reduce_scatter", "psum_scatter", "all_to_all", "collective_permute",
           "ppermute", "shift", "collective_broadcast", "axis_index", "axis_size", "pcast", "pvary",
           "all_slice",
           "device_put", "with_sharding_constraint", "scan", "associative_scan", "checkpoint",
           "call", "remat", "checkpoint_name", "checkpoint_policies", "jvp", "linearize", "jacfwd",
           "jacrev", "custom_jvp"]
