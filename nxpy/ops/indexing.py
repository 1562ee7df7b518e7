"""Reading and writing parts of a tensor: slice (static or dynamic starts), put_slice,
and ``x[...]`` indexing.

>>> import nxpy as nx
>>> x = nx.iota((3, 4))
>>> x[1:, ::2].tolist(), nx.slice(x, [0, 1], [2, 2]).tolist()
([[4, 6], [8, 10]], [[1, 2], [5, 6]])
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import types as T
from ..backend import pick
from ..tensor import Tensor
from .core import _out, _scalar_like, as_type, dispatch, primitive, to_tensor
from .shaping import reshape

__all__ = ["slice", "put_slice", "index"]

primitive("indexing", "slice", "dynamic_slice", "put_slice")


def _start_indices(x, start_indices, op):
    if len(start_indices) != x.rank:
        raise ValueError(f"{op}: expected {x.rank} start indices for shape {x.shape}, "
                         f"got {len(start_indices)}")
    out = []
    for i, s in enumerate(start_indices):
        if isinstance(s, Tensor):
            if s.shape != () or not s.type.is_int:
                raise TypeError(f"{op}: start index {i} must be an int or a scalar integer "
                                f"tensor, got {s.type}{list(s.shape)}")
            out.append(s)
        elif isinstance(s, (int, np.integer)) and not isinstance(s, bool):
            out.append(int(s))
        else:
            raise TypeError(f"{op}: start index {i} must be an int or a scalar integer "
                            f"tensor, got {s!r}")
    return out


def slice(x, start_indices, lengths, strides=None) -> Tensor:  # noqa: A001
    """Static or dynamic slice. Integer starts must fit; tensor starts are clamped so the
    slice fits (as in Nx and XLA)."""
    x = to_tensor(x, "x")
    starts = _start_indices(x, start_indices, "slice")
    lengths = tuple(int(v) for v in lengths)
    strides = (1,) * x.rank if strides is None else (
        (int(strides),) * x.rank if isinstance(strides, int) else tuple(int(v) for v in strides))
    if len(lengths) != x.rank or len(strides) != x.rank:
        raise ValueError(f"slice: expected {x.rank} lengths and strides for shape {x.shape}, "
                         f"got {list(lengths)} and {list(strides)}")
    for i, (s, l, st, d) in enumerate(zip(starts, lengths, strides, x.shape)):
        if l < 0 or l > d or st < 1:
            raise ValueError(f"slice: length {l} (stride {st}) invalid for dim {i} of size {d}")
        if isinstance(s, int) and not 0 <= s <= d - l:
            raise ValueError(f"slice: start index {s} with length {l} is out of bounds for "
                             f"dim {i} of size {d}")
    shape = tuple(-(-l // st) for l, st in zip(lengths, strides))
    if builtins.all(isinstance(s, int) for s in starts):
        if shape == x.shape:
            return x
        return dispatch("slice", _out(shape, x.type, x.names), x, start_indices=tuple(starts),
                        lengths=lengths, strides=strides)
    starts = [s if isinstance(s, Tensor) else _scalar_like(s, T.S32, pick([x])) for s in starts]
    starts = [as_type(s, T.S32) for s in starts]
    return dispatch("dynamic_slice", _out(shape, x.type, x.names), x, starts, lengths=lengths,
                    strides=strides)


def put_slice(x, start_indices, update) -> Tensor:
    """``x`` with ``update`` written at ``start_indices`` (clamped so it fits)."""
    x = to_tensor(x, "x")
    update = to_tensor(update, "update")
    if update.rank != x.rank or builtins.any(u > d for u, d in zip(update.shape, x.shape)):
        raise ValueError(f"put_slice: update of shape {update.shape} does not fit in tensor "
                         f"of shape {x.shape}")
    starts = _start_indices(x, start_indices, "put_slice")
    starts = [as_type(s, T.S32) if isinstance(s, Tensor) else _scalar_like(s, T.S32, pick([x]))
              for s in starts]
    t = T.merge(x.type, update.type)
    return dispatch("put_slice", _out(x.shape, t, x.names), x, starts, update)


def index(x, idx) -> Tensor:
    """``x[idx]`` with ints, slices (positive steps), ``...``, ``None`` and scalar tensors."""
    x = to_tensor(x, "x")
    idx = idx if isinstance(idx, tuple) else (idx,)
    n_real = builtins.sum(1 for i in idx if i is not None and i is not Ellipsis)
    if builtins.sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis")
    if n_real > x.rank:
        raise IndexError(f"too many indices ({n_real}) for tensor of rank {x.rank}")
    full_idx = []
    for i in idx:
        if i is Ellipsis:
            full_idx.extend([builtins.slice(None)] * (x.rank - n_real))
        else:
            full_idx.append(i)
    full_idx.extend([builtins.slice(None)] * (x.rank - builtins.sum(1 for i in full_idx if i is not None)))
    starts, lengths, strides, out_shape, dim = [], [], [], [], 0
    for i in full_idx:
        if i is None:
            out_shape.append(1)
            continue
        d = x.shape[dim]
        if isinstance(i, builtins.slice):
            a, b, s = i.indices(d)
            if s < 0:
                raise IndexError("negative slice steps are not supported: use nx.reverse")
            n = builtins.max(0, -(-(b - a) // s))
            starts.append(a if n else 0)
            lengths.append((n - 1) * s + 1 if n else 0)
            strides.append(s)
            out_shape.append(n)
        elif isinstance(i, Tensor):
            starts.append(i)
            lengths.append(1)
            strides.append(1)
        elif isinstance(i, (int, np.integer)) and not isinstance(i, bool):
            i = int(i)
            if not -d <= i < d:
                raise IndexError(f"index {i} is out of bounds for dim {dim} of size {d}")
            starts.append(i % d)
            lengths.append(1)
            strides.append(1)
        else:
            raise IndexError(f"unsupported index {i!r}: use ints, slices, ..., None or scalar "
                             f"integer tensors")
        dim += 1
    return reshape(slice(x, starts, lengths, strides), out_shape)
