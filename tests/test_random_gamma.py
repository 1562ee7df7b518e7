"""nxpy.random's gamma family (gamma, loggamma, beta, dirichlet, chisquare, t, f,
generalized_normal) and its integer-valued neighbours (poisson, binomial, multinomial)
against jax.random 0.10.2 (and 0.12, whose algorithms are the same; only multinomial's
``shape`` changed meaning, see test_multinomial_shape).

Tolerances: EXLA gives JAX's bits exactly (the rejection loops are ``while_loop``s, as
JAX's). The NumPy backend and the Evaluator compute log, pow, exp, lgamma and erf_inv with
NumPy, which is a few ulps from XLA's CPU kernels, and XLA flushes subnormal f32/f16/bf16
results to zero where NumPy keeps them (gamma samples of tiny ``a`` are subnormal). So off
EXLA, f32 values agree to ``rtol=1e-4`` (f64 to 1e-9) above the smallest normal number;
the integer counts of poisson/binomial/multinomial are equal (a few-ulp difference could
flip an accept in principle; for these seeds none does); in f16/bf16, whose rounding can
turn an accept into a reject, most elements are bit-equal and the rest within range.

Speed: the JAX oracle is one program per type, and the nxpy programs are module-level
``jit`` objects traced and compiled once; EXLA's two programs are split so ``-n 2`` runs
them side by side.
"""
import numpy as np
import pytest

import nxpy as nx
from nxpy import random as R
from nxpy.defn import grad, jit, value_and_grad, vmap

import cpu
from helpers import covering

import jax  # after nxpy (conftest)
import jax.numpy as jnp

A = np.array([0.01, 0.3, 0.5, 1.0, 1.5, 2.0, 5.0, 100.0, 1e-3, 0.9] * 2)
B = np.array([0.7, 3.0, 9.0, 1.0] * 5)
LAM = np.array([0.0, 0.5, 3.0, 9.9, 10.0, 25.0, 200.0, 1e4, 1.0, 7.0] * 2)
N = np.array([0, 1, 5, 20, 100, 1000, 7, 50, 3, 40.0] * 2)
P = np.array([0.1, 0.5, 0.9, 0.3, 0.02, 0.7, 0.6, 0.45, 0.99, 0.2] * 2)
MN = np.array([10.0, 100.0, 1000.0])
MP = np.array([[0.2, 0.3, 0.5, 0.0], [0.1, 0.05, 0.6, 0.25], [0.3, 0.3, 0.3, 0.1]])


def _jkey(seed):
    return jax.random.key_data(jax.random.key(seed))


def _np(t):
    return nx.types.parse(t).dtype


# name -> (nxpy function of (key, args, type), jax function of (key, args, dtype)); args is
# the dict of parameter arrays above
DISTS = {
    "gamma": (lambda k, x, t: R.gamma_split(k, x["A"], type=t),
              lambda k, x, d: jax.random.gamma(k, x["A"], dtype=d)),
    "loggamma": (lambda k, x, t: R.loggamma_split(k, x["A"], type=t),
                 lambda k, x, d: jax.random.loggamma(k, x["A"], dtype=d)),
    "beta": (lambda k, x, t: R.beta_split(k, x["A"], x["B"], type=t),
             lambda k, x, d: jax.random.beta(k, x["A"], x["B"], dtype=d)),
    "dirichlet": (lambda k, x, t: R.dirichlet_split(k, nx.reshape(x["A"], (5, 4)), type=t),
                  lambda k, x, d: jax.random.dirichlet(k, x["A"].reshape(5, 4), dtype=d)),
    "chisquare": (lambda k, x, t: R.chisquare_split(k, x["B"], type=t),
                  lambda k, x, d: jax.random.chisquare(k, x["B"], dtype=d)),
    "t": (lambda k, x, t: R.t_split(k, x["B"], type=t),
          lambda k, x, d: jax.random.t(k, x["B"], dtype=d)),
    "f": (lambda k, x, t: R.f_split(k, x["A"], x["B"], type=t),
          lambda k, x, d: jax.random.f(k, x["A"], x["B"], dtype=d)),
    "generalized_normal": (
        lambda k, x, t: R.generalized_normal_split(k, 1.5, shape=(20,), type=t),
        lambda k, x, d: jax.random.generalized_normal(k, 1.5, (20,), dtype=d)),
    "generalized_normal_tensor_p": (
        lambda k, x, t: R.generalized_normal_split(k, x["B"], shape=(20,), type=t),
        lambda k, x, d: jax.random.generalized_normal(k, x["B"], (20,), dtype=d)),
    "poisson": (lambda k, x, t: R.poisson_split(k, x["LAM"]),
                lambda k, x, d: jax.random.poisson(k, x["LAM"])),
    "binomial": (lambda k, x, t: R.binomial_split(k, x["N"], x["P"], type=t),
                 lambda k, x, d: jax.random.binomial(k, x["N"], x["P"], dtype=d)),
    "multinomial": (lambda k, x, t: R.multinomial_split(k, x["MN"], x["MP"], type=t),
                    lambda k, x, d: jax.random.multinomial(k, x["MN"], x["MP"], dtype=d)),
}
#: the test groups: per group, its type, the distributions compared with JAX on the NumPy
#: backend, those compiled (bits on EXLA, values through the Evaluator: each on one of the
#: two, rotating; on both under `make exhaustive`; the EXLA program of a rejection sampler
#: is the costly compile), and those also run through the Evaluator. Each group has its own
#: JAX oracle program, computed once by the test that needs it
_GROUPS = {
    # beta and dirichlet draw through loggamma (JAX's and nxpy's): loggamma's bits on EXLA
    "gamma_family": ("f32", ["gamma", "loggamma", "beta", "dirichlet"],
                     ["gamma", "loggamma", "beta", "dirichlet"], ["gamma", "dirichlet"]),
    # generalized_normal with a Python p: XLA folds the constant an ulp apart from JAX's
    # program in a few elements (docs/random.md); as a tensor, p gives JAX's bits
    "gamma_derived": ("f32", ["chisquare", "t", "f", "generalized_normal",
                              "generalized_normal_tensor_p"],
                      ["chisquare", "t", "f", "generalized_normal_tensor_p"], []),
    # multinomial draws through binomial: binomial's bits on EXLA
    "counts": ("f32", ["poisson", "binomial", "multinomial"],
               ["poisson", "binomial", "multinomial"], ["poisson", "binomial", "multinomial"]),
    "f64": ("f64", ["gamma", "loggamma", "binomial"], ["gamma", "binomial", "loggamma"], []),
}


def _split(compiled, evaluator):
    on = covering(compiled, ("exla", "evaluator"))
    return ([n for n, c in on if c == "exla"],
            [n for n in compiled if (n, "evaluator") in on or n in evaluator])


GROUPS = {g: (t, names, *_split(compiled, ev)) for g, (t, names, compiled, ev) in _GROUPS.items()}
COUNTS = ("poisson", "binomial", "multinomial")


def _args(t, wrap):
    d = _np(t)
    arrays = {"A": A, "B": B, "LAM": LAM.astype(np.float32), "N": N, "P": P, "MN": MN,
              "MP": MP}
    return {k: wrap(v.astype(d) if k != "LAM" else v) for k, v in arrays.items()}


def _wants(t, names, seed=3):
    """JAX's values of several distributions, from one program (one compile)."""
    with jax.enable_x64(t == "f64"):
        out = jax.jit(lambda k, x: {n: DISTS[n][1](k, x, _np(t)) for n in names})(
            _jkey(seed), _args(t, np.asarray))
        return {n: np.asarray(v) for n, v in out.items()}


def _close_off_exla(got, want, t, what=""):
    assert got.shape == want.shape and got.dtype == want.dtype, what
    if what.split()[0] in COUNTS:  # integer counts: equal
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    if t in ("f32", "f64"):  # XLA flushes subnormals: values that small are compared as 0
        np.testing.assert_allclose(g, w, rtol=1e-4 if t == "f32" else 1e-9,
                                   atol=1e-30 if t == "f32" else 1e-300, err_msg=what)
    else:  # a rounding can flip an accept: most are bit-equal, the rest still in range
        # (where XLA rounds each f16/bf16 op as the NumPy backend does: tests/cpu.py)
        assert not cpu.half_rounds_each_op() or np.mean(g == w) >= 0.85, what
        assert np.all(np.isfinite(g) == np.isfinite(w)), what


def _bits_equal(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, what
    w = want.view(f"u{want.dtype.itemsize}") if want.dtype.kind == "f" else want
    g = got.view(f"u{got.dtype.itemsize}") if got.dtype.kind == "f" else got
    np.testing.assert_array_equal(g, w, err_msg=what)


@pytest.mark.parametrize("group", list(GROUPS))
def test_like_jax(group):
    """EXLA gives JAX's bits; the NumPy backend and the Evaluator its values (see the
    header on tolerances)."""
    t, names, exla, evaluator = GROUPS[group]
    wants = _wants(t, names)
    x = _args(t, nx.tensor)
    for name in names:
        _close_off_exla(DISTS[name][0](R.key(3), x, t).to_numpy(), wants[name], t,
                        f"{name} eager")
    for compiler, which in (("exla", exla), ("evaluator", evaluator)):
        if not which:
            continue
        got = jit(lambda k, x: {n: DISTS[n][0](k, x, t) for n in which},
                  compiler=compiler)(R.key(3), x)
        for name in which:
            if compiler == "exla":
                _bits_equal(got[name].to_numpy(), wants[name], name)
            else:
                _close_off_exla(got[name].to_numpy(), wants[name], t, f"{name} evaluator")


#: Python-number parameters: constants of the compiled program, which XLA folds into the
#: rejection loops' arithmetic as it folds JAX's (parameters enter through a call boundary,
#: as an argument of JAX's jitted ``_gamma``/``_chisquare``/... does)
NUMBER_PARAMS = {
    "gamma": (lambda k: R.gamma_split(k, 9.0, shape=(20,)),
              lambda k: jax.random.gamma(k, 9.0, (20,))),
    "chisquare": (lambda k: R.chisquare_split(k, 1.5, shape=(20,)),
                  lambda k: jax.random.chisquare(k, 1.5, (20,))),
    "t": (lambda k: R.t_split(k, 1.5, shape=(20,)), lambda k: jax.random.t(k, 1.5, (20,))),
    "generalized_normal": (lambda k: R.generalized_normal_split(k, 1.5, shape=(20,)),
                           lambda k: jax.random.generalized_normal(k, 1.5, (20,))),
    "beta": (lambda k: R.beta_split(k, 2.0, 3.0, shape=(20,)),
             lambda k: jax.random.beta(k, 2.0, 3.0, (20,))),
    "f": (lambda k: R.f_split(k, 2.0, 7.0, shape=(20,)),
          lambda k: jax.random.f(k, 2.0, 7.0, (20,))),
}


@pytest.mark.parametrize("name", list(NUMBER_PARAMS))
def test_python_number_params_like_jax(name):
    """Parameters given as Python numbers give ``jax.jit``'s bits on EXLA."""
    f, j = NUMBER_PARAMS[name]
    want = np.asarray(jax.jit(j)(_jkey(3)))
    _bits_equal(jit(f, compiler="exla")(R.key(3)).to_numpy(), want, name)


#: samplers with Python-number parameters, many to a program: each gives JAX's bits, as
#: its sampler is a function of the program (``nxpy.defn.call``: JAX's ``_gamma``, called
#: at each site), whose constants XLA does not merge with another sampler's
PAIRS = {
    "gamma": (lambda k: R.gamma_split(k, 0.75, shape=(20,)),
              lambda k: jax.random.gamma(k, 0.75, (20,))),
    "f": (lambda k: R.f_split(k, 3.0, 5.0, shape=(20,)),
          lambda k: jax.random.f(k, 3.0, 5.0, (20,))),
    "beta": (lambda k: R.beta_split(k, 0.5, 3.0, shape=(20,)),
             lambda k: jax.random.beta(k, 0.5, 3.0, (20,))),
    "loggamma": (lambda k: R.loggamma_split(k, 2.0, shape=(20,)),
                 lambda k: jax.random.loggamma(k, 2.0, (20,))),
    "dirichlet": (lambda k: R.dirichlet_split(k, nx.tensor([0.5, 2.0, 3.0]), shape=(7,)),
                  lambda k: jax.random.dirichlet(k, np.array([0.5, 2.0, 3.0], np.float32),
                                                 (7,))),
    "poisson": (lambda k: R.poisson_split(k, 3.0, shape=(20,)),
                lambda k: jax.random.poisson(k, 3.0, (20,))),
}


def test_many_samplers_in_one_program_like_jax():
    names = ["gamma", "t"] + list(PAIRS)
    fs = [NUMBER_PARAMS["gamma"], NUMBER_PARAMS["t"]] + list(PAIRS.values())

    def program(split, k, n):
        ks = split(k, len(fs))
        return [f[n](ks[i]) for i, f in enumerate(fs)]
    want = jax.jit(lambda k: program(jax.random.split, k, 1))(_jkey(3))
    got = jit(lambda k: program(lambda k, n: list(R.split(k, n)), k, 0),
              compiler="exla")(R.key(3))
    for g, w, name in zip(got, want, names):
        _bits_equal(g.to_numpy(), np.asarray(w), f"{name} (with {', '.join(names)})")


def test_samplers_inside_a_differentiated_function_like_jax():
    """Samplers the gradient does not go through stay functions of the program under
    ``grad`` too (JAX's program keeps them so), so they keep ``jax.jit``'s bits."""
    def f(split, gamma, f_dist, total):
        def loss(w, k):
            k1, k2 = split(k)
            a, b = gamma(k1), f_dist(k2)
            return total(w * a) + total(w * b), (a, b)
        return loss
    w = np.linspace(0.5, 1.5, 20).astype(np.float32)
    jl = f(jax.random.split, PAIRS["gamma"][1], PAIRS["f"][1], jnp.sum)
    want = jax.jit(jax.value_and_grad(jl, has_aux=True))(w, _jkey(3))
    nl = f(lambda k: tuple(R.split(k)), PAIRS["gamma"][0], PAIRS["f"][0], nx.sum)
    got = jit(value_and_grad(nl, has_aux=True), compiler="exla")(nx.tensor(w), R.key(3))
    for g, want_, name in zip(got[0][1], want[0][1], ("gamma", "f")):
        _bits_equal(g.to_numpy(), np.asarray(want_), f"{name} under grad")
    np.testing.assert_allclose(got[1].to_numpy(), np.asarray(want[1]), rtol=1e-6)


def test_call_boundary_lowering():
    """``optimization_barrier(call=True)``: one private identity function per signature,
    called (no ``stablehlo.optimization_barrier``); the identity on every path; a clear
    error for a non-bool."""
    from nxpy.compilers.exla import to_mlir
    f = lambda x, y: [nx.optimization_barrier(v, call=True) for v in (x, y, x)]  # noqa: E731
    x = nx.tensor([1.0, 2.0])
    text = to_mlir(f, x, x)
    assert text.count("func.func private") == 1 and text.count('"func.call"') == 3
    assert "optimization_barrier" not in text
    for compiler in ("exla", "evaluator"):
        assert [v.tolist() for v in jit(f, compiler=compiler)(x, x)] == [[1.0, 2.0]] * 3
    assert grad(lambda v: nx.sum(nx.optimization_barrier(v, call=True) ** 2))(x).tolist() \
        == [2.0, 4.0]
    with pytest.raises(TypeError, match="expected call to be a bool"):
        nx.optimization_barrier(x, call="yes")


def test_grad_a():
    """The gradient with respect to ``a`` is JAX's implicit reparameterization: its bits
    on EXLA (gamma), its values through the Evaluator (loggamma, and beta, which also
    differentiates the composition)."""
    a = A[:10].astype(np.float32)
    want = jax.jit(lambda k, a: (
        jax.grad(lambda a: jax.random.gamma(k, a).sum())(a),
        jax.grad(lambda a: jax.random.loggamma(k, a).sum())(a),
        jax.grad(lambda a: jax.random.beta(k, a, 2.0).sum())(a)))(_jkey(3), a)
    got = jit(lambda k, a: grad(lambda a: nx.sum(R.gamma_split(k, a)))(a),
              compiler="exla")(R.key(3), nx.tensor(a))
    _bits_equal(got.to_numpy(), np.asarray(want[0]), "grad")
    got = jit(lambda k, a: (grad(lambda a: nx.sum(R.loggamma_split(k, a)))(a),
                            grad(lambda a: nx.sum(R.beta_split(k, a, 2.0)))(a)),
              compiler="evaluator")(R.key(3), nx.tensor(a))
    for g, w in zip(got, want[1:]):
        np.testing.assert_allclose(g.to_numpy(), np.asarray(w), rtol=1e-4)


def test_narrow_floats_eager():
    for t in ("f16", "bf16"):
        with jax.enable_x64(False):
            want = np.asarray(jax.jit(lambda k, a: jax.random.gamma(k, a, dtype=_np(t)))(
                _jkey(5), A.astype(_np(t))))
        got = R.gamma_split(R.key(5), nx.tensor(A, type=t))
        _close_off_exla(got.to_numpy(), want, t, t)


def test_tiny_alpha_runs_many_inner_draws():
    """a = 0.05 (d = a + 2/3, c large): the inner loop often needs several normals; eager
    results are JAX's."""
    a = np.full(200, 0.05, np.float32)
    want = np.asarray(jax.jit(jax.random.gamma)(_jkey(11), a))
    got = R.gamma_split(R.key(11), nx.tensor(a)).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-30)


def test_shapes_broadcasting_and_empty():
    a = np.array([[0.5], [2.0], [7.0]], np.float32)
    lam = np.array([[2.0], [30.0]], np.float32)
    n = np.array([[5.0], [80.0]], np.float32)
    want = jax.jit(lambda k: (jax.random.gamma(k, a, (2, 3, 4)),
                              jax.random.beta(k, 2.0, np.array([1.0, 3.0]), (3, 2)),
                              jax.random.poisson(k, lam, (2, 3)),
                              jax.random.binomial(k, n, 0.3, (2, 3))))(_jkey(4))
    got = (R.gamma_split(R.key(4), nx.tensor(a), shape=(2, 3, 4)),
           R.beta_split(R.key(4), 2.0, nx.tensor([1.0, 3.0]), shape=(3, 2)),
           R.poisson_split(R.key(4), nx.tensor(lam), shape=(2, 3)),
           R.binomial_split(R.key(4), nx.tensor(n), 0.3, shape=(2, 3)))
    assert got[0].shape == (2, 3, 4)
    for g, w in zip(got[:2], want[:2]):
        np.testing.assert_allclose(g.to_numpy(), np.asarray(w), rtol=1e-4)
    for g, w in zip(got[2:], want[2:]):
        np.testing.assert_array_equal(g.to_numpy(), np.asarray(w))
    assert R.gamma_split(R.key(0), 1.0, shape=(0, 3)).shape == (0, 3)
    assert R.poisson_split(R.key(0), 1.0, shape=(2, 0)).shape == (2, 0)
    assert R.binomial_split(R.key(0), 3.0, 0.5, shape=(0,)).shape == (0,)
    assert R.multinomial_split(R.key(0), 3.0, nx.tensor(np.zeros((0, 2)))).shape == (0, 2)
    assert R.dirichlet_split(R.key(0), nx.tensor([1.0, 2.0]), shape=(0,)).shape == (0, 2)
    assert R.t_split(R.key(0), 3.0).shape == ()
    assert R.poisson_split(R.key(0), 3.0).shape == ()
    d = R.dirichlet_split(R.key(0), nx.tensor([[1.0, 2.0, 3.0]]), shape=(4, 2))
    assert d.shape == (4, 2, 3)
    np.testing.assert_allclose(np.sum(d.to_numpy(), -1), 1.0, rtol=1e-5)
    assert R.gamma_split(R.key(0), 2.0, shape=(2, 3), names=["i", "j"]).names == ("i", "j")
    # the default type follows a (f32 for Python numbers), as the other samplers
    assert R.gamma_split(R.key(0), 2.0).type == nx.types.parse("f32")
    assert R.gamma_split(R.key(0), nx.tensor(2.0, type="f64")).type == nx.types.parse("f64")
    assert R.poisson_split(R.key(0), 2.0).type == nx.types.parse("s32")
    assert R.poisson_split(R.key(0), 2.0, type="u8").type == nx.types.parse("u8")
    assert R.binomial_split(R.key(0), 4, 0.5, type="f64").type == nx.types.parse("f64")


def test_binomial_special_values():
    n = np.array([np.nan, -1.0, np.inf, 10.0, 10.0, 4.5, 30.0], np.float32)
    p = np.array([0.5, 0.5, 0.3, np.nan, -0.2, 0.5, 1.0], np.float32)
    want = np.asarray(jax.jit(jax.random.binomial)(_jkey(2), n, p))
    got = R.binomial_split(R.key(2), nx.tensor(n), nx.tensor(p)).to_numpy()
    np.testing.assert_array_equal(got, want)


def test_multinomial_shape():
    """``shape`` is the result's shape in jax 0.10.2 (the batch shape in 0.12): nxpy
    follows 0.10.2."""
    p = np.array([0.25, 0.25, 0.5], np.float32)
    got = R.multinomial_split(R.key(6), nx.tensor([5.0, 50.0]), nx.tensor(p), shape=(2, 3))
    assert got.shape == (2, 3)
    np.testing.assert_array_equal(np.sum(got.to_numpy(), -1), [5.0, 50.0])
    # jax 0.12: shape= is the batch shape
    jshape = (2, 3) if jax.__version__.startswith("0.10.") else (2,)
    want = jax.jit(lambda k: jax.random.multinomial(k, np.array([5.0, 50.0], np.float32), p,
                                                    shape=jshape))(_jkey(6))
    np.testing.assert_array_equal(got.to_numpy(), np.asarray(want))


def test_non_split_forms_thread_the_key():
    key = R.key(9)
    k0, k1 = R.split(key)
    for name in ("gamma", "loggamma", "chisquare", "t", "generalized_normal", "poisson"):
        v, nxt = getattr(R, name)(key, 2.0, shape=(3,))
        assert nxt.tolist() == k0.tolist()
        assert v.tolist() == getattr(R, name + "_split")(k1, 2.0, shape=(3,)).tolist()
    for name in ("beta", "f", "binomial"):
        v, nxt = getattr(R, name)(key, 2.0, 0.4, shape=(3,))
        assert nxt.tolist() == k0.tolist()
        assert v.tolist() == getattr(R, name + "_split")(k1, 2.0, 0.4, shape=(3,)).tolist()
    v, nxt = R.dirichlet(key, nx.tensor([1.0, 2.0]))
    assert v.tolist() == R.dirichlet_split(k1, nx.tensor([1.0, 2.0])).tolist()
    v, nxt = R.multinomial(key, 7.0, nx.tensor([0.5, 0.5]))
    assert nxt.tolist() == k0.tolist()
    assert v.tolist() == R.multinomial_split(k1, 7.0, nx.tensor([0.5, 0.5])).tolist()


def test_vmap_over_keys():
    keys = R.split(R.key(8), 3)
    a = nx.tensor([0.5, 2.0], type="f32")
    got = vmap(lambda k: (R.gamma_split(k, a), R.poisson_split(k, nx.tensor([2.0, 40.0]))))(
        keys)
    want = jax.jit(jax.vmap(lambda k: (
        jax.random.gamma(k, np.array([0.5, 2.0], np.float32)),
        jax.random.poisson(k, np.array([2.0, 40.0], np.float32)))))(jax.random.split(_jkey(8),
                                                                                     3))
    np.testing.assert_allclose(got[0].to_numpy(), np.asarray(want[0]), rtol=1e-4)
    np.testing.assert_array_equal(got[1].to_numpy(), np.asarray(want[1]))


def test_statistics():
    g = R.gamma_split(R.key(0), 3.0, shape=(4000,)).to_numpy()
    assert abs(g.mean() - 3.0) < 0.15 and abs(g.var() - 3.0) < 0.4
    b = R.beta_split(R.key(1), 2.0, 6.0, shape=(4000,)).to_numpy()
    assert abs(b.mean() - 0.25) < 0.01
    lg = R.loggamma_split(R.key(2), 0.01, shape=(2000,)).to_numpy()
    assert np.all(np.isfinite(lg)) and np.median(lg) < -50
    po = R.poisson_split(R.key(3), nx.tensor([4.0, 40.0]), shape=(2000, 2)).to_numpy()
    np.testing.assert_allclose(po.mean(0), [4.0, 40.0], rtol=0.05)
    bi = R.binomial_split(R.key(4), nx.tensor([6.0, 300.0]), 0.3, shape=(2000, 2)).to_numpy()
    np.testing.assert_allclose(bi.mean(0), [1.8, 90.0], rtol=0.05)


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
    (lambda: R.poisson_split(R.key(0), 2.0, type="f32"), TypeError,
     "poisson_split: expected type to be an integer type, got f32"),
    (lambda: R.poisson_split(R.key(0), nx.tensor([1.0, 2.0]), shape=(3,)), ValueError,
     "poisson_split: expected lam to broadcast"),
    (lambda: R.binomial_split(R.key(0), 3.0, 0.5, type="s32"), TypeError,
     "binomial_split: expected type to be a floating-point type, got s32"),
    (lambda: R.binomial_split(R.key(0), nx.tensor([1.0, 2.0]), nx.tensor([0.1] * 3)),
     ValueError, "binomial_split: the parameters' shapes"),
    (lambda: R.multinomial_split(R.key(0), 3.0, 0.5), ValueError,
     "multinomial_split: expected p to have rank 1 or more"),
    (lambda: R.multinomial_split(R.key(0), nx.tensor([1.0, 2.0]), nx.tensor([[0.5, 0.5]] * 3)),
     ValueError, r"multinomial_split: expected n to broadcast to shape \(3,\)"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
