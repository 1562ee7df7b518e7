"""The sorting family's cases: sort, argsort, top_k, permute_by_key, the cumulative
scans, median and mode (floats with NaN, infinities and signed zeros; ties)."""
from __future__ import annotations

import numpy as np

from .core import Case, _arr, _tol

__all__ = ["CASES", "OPS"]


def _special(shape, dtype="float32", seed=0):
    a = _arr(shape, dtype, -3, 3, seed=seed).astype(dtype)
    a = np.round(a * 2) / 2  # ties
    flat = a.reshape(-1)
    flat[:5] = np.array([np.nan, -0.0, np.inf, 0.0, -np.inf], dtype)
    return a


def _cases():
    C = Case
    f = _special((3, 6))
    i = _arr((3, 6), "int32")
    return [
        C("sort", lambda nx, x: nx.sort(x, axis=1), (f,)),
        C("sort", lambda nx, x: nx.sort(x, axis=0, direction="desc"), (f,), label="desc"),
        C("sort", lambda nx, x: nx.sort(x, axis=-1), (_special((2, 5), "float64"),), label="f64"),
        C("sort", lambda nx, x: nx.sort(x, direction="desc"), (_arr((7,), "uint8"),), label="u8"),
        C("argsort", lambda nx, x: nx.argsort(x, axis=1), (f,)),
        C("argsort", lambda nx, x: nx.argsort(x, axis=0, direction="desc", type="u32"), (i,),
          label="desc-u32"),
        C("argsort", lambda nx, x: nx.argsort(x, direction="desc"), (_special((6,), "float64"),),
          label="f64"),
        C("top_k", lambda nx, x: nx.top_k(x, k=3), (f,)),
        C("top_k", lambda nx, x: nx.top_k(x, k=2), (i,), label="s32"),
        C("permute_by_key", lambda nx, k, v: nx.permute_by_key(k, v, axis=1), (i, f)),
        C("permute_by_key", lambda nx, k, v: nx.permute_by_key(k, v, direction="desc"),
          (_special((5,)), _arr((5,), "int8")), label="desc"),
        C("cumulative_sum", lambda nx, x: nx.cumulative_sum(x, axis=1), (_arr((3, 20), "float32"),),
          tol=_tol("float32", 1e-5)),
        C("cumulative_sum", lambda nx, x: nx.cumulative_sum(x, reverse=True), (i,),
          label="reverse"),
        C("cumulative_product", lambda nx, x: nx.cumulative_product(x, axis=1),
          (_arr((2, 18), "float32", 0.5, 1.5),), tol=_tol("float32", 1e-5)),
        C("cumulative_product", lambda nx, x: nx.cumulative_product(x, axis=0, reverse=True), (i,),
          label="reverse"),
        C("cumulative_max", lambda nx, x: nx.cumulative_max(x, axis=1), (f,)),
        C("cumulative_max", lambda nx, x: nx.cumulative_max(x, axis=1, reverse=True),
          (_arr((2, 33), "int16"),), label="long"),
        C("cumulative_min", lambda nx, x: nx.cumulative_min(x, axis=0), (f,)),
        C("cumulative_min", lambda nx, x: nx.cumulative_min(x, axis=1, reverse=True),
          (_special((2, 40)),), label="long"),
        C("sort", lambda nx, x: (nx.median(x), nx.median(x, axis=1)), (i,), label="median"),
        C("sort", lambda nx, x: (nx.mode(x), nx.mode(x, axis=0)), (_arr((4, 5), "int32", 0, 2),),
          label="mode"),
    ]


CASES = _cases()
OPS = ["sort", "argsort", "top_k", "permute_by_key", "cumulative_sum", "cumulative_product",
       "cumulative_max", "cumulative_min"]
