"""Shape rules shared by every op: axes, broadcasting, names, windows.

>>> broadcast((2, 1), (3,))
(2, 3)
>>> normalize_axis(-1, 3)
2
>>> normalize_axis(3, 2)
Traceback (most recent call last):
...
ValueError: given axis (3) invalid for shape with rank 2
"""
from __future__ import annotations

import math

__all__ = ["normalize_axis", "normalize_axes", "broadcast", "broadcast_names", "merge_names",
           "size", "window_padding", "window_out_shape"]


def size(shape) -> int:
    return math.prod(shape)


def normalize_axis(axis, rank: int, names=None) -> int:
    """An axis as index, negative index or name → a non-negative index."""
    if isinstance(axis, str):
        if names and axis in names:
            return names.index(axis)
        raise ValueError(f"axis name {axis!r} not found in names {tuple(names or ())}")
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"axis must be an integer or a name, got {axis!r}")
    if not -rank <= axis < rank:
        raise ValueError(f"given axis ({axis}) invalid for shape with rank {rank}")
    return axis % rank if rank else axis


def normalize_axes(axes, rank: int, names=None, *, what="axes") -> tuple[int, ...]:
    """None → all axes; otherwise each normalised, duplicates rejected."""
    if axes is None:
        return tuple(range(rank))
    if isinstance(axes, (int, str)):
        axes = [axes]
    out = tuple(normalize_axis(a, rank, names) for a in axes)
    if len(set(out)) != len(out):
        raise ValueError(f"{what} {list(axes)} contain a repeated axis")
    return out


def broadcast(a: tuple, b: tuple, *, op="broadcast") -> tuple:
    """NumPy/Nx broadcasting: right-aligned, each pair equal or one of them 1."""
    if a == b:
        return a
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ValueError(f"{op}: cannot broadcast tensor of shape {tuple(a)} "
                             f"with tensor of shape {tuple(b)}")
    return tuple(out)


def merge_names(a, b, *, op="op"):
    """Names of two same-rank dims lists: None yields to a name, two names must agree."""
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            raise ValueError(f"{op}: cannot merge names {x!r} and {y!r}")
        out.append(x if x is not None else y)
    return tuple(out)


def broadcast_names(shape, *tensors):
    """Names of a broadcast result: right-aligned merge of the operands' names."""
    n = len(shape)
    names = (None,) * n
    for t in tensors:
        tn = (None,) * (n - len(t.names)) + tuple(t.names)
        names = merge_names(names, tn)
    return names


def window_padding(padding, shape, window, strides, dilations=None):
    """`valid` | `same` | explicit [(lo, hi)] → explicit pairs, as XLA's reduce_window wants."""
    rank = len(shape)
    dilations = dilations or (1,) * rank
    if padding == "valid":
        return tuple((0, 0) for _ in range(rank))
    if padding == "same":
        pads = []
        for d, w, s, r in zip(shape, window, strides, dilations):
            eff = (w - 1) * r + 1
            out = -(-d // s)
            total = max((out - 1) * s + eff - d, 0)
            pads.append((total // 2, total - total // 2))
        return tuple(pads)
    if isinstance(padding, (list, tuple)) and len(padding) == rank and all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(v, int) for v in p)
            for p in padding):
        return tuple((int(lo), int(hi)) for lo, hi in padding)
    raise ValueError(f"padding must be 'valid', 'same' or a list of {rank} (low, high) "
                     f"integer pairs, got {padding!r}")


def window_out_shape(shape, window, strides, padding, dilations=None):
    dilations = dilations or (1,) * len(shape)
    out = []
    for d, w, s, (lo, hi), r in zip(shape, window, strides, padding, dilations):
        eff = (w - 1) * r + 1
        span = d + lo + hi - eff
        if span < 0:
            if d == 0:  # an empty dim stays empty (as in XLA)
                out.append(0)
                continue
            raise ValueError(f"window {tuple(window)} does not fit in padded shape of {tuple(shape)}")
        out.append(span // s + 1)
    return tuple(out)
