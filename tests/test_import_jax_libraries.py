"""Every public function of ``jax.scipy.special``, ``jax.nn`` and ``jax.random`` that JAX
can jit on small f32 inputs, lowered by the installed jax, loaded by ``nxpy.stablehlo``
and run on the Evaluator and on EXLA against JAX's own result: the importer reads what
current JAX libraries emit (the ``chlo`` ops of the special functions, jax 0.12's
``result_accuracy`` attributes, the random bits).

Each function has a row in :data:`CASES` (its argument makers and tolerances) or in
:data:`SKIPS` (why it cannot be swept); ``test_every_public_function_is_listed`` fails for
a function of the installed jax in neither, so a new JAX function is noticed.

Tolerances. EXLA compiles the loaded module's ops back to the same StableHLO ops, so its
results are JAX's bit for bit (integers, keys and bits always; floats up to the last ulp of
XLA's own reassociation, ``EXLA_RTOL``). The Evaluator runs NumPy kernels: a few ulps from
XLA's transcendental functions (``EVAL_RTOL``), more where a function amplifies them (a row's
own ``rtol`` says why). Random samplers: the bits are exact on both; a sampler is compared
with its own tolerance (its transform of the bits); a rejection sampler can decide a draw
differently when its test lands within an ulp of the bound, which these keys and shapes
do not.

The f64 cross product (every function again with x64) is behind the ``soak`` marker.
"""
from __future__ import annotations

import dataclasses
import inspect
from typing import Callable

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import grad, jit
from nxpy.stablehlo import load

from helpers import close

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
import jax.nn as jnn
import jax.random as jr
import jax.scipy.special as jss

EXLA_RTOL = 2e-6
EVAL_RTOL = 2e-5

_rng = np.random.default_rng(29)


def u(lo, hi, shape=(6,)):
    """Uniform f32 values in ``(lo, hi)``."""
    return _rng.uniform(lo, hi, size=shape).astype(np.float32)


def ints(lo, hi, shape=(6,), dtype=np.int32):
    return _rng.integers(lo, hi, size=shape).astype(dtype)


@dataclasses.dataclass
class Case:
    fn: Callable
    args: tuple
    rtol: float = EVAL_RTOL      # the Evaluator's (NumPy kernels)
    exla_rtol: float = EXLA_RTOL
    atol: float = 1e-6
    why: str = ""                # why a tolerance is wider than the default


def _key():
    return np.asarray(jr.key_data(jr.key(7)))


def keyed(fn, *args, **kw):
    """A sampler of ``jax.random``: its key (threefry's ``u32[2]``) is an argument."""
    return lambda k, *a: fn(jr.wrap_key_data(k), *a, **kw), (_key(),) + args


X = u(-2, 2)
POS = u(0.2, 3)
UNIT = u(0.05, 0.95)

# --- jax.scipy.special ------------------------------------------------------------------
_S = {
    "bernoulli": (lambda: jss.bernoulli(8), ()),
    "bessel_jn": (lambda z: jss.bessel_jn(z, v=2), (POS,)),
    "beta": (jss.beta, (POS, u(0.2, 3))),
    "betainc": (jss.betainc, (POS, u(0.2, 3), UNIT)),
    "betaln": (jss.betaln, (POS, u(0.2, 3))),
    "boxcox": (jss.boxcox, (POS, X)),
    "boxcox1p": (jss.boxcox1p, (POS, X)),
    "comb": (jss.comb, (u(3, 9), u(0, 3))),
    "dawsn": (jss.dawsn, (X,)),
    "digamma": (jss.digamma, (POS,)),
    "entr": (jss.entr, (POS,)),
    "erf": (jss.erf, (X,)),
    "erfc": (jss.erfc, (X,)),
    "erfcinv": (lambda x: jss.erfcinv(x), (u(0.05, 1.95),)),
    "erfcx": (jss.erfcx, (X,)),
    "erfinv": (jss.erfinv, (u(-0.95, 0.95),)),
    "exp1": (jss.exp1, (POS,)),
    "expi": (jss.expi, (X,)),
    "expit": (jss.expit, (X,)),
    "expn": (jss.expn, (ints(0, 4), POS)),
    "factorial": (jss.factorial, (u(0, 8),)),
    "fresnel": (jss.fresnel, (X,)),
    "gamma": (jss.gamma, (u(-3, 5),)),
    "gammainc": (jss.gammainc, (POS, u(0.2, 3))),
    "gammaincc": (jss.gammaincc, (POS, u(0.2, 3))),
    "gammaln": (jss.gammaln, (u(0.2, 6),)),
    "gammasgn": (jss.gammasgn, (u(-3, 5),)),
    "hyp1f1": (jss.hyp1f1, (POS, u(0.5, 3), UNIT)),
    "hyp2f1": (jss.hyp2f1, (POS, u(0.2, 2), u(2.5, 4), u(-0.9, 0.9))),
    "i0": (jss.i0, (X * 4,)),
    "i0e": (jss.i0e, (X * 6,)),
    "i1": (jss.i1, (X * 4,)),
    "i1e": (jss.i1e, (X * 6,)),
    "kl_div": (jss.kl_div, (POS, u(0.2, 3))),
    "log_ndtr": (jss.log_ndtr, (X * 3,)),
    "log_softmax": (jss.log_softmax, (X,)),
    "loggamma": (jss.loggamma, (u(0.2, 6),)),
    "logit": (jss.logit, (UNIT,)),
    "logsumexp": (jss.logsumexp, (X,)),
    "multigammaln": (lambda a: jss.multigammaln(a, 3), (u(1.5, 5),)),
    "ndtr": (jss.ndtr, (X,)),
    "ndtri": (jss.ndtri, (UNIT,)),
    "owens_t": (jss.owens_t, (X, u(-2, 2))),
    "poch": (jss.poch, (POS, u(0, 3))),
    "polygamma": (jss.polygamma, (ints(0, 4), POS)),
    "rel_entr": (jss.rel_entr, (POS, u(0.2, 3))),
    "sici": (jss.sici, (X * 3,)),
    "softmax": (jss.softmax, (X,)),
    "spence": (jss.spence, (POS,)),
    "sph_harm_y": (lambda n, m, t, p: jss.sph_harm_y(n, m, t, p, n_max=3),
                   (ints(0, 4), ints(0, 1), u(0, 3), u(0, 6))),
    "wofz": (jss.wofz, (X,)),
    "xlog1py": (jss.xlog1py, (X, POS)),
    "xlogy": (jss.xlogy, (X, POS)),
    "zeta": (jss.zeta, (u(1.5, 5), POS)),
}
#: wider Evaluator tolerances, with the reason
_S_RTOL = {
    "gamma": (1e-4, "exp(lgamma): the Evaluator's lgamma is exact, XLA's Lanczos sum is not"),
    "beta": (1e-4, "exp of a difference of lgammas (as gamma)"),
    "comb": (1e-4, "exp of a difference of lgammas (as gamma)"),
    "poch": (1e-4, "exp of a difference of lgammas (as gamma)"),
    "factorial": (1e-4, "exp(lgamma(n + 1)) (as gamma)"),
    "polygamma": (1e-4, "n! zeta(n + 1, x) through exp(lgamma)"),
    "multigammaln": (1e-4, "a sum of lgammas, near its zeros"),
    "gammaln": (1e-4, "lgamma near its zeros at 1 and 2 (XLA's f32 Lanczos sum)"),
    "loggamma": (1e-4, "lgamma near its zeros at 1 and 2 (XLA's f32 Lanczos sum)"),
    "betaln": (1e-4, "a difference of lgammas"),
    "betainc": (1e-4, "a continued fraction over exp/log/lgamma terms"),
    "gammainc": (1e-4, "a series over exp/log/lgamma terms"),
    "gammaincc": (1e-4, "a continued fraction over exp/log/lgamma terms"),
    "hyp1f1": (1e-4, "a series over exp/log/lgamma terms"),
    "hyp2f1": (1e-4, "a series with gamma-function prefactors"),
    "bessel_jn": (1e-4, "a backward recurrence that amplifies the first ulps"),
    "sph_harm_y": (1e-4, "a Legendre recurrence and gamma-function normalization"),
    "spence": (1e-4, "a rational approximation of log terms near cancellation"),
    "expn": (1e-4, "a continued fraction"),
    "expi": (1e-4, "a continued fraction and series"),
    "exp1": (1e-4, "a continued fraction and series"),
    "owens_t": (1e-4, "a series of erf/exp terms"),
    "wofz": (1e-4, "a series of exp/cos/sin terms"),
    "sici": (1e-4, "a series of cos/sin/log terms"),
    "fresnel": (1e-4, "a series of cos/sin terms"),
    "dawsn": (1e-4, "a rational approximation of exp terms"),
    "i0": (1e-4, "exp(|x|) i0e(x)"),
    "i1": (1e-4, "exp(|x|) i1e(x)"),
    "zeta": (1e-4, "x ** -(n + q) summed and the Euler-Maclaurin tail"),
}

# --- jax.nn -------------------------------------------------------------------------------
M = u(-2, 2, (2, 6))
_N = {name: (getattr(jnn, name), (M,)) for name in (
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "identity", "leaky_relu", "log_sigmoid", "log_softmax", "logmeanexp", "logsumexp", "mish",
    "relu", "relu6", "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus",
    "sparse_plus", "sparse_sigmoid", "squareplus", "standardize", "swish", "tanh")}
_N["log1mexp"] = (jnn.log1mexp, (u(0.1, 3, (2, 6)),))
_N["one_hot"] = (lambda i: jnn.one_hot(i, 5), (ints(0, 5, (2, 3)),))
_N["dot_product_attention"] = (jnn.dot_product_attention,
                               tuple(u(-1, 1, (1, 3, 2, 4)) for _ in range(3)))
_N_RTOL = {"gelu": (1e-4, "tanh of a cubic")}

# --- jax.random -------------------------------------------------------------------------
_F = dict(shape=(6,))
_R = {
    "PRNGKey": (lambda s: jr.PRNGKey(s), (np.int32(5),)),
    "key": (lambda s: jr.key_data(jr.key(s)), (np.int32(5),)),
    "key_data": (lambda k: jr.key_data(jr.wrap_key_data(k)), (_key(),)),
    "wrap_key_data": (lambda k: jr.key_data(jr.wrap_key_data(k) ), (_key(),)),
    "clone": (lambda k: jr.key_data(jr.clone(jr.wrap_key_data(k))), (_key(),)),
    "split": (lambda k: jr.key_data(jr.split(jr.wrap_key_data(k), 3)), (_key(),)),
    "fold_in": (lambda k, d: jr.key_data(jr.fold_in(jr.wrap_key_data(k), d)),
                (_key(), np.uint32(11))),
    "ball": keyed(jr.ball, d=3, shape=(2,)),
    "bernoulli": keyed(jr.bernoulli, UNIT),
    "beta": keyed(jr.beta, POS, u(0.2, 3)),
    "binomial": keyed(jr.binomial, u(1, 20).round(), UNIT),
    "bits": keyed(jr.bits, **_F),
    "categorical": keyed(jr.categorical, M),
    "cauchy": keyed(jr.cauchy, **_F),
    "chisquare": keyed(jr.chisquare, POS),
    "choice": keyed(jr.choice, X, shape=(3,), replace=False),
    "dirichlet": keyed(jr.dirichlet, u(0.5, 3, (2, 3))),
    "double_sided_maxwell": keyed(jr.double_sided_maxwell, np.float32(0.5), np.float32(2), **_F),
    "exponential": keyed(jr.exponential, **_F),
    "f": keyed(jr.f, POS, u(0.5, 3)),
    "gamma": keyed(jr.gamma, POS),
    "generalized_normal": keyed(jr.generalized_normal, np.float32(1.5), **_F),
    "geometric": keyed(jr.geometric, UNIT),
    "gumbel": keyed(jr.gumbel, **_F),
    "laplace": keyed(jr.laplace, **_F),
    "loggamma": keyed(jr.loggamma, POS),
    "logistic": keyed(jr.logistic, **_F),
    "lognormal": keyed(jr.lognormal, **_F),
    "maxwell": keyed(jr.maxwell, **_F),
    "multinomial": keyed(jr.multinomial, np.float32(10), np.array([0.2, 0.3, 0.5], np.float32)),
    "multivariate_normal": keyed(jr.multivariate_normal, np.zeros(3, np.float32),
                                 np.diag(np.array([1.0, 2.0, 0.5], np.float32))),
    "normal": keyed(jr.normal, **_F),
    "orthogonal": keyed(jr.orthogonal, n=3),
    "pareto": keyed(jr.pareto, POS),
    "permutation": keyed(jr.permutation, X),
    "poisson": keyed(jr.poisson, u(0.5, 20)),
    "rademacher": keyed(jr.rademacher, **_F),
    "randint": keyed(jr.randint, shape=(6,), minval=0, maxval=10),
    "rayleigh": keyed(jr.rayleigh, POS),
    "t": keyed(jr.t, POS),
    "triangular": keyed(jr.triangular, np.float32(0), np.float32(0.3), np.float32(1), **_F),
    "truncated_normal": keyed(jr.truncated_normal, np.float32(-1), np.float32(1.5), **_F),
    "uniform": keyed(jr.uniform, **_F),
    "wald": keyed(jr.wald, POS),
    "weibull_min": keyed(jr.weibull_min, np.float32(1.5), np.float32(2), **_F),
}
_R_RTOL = {
    "gamma": (1e-4, "Marsaglia-Tsang: log and pow of the uniform draws"),
    "beta": (1e-4, "two gamma draws"), "chisquare": (1e-4, "a gamma draw"),
    "dirichlet": (1e-4, "gamma draws, normalized"), "f": (1e-4, "two gamma draws"),
    "t": (1e-4, "a gamma draw and a normal"), "loggamma": (1e-4, "a gamma draw in log space"),
    "generalized_normal": (1e-4, "a gamma draw to the power 1/p"),
    "ball": (1e-4, "generalized normal draws, normalized"),
    "orthogonal": (1e-4, "a QR (Householder) of normal draws"),
    "multivariate_normal": (1e-4, "a Cholesky factor of the covariance"),
    "wald": (1e-4, "square roots of squares of normal draws"),
    "weibull_min": (1e-4, "pow of log of uniform draws"),
    "pareto": (1e-4, "exp of exponential draws"),
}

#: public names that are not swept, with the reason
SKIPS = {
    "jax.nn.initializers": "a module of initializer factories (tests/test_nn_initializers.py)",
    "jax.nn.scaled_matmul": "block-scaled float8/float4 matmul (mxfp8, nvfp4): types nxpy lacks",
    "jax.nn.scaled_dot_general": "block-scaled float8/float4 dot (mxfp8, nvfp4): types nxpy "
                                 "lacks",
    "jax.nn.get_scaled_dot_general_config": "builds a config object for scaled_dot_general "
                                            "(no array computation)",
    "jax.random.key_impl": "returns the PRNG implementation object (no array computation)",
    "jax.random.key_dtype": "a dtype constructor (no array computation)",
    "jax.random.random_gamma_p": "a JAX primitive object, swept through jax.random.gamma",
    "jax.random.Key": "a type annotation alias (jax 0.12), not a function",
}


def _cases():
    out = {}
    for mod, table, rtols in (("jax.scipy.special", _S, _S_RTOL), ("jax.nn", _N, _N_RTOL),
                              ("jax.random", _R, _R_RTOL)):
        for name, (fn, args) in table.items():
            rtol, why = rtols.get(name, (EVAL_RTOL, ""))
            out[f"{mod}.{name}"] = Case(fn, args, rtol=rtol, why=why)
    return out


CASES = _cases()


def _public(module, prefix):
    return {f"{prefix}.{n}" for n in dir(module)
            if not n.startswith("_") and (callable(getattr(module, n))
                                          or inspect.ismodule(getattr(module, n)))}


def test_every_public_function_is_listed():
    """Each public function of the installed jax's three modules is swept or skipped with
    a reason (and no row names a function this jax lacks, but for the version-dependent
    ones)."""
    public = (_public(jss, "jax.scipy.special") | _public(jnn, "jax.nn")
              | _public(jr, "jax.random"))
    missing = sorted(public - set(CASES) - set(SKIPS))
    assert not missing, f"public functions neither swept nor skipped: {missing}"
    # erfcinv (jax 0.12) and Key (jax 0.12) are the version-dependent ones
    stale = sorted(set(CASES) - public - {"jax.scipy.special.erfcinv"})
    assert not stale, f"rows for functions the installed jax lacks: {stale}"


# ----------------------------------------------------------------------------------------
# One lowering, one load and one compile per function and compiler, shared by the tests
# ----------------------------------------------------------------------------------------
_PROGRAMS: dict = {}


def _program(name):
    if name not in _PROGRAMS:
        c = CASES[name]
        jf = jax.jit(c.fn)
        text = jf.lower(*c.args).as_text()
        want = jax.tree_util.tree_leaves(jf(*c.args))
        _PROGRAMS[name] = (load(text), [np.asarray(w) for w in want])
    return _PROGRAMS[name]


def _available(name):
    mod, _, fn = name.rpartition(".")
    return hasattr({"jax.scipy.special": jss, "jax.nn": jnn, "jax.random": jr}[mod], fn)


#: functions whose programs take seconds to compile (JAX's and EXLA's): the samplers on
#: gamma's while loop, the series and continued fractions. The fast test sweeps
#: ``jax.random.gamma`` for all of the samplers' loop; each of these runs alone in
#: ``test_each_function`` (soak)
HEAVY = {f"jax.random.{n}" for n in (
    "f", "beta", "generalized_normal", "t", "ball", "dirichlet", "loggamma", "chisquare",
    "binomial", "multinomial", "poisson", "double_sided_maxwell", "wald", "orthogonal",
    "multivariate_normal")} | {f"jax.scipy.special.{n}" for n in (
        "hyp2f1", "expi", "sph_harm_y", "expn", "gammainc", "gammaincc", "exp1", "spence")}


def _group(names):
    """One program for the functions ``names``: their arguments in a row, their results
    in a row (one lowering, one load, one compile per compiler)."""
    names = [n for n in names if _available(n)]
    cases = [CASES[n] for n in names]
    counts = [len(c.args) for c in cases]

    def fn(*flat):
        out, i = [], 0
        for c, k in zip(cases, counts):
            out.append(c.fn(*flat[i:i + k]))
            i += k
        return tuple(out)
    return names, Case(fn, tuple(a for c in cases for a in c.args))


GROUPS = {
    "jax.nn": [n for n in sorted(CASES) if n.startswith("jax.nn.")],
    # in two halves, so that two workers share them
    "jax.scipy.special[a-f]": [n for n in sorted(CASES) if n.startswith("jax.scipy.special.")
                               and n not in HEAVY and n[18] <= "f"],
    "jax.scipy.special[g-z]": [n for n in sorted(CASES) if n.startswith("jax.scipy.special.")
                               and n not in HEAVY and n[18] > "f"],
    "jax.random": [n for n in sorted(CASES) if n.startswith("jax.random.") and n not in HEAVY
                   and n != "jax.random.gamma"],
    "jax.random.gamma": ["jax.random.gamma"],
}


def _where(name, i, compiler, c):
    return f"{name} result {i} on {compiler}" + (f" ({c.why})" if c.why else "")


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_loads_and_matches_jax(group):
    """The module JAX prints for the group's functions loads, and computes JAX's results
    on EXLA (to XLA's reassociation) and on the Evaluator (to each row's tolerance)."""
    names, case = _group(GROUPS[group])
    jf = jax.jit(case.fn)
    prog = load(jf.lower(*case.args).as_text())
    want = jf(*case.args)
    args = [nx.tensor(np.asarray(a)) for a in case.args]
    for compiler in ("exla", "evaluator"):
        got = prog.jit(compiler)(*args)
        got = got if isinstance(got, tuple) else (got,)
        i = 0
        for name, w in zip(names, want):
            c = CASES[name]
            for j, wl in enumerate(jax.tree_util.tree_leaves(w)):
                close(got[i].to_numpy(), np.asarray(wl),
                      c.exla_rtol if compiler == "exla" else c.rtol, c.atol,
                      _where(name, j, compiler, c), dtypes=True)
                i += 1
        assert i == len(got)


def _compare(name, compiler, rtol):
    c = CASES[name]
    prog, want = _program(name)
    got = prog.jit(compiler)(*[nx.tensor(np.asarray(a)) for a in c.args])
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(want), name
    for i, (g, w) in enumerate(zip(got, want)):
        close(g.to_numpy(), w, rtol, c.atol, _where(name, i, compiler, c), dtypes=True)


@pytest.mark.soak
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_function(name):
    """Each function alone (its own module, so a load error names only it)."""
    if not _available(name):
        pytest.skip(f"{name} is not in jax {jax.__version__}")
    c = CASES[name]
    _compare(name, "exla", c.exla_rtol)
    _compare(name, "evaluator", c.rtol)


# ----------------------------------------------------------------------------------------
# Gradients (soak): nxpy's grad of each loaded program against jax.grad
# ----------------------------------------------------------------------------------------
#: where the ops' own derivative is not JAX's, whose custom rule the module does not hold
#: (docs/stablehlo.md): what nxpy's grad of the loaded program gives instead
GRAD_DIFFERS = {
    # JAX's own AD of the same ops (fresnel.fun) gives the same NaNs
    "jax.scipy.special.fresnel": "nan",
    **{f"jax.scipy.special.{n}": "while" for n in (
        "exp1", "expi", "gammainc", "gammaincc", "hyp1f1", "hyp2f1")},
}


def _float_args(c) -> bool:
    return bool(c.args) and all(np.asarray(a).dtype == np.float32 for a in c.args)


def test_the_lgamma_jax_lowers_differentiates_as_lax_lgamma():
    """jax 0.12 lowers f32 ``lax.lgamma`` as a private ``@lgamma_impl`` of bit tricks
    (0.10: ``chlo.lgamma``); its body's own derivative, through bitcasts, is 0, so the
    importer gives the call ``lgamma``'s derivative (``digamma``): grad and jvp of the
    loaded ``gammaln``, ``gamma`` and ``lax.lgamma`` (bf16 through f32) equal JAX's."""
    from nxpy.defn import jvp
    x = np.array([0.3, 1.5, 2.7, 4.0, 7.5], np.float32)
    for fn, rtol in ((jss.gammaln, 1e-6), (jss.gamma, 1e-6),
                     (lambda v: jax.lax.lgamma(v.astype(jnp.bfloat16)), 1e-2)):
        text = jax.jit(fn).lower(x).as_text()
        assert ("@lgamma_impl" in text) == (jax.__version__ >= "0.12"), text[:300]
        prog = load(text)
        want = jax.grad(lambda v: jnp.sum(fn(v).astype(jnp.float32) * x))(x)
        got = jit(grad(lambda v: nx.sum(nx.as_type(prog(v), "f32") * nx.tensor(x))),
                  compiler="exla")(nx.tensor(x))
        np.testing.assert_allclose(got.to_numpy(), want, rtol=rtol)
        _, jt = jax.jvp(fn, (x,), (x,))
        _, nt = jit(lambda v: jvp(prog, (v,), (v,)), compiler="exla")(nx.tensor(x))
        np.testing.assert_allclose(nx.as_type(nt, "f32").to_numpy(),
                                   np.asarray(jt, np.float32), rtol=1e-2)


@pytest.mark.soak
@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items()
                                        if not n.startswith("jax.random") and _float_args(c)))
def test_grad_of_the_loaded_program(name):
    """``grad`` (EXLA) of the loaded program of a function of float arrays, weighted over
    its float results, against ``jax.grad`` of the function: nxpy's gradient rules of the
    ops JAX's libraries emit, against JAX's derivatives."""
    if not _available(name):
        pytest.skip(f"{name} is not in jax {jax.__version__}")
    c = CASES[name]
    argnums = tuple(range(len(c.args)))
    try:
        leaves = jax.tree_util.tree_leaves(jax.jit(c.fn)(*c.args))
        ws = [np.random.default_rng(5).standard_normal(v.shape).astype(np.float32)
              for v in leaves]
        if not all(jnp.issubdtype(v.dtype, jnp.floating) for v in leaves):
            pytest.skip("results that are not floats")
        want = jax.jit(jax.grad(lambda *a: sum(
            jnp.sum(v * w) for v, w in zip(jax.tree_util.tree_leaves(c.fn(*a)), ws)),
            argnums=argnums))(*c.args)
    except (ValueError, TypeError, AttributeError) as e:
        pytest.skip(f"JAX does not differentiate it here: {type(e).__name__}: {e}")
    prog = load(jax.jit(c.fn).lower(*c.args).as_text())

    def loss(*a):
        out = prog(*a)
        return sum(nx.sum(v * nx.tensor(w))
                   for v, w in zip(out if isinstance(out, tuple) else (out,), ws))
    f = jit(grad(loss, argnums=argnums), compiler="exla")
    differs = GRAD_DIFFERS.get(name)
    if differs == "while":
        with pytest.raises(ValueError, match="cannot differentiate the while_loop"):
            f(*map(nx.tensor, c.args))
        return
    got = [g.to_numpy() for g in f(*map(nx.tensor, c.args))]
    if differs == "nan":
        assert any(np.isnan(g).any() for g in got)
        got = [np.where(np.isnan(g), np.asarray(w), g) for g, w in zip(got, want)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-3, atol=1e-4, err_msg=name)


# ----------------------------------------------------------------------------------------
# f64 (soak): every function again with x64, its inputs widened
# ----------------------------------------------------------------------------------------
def _widen(a):
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype == np.float32 else a


@pytest.mark.soak
@pytest.mark.parametrize("name", sorted(CASES))
def test_loads_and_matches_jax_f64(name):
    if not _available(name) or name.startswith("jax.random"):
        pytest.skip("the samplers' f64 programs are the f32 ones with wider words")
    c = CASES[name]
    args = tuple(_widen(a) for a in c.args)
    with jax.enable_x64(True):
        jf = jax.jit(c.fn)
        try:
            text = jf.lower(*args).as_text()
        except Exception as e:  # a function whose f64 form JAX cannot lower
            pytest.skip(f"JAX does not lower {name} in f64: {e}")
        want = [np.asarray(w) for w in jax.tree_util.tree_leaves(jf(*args))]
    for compiler, rtol in (("exla", 1e-12), ("evaluator", c.rtol)):
        got = load(text).jit(compiler)(*[nx.tensor(a) for a in args])
        got = list(got) if isinstance(got, tuple) else [got]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.to_numpy(), w, rtol=rtol, atol=1e-12, equal_nan=True,
                                       err_msg=f"{name} on {compiler}")
