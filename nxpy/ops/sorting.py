"""Sorting and cumulative ops: sort, argsort, top_k, the cumulative_* scans, and median and
mode (compositions, as in Nx).

Order (Nx's): NaN sorts above everything (last ascending, first descending), ``-0.0``
and ``0.0`` are equal, and every sort is stable (equal elements keep their order, in
both directions), so every backend gives the same indices.

>>> import nxpy as nx
>>> t = nx.tensor([3.0, float("nan"), -1.0, 2.0])
>>> nx.sort(t).tolist(), nx.argsort(t, direction="desc").tolist()
([-1.0, 2.0, 3.0, nan], [1, 0, 3, 2])
>>> values, indices = nx.top_k(nx.tensor([1, 5, 3, 5]), k=2)
>>> values.tolist(), indices.tolist()
([5, 5], [1, 3])
>>> nx.cumulative_sum(nx.tensor([1, 2, 3, 4])).tolist()
[1, 3, 6, 10]
>>> (nx.median(nx.tensor([[1, 2, 3], [4, 5, 6]]), axis=1).tolist(),
...  nx.mode(nx.tensor([1, 2, 2, 3])).tolist())
([2, 5], 2)
"""
from __future__ import annotations

import builtins

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import (_axes_of, _out, as_type, check_kind, dispatch, dispatch_multi, primitive,
                   register_grad_rule, non_differentiable, to_tensor)
from .creation import full, iota
from .elementwise import add, divide, equal, max, min, multiply, not_equal, select, subtract
from .indexing import slice
from .reductions import argmax, reduce_max, sum
from .shaping import concatenate, pad, reshape, reverse, squeeze

__all__ = ["sort", "argsort", "top_k", "permute_by_key", "cumulative_sum",
           "cumulative_product", "cumulative_min", "cumulative_max", "median", "mode"]

CUMULATIVE = ("cumulative_sum", "cumulative_product", "cumulative_min", "cumulative_max")

primitive("sorting", "sort", "argsort", *CUMULATIVE, props=("along_axes",))
primitive("sorting", "top_k", props=("batched_matrix",))
primitive("sorting", "permute_by_key")


def _direction(op, direction):
    if direction not in ("asc", "desc"):
        raise ValueError(f"{op}: unknown value for direction, expected 'asc' or 'desc', "
                         f"got {direction!r}")
    return direction


def _flag(op, name, v):
    if not isinstance(v, bool):
        raise TypeError(f"{op}: expected {name} to be True or False, got {v!r}")
    return v


def _sortable(op, x):
    x = to_tensor(x, "tensor")
    if x.type.is_complex:
        raise TypeError(f"{op}: complex types are not supported (expected tensor to have a "
                        f"real type, got {x.type})")
    return x


def _axis(op, axis, x):
    return _axes_of(op, S.normalize_axis, axis, x.rank, x.names)


# ----------------------------------------------------------------------------------------
# Sorting
# ----------------------------------------------------------------------------------------
def sort(tensor, axis=0, direction="asc", stable=False) -> Tensor:
    """Sorts along ``axis`` (``direction`` ``"asc"`` or ``"desc"``). NaN sorts above
    everything; the sort is always stable (``stable`` is accepted for Nx's signature).

    >>> import nxpy as nx
    >>> nx.sort(nx.tensor([[3, 1, 7], [2, 5, 4]], names=["x", "y"]), axis="y").tolist()
    [[1, 3, 7], [2, 4, 5]]
    >>> nx.sort(nx.tensor([float("nan"), float("-inf"), 0.0, float("inf")]),
    ...         direction="desc").tolist()
    [nan, inf, 0.0, -inf]
    """
    x = _sortable("sort", tensor)
    direction = _direction("sort", direction)
    _flag("sort", "stable", stable)
    axis = _axis("sort", axis, x)
    return dispatch("sort", _out(x.shape, x.type, x.names), x, axis=axis, direction=direction)


def argsort(tensor, axis=0, direction="asc", stable=False, type="s32") -> Tensor:
    """The indices that sort ``tensor`` along ``axis`` (stable: equal elements keep their
    order, in both directions), as integers of ``type``.

    >>> import nxpy as nx
    >>> nx.argsort(nx.tensor([16, 23, 42, 4, 8, 15])).tolist()
    [3, 4, 5, 0, 1, 2]
    >>> nx.argsort(nx.tensor([float("nan"), float("-inf"), float("inf"), 0.0])).tolist()
    [1, 3, 2, 0]
    """
    x = _sortable("argsort", tensor)
    direction = _direction("argsort", direction)
    _flag("argsort", "stable", stable)
    t = T.parse(type)
    if not t.is_int:
        raise TypeError(f"argsort: expected type to be an integer type, got {t}")
    axis = _axis("argsort", axis, x)
    return dispatch("argsort", _out(x.shape, t, x.names), x, axis=axis, direction=direction)


def top_k(tensor, k=1):
    """``(values, indices)`` of the ``k`` largest entries along the last axis, largest
    first (NaN counts as the largest; equal values: the lower index first). Indices are
    s32.

    >>> import nxpy as nx
    >>> values, indices = nx.top_k(nx.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    >>> values.tolist(), indices.tolist()
    ([[3.0], [6.0]], [[2], [2]])
    """
    x = _sortable("top_k", tensor)
    if x.rank == 0:
        raise ValueError("top_k input must have at least rank 1")
    k = S.integer(k, "top_k: k")
    n = x.shape[-1]
    if k < 1:
        raise ValueError(f"top_k: expected k to be at least 1, got {k}")
    if k > n:
        raise ValueError(f"top_k input last axis size must be greater than or equal to k, "
                         f"got size={n} and k={k}")
    shape = x.shape[:-1] + (k,)
    values, indices = dispatch_multi("top_k", [(shape, x.type, x.names), (shape, T.S32, x.names)],
                                     x, k=k)
    return values, indices


def permute_by_key(keys, values, axis=0, direction="asc") -> Tensor:
    """``values`` reordered along ``axis`` as a stable sort of ``keys`` (same shape)
    reorders them: what a multi-operand sort (``lax.sort((keys, values))``) gives for its
    payload, and how sort's gradient sends the cotangent back.

    >>> import nxpy as nx
    >>> nx.permute_by_key(nx.tensor([2, 0, 1]), nx.tensor([10.0, 20.0, 30.0])).tolist()
    [20.0, 30.0, 10.0]
    """
    k = _sortable("permute_by_key", keys)
    v = to_tensor(values, "values")
    if k.shape != v.shape:
        raise ValueError(f"permute_by_key: expected keys and values of the same shape, got "
                         f"{k.shape} and {v.shape}")
    direction = _direction("permute_by_key", direction)
    axis = _axis("permute_by_key", axis, k)
    return dispatch("permute_by_key", _out(v.shape, v.type, v.names), k, v, axis=axis,
                    direction=direction)


# ----------------------------------------------------------------------------------------
# Cumulative ops
# ----------------------------------------------------------------------------------------
def _cumulative(op, tensor, axis, reverse):
    x = to_tensor(tensor, "tensor")
    if op in ("cumulative_min", "cumulative_max"):
        check_kind(op, "tensor", x.type, "real")
    _flag(op, "reverse", reverse)
    axis = _axis(op, axis, x)
    # arithmetic on pred computes in u8, as nxpy's add and multiply do (Nx has no pred)
    t = T.Type("u", 8) if x.type.is_pred and op in ("cumulative_sum", "cumulative_product") \
        else x.type
    return dispatch(op, _out(x.shape, t, x.names), x, axis=axis, reverse=reverse)


def cumulative_sum(tensor, axis=0, reverse=False) -> Tensor:
    """Running sum along ``axis`` (``reverse``: from the end), in the input's type.

    >>> import nxpy as nx
    >>> nx.cumulative_sum(nx.iota((3, 3)), axis=1, reverse=True).tolist()
    [[3, 3, 2], [12, 9, 5], [21, 15, 8]]
    """
    return _cumulative("cumulative_sum", tensor, axis, reverse)


def cumulative_product(tensor, axis=0, reverse=False) -> Tensor:
    """Running product along ``axis``.

    >>> import nxpy as nx
    >>> nx.cumulative_product(nx.tensor([1, 2, 3, 4])).tolist()
    [1, 2, 6, 24]
    """
    return _cumulative("cumulative_product", tensor, axis, reverse)


def cumulative_min(tensor, axis=0, reverse=False) -> Tensor:
    """Running minimum along ``axis`` (NaN propagates, as ``nx.min``).

    >>> import nxpy as nx
    >>> nx.cumulative_min(nx.tensor([3, 4, 2, 1])).tolist()
    [3, 3, 2, 1]
    """
    return _cumulative("cumulative_min", tensor, axis, reverse)


def cumulative_max(tensor, axis=0, reverse=False) -> Tensor:
    """Running maximum along ``axis`` (NaN propagates, as ``nx.max``).

    >>> import nxpy as nx
    >>> nx.cumulative_max(nx.tensor([3, 4, 2, 1])).tolist()
    [3, 4, 4, 4]
    """
    return _cumulative("cumulative_max", tensor, axis, reverse)


# ----------------------------------------------------------------------------------------
# Median and mode: compositions, as Nx defines them
# ----------------------------------------------------------------------------------------
def _slice_axis(x, start, length, axis):
    starts = [0] * x.rank
    lengths = list(x.shape)
    starts[axis], lengths[axis] = start, length
    return slice(x, starts, lengths)


def median(tensor, axis=None, keep_axis=False) -> Tensor:
    """The middle value (of the flattened tensor, or along ``axis``): for an even count,
    the mean of the two middle values (a float). As Nx, ``keep_axis`` applies only with
    an ``axis``.

    >>> import nxpy as nx
    >>> nx.median(nx.tensor([1, 2])).tolist(), nx.median(nx.iota((2, 3, 3))).tolist()
    (1.5, 8.5)
    >>> nx.median(nx.tensor([[1, 2, 3], [4, 5, 6]]), axis=0).tolist()
    [2.5, 3.5, 4.5]
    """
    x = _sortable("median", tensor)
    _flag("median", "keep_axis", keep_axis)
    if axis is not None:
        axis = _axis("median", axis, x)
        n = x.shape[axis]
        if n == 0:
            raise ValueError(f"median: cannot take the median along axis {axis} of size 0 "
                             f"(shape {x.shape})")
        t = sort(x, axis=axis)
        half = n // 2
        if n % 2 == 1:
            r = _slice_axis(t, half, 1, axis)
            return r if keep_axis else squeeze(r, axes=[axis])
        two = _slice_axis(t, half - 1, 2, axis)
        two = as_type(two, T.to_floating(two.type))
        return divide(sum(two, axes=[axis], keep_axes=keep_axis), 2)
    if x.size == 0:
        raise ValueError(f"median: cannot take the median of an empty tensor of shape {x.shape}")
    t = sort(reshape(x, (x.size,)))
    half = x.size // 2
    if x.size % 2 == 1:
        return reshape(_slice_axis(t, half, 1, 0), ())
    a = reshape(_slice_axis(t, half - 1, 1, 0), ())
    b = reshape(_slice_axis(t, half, 1, 0), ())
    return divide(add(a, b), 2)


def mode(tensor, axis=None, keep_axis=False) -> Tensor:
    """The most frequent value (of the flattened tensor, or along ``axis``); on a tie, the
    smallest of the most frequent values (Nx's rule). NaNs never equal each other, so
    each counts once.

    >>> import nxpy as nx
    >>> nx.mode(nx.tensor([[1, 2, 2, 3, 5], [1, 1, 76, 8, 1]]), axis=1).tolist()
    [2, 1]
    >>> nx.mode(nx.tensor([3, 1, 3, 1])).tolist()
    1
    """
    x = _sortable("mode", tensor)
    _flag("mode", "keep_axis", keep_axis)
    if axis is not None:
        axis = _axis("mode", axis, x)
    if x.rank == 0:
        return reshape(x, (1,)) if keep_axis else x
    if axis is None:
        if x.size == 0:
            raise ValueError(f"mode: cannot take the mode of an empty tensor of shape {x.shape}")
        if x.size == 1:
            return x if keep_axis else reshape(x, ())
        r = _mode_along(reshape(x, (x.size,)), 0)
        return reshape(r, (1,) * x.rank) if keep_axis else reshape(r, ())
    n = x.shape[axis]
    if n == 0:
        raise ValueError(f"mode: cannot take the mode along axis {axis} of size 0 (shape "
                         f"{x.shape})")
    if n == 1:
        return x if keep_axis else squeeze(x, axes=[axis])
    r = _mode_along(x, axis)
    return r if keep_axis else squeeze(r, axes=[axis])


def _mode_along(x, axis):
    """The mode along ``axis`` (kept as size 1): sort, find each run of equal values and
    its length (a running max of run starts, a reverse running min of run ends), take the
    first position holding a longest run."""
    s = sort(x, axis=axis)
    n = x.shape[axis]
    idx = iota(x.shape, axis=axis)
    differs = not_equal(_slice_axis(s, 0, n - 1, axis), _slice_axis(s, 1, n - 1, axis))
    first_col = full(tuple(1 if i == axis else d for i, d in enumerate(x.shape)), True)
    starts = concatenate([first_col, differs], axis=axis)      # a run starts here
    ends = concatenate([differs, first_col], axis=axis)        # a run ends here
    start = cumulative_max(select(starts, idx, 0), axis=axis)
    end = cumulative_min(select(ends, idx, n - 1), axis=axis, reverse=True)
    length = subtract(end, start)
    pos = argmax(length, axis=axis, keep_axis=True)            # first longest run
    hit = equal(idx, pos)
    low = T.min_value(s.type) if not s.type.is_inexact else float("-inf")
    return reduce_max(select(hit, s, full((), low, type=s.type)), axes=[axis], keep_axes=True)


# ----------------------------------------------------------------------------------------
# Gradient rules (the rule protocol: nxpy.defn.transforms.grad_rules)
# ----------------------------------------------------------------------------------------
non_differentiable("argsort")


@register_grad_rule("sort")
def _sort_grad(ctx, e, xs, out, g):
    # each output position took one input: send its cotangent back through the (stable)
    # permutation, by sorting the cotangent with the permutation as key
    (x,) = xs
    axis, direction = e.attrs["axis"], e.attrs["direction"]
    perm = argsort(x, axis=axis, direction=direction)
    return [permute_by_key(perm, g, axis=axis)]


@register_grad_rule("permute_by_key")
def _permute_grad(ctx, e, xs, out, g):
    keys, _ = xs
    axis = e.attrs["axis"]
    perm = argsort(keys, axis=axis, direction=e.attrs["direction"])
    return [None, permute_by_key(perm, g, axis=axis)]


@register_grad_rule("top_k")
def _top_k_grad(ctx, e, xs, out, gs):
    (x,) = xs
    g = gs[0]
    if g is None:
        return [None]
    n, k = x.shape[-1], e.attrs["k"]
    perm = argsort(x, axis=x.rank - 1, direction="desc")   # its first k are top_k's indices
    full_g = pad(g, 0, [(0, 0, 0)] * (x.rank - 1) + [(0, n - k, 0)]) if n > k else g
    return [permute_by_key(perm, full_g, axis=x.rank - 1)]


@register_grad_rule("cumulative_sum")
def _cumsum_grad(ctx, e, xs, out, g):
    return [cumulative_sum(g, axis=e.attrs["axis"], reverse=not e.attrs["reverse"])]


def _balanced_eq(x, z, y):
    """JAX's share of a max/min's cotangent for ``x``: 1 where x won alone, 1/2 on a tie."""
    one = select(equal(x, z), full((), 1, type=z.type), full((), 0, type=z.type))
    return one / select(equal(y, z), full((), 2, type=z.type), full((), 1, type=z.type))


_COMBINE = {"cumulative_product": multiply, "cumulative_max": max, "cumulative_min": min}
_SCANS = {"cumulative_product": cumulative_product, "cumulative_max": cumulative_max,
          "cumulative_min": cumulative_min}


def _partials(op, a, b, r):
    if op == "cumulative_product":
        return b, a
    return _balanced_eq(a, r, b), _balanced_eq(b, r, a)


def _interleave(even, odd, axis, n):
    """``out[2i] = even[i]``, ``out[2i + 1] = odd[i]`` along ``axis`` (length ``n``)."""
    ne, no = even.shape[axis], odd.shape[axis]

    def cfg(lo, hi):
        return [(0, 0, 0)] * axis + [(lo, hi, 1)] + [(0, 0, 0)] * (even.rank - axis - 1)
    a = pad(even, 0, cfg(0, n - 2 * ne + 1))
    if no == 0:
        return a
    return add(a, pad(odd, 0, cfg(1, n - 2 * no)))


def _strided(x, start, axis, stride=2, stop=None):
    n = x.shape[axis] if stop is None else stop
    length = builtins.max(n - start, 0)
    starts, lengths, strides = [0] * x.rank, list(x.shape), [1] * x.rank
    starts[axis], lengths[axis], strides[axis] = start, length, stride
    if length == 0:
        shape = list(x.shape)
        shape[axis] = 0
        return full(tuple(shape), 0, type=x.type)
    return slice(x, starts, lengths, strides)


def _scan_vjp(op, x, g, axis):
    """The cotangent of ``x`` for ``g`` of JAX's associative scan of ``x`` along ``axis``
    (the scan JAX differentiates for cumprod, cummax and cummin): the same pairing, so
    ties (max/min) and zeros (product) share the cotangent as JAX's gradient does."""
    n = x.shape[axis]
    if n < 2:
        return g
    comb = _COMBINE[op]
    a, b = _strided(x, 0, axis, stop=n - 1), _strided(x, 1, axis)
    r = comb(a, b)
    o = _SCANS[op](r, axis=axis)                               # the scan of the pairs
    g_even, g_odd = _strided(g, 0, axis), _strided(g, 1, axis)
    x2 = _strided(x, 2, axis)
    o_used = _strided(o, 0, axis, stride=1, stop=o.shape[axis] - (1 - n % 2))
    e_val = comb(o_used, x2)
    g_e = _strided(g_even, 1, axis, stride=1)
    da_o, db_x2 = _partials(op, o_used, x2, e_val)
    d_o = g_e * da_o
    if n % 2 == 0:
        d_o = pad(d_o, 0, [(0, 0, 0)] * axis + [(0, 1, 0)] + [(0, 0, 0)] * (x.rank - axis - 1))
    g_r = _scan_vjp(op, r, g_odd + d_o, axis)
    da, db = _partials(op, a, b, r)
    d_a, d_b = g_r * da, g_r * db
    first = _strided(g_even, 0, axis, stride=1, stop=1)
    even = concatenate([first, g_e * db_x2], axis=axis)
    if n % 2 == 1:
        d_a = pad(d_a, 0, [(0, 0, 0)] * axis + [(0, 1, 0)] + [(0, 0, 0)] * (x.rank - axis - 1))
    return _interleave(even + d_a, d_b, axis, n)


def _scan_grad(ctx, e, xs, out, g):
    (x,) = xs
    if not out.type.is_inexact:
        return [None]
    axis, rev = e.attrs["axis"], e.attrs["reverse"]
    x = as_type(x, out.type)
    if rev:
        return [reverse(_scan_vjp(e.op, reverse(x, [axis]), reverse(g, [axis]), axis), [axis])]
    return [_scan_vjp(e.op, x, g, axis)]


for _op in ("cumulative_product", "cumulative_max", "cumulative_min"):
    register_grad_rule(_op)(_scan_grad)
del _op
