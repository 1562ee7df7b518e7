"""The sorting family (sort, argsort, top_k, permute_by_key, cumulative_*, median, mode)
against jax.numpy / jax.lax on the NumPy backend, the Evaluator, EXLA and EXLA's eager
backend; Nx's doctests; errors; gradients vs jax.grad, jvp vs jax.jvp; JAX-exported
programs through the importer; sharded inputs under shard_jit."""
import ml_dtypes
import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt
from nxpy.defn import grad, jit
from nxpy.defn.sharding import specs as SH
from nxpy.defn.shard_jit import shard_jit
from nxpy.stablehlo import load

from helpers import CHEAP, COMPILERS, PATHS, check, covering, jvp_matches_jax, run, x64

pjrt.devices()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int8", "uint8", "uint32",
          "int64", "bool"]


def _dt(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def data(shape, dtype, seed=0, special=True):
    """Random values with ties (small integers), and NaN/inf/-0.0 for floats."""
    rng = np.random.default_rng(seed)
    dt = _dt(dtype)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    a = rng.integers(-4 if np.dtype(dt).kind != "u" else 0, 5, shape)
    if np.dtype(dt).kind in "iu":
        return a.astype(dt)
    a = a.astype(np.float64) + rng.choice([0, 0.5], shape)
    a = a.astype(dt)
    if special and a.size >= 6:
        flat = a.reshape(-1)
        flat[:6] = np.array([np.nan, -0.0, np.inf, 0.0, -np.inf, np.nan]).astype(dt)
        rng.shuffle(flat)
    return a


# ----------------------------------------------------------------------------------------
# sort / argsort vs jnp (stable, NaN last, -0.0 == 0.0)
# ----------------------------------------------------------------------------------------
#: NumPy and the Evaluator take every dtype; float32, int32 and bool (the one of its kind)
#: every path; the other dtypes jit with EXLA every other one, in rotation, so that each
#: slice of the suite meets every kind (all of them: make exhaustive)
SORT_EXLA = {"float32", "int32", "bool"} | {t for t, on in covering(
    [t for t in DTYPES if t not in ("float32", "int32", "bool")], (False, True)) if on}


def test_sort_exla_meets_every_kind_of_dtype():
    kinds = {np.dtype(_dt(t)).kind if t != "bfloat16" else "f" for t in SORT_EXLA}
    assert kinds == {"f", "i", "u", "b"} and "bool" in SORT_EXLA


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort_match_jax(dtype):
    a = data((3, 7), dtype)
    combos = [(axis, d) for axis in (0, -1) for d in ("asc", "desc")]
    with x64():  # jitted: one XLA compile, where eager JAX compiles every sort
        want = [np.asarray(w) for w in jax.jit(lambda a: [
            r for axis, d in combos
            for r in (jnp.sort(a, axis=axis, descending=d == "desc", stable=True),
                      jnp.argsort(a, axis=axis, descending=d == "desc", stable=True))])(a)]

    def f(x):  # one program per dtype: every axis and direction
        return tuple(r for axis, d in combos for r in (nx.sort(x, axis=axis, direction=d),
                                                       nx.argsort(x, axis=axis, direction=d)))
    paths = PATHS if dtype in ("float32", "int32") else CHEAP if dtype in SORT_EXLA else \
        ("numpy", "evaluator")
    check(run(f, a, paths=paths), tuple(want), rtol=0, atol=0)


@pytest.mark.parametrize("shape,axis", [((0,), 0), ((2, 0), 1), ((0, 3), 1), ((5,), 0),
                                        ((2, 1, 3), 1)])
def test_sort_shapes(shape, axis):
    a = data(shape, "float32", special=False)
    check(run(lambda x: (nx.sort(x, axis=axis), nx.argsort(x, axis=axis, type="u8")), a,
              paths=CHEAP),
          (np.sort(a, axis=axis), np.argsort(a, axis=axis, kind="stable").astype(np.uint8)),
          rtol=0, atol=0)


def test_sort_names_and_types():
    t = nx.tensor([[3, 1, 7], [2, 5, 4]], names=["x", "y"])
    s = nx.sort(t, axis="y")
    assert s.names == ("x", "y") and str(s.type) == "s32"
    i = nx.argsort(t, axis="y", direction="asc", type="u32")
    assert str(i.type) == "u32" and i.tolist() == [[1, 0, 2], [0, 2, 1]]
    assert nx.argsort(t, axis="x").tolist() == [[1, 0, 1], [0, 1, 0]]


def test_sort_orders_signed_zeros_and_nans_the_same_way_everywhere():
    a = np.array([0.0, -0.0, np.nan, 1.0, -np.nan, -0.0, 0.0], np.float32)
    r = run(lambda x: nx.sort(x), a)
    bits = {k: v.to_numpy().view(np.uint32).tolist() for k, v in r.items()}
    assert len({tuple(v) for v in bits.values()}) == 1, bits
    np.testing.assert_array_equal(r["numpy"].to_numpy(), np.sort(a))  # as values


# ----------------------------------------------------------------------------------------
# Nx's doctests
# ----------------------------------------------------------------------------------------
def test_nx_doctests_sort():
    t = nx.tensor([[[4, 5, 2], [2, 5, 3], [5, 0, 2]], [[1, 9, 8], [2, 1, 3], [2, 1, 4]]],
                  names=["x", "y", "z"])
    assert nx.sort(t, axis="x").tolist() == [[[1, 5, 2], [2, 1, 3], [2, 0, 2]],
                                             [[4, 9, 8], [2, 5, 3], [5, 1, 4]]]
    assert nx.sort(t, axis="y").tolist() == [[[2, 0, 2], [4, 5, 2], [5, 5, 3]],
                                             [[1, 1, 3], [2, 1, 4], [2, 9, 8]]]
    assert nx.sort(t, axis="z").tolist() == [[[2, 4, 5], [2, 3, 5], [0, 2, 5]],
                                             [[1, 8, 9], [1, 2, 3], [1, 2, 4]]]
    assert nx.sort(t, axis="x").names == ("x", "y", "z")
    nan = float("nan")
    f = nx.tensor([nan, float("-inf"), 0.0, float("inf")])
    assert str(nx.sort(f).tolist()) == "[-inf, 0.0, inf, nan]"
    assert str(nx.sort(f, direction="desc").tolist()) == "[nan, inf, 0.0, -inf]"


def test_nx_doctests_argsort():
    assert nx.argsort(nx.tensor([16, 23, 42, 4, 8, 15])).tolist() == [3, 4, 5, 0, 1, 2]
    t = nx.tensor([[[4, 5, 2], [2, 5, 3], [5, 0, 2]], [[1, 9, 8], [2, 1, 3], [2, 1, 4]]],
                  names=["x", "y", "z"])
    assert nx.argsort(t, axis="x", stable=True).tolist() == [
        [[1, 0, 0], [0, 1, 0], [1, 0, 0]], [[0, 1, 1], [1, 0, 1], [0, 1, 1]]]
    assert nx.argsort(t, axis="y", stable=True).tolist() == [
        [[1, 2, 0], [0, 0, 2], [2, 1, 1]], [[0, 1, 1], [1, 2, 2], [2, 0, 0]]]
    f = nx.tensor([float("nan"), float("-inf"), float("inf"), 0.0])
    assert nx.argsort(f).tolist() == [1, 3, 2, 0]
    assert nx.argsort(f, direction="desc").tolist() == [0, 2, 3, 1]
    for comp in COMPILERS:
        assert jit(lambda x: nx.argsort(x, direction="desc"),
                   compiler=comp)(f).tolist() == [0, 2, 3, 1]


def test_nx_doctests_top_k():
    v, i = nx.top_k(nx.tensor([1, 2, 3, 4, 5]), k=2)
    assert (v.tolist(), str(v.type), i.tolist(), str(i.type)) == ([5, 4], "s32", [4, 3], "s32")
    v, i = nx.top_k(nx.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    assert (v.tolist(), i.tolist(), v.shape) == ([[3.0], [6.0]], [[2], [2]], (2, 1))
    f = nx.tensor([float("nan"), float("-inf"), float("inf"), 0.0])
    for r in (nx.top_k(f, k=3), jit(lambda x: nx.top_k(x, k=3), compiler="exla")(f)):
        assert str(r[0].tolist()) == "[nan, inf, 0.0]" and r[1].tolist() == [0, 2, 3]


def test_nx_doctests_cumulative():
    i33 = nx.iota((3, 3))
    assert nx.cumulative_sum(nx.tensor([1, 2, 3, 4])).tolist() == [1, 3, 6, 10]
    assert nx.cumulative_sum(i33, axis=0).tolist() == [[0, 1, 2], [3, 5, 7], [9, 12, 15]]
    assert nx.cumulative_sum(i33, axis=1).tolist() == [[0, 1, 3], [3, 7, 12], [6, 13, 21]]
    assert nx.cumulative_sum(i33, axis=0, reverse=True).tolist() == \
        [[9, 12, 15], [9, 11, 13], [6, 7, 8]]
    assert nx.cumulative_sum(i33, axis=1, reverse=True).tolist() == \
        [[3, 3, 2], [12, 9, 5], [21, 15, 8]]
    assert nx.cumulative_product(nx.tensor([1, 2, 3, 4])).tolist() == [1, 2, 6, 24]
    assert nx.cumulative_product(i33, axis=0).tolist() == [[0, 1, 2], [0, 4, 10], [0, 28, 80]]
    assert nx.cumulative_product(i33, axis=1).tolist() == [[0, 0, 0], [3, 12, 60], [6, 42, 336]]
    assert nx.cumulative_product(i33, axis=0, reverse=True).tolist() == \
        [[0, 28, 80], [18, 28, 40], [6, 7, 8]]
    assert nx.cumulative_product(i33, axis=1, reverse=True).tolist() == \
        [[0, 2, 2], [60, 20, 5], [336, 56, 8]]
    m = nx.tensor([[2, 3, 1], [1, 3, 2], [2, 1, 3]])
    assert nx.cumulative_min(nx.tensor([3, 4, 2, 1])).tolist() == [3, 3, 2, 1]
    assert nx.cumulative_min(m, axis=0).tolist() == [[2, 3, 1], [1, 3, 1], [1, 1, 1]]
    assert nx.cumulative_min(m, axis=1).tolist() == [[2, 2, 1], [1, 1, 1], [2, 1, 1]]
    assert nx.cumulative_min(m, axis=0, reverse=True).tolist() == [[1, 1, 1], [1, 1, 2], [2, 1, 3]]
    assert nx.cumulative_min(m, axis=1, reverse=True).tolist() == [[1, 1, 1], [1, 2, 2], [1, 1, 3]]
    assert nx.cumulative_max(nx.tensor([3, 4, 2, 1])).tolist() == [3, 4, 4, 4]
    assert nx.cumulative_max(m, axis=0).tolist() == [[2, 3, 1], [2, 3, 2], [2, 3, 3]]
    assert nx.cumulative_max(m, axis=1).tolist() == [[2, 3, 3], [1, 3, 3], [2, 2, 3]]
    assert nx.cumulative_max(m, axis=0, reverse=True).tolist() == [[2, 3, 3], [2, 3, 3], [2, 1, 3]]
    assert nx.cumulative_max(m, axis=1, reverse=True).tolist() == [[3, 3, 1], [3, 3, 2], [3, 3, 3]]


def test_nx_doctests_median():
    r = nx.median(nx.tensor(42))
    assert (r.tolist(), str(r.type)) == (42, "s32")
    r = nx.median(nx.tensor([1, 2, 3]))
    assert (r.tolist(), str(r.type)) == (2, "s32")
    r = nx.median(nx.tensor([1, 2]))
    assert (r.tolist(), str(r.type)) == (1.5, "f32")
    assert nx.median(nx.iota((2, 3, 3))).tolist() == 8.5
    t = nx.tensor([[1, 2, 3], [4, 5, 6]], names=["x", "y"])
    r = nx.median(t, axis=0)
    assert (r.tolist(), str(r.type), r.names) == ([2.5, 3.5, 4.5], "f32", ("y",))
    r = nx.median(t, axis="y")
    assert (r.tolist(), str(r.type), r.names) == ([2, 5], "s32", ("x",))
    r = nx.median(nx.iota((2, 2, 3), names=["x", "y", "z"]), axis="x")
    assert r.tolist() == [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]] and r.names == ("y", "z")
    t = nx.tensor([[[1, 2, 2], [3, 4, 2]], [[4, 5, 2], [7, 9, 2]]])
    assert nx.median(t, axis=-1).tolist() == [[2, 3], [4, 7]]
    r = nx.median(t, axis=-1, keep_axis=True)
    assert r.shape == (2, 2, 1) and r.tolist() == [[[2], [3]], [[4], [7]]]


def test_nx_doctests_mode():
    assert nx.mode(nx.tensor(42)).tolist() == 42
    assert nx.mode(nx.tensor([[1]])).tolist() == 1
    assert nx.mode(nx.tensor([1, 2, 2, 3, 5])).tolist() == 2
    t = nx.tensor([[1, 2, 2, 3, 5], [1, 1, 76, 8, 1]])
    assert nx.mode(t).tolist() == 1
    assert nx.mode(t, axis=0).tolist() == [1, 1, 2, 3, 1]
    assert nx.mode(t, axis=1).tolist() == [2, 1]
    r = nx.mode(nx.tensor([[[1]]]), axis=1)
    assert r.shape == (1, 1) and r.tolist() == [[1]]
    r = nx.mode(t, axis=1, keep_axis=True)
    assert r.shape == (2, 1) and r.tolist() == [[2], [1]]


# ----------------------------------------------------------------------------------------
# top_k, cumulative, median, mode vs JAX / NumPy on every path
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int32", "uint8", "bool"])
def test_top_k_matches_lax(dtype):
    a = data((3, 9), dtype)
    with x64():
        # lax.top_k orders -0.0 below 0.0 and -NaN last; nxpy (Nx) does not: compare
        # against lax.top_k of the canonicalized input
        c = a
        if np.dtype(_dt(dtype)).kind not in "iub":
            c = np.where(a == 0, np.zeros_like(a), a)
            c = np.where(np.isnan(a), np.full_like(a, np.nan), c)
        want = tuple(np.asarray(w) for w in lax.top_k(c, 4)) if dtype != "bool" else \
            tuple(np.asarray(w) for w in lax.top_k(c.astype(np.uint8), 4))
    if dtype == "bool":
        want = (want[0].astype(bool), want[1])
    check(run(lambda x: nx.top_k(x, k=4), a, paths=PATHS if dtype == "float32" else CHEAP), want,
          rtol=0, atol=0)


_CUM = {"cumulative_sum": lax.cumsum, "cumulative_product": lax.cumprod,
        "cumulative_max": lax.cummax, "cumulative_min": lax.cummin}


CUM_DTYPES = ["float32", "float64", "float16", "int32", "uint8"]
#: the (op, dtype) pairs also jit with EXLA (NumPy and the Evaluator take every one): every
#: other one, in rotation over an odd number of dtypes per op, so every op and every dtype
#: meets EXLA (checked below); all: make exhaustive
CUM_EXLA = {p for p, on in covering([(op, t) for op in _CUM for t in CUM_DTYPES], (True, False))
            if on}


def test_cumulative_exla_meets_every_op_and_dtype():
    assert {op for op, _ in CUM_EXLA} == set(_CUM) and {t for _, t in CUM_EXLA} == set(CUM_DTYPES)


@pytest.mark.parametrize("op", list(_CUM))
@pytest.mark.parametrize("dtype", CUM_DTYPES)
def test_cumulative_match_lax(op, dtype):
    combos = [((3, 40), 1, False), ((40, 3), 0, True), ((2, 5), -1, True)]
    args = []
    for shape, axis, rev in combos:
        a = data(shape, dtype, special=op in ("cumulative_max", "cumulative_min"))
        if op == "cumulative_product" and np.dtype(_dt(dtype)).kind == "f":
            a = (np.random.default_rng(1).uniform(0.6, 1.6, shape)).astype(_dt(dtype))
        args.append(a)
    with x64():  # jitted: one XLA compile for the three
        want = [np.asarray(w) for w in jax.jit(lambda *xs: [
            _CUM[op](x, axis=axis % x.ndim, reverse=rev)
            for x, (_, axis, rev) in zip(xs, combos)])(*args)]
    exact = np.dtype(_dt(dtype)).kind in "iub" or op in ("cumulative_max", "cumulative_min")
    rtol = {"float16": 2e-2, "bfloat16": 5e-2}.get(dtype, 1e-5)

    def f(*xs):  # one program: the three shapes (the long axes scan, the short one windows)
        return tuple(getattr(nx, op)(x, axis=axis, reverse=rev)
                     for x, (_, axis, rev) in zip(xs, combos))
    paths = CHEAP if (op, dtype) in CUM_EXLA else ("numpy", "evaluator")
    check(run(f, *args, paths=paths), tuple(want), rtol=0 if exact else rtol,
          atol=0 if exact else rtol)


def test_cumulative_types_names_and_empty():
    p = nx.tensor([True, False, True])
    r = nx.cumulative_sum(p)
    assert str(r.type) == "u8" and r.tolist() == [1, 1, 2]
    assert str(nx.cumulative_max(p).type) == "pred"
    assert jit(lambda x: nx.cumulative_sum(x), compiler="exla")(p).tolist() == [1, 1, 2]
    assert jit(lambda x: nx.cumulative_min(x), compiler="exla")(p).tolist() == [True, False, False]
    t = nx.iota((2, 3), names=["a", "b"], type="s8")
    r = nx.cumulative_sum(t, axis="b")
    assert r.names == ("a", "b") and str(r.type) == "s8"
    c = nx.tensor([1 + 1j, 2 - 1j])
    for comp in COMPILERS:
        z = jit(lambda x: nx.cumulative_product(x), compiler=comp)(c)
        np.testing.assert_allclose(z.to_numpy(), np.cumprod(c.to_numpy()), rtol=1e-6)
        e = jit(lambda x: nx.cumulative_sum(x, axis=1), compiler=comp)(nx.iota((2, 0)))
        assert e.shape == (2, 0)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_median_and_mode_match_numpy(dtype):
    a = data((4, 6), dtype, special=False)
    fs = lambda x: (nx.median(x), nx.median(x, axis=1), nx.median(x, axis=0, keep_axis=True),  # noqa: E731
                    nx.mode(x), nx.mode(x, axis=0), nx.mode(x, axis=1, keep_axis=True))

    def np_mode(v):
        vals, counts = np.unique(v, return_counts=True)   # sorted: the first max is the smallest
        return vals[np.argmax(counts)]
    med_all = np.median(a.astype(np.float64))
    want = (np.asarray(med_all),
            np.median(a, axis=1),  # 6 elements: mean of the middle two
            np.sort(a, axis=0)[1:3].astype(np.float64).mean(axis=0, keepdims=True),
            np.asarray(np_mode(a)), np.array([np_mode(c) for c in a.T]),
            np.array([[np_mode(r)] for r in a]))
    check(run(fs, a, paths=CHEAP), want, rtol=1e-5, atol=1e-5)


def test_mode_ties_and_nans():
    assert nx.mode(nx.tensor([3, 1, 3, 1, 2])).tolist() == 1
    r = nx.mode(nx.tensor([float("nan"), float("nan"), 1.0]))
    assert r.tolist() == 1.0  # NaNs never equal: each counts once
    for comp in COMPILERS:
        assert jit(lambda x: nx.mode(x), compiler=comp)(nx.tensor([-0.0, 0.0, 2.0])).tolist() == 0.0


# ----------------------------------------------------------------------------------------
# Errors (before anything reaches XLA)
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,exc,msg", [
    (lambda: nx.sort(nx.tensor([1, 2]), direction="up"), ValueError, "unknown value for direction"),
    (lambda: nx.sort(nx.tensor(1)), ValueError, "given axis (0) invalid for shape with rank 0"),
    (lambda: nx.sort(nx.tensor([1, 2]), axis=1), ValueError, "given axis (1) invalid"),
    (lambda: nx.sort(nx.tensor([1j])), TypeError, "complex types are not supported"),
    (lambda: nx.sort(nx.tensor([1, 2]), stable=1), TypeError, "stable to be True or False"),
    (lambda: nx.argsort(nx.tensor([1.0]), type="f32"), TypeError, "integer type"),
    (lambda: nx.top_k(nx.tensor([1, 2, 3, 4, 5]), k=6), ValueError,
     "top_k input last axis size must be greater than or equal to k, got size=5 and k=6"),
    (lambda: nx.top_k(nx.tensor(1), k=1), ValueError, "top_k input must have at least rank 1"),
    (lambda: nx.top_k(nx.tensor([1, 2]), k=0), ValueError, "at least 1"),
    (lambda: nx.cumulative_max(nx.tensor([1j])), TypeError, "real (non-complex)"),
    (lambda: nx.cumulative_sum(nx.tensor([1]), axis="x"), ValueError, "not found in names"),
    (lambda: nx.cumulative_sum(nx.tensor([1]), reverse=None), TypeError, "reverse"),
    (lambda: nx.median(nx.tensor([])), ValueError, "empty"),
    (lambda: nx.mode(nx.iota((2, 0)), axis=1), ValueError, "size 0"),
    (lambda: nx.permute_by_key(nx.tensor([1, 2]), nx.tensor([1.0])), ValueError, "same shape"),
])
def test_errors(call, exc, msg, monkeypatch):
    monkeypatch.setattr(pjrt, "compile", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    with pytest.raises(exc, match=None) as e:
        call()
    assert msg in str(e.value)


# ----------------------------------------------------------------------------------------
# Gradients vs jax.grad
# ----------------------------------------------------------------------------------------
W = np.random.default_rng(3).normal(size=(3, 8)).astype(np.float32)


def _grad_pair(nxf, jf):
    w = nx.tensor(W)
    return (lambda x: nx.sum(nxf(x) * w)), (lambda x: jnp.sum(jf(x) * W))


_TIES = np.array([[1, 3, 3, 0, -2, 3, 1, 0], [0, 0, 0, 0, 1, 1, 2, 2],
                  [5, 4, 3, 2, 1, 0, -1, -2]], np.float32) + 0.0
_GRADS = {
    "sort": (lambda x: nx.sort(x, axis=1), lambda x: jnp.sort(x, axis=1), _TIES),
    # jnp.sort(descending=True) reverses an ascending sort (ties then go last-index first);
    # Nx's descending sort is stable, as jnp.argsort(descending=True) is
    "sort_desc_axis0": (lambda x: nx.sort(x, axis=0, direction="desc"),
                        lambda x: jnp.take_along_axis(
                            x, jnp.argsort(x, axis=0, descending=True, stable=True), axis=0),
                        _TIES),
    "top_k": (lambda x: nx.pad(nx.top_k(x, k=3)[0], 0.0, [(0, 0, 0), (0, 5, 0)]),
              lambda x: jnp.pad(lax.top_k(x, 3)[0], ((0, 0), (0, 5))), _TIES),
    "cumsum": (lambda x: nx.cumulative_sum(x, axis=1), lambda x: jnp.cumsum(x, axis=1), None),
    "cumsum_rev0": (lambda x: nx.cumulative_sum(x, axis=0, reverse=True),
                    lambda x: lax.cumsum(x, axis=0, reverse=True), None),
    "cumprod": (lambda x: nx.cumulative_product(x, axis=1),
                lambda x: jnp.cumprod(x, axis=1), _TIES / 2),
    "cumprod_rev": (lambda x: nx.cumulative_product(x, axis=1, reverse=True),
                    lambda x: lax.cumprod(x, axis=1, reverse=True), None),
    "cummax": (lambda x: nx.cumulative_max(x, axis=1), lambda x: lax.cummax(x, axis=1), _TIES),
    "cummin_rev": (lambda x: nx.cumulative_min(x, axis=1, reverse=True),
                   lambda x: lax.cummin(x, axis=1, reverse=True), _TIES),
    "cummax_axis0": (lambda x: nx.cumulative_max(x, axis=0), lambda x: lax.cummax(x, axis=0), None),
    "median": (lambda x: nx.broadcast(nx.median(x, axis=1, keep_axis=True), (3, 8)),
               lambda x: jnp.broadcast_to(jnp.median(x, axis=1, keepdims=True), (3, 8)), None),
}


def _grad_case(name):
    """(nxpy loss, JAX loss, input) of the case ``name``."""
    nxf, jf, x0 = _GRADS[name]
    x0 = np.random.default_rng(7).uniform(-2, 2, (3, 8)).astype(np.float32) if x0 is None else x0
    return (*_grad_pair(nxf, jf), x0)


#: the cases whose gradient also compiles with EXLA (the Evaluator takes every one): every
#: other one, in rotation (all: make exhaustive)
GRAD_EXLA = {n for n, on in covering(_GRADS, (True, False)) if on}


@pytest.mark.parametrize("name", list(_GRADS))
def test_grad_matches_jax(name):
    f, g, x0 = _grad_case(name)
    want = np.asarray(jax.jit(jax.grad(g))(x0))
    x = nx.tensor(x0)
    for comp in COMPILERS if name in GRAD_EXLA else ("evaluator",):
        got = jit(grad(f), compiler=comp)(x).to_numpy()
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5, err_msg=f"{name} {comp}")


# each case on one compiler, in rotation (both: make exhaustive)
@pytest.mark.parametrize("name,path", [pytest.param(n, p, id=f"{n}-{p}")
                                       for n, p in covering(_GRADS, COMPILERS)])
def test_jvp_matches_jax(name, path):
    f, g, x0 = _grad_case(name)
    jvp_matches_jax(f, g, (x0,), path, 2e-5)


def test_argsort_is_not_differentiable():
    r = grad(lambda x: nx.sum(nx.as_type(nx.argsort(x), "f32") * x))(nx.tensor([3.0, 1.0]))
    assert r.tolist() == [1.0, 0.0]


def test_second_order_through_sort():
    f = lambda x: nx.sum(nx.sort(x) * nx.tensor([1.0, 2.0, 3.0]) * x)  # noqa: E731
    g = jit(grad(lambda x: nx.sum(grad(f)(x) * x)))(nx.tensor([2.0, -1.0, 0.5]))
    jf = lambda y: jnp.sum(jnp.sort(y) * jnp.array([1.0, 2.0, 3.0]) * y)  # noqa: E731
    jg = jax.grad(lambda x: jnp.sum(jax.grad(jf)(x) * x))
    np.testing.assert_allclose(g.to_numpy(), np.asarray(jg(jnp.array([2.0, -1.0, 0.5]))), rtol=1e-6)


# ----------------------------------------------------------------------------------------
# The importer: programs exported by JAX
# ----------------------------------------------------------------------------------------
_A = data((2, 9), "float32")
_AI = data((2, 9), "int32")
_JAX_PROGRAMS = {
    "jnp.sort": (lambda x: jnp.sort(x, axis=-1), _A),
    "jnp.sort desc": (lambda x: jnp.sort(x, axis=0, descending=True), _A),
    "jnp.argsort": (lambda x: jnp.argsort(x, axis=-1), _A),
    "jnp.argsort desc": (lambda x: jnp.argsort(x, axis=-1, descending=True), _A),
    "jnp.argsort int": (lambda x: jnp.argsort(x, axis=0), _AI),
    "lax.sort 3 operands": (lambda x: lax.sort((x, x * 2, -x), dimension=1, num_keys=1), _A),
    "lax.sort int keys": (lambda x: lax.sort((x, x * 3), dimension=0, num_keys=1), _AI),
    "lax.top_k": (lambda x: lax.top_k(x, 3), _AI),
    "jnp.cumsum": (lambda x: jnp.cumsum(x, axis=1), _AI),
    "jnp.cumprod": (lambda x: jnp.cumprod(x, axis=0), _AI),
    "lax.cummax rev": (lambda x: lax.cummax(x, axis=1, reverse=True), _A),
    "lax.cummin": (lambda x: lax.cummin(x, axis=1), _AI),
    "lax.cumsum int8": (lambda x: lax.cumsum(x.astype(jnp.int8), axis=1), _AI),
    "window_sum (not cumulative)": (lambda x: lax.reduce_window(x, 0, lax.add, (1, 2), (1, 1),
                                                                "VALID"), _AI),
}


@pytest.mark.parametrize("name", list(_JAX_PROGRAMS))
def test_jax_exported_programs_load(name):
    f, a = _JAX_PROGRAMS[name]
    prog = load(jax.jit(f).lower(a).as_text())
    want = f(a)
    want = [np.asarray(w) for w in (want if isinstance(want, (tuple, list)) else [want])]
    for got in (prog(nx.tensor(a)), jit(prog, compiler="exla")(nx.tensor(a))):
        got = got if isinstance(got, (tuple, list)) else [got]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.to_numpy(), w)


def test_importer_rejects_other_comparators():
    text = jax.jit(lambda x, y: lax.sort((x, y), dimension=0,
                                         num_keys=2)).lower(_AI[0], _AI[1]).as_text()
    with pytest.raises(NotImplementedError, match="comparator"):
        load(text)(nx.tensor(_AI[0]), nx.tensor(_AI[1]))


# ----------------------------------------------------------------------------------------
# Sharding: along the sharded axis, the unsharded result
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_sharded_sort_and_cumsum(compiler):
    mesh = nx.Mesh("m", (4,))
    a = data((8, 3), "float32", special=False)
    t = nx.tensor(a)
    spec = {0: [0]}
    args = [list(p) for p in zip(SH.shard(t, mesh, spec))]

    def f(x):
        return (nx.sort(x, axis=0), nx.argsort(x, axis=0, direction="desc"),
                nx.cumulative_sum(x, axis=0), nx.top_k(nx.transpose(x), k=2)[0])
    res = shard_jit(f, mesh, input_shardings=[spec], compiler=compiler)(args)
    want = (np.sort(a, axis=0), np.argsort(-a, axis=0, kind="stable"), np.cumsum(a, axis=0),
            -np.sort(-a.T, axis=1)[:, :2])
    for dev in res:
        for got, w in zip(dev, want):
            np.testing.assert_allclose(got.to_numpy(), w, rtol=1e-6)
