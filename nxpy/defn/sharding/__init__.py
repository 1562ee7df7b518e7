"""Sharding inside defn, below ``core``: the collectives' front ends (``collectives``),
which mesh axes a value of a ``shard_map`` body varies along (``varying``), sharding specs
of arguments and results and their propagation over Expr graphs (``specs``), and sharded
programs, traced over a mesh and called with sharded tensors (``programs``).

``shard`` and ``assemble`` split a tensor into Nx's per-device list and put one back
together:

>>> import nxpy as nx
>>> from nxpy.defn.sharding import assemble, shard
>>> mesh = nx.Mesh("mesh", (2,))
>>> pieces = shard(nx.iota((4,)), mesh, {0: [0]})
>>> [p.tolist() for p in pieces], assemble(pieces, mesh, {0: [0]}).tolist()
([[0, 1], [2, 3]], [0, 1, 2, 3])
"""
from .specs import assemble, shard

__all__ = ["assemble", "shard"]
