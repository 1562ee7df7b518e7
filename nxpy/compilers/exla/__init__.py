"""EXLA: nxpy's XLA compiler and eager backend (StableHLO text → PJRT, through jaxlib).

>>> import nxpy as nx
>>> from nxpy.compilers import exla
>>> print(exla.to_mlir(lambda x: x + 1, nx.template((2,), "f32")))   # doctest: +ELLIPSIS
module @nxpy attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2xf32>) -> (tensor<2xf32>) {
    %1 = "stablehlo.constant"() <{value = dense<"0x0000803F"> : tensor<f32>}> : () -> tensor<f32>
    %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2xf32>
    %3 = "stablehlo.add"(%arg0, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %3 : tensor<2xf32>
  }
}
"""
from __future__ import annotations

from ...defn import Jit, trace
from ...defn.core import check_donate_argnums, donated_leaves
from ...defn.shard_jit import shard_jit as _shard_jit
from .backend import ExlaBackend
from .compiler import ExlaCompiler
from . import lower_indexing  # noqa: F401 - registers the index-tensor ops' lowerings
from . import lower_sorting  # noqa: F401 - registers the sorting family's lowerings
from .lowering import LOWERINGS, Ctx, LoweringError, lower_module, register_lowering
from . import lower_compositions  # noqa: F401 - registers the compositions family's lowerings
from . import lower_conv, lower_windows  # noqa: F401 - the window family's and conv's lowerings
from . import lower_complex  # noqa: F401 - registers the complex family's lowerings
from . import lower_linalg  # noqa: F401 - the linear-algebra family's LAPACK custom calls
from .sharded import lower_replicated, uses_shard_map

__all__ = ["to_mlir", "shard_jit", "register_lowering", "LOWERINGS", "Ctx", "LoweringError",
           "lower_module", "ExlaCompiler", "ExlaBackend"]


def to_mlir(fun, *args, mesh=None, input_shardings=None, output_shardings=None,
            donate_argnums=None, **opts) -> str:
    """The StableHLO module nxpy compiles for ``fun(*args)`` (templates or tensors).

    With ``mesh``, it takes the arguments exactly as the ``shard_jit`` callable does (one
    list of per-device argument lists) and returns the sharded module. Donated arguments
    (``donate_argnums``, or a ``jit``'s own) are aliased to results."""
    if isinstance(fun, Jit):
        if donate_argnums is None:
            donate_argnums = fun.donate_argnums
        fun = fun.fun
    if mesh is None:
        if input_shardings is not None or output_shardings is not None:
            raise ValueError("input_shardings were given but there is no device mesh: pass "
                             "mesh=nx.Mesh(...) as well")
        argnums = check_donate_argnums(donate_argnums, "to_mlir")
        graph = trace(fun, args, opts)
        graph.donated = donated_leaves(args, argnums, "to_mlir")
        meshes = uses_shard_map(graph)
        return lower_replicated(graph, meshes[0]) if meshes else lower_module(graph)
    if len(args) != 1:
        raise TypeError(f"to_mlir with a mesh takes one argument, the list of per-device "
                        f"argument lists (as the shard_jit callable does), got {len(args)}")
    return shard_jit(fun, mesh, input_shardings=input_shardings,
                     output_shardings=output_shardings, donate_argnums=donate_argnums,
                     **opts).lower(args[0])


def shard_jit(fun, mesh, *, input_shardings=None, output_shardings=None, **opts):
    """``nxpy.defn.shard_jit`` with the EXLA compiler."""
    return _shard_jit(fun, mesh, input_shardings=input_shardings,
                      output_shardings=output_shardings, compiler="exla", **opts)
