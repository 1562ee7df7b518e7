"""The NumPy backend's kernels for the linear-algebra primitives: cholesky, qr, eigh, svd
(``numpy.linalg``: LAPACK's potrf, geqrf + orgqr, syevd/heevd, gesdd), and lu,
triangular_solve and solve written here: Gaussian elimination with partial pivoting as
LAPACK's ``getrf`` chooses its pivots (the first row of largest magnitude, ``|re| + |im|``
for complex numbers, as ``i?amax``), and substitution. These three give the same bits on
every CPU (one order of operations); LAPACK's routines follow OpenBLAS's kernels, which
the CPU picks.

Errors follow Nx's default backend: a matrix that is not positive definite (cholesky) and
a triangular matrix with a zero on its diagonal (triangular_solve) raise ValueError.
Decompositions that LAPACK cannot converge (NaN inputs in eigh or svd) give NaNs, as
``jnp.linalg`` does. Types narrower than f32 compute in f32.
"""
from __future__ import annotations

import numpy as np

from ...types import convert
from . import libm

__all__ = ["LinalgKernels", "lu_factor", "solve_triangular"]


def _compute(a: np.ndarray) -> np.ndarray:
    """``a`` in a dtype LAPACK takes (f16/bf16 → f32)."""
    if a.dtype.kind == "c":
        return a if a.dtype in (np.complex64, np.complex128) else a.astype(np.complex64)
    return a if a.dtype in (np.float32, np.float64) else a.astype(np.float32)


def _magnitude(a):
    """LAPACK's pivot magnitude: ``|x|``, or ``|re| + |im|`` for complex numbers."""
    return np.abs(a.real) + np.abs(a.imag) if a.dtype.kind == "c" else np.abs(a)


def lu_factor(a: np.ndarray):
    """``(perm, l, u)`` of a batch of square matrices with ``a[..., perm, :] == l @ u``
    (``getrf``'s partial pivoting; a zero pivot column is left as it is, as ``getrf``)."""
    a = np.array(a, copy=True)
    *batch, n, _ = a.shape
    perm = np.broadcast_to(np.arange(n), a.shape[:-1]).copy()
    flat = a.reshape(-1, n, n)
    pf = perm.reshape(-1, n)
    rows = np.arange(flat.shape[0])
    for k in range(n - 1):
        piv = k + np.argmax(_magnitude(flat[:, k:, k]), axis=1)
        swap = piv != k
        if swap.any():
            r = rows[swap]
            pk = piv[swap]
            tmp = flat[r, k].copy()
            flat[r, k] = flat[r, pk]
            flat[r, pk] = tmp
            tp = pf[r, k].copy()
            pf[r, k] = pf[r, pk]
            pf[r, pk] = tp
        d = flat[:, k, k]
        nz = d != 0
        with np.errstate(all="ignore"):
            m = np.where(nz[:, None], flat[:, k + 1:, k] / np.where(nz, d, 1)[:, None], 0)
        # a zero pivot: getrf leaves the column below it unscaled and goes on
        m = np.where(nz[:, None], m, flat[:, k + 1:, k])
        flat[:, k + 1:, k] = m
        upd = np.where(nz[:, None, None], libm.multiply(m[:, :, None], flat[:, k, None, k + 1:]),
                       0)
        flat[:, k + 1:, k + 1:] -= upd
    eye = np.eye(n, dtype=a.dtype)
    low = np.tril(flat, -1) + eye
    u = np.triu(flat)
    return perm, low.reshape(a.shape), u.reshape(a.shape)


def solve_triangular(a, b, lower: bool, unit: bool = False):
    """``inv(a) @ b`` for a batch of triangular ``a`` (only its ``lower`` or upper triangle
    read) and matrices ``b``, by substitution, one row at a time."""
    n = a.shape[-1]
    x = np.zeros(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + b.shape[-2:],
                 np.result_type(a, b))
    order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            if lower:
                acc = b[..., i, :] - np.einsum("...j,...jk->...k", a[..., i, :i], x[..., :i, :])
            else:
                acc = b[..., i, :] - np.einsum("...j,...jk->...k", a[..., i, i + 1:],
                                               x[..., i + 1:, :])
            x[..., i, :] = acc if unit else acc / a[..., i, i, None]
    return x


def _nan_like(shape, dtype):
    return np.full(shape, np.nan, dtype)


class LinalgKernels:
    """Mixed into :class:`~nxpy.backends.numpy.NumpyBackend` (it uses ``BaseKernels._wrap``)."""

    def cholesky(self, out, x):
        a = _compute(x.data)
        if a.size == 0:
            return self._wrap(out, np.zeros(a.shape, a.dtype))
        try:
            with np.errstate(all="ignore"):
                low = np.linalg.cholesky(a)  # reads the lower triangle only
        except np.linalg.LinAlgError:
            raise ValueError("cholesky: the matrix is not positive definite (Nx's default "
                             "backend raises here; compiled programs give NaNs)") from None
        if not np.isfinite(low).all():
            raise ValueError("cholesky: the matrix is not positive definite (it holds NaN "
                             "or infinite values)")
        return self._wrap(out, low)

    def triangular_solve(self, out, a, b, left_side, lower, transform_a):
        am, bm = _compute(a.data), _compute(b.data)
        n = am.shape[-1]
        if am.size and (np.diagonal(am, axis1=-2, axis2=-1) == 0).any():
            raise ValueError("can't solve for singular matrix")
        if n == 0 or bm.size == 0:
            return self._wrap(out, np.zeros(bm.shape, bm.dtype))
        vec = bm.ndim == am.ndim - 1
        if transform_a == "transpose":
            am, lower = np.swapaxes(am, -1, -2), not lower
        if vec:
            bm = bm[..., :, None]
        if not left_side and not vec:
            # x op(a) = b  <=>  op(a)^T x^T = b^T
            am, lower, bm = np.swapaxes(am, -1, -2), not lower, np.swapaxes(bm, -1, -2)
        elif not left_side:  # a row vector x with x op(a) = b: op(a)^T x = b
            am, lower = np.swapaxes(am, -1, -2), not lower
        x = solve_triangular(am, bm, lower)
        if not left_side and not vec:
            x = np.swapaxes(x, -1, -2)
        if vec:
            x = x[..., 0]
        return self._wrap(out, x)

    def solve(self, out, a, b):
        am, bm = _compute(a.data), _compute(b.data)
        dt = np.result_type(am, bm)
        am, bm = am.astype(dt, copy=False), bm.astype(dt, copy=False)
        if am.shape[-1] == 0 or bm.size == 0:
            return self._wrap(out, np.zeros(bm.shape, dt))
        vec = bm.ndim == am.ndim - 1
        bb = bm[..., None] if vec else bm
        # getrf's elimination and two substitutions, here rather than LAPACK's gesv: its
        # kernels follow the CPU, and so whether a singular matrix meets an exactly zero
        # pivot (NaN, as Nx) or a rounding error's (a finite answer)
        perm, low, u = lu_factor(am)
        pb = np.take_along_axis(np.broadcast_to(bb, am.shape[:-2] + bb.shape[-2:]),
                                perm[..., :, None], axis=-2)
        x = solve_triangular(u, solve_triangular(low, pb, True, unit=True), False)
        singular = (np.diagonal(u, axis1=-2, axis2=-1) == 0).any(-1)
        x = np.where(singular[..., None, None], np.array(np.nan, dt), x)
        return self._wrap(out, x[..., 0] if vec else x)

    def lu(self, outs, x, eps):
        a = _compute(x.data)
        p_out, l_out, u_out = outs
        n = a.shape[-1]
        perm, low, u = lu_factor(a)
        p = np.zeros(a.shape, np.float64)
        # a[perm] = l u, so a = p l u with p[perm[i], i] = 1
        np.put_along_axis(p, perm[..., :, None], 1.0, axis=-1) if n else None
        p = np.swapaxes(p, -1, -2)
        return [self._wrap(p_out, convert(p, p_out.type)), self._wrap(l_out, low),
                self._wrap(u_out, u)]

    def qr(self, outs, x, mode, eps):
        a = _compute(x.data)
        q_out, r_out = outs
        if a.size == 0:
            m = a.shape[-2]
            q = np.zeros(q_out.shape, a.dtype)
            if q_out.shape[-1] == m and m:  # complete: q is the identity
                q = np.broadcast_to(np.eye(m, dtype=a.dtype), q_out.shape)
            return [self._wrap(q_out, q), self._wrap(r_out, np.zeros(r_out.shape, a.dtype))]
        with np.errstate(all="ignore"):
            q, r = np.linalg.qr(a, mode=mode)
        return [self._wrap(q_out, q), self._wrap(r_out, r)]

    def eigh(self, outs, x, max_iter, eps):
        a = _compute(x.data)
        w_out, v_out = outs
        if a.size == 0:
            return [self._wrap(w_out, np.zeros(w_out.shape, w_out.type.dtype)),
                    self._wrap(v_out, np.zeros(v_out.shape, a.dtype))]
        try:
            with np.errstate(all="ignore"):
                w, v = np.linalg.eigh(a, UPLO="L")
        except np.linalg.LinAlgError:  # NaNs: no convergence (JAX: NaNs)
            w, v = _nan_like(w_out.shape, w_out.type.dtype), _nan_like(v_out.shape, a.dtype)
        return [self._wrap(w_out, w), self._wrap(v_out, v)]

    def svd(self, outs, x, full_matrices, max_iter):
        a = _compute(x.data)
        u_out, s_out, vt_out = outs
        if a.size == 0:
            def eye_or_zeros(o):
                m = o.shape[-1]
                if o.shape[-2] == m and m:
                    return np.broadcast_to(np.eye(m, dtype=a.dtype), o.shape)
                return np.zeros(o.shape, a.dtype)
            return [self._wrap(u_out, eye_or_zeros(u_out)),
                    self._wrap(s_out, np.zeros(s_out.shape, s_out.type.dtype)),
                    self._wrap(vt_out, eye_or_zeros(vt_out))]
        try:
            with np.errstate(all="ignore"):
                u, s, vt = np.linalg.svd(a, full_matrices=full_matrices)
        except np.linalg.LinAlgError:
            u, s, vt = (_nan_like(o.shape, o.type.dtype) for o in outs)
        return [self._wrap(u_out, u), self._wrap(s_out, s), self._wrap(vt_out, vt)]
