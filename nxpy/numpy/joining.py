"""Splitting and joining functions of ``jax.numpy`` (issue 28, part 1): the ``split``
family, ``unstack``, the ``stack`` family, ``concatenate``/``concat``, ``append``,
``insert``/``delete`` (static positions) and ``block``."""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .. import shape as S
from ..tensor import Tensor
from .manipulation import (_axis, _cut, _join, _promoted, _static, _t, atleast_1d, atleast_2d,
                           atleast_3d, broadcast_to, expand_dims, moveaxis)

__all__ = ["split", "array_split", "hsplit", "vsplit", "dsplit", "unstack", "concatenate",
           "concat", "stack", "hstack", "vstack", "dstack", "column_stack", "append", "block",
           "insert", "delete"]

#: departures from ``jax.numpy`` (collected by :mod:`nxpy.numpy.coverage`)
NOTES = {
    "insert": "`obj` must be static (ints, a slice or a NumPy array)",
    "delete": "`obj` must be static (ints, a slice or a NumPy array)",
    "split": "split points must be static",
    "array_split": "split points must be static",
}


def _seq(arrays, fn):
    if isinstance(arrays, Tensor):
        return list(unstack(arrays)) if arrays.rank else [arrays]
    if isinstance(arrays, np.ndarray):
        return list(arrays)
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ValueError(f"{fn}: expected a non-empty sequence of arrays, got {arrays!r}")
    return list(arrays)


def _static_positions(obj, n, fn):
    if isinstance(obj, slice):
        return np.arange(n)[obj], False
    if isinstance(obj, Tensor):
        if not _static(obj):
            raise TypeError(f"{fn}: expected obj to be static (ints, a slice or a NumPy "
                            "array), got a traced tensor")
        obj = obj.to_numpy()
    pos = np.asarray(obj)
    if pos.dtype.kind not in "iub" and pos.size:
        raise TypeError(f"{fn}: expected obj to be ints or a slice, got {obj!r}")
    if pos.dtype.kind == "b":
        raise TypeError(f"{fn}: boolean obj is not supported (data-dependent); use where")
    return pos.astype(np.int64), pos.ndim == 0


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """``jnp.delete``: ``arr`` without the entries at ``obj`` (static ints, a slice or an
    array of ints) along ``axis`` (None: flattened).

    >>> import nxpy.numpy as xnp
    >>> xnp.delete(xnp.arange(5), [0, -1]).tolist()
    [1, 2, 3]
    """
    x = _t(arr, "arr")
    if axis is None:
        x, axis = O.reshape(x, (x.size,)), 0
    axis = _axis(axis, x.rank, "delete")
    n = x.shape[axis]
    pos, _ = _static_positions(obj, n, "delete")
    pos = np.ravel(pos)
    if ((pos < -n) | (pos >= n)).any():
        raise IndexError(f"delete: index out of bounds for axis {axis} of size {n}: "
                         f"{pos.tolist()}")
    keep = np.setdiff1d(np.arange(n), pos % n if n else pos)
    if keep.size == 0:
        return O.full(x.shape[:axis] + (0,) + x.shape[axis + 1:], 0, type=x.type)
    return O.take(x, O.tensor(keep.astype(np.int32)), axis=axis)


def insert(arr, obj, values, axis=None):
    """``jnp.insert``: ``values`` inserted before the positions ``obj`` (static ints, a
    slice or an array of ints) along ``axis`` (None: flattened), as ``np.insert``.

    >>> import nxpy.numpy as xnp
    >>> xnp.insert(xnp.asarray([1, 2, 3]), 1, 9).tolist()
    [1, 9, 2, 3]
    >>> xnp.insert(xnp.asarray([1, 2, 3]), [0, 3], xnp.asarray([8, 9])).tolist()
    [8, 1, 2, 3, 9]
    """
    x = _t(arr, "arr")
    if axis is None:
        x, axis = O.reshape(x, (x.size,)), 0
    axis = _axis(axis, x.rank, "insert")
    n = x.shape[axis]
    pos, scalar = _static_positions(obj, n + 1, "insert")
    if ((pos < -n) | (pos > n)).any():
        raise IndexError(f"insert: index out of bounds for axis {axis} of size {n}")
    pos = np.where(pos < 0, pos + n, pos)
    v = O.as_type(_t(values, "values"), x.type)
    if scalar:     # np.insert: values at least arr's rank, their first axis at axis
        v = O.reshape(v, (1,) * (x.rank - v.rank) + v.shape) if v.rank < x.rank else v
        v = moveaxis(v, 0, axis)
        vshape = list(x.shape)
        vshape[axis] = v.shape[axis]
        v = broadcast_to(v, tuple(vshape))
        return _join([_cut(x, 0, int(pos), axis), v, _cut(x, int(pos), n, axis)], axis)
    pos = np.ravel(pos)
    k = pos.size
    vshape = list(x.shape)
    vshape[axis] = k
    if v.rank == 1 and v.shape[0] == k and x.rank > 1:
        v = O.reshape(v, tuple(k if i == axis else 1 for i in range(x.rank)))
    v = O.broadcast(v, tuple(vshape)) if v.shape != tuple(vshape) else v
    order = np.argsort(pos, kind="stable")
    new_pos = pos[order] + np.arange(k)           # where each value lands, as np.insert
    total = n + k
    src = np.empty(total, dtype=np.int64)         # index into concat([x, v]) along axis
    is_new = np.zeros(total, dtype=bool)
    is_new[new_pos] = True
    src[new_pos] = n + order
    src[~is_new] = np.arange(n)
    both = concatenate([x, v], axis=axis)
    return O.take(both, O.tensor(src.astype(np.int32)), axis=axis)


def _split(ary, indices_or_sections, axis, fn, even):
    x = _t(ary, "ary")
    axis = _axis(axis, x.rank, fn)
    n = x.shape[axis]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        ios = ios.to_numpy()
    if np.ndim(ios) == 0:
        k = S.integer(ios, f"{fn}: indices_or_sections")
        if k <= 0:
            raise ValueError(f"{fn}: expected a positive number of sections, got {k}")
        if even and n % k:
            raise ValueError(f"{fn}: array split does not result in an equal division: "
                             f"{n} into {k} sections")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        cuts = np.cumsum([0] + sizes)
    else:
        points = list(S.integers(np.ravel(ios), f"{fn}: indices_or_sections"))
        cuts = [0] + points + [n]
    out = []
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        lo = min(max(lo + n if lo < 0 else lo, 0), n)
        hi = min(max(hi + n if hi < 0 else hi, 0), n)
        hi = max(hi, lo)
        if hi == lo:
            out.append(O.full(x.shape[:axis] + (0,) + x.shape[axis + 1:], 0, type=x.type))
        else:
            out.append(_cut(x, int(lo), int(hi), axis))
    return out


def split(ary, indices_or_sections, axis=0):
    """``jnp.split``: ``ary`` cut along ``axis`` into equal sections (an int, which must
    divide the axis) or at the given (static) indices.

    >>> import nxpy.numpy as xnp
    >>> [p.tolist() for p in xnp.split(xnp.arange(6), [1, 4])]
    [[0], [1, 2, 3], [4, 5]]
    """
    return _split(ary, indices_or_sections, axis, "split", True)


def array_split(ary, indices_or_sections, axis=0):
    """``jnp.array_split``: as :func:`split`, but sections may differ by one (the first
    ones are longer).

    >>> import nxpy.numpy as xnp
    >>> [p.tolist() for p in xnp.array_split(xnp.arange(5), 2)]
    [[0, 1, 2], [3, 4]]
    """
    return _split(ary, indices_or_sections, axis, "array_split", False)


def hsplit(ary, indices_or_sections):
    """``jnp.hsplit``: :func:`split` along axis 1 (axis 0 of a vector).

    >>> import nxpy.numpy as xnp
    >>> [p.shape for p in xnp.hsplit(xnp.zeros((2, 4)), 2)]
    [(2, 2), (2, 2)]
    """
    x = _t(ary, "ary")
    return _split(x, indices_or_sections, 0 if x.rank == 1 else 1, "hsplit", True)


def vsplit(ary, indices_or_sections):
    """``jnp.vsplit``: :func:`split` along axis 0 (rank >= 2).

    >>> import nxpy.numpy as xnp
    >>> [p.shape for p in xnp.vsplit(xnp.zeros((2, 4)), 2)]
    [(1, 4), (1, 4)]
    """
    x = _t(ary, "ary")
    if x.rank < 2:
        raise ValueError(f"vsplit: expected rank >= 2, got shape {x.shape}")
    return _split(x, indices_or_sections, 0, "vsplit", True)


def dsplit(ary, indices_or_sections):
    """``jnp.dsplit``: :func:`split` along axis 2 (rank >= 3).

    >>> import nxpy.numpy as xnp
    >>> [p.shape for p in xnp.dsplit(xnp.zeros((1, 1, 4)), [1])]
    [(1, 1, 1), (1, 1, 3)]
    """
    x = _t(ary, "ary")
    if x.rank < 3:
        raise ValueError(f"dsplit: expected rank >= 3, got shape {x.shape}")
    return _split(x, indices_or_sections, 2, "dsplit", True)


def unstack(x, /, *, axis=0):
    """``jnp.unstack``: the slices of ``x`` along ``axis``, as a tuple.

    >>> import nxpy.numpy as xnp
    >>> [p.tolist() for p in xnp.unstack(xnp.asarray([[1, 2], [3, 4]]), axis=1)]
    [[1, 3], [2, 4]]
    """
    t = _t(x, "x")
    axis = _axis(axis, t.rank, "unstack")
    return tuple(O.squeeze(_cut(t, i, i + 1, axis), [axis]) for i in range(t.shape[axis]))


def concatenate(arrays, axis=0, dtype=None):
    """``jnp.concatenate``: ``arrays`` joined along ``axis`` (None: flattened first),
    promoted to one type (or ``dtype``).

    >>> import nxpy.numpy as xnp
    >>> xnp.concatenate([xnp.asarray([[1]]), xnp.asarray([[2.5]])], axis=None).tolist()
    [1.0, 2.5]
    """
    xs = _promoted(_seq(arrays, "concatenate"), dtype, "concatenate")
    if axis is None:
        xs = [O.reshape(x, (x.size,)) for x in xs]
        axis = 0
    rank = xs[0].rank
    if rank == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    axis = _axis(axis, rank, "concatenate")
    for x in xs[1:]:
        if x.rank != rank or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape))
                                 if i != axis):
            raise ValueError(f"concatenate: shapes {xs[0].shape} and {x.shape} differ off "
                             f"axis {axis}")
    xs = [x for x in xs if x.shape[axis]] or xs[:1]
    return xs[0] if len(xs) == 1 else O.concatenate(xs, axis=axis)


def concat(arrays, /, *, axis=0):
    """``jnp.concat``: :func:`concatenate` (the array API's name).

    >>> import nxpy.numpy as xnp
    >>> xnp.concat([xnp.asarray([1]), xnp.asarray([2])]).tolist()
    [1, 2]
    """
    return concatenate(arrays, axis=axis)


def stack(arrays, axis=0, out=None, dtype=None):
    """``jnp.stack``: ``arrays`` (of one shape) joined along a new axis ``axis``.

    >>> import nxpy.numpy as xnp
    >>> xnp.stack([xnp.asarray([1, 2]), xnp.asarray([3, 4])], axis=-1).tolist()
    [[1, 3], [2, 4]]
    """
    if out is not None:
        raise NotImplementedError("stack: the 'out' argument is not supported (as in JAX)")
    xs = _promoted(_seq(arrays, "stack"), dtype, "stack")
    for x in xs[1:]:
        if x.shape != xs[0].shape:
            raise ValueError(f"stack: all input arrays must have the same shape, got "
                             f"{xs[0].shape} and {x.shape}")
    axis = _axis(axis, xs[0].rank + 1, "stack")
    return concatenate([expand_dims(x, axis) for x in xs], axis=axis)


def hstack(tup, dtype=None):
    """``jnp.hstack``: joined along axis 1 (axis 0 for vectors).

    >>> import nxpy.numpy as xnp
    >>> xnp.hstack([xnp.asarray([1]), xnp.asarray([2, 3])]).tolist()
    [1, 2, 3]
    """
    xs = atleast_1d(*_seq(tup, "hstack"))
    xs = xs if isinstance(xs, list) else [xs]
    return concatenate(xs, axis=0 if xs[0].rank == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
    """``jnp.vstack``: joined along axis 0, vectors as rows.

    >>> import nxpy.numpy as xnp
    >>> xnp.vstack([xnp.asarray([1, 2]), xnp.asarray([3, 4])]).tolist()
    [[1, 2], [3, 4]]
    """
    xs = atleast_2d(*_seq(tup, "vstack"))
    return concatenate(xs if isinstance(xs, list) else [xs], axis=0, dtype=dtype)


def dstack(tup, dtype=None):
    """``jnp.dstack``: joined along axis 2, after :func:`atleast_3d`.

    >>> import nxpy.numpy as xnp
    >>> xnp.dstack([xnp.asarray([1, 2]), xnp.asarray([3, 4])]).shape
    (1, 2, 2)
    """
    xs = atleast_3d(*_seq(tup, "dstack"))
    return concatenate(xs if isinstance(xs, list) else [xs], axis=2, dtype=dtype)


def column_stack(tup):
    """``jnp.column_stack``: vectors as columns, joined along axis 1.

    >>> import nxpy.numpy as xnp
    >>> xnp.column_stack([xnp.asarray([1, 2]), xnp.asarray([3, 4])]).tolist()
    [[1, 3], [2, 4]]
    """
    xs = [_t(x, "tup") for x in _seq(tup, "column_stack")]
    xs = [O.reshape(x, (x.size, 1)) if x.rank < 2 else x for x in xs]
    return concatenate(xs, axis=1)


def append(arr, values, axis=None):
    """``jnp.append``: ``values`` appended to ``arr`` along ``axis`` (None: both
    flattened).

    >>> import nxpy.numpy as xnp
    >>> xnp.append(xnp.asarray([[1, 2]]), xnp.asarray([[3, 4]]), axis=0).tolist()
    [[1, 2], [3, 4]]
    """
    return concatenate([arr, values], axis=axis)


def block(arrays):
    """``jnp.block``: an array assembled from nested lists of blocks: the innermost lists
    joined along the last axis, the next along the one before, ...

    >>> import nxpy.numpy as xnp
    >>> one, two = xnp.ones((2, 2), dtype="int32"), xnp.zeros((2, 1), dtype="int32")
    >>> xnp.block([[one, two], [xnp.zeros((1, 3), dtype="int32")]]).tolist()
    [[1, 1, 0], [1, 1, 0], [0, 0, 0]]
    """
    if isinstance(arrays, tuple):
        raise ValueError("block: arrays is a tuple; only lists can be used to arrange blocks")
    if not isinstance(arrays, list):
        return _t(arrays, "arrays")

    def depth(x):
        if isinstance(x, tuple):
            raise ValueError("block: only lists can be used to arrange blocks, got a tuple")
        if not isinstance(x, list):
            return 0
        if not x:
            raise ValueError("block: lists cannot be empty")
        ds = {depth(e) for e in x}
        if len(ds) != 1:
            raise ValueError("block: list depths are mismatched")
        return 1 + ds.pop()

    def leaves(x):
        return [y for e in x for y in leaves(e)] if isinstance(x, list) else [_t(x, "arrays")]

    d = depth(arrays)
    r = max(d, max(x.rank for x in leaves(arrays)))

    def build(x, level):
        if isinstance(x, list):
            return concatenate([build(e, level + 1) for e in x], axis=-(d - level))
        t = _t(x, "arrays")
        return O.reshape(t, (1,) * (r - t.rank) + t.shape)
    return build(arrays, 0)
