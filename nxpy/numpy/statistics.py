"""Order statistics, histograms, searching and sorting with ``jax.numpy``'s names:
``quantile``/``percentile``/``median`` (and their ``nan`` forms), ``histogram``,
``bincount``, ``digitize``, ``searchsorted``, ``interp``, ``unique(size=)``, ``sort``,
``argsort``, ``lexsort``, ``partition``, ``cov``, ``corrcoef`` (issue 28).

They follow JAX's algorithms so that the XLA programs compare: ``quantile`` sorts and
gathers the two neighbours of each quantile; ``searchsorted`` is JAX's bisection of
``ceil(log2(n + 1))`` steps on unsigned ``[low, high)`` bounds, a ``fori_loop`` of
``defn`` (``"scan"``) or written out (``"scan_unrolled"``), or JAX's ``"sort"`` and
``"compare_all"`` methods. Functions whose result's size depends on the values
(``unique`` without ``size``, ``bincount`` without ``length``) need concrete values: they
work eagerly and raise inside ``jit``, as in JAX.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _context
from .. import ops as O
from .. import shape as S
from .. import types as T
from ..defn.kernel import fori_loop
from ..tensor import Tensor
from ._common import axes_of, dtype_of, real_number
from .mathematics import _t
from .reductions import _inexact

__all__ = ["quantile", "percentile", "nanquantile", "nanpercentile", "median", "nanmedian",
           "histogram", "histogram_bin_edges", "bincount", "digitize", "searchsorted",
           "interp", "unique", "unique_values", "unique_counts", "sort", "argsort", "lexsort",
           "partition", "argpartition", "cov", "corrcoef"]

#: Where a function departs from ``jax.numpy`` and why (collected by the coverage table).
NOTES = {
    "quantile": "weights= and method='inverted_cdf' are not supported.",
    "searchsorted": "complex values are not supported.",
    "partition": "a full sort (a valid partition; jnp's order of the other entries is "
                 "unspecified too).",
    "argpartition": "a full stable argsort (a valid partition).",
    "unique": "axis= is not supported; sorted=False sorts anyway.",
    "histogram": "bins must be an int or a 1-D array of edges (no string estimators).",
}

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _cast(x: Tensor, t) -> Tensor:
    return x if x.type == t else O.as_type(x, t)


def _s32(v):
    return O.tensor(v, type="s32")


# ----------------------------------------------------------------------------------------
# Quantiles
# ----------------------------------------------------------------------------------------
def _quantile(a, q, axis, method, keepdims, fn, nan, scale=1.0):
    if method not in _METHODS:
        raise ValueError(f"{fn}: expected method to be one of {', '.join(_METHODS)}, got "
                         f"{method!r}")
    x = _inexact(_t(a, fn, "a"))
    qs = _t(q, fn, "q")
    if x.type.is_complex:
        raise ValueError(f"{fn}: complex input is not supported (the order is undefined)")
    if qs.type.is_complex:
        raise ValueError(f"{fn}: q must be real, got {qs.type}")
    if not S.is_traced(qs):  # NumPy's rule where q is known (jnp clamps; a traced q is not)
        qv = np.asarray(qs.to_numpy(), np.float64)
        if not ((qv >= 0) & (qv <= scale)).all():
            raise ValueError(f"{fn}: expected q to be in the range [0, {scale:g}], got {q!r}")
    t = x.type
    if isinstance(q, Tensor) and qs.type.is_inexact:
        t = T.merge(t, qs.type)
    x, qs = _cast(x, t), _cast(qs, t)
    if scale != 1.0:
        qs = O.divide(qs, O.tensor(scale, type=t))
    if qs.rank > 1:
        raise ValueError(f"{fn}: q must have rank <= 1, got shape {qs.shape}")
    axes = axes_of(axis, x.rank, fn)
    shape0 = x.shape
    kept = [i for i in range(x.rank) if i not in axes]
    kshape = tuple(x.shape[i] for i in kept)
    n = math.prod(x.shape[i] for i in axes)
    if list(kept) + list(axes) != list(range(x.rank)):
        x = O.transpose(x, kept + list(axes))
    x = O.reshape(x, kshape + (n,))
    if n == 0:
        raise ValueError(f"{fn}: cannot take a quantile over an empty axis")
    xs = O.sort(x, axis=x.rank - 1)
    qn = 1 if qs.rank == 0 else qs.shape[0]
    qv = O.reshape(qs, (qn,))
    last = x.rank - 1
    if nan:
        counts = O.sum(O.as_type(O.logical_not(O.is_nan(xs)), t), axes=[last],
                       keep_axes=True)                                   # K + (1,)
        pos = O.multiply(O.reshape(qv, (1,) * len(kshape) + (qn,)),
                         O.subtract(counts, O.tensor(1, type=t)))        # K + (qn,)
        hi_lim = O.max(O.subtract(counts, O.tensor(1, type=t)), O.tensor(0, type=t))
    else:
        pos = O.multiply(qv, O.tensor(n - 1, type=t))                    # (qn,)
        hi_lim = O.tensor(n - 1, type=t)
    low = O.floor(pos)
    high = O.ceil(pos)
    hw = O.subtract(pos, low)
    lw = O.subtract(O.tensor(1, type=t), hw)
    zero = O.tensor(0, type=t)
    low_i = O.as_type(O.max(zero, O.min(low, hi_lim)), "s32")
    high_i = O.as_type(O.max(zero, O.min(high, hi_lim)), "s32")
    if nan:
        lo_v = O.take_along_axis(xs, low_i, axis=last)
        hi_v = O.take_along_axis(xs, high_i, axis=last)
    else:
        lo_v = O.take(xs, low_i, axis=last)                              # K + (qn,)
        hi_v = O.take(xs, high_i, axis=last)
    if method == "linear":
        r = O.add(O.multiply(lo_v, lw), O.multiply(hi_v, hw))
    elif method == "lower":
        r = lo_v
    elif method == "higher":
        r = hi_v
    elif method == "nearest":
        r = O.select(O.less_equal(hw, O.tensor(0.5, type=t)), lo_v, hi_v)
    else:
        r = O.multiply(O.add(lo_v, hi_v), O.tensor(0.5, type=t))
    if not nan:  # NaN sorts last: any NaN along the axis makes the quantile NaN
        has_nan = O.is_nan(O.slice_along_axis(xs, n - 1, 1, axis=last))
        r = O.select(O.broadcast(has_nan, r.shape), O.tensor(math.nan, type=t), r)
    r = O.transpose(r, [r.rank - 1] + list(range(r.rank - 1)))           # (qn,) + K
    out_k = tuple(1 if i in axes else d for i, d in enumerate(shape0)) if keepdims else kshape
    return O.reshape(r, qs.shape + out_k)


def _no_out(out, overwrite_input, fn):
    if out is not None:
        raise TypeError(f"{fn}: out= is not supported (tensors are immutable)")
    if overwrite_input:
        raise ValueError(f"{fn}: overwrite_input=True is not supported (tensors are "
                         "immutable)")


def _no_weights(weights, fn):
    if weights is not None:
        raise NotImplementedError(f"{fn}: weights= (method 'inverted_cdf') is not supported")


def quantile(a, q, axis=None, out=None, overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights=None):
    """``jnp.quantile``: the ``q``-th quantiles (``q`` in [0, 1], a scalar or a vector,
    whose axis comes first in the result) over ``axis``; ``method`` is ``"linear"``,
    ``"lower"``, ``"higher"``, ``"midpoint"`` or ``"nearest"``. NaN in a slice makes its
    quantile NaN.

    >>> import nxpy.numpy as xnp
    >>> xnp.quantile([1.0, 2.0, 3.0, 4.0], 0.5).item()
    2.5
    >>> xnp.quantile([[1.0, 2.0], [3.0, 5.0]], [0.0, 1.0], axis=1).tolist()
    [[1.0, 3.0], [2.0, 5.0]]
    """
    _no_out(out, overwrite_input, "quantile")
    _no_weights(weights, "quantile")
    return _quantile(a, q, axis, method, keepdims, "quantile", False)


def percentile(a, q, axis=None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights=None):
    """``jnp.percentile``: :func:`quantile` with ``q`` in percent.

    >>> import nxpy.numpy as xnp
    >>> xnp.percentile([1.0, 2.0, 3.0, 4.0, 5.0], 25).item()
    2.0
    """
    _no_out(out, overwrite_input, "percentile")
    _no_weights(weights, "percentile")
    return _quantile(a, q, axis, method, keepdims, "percentile", False, 100.0)


def nanquantile(a, q, axis=None, out=None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights=None):
    """``jnp.nanquantile``: :func:`quantile` of the entries that are not NaN.

    >>> import nxpy.numpy as xnp
    >>> xnp.nanquantile([1.0, float("nan"), 3.0], 0.5).item()
    2.0
    """
    _no_out(out, overwrite_input, "nanquantile")
    _no_weights(weights, "nanquantile")
    return _quantile(a, q, axis, method, keepdims, "nanquantile", True)


def nanpercentile(a, q, axis=None, out=None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights=None):
    """``jnp.nanpercentile``: :func:`nanquantile` with ``q`` in percent.

    >>> import nxpy.numpy as xnp
    >>> xnp.nanpercentile([1.0, float("nan"), 3.0], 50).item()
    2.0
    """
    _no_out(out, overwrite_input, "nanpercentile")
    _no_weights(weights, "nanpercentile")
    return _quantile(a, q, axis, method, keepdims, "nanpercentile", True, 100.0)


def median(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """``jnp.median``: the middle value over ``axis`` (the mean of the two middle ones for
    an even count; NaN in a slice gives NaN).

    >>> import nxpy.numpy as xnp
    >>> xnp.median([3.0, 1.0, 4.0, 2.0]).item()
    2.5
    """
    _no_out(out, overwrite_input, "median")
    return _quantile(a, 0.5, axis, "midpoint", keepdims, "median", False)


def nanmedian(a, axis=None, out=None, overwrite_input: bool = False, keepdims: bool = False):
    """``jnp.nanmedian``: :func:`median` of the entries that are not NaN.

    >>> import nxpy.numpy as xnp
    >>> xnp.nanmedian([3.0, float("nan"), 1.0]).item()
    2.0
    """
    _no_out(out, overwrite_input, "nanmedian")
    return _quantile(a, 0.5, axis, "midpoint", keepdims, "nanmedian", True)


# ----------------------------------------------------------------------------------------
# Searching
# ----------------------------------------------------------------------------------------
def _lt(x: Tensor, y: Tensor) -> Tensor:
    """``x < y`` in sort order (NaN above everything)."""
    if not x.type.is_float:
        return O.less(x, y)
    return O.logical_or(O.less(x, y), O.logical_and(O.logical_not(O.is_nan(x)), O.is_nan(y)))


def _le(x: Tensor, y: Tensor) -> Tensor:
    """``x <= y`` in sort order (NaN above everything, equal to itself)."""
    if not x.type.is_float:
        return O.less_equal(x, y)
    return O.logical_or(O.less_equal(x, y), O.is_nan(y))


_KEY = {16: "s16", 32: "s32", 64: "s64"}


def _sort_keys(x: Tensor) -> Tensor:
    """Integers that order as ``x`` sorts (a float's bits, negatives' magnitude bits
    flipped; NaN above everything, -0.0 equal to 0.0, as JAX's sort comparator), so that
    the search compares with one integer comparison."""
    if not x.type.is_float:
        return x
    zero = O.tensor(0, type=x.type)
    x = O.select(O.is_nan(x), O.tensor(math.nan, type=x.type),
                 O.select(O.equal(x, zero), zero, x))
    kt = _KEY[x.type.bits]
    k = O.bitcast(x, kt)
    sign = O.right_shift(k, O.tensor(x.type.bits - 1, type=kt))
    return O.bitwise_xor(k, O.bitwise_and(sign, O.tensor(2 ** (x.type.bits - 1) - 1, type=kt)))


def _search_scan(a: Tensor, v: Tensor, side: str, unrolled: bool = False) -> Tensor:
    """JAX's ``"scan"`` method: a bisection of ``ceil(log2(n + 1))`` steps on an unsigned
    ``[low, high)`` pair per query (``mid = low + (high - low) // 2``; the query goes left
    when it sorts at or before ``a[mid]`` for ``side="left"``, before it for ``"right"``),
    as ``defn``'s ``fori_loop`` (``"scan_unrolled"``: the same steps written out); the
    result is ``high``. Entries compare as JAX's sort comparator orders them, by integer
    sort keys: the queries' made once, the probed entry's at each step (as JAX
    canonicalizes it there; a key array of ``a`` made first costs a pass more)."""
    n = a.shape[0]
    if n == 0:
        return O.fill(v, 0, type="s32") if v.rank else _s32(0)
    v = _sort_keys(v)
    go_left = O.less_equal if side == "left" else O.less  # v against a[mid]
    ut = "u32" if n < 2 ** 32 else "u64"
    one = O.tensor(1, type=ut)

    def step(_, state):
        low, high = state
        mid = O.add(low, O.right_shift(O.subtract(high, low), one))
        left = go_left(v, _sort_keys(O.take(a, mid, axis=0)))
        return O.select(left, low, mid), O.select(left, mid, high)

    state = (O.fill(v, 0, type=ut) if v.rank else O.tensor(0, type=ut),
             O.fill(v, n, type=ut) if v.rank else O.tensor(n, type=ut))
    levels = n.bit_length()  # ceil(log2(n + 1))
    if unrolled:
        for i in range(levels):
            state = step(i, state)
    else:
        state = fori_loop(0, levels, step, state)
    return O.as_type(state[1], "s32")


def _search_scan_unrolled(a: Tensor, v: Tensor, side: str) -> Tensor:
    return _search_scan(a, v, side, unrolled=True)


def _rank(x: Tensor) -> Tensor:
    n = x.shape[0]
    idx = O.iota((n,), type="s32")
    order = O.argsort(x, axis=0, stable=True, type="s32")
    return O.indexed_put(O.fill(idx, 0), O.reshape(order, (n, 1)), idx)


def _search_sort(a: Tensor, v: Tensor, side: str) -> Tensor:
    q = O.reshape(v, (v.size,))
    if side == "left":
        index = O.slice_along_axis(_rank(O.concatenate([q, a], axis=0)), 0, q.size)
    else:
        index = O.slice_along_axis(_rank(O.concatenate([a, q], axis=0)), a.shape[0], q.size)
    return O.reshape(O.subtract(index, _rank(q)), v.shape)


def _search_compare_all(a: Tensor, v: Tensor, side: str) -> Tensor:
    op = _lt if side == "left" else _le
    av = O.reshape(a, a.shape + (1,) * v.rank)
    vv = O.reshape(v, (1,) + v.shape)
    cmp = op(O.broadcast(av, a.shape + v.shape), O.broadcast(vv, a.shape + v.shape))
    return O.sum(O.as_type(cmp, "s32"), axes=[0])


def searchsorted(a, v, side: str = "left", sorter=None, *, method: str = "scan"):
    """``jnp.searchsorted``: where to insert each entry of ``v`` in the sorted vector ``a``
    to keep it sorted (``side="left"``: before equal entries; ``"right"``: after), as s32;
    ``sorter`` is a permutation that sorts ``a``. ``method`` is JAX's: ``"scan"`` (a binary
    search as a ``fori_loop``, the default), ``"scan_unrolled"`` (its steps written out),
    ``"sort"`` (a co-sort) or ``"compare_all"`` (every pair compared); all give the same
    result.

    >>> import nxpy.numpy as xnp
    >>> xnp.searchsorted([1, 2, 2, 3], [2, 0, 5]).tolist()
    [1, 0, 4]
    >>> xnp.searchsorted([1, 2, 2, 3], [2, 0, 5], side="right", method="sort").tolist()
    [3, 0, 4]
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: expected side to be 'left' or 'right', got {side!r}")
    impls = {"scan": _search_scan, "scan_unrolled": _search_scan_unrolled,
             "sort": _search_sort, "compare_all": _search_compare_all}
    if method not in impls:
        raise ValueError(f"searchsorted: expected method to be one of {', '.join(impls)}, "
                         f"got {method!r}")
    x = _t(a, "searchsorted", "a")
    q = _t(v, "searchsorted", "v")
    if x.rank != 1:
        raise ValueError(f"searchsorted: a should be 1-dimensional, got shape {x.shape}")
    t = T.merge(x.type, q.type)
    if t.is_complex:
        raise TypeError("searchsorted: complex values are not supported")
    x, q = _cast(x, t), _cast(q, t)
    if sorter is not None:
        s = _t(sorter, "searchsorted", "sorter")
        if s.shape != x.shape or s.type.is_inexact or s.type.is_pred:
            raise ValueError(f"searchsorted: sorter must be integer indices of a's shape "
                             f"{x.shape}, got {s.type} {s.shape}")
        x = O.take(x, s, axis=0)
    return impls[method](x, q, side)


def digitize(x, bins, right: bool = False, *, method=None):
    """``jnp.digitize``: the index of the bin of each entry of ``x`` (``bins`` increasing
    or decreasing; ``right``: bins closed on the right), as s32.

    >>> import nxpy.numpy as xnp
    >>> xnp.digitize([0.5, 1.0, 2.5], [0.0, 1.0, 2.0]).tolist()
    [1, 2, 3]
    """
    xs = _t(x, "digitize", "x")
    b = _t(bins, "digitize", "bins")
    if b.rank != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape {b.shape}")
    if b.shape[0] == 0:
        return O.fill(xs, 0, type="s32") if xs.rank else _s32(0)
    side = "left" if right else "right"
    kw = {} if method is None else {"method": method}
    n = b.shape[0]
    first = O.slice_along_axis(b, 0, 1)
    lastb = O.slice_along_axis(b, n - 1, 1)
    up = O.reshape(O.greater_equal(lastb, first), ())
    fwd = searchsorted(b, xs, side=side, **kw)
    back = O.subtract(_s32(n), searchsorted(O.reverse(b, [0]), xs, side=side, **kw))
    return O.select(up, fwd, back)


def interp(x, xp, fp, left=None, right=None, period=None):
    """``jnp.interp``: the piecewise-linear interpolant through ``(xp, fp)`` (``xp``
    increasing) at ``x``; ``left``/``right`` replace the values outside (default the end
    values; ``"extrapolate"`` extends the end segments); ``period`` makes it periodic.

    >>> import nxpy.numpy as xnp
    >>> xnp.interp([0.5, 1.5, 3.0], [0.0, 1.0, 2.0], [0.0, 10.0, 20.0]).tolist()
    [5.0, 15.0, 20.0]
    """
    xs, xpt, fpt = (_inexact(_t(v, "interp", n)) for v, n in ((x, "x"), (xp, "xp"),
                                                               (fp, "fp")))
    if xpt.rank != 1 or fpt.rank != 1 or xpt.shape != fpt.shape:
        raise ValueError(f"interp: xp and fp must be vectors of one length, got shapes "
                         f"{xpt.shape} and {fpt.shape}")
    if xpt.shape[0] == 0:
        raise ValueError("interp: xp and fp must not be empty")
    t = T.merge(T.merge(xs.type, xpt.type), T.to_real(fpt.type))
    xs, xpt = _cast(xs, t), _cast(xpt, t)
    fpt = _cast(fpt, T.merge(t, fpt.type))
    if period is not None:
        if np.ndim(period) != 0:
            raise ValueError(f"interp: period must be a scalar, got {period!r}")
        p = O.abs(O.as_type(_t(period, "interp", "period"), t))
        if not S.is_traced(p) and not p.item() != 0:  # NumPy's rule where it is known
            raise ValueError(f"interp: expected period to be a non-zero number, got {period!r}")
        xs = O.mod(xs, p)
        xpt = O.mod(xpt, p)
        order = O.argsort(xpt, axis=0, stable=True)
        xpt, fpt = O.take(xpt, order, axis=0), O.take(fpt, order, axis=0)
        m = xpt.shape[0]
        xpt = O.concatenate([O.subtract(O.slice_along_axis(xpt, m - 1, 1), p), xpt,
                             O.add(O.slice_along_axis(xpt, 0, 1), p)], axis=0)
        fpt = O.concatenate([O.slice_along_axis(fpt, m - 1, 1), fpt,
                             O.slice_along_axis(fpt, 0, 1)], axis=0)
    m = xpt.shape[0]
    if m == 1:
        i = O.fill(xs, 1, type="s32") if xs.rank else _s32(1)
        xpt = O.concatenate([xpt, xpt], axis=0)
        fpt = O.concatenate([fpt, fpt], axis=0)
        m = 2
    else:
        i = O.clip(searchsorted(xpt, xs, side="right"), _s32(1), _s32(m - 1))
    im1 = O.subtract(i, _s32(1))
    f0, f1 = O.take(fpt, im1, axis=0), O.take(fpt, i, axis=0)
    x0, x1 = O.take(xpt, im1, axis=0), O.take(xpt, i, axis=0)
    df = O.subtract(f1, f0)
    dx = O.subtract(x1, x0)
    delta = O.subtract(xs, x0)
    eps = float(np.spacing(T.to_real(t).dtype.type(np.finfo(np.float32).eps))) \
        if t.bits <= 32 else float(np.spacing(np.finfo(np.float64).eps))
    dx0 = O.less_equal(O.abs(dx), O.tensor(eps, type=t))
    safe = O.select(dx0, O.tensor(1, type=t), dx)
    f = O.select(dx0, f0, O.add(f0, O.multiply(_cast(O.divide(delta, safe), fpt.type), df)))
    if period is None:
        first_x, last_x = O.slice_along_axis(xpt, 0, 1), O.slice_along_axis(xpt, m - 1, 1)
        first_x, last_x = O.reshape(first_x, ()), O.reshape(last_x, ())
        if not (isinstance(left, str) and left == "extrapolate"):
            lv = O.reshape(O.slice_along_axis(fpt, 0, 1), ()) if left is None else \
                O.as_type(_t(left, "interp", "left"), fpt.type)
            f = O.select(O.less(xs, first_x), lv, f)
        if not (isinstance(right, str) and right == "extrapolate"):
            rv = O.reshape(O.slice_along_axis(fpt, m - 1, 1), ()) if right is None else \
                O.as_type(_t(right, "interp", "right"), fpt.type)
            f = O.select(O.greater(xs, last_x), rv, f)
    return f


# ----------------------------------------------------------------------------------------
# Histograms and counts
# ----------------------------------------------------------------------------------------
def _concrete(x: Tensor, fn: str, what: str):
    if _context.tracing():
        raise TypeError(f"{fn}: {what} needs concrete values, but the input is traced inside "
                        "jit/defn; pass it as an argument")
    return x.to_numpy()


def bincount(x, weights=None, minlength: int = 0, *, length=None):
    """``jnp.bincount``: how many times each value ``0 .. length - 1`` occurs in the
    non-negative integers ``x`` (negative values count as 0, values ``>= length`` are
    dropped), or the sum of their ``weights``. ``length`` defaults to
    ``max(minlength, max(x) + 1)``, which needs concrete values: inside ``jit`` pass it.

    >>> import nxpy.numpy as xnp
    >>> xnp.bincount([0, 1, 1, 3]).tolist(), xnp.bincount([0, 1], length=4).tolist()
    ([1, 2, 0, 1], [1, 1, 0, 0])
    """
    xs = _t(x, "bincount", "x")
    if not (xs.type.is_int or xs.type.is_pred) or xs.type.is_inexact:
        raise TypeError(f"bincount: expected x to have an integer type, got {xs.type}")
    if xs.rank != 1:
        raise ValueError(f"bincount: x must be 1-dimensional, got shape {xs.shape}")
    if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)) \
            or minlength < 0:
        raise ValueError(f"bincount: minlength must be a non-negative int, got {minlength!r}")
    if length is None:
        vals = _concrete(xs, "bincount", "length=None")
        length = builtins.max(int(minlength), int(vals.max()) + 1 if vals.size else 0)
    elif isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
        raise ValueError(f"bincount: length must be a non-negative int, got {length!r}")
    xi = _cast(xs, T.S32)
    idx = O.max(xi, _s32(0))
    if weights is None:
        w = O.fill(xi, 1, type="s32")
    else:
        w = _t(weights, "bincount", "weights")
        if w.shape != xs.shape:
            raise ValueError(f"bincount: the shape of weights {w.shape} must match the shape "
                             f"of x {xs.shape}")
    target = O.tensor(np.zeros(int(length), T.parse(w.type).dtype), type=w.type)
    if xs.size == 0 or length == 0:
        return target
    return O.indexed_add(target, O.reshape(idx, (xs.size, 1)), w)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """``jnp.histogram_bin_edges``: ``bins`` (an int) equal bins over ``range`` (default
    the data's min and max; an empty range is widened by 0.5 each way), or ``bins`` given
    as edges.

    >>> import nxpy.numpy as xnp
    >>> xnp.histogram_bin_edges([0.0, 1.0, 2.0], bins=4).tolist()
    [0.0, 0.5, 1.0, 1.5, 2.0]
    """
    x = _t(a, "histogram_bin_edges", "a")
    t = T.to_floating(x.type) if not x.type.is_inexact else x.type
    if S.as_int(bins) is None:
        e = _t(bins, "histogram_bin_edges", "bins")
        if e.rank == 0:  # a float, a bool, a traced count: neither a count nor edges
            S.not_traced(bins, "histogram_bin_edges: bins")
            raise TypeError(f"histogram_bin_edges: expected bins to be an int or a 1-D array "
                            f"of edges (no string estimators), got {bins!r} "
                            f"({type(bins).__name__})")
        if e.rank != 1:
            raise ValueError(f"histogram_bin_edges: bins must be an int or a 1-D array of "
                             f"edges, got shape {e.shape}")
        return _inexact(e)
    bins = S.as_int(bins)
    if bins < 1:
        raise ValueError(f"histogram_bin_edges: bins must be positive, got {bins}")
    x = _cast(x, t)
    if range is None:
        if x.size == 0:
            lo, hi = O.tensor(0, type=t), O.tensor(1, type=t)
        else:
            lo, hi = O.reduce_min(x), O.reduce_max(x)
    else:
        if not isinstance(range, (tuple, list)):
            raise TypeError(f"histogram: expected range to be a (min, max) pair or None, got "
                            f"{range!r}")
        if len(range) != 2:
            raise ValueError(f"histogram: expected range to be a (min, max) pair, got "
                             f"{range!r}")
        lo = O.as_type(_t(range[0], "histogram", "range"), t)
        hi = O.as_type(_t(range[1], "histogram", "range"), t)
        if not (S.is_traced(lo) or S.is_traced(hi)) and not lo.item() <= hi.item():
            raise ValueError(f"histogram: expected range's max to be at least its min, got "
                             f"{range!r}")  # NumPy's rule where the range is known
    empty = O.equal(lo, hi)
    half = O.tensor(0.5, type=t)
    lo, hi = O.select(empty, O.subtract(lo, half), lo), O.select(empty, O.add(hi, half), hi)
    s = O.divide(O.iota((bins + 1,), type=t), O.tensor(bins, type=t))
    return O.add(O.multiply(lo, O.subtract(O.tensor(1, type=t), s)), O.multiply(hi, s))


def histogram(a, bins=10, range=None, weights=None, density=None):
    """``jnp.histogram``: ``(counts, edges)`` of the flattened ``a`` over
    :func:`histogram_bin_edges`; each bin holds ``[edge_i, edge_i+1)``, the last one its
    right edge too; values outside are dropped. ``weights`` sum instead of counting;
    ``density`` normalizes to a probability density.

    >>> import nxpy.numpy as xnp
    >>> counts, edges = xnp.histogram([0.0, 0.5, 1.0, 2.0], bins=2)
    >>> counts.tolist(), edges.tolist()
    ([2.0, 2.0], [0.0, 1.0, 2.0])
    """
    x = _t(a, "histogram", "a")
    x = O.reshape(x, (x.size,))
    edges = histogram_bin_edges(x, bins, range, weights)
    ne = edges.shape[0]
    xf = _cast(_inexact(x), T.merge(_inexact(x).type, edges.type))
    edges = _cast(edges, xf.type)
    idx = searchsorted(edges, xf, side="right")
    last = O.reshape(O.slice_along_axis(edges, ne - 1, 1), ())
    idx = O.select(O.equal(xf, last), _s32(ne - 1), idx)
    if weights is None:
        w = O.fill(x, 1)
    else:
        w = _t(weights, "histogram", "weights")
        if w.shape != (x.size,):
            w = O.reshape(w, (w.size,))
        if w.size != x.size:
            raise ValueError("histogram: weights should have the same shape as a")
    target = O.tensor(np.zeros(ne, T.parse(w.type).dtype), type=w.type)
    counts = O.indexed_add(target, O.reshape(idx, (x.size, 1)), w) if x.size else target
    counts = O.slice_along_axis(counts, 1, ne - 1)
    if density:
        cf = _inexact(counts)
        widths = O.subtract(O.slice_along_axis(edges, 1, ne - 1),
                            O.slice_along_axis(edges, 0, ne - 1))
        counts = O.divide(O.divide(cf, _cast(widths, cf.type)), O.sum(cf))
    return counts, edges


# ----------------------------------------------------------------------------------------
# unique
# ----------------------------------------------------------------------------------------
def _nonzero(mask: Tensor, size: int) -> Tensor:
    """The positions of the first ``size`` true entries of the vector ``mask``, padded
    with 0 (``jnp.nonzero(mask, size=size)[0]``)."""
    n = mask.shape[0]
    pos = O.subtract(O.cumulative_sum(O.as_type(mask, "s32"), axis=0), _s32(1))
    dest = O.select(mask, pos, _s32(size))  # size: out of bounds, dropped
    return O.indexed_put(O.tensor(np.zeros(size, np.int32), type="s32"),
                         O.reshape(dest, (n, 1)), O.iota((n,), type="s32"))


def unique(ar, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis=None, *, equal_nan: bool = True, size=None,
           fill_value=None, sorted: bool = True):
    """``jnp.unique``: the sorted distinct values of the flattened ``ar``; with
    ``return_index``, ``return_inverse`` and ``return_counts`` also the index of each
    value's first occurrence, the index of each entry's value, and the counts. ``size``
    fixes the result's length (padded with ``fill_value``, default the minimum), which
    ``jit`` needs; without it the values must be concrete (eager), as in JAX.

    >>> import nxpy.numpy as xnp
    >>> xnp.unique([3, 1, 3, 2]).tolist()
    [1, 2, 3]
    >>> values, counts = xnp.unique([3, 1, 3], return_counts=True, size=4, fill_value=0)
    >>> values.tolist(), counts.tolist()
    ([1, 3, 0, 0], [1, 2, 0, 0])
    """
    if axis is not None:
        raise NotImplementedError("unique: axis= is not supported")
    x = _t(ar, "unique", "ar")
    shape = x.shape
    x = O.reshape(x, (x.size,))
    n = x.size
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer))
                             or size < 0):
        raise ValueError(f"unique: size must be a non-negative int, got {size!r}")
    if n == 0 and size and fill_value is None:
        raise ValueError("unique: for zero-sized input with nonzero size argument, "
                         "fill_value must be specified")
    if n == 0:
        perm = O.tensor(np.zeros(0, np.int32), type="s32")
        aux, mask = x, O.tensor(np.zeros(0, bool))
    else:
        perm = O.argsort(x, axis=0, stable=True, type="s32")
        aux = O.take(x, perm, axis=0)
        hi, lo = O.slice_along_axis(aux, 1, n - 1), O.slice_along_axis(aux, 0, n - 1)
        neq = O.not_equal(hi, lo)
        if aux.type.is_inexact and equal_nan:
            neq = O.logical_and(neq, O.logical_not(O.logical_and(O.is_nan(hi), O.is_nan(lo))))
        mask = O.concatenate([O.tensor([True]), neq], axis=0)
    if size is None:
        _concrete(x, "unique", "size=None")
        mvals = mask.to_numpy()
        size = int(mvals.sum())
        fill_value = None
    ind = _nonzero(mask, size) if n else O.tensor(np.zeros(size, np.int32), type="s32")
    if n:
        result = O.take(aux, ind, axis=0)
    else:
        result = O.tensor(np.zeros(size, x.type.dtype), type=x.type)
    if fill_value is not None and size:
        fv = O.as_type(_t(fill_value, "unique", "fill_value"), result.type)
        total = O.sum(O.as_type(mask, "s32")) if n else _s32(0)
        valid = O.less(O.iota((size,), type="s32"), total)
        result = O.select(valid, result, O.broadcast(fv, result.shape))
    ret = [result]
    if return_index:
        ret.append(O.take(perm, ind, axis=0) if n else perm)
    if return_inverse:
        if n:
            imask = O.subtract(O.cumulative_sum(O.as_type(mask, "s32"), axis=0), _s32(1))
            inv = O.indexed_put(O.fill(imask, 0), O.reshape(perm, (n, 1)), imask)
        else:
            inv = O.tensor(np.zeros(0, np.int32), type="s32")
        ret.append(O.reshape(inv, shape) if len(shape) else inv)
    if return_counts:
        if n:
            idx = _nonzero(mask, size + 1)
            rest = O.slice_along_axis(idx, 1, size)
            rest = O.select(O.not_equal(rest, _s32(0)), rest, _s32(n))
            idx = O.concatenate([O.slice_along_axis(idx, 0, 1), rest], axis=0)
            ret.append(O.subtract(O.slice_along_axis(idx, 1, size),
                                  O.slice_along_axis(idx, 0, size)))
        else:
            ret.append(O.tensor(np.zeros(size, np.int32), type="s32"))
    return ret[0] if len(ret) == 1 else tuple(ret)


def unique_values(x, /, *, size=None, fill_value=None):
    """``jnp.unique_values``: :func:`unique` (the array API's name).

    >>> import nxpy.numpy as xnp
    >>> xnp.unique_values([2, 1, 2]).tolist()
    [1, 2]
    """
    return unique(x, size=size, fill_value=fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
    """``jnp.unique_counts``: ``(values, counts)`` of :func:`unique`.

    >>> import nxpy.numpy as xnp
    >>> [t.tolist() for t in xnp.unique_counts([2, 1, 2])]
    [[1, 2], [1, 2]]
    """
    return unique(x, return_counts=True, size=size, fill_value=fill_value)


# ----------------------------------------------------------------------------------------
# Sorting
# ----------------------------------------------------------------------------------------
def _sort_axis(a, axis, fn):
    x = _t(a, fn, "a")
    if axis is None:
        return O.reshape(x, (x.size,)), 0
    if x.rank == 0:
        raise ValueError(f"{fn}: axis {axis} is out of bounds for a scalar")
    (ax,) = axes_of(axis, x.rank, fn)
    return x, ax


def _no_kind(kind, order, fn):
    if order is not None:
        raise TypeError(f"{fn}: order= is not supported")
    if kind is not None:
        raise TypeError(f"{fn}: kind= is not supported (use stable=)")


def sort(a, axis=-1, *, kind=None, order=None, stable: bool = True, descending: bool = False):
    """``jnp.sort``: the entries sorted along ``axis`` (None: of the flattened tensor), NaN
    last (first when ``descending``).

    >>> import nxpy.numpy as xnp
    >>> xnp.sort([[3, 1], [2, 5]]).tolist(), xnp.sort([3, 1, 2], descending=True).tolist()
    ([[1, 3], [2, 5]], [3, 2, 1])
    """
    _no_kind(kind, order, "sort")
    x, ax = _sort_axis(a, axis, "sort")
    if x.rank == 0:
        return x
    return O.sort(x, axis=ax, direction="desc" if descending else "asc", stable=True)


def argsort(a, axis=-1, *, kind=None, order=None, stable: bool = True,
            descending: bool = False, dtype=None):
    """``jnp.argsort``: the indices that sort ``a`` along ``axis`` (stable: equal entries
    keep their order, also when ``descending``), as s32.

    >>> import nxpy.numpy as xnp
    >>> xnp.argsort([3, 1, 2]).tolist(), xnp.argsort([1, 1, 2], descending=True).tolist()
    ([1, 2, 0], [2, 0, 1])
    """
    _no_kind(kind, order, "argsort")
    t = dtype_of(dtype, "argsort") or T.S32
    x, ax = _sort_axis(a, axis, "argsort")
    if x.rank == 0:
        return O.tensor(0, type=t)
    return O.argsort(x, axis=ax, direction="desc" if descending else "asc", stable=True,
                     type=t)


def lexsort(keys, axis: int = -1, *, batch_size=None):
    """``jnp.lexsort``: the indices that sort by several keys, the last key primary
    (``batch_size``, jax 0.12's, is accepted and changes nothing).

    >>> import nxpy.numpy as xnp
    >>> xnp.lexsort([[1, 0, 2], [0, 0, 1]]).tolist()
    [1, 0, 2]
    """
    if isinstance(keys, Tensor):
        ks = [O.squeeze(O.slice_along_axis(keys, i, 1), [0]) for i in builtins.range(
            keys.shape[0])] if keys.rank else []
    else:
        ks = [_t(k, "lexsort", "keys") for k in keys]
    if not ks:
        raise TypeError("lexsort: need sequence of keys with len > 0")
    shape = ks[0].shape
    if builtins.any(k.shape != shape for k in ks):
        raise ValueError(f"lexsort: all keys need the same shape, got "
                         f"{[k.shape for k in ks]}")
    if len(shape) == 0:
        return _s32(0)
    (ax,) = axes_of(axis, len(shape), "lexsort")
    perm = O.iota(shape, axis=ax, type="s32")
    for k in ks:
        kp = O.take_along_axis(k, perm, axis=ax)
        perm = O.take_along_axis(perm, O.argsort(kp, axis=ax, stable=True, type="s32"),
                                 axis=ax)
    return perm


def _kth(kth, x: Tensor, ax: int, fn: str):
    if isinstance(kth, bool) or not isinstance(kth, (int, np.integer)):
        raise TypeError(f"{fn}: expected kth to be an int, got {kth!r}")
    n = x.shape[ax]
    if not -n <= kth < n:
        raise ValueError(f"{fn}: kth {kth} is out of bounds for an axis of size {n}")


def partition(a, kth: int, axis: int = -1):
    """``jnp.partition``: ``a`` with the ``kth`` entry along ``axis`` where sorting would
    put it, smaller ones before it and larger ones after (here: sorted).

    >>> import nxpy.numpy as xnp
    >>> xnp.partition([3, 1, 2, 0], 2)[2].item()
    2
    """
    x, ax = _sort_axis(a, axis, "partition")
    _kth(kth, x, ax, "partition")
    return O.sort(x, axis=ax, stable=True)


def argpartition(a, kth: int, axis: int = -1):
    """``jnp.argpartition``: the indices that :func:`partition` ``a``.

    >>> import nxpy.numpy as xnp
    >>> xnp.argpartition([3, 1, 2, 0], 2)[2].item()
    2
    """
    x, ax = _sort_axis(a, axis, "argpartition")
    _kth(kth, x, ax, "argpartition")
    return O.argsort(x, axis=ax, stable=True, type="s32")


# ----------------------------------------------------------------------------------------
# Covariance
# ----------------------------------------------------------------------------------------
def _rows(m, rowvar, fn, arg):
    x = _t(m, fn, arg)
    if x.rank > 2:
        raise ValueError(f"{fn}: {arg} has more than 2 dimensions ({x.shape})")
    x = O.reshape(x, (1, x.size)) if x.rank < 2 else x
    return x if rowvar else O.transpose(x)


def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None,
        aweights=None, dtype=None):
    """``jnp.cov``: the covariance matrix of the variables in the rows of ``m`` (columns
    unless ``rowvar``) and of ``y``; normalized by ``N - 1`` (``N`` when ``bias``, or
    ``N - ddof``), with frequency and analytic weights.

    >>> import nxpy.numpy as xnp
    >>> xnp.cov([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    x = _rows(m, rowvar, "cov", "m")
    if y is not None:
        x = O.concatenate([x, _cast(_rows(y, rowvar, "cov", "y"), x.type)]
                          if x.type == _t(y, "cov", "y").type else
                          [_inexact(x), _cast(_inexact(_rows(y, rowvar, "cov", "y")),
                                              _inexact(x).type)], axis=0)
    t = dtype_of(dtype, "cov")
    x = _inexact(x) if t is None else _cast(x, t)
    if ddof is None:
        ddof = 1 if not bias else 0
    ddof = real_number(ddof, "cov", "ddof")  # a Python branch reads it: no tensor
    w = None
    if fweights is not None:
        fw = _t(fweights, "cov", "fweights")
        if fw.rank != 1 or fw.shape[0] != x.shape[1]:
            raise ValueError(f"cov: fweights must be a vector of {x.shape[1]} entries")
        w = _cast(fw, x.type)
    if aweights is not None:
        aw = _t(aweights, "cov", "aweights")
        if aw.rank != 1 or aw.shape[0] != x.shape[1]:
            raise ValueError(f"cov: aweights must be a vector of {x.shape[1]} entries")
        aw = _cast(aw, x.type)
        w = aw if w is None else O.multiply(w, aw)
    nobs = x.shape[1]
    if w is None:
        avg = O.mean(x, axes=[1], keep_axes=True)
        f = O.tensor(nobs - ddof, type=T.to_real(x.type))
    else:
        wsum = O.sum(w)
        avg = O.divide(O.sum(O.multiply(x, w), axes=[1], keep_axes=True), wsum)
        if ddof == 0:
            f = wsum
        elif aweights is None:
            f = O.subtract(wsum, O.tensor(ddof, type=wsum.type))
        else:
            f = O.subtract(wsum, O.divide(O.multiply(O.tensor(ddof, type=wsum.type),
                                                     O.sum(O.multiply(w, aw))), wsum))
    xc = O.subtract(x, avg)
    xt = xc if w is None else O.multiply(xc, w)
    xt = O.conjugate(xt) if xt.type.is_complex else xt
    c = O.divide(O.dot(xc, [1], xt, [1]), f)
    return O.squeeze(c) if 1 in c.shape else c


def corrcoef(x, y=None, rowvar: bool = True, dtype=None):
    """``jnp.corrcoef``: Pearson's correlation coefficients (:func:`cov` scaled to unit
    diagonal, clipped to [-1, 1]).

    >>> import nxpy.numpy as xnp
    >>> xnp.corrcoef([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if c.rank == 0:
        return O.divide(c, c)
    d = O.take_diagonal(c)
    sd = O.sqrt(O.real(d) if d.type.is_complex else d)
    sd = _cast(sd, c.type)
    c = O.divide(O.divide(c, O.reshape(sd, (sd.shape[0], 1))), O.reshape(sd, (1, sd.shape[0])))
    if c.type.is_complex:
        one = O.tensor(1, type=T.to_real(c.type))
        return O.complex(O.clip(O.real(c), O.negate(one), one), O.clip(O.imag(c),
                                                                        O.negate(one), one))
    one = O.tensor(1, type=c.type)
    return O.clip(c, O.negate(one), one)
