"""The indexing family's cases: gather, take, take_along_axis, indexed_add, indexed_put,
slice_along_axis, and slices with clamped integer starts (out-of-bounds indices
included: gathers clamp, scatters skip)."""
from __future__ import annotations

import numpy as np

from .core import Case, _arr, _tol

__all__ = ["CASES", "OPS"]

OPS = ["gather", "indexed_add", "indexed_put"]


def _i(values, dtype="int32"):
    return np.asarray(values, dtype=dtype)


def _cases():
    C = Case
    out = []
    for dt in ["float32", "int32", "uint8", "complex64", "bool", "float16"]:
        x = _arr((4, 3), dt)
        u = _arr((3, 3), dt, seed=2)
        out += [
            C("gather", lambda nx, x, i: nx.gather(x, i), (x, _i([[1, 2], [3, 0], [5, 1]])),
              label=dt),
            C("gather", lambda nx, x, i: nx.take(x, i, axis=1), (x, _i([[2, 0], [1, 7]], "uint8")),
              label=f"take-{dt}"),
            C("indexed_put", lambda nx, x, i, u: nx.indexed_put(x, i, u),
              (x, _i([[2], [0], [9]]), u), label=dt),
        ]
        if dt != "bool":
            out.append(C("indexed_add", lambda nx, x, i, u: nx.indexed_add(x, i, u),
                         (x, _i([[2], [2], [0]], "int64"), u), label=dt,
                         tol=_tol(dt) if dt == "float16" else 0.0))
    x3 = _arr((2, 3, 4), "float32")
    out += [
        Case("gather", lambda nx, x, i: nx.take_along_axis(x, i, axis=2),
             (x3, _arr((2, 3, 5), "int32", 0, 3)),
             label="take_along_axis"),
        Case("gather", lambda nx, x, i: nx.gather(x, i, axes=[0, 2]),
             (x3, _i([[[1, 3]], [[0, -1]]])),
             label="axes"),
        Case("indexed_add", lambda nx, x, i, u: nx.indexed_add(x, i, u, axes=[1]),
             (x3, _i([[1], [1]]), _arr((2, 2, 3), "float32", seed=4)), label="window", tol=1e-6),
        Case("slice", lambda nx, x: nx.slice_along_axis(x, 2, 2, axis=-1, strides=2), (x3,),
             label="slice_along_axis"),
        Case("slice", lambda nx, x: nx.slice(x, [5, -2, 3], [1, 2, 2]), (x3,),
             label="clamped slice"),
    ]
    return out


CASES = _cases()
