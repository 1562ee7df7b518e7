"""nxpy.nn against jax.nn: every function on the NumPy backend (eager), the Evaluator and
EXLA, on random inputs of f32, f64 (JAX under x64), f16 and bf16 with special values
(0, -0, the kinks, ±inf, NaN), integer and pred inputs, empty dims and negative axes;
gradients against jax.grad at random points, at the kinks, at ±inf and NaN; jvp against
jax.jvp; vmap against jax.vmap; a sharded program; argument errors; and the coverage
table of docs/nn.md against the installed jax.nn (every public name, every signature).

Tolerances. Elementwise values: relative, 1e-6 in f32 (8.4 ulps), 1e-14 in f64 (45 ulps),
2 ulps in f16/bf16. EXLA gives JAX's bits for f32 and f64 (same XLA, same formulas) save
where XLA fuses what JAX runs op by op (``jax.nn.gelu`` is not jitted); the NumPy backend
differs by its own rounding of ``exp``/``log``/``tanh``/``sqrt`` (and XLA contracts
``x*x + b`` into an FMA): up to 8 ulps in f32 and 25 in f64 measured. Functions that
cancel (``gelu``'s ``1 + tanh(z)`` for z << 0, ``squareplus``'s ``x + sqrt(x^2 + b)`` for
x < 0) and every function in f16/bf16 (XLA keeps f32 between the ops of a fusion, JAX's
op-by-op calls round each) are compared relative to ``|x|``, the size of their terms.
Gradients of elementwise functions compare normwise (relative to the largest entry):
derivative formulas cancel (``1 - tanh(x)^2``). Functions over axes and their gradients
must be as accurate as JAX (:func:`accurate`: against JAX in f64, at most twice JAX's own
error or the relative tolerance normwise), which measures the conditioning of
``standardize``'s fast variance and of JAX's op-by-op f16/bf16 softmax. Values below the
smallest normal number compare equal to 0 (XLA flushes denormals)."""
from __future__ import annotations

import inspect
import math
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import nxpy as nx
from nxpy import nn
from nxpy.defn import grad, jvp, vmap
from nxpy.defn.sharding import specs as SH
from nxpy.defn.shard_jit import shard_jit
from nxpy.nn import coverage

from helpers import COMPILERS, EAGER_JIT, close, covering, on, run_path

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp

DOC = Path(__file__).resolve().parents[1] / "docs" / "nn.md"
FLOATS = ("f32", "f64", "f16", "bf16")
EPS = {"f64": 2.0 ** -52, "f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}
RTOL = {"f64": 1e-14, "f32": 1e-6, "f16": 2 * EPS["f16"], "bf16": 2 * EPS["bf16"]}
TINY = {"f64": 2.3e-308, "f32": 1.2e-38, "f16": 6.2e-5, "bf16": 1.2e-38}
#: JAX's result: its dtype, NaN and infinities; integers and pred exactly; finite values
#: within RTOL of their type relative to |want| (:func:`helpers.close`'s ``of``: to the larger
#: of it and the input's; ``normwise``: to the largest finite |want|), plus TINY (XLA flushes
#: values below the smallest normal number to 0)
_close = partial(close, rtol=RTOL, atol=TINY, dtypes=True)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 6.0, -6.0, math.log(2), 0.5, -0.5, 20.0, -20.0,
           100.0, -100.0, math.nan, math.inf, -math.inf]


def _dt(t):
    return nx.types.parse(t).dtype


def params(pairs, ids=None):
    """``(pytest.param case, choice)`` pairs as flat ``pytest.param`` s for ``parametrize``."""
    out = []
    for case, choice in pairs:
        values = case.values if hasattr(case, "values") else (
            case if isinstance(case, tuple) else (case,))
        cid = case.id if hasattr(case, "id") else (ids(case) if ids else None)
        out.append(pytest.param(*values, choice, id=f"{cid}-{choice}" if cid else None))
    return out


def data(t, shape, seed=0, domain="any"):
    """Random values of type ``t``; floats get :data:`SPECIAL` in their first entries."""
    r = np.random.default_rng(seed)
    if t == "pred":
        return r.random(shape) < 0.5
    if t in ("s32", "s8"):
        return r.integers(-8, 9, shape).astype(_dt(t))
    if t in ("u8", "u32"):
        return r.integers(0, 17, shape).astype(_dt(t))
    x = r.standard_normal(shape) * 3
    flat = x.reshape(-1)
    flat[:min(len(SPECIAL), flat.size)] = SPECIAL[:flat.size]
    if domain == "positive":
        x = np.abs(x)
    return x.astype(_dt(t))


def ref(f, args, x64=False):
    """JAX's ``f`` of ``args`` (under x64 for f64), as NumPy (a tree)."""
    # np.errstate: jax.nn's max over integers casts its initial -inf to the integer type
    with jax.enable_x64(x64), np.errstate(invalid="ignore"):
        return jax.tree_util.tree_map(np.asarray, f(*[jnp.asarray(a) for a in args]))


def _f64(a):
    a = np.asarray(a)
    return a if a.dtype == bool else a.astype(np.float64)


def accurate(got, low, truth, t, what=""):
    """As accurate as JAX, leaf by leaf: ``low`` is JAX's result in type ``t`` (whose
    shape, dtype, NaN and inf positions ``got`` must have), ``truth`` JAX's on the same
    values in f64; ``got``'s largest error against ``truth`` may be twice ``low``'s, or
    :data:`RTOL` of ``t`` times the largest ``|truth|`` if that is more. JAX's own error
    measures the conditioning: ``standardize``'s fast variance cancels, and JAX computes
    ``jax.nn.softmax`` op by op (unjitted), rounding each step in f16/bf16, where a fused
    program (EXLA's) keeps f32."""
    leaves = [jax.tree_util.tree_leaves(v) for v in (got, low, truth)]
    assert len({len(v) for v in leaves}) == 1, what
    for g, lo, tr in zip(*leaves):
        g, lo = np.asarray(g), np.asarray(lo)
        assert g.shape == lo.shape and g.dtype == lo.dtype, (what, g.shape, g.dtype, lo.dtype)
        g, lo, tr = g.astype(np.float64), lo.astype(np.float64), np.asarray(tr, np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(lo), err_msg=f"{what}: NaNs")
        np.testing.assert_array_equal(g[np.isinf(lo)], lo[np.isinf(lo)], err_msg=what)
        fin = np.isfinite(tr) & np.isfinite(lo)
        if not fin.any():
            continue
        with np.errstate(invalid="ignore"):   # inf - inf outside fin
            bound = max(2 * np.abs(lo - tr)[fin].max(),
                        RTOL[t] * np.abs(tr[fin]).max()) + TINY[t]
            err = np.abs(g - tr)[fin]
        assert err.max() <= bound, f"{what}: error {err.max():.3g} > {bound:.3g}"


# ----------------------------------------------------------------------------------------
# Elementwise functions: (name, keyword arguments, input domain, compared relative to |x|)
# ----------------------------------------------------------------------------------------
def _elem(name, domain="any", scaled=False, **kw):
    tag = "".join(f"-{k}={v}" for k, v in kw.items())
    return pytest.param(name, kw, domain, scaled, id=name + tag)


ELEMENTWISE = [
    _elem("celu"), _elem("celu", alpha=0.5), _elem("elu"), _elem("elu", alpha=2.0),
    _elem("gelu", scaled=True), _elem("gelu", scaled=True, approximate=False),
    _elem("hard_sigmoid"), _elem("hard_silu"), _elem("hard_swish"), _elem("hard_tanh"),
    _elem("identity"), _elem("leaky_relu"), _elem("leaky_relu", negative_slope=0.2),
    _elem("log1mexp", "positive"), _elem("log_sigmoid"), _elem("mish"), _elem("relu"),
    _elem("relu6"), _elem("selu"), _elem("sigmoid"), _elem("silu"), _elem("swish"),
    _elem("soft_sign"), _elem("softplus"), _elem("sparse_plus"), _elem("sparse_sigmoid"),
    _elem("squareplus", scaled=True), _elem("squareplus", scaled=True, b=2.0),
    _elem("tanh"),
]
ELEMENTWISE_NAMES = sorted({p.values[0] for p in ELEMENTWISE})


# each function on one float type, rotating (every type in full under `make exhaustive`)
@pytest.mark.parametrize("name,kw,domain,scaled,t", params(covering(ELEMENTWISE, FLOATS)))
def test_elementwise_floats(name, kw, domain, scaled, t):
    x = data(t, (4, 9), seed=1, domain=domain)
    want = ref(lambda v: getattr(jax.nn, name)(v, **kw), [x], x64=t == "f64")
    # f16/bf16: XLA keeps f32 between fused ops, JAX rounds each op: compare relative to |x|
    scale = x.astype(np.float64) if scaled or t in ("f16", "bf16") else None
    for path in EAGER_JIT:
        got = run_path(lambda v: getattr(nn, name)(v, **kw), [x], path)
        _close(got, want, what=f"{name}{kw} {t} {path}", of=scale)


def _raises_in_jax(f, x) -> bool:
    try:
        ref(f, [x])
    except TypeError:
        return True
    return False


SCALED = {p.values[0] for p in ELEMENTWISE if p.values[3]}


@pytest.mark.parametrize("name,t", params(covering(ELEMENTWISE_NAMES, ["s32", "u8", "s8", "pred"]),
                                           ids=str))
def test_elementwise_integers(name, t):
    """Integer and pred inputs: JAX's result type and values. Where ``jax.nn`` raises,
    nxpy gives f32 (the float function of the values), and where it wraps (integer
    arithmetic past the type's range), the values of the same inputs as s32; in both
    cases nxpy/nn/coverage.py must say so (docs/nn.md)."""
    x = data(t, (3, 5), seed=2)
    jf, note = getattr(jax.nn, name), coverage.JAX_NN[name][1]
    if _raises_in_jax(jf, x):
        assert "raises" in note, \
            f"nxpy.nn.{name} accepts {t} where jax.nn raises: declare it in nxpy/nn/coverage.py"
        want = ref(jf, [x.astype(np.float32)])
    else:
        want = ref(jf, [x])
        if "wraps" in note:
            want = ref(jf, [x.astype(np.int32)]).astype(want.dtype)
    scale = x.astype(np.float64) if name in SCALED else None
    for path in EAGER_JIT:
        _close(run_path(getattr(nn, name), [x], path), want, what=f"{name} {t} {path}", of=scale)


# ----------------------------------------------------------------------------------------
# Functions over axes: (id, nxpy function, jax function, extra arrays)
# ----------------------------------------------------------------------------------------
SHAPE = (3, 4, 6)


def _mask(shape, seed=3):
    m = np.random.default_rng(seed).random(shape) < 0.7
    return m


MASK = _mask(SHAPE)
MASK_ROW = _mask((6,), seed=4)          # broadcast along the leading axes
MASK_GRAD = MASK.copy()
MASK_GRAD[:2], MASK_GRAD[..., :2] = True, True
WEIGHTS = np.random.default_rng(5).standard_normal((4, 6)).astype(np.float32)
WEIGHTS[0, :2] = 0.0                    # dropped elements
MEAN = np.random.default_rng(14).standard_normal((4, 1)).astype(np.float32)
VARIANCE = np.random.default_rng(15).random((4, 1)).astype(np.float32) + 0.5


def _ax(name, nf, jf, *extra):
    return pytest.param(nf, jf, extra, id=name)


AXES = [
    _ax("softmax", lambda x: nn.softmax(x), lambda x: jax.nn.softmax(x)),
    _ax("softmax-axis0", lambda x: nn.softmax(x, axis=0), lambda x: jax.nn.softmax(x, axis=0)),
    _ax("softmax-axis-2", lambda x: nn.softmax(x, axis=-2),
        lambda x: jax.nn.softmax(x, axis=-2)),
    _ax("softmax-axes", lambda x: nn.softmax(x, axis=(0, -1)),
        lambda x: jax.nn.softmax(x, axis=(0, -1))),
    _ax("softmax-None", lambda x: nn.softmax(x, axis=None),
        lambda x: jax.nn.softmax(x, axis=None)),
    _ax("softmax-where", lambda x, m: nn.softmax(x, where=m),
        lambda x, m: jax.nn.softmax(x, where=m), MASK),
    _ax("softmax-where-row-axis0", lambda x, m: nn.softmax(x, axis=0, where=m),
        lambda x, m: jax.nn.softmax(x, axis=0, where=m), MASK_ROW),
    _ax("log_softmax", lambda x: nn.log_softmax(x), lambda x: jax.nn.log_softmax(x)),
    _ax("log_softmax-axes", lambda x: nn.log_softmax(x, axis=(-3, 1)),
        lambda x: jax.nn.log_softmax(x, axis=(-3, 1))),
    _ax("log_softmax-None", lambda x: nn.log_softmax(x, axis=None),
        lambda x: jax.nn.log_softmax(x, axis=None)),
    _ax("log_softmax-where", lambda x, m: nn.log_softmax(x, axis=1, where=m),
        lambda x, m: jax.nn.log_softmax(x, axis=1, where=m), MASK),
    _ax("logsumexp", lambda x: nn.logsumexp(x), lambda x: jax.nn.logsumexp(x)),
    _ax("logsumexp-axis-1", lambda x: nn.logsumexp(x, axis=-1),
        lambda x: jax.nn.logsumexp(x, axis=-1)),
    _ax("logsumexp-axes-keepdims", lambda x: nn.logsumexp(x, axis=(0, 2), keepdims=True),
        lambda x: jax.nn.logsumexp(x, axis=(0, 2), keepdims=True)),
    _ax("logsumexp-b", lambda x, b: nn.logsumexp(x, axis=-1, b=b),
        lambda x, b: jax.nn.logsumexp(x, axis=-1, b=b), WEIGHTS),
    _ax("logsumexp-b-scalar", lambda x: nn.logsumexp(x, axis=1, b=2.0),
        lambda x: jax.nn.logsumexp(x, axis=1, b=2.0)),
    _ax("logsumexp-b-sign", lambda x, b: nn.logsumexp(x, axis=0, b=b, return_sign=True),
        lambda x, b: jax.nn.logsumexp(x, axis=0, b=b, return_sign=True), WEIGHTS),
    _ax("logsumexp-where", lambda x, m: nn.logsumexp(x, axis=(1, 2), where=m, keepdims=True),
        lambda x, m: jax.nn.logsumexp(x, axis=(1, 2), where=m, keepdims=True), MASK),
    _ax("logmeanexp", lambda x: nn.logmeanexp(x), lambda x: jax.nn.logmeanexp(x)),
    _ax("logmeanexp-axis", lambda x: nn.logmeanexp(x, axis=-2, keepdims=True),
        lambda x: jax.nn.logmeanexp(x, axis=-2, keepdims=True)),
    _ax("logmeanexp-where", lambda x, m: nn.logmeanexp(x, axis=2, where=m),
        lambda x, m: jax.nn.logmeanexp(x, axis=2, where=m), MASK),
    _ax("standardize", lambda x: nn.standardize(x), lambda x: jax.nn.standardize(x)),
    _ax("standardize-stable", lambda x: nn.standardize(x, axis=(0, 1), algorithm="stable"),
        lambda x: jax.nn.standardize(x, axis=(0, 1), algorithm="stable")),
    _ax("standardize-None", lambda x: nn.standardize(x, axis=None, epsilon=0.1),
        lambda x: jax.nn.standardize(x, axis=None, epsilon=0.1)),
    _ax("standardize-where", lambda x, m: nn.standardize(x, axis=-1, where=m),
        lambda x, m: jax.nn.standardize(x, axis=-1, where=m), MASK),
    _ax("standardize-where-stable",
        lambda x, m: nn.standardize(x, axis=0, where=m, algorithm="stable"),
        lambda x, m: jax.nn.standardize(x, axis=0, where=m, algorithm="stable"), MASK_ROW),
    _ax("standardize-mean-variance",
        lambda x, m, v: nn.standardize(x, mean=m, variance=v),
        lambda x, m, v: jax.nn.standardize(x, mean=m, variance=v), MEAN, VARIANCE),
    _ax("glu", lambda x: nn.glu(x), lambda x: jax.nn.glu(x)),
    _ax("glu-axis1", lambda x: nn.glu(x, axis=1), lambda x: jax.nn.glu(x, axis=1)),
    _ax("glu-axis-2", lambda x: nn.glu(x, axis=-2), lambda x: jax.nn.glu(x, axis=-2)),
]


def _args(t, extra, seed=6):
    """``x`` of :data:`SHAPE` and the extra arrays; floats without special values, which
    would make whole rows NaN (:func:`test_specials` has them)."""
    r = np.random.default_rng(seed)
    x = (r.standard_normal(SHAPE) * 3).astype(_dt(t)) if t in FLOATS else data(t, SHAPE, seed)
    return [x, *[e if e.dtype == bool else e.astype(_dt(t) if t in FLOATS else np.float32)
                 for e in extra]]


def _function(case):
    return case.id.split("-")[0]


# each case on one type, every function on every type (covering by function); all in full
# under `make exhaustive`
@pytest.mark.parametrize("nf,jf,extra,t", params(covering(AXES, FLOATS + ("s32",),
                                                          by=_function)))
def test_axes(nf, jf, extra, t, request):
    args = _args(t, extra)
    name = request.node.callspec.id.rsplit("-", 1)[0]
    if t == "s32" and name.startswith("glu"):    # jax.nn.glu raises for integers
        low = ref(jf, [args[0].astype(np.float32), *args[1:]])
    else:
        low = ref(jf, args, x64=t == "f64")
    truth = ref(jf, [_f64(a) for a in args], x64=True)
    for path in EAGER_JIT:
        accurate(run_path(nf, args, path), low, truth, t if t in FLOATS else "f32",
                 f"{name} {t} {path}")


SPECIAL_ROWS = np.array([[0.0, 1.0, -math.inf, 2.0], [-math.inf] * 4, [1.0, math.inf, 0.0, 3.0],
                         [math.nan, 0.0, 1.0, 2.0], [1e30, -1e30, 0.0, 1.0]], np.float32)


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp", "logmeanexp",
                                  "standardize"])
def test_specials(name):
    """Rows with -inf, all -inf, +inf, NaN and huge values; a row fully masked out."""
    kw = {"axis": -1}
    m = np.ones(SPECIAL_ROWS.shape, bool)
    m[0, 2], m[4] = False, False
    want = ref(lambda x: getattr(jax.nn, name)(x, **kw), [SPECIAL_ROWS])
    want_m = ref(lambda x, w: getattr(jax.nn, name)(x, where=w, **kw), [SPECIAL_ROWS, m])
    for path in EAGER_JIT:
        _close(run_path(lambda x: getattr(nn, name)(x, **kw), [SPECIAL_ROWS], path), want,
               what=f"{name} {path}")
        _close(run_path(lambda x, w: getattr(nn, name)(x, where=w, **kw), [SPECIAL_ROWS, m],
                        path), want_m, what=f"{name} where {path}")


ONE_HOT = [
    ({}, "s32"), ({"axis": 0}, "s32"), ({"axis": 1}, "s32"), ({"axis": -2}, "u8"),
    ({"dtype": "s8"}, "s32"), ({"dtype": "bf16", "axis": -3}, "s8"), ({"dtype": "pred"}, "s32"),
    ({"dtype": "f64"}, "s32"),
]


@pytest.mark.parametrize("kw,t", ONE_HOT, ids=[f"{k}-{t}" for k, t in ONE_HOT])
def test_one_hot(kw, t):
    x = data(t, (2, 3), seed=7) - (3 if t != "u8" else 0)    # some outside [0, 5)
    jkw = dict(kw, dtype=_dt(kw["dtype"]) if "dtype" in kw else None)
    want = ref(lambda v: jax.nn.one_hot(v, 5, **jkw), [x], x64=kw.get("dtype") == "f64")
    for path in EAGER_JIT:
        _close(run_path(lambda v: nn.one_hot(v, 5, **kw), [x], path), want, what=f"{kw} {path}")


# ----------------------------------------------------------------------------------------
# Empty dims
# ----------------------------------------------------------------------------------------
EMPTY = [
    # each elementwise function on one of the two shapes, rotating (both: make exhaustive)
    *[(n, {}, s) for n, s in covering(ELEMENTWISE_NAMES, [(0,), (2, 0, 3)])],
    ("softmax", {"axis": 1}, (2, 0, 3)), ("softmax", {"axis": -1}, (2, 0, 3)),
    ("log_softmax", {"axis": (0, 1)}, (2, 0, 3)), ("logsumexp", {"axis": 1}, (2, 0, 3)),
    ("logsumexp", {}, (0,)), ("logmeanexp", {"axis": -2}, (2, 0, 3)),
    ("logmeanexp", {"axis": -1}, (2, 0, 3)), ("standardize", {"axis": 1}, (2, 0, 3)),
    ("standardize", {"axis": 0}, (2, 0, 3)), ("glu", {"axis": 0}, (2, 0, 3)),
    ("glu", {"axis": 1}, (2, 0, 4)),
]


@pytest.mark.parametrize("name,kw,shape", EMPTY,
                         ids=[f"{n}-{k}-{'x'.join(map(str, s))}" for n, k, s in EMPTY])
def test_empty(name, kw, shape):
    x = np.zeros(shape, np.float32)
    want = ref(lambda v: getattr(jax.nn, name)(v, **kw), [x])
    for path in EAGER_JIT:
        _close(run_path(lambda v: getattr(nn, name)(v, **kw), [x], path), want,
               what=f"{name}{kw} {shape} {path}")


def test_one_hot_empty():
    for shape, n in [((0,), 3), ((2, 0), 4), ((3,), 0)]:
        x = np.zeros(shape, np.int32)
        want = ref(lambda v: jax.nn.one_hot(v, n), [x])
        for path in EAGER_JIT:
            _close(run_path(lambda v: nn.one_hot(v, n), [x], path), want,
                   what=f"{shape} {n} {path}")


# ----------------------------------------------------------------------------------------
# Gradients against jax.grad: at random points and at every kink JAX defines
# ----------------------------------------------------------------------------------------
KINKS = [-6.0, -3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 6.0, math.log(2), 1e-3, -20.0, 20.0]
GRAD_ELEMENTWISE = [p for p in ELEMENTWISE if p.values[0] != "identity"] + [_elem("identity")]


def _grad_paths(f, x, w):
    def loss(v):
        return nx.sum(f(v) * w)
    for path in EAGER_JIT:
        g = grad(loss)
        yield path, on(path, g)(nx.tensor(x)).to_numpy()


# gradients compare normwise: derivative formulas cancel (1 - tanh(x)^2, gelu's terms), so an
# ulp of difference in a backend's tanh or exp is an error relative to the largest entry


@pytest.mark.parametrize("name,kw,domain,scaled,t",
                         params(covering(GRAD_ELEMENTWISE, ["f32", "f64"])))
def test_grad_elementwise(name, kw, domain, scaled, t):
    r = np.random.default_rng(8)
    pts = np.array(KINKS + list(r.standard_normal(16) * 3))
    if domain == "positive":
        pts = np.array([v for v in np.abs(pts) if v > 0] + [0.0])
    x = pts.astype(_dt(t))
    w = r.standard_normal(x.shape).astype(_dt(t))
    def jax_grad(v, u):
        return jax.grad(lambda a: jnp.sum(getattr(jax.nn, name)(a, **kw) * u))(v)
    low = ref(jax_grad, [x, w], x64=t == "f64")
    truth = ref(jax_grad, [_f64(x), _f64(w)], x64=True)  # XLA's f32 tanh and exp err by
    # ulps near saturation, more where the CPU has no FMA (tests/cpu.py): JAX's error is
    # the bound there, as in accurate()
    for path, got in _grad_paths(lambda v: getattr(nn, name)(v, **kw), x, w):
        accurate(got, low, truth, t, f"grad {name}{kw} {t} {path}")


EDGES = np.array([math.inf, -math.inf, math.nan], np.float32)


@pytest.mark.parametrize("name", [n for n in ELEMENTWISE_NAMES if n != "log1mexp"])
def test_grad_at_infinities_and_nan(name):
    w = np.array([1.5, -2.0, 0.5], np.float32)
    want = ref(lambda v: jax.grad(lambda u: jnp.sum(getattr(jax.nn, name)(u) * w))(v), [EDGES])
    for path, got in _grad_paths(getattr(nn, name), EDGES, w):
        _close(got, want, what=f"grad {name} at ±inf, NaN {path}", normwise=True)


GRAD_AXES = [
    ("softmax", lambda m: {"axis": 1}), ("softmax", lambda m: {"axis": (0, 2), "where": m}),
    ("log_softmax", lambda m: {"axis": -1}), ("log_softmax", lambda m: {"where": m}),
    ("logsumexp", lambda m: {"axis": 2}), ("logsumexp", lambda m: {"axis": 0, "where": m}),
    ("logsumexp", lambda m: {"axis": -1, "b": np.abs(WEIGHTS) + 0.5}),
    ("logmeanexp", lambda m: {"axis": (1, 2), "where": m}),
    ("standardize", lambda m: {}), ("standardize", lambda m: {"algorithm": "stable"}),
    ("standardize", lambda m: {"axis": 0, "where": m}), ("glu", lambda m: {"axis": -2}),
]


# every function in f32 and f64, each case in one (both: make exhaustive)
@pytest.mark.parametrize("name,kw,t", [
    pytest.param(n, kw, t, id=f"{n}-{GRAD_AXES.index((n, kw))}-{t}")
    for (n, kw), t in covering(GRAD_AXES, ["f32", "f64"], by=lambda c: c[0])])
def test_grad_axes(name, kw, t):
    """Random points, ties of the maximum, a row of zeros (standardize's variance is 0,
    at the kink of its clip); masks keep two elements of each reduced group, as a mean
    and variance over one element make standardize's gradient ill-conditioned."""
    r = np.random.default_rng(9)
    x = (r.standard_normal(SHAPE) * 2).astype(_dt(t))
    x[0, 0, :3] = x[0, 0, 3]                     # ties of the maximum
    if name == "standardize":
        x[1, 1, :] = 0.0                         # a constant row: variance 0 exactly
    w = r.standard_normal(jax.eval_shape(lambda v: getattr(jax.nn, name)(v, **kw(MASK_GRAD)),
                                         jnp.asarray(x)).shape).astype(_dt(t))
    m = MASK_GRAD

    def jax_grad(x, w, cast):
        k = {a: cast(v) if isinstance(v, np.ndarray) else v for a, v in kw(m).items()}
        return jax.grad(lambda u: jnp.sum(getattr(jax.nn, name)(u, **k) * w))(x)
    low = ref(lambda v, u: jax_grad(v, u, lambda a: a), [x, w], x64=t == "f64")
    truth = ref(lambda v, u: jax_grad(v, u, _f64), [_f64(x), _f64(w)], x64=True)
    nkw = {k: (nx.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw(m).items()}
    for path, got in _grad_paths(lambda v: getattr(nn, name)(v, **nkw), x, w):
        accurate(got, low, truth, t, f"grad {name} {t} {path}")


JVP = [("softmax", {"axis": 0}), ("log_softmax", {"axis": (0, 1)}), ("logsumexp", {"axis": 1}),
       ("standardize", {}), ("relu6", {}), ("log1mexp", {})]


@pytest.mark.parametrize("name,kw", JVP, ids=[n for n, _ in JVP])
def test_jvp(name, kw):
    """Forward mode: the shift held out by a bitcast has no tangent either."""
    r = np.random.default_rng(16)
    x = np.abs(r.standard_normal((3, 4))).astype(np.float32) + 0.1
    t = r.standard_normal((3, 4)).astype(np.float32)
    want = ref(lambda u, v: jax.jvp(lambda a: getattr(jax.nn, name)(a, **kw), (u,), (v,)),
               [x, t])
    for path in EAGER_JIT:
        def f(u, v):
            return jvp(lambda a: getattr(nn, name)(a, **kw), (u,), (v,))
        _close(run_path(f, [x, t], path), want, what=f"jvp {name} {path}", normwise=True)


def test_relu_gradient_at_0_matches_jax_custom_jvp():
    x = np.array([0.0, -0.0, 6.0, 1.0, -1.0], np.float32)
    assert grad(lambda v: nx.sum(nn.relu(v)))(nx.tensor(x)).tolist() == [0, 0, 1, 1, 0]
    assert grad(lambda v: nx.sum(nn.relu6(v)))(nx.tensor(x)).tolist() == [0, 0, 0, 1, 0]
    assert grad(lambda v: nx.sum(nn.hard_tanh(v)))(nx.tensor(x)).tolist() == [1, 1, 0, 1, 1]
    assert grad(lambda v: nx.sum(nn.leaky_relu(v)))(nx.tensor(x[:2])).tolist() == [1, 1]


# ----------------------------------------------------------------------------------------
# vmap against jax.vmap; a sharded program
# ----------------------------------------------------------------------------------------
VMAP = [
    ("softmax", lambda f: lambda x: f.softmax(x, axis=0), 0),
    ("log_softmax", lambda f: lambda x: f.log_softmax(x, axis=(0, 1)), 1),
    ("logsumexp", lambda f: lambda x: f.logsumexp(x, axis=-1), 2),
    ("standardize", lambda f: lambda x: f.standardize(x, axis=0), 0),
    ("glu", lambda f: lambda x: f.glu(x), 1),
    ("relu6", lambda f: f.relu6, 0), ("gelu", lambda f: f.gelu, 2),
]


@pytest.mark.parametrize("name,make,axis", VMAP, ids=[v[0] for v in VMAP])
def test_vmap(name, make, axis):
    x = (np.random.default_rng(10).standard_normal(SHAPE) * 3).astype(np.float32)
    want = ref(jax.vmap(make(jax.nn), in_axes=axis), [x])
    for path in EAGER_JIT:
        _close(run_path(vmap(make(nn), in_axes=axis), [x], path), want,
               what=f"vmap {name} {path}", normwise=True)


def test_vmap_with_masks_and_one_hot():
    x = (np.random.default_rng(11).standard_normal(SHAPE) * 3).astype(np.float32)
    labels = np.random.default_rng(12).integers(-1, 5, (3, 4)).astype(np.int32)

    def f(mod, v, m, y):
        return (mod.softmax(v, where=m), mod.log_softmax(v, axis=0, where=m),
                mod.standardize(v, where=m), mod.one_hot(y, 4))
    want = ref(jax.vmap(lambda v, m, y: f(jax.nn, v, m, y)), [x, MASK, labels])
    for path in EAGER_JIT:
        _close(run_path(vmap(lambda v, m, y: f(nn, v, m, y)), [x, MASK, labels], path), want,
               what=f"vmap {path}", normwise=True)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_sharded_along_the_reduced_axis(compiler):
    mesh = nx.Mesh("m", (2,))
    x = (np.random.default_rng(13).standard_normal((4, 6)) * 3).astype(np.float32)

    def f(v):
        return (nn.softmax(v, axis=0), nn.log_softmax(v, axis=0), nn.logsumexp(v, axis=0),
                nn.standardize(v, axis=0), nn.gelu(v), nn.glu(v, axis=0))
    want = ref(lambda v: (jax.nn.softmax(v, axis=0), jax.nn.log_softmax(v, axis=0),
                          jax.nn.logsumexp(v, axis=0), jax.nn.standardize(v, axis=0),
                          jax.nn.gelu(v), jax.nn.glu(v, axis=0)), [x])
    ins = [{0: [0]}]
    args = [[shard] for shard in SH.shard(nx.tensor(x), mesh, ins[0])]
    res = shard_jit(f, mesh, input_shardings=ins, output_shardings=[{}] * 6,
                    compiler=compiler)(args)
    for per_device in res:
        _close([r.to_numpy() for r in per_device], list(want), what=f"sharded {compiler}",
               normwise=True)


# ----------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------
ERRORS = [
    (lambda: nn.one_hot(nx.tensor([1]), 3.0), TypeError, "num_classes"),
    (lambda: nn.one_hot(nx.tensor([1]), -1), ValueError, "num_classes"),
    (lambda: nn.one_hot(nx.tensor([1]), 3, axis=2), ValueError, "one_hot: axis"),
    (lambda: nn.one_hot(nx.tensor([1]), 3, axis="batch"), ValueError, "one_hot: axis"),
    (lambda: nn.one_hot(nx.tensor([1]), 3, dtype="f8"), TypeError, "f8"),
    (lambda: nn.glu(nx.tensor([1.0, 2.0, 3.0])), ValueError, "glu: expected the size of axis"),
    (lambda: nn.glu(nx.tensor([1.0, 2.0]), axis=1), ValueError, "glu: axis"),
    (lambda: nn.softmax(nx.tensor([1.0]), axis=1), ValueError, "softmax: axis"),
    (lambda: nn.log_softmax(nx.tensor([[1.0]]), axis=(0, 0)), ValueError, "log_softmax: axis"),
    (lambda: nn.logsumexp(nx.tensor([1.0]), axis=1.5), TypeError, "logsumexp: axis"),
    (lambda: nn.softmax(nx.tensor([1.0, 2.0]), where=nx.tensor([True, False, True])),
     ValueError, "softmax: expected where"),
    (lambda: nn.logsumexp(nx.tensor([1.0, 2.0]), b=nx.tensor([1.0, 2.0, 3.0])), ValueError,
     "logsumexp: expected b"),
    (lambda: nn.standardize(nx.tensor([1.0]), algorithm="slow"), ValueError, "algorithm"),
    (lambda: nn.relu("a"), TypeError, "relu"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    f, cls, text = ERRORS[i]
    with pytest.raises(cls, match=text):
        f()


# ----------------------------------------------------------------------------------------
# Coverage: docs/nn.md's table against the installed jax.nn
# ----------------------------------------------------------------------------------------
def _version(v: str) -> tuple:
    return tuple(int(p) for p in v.split(".")[:2])


JAX_VERSION = _version(jax.__version__)


def public_names() -> set:
    """``jax.nn``'s public names: its functions and submodules (not re-exported types)."""
    return {n for n in dir(jax.nn) if not n.startswith("_")
            and (callable(getattr(jax.nn, n)) or inspect.ismodule(getattr(jax.nn, n)))
            and not inspect.isclass(getattr(jax.nn, n))}


def test_every_public_name_of_jax_nn_has_a_row():
    missing = public_names() - set(coverage.JAX_NN)
    assert not missing, (f"jax.nn {jax.__version__} has {sorted(missing)}: add a row to "
                         "nxpy/nn/coverage.py (a function, or the reason there is none)")


def test_every_row_is_a_name_of_jax_nn_or_says_since_when():
    for name, (_, _, since) in coverage.JAX_NN.items():
        if name not in public_names():
            assert since and _version(since) > JAX_VERSION, \
                f"jax.nn {jax.__version__} has no {name}: give its row the version it came in"
        else:
            assert since is None or _version(since) <= JAX_VERSION, name


def test_every_row_without_a_function_gives_a_reason():
    for name, (ours, note, _) in coverage.JAX_NN.items():
        assert ours or note, name


def test_nxpy_nn_exports_exactly_the_rows():
    rows = {ours for ours, _, _ in coverage.JAX_NN.values() if ours}
    assert set(nn.__all__) == rows
    for name, (ours, _, _) in coverage.JAX_NN.items():
        if ours:
            assert ours == name and callable(getattr(nn, ours)), name


def _params(f):
    return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


@pytest.mark.parametrize("name", sorted(n for n, (o, _, _) in coverage.JAX_NN.items() if o))
def test_signature_is_jax_nn_s(name):
    """Names, order, kinds and defaults of the parameters; a parameter of jax.nn's that
    nxpy lacks is declared with the version it came in (and is there from that one on)."""
    if name not in public_names():
        pytest.skip(f"jax.nn {jax.__version__} has no {name}")
    gaps = coverage.PARAMETER_GAPS.get(name, {})
    theirs = []
    for p in _params(getattr(jax.nn, name)):
        if p[0] in gaps:
            assert _version(gaps[p[0]][0]) <= JAX_VERSION, (name, p[0])
            continue
        theirs.append(p)
    for p, (since, _) in gaps.items():
        if _version(since) <= JAX_VERSION:
            assert p in inspect.signature(getattr(jax.nn, name)).parameters, (name, p)
    ours = _params(getattr(nn, name))
    assert ours == theirs, f"{name}: {ours} != jax.nn's {theirs}"


def test_docs_nn_md_is_current():
    text = DOC.read_text()
    assert text == coverage.with_table(text), \
        "docs/nn.md's table is stale: run python -m nxpy.nn.coverage"
