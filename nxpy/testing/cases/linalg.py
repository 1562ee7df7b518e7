"""The linear-algebra family's cases: the primitives cholesky, triangular_solve, lu, qr,
eigh, svd, solve (through ``nx.linalg``), on batched well-conditioned inputs. Results with a
sign freedom are compared through invariants (eigenvector and singular-vector
magnitudes), so a backend running the portable implementations conforms too."""
from __future__ import annotations

import numpy as np

from .core import Case

__all__ = ["CASES", "OPS"]


def _mat(shape, dtype, seed=0, spd=False, diag=0.0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if spd:
        n = shape[-1]
        a = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    return (a + diag * np.eye(shape[-2], shape[-1]) if diag else a).astype(dtype)


def _cases():
    C = Case
    s32, s64 = _mat((2, 3, 3), "float32", spd=True), _mat((4, 4), "float64", 1, spd=True)
    a32 = _mat((2, 3, 3), "float32", 2, diag=4.0)
    b32 = _mat((2, 3, 2), "float32", 3)
    tall = _mat((5, 3), "float64", 4)
    return [
        C("cholesky", lambda nx, t: nx.linalg.cholesky(t), (s32,), tol=1e-5),
        C("cholesky", lambda nx, t: nx.linalg.cholesky(t), (s64,), tol=1e-12),
        C("triangular_solve", lambda nx, a, b: nx.linalg.triangular_solve(a, b), (a32, b32),
          tol=1e-5),
        C("triangular_solve", lambda nx, a, b: nx.linalg.triangular_solve(
            a, b, left_side=False, lower=False, transform_a="transpose"),
          (a32, np.swapaxes(b32, -1, -2).copy()), label="right-upper-transposed", tol=1e-5),
        C("lu", lambda nx, t: nx.linalg.lu(t), (a32,), tol=1e-5),
        C("solve", lambda nx, a, b: nx.linalg.solve(a, b), (a32, b32), tol=1e-5),
        C("solve", lambda nx, a, b: nx.linalg.solve(a, b), (_mat((4, 4), "float64", 5, diag=4.0),
                                                            _mat((4,), "float64", 6)),
          label="vector", tol=1e-12),
        C("qr", lambda nx, t: nx.linalg.qr(t), (tall,), tol=1e-10),
        C("qr", lambda nx, t: nx.linalg.qr(t, mode="complete"), (tall,), label="complete",
          tol=1e-10),
        C("eigh", lambda nx, t: (lambda w, v: (w, nx.abs(v)))(*nx.linalg.eigh(t)), (s64,),
          tol=1e-8),
        C("svd", lambda nx, t: (lambda u, s, vt: (nx.abs(u), s, nx.abs(vt)))(
            *nx.linalg.svd(t, full_matrices=False)), (tall,), tol=1e-8),
    ]


CASES = _cases()
OPS = ["cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "solve"]
