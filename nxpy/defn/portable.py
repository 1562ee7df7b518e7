"""Portable implementations of the linear-algebra primitives, written in nxpy ops (as
Nx's defn fallbacks): what a backend without a kernel of its own
(:func:`nxpy.ops.core.op_method`) or a compiler without a rule for them
(:func:`nxpy.defn.core.expansions`) runs instead. Registered in
:data:`nxpy.ops.core.PORTABLE` on import.

* ``triangular_solve``: forward substitution in a ``fori_loop`` over the rows, after
  bringing every form (upper, transposed, right side, vectors) to ``lower @ x = b``.
* ``cholesky``: the Cholesky-Banachiewicz recurrence, one column per iteration.
* ``qr``: Householder reflections with LAPACK's conventions (``geqrf``: ``beta =
  -sign(alpha) * norm``), one column per iteration, ``q`` accumulated explicitly.
* ``lu``: Gaussian elimination with LAPACK's partial pivoting (``getrf``'s pivots, so
  the same ``p``, ``l``, ``u``), one column per iteration.
* ``eigh``: cyclic Jacobi rotations (real symmetric and complex Hermitian), sweeps until
  the off-diagonal norm is below ``eps`` relative to the matrix norm, or ``max_iter``
  sweeps (real symmetric and complex Hermitian: unitary rotations); eigenvalues sorted
  ascending as LAPACK's.
* ``svd``: one-sided (Hestenes) Jacobi rotations of the columns (real matrices),
  singular values descending.

Each works on batches (every leading dim) and keeps the input type.

>>> import nxpy as nx
>>> from nxpy.defn.portable import portable_cholesky
>>> portable_cholesky(nx.template((2, 2), "f32"), nx.tensor([[4.0, 2.0], [2.0, 5.0]])).tolist()
[[2.0, 0.0], [1.0, 2.0]]
"""
from __future__ import annotations

import ml_dtypes

from .. import ops, types as T
from ..ops.core import register_portable
from .kernel import fori_loop, while_loop

__all__ = ["portable_triangular_solve", "portable_cholesky", "portable_qr", "portable_eigh",
           "portable_lu", "pivots_to_permutation", "permutation_to_pivots", "householder",
           "householder_q", "portable_svd"]


def _conj(x):
    return ops.conjugate(x) if x.type.is_complex else x


def _swap(x):
    return ops.transpose(x, list(range(x.rank - 2)) + [x.rank - 1, x.rank - 2])


def _col(x, j):
    """Column ``j`` (a scalar tensor or int) of a batch of matrices: ``[..., m]``."""
    return ops.squeeze(ops.slice_along_axis(x, j, 1, axis=x.rank - 1), axes=[x.rank - 1])


def _row(x, j):
    return ops.squeeze(ops.slice_along_axis(x, j, 1, axis=x.rank - 2), axes=[x.rank - 2])


def _put_col(x, j, v):
    starts = [0] * (x.rank - 1) + [j]
    return ops.put_slice(x, starts, ops.new_axis(v, -1))


def _put_row(x, i, v):
    starts = [0] * (x.rank - 2) + [i, 0]
    return ops.put_slice(x, starts, ops.new_axis(v, -2))


def _lower_solve(a, b):
    """``x`` with ``tril(a) @ x = b`` (``b`` a batch of matrices)."""
    n = a.shape[-1]
    x0 = ops.multiply(b, 0)

    def body(i, x):
        ai = _row(a, i)                                  # [..., n]
        acc = ops.subtract(_row(b, i), _dot_row(ai, x))       # x's rows >= i are zero
        d = ops.slice_along_axis(ops.slice_along_axis(a, i, 1, axis=a.rank - 2), i, 1,
                                 axis=a.rank - 1)                # [..., 1, 1]
        return _put_row(x, i, ops.divide(acc, _scalar_col(d)))
    return fori_loop(0, n, body, x0)


def _dot_row(ai, x):
    """``ai @ x`` for a batch of rows ``ai`` [..., n] and matrices ``x`` [..., n, m]."""
    nb = ai.rank - 1
    batch = list(range(nb))
    return ops.dot(ai, [nb], batch, x, [nb], batch)


def _scalar_col(d):
    """``d`` [..., 1, 1] → [..., 1] (broadcasts over a row)."""
    return ops.squeeze(d, axes=[d.rank - 1])


@register_portable("triangular_solve")
def portable_triangular_solve(out, a, b, *, left_side=True, lower=True, transform_a="none"):
    vec = b.rank == a.rank - 1
    if vec:
        b = ops.new_axis(b, -1)            # a column (left) or a row, transposed below
    if transform_a == "transpose":
        a, lower = _swap(a), not lower
    if not left_side:                      # x op(a) = b  <=>  op(a)^T x^T = b^T
        a, lower = _swap(a), not lower
        if not vec:
            b = _swap(b)
    a = ops.tril(a) if lower else ops.triu(a)
    if not lower:                          # reverse rows and columns: upper becomes lower
        axes = [a.rank - 2, a.rank - 1]
        a = ops.reverse(a, axes=axes)
        b = ops.reverse(b, axes=[b.rank - 2])
    x = _lower_solve(a, b)
    if not lower:
        x = ops.reverse(x, axes=[x.rank - 2])
    if not left_side and not vec:
        x = _swap(x)
    if vec:
        x = ops.squeeze(x, axes=[x.rank - 1])
    return ops.as_type(x, out.type)


@register_portable("cholesky")
def portable_cholesky(out, x):
    n = x.shape[-1]
    a = ops.tril(x)
    a = ops.add(a, _conj(_swap(ops.tril(x, -1))))       # Hermitian from the lower triangle
    rows = ops.iota(x.shape[:-1], axis=x.rank - 2)

    def body(j, low):
        lj = _row(low, j)                                # row j, columns < j filled
        col = ops.subtract(_col(a, j), _dot_row(_conj(lj), _swap(low)))  # a[:, j] - L L[j]^H
        d = ops.sqrt(ops.real(_pick(col, rows, j)) if col.type.is_complex else _pick(col, rows, j))
        d = ops.as_type(d, low.type)
        new = ops.select(ops.greater(rows, j), ops.divide(col, ops.new_axis(d, -1)),
                         ops.select(ops.equal(rows, j), ops.new_axis(d, -1), 0))
        return _put_col(low, j, ops.as_type(new, low.type))
    return fori_loop(0, n, body, ops.multiply(a, 0))


def _pick(v, pos, j):
    """``v[..., j]`` (``pos`` the iota along v's last axis)."""
    return ops.sum(ops.select(ops.equal(pos, j), v, 0), axes=[v.rank - 1])


@register_portable("qr")
def portable_qr(outs, x, *, mode="reduced", eps=1e-10):
    q_out, r_out = outs
    *batch, m, n = x.shape
    k = min(m, n)
    rows = ops.iota(tuple(batch) + (m,), axis=len(batch))
    eye = ops.eye(tuple(batch) + (m, m), type=x.type) if batch else ops.eye(m, type=x.type)
    rt = T.to_real(x.type) if x.type.is_complex else x.type

    def body(j, state):
        r, q = state
        col = ops.select(ops.greater_equal(rows, j), _col(r, j), 0)          # a[j:, j]
        alpha = _pick(col, rows, j)
        norm = ops.sqrt(ops.sum(ops.as_type(ops.multiply(ops.abs(col), ops.abs(col)), rt),
                                axes=[col.rank - 1]))
        are = ops.real(alpha) if alpha.type.is_complex else alpha
        sign = ops.select(ops.less(are, 0), -1, 1)
        beta = ops.as_type(ops.multiply(ops.negate(ops.as_type(sign, rt)), norm), x.type)
        tail = ops.select(ops.greater(rows, j), col, 0)
        tail_norm = ops.sum(ops.as_type(ops.multiply(ops.abs(tail), ops.abs(tail)), rt),
                            axes=[col.rank - 1])
        skip = ops.equal(tail_norm, 0) if not x.type.is_complex else ops.logical_and(
            ops.equal(tail_norm, 0), ops.equal(ops.imag(alpha), 0))
        denom = ops.subtract(alpha, beta)
        safe = ops.select(skip, 1, denom)
        v = ops.add(ops.divide(tail, ops.new_axis(safe, -1)),
                    ops.as_type(ops.equal(rows, j), x.type))              # v[j] = 1
        tau = ops.select(skip, 0, ops.divide(ops.subtract(beta, alpha), ops.select(skip, 1, beta)))
        # H = I - tau v v^H; r <- H^H r (LAPACK applies H^H = I - conj(tau) v v^H), q <- q H
        vh = _conj(v)
        w = _dot_row(vh, r)                                   # v^H r  [..., n]
        ctv = ops.multiply(ops.new_axis(_conj(tau), -1), v)     # conj(tau) v  [..., m]
        r = ops.subtract(r, ops.multiply(ops.new_axis(ctv, -1), ops.new_axis(w, -2)))
        qv = _matvec(q, v)
        q = ops.subtract(q, ops.multiply(ops.new_axis(ops.multiply(ops.new_axis(tau, -1), qv), -1),
                                         ops.new_axis(vh, -2)))
        return r, q
    r, q = fori_loop(0, k, body, (x, eye))
    r = ops.triu(r)
    qc, rr = q_out.shape[-1], r_out.shape[-2]
    q = ops.slice_along_axis(q, 0, qc, axis=q.rank - 1)
    r = ops.slice_along_axis(r, 0, rr, axis=r.rank - 2)
    return [ops.as_type(q, q_out.type), ops.as_type(r, r_out.type)]


def _matvec(a, v):
    nb = a.rank - 2
    batch = list(range(nb))
    return ops.dot(a, [nb + 1], batch, v, [nb], batch)


def _el(a, p, q):
    """``a[..., p, q]`` for static ``p``, ``q``: shape ``[...]``."""
    r = a.rank
    s = ops.slice_along_axis(ops.slice_along_axis(a, p, 1, axis=r - 2), q, 1, axis=r - 1)
    return ops.squeeze(s, axes=[r - 2, r - 1])


def _rotate_cols(a, p, q, c, s, s_qp=None):
    """Columns ``p``, ``q`` of ``a`` to ``c a_p + s_qp a_q`` and ``s a_p + c a_q`` (``a J``
    with ``J = [[c, s], [s_qp, c]]`` in the ``(p, q)`` plane; ``s_qp`` defaults to ``-s``)."""
    ap, aq = _col(a, p), _col(a, q)
    c1, s1 = ops.new_axis(c, -1), ops.new_axis(s, -1)
    t1 = ops.negate(s1) if s_qp is None else ops.new_axis(s_qp, -1)
    a = _put_col(a, p, ops.add(ops.multiply(c1, ap), ops.multiply(t1, aq)))
    return _put_col(a, q, ops.add(ops.multiply(s1, ap), ops.multiply(c1, aq)))


@register_portable("eigh")
def portable_eigh(outs, x, *, max_iter=1000, eps=1e-4):
    """Cyclic Jacobi: for each pair ``(p, q)`` the unitary rotation ``J = D J0 D^H``
    (``D`` the phase of ``a_pq``, ``J0`` the real rotation zeroing it) gives
    ``J^H A J`` with ``a_pq = 0``; sweeps until the off-diagonal norm is below ``eps``
    times the matrix norm, or ``max_iter`` sweeps."""
    w_out, v_out = outs
    n = x.shape[-1]
    cplx = x.type.is_complex
    rt = T.to_real(x.type) if cplx else x.type
    eye = ops.eye(x.shape, type=x.type) if x.rank > 2 else ops.eye(n, type=x.type)
    a = ops.add(ops.tril(x), _conj(_swap(ops.tril(x, -1))))    # Hermitian from the lower triangle
    if cplx:  # LAPACK ignores the imaginary parts of the diagonal
        a = ops.select(ops.not_equal(eye, 0), ops.as_type(ops.real(a), x.type), a)

    def sq(v):
        return ops.as_type(ops.multiply(ops.abs(v), ops.abs(v)), rt)

    # as accurate as LAPACK whatever ``eps`` says (the native paths ignore it too)
    eps = min(float(eps), float(ml_dtypes.finfo(rt.dtype).eps))
    tol = ops.multiply(ops.sum(sq(a)), eps * eps)
    off_mask = ops.as_type(ops.subtract(1, ops.real(eye) if cplx else eye), rt)

    def off(a):
        return ops.sum(ops.multiply(sq(a), off_mask))

    def sweep(state):
        a, v, it = state
        for p in range(n - 1):
            for q in range(p + 1, n):
                apq, app, aqq = _el(a, p, q), _el(a, p, p), _el(a, q, q)
                mag = ops.abs(apq) if cplx else apq   # real: the sign is the phase
                zero = ops.equal(mag, 0)
                re_pp, re_qq = (ops.real(app), ops.real(aqq)) if cplx else (app, aqq)
                theta = ops.divide(ops.subtract(re_qq, re_pp),
                                   ops.multiply(2, ops.select(zero, 1, mag)))
                sgn = ops.select(ops.less(theta, 0), -1.0, 1.0)
                t = ops.divide(sgn, ops.add(ops.abs(theta),
                                            ops.sqrt(ops.add(ops.multiply(theta, theta), 1))))
                t = ops.select(zero, 0, ops.as_type(t, rt))
                c = ops.rsqrt(ops.add(ops.multiply(t, t), 1))
                s = ops.multiply(t, c)
                if cplx:
                    phase = ops.divide(apq, ops.as_type(ops.select(zero, 1, mag), x.type))
                    c = ops.as_type(c, x.type)
                    s_pq = ops.multiply(ops.as_type(s, x.type), phase)              # s e^{i phi}
                    s_qp = ops.negate(ops.multiply(ops.as_type(s, x.type), _conj(phase)))
                else:
                    s_pq, s_qp = s, None
                a = _rotate_cols(a, p, q, c, s_pq, s_qp)                   # A J
                # J^H (A J) = ((A J)^H J)^H
                a = _conj(_swap(_rotate_cols(_conj(_swap(a)), p, q, c, s_pq, s_qp)))
                v = _rotate_cols(v, p, q, c, s_pq, s_qp)
        return a, v, it + 1

    def more(state):
        a, _, it = state
        return ops.logical_and(ops.less(it, max_iter), ops.greater(off(a), tol))

    a, v, _ = while_loop(more, sweep, (a, eye, 0)) if n > 1 else (a, eye, 0)
    w = ops.take_diagonal(a)
    w = ops.real(w) if cplx else w
    order = ops.argsort(w, axis=w.rank - 1)
    w = ops.take_along_axis(w, order, axis=w.rank - 1)
    idx = ops.broadcast(ops.new_axis(order, -2), v.shape)
    v = ops.take_along_axis(v, idx, axis=v.rank - 1)
    return [ops.as_type(w, w_out.type), ops.as_type(v, v_out.type)]


# ----------------------------------------------------------------------------------------
# LAPACK's representations (used by EXLA's lu lowering and the StableHLO importer's
# rules for JAX's getrf/geqrf/orgqr calls)
# ----------------------------------------------------------------------------------------
def _pick_last(v, pos, idx):
    """``v[..., idx]`` with ``pos`` the iota along v's last axis (``idx`` broadcasts)."""
    return ops.sum(ops.select(ops.equal(pos, idx), v, 0), axes=[v.rank - 1])


def pivots_to_permutation(ipiv, n: int):
    """The row permutation ``perm`` (``a[..., perm, :] == l @ u``) of LAPACK's 1-based
    sequential row swaps ``ipiv`` (``getrf``), for matrices with ``n`` rows."""
    *batch, k = ipiv.shape
    pos = ops.iota(tuple(batch) + (n,), axis=len(batch))
    kpos = ops.iota(ipiv.shape, axis=len(batch))
    piv = ops.subtract(ops.as_type(ipiv, T.S32), 1)

    def body(i, perm):
        j = ops.new_axis(_pick_last(piv, kpos, i), -1)
        pi = ops.new_axis(_pick_last(perm, pos, i), -1)
        pj = ops.new_axis(_pick_last(perm, pos, j), -1)
        return ops.select(ops.equal(pos, i), pj, ops.select(ops.equal(pos, j), pi, perm))
    return fori_loop(0, k, body, pos)


def permutation_to_pivots(perm, k: int):
    """LAPACK's 1-based sequential row swaps (``getrf``'s ``ipiv``, ``k`` of them) that
    arrange the rows as ``perm``: the inverse of :func:`pivots_to_permutation`."""
    *batch, n = perm.shape
    pos = ops.iota(perm.shape, axis=len(batch))
    kpos = ops.iota(tuple(batch) + (k,), axis=len(batch))

    def body(i, state):
        cur, ipiv = state
        want = ops.new_axis(_pick_last(perm, pos, i), -1)
        # the position j >= i holding row perm[i]
        j = ops.new_axis(_pick_last(pos, cur, want), -1)
        ci = ops.new_axis(_pick_last(cur, pos, i), -1)
        cur = ops.select(ops.equal(pos, i), want, ops.select(ops.equal(pos, j), ci, cur))
        ipiv = ops.select(ops.equal(kpos, i), ops.add(j, 1), ipiv)
        return cur, ipiv
    return fori_loop(0, k, body, (pos, ops.multiply(kpos, 0)))[1]


def householder(x):
    """``(packed, tau)`` as LAPACK's ``geqrf``: ``r`` on and above the diagonal, the
    Householder vectors (unit leading entry implied) below it, and their factors."""
    *batch, m, n = x.shape
    k = min(m, n)
    rows = ops.iota(tuple(batch) + (m,), axis=len(batch))
    kpos = ops.iota(tuple(batch) + (k,), axis=len(batch))
    rt = T.to_real(x.type) if x.type.is_complex else x.type

    def body(j, state):
        r, vs, taus = state
        col = ops.select(ops.greater_equal(rows, j), _col(r, j), 0)
        alpha = _pick(col, rows, j)
        norm = ops.sqrt(ops.sum(ops.as_type(ops.multiply(ops.abs(col), ops.abs(col)), rt),
                                axes=[col.rank - 1]))
        are = ops.real(alpha) if alpha.type.is_complex else alpha
        beta = ops.as_type(ops.multiply(ops.negate(ops.as_type(
            ops.select(ops.less(are, 0), -1, 1), rt)), norm), x.type)
        tail = ops.select(ops.greater(rows, j), col, 0)
        tail_norm = ops.sum(ops.as_type(ops.multiply(ops.abs(tail), ops.abs(tail)), rt),
                            axes=[col.rank - 1])
        skip = ops.equal(tail_norm, 0) if not x.type.is_complex else ops.logical_and(
            ops.equal(tail_norm, 0), ops.equal(ops.imag(alpha), 0))
        v = ops.add(ops.divide(tail, ops.new_axis(ops.select(skip, 1, ops.subtract(alpha, beta)),
                                                  -1)),
                    ops.as_type(ops.equal(rows, j), x.type))
        tau = ops.select(skip, 0, ops.divide(ops.subtract(beta, alpha), ops.select(skip, 1, beta)))
        w = _dot_row(_conj(v), r)
        ctv = ops.multiply(ops.new_axis(_conj(tau), -1), v)
        r = ops.subtract(r, ops.multiply(ops.new_axis(ctv, -1), ops.new_axis(w, -2)))
        vs = _put_col(vs, j, ops.select(ops.greater(rows, j), v, 0))
        taus = ops.select(ops.equal(kpos, j), ops.new_axis(tau, -1), taus)
        return r, vs, taus
    zeros_k = ops.as_type(ops.multiply(kpos, 0), x.type)
    r, vs, taus = fori_loop(0, k, body, (x, ops.multiply(x, 0), zeros_k))
    return ops.add(ops.triu(r), ops.tril(vs, -1)), taus


def householder_q(packed, tau):
    """``q`` from ``geqrf``'s ``(packed, tau)``, with ``packed``'s shape (``orgqr``)."""
    *batch, m, c = packed.shape
    k = tau.shape[-1]
    rows = ops.iota(tuple(batch) + (m,), axis=len(batch))
    kpos = ops.iota(tau.shape, axis=len(batch))
    eye = ops.as_type(ops.equal(ops.iota(packed.shape, axis=len(batch)),
                                ops.iota(packed.shape, axis=len(batch) + 1)), packed.type)

    def body(i, q):
        j = k - 1 - i
        v = ops.add(ops.select(ops.greater(rows, j), _col(packed, j), 0),
                    ops.as_type(ops.equal(rows, j), packed.type))
        t = _pick_last(tau, kpos, j)
        w = _dot_row(_conj(v), q)                               # v^H q
        tv = ops.multiply(ops.new_axis(t, -1), v)
        return ops.subtract(q, ops.multiply(ops.new_axis(tv, -1), ops.new_axis(w, -2)))
    return fori_loop(0, k, body, eye)


@register_portable("lu")
def portable_lu(outs, x, *, eps=1e-10):
    """Gaussian elimination with partial pivoting as LAPACK's ``getrf`` (the first row of
    largest magnitude, ``|re| + |im|`` for complex numbers, becomes the pivot)."""
    p_out, l_out, u_out = outs
    *batch, n, _ = x.shape
    rows = ops.iota(tuple(batch) + (n,), axis=len(batch))          # [..., n]
    rows2 = ops.iota(x.shape, axis=x.rank - 2)
    cols2 = ops.iota(x.shape, axis=x.rank - 1)

    def mag(v):
        return ops.add(ops.abs(ops.real(v)), ops.abs(ops.imag(v))) if v.type.is_complex \
            else ops.abs(v)

    def body(k, state):
        a, perm = state
        col = _col(a, k)
        m = ops.select(ops.greater_equal(rows, k), mag(col), -1)
        piv = ops.argmax(m, axis=m.rank - 1)                       # [...]
        pv = ops.new_axis(piv, -1)
        rk, rp = _row(a, k), ops.sum(ops.select(ops.new_axis(ops.equal(rows, pv), -1), a, 0),
                                     axes=[a.rank - 2])
        is_k = ops.new_axis(ops.equal(rows, k), -1)
        is_p = ops.new_axis(ops.equal(rows, pv), -1)
        a = ops.select(is_k, ops.new_axis(rp, -2), ops.select(is_p, ops.new_axis(rk, -2), a))
        pk, pp = _pick(perm, rows, k), _pick(perm, rows, pv)
        perm = ops.select(ops.equal(rows, k), ops.new_axis(pp, -1),
                          ops.select(ops.equal(rows, pv), ops.new_axis(pk, -1), perm))
        d = ops.new_axis(_pick(_col(a, k), rows, k), -1)            # the pivot [..., 1]
        below = ops.greater(rows, k)
        mult = ops.select(ops.logical_and(below, ops.not_equal(d, 0)),
                          ops.divide(_col(a, k), ops.select(ops.equal(d, 0), 1, d)), 0)
        upd = ops.multiply(ops.new_axis(mult, -1), ops.new_axis(_row(a, k), -2))
        right = ops.logical_and(ops.greater(rows2, k), ops.greater(cols2, k))
        a = ops.select(right, ops.subtract(a, upd), a)
        a = ops.select(ops.logical_and(ops.greater(rows2, k), ops.equal(cols2, k)),
                       ops.new_axis(mult, -1), a)
        return a, perm
    a, perm = fori_loop(0, max(n - 1, 0), body, (x, rows)) if n else (x, rows)
    eye = ops.as_type(ops.equal(rows2, cols2), x.type)
    low = ops.add(ops.tril(a, -1), eye)
    u = ops.triu(a)
    p = ops.equal(ops.new_axis(perm, -2), rows2)                    # p[r, c] = perm[c] == r
    return [ops.as_type(p, p_out.type), ops.as_type(low, l_out.type), ops.as_type(u, u_out.type)]


def _jacobi_svd_tall(a, max_iter):
    """One-sided Jacobi (Hestenes) on ``a`` with ``m >= n``: ``(a v, v)`` with the
    columns of ``a v`` mutually orthogonal."""
    n = a.shape[-1]
    eye = ops.eye(a.shape[:-2] + (n, n), type=a.type) if a.rank > 2 else ops.eye(n, type=a.type)
    tiny = 1e-6 if a.type.bits <= 32 else 1e-14
    nb = a.rank - 2
    batch = list(range(nb))

    def off(a):
        g = ops.dot(a, [nb], batch, a, [nb], batch)                 # a^T a
        d = ops.take_diagonal(g)
        dd = ops.multiply(ops.new_axis(d, -1), ops.new_axis(d, -2))
        r = ops.divide(ops.multiply(g, g), ops.select(ops.equal(dd, 0), 1, dd))
        return ops.reduce_max(ops.multiply(r, ops.subtract(1, eye)))

    def sweep(state):
        a, v, it = state
        for p in range(n - 1):
            for q in range(p + 1, n):
                ap, aq = _col(a, p), _col(a, q)
                alpha = ops.sum(ops.multiply(ap, ap), axes=[ap.rank - 1])
                beta = ops.sum(ops.multiply(aq, aq), axes=[aq.rank - 1])
                gamma = ops.sum(ops.multiply(ap, aq), axes=[ap.rank - 1])
                zero = ops.equal(gamma, 0)
                zeta = ops.divide(ops.subtract(beta, alpha),
                                  ops.multiply(2, ops.select(zero, 1, gamma)))
                sgn = ops.select(ops.less(zeta, 0), -1.0, 1.0)
                t = ops.divide(sgn, ops.add(ops.abs(zeta),
                                            ops.sqrt(ops.add(ops.multiply(zeta, zeta), 1))))
                t = ops.select(zero, 0, ops.as_type(t, a.type))
                c = ops.rsqrt(ops.add(ops.multiply(t, t), 1))
                s = ops.multiply(t, c)
                a = _rotate_cols(a, p, q, c, s)
                v = _rotate_cols(v, p, q, c, s)
        return a, v, it + 1

    def more(state):
        a, _, it = state
        return ops.logical_and(ops.less(it, max_iter), ops.greater(off(a), tiny * tiny))

    if n < 2:
        return a, eye
    a, v, _ = while_loop(more, sweep, (a, eye, 0))
    return a, v


@register_portable("svd")
def portable_svd(outs, x, *, full_matrices=True, max_iter=100):
    """One-sided Jacobi rotations (real matrices), singular values descending; with
    ``full_matrices`` the extra columns of ``u`` (or rows of ``vt``) complete an
    orthonormal basis through a complete Householder QR."""
    u_out, s_out, vt_out = outs
    if x.type.is_complex:
        raise NotImplementedError("the portable svd takes real matrices only (as Nx's svd)")
    *batch, m, n = x.shape
    wide = m < n
    a = _swap(x) if wide else x                                  # tall: m' >= n'
    mm, nn = a.shape[-2], a.shape[-1]
    av, v = _jacobi_svd_tall(a, max(int(max_iter), 1))
    s = ops.sqrt(ops.sum(ops.multiply(av, av), axes=[av.rank - 2]))   # [..., nn]
    order = ops.argsort(ops.negate(s), axis=s.rank - 1)
    s = ops.take_along_axis(s, order, axis=s.rank - 1)
    cols = ops.broadcast(ops.new_axis(order, -2), av.shape)
    av = ops.take_along_axis(av, cols, axis=av.rank - 1)
    v = ops.take_along_axis(v, ops.broadcast(ops.new_axis(order, -2), v.shape), axis=v.rank - 1)
    u = ops.divide(av, ops.new_axis(ops.select(ops.equal(s, 0), 1, s), -2))
    if full_matrices and mm > nn:                                # complete u to mm x mm
        q = portable_qr([ops.template(u.shape[:-1] + (mm,), u.type),
                         ops.template(u.shape, u.type)], u, mode="complete")[0]
        u = ops.concatenate([u, ops.slice_along_axis(q, nn, mm - nn, axis=q.rank - 1)],
                            axis=u.rank - 1)
    if wide:                                                     # x = (a)^T = v s u^T
        u, v = v, u
    vt = _swap(v)
    return [ops.as_type(u, u_out.type), ops.as_type(s, s_out.type), ops.as_type(vt, vt_out.type)]
