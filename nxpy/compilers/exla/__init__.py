"""EXLA: nxpy's XLA compiler and eager backend (StableHLO text → PJRT, through jaxlib).

>>> import nxpy as nx
>>> from nxpy.compilers import exla
>>> print(exla.to_mlir(lambda x: x + 1, nx.template((2,), "f32")))   # doctest: +ELLIPSIS
module @nxpy attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2xf32>) -> (tensor<2xf32>) {
    %1 = "stablehlo.constant"() <{value = dense<"0x0000803F"> : tensor<f32>}> : () -> tensor<f32>
    %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64>}> : ...
    %3 = "stablehlo.add"(%arg0, %2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %3 : tensor<2xf32>
  }
}
"""
from __future__ import annotations

from ...defn import Jit, trace
from ...defn.core import check_donate_argnums, donated_leaves
from ...defn.shard_jit import shard_jit as _shard_jit
from ...defn.sharding.specs import Propagator
from .backend import ExlaBackend
from .compiler import ExlaCompiler
from . import lower_indexing  # noqa: F401 - registers the index-tensor ops' lowerings
from . import lower_sorting  # noqa: F401 - registers the sorting family's lowerings
from .lowering import (LOWERINGS, Ctx, LoweringError, check_platform, default_platform,
                       lower_module, register_lowering)
from . import lower_compositions  # noqa: F401 - registers the compositions family's lowerings
from . import lower_conv, lower_windows  # noqa: F401 - the window family's and conv's lowerings
from . import lower_complex  # noqa: F401 - registers the complex family's lowerings
from . import lower_linalg  # noqa: F401 - the linear-algebra family's solver custom calls
from .sharded import lower_replicated, lower_sharded, uses_shard_map

__all__ = ["to_mlir", "shard_jit", "register_lowering", "LOWERINGS", "Ctx", "LoweringError",
           "lower_module", "ExlaCompiler", "ExlaBackend"]


def to_mlir(fun, *args, mesh=None, input_shardings=None, output_shardings=None,
            donate_argnums=None, platform=None, **opts) -> str:
    """The StableHLO module nxpy compiles for ``fun(*args)`` (templates or tensors).

    ``platform`` (``"cpu"``, ``"cuda"``, ``"rocm"``, ``"tpu"``; default: the platform
    nxpy's client is, or will be, created for) is the platform to lower for: lowering
    needs no device of it, so a CPU machine can print the module a GPU would compile
    (``to_mlir(f, x, platform="cuda")``; see ``docs/gpu.md``).

    With ``mesh``, it takes the arguments exactly as the ``shard_jit`` callable does (one
    list of per-device argument lists) and returns the sharded module (traced, and
    compiled for nxpy's client, by ``shard_jit``; for another ``platform`` the same
    program is lowered again for it). Donated arguments (``donate_argnums``, or a
    ``jit``'s own) are aliased to results."""
    platform = check_platform(platform)
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
        return (lower_replicated(graph, meshes[0], platform) if meshes
                else lower_module(graph, platform=platform))
    if len(args) != 1:
        raise TypeError(f"to_mlir with a mesh takes one argument, the list of per-device "
                        f"argument lists (as the shard_jit callable does), got {len(args)}")
    program = shard_jit(fun, mesh, input_shardings=input_shardings,
                        output_shardings=output_shardings, donate_argnums=donate_argnums,
                        **opts)
    if platform == default_platform():
        return program.lower(args[0])
    exe = program.compile_for(args[0])
    return lower_sharded(exe.graph, exe.mesh, exe.in_shardings, exe.out_shardings,
                         Propagator(exe.mesh, exe.in_shardings), platform=platform)


def shard_jit(fun, mesh, *, input_shardings=None, output_shardings=None, **opts):
    """``nxpy.defn.shard_jit`` with the EXLA compiler."""
    return _shard_jit(fun, mesh, input_shardings=input_shardings,
                      output_shardings=output_shardings, compiler="exla", **opts)
