"""Read StableHLO text into nxpy: parse modules as nxpy and JAX print them, inspect them,
and run them as nxpy programs.

* :func:`parse` — MLIR text → a typed syntax tree (:class:`~nxpy.stablehlo.syntax.Module`
  with functions, meshes, ops in canonical form, attributes as Python values, locations).
  ``module.find("stablehlo.all_gather")`` finds ops anywhere in the module.
* :func:`load` — a module → a :class:`Program`: calling it under ``jit``, ``shard_jit``
  or ``debug_expr`` rebuilds the module as an nxpy Expr graph (each StableHLO op becomes
  the nxpy op that expresses it); ``Program.shard_jit`` runs a sharded module with its
  mesh and shardings.
* ``python -m nxpy.stablehlo FILE.mlir`` prints a module's Expr graph.
* :mod:`nxpy.stablehlo.roundtrip` (test-only) checks that every module the EXLA compiler
  builds loads back and gives the same results.

>>> import nxpy as nx
>>> from nxpy.compilers.exla import to_mlir
>>> from nxpy.stablehlo import parse, load
>>> text = to_mlir(lambda x: nx.sum(x * x, axes=[1]), nx.template((2, 3), "f32"))
>>> [op.name for op in parse(text).main.body.ops]
['stablehlo.multiply', 'stablehlo.constant', 'stablehlo.reduce', 'func.return']
>>> prog = load(text)
>>> prog.jit("exla")(nx.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])).tolist()
[14.0, 1.0]
"""
from .parser import StableHLOError, StableHLOSyntaxError, parse
from .loader import LoadError, OPS, Program, UnsupportedOpError, load, register_op

__all__ = ["parse", "load", "Program", "StableHLOError", "StableHLOSyntaxError", "LoadError",
           "UnsupportedOpError", "OPS", "register_op"]
