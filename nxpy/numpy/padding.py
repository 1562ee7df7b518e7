"""``jnp.pad`` with every mode: constant, edge, linear_ramp, maximum, mean, median,
minimum, reflect and symmetric (``reflect_type`` even or odd), wrap, empty, and a callable
(issue 28, part 1). Pad widths are static; values may be traced."""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .. import shape as S
from ..tensor import Tensor
from .creation import linspace
from .manipulation import _cut, _join, _static, _t, moveaxis

__all__ = ["pad"]

#: departures from ``jax.numpy`` (collected by :mod:`nxpy.numpy.coverage`)
NOTES = {
    "pad": "a callable `mode` is called once per 1-D slice (a Python loop, as "
           "`apply_along_axis` without `vmap`): for small arrays",
}

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


def _widths(v, nd, name):
    """``(before, after)`` integer pairs, one per dim (a float is a TypeError, as NumPy's)."""
    return [tuple(S.integers((b, a), f"pad: {name}")) for b, a in _pairs(v, nd, name)]


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
    widths = _widths(pad_width, nd, "pad_width")
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
        lengths = None if sl is None else _widths(sl, nd, "stat_length")
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
    widths = _widths(pad_width, x.rank, "pad_width")
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
