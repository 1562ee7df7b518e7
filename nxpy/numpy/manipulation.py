"""Shape functions of ``jax.numpy`` (issue 28, part 1): ``reshape``, ``transpose``,
``moveaxis``, ``flip``, ``roll``, ``repeat``, ``tile``, the ``split`` and ``stack``
families, ``insert``/``delete``, broadcasting, ``block``, ``resize`` (``pad`` is in
:mod:`.padding`, ``where``/``take``/``nonzero`` and the index helpers in :mod:`.indexing`).
Shapes, axes, split points and pad widths are static (as under ``jax.jit``); values may
be traced tensors."""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .. import shape as S
from .. import types as T
from ..tensor import Tensor
from ._common import axes_of, dtype_of
from .creation import shape_of

__all__ = ["reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "swapaxes",
           "moveaxis", "expand_dims", "squeeze", "flip", "fliplr", "flipud", "roll", "rot90",
           "repeat", "tile", "broadcast_to", "broadcast_arrays", "broadcast_shapes", "atleast_1d",
           "atleast_2d", "atleast_3d", "shape", "ndim", "size", "iscomplexobj", "isscalar",
           "astype", "copy", "resize", "rollaxis", "isrealobj"]

#: departures from ``jax.numpy`` (collected by :mod:`nxpy.numpy.coverage`)
NOTES = {
    "repeat": "per-element `repeats` must be static unless `total_repeat_length` is given",
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


def _axes_ordered(axis, rank: int, fn: str, arg: str = "axis") -> list[int]:
    """Like ``axes_of`` but keeping the given order (for ``moveaxis``)."""
    seq = list(axis) if isinstance(axis, (list, tuple, np.ndarray)) else [axis]
    out = [_axis(a, rank, fn, arg) for a in seq]
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
    shape = (S.integer(shape, "reshape: shape"),) if S.as_int(shape) is not None or \
        not hasattr(shape, "__iter__") else S.integers(shape, "reshape: shape")
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
    src = _axes_ordered(source, x.rank, "moveaxis", "source")
    dst = _axes_ordered(destination, x.rank, "moveaxis", "destination")
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
    n = len(axis) if isinstance(axis, (list, tuple, np.ndarray)) else 1
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
        shifts = list(S.integers(np.ravel(shift), "roll: shift"))
    else:
        shifts = [shift if isinstance(shift, Tensor) else S.integer(shift, "roll: shift")]
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
    k = S.integer(k, "rot90: k") % 4
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


def _join(parts, axis):
    parts = [p for p in parts if p.shape[axis]]
    return parts[0] if len(parts) == 1 else O.concatenate(parts, axis=axis)


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
    reps = (S.integer(reps, "tile: reps"),) if S.as_int(reps) is not None or \
        not hasattr(reps, "__iter__") else S.integers(reps, "tile: reps")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: expected non-negative reps, got {reps}")
    rank = max(x.rank, len(reps))
    x = O.reshape(x, (1,) * (rank - x.rank) + x.shape)
    reps = (1,) * (rank - len(reps)) + reps
    if 0 in reps or x.size == 0:
        return O.full(tuple(d * r for d, r in zip(x.shape, reps)), 0, type=x.type)
    return O.tile(x, list(reps)) if rank else x


# splitting and joining ---------------------------------------------------------------------


# padding ----------------------------------------------------------------------------------


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


def rollaxis(a, axis, start=0):
    """``jnp.rollaxis``: ``axis`` moved to before ``start`` (NumPy's older
    :func:`moveaxis`).

    >>> import nxpy.numpy as xnp
    >>> xnp.rollaxis(xnp.zeros((1, 2, 3)), 2).shape
    (3, 1, 2)
    """
    x = _t(a)
    axis = _axis(axis, x.rank, "rollaxis")
    start = S.integer(start, "rollaxis: start")
    if not -x.rank <= start <= x.rank:
        raise ValueError(f"rollaxis: start={start} must satisfy {-x.rank} <= start <= "
                         f"{x.rank}")
    if start < 0:
        start += x.rank
    if start > axis:
        start -= 1
    return moveaxis(x, axis, start)


def isrealobj(x):
    """``jnp.isrealobj``: whether ``x``'s type is not complex.

    >>> import nxpy.numpy as xnp
    >>> xnp.isrealobj(xnp.zeros(2)), xnp.isrealobj(1j)
    (True, False)
    """
    return not iscomplexobj(x)
