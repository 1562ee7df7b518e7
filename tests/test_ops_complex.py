"""The complex family: real, imag, conjugate, phase, complex, fft, ifft, fft2, ifft2, rfft,
irfft.

Every op runs on four paths -- eager on the NumPy backend, ``jit`` with the Evaluator,
``jit`` with EXLA, eager on the EXLA backend -- against oracles computed from the input
arrays by NumPy and ``jax.numpy`` (never by nxpy's NumPy backend): every dtype, lengths
that pad and truncate, ``"power_of_two"``, negative and named axes, empty dims. Then the
ported Nx doctests, the errors, gradients against ``jax.grad`` (JAX's convention for
complex values) and ``jvp`` against ``jax.jvp``, JAX-exported programs loaded by the
StableHLO importer, and transforms along sharded axes under ``shard_jit``.
"""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest

import nxpy as nx
from nxpy.compilers.exla import to_mlir
from nxpy.defn import debug_expr, grad, jit
from nxpy.defn.sharding import specs as SH
from nxpy.defn.shard_jit import shard_jit
from nxpy.stablehlo import load, parse
from nxpy.testing.records import Domain

import helpers
from helpers import (ALL_TYPES, BF16, CHEAP, COMPILERS, COMPLEX, INTS, PATHS, covering,
                     default_backend, jvp_matches_jax, rng_for, run, x64)

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
from jax import lax


# the type rules, written out independently of nxpy: Nx.Type.to_complex / to_real
def complex_of(t):
    return "c128" if t in ("f64", "c128") else "c64"


def real_of(t):
    return {"c64": "f32", "c128": "f64", "f16": "f16", "bf16": "bf16", "f32": "f32",
            "f64": "f64"}.get(t, "f32")


def gen(t, shape, seed=0):
    """Integers in [-5, 5], floats (both parts) in [-3, 3]."""
    return helpers.gen(t, shape, rng_for(t, shape, seed), Domain(-5, 5) if t in INTS else "any")


#: the family's tolerances (relative, and absolute scaled by the largest magnitude of the
#: result: transforms sum many terms)
TOL = {t: (v, v) for t, v in {"f16": 4e-3, "bf16": 2e-2, "f32": 2e-5, "c64": 2e-5,
                              "f64": 1e-11, "c128": 1e-11}.items()}
check = functools.partial(helpers.check, tols=TOL, scaled=True)


# ----------------------------------------------------------------------------------------
# real, imag, conjugate, phase, complex: every dtype, every path
# ----------------------------------------------------------------------------------------
#: the types the every-type tests run on EXLA's eager backend too (one compiled program per
#: op, where jit with EXLA compiles one in all): pred (the one of its kind) and every other
#: one of the rest, in rotation, in the fast slice, so that each slice of the suite meets
#: every kind; every type under make exhaustive. The other paths take every type.
EAGER_EXLA_TYPES = {"pred"} | {t for t, on in covering(
    [t for t in ALL_TYPES if t != "pred"], (True, False)) if on}


def _paths(t):
    return PATHS if t in EAGER_EXLA_TYPES else CHEAP


def test_every_kind_of_type_meets_eager_exla():
    def kind(t):  # signed, unsigned, float (bf16 too), complex, pred
        return "f" if t == "bf16" else t[0]
    assert {kind(t) for t in EAGER_EXLA_TYPES} == {kind(t) for t in ALL_TYPES}


def _parts(x):
    out = (nx.real(x), nx.imag(x), nx.conjugate(x), nx.phase(x))
    if x.type.is_complex:
        return out + (nx.complex(nx.real(x), nx.imag(x)),)
    return out + (nx.complex(x, x if x.type.is_pred or x.type.kind == "u" else nx.negate(x)),)


@pytest.mark.parametrize("t", ALL_TYPES)
def test_elementwise_parts(t):
    x = gen(t, (2, 3))
    if t in ("f32", "f64", "c64", "c128"):  # signed zeros, infinities, nan
        x = x.reshape(-1)
        x[:4] = [0.0, -0.0, np.inf, np.nan] if t[0] == "f" else \
            [0, -0.0 - 0.0j, complex(np.inf, -1), complex(1, np.nan)]
        x = x.reshape(2, 3)
    w = x.astype(np.complex128) if t != "bf16" else x.astype(np.float64).astype(np.complex128)
    rt, ct = real_of(t), complex_of(t)
    with x64():
        re, im = np.asarray(jnp.real(w)), np.asarray(jnp.imag(w))
        conj = np.asarray(lax.conj(jnp.asarray(w)))
        phase = np.asarray(jnp.angle(w))
        other = np.asarray(lax.complex(re, im)) if t in COMPLEX else np.asarray(
            lax.complex(re, re if t == "pred" or t[0] == "u" else -re))
    res = run(_parts, x, paths=_paths(t))
    check(res, [re, im, conj, phase, other], [rt, rt, ct, rt, ct], what=f"parts of {t}")
    for path, r in res.items():  # conjugate of a real value: the imaginary parts are -0.0
        if t not in COMPLEX:
            assert np.all(np.signbit(r[2].to_numpy().imag)), path


def test_elementwise_names_and_broadcasting():
    x = nx.tensor([[1.0, 2.0]], names=["a", "b"])
    for f in (nx.real, nx.imag, nx.conjugate, nx.phase):
        assert f(x).names == ("a", "b")
    assert nx.imag(nx.tensor([1, 2], names=["x"])).names == ("x",)
    res = run(lambda a, b: nx.complex(a, b), np.arange(3, dtype=np.float32),
              np.array([[1.0], [2.0]], np.float64))
    check(res, np.arange(3)[None] + 1j * np.array([[1.0], [2.0]]), "c128", what="broadcast")
    z = nx.complex(nx.tensor([1.0, 2.0], names=["x"]), 3)
    assert z.names == ("x",) and str(z.type) == "c64" and z.tolist() == [1 + 3j, 2 + 3j]
    assert str(nx.complex(nx.tensor(1.0, type="f64"), 2).type) == "c128"


def test_complex_keeps_both_parts_exactly():
    """complex(re, im) places each part as given, even inf and nan (nx.complex is a
    primitive: Nx's composition imag * i + real would make inf * 0 a nan)."""
    re = np.array([1.0, -0.0, np.inf, 2.0], np.float32)
    im = np.array([np.inf, -0.0, 1.0, np.nan], np.float32)
    for path, r in run(lambda a, b: nx.complex(a, b), re, im).items():
        got = r.to_numpy()
        np.testing.assert_array_equal(got.real, re, err_msg=path)
        np.testing.assert_array_equal(got.imag, im, err_msg=path)
        assert np.signbit(got.real[1]) and np.signbit(got.imag[1]), path


# ----------------------------------------------------------------------------------------
# Transforms
# ----------------------------------------------------------------------------------------
def _np_fft(x, inverse, lengths, axes):
    """The oracle: jax.numpy's transform in double precision."""
    w = np.asarray(x).astype(np.float64 if x.dtype == BF16 else x.dtype).astype(np.complex128)
    with x64():
        if len(axes) == 1:
            f = jnp.fft.ifft if inverse else jnp.fft.fft
            return np.asarray(f(w, n=lengths[0], axis=axes[0]))
        f = jnp.fft.ifft2 if inverse else jnp.fft.fft2
        return np.asarray(f(w, s=lengths, axes=axes))


@pytest.mark.parametrize("t", ALL_TYPES)
def test_fft_every_type(t):
    x = gen(t, (2, 6))
    res = run(lambda a: (nx.fft(a), nx.ifft2(a)), x, paths=_paths(t))
    want = [_np_fft(x, False, [6], [-1]), _np_fft(x, True, [2, 6], [-2, -1])]
    check(res, want, [complex_of(t)] * 2, what=f"fft of {t}")


def _nextpow2(n):
    return 1 << (n - 1).bit_length()


FFT_OPTIONS = [  # (op, length, axis)
    ("fft", None, -1), ("fft", 8, -1), ("fft", 3, 0), ("fft", "power_of_two", 1),
    ("ifft", None, 0), ("ifft", 7, -2), ("ifft", 2, 1), ("ifft", "power_of_two", -1),
]


@pytest.mark.parametrize("t", ["f32", "c64", "c128"])
@pytest.mark.parametrize("op,length,axis", FFT_OPTIONS)
def test_fft_options(t, op, length, axis):
    x = gen(t, (5, 6), seed=1)
    n = x.shape[axis]
    L = n if length is None else _nextpow2(n) if length == "power_of_two" else length
    res = run(lambda a: getattr(nx, op)(a, length=length, axis=axis), x,
              paths=("numpy", "exla", "exla_eager") if t != "c64" else PATHS)
    check(res, _np_fft(x, op == "ifft", [L], [axis]), complex_of(t), what=f"{op} {length} {axis}")


FFT2_OPTIONS = [  # (op, lengths, axes)
    ("fft2", None, (-2, -1)), ("fft2", [2, 8], (0, 2)), ("fft2", ["power_of_two", 3], (2, 1)),
    ("ifft2", None, (0, 1)), ("ifft2", [4, "power_of_two"], (-3, -1)), ("ifft2", [1, 2], (1, 2)),
]


@pytest.mark.parametrize("t", ["f64", "c64"])
@pytest.mark.parametrize("op,lengths,axes", FFT2_OPTIONS)
def test_fft2_options(t, op, lengths, axes):
    x = gen(t, (3, 5, 6), seed=2)
    ls = [x.shape[a] if v is None else _nextpow2(x.shape[a]) if v == "power_of_two" else v
          for v, a in zip(lengths or [None, None], axes)]
    res = run(lambda a: getattr(nx, op)(a, lengths=lengths, axes=list(axes)), x,
              paths=CHEAP)
    check(res, _np_fft(x, op == "ifft2", ls, list(axes)), complex_of(t),
          what=f"{op} {lengths} {axes}")


def test_transforms_with_names():
    x = gen("f32", (2, 4), seed=3)
    res = run(lambda a: (nx.fft(a, axis="time", length=6), nx.fft2(a, axes=["batch", "time"])),
              x, names=["batch", "time"], paths=CHEAP)
    check(res, [_np_fft(x, False, [6], [1]), _np_fft(x, False, [2, 4], [0, 1])], ["c64", "c64"],
          what="named", names=["batch", "time"])
    res = run(lambda a: (nx.rfft(a, axis="time", length=5), nx.irfft(a, axis="batch", length=3)),
              x, names=["batch", "time"], paths=CHEAP)
    check(res, [_np_rfft(x, False, 5, 1), _np_rfft(x, True, 3, 0)], ["c64", "f32"],
          what="named real",
          names=["batch", "time"])


@pytest.mark.parametrize("shape,call,out_shape,t", [
    ((0, 4), lambda a: nx.fft(a), (0, 4), "c64"),
    ((3, 0), lambda a: nx.ifft(a), (3, 0), "c64"),
    ((3, 0), lambda a: nx.fft(a, length=4), (3, 4), "c64"),
    ((0, 0), lambda a: nx.fft2(a, lengths=[2, 2]), (2, 2), "c64"),
    ((2, 0, 3), lambda a: nx.ifft2(a, axes=[0, 2]), (2, 0, 3), "c64"),
    ((0, 4), lambda a: nx.rfft(a), (0, 3), "c64"),
    ((3, 0), lambda a: nx.rfft(a, length=5), (3, 3), "c64"),
    ((0, 3), lambda a: nx.irfft(a, axis=0, length=2), (2, 3), "f32"),
    ((2, 0), lambda a: nx.irfft(a, length=5), (2, 5), "f32"),
])
def test_empty_dims(shape, call, out_shape, t):
    """Transforms of nothing padded with zeros are zeros; empty results stay empty."""
    res = run(call, np.zeros(shape, np.float32))
    check(res, np.zeros(out_shape), t, what=f"empty {shape}")


def test_eps_cleans_tiny_parts_on_the_numpy_backend_only():
    """Nx's :eps: the binary backend (here the NumPy backend) zeroes parts with magnitude
    <= eps; EXLA ignores it, as Nx's EXLA does."""
    x = np.array([1e-12, 0, 0, 0], np.complex128)
    assert nx.fft(nx.tensor(x)).tolist() == [0j] * 4
    assert np.allclose(nx.fft(nx.tensor(x), eps=0).to_numpy(), [1e-12] * 4, rtol=0, atol=0)
    assert nx.fft(nx.tensor(x), eps=1e-13).to_numpy()[0] == 1e-12
    assert np.allclose(jit(nx.fft, compiler="exla")(nx.tensor(x)).to_numpy(), [1e-12] * 4,
                       rtol=1e-9, atol=0)
    # the NumPy backend computes in double precision, so exact results stay exact
    y = nx.fft(nx.tensor([1, 1, 1, 0, 1, 1]))
    assert y.to_numpy().tolist() == [5, 1, -1, 1, -1, 1]
    # rfft and irfft: as the fft and ifft they are built on in Nx
    z = np.array([4e-12, 0, 0], np.complex128)  # irfft: 1e-12 everywhere
    assert nx.irfft(nx.tensor(z)).tolist() == [0.0] * 4
    assert np.allclose(nx.irfft(nx.tensor(z), eps=0).to_numpy(), [1e-12] * 4, rtol=1e-12, atol=0)
    assert np.allclose(jit(nx.irfft, compiler="exla")(nx.tensor(z)).to_numpy(), [1e-12] * 4,
                       rtol=1e-9, atol=0)
    assert nx.rfft(nx.tensor([1e-12, 0], type="f64")).tolist() == [0j, 0j]
    assert nx.rfft(nx.tensor([1e-12, 0], type="f64"), eps=0).tolist() == [1e-12 + 0j] * 2
    assert nx.rfft(nx.tensor([1, 1, 1, 0, 1, 1])).to_numpy().tolist() == [5, 1, -1, 1]


def _np_rfft(x, inverse, length, axis):
    """The oracle of rfft/irfft: jax.numpy's real transforms in double precision."""
    w = np.asarray(x).astype(np.float64 if x.dtype == BF16 else x.dtype)
    with x64():
        if inverse:
            return np.asarray(jnp.fft.irfft(w.astype(np.complex128), n=length, axis=axis))
        return np.asarray(jnp.fft.rfft(w.astype(np.float64), n=length, axis=axis))


@pytest.mark.parametrize("t", ALL_TYPES)
def test_real_transforms_every_type(t):
    """rfft of every real type (complex ones are an error); irfft of every type, its
    result of real's type (f16 stays f16, integers become f32)."""
    x = gen(t, (2, 6))
    if t in COMPLEX:
        check(run(nx.irfft, x, paths=_paths(t)), _np_rfft(x, True, 10, -1), real_of(t),
              what=f"irfft of {t}")
        return
    res = run(lambda a: (nx.rfft(a), nx.irfft(a)), x, paths=_paths(t))
    check(res, [_np_rfft(x, False, 6, -1), _np_rfft(x, True, 10, -1)],
          [complex_of(t), real_of(t)], what=f"rfft, irfft of {t}")


RFFT_OPTIONS = [  # (op, length, axis): even and odd lengths, padding, truncation, axis 0
    ("rfft", None, -1), ("rfft", 7, -1), ("rfft", 8, 0), ("rfft", 3, 1), ("rfft", 2, 0),
    ("rfft", 1, -1), ("rfft", "power_of_two", 0),
    ("irfft", None, -1), ("irfft", 9, -1), ("irfft", 4, 0), ("irfft", 5, 0), ("irfft", 1, 1),
    ("irfft", 2, -1), ("irfft", 11, -2),
]


RFFT_CASES = [(t, *o) for t in ("f32", "f64", "c64", "c128") for o in RFFT_OPTIONS
              if not (o[0] == "rfft" and t in COMPLEX)]  # rfft of a complex tensor: test_errors
#: the cases also run on EXLA's eager backend: every other one, in rotation (all: make
#: exhaustive); every case runs on NumPy and jit with EXLA
RFFT_EAGER_EXLA = {c for c, on in covering(RFFT_CASES, (True, False)) if on}


@pytest.mark.parametrize("t,op,length,axis", RFFT_CASES)
def test_real_transform_options(t, op, length, axis):
    x = gen(t, (5, 6), seed=4)
    n = x.shape[axis]
    L = (2 * (n - 1) if op == "irfft" else n) if length is None else \
        _nextpow2(n) if length == "power_of_two" else length
    paths = PATHS if t in ("f32", "c64") else ("numpy", "exla", "exla_eager")
    if (t, op, length, axis) not in RFFT_EAGER_EXLA:
        paths = tuple(p for p in paths if p != "exla_eager")
    res = run(lambda a: getattr(nx, op)(a, length=length, axis=axis), x, paths=paths)
    want_t = complex_of(t) if op == "rfft" else real_of(t)
    check(res, _np_rfft(x, op == "irfft", L, axis), want_t, what=f"{op} {length} {axis}")


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_irfft_inverts_rfft(n):
    """irfft(rfft(x), length=n) is x, for odd and even n (the oracle is x itself)."""
    x = gen("f64", (3, n), seed=n)
    check(run(lambda a: nx.irfft(nx.rfft(a, axis=-1), length=n), x,
              paths=CHEAP), x, "f64", what=f"round trip {n}")


def test_irfft_ignores_dc_and_nyquist_imaginary_parts():
    """As XLA's C2R transform and NumPy: only the Hermitian part of the spectrum counts."""
    z = np.array([[1 + 5j, 2 - 1j, 3 + 2j, -1 + 7j]], np.complex64)
    check(run(lambda a: nx.irfft(a), z), np.fft.irfft(z), "f32", what="DC and Nyquist")


# ----------------------------------------------------------------------------------------
# Nx's doctests (nx/lib/nx.ex), ported: values, types, shapes
# ----------------------------------------------------------------------------------------
def _c(*pairs):
    return [complex(a, b) for a, b in pairs]


DOCTESTS = [
    # real / imag / conjugate / phase / complex
    ("real(1+2i)", lambda: nx.real(nx.tensor(1 + 2j)), "f32", 1.0),
    ("real(1)", lambda: nx.real(nx.tensor(1)), "f32", 1.0),
    ("real(bf16)", lambda: nx.real(nx.tensor(1, type="bf16")), "bf16", 1.0),
    ("real([..])", lambda: nx.real(nx.tensor([1 + 2j, 2 - 4j])), "f32", [1.0, 2.0]),
    ("imag(1+2i)", lambda: nx.imag(nx.tensor(1 + 2j)), "f32", 2.0),
    ("imag(1)", lambda: nx.imag(nx.tensor(1)), "f32", 0.0),
    ("imag(bf16)", lambda: nx.imag(nx.tensor(1, type="bf16")), "bf16", 0.0),
    ("imag([..])", lambda: nx.imag(nx.tensor([1 + 2j, 2 - 4j])), "f32", [2.0, -4.0]),
    ("conjugate(1+2i)", lambda: nx.conjugate(nx.tensor(1 + 2j)), "c64", 1 - 2j),
    ("conjugate(1)", lambda: nx.conjugate(1), "c64", 1 - 0j),
    ("conjugate([..])", lambda: nx.conjugate(nx.tensor([1 + 2j, 2 - 4j])), "c64", [1 - 2j, 2 + 4j]),
    ("phase(1+2i)", lambda: nx.phase(nx.tensor(1 + 2j)), "f32", 1.1071488),
    ("phase(1)", lambda: nx.phase(1), "f32", 0.0),
    ("phase([..])", lambda: nx.phase(nx.tensor([1 + 2j, -2 + 1j])), "f32", [1.1071488, 2.6779451]),
    ("complex(1, 2)", lambda: nx.complex(nx.tensor(1), nx.tensor(2)), "c64", 1 + 2j),
    ("complex([1,2],[3,4])", lambda: nx.complex(nx.tensor([1, 2]), nx.tensor([3, 4])), "c64",
     [1 + 3j, 2 + 4j]),
    # fft
    ("fft([1,1,0,0])", lambda: nx.fft(nx.tensor([1, 1, 0, 0])), "c64",
     _c((2, 0), (1, -1), (0, 0), (1, 1))),
    ("fft([1,1,1,0,1,1])", lambda: nx.fft(nx.tensor([1, 1, 1, 0, 1, 1])), "c64",
     [5, 1, -1, 1, -1, 1]),
    ("fft(axis: -1)", lambda: nx.fft(nx.tensor([[1, 1, 1, 0, 1, 1]] * 2), axis=-1), "c64",
     [[5, 1, -1, 1, -1, 1]] * 2),
    ("fft(axis: -2)", lambda: nx.fft(nx.tensor([[1, 1, 1, 0, 1, 1]] * 2), axis=-2), "c64",
     [[2, 2, 2, 0, 2, 2], [0] * 6]),
    ("fft(length: 4)", lambda: nx.fft(nx.tensor([1, 1]), length=4), "c64",
     _c((2, 0), (1, -1), (0, 0), (1, 1))),
    ("fft(power_of_two)", lambda: nx.fft(nx.tensor([1, 1, 0]), length="power_of_two"), "c64",
     _c((2, 0), (1, -1), (0, 0), (1, 1))),
    ("fft(truncate)", lambda: nx.fft(nx.tensor([1, 1, 0, 0, 2, 3]), length=4), "c64",
     _c((2, 0), (1, -1), (0, 0), (1, 1))),
    ("fft(2-D, length: 4)", lambda: nx.fft(nx.tensor([[1, 1, 0, 0, 2, 3], [1, 0, 0, 0, 2, 3]]),
                                           length=4), "c64",
     [_c((2, 0), (1, -1), (0, 0), (1, 1)), [1, 1, 1, 1]]),
    # ifft
    ("ifft([2,1-i,0,1+i])", lambda: nx.ifft(nx.tensor([2, 1 - 1j, 0, 1 + 1j])), "c64",
     [1, 1, 0, 0]),
    ("ifft([5,1,-1,1,-1,1])", lambda: nx.ifft(nx.tensor([5, 1, -1, 1, -1, 1])), "c64",
     [1, 1, 1, 0, 1, 1]),
    ("ifft(axis: -1)", lambda: nx.ifft(nx.tensor([[5, 1, -1, 1, -1, 1]] * 2), axis=-1), "c64",
     [[1, 1, 1, 0, 1, 1]] * 2),
    ("ifft(axis: -2)", lambda: nx.ifft(nx.tensor([[5, 1, -1, 1, -1, 1]] * 2), axis=-2), "c64",
     [[5, 1, -1, 1, -1, 1], [0] * 6]),
    ("ifft(length: 4)", lambda: nx.ifft(nx.tensor([1, 1]), length=4), "c64",
     _c((0.5, 0), (0.25, 0.25), (0, 0), (0.25, -0.25))),
    ("ifft(power_of_two)", lambda: nx.ifft(nx.tensor([1, 1, 0]), length="power_of_two"), "c64",
     _c((0.5, 0), (0.25, 0.25), (0, 0), (0.25, -0.25))),
    ("ifft(truncate)", lambda: nx.ifft(nx.tensor([1, 1, 0, 0, 2, 3]), length=4), "c64",
     _c((0.5, 0), (0.25, 0.25), (0, 0), (0.25, -0.25))),
    ("ifft(2-D, length: 4)", lambda: nx.ifft(nx.tensor([[1, 1, 0, 0, 2, 3], [1, 0, 0, 0, 2, 3]]),
                                             length=4), "c64",
     [_c((0.5, 0), (0.25, 0.25), (0, 0), (0.25, -0.25)), [0.25] * 4]),
    # fft2
    ("fft2", lambda: nx.fft2(nx.tensor([[1, 0, 1, 0], [1, 1, 1, 1]])), "c64",
     [[6, 0, 2, 0], [-2, 0, 2, 0]]),
    ("fft2(axes: [0, -1])", lambda: nx.fft2(nx.tensor([[[1, 0, 1, 0]], [[1, 1, 1, 1]]]),
                                            axes=[0, -1]), "c64",
     [[[6, 0, 2, 0]], [[-2, 0, 2, 0]]]),
    ("fft2(axes: [-2, -1])", lambda: nx.fft2(nx.tensor([[[1, 0, 1, 0]], [[1, 1, 1, 1]]]),
                                             axes=[-2, -1]), "c64",
     [[[2, 0, 2, 0]], [[4, 0, 0, 0]]]),
    ("fft2(lengths: [2, 4])", lambda: nx.fft2(nx.tensor([[1, 1], [1, 0]]), lengths=[2, 4]), "c64",
     [_c((3, 0), (2, -1), (1, 0), (2, 1)), _c((1, 0), (0, -1), (-1, 0), (0, 1))]),
    ("fft2(lengths: [4, 2])", lambda: nx.fft2(nx.tensor([[1, 1], [1, 0]]), lengths=[4, 2]), "c64",
     [_c((3, 0), (1, 0)), _c((2, -1), (0, -1)), _c((1, 0), (-1, 0)), _c((2, 1), (0, 1))]),
    ("fft2(power_of_two)", lambda: nx.fft2(nx.tensor([[1, 1, 0], [1, 1, 0], [1, 1, -1]]),
                                           lengths=["power_of_two", "power_of_two"]), "c64",
     [_c((5, 0), (4, -3), (-1, 0), (4, 3)), _c((1, -2), (-2, -1), (1, 0), (0, -1)),
      _c((1, 0), (2, -1), (-1, 0), (2, 1)), _c((1, 2), (0, 1), (1, 0), (-2, 1))]),
    ("fft2(axes: [0, 2], lengths)", lambda: nx.fft2(nx.tensor([[[1, 1, 0, 0, 2, 3]]]), axes=[0, 2],
                                                    lengths=[2, 4]), "c64",
     [[_c((2, 0), (1, -1), (0, 0), (1, 1))], [_c((2, 0), (1, -1), (0, 0), (1, 1))]]),
    ("fft2(4-D)", lambda: nx.fft2(nx.tensor([[[[1, 0, 1, 0, 10, 10], [1, 1, 1, 1, 10, 10]]],
                                             [[[-2, -2, -2, -2, 20, 20], [0, 0, 0, 1, -20, -20]]]]),
                                  lengths=[2, 4]), "c64",
     [[[[6, 0, 2, 0], [-2, 0, 2, 0]]],
      [[_c((-7, 0), (0, 1), (-1, 0), (0, -1)), _c((-9, 0), (0, -1), (1, 0), (0, 1))]]]),
    # ifft2
    ("ifft2", lambda: nx.ifft2(nx.tensor([[6, 0, 2, 0], [-2, 0, 2, 0]])), "c64",
     [[1, 0, 1, 0], [1, 1, 1, 1]]),
    ("ifft2(axes: [0, -1])", lambda: nx.ifft2(nx.tensor([[[6, 0, 2, 0]], [[-2, 0, 2, 0]]]),
                                              axes=[0, -1]), "c64",
     [[[1, 0, 1, 0]], [[1, 1, 1, 1]]]),
    ("ifft2(axes: [-2, -1])", lambda: nx.ifft2(nx.tensor([[[6, 0, 2, 0]], [[-2, 0, 2, 0]]]),
                                               axes=[-2, -1]), "c64",
     [[[2, 1, 2, 1]], [[0, -1, 0, -1]]]),
    ("ifft2(lengths: [2, 4])", lambda: nx.ifft2(nx.tensor([[8, 8], [8, 0]]), lengths=[2, 4]), "c64",
     [_c((3, 0), (2, 1), (1, 0), (2, -1)), _c((1, 0), (0, 1), (-1, 0), (0, -1))]),
    ("ifft2(lengths: [4, 2])", lambda: nx.ifft2(nx.tensor([[8, 8], [8, 0]]), lengths=[4, 2]), "c64",
     [_c((3, 0), (1, 0)), _c((2, 1), (0, 1)), _c((1, 0), (-1, 0)), _c((2, -1), (0, -1))]),
    ("ifft2(power_of_two)", lambda: nx.ifft2(nx.tensor([[16, 16, 0], [16, 16, 0], [16, 16, -16]]),
                                             lengths=["power_of_two", "power_of_two"]), "c64",
     [_c((5, 0), (4, 3), (-1, 0), (4, -3)), _c((1, 2), (-2, 1), (1, 0), (0, 1)),
      _c((1, 0), (2, 1), (-1, 0), (2, -1)), _c((1, -2), (0, -1), (1, 0), (-2, -1))]),
    ("ifft2(axes: [0, 2], lengths)", lambda: nx.ifft2(nx.tensor([[[8, 8, 0, 0, 2, 3]]]),
                                                      axes=[0, 2], lengths=[2, 4]), "c64",
     [[_c((2, 0), (1, 1), (0, 0), (1, -1))], [_c((2, 0), (1, 1), (0, 0), (1, -1))]]),
    ("ifft2(4-D)", lambda: nx.ifft2(nx.tensor([[[[8, 0, 8, 0, 10, 10], [8, 8, 8, 8, 10, 10]]],
                                               [[[-16, -16, -16, -16, 20, 20],
                                                 [0, 0, 0, 8, -20, -20]]]]),
                                    lengths=[2, 4]), "c64",
     [[[[6, 0, 2, 0], [-2, 0, 2, 0]]],
      [[_c((-7, 0), (0, -1), (-1, 0), (0, 1)), _c((-9, 0), (0, 1), (1, 0), (0, -1))]]]),
    # rfft
    ("rfft([1,1,0,0])", lambda: nx.rfft(nx.tensor([1.0, 1.0, 0.0, 0.0])), "c64",
     _c((2, 0), (1, -1), (0, 0))),
    ("rfft([1,1,1,0,1,1])", lambda: nx.rfft(nx.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 1.0])), "c64",
     [5, 1, -1, 1]),
    ("rfft(axis: -1)", lambda: nx.rfft(nx.tensor([[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]),
                                       axis=-1), "c64",
     [_c((2, 0), (1, -1), (0, 0)), [1, 1, 1]]),
    ("rfft(axis: -2)", lambda: nx.rfft(nx.tensor([[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]),
                                       axis=-2), "c64",
     [[2, 1, 0, 0], [0, 1, 0, 0]]),
    ("rfft(length: 4)", lambda: nx.rfft(nx.tensor([1.0, 1.0]), length=4), "c64",
     _c((2, 0), (1, -1), (0, 0))),
    ("rfft(power_of_two)", lambda: nx.rfft(nx.tensor([1.0, 1.0, 0.0]), length="power_of_two"),
     "c64", _c((2, 0), (1, -1), (0, 0))),
    # irfft
    ("irfft([2,1-i,0])", lambda: nx.irfft(nx.tensor([2.0, 1 - 1j, 0.0])), "f32", [1, 1, 0, 0]),
    ("irfft([5,1,-1,1])", lambda: nx.irfft(nx.tensor([5.0, 1.0, -1.0, 1.0])), "f32",
     [1, 1, 1, 0, 1, 1]),
    ("irfft(axis: -1)", lambda: nx.irfft(nx.tensor([[2.0, 1 - 1j, 0.0], [4.0, 0.0, 0.0]]),
                                         axis=-1), "f32",
     [[1, 1, 0, 0], [1, 1, 1, 1]]),
    ("irfft(length: 4)", lambda: nx.irfft(nx.tensor([2.0, 1 - 1j, 0.0]), length=4), "f32",
     [1, 1, 0, 0]),
]


@pytest.mark.parametrize("name,call,t,want", DOCTESTS, ids=[d[0] for d in DOCTESTS])
def test_nx_doctests(name, call, t, want):
    """Exactly on the NumPy backend (computed in double precision and cleaned with eps,
    as Nx's binary backend); within f32 rounding on EXLA's eager backend."""
    got = call()
    assert str(got.type) == t and got.shape == np.shape(want)
    np.testing.assert_allclose(np.asarray(got.tolist()), np.asarray(want), rtol=1e-7, atol=0)
    with default_backend("exla"):
        g = call()
    assert g.backend.name == "exla" and str(g.type) == t
    np.testing.assert_allclose(np.asarray(g.tolist()), np.asarray(want), rtol=1e-6, atol=1e-6)


def test_printing():
    assert str(nx.conjugate(1)) == "#Nx.Tensor<\n  c64\n  1.0-0.0i\n>"
    assert str(nx.fft(nx.tensor([1, 1, 0, 0]))) == (
        "#Nx.Tensor<\n  c64[4]\n  [2.0+0.0i, 1.0-1.0i, 0.0+0.0i, 1.0+1.0i]\n>")
    text = str(debug_expr(lambda x: nx.fft(x, length=8))(nx.template((2, 4), "f32")))
    assert "fft a, length: 8, axis: 1, eps: 1e-10" in text


ERRORS = [
    (lambda: nx.fft(nx.tensor(1.0)), ValueError,
     "fft: expected a tensor with rank > 0, got tensor with rank 0"),
    (lambda: nx.fft(nx.tensor([1, 1]), length="invalid"), ValueError,
     r"fft: expected length to be a positive integer or 'power_of_two', got 'invalid'"),
    (lambda: nx.ifft(nx.tensor([1, 1]), length=0), ValueError,
     "ifft: expected length to be a positive"),
    (lambda: nx.fft(nx.tensor([1, 1]), length=2.0), ValueError, "got 2.0"),
    (lambda: nx.fft(nx.tensor([1, 1]), axis=1), ValueError,
     r"fft: given axis \(1\) invalid for shape with rank 1"),
    (lambda: nx.fft(nx.tensor([1, 1], names=["x"]), axis="y"), ValueError,
     "fft: axis name 'y' not found"),
    (lambda: nx.fft(nx.tensor([1, 1]), eps=-1), TypeError,
     "fft: expected eps to be a non-negative number, got -1"),
    (lambda: nx.fft(nx.tensor([1, 1]), eps="x"), TypeError, "expected eps"),
    (lambda: nx.fft(nx.tensor(np.zeros(0)), length="power_of_two"), ValueError, "non-empty axis"),
    (lambda: nx.fft2(nx.tensor([1, 1])), ValueError,
     "fft2: expected a tensor with rank > 1, got tensor with rank 1"),
    (lambda: nx.ifft2(nx.tensor([[1, 1]]), lengths=["invalid", 2]), ValueError,
     r"ifft2: expected lengths to be a positive integer or 'power_of_two', got 'invalid'"),
    (lambda: nx.fft2(nx.tensor([[1, 1]]), lengths=[2]), ValueError,
     "fft2: expected lengths to be a list of 2"),
    (lambda: nx.fft2(nx.tensor([[1, 1]]), axes=[0]), ValueError,
     r"fft2: expected axes to be a list with 2 axes, got \[0\]"),
    (lambda: nx.fft2(nx.tensor([[1, 1]]), axes=[1, -1]), ValueError, "fft2: axes .* repeated axis"),
    (lambda: nx.fft2(nx.tensor([[1, 1]]), axes=[0, 2]), ValueError,
     r"fft2: given axis \(2\) invalid"),
    (lambda: nx.complex(nx.tensor(1j), 1.0), TypeError,
     "complex: expected real to have a real \\(non-complex\\) type, got c64"),
    (lambda: nx.complex(1.0, nx.tensor([1j])), TypeError, "expected imag to have a real"),
    (lambda: nx.complex(nx.tensor([1, 2]), nx.tensor([1, 2, 3])), ValueError, "complex"),
    (lambda: nx.real("x"), TypeError, "expected x to be a tensor"),
    (lambda: nx.rfft(nx.tensor([1j, 1])), TypeError,
     r"rfft: expected x to have a real \(non-complex\) type, got c64"),
    (lambda: nx.rfft(nx.tensor([1.0, 1.0]), length="invalid"), ValueError,
     r"rfft: expected length to be a positive integer or 'power_of_two', got 'invalid'"),
    (lambda: nx.rfft(nx.tensor(1.0)), ValueError,
     "rfft: expected a tensor with rank > 0, got tensor with rank 0"),
    (lambda: nx.rfft(nx.tensor([1.0]), axis=1), ValueError,
     r"rfft: given axis \(1\) invalid for shape with rank 1"),
    (lambda: nx.rfft(nx.tensor([1.0]), eps=None), TypeError,
     "rfft: expected eps to be a non-negative number, got None"),
    (lambda: nx.irfft(nx.tensor([1j, 1]), length="power_of_two"), ValueError,
     "irfft: expected length to be a positive integer, got 'power_of_two'"),
    (lambda: nx.irfft(nx.tensor([1j, 1]), length=-3), ValueError,
     "irfft: expected length to be a positive integer, got -3"),
    (lambda: nx.irfft(nx.tensor([[1j], [2j]])), ValueError,
     r"irfft: expected length to be given for an axis of size 1 "
     r"\(the default, 2 \* \(m - 1\), is 0\)"),
    (lambda: nx.irfft(nx.tensor(np.zeros((2, 0), np.complex64))), ValueError,
     "irfft: expected length to be given for an axis of size 0"),
    (lambda: nx.irfft(nx.tensor([[1j, 1]], names=["a", "b"]), axis="c"), ValueError,
     "irfft: axis name 'c' not found"),
    (lambda: nx.irfft(nx.tensor(1j)), ValueError, "irfft: expected a tensor with rank > 0"),
]


@pytest.mark.parametrize("call,exc,message", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors(call, exc, message, compiles):
    with pytest.raises(exc, match=message):
        call()
    assert not compiles  # raised before anything reached XLA


# ----------------------------------------------------------------------------------------
# Gradients against jax.grad (JAX's convention for complex values)
# ----------------------------------------------------------------------------------------
_g = np.random.default_rng(11)


def cz(*s):
    return (_g.standard_normal(s) + 1j * _g.standard_normal(s)).astype(np.complex64)


def rf(*s):
    return _g.standard_normal(s).astype(np.float32)


W1, W2, C = rf(3, 8), rf(3, 8), cz(3, 8)


def loss_nx(y):
    r, c = y.shape
    return nx.sum(nx.real(y) * W1[:r, :c] + nx.imag(y) * W2[:r, :c])


def loss_j(y):
    r, c = y.shape
    return jnp.sum(jnp.real(y) * W1[:r, :c] + jnp.imag(y) * W2[:r, :c])


GRADS = {
    "real": (lambda z: nx.sum(nx.real(z) * W1), lambda z: jnp.sum(jnp.real(z) * W1), (cz(3, 8),)),
    "imag": (lambda z: nx.sum(nx.imag(z) * W1), lambda z: jnp.sum(jnp.imag(z) * W1), (cz(3, 8),)),
    "conjugate": (lambda z: loss_nx(nx.conjugate(z) * z), lambda z: loss_j(lax.conj(z) * z),
                  (cz(3, 8),)),
    "conjugate_of_real": (lambda x: loss_nx(nx.conjugate(x) * C), lambda x: loss_j(lax.conj(x) * C),
                          (rf(3, 8),)),
    "complex": (lambda x, y: loss_nx(nx.complex(x, y) * nx.complex(y, x)),
                lambda x, y: loss_j(lax.complex(x, y) * lax.complex(y, x)), (rf(3, 8), rf(3, 8))),
    "complex_broadcast": (lambda x, y: loss_nx(nx.complex(x, y)),
                          lambda x, y: loss_j(lax.complex(jnp.broadcast_to(x, (3, 8)), y)),
                          (rf(8), rf(3, 8))),
    "phase": (lambda z: nx.sum(nx.phase(z) * W1), lambda z: jnp.sum(jnp.angle(z) * W1),
              (cz(3, 8),)),
    "phase_of_real": (lambda x: nx.sum(nx.phase(x) * W1), lambda x: jnp.sum(jnp.angle(x) * W1),
                      (rf(3, 8),)),
    "abs": (lambda z: nx.sum(nx.abs(z) * W1), lambda z: jnp.sum(jnp.abs(z) * W1), (cz(3, 8),)),
    "abs_at_zero": (lambda z: nx.sum(nx.abs(z)), lambda z: jnp.sum(jnp.abs(z)),
                    (np.array([0, 1 + 1j, -2j], np.complex64),)),
    "abs_c128": (lambda z: nx.sum(nx.abs(z) ** 2), lambda z: jnp.sum(jnp.abs(z) ** 2),
                 (cz(4).astype(np.complex128),)),
    "fft": (lambda z: loss_nx(nx.fft(z)), lambda z: loss_j(jnp.fft.fft(z)), (cz(3, 8),)),
    "fft_of_real": (lambda x: loss_nx(nx.fft(x)), lambda x: loss_j(jnp.fft.fft(x)), (rf(3, 8),)),
    "ifft_padded": (lambda z: loss_nx(nx.ifft(z, length=8)), lambda z: loss_j(jnp.fft.ifft(z, n=8)),
                    (cz(3, 5),)),
    "fft_truncated_axis0": (lambda z: loss_nx(nx.fft(z, length=2, axis=0)),
                            lambda z: loss_j(jnp.fft.fft(z, n=2, axis=0)), (cz(3, 8),)),
    "fft2": (lambda z: loss_nx(nx.fft2(z, lengths=[2, 8])),
             lambda z: loss_j(jnp.fft.fft2(z, s=(2, 8))), (cz(3, 5),)),
    "ifft2_of_real": (lambda x: loss_nx(nx.ifft2(x)), lambda x: loss_j(jnp.fft.ifft2(x)),
                      (rf(3, 8),)),
    "rfft_sum_of_squares": (lambda x: nx.sum(nx.real(nx.rfft(x)) ** 2),
                            lambda x: jnp.sum(jnp.real(jnp.fft.rfft(x)) ** 2), (rf(3, 8),)),
    "rfft": (lambda x: loss_nx(nx.rfft(x)), lambda x: loss_j(jnp.fft.rfft(x)), (rf(3, 8),)),
    "rfft_odd_padded_axis0": (lambda x: loss_nx(nx.rfft(x, length=5, axis=0)),
                              lambda x: loss_j(jnp.fft.rfft(x, n=5, axis=0)), (rf(3, 8),)),
    "rfft_truncated": (lambda x: loss_nx(nx.rfft(x, length=5)),
                       lambda x: loss_j(jnp.fft.rfft(x, n=5)), (rf(3, 8),)),
    "irfft": (lambda z: loss_nx(nx.irfft(z)), lambda z: loss_j(jnp.fft.irfft(z)), (cz(3, 5),)),
    "irfft_odd_truncated": (lambda z: loss_nx(nx.irfft(z, length=7)),
                            lambda z: loss_j(jnp.fft.irfft(z, n=7)), (cz(3, 5),)),
    "irfft_padded_axis0": (lambda z: loss_nx(nx.irfft(z, length=3, axis=0)),
                           lambda z: loss_j(jnp.fft.irfft(z, n=3, axis=0)), (cz(1, 8),)),
    "irfft_of_real": (lambda x: loss_nx(nx.irfft(x, length=6)),
                      lambda x: loss_j(jnp.fft.irfft(x, n=6)), (rf(3, 5),)),
    "irfft_c128": (lambda z: nx.sum(nx.irfft(z, length=5) ** 2),
                   lambda z: jnp.sum(jnp.fft.irfft(z, n=5) ** 2),
                   (cz(3, 4).astype(np.complex128),)),
    "real_round_trip": (lambda x: nx.sum(nx.irfft(nx.rfft(x) * C[0, :5], length=8) * W1),
                        lambda x: jnp.sum(jnp.fft.irfft(jnp.fft.rfft(x) * C[0, :5], n=8) * W1),
                        (rf(3, 8),)),
    "round_trip": (lambda z: nx.sum(nx.abs(nx.ifft(nx.fft(z) * C[0]))),
                   lambda z: jnp.sum(jnp.abs(jnp.fft.ifft(jnp.fft.fft(z) * C[0]))), (cz(2, 8),)),
}
GRAD_PATHS = {
    "eager": lambda f, n: grad(f, argnums=n),
    "evaluator_exla": lambda f, n: jit(grad(f, argnums=n), compiler="evaluator", backend="exla"),
    "exla": lambda f, n: jit(grad(f, argnums=n), compiler="exla"),
}


#: the Evaluator over EXLA's eager backend compiles one program per op: a few cases
_EAGER_EXLA = {"conjugate", "complex", "abs", "fft", "ifft_padded", "fft2", "rfft_odd_padded_axis0",
               "irfft_odd_truncated"}


@functools.lru_cache(maxsize=None)
def _jax_grad(name):
    _, fj, args = GRADS[name]
    with x64() if args[0].dtype == np.complex128 else jax.enable_x64(False):
        # jitted: one XLA compile, where eager JAX compiles every op of the gradient
        return jax.jit(jax.grad(fj, argnums=tuple(range(len(args)))))(*args)


def _grad_params():
    """Every case ``eager`` (the Evaluator on NumPy: no compiling; JAX's reference is most
    of its time); ``exla`` on every other case and ``evaluator_exla`` on every other of
    :data:`_EAGER_EXLA`, in rotation (every case, every path: make exhaustive)."""
    return [(n, "eager") for n in GRADS] + \
        [(n, p) for n, p in covering(GRADS, ("exla", "eager")) if p == "exla"] + \
        [(n, p) for n, p in covering([n for n in GRADS if n in _EAGER_EXLA],
                                     ("evaluator_exla", "eager")) if p == "evaluator_exla"]


def test_grad_paths_in_the_fast_slice():
    pairs = _grad_params()
    assert {n for n, _ in pairs} == set(GRADS) and {p for _, p in pairs} == set(GRAD_PATHS)
    assert len([n for n, p in pairs if p == "exla"]) >= len(GRADS) // 2


@pytest.mark.parametrize("name,path", _grad_params())
def test_grad_matches_jax(name, path):
    fn, _, args = GRADS[name]
    argnums = tuple(range(len(args)))
    want = _jax_grad(name)
    got = GRAD_PATHS[path](fn, argnums)(*[nx.tensor(a) for a in args])
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.to_numpy().dtype == w.dtype, (g.type, w.dtype)
        np.testing.assert_allclose(g.to_numpy(), w, rtol=1e-4, atol=1e-5)


# each case on one compiler, in rotation (both: make exhaustive)
@pytest.mark.parametrize("name,path", [pytest.param(n, p, id=f"{n}-{p}")
                                       for n, p in covering(GRADS, COMPILERS)])
def test_jvp_matches_jax(name, path):
    fn, fj, args = GRADS[name]
    jvp_matches_jax(fn, fj, args, path, 1e-4, x64=args[0].dtype == np.complex128)


def test_fft_gradient_is_a_transform():
    """The FFT's transpose is an FFT (the DFT matrix is symmetric), with the padding
    undone: the gradient graph holds fft and slice nodes, no dense matrices."""
    f = grad(lambda z: nx.sum(nx.abs(nx.fft(z, length=8))))
    text = str(debug_expr(f)(nx.template((3, 5), "c64")))
    assert text.count("fft ") == 2 and "slice" in text


# ----------------------------------------------------------------------------------------
# JAX-exported programs through the StableHLO importer
# ----------------------------------------------------------------------------------------
_r = np.random.default_rng(5)
_z = (_r.standard_normal((3, 4, 6)) + 1j * _r.standard_normal((3, 4, 6))).astype(np.complex64)
_x = _r.standard_normal((3, 4, 6)).astype(np.float32)
JAX_CORPUS = {
    "fft": (lambda x: jnp.fft.fft(x), _z),
    "ifft_n_axis": (lambda x: jnp.fft.ifft(x, n=5, axis=1), _z),
    "fft2": (lambda x: jnp.fft.fft2(x), _z),
    "ifft2_axes": (lambda x: jnp.fft.ifft2(x, axes=(0, 2)), _z),
    "fftn": (lambda x: jnp.fft.fftn(x), _z),
    "fft_of_real": (lambda x: jnp.fft.fft(x, n=8), _x),
    "rfft": (lambda x: jnp.fft.rfft(x), _x),
    "rfft_odd_f64": (lambda x: jnp.fft.rfft(x, n=7), _x.astype(np.float64)),
    "rfft2": (lambda x: jnp.fft.rfft2(x), _x),
    "irfft": (lambda x: jnp.fft.irfft(x), _z),
    "irfft_odd": (lambda x: jnp.fft.irfft(x, n=9), _z),
    "irfftn_c128": (lambda x: jnp.fft.irfftn(x), _z.astype(np.complex128)),
    "rfftn": (lambda x: jnp.fft.rfftn(x), _x),
    "rfft_axis0_truncated": (lambda x: jnp.fft.rfft(x, n=2, axis=0), _x),
    "irfft_axis1": (lambda x: jnp.fft.irfft(x, n=5, axis=1), _z),
    "irfft2": (lambda x: jnp.fft.irfft2(x, s=(4, 7)), _z),
    "parts": (lambda x: (jnp.real(x), jnp.imag(x), jnp.conj(x), jnp.angle(x),
                         lax.complex(jnp.imag(x), jnp.real(x)), jnp.abs(x)), _z),
    "parts_of_real": (lambda x: (jnp.real(x), jnp.imag(x), lax.conj(x)), _x),
}


# each program on one compiler, in rotation (both: make exhaustive)
@pytest.mark.parametrize("name,compiler", [pytest.param(n, c, id=f"{n}-{c}") for n, c in
                                           covering(JAX_CORPUS, COMPILERS)])
def test_jax_programs_load(name, compiler):
    f, a = JAX_CORPUS[name]
    x64_needed = a.dtype in (np.float64, np.complex128)
    with x64() if x64_needed else jax.enable_x64(False):
        text = jax.jit(f).lower(a).as_text()
        want = jax.tree_util.tree_leaves(jax.jit(f)(a))
    got = load(text).jit(compiler)(nx.tensor(a))
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.to_numpy().dtype == w.dtype and g.shape == w.shape
        tol = 1e-4 if w.dtype in (np.float32, np.complex64) else 1e-10
        np.testing.assert_allclose(g.to_numpy(), w, rtol=tol, atol=tol)


def test_fft_forms_agree():
    """JAX's custom form of stablehlo.fft and nxpy's generic form parse to the same op."""
    sig = "(tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>"
    body = ("func.func @main(%x: tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>> {{\n"
            "  %0 = {op} : " + sig + "\n  return %0 : tensor<3x8xcomplex<f32>>\n}}")
    generic = parse(body.format(op='"stablehlo.fft"(%x) <{fft_length = array<i64: 3, 8>, '
                                   'fft_type = #stablehlo<fft_type IFFT>}>'))
    custom = parse(body.format(op="stablehlo.fft %x, type = IFFT, length = [3, 8]"))
    a, b = generic.find("stablehlo.fft")[0], custom.find("stablehlo.fft")[0]
    assert a.attrs == b.attrs == {"fft_length": [3, 8], "fft_type": "IFFT"}
    with pytest.raises(Exception, match="expected type = one of"):
        parse(body.format(op="stablehlo.fft %x, type = DFT, length = [3, 8]"))


def test_importer_uses_the_complex_ops():
    text = jax.jit(lambda x: (jnp.real(x), jnp.imag(x), lax.complex(jnp.real(x), jnp.imag(x)),
                              jnp.fft.fft2(x))).lower(_z[0]).as_text()
    prog = load(text)
    graph = str(debug_expr(prog)(*prog.templates))
    for op in ("real a", "imag a", "complex ", "fft2 a"):
        assert op in graph, graph
    assert "bitcast" not in graph


@pytest.mark.parametrize("f,arg,ops", [
    (lambda x: jnp.fft.rfft(x, n=8), _x, ["rfft", "length: 8, axis: 2"]),
    (lambda x: jnp.fft.irfft(x, n=9), _z, ["irfft", "length: 9, axis: 2"]),
    (lambda x: jnp.fft.rfft2(x), _x, ["rfft", "length: 6, axis: 2", "fft", "length: 4, axis: 1"]),
    (lambda x: jnp.fft.irfftn(x), _z, ["ifft2", "lengths: [3, 4], axes: [0, 1]", "irfft",
                                       "length: 10, axis: 2"]),
])
def test_importer_reads_real_transforms_as_rfft_irfft(f, arg, ops):
    """JAX's RFFT/IRFFT load as one nx.rfft/nx.irfft along the last dim (no composition
    of complex transforms and mirrors), the other dims as complex transforms, in order."""
    prog = load(jax.jit(f).lower(arg).as_text())
    graph = str(debug_expr(prog)(*prog.templates))
    transforms = re.findall(r"= (i?r?fft2?) \w+, (.*), eps: 0.0", graph)
    assert [x for t in transforms for x in t] == ops, graph
    for other in ("concatenate", "reverse", "conjugate"):
        assert other not in graph, graph


def test_lowering_is_jax_s():
    """The StableHLO nxpy emits: one stablehlo.fft (FFT/IFFT, fft_length), transposed to
    the trailing dims and padded or sliced first, as JAX emits it."""
    m = parse(to_mlir(lambda x: nx.ifft(x, length=10, axis=0), nx.template((3, 8), "c64")))
    ops = [op.name for op in m.main.body.ops]
    assert ops == ["stablehlo.constant", "stablehlo.pad", "stablehlo.transpose", "stablehlo.fft",
                   "stablehlo.transpose", "func.return"]
    (f,) = m.find("stablehlo.fft")
    assert f.attrs == {"fft_length": [10], "fft_type": "IFFT"}
    m = parse(to_mlir(lambda x: nx.fft2(x), nx.template((2, 3, 8), "f64")))
    assert [op.name for op in m.main.body.ops] == ["stablehlo.convert", "stablehlo.fft",
                                                  "func.return"]
    assert m.find("stablehlo.fft")[0].attrs["fft_length"] == [3, 8]


def test_real_transforms_lower_to_rfft_irfft():
    """rfft/irfft emit one stablehlo.fft of type RFFT/IRFFT, as jnp.fft.rfft/irfft do;
    irfft pads or slices its operand to length // 2 + 1 first."""
    m = parse(to_mlir(lambda x: nx.rfft(x, length=10, axis=0), nx.template((3, 8), "f32")))
    assert [op.name for op in m.main.body.ops] == [
        "stablehlo.constant", "stablehlo.pad", "stablehlo.transpose", "stablehlo.fft",
        "stablehlo.transpose", "func.return"]
    assert m.find("stablehlo.fft")[0].attrs == {"fft_length": [10], "fft_type": "RFFT"}
    m = parse(to_mlir(lambda x: nx.irfft(x, length=7), nx.template((3, 8), "c128")))
    assert [op.name for op in m.main.body.ops] == ["stablehlo.slice", "stablehlo.fft",
                                                  "func.return"]
    assert m.find("stablehlo.fft")[0].attrs == {"fft_length": [7], "fft_type": "IRFFT"}
    m = parse(to_mlir(lambda x: nx.irfft(x), nx.template((3, 8), "f16")))
    assert [op.name for op in m.main.body.ops] == ["stablehlo.convert", "stablehlo.fft",
                                                  "stablehlo.convert", "func.return"]


# ----------------------------------------------------------------------------------------
# Sharding: transforms along sharded axes give the unsharded result
# ----------------------------------------------------------------------------------------
MESH = None


def mesh22():
    global MESH
    if MESH is None:
        MESH = nx.Mesh("mesh", (2, 2))
    return MESH


SHARDED = [  # (name, fun, shape, input sharding, output sharding or None)
    ("fft_along_sharded_axis", lambda a: nx.fft(a), (4, 8), {1: [0]}, None),
    ("ifft_axis0_padded", lambda a: nx.ifft(a, length=6, axis=0), (4, 8), {0: [0], 1: [1]}, None),
    ("fft2_both_sharded", lambda a: nx.fft2(a), (4, 8), {0: [0], 1: [1]}, None),
    ("parts", lambda a: nx.conjugate(nx.complex(nx.imag(a), nx.real(a))), (4, 8),
     {0: [0], 1: [1]}, None),
    # XLA:CPU alone fails this one at run time (fft_thunk: a non-row-major operand after
    # the partitioner's all-gather); nxpy runs sharded transforms in a manual region
    ("regression_layout", lambda a: nx.fft(a), (2, 4, 8), {1: [1], 2: [0]}, {}),
    ("regression_layout_2", lambda a: nx.fft(a), (2, 4, 8), {0: [0], 2: [1]}, {}),
    ("fft2_axes_out_sharded", lambda a: nx.fft2(a, axes=[0, 2], lengths=[2, 4]), (2, 4, 8),
     {2: [0]}, {1: [0, 1]}),
    ("rfft_along_sharded_axis", lambda a: nx.rfft(nx.real(a)), (4, 8), {1: [0]}, None),
    ("irfft_axis0_odd", lambda a: nx.irfft(a, length=7, axis=0), (4, 8), {0: [0], 1: [1]}, None),
    ("rfft_layout", lambda a: nx.rfft(nx.imag(a), length=6), (2, 4, 8), {1: [1], 2: [0]}, {}),
    ("irfft_layout", lambda a: nx.irfft(a), (2, 4, 8), {0: [0], 2: [1]}, {}),
    ("irfft_out_sharded", lambda a: nx.irfft(a, axis=1), (2, 4, 8), {1: [0]}, {2: [0, 1]}),
]


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("name,fun,shape,ins,outs", SHARDED, ids=[s[0] for s in SHARDED])
def test_sharded_transforms(name, fun, shape, ins, outs, compiler):
    mesh = mesh22()
    r = np.random.default_rng(3)
    x = nx.tensor((r.standard_normal(shape) + 1j * r.standard_normal(shape)).astype(np.complex64))
    kw = {} if outs is None else {"output_shardings": [outs]}
    f = shard_jit(fun, mesh, input_shardings=[ins], compiler=compiler, **kw)
    res = f([[p] for p in SH.shard(x, mesh, ins)])
    glob = SH.assemble(res, mesh, f.output_shardings)
    np.testing.assert_allclose(glob.to_numpy(), fun(x).to_numpy(), rtol=1e-5, atol=1e-5)
    if compiler == "exla" and "fft" in name:
        assert "sdy.manual_computation" in f.lower([[p] for p in SH.shard(x, mesh, ins)])


def test_fft_sharding_rule():
    mesh = mesh22()
    x = nx.iota((4, 8), type="c64")
    f = shard_jit(lambda a: (nx.fft(a), nx.fft(a, axis=0), nx.real(a), nx.rfft(nx.real(a)),
                             nx.irfft(a, axis=0)), mesh,
                  input_shardings=[{0: [0], 1: [1]}], compiler="evaluator")
    f([[p] for p in SH.shard(x, mesh, {0: [0], 1: [1]})])
    assert f.output_shardings == (nx.P("axis_0"), nx.P(None, "axis_1"), nx.P("axis_0", "axis_1"),
                                  nx.P("axis_0"), nx.P(None, "axis_1"))


def test_fft_inside_shard_map():
    """In a manual region the FFT runs on the local blocks (no nested region)."""
    from nxpy.defn import shard_map
    mesh = mesh22()
    x = nx.tensor(np.arange(32, dtype=np.complex64).reshape(4, 8))

    def body(a):
        return nx.fft(a)
    for compiler in COMPILERS:
        f = jit(lambda a: shard_map(body, mesh, in_specs=[{0: [0, 1]}], out_specs={0: [0, 1]})(a),
                compiler=compiler)
        np.testing.assert_allclose(f(x).to_numpy(), np.fft.fft(x.to_numpy(), axis=-1), rtol=1e-5,
                                   atol=1e-4)


SHARDED_GRAD_OPS = {  # op: (nxpy, jax.numpy), each of a tensor and an axis; 8 columns out
    "fft": (lambda a, axis: nx.fft(a, axis=axis), lambda a, axis: jnp.fft.fft(a, axis=axis)),
    "rfft": (lambda a, axis: nx.rfft(a, axis=axis, length=14 if axis else None),
             lambda a, axis: jnp.fft.rfft(a, axis=axis, n=14 if axis else None)),
    "irfft": (lambda a, axis: nx.irfft(a, axis=axis, length=8),
              lambda a, axis: jnp.fft.irfft(a, axis=axis, n=8)),
}


@pytest.mark.parametrize("op", list(SHARDED_GRAD_OPS))
@pytest.mark.parametrize("ins,axis", [({0: [0]}, 0), ({1: [0, 1]}, 1), ({0: [1], 1: [0]}, 0)])
def test_sharded_grad_of_fft(ins, axis, op):
    mesh = mesh22()
    x = nx.tensor(np.arange(32, dtype=np.float32).reshape(4, 8) / 10)
    fn, fj = SHARDED_GRAD_OPS[op]
    fun = grad(lambda a: nx.sum(nx.abs(fn(a, axis)) * W1[:1, :8]))
    f = shard_jit(fun, mesh, input_shardings=[ins], compiler="exla")
    glob = SH.assemble(f([[p] for p in SH.shard(x, mesh, ins)]), mesh, f.output_shardings)
    want = jax.jit(jax.grad(lambda a: jnp.sum(jnp.abs(fj(a, axis)) * W1[:1, :8])))(x.to_numpy())
    np.testing.assert_allclose(glob.to_numpy(), np.asarray(want), rtol=1e-4, atol=1e-4)
