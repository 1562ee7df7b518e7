"""EXLA: nxpy's XLA compiler and eager backend (StableHLO text → PJRT, through jaxlib).

>>> import nxpy as nx
>>> from nxpy.backends import exla
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

from .lowering import LOWERINGS, Ctx, LoweringError, lower_module, register_lowering

__all__ = ["to_mlir", "register_lowering", "LOWERINGS", "Ctx", "LoweringError", "lower_module"]


def to_mlir(fun, *args, **opts) -> str:
    """The StableHLO module nxpy compiles for ``fun(*args)`` (templates or tensors)."""
    from ...defn import Jit, trace
    if isinstance(fun, Jit):
        fun = fun.fun
    graph = trace(fun, args, opts)
    return lower_module(graph)
