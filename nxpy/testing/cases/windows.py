"""The window family's cases (window_min/product/mean/reduce, window_scatter_max/min,
reduce with a function) and conv's."""
from __future__ import annotations

from .core import Case, _arr, _tol

__all__ = ["CASES", "OPS"]


def _f(shape, dt="float32", lo=-3, hi=3, seed=0):
    return _arr(shape, dt, lo, hi, seed)


C = Case
CASES = [
    C("window_min", lambda nx, x: nx.window_min(x, (2, 2), strides=(1, 2), padding="same"),
      (_f((4, 5)),)),
    C("window_min", lambda nx, x: nx.window_min(x, (3,), window_dilations=2),
      (_arr((7,), "int16", -9, 9),)),
    C("window_product", lambda nx, x: nx.window_product(x, (2, 2)), (_f((3, 4), lo=0.5, hi=1.5),),
      tol=1e-5),
    C("window_product", lambda nx, x: nx.window_product(x, (2,), padding=[(1, 1)]),
      (_arr((5,), "int32", -3, 3),)),
    C("window_sum", lambda nx, x: nx.window_mean(x, (2, 3), padding=[(1, 0), (0, 1)]),
      (_f((4, 5)),),
      label="window_mean", tol=1e-5),
    C("window_reduce",
      lambda nx, x: nx.window_reduce(x, 0.0, (2, 2), lambda a, b: nx.max(a, b) + 0.5 * 0),
      (_f((4, 5)),), tol=1e-6),
    C("window_reduce", lambda nx, x: nx.window_reduce(x, 1, (2,), lambda a, b: a + b, strides=2,
                                                      padding="same"),
      (_arr((7,), "int32", -5, 5),)),
    C("reduce", lambda nx, x: nx.reduce(x, 0.0, lambda a, b: a + b, axes=[1]), (_f((3, 4)),),
      tol=1e-5),
    C("reduce", lambda nx, x: nx.reduce(x, -100, lambda a, b: nx.max(a, b), keep_axes=True),
      (_arr((2, 3), "int32", -9, 9),)),
    C("window_scatter_max", lambda nx, x, s: nx.window_scatter_max(x, s, 0.0, (2, 2), strides=2),
      (_arr((4, 6), "int32", 0, 3), _f((2, 3), seed=3)), tol=1e-6),
    C("window_scatter_min",
      lambda nx, x, s: nx.window_scatter_min(x, s, 1, (3,), strides=2, padding="same"),
      (_f((7,)), _arr((4,), "int32", -5, 5))),
    C("conv", lambda nx, x, k: nx.conv(x, k, padding="same", strides=[2, 1]),
      (_f((2, 3, 5, 5)), _f((4, 3, 3, 3), seed=1)), tol=_tol("float32", 1e-4)),
    C("conv", lambda nx, x, k: nx.conv(x, k, feature_group_size=2, kernel_dilation=2,
                                       input_permutation=[0, 2, 1], output_permutation=[0, 2, 1]),
      (_f((2, 6, 4)), _f((4, 2, 2), seed=2)), label="grouped-nwc", tol=_tol("float32", 1e-4)),
]
OPS = ["window_min", "window_product", "window_reduce", "reduce", "window_scatter_max",
       "window_scatter_min", "conv"]
