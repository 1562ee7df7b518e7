"""``nxpy.numpy.linalg``: ``jax.numpy.linalg``'s names over nxpy's linear algebra (issue 28):
``norm`` (vector and matrix norms of every ``ord``), ``cholesky``, ``qr``, ``svd``,
``eigh``, ``eigvalsh``, ``solve``, ``inv``, ``det``, ``slogdet``, ``pinv``,
``matrix_power``, ``matrix_rank``, ``lstsq`` and the array API's ``vector_norm``,
``matrix_norm``, ``svdvals``, ``matrix_transpose``, with JAX's result conventions
(``QRResult``, ``SVDResult``, ``EighResult``, ``SlogdetResult`` named tuples).

The decompositions are ``nxpy.ops.linalg``'s (LAPACK on EXLA, portable compositions
elsewhere); ``pinv``, ``matrix_rank`` and ``lstsq`` are built on ``svd`` with JAX's
default tolerances. Triangular solves live in ``jax.scipy.linalg`` and are not here.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .. import ops as O
from .. import types as T
from ..tensor import Tensor
from ._common import axes_of
from .mathematics import _t
from .reductions import _inexact

__all__ = ["norm", "vector_norm", "matrix_norm", "cholesky", "qr", "svd", "svdvals", "eigh",
           "eigvalsh", "solve", "inv", "det", "slogdet", "pinv", "matrix_power",
           "matrix_rank", "lstsq", "matrix_transpose"]

#: Where a function departs from ``jax.numpy.linalg`` and why (for the coverage table).
NOTES = {
    "svd": "complex inputs are not supported (nxpy's svd is real); hermitian= and "
           "subset_by_index= are not accepted.",
    "eigh": "nxpy's eigh reads one triangle; symmetrize_input=True (the default) averages "
            "the matrix with its adjoint first, as jnp.",
    "slogdet": "computed from nxpy's LU (method= is not accepted).",
    "lstsq": "for a 2-D a; residuals are always returned (numpy_resid=False's behaviour).",
}


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


def _cast(x: Tensor, t) -> Tensor:
    return x if x.type == t else O.as_type(x, t)


def _matrix(a, fn: str, arg: str = "a", square: bool = False) -> Tensor:
    x = _inexact(_t(a, fn, arg))
    if x.rank < 2:
        raise ValueError(f"{fn}: {arg} must have rank >= 2, got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{fn}: {arg} must be square in its last two axes, got shape "
                         f"{x.shape}")
    return x


def matrix_transpose(x, /):
    """``jnp.linalg.matrix_transpose``: the last two axes swapped.

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.matrix_transpose([[1, 2], [3, 4]]).tolist()
    [[1, 3], [2, 4]]
    """
    t = _t(x, "matrix_transpose", "x")
    if t.rank < 2:
        raise ValueError(f"matrix_transpose: x must have rank >= 2, got shape {t.shape}")
    return O.transpose(t, list(range(t.rank - 2)) + [t.rank - 1, t.rank - 2])


def _adjoint(x: Tensor) -> Tensor:
    t = matrix_transpose(x)
    return O.conjugate(t) if t.type.is_complex else t


def _abs2(x: Tensor) -> Tensor:
    return O.real(O.multiply(x, O.conjugate(x))) if x.type.is_complex else O.multiply(x, x)


def _vector_norm(x: Tensor, axes, ord, keepdims: bool, fn: str) -> Tensor:
    ax = list(axes)
    if ord is None or ord == 2:
        return O.sqrt(O.sum(_abs2(x), axes=ax, keep_axes=keepdims))
    a = O.abs(x)
    if ord == math.inf or ord == "inf":
        return O.reduce_max(a, axes=ax, keep_axes=keepdims)
    if ord == -math.inf:
        return O.reduce_min(a, axes=ax, keep_axes=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"{fn}: invalid ord {ord!r} for a vector norm")
    if ord == 0:
        nz = O.as_type(O.not_equal(x, O.tensor(0, type=x.type)), a.type)
        return O.sum(nz, axes=ax, keep_axes=keepdims)
    if ord == 1:
        return O.sum(a, axes=ax, keep_axes=keepdims)
    p = O.tensor(ord, type=a.type)
    return O.pow(O.sum(O.pow(a, p), axes=ax, keep_axes=keepdims),
                 O.divide(O.tensor(1, type=a.type), p))


def _matrix_norm(x: Tensor, axes, ord, keepdims: bool, fn: str) -> Tensor:
    row, col = axes
    if row == col:
        raise ValueError(f"{fn}: duplicate axes {axes!r}")
    if ord is None or ord in ("fro", "f"):
        r = O.sqrt(O.sum(_abs2(x), axes=sorted([row, col]), keep_axes=True))
    elif ord in (1, -1, math.inf, -math.inf):
        a = O.abs(x)
        inner, outer = (row, col) if ord in (1, -1) else (col, row)
        s = O.sum(a, axes=[inner], keep_axes=True)
        red = O.reduce_max if ord in (1, math.inf) else O.reduce_min
        r = red(s, axes=[outer], keep_axes=True)
    elif ord in (2, -2, "nuc"):
        rest = [i for i in range(x.rank) if i not in (row, col)]
        y = O.transpose(x, rest + [row, col])
        if y.type.is_complex:
            raise NotImplementedError(f"{fn}: ord={ord!r} of complex matrices needs a "
                                      "complex svd")
        _, s, _ = O.linalg.svd(y, full_matrices=False)
        last = s.rank - 1
        if ord == 2:
            r = O.reduce_max(s, axes=[last])
        elif ord == -2:
            r = O.reduce_min(s, axes=[last])
        else:
            r = O.sum(s, axes=[last])
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        r = O.reshape(r, tuple(shape))
    else:
        raise ValueError(f"{fn}: invalid ord {ord!r} for a matrix norm")
    if keepdims:
        return r
    return O.squeeze(r, sorted([row, col]))


def norm(x, ord=None, axis=None, keepdims: bool = False):
    """``jnp.linalg.norm``: a vector norm (``axis`` an int, or a vector input) or a matrix
    norm (``axis`` a pair, or a matrix input). Vector ``ord``: None/2 (Euclidean),
    ``inf``, ``-inf``, 0 (non-zero count), 1, any p; matrix ``ord``: None/``"fro"``,
    ``"nuc"``, ``inf``, ``-inf``, 1, -1, 2, -2. With ``ord=None`` and ``axis=None`` the
    input is flattened, whatever its rank.

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.norm([3.0, 4.0]).item(), xnp.linalg.norm([[1.0, 2.0], [3.0, 4.0]], 1).item()
    (5.0, 6.0)
    """
    t = _inexact(_t(x, "norm", "x"))
    if axis is None:
        if ord is None:
            r = O.sqrt(O.sum(_abs2(t)))
            return O.reshape(r, (1,) * t.rank) if keepdims else r
        if t.rank not in (1, 2):
            raise ValueError(f"norm: improper number of dimensions to norm ({t.rank}); give "
                             "axis")
        axis = tuple(range(t.rank))
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        axis = (axis,)
    if not isinstance(axis, (tuple, list)):
        raise TypeError(f"norm: expected axis to be None, an int or a tuple, got {axis!r}")
    ax = [a % t.rank if -t.rank <= a < t.rank else None for a in axis]
    if None in ax:
        raise ValueError(f"norm: axis {axis!r} is out of bounds for rank {t.rank}")
    if len(ax) == 1:
        return _vector_norm(t, ax, ord, keepdims, "norm")
    if len(ax) == 2:
        return _matrix_norm(t, ax, ord, keepdims, "norm")
    raise ValueError(f"norm: improper number of axes {axis!r}")


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):
    """``jnp.linalg.vector_norm``: the vector norm over ``axis`` (None: every entry).

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.vector_norm([[3.0, 4.0]]).item()
    5.0
    """
    t = _inexact(_t(x, "vector_norm", "x"))
    return _vector_norm(t, axes_of(axis, t.rank, "vector_norm"), ord, keepdims, "vector_norm")


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):
    """``jnp.linalg.matrix_norm``: the matrix norm of the last two axes.

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.matrix_norm([[3.0, 0.0], [0.0, 4.0]]).item()
    5.0
    """
    t = _matrix(x, "matrix_norm", "x")
    return _matrix_norm(t, (t.rank - 2, t.rank - 1), ord, keepdims, "matrix_norm")


def _symmetrize(x: Tensor) -> Tensor:
    return O.divide(O.add(x, _adjoint(x)), O.tensor(2, type=T.to_real(x.type)))


def cholesky(a, *, upper: bool = False, symmetrize_input: bool = True):
    """``jnp.linalg.cholesky``: the lower-triangular ``L`` with ``L @ L^H == a`` (``upper``:
    the upper ``L^H``); not positive definite gives NaNs on EXLA.

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.cholesky([[4.0, 2.0], [2.0, 2.0]]).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    x = _matrix(a, "cholesky", square=True)
    if symmetrize_input:
        x = _symmetrize(x)
    low = O.linalg.cholesky(x)
    return _adjoint(low) if upper else low


def qr(a, mode: str = "reduced"):
    """``jnp.linalg.qr``: ``QRResult(Q, R)`` with ``a == Q @ R``; ``mode`` ``"reduced"``,
    ``"complete"`` or ``"r"`` (``R`` alone).

    >>> import nxpy.numpy as xnp
    >>> q, r = xnp.linalg.qr([[3.0, 0.0], [4.0, 5.0]])
    >>> [[round(v, 4) + 0.0 for v in row] for row in r.tolist()]
    [[-5.0, -4.0], [0.0, 3.0]]
    """
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr: unsupported mode {mode!r} (expected 'reduced', 'complete' or "
                         "'r')")
    x = _matrix(a, "qr")
    q, r = O.linalg.qr(x, mode="complete" if mode == "complete" else "reduced")
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index=None):
    """``jnp.linalg.svd``: ``SVDResult(U, S, Vh)`` with ``a == U @ diag(S) @ Vh``, the
    singular values descending (``compute_uv=False``: ``S`` alone).

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.svd([[3.0, 0.0], [0.0, -4.0]], compute_uv=False).tolist()
    [4.0, 3.0]
    """
    if hermitian or subset_by_index is not None:
        raise NotImplementedError("svd: hermitian= and subset_by_index= are not supported")
    x = _matrix(a, "svd")
    u, s, vh = O.linalg.svd(x, full_matrices=bool(full_matrices and compute_uv))
    return SVDResult(u, s, vh) if compute_uv else s


def svdvals(x, /):
    """``jnp.linalg.svdvals``: the singular values, descending.

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.svdvals([[0.0, 2.0], [1.0, 0.0]]).tolist()
    [2.0, 1.0]
    """
    return svd(x, compute_uv=False)


def _eigh_input(a, uplo, symmetrize_input, fn):
    x = _matrix(a, fn, square=True)
    if uplo not in (None, "L", "U"):
        raise ValueError(f"{fn}: UPLO must be 'L' or 'U', got {uplo!r}")
    if symmetrize_input:
        return _symmetrize(x)
    return _adjoint(x) if uplo == "U" else x


def eigh(a, UPLO=None, symmetrize_input: bool = True):
    """``jnp.linalg.eigh``: ``EighResult(eigenvalues, eigenvectors)`` of a Hermitian
    (symmetric) matrix, the eigenvalues ascending, the eigenvectors in the columns.

    >>> import nxpy.numpy as xnp
    >>> w, v = xnp.linalg.eigh([[2.0, 1.0], [1.0, 2.0]])
    >>> [round(x, 4) for x in w.tolist()]
    [1.0, 3.0]
    """
    w, v = O.linalg.eigh(_eigh_input(a, UPLO, symmetrize_input, "eigh"))
    return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input: bool = True):
    """``jnp.linalg.eigvalsh``: the eigenvalues of a Hermitian matrix, ascending.

    >>> import nxpy.numpy as xnp
    >>> [round(x, 4) for x in xnp.linalg.eigvalsh([[2.0, 0.0], [0.0, 1.0]]).tolist()]
    [1.0, 2.0]
    """
    return O.linalg.eigh(_eigh_input(a, UPLO, symmetrize_input, "eigvalsh"))[0]


def solve(a, b):
    """``jnp.linalg.solve``: ``x`` with ``a @ x == b`` (``b`` a vector, or matrices with
    ``a``'s batch axes).

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.solve([[2.0, 0.0], [0.0, 4.0]], [2.0, 2.0]).tolist()
    [1.0, 0.5]
    """
    x = _matrix(a, "solve", square=True)
    y = _inexact(_t(b, "solve", "b"))
    t = T.merge(x.type, y.type)
    x, y = _cast(x, t), _cast(y, t)
    vec = y.rank == 1
    if (vec and y.shape[-1] != x.shape[-1]) or (not vec and (
            y.shape[-2] != x.shape[-1] or y.rank != x.rank)):
        raise ValueError(f"solve: incompatible shapes {x.shape} and {y.shape} (b is a "
                         "vector, or matrices with a's batch axes)")
    if vec and x.rank > 2:
        r = O.linalg.solve(x, O.broadcast(O.reshape(y, (y.shape[0], 1)),
                                          x.shape[:-1] + (1,)))
        return O.reshape(r, x.shape[:-1])
    return O.linalg.solve(x, y)


def inv(a):
    """``jnp.linalg.inv``: the inverse of square matrices (NaNs when singular).

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.inv([[2.0, 0.0], [0.0, 4.0]]).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    return O.linalg.invert(_matrix(a, "inv", square=True))


def det(a):
    """``jnp.linalg.det``: the determinant of square matrices.

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.det([[1.0, 2.0], [3.0, 4.0]]).item()
    -2.0
    """
    return O.linalg.determinant(_matrix(a, "det", square=True))


def _diagonal(x: Tensor) -> Tensor:
    n = x.shape[-1]
    eye = O.as_type(O.eye(n), x.type)
    return O.sum(O.multiply(x, eye), axes=[x.rank - 1])


def slogdet(a, *, method=None):
    """``jnp.linalg.slogdet``: ``SlogdetResult(sign, logabsdet)`` with
    ``det(a) == sign * exp(logabsdet)``, without overflow.

    >>> import nxpy.numpy as xnp
    >>> s, l = xnp.linalg.slogdet([[1.0, 2.0], [3.0, 4.0]])
    >>> s.item(), round(l.item(), 5)
    (-1.0, 0.69315)
    """
    if method not in (None, "lu"):
        raise ValueError(f"slogdet: unsupported method {method!r}")
    x = _matrix(a, "slogdet", square=True)
    n = x.shape[-1]
    if n == 0:
        shape = x.shape[:-2]
        return SlogdetResult(O.broadcast(O.tensor(1, type=x.type), shape),
                             O.broadcast(O.tensor(0, type=T.to_real(x.type)), shape))
    p, _, u = O.linalg.lu(x)
    d = _diagonal(u)
    last = d.rank - 1
    absd = O.abs(d)
    logabs = O.sum(O.log(absd), axes=[last])
    unit = O.divide(d, _cast(O.select(O.equal(absd, O.tensor(0, type=absd.type)),
                                      O.tensor(1, type=absd.type), absd), d.type))
    unit = O.select(O.equal(absd, O.tensor(0, type=absd.type)), O.tensor(0, type=d.type), unit)
    sign = O.multiply(O.product(unit, axes=[last]), _cast(O.linalg.determinant(p), d.type))
    return SlogdetResult(sign, logabs)


def _eps(t) -> float:
    return float(np.finfo(T.to_real(t).dtype).eps) if T.to_real(t).bits >= 32 else \
        float(np.finfo(np.float32).eps)


def pinv(a, rtol=None, hermitian: bool = False, *, rcond=None):
    """``jnp.linalg.pinv``: the Moore-Penrose pseudo-inverse, from the SVD; singular values
    up to ``rtol * max(s)`` count as 0 (default ``rtol``: ``10 * max(m, n) * eps``).

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.pinv([[2.0, 0.0], [0.0, 0.0]]).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: pass rtol or rcond, not both")
        rtol = rcond
    x = _matrix(a, "pinv")
    m, n = x.shape[-2:]
    if rtol is None:
        rtol = 10 * _imax(m, n) * _eps(x.type)
    if x.size == 0:
        return O.broadcast(O.tensor(0, type=x.type), x.shape[:-2] + (n, m))
    u, s, vh = O.linalg.svd(x, full_matrices=False)
    last = s.rank - 1
    cutoff = O.multiply(O.tensor(rtol, type=s.type), O.reduce_max(s, axes=[last],
                                                                   keep_axes=True))
    keep = O.greater(s, cutoff)
    sinv = O.select(keep, O.divide(O.tensor(1, type=s.type),
                                   O.select(keep, s, O.tensor(1, type=s.type))),
                    O.tensor(0, type=s.type))
    v = _adjoint(vh)
    return O.matmul(O.multiply(v, O.reshape(sinv, sinv.shape[:-1] + (1, sinv.shape[-1]))),
                    _adjoint(u))


def _imax(a: int, b: int) -> int:
    return a if a > b else b


def matrix_power(a, n: int):
    """``jnp.linalg.matrix_power``: ``a`` multiplied by itself ``n`` times (``n < 0``: of
    its inverse; 0: the identity), by repeated squaring.

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.matrix_power([[1, 1], [0, 1]], 3).tolist()
    [[1, 3], [0, 1]]
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power: expected n to be an int, got {n!r}")
    x = _t(a, "matrix_power")
    if x.rank < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: a must be square in its last two axes, got shape "
                         f"{x.shape}")
    if n < 0:
        x, n = O.linalg.invert(_inexact(x)), -n
    result = None
    base = x
    while True:
        if n & 1:
            result = base if result is None else O.matmul(result, base)
        n >>= 1
        if not n:
            break
        base = O.matmul(base, base)
    if result is None:
        eye = O.as_type(O.eye(x.shape[-1]), x.type)
        return O.broadcast(eye, x.shape) if x.rank > 2 else eye
    return result


def matrix_rank(M, rtol=None, *, hermitian: bool = False, tol=None):
    """``jnp.linalg.matrix_rank``: the number of singular values above ``tol`` (default
    ``rtol * max(s)``, ``rtol`` default ``max(m, n) * eps``), as s32.

    >>> import nxpy.numpy as xnp
    >>> xnp.linalg.matrix_rank([[1.0, 2.0], [2.0, 4.0]]).item()
    1
    """
    x = _matrix(M, "matrix_rank", "M")
    s = svd(x, compute_uv=False)
    last = s.rank - 1
    if tol is None:
        if rtol is None:
            rtol = _imax(*x.shape[-2:]) * _eps(x.type)
        thr = O.multiply(O.reduce_max(s, axes=[last], keep_axes=True),
                         O.tensor(rtol, type=s.type))
    else:
        thr = O.as_type(_t(tol, "matrix_rank", "tol"), s.type)
    return O.sum(O.as_type(O.greater(s, thr), "s32"), axes=[last])


def lstsq(a, b, rcond=None, *, numpy_resid: bool = False):
    """``jnp.linalg.lstsq``: ``(x, residuals, rank, s)``, the least-squares solution of
    ``a @ x = b`` from the SVD of ``a`` (singular values below ``rcond * max(s)`` dropped;
    default ``rcond``: ``eps * max(m, n)``).

    >>> import nxpy.numpy as xnp
    >>> x, res, rank, s = xnp.linalg.lstsq([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], [1.0, 2.0, 3.0])
    >>> x.tolist(), res.tolist(), rank.item()
    ([1.0, 2.0], [9.0], 2)
    """
    x = _matrix(a, "lstsq")
    y = _inexact(_t(b, "lstsq", "b"))
    if x.rank != 2:
        raise ValueError(f"lstsq: a must be a matrix, got shape {x.shape}")
    if y.rank not in (1, 2) or y.shape[0] != x.shape[0]:
        raise ValueError(f"lstsq: b of shape {y.shape} does not match a of shape {x.shape}")
    t = T.merge(x.type, y.type)
    x, y = _cast(x, t), _cast(y, t)
    vec = y.rank == 1
    if vec:
        y = O.reshape(y, (y.shape[0], 1))
    m, n = x.shape
    if rcond is None:
        rcond = _eps(t) * _imax(m, n)
    u, s, vt = O.linalg.svd(x, full_matrices=False)
    smax = O.reduce_max(s) if s.size else O.tensor(0, type=s.type)
    mask = O.greater_equal(s, O.multiply(O.tensor(rcond, type=s.type), smax))
    rank = O.sum(O.as_type(mask, "s32"))
    safe = O.select(mask, s, O.tensor(1, type=s.type))
    sinv = O.select(mask, O.divide(O.tensor(1, type=s.type), safe), O.tensor(0, type=s.type))
    utb = O.matmul(_adjoint(u), y)
    sol = O.matmul(_adjoint(vt), O.multiply(O.reshape(sinv, (sinv.shape[0], 1)), utb))
    resid = O.sum(_abs2(O.subtract(y, O.matmul(x, sol))), axes=[0])
    if vec:
        sol = O.reshape(sol, (n,))
    return sol, resid, rank, s
