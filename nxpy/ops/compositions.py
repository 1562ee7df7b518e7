"""Nx's functions that are compositions of other ops (Nx defines them so too, or through
gather/indexed_put/sort, which this module replaces by exact slicing and padding), the
two bit-counting primitives ``population_count`` and ``count_leading_zeros``, and
``einsum``.

Every function here has Nx's semantics -- shape, type, names, options and errors, as in
``nx/lib/nx.ex`` -- and differentiates through its parts (the two primitives are not
differentiable). ``docs/ops_compositions.md`` lists where an implementation differs from
Nx's internals and the few deliberate departures.

=====================  ==================================================================
creation               tri, tril, triu, linspace, make_diagonal
shape                  flatten, tile, rename, split, to_batched, reflect, take_diagonal,
                       put_diagonal, fill
arithmetic             outer, diff, log2, log10, log (with a base)
aggregation            all_close, logsumexp, variance, standard_deviation, weighted_mean,
                       covariance
bits (primitives)      population_count, count_leading_zeros
contraction            einsum (NumPy's subscript grammar, as ``jnp.einsum``)
=====================  ==================================================================

>>> import nxpy as nx
>>> nx.tril(nx.iota((3, 3))).tolist()
[[0, 0, 0], [3, 4, 0], [6, 7, 8]]
>>> nx.take_diagonal(nx.iota((3, 3)), offset=1).tolist()
[1, 5]
>>> nx.einsum("ij,jk->ik", nx.iota((2, 3)), nx.iota((3, 2))).tolist()
[[10, 13], [28, 40]]
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import (_axes_of, _binary_operands, _Number, _out, as_type, check_kind, dispatch,
                   non_differentiable, primitive, renamed, tensor, to_tensor)
from .contraction import dot
from .creation import full, iota
from .elementwise import (U8, abs, add, divide, equal, exp, greater_equal, is_infinity, is_nan,
                          less_equal, logical_and, logical_or, multiply, pow, select, sqrt,
                          subtract)
from .elementwise import log as _ln
from .indexing import slice as _slice
from .reductions import all, mean, reduce_max, sum
from .shaping import broadcast, concatenate, new_axis, pad, reshape, reverse, squeeze, transpose

from .complex import conjugate as _conjugate

__all__ = ["tri", "tril", "triu", "linspace", "make_diagonal", "take_diagonal", "put_diagonal",
           "flatten", "tile", "rename", "split", "to_batched", "reflect", "fill", "outer", "diff",
           "log2", "log10", "log", "all_close", "logsumexp", "variance", "standard_deviation",
           "weighted_mean", "covariance", "population_count", "count_leading_zeros", "einsum"]

primitive("compositions", "population_count", "count_leading_zeros", props=("elementwise",))


def _is_int(v) -> bool:
    return S.as_int(v) is not None


def _slice_axis(x: Tensor, start: int, length: int, axis: int, stride: int = 1) -> Tensor:
    """``x`` sliced along one axis (Nx's ``slice_along_axis``)."""
    if start == 0 and stride == 1 and length == x.shape[axis]:
        return x
    starts = [0] * x.rank
    starts[axis] = start
    lengths = list(x.shape)
    lengths[axis] = length
    strides = [1] * x.rank
    strides[axis] = stride
    return _slice(x, starts, lengths, strides)


# ----------------------------------------------------------------------------------------
# Creation: tri, tril, triu, linspace, make_diagonal
# ----------------------------------------------------------------------------------------
def tri(n: int, m: int, k: int = 0) -> Tensor:
    """A pred matrix ``n x m``, true at and below the ``k``-th diagonal (Nx's ``u8`` 1/0).

    >>> import nxpy as nx
    >>> nx.as_type(nx.tri(3, 3, k=1), "u8").tolist()
    [[1, 1, 0], [1, 1, 1], [1, 1, 1]]
    """
    return greater_equal(iota((n, 1)), subtract(iota((1, m)), k))


def _tri_mask(x: Tensor, k: int, op: str) -> Tensor:
    if x.rank < 2:
        raise ValueError(f"{op} expects a tensor with at least 2 dimensions, got shape "
                         f"{x.shape}")
    mask = tri(x.shape[-2], x.shape[-1], k=k)
    return broadcast(reshape(mask, (1,) * (x.rank - 2) + mask.shape), x)


def _zero_like(x: Tensor):
    return False if x.type.is_pred else 0


def tril(x, k: int = 0) -> Tensor:
    """The lower triangle of (batched) matrices: zeros above the ``k``-th diagonal.

    >>> import nxpy as nx
    >>> nx.tril(nx.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]), k=1).tolist()
    [[1, 2, 0], [4, 5, 6], [7, 8, 9]]
    """
    x = to_tensor(x, "x")
    return select(_tri_mask(x, k, "tril"), x, _zero_like(x))


def triu(x, k: int = 0) -> Tensor:
    """The upper triangle of (batched) matrices: zeros below the ``k``-th diagonal.

    >>> import nxpy as nx
    >>> nx.triu(nx.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]])).tolist()
    [[1, 2, 3], [0, 5, 6], [0, 0, 9]]
    """
    x = to_tensor(x, "x")
    return select(_tri_mask(x, k - 1, "triu"), _zero_like(x), x)


def linspace(start, stop, n=None, *, name=None, type="f32", endpoint=True) -> Tensor:
    """``n`` evenly spaced samples from ``start`` to ``stop`` (tensors of one shape give a
    trailing axis of samples, named ``name``); computed in floats, then cast to ``type``.

    >>> import nxpy as nx
    >>> nx.linspace(5, 8, n=5).tolist()
    [5.0, 5.75, 6.5, 7.25, 8.0]
    >>> nx.linspace(0, 24, n=8, type="u8").tolist()
    [0, 3, 6, 10, 13, 17, 20, 24]
    """
    t = T.parse(type)
    start, stop = as_type(start, t), as_type(stop, t)
    if not _is_int(n) or n <= 0:
        raise ValueError(f"linspace: expected n to be a positive integer, got: {n!r}")
    if n == 1:
        return new_axis(start, -1, name)
    if start.shape != stop.shape:
        raise ValueError(f"linspace: expected start and stop to have the same shape, got "
                         f"shapes {start.shape} and {stop.shape}")
    ramp = iota(start.shape + (n,), axis=-1, type=t)
    start, stop = new_axis(start, -1, name), new_axis(stop, -1, name)
    step = divide(subtract(stop, start), n - 1 if endpoint else n)
    return as_type(add(multiply(ramp, step), start), t)


def _diag_start(m: int, offset: int) -> int:
    """Where the diagonal ``offset`` of an ``n x m`` matrix starts in its flat layout."""
    return offset if offset >= 0 else -offset * m


def _check_offset(shape, offset, what="offset"):
    n, m = shape
    if not _is_int(offset):
        raise TypeError(f"expected {what} to be an integer, got {offset!r}")
    if offset >= 0 and offset >= m:
        raise ValueError(f"offset must be less than length of axis 1 when positive, got: "
                         f"{offset}")
    if offset < 0 and -offset >= n:
        raise ValueError(f"absolute value of offset must be less than length of axis 0 when "
                         f"negative, got: {offset}")


def _diag_len(n: int, m: int, offset: int) -> int:
    return builtins.min(n - builtins.max(-offset, 0), m - builtins.max(offset, 0))


def make_diagonal(x, offset: int = 0) -> Tensor:
    """A square matrix with the vector ``x`` on its ``offset``-th diagonal (of size
    ``len(x) + |offset|``), zeros elsewhere; the type is ``x``'s merged with s32 (Nx puts
    ``x`` into a zero s32 tensor).

    >>> import nxpy as nx
    >>> nx.make_diagonal(nx.tensor([1, 2, 3]), offset=-1).tolist()
    [[0, 0, 0, 0], [1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0]]
    """
    x = to_tensor(x, "x")
    if x.rank != 1:
        raise ValueError(f"make_diagonal expects a tensor of rank 1, got a tensor of rank "
                         f"{x.rank}")
    if not _is_int(offset):
        raise TypeError(f"make_diagonal: expected offset to be an integer, got {offset!r}")
    t = T.merge(T.S32, x.type)
    n = x.shape[0]
    d = n + builtins.abs(offset)
    if n == 0:
        return full((d, d), 0, type=t)
    lo = _diag_start(d, offset)
    hi = d * d - (lo + (n - 1) * (d + 1) + 1)
    # x's elements d + 1 apart in the flat d * d layout: one pad, then a reshape
    flat = pad(as_type(x, t), 0, [(lo, hi, d)])
    return reshape(flat, (d, d))


def take_diagonal(x, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonal of (batched) matrices: shape ``batch + (len,)``.

    >>> import nxpy as nx
    >>> nx.take_diagonal(nx.iota((3, 2, 2)), offset=-1).tolist()
    [[2], [6], [10]]
    """
    x = to_tensor(x, "x")
    if x.rank < 2:
        raise ValueError(f"take_diagonal expects a tensor of rank 2 or higher, got a tensor "
                         f"of rank {x.rank}")
    n, m = x.shape[-2:]
    _check_offset((n, m), offset)
    batch = x.shape[:-2]
    length = _diag_len(n, m, offset)
    # the diagonal is every (m + 1)-th element of the flat matrix, from its start
    flat = reshape(x, batch + (n * m,))
    start = _diag_start(m, offset)
    diag = _slice_axis(flat, start, (length - 1) * (m + 1) + 1, x.rank - 2, m + 1)
    return renamed(diag, None)


def put_diagonal(x, diagonal, offset: int = 0) -> Tensor:
    """``x`` (a matrix) with its ``offset``-th diagonal replaced by the vector ``diagonal``.

    >>> import nxpy as nx
    >>> nx.put_diagonal(nx.full((3, 3), 0), nx.tensor([1, 2]), offset=1).tolist()
    [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    """
    x = to_tensor(x, "x")
    diagonal = to_tensor(diagonal, "diagonal")
    if x.rank != 2:
        raise ValueError(f"put_diagonal expects a tensor of rank 2, got a tensor of rank "
                         f"{x.rank}")
    if diagonal.rank != 1:
        raise ValueError(f"put_diagonal expects a diagonal of rank 1, got a tensor of rank "
                         f"{diagonal.rank}")
    n, m = x.shape
    _check_offset((n, m), offset)
    length = _diag_len(n, m, offset)
    if diagonal.shape[0] != length:
        raise ValueError(f"put_diagonal: expected a diagonal tensor of length {length}, got "
                         f"a diagonal tensor of length {diagonal.shape[0]}")
    t = T.merge(x.type, diagonal.type)
    lo = _diag_start(m, offset)
    cfg = [(lo, n * m - (lo + (length - 1) * (m + 1) + 1), m)]
    mask = reshape(pad(full((length,), True), False, cfg), (n, m))
    values = reshape(pad(as_type(diagonal, t), 0, cfg), (n, m))
    return renamed(select(mask, values, as_type(x, t)), x.names)


# ----------------------------------------------------------------------------------------
# Shape: flatten, tile, rename, split, reflect, fill
# ----------------------------------------------------------------------------------------
def rename(x, names) -> Tensor:
    """``x`` with new names (None: no names), one per dim.

    >>> import nxpy as nx
    >>> nx.rename(nx.iota((2, 3)), ["foo", "bar"]).names
    ('foo', 'bar')
    """
    x = to_tensor(x, "x")
    if names is not None:
        names = S.check_names(names, x.shape, "rename: names")
    return renamed(x, names)


def flatten(x, axes=None) -> Tensor:
    """``x`` as a vector, or with the consecutive ``axes`` merged into one (unnamed) axis.

    >>> import nxpy as nx
    >>> nx.flatten(nx.iota((1, 2, 3)), axes=[1, 2]).shape
    (1, 6)
    """
    x = to_tensor(x, "x")
    if axes is None:
        return reshape(x, (x.size,))
    axes = list(_axes_of("flatten", S.normalize_axes, axes, x.rank, x.names))
    if not axes:
        return x
    if builtins.any(b != a + 1 for a, b in zip(axes, axes[1:])):
        raise ValueError(f"flatten: axes must be consecutive, got {axes}")
    first = axes[0]
    keep = [i for i in range(x.rank) if i not in axes]
    shape = [x.shape[i] for i in keep]
    names = [x.names[i] for i in keep]
    shape.insert(first, S.size([x.shape[i] for i in axes]))
    names.insert(first, None)
    return reshape(x, shape, names=names)


def tile(x, repetitions) -> Tensor:
    """``x`` repeated ``repetitions[i]`` times along each axis (aligned to the right; more
    repetitions than axes add leading axes).

    >>> import nxpy as nx
    >>> nx.tile(nx.tensor([[1, 2], [3, 4]]), [2, 1]).tolist()
    [[1, 2], [3, 4], [1, 2], [3, 4]]
    """
    x = to_tensor(x, "x")
    if not isinstance(repetitions, (list, tuple)) or not builtins.all(
            _is_int(r) and r >= 1 for r in repetitions):
        raise ValueError(f"tile: repetitions must be a list of positive integers, got: "
                         f"{repetitions!r}")
    reps = [int(r) for r in repetitions]
    shape = [1] * builtins.max(len(reps) - x.rank, 0) + list(x.shape)
    reps = [1] * builtins.max(x.rank - len(reps), 0) + reps
    if not shape:
        return x
    pairs = [v for r, d in zip(reps, shape) for v in (r, d)]
    spread = reshape(x, [v for d in shape for v in (1, d)])
    return reshape(broadcast(spread, pairs), [r * d for r, d in zip(reps, shape)])


def split(x, split, axis=0):
    """``(left, right)``: ``x`` cut along ``axis`` at ``split`` (an int, negative from the
    end, or a float fraction rounded up); neither part may be empty.

    >>> import nxpy as nx
    >>> [p.tolist() for p in nx.split(nx.tensor([1, 2, 3, 4]), -1)]
    [[1, 2, 3], [4]]
    """
    x = to_tensor(x, "x")
    axis = _axes_of("split", S.normalize_axis, axis, x.rank, x.names)
    size = x.shape[axis]
    if _is_int(split):
        if 0 < split < size:
            at = int(split)
        elif -size < split < 0:
            at = size + int(split)
        else:
            raise ValueError(f"split: split must be an integer greater than zero and less "
                             f"than the length of the given axis ({size}), got: {split}")
    elif isinstance(split, (float, np.floating)):
        at = math.ceil(split * size)
        if not 0 < at < size:
            raise ValueError(f"split: split must be a float such that 0 < split and "
                             f"ceil(split * axis_size) < axis_size ({size}), got: {split}")
    else:
        raise TypeError(f"split: invalid split, expected a float or an integer, got: "
                        f"{split!r}")
    return _slice_axis(x, 0, at, axis), _slice_axis(x, at, size - at, axis)


def _repeat_to(part: Tensor, length: int, axis: int) -> Tensor:
    """The first ``length`` entries along ``axis`` of ``part`` repeated periodically."""
    reps = -(-length // part.shape[axis])
    whole = part if reps == 1 else concatenate([part] * reps, axis=axis)
    return _slice_axis(whole, 0, length, axis)


def to_batched(x, batch_size, leftover="repeat"):
    """The batches of ``batch_size`` entries of ``x`` along its first axis, one at a time
    (an iterator, as Nx's ``to_batched`` returns a stream). When the axis size is not a
    multiple of ``batch_size``, ``leftover="repeat"`` (the default) completes the last
    batch with entries from the start, and ``leftover="discard"`` drops it. Names are
    kept. Arguments are checked at the call, before any batch is made.

    >>> import nxpy as nx
    >>> [b.tolist() for b in nx.to_batched(nx.iota((5,)), 2)]
    [[0, 1], [2, 3], [4, 0]]
    >>> rows = nx.iota((5, 1), names=["rows", None])
    >>> [b.tolist() for b in nx.to_batched(rows, 2, leftover="discard")]
    [[[0], [1]], [[2], [3]]]
    """
    x = to_tensor(x, "x")
    if x.rank == 0:
        raise ValueError("to_batched: cannot batch a scalar tensor: expected x to have rank "
                         ">= 1, got a tensor of shape ()")
    if not _is_int(batch_size) or batch_size < 1:
        raise ValueError(f"to_batched: expected batch_size to be a positive integer, got "
                         f"{batch_size!r}")
    if leftover not in ("repeat", "discard"):
        raise ValueError(f"to_batched: expected leftover to be 'repeat' or 'discard', got "
                         f"{leftover!r}")
    size, batch_size = x.shape[0], int(batch_size)
    if batch_size > size:
        raise ValueError(f"to_batched: cannot batch beyond the tensor: batch_size "
                         f"{batch_size} is larger than the first axis ({size})")
    return _batches(x, size, batch_size, leftover)


def _batches(x, size, batch_size, leftover):
    rest = list(x.shape[1:])
    for start in range(0, size - batch_size + 1, batch_size):
        yield _slice(x, [start] + [0] * len(rest), [batch_size] + rest)
    tail = size % batch_size
    if tail and leftover == "repeat":
        start = size - tail
        yield concatenate([_slice(x, [start] + [0] * len(rest), [tail] + rest),
                           _slice(x, [0] * x.rank, [batch_size - tail] + rest)])


def reflect(x, padding_config) -> Tensor:
    """``x`` padded by periodic reflections: ``padding_config`` is one ``(before, after)``
    pair of non-negative lengths per axis.

    >>> import nxpy as nx
    >>> nx.reflect(nx.tensor([0, 1, 2]), [(3, 1)]).tolist()
    [1, 2, 1, 0, 1, 2, 1]
    """
    x = to_tensor(x, "x")
    if x.rank == 0:
        raise ValueError("reflect: expected a tensor of rank greater than 0")
    if padding_config is None or len(padding_config) != x.rank:
        raise ValueError(f"reflect: expected one (before, after) padding_config entry per "
                         f"axis of shape {x.shape}, got {padding_config!r}")
    for axis, p in enumerate(padding_config):
        if not (isinstance(p, (list, tuple)) and len(p) == 2 and builtins.all(
                _is_int(v) and v >= 0 for v in p)):
            raise ValueError(f"reflect: expected padding config for axis {axis} to be "
                             f"(before, after) with non-negative integers, got: {p!r}")
        before, after = p
        n = x.shape[axis]
        if n == 0 and (before or after):
            raise ValueError(f"reflect: cannot reflect an empty axis {axis}")
        inner = _slice_axis(x, 1, n - 1, axis) if n > 1 else None
        rev = reverse(_slice_axis(x, 0, n - 1, axis), [axis]) if n > 1 else None
        parts = []
        if before:
            period = x if n == 1 else concatenate([inner, rev], axis=axis)
            parts.append(reverse(_repeat_to(period, before, axis), [axis]))
        parts.append(x)
        if after:
            period = x if n == 1 else concatenate([rev, inner], axis=axis)
            parts.append(_repeat_to(period, after, axis))
        x = concatenate(parts, axis=axis) if len(parts) > 1 else x
    return x


def fill(x, value, type=None) -> Tensor:
    """A tensor of ``x``'s shape and names filled with ``value`` (in ``type``, by default
    ``x``'s type merged with the value's).

    >>> import nxpy as nx
    >>> nx.fill(nx.iota((2, 2)), 5.0).tolist()
    [[5.0, 5.0], [5.0, 5.0]]
    """
    x = to_tensor(x, "x")
    if type is None:
        _, v = _binary_operands(x, value, "fill", ("x", "value"))
        t = T.merge(x.type, v.type)
    else:
        t = T.parse(type)
    v = as_type(value, t)
    if v.shape != ():
        raise ValueError(f"fill: expected value to be a scalar, got shape {v.shape}")
    return broadcast(v, x.shape, names=x.names)


# ----------------------------------------------------------------------------------------
# Arithmetic: outer, diff, logarithms in other bases
# ----------------------------------------------------------------------------------------
def outer(a, b) -> Tensor:
    """The outer product of the flattened ``a`` and ``b`` (always a matrix; complex ``b``
    is conjugated, as in Nx).

    >>> import nxpy as nx
    >>> nx.outer(nx.tensor([1, 2, 3], names=["x"]), nx.tensor([10, 20], names=["y"])).names
    ('x', 'y')
    """
    a, b = to_tensor(a, "a"), to_tensor(b, "b")  # numbers are strong here, as in Nx
    names = (a.names[0] if a.rank else None, b.names[-1] if b.rank else None)
    if T.merge(a.type, b.type).is_complex:
        b = _conjugate(b)
    return renamed(multiply(reshape(a, (a.size, 1)), reshape(b, (1, b.size))), names)


def diff(x, order: int = 1, axis: int = -1) -> Tensor:
    """The ``order``-th discrete difference along ``axis`` (``x[i + 1] - x[i]``, repeated).

    >>> import nxpy as nx
    >>> nx.diff(nx.tensor([1, 2, 4, 7, 0]), order=2).tolist()
    [1, 1, -10]
    """
    x = to_tensor(x, "x")
    axis = _axes_of("diff", S.normalize_axis, axis, x.rank, x.names)
    if x.rank == 0:
        raise ValueError("diff: cannot compute diff of a scalar")
    if not _is_int(order) or order < 0:
        raise ValueError(f"diff: order must be a non-negative integer, got: {order!r}")
    n = x.shape[axis]
    if order > n:
        raise ValueError(f"diff: order {order} is larger than the size {n} of axis {axis}")
    for i in range(order):
        m = n - i - 1
        x = subtract(_slice_axis(x, 1, m, axis), _slice_axis(x, 0, m, axis))
    return x


def log2(x) -> Tensor:
    """Base-2 logarithm: ``log(x) / log(2)``.

    >>> import nxpy as nx
    >>> nx.log2(nx.tensor([1, 2, 4, 8])).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    return divide(_ln(x), _ln(2))


def log10(x) -> Tensor:
    """Base-10 logarithm: ``log(x) / log(10)``."""
    return divide(_ln(x), _ln(10))


def log(x, base=None) -> Tensor:
    """Natural logarithm, or with ``base``: ``log(x) / log(base)`` (as Nx's ``log/2``).

    >>> import nxpy as nx
    >>> nx.log(nx.tensor([3, 9, 27, 81]), 3).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    if base is None:
        return _ln(x)
    if isinstance(base, _Number) and not isinstance(base, complex) and (base <= 0 or base == 1):
        raise ValueError(f"log: expected base to be greater than 0 and different than 1, "
                         f"got: {base!r}")
    return divide(_ln(x), _ln(base))


# ----------------------------------------------------------------------------------------
# Aggregates: all_close, logsumexp, variance, standard_deviation, weighted_mean, covariance
# ----------------------------------------------------------------------------------------
def all_close(a, b, rtol=1e-5, atol=1e-8, equal_nan=False) -> Tensor:
    """True (a pred scalar; Nx's u8 1) when ``|a - b| <= atol + rtol * |b|`` everywhere;
    infinities are close only to themselves; NaNs only to NaNs with ``equal_nan``.

    >>> import nxpy as nx
    >>> bool(nx.all_close(nx.tensor([1.0e10, 1.0e-7]), nx.tensor([1.00001e10, 1.0e-8])))
    False
    """
    a, b = _binary_operands(a, b, "all_close", ("a", "b"))
    ints = not a.type.is_inexact and not b.type.is_inexact
    abs_b = abs(as_type(b, T.F64)) if ints else abs(b)
    close = less_equal(abs(subtract(a, b)), add(atol, multiply(rtol, abs_b)))
    if ints:
        return all(close)
    inf = logical_or(is_infinity(a), is_infinity(b))
    close = select(inf, equal(a, b), close)
    if equal_nan:
        close = select(logical_and(is_nan(a), is_nan(b)), True, close)
    return all(close)


def logsumexp(x, axes=None, exp_scaling_factor=None, keep_axes=False) -> Tensor:
    """``log(sum(exp(x)))`` over ``axes`` computed stably (shifted by the maximum); the
    exponentials may be scaled by ``exp_scaling_factor`` first.

    >>> import nxpy as nx
    >>> round(nx.logsumexp(nx.tensor([1, 2, 3, 4, 5, 6])).item(), 5)
    6.45619
    """
    x = to_tensor(x, "x")
    m = reduce_max(x, axes, keep_axes=True)
    m = select(is_infinity(m), tensor(0, type=x.type), m)
    e = exp(subtract(x, m))
    if exp_scaling_factor is not None:
        e = multiply(exp_scaling_factor, e)
    if not keep_axes:
        m = squeeze(m, axes)
    return add(_ln(sum(e, axes, keep_axes)), m)


def _count(x: Tensor, axes, op: str) -> int:
    ax = _axes_of(op, S.normalize_axes, axes, x.rank, x.names)
    return S.size([x.shape[a] for a in ax])


def variance(x, axes=None, ddof: int = 0, keep_axes=False) -> Tensor:
    """The mean squared deviation from the mean over ``axes``, divided by ``n - ddof``.

    >>> import nxpy as nx
    >>> nx.variance(nx.tensor([[1, 2], [3, 4]]), axes=[0], ddof=1).tolist()
    [2.0, 2.0]
    """
    x = to_tensor(x, "x")
    total = _count(x, axes, "variance")
    dev = subtract(x, mean(x, axes, keep_axes=True))
    return divide(sum(pow(dev, 2), axes, keep_axes), total - ddof)


def standard_deviation(x, axes=None, ddof: int = 0, keep_axes=False) -> Tensor:
    """The square root of :func:`variance`.

    >>> import nxpy as nx
    >>> nx.standard_deviation(nx.tensor([[1, 2], [10, 20]]), axes=[1]).tolist()
    [0.5, 5.0]
    """
    return sqrt(variance(x, axes, ddof, keep_axes))


def weighted_mean(x, weights, axes=None, keep_axes=False) -> Tensor:
    """``sum(x * weights) / sum(weights)`` over ``axes``; ``weights`` of another shape
    than ``x`` must have one dim per aggregation axis (Nx's rule).

    >>> import nxpy as nx
    >>> nx.weighted_mean(nx.iota((3, 4)), nx.tensor([1, 2, 3, 4]), axes=[1]).tolist()
    [2.0, 6.0, 10.0]
    """
    x, weights = to_tensor(x, "x"), to_tensor(weights, "weights")
    ax = None if axes is None else list(_axes_of("weighted_mean", S.normalize_axes, axes,
                                                 x.rank, x.names))
    if x.shape != weights.shape:
        if ax is None:
            raise ValueError("weighted_mean: axes must be specified when shapes of input "
                             "and weights differ")
        if weights.rank != len(ax):
            raise ValueError("weighted_mean: weights tensor must have rank equal to the "
                             "number of aggregation axes when input shapes differ")
        dims = (1,) * (x.rank - len(ax)) + weights.shape
        weights = reshape(weights, dims)
        perm = list(range(len(dims)))
        perm[ax[0]], perm[-1] = perm[-1], perm[ax[0]]
        weights = transpose(weights, perm)
    total = sum(weights, ax, keep_axes)
    return divide(sum(multiply(x, weights), ax, keep_axes), total)


def covariance(x, mean_or_none=None, ddof: int = 0) -> Tensor:
    """The covariance matrix of the rows of ``x`` (shape ``(..., n, d)`` gives
    ``(..., d, d)``), around the column mean (or the given ``mean``), over ``n - ddof``.

    >>> import nxpy as nx
    >>> nx.covariance(nx.tensor([[1, 2], [3, 4], [5, 6]]), ddof=1).tolist()
    [[4.0, 4.0], [4.0, 4.0]]
    """
    x = to_tensor(x, "x")
    if x.rank < 2:
        raise ValueError(f"covariance: expected an input tensor of rank at least 2, got "
                         f"{x.rank}")
    m = mean(x, [-2]) if mean_or_none is None else to_tensor(mean_or_none, "mean")
    if m.rank == 0:
        raise ValueError("covariance: expected a mean of rank at least 1, got 0")
    if not _is_int(ddof) or ddof < 0:
        raise ValueError(f"covariance: expected ddof to be a non-negative integer, got {ddof!r}")
    centered = renamed(subtract(x, new_axis(m, -2)), None)
    conj = _conjugate(centered) if centered.type.is_complex else centered
    batch = list(range(centered.rank - 2))
    total = centered.shape[-2]
    return divide(dot(conj, [-2], batch, centered, [-2], batch), total - ddof)


# ----------------------------------------------------------------------------------------
# Bits: population_count and count_leading_zeros (primitives)
# ----------------------------------------------------------------------------------------
def _bit_op(name, x) -> Tensor:
    x = to_tensor(x, "x")
    check_kind(name, "x", x.type, "intonly")
    return dispatch(name, _out(x.shape, x.type, x.names), x)


def population_count(x) -> Tensor:
    """The number of set bits of each element (two's complement), in ``x``'s type.

    >>> import nxpy as nx
    >>> nx.population_count(nx.tensor([0, 1, 126, 127, -1, -127, -128], type="s8")).tolist()
    [0, 1, 6, 7, 8, 2, 1]
    """
    return _bit_op("population_count", x)


def count_leading_zeros(x) -> Tensor:
    """The number of zero bits above the highest set bit of each element, in ``x``'s type.

    >>> import nxpy as nx
    >>> nx.count_leading_zeros(nx.tensor([0, 0xF, 0xFF, 0xFFFF])).tolist()
    [32, 28, 24, 16]
    """
    return _bit_op("count_leading_zeros", x)


# ----------------------------------------------------------------------------------------
# einsum
# ----------------------------------------------------------------------------------------
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(subscripts: str, operands):
    """``([letters per operand], output letters, ellipsis letters)`` with ``...``
    replaced by letters that appear nowhere else (right-aligned per operand)."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: expected subscripts to be a string, got {subscripts!r}")
    spec = subscripts.replace(" ", "")
    if "->" in spec:
        lhs, out = spec.split("->", 1)
        if "->" in out:
            raise ValueError(f"einsum: subscripts {subscripts!r} contain '->' more than once")
    else:
        lhs, out = spec, None
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: subscripts {subscripts!r} name {len(terms)} operand(s), "
                         f"got {len(operands)}")
    used = set(c for c in spec if c.isalpha())
    bad = [c for c in spec.replace("...", "").replace("->", "").replace(",", "")
           if c not in _LETTERS]
    if bad:
        raise ValueError(f"einsum: invalid character {bad[0]!r} in subscripts {subscripts!r}")
    free = [c for c in _LETTERS if c not in used]
    n_ell = 0
    for term, x in zip(terms, operands):
        if term.count("...") > 1 or "." in term.replace("...", ""):
            raise ValueError(f"einsum: invalid ellipsis in term {term!r}")
        named = len(term.replace("...", ""))
        if "..." in term:
            if x.rank < named:
                raise ValueError(f"einsum: term {term!r} names {named} axes, but its operand "
                                 f"has rank {x.rank}")
            n_ell = builtins.max(n_ell, x.rank - named)
        elif named != x.rank:
            raise ValueError(f"einsum: term {term!r} names {named} axes, but its operand has "
                             f"shape {x.shape}")
    ell = free[:n_ell]
    letters = []
    for term, x in zip(terms, operands):
        if "..." in term:
            k = x.rank - len(term.replace("...", ""))
            term = term.replace("...", "".join(ell[n_ell - k:]))
        letters.append(list(term))
    if out is None:
        counts = {}
        for ls in letters:
            for c in ls:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted((c for c in counts if counts[c] == 1 and c not in ell),
                           key=_LETTERS.index)
    else:
        if out.count("...") > 1 or "." in out.replace("...", ""):
            raise ValueError(f"einsum: invalid ellipsis in output {out!r}")
        out = list(out.replace("...", "".join(ell)))
        seen = set()
        for c in out:
            if c in seen:
                raise ValueError(f"einsum: output subscript {c!r} appears more than once")
            seen.add(c)
            if not builtins.any(c in ls for ls in letters):
                raise ValueError(f"einsum: output subscript {c!r} does not appear in the "
                                 f"inputs")
    return letters, list(out)


def _einsum_diagonal(x: Tensor, ls: list):
    """Repeated letters within one operand: take the diagonal over those axes."""
    while True:
        dup = next((c for c in ls if ls.count(c) > 1), None)
        if dup is None:
            return x, ls
        i = ls.index(dup)
        j = ls.index(dup, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"einsum: subscript {dup!r} labels axes of sizes {x.shape[i]} "
                             f"and {x.shape[j]}")
        rest = [k for k in range(x.rank) if k not in (i, j)]
        x = transpose(x, rest + [i, j])
        n = x.shape[-1]
        x = reshape(x, x.shape[:-2] + (n * n,))
        x = _slice_axis(x, 0, (n - 1) * (n + 1) + 1 if n else 0, x.rank - 1, n + 1)
        ls = [ls[k] for k in rest] + [dup]


def einsum(subscripts: str, *operands) -> Tensor:
    """Einstein summation with NumPy's subscript grammar, as ``jnp.einsum``: ``"ij,jk->ik"``,
    ``...`` for broadcast dims, and an implicit output (``"ij,jk"``: the letters seen once,
    in alphabetical order, after the ellipsis dims). Lowered to transposes, reshapes,
    sums and ``dot``; the result has the operands' merged type (pred gives u8, as ``dot``)
    and no names.

    >>> import nxpy as nx
    >>> x = nx.iota((2, 3))
    >>> nx.einsum("ij->ji", x).shape, nx.einsum("ij->", x).item(), nx.einsum("ii", nx.eye(3)).item()
    ((3, 2), 15, 3)
    >>> nx.einsum("...ij,...jk", nx.iota((4, 2, 3)), nx.iota((3, 5))).shape
    (4, 2, 5)
    """
    if not operands:
        raise ValueError("einsum: expected at least one operand")
    xs = [to_tensor(x, f"operands[{i}]") for i, x in enumerate(operands)]
    letters, out = _parse_einsum(subscripts, xs)
    t = xs[0].type
    for x in xs[1:]:
        t = T.merge(t, x.type)
    if t.is_pred and len(xs) > 1:
        t = U8
    sizes = {}
    for x, ls in zip(xs, letters):
        for c, d in zip(ls, x.shape):
            if d != 1:
                if sizes.get(c, d) != d:
                    raise ValueError(f"einsum: subscript {c!r} has sizes {sizes[c]} and {d}")
                sizes[c] = d
            else:
                sizes.setdefault(c, 1)
    terms = []
    for i, (x, ls) in enumerate(zip(xs, letters)):
        x, ls = _einsum_diagonal(x, list(ls))
        # size-1 dims broadcast against the other operands
        target = tuple(sizes[c] for c in ls)
        if target != x.shape:
            x = broadcast(x, target, axes=list(range(x.rank)))
        terms.append((x, ls))

    def needed(c, skip):
        return c in out or builtins.any(c in ls for k, (_, ls) in enumerate(terms) if k not in skip)

    def presum(k):
        x, ls = terms[k]
        gone = [i for i, c in enumerate(ls) if not needed(c, {k})]
        if gone:
            x = sum(x, gone)
            ls = [c for i, c in enumerate(ls) if i not in gone]
        terms[k] = (x, ls)

    for k in range(len(terms)):
        presum(k)
    while len(terms) > 1:
        (a, la), (b, lb) = terms[0], terms[1]
        rest = set(range(2, len(terms)))
        shared = [c for c in la if c in lb]
        batch = [c for c in shared if c in out or builtins.any(c in terms[k][1] for k in rest)]
        contract = [c for c in shared if c not in batch]
        fa, fb = [c for c in la if c not in shared], [c for c in lb if c not in shared]
        if not rest:
            # the last product as jnp.einsum emits it: the batch dims in the result's
            # order, the contracted ones sorted, and the operands swapped unless that
            # leaves a transpose after the dot (XLA lays the operands out for the dot it
            # is given: another order can cost a copy of one of them)
            batch = [c for c in out if c in batch]
            contract = sorted(contract)
            if batch + fa + fb != out:
                (a, la, fa), (b, lb, fb) = (b, lb, fb), (a, la, fa)
        r = dot(a, [la.index(c) for c in contract], [la.index(c) for c in batch],
                b, [lb.index(c) for c in contract], [lb.index(c) for c in batch])
        lr = batch + fa + fb
        terms[:2] = [(r, lr)]
    x, ls = terms[0]
    gone = [i for i, c in enumerate(ls) if c not in out]
    if gone:
        x = sum(x, gone)
        ls = [c for i, c in enumerate(ls) if i not in gone]
    if ls != out:
        x = transpose(x, [ls.index(c) for c in out])
    return renamed(as_type(x, t), None)


# the bit counts are integer results of integer inputs: no gradient
non_differentiable("population_count", "count_leading_zeros")
