"""nxpy.nn.initializers against jax.nn.initializers: the same values for the same key on
the NumPy backend, the Evaluator and EXLA (bit for bit on EXLA), in f32, f64 (JAX under
x64), f16, bf16 and c64; every mode and distribution of variance_scaling; axes arguments;
empty shapes; vmap over keys; signatures; argument errors; the initializers table of
docs/nn.md.

Off EXLA the NumPy backend rounds ``erf``/``log``/``exp`` and LAPACK's QR differently from
XLA, and XLA folds the constant factors of ``normal``'s ``sqrt(2) * erf_inv(u) * stddev``
(docs/random.md): those cases are compared normwise within 16 ulps of the largest entry.
jax 0.12 computes ``normal`` and the "normal" variance scaling as ``(sqrt(2) * stddev) *
erf_inv(u)``; nxpy follows 0.10.2 (``normal(key) * stddev``), so under 0.12 those are an
ulp apart on EXLA too."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import nxpy as nx
from nxpy import random as R
from nxpy.defn import jit, vmap
from nxpy.nn import coverage
from nxpy.nn import initializers as I

import cpu
from helpers import COMPILERS

import jax  # after nxpy started XLA (conftest)
import jax.numpy as jnp

J = jax.nn.initializers
JAX_012 = tuple(int(p) for p in jax.__version__.split(".")[:2]) >= (0, 12)
WIDE = {"f64", "c128"}


def _dt(t):
    return nx.types.parse(t).dtype


def _jkey(seed):
    return jax.random.key_data(jax.random.key(seed))


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8)


CASES = []


def case(name, nf, jf, shape, t="f32", exact="exla", scaled_normal=False):
    """``exact``: "exact" (bit-equal everywhere) or "exla" (bit-equal on EXLA, normwise
    close elsewhere); ``scaled_normal``: JAX 0.12's normal differs (see the header)."""
    if scaled_normal and JAX_012:
        exact = "close"
    CASES.append(pytest.param(len(CASES), nf, jf, shape, t, exact,
                              id=f"{name}-{'x'.join(map(str, shape))}-{t}"))


for t in ("f32", "f64", "f16", "bf16"):
    case("uniform", I.uniform(0.5), J.uniform(0.5), (4, 5), t, "exact")
    case("truncated_normal", I.truncated_normal(0.5), J.truncated_normal(0.5), (4, 5), t,
         "exact" if t != "f64" else "exla")
for t in ("f32", "f64", "bf16"):
    case("glorot_uniform", I.glorot_uniform(), J.glorot_uniform(), (6, 5), t, "exact")
    case("he_normal", I.he_normal(), J.he_normal(), (3, 3, 4, 8), t,
         "exact" if t != "f64" else "exla")
for t in ("f32", "f64", "c64"):
    case("normal", I.normal(0.3), J.normal(0.3), (4, 5), t, scaled_normal=True)
for mode, dist in [("fan_in", "truncated_normal"), ("fan_out", "normal"), ("fan_avg", "uniform"),
                   ("fan_geo_avg", "truncated_normal"), ("fan_in", "uniform"),
                   ("fan_geo_avg", "normal")]:  # every mode, every distribution
    case(f"variance_scaling-{mode}-{dist}", I.variance_scaling(1.7, mode, dist),
         J.variance_scaling(1.7, mode, dist), (3, 4, 5), "f32", scaled_normal=dist == "normal")
for dist in ("truncated_normal", "normal", "uniform"):
    case(f"variance_scaling-c64-{dist}", I.variance_scaling(2.0, "fan_in", dist),
         J.variance_scaling(2.0, "fan_in", dist), (4, 6), "c64", scaled_normal=dist == "normal")
case("lecun_uniform", I.lecun_uniform(), J.lecun_uniform(), (7, 3))
case("lecun_normal", I.lecun_normal(), J.lecun_normal(), (7, 3))
case("glorot_normal_axes", I.glorot_normal(in_axis=0, out_axis=(1, 2)),
     J.glorot_normal(in_axis=0, out_axis=(1, 2)), (6, 5, 2))
case("he_uniform_batch", I.he_uniform(batch_axis=0), J.he_uniform(batch_axis=0), (2, 4, 3))
case("kaiming_normal", I.kaiming_normal(), J.kaiming_normal(), (5, 4))
case("xavier_uniform", I.xavier_uniform(), J.xavier_uniform(), (5, 4), "f32", "exact")
case("orthogonal", I.orthogonal(2.0), J.orthogonal(2.0), (6, 5))
case("orthogonal_wide", I.orthogonal(), J.orthogonal(), (3, 7))
case("orthogonal_column_axis0", I.orthogonal(column_axis=0), J.orthogonal(column_axis=0),
     (3, 2, 4))
case("orthogonal_f64", I.orthogonal(), J.orthogonal(), (4, 4), "f64")
case("delta_orthogonal_3d", I.delta_orthogonal(), J.delta_orthogonal(), (3, 2, 4))
case("delta_orthogonal_4d", I.delta_orthogonal(0.5), J.delta_orthogonal(0.5), (3, 2, 4, 4))
case("delta_orthogonal_5d", I.delta_orthogonal(), J.delta_orthogonal(), (2, 3, 1, 2, 3))
case("constant", I.constant(3.5), J.constant(3.5), (2, 3), "f32", "exact")
case("constant_s32", I.constant(-2), J.constant(-2), (3,), "s32", "exact")
case("constant_tensor", I.constant(nx.tensor([1.0, 2.0])), J.constant(jnp.array([1.0, 2.0])),
     (3, 2), "f32", "exact")
case("zeros", I.zeros, J.zeros, (2, 3), "bf16", "exact")
case("ones", I.ones, J.ones, (4,), "f64", "exact")
case("zeros_empty", I.zeros, J.zeros, (0, 3), "f32", "exact")
case("orthogonal_empty", I.orthogonal(), J.orthogonal(), (0, 3), "f32", "exact")
case("uniform_scalar", I.uniform(), J.uniform(), (), "f32", "exact")

GROUP = 16
_NARROW = [c for c in CASES if c.values[4] not in WIDE]
_WIDE = [c for c in CASES if c.values[4] in WIDE]
GROUPS = [part[i:i + GROUP] for part in (_NARROW, _WIDE) for i in range(0, len(part), GROUP)]


def _check(where, exact, path, got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, where
    if (exact == "exact" or (exact == "exla" and path == "exla")) and cpu.exact(got.dtype):
        np.testing.assert_array_equal(_bits(got), _bits(want), err_msg=where)
        return  # else within 16 eps of the largest entry (also off the reference
    # arithmetic, tests/cpu.py)
    eps = float(np.finfo(got.dtype).eps) if got.dtype.kind in "fc" else 2.0 ** -7
    g, w = got.astype(np.complex128), want.astype(np.complex128)
    assert np.abs(g - w).max(initial=0) <= 16 * eps * np.abs(w).max(initial=0), where


@pytest.mark.parametrize("group", range(len(GROUPS)))
def test_values_like_jax(group):
    cases = [c.values for c in GROUPS[group]]
    ids = [c.id for c in GROUPS[group]]
    jkeys = jnp.stack([_jkey(c[0]) for c in cases])
    with jax.enable_x64(cases[0][4] in WIDE):
        want = jax.jit(lambda ks: [jf(ks[i], shape, _dt(t))
                                   for i, (_, _, jf, shape, t, _) in enumerate(cases)])(jkeys)
        want = [np.asarray(w) for w in want]
    keys = nx.stack([R.key(c[0]) for c in cases])

    def f(keys):
        return [nf(keys[i], shape, type=t) for i, (_, nf, _, shape, t, _) in enumerate(cases)]
    runs = {"numpy": f(keys)}
    for c in COMPILERS:
        runs[c] = jit(f, compiler=c)(keys)
    for path, outs in runs.items():
        for cid, (_, _, _, _, _, exact), w, got in zip(ids, cases, want, outs):
            _check(f"{cid} on {path}", exact, path, got.to_numpy(), w)


def test_defaults_and_type_at_creation():
    """``type`` given to the factory is the init's default; ``type`` of the init wins."""
    k = R.key(1)
    assert str(I.glorot_uniform()(k, (2, 3)).type) == "f32"
    assert str(I.glorot_uniform(type="f64")(k, (2, 3)).type) == "f64"
    assert str(I.glorot_uniform(type="f64")(k, (2, 3), type="f16").type) == "f16"
    assert str(I.zeros(k, (2,)).type) == "f32"
    with jax.enable_x64(True):
        want = np.asarray(J.lecun_normal(dtype=jnp.float64)(_jkey(1), (3, 2)))
    got = jit(lambda k: I.lecun_normal(type="f64")(k, (3, 2)), compiler="exla")(k)
    np.testing.assert_array_equal(got.to_numpy(), want)


def test_empty_fans():
    """A zero-sized shape gives an empty result (JAX 0.12; 0.10.2 divides by zero)."""
    for init in (I.glorot_uniform(), I.he_normal(), I.variance_scaling(1.0, "fan_avg", "normal")):
        assert init(R.key(0), (0, 4)).shape == (0, 4)
    if JAX_012:
        assert J.glorot_uniform()(_jkey(0), (0, 4)).shape == (0, 4)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_vmap_over_keys(compiler):
    keys = R.split(R.key(4), 3)
    jkeys = jax.random.split(_jkey(4), 3)
    got = jit(vmap(lambda k: I.glorot_uniform()(k, (4, 3))), compiler=compiler)(keys)
    want = jax.jit(jax.vmap(lambda k: J.glorot_uniform()(k, (4, 3))))(jkeys)
    np.testing.assert_array_equal(got.to_numpy(), np.asarray(want))


def test_orthogonal_is_orthogonal():
    w = I.orthogonal(3.0)(R.key(2), (5, 4, 6)).to_numpy().reshape(20, 6)
    np.testing.assert_allclose(w.T @ w, 9 * np.eye(6), atol=1e-4)
    d = I.delta_orthogonal()(R.key(2), (3, 3, 4, 4)).to_numpy()
    assert np.count_nonzero(d[0]) == 0 and np.count_nonzero(d[1, 1]) == 16


# ----------------------------------------------------------------------------------------
# Signatures and the table of docs/nn.md
# ----------------------------------------------------------------------------------------
def _params(f, drop=("out_sharding",)):
    return [("type" if p.name == "dtype" else p.name, p.kind,
             None if p.name == "dtype" else p.default)
            for p in inspect.signature(f).parameters.values() if p.name not in drop]


def _ours(f):
    return [(n, k, None if n == "type" else d) for n, k, d in _params(f)]


def test_every_initializer_has_a_row_and_a_function():
    public = {n for n in dir(J) if not n.startswith("_")}
    assert public == set(coverage.JAX_NN_INITIALIZERS), public ^ set(coverage.JAX_NN_INITIALIZERS)
    rows = {ours for ours, _ in coverage.JAX_NN_INITIALIZERS.values() if ours}
    assert rows == set(I.__all__)
    for name, (ours, note) in coverage.JAX_NN_INITIALIZERS.items():
        assert ours or note, name
        if ours:
            assert callable(getattr(I, ours)), name


@pytest.mark.parametrize("name", sorted(n for n, (o, _) in coverage.JAX_NN_INITIALIZERS.items()
                                        if o))
def test_signature_is_jax_s(name):
    """The factory's parameters (``dtype`` → ``type``), and its init's ``(key, shape,
    type)``."""
    jf, nf = getattr(J, name), getattr(I, name)
    assert _ours(nf) == _params(jf), name
    args = {"constant": (1.0,), "variance_scaling": (1.0, "fan_in", "normal")}.get(name, ())
    if name not in ("zeros", "ones"):
        assert [p[0] for p in _params(nf(*args), drop=())] == ["key", "shape", "type"], name


# ----------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,exc,match", [
    (lambda: I.variance_scaling(1.0, "fan", "normal"), ValueError, "variance_scaling: .*mode"),
    (lambda: I.variance_scaling(1.0, "fan_in", "cauchy"), ValueError, "distribution"),
    (lambda: I.variance_scaling(1.0, "fan_in", "normal", in_axis=1.5), TypeError, "in_axis"),
    (lambda: I.glorot_uniform()(R.key(0), (5,)), ValueError, "default in_axis"),
    (lambda: I.glorot_uniform(in_axis=3)(R.key(0), (5, 2)), ValueError, "in_axis 3"),
    (lambda: I.uniform()(R.key(0), (2,), type="s32"), TypeError, "uniform: expected type"),
    (lambda: I.truncated_normal()(R.key(0), (2,), type="c64"), TypeError, "truncated_normal"),
    (lambda: I.orthogonal()(R.key(0), (4,)), ValueError, "rank 2 or more"),
    (lambda: I.orthogonal(column_axis=2)(R.key(0), (4, 4)), ValueError, "column_axis"),
    (lambda: I.delta_orthogonal()(R.key(0), (4, 4)), ValueError, "rank 3, 4 or 5"),
    (lambda: I.delta_orthogonal()(R.key(0), (3, 4, 2)), ValueError, "fan_in"),
    (lambda: I.constant(nx.tensor([1.0, 2.0]))(R.key(0), (3,)), ValueError, "broadcast"),
    (lambda: I.normal()(nx.tensor([1, 2]), (3,)), TypeError, "key to have type u32"),
    (lambda: I.normal()(R.key(0), (3, -1)), ValueError, "shape"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
