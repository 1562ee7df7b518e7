"""The linear-algebra primitives: cholesky, triangular_solve, lu, qr, eigh, svd (the
backend callbacks of Nx's ``Nx.LinAlg``), with their gradient rules.

Each is described here once (validation with Nx's messages, output shapes, types and
names as Nx infers them), then dispatched: the NumPy backend computes them with LAPACK
(NumPy's, and its own partial-pivoting LU and substitution solves), EXLA with the LAPACK
routines jaxlib ships (``stablehlo.custom_call``), and a backend or compiler with no
kernel of its own uses the portable implementation registered in
:data:`nxpy.ops.core.PORTABLE` (Householder QR, Jacobi eigh, Cholesky by columns,
substitution: ``nxpy.defn.portable``). The public module is :mod:`nxpy.linalg`, which
adds the compositions (solve, invert, determinant, norm, pinv, ...).

Types: integer inputs compute in ``f32`` (``Nx.Type.to_floating``); complex inputs stay
complex, and eigenvalues and singular values are real (``c64`` → ``f32``). Batched over
every leading dimension.

>>> import nxpy as nx
>>> from nxpy.ops.linalg import cholesky, triangular_solve
>>> l = cholesky(nx.tensor([[4.0, 2.0], [2.0, 5.0]]))
>>> l.tolist()
[[2.0, 0.0], [1.0, 2.0]]
>>> triangular_solve(l, nx.tensor([2.0, 5.0])).tolist()
[1.0, 2.0]
"""
from __future__ import annotations

import functools
import numbers

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import (_out, as_type, dispatch, dispatch_multi, primitive, register_grad_rule,
                   register_portable, renamed, to_tensor)
from .complex import conjugate, real, to_real_type
from .compositions import take_diagonal, tril, triu
from .contraction import dot
from .creation import eye, iota, full
from .indexing import slice_along_axis
from . import elementwise as E, reductions as R
from .elementwise import add, divide, multiply, not_equal, select, subtract
from .shaping import broadcast, new_axis, squeeze, transpose

__all__ = ["cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "adjoint",
           "batch_matmul", "LINALG", "solve", "invert", "determinant", "norm", "pinv",
           "matrix_power", "least_squares", "matrix_rank"]

#: the family's primitives (backend callbacks)
LINALG = ("cholesky", "triangular_solve", "lu", "qr", "eigh", "svd", "solve")

primitive("linalg", *LINALG, props=("batched_matrix",))


# ----------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------
def _floating(x: Tensor) -> Tensor:
    """``x`` in its floating type (``Nx.Type.to_floating``: integers and pred → f32)."""
    t = T.to_floating(x.type)
    return x if t == x.type else as_type(x, t)


def _square(op, x: Tensor, message=None):
    if x.rank < 2:
        raise ValueError(f"{op}: tensor must have at least rank 2, got rank {x.rank} with "
                         f"shape {x.shape}")
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(message or f"{op}: tensor must be a square matrix or a batch of "
                                    f"square matrices, got shape: {x.shape}")


def _no_names(rank):
    return (None,) * rank


def adjoint(x) -> Tensor:
    """The (batched) adjoint: the two innermost axes transposed, and conjugated if complex
    (``Nx.LinAlg.adjoint``).

    >>> import nxpy as nx
    >>> adjoint(nx.tensor([[1, 2], [3, 4]])).tolist()
    [[1, 3], [2, 4]]
    """
    x = to_tensor(x, "tensor")
    if x.rank < 2:
        return conjugate(x) if x.type.is_complex else x
    axes = list(range(x.rank - 2)) + [x.rank - 1, x.rank - 2]
    t = transpose(x, axes)
    return conjugate(t) if x.type.is_complex else t


def batch_matmul(a: Tensor, b: Tensor) -> Tensor:
    """``a @ b`` over the two innermost axes, with the leading axes (equal in both) as
    batch axes; ``b`` may be a batch of vectors (one axis fewer than ``a``)."""
    nb = a.rank - 2
    batch = list(range(nb))
    return dot(a, [a.rank - 1], batch, b, [nb], batch)


def _option(op, name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{op}: invalid value for :{name} option, expected "
                         f"{', '.join(repr(a) for a in allowed)}, got: {value!r}")
    return value


def _number(op, name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: expected {name} to be a number, got {value!r}")
    return float(value)


def _int_option(op, name, value):
    if S.as_int(value) is None or S.as_int(value) < 1:
        raise ValueError(f"{op}: expected {name} to be a positive integer, got {value!r}")
    return S.as_int(value)


# ----------------------------------------------------------------------------------------
# The primitives
# ----------------------------------------------------------------------------------------
def cholesky(tensor) -> Tensor:
    """The lower-triangular ``L`` with ``L @ adjoint(L) == tensor``, for a batch of
    Hermitian (symmetric if real) positive-definite matrices (``Nx.LinAlg.cholesky``).
    Only the lower triangle of the input is read (LAPACK's ``potrf``). A matrix that is
    not positive definite is an error on the NumPy backend (as Nx's default backend) and
    gives NaNs on EXLA (as ``jnp.linalg.cholesky``).

    >>> import nxpy as nx
    >>> low = cholesky(nx.tensor([[20.0, 17.6], [17.6, 16.0]]))
    >>> [[round(v, 4) for v in r] for r in low.tolist()]
    [[4.4721, 0.0], [3.9355, 0.7155]]
    """
    x = to_tensor(tensor, "tensor")
    _square("cholesky", x)
    x = _floating(x)
    return dispatch("cholesky", _out(x.shape, x.type, x.names), x)


def _triangular_shapes(a_shape, b_shape, left_side):
    """Nx.Shape.triangular_solve."""
    if len(a_shape) < 2 or a_shape[-1] != a_shape[-2]:
        if len(a_shape) == 2:
            raise ValueError(f"triangular_solve/3 expected a square matrix or a batch of square "
                             f"matrices, got tensor with shape: {a_shape}")
        if len(a_shape) > 2 and len(b_shape) > 1:
            raise ValueError(f"triangular_solve/3 expected a square matrix or a batch of square "
                             f"matrices, got tensor with shape: {a_shape}")
        raise ValueError("incompatible dimensions for a and b on triangular solve")
    batch, n = a_shape[:-2], a_shape[-1]
    if len(b_shape) == len(a_shape) - 1 and b_shape[:-1] == batch and b_shape[-1] == n:
        return
    if len(b_shape) == len(a_shape) and b_shape[:-2] == batch:
        if (left_side and b_shape[-2] == n) or (not left_side and b_shape[-1] == n):
            return
    raise ValueError("incompatible dimensions for a and b on triangular solve")


def triangular_solve(a, b, *, left_side=True, lower=True, transform_a="none") -> Tensor:
    """Solves ``op(a) @ x = b`` (``left_side=True``) or ``x @ op(a) = b`` for ``x``, with
    ``a`` a batch of triangular matrices (``lower``: lower-triangular, only that triangle
    is read) and ``op(a)`` ``a`` or its transpose (``transform_a``: ``"none"`` or
    ``"transpose"``; Nx's ``"conjugate"`` is not supported yet, as in Nx). ``b`` is a batch
    of matrices, or of vectors for ``op(a) @ x = b`` (``Nx.LinAlg.triangular_solve``).

    A zero on the diagonal is an error on the NumPy backend ("can't solve for singular
    matrix", as Nx's default backend); compiled, it gives infinities or NaNs.

    >>> import nxpy as nx
    >>> a = nx.tensor([[1, 0, 0], [1, 1, 0], [1, 2, 1]])
    >>> b = nx.tensor([[0, 2, 1], [1, 1, 0], [3, 3, 1]])
    >>> triangular_solve(a, b, left_side=False).tolist()
    [[-1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    """
    for name, v in (("left_side", left_side), ("lower", lower)):
        if not isinstance(v, bool):
            raise TypeError(f"triangular_solve: expected {name} to be a boolean, got {v!r}")
    if transform_a == "conjugate":
        raise ValueError("triangular_solve: complex numbers not supported yet "
                         "(transform_a: 'conjugate')")
    if transform_a not in ("none", "transpose"):
        raise ValueError(f"invalid value for :transform_a option, expected 'none', "
                         f"'transpose', or 'conjugate', got: {transform_a!r}")
    a, b = to_tensor(a, "a"), to_tensor(b, "b")
    _triangular_shapes(a.shape, b.shape, left_side)
    t = T.to_floating(T.merge(a.type, b.type))
    a, b = as_type(a, t), as_type(b, t)
    return dispatch("triangular_solve", _out(b.shape, t, b.names), a, b,
                    left_side=left_side, lower=lower, transform_a=transform_a)


def lu(tensor, *, eps=1.0e-10):
    """``(p, l, u)`` with ``tensor == p @ l @ u`` for a batch of square matrices: ``p`` a
    permutation matrix (in the input's type, as Nx), ``l`` unit lower-triangular, ``u``
    upper-triangular, by Gaussian elimination with partial pivoting (LAPACK's ``getrf``:
    the row with the largest magnitude in the column becomes the pivot, the first one on
    ties). ``eps`` is accepted for Nx's sake and unused, as on Nx's compiled backends.

    >>> import nxpy as nx
    >>> p, l, u = lu(nx.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]))
    >>> p.tolist(), str(p.type)
    ([[0, 1, 0], [0, 0, 1], [1, 0, 0]], 's32')
    >>> [[round(v, 4) for v in r] for r in l.tolist()]
    [[1.0, 0.0, 0.0], [0.1429, 1.0, 0.0], [0.5714, 0.5, 1.0]]
    """
    x = to_tensor(tensor, "tensor")
    _square("lu", x)
    _number("lu", "eps", eps)
    f = _floating(x)
    names = _no_names(x.rank)
    p, low, u = dispatch_multi("lu", [(x.shape, x.type, names), (x.shape, f.type, names),
                                    (x.shape, f.type, names)], f, eps=float(eps))
    return p, low, u


def qr(tensor, *, mode="reduced", eps=1.0e-10):
    """``(q, r)`` with ``tensor == q @ r``, ``q`` with orthonormal columns and ``r``
    upper-triangular, for a batch of ``m x n`` matrices (``Nx.LinAlg.qr``). ``mode``:
    ``"reduced"`` (``q`` is ``m x k``, ``r`` ``k x n``, ``k = min(m, n)``) or
    ``"complete"`` (``q`` is ``m x m``, ``r`` ``m x n``). Householder reflections with
    LAPACK's signs (``geqrf``: ``r``'s diagonal is ``-sign(a_kk) * norm``). ``eps`` is
    accepted for Nx's sake and unused.

    >>> import nxpy as nx
    >>> q, r = qr(nx.tensor([[-3, 2, 1], [0, 1, 1], [0, 0, -1]]))
    >>> (q + 0.0).tolist()  # + 0.0: LAPACK leaves some -0.0
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    >>> r.tolist()
    [[-3.0, 2.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, -1.0]]
    """
    x = to_tensor(tensor, "tensor")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: invalid :mode received. Expected one of ['reduced', 'complete'], "
                         f"received: {mode!r}")
    if x.rank < 2:
        raise ValueError(f"qr: tensor must have at least rank 2, got rank {x.rank} with "
                         f"shape {x.shape}")
    _number("qr", "eps", eps)
    x = _floating(x)
    *batch, m, n = x.shape
    k = min(m, n) if mode == "reduced" else m
    names = _no_names(x.rank)
    q, r = dispatch_multi("qr", [(tuple(batch) + (m, k), x.type, names),
                                 (tuple(batch) + (k, n), x.type, names)],
                          x, mode=mode, eps=float(eps))
    return q, r


def eigh(tensor, *, max_iter=1000, eps=1.0e-4):
    """``(eigenvalues, eigenvectors)`` of a batch of Hermitian (symmetric if real)
    matrices: ``tensor @ v == v * w`` with the eigenvalues ``w`` in ascending order (LAPACK's
    ``syevd``/``heevd``) and orthonormal eigenvectors in the columns of ``v``. Only the
    lower triangle is read. ``max_iter`` and ``eps`` (Nx's options for its Jacobi
    iteration) bound the portable implementation; LAPACK needs neither.

    >>> import nxpy as nx
    >>> w, v = eigh(nx.tensor([[2.0, 1.0], [1.0, 2.0]]))
    >>> [round(x, 4) for x in w.tolist()]
    [1.0, 3.0]
    """
    x = to_tensor(tensor, "tensor")
    _square("eigh", x)
    _int_option("eigh", "max_iter", max_iter)
    _number("eigh", "eps", eps)
    x = _floating(x)
    *batch, n, _ = x.shape
    w, v = dispatch_multi("eigh", [(tuple(batch) + (n,), to_real_type(x.type),
                                    _no_names(x.rank - 1)),
                                   (x.shape, x.type, _no_names(x.rank))],
                          x, max_iter=int(max_iter), eps=float(eps))
    return w, v


def svd(tensor, *, full_matrices=True, max_iter=100):
    """``(u, s, vt)`` with ``tensor == u @ diag(s) @ vt`` for a batch of ``m x n``
    matrices, the singular values ``s`` in descending order (LAPACK's ``gesdd``).
    ``full_matrices``: ``u`` is ``m x m`` and ``vt`` ``n x n``; otherwise ``m x k`` and
    ``k x n`` (``k = min(m, n)``). Complex inputs are not supported yet, as in Nx.

    >>> import nxpy as nx
    >>> u, s, vt = svd(nx.tensor([[2, 0, 0], [0, 3, 0], [0, 0, -1], [0, 0, 0]]))
    >>> s.tolist(), u.shape, vt.shape
    ([3.0, 2.0, 1.0], (4, 4), (3, 3))
    """
    x = to_tensor(tensor, "tensor")
    if x.type.is_complex:
        raise TypeError(f"Nx.LinAlg.svd/2 is not yet implemented for complex inputs "
                        f"(got {x.type})")
    if x.rank < 2:
        raise ValueError(f"svd: tensor must have at least rank 2, got rank {x.rank} with "
                         f"shape {x.shape}")
    if not isinstance(full_matrices, bool):
        raise TypeError(f"svd: expected full_matrices to be a boolean, got {full_matrices!r}")
    _int_option("svd", "max_iter", max_iter)
    x = _floating(x)
    *batch, m, n = x.shape
    batch = tuple(batch)
    k = min(m, n)
    um, vn = (m, n) if full_matrices else (k, k)
    names = _no_names(x.rank)
    u, s, vt = dispatch_multi("svd", [(batch + (m, um), x.type, names),
                                      (batch + (k,), to_real_type(x.type), names[1:]),
                                      (batch + (vn, n), x.type, names)],
                              x, full_matrices=full_matrices, max_iter=int(max_iter))
    return u, s, vt


# ----------------------------------------------------------------------------------------
# Compositions (Nx.LinAlg's functions built on the primitives)
# ----------------------------------------------------------------------------------------
def _batch_axes(x: Tensor):
    return list(range(x.rank - 2))


def _lu_solve(p, low, u, b, vec):
    """``x`` with ``p l u x = b`` (``b`` a batch of matrices, or of vectors if ``vec``)."""
    nb = low.rank - 2
    batch = list(range(nb))
    pt = as_type(p, low.type)
    # p^T b: contract p's rows with b's rows
    pb = dot(pt, [nb], batch, b, [nb], batch)
    y = triangular_solve(low, pb, lower=True)
    return triangular_solve(u, y, lower=False)


def _safe_lu(x: Tensor):
    """LU of ``x`` with zero pivots of ``u`` replaced by ones (so no backend raises), and
    a pred per matrix: whether a pivot was zero (the matrix is singular)."""
    p, low, u = lu(x)
    d = take_diagonal(u)
    zero = E.equal(d, 0)
    singular = R.any(zero, axes=[d.rank - 1])
    fix = multiply(as_type(new_axis(zero, -2), u.type), _eye_like(u))  # ones where d == 0
    return p, low, add(u, fix), singular


def _nan_where(singular: Tensor, x: Tensor, extra_axes: int) -> Tensor:
    """``x`` with every matrix (or vector) whose ``singular`` flag is set made NaN."""
    s = singular
    for _ in range(extra_axes):
        s = new_axis(s, -1)
    return select(broadcast(s, x.shape), full((), float("nan"), type=x.type), x)


def solve(a, b) -> Tensor:
    """``x`` with ``a @ x == b`` for a batch of square matrices ``a`` and ``b`` a batch of
    matrices ``{..., n, m}`` or vectors ``{..., n}`` (``Nx.LinAlg.solve``). Computed with
    the LU factorization (``getrf`` then two triangular solves, as ``jnp.linalg.solve``;
    Nx's default composition uses QR); a singular ``a`` (a zero pivot) gives NaNs on every
    backend. Names are not kept.

    >>> import nxpy as nx
    >>> from nxpy.linalg import solve
    >>> a = nx.tensor([[1, 3, 2, 1], [2, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]])
    >>> nx.round(solve(a, nx.tensor([-3, 0, 4, -2]))).tolist()
    [1.0, -2.0, 3.0, -4.0]
    """
    a, b = to_tensor(a, "a"), to_tensor(b, "b")
    if a.rank < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"`a` tensor has incompatible dimensions, expected a square matrix "
                         f"or a batch of square matrices, got: {a.shape}")
    n = a.shape[-1]
    batch = a.shape[:-2]
    if not ((b.rank == a.rank - 1 and b.shape == batch + (n,)) or
            (b.rank == a.rank and b.shape[:-2] == batch and b.shape[-2] == n)):
        raise ValueError(f"`b` tensor has incompatible dimensions, expected "
                         f"{batch + (n, n)} or {batch + (n,)}, got: {b.shape}")
    t = T.to_floating(T.merge(a.type, b.type))
    a, b = as_type(_unnamed(a), t), as_type(_unnamed(b), t)
    return dispatch("solve", _out(b.shape, t, _no_names(b.rank)), a, b)


@register_portable("solve")
def portable_solve(out, a, b) -> Tensor:
    """``solve`` as a composition: :func:`lu`, ``p^T b``, two triangular solves; NaN for
    the matrices with a zero pivot."""
    p, low, u, singular = _safe_lu(a)
    x = _lu_solve(p, low, u, b, b.rank == a.rank - 1)
    return _nan_where(singular, x, x.rank - singular.rank)


def _unnamed(x: Tensor) -> Tensor:
    return renamed(x, None)


def invert(tensor) -> Tensor:
    """The inverse of a batch of square matrices (``Nx.LinAlg.invert``); a singular matrix
    gives NaNs (as Nx), on every backend.

    >>> import nxpy as nx
    >>> from nxpy.linalg import invert
    >>> invert(nx.tensor([[1, 2, 1, 1], [0, 1, 0, 1], [0, 0, 1, 1], [0, 0, 0, 1]])).tolist()
    [[1.0, -2.0, -1.0, 2.0], [0.0, 1.0, 0.0, -1.0], [0.0, 0.0, 1.0, -1.0], [0.0, 0.0, 0.0, 1.0]]
    >>> invert(nx.tensor([[0, 0], [1, 1]])).tolist()
    [[nan, nan], [nan, nan]]
    """
    x = to_tensor(tensor, "tensor")
    if x.rank < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"invert/1 expects a square matrix or a batch of square matrices, "
                         f"got tensor with shape: {x.shape}")
    x = _floating(_unnamed(x))
    return solve(x, _eye_like(x))


def determinant(tensor) -> Tensor:
    """The determinants of a batch of square matrices (``Nx.LinAlg.determinant``): the
    closed formulas for 2x2 and 3x3 (as Nx), else the product of LU's pivots with the
    permutation's sign. Output type: floating (complex stays complex); names are not kept.

    >>> import nxpy as nx
    >>> from nxpy.linalg import determinant
    >>> determinant(nx.tensor([[1, 2], [3, 4]])).tolist()
    -2.0
    >>> a = nx.tensor([[1, 0, 0, 0], [0, 1, 2, 3], [0, 1, -2, 3], [0, 7, 8, 9.0]])
    >>> round(determinant(a).tolist(), 4)
    48.0
    """
    x = to_tensor(tensor, "tensor")
    if x.rank < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"determinant/1 expects a square tensor, got tensor with shape: "
                         f"{list(x.shape[-2:])}")
    x = _floating(_unnamed(x))
    n = x.shape[-1]
    r = x.rank

    def el(i, j):
        return slice_along_axis(slice_along_axis(x, i, 1, axis=r - 2), j, 1, axis=r - 1)

    if n == 0:
        return full(x.shape[:-2], 1, type=x.type)
    if n == 1:
        return _squeeze2(el(0, 0))
    if n == 2:
        return _squeeze2(subtract(multiply(el(0, 0), el(1, 1)), multiply(el(0, 1), el(1, 0))))
    if n == 3:
        pos = neg = None
        for k in range(3):
            tp = multiply(multiply(el(0, k), el(1, (k + 1) % 3)), el(2, (k + 2) % 3))
            tn = multiply(multiply(el(0, k), el(1, (k + 2) % 3)), el(2, (k + 1) % 3))
            pos = tp if pos is None else add(pos, tp)
            neg = tn if neg is None else add(neg, tn)
        return _squeeze2(subtract(pos, neg))
    p, low, u = lu(x)
    d = take_diagonal(u)
    is_zero = R.any(E.equal(d, 0), axes=[d.rank - 1])
    # the permutation's parity: perm[i] = the row p takes to i; count inversions
    perm = dot(as_type(real(p) if p.type.is_complex else p, T.F32), [r - 1], _batch_axes(x),
               as_type(iota(x.shape[:-1], axis=r - 2), T.F32), [r - 2], _batch_axes(x))
    pi, pj = new_axis(perm, -1), new_axis(perm, -2)
    upper = E.less(iota(x.shape, axis=r - 2), iota(x.shape, axis=r - 1))
    inversions = R.sum(as_type(E.logical_and(E.greater(pi, pj), upper), T.S32), axes=[r - 2, r - 1])
    sign = as_type(subtract(1, multiply(2, E.remainder(inversions, 2))), x.type)
    det = multiply(sign, R.product(d, axes=[d.rank - 1]))
    return select(is_zero, full((), 0, type=x.type), det)


def _squeeze2(t: Tensor) -> Tensor:
    return squeeze(t, axes=[t.rank - 2, t.rank - 1])


_ORDS = (None, "frobenius", "nuclear", "inf", "neg_inf")


def norm(tensor, *, ord=None, axes=None, keep_axes=False) -> Tensor:
    """The norm of a vector or a matrix (``Nx.LinAlg.norm``; rank 1 or 2 only, as Nx).
    ``ord``: ``None`` (2-norm of a vector, Frobenius of a matrix), ``"frobenius"``,
    ``"nuclear"`` (sum of singular values), ``"inf"``/``"neg_inf"`` (max/min absolute
    value of a vector, max/min row sum of a matrix), ``0`` (non-zero count of a vector),
    ``1``/``-1`` (max/min column sum of a matrix), ``-2`` (smallest singular value), any
    other integer ``p`` (``sum(|x|**p) ** (1/p)``, over every element: as Nx, ``ord=2`` of
    a matrix is its Frobenius norm, not numpy's largest singular value). ``axes`` and
    ``keep_axes`` restrict the p-norms to some axes. The result is real and floating.

    >>> import nxpy as nx
    >>> from nxpy.linalg import norm
    >>> norm(nx.tensor([3, 4])).tolist(), norm(nx.tensor([3, -4]), ord="inf").tolist()
    (5.0, 4.0)
    >>> norm(nx.tensor([[1, 0, 0], [0, -4, 0], [0, 0, 9]]), ord="nuclear").tolist()
    14.0
    >>> norm(nx.tensor([[3, 4], [0, -4]]), axes=[1]).tolist()
    [5.0, 4.0]
    """
    t = to_tensor(tensor, "tensor")
    if t.rank not in (1, 2):
        raise ValueError(f"expected 1-D or 2-D tensor, got tensor with shape {t.shape}")
    if ord not in _ORDS and (isinstance(ord, bool) or not isinstance(ord, numbers.Integral)):
        raise ValueError(f"unknown ord {ord!r}")
    kw = {"axes": axes, "keep_axes": keep_axes}
    out_t = to_real_type(T.to_floating(t.type))
    if ord == "frobenius":
        if t.rank == 1:
            raise ValueError("expected a 2-D tensor for ord: :frobenius, got a 1-D tensor")
        ord = 2
    if ord is None:
        ord = 2
    if ord == "nuclear":
        if t.rank != 2:
            raise ValueError("nuclear norm not supported for rank != 2")
        return R.sum(svd(t)[1])
    a = E.abs(t)
    if ord in ("inf", "neg_inf"):
        if t.rank == 2:
            a = R.sum(a, axes=[1])
            kw = {}
        red = R.reduce_max if ord == "inf" else R.reduce_min
        return as_type(red(a, **kw), out_t)
    if ord == 0 and t.rank == 1:
        return as_type(R.sum(as_type(E.not_equal(t, 0), T.S32), **kw), out_t)
    if t.rank == 2 and ord in (1, -1):
        red = R.reduce_max if ord == 1 else R.reduce_min
        return as_type(red(R.sum(a, axes=[0])), out_t)
    if t.rank == 2 and ord not in (-2, 2):
        raise ValueError(f"invalid :ord for 2-D tensor, got: {ord!r}")
    if t.rank == 2 and ord == -2:
        return R.reduce_min(svd(t)[1])
    a = as_type(a, out_t)
    coef = R.reduce_max(a, **kw)
    coef = select(E.greater(coef, 0), coef, full((), 1, type=out_t))
    c = coef if not axes or keep_axes else _expand_like(coef, a.rank, axes, t.rank)
    s = R.sum(E.pow(divide(a, c), full((), float(ord), type=out_t)), **kw)
    return multiply(E.pow(s, full((), 1.0 / ord, type=out_t)), coef)


def _expand_like(x, rank, axes, full_rank):
    axes = sorted(a % full_rank for a in axes)
    for ax in axes:
        x = new_axis(x, ax)
    return x


def pinv(tensor, *, eps=1.0e-10) -> Tensor:
    """The Moore-Penrose pseudo-inverse (``Nx.LinAlg.pinv``): ``1/x`` of a scalar,
    ``x / norm(x)**2`` of a vector, and from the reduced SVD of a batch of matrices (the
    singular values below ``eps`` dropped). All-zero inputs (``|x| <= eps`` everywhere)
    give zeros of the transposed shape.

    >>> import nxpy as nx
    >>> from nxpy.linalg import pinv
    >>> pinv(2).tolist(), pinv(nx.tensor([0, 0, 0])).tolist()
    (0.5, [0.0, 0.0, 0.0])
    >>> [[round(v, 4) for v in r] for r in pinv(nx.tensor([[0.5, 0], [0, 1], [0.5, 0]])).tolist()]
    [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    """
    x = to_tensor(tensor, "tensor")
    _number("pinv", "eps", eps)
    x = _floating(x)
    zero_in = R.all(E.less_equal(E.abs(x), eps))
    if x.rank == 0:
        nz = divide(1, select(zero_in, full((), 1, type=x.type), x))
    elif x.rank == 1:
        n2 = R.sum(E.multiply(E.abs(x), E.abs(x)))
        n2 = select(zero_in, full((), 1, type=n2.type), n2)
        nz = divide(conjugate(x) if x.type.is_complex else x, as_type(n2, x.type))
    else:
        u, s, vt = svd(x, full_matrices=False)
        small = E.less(E.abs(s), eps)
        s_inv = select(small, full((), 0, type=s.type),
                       divide(1, select(small, full((), 1, type=s.type), s)))
        sut = multiply(as_type(new_axis(s_inv, -1), x.type), adjoint(u))
        nz = batch_matmul(adjoint(vt), sut)
    return select(broadcast(zero_in, nz.shape), full((), 0, type=nz.type), nz)


def matrix_power(tensor, power: int) -> Tensor:
    """``tensor`` to the integer ``power`` by repeated squaring (``Nx.LinAlg.matrix_power``):
    ``0`` gives the identity (in the input type), negative powers invert first (floating).

    >>> import nxpy as nx
    >>> from nxpy.linalg import matrix_power
    >>> matrix_power(nx.tensor([[1, 2], [3, 4]]), 6).tolist()
    [[5743, 8370], [12555, 18298]]
    """
    x = to_tensor(tensor, "tensor")
    power = S.integer(power, "matrix_power: power")
    if x.rank < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power/2 expects a square matrix or a batch of square "
                         f"matrices, got tensor with shape: {x.shape}")
    if power < 0:
        return matrix_power(invert(x), -power)
    if power == 0:
        return _eye_like(x)
    result, base = None, x
    while True:
        if power & 1:
            result = base if result is None else batch_matmul(result, base)
        power >>= 1
        if not power:
            return result
        base = batch_matmul(base, base)


def least_squares(a, b) -> Tensor:
    """The least-squares solution ``x`` of ``a @ x = b`` for a matrix ``a`` and a vector
    ``b`` (``Nx.LinAlg.least_squares``): :func:`solve` if ``a`` is square, else
    ``pinv(a, eps=1e-15) @ b``.

    >>> import nxpy as nx
    >>> from nxpy.linalg import least_squares
    >>> x = least_squares(nx.tensor([[0, 1], [1, 1], [2, 1], [3, 1]]),
    ...                   nx.tensor([-1, 0.2, 0.9, 2.1]))
    >>> [round(v, 4) for v in x.tolist()]  # Nx's Jacobi SVD: [0.9966, -0.948]
    [1.0, -0.95]
    """
    a, b = to_tensor(a, "a"), to_tensor(b, "b")
    for t in (a, b):
        if t.type.is_complex:
            raise TypeError("Nx.LinAlg.least_squares/2 is not yet implemented for complex inputs")
    if a.rank != 2:
        raise ValueError(f"tensor of 1st argument must have rank 2, got rank {a.rank} with "
                         f"shape {a.shape}")
    if b.rank != 1:
        raise ValueError(f"tensor of 2nd argument must have rank 1, got rank {b.rank} with "
                         f"shape {b.shape}")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"the number of rows of the matrix as the 1st argument and the "
                         f"number of columns of the vector as the 2nd argument must be the "
                         f"same, got 1st argument shape {a.shape} and 2nd argument shape "
                         f"{b.shape}")
    if a.shape[0] == a.shape[1]:
        return solve(a, b)
    p = pinv(a, eps=1.0e-15)
    t = T.to_floating(T.merge(p.type, b.type))
    return dot(as_type(p, t), [1], [], as_type(b, t), [0], [])


def matrix_rank(a, *, eps=1.0e-7) -> Tensor:
    """The number of singular values of matrix ``a`` above ``eps * max(m, n) * max(s)``
    (``Nx.LinAlg.matrix_rank``; rank-2 real inputs only, as Nx). Type ``u32`` (Nx: ``u64``,
    its sum of ``u8``).

    >>> import nxpy as nx
    >>> from nxpy.linalg import matrix_rank
    >>> matrix_rank(nx.tensor([[1, 1, 1, 1], [1, 1, 1, 1], [1, 2, 3, 4]])).tolist()
    2
    """
    x = to_tensor(a, "a")
    _number("matrix_rank", "eps", eps)
    if x.type.is_complex:
        raise TypeError("Nx.LinAlg.matrix_rank/2 is not yet implemented for complex inputs")
    if x.rank != 2:
        raise ValueError(f"tensor must have rank 2, got rank {x.rank} with shape {x.shape}")
    s = svd(x)[1]
    tol = multiply(R.reduce_max(s), float(eps) * max(x.shape))
    return R.sum(as_type(E.greater(s, tol), T.Type("u", 8)))


# ----------------------------------------------------------------------------------------
# Gradient rules (reverse mode; the formulas of JAX's JVP rules, transposed)
# ----------------------------------------------------------------------------------------
def results(x: Tensor, node, e):
    """The forward results of a several-result node as tensors: ``node`` is what the
    gradient engine hands a rule as ``out`` (the node itself in a trace)."""
    if isinstance(node, (list, tuple)):
        return list(node)
    return [x.backend.node("elem", _out(s, t, n), node, index=i)
            for i, (s, t, n) in enumerate(e.outs)]


def _eye_like(x: Tensor) -> Tensor:
    n = x.shape[-1]
    return eye(x.shape[:-2] + (n, n), type=x.type) if x.rank > 2 else eye(n, type=x.type)


def _sym(x: Tensor) -> Tensor:
    """``(x + adjoint(x)) / 2``."""
    return divide(add(x, adjoint(x)), 2)


def _solve_right_adjoint(r: Tensor, b: Tensor, lower: bool) -> Tensor:
    """``b @ inv(adjoint(r))`` for triangular ``r``."""
    if r.type.is_complex:
        return conjugate(triangular_solve(conjugate(r), conjugate(b), left_side=False,
                                          lower=lower, transform_a="transpose"))
    return triangular_solve(r, b, left_side=False, lower=lower, transform_a="transpose")


def _solve_left_adjoint(low: Tensor, b: Tensor, lower: bool) -> Tensor:
    """``inv(adjoint(l)) @ b`` for triangular ``l``."""
    if low.type.is_complex:
        return conjugate(triangular_solve(conjugate(low), conjugate(b), lower=lower,
                                          transform_a="transpose"))
    return triangular_solve(low, b, lower=lower, transform_a="transpose")


#: factorizations whose gradient rule does not yet give jax.grad's on complex inputs
_NO_COMPLEX_GRAD = frozenset({"lu", "cholesky", "qr"})


def _jax_convention(rule):
    """A gradient rule below, written in the conjugate convention (``a^-H g``: the
    gradient of a real loss with respect to ``conj(a)``), in JAX's: transposes that do not
    conjugate (``a^-T g``), as every other rule. On complex values the rule runs on the
    conjugated cotangents and its results are conjugated back."""
    @functools.wraps(rule)
    def wrapped(ctx, e, xs, out, g):
        if not any(x.type.is_complex for x in xs):
            return rule(ctx, e, xs, out, g)
        if e.op in _NO_COMPLEX_GRAD:
            raise NotImplementedError(
                f"grad of {e.op}: complex inputs are not supported yet (its rule is checked "
                f"against jax.grad on real inputs only); real inputs are")
        def conj(v):
            return conjugate(v) if v is not None and v.type.is_complex else v
        g = [conj(v) for v in g] if isinstance(g, (list, tuple)) else conj(g)
        return [conj(c) for c in rule(ctx, e, xs, out, g)]
    return wrapped


@register_grad_rule("cholesky")
@_jax_convention
def _cholesky_grad(ctx, e, xs, out, g):
    # A = L L^H: with P = Phi(L^H g) (the lower triangle, diagonal halved),
    # grad A = sym(L^-H P L^-1) (symmetric, as jax.grad of jnp.linalg.cholesky)
    low = out
    p = batch_matmul(adjoint(low), g)
    p = subtract(tril(p), divide(multiply(p, _eye_like(p)), 2))
    s = _solve_left_adjoint(low, p, True)            # L^-H P
    s = adjoint(_solve_left_adjoint(low, adjoint(s), True))  # (L^-H (L^-H P)^H)^H = L^-H P L^-1
    return [_sym(s)]


@register_grad_rule("solve")
@_jax_convention
def _solve_grad(ctx, e, xs, out, g):
    # x = a^-1 b: gb = a^-H g, ga = -gb x^H
    a, b = xs
    gb = solve(adjoint(a), g)
    vec = b.rank == a.rank - 1
    x, gx = (new_axis(out, -1), new_axis(gb, -1)) if vec else (out, gb)
    ga = -batch_matmul(gx, adjoint(x))
    return [ga, gb]


@register_grad_rule("triangular_solve")
@_jax_convention
def _triangular_solve_grad(ctx, e, xs, out, g):
    a, b = xs
    left, lower, tr = e.attrs["left_side"], e.attrs["lower"], e.attrs["transform_a"]
    flip = "none" if tr == "transpose" else "transpose"
    vec = b.rank == a.rank - 1
    cplx = a.type.is_complex
    # x = op(a)^-1 b: gb = op(a)^-H g; x = b op(a)^-1: gb = g op(a)^-H
    gb = triangular_solve(conjugate(a) if cplx else a, g, left_side=left, lower=lower,
                          transform_a=flip)
    x = conjugate(out) if cplx else out
    if vec:  # a vector is a column on the left side, a row on the right
        x, gx = (new_axis(x, -1), new_axis(gb, -1)) if left else (new_axis(x, -2), new_axis(gb, -2))
    else:
        gx = gb
    # d op(a) = -gb x^T (left) or -x^T gb (right), then transposed back if op transposes
    nb = a.rank - 2
    batch = list(range(nb))
    if left:
        gop = dot(gx, [a.rank - 1], batch, x, [a.rank - 1], batch)
    else:
        gop = dot(x, [a.rank - 2], batch, gx, [a.rank - 2], batch)
    gop = -gop
    if tr == "transpose":
        gop = transpose(gop, batch + [nb + 1, nb])
    ga = tril(gop) if lower else triu(gop)
    return [ga, gb]


def _identity_of(x, n):
    return eye(x.shape[:-2] + (n, n), type=x.type) if x.rank > 2 else eye(n, type=x.type)


@register_grad_rule("lu")
@_jax_convention
def _lu_grad(ctx, e, xs, out, gs):
    # A = P L U, F = L^-1 P^T dA U^-1, dL = L tril_-1(F), dU = triu(F) U:
    # grad A = P L^-H (tril_-1(L^H gL) + triu(gU U^H)) U^-H
    (a,) = xs
    p, low, u = results(a, out, e)
    _, gl, gu = gs
    n = a.shape[-1]
    m = _identity_of(low, n) * 0
    if gl is not None:
        m = add(m, tril(batch_matmul(adjoint(low), gl), -1))
    if gu is not None:
        m = add(m, triu(batch_matmul(gu, adjoint(u))))
    y = _solve_left_adjoint(low, m, True)                     # L^-H M (unit diagonal)
    y = _solve_right_adjoint(u, y, False)                     # ... U^-H
    return [batch_matmul(as_type(p, y.type), y)]


@register_grad_rule("qr")
@_jax_convention
def _qr_grad(ctx, e, xs, out, gs):
    # A = Q R (m >= n, or complete square): with N = gR R^H - Q^H gQ and
    # M = triu(N, 1) + tril(N^H, -1) + diag(re N): grad A = (gQ + Q M) R^-H
    (a,) = xs
    q, r = results(a, out, e)
    gq, gr = gs
    m_, n_ = a.shape[-2:]
    if m_ < n_ or (e.attrs["mode"] == "complete" and m_ != n_):
        raise NotImplementedError(f"grad of qr: only matrices with at least as many rows as "
                                  f"columns (mode 'reduced', or square) are supported, got "
                                  f"shape {a.shape} with mode {e.attrs['mode']!r}")
    k = r.shape[-1]
    nm = _identity_of(r, k) * 0
    if gr is not None:
        nm = add(nm, batch_matmul(gr, adjoint(r)))
    if gq is not None:
        nm = subtract(nm, batch_matmul(adjoint(q), gq))
    mm = add(triu(nm, 1), tril(adjoint(nm), -1))
    dg = multiply(real(nm) if nm.type.is_complex else nm,
                  as_type(_identity_of(r, k), to_real_type(nm.type)))
    mm = add(mm, dg)
    b = batch_matmul(q, mm)
    if gq is not None:
        b = add(b, gq)
    return [_solve_right_adjoint(r, b, False)]


@register_grad_rule("eigh")
@_jax_convention
def _eigh_grad(ctx, e, xs, out, gs):
    # A = V diag(w) V^H: grad A = sym(V (diag(gw) + F o (V^H gV)) V^H), F_ij = 1/(w_j - w_i)
    (a,) = xs
    w, v = results(a, out, e)
    gw, gv = gs
    n = a.shape[-1]
    inner = _identity_of(v, n) * 0
    if gv is not None:
        wi, wj = new_axis(w, -1), new_axis(w, -2)
        diff = subtract(wj, wi)
        off = not_equal(iota(diff.shape, axis=diff.rank - 2), iota(diff.shape, axis=diff.rank - 1))
        f = select(off, divide(1, select(off, diff, 1)), 0)
        inner = add(inner, multiply(as_type(f, v.type), batch_matmul(adjoint(v), gv)))
    if gw is not None:
        inner = add(inner, multiply(as_type(new_axis(gw, -2), v.type), _identity_of(v, n)))
    ga = batch_matmul(batch_matmul(v, inner), adjoint(v))
    return [_sym(ga)]


@register_grad_rule("svd")
@_jax_convention
def _svd_grad(ctx, e, xs, out, gs):
    # reduced SVD A = U S V^T (JAX's svd_jvp_rule, transposed):
    # J = F o (U^T gU), K = F o (V^T gV), F_ij = 1/(s_j^2 - s_i^2):
    # grad A = U (diag(gS) + (J + J^T) S + S (K + K^T)) V^T
    #          + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T)
    (a,) = xs
    u, s, vt = results(a, out, e)
    gu, gs_, gvt = gs
    m_, n_ = a.shape[-2:]
    k = min(m_, n_)
    if e.attrs["full_matrices"] and m_ != n_ and (gu is not None or gvt is not None):
        raise NotImplementedError("grad of svd: the singular vectors of full_matrices=True "
                                  "with a non-square matrix have no gradient; use "
                                  "full_matrices=False")
    if e.attrs["full_matrices"] and m_ != n_:  # only the first k vectors take part
        u = slice_along_axis(u, 0, k, axis=u.rank - 1)
        vt = slice_along_axis(vt, 0, k, axis=vt.rank - 2)
    v = adjoint(vt)
    gv = adjoint(gvt) if gvt is not None else None
    eye_k = _identity_of(v, k) if v.rank > 2 else eye(k, type=v.type)
    s_row = new_axis(s, -2)
    s_col = new_axis(s, -1)
    inner = eye_k * 0
    if gs_ is not None:
        inner = add(inner, multiply(new_axis(gs_, -2), eye_k))
    s2 = multiply(s, s)
    diff = subtract(new_axis(s2, -2), new_axis(s2, -1))
    off = not_equal(iota(diff.shape, axis=diff.rank - 2), iota(diff.shape, axis=diff.rank - 1))
    f = select(off, divide(1, select(off, diff, 1)), 0)
    ga = None
    if gu is not None:
        j = multiply(f, batch_matmul(adjoint(u), gu))
        inner = add(inner, multiply(add(j, adjoint(j)), s_row))
    if gv is not None:
        kk = multiply(f, batch_matmul(adjoint(v), gv))
        inner = add(inner, multiply(s_col, add(kk, adjoint(kk))))
    ga = batch_matmul(batch_matmul(u, inner), vt)
    if gu is not None and m_ > k:
        proj = subtract(gu, batch_matmul(u, batch_matmul(adjoint(u), gu)))
        ga = add(ga, batch_matmul(divide(proj, s_row), vt))
    if gv is not None and n_ > k:
        proj = subtract(gv, batch_matmul(v, batch_matmul(adjoint(v), gv)))
        ga = add(ga, batch_matmul(u, adjoint(divide(proj, s_row))))
    return [ga]

