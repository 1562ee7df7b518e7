"""Selection and indexing functions of ``jax.numpy`` (issue 28, part 1): ``where``,
``select``, ``choose``, ``take``/``take_along_axis``, ``put``, ``diagonal``/``trace``, the
value-dependent ``nonzero`` family (a static ``size=`` when traced, as in JAX) and the
index helpers (``unravel_index``, ``ravel_multi_index``, ``ix_``, ``diag_indices``, ...)."""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .. import shape as S
from .. import types as T
from ..tensor import Tensor
from ._common import dtype_of
from .creation import shape_of
from .joining import _seq
from .manipulation import (_axis, _promoted, _static, _t, broadcast_arrays, broadcast_shapes,
                           broadcast_to, moveaxis, ravel, shape)

__all__ = ["where", "select", "take", "take_along_axis", "diagonal", "trace", "nonzero",
           "flatnonzero", "argwhere", "compress", "extract", "unravel_index", "ravel_multi_index",
           "diag_indices", "diag_indices_from", "fill_diagonal", "ix_", "choose", "put",
           "mask_indices"]

#: departures from ``jax.numpy`` (collected by :mod:`nxpy.numpy.coverage`)
NOTES = {
    "where": "the one-argument form is `nonzero`: traced, it needs a static `size=`",
    "nonzero": "without `size=` the values must be known (eager), as in JAX",
    "flatnonzero": "as `nonzero`",
    "argwhere": "as `nonzero`",
    "compress": "as `nonzero`",
    "extract": "as `nonzero`",
    "fill_diagonal": "`inplace=False` is required and `wrap=True` is not supported, as in "
                     "JAX",
    "ravel_multi_index": "`mode='raise'` needs the values (eager), as in JAX",
    "choose": "`mode='raise'` needs the values (eager), as in JAX",
    "put": "`inplace=False` is required, as in JAX; `mode='raise'` is not supported",
    "mask_indices": "`mask_func` is called on an s32 matrix of ones; traced, a static "
                    "`size=` is required",
    "take": "`mode='promise_in_bounds'` clamps, as 'clip'; `unique_indices` and "
            "`indices_are_sorted` are accepted and ignored",
    "take_along_axis": "as `take`; `wrap_negative_indices=False` is not supported",
}

def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """``jnp.where``: ``x`` where ``condition`` holds, ``y`` elsewhere (the three broadcast;
    ``x`` and ``y`` promoted). The one-argument form is :func:`nonzero` (traced, it
    needs a static ``size``).

    >>> import nxpy.numpy as xnp
    >>> xnp.where(xnp.asarray([True, False]), xnp.asarray([1, 2]), 0.5).tolist()
    [1.0, 0.5]
    """
    if x is None and y is None:
        try:
            return nonzero(condition, size=size, fill_value=fill_value)
        except ValueError as e:
            raise ValueError("where: the one-argument form where(condition) is "
                             "nonzero(condition), whose size depends on the values: pass a "
                             "static size=... (and fill_value=...), or use the "
                             f"three-argument form where(condition, x, y) ({e})") from None
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y must be given")
    if size is not None or fill_value is not None:
        raise ValueError("where: size and fill_value apply to the one-argument form only")
    c = _t(condition, "condition")
    if c.type.kind != "pred":
        c = O.not_equal(c, 0)
    return O.select(c, x, y)


def select(condlist, choicelist, default=0):
    """``jnp.select``: for each element, the entry of the first ``choicelist`` array whose
    ``condlist`` condition holds, else ``default``.

    >>> import nxpy.numpy as xnp
    >>> x = xnp.arange(5)
    >>> xnp.select([x < 2, x > 3], [x, x * 10], default=-1).tolist()
    [0, 1, -1, -1, 40]
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: condlist and choicelist must have the same length, got "
                         f"{len(condlist)} and {len(choicelist)}")
    if len(condlist) == 0:  # condlist may be an array: its rows are the conditions
        raise ValueError("select: condlist must be non-empty")
    conds = [_t(c, "condlist") for c in condlist]
    for c in conds:
        if c.type.kind != "pred":
            raise TypeError(f"select: condlist entries must be boolean, got {c.type}")
    choices = _promoted([*choicelist, default], None, "select")
    out = choices[-1]
    for c, v in reversed(list(zip(conds, choices[:-1]))):
        out = O.select(c, v, out)
    return out


def _fill_for(t: T.Type, fill_value):
    if fill_value is not None:
        return O.as_type(O.tensor(fill_value), t)
    if t.kind in "fbc":
        return O.tensor(np.nan, type=t)
    if t.kind == "pred":
        return O.tensor(True)
    return O.tensor(T.min_value(t) if t.kind == "s" else T.max_value(t), type=t)


def _indices(idx, n, mode, fn, wrap_negative=False):
    """``(indices to gather, valid mask or None)`` for ``mode``; negative indices count
    from the end in every mode but ``'clip'`` (or in all with ``wrap_negative``), as
    ``jax.numpy``'s."""
    if idx.type.kind not in "su":
        raise TypeError(f"{fn}: expected integer indices, got {idx.type}")
    i = O.as_type(idx, "s32") if idx.type.bits != 32 or idx.type.kind == "u" else idx
    if mode == "wrap":
        return O.remainder(O.add(O.remainder(i, max(n, 1)), max(n, 1)), max(n, 1)), None
    if mode in ("clip", "promise_in_bounds"):
        return (O.select(O.less(i, 0), O.add(i, n), i) if wrap_negative else i), None
    i = O.select(O.less(i, 0), O.add(i, n), i)
    if mode in (None, "fill", "drop"):
        ok = O.logical_and(O.greater_equal(i, 0), O.less(i, n))
        return i, ok
    raise ValueError(f"{fn}: expected mode 'fill', 'clip', 'wrap' or 'promise_in_bounds', "
                     f"got {mode!r}")


def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
    """``jnp.take``: the slices of ``a`` along ``axis`` (None: flattened) at ``indices``
    (negative ones from the end, but for ``'clip'``). Out of range: ``mode`` ``'fill'`` (the
    default) gives
    ``fill_value`` (NaN for floats, the type's minimum for signed ints, maximum for
    unsigned, True for pred), ``'clip'`` clamps, ``'wrap'`` wraps around.

    >>> import nxpy.numpy as xnp
    >>> x = xnp.asarray([1.0, 2.0, 3.0])
    >>> xnp.take(x, xnp.asarray([0, -1, 5])).tolist()
    [1.0, 3.0, nan]
    >>> xnp.take(x, xnp.asarray([4]), mode="wrap").tolist()
    [2.0]
    """
    if out is not None:
        raise NotImplementedError("take: the 'out' argument is not supported (as in JAX)")
    x = _t(a)
    if axis is None:
        x, axis = O.reshape(x, (x.size,)), 0
    axis = _axis(axis, x.rank, "take")
    idx = _t(indices, "indices")
    n = x.shape[axis]
    i, ok = _indices(idx, n, mode, "take")
    if n == 0:
        if ok is None and idx.size:
            raise IndexError("take: cannot take from an empty axis with mode 'clip' or "
                             "'wrap'")
        return O.full(x.shape[:axis] + idx.shape + x.shape[axis + 1:], 0, type=x.type) \
            if ok is None else O.broadcast(_fill_for(x.type, fill_value), x.shape[:axis] +
                                           idx.shape + x.shape[axis + 1:])
    got = O.take(x, i, axis=axis)
    if ok is None:
        return got
    mask = O.broadcast(ok, got.shape, axes=list(range(axis, axis + idx.rank)))
    return O.select(mask, got, _fill_for(x.type, fill_value))


def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
    """``jnp.take_along_axis``: ``arr``'s entries at ``indices`` along ``axis`` (None:
    flattened), the other axes broadcast between the two; out of range as :func:`take`.

    >>> import nxpy.numpy as xnp
    >>> x = xnp.asarray([[10, 30, 20], [60, 40, 50]])
    >>> xnp.take_along_axis(x, xnp.asarray([[0], [2]]), axis=1).tolist()
    [[10], [50]]
    """
    if wrap_negative_indices is False:
        raise NotImplementedError("take_along_axis: wrap_negative_indices=False is not "
                                  "supported")
    x, idx = _t(arr, "arr"), _t(indices, "indices")
    if axis is None:
        x, idx, axis = O.reshape(x, (x.size,)), O.reshape(idx, (idx.size,)), 0
    if idx.rank != x.rank:
        raise ValueError(f"take_along_axis: indices and arr must have the same rank, got "
                         f"{idx.shape} and {x.shape}")
    axis = _axis(axis, x.rank, "take_along_axis")
    n = x.shape[axis]
    xs = list(x.shape)
    ishape = list(idx.shape)
    for d in range(x.rank):
        if d != axis:
            m = broadcast_shapes((xs[d],), (ishape[d],))[0]
            xs[d] = ishape[d] = m
    x = broadcast_to(x, tuple(xs))
    idx = broadcast_to(idx, tuple(ishape))
    i, ok = _indices(idx, n, mode, "take_along_axis", wrap_negative=True)
    if n == 0 or idx.size == 0:
        fill = _fill_for(x.type, fill_value) if ok is not None else O.tensor(0, type=x.type)
        return O.broadcast(fill, idx.shape)
    got = O.take_along_axis(x, i, axis=axis)
    return got if ok is None else O.select(ok, got, _fill_for(x.type, fill_value))


def diagonal(a, offset=0, axis1=0, axis2=1):
    """``jnp.diagonal``: the ``offset``-th diagonal of the matrices in the plane
    ``(axis1, axis2)``, as the last axis of the result.

    >>> import nxpy.numpy as xnp
    >>> xnp.diagonal(xnp.arange(6).reshape((2, 3)), offset=1).tolist()
    [1, 5]
    """
    x = _t(a)
    if x.rank < 2:
        raise ValueError(f"diagonal: expected rank >= 2, got shape {x.shape}")
    i = _axis(axis1, x.rank, "diagonal", "axis1")
    j = _axis(axis2, x.rank, "diagonal", "axis2")
    if i == j:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    k = S.integer(offset, "diagonal: offset")
    x = moveaxis(x, (i, j), (-2, -1))
    batch = x.shape[:-2]
    r, c = x.shape[-2:]
    i0, j0 = (0, k) if k >= 0 else (-k, 0)
    n = max(0, min(r - i0, c - j0))
    if n == 0:
        return O.full(batch + (0,), 0, type=x.type)
    flat = O.reshape(x, batch + (r * c,))
    idx = (np.arange(n) * (c + 1) + i0 * c + j0).astype(np.int32)
    return O.take(flat, O.tensor(idx), axis=len(batch))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``jnp.trace``: the sum of the ``offset``-th diagonal (of ``dtype``; by default
    ``a``'s type, with integers narrower than 32 bits and pred widened to 32 bits).

    >>> import nxpy.numpy as xnp
    >>> xnp.trace(xnp.asarray([[1, 2], [3, 4]])).item()
    5
    """
    if out is not None:
        raise NotImplementedError("trace: the 'out' argument is not supported (as in JAX)")
    d = diagonal(a, offset, axis1, axis2)
    t = dtype_of(dtype, "trace")
    if t is None:
        t = d.type
        if t.kind == "pred" or (t.kind == "s" and t.bits < 32):
            t = T.parse("s32")
        elif t.kind == "u" and t.bits < 32:
            t = T.parse("u32")
    return O.sum(O.as_type(d, t), axes=[d.rank - 1])


def _true_positions(flat: Tensor, size, fn: str):
    """``(positions, valid)``: the flat positions of the first ``size`` true entries of
    the 1-D pred ``flat`` (then 0s), and which of them are real. ``size`` None: the
    number of true entries, which needs ``flat``'s value (eager, as JAX's)."""
    n = flat.shape[0]
    if size is None:
        if not _static(flat):
            raise ValueError(f"{fn}: the result's size depends on the values, which are "
                             "traced; pass a static size=... (and fill_value=...), as under "
                             "jax.jit")
        size = int(np.count_nonzero(flat.to_numpy()))
    size = S.integer(size, f"{fn}: size")
    if size < 0:
        raise ValueError(f"{fn}: expected size >= 0, got {size}")
    if size == 0 or n == 0:
        return O.full((size,), 0, type="s32"), O.full((size,), False, type="pred")
    order = O.argsort(O.as_type(O.logical_not(flat), "s32"), stable=True)   # trues first
    if size <= n:
        pos = O.slice_along_axis(order, 0, size)
    else:
        pos = O.concatenate([order, O.full((size - n,), 0, type="s32")])
    count = O.sum(O.as_type(flat, "s32"))
    return pos, O.less(O.iota((size,)), count)


def _nonzero_mask(a, fn, arg="a"):
    x = _t(a, arg)
    return x if x.type.kind == "pred" else O.not_equal(x, O.tensor(0, type=x.type))


def nonzero(a, *, size=None, fill_value=None):
    """``jnp.nonzero``: for each axis of ``a``, the indices (s32) of its non-zero
    entries, in row-major order. The count depends on the values: give a static
    ``size`` (entries past the count get ``fill_value``, 0 by default, or one per axis);
    without it ``a`` must have a value (eager), as in JAX.

    >>> import nxpy.numpy as xnp
    >>> [i.tolist() for i in xnp.nonzero(xnp.asarray([[0, 3], [4, 0]]))]
    [[0, 1], [1, 0]]
    >>> xnp.nonzero(xnp.asarray([0, 5, 0, 7]), size=3, fill_value=-1)[0].tolist()
    [1, 3, -1]
    """
    m = _nonzero_mask(a, "nonzero")
    if m.rank == 0:
        raise ValueError("nonzero: calling nonzero on a 0-d array is not allowed; use "
                         "atleast_1d first")
    pos, valid = _true_positions(O.reshape(m, (m.size,)), size, "nonzero")
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * m.rank
    if len(fills) != m.rank:
        raise ValueError(f"nonzero: expected fill_value to be a scalar or a tuple of "
                         f"{m.rank}, got {fill_value!r}")
    out, rest = [], pos
    for d in reversed(m.shape):
        out.append(O.subtract(rest, O.multiply(O.floor_divide(rest, d), d)) if d else rest)
        rest = O.floor_divide(rest, d) if d else rest
    out = out[::-1]
    return tuple(O.select(valid, i, O.as_type(O.tensor(0 if f is None else f), "s32"))
                 for i, f in zip(out, fills))


def flatnonzero(a, *, size=None, fill_value=None):
    """``jnp.flatnonzero``: the indices of the non-zero entries of ``a`` flattened (a
    static ``size`` as :func:`nonzero`).

    >>> import nxpy.numpy as xnp
    >>> xnp.flatnonzero(xnp.asarray([[0, 3], [4, 0]])).tolist()
    [1, 2]
    """
    x = _t(a)
    return nonzero(O.reshape(x, (x.size,)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """``jnp.argwhere``: the indices of the non-zero entries, one row each (``(count,
    rank)``; a static ``size`` as :func:`nonzero`).

    >>> import nxpy.numpy as xnp
    >>> xnp.argwhere(xnp.asarray([[0, 3], [4, 0]])).tolist()
    [[0, 1], [1, 0]]
    """
    x = _t(a)
    if x.rank == 0:
        keep = nonzero(O.reshape(x, (1,)), size=size, fill_value=fill_value)[0]
        return O.full((keep.shape[0], 0), 0, type="s32")
    idx = nonzero(x, size=size, fill_value=fill_value)
    return O.stack(list(idx), axis=1)


def compress(condition, a, axis=None, *, size=None, fill_value=0):
    """``jnp.compress``: the slices of ``a`` along ``axis`` (None: flattened) where the
    1-D ``condition`` holds (a static ``size`` as :func:`nonzero`; the slices past the
    count are ``fill_value``).

    >>> import nxpy.numpy as xnp
    >>> xnp.compress(xnp.asarray([True, False, True]), xnp.asarray([1, 2, 3])).tolist()
    [1, 3]
    """
    c = _nonzero_mask(condition, "compress", "condition")
    if c.rank != 1:
        raise ValueError(f"compress: condition must be a 1D array, got shape {c.shape}")
    x = _t(a)
    if axis is None:
        x, axis = O.reshape(x, (x.size,)), 0
    axis = _axis(axis, x.rank, "compress")
    n = x.shape[axis]
    if c.shape[0] > n:
        c = O.slice_along_axis(c, 0, n)
    elif c.shape[0] < n:
        c = O.concatenate([c, O.full((n - c.shape[0],), False, type="pred")]) if c.shape[0] \
            else O.full((n,), False, type="pred")
    if size is not None and not 0 < S.integer(size, "compress: size") <= n:
        raise ValueError(f"compress: size must be positive and not greater than the size "
                         f"of the array axis; got size={size} for axis {axis} of size {n}")
    pos, valid = _true_positions(c, size, "compress")
    if n == 0:
        return O.full(x.shape[:axis] + (pos.shape[0],) + x.shape[axis + 1:], fill_value,
                      type=x.type)
    got = O.take(x, pos, axis=axis)
    mask = O.broadcast(valid, got.shape, axes=[axis])
    return O.select(mask, got, O.as_type(O.tensor(fill_value), x.type))


def extract(condition, arr, *, size=None, fill_value=0):
    """``jnp.extract``: the entries of ``arr`` (flattened) where ``condition`` holds (a
    static ``size`` as :func:`nonzero`).

    >>> import nxpy.numpy as xnp
    >>> xnp.extract(xnp.asarray([[1, 0], [0, 1]]), xnp.asarray([[5, 6], [7, 8]])).tolist()
    [5, 8]
    """
    c = _t(condition, "condition")
    return compress(O.reshape(c, (c.size,)), ravel(arr), size=size, fill_value=fill_value)


def unravel_index(indices, shape):
    """``jnp.unravel_index``: flat indices as one index array per axis of ``shape``;
    out of range ones are clamped to the first or last entry, as JAX's.

    >>> import nxpy.numpy as xnp
    >>> [i.tolist() for i in xnp.unravel_index(xnp.asarray([1, 5, 9]), (2, 3))]
    [[0, 1, 1], [1, 2, 2]]
    """
    i = _t(indices, "indices")
    if i.type.kind not in "su":
        raise TypeError(f"unravel_index: expected integer indices, got {i.type}")
    dims = shape_of(shape, "unravel_index")
    out = [None] * len(dims)
    rest = i
    for k in reversed(range(len(dims))):
        d = O.tensor(dims[k], type=i.type)
        q = O.floor_divide(rest, d)
        out[k] = O.subtract(rest, O.multiply(q, d))
        rest = q
    hi = O.greater(rest, O.tensor(0, type=i.type))
    lo = O.less(rest, O.tensor(-1, type=i.type)) if i.type.kind == "s" else None
    res = []
    for d, v in zip(dims, out):
        v = O.select(lo, O.tensor(0, type=i.type), v) if lo is not None else v
        res.append(O.select(hi, O.tensor(d - 1, type=i.type), v))
    return tuple(res)


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    """``jnp.ravel_multi_index``: one flat index per position from the index arrays
    ``multi_index`` into the shape ``dims``; ``mode`` ``'clip'``, ``'wrap'``, ``'ignore'``
    or ``'raise'`` (which needs the values: eager only, as in JAX); of ``dtype`` (the
    indices' type by default).

    >>> import nxpy.numpy as xnp
    >>> xnp.ravel_multi_index((xnp.asarray([0, 1]), xnp.asarray([2, 0])), (2, 3)).tolist()
    [2, 3]
    """
    dims = shape_of(dims, "ravel_multi_index", "dims")
    idx = [_t(i, "multi_index") for i in multi_index]
    if len(idx) != len(dims):
        raise ValueError(f"ravel_multi_index: got {len(idx)} index arrays for {len(dims)} "
                         "dims")
    for i in idx:
        if i.type.kind not in "su":
            raise TypeError("ravel_multi_index: only int indices permitted")
    t = dtype_of(dtype, "ravel_multi_index")
    if t is None:
        t = idx[0].type if idx else T.parse("s32")
        for i in idx[1:]:
            t = T.merge(t, i.type)
    if t.kind not in "su":
        raise ValueError(f"ravel_multi_index: dtype={t} is not an integer type")
    if int(np.prod(dims, dtype=np.int64)) - 1 > T.max_value(t):
        raise ValueError(f"ravel_multi_index: dtype={t} not large enough to hold flattened "
                         f"index for dims={dims}; pass a wider dtype")
    idx = [O.as_type(i, t) for i in idx]
    if mode == "raise":
        if not all(_static(i) for i in idx):
            raise ValueError("ravel_multi_index: mode='raise' needs the values (the "
                             "function is traced); use mode='wrap' or mode='clip'")
        if any(((i.to_numpy() < 0) | (i.to_numpy() >= d)).any() for i, d in zip(idx, dims)):
            raise ValueError("ravel_multi_index: invalid entry in coordinates array")
    elif mode == "clip":
        idx = [O.clip(i, O.tensor(0, type=t), O.tensor(d - 1, type=t)) for i, d in
               zip(idx, dims)]
    elif mode == "wrap":
        idx = [O.subtract(i, O.multiply(O.floor_divide(i, O.tensor(d, type=t)),
                                        O.tensor(d, type=t))) for i, d in zip(idx, dims)]
    elif mode != "ignore":
        raise ValueError(f"ravel_multi_index: invalid mode={mode!r}. Expected 'raise', "
                         "'wrap', 'clip', or 'ignore'.")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    seq = list(zip(idx, dims))
    if order == "F":
        seq = seq[::-1]
    out = O.tensor(0, type=t)
    for i, d in seq:
        out = O.add(O.multiply(out, O.tensor(d, type=t)), i)
    return out


def diag_indices(n, ndim=2):
    """``jnp.diag_indices``: ``ndim`` copies of ``arange(n)``, the indices of the main
    diagonal of an ``n x ... x n`` array.

    >>> import nxpy.numpy as xnp
    >>> [i.tolist() for i in xnp.diag_indices(2)]
    [[0, 1], [0, 1]]
    """
    n, ndim = S.integer(n, "diag_indices: n"), S.integer(ndim, "diag_indices: ndim")
    if n < 0 or ndim < 0:
        raise ValueError(f"diag_indices: n and ndim must be non-negative, got {n}, {ndim}")
    return (O.iota((n,)),) * ndim


def diag_indices_from(arr):
    """``jnp.diag_indices_from``: :func:`diag_indices` of ``arr`` (rank >= 2, every axis
    of one size).

    >>> import nxpy.numpy as xnp
    >>> len(xnp.diag_indices_from(xnp.zeros((2, 2, 2))))
    3
    """
    s = shape(arr)
    if len(s) < 2 or len(set(s)) != 1:
        raise ValueError(f"diag_indices_from: input array must be at least 2-d and have "
                         f"equal-length dimensions, got shape {s}")
    return diag_indices(s[0], len(s))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """``jnp.fill_diagonal``: ``a`` with its main diagonal set to ``val`` (a scalar, or
    values used in order and repeated). ``inplace=False`` is required, as in JAX.

    >>> import nxpy.numpy as xnp
    >>> xnp.fill_diagonal(xnp.zeros((2, 3)), 5.0, inplace=False).tolist()
    [[5.0, 0.0, 0.0], [0.0, 5.0, 0.0]]
    """
    if inplace:
        raise NotImplementedError("fill_diagonal: JAX arrays (and nxpy tensors) are "
                                  "immutable; pass inplace=False")
    if wrap:
        raise NotImplementedError("fill_diagonal: wrap=True is not implemented")
    x = _t(a)
    if x.rank < 2:
        raise ValueError(f"fill_diagonal: array must be at least 2-d, got shape {x.shape}")
    if x.rank > 2 and len(set(x.shape)) != 1:
        raise ValueError(f"fill_diagonal: all dimensions of the input must be of equal "
                         f"length, got shape {x.shape}")
    n = min(x.shape)
    v = O.as_type(_t(val, "val"), x.type)
    on = None
    for k in range(1, x.rank):
        eq = O.equal(O.iota(x.shape, axis=0), O.iota(x.shape, axis=k))
        on = eq if on is None else O.logical_and(on, eq)
    if v.rank == 0 or n == 0:
        return O.select(on, v, x)
    flat = O.reshape(v, (v.size,))
    reps = -(-n // flat.shape[0])
    vals = O.slice_along_axis(O.tile(flat, [reps]) if reps > 1 else flat, 0, n)
    grid = O.take(vals, O.min(O.iota(x.shape, axis=0), n - 1))
    return O.select(on, grid, x)


def ix_(*args):
    """``jnp.ix_``: 1-D index arrays reshaped to broadcast against each other as an open
    mesh (the k-th along axis k).

    >>> import nxpy.numpy as xnp
    >>> [i.shape for i in xnp.ix_(xnp.asarray([0, 1]), xnp.asarray([2, 0, 1]))]
    [(2, 1), (1, 3)]
    """
    xs = [_t(a, "args") for a in args]
    out = []
    for k, x in enumerate(xs):
        if x.rank != 1:
            raise ValueError(f"ix_: arguments must be 1-D, got shape {x.shape}")
        if x.type.kind == "pred":
            raise TypeError("ix_: boolean arguments are not supported (data-dependent)")
        out.append(O.reshape(x, tuple(x.shape[0] if j == k else 1 for j in range(len(xs)))))
    return tuple(out)


def choose(a, choices, out=None, mode="raise"):
    """``jnp.choose``: for each position, the entry of ``choices[a]`` (the index array
    ``a`` and the choices broadcast together); ``mode`` ``'wrap'``, ``'clip'`` or
    ``'raise'`` (which needs ``a``'s values: eager only, as in JAX).

    >>> import nxpy.numpy as xnp
    >>> xnp.choose(xnp.asarray([2, 0, 1]), [[1, 2, 3], [4, 5, 6], [7, 8, 9]]).tolist()
    [7, 2, 6]
    """
    if out is not None:
        raise NotImplementedError("choose: the 'out' argument is not supported (as in JAX)")
    i = _t(a)
    if i.type.kind not in "su":
        raise ValueError("choose: `a` array must be integer typed")
    cs = _promoted(_seq(choices, "choose"), None, "choose")
    n = len(cs)
    if mode == "raise":
        if not _static(i):
            raise ValueError("choose: mode='raise' needs the values of a (the function is "
                             "traced); use mode='wrap' or mode='clip'")
        v = i.to_numpy()
        if ((v < 0) | (v >= n)).any():
            raise ValueError("choose: invalid entry in choice array")
    elif mode == "wrap":
        i = O.remainder(O.add(O.remainder(i, n), n), n)
    elif mode == "clip":
        i = O.clip(i, O.tensor(0, type=i.type), O.tensor(n - 1, type=i.type))
    else:
        raise ValueError(f"choose: mode={mode!r} not understood. Must be 'raise', 'wrap', "
                         "or 'clip'")
    i, *cs = broadcast_arrays(i, *cs)
    out_ = cs[-1]
    for k in range(n - 2, -1, -1):
        out_ = O.select(O.equal(i, O.tensor(k, type=i.type)), cs[k], out_)
    return out_


def put(a, ind, v, mode=None, *, inplace=True):
    """``jnp.put``: ``a`` with the entries at the flat indices ``ind`` set to ``v``
    (repeated to ``ind``'s length). ``mode`` None: negative indices count from the end and
    out-of-range ones clamp to the first or last entry (as JAX's, which goes through
    ``unravel_index``); ``'clip'`` clamps; ``'wrap'`` wraps. ``inplace=False`` is
    required, as in JAX.

    >>> import nxpy.numpy as xnp
    >>> xnp.put(xnp.zeros(5, dtype="int32"), xnp.asarray([0, -2]), 7, inplace=False).tolist()
    [7, 0, 0, 7, 0]
    """
    if inplace:
        raise ValueError("put: nxpy tensors (as JAX arrays) are immutable; pass "
                         "inplace=False to get the updated array")
    x, idx, vals = _t(a), _t(ind, "ind"), _t(v, "v")
    if idx.type.kind not in "su":
        raise TypeError(f"put: expected integer indices, got {idx.type}")
    idx = O.as_type(O.reshape(idx, (idx.size,)), "s32")
    vals = O.as_type(O.reshape(vals, (vals.size,)), x.type)
    if not x.size or not idx.size or not vals.size:
        return x
    k, n = idx.shape[0], x.size
    if vals.shape[0] != k:
        reps = -(-k // vals.shape[0])
        vals = O.slice_along_axis(O.tile(vals, [reps]) if reps > 1 else vals, 0, k)
    if mode is None:
        idx = O.select(O.less(idx, 0), O.add(idx, n), idx)
        idx = O.clip(idx, O.tensor(0, type=idx.type), O.tensor(n - 1, type=idx.type))
    elif mode == "clip":
        idx = O.clip(idx, O.tensor(0, type=idx.type), O.tensor(n - 1, type=idx.type))
    elif mode == "wrap":
        idx = O.remainder(O.add(O.remainder(idx, n), n), n)
    else:
        raise ValueError(f"put: mode={mode!r} is not supported; expected None, 'clip' or "
                         "'wrap'")
    flat = O.indexed_put(O.reshape(x, (n,)), O.reshape(idx, (k, 1)), vals)
    return O.reshape(flat, x.shape)


def mask_indices(n, mask_func, k=0, *, size=None):
    """``jnp.mask_indices``: the indices of the non-zero entries of ``mask_func(ones((n,
    n)), k)`` (``tril``, ``triu``, ...), a tuple of two s32 arrays (a static ``size`` as
    :func:`nonzero`).

    >>> import nxpy.numpy as xnp
    >>> [i.tolist() for i in xnp.mask_indices(2, xnp.triu)]
    [[0, 0, 1], [0, 1, 1]]
    """
    n = S.integer(n, "mask_indices: n")
    return nonzero(mask_func(O.full((n, n), 1, type="s32"), k), size=size)
