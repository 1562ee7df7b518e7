"""Sharded programs: a function traced at global shapes over a mesh, compiled SPMD, and
called with global sharded tensors — the engine under ``jit`` on sharded tensors (JAX's
model), ``shard_jit`` (Nx's per-device lists) and ``nx.device_put``'s resharding.

A program takes one layout (a :class:`~nxpy.NamedSharding`) per argument tensor (its
*input shardings*: a sharded argument's own, or what ``in_shardings`` says, replicated
otherwise) and decides one per result: nxpy propagates shardings through the graph
(:class:`~nxpy.defn.sharding.specs.Propagator`) unless ``out_shardings`` fix them, so
every compiler returns the same shards.

>>> import nxpy as nx
>>> from nxpy.defn import jit
>>> mesh = nx.Mesh("m", (2, 2), axis_names=("data", "model"))
>>> x = nx.device_put(nx.iota((4, 2), type="f32"), nx.NamedSharding(mesh, nx.P("data")))
>>> y = jit(lambda x: nx.sum(x * 2, axes=[1]), compiler="exla")(x)
>>> y.sharding, y.tolist()
(NamedSharding(mesh=Mesh('m', [data=2, model=2]), spec=P('data')), [2.0, 10.0, 18.0, 26.0])
>>> [(s.device_id, s.data.tolist()) for s in y.addressable_shards]
[(0, [2.0, 10.0]), (1, [2.0, 10.0]), (2, [18.0, 26.0]), (3, [18.0, 26.0])]
"""
from __future__ import annotations

from ...layout import read_sharding
from . import specs as SH
from .. import tree as tree_mod
from .collectives import mesh_context
from .explicit import checking
from ..compiler import compile_graph_sharded
from ..tracing import check_not_reused, donating, expansions, give_up, trace

__all__ = ["ShardedExecutable", "trace_sharded", "compile_program", "program_meshes",
           "MeshMixError"]


class MeshMixError(ValueError):
    """The arguments (or the shardings asked for) of one program name different meshes."""


class ShardedExecutable:
    """One compiled sharded program (for one set of argument templates and shardings).

    ``run(per_device_leaves) -> per_device_results`` takes and returns one list per
    partition of this process (Nx's form, ``shard_jit``); ``call_global(leaves) ->
    results`` takes global tensors (each laid out as ``in_shardings`` says, or not sharded
    at all: then it is replicated onto the mesh) and returns sharded tensors (JAX's form).
    ``in_shardings`` and ``out_shardings``: one ``NamedSharding`` per argument and result
    leaf."""

    def __init__(self, graph, mesh, in_shardings, out_shardings, run, module=None):
        self.graph = graph
        self.mesh = mesh
        self.in_shardings = in_shardings
        self.out_shardings = out_shardings
        self.module = module
        self.single_output = graph.tree == tree_mod.LEAF  # the output is one tensor
        where = getattr(graph, "donated_where", None)
        donated = getattr(graph, "donated", ())
        fast = getattr(run, "call_global", None) or self._generic(run)
        if hasattr(run, "memory_stats"):  # per device (Compiled.memory_stats)
            self.memory_stats = run.memory_stats
        if donated:
            run, fast = _donating(run, fast, donated, where)
        self.run = run
        self.call_global = fast

    def _generic(self, run):
        """``call_global`` through the per-device form: each argument split into its
        shards (an unsharded one given to every partition), each result assembled from
        its per-device results on their backend."""
        parts = self.mesh.local_partitions
        outs_t = self.graph.outputs
        out_sh = self.out_shardings

        def call_global(leaves):
            cols = [[x] * len(parts) if x.sharding is None else x.backend.shards(x)
                    for x in leaves]
            per_device = [[c[j] for c in cols] for j in range(len(parts))]
            outs = run(per_device)
            return [outs[0][i].backend.from_shards([o[i] for o in outs], t.shape, t.type,
                                                   t.names, s)
                    for i, (t, s) in enumerate(zip(outs_t, out_sh))]
        return call_global

    @property
    def output_shardings(self):
        """The result shardings as ``P``s (axes by name, as a user writes them), in the
        output's container."""
        return tree_mod.unflatten(self.graph.tree, [s.spec for s in self.out_shardings])

    @property
    def output_sharding_dicts(self):
        """The result shardings as Nx's ``{dim: [axis indices]}`` dicts, in the output's
        container."""
        return tree_mod.unflatten(self.graph.tree, [s.as_dict() for s in self.out_shardings])

    @property
    def input_shardings(self):
        """The shardings of the argument tensors (one ``P`` per leaf, in flatten order)."""
        return [s.spec for s in self.in_shardings]

    @property
    def input_sharding_dicts(self):
        """:attr:`input_shardings` as Nx's ``{dim: [axis indices]}`` dicts."""
        return [s.as_dict() for s in self.in_shardings]


def _donating(run, call_global, donated, where):
    """``run`` and ``call_global`` that give up the donated argument leaves."""
    def run_donating(per_device_leaves):
        for leaves in per_device_leaves:
            check_not_reused(leaves, donated, where)
        outs = run(per_device_leaves)
        for leaves, o in zip(per_device_leaves, outs):
            give_up(leaves, o, donated, where)
        return outs

    return run_donating, donating(call_global, donated, where)


def trace_sharded(fun, args, kwargs, templates, mesh, in_sh, out_specs, compiler, *,
                  donated=(), where=None, what="out_shardings"):
    """Traces ``fun`` at global ``templates`` over ``mesh`` (collectives in the global
    view see ``in_sh``, the arguments' layouts). Returns ``(graph, out_sh, propagator)``:
    the result layouts are ``out_specs``' (one spec or a container of specs, a prefix of
    the result; None: propagated)."""
    prop = SH.Propagator(mesh, in_sh)
    with mesh_context(mesh, prop), checking(prop):
        graph = trace(fun, args, kwargs, templates, expand=expansions(compiler))
    graph.donated = donated
    graph.donated_where = where
    return graph, result_shardings(graph, mesh, prop, out_specs, what), prop


def result_shardings(graph, mesh, prop, out_specs, what="out_shardings") -> list:
    """One layout per output of ``graph``: ``out_specs``' or propagated."""
    if out_specs is None:
        return [prop.layout(o) for o in graph.outputs]
    out = []
    for (label, s), o in zip(SH.output_specs(out_specs, graph.tree, what), graph.outputs):
        sh = read_sharding(s, o.shape, mesh, o.names, what=f"{what[:-1]} of {label}")
        for d in range(len(o.shape)):
            f = sh.factor(d)
            if o.shape[d] % f:
                raise ValueError(f"{what[:-1]} of {label}: dim {d} of size {o.shape[d]} "
                                 f"cannot be split over {f} devices")
        out.append(sh)
    return out


def compile_program(compiler, graph, mesh, in_sh, out_sh, prop, opts) -> ShardedExecutable:
    """Compiles a traced sharded program with ``compiler``'s sharded entry point."""
    if not hasattr(compiler, "compile_sharded"):
        raise ValueError(f"compiler {compiler.name!r} has no sharded entry point "
                         f"(compile_sharded), so it cannot run programs on sharded tensors "
                         f"or shard_jit programs")
    run, module = compile_graph_sharded(compiler, graph, mesh, in_sh, out_sh, prop, opts)
    return ShardedExecutable(graph, mesh, list(in_sh), list(out_sh), run, module)


def program_meshes(graph) -> list:
    """The meshes a traced graph names itself (shard_map and sharding constraints, at its
    top level), in order of first use."""
    meshes = []
    for e in graph.nodes:
        m = e.attrs.get("mesh") if e.op in ("shard_map", "sharding_constraint") else None
        if m is not None and m not in meshes:
            meshes.append(m)
    return meshes


def one_mesh(meshes, what) -> object:
    """The one mesh of ``meshes`` (``[(mesh, who)]``), or :class:`MeshMixError`."""
    first = None
    for mesh, who in meshes:
        if first is None:
            first = (mesh, who)
        elif mesh != first[0]:
            raise MeshMixError(
                f"{what}: {first[1]} is over {first[0]!r} (devices {list(first[0].devices)}) "
                f"but {who} is over {mesh!r} (devices {list(mesh.devices)}): one program runs "
                f"over one mesh; move one of them with nx.device_put(x, "
                f"nx.NamedSharding(mesh, spec))")
    return None if first is None else first[0]

