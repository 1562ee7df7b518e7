"""Importer rules for ``stablehlo.gather`` and ``stablehlo.scatter``, in the general forms
JAX emits (``jnp.take``, ``x[idx]``, ``jnp.take_along_axis``, ``x.at[i].get/set/add``):
each is rebuilt from nxpy's ``gather`` / ``indexed_add`` / ``indexed_put`` (which index
whole elements along sorted axes, batch dims first) with the transposes, reshapes and
iotas that map StableHLO's dimension numbers onto them:

* the index vector dim is moved last; batching dims (``operand_batching_dims``) become
  extra coordinates taken from an iota over the matching indices dim;
* an indexed dim with a window (``slice_sizes`` > 1, or not collapsed) is expanded into
  a batch dim of coordinates ``start + iota`` (start clamped as XLA's gather clamps it;
  for a scatter a window that does not fit is skipped whole, as XLA skips it);
* a window narrower than a non-indexed dim is a slice of the operand (gather) or a
  narrower update (scatter), both at offset 0;
* the coordinates are reordered so the axes are sorted, and the result transposed to
  StableHLO's output layout.

A scatter whose update computation is not ``add`` (``indexed_add``) or "return the
update" (``indexed_put``), or that scatters several operands at once, raises
:class:`~nxpy.stablehlo.rules.UnsupportedOpError` saying so.
"""
from __future__ import annotations

from .. import ops as nx
from .rules import TERMINATORS, _fail, binary_body, register_op, rtype

__all__ = []


def _ints(dn, key):
    return [int(v) for v in dn.get(key, [])]


def _index_last(idx, ivd):
    """Indices with the index vector dim last (appended when ``ivd`` is the rank)."""
    r = idx.rank
    if ivd == r:
        return nx.reshape(idx, idx.shape + (1,))
    if ivd != r - 1:
        return nx.transpose(idx, [d for d in range(r) if d != ivd] + [ivd])
    return idx


def _batch_pos(d, ivd):
    """Where indices dim ``d`` lands once the index vector dim ``ivd`` is taken out."""
    return d if d < ivd else d - 1


def _iota(scope, shape, axis, t):
    return nx.iota(shape, axis=axis, type=t, backend="numpy" if scope.eager else None)


def _columns(scope, idx, index_map, batching, dropped):
    """``[(operand dim, coordinates of the batch shape)]`` for the index vector's entries,
    the batching dims ``[(operand dim, batch position)]`` and the collapsed (inserted)
    dims that no index names (their coordinate is 0)."""
    batch = idx.shape[:-1]
    cols = [(d, nx.reshape(nx.slice_along_axis(idx, j, 1, axis=-1), batch))
            for j, d in enumerate(index_map)]
    cols += [(d, _iota(scope, batch, p, idx.type)) for d, p in batching]
    named = set(index_map) | {d for d, _ in batching}
    zero = nx.reshape(_iota(scope, (1,), 0, idx.type), ())
    cols += [(d, nx.broadcast(zero, batch)) for d in dropped if d not in named]
    return cols


def _expand(scope, cols, d, size, dim, scatter):
    """Adds a batch dim of ``size`` to every column; operand dim ``d`` gets coordinates
    ``start + iota`` (start clamped into ``[0, dim - size]`` for a gather; for a scatter,
    pushed out of bounds when the window does not fit, so it is skipped whole)."""
    out = []
    for od, c in cols:
        c = nx.broadcast(nx.new_axis(c, c.rank), c.shape + (size,))
        if od == d:
            step = _iota(scope, c.shape, c.rank - 1, c.type)
            if scatter:
                ok = nx.logical_and(nx.greater_equal(c, 0), nx.less_equal(c, dim - size))
                c = nx.select(ok, nx.add(c, step), nx.full((), dim, type=c.type))
            else:
                c = nx.add(nx.clip(c, 0, max(dim - size, 0)), step)
        out.append((od, c))
    return out


def _stack(cols, batch):
    cols = sorted(cols, key=lambda p: p[0])
    axes = [d for d, _ in cols]
    idx = nx.stack([nx.reshape(c, batch) for _, c in cols], axis=len(batch))
    return idx, axes


@register_op("stablehlo.gather")
def _gather(scope, op, x, idx):
    dn = op.attributes["dimension_numbers"]
    offset_dims, collapsed = _ints(dn, "offset_dims"), _ints(dn, "collapsed_slice_dims")
    index_map = _ints(dn, "start_index_map")
    obd, sibd = _ints(dn, "operand_batching_dims"), _ints(dn, "start_indices_batching_dims")
    ivd = int(dn.get("index_vector_dim", 0))  # printed only when not 0 (its default)
    sizes = [int(v) for v in op.attributes["slice_sizes"]]
    out_shape, _ = rtype(op)
    idx = _index_last(idx, ivd)
    nb = idx.rank - 1
    cols = _columns(scope, idx, index_map, [(d, _batch_pos(s, ivd)) for d, s in zip(obd, sibd)],
                    collapsed)
    indexed = {d for d, _ in cols}
    if any(sizes[d] < x.shape[d] for d in range(x.rank) if d not in indexed):
        x = nx.slice(x, [0] * x.rank, [x.shape[d] if d in indexed else sizes[d]
                                       for d in range(x.rank)])
    expanded = [d for d in index_map if d not in collapsed and d not in obd]
    batch = list(idx.shape[:-1])
    for d in expanded:
        cols = _expand(scope, cols, d, sizes[d], x.shape[d], scatter=False)
        batch.append(sizes[d])
    if cols:
        full_idx, axes = _stack(cols, tuple(batch))
    else:
        full_idx, axes = nx.reshape(idx, tuple(batch) + (0,)), []
    res = nx.gather(x, full_idx, axes=axes)
    # window dims in operand order: an expanded one is a batch dim of res, the others are
    # res's trailing dims; the original batch dims fill the other output positions
    rest = [d for d in range(x.rank) if d not in axes]
    sources = [nb + expanded.index(d) if d in expanded else len(batch) + rest.index(d)
               for d in range(x.rank) if d not in collapsed and d not in obd]
    perm, b, w = [], 0, 0
    for pos in range(len(out_shape)):
        if pos in offset_dims:
            perm.append(sources[w])
            w += 1
        else:
            perm.append(b)
            b += 1
    res = nx.transpose(res, perm) if perm != list(range(len(perm))) else res
    return nx.reshape(res, out_shape)


def _update_kind(scope, op):
    region = op.regions[0]
    ops = region.ops
    args = [a.name for a in region.args]
    if len(args) == 2 and len(ops) == 1 and ops[0].name in TERMINATORS and \
            [str(u) for u in ops[0].operands] == [args[1]]:
        return "indexed_put"
    kind = binary_body(region)
    if kind == "stablehlo.add" or (kind == "stablehlo.or" and
                                   region.args[0].type.nx_type.is_pred):
        return "indexed_add"
    _fail(op, scope, "a scatter whose update computation is not add (indexed_add) or "
                     "'return the update' (indexed_put)", unsupported=True)


@register_op("stablehlo.scatter")
def _scatter(scope, op, *operands):
    if len(operands) != 3:
        _fail(op, scope, f"a scatter of {len(operands) // 2} operands at once",
              unsupported=True)
    x, idx, upd = operands
    name = _update_kind(scope, op)
    dn = op.attributes["scatter_dimension_numbers"]
    uwd, iwd = _ints(dn, "update_window_dims"), _ints(dn, "inserted_window_dims")
    index_map = _ints(dn, "scatter_dims_to_operand_dims")
    ibd, sibd = _ints(dn, "input_batching_dims"), _ints(dn, "scatter_indices_batching_dims")
    ivd = int(dn.get("index_vector_dim", 0))  # printed only when not 0 (its default)
    idx = _index_last(idx, ivd)
    nb = idx.rank - 1
    # updates as [scatter (batch) dims..., window dims...]
    scatter_dims = [d for d in range(upd.rank) if d not in uwd]
    upd = nx.transpose(upd, scatter_dims + uwd) if scatter_dims + uwd != list(range(upd.rank)) \
        else upd
    cols = _columns(scope, idx, index_map, [(d, _batch_pos(s, ivd)) for d, s in zip(ibd, sibd)],
                    iwd)
    window_ops = [d for d in range(x.rank) if d not in iwd and d not in ibd]
    expanded = [d for d in window_ops if d in index_map]
    batch = list(idx.shape[:-1])
    for d in expanded:
        size = upd.shape[nb + window_ops.index(d)]
        cols = _expand(scope, cols, d, size, x.shape[d], scatter=True)
        batch.append(size)
    if expanded:
        moved = [nb + window_ops.index(d) for d in expanded]
        keep = [nb + j for j, d in enumerate(window_ops) if d not in expanded]
        upd = nx.transpose(upd, list(range(nb)) + moved + keep)
    n = 1
    for s in batch:
        n *= s
    full_idx, axes = _stack(cols, tuple(batch))
    full_idx = nx.reshape(full_idx, (n, len(axes)))
    upd = nx.reshape(upd, (n,) + upd.shape[len(batch):])
    return getattr(nx, name)(x, full_idx, upd, axes=axes)
