"""Collectives: ``all_gather`` (and, with the local view, the rest of the set).

In the global view (inside ``shard_jit``) a collective does not change values: it
changes how they are laid out. ``all_gather`` over the axes that shard a dim makes that
dim replicated; EXLA emits a real ``stablehlo.all_gather`` on the local shards with
replica groups derived from the mesh. Outside a mesh, or on an unsharded dim, it is the
identity and emits nothing.
"""
from __future__ import annotations

import threading

from .. import ops as O
from .. import shape as S
from ..tensor import Tensor
from .expr import EXPR, Expr

__all__ = ["all_gather", "mesh_context", "current_mesh"]

_local = threading.local()


class mesh_context:
    """Active while a ``shard_jit`` program is traced: its mesh and sharding propagator."""

    def __init__(self, mesh, propagator):
        self.mesh = mesh
        self.propagator = propagator

    def __enter__(self):
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _local.stack.pop()


def current_mesh():
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


_AG_OPTS = {"all_gather_dim", "axes", "replica_groups", "channel_id"}


def _options(opts, kwargs, allowed, op):
    if opts is not None and not isinstance(opts, dict):
        raise TypeError(f"{op}: expected options as a mapping or keyword arguments, got {opts!r}")
    merged = {**(opts or {}), **kwargs}
    unknown = sorted(set(merged) - allowed)
    if unknown:
        raise ValueError(f"{op}: unknown option{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown))}; expected {sorted(allowed)}")
    return merged


def _check_groups(groups, mesh, op):
    """Every partition exactly once, groups of equal size."""
    try:
        groups = [[int(p) for p in g] for g in groups]
    except TypeError:
        raise TypeError(f"{op}: replica_groups must be a list of lists of partition ids, "
                        f"got {groups!r}") from None
    flat = sorted(p for g in groups for p in g)
    if flat != list(range(mesh.size)):
        raise ValueError(f"{op}: replica_groups {groups} must contain every partition of mesh "
                         f"{mesh.name!r} (0..{mesh.size - 1}) exactly once")
    if len({len(g) for g in groups}) != 1:
        raise ValueError(f"{op}: replica_groups {groups} must all have the same size")
    return groups


def all_gather(tensor, opts=None, **kwargs):
    """Gathers ``all_gather_dim`` across the mesh axes that shard it.

    Options (a mapping or keyword arguments): ``all_gather_dim`` (required), ``axes`` (the
    mesh axes to gather over, by index or name; default: the axes sharding that dim at this
    point; given axes must be the minor-most of them, in order), ``replica_groups`` (an
    explicit list of partition-id groups, validated against the mesh), ``channel_id``.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit, all_gather
    >>> jit(lambda x: all_gather(x, all_gather_dim=0))(nx.tensor([1, 2])).tolist()  # no mesh
    [1, 2]
    """
    o = _options(opts, kwargs, _AG_OPTS, "all_gather")
    if "all_gather_dim" not in o:
        raise ValueError("all_gather: the all_gather_dim option is required")
    x = O.to_tensor(tensor, "tensor")
    dim = S.normalize_axis(o["all_gather_dim"], x.rank, x.names)
    channel = o.get("channel_id", 1)
    if isinstance(channel, bool) or not isinstance(channel, int) or channel < 1:
        raise ValueError(f"all_gather: channel_id must be a positive integer, got {channel!r}")
    ctx = current_mesh()
    if ctx is None or not isinstance(x.data, Expr):
        if o.get("axes") or o.get("replica_groups"):
            raise ValueError("all_gather: axes and replica_groups need a device mesh: call it "
                             "inside a function run by shard_jit (or shard_map)")
        return x
    mesh = ctx.mesh
    current = ctx.propagator.of(x)[dim]
    if o.get("axes") is None:
        axes = current
    else:
        given = o["axes"]
        given = [given] if isinstance(given, (int, str)) else list(given)
        axes = tuple(mesh.axis_index(a) for a in given)
        if len(set(axes)) != len(axes):
            raise ValueError(f"all_gather: axes {given} name a mesh axis twice")
        if axes and current[len(current) - len(axes):] != axes:
            names = [mesh.axis_names[a] for a in current]
            raise ValueError(
                f"all_gather: cannot gather dim {dim} over mesh axes "
                f"{[mesh.axis_names[a] for a in axes]}: at this point the dim is split over "
                f"{names or 'no axes (replicated)'}, and the global view can only gather the "
                f"minor-most of those, in order (use shard_map for other gathers)")
    derived = mesh.groups(axes) if axes else [[p] for p in range(mesh.size)]
    groups = derived
    if o.get("replica_groups") is not None:
        groups = _check_groups(o["replica_groups"], mesh, "all_gather")
        if sorted(map(tuple, groups)) != sorted(map(tuple, derived)):
            raise ValueError(
                f"all_gather: replica_groups {groups} do not gather dim {dim} in the order its "
                f"shards are laid out; for axes {[mesh.axis_names[a] for a in axes]} the groups "
                f"are {derived} (in any group order); use shard_map for arbitrary groups")
    if not axes:
        return x
    norm = {"all_gather_dim": dim, "axes": axes, "replica_groups": groups, "channel_id": channel}
    return EXPR.node("all_gather", Tensor(None, x.shape, x.type, x.names), x, norm)


def _eval_all_gather(ev, e, out, args, env, backend, **ctx):
    return args[0]  # global view: the values do not change


def _register():
    from ..backends.evaluator import register_eval_rule
    register_eval_rule("all_gather")(_eval_all_gather)


_register()
