"""Sliding-window reductions: window_sum and window_max.

>>> import nxpy as nx
>>> nx.window_max(nx.tensor([1, 3, 2, 5]), (2,)).tolist()
[3, 3, 5]
"""
from __future__ import annotations

import builtins

from .. import shape as S
from .core import _out, check_kind, dispatch, primitive, to_tensor

__all__ = ["window_sum", "window_max"]

primitive("windows", "window_sum", "window_max")


def _window(name, x, window_dimensions, strides, padding, window_dilations):
    x = to_tensor(x, "x")
    if name == "window_max":
        check_kind(name, "x", x.type, "real")
    window = tuple(int(w) for w in window_dimensions)
    if len(window) != x.rank or builtins.any(w < 1 for w in window):
        raise ValueError(f"{name}: expected window_dimensions of {x.rank} positive ints for "
                         f"shape {x.shape}, got {list(window_dimensions)}")
    strides = (1,) * x.rank if strides is None else (
        (int(strides),) * x.rank if isinstance(strides, int) else tuple(int(s) for s in strides))
    dil = (1,) * x.rank if window_dilations is None else (
        (int(window_dilations),) * x.rank if isinstance(window_dilations, int)
        else tuple(int(s) for s in window_dilations))
    if len(strides) != x.rank or builtins.any(s < 1 for s in strides):
        raise ValueError(f"{name}: expected {x.rank} positive strides, got {list(strides)}")
    if len(dil) != x.rank or builtins.any(s < 1 for s in dil):
        raise ValueError(f"{name}: expected {x.rank} positive window_dilations, got {list(dil)}")
    pads = S.window_padding(padding, x.shape, window, strides, dil)
    shape = S.window_out_shape(x.shape, window, strides, pads, dil)
    return dispatch(name, _out(shape, x.type), x, window_dimensions=window, strides=strides,
                    padding=pads, window_dilations=dil)


def window_sum(x, window_dimensions, strides=None, padding="valid", window_dilations=None):
    """Sum over sliding windows; padding is ``valid``, ``same`` or explicit (low, high) pairs.

    >>> import nxpy as nx
    >>> nx.window_sum(nx.iota((4,)), (2,)).tolist()
    [1, 3, 5]
    """
    return _window("window_sum", x, window_dimensions, strides, padding, window_dilations)


def window_max(x, window_dimensions, strides=None, padding="valid", window_dilations=None):
    """Max over sliding windows (padding counts as -inf / the type's minimum)."""
    return _window("window_max", x, window_dimensions, strides, padding, window_dilations)
