"""NumPy kernels of the index-tensor ops (gather, indexed_add, indexed_put), with XLA's
out-of-bounds rules: gather clamps each coordinate into its axis; a scatter skips an
update whose coordinates are not all in bounds.

>>> import nxpy as nx
>>> nx.gather(nx.tensor([10, 20, 30]), nx.tensor([[-1], [1], [7]])).tolist()
[10, 20, 30]
>>> nx.indexed_add(nx.tensor([0, 0]), nx.tensor([[1], [5], [1]]), nx.tensor([1, 100, 2])).tolist()
[0, 3]
"""
from __future__ import annotations

import numpy as np

from ...backend import Backend
from ...types import convert

__all__ = ["IndexingKernels"]


def _clamped(c, d):
    """Coordinates ``c`` clamped into ``[0, d - 1]``, in their own integer type when it
    holds ``d - 1`` (np.take is fastest on them), else as intp."""
    hi = d - 1
    info = np.iinfo(c.dtype)
    if info.max < hi:  # every value is below the bound already
        return np.maximum(c, 0) if info.min < 0 else c
    if info.min < 0:
        return np.clip(c, 0, hi)
    c = np.minimum(c, c.dtype.type(hi))
    return c.astype(np.intp) if c.dtype == np.uint64 else c


def _coords(indices, shape, axes):
    """``indices`` (..., k) as k int64 coordinate arrays (the index dim taken apart)."""
    idx = np.asarray(indices).astype(np.int64) if np.asarray(indices).dtype != np.uint64 else \
        np.minimum(np.asarray(indices), np.iinfo(np.int64).max).astype(np.int64)
    return [idx[..., j] for j in range(len(axes))]


class IndexingKernels(Backend):
    """gather, indexed_add and indexed_put on NumPy arrays."""

    def gather(self, out, x, indices, axes):
        k = len(axes)
        a = np.moveaxis(x.data, list(axes), list(range(k))) if list(axes) != list(range(k)) \
            else x.data
        if k == 0:
            return self._wrap(out, np.broadcast_to(a, indices.shape[:-1] + a.shape).copy())
        dims = [x.shape[ax] for ax in axes]
        idx = indices.data
        if k == 1:  # np.take on the clamped indices, kept in their own type (fastest)
            lin = _clamped(idx[..., 0], dims[0])
        else:
            lin = np.zeros(idx.shape[:-1], np.intp)
            for j, d in enumerate(dims):
                lin = lin * d + _clamped(idx[..., j], d).astype(np.intp, copy=False)
        flat = a.reshape((-1,) + a.shape[k:])
        return self._wrap(out, np.take(flat, lin, axis=0))

    def _scatter(self, out, target, indices, updates, axes, add):
        res = convert(target.data, out.type).copy()
        view = np.moveaxis(res, list(axes), list(range(len(axes))))
        window = tuple(slice(0, u) for u in updates.shape[1:])
        view = view[(slice(None),) * len(axes) + window]
        upd = convert(updates.data, out.type)
        cols = _coords(indices.data, target.shape, axes)
        ok = np.ones(indices.shape[0], bool)
        for c, ax in zip(cols, axes):
            ok &= (c >= 0) & (c < target.shape[ax])
        cols = tuple(c[ok] for c in cols)
        upd = upd[ok]
        if add:
            np.add.at(view, cols, upd)
        else:
            view[cols] = upd  # repeated indices: the last update wins, as XLA on CPU
        return self._wrap(out, res)

    def indexed_add(self, out, target, indices, updates, axes):
        return self._scatter(out, target, indices, updates, axes, add=True)

    def indexed_put(self, out, target, indices, updates, axes):
        return self._scatter(out, target, indices, updates, axes, add=False)
