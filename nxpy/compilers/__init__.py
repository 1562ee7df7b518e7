"""The compilers that ship with nxpy, each registered by name when imported:

* ``evaluator`` (:mod:`nxpy.compilers.evaluator`): walks the Expr graph on the host,
  calling an eager backend per node; :mod:`nxpy.compilers.spmd` simulates a device mesh
  for it (shard_map bodies and their collectives);
* ``exla`` (:mod:`nxpy.compilers.exla`): lowers the graph to StableHLO and runs it on XLA
  through PJRT; it also registers the ``exla`` eager backend, whose ops are one-op
  compiled programs.
"""
from . import evaluator, exla, spmd

__all__ = ["evaluator", "exla", "spmd"]
