"""The compositions family's cases: its two primitives (population_count,
count_leading_zeros) on every integer width, and each composition once or twice, so a
backend or compiler running them is checked against the NumPy reference."""
from __future__ import annotations

import numpy as np

from .core import Case, _arr

__all__ = ["CASES", "OPS"]


def _bit_cases():
    out = []
    for name in ("population_count", "count_leading_zeros"):
        for dt in ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]:
            info = np.iinfo(dt)
            a = np.array([0, 1, 2, 3, info.max, info.min, info.max // 3, 5], dt).reshape(2, 4)
            out.append(Case(name, lambda nx, x, _n=name: getattr(nx, _n)(x), (a,)))
    return out


def _composition_cases():
    C = Case
    x = _arr((3, 4), "float32")
    i = _arr((3, 4), "int32", -5, 5)
    b = _arr((2, 3, 3), "float64")
    return [
        C("tril", lambda nx, t: nx.tril(t, k=1), (b,)),
        C("triu", lambda nx, t: nx.triu(t, k=-1), (i,)),
        C("tri", lambda nx: nx.tri(3, 4, k=1), ()),
        C("take_diagonal", lambda nx, t: nx.take_diagonal(t, offset=1), (x,)),
        C("take_diagonal", lambda nx, t: nx.take_diagonal(t, offset=-1), (b,), label="batched"),
        C("make_diagonal", lambda nx, t: nx.make_diagonal(t, offset=2), (_arr((3,), "int8"),)),
        C("put_diagonal", lambda nx, t, d: nx.put_diagonal(t, d, offset=-1),
          (x, _arr((2,), "float32", seed=1))),
        C("linspace", lambda nx, a, z: nx.linspace(a, z, n=5, name="s"),
          (_arr((2,), "float32"), _arr((2,), "float32", seed=2)), tol=1e-6),
        C("linspace", lambda nx: nx.linspace(0, 24, n=8, type="u8"), (), label="u8"),
        C("tile", lambda nx, t: nx.tile(t, [2, 1, 3]), (i,)),
        C("flatten", lambda nx, t: nx.flatten(t, axes=[1, 2]), (b,)),
        C("split", lambda nx, t: nx.split(t, 0.5, axis=1), (x,)),
        C("reflect", lambda nx, t: nx.reflect(t, [(2, 3), (4, 0)]), (i,)),
        C("outer", lambda nx, a, c: nx.outer(a, c), (i, _arr((5,), "int32", seed=3))),
        C("diff", lambda nx, t: nx.diff(t, order=2, axis=1), (x,)),
        C("logsumexp", lambda nx, t: nx.logsumexp(t, axes=[1], keep_axes=True), (x,), tol=1e-5),
        C("all_close", lambda nx, a, c: nx.all_close(a, c, atol=0.5),
          (x, _arr((3, 4), "float32", seed=4))),
        C("variance", lambda nx, t: nx.variance(t, axes=[0], ddof=1), (x,), tol=1e-5),
        C("standard_deviation", lambda nx, t: nx.standard_deviation(t), (b,), tol=1e-12),
        C("weighted_mean", lambda nx, t, w: nx.weighted_mean(t, w, axes=[1]),
          (x, _arr((4,), "float32", 0, 3, seed=5)), tol=1e-5),
        C("covariance", lambda nx, t: nx.covariance(t), (b,), tol=1e-12),
        C("einsum", lambda nx, a, c: nx.einsum("bij,jk->bki", a, c),
          (b, _arr((3, 2), "float64", seed=6)), tol=1e-12),
        C("einsum", lambda nx, a: nx.einsum("...ii->...i", a), (b,), label="diagonal"),
        C("einsum", lambda nx, a, c: nx.einsum("ij,ij", a, c), (i, _arr((3, 4), "int32", seed=7)),
          label="full"),
    ]


CASES = _bit_cases() + _composition_cases()
OPS = ["population_count", "count_leading_zeros", "tril", "triu", "tri", "take_diagonal",
       "make_diagonal", "put_diagonal", "linspace", "tile", "flatten", "split", "reflect", "outer",
       "diff", "logsumexp", "all_close", "variance", "standard_deviation", "weighted_mean",
       "covariance", "einsum"]
