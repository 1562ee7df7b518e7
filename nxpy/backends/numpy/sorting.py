"""The NumPy backend's kernels for the sorting family: sort, argsort, top_k,
permute_by_key and the cumulative scans.

The order is Nx's (NaN above everything, ``-0.0 == 0.0``, stable), computed on integer
*order keys* (:func:`order_key`); where the EXLA lowering sorts packed keys (floats of up
to 32 bits: the order key above the value's bits, one integer sort), this backend sorts
the same packed keys, so both order ``-0.0`` and ``0.0`` (and NaNs of different bits)
the same way.
"""
from __future__ import annotations

import numpy as np

from ...backend import Backend
from ...types import compute_dtype, convert
from . import libm

__all__ = ["SortingKernels", "order_key", "canonical"]

_INT = {2: np.int16, 4: np.int32, 8: np.int64}
_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def canonical(a):
    """Floats with ``-0.0`` as ``0.0`` and every NaN as the positive quiet NaN."""
    a = np.where(a == 0, a.dtype.type(0), a)
    return np.where(np.isnan(a), a.dtype.type(np.nan), a)


def order_key(a):
    """Integers ordering as Nx orders the values of ``a`` (floats: a total order with
    ``-0.0 == 0.0`` and NaN above +inf; bools as 0/1; integers themselves)."""
    if a.dtype.kind == "b":
        return a.astype(np.uint8)
    if a.dtype.kind in "iu":
        return a
    bits = canonical(a).view(_INT[a.dtype.itemsize])
    return np.where(bits < 0, bits ^ np.iinfo(bits.dtype).max, bits)


def _packed(a):
    """For floats of up to 32 bits: the order key in the high half of a twice-as-wide
    integer, the value's own bits in the low half (what the EXLA lowering sorts)."""
    w = a.dtype.itemsize
    wide = _INT[2 * w]
    raw = a.view(_UINT[w]).astype(wide)
    return (order_key(a).astype(wide) << (8 * w)) | raw


def _unpack(p, dtype):
    w = np.dtype(dtype).itemsize
    return (p & ((1 << (8 * w)) - 1)).astype(_UINT[w]).view(dtype)


def _plain(a):
    """No NaN and no zero in ``a``: equal values have equal bits, so NumPy's own sort
    gives the packed-key order."""
    return not (np.isnan(a).any() or (a == 0).any())


def _stable_argsort(a, axis, direction):
    k = order_key(a)
    if direction == "desc":
        k = ~k
    return np.argsort(k, axis=axis, kind="stable")


class SortingKernels(Backend):
    """Sorting and scans on NumPy arrays."""

    def sort(self, out, x, axis, direction):
        a = x.data
        if x.type.is_float and not _plain(a):
            if a.dtype.itemsize <= 4:
                s = np.sort(_packed(a), axis=axis)
                if direction == "desc":
                    s = np.flip(s, axis)
                return self._wrap(out, _unpack(s, a.dtype))
            idx = _stable_argsort(a, axis, direction)
            return self._wrap(out, np.take_along_axis(a, idx, axis))
        s = np.sort(a, axis=axis)  # equal keys here have equal bits: any order will do
        return self._wrap(out, np.flip(s, axis) if direction == "desc" else s)

    def argsort(self, out, x, axis, direction):
        return self._wrap(out, _stable_argsort(x.data, axis, direction))

    def permute_by_key(self, out, keys, values, axis, direction):
        idx = _stable_argsort(keys.data, axis, direction)
        return self._wrap(out, np.take_along_axis(convert(values.data, out.type), idx, axis))

    def top_k(self, outs, x, k):
        a = x.data
        if x.type.is_float:
            a = canonical(a)
        idx = _stable_argsort(a, a.ndim - 1, "desc")[..., :k]
        v_out, i_out = outs
        return [self._wrap(v_out, np.take_along_axis(a, idx, a.ndim - 1)), self._wrap(i_out, idx)]

    # --- scans ---------------------------------------------------------------------------
    def _scan(self, out, x, axis, reverse, f):
        a = convert(x.data, out.type)
        a = a.astype(compute_dtype(a.dtype), copy=False)
        if reverse:
            a = np.flip(a, axis)
        with np.errstate(all="ignore"):
            r = f(a, axis=axis) if a.shape[axis] else a
        return self._wrap(out, np.flip(r, axis) if reverse else r)

    def cumulative_sum(self, out, x, axis, reverse):
        return self._scan(out, x, axis, reverse, lambda a, axis: np.cumsum(a, axis, dtype=a.dtype))

    def cumulative_product(self, out, x, axis, reverse):
        return self._scan(out, x, axis, reverse,
                          lambda a, axis: libm.cumprod(a, axis=axis, dtype=a.dtype))

    def cumulative_min(self, out, x, axis, reverse):
        return self._scan(out, x, axis, reverse, np.minimum.accumulate)

    def cumulative_max(self, out, x, axis, reverse):
        return self._scan(out, x, axis, reverse, np.maximum.accumulate)
