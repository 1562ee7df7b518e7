"""The NumPy backend's results on every CPU (docs/guarantees.md, "Results on every CPU").

NumPy picks SIMD kernels by the CPU at run time, and they round differently; the NumPy
backend is the reference semantics, so its results must not depend on them:

* f32, f16, bf16 and c64 transcendental functions are correctly rounded (computed in
  f64/c128 and rounded once; f16 and bf16 through f32, their compute type): checked
  element by element against Python's ``math`` and ``cmath`` (the C library, scalar, an
  implementation independent of NumPy's SIMD kernels), away from the rare inputs whose
  exact value lies within a hair of a rounding midpoint;
* f64 results are within 4 ulps of the C library's (NumPy's AVX-512 kernels are within 3
  here; its baseline kernels are the C library's);
* every float op, reduction, ``dot``, ``conv``, window and transform of the backend gives
  the same bits (f64: within the bound above) in a child process with every one of
  NumPy's SIMD extensions switched off (``NPY_DISABLE_CPU_FEATURES``); ``make cpu`` runs
  the whole suite so, with XLA's and OpenBLAS's kernels capped too.
"""
import cmath
import math
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import nxpy as nx
from nxpy.backends.numpy import libm
from nxpy.ops import BINARY, UNARY

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import cpu_settings

HERE = Path(__file__).resolve().parent
BF16 = np.dtype(ml_dtypes.bfloat16)
NARROW = {"f32": np.float32, "f16": np.float16, "bf16": BF16}

# nxpy op → (the C library's function, the domain its inputs are drawn from)
ELEMENTARY = {
    "exp": (math.exp, (-110, 110)), "expm1": (math.expm1, (-20, 100)),
    "log": (math.log, (1e-30, 1e30)), "log1p": (math.log1p, (-0.999, 1e6)),
    "sin": (math.sin, (-50, 50)), "cos": (math.cos, (-50, 50)), "tan": (math.tan, (-50, 50)),
    "asin": (math.asin, (-1, 1)), "acos": (math.acos, (-1, 1)), "atan": (math.atan, (-1e4, 1e4)),
    "sinh": (math.sinh, (-100, 100)), "cosh": (math.cosh, (-100, 100)),
    "tanh": (math.tanh, (-12, 12)), "asinh": (math.asinh, (-1e6, 1e6)),
    "acosh": (math.acosh, (1, 1e6)), "atanh": (math.atanh, (-0.9999, 0.9999)),
    "cbrt": (math.cbrt, (-1e6, 1e6)), "sigmoid": (lambda v: 1 / (1 + math.exp(-v)), (-80, 80)),
}
BINARY_ELEMENTARY = {"atan2": (math.atan2, (-100, 100), (-100, 100)),
                     "pow": (math.pow, (1e-3, 30), (-12, 12))}
COMPLEX = {"exp": cmath.exp, "log": cmath.log, "sin": cmath.sin, "cos": cmath.cos,
           "tan": cmath.tan, "tanh": cmath.tanh, "sqrt": cmath.sqrt}
F64_ULPS = 4  # f64 against the C library (docs/guarantees.md)


def _grid(lo, hi, n=3000, seed=0):
    """``n`` values spread over ``[lo, hi]``: uniform, and log-spaced where the range spans
    decades, with the small integers and halves inside it."""
    rng = np.random.default_rng(seed)
    parts = [rng.uniform(lo, hi, n)]
    if lo >= 0 and hi / max(lo, 1e-300) > 1e3:
        parts.append(np.exp(rng.uniform(math.log(max(lo, 1e-30)), math.log(hi), n)))
    elif lo < 0 < hi and hi > 1e3:
        parts.append(np.sign(rng.uniform(-1, 1, n)) * np.exp(rng.uniform(-20, math.log(hi), n)))
    parts.append(np.arange(math.ceil(lo * 2), math.floor(min(hi, lo + 100) * 2) + 1) / 2)
    return np.concatenate(parts)


def _c_library(f, xs):
    """``f`` of each f64 value (NaN where it is undefined, ±inf where it overflows)."""
    def one(*v):
        try:
            return f(*v)
        except ValueError:
            return math.nan
        except OverflowError:
            return math.inf
    return np.array([one(*v) for v in zip(*xs)], np.float64)


def _far_from_midpoints(exact, dtype=np.float32, margin=2.0 ** -40):
    """Where ``exact`` (f64) is farther than ``margin`` (relative) from every midpoint
    between two f32 values: there any f64 within a few ulps rounds to the same f32."""
    with np.errstate(all="ignore"):
        r = exact.astype(np.float32)
        toward = np.nextafter(r, np.where(exact > r, np.float32(np.inf), -np.float32(np.inf)))
        mid = (r.astype(np.float64) + toward.astype(np.float64)) / 2
        ok = np.abs(exact - mid) > margin * np.abs(exact)
    return ok | ~np.isfinite(exact) | (exact == r) | ~np.isfinite(mid)


def _rounded(exact, t):
    """The backend's rounding of an f64 value to ``t``: once to f32, then to ``t``."""
    with np.errstate(all="ignore"):
        return exact.astype(np.float32).astype(NARROW[t])


def _canonical(a):
    """``a`` with every NaN the same NaN (its sign and payload are not part of a result)."""
    a = np.asarray(a)
    if a.dtype.kind == "c":
        out = np.empty_like(a)
        out.real, out.imag = _canonical(a.real), _canonical(a.imag)
        return out
    if a.dtype.kind in "fV" or a.dtype == BF16:
        wide = a.astype(np.float64)
        return np.where(np.isnan(wide), np.nan, wide).astype(a.dtype)
    return a


def _bits_equal(got, want, where):
    got, want = _canonical(got), _canonical(want)
    bad = ~((got == want) | (np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))))
    bad |= np.signbit(got.astype(np.float64)) != np.signbit(want.astype(np.float64))
    bad &= ~np.isnan(want.astype(np.float64))
    assert not bad.any(), (f"{where}: {int(bad.sum())} of {bad.size} differ, e.g. at "
                           f"{np.flatnonzero(bad)[:3].tolist()}: {got[bad][:3].tolist()} "
                           f"where the correctly rounded value is {want[bad][:3].tolist()}")


@pytest.mark.parametrize("t", list(NARROW))
@pytest.mark.parametrize("op", list(ELEMENTARY))
def test_elementary_functions_are_correctly_rounded(op, t):
    f, (lo, hi) = ELEMENTARY[op]
    with np.errstate(over="ignore"):  # beyond f16: inf, a value like any other
        x = _grid(lo, hi).astype(NARROW[t])
    exact = _c_library(f, [x.astype(np.float64)])
    keep = _far_from_midpoints(exact)
    got = getattr(nx, op)(nx.tensor(x, type=t)).to_numpy()
    _bits_equal(got[keep], _rounded(exact, t)[keep], f"{op} {t}")
    assert keep.mean() > 0.95, f"{op} {t}: too few inputs away from a midpoint"


@pytest.mark.parametrize("t", list(NARROW))
@pytest.mark.parametrize("op", list(BINARY_ELEMENTARY))
def test_binary_elementary_functions_are_correctly_rounded(op, t):
    f, (alo, ahi), (blo, bhi) = BINARY_ELEMENTARY[op]
    a = _grid(alo, ahi, seed=1).astype(NARROW[t])
    b = _grid(blo, bhi, seed=2)[:a.size].astype(NARROW[t])
    a = a[:b.size]
    exact = _c_library(f, [a.astype(np.float64), b.astype(np.float64)])
    keep = _far_from_midpoints(exact)
    got = getattr(nx, op)(nx.tensor(a, type=t), nx.tensor(b, type=t)).to_numpy()
    _bits_equal(got[keep], _rounded(exact, t)[keep], f"{op} {t}")


@pytest.mark.parametrize("op", list(COMPLEX))
def test_complex64_functions_are_correctly_rounded(op):
    rng = np.random.default_rng(4)
    z = (rng.uniform(-8, 8, 2000) + 1j * rng.uniform(-8, 8, 2000)).astype(np.complex64)
    exact = np.array([COMPLEX[op](complex(v)) for v in z])
    keep = _far_from_midpoints(exact.real) & _far_from_midpoints(exact.imag)
    got = getattr(nx, op)(nx.tensor(z)).to_numpy()
    with np.errstate(all="ignore"):
        want = exact.astype(np.complex64)
    _bits_equal(got.real[keep], want.real[keep], f"{op} c64 (real part)")
    _bits_equal(got.imag[keep], want.imag[keep], f"{op} c64 (imaginary part)")


def _ulps64(a, b):
    ia, ib = (np.asarray(v, np.float64).view(np.int64) for v in (a, b))
    ia = np.where(ia < 0, np.int64(-2 ** 63) - ia, ia)
    ib = np.where(ib < 0, np.int64(-2 ** 63) - ib, ib)
    return np.abs(ia - ib)


@pytest.mark.parametrize("op", list(ELEMENTARY) + list(BINARY_ELEMENTARY))
def test_f64_within_four_ulps_of_the_c_library(op):
    if op in ELEMENTARY:
        f, (lo, hi) = ELEMENTARY[op]
        xs = [_grid(lo, hi, seed=5)]
    else:
        f, (alo, ahi), (blo, bhi) = BINARY_ELEMENTARY[op]
        xs = [_grid(alo, ahi, seed=6), _grid(blo, bhi, seed=7)]
        n = min(len(x) for x in xs)
        xs = [x[:n] for x in xs]
    want = _c_library(f, xs)
    got = getattr(nx, op)(*[nx.tensor(x, type="f64") for x in xs]).to_numpy()
    finite = np.isfinite(want) & (np.abs(want) < 1e300)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=op)
    worst = int(_ulps64(got[finite], want[finite]).max(initial=0))
    assert worst <= F64_ULPS, f"{op} f64: {worst} ulps from the C library"


def test_libm_covers_the_backends_transcendental_kernels():
    """Every NumPy function the backend's elementwise table evaluates in f32 that is not
    exactly rounded by IEEE 754 goes through libm (a new entry of NumPy's SIMD kind must)."""
    from nxpy.backends.numpy import base
    ieee = {np.sqrt, np.negative, np.abs, np.add, np.subtract, np.multiply, np.divide,
            np.minimum, np.maximum, np.nextafter, np.equal, np.not_equal, np.less,
            np.less_equal, np.greater, np.greater_equal, np.logical_and, np.logical_or,
            np.logical_xor, np.sign}
    simd = [name for name, f in {**base.UNARY_NP, **base.BINARY_NP}.items()
            if isinstance(f, np.ufunc) and f not in ieee]
    assert simd == [], f"NumPy ufuncs outside libm (CPU-dependent in f32): {simd}"
    assert set(libm.FUNCTIONS) >= {"exp", "log", "sin", "cbrt", "arctan2", "power"}


# ----------------------------------------------------------------------------------------
# The same bits with NumPy's SIMD kernels switched off
# ----------------------------------------------------------------------------------------
_TYPES = ("f16", "bf16", "f32", "f64")
#: f64 results through compositions of f64 kernels: their own bound (digamma: the
#: recurrence and the reflection's tan amplify an ulp of each term)
F64_ULPS_OF = {"digamma": 16, "polygamma": 16, "zeta": 8}


def results():
    """Every float op of the NumPy backend on fixed inputs: ``{name: array}``."""
    rng = np.random.default_rng(20261207)
    base = np.concatenate([rng.standard_normal(400) * s for s in (0.01, 1, 10, 300)] +
                          [rng.uniform(-1, 1, 400), rng.uniform(0, 30, 400),
                           [0.0, -0.0, 1.0, -1.0, 0.5, 27.0, 8.0, np.inf, -np.inf, np.nan]])
    other = rng.permutation(base)
    out = {}

    def put(name, f):
        try:
            r = f()
        except (TypeError, ValueError):  # an op that does not take this type
            return
        for i, leaf in enumerate(r if isinstance(r, (tuple, list)) else [r]):
            out[f"{name}#{i}"] = _canonical(leaf.to_numpy())
    for t in _TYPES:
        x, y = nx.tensor(base, type=t), nx.tensor(other, type=t)
        for op in sorted(UNARY):
            put(f"{op}/{t}", lambda: getattr(nx, op)(x))
        for op in sorted(BINARY):
            put(f"{op}/{t}", lambda: getattr(nx, op)(x, y))
        m = nx.tensor(rng.standard_normal((24, 40)), type=t)
        k = nx.tensor(rng.standard_normal((40, 16)), type=t)
        img = nx.tensor(rng.standard_normal((2, 3, 12, 12)), type=t)
        ker = nx.tensor(rng.standard_normal((4, 3, 3, 3)), type=t)
        for name, f in {
                "sum": lambda: nx.sum(m, axes=[1]), "product": lambda: nx.product(m, axes=[0]),
                "mean": lambda: nx.mean(m), "dot": lambda: nx.dot(m, k),
                "conv": lambda: nx.conv(img, ker),
                "cumulative_sum": lambda: nx.cumulative_sum(m, axis=1),
                "window_sum": lambda: nx.window_sum(m, (3, 5)),
                "logsumexp": lambda: nx.logsumexp(m, axes=[1]),
                "sort": lambda: nx.sort(m, axis=1)}.items():
            put(f"{name}/{t}", f)
    with np.errstate(all="ignore"):
        z = nx.tensor(base[:-3] + 1j * other[:-3], type="c64")
        w = nx.tensor(other[:-3] - 1j * base[:-3], type="c64")
    for op in sorted(UNARY):
        put(f"{op}/c64", lambda: getattr(nx, op)(z))
    for op in sorted(BINARY):
        put(f"{op}/c64", lambda: getattr(nx, op)(z, w))
    zm = nx.reshape(z[:400], (20, 20))
    for name, f in {"fft": lambda: nx.fft(z), "product0": lambda: nx.product(zm, axes=[0]),
                    "cumulative_product": lambda: nx.cumulative_product(zm, axis=0),
                    "dot": lambda: nx.dot(zm, zm)}.items():
        put(f"{name}/c64", f)
    return out


def _save(path):
    np.savez(path, **results())


def test_same_bits_with_numpys_simd_kernels_off(tmp_path):
    targets = cpu_settings.dispatch_targets()
    if not targets:
        pytest.skip("the installed NumPy dispatches to no SIMD extension above its baseline")
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": ",".join(targets),
           "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    path = tmp_path / "baseline.npz"
    code = f"import test_cpu_independence as t; t._save({str(path)!r})"
    child = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    theirs = np.load(path)
    ours = results()
    assert sorted(theirs.files) == sorted(ours)
    for name, a in ours.items():
        b = theirs[name]
        op, t = name.split("#")[0].split("/")
        if t == "f64" and a.dtype == np.float64:
            both = np.isfinite(a) & np.isfinite(b)
            np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b), err_msg=name)
            worst = int(_ulps64(a[both], b[both]).max(initial=0))
            assert worst <= F64_ULPS_OF.get(op, F64_ULPS), f"{name}: {worst} ulps apart"
        else:
            np.testing.assert_array_equal(
                np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8),
                err_msg=f"{name}: other bits with NumPy's SIMD kernels ({', '.join(targets)}) off")
