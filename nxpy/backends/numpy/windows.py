"""The NumPy backend's kernels for the window family: window_min, window_product,
window_reduce, reduce (with a function) and select-and-scatter (window_scatter_max/min).

A reduction function reaches ``reduce``/``window_reduce`` as ``fun(x, acc)`` over tensors
of this backend. A function marked ``fun.nxpy_elementwise = True`` (the Evaluator marks the
traced functions it can run on whole arrays) is called once per window element on arrays
of the output's shape; any other function is called on scalars, element by element, in
row-major order, as Nx's BinaryBackend does.
"""
from __future__ import annotations

import itertools

import numpy as np

from ... import types as T
from ...tensor import Tensor
from ...types import compute_dtype, convert
from . import libm
from .base import BaseKernels

__all__ = ["WindowKernels"]


def _windows(a, window_dimensions, strides, window_dilations, out_shape):
    """A view ``out_shape + (window size,)`` of the (padded) array ``a``: element ``k`` of
    each window, in row-major order of the window's offsets."""
    n = a.ndim
    eff = [(w - 1) * r + 1 for w, r in zip(window_dimensions, window_dilations)]
    v = np.lib.stride_tricks.sliding_window_view(a, eff) if n else a.reshape(())
    if n:
        v = v[(slice(None),) * n + tuple(slice(None, None, r) for r in window_dilations)]
        v = v[tuple(slice(None, None, s) for s in strides)]
        v = v[tuple(slice(0, d) for d in out_shape)]
    return v.reshape(tuple(out_shape) + (-1,))


class WindowKernels(BaseKernels):
    """Eager window ops and reductions with a function, on NumPy arrays."""

    def window_min(self, out, x, window_dimensions, strides, padding, window_dilations):
        return self._window(out, x, window_dimensions, strides, padding, window_dilations,
                            T.max_value(out.type), np.min)

    def window_product(self, out, x, window_dimensions, strides, padding, window_dilations):
        return self._window(out, x, window_dimensions, strides, padding, window_dilations, 1,
                            libm.prod)

    # --- functions ----------------------------------------------------------------------
    def _scalar(self, value, t):
        return Tensor(np.asarray(value, dtype=t.dtype).reshape(()), (), t, None, self)

    def _apply(self, fun, a, b, t):
        """``fun(a, b)`` elementwise over equal-shape arrays ``a`` and ``b`` (type ``t``)."""
        if getattr(fun, "nxpy_elementwise", False):
            r = fun(Tensor(a, a.shape, t, None, self), Tensor(b, b.shape, t, None, self))
            return convert(np.broadcast_to(np.asarray(r.to_numpy()), a.shape), t)
        res = np.empty(a.shape, dtype=t.dtype)
        for i in np.ndindex(*a.shape):
            r = fun(self._scalar(a[i], t), self._scalar(b[i], t))
            if not isinstance(r, Tensor):
                r = self._scalar(r, t)
            if r.shape != ():
                raise ValueError(f"the reduction function must return a scalar, got a tensor "
                                 f"of shape {r.shape}")
            res[i] = convert(np.asarray(r.to_numpy()), t)
        return res

    def reduce(self, out, x, acc, axes, keep_axes, fun):
        t = out.type
        a = convert(x.data, t)
        kept = [i for i in range(a.ndim) if i not in axes]
        a = np.transpose(a, kept + list(axes))
        shape = a.shape[:len(kept)]
        a = a.reshape(shape + (-1,))
        r = np.full(shape, convert(np.asarray(acc.data), t), dtype=t.dtype)
        for k in range(a.shape[-1]):
            r = self._apply(fun, np.array(a[..., k]), r, t)
        return self._wrap(out, r.reshape(out.shape))

    def window_reduce(self, out, x, acc, window_dimensions, strides, padding, window_dilations,
                      fun):
        t = out.type
        if 0 in out.shape:
            return self._wrap(out, np.zeros(out.shape, t.dtype))
        init = convert(np.asarray(acc.data), t)
        a = convert(x.data, t)
        valid = None
        if any(lo or hi for lo, hi in padding):  # XLA skips the padding (it is no element)
            a = np.pad(a, padding, constant_values=init)
            valid = _windows(np.pad(np.ones(x.shape, bool), padding), window_dimensions,
                             strides, window_dilations, out.shape)
        v = _windows(a, window_dimensions, strides, window_dilations, out.shape)
        r = np.full(out.shape, init, dtype=t.dtype)
        for k in range(v.shape[-1]):
            if valid is None:
                r = self._apply(fun, np.array(v[..., k]), r, t)
                continue
            ok = valid[..., k]
            if ok.all():
                r = self._apply(fun, np.array(v[..., k]), r, t)
            elif ok.any():
                r = np.where(ok, self._apply(fun, np.array(v[..., k]), r, t), r)
        return self._wrap(out, r)

    # --- select and scatter -------------------------------------------------------------
    def _select_and_scatter(self, out, x, source, init, window_dimensions, strides, padding,
                            tie_break, kind):
        t = T.merge(x.type, out.type)  # XLA's select_and_scatter runs in one type
        res = np.full(out.shape, convert(np.asarray(init.data), t), dtype=t.dtype)
        if source.size == 0 or x.size == 0:
            return self._wrap(out, res)
        if x.rank == 0:
            return self._wrap(out, res + convert(source.data, t))
        a = convert(x.data, t)
        a = a.astype(compute_dtype(a.dtype))
        ones = (1,) * a.ndim
        ap = np.pad(a, padding) if any(lo or hi for lo, hi in padding) else a
        valid = np.pad(np.ones(a.shape, bool), padding)
        grid = source.shape
        xv = _windows(ap, window_dimensions, strides, ones, grid)
        vv = _windows(valid, window_dimensions, strides, ones, grid)
        keep = {("max", "low"): np.greater_equal, ("max", "high"): np.greater,
                ("min", "low"): np.less_equal, ("min", "high"): np.less}[(kind, tie_break)]
        sel = xv[..., 0].copy()
        sel_ok = vv[..., 0].copy()
        idx = np.zeros(grid, np.int64)
        with np.errstate(invalid="ignore"):
            for k in range(1, xv.shape[-1]):
                take = vv[..., k] & (~sel_ok | ~keep(sel, xv[..., k]))
                sel = np.where(take, xv[..., k], sel)
                idx = np.where(take, k, idx)
                sel_ok |= vv[..., k]
        offsets = np.array(list(itertools.product(*[range(w) for w in window_dimensions])),
                           dtype=np.int64).reshape(-1, a.ndim)
        starts = np.stack(np.meshgrid(*[np.arange(n) * s for n, s in zip(grid, strides)],
                                      indexing="ij"), axis=-1).reshape(grid + (a.ndim,))
        pos = starts + offsets[idx] - np.array([lo for lo, _ in padding], np.int64)
        src = convert(source.data, t)
        ok = sel_ok
        coords = tuple(pos[ok][:, d] for d in range(a.ndim))
        np.add.at(res, coords, src[ok])
        return self._wrap(out, res)

    def window_scatter_max(self, out, x, source, init, window_dimensions, strides, padding,
                           tie_break):
        return self._select_and_scatter(out, x, source, init, window_dimensions, strides,
                                        padding, tie_break, "max")

    def window_scatter_min(self, out, x, source, init, window_dimensions, strides, padding,
                           tie_break):
        return self._select_and_scatter(out, x, source, init, window_dimensions, strides,
                                        padding, tie_break, "min")
