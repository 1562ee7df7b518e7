"""``shard_map``: per-shard programs (the local view, JAX semantics).

Inside, a function sees its own shard and calls collectives by mesh axis. Specs use the
``input_shardings`` format (a dict per argument, ``{tensor_dim: [mesh_axes]}``) or a
per-dim tuple like JAX's ``PartitionSpec`` (``None``, an axis, or a tuple of axes per dim).

>>> import nxpy as nx
>>> from nxpy.defn import shard_map, psum, axis_index
>>> mesh = nx.Mesh("mesh", (2, 2), axis_names=("x", "y"))
>>> f = shard_map(lambda a: psum(a * (axis_index("x") + 1), "x"), mesh,
...               in_specs=("x", None), out_specs=(None, None))
>>> f(nx.tensor([[1, 1], [10, 10]])).tolist()
[[21, 21]]
"""
from __future__ import annotations

from .. import _context
from ..mesh import Mesh
from ..ops import primitive, to_tensor
from ..tensor import Tensor, shape_str
from . import sharding as SH
from . import tree as tree_mod
from .collectives import current_mesh, mesh_context
from .core import jit
from .expr import EXPR, Expr, trace_fn
from .varying import analyze

__all__ = ["shard_map", "ShardMap", "spec_to_dict", "varying_axes"]

primitive("control flow", "shard_map")


def _partition_spec(spec):
    """JAX's PartitionSpec (not a tuple in jax 0.10) as a plain tuple."""
    return tuple(spec) if type(spec).__name__ in ("PartitionSpec", "P") else spec


def spec_to_dict(spec):
    """A JAX-style per-dim spec (``("x", None, ("x", "y"))``) as an input_shardings dict."""
    spec = _partition_spec(spec)
    if isinstance(spec, dict):
        return spec
    if spec is None:
        return {}
    if not isinstance(spec, (tuple, list)):
        raise TypeError(f"expected a spec: a dict {{tensor_dim: [mesh_axes]}} or a per-dim "
                        f"tuple (None, an axis, or a tuple of axes per dim), got {spec!r}")
    out = {}
    for d, entry in enumerate(spec):
        if entry is None:
            continue
        out[d] = list(entry) if isinstance(entry, (tuple, list)) else [entry]
    return out


def _is_single_spec(specs):
    specs = _partition_spec(specs)
    if isinstance(specs, dict) or specs is None:
        return True
    if isinstance(specs, list):
        return False
    # a tuple is a per-dim spec unless it holds dicts / lists (one spec per argument)
    return isinstance(specs, tuple) and not any(isinstance(s, (dict, list)) for s in specs)


def _per_leaf(specs, groups, what):
    """``groups``: the number of leaves of each argument (or output). Each leaf's spec is
    given as ``(dict, spec)``: the spec as given checks its length against the rank."""
    if _is_single_spec(specs):
        return [(spec_to_dict(specs), specs)] * sum(groups)
    specs = list(specs)
    if len(specs) != len(groups):
        raise ValueError(f"shard_map: expected {len(groups)} {what} (one per "
                         f"{'argument' if what == 'in_specs' else 'output'}), got {len(specs)}")
    return [(spec_to_dict(s), s) for s, n in zip(specs, groups) for _ in range(n)]


def _normalize(spec, given, x, mesh, what):
    """A leaf's spec normalised; a per-dim spec longer than the rank is an error (as in
    JAX), even when the extra entries are None."""
    given = _partition_spec(given)
    if isinstance(given, (tuple, list)) and len(given) > x.rank:
        raise ValueError(f"shard_map: {what} {given!r} has {len(given)} entries but the "
                         f"tensor has rank {x.rank} (shape {x.shape})")
    return SH.normalize(spec, x.shape, mesh, x.names, what=f"shard_map {what}")


def _fmt_axes(mesh, axes):
    return ", ".join(repr(mesh.axis_names[a]) for a in sorted(axes))


class ShardMap:
    """The callable ``shard_map`` returns. Inside a defn it records a ``shard_map`` node;
    called directly it jits itself (with ``compiler=`` if given)."""

    def __init__(self, fun, mesh, in_specs, out_specs, check_vma=True, **jit_opts):
        if not callable(fun):
            raise TypeError(f"shard_map: expected fun to be a callable, got {fun!r}")
        if not isinstance(mesh, Mesh):
            raise TypeError(f"shard_map: expected mesh to be an nx.Mesh, got {mesh!r}")
        self.fun, self.mesh = fun, mesh
        self.in_specs, self.out_specs = in_specs, out_specs
        self.check_vma = check_vma
        self._jit = None
        self._jit_opts = jit_opts

    def __call__(self, *args):
        if not _context.tracing():
            if self._jit is None:
                self._jit = jit(lambda *a: self(*a), **self._jit_opts)
            return self._jit(*args)
        return self._trace(args)

    def _trace(self, args):
        mesh = self.mesh
        ctx = current_mesh()
        if ctx is not None and ctx.view == "local":
            raise ValueError("shard_map cannot be nested inside another shard_map")
        if ctx is not None and ctx.mesh != mesh:
            raise ValueError(f"shard_map over {mesh!r} inside a shard_jit over {ctx.mesh!r}: "
                             f"use the same mesh")
        leaves, tree = tree_mod.flatten(tuple(args))
        inputs = [EXPR.lift(to_tensor(x, f"argument leaf {i}")) for i, x in enumerate(leaves)]
        counts = [len(tree_mod.flatten(a)[0]) for a in args]
        in_sh = []
        for i, ((spec, given), x) in enumerate(zip(_per_leaf(self.in_specs, counts, "in_specs"),
                                                   inputs)):
            sh = _normalize(spec, given, x, mesh, f"in_spec of argument leaf {i}")
            for d, axes in enumerate(sh):
                f = SH._factor(sh, mesh, d)
                if x.shape[d] % f:
                    raise ValueError(f"shard_map: dim {d} of argument leaf {i} (size "
                                     f"{x.shape[d]}) is not divisible by {f} (mesh axes "
                                     f"[{_fmt_axes(mesh, axes)}])")
            in_sh.append(sh)
        local = [(SH.local_shape(x.shape, s, mesh), x.type, x.names) for x, s in zip(inputs, in_sh)]
        in_axes = [frozenset(a for d in s for a in d) for s in in_sh]

        def run(a, ctx):
            for p, axes in zip(tree_mod.flatten(a)[0], in_axes):
                ctx.varying[p.data.id] = axes  # what grad inside the body starts from
            return self.fun(*a)

        with mesh_context(mesh, view="local") as ctx:
            body = trace_fn(lambda a: run(a, ctx), local, tree=tree, parent=_context.current())
        out_groups = [1] * len(body.outputs)
        out_sh, templates = [], []
        for i, ((spec, given), o) in enumerate(zip(_per_leaf(self.out_specs, out_groups,
                                                             "out_specs"), body.outputs)):
            sh = _normalize(spec, given, o, mesh, f"out_spec of output {i}")
            out_sh.append(sh)
            templates.append((SH.global_shape(o.shape, sh, mesh), o.type, o.names))
        if self.check_vma:
            for i, (v, sh) in enumerate(zip(varying_axes(body, in_axes, mesh), out_sh)):
                missing = v - {a for d in sh for a in d}
                if missing:
                    raise ValueError(
                        f"shard_map: output {i} is declared replicated over mesh axes "
                        f"[{_fmt_axes(mesh, missing)}] (its out_spec does not name them) but "
                        f"its value varies along them; name them in out_specs, reduce over "
                        f"them (psum, all_gather), or pass check_vma=False")
        outs = EXPR.multi("shard_map", templates, *inputs, fns=(body,), mesh=mesh,
                          in_specs=tuple(in_sh), out_specs=tuple(out_sh))
        return tree_mod.unflatten(body.tree, outs)


def shard_map(fun, mesh, in_specs, out_specs, *, check_vma=True, **jit_opts) -> ShardMap:
    """Runs ``fun`` on each device's shard. ``in_specs``: one spec per argument (or one
    spec for all); ``out_specs``: one per output (or one for all). With ``check_vma`` (the
    default) an output declared replicated over an axis along which its value provably
    varies is an error."""
    return ShardMap(fun, mesh, in_specs, out_specs, check_vma, **jit_opts)


def varying_axes(fn, param_axes, mesh) -> list[frozenset]:
    """For each output of ``fn`` (a shard_map body), the mesh axes along which its value
    varies between devices (see :mod:`nxpy.defn.varying`)."""
    memo = analyze(fn, param_axes, mesh)
    return [memo.get(o.data.id, frozenset()) for o in fn.outputs]


@SH.register_sharding_rule("elem")
def _propagate_elem(prop, e, args):
    """Global view: a shard_map result is laid out as its out_spec says."""
    parent = e.args[0]
    if isinstance(parent, Expr) and parent.op == "shard_map":
        return parent.attrs["out_specs"][e.attrs["index"]]
    return SH.replicated(len(e.shape))
