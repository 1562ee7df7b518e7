"""Tensor's jax.Array methods, NumPy indexing and ``x.at[idx]`` (nxpy/ops/methods.py,
nxpy/ops/indexing.py's ``index``) against jax.numpy, on the NumPy backend (eager), the
Evaluator and EXLA: the same lambda runs on an nxpy tensor and on a jax.Array, since the
method names and signatures are JAX's. Each path compiles one program per input type
holding every case (to stay fast). Gradients of ``.at[].set/add`` and advanced indexing
against jax.grad, vmap of an indexing function against jax.vmap, and argument errors.

Tolerances: exact for integers, booleans and data movement (indexing, ``at``, reshape);
reductions of floats within 1e-6 relative (f32) of ``|want|`` or of the largest input
(sums reassociate); f16 reductions within 2e-3 (jnp accumulates f16 sums in f32 too)."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt
from nxpy.defn import grad, vmap

from helpers import COMPILERS, EAGER_JIT, close, run_path

import jax  # after nxpy (conftest starts XLA)
import jax.numpy as jnp

#: JAX's result: its dtype, integers and booleans exactly, floats within 1e-6 (relative and
#: absolute)
_close = partial(close, rtol=1e-6, atol=1e-6, dtypes=True)


def _data(t, shape, seed=0):
    r = np.random.default_rng(seed)
    if t == "bool":
        return r.random(shape) < 0.5
    if t in ("int32", "int8", "uint8"):
        lo = 0 if t == "uint8" else -5
        return r.integers(lo, 6, shape).astype(t)
    x = np.round(r.standard_normal(shape) * 2, 1)
    flat = x.reshape(-1)
    flat[:8] = [0.5, 1.5, 2.5, -0.5, -2.5, -0.0, 0.25, -3.5][:flat.size]  # ties for round
    return x.astype(t)


_REFS: dict = {}


def _ref(f, args, key=None):
    """JAX's ``f`` of ``args``, jitted (one compile rather than one per op), cached under
    ``key`` across the paths."""
    if key is None or key not in _REFS:
        out = jax.tree_util.tree_map(np.asarray, jax.jit(f)(*[jnp.asarray(a) for a in args]))
        if key is None:
            return out
        _REFS[key] = out
    return _REFS[key]


# ----------------------------------------------------------------------------------------
# Methods: one table, run on every path for each input type
# ----------------------------------------------------------------------------------------
COMMON = {
    "sum": lambda x: x.sum(),
    "sum_axis_keep": lambda x: x.sum(axis=-1, keepdims=True),
    "sum_tuple": lambda x: x.sum(axis=(0, -1)),
    "sum_dtype": lambda x: x.sum(axis=1, dtype=np.float32),
    "prod": lambda x: x.prod(axis=0),
    "max": lambda x: x.max(axis=(1, 2), keepdims=True),
    "min": lambda x: x.min(),
    "argmax": lambda x: x.argmax(),
    "argmax_keep": lambda x: x.argmax(axis=None, keepdims=True),
    "argmin": lambda x: x.argmin(axis=-1, keepdims=True),
    "all": lambda x: x.all(axis=-1),
    "any": lambda x: x.any(keepdims=True),
    "cumsum": lambda x: x.cumsum(axis=-2),
    "cumsum_flat": lambda x: x.cumsum(),
    "cumprod": lambda x: x.cumprod(axis=0, dtype="float32"),
    "astype": lambda x: x.astype(np.float32),
    "astype_name": lambda x: x.astype("int8"),
    "reshape": lambda x: x.reshape(4, -1),
    "reshape_F": lambda x: x.reshape((3, 8), order="F"),
    "ravel": lambda x: x.ravel(),
    "flatten_F": lambda x: x.flatten(order="F"),
    "squeeze": lambda x: x[:, :1].squeeze(axis=1),
    "squeeze_all": lambda x: x[None, :1, 2:3].squeeze(),
    "transpose": lambda x: x.transpose(),
    "transpose_axes": lambda x: x.transpose(2, 0, -2),
    "transpose_tuple": lambda x: x.transpose((1, 0, 2)),
    "swapaxes": lambda x: x.swapaxes(0, -1),
    "T": lambda x: x.T,
    "mT": lambda x: x.mT,
    "real": lambda x: x.real,
    "imag": lambda x: x.imag,
    "conj": lambda x: x.conj(),
    "ndim": lambda x: x.reshape(x.ndim, -1),
    "mean": lambda x: x.mean(axis=-1),
    "std": lambda x: x.std(axis=(0, 2), ddof=1),
    "var": lambda x: x.var(keepdims=True),
}
NUMERIC = {
    "clip": lambda x: x.clip(1, 3),
    "clip_float": lambda x: x.clip(max=2.5),
    "clip_max": lambda x: x.clip(max=0),
    "round": lambda x: x.round(),
    "dot": lambda x: x.dot(x.swapaxes(1, 2)),
}
FLOAT = {
    "round_decimals": lambda x: x.round(1),
    "mean_dtype": lambda x: x.mean(axis=0, dtype=np.float32),
}
BOOL_SKIP = {"prod", "cumprod", "mean", "std", "var", "dot", "astype_name"}
TYPES = ("float32", "int32", "bool", "float16", "uint8")


def _cases(t):
    cases = dict(COMMON)
    if t != "bool":
        cases.update(NUMERIC)
    if t.startswith("float"):
        cases.update(FLOAT)
    if t == "bool":
        cases = {k: v for k, v in cases.items() if k not in BOOL_SKIP}
    return cases


# every type on the eager path; the compiled paths on the main kinds (f16 on EXLA)
METHOD_RUNS = [(t, "eager") for t in TYPES] + [
    (t, p) for p in COMPILERS for t in ("float32", "int32", "bool")] + [
    ("float16", "exla")]


@pytest.mark.parametrize("t,path", METHOD_RUNS)
def test_methods_match_jax(t, path):
    cases = _cases(t)
    x = _data(t, (2, 3, 4))
    names = sorted(cases)
    got = run_path(lambda v: tuple(cases[n](v) for n in names), [x], path)
    want = _ref(lambda v: tuple(cases[n](v) for n in names), [x], key=("methods", t))
    rtol = 2e-3 if t == "float16" else 1e-6
    for n, g, w in zip(names, got, want):
        _close(g, w, what=f"{t} {n} {path}", rtol=rtol, atol=rtol * float(np.abs(x).max()))


def test_methods_on_empty_dims_and_item():
    x = np.zeros((0, 3), np.float32)
    for f in (lambda v: v.sum(axis=0), lambda v: v.max(axis=1), lambda v: v.cumsum(axis=0),
              lambda v: v.mean(axis=-1), lambda v: v.reshape(3, 0).T, lambda v: v.any(),
              lambda v: v[::-1, [0, 2]], lambda v: v.at[:, 1].set(1.0)):
        _close(run_path(f, [x], "eager"), _ref(f, [x]), what="empty")
    t = nx.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert t.item(1) == 2.0 and t.item(1, 0) == 3.0 and t[0, 0].item() == 1.5
    assert t.ndim == 2 and t.size == 4 and t.sum().item() == 10.5
    c = nx.tensor(np.array([1 + 2j, -3j], np.complex64))
    _close(c.real.to_numpy(), np.array([1.0, 0.0], np.float32), what="real")
    _close(c.conj().to_numpy(), np.array([1 - 2j, 3j], np.complex64), what="conj")
    _close(c.round().to_numpy(), np.round(np.array([1 + 2j, -3j], np.complex64)), what="round")


# ----------------------------------------------------------------------------------------
# Indexing
# ----------------------------------------------------------------------------------------
I2 = np.array([2, -1])
IDX = [
    (slice(None, None, -1),), (slice(5, 1, -2),), (Ellipsis, slice(None, None, -2)),
    (slice(-1, None, -3), 1, slice(1, -1, 2)), (slice(3, 0, -1), None, Ellipsis),
    (I2,), (slice(None), I2), ([0, 3, -4],), (I2, I2), (I2, slice(None), I2),
    (slice(None), I2, I2), (slice(None), I2, None, I2), (I2, 1), (slice(None), I2, 1),
    (1, slice(None), I2), (Ellipsis, I2, None), (np.array([[0], [3]]), slice(None), I2),
    (slice(1, 3), np.array([[1], [-1]]), -1), (None, 0, slice(None), [2, 0]),
    ([],), (0, 1, 2), (-1,), (slice(None), [[4, 0], [1, 1]], slice(None, None, -1)),
    (np.int64(2), Ellipsis, np.array(3)), (slice(10, 20),), (slice(None), slice(4, 2)),
]


@pytest.mark.parametrize("path", EAGER_JIT)
def test_indexing_matches_jax(path):
    x = _data("float32", (4, 5, 6))
    fs = [lambda v, i=i: v[i] for i in IDX]
    got = run_path(lambda v: tuple(f(v) for f in fs), [x], path)
    want = _ref(lambda v: tuple(f(v) for f in fs), [x], key="indexing")
    for i, g, w in zip(IDX, got, want):
        _close(g, w, what=f"x[{i}] {path}")


@pytest.mark.parametrize("path", EAGER_JIT)
def test_indexing_with_tensor_indices_matches_jax(path):
    """Index tensors as program arguments (traced), of several integer types; out of
    bounds array indices clamp (jnp's default for reads) and negatives wrap."""
    x = _data("float32", (4, 5, 6))
    i = np.array([[3, -1, 9], [0, -7, 2]], np.int32)
    j = np.array([1, 4, -2], np.int64)
    k = np.array(-2, np.int32)

    def f(v, a, b, c):
        return (v[a], v[:, b], v[a, :, b], v[c], v[c, b], v[..., c], v.at[a].get(),
                v[a.astype(np.int8), 1, 2:0:-1])

    got = run_path(f, [x, i, j, k], path)
    want = _ref(f, [x, i, j, k], key="tensor indices")
    for n, (g, w) in enumerate(zip(got, want)):
        _close(g, w, what=f"case {n} {path}")


# ----------------------------------------------------------------------------------------
# x.at[idx]
# ----------------------------------------------------------------------------------------
AT = [
    ("set", (1,), 7.0), ("set", (slice(None), 2), np.arange(4.0)),
    ("set", (slice(None, None, -2), slice(1, 4)), 9.0),
    ("set", (slice(None), [0, -1, 7]), np.array([1.0, 2.0, 3.0])),
    ("add", ([0, 0, 2], [1, 1, -1]), np.array([1.0, 2.0, 3.0])),
    ("add", (Ellipsis, slice(1, 3)), 1.5), ("subtract", (2, [4, 1]), 2.0),
    ("multiply", (slice(1, 3), [0, 2]), 3.0), ("divide", ([1, 3],), 2.0),
    ("power", (0, slice(None, 3)), 2.0), ("min", (slice(None), [1, 3]), 0.0),
    ("max", ([3, 0], slice(None)), np.full((2, 5), 0.5)),
    ("set", (np.array([[0], [2]]), np.array([1, 3])), 4.0),
    ("set", (slice(None), np.array([[0], [2]])), np.arange(4.0).reshape(4, 1, 1)),
    ("add", (None, 1, [2, 2]), 1.0), ("set", (1, slice(None, None, 2)), -1.0),
    ("multiply", (slice(3, None, -2), -1), 4.0),
]


@pytest.mark.parametrize("path", EAGER_JIT)
def test_at_updates_match_jax(path):
    x = _data("float32", (4, 5))
    fs = [lambda v, op=op, i=i, u=u: getattr(v.at[i], op)(u) for op, i, u in AT]
    fs += [lambda v: v.at[1:3].apply(lambda r: r * 2 + 1),
           lambda v: v.at[np.array([1, 9])].get(mode="fill", fill_value=-1.0),
           lambda v: v.at[[1, 9], 2].get(mode="fill"),
           lambda v: v.at[:, [0, 9]].set(5.0, mode="clip"),
           lambda v: v.at[-1].add(1, mode="drop", unique_indices=True, indices_are_sorted=True)]
    got = run_path(lambda v: tuple(f(v) for f in fs), [x], path)
    want = _ref(lambda v: tuple(f(v) for f in fs), [x], key="at")
    for n, (g, w) in enumerate(zip(got, want)):
        _close(g, w, what=f"at case {n} {path}")


@pytest.mark.parametrize("path", EAGER_JIT)
def test_at_with_tensor_indices_and_types(path):
    """Traced indices (scalar and array, out of bounds dropped), integer and bool targets
    (values converted to the target's type)."""
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    i = np.array([3, -1, 8], np.int32)
    k = np.array(-2, np.int32)

    def f(v, a, c):
        return (v.at[a].set(0), v.at[c, a].add(10), v.at[c].set(np.int8(7)), v.at[:, a].multiply(2),
                (v > 5).at[a].set(False), v.at[a, 1:3].max(100))

    got = run_path(f, [x, i, k], path)
    want = _ref(f, [x, i, k], key="at tensor")
    for n, (g, w) in enumerate(zip(got, want)):
        _close(g, w, what=f"at tensor case {n} {path}")


#: repeated, negative and out-of-bounds indices: every update applies, as XLA's scatter
_REP = (np.array([1, 3, 1, 1, 0, 3, 7, -2, 1]), np.array([2, 0, 2, 2, 1, 0, 0, 3, -2]))


@pytest.mark.parametrize("path", EAGER_JIT)
def test_at_repeated_indices_apply_every_update(path):
    """``multiply``/``divide``/``power``/``min``/``max``/``subtract`` with an index
    repeated up to four times (a NaN among the updates for min/max), on floats and ints."""
    x = _data("float32", (5, 4), seed=2)
    u = np.round(np.random.default_rng(3).uniform(0.5, 2.0, 9), 2).astype(np.float32)
    un = u.copy()
    un[3] = np.nan
    xi = np.arange(20, dtype=np.int32).reshape(5, 4) - 7
    ui = np.array([3, -2, 5, 7, 2, -1, 4, 6, -3], np.int32)
    i, j = _REP

    def f(a, b, bn, ai, bi):
        return (a.at[i, j].multiply(b), a.at[i, j].divide(b), abs(a).at[i, j].power(b),
                a.at[i, j].min(bn), a.at[i, j].max(bn), a.at[i, j].subtract(b),
                a.at[i].multiply(2.0), ai.at[i, j].multiply(bi), ai.at[i, j].min(bi),
                ai.at[i, j].max(bi), ai.at[i, j].subtract(bi),
                a.at[i, j].multiply(b, unique_indices=False))

    got = run_path(f, [x, u, un, xi, ui], path)
    want = _ref(f, [x, u, un, xi, ui], key="at repeated")
    for n, (g, w) in enumerate(zip(got, want)):
        _close(g, w, what=f"at repeated case {n} {path}")


@pytest.mark.parametrize("path", COMPILERS)
def test_grad_of_multiply_at_repeated_indices(path):
    """JAX differentiates scatter_mul only with unique indices; its oracle here applies
    the updates one at a time, each at a unique index (the same product)."""
    x = _data("float32", (4, 5), seed=4)
    u = np.array([0.7, -1.3, 1.9, 0.4], np.float32)
    i, j = [1, 3, 1, 1], [2, 0, 2, -1]

    def nx_f(a, b):
        return nx.sum(nx.sin(a.at[nx.tensor(i), nx.tensor(j)].multiply(b)) * W)

    def jax_f(a, b):
        for k in range(4):
            a = a.at[i[k], j[k]].multiply(b[k], unique_indices=True)
        return jnp.sum(jnp.sin(a) * W)

    got = run_path(lambda a, b: grad(nx_f, argnums=(0, 1))(a, b), [x, u], path)
    want = _ref(jax.grad(jax_f, argnums=(0, 1)), [x, u])
    for g, w, what in zip(got, want, ("dx", "du")):
        _close(g, w, what=f"repeated multiply {what} {path}", rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------------------
# Gradients and vmap
# ----------------------------------------------------------------------------------------
W = np.linspace(-1.0, 2.0, 20).reshape(4, 5).astype(np.float32)
GRADS = {
    "set_static": lambda x, u, m: m.sum(m.sin(x.at[1:3, 2].set(u[:2] * 3.0)) * W),
    "set_array": lambda x, u, m: m.sum(m.sin(x.at[[0, 2, 3], [4, -1, 1]].set(u)) * W),
    "add_array": lambda x, u, m: m.sum((x.at[:, [1, 1, 3]].add(u) ** 2) * W),
    "add_neg_step": lambda x, u, m: m.sum(m.cos(x.at[::-2, 1:4].add(u)) * W),
    "advanced": lambda x, u, m: m.sum(m.exp(x[[3, 0, 0], ::-1][:, [1, 2, 2]]) * u),
    "none_and_array": lambda x, u, m: m.sum(x[None, [0, 1], 2:4].reshape(-1)[:3] ** 2 * u),
}


class _NxMath:
    sum, sin, cos, exp = staticmethod(nx.sum), staticmethod(nx.sin), staticmethod(nx.cos), \
        staticmethod(nx.exp)


@pytest.mark.parametrize("path", COMPILERS)
def test_grad_matches_jax(path):
    """Every case's gradients in one program (one compile per path)."""
    names = sorted(GRADS)
    x = _data("float32", (4, 5), seed=1)
    u = np.array([0.3, -1.2, 2.0], np.float32)

    def nx_all(a, b):
        return tuple(grad(lambda p, q, f=GRADS[n]: f(p, q, _NxMath), argnums=(0, 1))(a, b)
                     for n in names)

    def jax_all(a, b):
        return tuple(jax.grad(lambda p, q, f=GRADS[n]: f(p, q, jnp), argnums=(0, 1))(a, b)
                     for n in names)

    got = run_path(nx_all, [x, u], path)
    want = _ref(jax_all, [x, u], key="grads")
    for n, (gx, gu), (wx, wu) in zip(names, got, want):
        _close(gx, wx, what=f"{n} dx {path}", rtol=1e-5, atol=1e-5)
        _close(gu, wu, what=f"{n} du {path}", rtol=1e-5, atol=1e-5)


def test_vmap_of_indexing_matches_jax():
    x = _data("float32", (3, 4, 5))
    u = np.arange(3, dtype=np.float32)

    def f(v, s):
        return v[::-1, [0, 3, -1]].sum(axis=0) + v.at[1, [2, 0]].set(s)[1:3, 1:3].sum()

    got = vmap(f)(nx.tensor(x), nx.tensor(u)).to_numpy()
    want = np.asarray(jax.jit(jax.vmap(f))(x, u))
    _close(got, want, what="vmap", atol=1e-5)


# ----------------------------------------------------------------------------------------
# Errors: raised by the front end, before XLA
# ----------------------------------------------------------------------------------------
_X = nx.iota((2, 3), type="f32")
ERRORS = [
    (lambda: _X[_X > 1], IndexError, "boolean-mask indexing"),
    (lambda: _X[[True, False]], IndexError, "nx.select(mask, x, 0)"),
    (lambda: _X[True], IndexError, "a boolean index (True) is not supported"),
    (lambda: _X[[0.5]], IndexError, "index arrays must hold integers, got dtype float64"),
    (lambda: _X[nx.tensor([1.0])], IndexError, "integer tensors, got type f32"),
    (lambda: _X[0, 0, 0], IndexError, "too many indices (3) for tensor of rank 2"),
    (lambda: _X[..., 0, ...], IndexError, "single ellipsis"),
    (lambda: _X[:, 3], IndexError, "index 3 is out of bounds for dim 1 of size 3"),
    (lambda: _X[[0, 1], [0, 1, 2]], IndexError, "cannot be broadcast together"),
    (lambda: _X[::0], ValueError, "slice step cannot be zero"),
    (lambda: _X["a"], IndexError, "unsupported index 'a'"),
    (lambda: _X.at[0].set(nx.iota((2,))), ValueError,
     "values of shape (2,) cannot be broadcast to the indexed shape (3,)"),
    (lambda: _X.at[0].set(1.0, mode="wrap"), ValueError, "expected mode to be one of"),
    (lambda: _X.at[0].get(wrap_negative_indices=False), NotImplementedError,
     "wrap_negative_indices=False"),
    (lambda: _X.sum(axis=2), ValueError, "sum: axis 2 is out of bounds for a tensor of rank 2"),
    (lambda: _X.mean(axis=(0, 0)), ValueError, "mean: repeated axis"),
    (lambda: _X.max(axis=1.0), TypeError, "max: expected axis to be None, an int"),
    (lambda: _X.argmax(axis=(0, 1)), TypeError, "argmax: expected axis to be None or an int"),
    (lambda: _X.sum(out=_X), TypeError, "sum: out= is not supported"),
    (lambda: _X.astype("u4"), TypeError, "astype: expected dtype to be a NumPy dtype"),
    (lambda: _X.astype(None), TypeError, "astype: expected dtype"),
    (lambda: _X.round(1.5), TypeError, "round: expected decimals to be an int"),
    (lambda: nx.iota((2,)).round(-1), NotImplementedError, "decimals < 0"),
    (lambda: _X.transpose(0, 0), ValueError, "are not a permutation"),
    (lambda: _X.squeeze(axis=0), ValueError, "cannot select an axis to squeeze out"),
    (lambda: _X.reshape(6, order="K"), ValueError, "expected order to be 'C' or 'F'"),
    (lambda: nx.iota((3,)).mT, ValueError, "at least two-dimensional"),
    (lambda: _X.cumsum(axis=(0,)), TypeError, "cumsum: expected axis to be None or an int"),
    (lambda: _X.std(axis=3), ValueError, "std: axis 3 is out of bounds"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS, ids=[f"e{i}" for i in range(len(ERRORS))])
def test_errors(fn, exc, msg, monkeypatch):
    monkeypatch.setattr(pjrt, "compile", lambda *a, **k: pytest.fail("reached XLA"))
    with pytest.raises(exc) as e:
        fn()
    assert msg in str(e.value)
