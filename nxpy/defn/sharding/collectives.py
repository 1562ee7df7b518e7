"""Collectives, in two views.

Global view (inside ``shard_jit``, outside ``shard_map``): a collective does not change
values, it changes how they are laid out. ``all_gather`` over the axes that shard a dim
makes that dim replicated; EXLA emits a real ``stablehlo.all_gather`` on the local shards
with replica groups derived from the mesh. Outside a mesh, or on an unsharded dim, it is
the identity and emits nothing.

Local view (inside ``shard_map``): a function sees its own shard and calls collectives by
mesh axis, as in JAX: ``all_gather``, ``all_reduce`` (``psum``/``pmax``/``pmin``/``pmean``),
``reduce_scatter`` (``psum_scatter``), ``all_to_all``, ``collective_permute``
(``ppermute``), ``collective_broadcast``, ``axis_index``, and, from MLIR's shard dialect,
``all_slice`` and ``shift``. Axes are mesh axes by name or index, one or a tuple (order
significant: it orders the group, as ``axis_index`` counts).
"""
from __future__ import annotations

import threading

from ... import ops as O
from ...ops.core import check_kind, primitive
from ... import shape as S
from ... import types as T
from ...tensor import Tensor
from ..expr import EXPR, Expr

__all__ = ["all_gather", "mesh_context", "current_mesh"]

class _Meshes(threading.local):
    stack = None  # this thread's mesh contexts, innermost last


_meshes = _Meshes()


class mesh_context:
    """Active while a program over a mesh is traced. ``view`` is ``"global"`` (shard_jit:
    ``propagator`` gives shardings) or ``"local"`` (a shard_map body)."""

    def __init__(self, mesh, propagator=None, view="global"):
        self.mesh = mesh
        self.propagator = propagator
        self.view = view
        self.varying: dict = {}  # local view: node id -> the mesh axes its value varies along
        #: local view: the scopes whose values ``varying`` answers for (the body, the
        #: functions grad traces in it), not those of the body's loops and branches
        self.straight: set = set()

    def __enter__(self):
        stack = _meshes.stack
        if stack is None:
            stack = _meshes.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _meshes.stack.pop()


def current_mesh():
    """The innermost mesh context of this thread's traces (None outside any)."""
    stack = _meshes.stack
    return stack[-1] if stack else None


_AG_OPTS = {"all_gather_dim", "axes", "replica_groups", "channel_id", "tiled",
            "axis_index_groups"}


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


def _is_axis_name(a) -> bool:
    return isinstance(a, str) or (isinstance(a, (tuple, list)) and bool(a) and all(
        isinstance(n, str) for n in a))


def all_gather(tensor, opts=None, **kwargs):
    """Gathers ``all_gather_dim`` across the mesh axes that shard it.

    Nx's options (a mapping or keyword arguments): ``all_gather_dim`` (required),
    ``axes`` (the mesh axes to gather over, by index or name; default: the axes sharding
    that dim at this point; given axes must be the minor-most of them, in order),
    ``replica_groups`` (an explicit list of partition-id groups, validated against the
    mesh), ``channel_id``, ``tiled`` (default True).

    JAX's form, ``all_gather(x, axis_name, *, axis=0, tiled=False,
    axis_index_groups=None)`` (the axis name, or a tuple of them, second), has JAX's
    defaults: untiled, the gathered pieces stacked along a new dim ``axis``; tiled, they
    are concatenated along dim ``axis``.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit, all_gather, shard_map
    >>> jit(lambda x: all_gather(x, all_gather_dim=0))(nx.tensor([1, 2])).tolist()  # no mesh
    [1, 2]
    >>> mesh = nx.Mesh(nx.pjrt.devices()[:2], "i")
    >>> f = shard_map(lambda a: all_gather(a, "i"), mesh, in_specs=nx.P("i"), out_specs=nx.P())
    >>> f(nx.iota((4,))).shape, shard_map(lambda a: all_gather(a, "i", tiled=True), mesh,
    ...     in_specs=nx.P("i"), out_specs=nx.P())(nx.iota((4,))).shape
    ((2, 2), (4,))
    """
    if _is_axis_name(opts) or "axis_name" in kwargs:  # JAX's all_gather(x, axis_name, ...)
        name = kwargs.pop("axis_name") if opts is None else opts
        unknown = sorted(set(kwargs) - {"axis", "tiled", "axis_index_groups"})
        if unknown:
            raise TypeError(f"all_gather(x, axis_name, ...): unexpected keyword argument"
                            f"{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} (JAX's "
                            f"form takes axis, tiled and axis_index_groups; Nx's options are "
                            f"all_gather(x, all_gather_dim=..., axes=...))")
        opts, kwargs = None, {"axes": name, "all_gather_dim": kwargs.get("axis", 0),
                              "tiled": S.boolean(kwargs.get("tiled", False), "all_gather: tiled"),
                              "axis_index_groups": kwargs.get("axis_index_groups")}
    o = _options(opts, kwargs, _AG_OPTS, "all_gather")
    if "all_gather_dim" not in o:
        raise ValueError("all_gather: the all_gather_dim option is required")
    x = O.to_tensor(tensor, "tensor")
    tiled = o.get("tiled", True)
    ctx = current_mesh()
    if ctx is not None and ctx.view == "local":
        return _local_all_gather(ctx, x, o, tiled)
    if not tiled or o.get("axis_index_groups") is not None:
        raise ValueError("all_gather: tiled=False and axis_index_groups are local-view options: "
                         "use them inside shard_map")
    dim = _dim(x, o["all_gather_dim"], "all_gather", "all_gather_dim")
    channel = _channel(o, "all_gather")
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


def _channel(o, op):
    channel = o.get("channel_id", 1)
    if S.as_int(channel) is None or S.as_int(channel) < 1:
        raise ValueError(f"{op}: channel_id must be a positive integer, got {channel!r}")
    return S.as_int(channel)


# ----------------------------------------------------------------------------------------
# The local view
# ----------------------------------------------------------------------------------------
def _local(op):
    ctx = current_mesh()
    if ctx is None or ctx.view != "local":
        where = "outside any mesh" if ctx is None else "in the global view (shard_jit)"
        raise ValueError(f"{op} is a local-view collective and was called {where}: call it "
                         f"inside a function run by nxpy.defn.shard_map(fun, mesh, in_specs, "
                         f"out_specs)")
    return ctx


def _axes(ctx, axes, op) -> tuple:
    if axes is None:
        raise ValueError(f"{op}: the mesh axes to operate over are required (a name, an "
                         f"index or a tuple of them)")
    if isinstance(axes, str) or S.as_int(axes) is not None:
        given = [axes]
    else:
        try:
            given = list(axes)
        except TypeError:
            raise TypeError(f"{op}: expected the mesh axes to be a name, an index or a tuple "
                            f"of them, got {axes!r} ({type(axes).__name__})") from None
    if not given:
        raise ValueError(f"{op}: expected at least one mesh axis, got {axes!r}")
    out = tuple(ctx.mesh.axis_index(a) for a in given)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axes {given} name a mesh axis twice")
    return out


def _group_size(mesh, axes):
    n = 1
    for a in axes:
        n *= mesh.shape[a]
    return n


def _groups(ctx, axes, aig, op):
    """Replica groups (partition ids) for ``axes``, refined by ``axis_index_groups``."""
    mesh = ctx.mesh
    if aig is None:
        return mesh.groups(axes)
    n = _group_size(mesh, axes)
    try:
        aig = [[int(i) for i in g] for g in aig]
    except TypeError:
        raise TypeError(f"{op}: axis_index_groups must be a list of lists of indices along "
                        f"the axes, got {aig!r}") from None
    if sorted(i for g in aig for i in g) != list(range(n)) or len({len(g) for g in aig}) != 1:
        raise ValueError(f"{op}: axis_index_groups {aig} must split the {n} indices along "
                         f"axes {[mesh.axis_names[a] for a in axes]} into groups of equal size, "
                         f"each index exactly once")
    return mesh.groups(axes, aig)


def _dim(x, d, op, what, rank=None):
    rank = x.rank if rank is None else rank
    try:
        return S.normalize_axis(d, rank, x.names if rank == x.rank else None)
    except ValueError:
        raise ValueError(f"{op}: {what} {d!r} is out of range for a tensor of rank {rank} "
                         f"(shape {x.shape})") from None
    except TypeError:
        raise TypeError(f"{op}: expected {what} to be an integer or a dim name, got {d!r} "
                        f"({type(d).__name__})") from None


def _local_tensor(x, op):
    x = O.to_tensor(x, "x")
    if not isinstance(x.data, Expr):
        x = EXPR.lift(x)
    return x


def _node(op, shape, type, x, names=None, **attrs):
    return EXPR.node(op, Tensor(None, tuple(shape), type, names), x, **attrs)


def _local_all_gather(ctx, x, o, tiled):
    op = "all_gather"
    x = _local_tensor(x, op)
    axes = _axes(ctx, o.get("axes"), op)
    if o.get("replica_groups") is not None:
        raise ValueError("all_gather: in shard_map, give axes (and axis_index_groups), not "
                         "replica_groups")
    groups = _groups(ctx, axes, o.get("axis_index_groups"), op)
    n = len(groups[0])
    if tiled:
        d = _dim(x, o["all_gather_dim"], op, "all_gather_dim")
        shape = x.shape[:d] + (x.shape[d] * n,) + x.shape[d + 1:]
    else:
        d = _dim(x, o["all_gather_dim"], op, "all_gather_dim", x.rank + 1)
        shape = x.shape[:d] + (n,) + x.shape[d:]
    norm = {"all_gather_dim": d, "axes": axes, "replica_groups": groups,
            "channel_id": _channel(o, op), "tiled": bool(tiled), "view": "local"}
    return EXPR.node(op, Tensor(None, shape, x.type), x, norm)


_REDUCE_OPS = {"sum", "max", "min"}


def all_reduce(x, axes, op="sum", *, axis_index_groups=None):
    """Reduces ``x`` elementwise across the devices of each group along ``axes``."""
    ctx = _local("all_reduce")
    if op not in _REDUCE_OPS:
        raise ValueError(f"all_reduce: op must be one of {sorted(_REDUCE_OPS)}, got {op!r}")
    x = _local_tensor(x, "all_reduce")
    check_kind(f"all_reduce({op})", "x", x.type, "num" if op == "sum" else "real")
    axes = _axes(ctx, axes, "all_reduce")
    groups = _groups(ctx, axes, axis_index_groups, "all_reduce")
    return _node("all_reduce", x.shape, x.type, x, x.names, axes=axes, groups=groups, reduction=op)


def psum(x, axis_name, *, axis_index_groups=None):
    """JAX's name for ``all_reduce(x, axes, "sum")``."""
    return all_reduce(x, axis_name, "sum", axis_index_groups=axis_index_groups)


def pmax(x, axis_name, *, axis_index_groups=None):
    return all_reduce(x, axis_name, "max", axis_index_groups=axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
    return all_reduce(x, axis_name, "min", axis_index_groups=axis_index_groups)


def pmean(x, axis_name, *, axis_index_groups=None):
    """Mean across the group (a float result)."""
    ctx = _local("pmean")
    x = _local_tensor(x, "pmean")
    s = all_reduce(O.as_type(x, T.to_floating(x.type)), axis_name, "sum",
                   axis_index_groups=axis_index_groups)
    groups = _groups(ctx, _axes(ctx, axis_name, "pmean"), axis_index_groups, "pmean")
    return O.divide(s, len(groups[0]))


def reduce_scatter(x, axes, scatter_dim=0, tiled=True, *, axis_index_groups=None):
    """Sums across the group, then device ``k`` of the group keeps chunk ``k`` of
    ``scatter_dim`` (tiled: the dim shrinks by the group size; untiled: the dim must equal
    the group size and is removed)."""
    ctx = _local("reduce_scatter")
    x = _local_tensor(x, "reduce_scatter")
    check_kind("reduce_scatter", "x", x.type, "num")
    axes = _axes(ctx, axes, "reduce_scatter")
    groups = _groups(ctx, axes, axis_index_groups, "reduce_scatter")
    n = len(groups[0])
    d = _dim(x, scatter_dim, "reduce_scatter", "scatter_dim")
    if tiled:
        if x.shape[d] % n:
            raise ValueError(f"reduce_scatter: scatter_dim {d} of size {x.shape[d]} is not "
                             f"divisible by the group size {n}")
        shape = x.shape[:d] + (x.shape[d] // n,) + x.shape[d + 1:]
    else:
        if x.shape[d] != n:
            raise ValueError(f"reduce_scatter: with tiled=False, scatter_dim {d} must have the "
                             f"group size {n}, got {x.shape[d]}")
        shape = x.shape[:d] + x.shape[d + 1:]
    return _node("reduce_scatter", shape, x.type, x, axes=axes, groups=groups, scatter_dim=d,
                 tiled=bool(tiled))


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """JAX's name (and defaults) for ``reduce_scatter``."""
    return reduce_scatter(x, axis_name, scatter_dimension, tiled,
                          axis_index_groups=axis_index_groups)


def all_to_all(x, axes, split_axis, concat_axis, tiled=False, *, axis_index_groups=None):
    """Splits ``split_axis`` into one chunk per device of the group, sends chunk ``j`` to
    device ``j`` and concatenates what arrives along ``concat_axis``. Untiled (JAX's
    default): ``split_axis`` must have the group size; it is removed and a dim of the group
    size is inserted at ``concat_axis``."""
    ctx = _local("all_to_all")
    x = _local_tensor(x, "all_to_all")
    axes = _axes(ctx, axes, "all_to_all")
    groups = _groups(ctx, axes, axis_index_groups, "all_to_all")
    n = len(groups[0])
    sa = _dim(x, split_axis, "all_to_all", "split_axis")
    ca = _dim(x, concat_axis, "all_to_all", "concat_axis")
    if tiled:
        if x.shape[sa] % n:
            raise ValueError(f"all_to_all: split_axis {sa} of size {x.shape[sa]} is not "
                             f"divisible by the group size {n}")
        shape = list(x.shape)
        shape[sa] //= n
        shape[ca] *= n
    else:
        if x.shape[sa] != n:
            raise ValueError(f"all_to_all: with tiled=False, split_axis {sa} must have the "
                             f"group size {n}, got {x.shape[sa]}")
        rest = x.shape[:sa] + x.shape[sa + 1:]
        shape = rest[:ca] + (n,) + rest[ca:]
    return _node("all_to_all", shape, x.type, x, axes=axes, groups=groups, split_axis=sa,
                 concat_axis=ca, tiled=bool(tiled))


def _pairs(ctx, axes, perm, op):
    n = _group_size(ctx.mesh, axes)
    try:
        perm = [S.integers(p, "pair") for p in perm]
        if any(len(p) != 2 for p in perm):
            raise ValueError
    except (TypeError, ValueError):
        raise TypeError(f"{op}: perm must be a list of (source, destination) index pairs, "
                        f"got {perm!r}") from None
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if any(not 0 <= i < n for i in srcs + dsts):
        raise ValueError(f"{op}: perm {perm} has an index outside [0, {n}) (the size of axes "
                         f"{[ctx.mesh.axis_names[a] for a in axes]})")
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"{op}: perm {perm} must name each source and each destination at "
                         f"most once")
    return perm


def collective_permute(x, axes, perm):
    """Device at index ``s`` along ``axes`` sends to index ``d``, for each ``(s, d)`` in
    ``perm``; devices that receive nothing get zeros. Indices count along ``axes`` in the
    order given, exactly as ``axis_index(axes)`` does."""
    ctx = _local("collective_permute")
    x = _local_tensor(x, "collective_permute")
    axes = _axes(ctx, axes, "collective_permute")
    perm = _pairs(ctx, axes, perm, "collective_permute")
    groups = ctx.mesh.groups(axes)
    pairs = [(g[s], g[d]) for g in groups for s, d in perm]
    return _node("collective_permute", x.shape, x.type, x, x.names, axes=axes, pairs=pairs)


def ppermute(x, axis_name, perm):
    """JAX's name for ``collective_permute``."""
    return collective_permute(x, axis_name, perm)


def shift(x, axes, offset, rotate=False):
    """Moves each device's value ``offset`` places along one mesh axis (from the MLIR shard
    dialect); with ``rotate`` the ends wrap, otherwise devices shifted past the end send
    nothing and the ones at the start receive zeros."""
    ctx = _local("shift")
    x = _local_tensor(x, "shift")
    axes = _axes(ctx, axes, "shift")
    if len(axes) != 1:
        raise ValueError(f"shift: moves along one mesh axis, got {len(axes)}")
    offset = S.integer(offset, "shift: offset")
    n = ctx.mesh.shape[axes[0]]
    perm = [(k, (k + offset) % n) for k in range(n)] if rotate else \
        [(k, k + offset) for k in range(n) if 0 <= k + offset < n]
    groups = ctx.mesh.groups(axes)
    pairs = [(g[s], g[d]) for g in groups for s, d in perm]
    return _node("collective_permute", x.shape, x.type, x, x.names, axes=axes, pairs=pairs)


def collective_broadcast(x, axes, source=0):
    """Every device of the group gets the value of the device at index ``source``."""
    ctx = _local("collective_broadcast")
    x = _local_tensor(x, "collective_broadcast")
    axes = _axes(ctx, axes, "collective_broadcast")
    n = _group_size(ctx.mesh, axes)
    if S.as_int(source) is None or not 0 <= S.as_int(source) < n:
        raise ValueError(f"collective_broadcast: source must be an index in [0, {n}), got "
                         f"{source!r}")
    return _node("collective_broadcast", x.shape, x.type, x, x.names, axes=axes,
                 groups=ctx.mesh.groups(axes), source=source)


def axis_size(axis_name) -> int:
    """The number of devices along mesh axis ``axis_name`` (or the product for a tuple
    of axes), as ``jax.lax.axis_size``: a Python int, inside ``shard_map`` (or a
    ``shard_jit``).

    >>> import nxpy as nx
    >>> from nxpy.defn import shard_map, axis_size
    >>> f = shard_map(lambda a: a * axis_size("i"), nx.Mesh(nx.pjrt.devices()[:4], "i"),
    ...               in_specs=nx.P("i"), out_specs=nx.P("i"))
    >>> f(nx.full((4,), 1, type="s32")).tolist()
    [4, 4, 4, 4]
    """
    ctx = current_mesh()
    if ctx is None:
        raise ValueError(f"axis_size: axis {axis_name!r} is not bound: call it inside a "
                         f"function run by shard_map (or shard_jit) over a mesh with that axis")
    return _group_size(ctx.mesh, _axes(ctx, axis_name, "axis_size"))


def axis_index(axes):
    """This device's index along ``axes`` (an s32 scalar; several axes count in the order
    given, the first major)."""
    ctx = _local("axis_index")
    axes = _axes(ctx, axes, "axis_index")
    return EXPR.node("axis_index", Tensor(None, (), T.S32), axes=axes)


def pcast(x, axis_name, *, to):
    """``x`` (a value of a ``shard_map`` body) typed as varying along mesh axes
    ``axis_name`` (a name or a tuple of them), as ``jax.lax.pcast(x, axis_name,
    to="varying")``: the same value on every device, which ``check_vma`` and ``typeof``
    then take as varying (a loop carry that meets varying values, an out_spec that names
    the axis); its gradient sums the cotangent over the axes, as JAX's transpose does.

    >>> import nxpy as nx
    >>> from nxpy.defn import shard_map, pcast
    >>> f = shard_map(lambda a: pcast(a, "i", to="varying"), nx.Mesh(nx.pjrt.devices()[:2],
    ...               "i"), in_specs=nx.P(), out_specs=nx.P("i"))
    >>> f(nx.tensor([1.0, 2.0])).tolist()
    [1.0, 2.0, 1.0, 2.0]
    """
    if to in ("reduced", "unreduced"):
        raise NotImplementedError(f"pcast: to={to!r} (reduced and unreduced values, "
                                  f"P(..., unreduced=...)) is not supported by nxpy")
    if to != "varying":
        raise ValueError(f"pcast: got unexpected `to` value {to!r}. Allowed `to` values are: "
                         f"'varying' (and JAX's 'reduced', 'unreduced', which nxpy does not "
                         f"support)")
    ctx = _local("pcast")
    axes = _axes(ctx, axis_name, "pcast")
    x = _local_tensor(x, "pcast")
    # a select between x and itself on this device's index: the value, varying along axes
    # (XLA folds it away); no op of its own, so every compiler and transform runs it
    on = O.greater_equal(axis_index(axes), O.tensor(0, type=T.S32))
    return O.select(O.broadcast(on, x.shape) if x.shape else on, x, x)


def pvary(x, axis_name):
    """``jax.lax.pvary``: :func:`pcast` to ``"varying"``."""
    return pcast(x, axis_name, to="varying")


def all_slice(x, axes, slice_dim):
    """The inverse of a tiled all_gather: each device keeps its own chunk of ``slice_dim``
    of a value replicated over ``axes`` (from the MLIR shard dialect; no communication)."""
    ctx = _local("all_slice")
    x = _local_tensor(x, "all_slice")
    axes = _axes(ctx, axes, "all_slice")
    n = _group_size(ctx.mesh, axes)
    d = _dim(x, slice_dim, "all_slice", "slice_dim")
    if x.shape[d] % n:
        raise ValueError(f"all_slice: slice_dim {d} of size {x.shape[d]} is not divisible by "
                         f"the group size {n}")
    shape = x.shape[:d] + (x.shape[d] // n,) + x.shape[d + 1:]
    return _node("all_slice", shape, x.type, x, axes=axes, slice_dim=d)


# ops whose result varies along their axes / stops varying along them
VARYING_OPS = {"axis_index", "collective_permute", "reduce_scatter", "all_to_all", "all_slice"}
INVARIANT_OPS = {"all_gather", "all_reduce", "collective_broadcast"}
primitive("collectives", *VARYING_OPS, *INVARIANT_OPS)

__all__ += ["axis_size", "pcast", "pvary", "all_reduce", "psum", "pmax", "pmin", "pmean",
            "reduce_scatter", "psum_scatter", "all_to_all", "collective_permute", "ppermute",
            "shift", "collective_broadcast", "axis_index", "all_slice", "VARYING_OPS",
            "INVARIANT_OPS"]
