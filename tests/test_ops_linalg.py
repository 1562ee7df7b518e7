"""The linear-algebra family (``nxpy.linalg``): cholesky, triangular_solve, lu, qr, eigh,
svd and the compositions solve, invert, determinant, norm, pinv, matrix_power,
least_squares, matrix_rank.

Every function runs on four paths -- eager on the NumPy backend, ``jit`` with the
Evaluator, ``jit`` with EXLA (LAPACK custom calls), eager on the EXLA backend -- against
``numpy.linalg``/``jax.numpy.linalg`` on random well-conditioned batched inputs (f32, f64,
c64 where Nx takes complex), plus the invariants (``q`` orthonormal, ``l l^H = a``, ``u s
vt = a``, ...), the ported Nx doctests, the documented singular / non-finite behaviour,
the errors, gradients against ``jax.grad`` and ``jvp`` against ``jax.jvp``, JAX-exported
programs loaded by the StableHLO importer, the portable fallback on a plugin backend and
compiler without linalg kernels, and a batched decomposition under ``shard_jit`` with the
batch dim sharded.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import nxpy as nx
from nxpy import linalg as L
from nxpy.defn import grad, jit, jvp
from nxpy.defn.sharding import specs as SH
from nxpy.defn.shard_jit import shard_jit
from nxpy.compilers.exla import to_mlir
from nxpy.stablehlo import load

import helpers
from helpers import CHEAP, COMPILERS, PATHS, close, covering, dt, jvp_matches_jax, rng_for, run

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp

#: the family's tolerances, relative and absolute
TOL = {"f32": 2e-4, "c64": 2e-4, "f64": 1e-9, "c128": 1e-9}
check = functools.partial(helpers.check, tols={t: (v, v) for t, v in TOL.items()})


def rand(t, shape, seed=0):
    rng = rng_for(t, shape, seed)
    x = rng.standard_normal(shape)
    if t.startswith("c"):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt(t))


def spd(t, shape, seed=0):
    """A well-conditioned Hermitian positive-definite batch."""
    a = rand(t, shape, seed)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt(t))


def well(t, shape, seed=0):
    """A well-conditioned square batch (diagonally dominant)."""
    n = shape[-1]
    return (rand(t, shape, seed) + 2 * n ** 0.5 * np.eye(n)).astype(dt(t))


def adj(x):
    return np.conj(np.swapaxes(x, -1, -2))


# ----------------------------------------------------------------------------------------
# Decompositions: against numpy/jax and by their invariants
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("t", ["f32", "f64", "c64"])
def test_cholesky(t):
    a = spd(t, (2, 3, 4, 4))
    res = run(L.cholesky, a)
    check(res, np.linalg.cholesky(a), t)
    for r in res.values():
        assert str(r.type) == t
        low = r.to_numpy()
        np.testing.assert_allclose(low @ adj(low), a, rtol=TOL[t] * 10, atol=TOL[t] * 10)


def test_cholesky_reads_the_lower_triangle_and_converts_ints():
    a = spd("f64", (3, 3))
    junk = np.tril(a) + np.triu(np.full((3, 3), 7.0), 1)
    check(run(L.cholesky, junk), np.linalg.cholesky(a), "f64")
    r = run(L.cholesky, np.array([[4, 2], [2, 5]], np.int32))
    for v in r.values():
        assert str(v.type) == "f32" and v.tolist() == [[2.0, 0.0], [1.0, 2.0]]


def test_cholesky_not_positive_definite():
    bad = np.array([[1.0, 2.0], [2.0, 1.0]], np.float32)
    with pytest.raises(ValueError, match="not positive definite"):
        L.cholesky(nx.tensor(bad))
    # compiled: NaNs, as jnp.linalg.cholesky
    out = jit(L.cholesky, compiler="exla")(nx.tensor(bad)).to_numpy()
    np.testing.assert_array_equal(out, np.asarray(jnp.linalg.cholesky(bad)))  # NaN, 0 above
    assert np.isnan(out[np.tril_indices(2)]).all()


@pytest.mark.parametrize("t,left,lower,tr,vec", [
    (t, *c) for c in [(True, True, "none", False), (True, False, "transpose", False),
                      (False, True, "transpose", False), (False, False, "none", False),
                      (True, True, "none", True), (True, False, "transpose", True),
                      (False, True, "none", True)] for t in ("f32", "c64")] + [
    ("f64", True, False, "none", False), ("f64", False, True, "transpose", True)])
def test_triangular_solve(t, left, lower, tr, vec):
    a = well(t, (2, 4, 4))
    b = rand(t, (2, 4) if vec else ((2, 4, 3) if left else (2, 3, 4)), 1)
    tri = np.tril(a) if lower else np.triu(a)
    op = np.swapaxes(tri, -1, -2) if tr == "transpose" else tri
    if vec:  # a column on the left side (op x = b), a row on the right (x op = b)
        m = op if left else np.swapaxes(op, -1, -2)
        want = np.linalg.solve(m, b[..., None])[..., 0]
    elif left:
        want = np.linalg.solve(op, b)
    else:
        want = np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    res = run(lambda x, y: L.triangular_solve(x, y, left_side=left, lower=lower, transform_a=tr),
              a, b, paths=PATHS if t != "c64" or vec else ("numpy", "exla"))
    check(res, want, t)


def test_triangular_solve_singular_and_errors():
    with pytest.raises(ValueError, match="can't solve for singular matrix"):
        L.triangular_solve(nx.tensor([[0.0, 0], [1, 1]]), nx.tensor([1.0, 2]))
    with pytest.raises(ValueError, match="incompatible dimensions"):
        L.triangular_solve(nx.eye(4, type="f32"), nx.tensor([4.0]))
    with pytest.raises(ValueError, match="expected a square matrix"):
        L.triangular_solve(nx.tensor([[3, 0, 0, 0], [2, 1, 0, 0]]), nx.tensor([4, 2, 4, 2]))
    with pytest.raises(ValueError, match="complex numbers not supported yet"):
        L.triangular_solve(nx.eye(2, type="f32"), nx.tensor([1.0, 2]), transform_a="conjugate")
    with pytest.raises(ValueError, match="invalid value for :transform_a"):
        L.triangular_solve(nx.eye(2, type="f32"), nx.tensor([1.0, 2]), transform_a="other")


@pytest.mark.parametrize("t", ["f32", "f64", "c64"])
def test_lu(t):
    a = rand(t, (2, 5, 5))
    res = run(L.lu, a)
    import scipy.linalg as sl
    for path, (p, low, u) in res.items():
        p, low, u = p.to_numpy(), low.to_numpy(), u.to_numpy()
        np.testing.assert_allclose(p @ low @ u, a, rtol=TOL[t] * 10, atol=TOL[t] * 10, err_msg=path)
        for i in range(2):  # LAPACK's pivots: as scipy's getrf
            sp, sl_, su = sl.lu(a[i])
            np.testing.assert_array_equal(p[i], sp, err_msg=path)
            np.testing.assert_allclose(low[i], sl_, rtol=TOL[t] * 10, atol=TOL[t] * 10)
        assert np.allclose(np.triu(low, 1), 0) and np.allclose(np.tril(u, -1), 0)


def test_lu_doctest_and_singular():
    p, low, u = L.lu(nx.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]]))
    assert str(p.type) == "s32" and str(low.type) == "f32"
    np.testing.assert_allclose(p.to_numpy() @ low.to_numpy() @ u.to_numpy(),
                               [[1, 2, 3], [4, 5, 6], [7, 8, 9]], atol=1e-5)
    assert u.to_numpy()[2, 2] == pytest.approx(0, abs=1e-6)


@pytest.mark.parametrize("t,shape,mode", [
    (t, *c) for c in [((2, 5, 3), "reduced"), ((2, 5, 3), "complete"), ((3, 5), "reduced"),
                      ((3, 5), "complete"), ((4, 4), "reduced")] for t in ("f32", "f64")] + [
    ("c64", (2, 5, 3), "complete"), ("c64", (3, 5), "reduced")])
def test_qr(t, shape, mode):
    a = rand(t, shape)
    res = run(lambda x: L.qr(x, mode=mode), a,
              paths=PATHS if shape[-2] >= shape[-1] or t == "f32" else ("numpy", "exla"))
    q_np, r_np = np.linalg.qr(a, mode=mode)
    check(res, (q_np, r_np), t)
    for q, r in res.values():
        q = q.to_numpy()
        k = q.shape[-1]
        np.testing.assert_allclose(adj(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)),
                                   atol=TOL[t] * 10)


@pytest.mark.parametrize("t", ["f32", "f64", "c64"])
def test_eigh(t):
    a = spd(t, (2, 5, 5)) - 5 * np.eye(5).astype(dt(t))
    res = run(L.eigh, a)
    w_np = np.linalg.eigvalsh(a)
    for path, (w, v) in res.items():
        assert str(w.type) == ("f32" if t != "f64" else "f64")
        np.testing.assert_allclose(w.to_numpy(), w_np, rtol=TOL[t] * 10, atol=TOL[t] * 10)
        v = v.to_numpy()
        np.testing.assert_allclose(a @ v, v * w.to_numpy()[..., None, :], atol=TOL[t] * 50)
        np.testing.assert_allclose(adj(v) @ v, np.broadcast_to(np.eye(5), v.shape),
                                   atol=TOL[t] * 10)


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("shape,full", [((2, 5, 3), True), ((2, 5, 3), False), ((3, 5), True),
                                        ((4, 4), False)])
def test_svd(t, shape, full):
    a = rand(t, shape)
    res = run(lambda x: L.svd(x, full_matrices=full), a)
    s_np = np.linalg.svd(a, compute_uv=False)
    for path, (u, s, vt) in res.items():
        np.testing.assert_allclose(s.to_numpy(), s_np, rtol=TOL[t] * 10, atol=TOL[t] * 10)
        u, vt = u.to_numpy(), vt.to_numpy()
        k = s_np.shape[-1]
        us = u[..., :, :k] * s.to_numpy()[..., None, :]
        np.testing.assert_allclose(us @ vt[..., :k, :], a, atol=TOL[t] * 20, err_msg=path)


def test_svd_complex_is_an_error_as_nx():
    with pytest.raises(TypeError, match="not yet implemented for complex"):
        L.svd(nx.tensor([[1j, 0], [0, 1]]))


# ----------------------------------------------------------------------------------------
# Compositions
# ----------------------------------------------------------------------------------------
#: the types on EXLA's eager backend too (a compiled program per op of the compositions):
#: every other one, in rotation (all: make exhaustive)
COMPOSITION_EAGER_EXLA = {t for t, on in covering(["f32", "f64", "c64"], (True, False)) if on}


@pytest.mark.parametrize("t", ["f32", "f64", "c64"])
def test_solve_invert_determinant(t):
    a = well(t, (2, 4, 4))
    b = rand(t, (2, 4, 3), 1)
    bv = rand(t, (2, 4), 2)
    res = run(lambda x, y, z: (L.solve(x, y), L.solve(x, z), L.invert(x), L.determinant(x)),
              a, b, bv, paths=PATHS if t in COMPOSITION_EAGER_EXLA else CHEAP)
    check(res, (np.linalg.solve(a, b), np.linalg.solve(a, bv[..., None])[..., 0],
                np.linalg.inv(a), np.linalg.det(a)), t, rtol=TOL[t] * 20, atol=TOL[t] * 20)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_determinant_sizes(n):
    a = rand("f64", (3, n, n))
    check(run(L.determinant, a, paths=("numpy", "exla")), np.linalg.det(a), "f64")


def test_singular_gives_nan_never_a_crash():
    s = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    s4 = np.zeros((4, 4), np.float32)
    s4[3] = 1
    for path, (x, inv, det) in run(lambda a, b: (L.solve(a, b), L.invert(a), L.determinant(a)),
                                   s4, np.ones(4, np.float32)).items():
        assert np.isnan(x.to_numpy()).all() and np.isnan(inv.to_numpy()).all(), path
        assert det.tolist() == 0.0
    for r in run(L.determinant, s).values():
        assert r.tolist() == 0.0
    nan = np.full((3, 3), np.nan, np.float32)
    for path, (w, v) in run(L.eigh, nan, paths=("numpy", "exla")).items():
        assert np.isnan(w.to_numpy()).all(), path


@pytest.mark.parametrize("a", [[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 1.0]],
                               [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]])
def test_singular_solve_and_invert_are_nan_where_jnp_linalg_has_infinities(a):
    """A departure from JAX (docs/guarantees.md): a singular matrix (a zero pivot) gives
    NaN in every entry of solve and invert on every path, as Nx; jnp.linalg gives
    whatever LAPACK's arithmetic on the zero pivot gives, infinities among it."""
    a = np.asarray(a, np.float32)
    b = np.ones(a.shape[0], np.float32)
    for path, (x, inv) in run(lambda m, v: (L.solve(m, v), L.invert(m)), a, b).items():
        assert np.isnan(x.to_numpy()).all() and np.isnan(inv.to_numpy()).all(), path
    jx, jinv = np.asarray(jnp.linalg.solve(a, b)), np.asarray(jnp.linalg.inv(a))
    assert np.isinf(jx).any() and np.isinf(jinv).any()


def test_solve_errors():
    with pytest.raises(ValueError, match=r"`b` tensor has incompatible dimensions, expected "
                                         r"\(2, 2\) or \(2,\), got: \(4,\)"):
        L.solve(nx.tensor([[1, 0], [0, 1]]), nx.tensor([4, 2, 4, 2]))
    with pytest.raises(ValueError, match="`a` tensor has incompatible dimensions"):
        L.solve(nx.tensor([[3, 0, 0, 0], [2, 1, 0, 0], [1, 1, 1, 1]]), nx.tensor([4]))
    with pytest.raises(ValueError, match="invert/1 expects a square matrix"):
        L.invert(nx.tensor([[3, 0, 0, 0], [2, 1, 0, 0]]))


NORM_CASES = [
    ([3, 4], {}, 5.0), ([3, 4], {"ord": 1}, 7.0), ([3, -4], {"ord": "inf"}, 4.0),
    ([3, -4], {"ord": "neg_inf"}, 3.0), ([3, -4, 0, 0], {"ord": 0}, 2.0),
    ([[3, -1], [2, -4]], {"ord": -1}, 5.0), ([[3, -2], [2, -4]], {"ord": 1}, 6.0),
    ([[3, -2], [2, -4]], {"ord": "neg_inf"}, 5.0), ([[3, -2], [2, -4]], {"ord": "inf"}, 6.0),
    ([[3, 0], [0, -4]], {"ord": "frobenius"}, 5.0),
    ([[1, 0, 0], [0, -4, 0], [0, 0, 9]], {"ord": "nuclear"}, 14.0),
    ([[1, 0, 0], [0, -4, 0], [0, 0, 9]], {"ord": -2}, 1.0), ([[3, 0], [0, -4]], {}, 5.0),
    ([[3, 4], [0, -4]], {"axes": [1]}, [5.0, 4.0]), ([[0, 0], [0, 0]], {}, 0.0),
    ([[1j * 3, 4], [4, 0]], {"axes": [0]}, [5.0, 4.0]),
    ([[1j * 3, 0], [4, 0]], {"ord": "neg_inf"}, 3.0),
    ([1.0, 2.0, 3.0], {"ord": 3}, 36.0 ** (1 / 3)),
]


@pytest.mark.parametrize("x,kw,want", NORM_CASES)
def test_norm_nx_doctests(x, kw, want):
    arr = np.array(x)
    arr = arr.astype(np.int32) if arr.dtype.kind == "i" else arr.astype(
        np.complex64 if arr.dtype.kind == "c" else np.float32)
    for path, r in run(lambda a: L.norm(a, **kw), arr, paths=("numpy", "exla")).items():
        assert str(r.type) == "f32", path
        np.testing.assert_allclose(r.to_numpy(), want, rtol=1e-5, err_msg=path)


def test_norm_errors():
    with pytest.raises(ValueError, match="expected a 2-D tensor for ord: :frobenius"):
        L.norm(nx.tensor([3, 4]), ord="frobenius")
    with pytest.raises(ValueError, match="expected 1-D or 2-D tensor"):
        L.norm(nx.iota((2, 2, 2)))
    with pytest.raises(ValueError, match="invalid :ord for 2-D tensor, got: 3"):
        L.norm(nx.iota((2, 2)), ord=3)
    with pytest.raises(ValueError, match="unknown ord"):
        L.norm(nx.iota((2, 2)), ord="bad")


def test_pinv_matrix_power_least_squares_rank():
    a = rand("f64", (2, 5, 3))
    check(run(L.pinv, a), np.linalg.pinv(a), "f64", rtol=1e-8, atol=1e-8)
    assert L.pinv(2).tolist() == 0.5 and L.pinv(0).tolist() == 0.0
    np.testing.assert_allclose(L.pinv(nx.tensor([0, 1, 2])).to_numpy(), [0, 0.2, 0.4], rtol=1e-6)
    assert L.pinv(nx.tensor([[0, 0], [0, 0], [0, 0]])).shape == (2, 3)
    m = np.array([[1, 2], [3, 4]], np.int32)
    for r in run(lambda x: L.matrix_power(x, 6), m).values():
        assert r.tolist() == [[5743, 8370], [12555, 18298]] and str(r.type) == "s32"
    assert L.matrix_power(nx.tensor(m), 0).tolist() == [[1, 0], [0, 1]]
    check(run(lambda x: L.matrix_power(x, -3), well("f64", (2, 3, 3))),
          np.linalg.matrix_power(well("f64", (2, 3, 3)), -3), "f64", rtol=1e-8, atol=1e-8)
    a2, b2 = rand("f64", (6, 3)), rand("f64", (6,), 1)
    check(run(L.least_squares, a2, b2), np.linalg.lstsq(a2, b2, rcond=None)[0], "f64", rtol=1e-8,
          atol=1e-8)
    sq = well("f64", (3, 3))
    check(run(L.least_squares, sq, b2[:3]), np.linalg.solve(sq, b2[:3]), "f64", rtol=1e-8,
          atol=1e-8)
    for path, r in run(L.matrix_rank, np.array([[1, 1, 1], [2, 2, 2], [8, 9, 10], [-2, 1, 5]],
                                               np.float32)).items():
        assert r.tolist() == 3, path
    assert L.matrix_rank(nx.tensor([[1, 1, 1, 1], [1, 1, 1, 1], [1, 2, 3, 4]])).tolist() == 2
    with pytest.raises(ValueError, match="tensor must have rank 2"):
        L.matrix_rank(nx.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match="2nd argument must have rank 1"):
        L.least_squares(nx.tensor([[1, 2], [2, 3]]), nx.tensor([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match="matrix_power/2 expects a square matrix"):
        L.matrix_power(nx.tensor([[1, 2], [3, 4], [5, 6]]), 1)


def test_nx_doctests():
    """Nx.LinAlg doctests not covered above (values, types, shapes)."""
    r = L.cholesky(nx.tensor([[20.0, 17.6], [17.6, 16.0]]))
    np.testing.assert_allclose(r.to_numpy(),
                               [[4.4721360206604, 0.0], [3.9354796409606934, 0.7155418395996094]],
                               rtol=1e-6)
    r = L.triangular_solve(nx.tensor([[3, 0, 0, 0], [2, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]]),
                           nx.tensor([4, 2, 4, 2]))
    np.testing.assert_allclose(r.to_numpy(), [1.3333333730697632, -0.6666666865348816,
                                              2.6666667461395264, -1.3333333730697632], rtol=1e-6)
    r = L.triangular_solve(nx.tensor([[[1, 0], [2, 3]], [[4, 0], [5, 6]]]),
                           nx.tensor([[2, -1], [3, 7]]))
    np.testing.assert_allclose(r.to_numpy(),
                               [[2.0, -1.6666666269302368], [0.75, 0.5416666865348816]], rtol=1e-6)
    r = L.triangular_solve(nx.tensor([[1, 0, 0], [1, 1j, 0], [1j, 1, 1]]),
                           nx.tensor([1, -1, 3 + 3j]))
    np.testing.assert_allclose(r.to_numpy(), [1, 2j, 3], atol=1e-6)
    assert str(r.type) == "c64"
    r = L.solve(nx.tensor([[[14, 10], [9, 9]], [[4, 11], [2, 3]]]),
                nx.tensor([[[2, 4], [3, 2]], [[1, 5], [-3, -1]]]))
    assert nx.round(r).tolist() == [[[0.0, 0.0], [1.0, 0.0]], [[-4.0, -3.0], [1.0, 1.0]]]
    r = L.solve(nx.tensor([[1, 0, 1], [1, 1, 0], [1, 1, 1]], names=["x", "y"]),
                nx.tensor([0, 2, 1], names=["z"]))
    assert r.names == (None,) and nx.round(r).tolist() == [1.0, 1.0, -1.0]
    q, r = L.qr(nx.tensor([[3, 2, 1], [0, 1, 1], [0, 0, 1], [0, 0, 1]], type="f32"))
    np.testing.assert_allclose(np.abs(r.to_numpy()),
                               [[3, 2, 1], [0, 1, 1], [0, 0, 1.4142135381698608]], rtol=1e-6)
    w, v = L.eigh(nx.tensor([[[2, 5], [5, 6]], [[1, 0], [0, 4]]]))
    assert nx.round(w).tolist() == [[-1.0, 9.0], [1.0, 4.0]]  # LAPACK: ascending (Nx: [9, -1])
    u, s, vt = L.svd(nx.tensor([[2, 0, 0], [0, 3, 0], [0, 0, -1], [0, 0, 0]]), full_matrices=False)
    assert s.tolist() == [3.0, 2.0, 1.0] and u.shape == (4, 3)
    d = L.determinant(nx.tensor([[[2, 4, 6, 7], [5, 1, 8, 8], [1, 7, 3, 1], [3, 9, 2, 4]],
                                 [[2, 5, 1, 3], [4, 1, 7, 9], [6, 8, 3, 2], [7, 8, 1, 4]]]))
    np.testing.assert_allclose(d.to_numpy(), [630.0, 630.0], rtol=1e-5)
    d = L.determinant(nx.tensor([[0, 0, 0, 1], [0, 2j, 0, 0], [0, 0, 3, 0], [1, 0, 0, 0]]))
    np.testing.assert_allclose(d.to_numpy(), -6j, atol=1e-5)
    d = L.determinant(nx.tensor([[0, 0, 0, 0, -1], [0, 1, 2, 3, 0], [0, 1, -2, 3, 0],
                                 [0, 7, 8, 9, 0], [1, 0, 0, 0, 0]]))
    assert d.tolist() == pytest.approx(48.0, rel=1e-5)
    r = L.pinv(nx.tensor([[1, 1], [3, 4]]))
    np.testing.assert_allclose(r.to_numpy(), [[4, -1], [-3, 1]], atol=1e-4)  # Nx: 3.99.., -1.005..
    r = L.matrix_power(nx.iota((2, 2, 2)), 3)
    assert r.tolist() == [[[6, 11], [22, 39]], [[514, 615], [738, 883]]]
    r = L.least_squares(nx.tensor([[1, 2, 3], [4, 5, 6]]), nx.tensor([1, 2]))
    np.testing.assert_allclose(r.to_numpy(), [-0.05555, 0.11111, 0.27777], atol=1e-3)


def test_front_end_errors():
    with pytest.raises(ValueError, match="tensor must have at least rank 2, got rank 1 with shape"):
        L.qr(nx.tensor([1, 2, 3, 4, 5]))
    with pytest.raises(ValueError, match="invalid :mode received"):
        L.qr(nx.eye(3), mode="error_test")
    with pytest.raises(ValueError, match="tensor must be a square matrix or a batch of square "
                                         "matrices, got shape: \\(2, 3\\)"):
        L.eigh(nx.tensor([[1, 2, 3], [4, 5, 6]]))
    with pytest.raises(ValueError, match="square matrix"):
        L.lu(nx.tensor([[1, 1, 1, 1], [-1, 4, 4, -1], [4, -2, 2, 0]]))
    with pytest.raises(ValueError, match="max_iter"):
        L.eigh(nx.eye(2), max_iter=0)


def test_empty_and_f16():
    for path, (q, r) in run(lambda x: L.qr(x, mode="complete"), np.zeros((3, 0), np.float32),
                            paths=("numpy", "exla")).items():
        assert q.shape == (3, 3) and r.shape == (3, 0)
        np.testing.assert_array_equal(q.to_numpy(), np.eye(3))
    for r in run(L.cholesky, np.zeros((2, 0, 0), np.float32), paths=("numpy", "exla")).values():
        assert r.shape == (2, 0, 0)
    a = spd("f32", (3, 3)).astype(np.float16)
    for path, r in run(L.cholesky, a, paths=("numpy", "exla")).items():
        assert str(r.type) == "f16", path
        np.testing.assert_allclose(r.to_numpy().astype(np.float32),
                                   np.linalg.cholesky(a.astype(np.float32)), rtol=5e-3, atol=5e-3)


# ----------------------------------------------------------------------------------------
# The portable fallback: a backend and compilers without linalg kernels/rules
# ----------------------------------------------------------------------------------------
from nxpy.backends.numpy import NumpyBackend  # noqa: E402
from nxpy.compilers.evaluator import Evaluator  # noqa: E402
from nxpy.compilers.exla.compiler import ExlaCompiler  # noqa: E402
from nxpy.ops.core import PORTABLE  # noqa: E402
from nxpy.ops.linalg import LINALG  # noqa: E402


class BareBackend(NumpyBackend):
    """A plugin backend with no linear-algebra kernels."""
    name = "bare_linalg"
    cholesky = triangular_solve = qr = eigh = solve = lu = svd = None


class ExlaWithoutLinalg(ExlaCompiler):
    """A compiler plugin that declares it has no rule for the portable ops."""
    name = "exla_no_linalg"

    def supports(self, op):
        return op not in PORTABLE


class RecordingEvaluator(Evaluator):
    """A compiler plugin that does not declare ``supports``: it must never see them."""
    name = "linalg_recording"
    seen: set = set()

    def compile(self, graph, opts):
        RecordingEvaluator.seen |= {e.op for e in graph.nodes}
        return super().compile(graph, opts)


RecordingEvaluator.supports = None  # no declaration at all (getattr finds None)


def _fallback_fn(a, s, b):
    q, r = L.qr(a)
    w, v = L.eigh(s)
    return (L.cholesky(s), L.triangular_solve(L.cholesky(s), b), L.triangular_solve(
        r, b, lower=False, left_side=False, transform_a="transpose"), q, r, w, v, L.solve(a, b),
        *L.lu(a), L.determinant(a), L.svd(a)[1], L.pinv(a[:, :, :3]))


def test_portable_fallback_on_a_plugin_backend_and_compilers():
    # every primitive has a portable implementation (and call: its body, traced in place)
    assert set(PORTABLE) == set(LINALG) | {"call"}
    a, s, b = rand("f64", (2, 4, 4)), spd("f64", (2, 4, 4)), rand("f64", (2, 4, 4), 3)
    want = _fallback_fn(*[nx.tensor(x) for x in (a, s, b)])
    nx.register_backend("bare_linalg", BareBackend(), replace=True)
    nx.register_compiler("exla_no_linalg", ExlaWithoutLinalg(), replace=True)
    nx.register_compiler("linalg_recording", RecordingEvaluator(), replace=True)
    try:
        got = {"backend": _fallback_fn(*[nx.tensor(x, backend="bare_linalg") for x in (a, s, b)]),
               "exla_no_linalg": jit(_fallback_fn, compiler="exla_no_linalg")(
                   *[nx.tensor(x) for x in (a, s, b)]),
               "recording": jit(_fallback_fn, compiler="linalg_recording")(
                   *[nx.tensor(x) for x in (a, s, b)])}
    finally:
        nx.plugins.COMPILERS.unregister("exla_no_linalg")
        nx.plugins.COMPILERS.unregister("linalg_recording")
        nx.plugins.BACKENDS.unregister("bare_linalg")
    assert not (RecordingEvaluator.seen & set(PORTABLE)) and "while" in RecordingEvaluator.seen
    for path, outs in got.items():
        for i, (g, w) in enumerate(zip(outs, want)):
            np.testing.assert_allclose(np.abs(g.to_numpy()) if i in (3, 4, 6) else g.to_numpy(),
                                       np.abs(w.to_numpy()) if i in (3, 4, 6) else w.to_numpy(),
                                       rtol=1e-6, atol=1e-6, err_msg=f"{path} output {i}")
    text = to_mlir(_fallback_fn, *[nx.tensor(x) for x in (a, s, b)])
    assert all(f"lapack_d{r}_ffi" in text for r in ("potrf", "trsm", "geqrf", "orgqr", "syevd",
                                                    "getrf"))


# ----------------------------------------------------------------------------------------
# Gradients against jax.grad
# ----------------------------------------------------------------------------------------
W = rand("f64", (4, 4), 9)


def _grad_cases():
    spd_ = spd("f64", (4, 4))
    a = well("f64", (4, 4))
    tall = rand("f64", (5, 3))
    b = rand("f64", (4, 2), 4)
    Wt = rand("f64", (5, 3), 5)
    W3 = rand("f64", (3, 3), 6)
    return [
        ("cholesky", lambda x: nx.sum(L.cholesky(x) * W),
         lambda x: jnp.sum(jnp.linalg.cholesky(x) * W), spd_),
        ("triangular_solve", lambda x: nx.sum(L.triangular_solve(x, nx.tensor(b)) ** 2),
         lambda x: jnp.sum(jax.scipy.linalg.solve_triangular(jnp.tril(x), b, lower=True) ** 2), a),
        ("triangular_solve_t",
         lambda x: nx.sum(L.triangular_solve(x, nx.tensor(b), lower=False,
                                             transform_a="transpose") ** 2),
         lambda x: jnp.sum(jax.scipy.linalg.solve_triangular(jnp.triu(x), b, lower=False,
                                                             trans=1) ** 2), a),
        ("solve", lambda x: nx.sum(L.solve(x, nx.tensor(b)) * nx.tensor(b)),
         lambda x: jnp.sum(jnp.linalg.solve(x, b) * b), a),
        ("qr", lambda x: nx.sum(L.qr(x)[0] * Wt) + nx.sum(L.qr(x)[1] * W3),
         lambda x: jnp.sum(jnp.linalg.qr(x)[0] * Wt) + jnp.sum(jnp.linalg.qr(x)[1] * W3), tall),
        ("eigh",
         lambda x: (nx.sum(L.eigh(x)[0] * nx.tensor([1.0, 2, 3, 4]))
                    + nx.sum(nx.abs(L.eigh(x)[1][..., 0]))),
         lambda x: (jnp.sum(jnp.linalg.eigh(x)[0] * jnp.array([1.0, 2, 3, 4]))
                    + jnp.sum(jnp.abs(jnp.linalg.eigh(x)[1][..., 0]))),
         spd_),
        ("determinant", lambda x: L.determinant(x), lambda x: jnp.linalg.det(x), a),
        ("invert", lambda x: nx.sum(L.invert(x) * W), lambda x: jnp.sum(jnp.linalg.inv(x) * W), a),
        ("solve_vec", lambda x: nx.sum(L.solve(x, nx.tensor(b[:, 0])) * nx.tensor([1.0, 2, 3, 4])),
         lambda x: jnp.sum(jnp.linalg.solve(x, b[:, 0]) * jnp.array([1.0, 2, 3, 4])), a),
        ("lu", lambda x: nx.sum(L.lu(x)[1] * W) + nx.sum(L.lu(x)[2] * W.T),
         lambda x: (lambda lu: jnp.sum((jnp.tril(lu, -1) + jnp.eye(4)) * W)
                    + jnp.sum(jnp.triu(lu) * W.T))(jax.lax.linalg.lu(x)[0]), a),
        ("svd_values", lambda x: nx.sum(L.svd(x)[1] * nx.tensor([3.0, 2, 1])),
         lambda x: jnp.sum(jnp.linalg.svd(x, compute_uv=False) * jnp.array([3.0, 2, 1])), tall),
        ("svd_vectors",
         lambda x: (lambda u, s_, vt: nx.sum(nx.abs(u) * Wt) + nx.sum(nx.abs(vt) * W3))(
            *L.svd(x, full_matrices=False)),
         lambda x: (lambda u, s_, vt: jnp.sum(jnp.abs(u) * Wt) + jnp.sum(jnp.abs(vt) * W3))(
             *jnp.linalg.svd(x, full_matrices=False)), tall),
        ("norm_nuclear", lambda x: L.norm(x, ord="nuclear"), lambda x: jnp.linalg.norm(x, "nuc"),
         tall),
        ("pinv", lambda x: nx.sum(L.pinv(x) * nx.tensor(Wt.T)),
         lambda x: jnp.sum(jnp.linalg.pinv(x) * Wt.T), tall),
    ]


def _with_exla(names):
    """The ``names`` whose test also runs on EXLA (one compile each; the Evaluator, which
    compiles nothing, takes every one): every other one, in rotation; all under make
    exhaustive."""
    return {n for n, on in covering(names, (True, False)) if on}


GRAD_EXLA = _with_exla([c[0] for c in _grad_cases()])


def test_half_of_each_table_meets_exla():
    for names, table in ((GRAD_EXLA, _grad_cases()), (COMPLEX_GRAD_EXLA, _complex_grad_cases()),
                         (PROGRAMS_EXLA, _jax_programs())):
        assert len(names) >= len(table) // 2 and names <= {c[0] for c in table}


def _compilers(name, with_exla):
    return COMPILERS if name in with_exla else ("evaluator",)


@pytest.mark.parametrize("case", _grad_cases(), ids=lambda c: c[0])
def test_grad_vs_jax(case):
    name, f, jf, x = case
    with jax.enable_x64(True):  # jitted: one compile, where eager JAX compiles every op
        want = np.asarray(jax.jit(jax.grad(jf))(x))
    sym = name in ("cholesky", "eigh")  # nxpy, as JAX, symmetrizes: compare sym parts
    for compiler in _compilers(name, GRAD_EXLA):
        got = jit(grad(f), compiler=compiler)(nx.tensor(x)).to_numpy()
        if sym:
            got, want_ = (got + got.T) / 2, (want + want.T) / 2
        else:
            want_ = want
        np.testing.assert_allclose(got, want_, rtol=1e-6, atol=1e-8, err_msg=f"{name} {compiler}")


def _complex_grad_cases():
    a = well("c128", (3, 3))
    b, w, W = rand("c128", (3, 2), 1), rand("c128", (3, 2), 2), rand("c128", (3, 3), 3)
    tri = jax.scipy.linalg.solve_triangular
    return [
        ("solve", lambda x: nx.real(nx.sum(L.solve(x, nx.tensor(b)) * nx.tensor(w))),
         lambda x: jnp.real(jnp.sum(jnp.linalg.solve(x, b) * w)), a),
        ("triangular_solve", lambda x: nx.real(nx.sum(L.triangular_solve(x, nx.tensor(b))
                                                      * nx.tensor(w))),
         lambda x: jnp.real(jnp.sum(tri(jnp.tril(x), b, lower=True) * w)), np.tril(a)),
        ("triangular_solve_t",
         lambda x: nx.imag(nx.sum(L.triangular_solve(x, nx.tensor(b), lower=False,
                                                     transform_a="transpose") * nx.tensor(w))),
         lambda x: jnp.imag(jnp.sum(tri(jnp.triu(x), b, lower=False, trans=1) * w)),
         np.triu(a)),
        ("invert", lambda x: nx.real(nx.sum(L.invert(x) * nx.tensor(W))),
         lambda x: jnp.real(jnp.sum(jnp.linalg.inv(x) * W)), a),
        ("determinant", lambda x: nx.real(L.determinant(x) * (1 + 2j)),
         lambda x: jnp.real(jnp.linalg.det(x) * (1 + 2j)), a),
        ("eigh", lambda x: nx.sum(L.eigh(x)[0] * nx.tensor([1.0, 2, 3])),
         lambda x: jnp.sum(jnp.linalg.eigh(x)[0] * jnp.array([1.0, 2, 3])), spd("c128", (3, 3))),
    ]


# each case on one compiler, in rotation (both: make exhaustive)
@pytest.mark.parametrize("case,path", [
    pytest.param(c, p, id=f"{c[0]}-{p}") for c, p in covering(
        [c for c in _grad_cases() if c[0] not in ("cholesky", "eigh")], COMPILERS)])
def test_jvp_vs_jax(case, path):
    name, f, jf, x = case
    jvp_matches_jax(f, jf, (x,), path, 1e-6, x64=True)


@pytest.mark.parametrize("path", COMPILERS)
def test_jvp_of_symmetric_decompositions(path):
    # cholesky and eigh read one triangle: symmetric tangents, as JAX's rules assume
    a = spd("f64", (4, 4))
    t = np.random.default_rng(1).standard_normal(a.shape)  # as jvp_matches_jax's, symmetrized
    t = (t + t.T) / 2
    for name, f, jf, _ in _grad_cases():
        if name not in ("cholesky", "eigh"):
            continue
        with jax.enable_x64(True):
            want = jax.tree_util.tree_map(np.asarray,
                                          jax.jvp(jf, (jnp.asarray(a),), (jnp.asarray(t),)))
        got = jit(lambda p, t, f=f: jvp(f, p, t), compiler=path)((nx.tensor(a),), (nx.tensor(t),))
        close(got, want, 1e-6, 1e-8)


COMPLEX_GRAD_EXLA = _with_exla([c[0] for c in _complex_grad_cases()])


@pytest.mark.parametrize("case", _complex_grad_cases(), ids=lambda c: c[0])
def test_complex_grad_vs_jax(case):
    """Complex inputs: JAX's convention (transposes that do not conjugate), as every other
    gradient rule."""
    name, f, jf, x = case
    with jax.enable_x64(True):
        want = np.asarray(jax.jit(jax.grad(jf))(x))
    for compiler in _compilers(name, COMPLEX_GRAD_EXLA):
        got = jit(grad(f), compiler=compiler)(nx.tensor(x)).to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=f"{name} {compiler}")


@pytest.mark.parametrize("op", ["lu", "cholesky", "qr"])
def test_complex_grads_not_checked_against_jax_are_errors(op):
    x = spd("c128", (3, 3))
    with pytest.raises(NotImplementedError, match=f"grad of {op}: complex inputs are not "
                                                  f"supported yet"):
        jit(grad(lambda v: nx.real(nx.sum(getattr(L, op)(v)[-1]))))(nx.tensor(x))


# ----------------------------------------------------------------------------------------
# Sharding: a batched decomposition with its batch dim sharded
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_batched_linalg_under_shard_jit(compiler):
    mesh = nx.Mesh("mesh", (2, 2))
    x = nx.tensor(spd("f32", (4, 3, 3)))
    b = nx.tensor(rand("f32", (4, 3), 1))

    def fun(a, y):
        return (L.cholesky(a), L.solve(a, y), L.triangular_solve(a, y, lower=False),
                L.eigh(a)[0])
    ins = [{0: [0]}, {0: [0]}]
    f = shard_jit(fun, mesh, input_shardings=ins, compiler=compiler)
    args = [[p, q] for p, q in zip(SH.shard(x, mesh, ins[0]), SH.shard(b, mesh, ins[1]))]
    res = f(args)
    # cholesky and the solves keep the batch sharded (each device solves its matrices);
    # eigh (several results) is replicated
    assert f.output_shardings == (nx.P("axis_0"),) * 3 + (nx.P(),)
    globs = SH.assemble(res, mesh, f.output_shardings)
    for glob, want in zip(globs, fun(x, b)):
        np.testing.assert_allclose(glob.to_numpy(), want.to_numpy(), rtol=1e-4, atol=1e-4)
    if compiler == "exla":
        assert f.lower(args).count("sdy.manual_computation") == 3


# ----------------------------------------------------------------------------------------
# The StableHLO importer: JAX programs calling LAPACK load and give JAX's results
# ----------------------------------------------------------------------------------------
def _jax_programs():
    a = well("f32", (2, 4, 4))
    s = spd("f32", (2, 4, 4))
    b = rand("f32", (2, 4, 3), 1)
    tall = rand("f32", (5, 3))
    wide = rand("f32", (3, 5))
    return [
        ("cholesky", jnp.linalg.cholesky, (s,)),
        ("solve", jnp.linalg.solve, (a, b)),
        ("solve_vec", jnp.linalg.solve, (a[0], b[0, :, 0])),
        ("qr", jnp.linalg.qr, (a,)),
        ("qr_tall", jnp.linalg.qr, (tall,)),
        ("qr_complete", lambda x: jnp.linalg.qr(x, mode="complete"), (tall,)),
        ("qr_wide", jnp.linalg.qr, (wide,)),
        ("eigh", jnp.linalg.eigh, (s,)),
        ("solve_triangular",
         lambda x, y: jax.scipy.linalg.solve_triangular(x, y, lower=False, trans=1), (a, b)),
        ("inv", jnp.linalg.inv, (a,)),
        ("det", jnp.linalg.det, (a,)),
        ("svd", lambda x: jnp.linalg.svd(x, compute_uv=False), (tall,)),
        ("eigh_c64", jnp.linalg.eigh, (spd("c64", (3, 3)),)),
        ("cholesky_f64", jnp.linalg.cholesky, (spd("f64", (3, 3)),)),
    ]


PROGRAMS_EXLA = _with_exla([c[0] for c in _jax_programs()])


@pytest.mark.parametrize("case", _jax_programs(), ids=lambda c: c[0])
def test_jax_linalg_programs_load(case):
    name, f, args = case
    with jax.enable_x64(any(np.asarray(x).dtype == np.float64 for x in args)):
        text = jax.jit(f).lower(*args).as_text()
        want = jax.jit(f)(*args)
    assert "lapack_" in text
    want = [np.asarray(w) for w in (want if isinstance(want, (tuple, list)) else [want])]
    prog = load(text)
    for compiler in _compilers(name, PROGRAMS_EXLA):
        got = prog.jit(compiler)(*[nx.tensor(x) for x in args])
        got = got if isinstance(got, (tuple, list)) else [got]
        for g, w in zip(got, want):
            g = g.to_numpy()
            if name.startswith("eigh"):  # eigenvectors: up to a phase per column
                g, w = np.abs(g), np.abs(w)
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4, err_msg=f"{name} {compiler}")


@pytest.mark.parametrize("t", ["f32", "c64"])
def test_portable_implementations_match_lapack(t):
    """The compositions give LAPACK's results (signs included) in f32 and c64."""
    from nxpy.defn import portable as P
    a, s = nx.tensor(well(t, (2, 4, 4))), nx.tensor(spd(t, (2, 4, 4)))
    b = nx.tensor(rand(t, (2, 4, 3), 1))
    tol = TOL[t] * 10
    pairs = [(P.portable_cholesky(L.cholesky(s), s), L.cholesky(s)),
             (P.portable_triangular_solve(b, a, b, lower=False, transform_a="transpose"),
              L.triangular_solve(a, b, lower=False, transform_a="transpose")),
             (P.portable_qr(list(L.qr(a[:, :, :3])), a[:, :, :3]), L.qr(a[:, :, :3])),
             (P.portable_lu(list(L.lu(a)), a), L.lu(a))]
    if t == "f32":
        tall = nx.tensor(rand(t, (2, 5, 3), 7))
        u, sv, vt = P.portable_svd(list(L.svd(tall)), tall)
        np.testing.assert_allclose(sv.to_numpy(), L.svd(tall)[1].to_numpy(), rtol=tol, atol=tol)
        rec = (u.to_numpy()[..., :3] * sv.to_numpy()[..., None, :]) @ vt.to_numpy()
        np.testing.assert_allclose(rec, tall.to_numpy(), rtol=tol, atol=tol)
        w, v = L.eigh(s)
        pw, pv = P.portable_eigh([w, v], s, eps=1e-7)
        pairs.append(((pw, nx.abs(pv)), (w, nx.abs(v))))
    for got, want in pairs:
        close(got, want, tol, tol)
    # eigh, real symmetric and complex Hermitian (unitary Jacobi rotations)
    h = spd(t, (2, 4, 4)) - 4 * np.eye(4).astype(dt(t))
    w, v = P.portable_eigh(list(L.eigh(nx.tensor(h))), nx.tensor(h), eps=1e-7)
    np.testing.assert_allclose(w.to_numpy(), np.linalg.eigvalsh(h), rtol=tol, atol=tol)
    vn = v.to_numpy()
    np.testing.assert_allclose(h @ vn, vn * w.to_numpy()[..., None, :], rtol=tol, atol=tol * 10)
