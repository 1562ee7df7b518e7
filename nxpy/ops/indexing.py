"""Reading and writing parts of a tensor: slice (static or dynamic starts), slice_along_axis,
put_slice, ``x[...]`` indexing, and the index-tensor ops: gather, take, take_along_axis
(reads) and indexed_add, indexed_put (scatters).

Out-of-bounds indices follow XLA, as Nx does on EXLA: slice and put_slice starts, and
gather's indices, are **clamped** so the slice (or element) lies in the tensor;
indexed_add and indexed_put **skip** an update whose index is out of bounds.

>>> import nxpy as nx
>>> x = nx.iota((3, 4))
>>> x[1:, ::2].tolist(), nx.slice(x, [0, 1], [2, 2]).tolist()
([[4, 6], [8, 10]], [[1, 2], [5, 6]])
>>> nx.take(x, nx.tensor([2, 0]), axis=1).tolist()
[[2, 0], [6, 4], [10, 8]]
>>> nx.indexed_add(nx.tensor([0, 0, 0]), nx.tensor([[1], [1], [2]]), nx.tensor([1, 2, 3])).tolist()
[0, 3, 3]
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import shape as S, types as T
from ..backend import pick
from ..tensor import Tensor
from .core import (_axes_of, _out, _scalar_like, as_type, dispatch, from_numpy, primitive,
                   register_grad_rule, to_tensor)
from .creation import full, iota
from .elementwise import add, clip, equal, greater_equal, less, logical_and, select
from .shaping import broadcast, concatenate, new_axis, reshape, reverse, transpose

__all__ = ["slice", "slice_along_axis", "put_slice", "index", "gather", "take",
           "take_along_axis", "indexed_add", "indexed_put"]

primitive("indexing", "slice", "dynamic_slice", "put_slice", "gather", "indexed_add",
          "indexed_put")


def _start_indices(x, start_indices, op):
    if len(start_indices) != x.rank:
        raise ValueError(f"{op}: expected {x.rank} start indices for shape {x.shape}, "
                         f"got {len(start_indices)}")
    out = []
    for i, s in enumerate(start_indices):
        if isinstance(s, Tensor):
            if s.shape != ():
                raise TypeError(f"{op}: start index {i} must be an int or a scalar integer "
                                f"tensor, got a tensor of shape {s.shape}")
            if not s.type.is_int:
                raise TypeError(f"{op}: start index {i} must be an int or a scalar integer "
                                f"tensor, got type {s.type}")
            out.append(s)
        elif S.as_int(s) is not None:
            out.append(S.as_int(s))
        else:
            raise TypeError(f"{op}: start index {i} must be an int or a scalar integer "
                            f"tensor, got {s!r}")
    return out


def _strides(strides, rank, op):
    if strides is None:
        return (1,) * rank
    if S.as_int(strides) is not None:
        return (S.as_int(strides),) * rank
    return S.integers(strides, f"{op}: strides")


def slice(x, start_indices, lengths, strides=None) -> Tensor:
    """``lengths`` elements from ``start_indices`` on, every ``strides``-th one.

    Starts may be ints or scalar integer tensors (a dynamic slice). As in Nx, a start is
    **clamped** so that the slice fits: ``min(max(start, 0), size - length)``, for ints
    and tensors alike (Nx clamps too-large integer starts in ``Nx.Shape.slice`` and
    negative ones in its reference backend; XLA's ``dynamic_slice`` clamps tensor ones).

    >>> import nxpy as nx
    >>> nx.slice(nx.tensor([1, 2, 3, 4, 5, 6]), [0], [6], strides=[2]).tolist()
    [1, 3, 5]
    >>> nx.slice(nx.iota((3, 3)), [2, 2], [2, 2]).tolist()
    [[4, 5], [7, 8]]
    >>> nx.slice(nx.iota((3, 3)), [nx.tensor(2), nx.tensor(-1)], [2, 2]).tolist()
    [[3, 4], [6, 7]]
    """
    x = to_tensor(x, "x")
    starts = _start_indices(x, start_indices, "slice")
    lengths = S.integers(lengths, "slice: lengths")
    strides = _strides(strides, x.rank, "slice")
    if len(lengths) != x.rank or len(strides) != x.rank:
        raise ValueError(f"slice: expected {x.rank} lengths and strides for shape {x.shape}, "
                         f"got {list(lengths)} and {list(strides)}")
    for i, (n, st, d) in enumerate(zip(lengths, strides, x.shape)):
        if n < 0 or n > d:
            raise ValueError(f"slice: length at axis {i} must be between 0 and the axis size "
                             f"{d}, got {n}")
        if st < 1:
            raise ValueError(f"slice: stride at axis {i} must be at least 1, got {st}")
    starts = [builtins.min(builtins.max(s, 0), d - n) if isinstance(s, int) else s
              for s, n, d in zip(starts, lengths, x.shape)]
    shape = tuple(-(-n // st) for n, st in zip(lengths, strides))
    if builtins.all(isinstance(s, int) for s in starts):
        if shape == x.shape:
            return x
        return dispatch("slice", _out(shape, x.type, x.names), x, start_indices=tuple(starts),
                        lengths=lengths, strides=strides)
    starts = [s if isinstance(s, Tensor) else _scalar_like(s, T.S32, pick([x])) for s in starts]
    starts = [as_type(s, T.S32) for s in starts]
    return dispatch("dynamic_slice", _out(shape, x.type, x.names), x, starts, lengths=lengths,
                    strides=strides)


def slice_along_axis(x, start_index, length, axis=0, strides=1) -> Tensor:
    """``slice`` along one axis (Nx's ``slice_along_axis``): ``length`` elements from
    ``start_index`` (an int or a scalar integer tensor, clamped as in :func:`slice`),
    every ``strides``-th one; the other axes are kept whole.

    >>> import nxpy as nx
    >>> nx.slice_along_axis(nx.iota((2, 5)), 0, 3, axis=-1, strides=2).tolist()
    [[0, 2], [5, 7]]
    """
    x = to_tensor(x, "x")
    axis = _axes_of("slice_along_axis", S.normalize_axis, axis, x.rank, x.names)
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)):
        raise TypeError(f"slice_along_axis: expected length to be an int, got {length!r}")
    if isinstance(strides, bool) or not isinstance(strides, (int, np.integer)):
        raise TypeError(f"slice_along_axis: expected strides to be an int, got {strides!r}")
    starts = [0] * x.rank
    starts[axis] = start_index
    lengths = list(x.shape)
    lengths[axis] = int(length)
    st = [1] * x.rank
    st[axis] = int(strides)
    return slice(x, starts, lengths, st)


def put_slice(x, start_indices, update) -> Tensor:
    """``x`` with ``update`` written at ``start_indices`` (ints or scalar integer tensors),
    each clamped so the update fits: ``min(max(start, 0), size - update_size)``. The
    result type merges both types.

    >>> import nxpy as nx
    >>> x = nx.tensor([[1, 2, 3], [4, 5, 6]])
    >>> nx.put_slice(x, [1, 1], nx.tensor([[7, 8], [9, 10]])).tolist()
    [[1, 7, 8], [4, 9, 10]]
    """
    x = to_tensor(x, "x")
    update = to_tensor(update, "update")
    if update.rank != x.rank or builtins.any(u > d for u, d in zip(update.shape, x.shape)):
        raise ValueError(f"put_slice: update of shape {update.shape} does not fit in tensor "
                         f"of shape {x.shape}")
    starts = _start_indices(x, start_indices, "put_slice")
    starts = [as_type(s, T.S32) if isinstance(s, Tensor) else
              _scalar_like(builtins.min(builtins.max(s, 0), d - u), T.S32, pick([x]))
              for s, d, u in zip(starts, x.shape, update.shape)]
    t = T.merge(x.type, update.type)
    names = S.merge_names(x.names, update.names, op="put_slice")
    return dispatch("put_slice", _out(x.shape, t, names), x, starts, update)


class _Plan:
    """``x[idx]`` parsed once (NumPy's rules), for reading (:func:`index`) and for writing
    (``x.at[idx]``, nxpy.ops.methods).

    ``dims``: per axis of ``x``, ``("slice", first, n, step)`` (the ``n`` positions
    ``first + k*step``, ``step`` possibly negative), ``("int", i)`` (a static index,
    wrapped), ``("dyn", t)`` (a scalar integer tensor, wrapped, clamped on reads) or
    ``("adv", k)`` (the ``k``-th advanced index). ``adv``: the advanced indices (integer
    tensors, negatives wrapped, broadcast together to ``bshape``). ``out``: the result's
    axes in order, ``("new",)``, ``("slice", axis)`` or ``("adv",)`` (the broadcast block,
    where NumPy puts it: in place of the advanced indices if they are adjacent in ``idx``,
    else first); ``shape``: the result's shape."""

    __slots__ = ("dims", "adv", "bshape", "out", "shape")


_MASK_HINT = ("boolean-mask indexing gives a shape that depends on the values, which a "
              "compiled program cannot have: use nx.select(mask, x, 0) (jnp.where), or "
              "nx.argsort/top_k for a fixed number of selected elements")


def _index_item(i, op):
    """One entry of an index, checked: None, a slice, an int, or an integer tensor."""
    if i is None or isinstance(i, builtins.slice):
        if isinstance(i, builtins.slice):
            for part in (i.start, i.stop, i.step):
                if part is not None and S.as_int(part) is None:
                    raise IndexError(f"{op}: slice bounds must be ints or None, got {i!r} "
                                     f"(for a dynamic start use nx.slice or a scalar tensor "
                                     f"index)")
            if i.step is not None and S.as_int(i.step) == 0:
                raise ValueError(f"{op}: slice step cannot be zero")
        return i
    if isinstance(i, (bool, np.bool_)):
        raise IndexError(f"{op}: a boolean index ({i!r}) is not supported: use None to add "
                         f"an axis; {_MASK_HINT}")
    if isinstance(i, (int, np.integer)):
        return int(i)
    if isinstance(i, (list, tuple, np.ndarray)):
        a = np.asarray(i)
        if a.dtype == np.bool_:
            raise IndexError(f"{op}: {_MASK_HINT}")
        if a.size == 0 and a.dtype.kind == "f":
            a = a.astype(np.int32)
        if a.dtype.kind not in "iu":
            raise IndexError(f"{op}: index arrays must hold integers, got dtype {a.dtype}")
        if a.ndim == 0:
            return int(a)
        i = from_numpy(a.astype(np.int64 if a.dtype.itemsize == 8 else np.int32))
    if isinstance(i, Tensor):
        if i.type.is_pred:
            raise IndexError(f"{op}: {_MASK_HINT}")
        if not i.type.is_int:
            raise IndexError(f"{op}: index tensors must be integer tensors, got type {i.type}")
        return i
    raise IndexError(f"{op}: unsupported index {i!r}: use ints, slices, ..., None, integer "
                     f"tensors, or lists or NumPy arrays of ints")


def _wrap(i, d):
    """A tensor index with negatives counted from the end (NumPy's rule), as s32/s64."""
    t = T.S64 if i.type.bits == 64 else T.S32
    i = as_type(i, t)
    return select(less(i, 0), add(i, d), i) if d else i


def _plan(x, idx, op="index") -> _Plan:
    idx = idx if isinstance(idx, tuple) else (idx,)
    if builtins.sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
    items = [i if i is Ellipsis else _index_item(i, op) for i in idx]
    n_real = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    if n_real > x.rank:
        raise IndexError(f"{op}: too many indices ({n_real}) for tensor of rank {x.rank}")
    full_idx = []
    for i in items:
        if i is Ellipsis:
            full_idx.extend([builtins.slice(None)] * (x.rank - n_real))
        else:
            full_idx.append(i)
    taken = builtins.sum(1 for i in full_idx if i is not None)
    full_idx.extend([builtins.slice(None)] * (x.rank - taken))
    advanced = builtins.any(isinstance(i, Tensor) and i.rank > 0 for i in full_idx)
    p = _Plan()
    p.dims, p.adv, p.out = [], [], []
    adv_pos, dim = [], 0
    for pos, i in enumerate(full_idx):
        if i is None:
            p.out.append(("new",))
            continue
        d = x.shape[dim]
        if isinstance(i, builtins.slice):
            rng = range(*i.indices(d))
            p.dims.append(("slice", rng.start, len(rng), rng.step))
            p.out.append(("slice", dim))
        elif isinstance(i, int):
            if not -d <= i < d:
                raise IndexError(f"{op}: index {i} is out of bounds for dim {dim} of size {d}")
            if advanced:
                p.dims.append(("adv", len(p.adv)))
                p.adv.append(_scalar_like(i % d, T.S32, pick([x])))
                adv_pos.append(pos)
            else:
                p.dims.append(("int", i % d))
        elif advanced:
            p.dims.append(("adv", len(p.adv)))
            p.adv.append(_wrap(i, d))
            adv_pos.append(pos)
        else:  # a scalar tensor: a dynamic start
            p.dims.append(("dyn", _wrap(i, d)))
        dim += 1
    if p.adv:
        try:
            p.bshape = tuple(np.broadcast_shapes(*(a.shape for a in p.adv)))
        except ValueError:
            raise IndexError(f"{op}: shape mismatch: the index arrays of shapes "
                             f"{[a.shape for a in p.adv]} cannot be broadcast together") from None
        p.adv = [a if a.shape == p.bshape else broadcast(a, p.bshape) for a in p.adv]
        rest = [o for o in p.out if o[0] != "adv"]
        if adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1)):
            at = builtins.sum(1 for q in range(adv_pos[0]) if full_idx[q] is None or
                              isinstance(full_idx[q], builtins.slice))
        else:
            at = 0
        p.out = rest[:at] + [("adv",)] + rest[at:]
    else:
        p.bshape = ()
    shape = []
    for o in p.out:
        if o[0] == "new":
            shape.append(1)
        elif o[0] == "slice":
            shape.append(p.dims[o[1]][2])
        else:
            shape.extend(p.bshape)
    p.shape = tuple(shape)
    return p


def index(x, idx) -> Tensor:
    """``x[idx]`` with NumPy's (and ``jax.numpy``'s) rules: ints (negative from the end),
    slices (any step, negative ones too), ``...``, ``None``, scalar integer tensors
    (dynamic starts: negative from the end, then clamped as XLA's ``dynamic_slice``
    clamps) and integer arrays (tensors, lists or NumPy arrays of ints: advanced
    indexing, broadcast together, with NumPy's result shape: the broadcast shape takes
    the place of the indexed axes if they are adjacent in ``idx``, or comes first if a
    slice, ``None`` or ``...`` separates them; an int next to an array counts as an
    array, as in NumPy). Array indices are wrapped when negative and then **clamped**
    into the axis, as ``jnp``'s default for reads (XLA's gather; ``x.at[i].get(mode=
    "fill")`` fills instead). A static int out of bounds raises IndexError (NumPy; jnp
    clamps it). Boolean masks raise IndexError: their shape depends on the values (use
    :func:`~nxpy.ops.select`).

    >>> import nxpy as nx
    >>> x = nx.iota((3, 4))
    >>> x[::-1, 3:0:-2].tolist()
    [[11, 9], [7, 5], [3, 1]]
    >>> x[[2, 0], [-1, 1]].tolist(), x[:, [0, 0]].tolist()
    ([11, 1], [[0, 0], [4, 4], [8, 8]])
    >>> nx.tensor([[1, 2], [3, 4]])[nx.tensor([1, 0, 1])].tolist()
    [[3, 4], [1, 2], [3, 4]]
    """
    x = to_tensor(x, "x")
    return _read(x, _plan(x, idx))


def _read(x, p) -> Tensor:
    """``x[idx]`` from its plan: a slice (steps made positive), the reverse of the axes with
    negative steps, a gather of the advanced indices, then the result's axis order."""
    starts, lengths, strides, rev = [], [], [], []
    for a, (d, k) in enumerate(zip(x.shape, p.dims)):
        if k[0] == "slice":
            _, first, n, st = k
            lo = first + (n - 1) * st if st < 0 and n else first
            starts.append(lo if n else 0)
            lengths.append((n - 1) * builtins.abs(st) + 1 if n else 0)
            strides.append(builtins.abs(st))
            if st < 0 and n > 1:
                rev.append(a)
        elif k[0] == "adv":
            starts.append(0)
            lengths.append(d)
            strides.append(1)
        else:
            starts.append(k[1])
            lengths.append(1)
            strides.append(1)
    r = slice(x, starts, lengths, strides)
    if rev:
        r = reverse(r, axes=rev)
    if not p.adv:
        return reshape(r, p.shape)
    axes = [a for a, k in enumerate(p.dims) if k[0] == "adv"]
    kept = [a for a, k in enumerate(p.dims) if k[0] != "adv"]
    if len(p.adv) == 1:
        ind = new_axis(p.adv[0], len(p.bshape))
    else:
        t = T.S64 if builtins.any(a.type == T.S64 for a in p.adv) else T.S32
        ind = concatenate([new_axis(as_type(a, t), len(p.bshape)) for a in p.adv],
                          axis=len(p.bshape))
    g = gather(r, ind, axes=axes)  # bshape + the kept (sliced) axes, in order
    nb = len(p.bshape)
    perm = []
    for o in p.out:
        if o[0] == "slice":
            perm.append(nb + kept.index(o[1]))
        elif o[0] == "adv":
            perm.extend(range(nb))
    if perm != list(range(len(perm))):
        g = transpose(g, perm)
    return reshape(g, p.shape)


# ----------------------------------------------------------------------------------------
# Index tensors: gather, take, take_along_axis, indexed_add, indexed_put
# ----------------------------------------------------------------------------------------
def _int_indices(op, indices):
    indices = to_tensor(indices, "indices")
    if not indices.type.is_int:
        raise TypeError(f"{op}: indices must be an integer tensor, got type {indices.type}")
    return indices


def _indexed_axes(op, x, n, axes):
    """Nx's ``indexed_axes``: the axes the last dim of indices (of size ``n``) indexes."""
    if axes is None:
        if n > x.rank:
            raise ValueError(f"{op}: the last dimension of indices ({n}) must be at most the "
                             f"rank of the tensor ({x.rank})")
        return tuple(range(n))
    axes = _axes_of(op, S.normalize_axes, axes, x.rank, x.names)
    if list(axes) != sorted(axes):
        raise ValueError(f"{op}: axes must be an ordered list, got {list(axes)}")
    if len(axes) != n:
        raise ValueError(f"{op}: axes must have as many entries as the last dimension of "
                         f"indices ({n}), got {list(axes)}")
    return tuple(axes)


def gather(x, indices, axes=None) -> Tensor:
    """Individual elements (or sub-tensors) of ``x`` at ``indices``.

    The last dimension of ``indices`` holds coordinates along ``axes`` (default: the
    leading axes, one per entry); the result has the shape of ``indices`` without its
    last dimension, followed by the axes of ``x`` not in ``axes``. Coordinates are
    clamped into ``[0, size - 1]`` (XLA's gather). Names are dropped, as in Nx.

    >>> import nxpy as nx
    >>> t = nx.tensor([[1, 2], [3, 4]])
    >>> nx.gather(t, nx.tensor([[1, 1], [0, 1], [1, 0]])).tolist()
    [4, 2, 3]
    >>> nx.gather(nx.tensor([[1, 2, 3], [4, 5, 6]]), nx.tensor([[1], [0], [2]]), axes=[1]).tolist()
    [[2, 5], [1, 4], [3, 6]]
    """
    x = to_tensor(x, "x")
    indices = _int_indices("gather", indices)
    if indices.rank == 0:
        raise ValueError("gather: expected indices rank to be at least 1, got: 0")
    axes = _indexed_axes("gather", x, indices.shape[-1], axes)
    inner = [d for i, d in enumerate(x.shape) if i not in axes]
    shape = tuple(indices.shape[:-1]) + tuple(inner)
    if S.size(shape) == 0:  # nothing to read (XLA cannot gather from an empty axis)
        return broadcast(_scalar_like(0, x.type, pick([x, indices])), shape)
    for a in axes:
        if x.shape[a] == 0:
            raise ValueError(f"gather: cannot read elements of axis {a}, of size 0")
    return dispatch("gather", _out(shape, x.type), x, indices, axes=axes)


def take(x, indices, axis=0) -> Tensor:
    """Slices of ``x`` along ``axis`` at ``indices`` (of any shape, which replaces ``axis``
    in the result's shape). Indices are clamped into the axis (XLA's gather).

    >>> import nxpy as nx
    >>> nx.take(nx.tensor([[1, 2], [3, 4]]), nx.tensor([1, 0, 1])).tolist()
    [[3, 4], [1, 2], [3, 4]]
    >>> nx.take(nx.tensor([[1, 2], [3, 4]]), nx.tensor([1, 0, 1]), axis=1).tolist()
    [[2, 1, 2], [4, 3, 4]]
    """
    indices = _int_indices("take", indices)
    x = to_tensor(x, "x")
    if x.rank == 0:
        raise ValueError("take: expected a tensor of rank >= 1, got a scalar")
    axis = _axes_of("take", S.normalize_axis, axis, x.rank, x.names)
    names = list(x.names[:axis])
    if indices.rank == 1:
        names.extend(S.merge_names(x.names[axis:axis + 1], indices.names, op="take"))
    else:
        names.extend(indices.names)
    names.extend(x.names[axis + 1:])
    g = gather(x, new_axis(indices, indices.rank), axes=[axis])
    k = indices.rank
    perm = list(range(k, k + axis)) + list(range(k)) + list(range(k + axis, g.rank))
    g = transpose(g, perm)
    return reshape(g, g.shape, names=names)


def take_along_axis(x, indices, axis=0) -> Tensor:
    """Elements of ``x`` along ``axis`` at ``indices``, which has the shape of ``x`` except
    along ``axis`` (as NumPy's ``take_along_axis``); the result has the shape of
    ``indices`` and the names of ``x``. Indices are clamped into the axis.

    >>> import nxpy as nx
    >>> t = nx.tensor([[1, 2, 3], [4, 5, 6]])
    >>> nx.take_along_axis(t, nx.tensor([[0, 0, 2, 2, 1, 1], [2, 2, 1, 1, 0, 0]]), axis=1).tolist()
    [[1, 1, 3, 3, 2, 2], [6, 6, 5, 5, 4, 4]]
    """
    x = to_tensor(x, "x")
    indices = _int_indices("take_along_axis", indices)
    axis = _axes_of("take_along_axis", S.normalize_axis, axis, x.rank, x.names)
    tmpl = "{" + ", ".join("*" if i == axis else str(d) for i, d in enumerate(x.shape)) + "}"
    if indices.rank != x.rank:
        raise ValueError(f"take_along_axis: shapes must have the same number of dimensions. "
                         f"Expected {tmpl}, got: {indices.shape}")
    if builtins.any(a != b for i, (a, b) in enumerate(zip(x.shape, indices.shape)) if i != axis):
        raise ValueError(f"take_along_axis: non-indexing dimensions must match. Expected "
                         f"{tmpl}, got: {indices.shape}")
    col = indices.shape + (1,)
    cols = [reshape(indices, col) if a == axis else iota(col, axis=a, type=indices.type,
                                                         backend=_like_backend(indices))
            for a in range(x.rank)]
    g = gather(x, concatenate(cols, axis=x.rank) if x.rank > 1 else cols[0])
    return reshape(g, g.shape, names=x.names)


def _like_backend(t):
    """The backend a creation op next to tensor ``t`` should use (None: the default)."""
    return None if t.backend.name == "numpy" else t.backend


def _indexed(op, target, indices, updates, axes):
    target = to_tensor(target, "target")
    indices = _int_indices(op, indices)
    if not isinstance(updates, Tensor) and isinstance(updates, (int, float, complex)) \
            and not isinstance(updates, bool):
        updates = _scalar_like(updates, T.merge_scalar(target.type, updates), pick([target]))
    updates = to_tensor(updates, "updates")
    if indices.rank == 1:  # Nx's shorthand: one fully qualified index and a scalar update
        if indices.shape[0] != target.rank:
            raise ValueError(f"{op}: expected indices to have shape ({target.rank},), got: "
                             f"{indices.shape}")
        if updates.shape != ():
            raise ValueError(f"{op}: updates must be a scalar tensor when indices has rank 1, "
                             f"got: {updates.shape}")
        indices, updates = new_axis(indices, 0), new_axis(updates, 0)
    if indices.rank != 2:
        raise ValueError(f"{op}: indices must be a rank 1 or 2 tensor, got: {indices.rank}")
    n, k = indices.shape
    if updates.rank == 0 or updates.shape[0] != n:
        raise ValueError(f"{op}: expected the leading axis of indices {indices.shape} and the "
                         f"leading axis of updates {updates.shape} to match")
    axes = _indexed_axes(op, target, k, axes)
    if updates.rank - 1 + k != target.rank:
        raise ValueError(f"{op}: expected the rank of the input ({target.rank}) to be equal "
                         f"to the rank of the updates ({updates.rank}) plus the trailing axis "
                         f"of indices {indices.shape} minus one")
    rest = [a for a in range(target.rank) if a not in axes]
    for j, a in enumerate(rest):
        if updates.shape[1 + j] > target.shape[a]:
            raise ValueError(f"{op}: axis ({1 + j}) of updates {updates.shape} must be less "
                             f"than or equal to the axis ({a}) of {target.shape}")
    t = T.merge(target.type, updates.type)
    if n == 0 or S.size(target.shape) == 0 or S.size(updates.shape) == 0:
        return reshape(as_type(target, t), target.shape, names=target.names)
    return dispatch(op, _out(target.shape, t, target.names), target, indices, updates,
                    axes=axes)


def indexed_add(target, indices, updates, axes=None) -> Tensor:
    """``target`` with ``updates`` added at ``indices`` (repeated indices accumulate).

    ``indices`` has shape ``(n, k)``: ``n`` coordinates along ``axes`` (default: the
    first ``k`` axes); ``updates`` has shape ``(n, ...)``, one sub-tensor per coordinate
    over the other axes (each at most the axis size: it is added at offset 0). A rank-1
    ``indices`` with a scalar ``updates`` adds one element. The result type merges both
    types. An update whose coordinates are out of bounds is skipped (XLA's scatter).

    >>> import nxpy as nx
    >>> t = nx.iota((1, 2, 3))
    >>> idx = nx.tensor([[0, 0, 0], [0, 1, 1], [0, 0, 0], [0, 0, 2], [0, 1, 2]])
    >>> nx.indexed_add(t, idx, nx.tensor([1, 3, 1, -2, 5])).tolist()
    [[[2, 1, 0], [3, 7, 10]]]
    >>> nx.indexed_add(nx.tensor([[1], [2]]), nx.tensor([1, 0]), 8).tolist()
    [[1], [10]]
    """
    return _indexed("indexed_add", target, indices, updates, axes)


def indexed_put(target, indices, updates, axes=None) -> Tensor:
    """``target`` with ``updates`` written at ``indices`` (shapes as in
    :func:`indexed_add`). With repeated indices, which update wins is unspecified (Nx and
    XLA); the NumPy backend and XLA on CPU keep the last. Out-of-bounds updates are skipped.

    >>> import nxpy as nx
    >>> nx.indexed_put(nx.tensor([0, 0, 0]), nx.tensor([[1], [2]]), nx.tensor([2, 4])).tolist()
    [0, 2, 4]
    >>> t = nx.iota((1, 2, 3))
    >>> idx = nx.tensor([[0, 0], [0, 2]])
    >>> nx.indexed_put(t, idx, nx.tensor([[0, 30], [20, 50]]), axes=[0, 2]).tolist()
    [[[0, 1, 20], [30, 4, 50]]]
    """
    return _indexed("indexed_put", target, indices, updates, axes)


# ----------------------------------------------------------------------------------------
# Gradient rules (the rule protocol: nxpy.defn.transforms.grad_rules)
# ----------------------------------------------------------------------------------------
def _zeros(shape, type):
    return broadcast(full((), 0, type=type), tuple(shape))


def _in_bounds(indices, shape, axes):
    """Per row of ``indices`` (n, k): whether every coordinate lies in its axis (pred[n])."""
    ok = None
    for j, a in enumerate(axes):
        c = reshape(slice(indices, [0, j], [indices.shape[0], 1]), (indices.shape[0],))
        v = logical_and(greater_equal(c, 0), less(c, shape[a]))
        ok = v if ok is None else logical_and(ok, v)
    return ok


def _window(x, indices, updates_shape, axes):
    """``x`` read where a scatter of ``updates_shape`` at ``indices`` wrote (gather, cut to
    the updates' window; out-of-bounds rows read clamped positions)."""
    rows = gather(x, indices, axes=axes)
    if rows.shape != tuple(updates_shape):
        rows = slice(rows, [0] * rows.rank, updates_shape)
    return rows


def _gather_rows(g, indices, updates_shape, axes):
    """The cotangent of indexed_add's updates: ``g`` at the written positions, zero for rows
    that were skipped as out of bounds."""
    rows = _window(g, indices, updates_shape, axes)
    ok = _in_bounds(indices, g.shape, axes)
    if ok is None:
        return rows
    ok = broadcast(ok, rows.shape, axes=[0])
    return select(ok, rows, _zeros(rows.shape, rows.type))


def _picked_axis(e, x):
    """The axis of a gather that :func:`take_along_axis` built picking one element per
    row (its indices: an iota for every other axis, of that axis's size, and a column of
    size 1 along the picked axis), or None for any other gather."""
    idx = e.tensor_args()[1]
    r = len(x.shape)
    if list(e.attrs["axes"]) != list(range(r)) or idx.op != "concatenate" or r < 2:
        return None
    cols = idx.tensor_args()
    if len(cols) != r or idx.attrs.get("axis") != r:
        return None
    other = [j for j, c in enumerate(cols)
             if not (c.op == "iota" and c.attrs.get("axis") == j and c.shape[j] == x.shape[j])]
    if len(other) != 1 or idx.shape[other[0]] != 1:
        return None
    return other[0]


def _picked_grad(x, indices, g, a):
    """The cotangent of a one-per-row ``take_along_axis`` along ``a``: ``g`` where the
    (clamped) index equals the position, zero elsewhere. A select, where the scatter of
    the general rule would take flattened indices that hide the batch dims from XLA's
    partitioner (on a mesh it re-lays them out and all-reduces the whole cotangent)."""
    col = slice(indices, [0] * (x.rank) + [a], list(indices.shape[:-1]) + [1])
    col = clip(reshape(col, indices.shape[:-1]), 0, builtins.max(x.shape[a] - 1, 0))
    hit = equal(iota(x.shape, axis=a, type=col.type, backend=_like_backend(col)),
                broadcast(col, x.shape))
    return select(hit, broadcast(g, x.shape), _zeros(x.shape, g.type))


@register_grad_rule("gather")
def _gather_grad(ctx, e, xs, out, g):
    x, indices = xs
    axes = e.attrs["axes"]
    a = _picked_axis(e, x)
    if a is not None:
        return [_picked_grad(x, indices, g, a), None]
    k = indices.shape[-1]
    n = S.size(indices.shape[:-1])
    inner = [d for i, d in enumerate(x.shape) if i not in axes]
    flat_idx = reshape(indices, (n, k))
    flat_g = reshape(g, (n, *inner))
    # gather clamps, so the cotangent goes where the clamped index read from
    clamped = [builtins.max(x.shape[a] - 1, 0) for a in axes]
    flat_idx = concatenate([clip(slice(flat_idx, [0, j], [n, 1]), 0, clamped[j])
                            for j in range(k)], axis=1) if k else flat_idx
    gx = indexed_add(_zeros(x.shape, g.type), flat_idx, flat_g, axes=list(axes))
    return [gx, None]


@register_grad_rule("indexed_add")
def _indexed_add_grad(ctx, e, xs, out, g):
    target, indices, updates = xs
    return [g, None, _gather_rows(g, indices, updates.shape, e.attrs["axes"])]


def _won(target_shape, indices, updates_shape, axes):
    """Per element of a put's updates: whether it is the one left in the result (pred).

    With repeated indices one update wins each position (the last, on every nxpy backend);
    scattering each row's number the same way and reading it back finds the winner
    wherever the backend puts it, as JAX's scatter JVP does. A skipped (out-of-bounds)
    row reads another row's number, or -1, so it never wins."""
    t = T.S32
    ids = broadcast(iota((updates_shape[0],), type=t), tuple(updates_shape), axes=[0])
    board = indexed_put(broadcast(full((), -1, type=t), tuple(target_shape)), indices, ids,
                        axes=list(axes))
    return equal(_window(board, indices, updates_shape, axes), ids)


@register_grad_rule("indexed_put")
def _indexed_put_grad(ctx, e, xs, out, g):
    target, indices, updates = xs
    axes = e.attrs["axes"]
    gt = indexed_put(g, indices, _zeros(updates.shape, g.type), axes=list(axes))
    rows = _window(g, indices, updates.shape, axes)
    won = _won(target.shape, indices, updates.shape, axes)
    return [gt, None, select(won, rows, _zeros(rows.shape, rows.type))]
