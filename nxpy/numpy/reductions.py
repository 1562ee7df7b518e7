"""Reductions with ``jax.numpy``'s names and arguments (``axis``, ``keepdims``, ``dtype``,
``where``, ``initial``): ``sum`` ... ``ptp``, the ``nan*`` family, cumulative sums and
products, ``diff`` (issue 28). Compositions of nxpy's reductions, so every backend,
compiler, ``grad`` and ``vmap`` run them.

Result types follow ``jnp``: sums and products of small integers and bools give s32 (u32
for unsigned), means and variances of integers give f32, ``argmax`` gives s32.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import ops as O
from .. import types as T
from ..tensor import Tensor
from .mathematics import _inexact, _no_out
from .mathematics import _t as _tensor
from ._common import axes_of, dtype_of, real_number

__all__ = ["sum", "prod", "mean", "max", "amax", "min", "amin", "argmax", "argmin",
           "all", "any", "std", "var", "average", "ptp", "count_nonzero", "nansum", "nanprod",
           "nanmean", "nanmax", "nanmin", "nanstd", "nanvar", "nanargmax", "nanargmin",
           "cumsum", "cumprod", "nancumsum", "nancumprod", "cumulative_sum",
           "cumulative_prod", "diff", "ediff1d"]

#: Where a function departs from ``jax.numpy`` and why (collected by the coverage table).
NOTES = {
    "sum": "s64/u64 inputs stay 64-bit (nxpy has 64-bit integers without an x64 switch).",
    "max": "an empty reduction without initial= raises ValueError as in jnp.",
    "argmax": "indices are s32.",
    "var": "the mean= argument is not accepted.",
}


def _t(x, fn: str, arg: str = "a") -> Tensor:
    """:func:`.mathematics._t` with NumPy's reduction argument name as the default."""
    return _tensor(x, fn, arg)


def _cast(x: Tensor, t) -> Tensor:
    return x if t is None or x.type == t else O.as_type(x, t)


def _where(where, x: Tensor, fill, fn: str) -> Tensor:
    """``x`` with ``fill`` where ``where`` is false (``where`` broadcast to ``x``)."""
    if where is None:
        return x
    w = _t(where, fn, "where")
    if not w.type.is_pred:
        raise TypeError(f"{fn}: expected where to be a bool tensor, got {w.type}")
    try:
        shape = np.broadcast_shapes(w.shape, x.shape)
    except ValueError:
        raise ValueError(f"{fn}: where of shape {w.shape} does not broadcast to the input's "
                         f"{x.shape}") from None
    if shape != x.shape:
        raise ValueError(f"{fn}: where of shape {w.shape} does not broadcast to the input's "
                         f"{x.shape}")
    w = O.broadcast(w, x.shape) if w.shape != x.shape else w
    return O.select(w, x, O.tensor(fill, type=x.type))


def _sum_type(x: Tensor, promote: bool = True):
    if not promote or x.type.is_inexact or x.type.bits >= 32 and not x.type.is_pred:
        return x.type
    return T.parse("u32") if x.type.kind == "u" else T.S32


def _keep(r: Tensor, x: Tensor, axes, keepdims: bool) -> Tensor:
    if not keepdims:
        return r
    return O.reshape(r, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))


def sum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
        where=None, promote_integers: bool = True):
    """``jnp.sum``: the sum over ``axis`` (None: all); small integers and bools sum in s32
    (u32 unsigned), as ``jnp``.

    >>> import nxpy.numpy as xnp
    >>> xnp.sum([[1, 2], [3, 4]], axis=0).tolist(), xnp.sum([True, True]).item()
    ([4, 6], 2)
    """
    _no_out(out, "sum")
    x = _t(a, "sum")
    axes = axes_of(axis, x.rank, "sum")
    t = dtype_of(dtype, "sum") or _sum_type(x, promote_integers)
    x = _where(where, _cast(x, t), 0, "sum")
    r = O.sum(x, axes=list(axes), keep_axes=keepdims)
    r = _cast(r, t)
    if initial is not None:
        r = O.add(r, O.tensor(initial, type=t))
    return r


def prod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
         where=None, promote_integers: bool = True):
    """``jnp.prod``: the product over ``axis``.

    >>> import nxpy.numpy as xnp
    >>> xnp.prod([[1, 2], [3, 4]], axis=1).tolist()
    [2, 12]
    """
    _no_out(out, "prod")
    x = _t(a, "prod")
    axes = axes_of(axis, x.rank, "prod")
    t = dtype_of(dtype, "prod") or _sum_type(x, promote_integers)
    x = _where(where, _cast(x, t), 1, "prod")
    r = _cast(O.product(x, axes=list(axes), keep_axes=keepdims), t)
    if initial is not None:
        r = O.multiply(r, O.tensor(initial, type=t))
    return r


def _count(x: Tensor, axes, where, keepdims: bool, t, fn: str) -> Tensor:
    if where is None:
        n = math.prod(x.shape[i] for i in axes)
        return O.tensor(n, type=t)
    w = _where(where, O.fill(x, 1, type=t), 0, fn)
    return O.sum(w, axes=list(axes), keep_axes=keepdims)


def _mean_type(x: Tensor, dtype, fn: str):
    t = dtype_of(dtype, fn)
    if t is not None:
        return t, t if t.is_inexact else T.F32
    rt = x.type if x.type.is_inexact else T.F32
    return rt, (T.F32 if rt.bits == 16 and rt.is_float else rt)


def mean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None):
    """``jnp.mean``: the mean over ``axis`` (integers give f32; f16 and bf16 are summed in
    f32, as ``jnp``).

    >>> import nxpy.numpy as xnp
    >>> xnp.mean([[1, 2], [3, 4]], axis=1).tolist()
    [1.5, 3.5]
    """
    _no_out(out, "mean")
    x = _t(a, "mean")
    axes = axes_of(axis, x.rank, "mean")
    rt, ct = _mean_type(x, dtype, "mean")
    xc = _where(where, _cast(x, ct), 0, "mean")
    s = O.sum(xc, axes=list(axes), keep_axes=keepdims)
    n = _count(x, axes, where, keepdims, T.to_real(ct), "mean")
    return _cast(O.divide(s, n), rt)


def _extreme(a, axis, out, keepdims, initial, where, fn, op, ident):
    _no_out(out, fn)
    x = _t(a, fn)
    axes = axes_of(axis, x.rank, fn)
    if where is not None and initial is None:
        raise ValueError(f"{fn}: reduction with where= needs initial= (it has no identity)")
    if initial is None and builtins.any(x.shape[i] == 0 for i in axes):
        raise ValueError(f"{fn}: zero-size reduction over axis {axis!r} of shape {x.shape} "
                         "has no identity; pass initial=")
    if where is not None:
        x = _where(where, x, ident(x.type), fn)
    r = op(x, axes=list(axes), keep_axes=keepdims)
    if initial is not None:
        init = O.tensor(initial, type=x.type)
        r = O.max(r, init) if op is O.reduce_max else O.min(r, init)
    return r


def _lowest(t):
    if t.is_pred:
        return False
    return -math.inf if t.is_float else int(T.min_value(t))


def _highest(t):
    if t.is_pred:
        return True
    return math.inf if t.is_float else int(T.max_value(t))


def max(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """``jnp.max``: the largest entry over ``axis`` (NaN propagates).

    >>> import nxpy.numpy as xnp
    >>> xnp.max([[1, 5], [3, 4]], axis=0).tolist()
    [3, 5]
    """
    return _extreme(a, axis, out, keepdims, initial, where, "max", O.reduce_max, _lowest)


def min(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """``jnp.min``: the smallest entry over ``axis`` (NaN propagates).

    >>> import nxpy.numpy as xnp
    >>> xnp.min([[1, 5], [3, 4]], axis=0).tolist()
    [1, 4]
    """
    return _extreme(a, axis, out, keepdims, initial, where, "min", O.reduce_min, _highest)


def amax(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """As :func:`max`.

    >>> import nxpy.numpy as xnp
    >>> xnp.amax([1, 5]).item()
    5
    """
    return max(a, axis, out, keepdims, initial, where)


def amin(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """As :func:`min`.

    >>> import nxpy.numpy as xnp
    >>> xnp.amin([1, 5]).item()
    1
    """
    return min(a, axis, out, keepdims, initial, where)


def _arg(a, axis, out, keepdims, fn, op):
    _no_out(out, fn)
    x = _t(a, fn)
    if axis is None:
        if x.size == 0:
            raise ValueError(f"{fn}: attempt to get {fn} of an empty sequence")
        r = op(O.reshape(x, (x.size,)), axis=0)
        return O.reshape(r, (1,) * x.rank) if keepdims else r
    (ax,) = axes_of(axis, x.rank, fn) if not isinstance(axis, (tuple, list)) else (None,)
    if ax is None:
        raise TypeError(f"{fn}: expected axis to be an int or None, got {axis!r}")
    if x.shape[ax] == 0:
        raise ValueError(f"{fn}: attempt to get {fn} of an empty sequence")
    return op(x, axis=ax, keep_axis=bool(keepdims))


def argmax(a, axis=None, out=None, keepdims=None):
    """``jnp.argmax``: the index of the largest entry along ``axis`` (None: of the flattened
    tensor; the first one on ties; NaN counts as the largest), as s32.

    >>> import nxpy.numpy as xnp
    >>> xnp.argmax([[1, 5], [3, 4]], axis=1).tolist(), xnp.argmax([[1, 5], [3, 4]]).item()
    ([1, 1], 1)
    """
    return _arg(a, axis, out, keepdims, "argmax", O.argmax)


def argmin(a, axis=None, out=None, keepdims=None):
    """``jnp.argmin``: the index of the smallest entry along ``axis``, as s32.

    >>> import nxpy.numpy as xnp
    >>> xnp.argmin([[1, 5], [3, 4]], axis=0).tolist()
    [0, 1]
    """
    return _arg(a, axis, out, keepdims, "argmin", O.argmin)


def _bool(x: Tensor) -> Tensor:
    return x if x.type.is_pred else O.not_equal(x, O.tensor(0, type=x.type))


def all(a, axis=None, out=None, keepdims: bool = False, *, where=None):
    """``jnp.all``: whether every entry over ``axis`` is true (non-zero).

    >>> import nxpy.numpy as xnp
    >>> xnp.all([[1, 0], [1, 1]], axis=1).tolist()
    [False, True]
    """
    _no_out(out, "all")
    x = _bool(_t(a, "all"))
    axes = axes_of(axis, x.rank, "all")
    return O.all(_where(where, x, True, "all"), axes=list(axes), keep_axes=keepdims)


def any(a, axis=None, out=None, keepdims: bool = False, *, where=None):
    """``jnp.any``: whether some entry over ``axis`` is true (non-zero).

    >>> import nxpy.numpy as xnp
    >>> xnp.any([[1, 0], [0, 0]], axis=1).tolist()
    [True, False]
    """
    _no_out(out, "any")
    x = _bool(_t(a, "any"))
    axes = axes_of(axis, x.rank, "any")
    return O.any(_where(where, x, False, "any"), axes=list(axes), keep_axes=keepdims)


def _var(a, axis, dtype, out, ddof, keepdims, where, mean_, correction, fn, nan=False):
    _no_out(out, fn)
    if mean_ is not None:
        raise NotImplementedError(f"{fn}: mean= is not supported")
    ddof = real_number(ddof, fn, "ddof", tensors=True)
    if correction is not None:
        correction = real_number(correction, fn, "correction", tensors=True)
        if isinstance(ddof, Tensor) or ddof != 0:
            raise ValueError(f"{fn}: ddof and correction can't be provided simultaneously")
        ddof = correction
    x = _t(a, fn)
    axes = axes_of(axis, x.rank, fn)
    rt, ct = _mean_type(x, dtype, fn)
    rt = T.to_real(rt)
    xc = _cast(x, ct)
    w = where
    if nan:
        ok = O.logical_not(O.is_nan(xc))
        w = ok if where is None else O.logical_and(ok, _t(where, fn, "where"))
    n = _count(xc, axes, w, True, T.to_real(ct), fn)
    m = O.divide(O.sum(_where(w, xc, 0, fn), axes=list(axes), keep_axes=True), n)
    c = O.subtract(xc, m)
    sq = O.real(O.multiply(c, O.conjugate(c))) if c.type.is_complex else O.multiply(c, c)
    s = O.sum(_where(w, sq, 0, fn), axes=list(axes), keep_axes=keepdims)
    nk = n if keepdims else O.reshape(n, s.shape) if w is not None else n
    d = O.subtract(nk, O.tensor(ddof, type=nk.type))
    if nan:
        d = O.max(d, O.tensor(0, type=d.type))
    return _cast(O.divide(s, d), rt)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=None,
        mean=None, correction=None):
    """``jnp.var``: the variance over ``axis``, ``sum(|x - mean|^2) / (n - ddof)``
    (``correction`` is ``ddof``'s array-API name).

    >>> import nxpy.numpy as xnp
    >>> xnp.var([1.0, 2.0, 3.0, 4.0]).item(), xnp.var([1.0, 2.0, 3.0, 4.0], ddof=1).item()
    (1.25, 1.6666666269302368)
    """
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, "var")


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, *, where=None,
        mean=None, correction=None):
    """``jnp.std``: the square root of :func:`var`.

    >>> import nxpy.numpy as xnp
    >>> xnp.std([1.0, 3.0]).item()
    1.0
    """
    return O.sqrt(_var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, "std"))


def average(a, axis=None, weights=None, returned: bool = False, keepdims: bool = False):
    """``jnp.average``: the mean over ``axis``, weighted by ``weights`` (of ``a``'s shape, or
    a vector along a single ``axis``); with ``returned``, also the sum of the weights.

    >>> import nxpy.numpy as xnp
    >>> xnp.average([1.0, 2.0, 4.0], weights=[1.0, 1.0, 2.0]).item()
    2.75
    """
    x = _t(a, "average")
    axes = axes_of(axis, x.rank, "average")
    if weights is None:
        avg = mean(x, axis, keepdims=keepdims)
        if not returned:
            return avg
        return avg, O.tensor(math.prod(x.shape[i] for i in axes), type=avg.type)
    w = _t(weights, "average", "weights")
    if w.shape != x.shape:
        if axis is None:
            raise ValueError("average: axis must be given when the shapes of a and weights "
                             f"differ ({x.shape} and {w.shape})")
        if w.rank != 1 or len(axes) != 1 or w.shape[0] != x.shape[axes[0]]:
            raise ValueError(f"average: weights of shape {w.shape} do not match a {x.shape} "
                             f"along axis {axis!r}")
        shape = tuple(w.shape[0] if i == axes[0] else 1 for i in range(x.rank))
        w = O.broadcast(O.reshape(w, shape), x.shape)
    t = T.merge(_inexact(x).type, _inexact(w).type)
    x, w = _cast(x, t), _cast(w, t)
    ws = O.sum(w, axes=list(axes), keep_axes=keepdims)
    avg = O.divide(O.sum(O.multiply(x, w), axes=list(axes), keep_axes=keepdims), ws)
    return (avg, ws) if returned else avg


def ptp(a, axis=None, out=None, keepdims: bool = False):
    """``jnp.ptp``: the range (max - min) over ``axis``.

    >>> import nxpy.numpy as xnp
    >>> xnp.ptp([[1, 5], [3, 4]], axis=1).tolist()
    [4, 1]
    """
    x = _t(a, "ptp")
    return O.subtract(max(x, axis, out, keepdims), min(x, axis, out, keepdims))


def count_nonzero(a, axis=None, keepdims: bool = False):
    """``jnp.count_nonzero``: the number of non-zero entries over ``axis``, as s32.

    >>> import nxpy.numpy as xnp
    >>> xnp.count_nonzero([[1, 0], [2, 3]], axis=1).tolist()
    [1, 2]
    """
    x = _bool(_t(a, "count_nonzero"))
    axes = axes_of(axis, x.rank, "count_nonzero")
    return O.sum(O.as_type(x, "s32"), axes=list(axes), keep_axes=keepdims)


def _nan_fill(a, fill, fn):
    x = _t(a, fn)
    if not x.type.is_inexact:
        return x, None
    nan = O.is_nan(x)
    return O.select(nan, O.tensor(fill, type=x.type), x), nan


def nansum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
           where=None):
    """``jnp.nansum``: :func:`sum` counting NaN as 0.

    >>> import nxpy.numpy as xnp
    >>> xnp.nansum([1.0, float("nan"), 2.0]).item()
    3.0
    """
    x, _ = _nan_fill(a, 0, "nansum")
    return sum(x, axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
            where=None):
    """``jnp.nanprod``: :func:`prod` counting NaN as 1.

    >>> import nxpy.numpy as xnp
    >>> xnp.nanprod([2.0, float("nan"), 3.0]).item()
    6.0
    """
    x, _ = _nan_fill(a, 1, "nanprod")
    return prod(x, axis, dtype, out, keepdims, initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims: bool = False, *, where=None):
    """``jnp.nanmean``: :func:`mean` of the entries that are not NaN (NaN where all are).

    >>> import nxpy.numpy as xnp
    >>> xnp.nanmean([1.0, float("nan"), 2.0]).item()
    1.5
    """
    _no_out(out, "nanmean")
    x = _t(a, "nanmean")
    if not x.type.is_inexact:
        return mean(x, axis, dtype, keepdims=keepdims, where=where)
    ok = O.logical_not(O.is_nan(x))
    w = ok if where is None else O.logical_and(ok, _t(where, "nanmean", "where"))
    return mean(x, axis, dtype, keepdims=keepdims, where=w)


def _nanextreme(a, axis, out, keepdims, initial, where, fn, f, fill):
    x, nan = _nan_fill(a, fill, fn)
    r = f(x, axis, out, keepdims, initial, where)
    if nan is None:
        return r
    axes = axes_of(axis, x.rank, fn)
    alln = O.all(nan, axes=list(axes), keep_axes=keepdims)
    return O.select(alln, O.tensor(math.nan, type=r.type), r)


def nanmax(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """``jnp.nanmax``: :func:`max` ignoring NaN (NaN where all are).

    >>> import nxpy.numpy as xnp
    >>> xnp.nanmax([1.0, float("nan"), 2.0]).item()
    2.0
    """
    return _nanextreme(a, axis, out, keepdims, initial, where, "nanmax", max, -math.inf)


def nanmin(a, axis=None, out=None, keepdims: bool = False, initial=None, where=None):
    """``jnp.nanmin``: :func:`min` ignoring NaN (NaN where all are).

    >>> import nxpy.numpy as xnp
    >>> xnp.nanmin([1.0, float("nan"), 2.0]).item()
    1.0
    """
    return _nanextreme(a, axis, out, keepdims, initial, where, "nanmin", min, math.inf)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, where=None,
           mean=None, *, correction=None):
    """``jnp.nanvar``: :func:`var` of the entries that are not NaN.

    >>> import nxpy.numpy as xnp
    >>> xnp.nanvar([1.0, float("nan"), 3.0]).item()
    1.0
    """
    return _var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, "nanvar",
                nan=_t(a, "nanvar").type.is_inexact)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims: bool = False, where=None,
           mean=None, *, correction=None):
    """``jnp.nanstd``: the square root of :func:`nanvar`.

    >>> import nxpy.numpy as xnp
    >>> xnp.nanstd([1.0, float("nan"), 3.0]).item()
    1.0
    """
    return O.sqrt(_var(a, axis, dtype, out, ddof, keepdims, where, mean, correction, "nanstd",
                       nan=_t(a, "nanstd").type.is_inexact))


def _nanarg(a, axis, out, keepdims, fn, f, fill):
    x, nan = _nan_fill(a, fill, fn)
    r = f(x, axis, out, keepdims)
    if nan is None:
        return r
    if axis is None:
        alln = O.all(nan)
        alln = O.reshape(alln, r.shape)
    else:
        alln = O.all(nan, axes=[axes_of(axis, x.rank, fn)[0]], keep_axes=bool(keepdims))
    return O.select(alln, O.tensor(-1, type=r.type), r)


def nanargmax(a, axis=None, out=None, keepdims=None):
    """``jnp.nanargmax``: :func:`argmax` ignoring NaN (-1 where all are NaN).

    >>> import nxpy.numpy as xnp
    >>> xnp.nanargmax([1.0, float("nan"), 2.0]).item()
    2
    """
    return _nanarg(a, axis, out, keepdims, "nanargmax", argmax, -math.inf)


def nanargmin(a, axis=None, out=None, keepdims=None):
    """``jnp.nanargmin``: :func:`argmin` ignoring NaN (-1 where all are NaN).

    >>> import nxpy.numpy as xnp
    >>> xnp.nanargmin([1.0, float("nan"), 2.0]).item()
    0
    """
    return _nanarg(a, axis, out, keepdims, "nanargmin", argmin, math.inf)


def _cum(a, axis, dtype, out, fn, op, fill=None):
    _no_out(out, fn)
    x = _t(a, fn)
    if fill is not None and x.type.is_inexact:
        x = O.select(O.is_nan(x), O.tensor(fill, type=x.type), x)
    if axis is None:
        x = O.reshape(x, (x.size,))
        axis = 0
    (ax,) = axes_of(axis, x.rank, fn)
    t = dtype_of(dtype, fn) or (T.S32 if x.type.is_pred else x.type)
    return op(_cast(x, t), axis=ax)


def cumsum(a, axis=None, dtype=None, out=None):
    """``jnp.cumsum``: running sums along ``axis`` (None: of the flattened tensor); bools
    sum in s32, other types keep theirs, as ``jnp``.

    >>> import nxpy.numpy as xnp
    >>> xnp.cumsum([[1, 2], [3, 4]], axis=1).tolist(), xnp.cumsum([[1, 2], [3, 4]]).tolist()
    ([[1, 3], [3, 7]], [1, 3, 6, 10])
    """
    return _cum(a, axis, dtype, out, "cumsum", O.cumulative_sum)


def cumprod(a, axis=None, dtype=None, out=None):
    """``jnp.cumprod``: running products along ``axis``.

    >>> import nxpy.numpy as xnp
    >>> xnp.cumprod([1, 2, 3]).tolist()
    [1, 2, 6]
    """
    return _cum(a, axis, dtype, out, "cumprod", O.cumulative_product)


def nancumsum(a, axis=None, dtype=None, out=None):
    """``jnp.nancumsum``: :func:`cumsum` counting NaN as 0.

    >>> import nxpy.numpy as xnp
    >>> xnp.nancumsum([1.0, float("nan"), 2.0]).tolist()
    [1.0, 1.0, 3.0]
    """
    return _cum(a, axis, dtype, out, "nancumsum", O.cumulative_sum, 0)


def nancumprod(a, axis=None, dtype=None, out=None):
    """``jnp.nancumprod``: :func:`cumprod` counting NaN as 1.

    >>> import nxpy.numpy as xnp
    >>> xnp.nancumprod([2.0, float("nan"), 3.0]).tolist()
    [2.0, 2.0, 6.0]
    """
    return _cum(a, axis, dtype, out, "nancumprod", O.cumulative_product, 1)


def _cumulative(x, axis, dtype, include_initial, fn, op, ident):
    x = _t(x, fn, "x")
    if axis is None:
        if x.rank > 1:
            raise ValueError(f"{fn}: the input has rank {x.rank}; axis must be given for "
                             "inputs of rank > 1")
        axis = 0
    if x.rank == 0:
        raise ValueError(f"{fn}: the input must have rank >= 1, got a scalar")
    (ax,) = axes_of(axis, x.rank, fn)
    r = _cum(x, ax, dtype, None, fn, op)
    if include_initial:
        r = O.pad(r, O.tensor(ident, type=r.type),
                  [(1 if i == ax else 0, 0, 0) for i in range(r.rank)])
    return r


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    """``jnp.cumulative_sum`` (the array API's name): :func:`cumsum`, with a leading 0 when
    ``include_initial``; ``axis`` is required for inputs of rank > 1.

    >>> import nxpy.numpy as xnp
    >>> xnp.cumulative_sum([1, 2, 3], include_initial=True).tolist()
    [0, 1, 3, 6]
    """
    return _cumulative(x, axis, dtype, include_initial, "cumulative_sum", O.cumulative_sum, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial: bool = False):
    """``jnp.cumulative_prod``: :func:`cumprod`, with a leading 1 when
    ``include_initial``.

    >>> import nxpy.numpy as xnp
    >>> xnp.cumulative_prod([1, 2, 3], include_initial=True).tolist()
    [1, 1, 2, 6]
    """
    return _cumulative(x, axis, dtype, include_initial, "cumulative_prod",
                       O.cumulative_product, 1)


def _edge(v, x: Tensor, ax: int, fn: str, arg: str) -> Tensor:
    e = _t(v, fn, arg)
    if e.rank == 0:
        shape = tuple(1 if i == ax else d for i, d in enumerate(x.shape))
        e = O.broadcast(e, shape)
    return e


def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None):
    """``jnp.diff``: the ``n``-th differences along ``axis``, after ``prepend`` and
    ``append`` (scalars are broadcast to one slice); bools differ by ``!=``.

    >>> import nxpy.numpy as xnp
    >>> xnp.diff([1, 4, 9, 16]).tolist(), xnp.diff([1, 4, 9, 16], n=2).tolist()
    ([3, 5, 7], [2, 2])
    """
    x = _t(a, "diff")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"diff: expected n to be a non-negative int, got {n!r}")
    if x.rank == 0:
        raise ValueError("diff: requires input that is at least one dimensional")
    (ax,) = axes_of(axis, x.rank, "diff")
    parts = []
    if prepend is not None:
        parts.append(_edge(prepend, x, ax, "diff", "prepend"))
    parts.append(x)
    if append is not None:
        parts.append(_edge(append, x, ax, "diff", "append"))
    if len(parts) > 1:
        t = parts[0].type
        for p in parts[1:]:
            t = T.merge(t, p.type)
        x = O.concatenate([_cast(p, t) for p in parts], axis=ax)
    for _ in range(n):
        m = x.shape[ax]
        if m == 0:
            break
        hi = O.slice_along_axis(x, 1, m - 1, axis=ax)
        lo = O.slice_along_axis(x, 0, m - 1, axis=ax)
        x = O.not_equal(hi, lo) if x.type.is_pred else O.subtract(hi, lo)
    return x


def ediff1d(ary, to_end=None, to_begin=None):
    """``jnp.ediff1d``: the differences of the flattened ``ary``, with ``to_begin`` and
    ``to_end`` (flattened) around them.

    >>> import nxpy.numpy as xnp
    >>> xnp.ediff1d([1, 2, 4], to_begin=0).tolist()
    [0, 1, 2]
    """
    x = _t(ary, "ediff1d", "ary")
    x = O.reshape(x, (x.size,))
    d = O.subtract(O.slice_along_axis(x, 1, builtins.max(x.size - 1, 0)),
                   O.slice_along_axis(x, 0, builtins.max(x.size - 1, 0))) if x.size else x
    parts = []
    if to_begin is not None:
        b = _t(to_begin, "ediff1d", "to_begin")
        parts.append(_cast(O.reshape(b, (b.size,)), d.type))
    parts.append(d)
    if to_end is not None:
        e = _t(to_end, "ediff1d", "to_end")
        parts.append(_cast(O.reshape(e, (e.size,)), d.type))
    return O.concatenate(parts, axis=0) if len(parts) > 1 else d

