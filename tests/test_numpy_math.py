"""nxpy.numpy's mathematics, reductions, statistics and linalg against jax.numpy: each
family of functions is traced into one program per dtype (so a path compiles a handful of
programs, not hundreds) and run eagerly (NumPy backend), on the Evaluator and on EXLA;
results are compared with jnp's (x64 off) in value, shape and dtype. Then gradients
against jax.grad, vmap against jax.vmap, empty dimensions, negative axes, traced-only
errors and argument errors.

Tolerances: f32 relative 2e-5 (the NumPy backend rounds transcendental functions its own
way; XLA fuses), f16/bf16 one part in 100; decompositions are compared through what is
unique about them (reconstructions, singular values, eigenvalues)."""
from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest

import nxpy as nx
import nxpy.numpy as xnp
from nxpy.defn import grad, jit, vmap
from nxpy.numpy import linalg as xla
from nxpy.numpy import mathematics, reductions, statistics

from helpers import EAGER_JIT, close, run_path

import jax  # after nxpy
import jax.numpy as jnp

RTOL = {"f32": 2e-5, "c64": 2e-5, "c128": 2e-5, "f16": 1e-2, "bf16": 1e-2, "f64": 1e-12}
#: jnp's result: its dtype, integers exactly, each type within RTOL (relative and absolute)
_close = partial(close, rtol=RTOL, atol=RTOL, dtypes=True)


_REF: dict = {}


def same_worker(test):
    """A test's paths on one xdist worker (``make test``'s ``--dist loadgroup``), where
    :func:`ref` computes JAX's reference once for all of them: for most of these tests
    that reference (one large jitted program) costs as much as a path."""
    return pytest.mark.xdist_group(f"numpy_math_{test.__name__}")(test)


def ref(key, f, *args):
    """JAX's ``f(*args)`` under ``jax.jit`` (one compile rather than one per op), as NumPy,
    computed once per ``key`` in this process: the paths' tests share it."""
    if key not in _REF:
        _REF[key] = jax.tree_util.tree_map(np.asarray, jax.jit(f)(*args))
    return _REF[key]


def data(dtype, shape, seed=0, special=True):
    r = np.random.default_rng(seed)
    if dtype == "bool":
        return r.random(shape) < 0.5
    if dtype in ("int32", "int8", "int16"):
        return r.integers(-9, 10, shape).astype(dtype)
    if dtype in ("uint8", "uint32"):
        return r.integers(0, 17, shape).astype(dtype)
    x = r.standard_normal(shape) * 2
    if special:
        flat = x.reshape(-1)
        sp = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, math.inf, -math.inf, math.nan]
        flat[:len(sp)] = sp[:flat.size]
    return x.astype(jnp.dtype(dtype))


# ----------------------------------------------------------------------------------------
# Elementwise: every function of one family in one program
# ----------------------------------------------------------------------------------------
FLOAT_UNARY = ["abs", "absolute", "fabs", "negative", "positive", "sign", "sqrt", "cbrt",
               "square", "reciprocal", "exp", "exp2", "expm1", "log", "log1p", "log2",
               "log10", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh",
               "tanh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "degrees",
               "radians", "sinc", "floor", "ceil", "trunc", "rint", "round", "around",
               "isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "nan_to_num",
               "real", "imag", "conj", "conjugate", "angle", "logical_not"]
INT_UNARY = ["abs", "negative", "sign", "square", "floor", "ceil", "trunc", "rint", "round",
             "isnan", "isinf", "isfinite", "signbit", "sqrt", "exp", "sin", "invert",
             "bitwise_not", "bitwise_count", "real", "imag", "conj", "logical_not"]
FLOAT_BINARY = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide",
                "power", "float_power", "mod", "remainder", "fmod", "maximum", "minimum",
                "fmax", "fmin", "arctan2", "hypot", "logaddexp", "logaddexp2", "copysign",
                "heaviside", "nextafter", "equal", "not_equal", "less", "less_equal",
                "greater", "greater_equal", "logical_and", "logical_or", "logical_xor",
                "isclose"]
INT_BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "power", "mod",
              "remainder", "fmod", "maximum", "minimum", "bitwise_and", "bitwise_or",
              "bitwise_xor", "left_shift", "right_shift", "equal", "less", "isclose"]


def _unary_program(names, mod):
    return lambda x: tuple(getattr(mod, n)(x) for n in names)


@same_worker
@pytest.mark.parametrize("path", EAGER_JIT)
@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
def test_unary(path, dtype):
    names = INT_UNARY if dtype == "int32" else FLOAT_UNARY
    if dtype == "float16":  # a sample: XLA computes f16 in f32 between fused ops
        names = ["abs", "sqrt", "exp", "log1p", "tanh", "floor", "rint", "sign", "isnan",
                 "signbit", "nan_to_num", "sinc", "reciprocal"]
    x = data(dtype, (4, 7))
    got = run_path(_unary_program(names, xnp), [x], path)
    want = ref(("unary", dtype), _unary_program(names, jnp), x)
    for n, g, w in zip(names, got, want):
        if n == "sinc":  # jax 0.12 reduces the argument: exact 0 at integers and at ±inf
            g, w = np.where(np.isinf(x), 0, g), np.where(np.isinf(x), 0, w)
        _close(g, w, what=f"{n}({dtype}) on {path}", atol=1e-5 if dtype == "float32" else RTOL)


@same_worker
@pytest.mark.parametrize("path", EAGER_JIT)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_binary(path, dtype):
    names = INT_BINARY if dtype == "int32" else FLOAT_BINARY
    x, y = data(dtype, (3, 8), 1), data(dtype, (8,), 2, special=False)
    if dtype == "int32":
        y = np.where(y == 0, 3, y).astype(np.int32)
        shift = np.abs(y) % 8
        expo = np.abs(y) % 4
    prog = (lambda a, b, s, e: tuple(
        getattr(xnp, n)(a, s if "shift" in n else (e if n == "power" else b))
        for n in names)) if dtype == "int32" else (
        lambda a, b: tuple(getattr(xnp, n)(a, b) for n in names))
    args = [x, y, shift, expo] if dtype == "int32" else [x, y]
    got = run_path(prog, args, path)
    want = ref(("binary", dtype), lambda *t: tuple(
        getattr(jnp, n)(t[0], (t[2] if "shift" in n else t[3] if n == "power" else t[1])
                        if dtype == "int32" else t[1]) for n in names), *args)
    for i, n in enumerate(names):
        _close(got[i], want[i], what=f"{n}({dtype}) on {path}", atol=1e-5)


def test_binary_special_pairs():
    """Both operands special (NaN, inf, zeros of both signs) for the functions with cases."""
    sp = np.array([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 2.5], np.float32)
    a, b = np.meshgrid(sp, sp)
    names = ["hypot", "logaddexp", "logaddexp2", "copysign", "heaviside", "fmax", "fmin",
             "nextafter", "arctan2", "mod", "fmod", "floor_divide", "isclose"]
    got = run_path(lambda p, q: tuple(getattr(xnp, n)(p, q) for n in names), [a, b], "exla")
    want = ref("special", lambda p, q: tuple(getattr(jnp, n)(p, q) for n in names), a, b)
    for n, g, w in zip(names, got, want):
        _close(g, w, what=n)


def test_promotion():
    """Result types against jnp's (x64 off): weak Python scalars, mixed kinds."""
    cases = [
        (np.ones(2, np.float16), 1.5), (np.ones(2, np.int32), 1.5), (np.ones(2, np.int8), 3),
        (np.ones(2, np.int8), np.ones(2, np.uint8)), (np.ones(2, np.float16),
                                                      np.ones(2, jnp.bfloat16)),
        (np.ones(2, bool), np.ones(2, bool)), (np.ones(2, np.uint8), np.ones(2, np.int16)),
        (np.ones(2, np.int16), np.ones(2, np.float16)),
    ]
    for a, b in cases:
        for n in ["add", "multiply", "subtract", "true_divide", "maximum", "power"]:
            if n in ("subtract", "power") and a.dtype == bool:
                continue
            tb = b if np.isscalar(b) else nx.tensor(b)
            got = getattr(xnp, n)(nx.tensor(a), tb)
            want = jax.eval_shape(lambda p, n=n, b=b: getattr(jnp, n)(p, b), a)
            assert got.to_numpy().dtype == want.dtype, (n, a.dtype, b, got.type, want.dtype)
    # bools: add is or, multiply is and, as jnp
    t = np.array([True, False])
    assert xnp.add(t, t).tolist() == [True, False]


def test_round_decimals_and_clip():
    x = (np.arange(-12, 12, dtype=np.float32) * 0.125)
    for d in (0, 1, 2, -1):
        _close(xnp.round(x, d).to_numpy(), jnp.round(x, d), what=f"round {d}")
    _close(run_path(lambda v: xnp.clip(v, -0.5, 0.75), [x], "exla"), jnp.clip(x, -0.5, 0.75))
    _close(xnp.clip(x, max=0.0).to_numpy(), jnp.clip(x, max=0.0))
    _close(xnp.nan_to_num(np.array([np.nan, np.inf, -np.inf], np.float16)).to_numpy(),
           jnp.nan_to_num(np.array([np.nan, np.inf, -np.inf], np.float16)))


def test_closeness_and_equality():
    a = np.array([1.0, np.nan, np.inf, 1e-9, 1.0], np.float32)
    b = np.array([1.0 + 1e-6, np.nan, np.inf, 0.0, 1.1], np.float32)
    for en in (False, True):
        _close(xnp.isclose(a, b, equal_nan=en).to_numpy(), jnp.isclose(a, b, equal_nan=en))
        assert bool(xnp.allclose(a[:1], b[:1])) == bool(jnp.allclose(a[:1], b[:1]))
        assert bool(xnp.array_equal(a, a, equal_nan=en)) == bool(
            jnp.array_equal(a, a, equal_nan=en))
    assert not bool(xnp.array_equal([1, 2], [1, 2, 3]))
    assert bool(xnp.array_equiv([[1, 1]], [1, 1]))


# ----------------------------------------------------------------------------------------
# Products
# ----------------------------------------------------------------------------------------
@same_worker
@pytest.mark.parametrize("path", EAGER_JIT)
def test_products(path):
    r = np.random.default_rng(3)
    a = r.standard_normal((2, 3, 4)).astype(np.float32)
    b = r.standard_normal((4, 5)).astype(np.float32)
    v = r.standard_normal(4).astype(np.float32)
    u3 = r.standard_normal((5, 3)).astype(np.float32)
    w3 = r.standard_normal((5, 3)).astype(np.float32)
    s = r.standard_normal(9).astype(np.float32)
    k = r.standard_normal(4).astype(np.float32)

    def prog(xnp_, a, b, v, u3, w3, s, k):
        return (xnp_.dot(a, b), xnp_.dot(v, v), xnp_.vdot(a, a), xnp_.matmul(a, b),
                xnp_.matmul(v, b), xnp_.matmul(a, v), xnp_.inner(a, v), xnp_.outer(v, s),
                xnp_.kron(b, v), xnp_.cross(u3, w3), xnp_.cross(u3.T if xnp_ is jnp else
                                                               xnp.transpose(u3), w3,
                                                               axisa=0),
                # 2-vectors: jnp 0.12 raises (NumPy 2 deprecated them), 0.10 and nxpy accept
                xnp_.cross(u3[:, :2], w3[:, :2]) if xnp_ is xnp else
                u3[:, 0] * w3[:, 1] - u3[:, 1] * w3[:, 0], xnp_.tensordot(a, b, 1),
                xnp_.tensordot(a, a, ([0, 2], [0, 2])), xnp_.einsum("ijk,kl->il", a, b),
                xnp_.convolve(s, k), xnp_.convolve(s, k, "same"), xnp_.convolve(k, s, "valid"),
                xnp_.correlate(s, k), xnp_.correlate(s, k, "full"), xnp_.correlate(k, s, "same"),
                xnp_.polyval(k, s), xnp_.polyadd(k, s), xnp_.polymul(k, s),
                xnp_.trapezoid(a, axis=1), xnp_.trapezoid(s, s), xnp_.vecdot(a, v))
    if not hasattr(xnp, "transpose"):
        pytest.skip("nxpy.numpy.transpose is not there yet")
    got = run_path(lambda *t: prog(xnp, *t), [a, b, v, u3, w3, s, k], path)
    want = ref("products", lambda *t: prog(jnp, *t), a, b, v, u3, w3, s, k)
    for i, (g, w) in enumerate(zip(got, want)):
        _close(g, w, rtol=1e-4, atol=1e-4, what=f"product #{i} on {path}")


def test_products_integers_and_errors():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    _close(xnp.dot(a, a.T).to_numpy(), jnp.dot(a, a.T))
    _close(xnp.convolve(np.array([1, 2, 3], np.int32), np.array([1, -1], np.int32)).to_numpy(),
           jnp.convolve(np.array([1, 2, 3], np.int32), np.array([1, -1], np.int32)))
    with pytest.raises(ValueError, match="dot: shapes"):
        xnp.dot(a, a)
    with pytest.raises(ValueError, match="convolve: expected 1-dimensional"):
        xnp.convolve(a, a)
    with pytest.raises(ValueError, match="convolve: expected mode"):
        xnp.convolve([1.0], [1.0], mode="wide")
    with pytest.raises(ValueError, match="cross: incompatible vector sizes"):
        xnp.cross([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="invert: expected integer"):
        xnp.invert([1.5])
    with pytest.raises(TypeError, match="round: expected decimals"):
        xnp.round([1.5], 1.5)


# ----------------------------------------------------------------------------------------
# Reductions
# ----------------------------------------------------------------------------------------
def _reductions(m, x, w):
    return (m.sum(x), m.sum(x, axis=0), m.sum(x, axis=(0, -1), keepdims=True),
            m.sum(x, axis=-1, where=w), m.sum(x, axis=1, initial=2.0), m.prod(x, axis=1),
            m.mean(x, axis=-1), m.mean(x, where=w), m.max(x, axis=1), m.amin(x, axis=0),
            m.max(x, axis=1, initial=-5.0, where=w), m.argmax(x, axis=1),
            m.argmin(x, axis=-1, keepdims=True), m.argmax(x), m.all(x > 0, axis=0),
            m.any(x > 2, axis=1), m.var(x, axis=1), m.var(x, axis=0, ddof=1),
            m.std(x, axis=-1, correction=1), m.std(x, where=w),
            m.average(x, axis=1, weights=m.abs(x[0])), m.ptp(x, axis=1),
            m.count_nonzero(x > 0, axis=0), m.nansum(x, axis=1), m.nanprod(x, axis=0),
            m.nanmean(x, axis=1), m.nanmax(x, axis=1), m.nanmin(x, axis=0),
            m.nanvar(x, axis=1), m.nanstd(x, axis=0, ddof=1), m.nanargmax(x, axis=1),
            m.nanargmin(x, axis=0), m.cumsum(x, axis=1), m.cumsum(x), m.cumprod(x, axis=0),
            m.nancumsum(x, axis=-1), m.nancumprod(x, axis=1),
            m.cumulative_sum(x, axis=1, include_initial=True), m.diff(x, axis=0),
            m.diff(x, n=2, prepend=0.0, append=x[:, :1]), m.ediff1d(x[0], to_begin=1.0))


@same_worker
@pytest.mark.parametrize("path", EAGER_JIT)
def test_reductions_f32(path):
    x = data("float32", (5, 6), 4, special=False)
    x[1, 2] = x[3, 0] = np.nan
    x[4] = np.nan
    w = data("bool", (5, 6), 5)
    got = run_path(lambda a, b: _reductions(xnp, a, b), [x, w], path)
    want = ref("reductions", lambda a, b: _reductions(jnp, a, b), x, w)
    for i, (g, wv) in enumerate(zip(got, want)):
        _close(g, wv, rtol=1e-5, atol=1e-5, what=f"reduction #{i} on {path}")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "bool", "float16", "int32"])
def test_reduction_types(dtype):
    x = data(dtype, (3, 4), 6, special=False)
    names = [n for n in ["sum", "prod", "mean", "max", "argmax", "var", "cumsum", "cumprod",
                         "diff", "count_nonzero", "nansum", "ptp", "all", "any"]
             if not (n == "ptp" and dtype == "bool")]
    got = run_path(lambda t: tuple(getattr(xnp, n)(t) for n in names), [x], "eager")
    want = ref(("rtypes", dtype), lambda t: tuple(getattr(jnp, n)(t) for n in names), x)
    for n, g, w in zip(names, got, want):
        _close(g, w, rtol=1e-2, atol=1e-2, what=f"{n} {dtype}")


def test_reductions_empty_and_errors():
    e = np.zeros((0, 3), np.float32)
    for n, kw in [("sum", {"axis": 0}), ("prod", {"axis": 0}), ("mean", {"axis": 1}),
                  ("cumsum", {"axis": 0}), ("max", {"axis": 0, "initial": 1.0}),
                  ("nansum", {}), ("count_nonzero", {"axis": 0})]:
        _close(getattr(xnp, n)(e, **kw).to_numpy(), getattr(jnp, n)(e, **kw), what=n)
    with pytest.raises(ValueError, match="max: zero-size"):
        xnp.max(e, axis=0)
    with pytest.raises(ValueError, match="argmax: attempt"):
        xnp.argmax(e, axis=0)
    with pytest.raises(ValueError, match="sum: axis 2 is out of bounds"):
        xnp.sum(e, axis=2)
    with pytest.raises(TypeError, match="sum: out= is not supported"):
        xnp.sum(e, out=e)
    with pytest.raises(ValueError, match="needs initial"):
        xnp.max(e, where=np.ones((0, 3), bool))
    with pytest.raises(ValueError, match="ddof and correction"):
        xnp.var([1.0], ddof=1, correction=1)
    with pytest.raises(ValueError, match="cumulative_sum: the input has rank 2"):
        xnp.cumulative_sum(np.ones((2, 2)))
    with pytest.raises(ValueError, match="diff: expected n"):
        xnp.diff([1, 2], n=-1)


# ----------------------------------------------------------------------------------------
# Statistics, searching, sorting
# ----------------------------------------------------------------------------------------
def _stats(m, x, s, q, v, ints):
    out = []
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        out.append(m.quantile(x, q, axis=1, method=method))
    out += [m.quantile(x, 0.3), m.quantile(x, q, axis=(0, 1), keepdims=True),
            m.percentile(x, 40.0, axis=0), m.nanquantile(x, q, axis=1),
            m.nanpercentile(x, 75.0, axis=0, keepdims=True), m.median(x, axis=1),
            m.nanmedian(x, axis=0), m.nanmedian(x)]
    for side, method in (("left", "scan"), ("right", "scan"), ("left", "sort"),
                         ("right", "compare_all")):
        out.append(m.searchsorted(s, v, side=side, method=method))
    out += [m.searchsorted(s[::-1], v, sorter=m.argsort(s[::-1])),
            m.digitize(v, s), m.digitize(v, s, right=True), m.digitize(v, s[::-1]),
            m.interp(v, s, m.sin(s)), m.interp(v, s, m.sin(s), left=-9.0, right=9.0),
            m.interp(v, s, m.sin(s), period=3.0),
            m.histogram(v, bins=5), m.histogram(v, bins=4, range=(-1.0, 1.0), density=True),
            m.histogram(v, bins=s, weights=m.abs(v)), m.histogram_bin_edges(v, 3),
            m.bincount(ints, length=12), m.bincount(ints, weights=v[:ints.shape[0]],
                                                    length=5),
            m.unique(ints, size=12, fill_value=-1),
            m.unique(ints, return_index=True, return_inverse=True, return_counts=True,
                     size=8),
            m.sort(x, axis=0), m.sort(x, axis=None), m.sort(x, descending=True),
            m.argsort(x, axis=1), m.argsort(ints, descending=True), m.argsort(x, axis=None),
            m.lexsort([ints, ints % 3]), m.cov(x), m.cov(x, rowvar=False, ddof=0),
            m.cov(x[0], x[1], aweights=m.abs(x[2]) + 1.0),
            m.cov(x, fweights=ints[:x.shape[1]] % 3 + 1), m.corrcoef(x), m.corrcoef(x[0], x[1])]
    return out


@same_worker
@pytest.mark.parametrize("path", EAGER_JIT)
def test_statistics(path):
    x = data("float32", (4, 9), 7, special=False)
    xn = x.copy()
    xn[1, 3] = np.nan
    s = np.sort(data("float32", (11,), 8, special=False))
    s[3] = s[4]  # a tie
    v = data("float32", (13,), 9, special=False)
    v[:3] = [s[3], s[0], s[-1]]
    v[3] = np.nan
    ints = np.random.default_rng(10).integers(0, 7, 10).astype(np.int32)
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0], np.float32)
    got = run_path(lambda a, b, c, d, e: _stats(xnp, a, b, c, d, e), [x, s, q, v, ints], path)
    want = ref("statistics", lambda *t: _stats(jnp, *t), x, s, q, v, ints)
    for i, (g, w) in enumerate(zip(got, want)):
        for gl, wl in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(w)):
            _close(gl, wl, rtol=1e-5, atol=1e-5, what=f"statistic #{i} on {path}")
    # NaN handling of the quantiles
    got = run_path(lambda a: (xnp.quantile(a, 0.5, axis=1), xnp.nanquantile(a, 0.5, axis=1)),
                   [xn], path)
    want = ref("nan-quantiles", lambda a: (jnp.quantile(a, 0.5, axis=1),
                                            jnp.nanquantile(a, 0.5, axis=1)), xn)
    _close(got[0], want[0])
    _close(got[1], want[1])


def test_partition_and_eager_unique():
    x = data("float32", (3, 10), 11, special=False)
    for k in (0, 4, 9):
        p = xnp.partition(x, k).to_numpy()
        assert np.array_equal(p[:, k], np.sort(x, axis=-1)[:, k])
        assert (p[:, :k] <= p[:, k:k + 1]).all() and (p[:, k + 1:] >= p[:, k:k + 1]).all()
        ip = xnp.argpartition(x, k, axis=-1).to_numpy()
        assert np.array_equal(np.take_along_axis(x, ip, -1)[:, k], p[:, k])
    # eager, without size: the reference is jnp's with the size NumPy finds (one compile)
    ints = np.array([[3, 1], [3, 7]], np.int32)
    f = np.array([1.0, np.nan, np.nan, 0.0], np.float32)
    b = np.array([0, 5, -1], np.int32)
    got = (xnp.unique(ints, return_index=True, return_inverse=True, return_counts=True),
           xnp.unique(f), xnp.unique(f, equal_nan=False), xnp.bincount(b, minlength=3))
    want = ref("eager-unique", lambda i, x, c: (
        jnp.unique(i, return_index=True, return_inverse=True, return_counts=True, size=3),
        jnp.unique(x, size=3), jnp.unique(x, equal_nan=False, size=4),
        jnp.bincount(c, minlength=3, length=6)), ints, f, b)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        _close(g.to_numpy(), w)


def test_value_dependent_shapes_need_concrete_values():
    ints = np.array([1, 2, 2], np.int32)
    with pytest.raises(TypeError, match="unique: size=None needs concrete values"):
        jit(lambda a: xnp.unique(a), compiler="evaluator")(nx.tensor(ints))
    with pytest.raises(TypeError, match="bincount: length=None needs concrete values"):
        jit(lambda a: xnp.bincount(a), compiler="evaluator")(nx.tensor(ints))


def test_statistics_errors():
    with pytest.raises(ValueError, match="quantile: expected method"):
        xnp.quantile([1.0], 0.5, method="weird")
    with pytest.raises(ValueError, match="q must have rank <= 1"):
        xnp.quantile([1.0], [[0.5]])
    with pytest.raises(ValueError, match="searchsorted: a should be 1-dimensional"):
        xnp.searchsorted(np.ones((2, 2)), 1.0)
    with pytest.raises(ValueError, match="searchsorted: expected side"):
        xnp.searchsorted([1.0], 1.0, side="middle")
    with pytest.raises(ValueError, match="searchsorted: expected method"):
        xnp.searchsorted([1.0], 1.0, method="magic")
    with pytest.raises(TypeError, match="bincount: expected x to have an integer type"):
        xnp.bincount([1.5])
    with pytest.raises(ValueError, match="bincount: the shape of weights"):
        xnp.bincount([1, 2], weights=[1.0], length=3)
    with pytest.raises(ValueError, match="fill_value must be specified"):
        xnp.unique(np.zeros(0, np.int32), size=2)
    with pytest.raises(ValueError, match="interp: xp and fp"):
        xnp.interp([1.0], [1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="partition: kth 5 is out of bounds"):
        xnp.partition([1, 2], 5)
    with pytest.raises(ValueError, match="cov: m has more than 2 dimensions"):
        xnp.cov(np.ones((2, 2, 2)))


# ----------------------------------------------------------------------------------------
# linalg
# ----------------------------------------------------------------------------------------
def _norms(m, x, v):
    return (m.linalg.norm(x), m.linalg.norm(v), m.linalg.norm(x, keepdims=True),
            *(m.linalg.norm(v, o) for o in (None, 1, 2, 3, 0, np.inf, -np.inf)),
            *(m.linalg.norm(x, o) for o in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)),
            m.linalg.norm(x, axis=-1), m.linalg.norm(x, 1, axis=0, keepdims=True),
            m.linalg.norm(x, 2, axis=(1, 0)), m.linalg.vector_norm(x, ord=1),
            m.linalg.matrix_norm(x, ord=np.inf))


@same_worker
@pytest.mark.parametrize("path", EAGER_JIT)
def test_linalg(path):
    r = np.random.default_rng(12)
    x = r.standard_normal((4, 3)).astype(np.float32)
    v = r.standard_normal(5).astype(np.float32)
    a = r.standard_normal((2, 3, 3)).astype(np.float32)
    spd = (a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)).astype(np.float32)
    b = r.standard_normal((2, 3, 2)).astype(np.float32)

    def prog(m, x, v, a, spd, b):
        L = m.linalg
        return (_norms(m, x, v), L.cholesky(spd), L.cholesky(spd, upper=True),
                L.eigvalsh(spd), L.eigh(spd).eigenvalues, L.solve(a, b), L.solve(a, b[0, :, 0]),
                L.inv(a), L.det(a),
                tuple(L.slogdet(a)), L.pinv(x), L.matrix_power(a, 3), L.matrix_power(a, -2),
                L.matrix_power(a, 0), L.matrix_rank(x), L.svd(x, compute_uv=False),
                L.svdvals(a), L.lstsq(x, x[:, 0])[0], L.lstsq(x, x[:, :2])[1],
                L.qr(x, mode="r").shape if m is jnp else L.qr(x, mode="r").shape)
    got = run_path(lambda *t: prog(xnp, *t)[:-1], [x, v, a, spd, b], path)
    want = ref("linalg", lambda *t: prog(jnp, *t)[:-1], x, v, a, spd, b)
    for i, (g, w) in enumerate(zip(got, want)):
        for gl, wl in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(w)):
            _close(gl, wl, rtol=2e-4, atol=2e-4, what=f"linalg #{i} on {path}")
    # decompositions whose factors are not unique: reconstruct
    q, rr = xla.qr(x)
    _close((q.to_numpy() @ rr.to_numpy()), x, rtol=1e-4, atol=1e-5)
    u, s, vh = xla.svd(x, full_matrices=False)
    _close(u.to_numpy() * s.to_numpy() @ vh.to_numpy(), x, rtol=1e-4, atol=1e-5)
    w, vv = xla.eigh(spd)
    _close(spd @ vv.to_numpy(), vv.to_numpy() * w.to_numpy()[..., None, :], rtol=1e-4,
           atol=1e-4)
    assert type(xla.qr(x)).__name__ == "QRResult" and xla.svd(x).Vh.shape == (3, 3)


def test_linalg_errors():
    with pytest.raises(ValueError, match="inv: a must be square"):
        xla.inv(np.ones((2, 3)))
    with pytest.raises(ValueError, match="norm: invalid ord"):
        xla.norm(np.ones((2, 2)), ord="bad")
    with pytest.raises(ValueError, match="qr: unsupported mode"):
        xla.qr(np.ones((2, 2)), mode="full")
    with pytest.raises(ValueError, match="norm: improper number of dimensions"):
        xla.norm(np.ones((2, 2, 2)), ord=1)


# ----------------------------------------------------------------------------------------
# Transforms
# ----------------------------------------------------------------------------------------
GRADS = [
    ("logaddexp", lambda m, x: m.sum(m.logaddexp(x, 0.5 * x))),
    ("hypot", lambda m, x: m.sum(m.hypot(x, 1.0 + x * x))),
    ("sinc", lambda m, x: m.sum(m.sinc(x))),
    ("var", lambda m, x: m.var(x, axis=0, ddof=1).sum()),
    ("nanmean", lambda m, x: m.sum(m.nanmean(x, axis=1))),
    ("quantile", lambda m, x: m.sum(m.quantile(x, m.asarray([0.2, 0.7]), axis=1))),
    ("interp", lambda m, x: m.sum(m.interp(x, m.asarray([-1.0, 0.0, 2.0]),
                                            m.asarray([1.0, 3.0, -1.0])))),
    ("cumprod", lambda m, x: m.sum(m.cumprod(x, axis=1))),
    ("norm", lambda m, x: m.linalg.norm(x, "fro") + m.linalg.norm(x[0], 3)),
    ("convolve", lambda m, x: m.sum(m.convolve(x[0], x[1], "same") ** 2)),
    ("det", lambda m, x: m.linalg.det(x[:3, :3])),
    ("trapezoid", lambda m, x: m.trapezoid(x, axis=0).sum()),
]


@pytest.mark.parametrize("name,f", GRADS, ids=[g[0] for g in GRADS])
def test_grad(name, f):
    x = data("float32", (4, 5), 13, special=False)
    got = jit(grad(lambda t: f(xnp, t)), compiler="exla")(nx.tensor(x)).to_numpy()
    want = jax.jit(jax.grad(lambda t: f(jnp, t)))(x)  # one compile, not one per op
    _close(got, want, rtol=1e-4, atol=1e-4, what=name)


#: functions of one or two float arrays whose sweep call below is not theirs to take:
#: a value-dependent size (jnp's too, under jax.jit), vectors only (polynomials; jnp
#: reads a matrix's first axis), boolean conditions only (select, as NumPy's)
_SWEEP_SKIPS = {"unique", "unique_values", "extract", "polyadd", "polyval", "select"}


@pytest.mark.soak
@pytest.mark.parametrize("arity", [1, 2])
def test_every_gradient_of_one_or_two_arrays_like_jax(arity):
    """Every nxpy.numpy function that jax.numpy differentiates when called with one float
    array (in (0.2, 0.9)), or with two (the second in (1.1, 1.9)), has jnp's gradient
    under EXLA: a sweep, so a function's rule cannot silently drift from JAX's (about a
    minute: one compile per function)."""
    r = np.random.default_rng(21)
    xs = [r.uniform(0.2, 0.9, (4, 5)).astype(np.float32),
          r.uniform(1.1, 1.9, (4, 5)).astype(np.float32)]
    names = sorted(n for n in dir(xnp) if not n.startswith("_") and hasattr(jnp, n)
                   and callable(getattr(xnp, n)) and n not in _SWEEP_SKIPS)
    bad, checked = [], 0
    for n in names:
        jf, nf = getattr(jnp, n), getattr(xnp, n)
        args = [jnp.asarray(v) for v in xs[:arity]]
        try:
            y = jf(*args)
            if not (isinstance(y, jax.Array) and jnp.issubdtype(y.dtype, jnp.floating)):
                continue
            w = r.standard_normal(y.shape).astype(np.float32)
            argnums = tuple(range(arity))
            want = jax.grad(lambda *a: jnp.sum(jf(*a) * w), argnums=argnums)(*args)
        except Exception:  # not a function of these arrays in JAX either
            continue
        try:
            got = jit(grad(lambda *a: nx.sum(nf(*a) * nx.tensor(w)), argnums=argnums),
                      compiler="exla")(*map(nx.tensor, xs[:arity]))
            for g, v in zip(got, want):
                np.testing.assert_allclose(g.to_numpy(), np.asarray(v), rtol=2e-4, atol=2e-4)
        except Exception as e:
            bad.append(f"{n}: {type(e).__name__}: {str(e)[:200]}")
        checked += 1
    assert not bad, "\n".join(bad)
    assert checked >= {1: 110, 2: 38}[arity], checked


def test_vmap():
    x = data("float32", (3, 8), 14, special=False)
    s = np.sort(data("float32", (6,), 15, special=False))
    fs = [lambda t: xnp.quantile(t, 0.4), lambda t: xnp.searchsorted(s, t),
          lambda t: xnp.cumsum(t), lambda t: xnp.linalg.norm(t, 3)]
    js = [lambda t: jnp.quantile(t, 0.4), lambda t: jnp.searchsorted(s, t),
          lambda t: jnp.cumsum(t), lambda t: jnp.linalg.norm(t, 3)]
    for f, g in zip(fs, js):
        got = jit(vmap(f), compiler="exla")(nx.tensor(x)).to_numpy()
        _close(got, jax.vmap(g)(x), rtol=1e-5, atol=1e-6)
    # the search over a batch of sorted vectors (a captured tensor of the loop, batched)
    ss = np.sort(x, axis=1)
    got = jit(vmap(lambda a, q: xnp.searchsorted(a, q, side="right")),
              compiler="exla")(nx.tensor(ss), nx.tensor(x[::-1])).to_numpy()
    _close(got, jax.vmap(lambda a, q: jnp.searchsorted(a, q, side="right"))(ss, x[::-1]))


def test_notes_name_public_functions():
    for mod in (mathematics, reductions, statistics, xla):
        for name in mod.NOTES:
            assert name in mod.__all__, (mod.__name__, name)
        for name in mod.__all__:
            assert getattr(mod, name).__doc__, (mod.__name__, name)


def test_searchsorted_special_values():
    """Sort order as JAX's: NaN last, -0.0 equal to 0.0, infinities; every method."""
    a = np.array([-np.inf, -1.0, -0.0, 0.0, 0.0, 2.0, np.inf, np.nan, np.nan], np.float32)
    v = np.array([np.nan, -np.inf, 0.0, -0.0, np.inf, 5.0, -3.0, 2.0], np.float32)
    methods = ("scan", "scan_unrolled", "sort", "compare_all")
    fs = [lambda p, q, side=side, m=m: xnp.searchsorted(p, q, side=side, method=m)
          for side in ("left", "right") for m in methods]
    got = run_path(lambda p, q: tuple(f(p, q) for f in fs), [a, v], "exla")
    want = ref("search-special", lambda p, q: tuple(
        jnp.searchsorted(p, q, side=side, method=m) for side in ("left", "right")
        for m in methods), a, v)
    for i, (g, w) in enumerate(zip(got, want)):
        _close(g, w, what=f"searchsorted #{i}")
    # u32 beyond s32's range (an unsigned compare), small integers, half floats
    big = np.array([0, 5, 2 ** 31 - 1, 2 ** 31, 2 ** 31, 2 ** 32 - 2], np.uint32)
    cases = [(big, np.array([2 ** 31, 2 ** 32 - 1, 1, 2 ** 31 - 1], np.uint32))]
    cases += [(np.sort(data(t, (17,), 16, special=False)), data(t, (9,), 17, special=False))
              for t in ("int8", "uint8", "float16", "bfloat16")]
    for s, q in cases:
        for side in ("left", "right"):
            _close(xnp.searchsorted(s, q, side=side).to_numpy(),
                   jnp.searchsorted(s, q, side=side), what=f"{s.dtype} {side}")


@same_worker
@pytest.mark.parametrize("path", EAGER_JIT)
def test_searchsorted_scan_sizes(path):
    """The bisection's edges: every length from 0 to 9 (1 to 4 levels, odd and even
    halves), a power of two and one below it, a scalar query, ties at both ends."""
    r = np.random.default_rng(18)
    sorted_ = [np.sort(r.integers(-3, 4, n)).astype(np.float32) for n in (*range(10), 15, 16)]
    v = np.arange(-4.0, 4.5, 0.5, dtype=np.float32)

    def prog(m, *a):
        *ss, q = a
        pairs = [(s, q) for s in ss] + [(q, 0.5)]  # the last: a scalar query
        return tuple(m.searchsorted(s, x, side=side, method=meth) for s, x in pairs
                     for side in ("left", "right") for meth in ("scan", "scan_unrolled"))
    got = run_path(lambda *a: prog(xnp, *a), [*sorted_, v], path)
    want = ref("search-sizes", lambda *a: prog(jnp, *a), *sorted_, v)
    assert len(got) == len(want) == 4 * (len(sorted_) + 1)
    for i, (g, w) in enumerate(zip(got, want)):
        _close(g, w, what=f"searchsorted sizes #{i} on {path}")


@same_worker
@pytest.mark.parametrize("path", EAGER_JIT)
def test_nextafter_bits(path):
    """``nextafter`` bit for bit (the float tests' tolerance cannot tell one ulp): zeros of
    both signs, subnormals, the largest float, infinities, NaN; f32, f16, bf16, and ints
    promoted to f32. EXLA emits ``chlo.next_after`` as JAX does: bit for bit, everywhere.
    XLA on CPU reads a subnormal f32/bf16 operand as a zero of its sign (denormals are
    zero); the NumPy kernel (eager, the Evaluator) is C's ``nextafter``, which does not:
    on those paths the pairs with a subnormal operand are left out (not f16's: XLA
    computes f16 in f32, where its subnormals are normal)."""
    ops = []
    for t in ("float32", "float16", "bfloat16"):
        fi = jnp.finfo(t)
        sp = np.array([0.0, -0.0, 1.0, -1.0, float(fi.smallest_subnormal),
                       -float(fi.smallest_subnormal), float(fi.tiny), float(fi.max),
                       math.inf, -math.inf, math.nan], np.float64).astype(jnp.dtype(t))
        ops += list(np.meshgrid(sp, sp))
    ints = np.array([0, 1, -1, 7], np.int32)
    ops += [ints, ints[::-1].copy()]
    got = run_path(lambda *a: tuple(xnp.nextafter(a[i], a[i + 1]) for i in range(0, 8, 2)), ops,
                   path)
    want = ref("nextafter-bits", lambda *a: tuple(
        jnp.nextafter(a[i], a[i + 1]) for i in range(0, 8, 2)), *ops)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype, (path, g.dtype, w.dtype)
        nan = np.isnan(w.astype(np.float32))
        assert np.array_equal(np.isnan(g.astype(np.float32)), nan), (path, w.dtype)
        keep = ~nan
        if path != "exla" and w.dtype != np.float16:
            tiny = float(jnp.finfo(w.dtype).tiny)
            for o in ops[2 * k:2 * k + 2]:
                o = np.abs(o.astype(np.float32))
                keep &= ~((o > 0) & (o < tiny))
        bits = {2: np.uint16, 4: np.uint32}[w.dtype.itemsize]
        assert keep.sum() >= 4, (path, w.dtype)
        np.testing.assert_array_equal(g.view(bits)[keep], w.view(bits)[keep],
                                      err_msg=f"{path} {w.dtype}")
