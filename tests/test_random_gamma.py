"""nxpy.random's gamma family (gamma, loggamma, beta, dirichlet, chisquare, t, f,
generalized_normal) against jax.random 0.10.2 (and 0.12, whose ``method='exact'`` default
is the same algorithm).

Tolerances: EXLA gives JAX's bits exactly. The NumPy backend and the Evaluator compute
log, pow, exp and erf_inv with NumPy, which is a few ulps from XLA's CPU kernels; and XLA
flushes subnormal f32/f16/bf16 results to zero where NumPy keeps them (gamma samples of
tiny ``a`` are subnormal). So off EXLA, f32 values agree to ``rtol=1e-4`` (f64 to 1e-9)
above the smallest normal number, and in f16/bf16, whose rounding can turn an accept of
the rejection sampler into a reject, most elements are bit-equal and the rest within the
type's range of the distribution.

Traced programs bound the rejection loops (``K`` trials of ``J`` normal draws, see
``nxpy/random/gamma.py``); EXLA's compile time grows with ``K + J``, so the EXLA tests use
``K = 2, J = 1`` with a seed whose elements all accept within those (the result is JAX's
exactly either way; the eager tests exercise larger counts through the doubling).
"""
import sys

import numpy as np
import pytest

import nxpy as nx
from nxpy import random as R
from nxpy.defn import jit, vmap

import jax  # after nxpy (conftest)

G = sys.modules["nxpy.random.gamma"]
A = np.array([0.01, 0.3, 0.5, 1.0, 1.5, 2.0, 5.0, 100.0, 1e-3, 0.9] * 4)
B = np.array([0.7, 3.0, 9.0, 1.0] * 10)


def _jkey(seed):
    return jax.random.key_data(jax.random.key(seed))


def _np(t):
    return nx.types.parse(t).dtype


# (name, nxpy function of (key, a, b, type), jax function of (key, a, b, dtype))
DISTS = {
    "gamma": (lambda k, a, b, t: R.gamma_split(k, a, type=t),
              lambda k, a, b, d: jax.random.gamma(k, a, dtype=d)),
    "loggamma": (lambda k, a, b, t: R.loggamma_split(k, a, type=t),
                 lambda k, a, b, d: jax.random.loggamma(k, a, dtype=d)),
    "beta": (lambda k, a, b, t: R.beta_split(k, a, b, type=t),
             lambda k, a, b, d: jax.random.beta(k, a, b, dtype=d)),
    "dirichlet": (lambda k, a, b, t: R.dirichlet_split(k, nx.reshape(a, (10, 4)), type=t),
                  lambda k, a, b, d: jax.random.dirichlet(k, a.reshape(10, 4), dtype=d)),
    "chisquare": (lambda k, a, b, t: R.chisquare_split(k, b, type=t),
                  lambda k, a, b, d: jax.random.chisquare(k, b, dtype=d)),
    "t": (lambda k, a, b, t: R.t_split(k, b, type=t),
          lambda k, a, b, d: jax.random.t(k, b, dtype=d)),
    "f": (lambda k, a, b, t: R.f_split(k, a, b, type=t),
          lambda k, a, b, d: jax.random.f(k, a, b, dtype=d)),
    "generalized_normal": (
        lambda k, a, b, t: R.generalized_normal_split(k, 1.5, shape=(40,), type=t),
        lambda k, a, b, d: jax.random.generalized_normal(k, 1.5, (40,), dtype=d)),
    "generalized_normal_tensor_p": (
        lambda k, a, b, t: R.generalized_normal_split(k, b, shape=(40,), type=t),
        lambda k, a, b, d: jax.random.generalized_normal(k, b, (40,), dtype=d)),
}


def _wants(names, seed, t):
    """JAX's values of several distributions, from one program (one compile)."""
    d = _np(t)
    with jax.enable_x64(t == "f64"):
        out = jax.jit(lambda k, a, b: {n: DISTS[n][1](k, a, b, d) for n in names})(
            _jkey(seed), A.astype(d), B.astype(d))
        return {n: np.asarray(v) for n, v in out.items()}


def _close_off_exla(got, want, t, what=""):
    assert got.shape == want.shape and got.dtype == want.dtype, what
    g, w = got.astype(np.float64), want.astype(np.float64)
    if t in ("f32", "f64"):  # XLA flushes subnormals: values that small are compared as 0
        np.testing.assert_allclose(g, w, rtol=1e-4 if t == "f32" else 1e-9,
                                   atol=1e-30 if t == "f32" else 1e-300, err_msg=what)
    else:  # a rounding can flip an accept: most are bit-equal, the rest still in range
        assert np.mean(g == w) >= 0.85, what
        assert np.all(np.isfinite(g) == np.isfinite(w)), what


#: per type, the distributions also run through the Evaluator (one program each)
TRACED = {"f32": ["gamma", "loggamma", "dirichlet", "generalized_normal"], "f64": []}
#: per type, the distributions compared (f64: the ones that add a code path)
NAMES = {"f32": list(DISTS), "f64": ["gamma", "loggamma", "beta", "t", "generalized_normal"]}


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_like_jax_numpy_and_evaluator(t):
    wants = _wants(NAMES[t], 3, t)
    a, b = nx.tensor(A, type=t), nx.tensor(B, type=t)
    for name in NAMES[t]:
        got = DISTS[name][0](R.key(3), a, b, t)
        _close_off_exla(got.to_numpy(), wants[name], t, f"{name} eager")
    if not TRACED[t]:
        return
    traced = jit(lambda k, a, b: {n: DISTS[n][0](k, a, b, t) for n in TRACED[t]},
                 compiler="evaluator")(R.key(3), a, b)
    for name, got in traced.items():
        _close_off_exla(got.to_numpy(), wants[name], t, f"{name} evaluator")


def test_narrow_floats_eager():
    wants = {t: _wants(["gamma"], 5, t)["gamma"] for t in ("f16", "bf16")}
    for t, want in wants.items():
        got = R.gamma_split(R.key(5), nx.tensor(A, type=t))
        _close_off_exla(got.to_numpy(), want, t, t)


@pytest.fixture
def small_loops(monkeypatch):
    """Bounded loops small enough for fast EXLA compiles (see the module docstring)."""
    monkeypatch.setattr(G, "_TRACED_TRIALS", 2)
    monkeypatch.setattr(G, "_TRACED_DRAWS", 1)


def test_exla_bits(small_loops):
    """EXLA gives JAX's bits (f32, both the direct and the log-space path)."""
    a = nx.tensor(A, type="f32")
    prog = jit(lambda k, a: (R.gamma_split(k, a), R.loggamma_split(k, a)), compiler="exla")
    got = prog(R.key(0), a)
    wants = _wants(["gamma", "loggamma"], 0, "f32")
    for name, g in zip(("gamma", "loggamma"), got):
        np.testing.assert_array_equal(g.to_numpy().view(np.uint32),
                                      wants[name].view(np.uint32), err_msg=name)


SMALL_A = np.full(400, 0.05, np.float32)  # d = a + 2/3: inner draws fail most often


@pytest.fixture(scope="module")
def small_a_want():
    return np.asarray(jax.jit(jax.random.gamma)(_jkey(11), SMALL_A))


def test_eager_doubling_reaches_jax(monkeypatch, small_a_want):
    """Eagerly the loops grow until every element accepted: starting from one trial of
    one draw, the result is still JAX's (the doubling ran)."""
    monkeypatch.setattr(G, "_EAGER_TRIALS", 1)
    monkeypatch.setattr(G, "_EAGER_DRAWS", 1)
    calls = []
    real = G._gamma_tries
    monkeypatch.setattr(G, "_gamma_tries", lambda *a: calls.append(a[3:]) or real(*a))
    got = R.gamma_split(R.key(11), nx.tensor(SMALL_A)).to_numpy()
    assert len(calls) > 1
    np.testing.assert_allclose(got, small_a_want, rtol=1e-4, atol=1e-30)


def test_traced_runs_out_gracefully(monkeypatch, small_a_want):
    """With one trial of one draw, some elements run out under jit: they stay finite and
    positive, the others are JAX's."""
    monkeypatch.setattr(G, "_TRACED_TRIALS", 1)
    monkeypatch.setattr(G, "_TRACED_DRAWS", 1)
    got = jit(lambda k, a: R.gamma_split(k, a), compiler="evaluator")(
        R.key(11), nx.tensor(SMALL_A)).to_numpy()
    same = np.isclose(got, small_a_want, rtol=1e-4, atol=1e-30)
    assert 0.8 < same.mean() < 1.0
    assert np.all(got[~same] > 0) and np.all(np.isfinite(got))


def test_shapes_broadcasting_and_empty():
    a = np.array([[0.5], [2.0], [7.0]], np.float32)
    got = R.gamma_split(R.key(4), nx.tensor(a), shape=(2, 3, 4))
    want = np.asarray(jax.jit(lambda k: jax.random.gamma(k, a, (2, 3, 4)))(_jkey(4)))
    assert got.shape == (2, 3, 4)
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-4)
    b = R.beta_split(R.key(4), 2.0, nx.tensor([1.0, 3.0]), shape=(3, 2))
    np.testing.assert_allclose(
        b.to_numpy(), np.asarray(jax.random.beta(_jkey(4), 2.0, np.array([1.0, 3.0]), (3, 2))),
        rtol=1e-4)
    assert R.gamma_split(R.key(0), 1.0, shape=(0, 3)).shape == (0, 3)
    assert R.dirichlet_split(R.key(0), nx.tensor([1.0, 2.0]), shape=(0,)).shape == (0, 2)
    assert R.t_split(R.key(0), 3.0).shape == ()
    d = R.dirichlet_split(R.key(0), nx.tensor([[1.0, 2.0, 3.0]]), shape=(4, 2))
    assert d.shape == (4, 2, 3)
    np.testing.assert_allclose(np.sum(d.to_numpy(), -1), 1.0, rtol=1e-5)
    assert R.gamma_split(R.key(0), 2.0, shape=(2, 3), names=["i", "j"]).names == ("i", "j")
    # the default type follows a (f32 for Python numbers), as the other samplers
    assert R.gamma_split(R.key(0), 2.0).type == nx.types.parse("f32")
    assert R.gamma_split(R.key(0), nx.tensor(2.0, type="f64")).type == nx.types.parse("f64")


def test_non_split_forms_thread_the_key():
    key = R.key(9)
    k0, k1 = R.split(key)
    for name in ("gamma", "loggamma", "chisquare", "t", "generalized_normal"):
        v, nxt = getattr(R, name)(key, 2.0, shape=(3,))
        assert nxt.tolist() == k0.tolist()
        assert v.tolist() == getattr(R, name + "_split")(k1, 2.0, shape=(3,)).tolist()
    for name in ("beta", "f"):
        v, nxt = getattr(R, name)(key, 2.0, 3.0, shape=(3,))
        assert nxt.tolist() == k0.tolist()
        assert v.tolist() == getattr(R, name + "_split")(k1, 2.0, 3.0, shape=(3,)).tolist()
    v, nxt = R.dirichlet(key, nx.tensor([1.0, 2.0]))
    assert v.tolist() == R.dirichlet_split(k1, nx.tensor([1.0, 2.0])).tolist()


def test_vmap_over_keys():
    keys = R.split(R.key(8), 3)
    a = nx.tensor([0.5, 2.0], type="f32")
    got = vmap(lambda k: R.gamma_split(k, a))(keys).to_numpy()
    want = np.asarray(jax.jit(jax.vmap(lambda k: jax.random.gamma(
        k, np.array([0.5, 2.0], np.float32))))(jax.random.split(_jkey(8), 3)))
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_statistics():
    g = R.gamma_split(R.key(0), 3.0, shape=(4000,)).to_numpy()
    assert abs(g.mean() - 3.0) < 0.15 and abs(g.var() - 3.0) < 0.4
    b = R.beta_split(R.key(1), 2.0, 6.0, shape=(4000,)).to_numpy()
    assert abs(b.mean() - 0.25) < 0.01
    lg = R.loggamma_split(R.key(2), 0.01, shape=(2000,)).to_numpy()
    assert np.all(np.isfinite(lg)) and np.median(lg) < -50


@pytest.mark.parametrize("call,exc,match", [
    (lambda: R.gamma_split(1, 2.0), TypeError, "gamma_split: expected key"),
    (lambda: R.gamma_split(R.key(0), 2.0, type="s32"), TypeError,
     "gamma_split: expected type to be a floating-point type, got s32"),
    (lambda: R.gamma_split(R.key(0), nx.tensor([1.0, 2.0]), shape=(3,)), ValueError,
     r"gamma_split: expected a to broadcast to shape \(3,\), got a tensor with shape \(2,\)"),
    (lambda: R.beta_split(R.key(0), nx.tensor([1.0, 2.0]), nx.tensor([1.0, 2.0, 3.0])),
     ValueError, "beta_split: the parameters' shapes"),
    (lambda: R.dirichlet_split(R.key(0), 2.0), ValueError,
     "dirichlet_split: expected alpha to have rank 1 or more"),
    (lambda: R.dirichlet_split(R.key(0), nx.tensor([[1.0, 2.0]] * 2), shape=(3,)), ValueError,
     r"dirichlet_split: expected alpha.shape\[:-1\] \(2,\) to broadcast"),
    (lambda: R.t_split(R.key(0), 1j), TypeError, "t_split: expected df to be a real"),
    (lambda: R.f_split(R.key(0), 1.0, nx.tensor([1.0, 2.0]), shape=(2, 3)), ValueError,
     "f_split: expected dfden to broadcast"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
