"""nxpy.random's distributions (nxpy/random/distributions.py) against jax.random 0.10.2
(default config): the same values for the same key on the NumPy backend, the Evaluator and
EXLA, in f32, f64 (JAX under x64), f16 and bf16; empty shapes; the non-split forms; vmap
over keys; gradients w.r.t. the parameters against jax.grad; argument errors; the key
utilities; and the coverage table of docs/random.md (nxpy/random/coverage.py) against the
installed jax.random.

Exactness (docs/random.md, "Exactness of the distributions"): ``exact`` cases are
bit-equal on every path; ``exla`` cases are bit-equal on EXLA and within 16 ulps of the
largest entry elsewhere (the NumPy backend's ``log``/``log1p``/``exp``/``tan``/``erf`` and
LAPACK's QR round differently from XLA's, and it computes multiply-adds that XLA contracts
into fused ones with two roundings: ``maxwell``'s norm, ``wald``'s square root;
``geometric``'s integers may be off by one in rare entries). Cases run in groups, one
compiled program per group and path, to keep the compiles few."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import nxpy as nx
from nxpy import random as R
from nxpy.defn import grad, jit, vmap
from nxpy.random import coverage

import cpu
from helpers import CHEAP, COMPILERS, on

import jax  # after nxpy started XLA (conftest)
import jax.numpy as jnp

DOC = Path(__file__).resolve().parents[1] / "docs" / "random.md"
WIDE = {"f64", "s64", "u64", "c128"}


def _dt(t):
    return nx.types.parse(t).dtype


def _jkey(seed):
    return jax.random.key_data(jax.random.key(seed))


def _bits_of(a):
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "fcV" or a.dtype.name == "bfloat16":
        if a.dtype.kind == "c":
            a = a.view(a.real.dtype)
        return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    return a


def _x64(t):
    return jax.enable_x64(t in WIDE)


# ----------------------------------------------------------------------------------------
# (id, seed, type, nxpy function of (key, type), jax function of (key, dtype), exactness)
# ----------------------------------------------------------------------------------------
CASES = []


def case(name, t, nf, jf, exact="exact", seed=None):
    seed = len(CASES) if seed is None else seed
    CASES.append(pytest.param(seed, t, nf, jf, exact, id=f"{name}-{t}"))


LOGITS = np.log(np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.2, 0.2, 0.1], [0.25] * 4]))

for t in ("f32", "f16"):
    case("bernoulli", t, lambda k, t: R.bernoulli_split(k, nx.tensor(0.3, type=t), shape=(40,)),
         lambda k, d: jax.random.bernoulli(k, jnp.asarray(0.3, d), (40,)))
    case("cauchy", t, lambda k, t: R.cauchy_split(k, shape=(30,), type=t),
         lambda k, d: jax.random.cauchy(k, (30,), d), "exla")
for t in ("f32", "f64", "bf16"):
    case("exponential", t, lambda k, t: R.exponential_split(k, shape=(7, 5), type=t),
         lambda k, d: jax.random.exponential(k, (7, 5), d), "exla")
for t in ("f32", "f64", "f16", "bf16"):
    case("truncated_normal", t,
         lambda k, t: R.truncated_normal_split(k, -1.5, 2.0, shape=(30,), type=t),
         lambda k, d: jax.random.truncated_normal(k, -1.5, 2.0, (30,), d),
         "exact" if t != "f64" else "exla")
for t in ("s32", "f32", "f64"):
    # the uniform under rademacher is f32 (JAX's default; under x64 JAX draws it in f64)
    case("rademacher", t, lambda k, t: R.rademacher_split(k, shape=(20,), type=t),
         lambda k, d: (2 * jax.random.bernoulli(k, jnp.float32(0.5), (20,)).astype(d) - 1)
         .astype(d))
case("laplace", "f32", lambda k, t: R.laplace_split(k, shape=(30,), type=t),
     lambda k, d: jax.random.laplace(k, (30,), d), "exla")
case("logistic", "f32", lambda k, t: R.logistic_split(k, shape=(30,), type=t),
     lambda k, d: jax.random.logistic(k, (30,), d), "exla")
for t in ("f32", "f64", "f16", "bf16"):  # 16-bit: jnp.linalg.norm sums in f32
    case("maxwell", t, lambda k, t: R.maxwell_split(k, shape=(4, 6), type=t),
         lambda k, d: jax.random.maxwell(k, (4, 6), d), "exla")
case("weibull_min", "f32", lambda k, t: R.weibull_min_split(k, 2.0, 0.5, shape=(30,), type=t),
     lambda k, d: jax.random.weibull_min(k, 2.0, 0.5, (30,), d), "exla")
case("rayleigh", "f32", lambda k, t: R.rayleigh_split(k, 1.5, shape=(30,), type=t),
     lambda k, d: jax.random.rayleigh(k, 1.5, (30,), d), "exla")
for t in ("f32", "f64"):  # f64: the signs' uniform is f64, as JAX's under x64
    case("double_sided_maxwell", t,
         lambda k, t: R.double_sided_maxwell_split(k, 0.5, 2.0, shape=(12,), type=t),
         lambda k, d: jax.random.double_sided_maxwell(k, 0.5, 2.0, (12,), d), "exla")
for t in ("f32", "f64"):
    case("pareto", t, lambda k, t: R.pareto_split(k, 3.0, shape=(30,), type=t),
         lambda k, d: jax.random.pareto(k, 3.0, (30,), d), "exla")
    case("lognormal", t, lambda k, t: R.lognormal_split(k, 0.5, shape=(30,), type=t),
         lambda k, d: jax.random.lognormal(k, 0.5, (30,), d), "exla")
    case("triangular", t, lambda k, t: R.triangular_split(k, -1.0, 0.25, 2.0, shape=(30,), type=t),
         lambda k, d: jax.random.triangular(k, -1.0, 0.25, 2.0, (30,), d))
    case("wald", t, lambda k, t: R.wald_split(k, 1.5, shape=(30,), type=t),
         lambda k, d: jax.random.wald(k, 1.5, (30,), d), "exla")
    case("orthogonal", t, lambda k, t: R.orthogonal_split(k, 4, shape=(2,), type=t, m=3),
         lambda k, d: jax.random.orthogonal(k, 4, (2,), d, m=3), "exla")
case("lognormal", "f16", lambda k, t: R.lognormal_split(k, shape=(30,), type=t),
     lambda k, d: jax.random.lognormal(k, np.array(1.0, d), (30,), d), "exla")
case("triangular", "bf16", lambda k, t: R.triangular_split(k, 0.0, 0.5, 1.0, shape=(30,), type=t),
     lambda k, d: jax.random.triangular(k, 0.0, 0.5, 1.0, (30,), d))
case("bernoulli_high", "f32", lambda k, t: R.bernoulli_split(k, 0.3, shape=(50,), mode="high"),
     lambda k, d: jax.random.bernoulli(k, 0.3, (50,), mode="high"))
case("bernoulli_p_tensor", "f32",
     lambda k, t: R.bernoulli_split(k, nx.tensor([0.1, 0.5, 0.9]), shape=(4, 3)),
     lambda k, d: jax.random.bernoulli(k, jnp.array([0.1, 0.5, 0.9]), (4, 3)))
case("bernoulli_p_shape", "f32", lambda k, t: R.bernoulli_split(k, nx.tensor([0.1, 0.5, 0.9])),
     lambda k, d: jax.random.bernoulli(k, jnp.array([0.1, 0.5, 0.9])))
for t in ("s8", "u32"):
    case("rademacher_int", t, lambda k, t: R.rademacher_split(k, shape=(9,), type=t),
         lambda k, d: jax.random.rademacher(k, (9,), d))
for axis in (-1, 0):
    case(f"categorical_axis{axis}", "f32",
         lambda k, t, a=axis: R.categorical_split(k, nx.tensor(LOGITS.astype("f4")), axis=a),
         lambda k, d, a=axis: jax.random.categorical(k, LOGITS.astype("f4"), axis=a))
case("categorical_shape", "f32",
     lambda k, t: R.categorical_split(k, nx.tensor(LOGITS.astype("f4")), shape=(5, 3)),
     lambda k, d: jax.random.categorical(k, LOGITS.astype("f4"), shape=(5, 3)))
case("categorical_no_replace", "f32",
     lambda k, t: R.categorical_split(k, nx.tensor(LOGITS.astype("f4")), shape=(3, 3),
                                      replace=False),
     lambda k, d: jax.random.categorical(k, LOGITS.astype("f4"), shape=(3, 3), replace=False))
case("categorical_no_replace_axis0", "f64",
     lambda k, t: R.categorical_split(k, nx.tensor(LOGITS), axis=0, shape=(2, 4), replace=False),
     lambda k, d: jax.random.categorical(k, LOGITS, axis=0, shape=(2, 4), replace=False))
for t in ("s32", "u8"):
    case("geometric", t, lambda k, t: R.geometric_split(k, 0.3, shape=(40,), type=t),
         lambda k, d: jax.random.geometric(k, 0.3, (40,), d), "exla")
case("geometric_p_f64", "s64",
     lambda k, t: R.geometric_split(k, nx.tensor([0.05, 0.5, 0.95], type="f64"), type=t),
     lambda k, d: jax.random.geometric(k, np.array([0.05, 0.5, 0.95]), dtype=d), "exla")
case("permutation_int", "s32", lambda k, t: R.permutation_split(k, 12),
     lambda k, d: jax.random.permutation(k, 12))
case("permutation_axis1", "f32",
     lambda k, t: R.permutation_split(k, nx.tensor(np.arange(12.0, dtype="f4").reshape(3, 4)),
                                      axis=1),
     lambda k, d: jax.random.permutation(k, jnp.arange(12.0).reshape(3, 4), axis=1))
case("permutation_independent", "s32",
     lambda k, t: R.permutation_split(k, nx.iota((3, 5), axis=1), axis=-1, independent=True),
     lambda k, d: jax.random.permutation(k, jnp.tile(jnp.arange(5), (3, 1)), axis=-1,
                                         independent=True))
case("truncated_normal_tensor_bounds", "f32",
     lambda k, t: R.truncated_normal_split(k, nx.tensor([-1.0, 0.0, 2.0]),
                                           nx.tensor([1.0, 0.5, 3.0]), shape=(4, 3)),
     lambda k, d: jax.random.truncated_normal(k, jnp.array([-1.0, 0.0, 2.0]),
                                              jnp.array([1.0, 0.5, 3.0]), (4, 3)))
case("truncated_normal_shape_from_bounds", "f32",
     lambda k, t: R.truncated_normal_split(k, nx.tensor([-1.0, 0.0]), 1.0),
     lambda k, d: jax.random.truncated_normal(k, jnp.array([-1.0, 0.0]), 1.0))
case("pareto_tensor", "f32", lambda k, t: R.pareto_split(k, nx.tensor([1.0, 2.0, 5.0])),
     lambda k, d: jax.random.pareto(k, jnp.array([1.0, 2.0, 5.0])), "exla")
case("orthogonal_square", "f32", lambda k, t: R.orthogonal_split(k, 5),
     lambda k, d: jax.random.orthogonal(k, 5), "exla")
case("orthogonal_wide", "f32", lambda k, t: R.orthogonal_split(k, 2, m=5),
     lambda k, d: jax.random.orthogonal(k, 2, m=5), "exla")
case("lognormal_c64", "c64", lambda k, t: R.lognormal_split(k, shape=(6,), type=t),
     lambda k, d: jax.random.lognormal(k, shape=(6,), dtype=d), "exla")
case("wald_tensor_mean", "f32",
     lambda k, t: R.wald_split(k, nx.tensor([0.5, 1.0, 3.0]), shape=(4, 3)),
     lambda k, d: jax.random.wald(k, jnp.array([0.5, 1.0, 3.0]), (4, 3)), "exla")
case("double_sided_maxwell_params", "f32",
     lambda k, t: R.double_sided_maxwell_split(k, nx.tensor([0.0, 1.0]), 2.0),
     lambda k, d: jax.random.double_sided_maxwell(k, jnp.array([0.0, 1.0]), 2.0), "exla")
case("triangular_tensor", "f32",
     lambda k, t: R.triangular_split(k, nx.tensor([0.0, -1.0]), 0.5, nx.tensor([1.0, 4.0])),
     lambda k, d: jax.random.triangular(k, jnp.array([0.0, -1.0]), 0.5, jnp.array([1.0, 4.0])))
# empty and scalar shapes
case("exponential_empty", "f32", lambda k, t: R.exponential_split(k, shape=(0, 3)),
     lambda k, d: jax.random.exponential(k, (0, 3)))
case("categorical_empty", "f32",
     lambda k, t: R.categorical_split(k, nx.tensor(LOGITS.astype("f4")), shape=(0, 3)),
     lambda k, d: jax.random.categorical(k, LOGITS.astype("f4"), shape=(0, 3)))
case("bernoulli_scalar", "f32", lambda k, t: R.bernoulli_split(k),
     lambda k, d: jax.random.bernoulli(k))
case("permutation_empty", "s32", lambda k, t: R.permutation_split(k, 0),
     lambda k, d: jax.random.permutation(k, 0))
case("orthogonal_empty_batch", "f32", lambda k, t: R.orthogonal_split(k, 3, shape=(0,)),
     lambda k, d: jax.random.orthogonal(k, 3, (0,)))


GROUP = 12  # cases per compiled program (one JAX, Evaluator, EXLA compile each)
_NARROW = [c for c in CASES if c.values[1] not in WIDE]
_WIDE = [c for c in CASES if c.values[1] in WIDE]
GROUPS = [part[i:i + GROUP] for part in (_NARROW, _WIDE) for i in range(0, len(part), GROUP)]


def _check(where, t, exact, path, got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, where
    if (exact == "exact" or (exact == "exla" and path == "exla")) and cpu.exact(got.dtype):
        np.testing.assert_array_equal(_bits_of(got), _bits_of(want), err_msg=where)
    elif got.dtype.kind in "iu":  # log u / log1p(-p) near an integer: off by one, rarely
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        assert diff.max(initial=0) <= 1 and (diff > 0).mean() <= 0.1, where
    else:  # documented (docs/random.md): a few ulps apart, normwise (orthogonal's entries,
        # wald's cancelling terms; every float off the reference arithmetic, tests/cpu.py)
        eps = float(np.finfo(got.dtype).eps) if got.dtype.kind in "fc" else 2.0 ** -7
        g, w = got.astype(np.complex128), want.astype(np.complex128)
        scale = np.abs(w).max(initial=0)
        assert np.abs(g - w).max(initial=0) <= 16 * eps * scale, where


@pytest.mark.parametrize("group", range(len(GROUPS)))
def test_values_like_jax(group):
    """Each group of cases as one program on each path (and one JAX program)."""
    cases = [c.values for c in GROUPS[group]]
    ids = [c.id for c in GROUPS[group]]
    jkeys = jnp.stack([_jkey(c[0]) for c in cases])
    with _x64(cases[0][1]):
        want = jax.jit(lambda ks: [jf(ks[i], _dt(t))
                                   for i, (_, t, _, jf, _) in enumerate(cases)])(jkeys)
        want = [np.asarray(w) for w in want]
    keys = nx.stack([R.key(c[0]) for c in cases])

    def f(keys):
        return [nf(keys[i], t) for i, (_, t, nf, _, _) in enumerate(cases)]
    runs = {"numpy": f(keys)}
    for c in COMPILERS:
        runs[c] = jit(f, compiler=c)(keys)
    for path, outs in runs.items():
        for cid, (_, t, _, _, exact), w, got in zip(ids, cases, want, outs):
            _check(f"{cid} on {path}", t, exact, path, got.to_numpy(), w)


def test_ball_like_jax():
    """ball draws through gamma.py's generalized_normal (its own compiled program: the
    gamma sampler is large): JAX's bits on EXLA, and off EXLA within 16 ulps of the largest
    entry."""
    want = np.asarray(jax.jit(lambda k: jax.random.ball(k, 3, 2, (5,)))(_jkey(3)))
    f = lambda k: R.ball_split(k, 3, 2, shape=(5,))  # noqa: E731 - the sampler under test
    for path in CHEAP:
        got = on(path, f)(R.key(3)).to_numpy()
        _check(f"ball on {path}", "f32", "exla", path, got, want)
    v, k = R.ball(R.key(3), 2, 1.5)
    assert v.shape == (2,) and float(np.abs(v.to_numpy()).__pow__(1.5).sum()) <= 1
    assert k.tolist() == R.split(R.key(3))[0].tolist()


def test_case_count():
    assert len(CASES) >= 50


# ----------------------------------------------------------------------------------------
# The plain forms thread the key; vmap over keys
# ----------------------------------------------------------------------------------------
PLAIN = [(R.bernoulli, R.bernoulli_split, (0.3,), {"shape": (3,)}),
         (R.exponential, R.exponential_split, (), {"shape": (3,)}),
         (R.truncated_normal, R.truncated_normal_split, (-1.0, 1.0), {"shape": (3,)}),
         (R.laplace, R.laplace_split, (), {}), (R.logistic, R.logistic_split, (), {}),
         (R.cauchy, R.cauchy_split, (), {}), (R.rademacher, R.rademacher_split, (), {}),
         (R.permutation, R.permutation_split, (4,), {}),
         (R.categorical, R.categorical_split, (nx.tensor([0.0, 1.0]),), {}),
         (R.orthogonal, R.orthogonal_split, (2,), {}), (R.pareto, R.pareto_split, (2.0,), {}),
         (R.weibull_min, R.weibull_min_split, (1.0, 2.0), {}),
         (R.lognormal, R.lognormal_split, (), {}), (R.rayleigh, R.rayleigh_split, (1.0,), {}),
         (R.maxwell, R.maxwell_split, (), {}),
         (R.double_sided_maxwell, R.double_sided_maxwell_split, (0.0, 1.0), {}),
         (R.triangular, R.triangular_split, (0.0, 0.5, 1.0), {}),
         (R.geometric, R.geometric_split, (0.5,), {}), (R.wald, R.wald_split, (1.0,), {})]


def test_plain_forms_thread_the_key():
    key = R.key(5)
    k0, k1 = R.split(key)[0], R.split(key)[1]
    for f, fs, args, kw in PLAIN:
        v, nk = f(key, *args, **kw)
        assert nk.tolist() == k0.tolist(), f.__name__
        assert v.tolist() == fs(k1, *args, **kw).tolist(), f.__name__
        assert f.__name__ + "_split" == fs.__name__


@pytest.mark.parametrize("compiler", COMPILERS)
def test_vmap_over_keys(compiler):
    keys = R.split(R.key(8), 3)
    jkeys = jax.random.split(_jkey(8), 3)

    def f(k):
        return nx.concatenate([R.truncated_normal_split(k, -1.0, 1.0, shape=(4,)),
                               nx.as_type(R.bernoulli_split(k, 0.4, shape=(3,)), "f32"),
                               nx.as_type(R.categorical_split(k, nx.tensor([0.0, 1.0, 2.0]),
                                                              shape=(2,)), "f32")])

    def jf(k):
        return jnp.concatenate([jax.random.truncated_normal(k, -1.0, 1.0, (4,)),
                                jax.random.bernoulli(k, 0.4, (3,)).astype(jnp.float32),
                                jax.random.categorical(k, jnp.array([0.0, 1.0, 2.0]), shape=(2,))
                                .astype(jnp.float32)])
    got = jit(vmap(f), compiler=compiler)(keys).to_numpy()
    want = np.asarray(jax.jit(jax.vmap(jf))(jkeys))
    _check(f"vmap on {compiler}", "f32", "exact", compiler, got, want)


GRADS = [
    ("lognormal", 0.7, lambda s, k: R.lognormal_split(k, s, shape=(6,)),
     lambda s, k: jax.random.lognormal(k, s, (6,))),
    ("rayleigh", 0.7, lambda s, k: R.rayleigh_split(k, s, shape=(6,)),
     lambda s, k: jax.random.rayleigh(k, s, (6,))),
    ("pareto", 2.0, lambda s, k: R.pareto_split(k, s, shape=(6,)),
     lambda s, k: jax.random.pareto(k, s, (6,))),
    ("truncated_normal", -0.7, lambda s, k: R.truncated_normal_split(k, s, 2.0, shape=(6,)),
     lambda s, k: jax.random.truncated_normal(k, s, 2.0, (6,))),
    ("wald", 0.7, lambda s, k: R.wald_split(k, s, shape=(6,)),
     lambda s, k: jax.random.wald(k, s, (6,))),
    ("triangular", 0.3, lambda s, k: R.triangular_split(k, 0.0, s, 1.0, shape=(6,)),
     lambda s, k: jax.random.triangular(k, 0.0, s, 1.0, (6,))),
]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_gradients_wrt_parameters_like_jax(compiler):
    """The samples are differentiable in their parameters (the key is a constant)."""
    for name, s, nf, jf in GRADS:
        want = float(jax.grad(lambda s, k: jnp.sum(jf(s, k)))(jnp.float32(s), _jkey(2)))
        got = jit(grad(lambda s, k: nx.sum(nf(s, k))), compiler=compiler)(nx.tensor(s), R.key(2))
        np.testing.assert_allclose(float(got.tolist()), want, rtol=1e-5, err_msg=name)


def test_statistics_on_exla():
    """Samples follow their distributions (means of 20000 draws, EXLA)."""
    n = 20000
    f = jit(lambda k: [R.exponential_split(k, shape=(n,)),
                       R.laplace_split(R.fold_in(k, 1), shape=(n,)),
                       R.geometric_split(R.fold_in(k, 2), 0.25, shape=(n,)),
                       R.wald_split(R.fold_in(k, 3), 2.0, shape=(n,)),
                       R.truncated_normal_split(R.fold_in(k, 4), 0.0, 10.0, shape=(n,))],
            compiler="exla")
    e, lap, g, w, tn = (x.to_numpy() for x in f(R.key(0)))
    assert abs(e.mean() - 1) < 0.03 and e.min() >= 0
    assert abs(lap.mean()) < 0.03 and abs(lap.var() - 2) < 0.1
    assert abs(g.mean() - 4) < 0.1 and g.min() >= 1
    assert abs(w.mean() - 2) < 0.1
    assert abs(tn.mean() - np.sqrt(2 / np.pi)) < 0.02 and tn.min() > 0


# ----------------------------------------------------------------------------------------
# Key utilities
# ----------------------------------------------------------------------------------------
def test_key_utilities():
    k = R.key(7)
    assert R.key_data(k).tolist() == np.asarray(_jkey(7)).tolist()
    assert R.wrap_key_data(k).tolist() == [0, 7]
    assert R.key_impl(k) == "threefry2x32" == str(jax.random.key_impl(jax.random.key(7)))
    assert R.clone(k).tolist() == [0, 7]
    assert R.key_data(R.split(k, 3)).shape == (3, 2)
    with pytest.raises(ValueError, match="key_data: expected keys of type u32"):
        R.key_data(nx.tensor([1, 2]))
    with pytest.raises(ValueError, match="wrap_key_data: expected impl"):
        R.wrap_key_data(k, impl="rbg")


# ----------------------------------------------------------------------------------------
# Errors name the function and the argument
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,exc,match", [
    (lambda: R.bernoulli_split(R.key(0), 1), TypeError, "bernoulli_split: expected p"),
    (lambda: R.bernoulli_split(R.key(0), nx.tensor(1)), TypeError, "p to have a floating"),
    (lambda: R.bernoulli_split(R.key(0), mode="mid"), ValueError, "mode"),
    (lambda: R.bernoulli_split(R.key(0), nx.tensor([0.1, 0.2]), shape=(3,)), ValueError,
     "p to broadcast"),
    (lambda: R.exponential_split(R.key(0), type="s32"), TypeError, "floating-point type"),
    (lambda: R.exponential_split(nx.tensor([1, 2])), TypeError, "key to have type u32"),
    (lambda: R.laplace_split(R.key(0), shape=(-1,)), ValueError, "shape"),
    (lambda: R.truncated_normal_split(R.key(0), 0.0, 1.0, type="c64"), TypeError, "type"),
    (lambda: R.truncated_normal_split(R.key(0), nx.tensor([0.0, 1.0]), 2.0, shape=(3,)),
     ValueError, "lower to broadcast"),
    (lambda: R.categorical_split(R.key(0), nx.tensor([1, 2])), TypeError, "logits"),
    (lambda: R.categorical_split(R.key(0), nx.tensor(1.0)), ValueError, "rank 1"),
    (lambda: R.categorical_split(R.key(0), nx.tensor([[0.0, 1.0]]), axis=2), ValueError, "axis"),
    (lambda: R.categorical_split(R.key(0), nx.tensor([[0.0, 1.0, 2.0]] * 2), shape=(3,)),
     ValueError, "batch shape"),
    (lambda: R.categorical_split(R.key(0), nx.tensor([0.0, 1.0]), shape=(3,), replace=False),
     ValueError, "more samples"),
    (lambda: R.rademacher_split(R.key(0), type="pred"), TypeError, "numeric"),
    (lambda: R.permutation_split(R.key(0), 2.5), TypeError, "x"),
    (lambda: R.permutation_split(R.key(0), -1), ValueError, "non-negative"),
    (lambda: R.permutation_split(R.key(0), nx.tensor(1.5)), TypeError, "integer or at least"),
    (lambda: R.permutation_split(R.key(0), nx.iota((3,)), axis=1), ValueError,
     "permutation_split: axis"),
    (lambda: R.orthogonal_split(R.key(0), 2.0), TypeError, "n to be a non-negative int"),
    (lambda: R.orthogonal_split(R.key(0), 2, m=-1), TypeError, "m to be"),
    (lambda: R.geometric_split(R.key(0), 0.5, type="f32"), TypeError, "integer type"),
    (lambda: R.pareto_split(R.key(0), nx.tensor([1.0, 2.0]), shape=(3,)), ValueError,
     "b to broadcast"),
    (lambda: R.triangular_split(R.key(0), nx.tensor([0.0, 1.0]), nx.tensor([0.0, 1.0, 2.0]),
                                1.0), ValueError, "do not broadcast"),
    (lambda: R.wald_split(R.key(0), 1.0, type="u8"), TypeError, "wald_split: expected type"),
    (lambda: R.ball_split(R.key(0), 2.0), TypeError, "ball_split: expected d"),
    (lambda: R.ball_split(R.key(0), 2, "2"), TypeError, "expected p"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ----------------------------------------------------------------------------------------
# The coverage table of docs/random.md
# ----------------------------------------------------------------------------------------
def public_names():
    return {n for n in dir(jax.random) if not n.startswith("_")}


def test_every_public_name_of_jax_random_has_a_row():
    missing = public_names() - set(coverage.JAX_RANDOM)
    assert not missing, (f"jax.random {jax.__version__} has {sorted(missing)}: add a row to "
                         "nxpy/random/coverage.py")
    for name, (_, _, since) in coverage.JAX_RANDOM.items():
        if name not in public_names():
            assert since, f"jax.random {jax.__version__} has no {name}: give its version"


def test_rows_name_functions_that_exist_or_say_why_not():
    for name, (ours, _, _) in coverage.JAX_RANDOM.items():
        if ours and coverage.present(name):
            for f in ours:
                assert callable(getattr(R, f)), (name, f)
        else:
            assert coverage.note(name), f"{name}: a row without a function needs a note"


def test_every_distribution_is_there_or_pending():
    """100% of jax.random's distributions: each is present, or (the gamma family, built in
    parallel in nxpy/random/gamma.py) pending with a note saying so."""
    for name in coverage.DISTRIBUTIONS:
        assert name in coverage.JAX_RANDOM, name
        if not coverage.present(name):
            assert name in coverage.GAMMA_FAMILY and coverage.PENDING in coverage.note(name), \
                f"jax.random.{name} is missing from nxpy.random"
    assert all(map(coverage.present, coverage.DISTRIBUTIONS))  # all of them have landed


def test_docs_random_md_is_current():
    text = DOC.read_text()
    assert text == coverage.with_table(text), \
        "docs/random.md's table is stale: run python -m nxpy.random.coverage"
