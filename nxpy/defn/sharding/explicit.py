"""Explicit sharding ("sharding in types", JAX's default for ``make_mesh``): over mesh axes
of type ``AxisType.Explicit`` a value's layout is part of its type, which :func:`typeof`
shows (``f32[8@X,4]``), and an op whose operands' layouts do not say how its result is laid
out is an error (:class:`ShardingTypeError`, where JAX raises one) instead of a choice the
partitioner makes. Inside ``shard_map`` (Manual axes) the type shows the axes a value
varies along (``f32[2]{V:i}``).

The layout of a traced value is what nxpy's propagation gives it (the rules of
:mod:`nxpy.defn.sharding.specs`, which follow JAX's); the checks here run when each node is
recorded, over the mesh being traced, for the ops JAX's rules reject: elementwise operands
laid out differently along one dim or using one axis twice, a dot contracting dims sharded
on both sides (without ``out_sharding``), batch dims laid out differently, free dims
sharded along one axis, a reshape that would lose an axis, a slice of a sharded dim, and
sorting or scanning along one.

>>> import nxpy as nx
>>> import nxpy.numpy as xnp
>>> mesh = nx.make_mesh((2, 4), ("X", "Y"))
>>> with nx.set_mesh(mesh):
...     x = nx.reshard(xnp.arange(32.0).reshape(8, 4), nx.P("X", None))
...     y = nx.reshard(xnp.arange(32.0).reshape(8, 4), nx.P(None, "X"))
...     print(nx.typeof(x), nx.typeof(x * 2), nx.typeof(x.T))
...     try:
...         x + y
...     except nx.ShardingTypeError as e:
...         print(e)
float32[8@X,4] float32[8@X,4] float32[4,8@X]
add operation with inputs: f32[8@X,4], f32[8,4@X] produces an illegally sharded result: f32[8@X,4@X]
"""
from __future__ import annotations

import contextlib
import math

from ... import _context, ops as O
from ...layout import NamedSharding
from ...mesh import AxisType, get_mesh
from ...ops.core import derive_rule
from ...registry import rule_registrar
from ...tensor import Tensor
from ..expr import Expr
from .collectives import current_mesh
from .varying import analyze_nodes, subgraph

__all__ = ["ShardingTypeError", "ArrayType", "typeof", "get_abstract_mesh", "explicit_axes_of",
           "EXPLICIT_CHECKS", "register_explicit_check", "axis_types_in", "no_checks",
           "vma_of", "checking", "check_node", "alias", "explicit_part"]


class ShardingTypeError(TypeError):
    """An op over explicit mesh axes whose operands' layouts leave its result's layout
    ambiguous or invalid (JAX's ``ShardingTypeError``): give the op's ``out_sharding=``,
    or ``nx.reshard`` an operand first, or run that part under ``auto_axes``."""


class _ManualAxisType:
    __slots__ = ("varying",)

    def __init__(self, varying):
        self.varying = set(varying)

    def __repr__(self):
        return f"ManualAxisType(varying={self.varying})"


class ArrayType:
    """The type of a value, as ``jax.typeof`` gives it: ``shape``, ``dtype`` (an nxpy type),
    ``sharding`` (a ``NamedSharding``: its explicit axes are part of the type; None for a
    value not on a mesh) and ``vma`` (the mesh axes a ``shard_map`` body's value varies
    along). Printed as JAX prints it: ``float32[8@X,4@(Y,Z)]``, ``int32[]{V:i}`` (the
    errors of explicit sharding name types as nxpy does, ``f32[8@X,4]``)."""

    __slots__ = ("shape", "dtype", "sharding", "vma")

    def __init__(self, shape, dtype, sharding=None, vma=frozenset()):
        self.shape, self.dtype, self.sharding, self.vma = tuple(shape), dtype, sharding, vma

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def manual_axis_type(self):
        """JAX's ``aval.manual_axis_type``: ``varying``, the axes the value varies along."""
        return _ManualAxisType(self.vma)

    def __str__(self):
        if self.sharding is None:
            dims = _dims(self.shape, ((),) * len(self.shape), None)
        else:
            mesh = self.sharding.mesh
            dims = _dims(self.shape, explicit_part(self.sharding.axes(len(self.shape)),
                                                   explicit_axes_of(mesh)), mesh)
        vma = ""
        if self.vma:
            names = sorted(self.vma, key=self._axis_order)
            vma = "{V:" + (names[0] if len(names) == 1 else f"({','.join(names)})") + "}"
        return f"{self.dtype.dtype.name}[{dims}]{vma}"

    def _axis_order(self, name):
        mesh = self.sharding.mesh if self.sharding is not None else None
        return mesh.axis_names.index(name) if mesh is not None and name in mesh.axis_names \
            else 0

    def __repr__(self):
        return f"ShapedArray({self})"

    def __eq__(self, other):
        return isinstance(other, ArrayType) and str(self) == str(other)

    def __hash__(self):
        return hash(str(self))


# ----------------------------------------------------------------------------------------
# Which mesh axes are explicit here: the mesh's types, as auto_axes/explicit_axes change them
# ----------------------------------------------------------------------------------------
def _overrides() -> dict:
    o = _context._local.axis_types
    return {} if o is None else o


@contextlib.contextmanager
def axis_types_in(names, axis_type):
    """Mesh axes ``names`` are of ``axis_type`` within the block (``auto_axes``,
    ``explicit_axes``)."""
    before = _overrides()
    _context.set_sharding_state(axis_types={**before, **{n: axis_type for n in names}})
    try:
        yield
    finally:
        _context.set_sharding_state(axis_types=before)


@contextlib.contextmanager
def no_checks():
    """The explicit-mode checks are off within the block (an op given ``out_sharding``:
    its result's layout is said)."""
    before = _context._local.explicit_off
    _context.set_sharding_state(explicit_off=before + 1)
    try:
        yield
    finally:
        _context.set_sharding_state(explicit_off=before)


def explicit_part(axes, explicit) -> tuple:
    """Per-dim ``axes`` (mesh axis indices) keeping only the ``explicit`` ones: the part of a
    layout that is a value's type."""
    return tuple(tuple(a for a in ax if a in explicit) for ax in axes)


def explicit_axes_of(mesh) -> frozenset:
    """The indices of ``mesh``'s axes that are explicit here."""
    o = _overrides()
    return frozenset(i for i, (n, t) in enumerate(zip(mesh.axis_names, mesh.axis_types))
                     if o.get(n, t) is AxisType.Explicit)


def get_abstract_mesh():
    """The mesh in context, as ``jax.sharding.get_abstract_mesh``: the mesh of the program
    being traced, else the context mesh (``nx.set_mesh``), with its axis types as
    ``auto_axes``/``explicit_axes`` set them here; None when there is none."""
    ctx = current_mesh()
    mesh = ctx.mesh if ctx is not None else get_mesh()
    if mesh is None:
        return None
    o = _overrides()
    if ctx is not None and ctx.view == "local":
        o = {**o, **{n: AxisType.Manual for n in mesh.axis_names}}
    types = tuple(o.get(n, t) for n, t in zip(mesh.axis_names, mesh.axis_types))
    return mesh if types == mesh.axis_types else mesh.with_axis_types(types)


# ----------------------------------------------------------------------------------------
# typeof
# ----------------------------------------------------------------------------------------
def vma_of(ctx, x) -> frozenset:
    """The mesh axes (names) along which ``x``, a value of the ``shard_map`` body being
    traced in ``ctx``, varies."""
    e = x.data
    memo = ctx.varying
    if e.id not in memo:
        analyze_nodes(subgraph(e, memo), ctx.mesh, None, memo)
    return frozenset(ctx.mesh.axis_names[a] for a in memo.get(e.id, ()))


def typeof(x) -> ArrayType:
    """The type of ``x`` (a tensor, a traced value, an array or a number), as ``jax.typeof``:
    its shape, type and, over explicit mesh axes, its layout; inside ``shard_map``, the axes
    it varies along.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> print(nx.typeof(nx.iota((4, 2))))
    int32[4,2]
    >>> with nx.set_mesh(nx.make_mesh((2,), ("X",))):
    ...     x = nx.device_put(nx.iota((4, 2), type="f32"), nx.P("X"))
    ...     r = jit(lambda a: print(nx.typeof(nx.sum(a, axes=[1]))) or a)(x)
    float32[4@X]
    """
    if isinstance(x, Tensor) and isinstance(x.data, Expr):
        ctx = current_mesh()
        if ctx is None:
            return ArrayType(x.shape, x.type)
        if ctx.view == "local":
            return ArrayType(x.shape, x.type, NamedSharding(ctx.mesh), vma_of(ctx, x))
        if ctx.propagator is None:
            return ArrayType(x.shape, x.type, NamedSharding(ctx.mesh))
        return ArrayType(x.shape, x.type, ctx.propagator.layout(x))
    t = x if isinstance(x, Tensor) else O.to_tensor(x, "typeof: x")
    return ArrayType(t.shape, t.type, t.sharding)


def alias(outer, inner) -> None:
    """The parameters ``inner`` of a function traced inside the program (``grad``'s) are
    laid out as the values ``outer`` they stand for (so that their types, and a
    ``shard_map`` inferring its specs from them, see those layouts)."""
    ctx = current_mesh()
    if ctx is None or ctx.view != "global" or ctx.propagator is None:
        return
    prop = ctx.propagator
    for o, i in zip(outer, inner):
        if isinstance(o, Tensor) and isinstance(o.data, Expr):
            prop.memo[i.data.id] = prop.of(o)


# ----------------------------------------------------------------------------------------
# The checks, per op, run as each node is recorded over explicit axes
# ----------------------------------------------------------------------------------------
EXPLICIT_CHECKS: dict = {}

register_explicit_check = rule_registrar(
    EXPLICIT_CHECKS, "register_explicit_check", "an explicit-sharding check",
    """Decorator: ``check(prop, e, shardings)`` for ``ops``: raises
    :class:`ShardingTypeError` where JAX's sharding rule for the op rejects its operands'
    layouts (``shardings``: each tensor operand's per-dim axes, only the explicit ones;
    ``prop``: the propagator, whose ``mesh`` is the program's).""")


@contextlib.contextmanager
def checking(prop):
    """Within the block (a program traced over ``prop.mesh``), each node recorded is
    checked as it is (:func:`check_node`)."""
    before = _context._local.node_check
    _context._local.node_check = lambda e: check_node(prop, e)
    try:
        yield
    finally:
        _context._local.node_check = before


def check_node(prop, e: Expr) -> None:
    """Runs ``e``'s explicit-sharding check (the mesh context's node hook)."""
    check = EXPLICIT_CHECKS.get(e.op)
    if check is None or e.scope.parent is not None or _context._local.explicit_off:
        return
    explicit = explicit_axes_of(prop.mesh)
    if not explicit:
        return
    shardings = [explicit_part(prop.of(a), explicit) for a in e.tensor_args()]
    check(prop, e, shardings)


def _dims(shape, axes, mesh) -> str:
    """``8@X,4@(Y,Z),2``: each dim's size and the mesh axes (indices) that split it."""
    dims = []
    for n, ax in zip(shape, axes):
        names = [mesh.axis_names[a] for a in ax]
        dims.append(str(n) if not names else f"{n}@{names[0]}" if len(names) == 1
                    else f"{n}@({','.join(names)})")
    return ",".join(dims)


def _type_str(shape, t, axes, mesh) -> str:
    return f"{t}[{_dims(shape, axes, mesh)}]"


def _entries(axes, mesh) -> str:
    out = []
    for ax in axes:
        names = tuple(mesh.axis_names[a] for a in ax)
        out.append(None if not names else names[0] if len(names) == 1 else names)
    return repr(tuple(out))


@derive_rule(EXPLICIT_CHECKS, "elementwise")
def _elementwise(prop, e, shardings):
    mesh = prop.mesh
    rank = len(e.shape)
    ops = [a for a in e.tensor_args()]
    result = [()] * rank
    for d in range(rank):
        cands = []
        for a, sh in zip(ops, shardings):
            off = rank - len(a.shape)
            if d >= off and a.shape[d - off] == e.shape[d] and sh[d - off]:
                cands.append(sh[d - off])
        if any(c != cands[0] for c in cands):
            specs = ", ".join(_entries(sh, mesh) for sh in shardings)
            raise ShardingTypeError(f"{e.op} got incompatible shardings for broadcasting: "
                                    f"{specs}.")
        result[d] = cands[0] if cands else ()
    used = [a for ax in result for a in ax]
    if len(set(used)) != len(used):
        ins = ", ".join(_type_str(a.shape, a.type, sh, mesh) for a, sh in zip(ops, shardings))
        raise ShardingTypeError(f"{e.op} operation with inputs: {ins} produces an illegally "
                                f"sharded result: {_type_str(e.shape, e.type, result, mesh)}")


@register_explicit_check("dot")
def _dot(prop, e, shardings):
    mesh = prop.mesh
    a, b = e.tensor_args()
    sa, sb = shardings
    at = e.attrs
    ca = [sa[i] for i in at["contract_a"]]
    cb = [sb[j] for j in at["contract_b"]]
    if any(ca) and any(cb):
        raise ShardingTypeError(
            f"Contracting dimensions are sharded and it is ambiguous how the output should be "
            f"sharded. Please specify the output sharding via the `out_sharding` parameter. "
            f"Got lhs_contracting_spec={_entries(ca, mesh)} and "
            f"rhs_contracting_spec={_entries(cb, mesh)}")
    ba = [sa[i] for i in at["batch_a"]]
    bb = [sb[j] for j in at["batch_b"]]
    if ba != bb:
        raise ShardingTypeError(
            f"dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
            f"same sharding, got {_entries(ba, mesh)} and {_entries(bb, mesh)}.")
    fa = [sa[i] for i in range(len(a.shape)) if i not in at["contract_a"]
          and i not in at["batch_a"]]
    fb = [sb[j] for j in range(len(b.shape)) if j not in at["contract_b"]
          and j not in at["batch_b"]]
    result = ba + fa + fb
    used = [x for ax in result for x in ax]
    if len(set(used)) != len(used):
        raise ShardingTypeError(
            f"dot_general operation with inputs: {_type_str(a.shape, a.type, sa, mesh)}, "
            f"{_type_str(b.shape, b.type, sb, mesh)} produces an illegally sharded result: "
            f"{_type_str(e.shape, e.type, result, mesh)}")


@register_explicit_check("reshape")
def _reshape(prop, e, shardings):
    """JAX splits and merges sharded dims where the blocks stay contiguous (nxpy's
    propagation rule): a reshape after which an explicit axis would be lost is an error."""
    kept = {a for ax in prop.of(e) for a in ax}
    lost = {a for ax in shardings[0] for a in ax} - kept
    if lost:
        (x,) = e.tensor_args()
        raise ShardingTypeError(
            f"This reshape is not supported. Please specify the sharding of the output via "
            f"the `out_sharding` argument of reshape. Got operand type: "
            f"{_type_str(x.shape, x.type, shardings[0], prop.mesh)}, new sizes: {e.shape}")


@register_explicit_check("slice", "dynamic_slice")
def _slice(prop, e, shardings):
    """JAX keeps a sliced dim's axes when its new size divides into their blocks; otherwise
    it has no layout for the result."""
    mesh = prop.mesh
    for d, ax in enumerate(shardings[0]):
        n = math.prod(mesh.axis_sizes[a] for a in ax)
        if ax and e.shape[d] % n:
            names = ",".join(mesh.axis_names[a] for a in ax)
            raise ShardingTypeError(
                f"slicing on sharded dims where out dim ({e.shape[d]}) is not divisible by "
                f"mesh axes ({n}) with spec ({names}) is not implemented: reshard the input "
                f"(nx.reshard) so that dim {d} is unsharded first")


@derive_rule(EXPLICIT_CHECKS, "along_axes")
def _along_axes(prop, e, shardings):
    mesh = prop.mesh
    (x,) = e.tensor_args()[:1]
    axes = e.attrs["axes"] if "axes" in e.attrs else (e.attrs["axis"],)
    for d in axes:
        if shardings[0][d]:
            raise ShardingTypeError(
                f"{e.op} works along dim {d} of {_type_str(x.shape, x.type, shardings[0], mesh)}, "
                f"which must be unsharded over that dim (it is sharded over "
                f"{[mesh.axis_names[a] for a in shardings[0][d]]}): reshard it first "
                f"(nx.reshard)")

