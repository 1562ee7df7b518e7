"""Shape and indexing functions of ``jax.numpy`` (issue 28, part 1): ``reshape``,
``transpose``, ``moveaxis``, ``flip``, ``roll``, ``repeat``, ``tile``, the ``split`` and
``stack`` families, ``insert``/``delete``, ``pad`` with every mode of ``jnp.pad``,
broadcasting, ``where``/``select``, ``take``/``take_along_axis``, ``diagonal``/``trace``.
Shapes, axes, split points and pad widths are static (as under ``jax.jit``); values may
be traced tensors."""
from __future__ import annotations

import operator

import numpy as np

from .. import ops as O
from .. import types as T
from ..tensor import Tensor
from ._common import axes_of, dtype_of
from .creation import linspace, shape_of

__all__ = ["reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "swapaxes",
           "moveaxis", "expand_dims", "squeeze", "flip", "fliplr", "flipud", "roll", "rot90",
           "repeat", "tile", "split", "array_split", "hsplit", "vsplit", "dsplit", "unstack",
           "stack", "hstack", "vstack", "dstack", "column_stack", "concatenate", "concat",
           "append", "insert", "delete", "pad", "broadcast_to", "broadcast_arrays",
           "broadcast_shapes", "atleast_1d", "atleast_2d", "atleast_3d", "where", "select",
           "take", "take_along_axis", "diagonal", "trace", "shape", "ndim", "size",
           "iscomplexobj", "isscalar", "astype", "copy", "resize", "nonzero", "flatnonzero",
           "argwhere", "compress", "extract", "unravel_index", "ravel_multi_index",
           "diag_indices", "diag_indices_from", "fill_diagonal", "rollaxis", "ix_", "block",
           "choose", "put", "mask_indices", "isrealobj"]

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
    "insert": "`obj` must be static (ints, a slice or a NumPy array)",
    "delete": "`obj` must be static (ints, a slice or a NumPy array)",
    "repeat": "per-element `repeats` must be static unless `total_repeat_length` is given",
    "pad": "a callable `mode` is called once per 1-D slice (a Python loop, as "
           "`apply_along_axis` without `vmap`): for small arrays",
    "split": "split points must be static",
    "array_split": "split points must be static",
}

#: parameters of ``jax.numpy``'s functions that nxpy's lack, beyond ``device`` and
#: ``out_sharding``: name → {parameter: why}
PARAMETER_GAPS: dict = {}


def _t(a, arg="a") -> Tensor:
    return O.to_tensor(a, arg)


def _axis(axis, rank: int, fn: str, arg: str = "axis") -> int:
    if not (isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)):
        raise TypeError(f"{fn}: expected {arg} to be an int, got {axis!r}")
    if not -rank <= axis < rank:
        raise ValueError(f"{fn}: {arg} {axis} is out of bounds for a tensor of rank {rank}")
    return int(axis) % rank


def _axes_ordered(axis, rank: int, fn: str) -> list[int]:
    """Like ``axes_of`` but keeping the given order (for ``moveaxis``)."""
    seq = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    out = [_axis(a, rank, fn) for a in seq]
    if len(set(out)) != len(out):
        raise ValueError(f"{fn}: repeated axis in {axis!r}")
    return out


def _cut(x: Tensor, start: int, stop: int, axis: int) -> Tensor:
    """``x[start:stop]`` along ``axis`` (static, in range)."""
    return O.slice_along_axis(x, start, stop - start, axis=axis)


def _promoted(xs, dtype, fn):
    ts = [_t(x, "arrays") for x in xs]
    t = dtype_of(dtype, fn)
    if t is None:
        t = ts[0].type
        for x in ts[1:]:
            t = T.merge(t, x.type)
    return [O.as_type(x, t) if x.type != t else x for x in ts]


# shapes -----------------------------------------------------------------------------------

def reshape(a, shape, order="C", *, copy=None):
    """``jnp.reshape``: ``a`` with ``shape`` (one entry may be -1); ``order`` ``'C'``
    (row-major) or ``'F'``.

    >>> import nxpy.numpy as xnp
    >>> xnp.reshape(xnp.arange(6), (-1, 2)).tolist()
    [[0, 1], [2, 3], [4, 5]]
    >>> xnp.reshape(xnp.arange(6), (2, 3), order="F").tolist()
    [[0, 2, 4], [1, 3, 5]]
    """
    x = _t(a)
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(int(d) for d in shape)
    if order == "F":
        rev = O.transpose(x, list(range(x.rank))[::-1]) if x.rank > 1 else x
        out = O.reshape(rev, shape[::-1])
        return O.transpose(out, list(range(out.rank))[::-1]) if out.rank > 1 else out
    if order not in ("C", "A"):
        raise ValueError(f"reshape: expected order 'C' or 'F', got {order!r}")
    if sum(d == -1 for d in shape) > 1 or any(d < -1 for d in shape):
        raise ValueError(f"reshape: expected at most one -1 and sizes >= 0, got {shape}")
    if -1 in shape:
        rest = int(np.prod([d for d in shape if d != -1]))
        if rest == 0 or x.size % rest:
            raise ValueError(f"reshape: cannot reshape a tensor of size {x.size} into "
                             f"{shape}")
        shape = tuple(x.size // rest if d == -1 else d for d in shape)
    if int(np.prod(shape)) != x.size:
        raise ValueError(f"reshape: cannot reshape a tensor of shape {x.shape} into {shape}")
    return O.reshape(x, shape)


def ravel(a, order="C"):
    """``jnp.ravel``: ``a`` flattened (``order`` ``'C'`` or ``'F'``).

    >>> import nxpy.numpy as xnp
    >>> xnp.ravel(xnp.asarray([[1, 2], [3, 4]])).tolist()
    [1, 2, 3, 4]
    """
    x = _t(a)
    return reshape(x, (x.size,), order=order)


def transpose(a, axes=None):
    """``jnp.transpose``: ``a``'s axes reversed, or permuted by ``axes`` (negative ones
    count from the end).

    >>> import nxpy.numpy as xnp
    >>> xnp.transpose(xnp.zeros((1, 2, 3)), (2, 0, 1)).shape
    (3, 1, 2)
    """
    x = _t(a)
    if axes is None:
        return O.transpose(x, list(range(x.rank))[::-1])
    perm = _axes_ordered(axes, x.rank, "transpose")
    if len(perm) != x.rank:
        raise ValueError(f"transpose: axes {tuple(axes)} is not a permutation of "
                         f"{x.rank} axes")
    return O.transpose(x, perm)


def permute_dims(a, /, axes):
    """``jnp.permute_dims``: :func:`transpose` with ``axes`` required.

    >>> import nxpy.numpy as xnp
    >>> xnp.permute_dims(xnp.zeros((1, 2)), (1, 0)).shape
    (2, 1)
    """
    return transpose(a, axes)


def matrix_transpose(x, /):
    """``jnp.matrix_transpose``: the last two axes swapped.

    >>> import nxpy.numpy as xnp
    >>> xnp.matrix_transpose(xnp.zeros((4, 1, 2))).shape
    (4, 2, 1)
    """
    x = _t(x, "x")
    if x.rank < 2:
        raise ValueError(f"matrix_transpose: expected rank >= 2, got shape {x.shape}")
    return swapaxes(x, -1, -2)


def swapaxes(a, axis1, axis2):
    """``jnp.swapaxes``: ``a`` with ``axis1`` and ``axis2`` exchanged.

    >>> import nxpy.numpy as xnp
    >>> xnp.swapaxes(xnp.zeros((1, 2, 3)), 0, -1).shape
    (3, 2, 1)
    """
    x = _t(a)
    i, j = _axis(axis1, x.rank, "swapaxes", "axis1"), _axis(axis2, x.rank, "swapaxes", "axis2")
    perm = list(range(x.rank))
    perm[i], perm[j] = j, i
    return O.transpose(x, perm)


def moveaxis(a, source, destination):
    """``jnp.moveaxis``: ``a`` with the axes ``source`` moved to ``destination`` (ints or
    sequences of the same length), the others in order.

    >>> import nxpy.numpy as xnp
    >>> xnp.moveaxis(xnp.zeros((1, 2, 3)), 0, -1).shape
    (2, 3, 1)
    """
    x = _t(a)
    src = _axes_ordered(source, x.rank, "moveaxis")
    dst = _axes_ordered(destination, x.rank, "moveaxis")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} "
                         "differ in length")
    perm = [i for i in range(x.rank) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return O.transpose(x, perm)


def expand_dims(a, axis):
    """``jnp.expand_dims``: ``a`` with size-1 axes inserted at ``axis`` (an int or a
    tuple, positions in the result).

    >>> import nxpy.numpy as xnp
    >>> xnp.expand_dims(xnp.zeros((2, 3)), (0, -1)).shape
    (1, 2, 3, 1)
    """
    x = _t(a)
    n = 1 if isinstance(axis, (int, np.integer)) else len(axis)
    axes = axes_of(axis, x.rank + n, "expand_dims")
    shape = list(x.shape)
    for ax in axes:
        shape.insert(ax, 1)
    return O.reshape(x, tuple(shape))


def squeeze(a, axis=None):
    """``jnp.squeeze``: ``a`` without its size-1 axes (all, or those of ``axis``, which
    must have size 1).

    >>> import nxpy.numpy as xnp
    >>> xnp.squeeze(xnp.zeros((1, 2, 1)), axis=0).shape
    (2, 1)
    """
    x = _t(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = axes_of(axis, x.rank, "squeeze")
        for ax in axes:
            if x.shape[ax] != 1:
                raise ValueError(f"squeeze: cannot select an axis to squeeze out which has "
                                 f"size not equal to one (axis {ax} of shape {x.shape})")
    return O.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))


def flip(m, axis=None):
    """``jnp.flip``: ``m`` reversed along ``axis`` (None: every axis; an int or a tuple).

    >>> import nxpy.numpy as xnp
    >>> xnp.flip(xnp.asarray([[1, 2], [3, 4]]), -1).tolist()
    [[2, 1], [4, 3]]
    """
    x = _t(m, "m")
    axes = axes_of(axis, x.rank, "flip")
    return O.reverse(x, list(axes)) if axes else x


def fliplr(m):
    """``jnp.fliplr``: ``m`` (rank >= 2) reversed along axis 1.

    >>> import nxpy.numpy as xnp
    >>> xnp.fliplr(xnp.asarray([[1, 2]])).tolist()
    [[2, 1]]
    """
    x = _t(m, "m")
    if x.rank < 2:
        raise ValueError(f"fliplr: expected rank >= 2, got shape {x.shape}")
    return flip(x, 1)


def flipud(m):
    """``jnp.flipud``: ``m`` (rank >= 1) reversed along axis 0.

    >>> import nxpy.numpy as xnp
    >>> xnp.flipud(xnp.asarray([1, 2])).tolist()
    [2, 1]
    """
    x = _t(m, "m")
    if x.rank < 1:
        raise ValueError("flipud: expected rank >= 1, got a scalar")
    return flip(x, 0)


def _roll1(x, shift, axis):
    n = x.shape[axis]
    if n == 0:
        return x
    if isinstance(shift, Tensor):     # a traced shift: a gather at (i - shift) mod n
        s = O.as_type(shift, "s32")
        idx = O.remainder(O.add(O.remainder(O.subtract(O.iota((n,)), s), n), n), n)
        return O.take(x, idx, axis=axis)
    s = int(shift) % n
    if s == 0:
        return x
    return O.concatenate([_cut(x, n - s, n, axis), _cut(x, 0, n - s, axis)], axis=axis)


def roll(a, shift, axis=None):
    """``jnp.roll``: ``a``'s elements shifted by ``shift`` along ``axis`` (ints or
    tuples, broadcast against each other), those leaving one end entering at the other;
    with ``axis`` None, along the flattened ``a``, reshaped back. A shift may be a traced
    scalar tensor.

    >>> import nxpy.numpy as xnp
    >>> xnp.roll(xnp.arange(5), 2).tolist()
    [3, 4, 0, 1, 2]
    >>> xnp.roll(xnp.asarray([[1, 2], [3, 4]]), (1, 1), axis=(0, 1)).tolist()
    [[4, 3], [2, 1]]
    """
    x = _t(a)
    if axis is None:
        return O.reshape(roll(O.reshape(x, (x.size,)), shift, 0), x.shape)
    if isinstance(shift, Tensor) and shift.rank > 0:
        shifts = [O.squeeze(O.slice_along_axis(shift, i, 1), [0])
                  for i in range(shift.shape[0])]
    elif isinstance(shift, (tuple, list, np.ndarray)):
        shifts = [int(s) for s in np.ravel(shift)]
    else:
        shifts = [shift if isinstance(shift, Tensor) else int(shift)]
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    if len(axes) == 1:
        axes = axes * len(shifts)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} do not broadcast")
    for s, ax in zip(shifts, axes):
        x = _roll1(x, s, _axis(ax, x.rank, "roll"))
    return x


def rot90(m, k=1, axes=(0, 1)):
    """``jnp.rot90``: ``m`` rotated by ``k`` quarter turns in the plane of ``axes``, from
    the first axis towards the second.

    >>> import nxpy.numpy as xnp
    >>> xnp.rot90(xnp.asarray([[1, 2], [3, 4]])).tolist()
    [[2, 4], [1, 3]]
    """
    x = _t(m, "m")
    if len(axes) != 2:
        raise ValueError(f"rot90: expected two axes, got {axes!r}")
    a0, a1 = _axis(axes[0], x.rank, "rot90", "axes"), _axis(axes[1], x.rank, "rot90", "axes")
    if a0 == a1:
        raise ValueError(f"rot90: axes must be different, got {axes!r}")
    k = operator.index(k) % 4
    if k == 0:
        return x
    if k == 2:
        return O.reverse(x, [a0, a1])
    perm = list(range(x.rank))
    perm[a0], perm[a1] = a1, a0
    if k == 1:
        return O.transpose(O.reverse(x, [a1]), perm)
    return O.reverse(O.transpose(x, perm), [a1])


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """``jnp.repeat``: each element of ``a`` repeated ``repeats`` times along ``axis``
    (None: of the flattened ``a``). ``repeats`` is an int or one count per element
    (static, or a tensor with a static ``total_repeat_length``, the result's length:
    past the counts' sum the last element repeats, short of it the result is cut).

    >>> import nxpy.numpy as xnp
    >>> xnp.repeat(xnp.asarray([1, 2]), 2).tolist()
    [1, 1, 2, 2]
    >>> xnp.repeat(xnp.asarray([[1, 2], [3, 4]]), [1, 2], axis=0).tolist()
    [[1, 2], [3, 4], [3, 4]]
    """
    x = _t(a)
    if axis is None:
        x, axis = O.reshape(x, (x.size,)), 0
    axis = _axis(axis, x.rank, "repeat")
    n = x.shape[axis]
    if isinstance(repeats, Tensor) and not _static(repeats):
        if total_repeat_length is None:
            raise ValueError("repeat: traced repeats need a static total_repeat_length "
                             "(the result's size)")
        r = O.broadcast(O.as_type(repeats, "s32"), (n,)) if repeats.rank == 0 else \
            O.as_type(repeats, "s32")
        ends = O.cumulative_sum(r)                          # exclusive ends of the runs
        pos = O.iota((total_repeat_length, 1))
        idx = O.sum(O.as_type(O.greater_equal(pos, O.new_axis(ends, 0)), "s32"), axes=[1])
        return O.take(x, O.min(idx, n - 1), axis=axis)
    reps = np.asarray(repeats.to_numpy() if isinstance(repeats, Tensor) else repeats)
    if reps.dtype.kind not in "iu" or reps.ndim > 1:
        raise TypeError(f"repeat: expected repeats to be an int or a 1-D sequence of ints, "
                        f"got {repeats!r}")
    if (reps < 0).any():
        raise ValueError(f"repeat: expected non-negative repeats, got {repeats!r}")
    if reps.ndim == 1 and reps.size == 1:
        reps = reps[0]
    if reps.ndim == 0:
        r = int(reps)
        if total_repeat_length is None and n > 0 and r > 0:
            shape = x.shape[:axis + 1] + (r,) + x.shape[axis + 1:]
            out = O.broadcast(O.new_axis(x, axis + 1), shape)
            return O.reshape(out, x.shape[:axis] + (n * r,) + x.shape[axis + 1:])
        reps = np.full(n, r)
    if reps.shape[0] != n:
        raise ValueError(f"repeat: expected {n} repeats along axis {axis}, got {reps.size}")
    idx = np.repeat(np.arange(n), reps)
    if total_repeat_length is not None:
        idx = idx[:total_repeat_length]
        if len(idx) < total_repeat_length:
            idx = np.concatenate([idx, np.full(total_repeat_length - len(idx), n - 1)])
    if n == 0 or idx.size == 0:
        return O.full(x.shape[:axis] + (idx.size,) + x.shape[axis + 1:], 0, type=x.type)
    return O.take(x, O.tensor(idx.astype(np.int32)), axis=axis)


def _static(x: Tensor) -> bool:
    try:
        x.to_numpy()
        return True
    except Exception:
        return False


def tile(A, reps):
    """``jnp.tile``: ``A`` repeated ``reps`` times (an int or one count per axis; the
    shorter of ``A``'s shape and ``reps`` is padded with leading 1s).

    >>> import nxpy.numpy as xnp
    >>> xnp.tile(xnp.asarray([1, 2]), (2, 2)).tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    x = _t(A, "A")
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(int(r) for r in reps)
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: expected non-negative reps, got {reps}")
    rank = max(x.rank, len(reps))
    x = O.reshape(x, (1,) * (rank - x.rank) + x.shape)
    reps = (1,) * (rank - len(reps)) + reps
    if 0 in reps or x.size == 0:
        return O.full(tuple(d * r for d, r in zip(x.shape, reps)), 0, type=x.type)
    return O.tile(x, list(reps)) if rank else x


# splitting and joining ---------------------------------------------------------------------

def _split(ary, indices_or_sections, axis, fn, even):
    x = _t(ary, "ary")
    axis = _axis(axis, x.rank, fn)
    n = x.shape[axis]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        ios = ios.to_numpy()
    if np.ndim(ios) == 0:
        k = operator.index(ios)
        if k <= 0:
            raise ValueError(f"{fn}: expected a positive number of sections, got {k}")
        if even and n % k:
            raise ValueError(f"{fn}: array split does not result in an equal division: "
                             f"{n} into {k} sections")
        q, r = divmod(n, k)
        sizes = [q + 1] * r + [q] * (k - r)
        cuts = np.cumsum([0] + sizes)
    else:
        points = [operator.index(i) for i in np.ravel(ios)]
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


def _seq(arrays, fn):
    if isinstance(arrays, Tensor):
        return list(unstack(arrays)) if arrays.rank else [arrays]
    if isinstance(arrays, np.ndarray):
        return list(arrays)
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise ValueError(f"{fn}: expected a non-empty sequence of arrays, got {arrays!r}")
    return list(arrays)


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


# padding ----------------------------------------------------------------------------------

_PAD_MODES = ("constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum",
              "reflect", "symmetric", "wrap", "empty")


def _pairs(v, nd, name):
    if isinstance(v, Tensor):
        v = v.to_numpy()
    try:
        a = np.asarray(v)
    except ValueError as e:
        raise TypeError(f"pad: {name} entries must be the same shape: {v!r}") from e
    if a.dtype == object:
        raise TypeError(f"pad: {name} entries must be the same shape: {v!r}")
    if a.shape == (nd, 2):
        return [(a[i, 0], a[i, 1]) for i in range(nd)]
    if a.shape == (1, 2):
        return [(a[0, 0], a[0, 1])] * nd
    if a.shape == (2,):
        return [(a[0], a[1])] * nd
    if a.shape in ((1,), ()):
        return [(a.flat[0], a.flat[0])] * nd
    raise ValueError(f"pad: {name} with nd={nd} has unsupported shape {a.shape}. Valid "
                     f"shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def _no_padding(widths, mode):
    if widths[0] > 0 or widths[1] > 0:
        raise ValueError(f"pad: cannot apply '{mode}' padding to an empty axis")


def _rint(x):
    """Round half to even (``jnp.round``), for float ``x``."""
    r = O.floor(O.add(x, 0.5))
    tie = O.equal(O.subtract(r, x), 0.5)
    odd = O.not_equal(O.subtract(r, O.multiply(O.floor(O.multiply(r, 0.5)), 2.0)), 0.0)
    return O.select(O.logical_and(tie, odd), O.subtract(r, 1.0), r)


def _rep(x, n, axis):
    """``x`` (size 1 along ``axis``) repeated ``n`` times along it."""
    shape = list(x.shape)
    shape[axis] = n
    return O.broadcast(O.squeeze(x, [axis]), tuple(shape),
                       axes=[i for i in range(x.rank) if i != axis])


def _join(parts, axis):
    parts = [p for p in parts if p.shape[axis]]
    return parts[0] if len(parts) == 1 else O.concatenate(parts, axis=axis)


def _stat(x, axis, mode):
    if mode == "maximum":
        return O.reduce_max(x, axes=[axis], keep_axes=True)
    if mode == "minimum":
        return O.reduce_min(x, axes=[axis], keep_axes=True)
    f = x if x.type.kind in "fbc" else O.as_type(x, "f32")
    if mode == "mean":
        s = O.mean(f, axes=[axis], keep_axes=True)
    else:
        s = O.median(f, axis=axis, keep_axis=True)
    if x.type.kind in "su":
        s = _rint(s)
    return O.as_type(s, x.type)


def pad(array, pad_width, mode="constant", **kwargs):
    """``jnp.pad``: ``array`` padded by ``pad_width`` (an int, a ``(before, after)`` pair,
    or one pair per axis) with ``mode``: ``'constant'`` (``constant_values``, one value
    or per-axis pairs), ``'edge'``, ``'reflect'`` and ``'symmetric'``
    (``reflect_type`` ``'even'`` or ``'odd'``), ``'wrap'``, ``'linear_ramp'``
    (``end_values``), ``'maximum'``/``'mean'``/``'median'``/``'minimum'``
    (``stat_length``), ``'empty'`` (zeros), or a function ``mode(vector, (before, after),
    axis, kwargs)`` returning each zero-padded 1-D slice padded (called once per slice,
    as ``jnp.pad`` through ``apply_along_axis``). Axis by axis, as ``jnp.pad``.

    >>> import nxpy.numpy as xnp
    >>> x = xnp.asarray([1, 2, 3])
    >>> xnp.pad(x, 2, mode="reflect").tolist(), xnp.pad(x, (1, 2), mode="wrap").tolist()
    ([3, 2, 1, 2, 3, 2, 1], [3, 1, 2, 3, 1, 2])
    >>> xnp.pad(x, 1, constant_values=(7, 9)).tolist()
    [7, 1, 2, 3, 9]
    """
    if callable(mode):
        return _pad_func(_t(array, "array"), pad_width, mode, kwargs)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: unimplemented padding mode {mode!r} for np.pad (expected "
                         f"one of {', '.join(_PAD_MODES)})")
    allowed = {"constant": {"constant_values"}, "linear_ramp": {"end_values"},
               "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
               "maximum": {"stat_length"}, "mean": {"stat_length"},
               "median": {"stat_length"}, "minimum": {"stat_length"}}.get(mode, set())
    bad = set(kwargs) - allowed
    if bad:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(bad)}")
    x = _t(array, "array")
    nd = x.rank
    if nd == 0:
        return x
    widths = [(operator.index(b), operator.index(a)) for b, a in _pairs(pad_width, nd,
                                                                          "pad_width")]
    if any(b < 0 or a < 0 for b, a in widths):
        raise ValueError(f"pad: index can't contain negative values, got {pad_width!r}")
    if mode == "constant":
        return _pad_constant(x, widths, kwargs.get("constant_values", 0))
    if mode == "wrap":
        for i, (b, a) in enumerate(widths):
            n = x.shape[i]
            if n == 0:
                _no_padding((b, a), mode)
                continue
            (lr, lrem), (rr, rrem) = divmod(b, n), divmod(a, n)
            parts = ([_cut(x, n - lrem, n, i)] if lrem else []) + [x] * (lr + rr + 1) + \
                ([_cut(x, 0, rrem, i)] if rrem else [])
            x = _join(parts, i)
        return x
    if mode in ("reflect", "symmetric"):
        rt = kwargs.get("reflect_type", "even")
        if rt not in ("even", "odd"):
            raise ValueError(f"pad: expected reflect_type 'even' or 'odd', got {rt!r}")
        return _pad_reflect(x, widths, mode, rt)
    if mode == "edge":
        for i, (b, a) in enumerate(widths):
            n = x.shape[i]
            if n == 0:
                _no_padding((b, a), mode)
                continue
            x = _join([_rep(_cut(x, 0, 1, i), b, i), x, _rep(_cut(x, n - 1, n, i), a, i)], i)
        return x
    if mode == "linear_ramp":
        ends = _pairs(kwargs.get("end_values", 0), nd, "end_values")
        for i, (b, a) in enumerate(widths):
            n = x.shape[i]
            if n == 0:
                _no_padding((b, a), mode)
                continue
            e0, e1 = (O.squeeze(_cut(x, 0, 1, i), [i]), O.squeeze(_cut(x, n - 1, n, i), [i]))
            ramps = []
            for end, edge, w in ((ends[i][0], e0, b), (ends[i][1], e1, a)):
                ramps.append(linspace(O.tensor(end, type=x.type) if not isinstance(
                    end, Tensor) else end, edge, w, endpoint=False, dtype=x.type, axis=i))
            x = _join([ramps[0], x, O.reverse(ramps[1], [i])], i)
        return x
    if mode in ("maximum", "minimum", "mean", "median"):
        sl = kwargs.get("stat_length")
        lengths = None if sl is None else [(operator.index(b), operator.index(a))
                                           for b, a in _pairs(sl, nd, "stat_length")]
        for i, (b, a) in enumerate(widths):
            n = x.shape[i]
            if n == 0:
                if b or a:
                    raise ValueError(f"pad: cannot apply '{mode}' padding to an empty axis")
                continue
            if lengths is None:
                sb = sa = _stat(x, i, mode)
            else:
                lb, la = lengths[i]
                if lb == 0 or la == 0:
                    raise ValueError("pad: stat_length of 0 yields no value for padding")
                lb, la = min(lb, n), min(la, n)
                sb, sa = _stat(_cut(x, 0, lb, i), i, mode), _stat(_cut(x, n - la, n, i), i,
                                                                   mode)
            x = _join([_rep(sb, b, i), x, _rep(sa, a, i)], i)
        return x
    # empty: zeros, as jnp (XLA has no uninitialised values)
    return _pad_constant(x, widths, 0)


def _pad_func(x, pad_width, func, kwargs):
    """``jnp.pad`` with a callable mode: zero padding, then ``func`` on every 1-D slice
    along each axis in turn (a Python loop over the slices, as ``apply_along_axis``)."""
    if x.rank == 0:
        return x
    widths = [(operator.index(b), operator.index(a)) for b, a in _pairs(pad_width, x.rank,
                                                                          "pad_width")]
    x = _pad_constant(x, widths, 0)
    for axis in range(x.rank):
        moved = moveaxis(x, axis, -1)
        n = moved.shape[-1]
        rows = O.reshape(moved, (moved.size // n if n else 0, n))
        outs = []
        for r in range(rows.shape[0]):
            row = O.squeeze(O.slice_along_axis(rows, r, 1), [0])
            out = _t(func(row, widths[axis], axis, kwargs), "mode's result")
            if out.shape != (n,):
                raise ValueError(f"pad: the mode function must return a vector of shape "
                                 f"{(n,)}, got {out.shape}")
            outs.append(O.as_type(out, x.type))
        if outs:
            x = moveaxis(O.reshape(O.stack(outs), moved.shape), -1, axis)
    return x


def _pad_constant(x, widths, constant_values):
    nd = x.rank
    cv = constant_values
    if isinstance(cv, Tensor) and not _static(cv):
        if cv.rank == 0:
            return O.pad(x, O.as_type(cv, x.type), [(b, a, 0) for b, a in widths])
        cv = O.broadcast(O.as_type(cv, x.type), (nd, 2)) if cv.rank else cv
        vals = [(O.squeeze(O.slice(cv, [i, 0], [1, 1]), [0, 1]),
                 O.squeeze(O.slice(cv, [i, 1], [1, 1]), [0, 1])) for i in range(nd)]
    else:
        arr = np.asarray(cv.to_numpy() if isinstance(cv, Tensor) else cv)
        if arr.ndim == 0 or arr.shape == (1,):
            v = O.as_type(O.tensor(arr.reshape(()).item()), x.type)
            return O.pad(x, v, [(b, a, 0) for b, a in widths])
        if arr.ndim == 1 and arr.shape[-1] != 2:
            raise ValueError(f"pad: constant_values has unsupported shape {arr.shape}. If "
                             "the shape is 1D or 2D, the last dimension must be of size 1 "
                             "or 2.")
        arr = np.broadcast_to(arr, (nd, 2))
        vals = [tuple(O.as_type(O.tensor(arr[i, j].item()), x.type) for j in (0, 1))
                for i in range(nd)]
    for i, (b, a) in enumerate(widths):
        cfg = [(0, 0, 0)] * nd
        if b:
            cfg[i] = (b, 0, 0)
            x = O.pad(x, vals[i][0], list(cfg))
        if a:
            cfg[i] = (0, a, 0)
            x = O.pad(x, vals[i][1], list(cfg))
    return x


def _pad_reflect(x, widths, mode, rt):
    for i, (b, a) in enumerate(widths):
        size = x.shape[i]
        if size == 0:
            _no_padding((b, a), mode)
            continue
        if b == 0 and a == 0:
            continue
        offset = 1 if (mode == "reflect" and size > 1) else 0
        for padding, before in ((b, True), (a, False)):
            edge = _cut(x, 0, 1, i) if before else _cut(x, x.shape[i] - 1, x.shape[i], i)
            while padding > 0:
                cur = min(padding, size - offset)
                padding -= cur
                n = x.shape[i]
                if before:
                    lo, hi = offset, offset + cur
                else:
                    lo = n - (cur + offset)
                    hi = n if (mode == "symmetric" or size == 1) else n - 1
                p = O.reverse(_cut(x, lo, hi, i), [i])
                if rt == "odd":
                    p = O.subtract(O.multiply(O.tensor(2, type=x.type), edge), p)
                    if size > 1:
                        edge = _cut(p, 0, 1, i) if before else \
                            _cut(p, p.shape[i] - 1, p.shape[i], i)
                x = O.concatenate([p, x] if before else [x, p], axis=i)
    return x


# broadcasting -----------------------------------------------------------------------------

def broadcast_shapes(*shapes):
    """``jnp.broadcast_shapes``: the shape that ``shapes`` broadcast to.

    >>> import nxpy.numpy as xnp
    >>> xnp.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    try:
        return tuple(np.broadcast_shapes(*[(s,) if isinstance(s, int) else tuple(s)
                                           for s in shapes]))
    except ValueError:
        raise ValueError(f"broadcast_shapes: incompatible shapes for broadcasting: "
                         f"{shapes}") from None


def broadcast_to(array, shape):
    """``jnp.broadcast_to``: ``array`` broadcast to ``shape`` (NumPy's rules: aligned at
    the end, size-1 axes stretch).

    >>> import nxpy.numpy as xnp
    >>> xnp.broadcast_to(xnp.asarray([1, 2]), (2, 2)).tolist()
    [[1, 2], [1, 2]]
    """
    x = _t(array, "array")
    shape = shape_of(shape, "broadcast_to")
    if len(shape) < x.rank or any(d != 1 and d != s for d, s in
                                  zip(x.shape[::-1], shape[::-1])):
        raise ValueError(f"broadcast_to: cannot broadcast a tensor of shape {x.shape} to "
                         f"{shape}")
    if x.shape == shape:
        return x
    return O.broadcast(x, shape)


def broadcast_arrays(*args):
    """``jnp.broadcast_arrays``: ``args`` broadcast to their common shape.

    >>> import nxpy.numpy as xnp
    >>> [a.shape for a in xnp.broadcast_arrays(xnp.zeros((2, 1)), xnp.zeros(3))]
    [(2, 3), (2, 3)]
    """
    xs = [_t(a, "args") for a in args]
    s = broadcast_shapes(*[x.shape for x in xs])
    return [broadcast_to(x, s) for x in xs]


def _atleast(arys, n, fn):
    out = []
    for a in arys:
        x = _t(a, "arys")
        if x.rank < n:
            if n == 3 and x.rank == 2:
                x = O.reshape(x, x.shape + (1,))
            elif n == 3 and x.rank == 1:
                x = O.reshape(x, (1,) + x.shape + (1,))
            else:
                x = O.reshape(x, (1,) * (n - x.rank) + x.shape)
        out.append(x)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys):
    """``jnp.atleast_1d``: scalars as vectors; one array, or a list of them.

    >>> import nxpy.numpy as xnp
    >>> xnp.atleast_1d(1).shape
    (1,)
    """
    return _atleast(arys, 1, "atleast_1d")


def atleast_2d(*arys):
    """``jnp.atleast_2d``: leading size-1 axes up to rank 2.

    >>> import nxpy.numpy as xnp
    >>> xnp.atleast_2d(xnp.zeros(3)).shape
    (1, 3)
    """
    return _atleast(arys, 2, "atleast_2d")


def atleast_3d(*arys):
    """``jnp.atleast_3d``: rank 3, a vector as ``(1, n, 1)``, a matrix as ``(m, n, 1)``.

    >>> import nxpy.numpy as xnp
    >>> xnp.atleast_3d(xnp.zeros(3)).shape, xnp.atleast_3d(xnp.zeros((2, 3))).shape
    ((1, 3, 1), (2, 3, 1))
    """
    return _atleast(arys, 3, "atleast_3d")


# choosing ---------------------------------------------------------------------------------

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
    if not condlist:
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
    k = operator.index(offset)
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


# properties and conversions ---------------------------------------------------------------

def shape(a):
    """``jnp.shape``: ``a``'s shape, a tuple.

    >>> import nxpy.numpy as xnp
    >>> xnp.shape([[1, 2]])
    (1, 2)
    """
    return tuple(a.shape) if hasattr(a, "shape") else np.shape(a)


def ndim(a):
    """``jnp.ndim``: ``a``'s rank.

    >>> import nxpy.numpy as xnp
    >>> xnp.ndim(xnp.zeros((2, 3)))
    2
    """
    return len(shape(a))


def size(a, axis=None):
    """``jnp.size``: the number of elements of ``a`` (along ``axis``, an int or tuple).

    >>> import nxpy.numpy as xnp
    >>> xnp.size(xnp.zeros((2, 3))), xnp.size(xnp.zeros((2, 3)), axis=1)
    (6, 3)
    """
    s = shape(a)
    axes = axes_of(axis, len(s), "size")
    return int(np.prod([s[i] for i in axes], dtype=np.int64))


def iscomplexobj(x):
    """``jnp.iscomplexobj``: whether ``x``'s type is complex.

    >>> import nxpy.numpy as xnp
    >>> xnp.iscomplexobj(xnp.zeros(2, dtype="complex64")), xnp.iscomplexobj(1.0)
    (True, False)
    """
    if isinstance(x, Tensor):
        return x.type.kind == "c"
    return np.iscomplexobj(x)


def isscalar(element):
    """``jnp.isscalar``: whether ``element`` is a number or a rank-0 array.

    >>> import nxpy.numpy as xnp
    >>> xnp.isscalar(1.0), xnp.isscalar(xnp.asarray(1)), xnp.isscalar([1])
    (True, True, False)
    """
    if isinstance(element, Tensor):
        return element.rank == 0
    if isinstance(element, (int, float, complex, bool, np.generic)):
        return True
    return isinstance(element, np.ndarray) and element.ndim == 0


def astype(x, dtype, /, *, copy=False):
    """``jnp.astype``: ``x`` converted to ``dtype`` (XLA's conversion rules).

    >>> import nxpy.numpy as xnp
    >>> xnp.astype(xnp.asarray([1.7, -1.7]), "int32").tolist()
    [1, -1]
    """
    t = dtype_of(dtype, "astype")
    v = _t(x, "x")
    if t is None:
        return v
    return v if v.type == t else O.as_type(v, t)


def copy(a, order=None):
    """``jnp.copy``: ``a`` (tensors are immutable).

    >>> import nxpy.numpy as xnp
    >>> xnp.copy([1, 2]).tolist()
    [1, 2]
    """
    return _t(a)


def resize(a, new_shape):
    """``jnp.resize``: ``a`` flattened, repeated as needed to fill ``new_shape``.

    >>> import nxpy.numpy as xnp
    >>> xnp.resize(xnp.asarray([1, 2, 3]), (2, 2)).tolist()
    [[1, 2], [3, 1]]
    """
    x = _t(a)
    s = shape_of(new_shape, "resize", "new_shape")
    total = int(np.prod(s, dtype=np.int64))
    flat = O.reshape(x, (x.size,))
    if total == 0:
        return O.full(s, 0, type=x.type)
    if x.size == 0:
        raise ValueError("resize: cannot resize an empty array to a non-empty shape")
    reps = -(-total // x.size)
    flat = O.tile(flat, [reps]) if reps > 1 else flat
    return O.reshape(_cut(flat, 0, total, 0), s)


# data-dependent sizes made static, and index helpers ---------------------------------------

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
    size = operator.index(size)
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
    if size is not None and not 0 < operator.index(size) <= n:
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
    n, ndim = operator.index(n), operator.index(ndim)
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


def rollaxis(a, axis, start=0):
    """``jnp.rollaxis``: ``axis`` moved to before ``start`` (NumPy's older
    :func:`moveaxis`).

    >>> import nxpy.numpy as xnp
    >>> xnp.rollaxis(xnp.zeros((1, 2, 3)), 2).shape
    (3, 1, 2)
    """
    x = _t(a)
    axis = _axis(axis, x.rank, "rollaxis")
    start = operator.index(start)
    if not -x.rank <= start <= x.rank:
        raise ValueError(f"rollaxis: start={start} must satisfy {-x.rank} <= start <= "
                         f"{x.rank}")
    if start < 0:
        start += x.rank
    if start > axis:
        start -= 1
    return moveaxis(x, axis, start)


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
    n = operator.index(n)
    return nonzero(mask_func(O.full((n, n), 1, type="s32"), k), size=size)


def isrealobj(x):
    """``jnp.isrealobj``: whether ``x``'s type is not complex.

    >>> import nxpy.numpy as xnp
    >>> xnp.isrealobj(xnp.zeros(2)), xnp.isrealobj(1j)
    (True, False)
    """
    return not iscomplexobj(x)
