"""nxpy.numpy's creation and shape functions against jax.numpy, and the coverage table of
docs/numpy.md against the installed jax.numpy.

Each group below is ONE function of the module (``xnp`` or ``jnp``) and its arguments,
returning a list of results; it runs on the NumPy backend (eager), the Evaluator and EXLA
(one compiled program per group and path, so the file stays fast) and is compared with
``jax.numpy``'s results: same shapes and dtypes; integers and pred exactly; floats within
2 ulps of their type relative to the magnitude (the functions here move data, and the
few that compute — ``linspace``, ``logspace``, ``geomspace``, the ``mean``/``linear_ramp``
pads — round as JAX does, save ``pow``'s last bit). f64 groups run JAX under x64 (nxpy
keeps f64 without it). Gradients against ``jax.grad`` and ``vmap`` against ``jax.vmap``
for the differentiable shape functions (pad modes, roll, repeat, take, tile, diagonal).
"""
from __future__ import annotations

import inspect
import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import nxpy as nx
import nxpy.numpy as xnp
from nxpy.defn import grad, jit, vmap
from nxpy.numpy import coverage

from helpers import COMPILERS, COMPLEX, EAGER_JIT, FLOATS, close, dt, run_path

import jax  # after nxpy (conftest starts XLA for both)
import jax.numpy as jnp

DOC = Path(__file__).resolve().parents[1] / "docs" / "numpy.md"
ULPS = 2


def ulps(n=ULPS):
    """``n`` ulps of each inexact type (``n`` times its epsilon): a relative tolerance."""
    return {t: n * float(jnp.finfo(dt(t)).eps) for t in (*FLOATS, *COMPLEX)}


#: jnp's result: its dtype, integers exactly, the rest within ULPS ulps of its magnitude
_close = partial(close, rtol=ulps(), atol=1e-30, dtypes=True)


def _version(v: str) -> tuple:
    return tuple(int(p) for p in re.findall(r"\d+", v)[:3])


JAX_VERSION = _version(jax.__version__)


def rnd(shape, t="float32", seed=0):
    r = np.random.default_rng(seed)
    if t == "bool":
        return r.random(shape) < 0.5
    if t in ("int32", "int8", "int64"):
        return r.integers(-9, 10, shape).astype(t)
    if t in ("uint8", "uint32"):
        return r.integers(0, 20, shape).astype(t)
    x = (r.standard_normal(shape) * 3).astype(np.float64)
    return x.astype(jnp.dtype(t))


def ref(f, args, x64=False):
    """JAX's results, jitted (op by op, jax.numpy dispatches hundreds of programs)."""
    with jax.enable_x64(x64):
        return jax.tree_util.tree_map(np.asarray, jax.jit(f)(*[jnp.asarray(a) for a in args]))


def check(group, args, paths=EAGER_JIT, x64=False):
    f, xs, *rest = GROUPS[group] if isinstance(group, str) else group
    tol = ulps(*rest[:1])
    paths = rest[1] if len(rest) > 1 else paths
    args = xs if args is None else args
    want = ref(lambda *a: f(jnp, *a), args, x64)
    for path in paths:
        got = run_path(lambda *a: f(xnp, *a), args, path)
        assert len(got) == len(want), group
        for k, (g, w) in enumerate(zip(got, want)):
            if isinstance(w, (list, tuple)):
                assert len(g) == len(w), f"{group}[{k}] on {path}: {len(g)} != {len(w)}"
                for j, (gg, ww) in enumerate(zip(g, w)):
                    _close(gg, ww, what=f"{group}[{k}][{j}] on {path}", rtol=tol)
            else:
                _close(g, w, what=f"{group}[{k}] on {path}", rtol=tol)


X = rnd((2, 3, 4))
M = rnd((3, 4), seed=1)
V = rnd((5,), seed=2)
IM = rnd((3, 4), "int32", seed=3)
C = rnd((3, 4), "bool", seed=4)
IDX = np.array([[0, -1, 2], [3, 5, -6]], np.int32)


def creation(m, v):
    m2 = m.reshape(m.arange(12.0), (3, 4))
    return [
        m.zeros((2, 3)), m.ones(3, dtype="int32"), m.full((2, 2), 7), m.empty((0, 3)),
        m.full((2,), 0.5, dtype=np.float16), m.full((2, 5), v), m.zeros_like(v),
        m.ones_like(v, dtype=bool), m.full_like(v, 3, shape=(2, 1)), m.empty_like(v),
        m.arange(5), m.arange(2, 11, 3), m.arange(1, 2, 0.25), m.arange(5, dtype="float32"),
        m.arange(10, 0, -3), m.arange(0), m.arange(3, 1),
        m.linspace(0, 1, 5), m.linspace(2, 3, 4, endpoint=False), m.linspace(0, 10, 5,
                                                                              dtype="int32"),
        m.linspace(v, v + 1, 3, axis=-1), m.linspace(v, 2.0, 4), m.linspace(0, 1, 1),
        m.linspace(0, 1, 0), m.linspace(0, 1, 5, retstep=True),
        m.linspace(0.0, 1.0, 4, endpoint=False, retstep=True),
        m.eye(3), m.eye(2, 4, k=1, dtype="int32"), m.eye(3, k=-1), m.eye(2, 3, 5),
        m.identity(2, dtype=bool), m.tri(3), m.tri(2, 4, k=1, dtype="int32"), m.tri(3, k=-2),
        m.tril(m2), m.triu(m2, k=1), m.tril(m.ones((2, 3, 3)), -1), m.triu(m2, -2),
        m.diag(v), m.diag(v, k=-1), m.diag(m2), m.diag(m2, 1), m.diag(m2, -2), m.diag(m2, 7),
        m.diagflat(m2), m.diagflat(v, 1), m.indices((2, 3)), m.indices((2, 3), sparse=True),
        m.indices((3,), dtype="float32"), m.tril_indices(3), m.triu_indices(3, 1, 4),
        m.tril_indices_from(m2), m.triu_indices_from(m2, -1),
        m.meshgrid(v, m2[0]), m.meshgrid(v, m2[0], indexing="ij"),
        m.meshgrid(v, m2[0], sparse=True), m.meshgrid(v, m2[0], m2[1]),
    ]


def shapes(m, x, v):
    return [
        m.reshape(x, (4, -1)), m.reshape(x, (6, 4), order="F"), m.reshape(x, 24),
        m.ravel(x), m.ravel(x, order="F"), m.transpose(x), m.transpose(x, (1, -1, 0)),
        m.swapaxes(x, 0, -1), m.moveaxis(x, 0, -1), m.moveaxis(x, (0, 1), (-1, 0)),
        m.expand_dims(x, (0, 2)), m.expand_dims(x, -1), m.squeeze(m.reshape(x, (1, 24, 1))),
        m.squeeze(m.reshape(x, (1, 24, 1)), axis=-1), m.flip(x), m.flip(x, 1),
        m.flip(x, (0, -1)), m.fliplr(x), m.flipud(x), m.roll(x, 3), m.roll(x, -1, axis=1),
        m.roll(x, (1, 2), axis=(0, -1)), m.roll(x, 5, axis=(0, 1)), m.roll(x, (7, -9), axis=2),
        m.rot90(x), m.rot90(x, 2), m.rot90(x, -1, axes=(1, 2)), m.rot90(x, 3), m.rot90(x, 5),
        m.tile(x, 2), m.tile(x, (2, 1, 1, 1)), m.tile(v, (2, 3)), m.repeat(x, 2),
        m.repeat(x, 2, axis=1), m.repeat(x, np.array([1, 0, 2]), axis=1),
        m.repeat(x, np.array([1, 2]), axis=0, total_repeat_length=4),
        m.repeat(x, np.array([1, 2]), axis=0, total_repeat_length=2),
        m.repeat(x, 3, axis=-1, total_repeat_length=5), m.repeat(v, 0),
        m.resize(v, (2, 5)), m.matrix_transpose(x), m.permute_dims(x, (2, 0, 1)),
        m.atleast_1d(v[0]), m.atleast_2d(v), m.atleast_3d(v), m.atleast_3d(x[0]),
        m.atleast_1d(v, x), m.broadcast_to(v, (2, 5)), m.broadcast_arrays(v, x[:, :1, :1]),
        m.astype(x, "int32"), m.copy(x),
    ]


def joins(m, x, v, i):
    return [
        m.split(x, 2), m.split(x, [1, 3], axis=-1), m.array_split(x, 3, axis=2),
        m.array_split(v, [2, 4]), m.hsplit(x, 3), m.vsplit(x, [1]), m.dsplit(x, 2),
        m.hsplit(v, 5), m.unstack(x, axis=1), m.stack([x, x]), m.stack([v, v], axis=-1),
        m.stack([v, m.astype(i[0, :1], "float32") * v]), m.hstack([v, v]), m.hstack([x, x]),
        m.vstack([v, v]), m.dstack([v, v]), m.column_stack([v, v]), m.column_stack([x[0], v[:3]]),
        m.concatenate([x, x], axis=1), m.concatenate([v, i[0]], axis=None),
        m.concatenate([x, x[:, :0]], axis=1), m.concat([v, v]), m.append(x, x, axis=0),
        m.append(v, 1.5), m.insert(v, 1, 9.0), m.insert(v, np.array([0, 2, 2]),
                                                          m.asarray([7.0, 8.0, 9.0])),
        m.insert(x, 1, 5.0, axis=1), m.insert(x[0], np.array([1, 4]), 5.0, axis=1),
        m.insert(v, -1, 3.0), m.insert(x[0], 0, v[:3], axis=1), m.delete(v, 1),
        m.delete(v, np.array([0, -1])), m.delete(x, slice(0, None, 2), axis=2),
        m.delete(x, np.array([1]), axis=None),
    ]


def pads(m, x, i):
    return [
        m.pad(x, 2), m.pad(x, ((1, 2), (0, 3)), constant_values=((1, 2), (3, 4))),
        m.pad(x, 1, constant_values=-1.5), m.pad(x, (2, 1), constant_values=(5, 6)),
        m.pad(x, (2, 1), mode="edge"), m.pad(x, 2, mode="reflect"),
        m.pad(x, ((5, 7), (1, 0)), mode="reflect"),
        m.pad(x, ((5, 7), (3, 9)), mode="reflect", reflect_type="odd"),
        m.pad(x, ((2, 4), (5, 1)), mode="symmetric"),
        m.pad(x, ((7, 2), (1, 9)), mode="symmetric", reflect_type="odd"),
        m.pad(x[:1], 2, mode="reflect"), m.pad(x[:1], 3, mode="symmetric", reflect_type="odd"),
        m.pad(i, ((4, 5), (2, 3)), mode="reflect", reflect_type="odd"), m.pad(i, 1),
        m.pad(x, 0, mode="reflect"),
    ]


def pads_more(m, x, i):
    return [
        m.pad(x, ((5, 7), (2, 9)), mode="wrap"),
        m.pad(x, ((2, 3), (1, 2)), mode="linear_ramp", end_values=((1, 2), (3, 4))),
        m.pad(x, 3, mode="linear_ramp"), m.pad(x, (2, 1), mode="maximum"),
        m.pad(x, (1, 2), mode="minimum"), m.pad(x, 2, mode="mean"), m.pad(x, 2, mode="median"),
        m.pad(x, 2, mode="maximum", stat_length=2),
        m.pad(x, 2, mode="mean", stat_length=((1, 2), (3, 1))),
        m.pad(x, 2, mode="median", stat_length=(2, 9)), m.pad(x, (1, 2), mode="empty"),
        m.pad(i, 2, mode="mean"), m.pad(i, 2, mode="median"),
        m.pad(i, 3, mode="linear_ramp", end_values=7), m.pad(i, 2, mode="wrap"),
        m.pad(x, ((1, 2), (2, 0)), mode=_pad_with, value=3.0),
    ]


def _pad_with(vector, pad_width, iaxis, kwargs):
    """A callable ``mode`` (NumPy's example): the padding filled with ``value``, scaled
    by the axis, over an expression both modules can evaluate."""
    n = vector.shape[0]
    b, a = pad_width
    keep = np.zeros(n, bool)
    keep[b:n - a] = True
    mod = jnp if isinstance(vector, jax.Array) or not isinstance(vector, nx.Tensor) else xnp
    return mod.where(mod.asarray(keep), vector, kwargs["value"] * (iaxis + 1))


def choose(m, x, c, i, idx, i3):
    return [
        m.where(c, x, -x), m.where(c, x, 0.5), m.where(i, x, 2.0), m.where(c, i, 1),
        m.select([c, x > 1], [x, i], 0), m.select([c], [i], default=-1),
        m.select(m.stack([c, x > 1]), m.stack([x, -x]), 0.5),  # arrays: their rows
        m.take(x, idx), m.take(x, idx, axis=1), m.take(x, idx, axis=0, mode="clip"),
        m.take(x, idx, axis=-1, mode="wrap"), m.take(x, idx, mode="fill", fill_value=-7.0),
        m.take(i, idx, axis=1), m.take(m.astype(i, "uint8"), idx, axis=1), m.take(c, idx),
        m.take_along_axis(x, m.reshape(idx, (1, 6)), axis=1),
        m.take_along_axis(x, i3[:, :1], axis=0),
        m.take_along_axis(x, m.reshape(i3, (1, 6)) + 2, axis=1, mode="clip"),
        m.take_along_axis(x, idx[0], axis=None),
        m.take_along_axis(x, m.reshape(i3, (6, 1)) - 1, axis=0, mode="fill", fill_value=2.0),
        m.diagonal(x), m.diagonal(x, 1), m.diagonal(x, -2), m.diagonal(x, 5),
        m.diagonal(m.reshape(m.arange(24), (2, 3, 4)), 1, 1, 2),
        m.diagonal(m.reshape(m.arange(24), (2, 3, 4)), -1, -1, 0),
        m.trace(x), m.trace(i, 1), m.trace(c), m.trace(m.astype(i, "int8")),
        m.trace(m.astype(i, "uint8")), m.trace(x, dtype="int32"),
        m.trace(m.reshape(m.arange(24.0), (2, 3, 4)), 1, 1, 2),
    ]


def spaces(m, v):
    """pow's last bits (and nxpy's log10, a quotient of logs) differ: 16 ulps."""
    return [m.logspace(0, 2, 3), m.logspace(0, 3, 4, base=2.0), m.logspace(v, 2, 3, axis=-1),
            m.geomspace(1, 1000, 4), m.geomspace(-1, -100, 3),
            m.geomspace(2, 32, 5, dtype="float16"), m.geomspace(m.abs(v) + 1, 10.0, 3, axis=1),
            m.bartlett(6), m.blackman(7) + 1.0, m.hamming(5), m.hanning(8) + 1.0, m.hamming(1),
            m.hanning(0)]


def indexing(m, x, c, i):
    return [
        m.nonzero(c, size=5), m.nonzero(i, size=20, fill_value=-1),
        m.nonzero(c, size=4, fill_value=(7, 8)), m.flatnonzero(c, size=3),
        m.argwhere(i, size=6, fill_value=2), m.where(c, size=2), m.nonzero(c[0], size=0),
        m.compress(c[0], x, axis=1, size=3), m.compress(c[:, 0], x, axis=0, size=2,
                                                         fill_value=9.0),
        m.extract(c, x, size=5), m.extract(i > 0, i, size=3, fill_value=-5),
        m.unravel_index(m.asarray([0, 5, 11, 12, -1, -13]), (3, 4)),
        m.ravel_multi_index((m.asarray([0, 2, 5]), m.asarray([3, -1, 1])), (3, 4),
                            mode="clip"),
        m.ravel_multi_index((m.asarray([0, 2, 5]), m.asarray([3, -1, 1])), (3, 4),
                            mode="wrap", order="F"),
        m.diag_indices(3), m.diag_indices_from(m.zeros((2, 2, 2))),
        m.fill_diagonal(x, 5.0, inplace=False), m.fill_diagonal(x, x[0, :2], inplace=False),
        m.fill_diagonal(m.zeros((3, 3, 3)), m.arange(2.0), inplace=False),
        m.rollaxis(m.zeros((1, 2, 3, 4)), 3, 1), m.rollaxis(m.zeros((1, 2, 3, 4)), 0, 3),
        m.ix_(m.asarray([0, 1]), m.asarray([2, 0, 1])),
        m.block([[x, x[:, :1]], [m.zeros((1, 5))]]), m.block([x[0], x[1]]), m.block(x),
        m.choose(i, [x, -x, 2 * x], mode="wrap"), m.choose(i[0], [i[1], 7, i[2]], mode="clip"),
        m.put(x, m.asarray([0, -2, 20, 5]), m.asarray([1.0, 2.0]), inplace=False),
        m.put(i, m.asarray([[1, 13], [-14, 2]]), -3, mode="clip", inplace=False),
        m.put(i, m.asarray([1, 13, -14]), m.asarray([7, 8, 9]), mode="wrap", inplace=False),
        m.mask_indices(3, m.triu, 1, size=3), m.mask_indices(3, m.tril, size=8),
    ]


def test_data_dependent_sizes_eagerly():
    """Without ``size=``, eagerly, the size comes from the values (as JAX's eager path);
    traced, a clear error."""
    c, x = rnd((3, 4), "bool", seed=11), rnd((3, 4), seed=12)
    for f in (lambda m, c, x: m.nonzero(c), lambda m, c, x: m.argwhere(x > 0),
              lambda m, c, x: m.compress(c[0], x, axis=1)):
        got = run_path(lambda c, x: f(xnp, c, x), [c, x], "eager")
        want = jax.tree_util.tree_map(np.asarray, f(jnp, jnp.asarray(c), jnp.asarray(x)))
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            _close(g, w)
    for f in (lambda c: xnp.nonzero(c)[0], lambda c: xnp.where(c)[0]):
        with pytest.raises(ValueError, match=r"size=\.\.\."):
            jit(f, compiler="evaluator")(nx.tensor(c))


#: name → (function, arguments, float tolerance in ulps, paths)
GROUPS = {
    "spaces": (spaces, [V], 16),
    "creation": (creation, [V], ULPS, ("eager", "evaluator")),
    "shapes": (shapes, [X, V]),
    "joins": (joins, [X, V, IM], ULPS, ("eager", "evaluator")),
    "pads": (pads, [M, IM]),
    "pads_more": (pads_more, [M, IM], ULPS, ("eager", "evaluator")),
    "choose": (choose, [M, C, IM, IDX, np.mod(IDX, 3)]),
    "indexing": (indexing, [M, C, IM]),
}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_against_jax_numpy(group):
    """Every group on the eager path and the Evaluator; EXLA compiles the ones with the
    most distinct lowerings (its compiles dominate the file's time): shapes, the reflect
    and constant pads, the indexing functions, the spaces, the dtypes below."""
    check(group, None)


def typed(m, x):
    """The type-generic functions, for every dtype."""
    return [m.reshape(x, (-1,)), m.flip(x, 0), m.roll(x, 1, axis=1), m.pad(x, 1),
            m.pad(x, 2, mode="reflect"), m.pad(x, (1, 2), mode="wrap"),
            m.pad(x, 1, mode="edge"), m.concatenate([x, x], axis=-1), m.repeat(x, 2, axis=0),
            m.take(x, m.asarray([0, 2, -1]), axis=1, mode="clip"), m.tile(x, (1, 2)),
            m.where(m.asarray([True, False, True, False]), x, x[0]), m.diagonal(x),
            m.zeros_like(x), m.full_like(x, 1), m.triu(x), m.split(x, 2, axis=1),
            m.stack([x, x], axis=1), m.moveaxis(x, 0, 1), m.insert(x, 1, x[0], axis=0),
            m.pad(x, 1, mode="maximum"), m.pad(x, 1, mode="minimum")]


TYPES = ("int32", "uint8", "int8", "bfloat16", "float16", "bool", "float64", "int64")
#: EXLA where the type's lowering matters (floats of every width, pred); the Evaluator
#: (the traced graph) for the integers
EXLA_TYPES = ("bfloat16", "float16", "float64", "bool")


@pytest.mark.parametrize("x64", [False, True])
def test_dtypes(x64):
    """:func:`typed` on every dtype: one JAX program for the narrow types, one under x64 for
    f64/s64, and one nxpy program per path (each program takes every dtype's input)."""
    xs = {t: rnd((3, 4), t, seed=5) for t in TYPES}

    def each(m, *args):
        return [typed(m, a) for a in args]
    ts = [t for t in TYPES if (t in ("float64", "int64")) == x64]
    want = dict(zip(ts, ref(lambda *a: each(jnp, *a), [xs[t] for t in ts], x64)))
    for path, chosen in (("eager", TYPES), ("evaluator", [t for t in ts if t not in
                                                           EXLA_TYPES]),
                         ("exla", [t for t in ts if t in EXLA_TYPES])):
        chosen = [t for t in ts if t in chosen]
        if not chosen:
            continue
        got = run_path(lambda *a: each(xnp, *a), [xs[t] for t in chosen], path)
        for t, g in zip(chosen, got):
            for k, (gg, ww) in enumerate(zip(g, want[t])):
                if isinstance(ww, (list, tuple)):
                    for j, (g2, w2) in enumerate(zip(gg, ww)):
                        _close(g2, w2, what=f"{t}[{k}][{j}] on {path}")
                else:
                    _close(gg, ww, what=f"{t}[{k}] on {path}")


def empties(m, x, y):
    return [m.roll(x, 2, axis=1), m.roll(x, (1, 2), axis=(1, -1)), m.flip(x),
            m.pad(x, ((0, 0), (1, 2))),
            m.concatenate([x, x]), m.repeat(x, 3, axis=1), m.tile(x, 2), m.split(y, 2, axis=0),
            m.diagonal(x), m.take(y, m.asarray([0, 1]), axis=0), m.reshape(x, (3, 0, 1)),
            m.transpose(x), m.stack([x, x], axis=-1), m.zeros((0, 2)), m.trace(x),
            m.insert(x, 0, 1.0, axis=1), m.delete(y, 0, axis=0), m.expand_dims(x, 1),
            m.pad(y, ((1, 1), (0, 0)), mode="wrap"), m.pad(y, ((2, 0), (0, 0)), mode="edge")]


def test_empty_dims():
    check((empties, None), [np.zeros((0, 3), np.float32), np.zeros((4, 0), np.float32)])


# gradients and vmap ------------------------------------------------------------------------

GRADS = {
    "pad_reflect_odd": lambda m, x: m.pad(x, ((5, 2), (1, 6)), mode="reflect",
                                          reflect_type="odd"),
    "pad_symmetric": lambda m, x: m.pad(x, ((4, 2), (1, 5)), mode="symmetric"),
    "pad_edge": lambda m, x: m.pad(x, (2, 3), mode="edge"),
    "pad_wrap": lambda m, x: m.pad(x, ((5, 1), (2, 7)), mode="wrap"),
    "pad_ramp": lambda m, x: m.pad(x, 2, mode="linear_ramp", end_values=1.5),
    "pad_mean": lambda m, x: m.pad(x, 2, mode="mean", stat_length=2),
    "pad_median": lambda m, x: m.pad(x, 2, mode="median"),
    "pad_maximum": lambda m, x: m.pad(x, 1, mode="maximum"),
    "pad_constant": lambda m, x: m.pad(x, ((1, 2), (0, 1)), constant_values=3.0),
    "roll": lambda m, x: m.roll(x, (1, -2), axis=(0, 1)),
    "roll_flat": lambda m, x: m.roll(x, 5),
    "repeat": lambda m, x: m.repeat(x, np.array([1, 0, 3]), axis=0),
    "repeat_int": lambda m, x: m.repeat(x, 2, axis=1),
    "take": lambda m, x: m.take(x, m.asarray([0, 3, -1, 9]), axis=1),
    "tile": lambda m, x: m.tile(x, (2, 2)),
    "diagonal": lambda m, x: m.diagonal(x, 1),
    "rot90": lambda m, x: m.rot90(x),
    "insert": lambda m, x: m.insert(x, np.array([0, 2]), 1.0, axis=1),
}


_JAX_CACHE: dict = {}


def _jax_grads_and_vmaps():
    """JAX's gradients of every :data:`GRADS` loss and ``vmap`` of every :data:`VMAPS`
    function, in one compiled program (a compile per function dominated the file)."""
    if not _JAX_CACHE:
        def jloss(f, u):
            y = f(jnp, u)
            w = jnp.arange(y.size, dtype=jnp.float32).reshape(y.shape) + 1.0
            return jnp.sum(jnp.sin(y) * w)

        def both(x, xb):
            return ({n: jax.grad(lambda u, f=f: jloss(f, u))(x) for n, f in GRADS.items()},
                    {n: jax.vmap(lambda u, f=GRADS[n]: f(jnp, u))(xb) for n in VMAPS})
        g, v = jax.jit(both)(jnp.asarray(GRAD_X), jnp.asarray(VMAP_X))
        _JAX_CACHE.update(grad={k: np.asarray(a) for k, a in g.items()},
                          vmap={k: np.asarray(a) for k, a in v.items()})
    return _JAX_CACHE


GRAD_X = rnd((3, 4), seed=7)
VMAP_X = rnd((5, 3, 4), seed=8)
VMAPS = ["pad_reflect_odd", "pad_wrap", "pad_mean", "roll", "repeat", "take", "diagonal"]


@pytest.mark.parametrize("name", sorted(GRADS))
def test_grad_against_jax(name):
    want = _jax_grads_and_vmaps()["grad"][name]
    got = grad(lambda u: _loss_nx(GRADS[name], u))(nx.tensor(GRAD_X)).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


def _loss_nx(f, u):
    y = f(xnp, u)
    w = nx.reshape(nx.as_type(nx.iota((y.size,)), "f32"), y.shape)
    return nx.sum(nx.multiply(nx.sin(y), nx.add(w, 1.0)))


@pytest.mark.parametrize("name", VMAPS)
def test_vmap_against_jax(name):
    want = _jax_grads_and_vmaps()["vmap"][name]
    got = vmap(lambda u: GRADS[name](xnp, u))(nx.tensor(VMAP_X)).to_numpy()
    _close(got, want, what=name)


def test_traced_arguments():
    """Values that may be traced: a shift, fill values, linspace's bounds, repeat's counts
    with a total length, constant pad values."""
    x, s = rnd((3, 4), seed=9), np.int32(-3)

    def f(m, x, s):
        return [m.roll(x, s, axis=1), m.full((2, 3), s), m.linspace(x[0], x[1], 3),
                m.repeat(x, m.asarray([1, 2, 0], dtype="int32") + 0 * s, axis=0,
                         total_repeat_length=5),
                m.pad(x, 1, constant_values=x[0, 0])]
    want = ref(lambda *a: f(jnp, *a), [x, s])
    for path in COMPILERS:
        got = run_path(lambda *a: f(xnp, *a), [x, s], path)
        for g, w in zip(got, want):
            _close(g, w, what=path)


# errors -------------------------------------------------------------------------------------

ERRORS = [
    (lambda: xnp.zeros((2, -1)), ValueError, "zeros: expected shape of non-negative"),
    (lambda: xnp.zeros("x"), TypeError, "zeros: expected shape"),
    (lambda: xnp.full((2, 3), xnp.zeros(2)), ValueError, "full: fill_value of shape (2,)"),
    (lambda: xnp.ones(2, dtype="nope"), TypeError, "ones: expected dtype"),
    (lambda: xnp.arange(0, 3, 0), ValueError, "arange: step"),
    (lambda: xnp.linspace(0, 1, -1), ValueError, "linspace: expected num"),
    (lambda: xnp.reshape(xnp.zeros(6), (4, -1)), ValueError, "reshape: cannot reshape"),
    (lambda: xnp.reshape(xnp.zeros(6), (-1, -1)), ValueError, "reshape: expected at most"),
    (lambda: xnp.reshape(xnp.zeros((0, 3)), (0, -1)), ValueError, "reshape: cannot reshape"),
    (lambda: xnp.transpose(xnp.zeros((2, 3)), (0, 0)), ValueError, "transpose: repeated"),
    (lambda: xnp.squeeze(xnp.zeros((2, 3)), 0), ValueError, "squeeze: cannot select"),
    (lambda: xnp.flip(xnp.zeros(2), 1), ValueError, "flip: axis 1 is out of bounds"),
    (lambda: xnp.moveaxis(xnp.zeros((2, 3)), 0, (0, 1)), ValueError, "moveaxis"),
    (lambda: xnp.split(xnp.zeros(5), 2), ValueError, "split: array split does not"),
    (lambda: xnp.concatenate([xnp.zeros(2), xnp.zeros((2, 1))]), ValueError, "concatenate"),
    (lambda: xnp.stack([xnp.zeros(2), xnp.zeros(3)]), ValueError, "stack: all input"),
    (lambda: xnp.pad(xnp.zeros(2), 1, mode="nope"), ValueError, "pad: unimplemented"),
    (lambda: xnp.pad(xnp.zeros(2), -1), ValueError, "pad: index can't contain negative"),
    (lambda: xnp.pad(xnp.zeros(2), 1, reflect_type="odd"), ValueError, "pad: unsupported"),
    (lambda: xnp.pad(xnp.zeros((0, 2)), 1, mode="reflect"), ValueError, "empty axis"),
    (lambda: xnp.pad(xnp.zeros(2), 1, mode="mean", stat_length=0), ValueError, "stat_length"),
    (lambda: xnp.pad(xnp.zeros(2), 1, mode=lambda v, *a: v[:1]), ValueError,
     "pad: the mode function must return"),
    (lambda: xnp.fill_diagonal(xnp.zeros((2, 2)), 1.0), NotImplementedError, "inplace=False"),
    (lambda: xnp.put(xnp.zeros(2), xnp.asarray([0]), 1.0), ValueError, "put: nxpy tensors"),
    (lambda: xnp.choose(xnp.asarray([3]), [xnp.zeros(1)]), ValueError, "choose: invalid"),
    (lambda: xnp.block((xnp.zeros(1),)), ValueError, "block: arrays is a tuple"),
    (lambda: xnp.ravel_multi_index((xnp.asarray([3]),), (3,)), ValueError, "invalid entry"),
    (lambda: xnp.block([[xnp.zeros(1)], xnp.zeros(1)]), ValueError, "block: list depths"),
    (lambda: xnp.nonzero(xnp.asarray(1)), ValueError, "nonzero: calling nonzero on a 0-d"),
    (lambda: xnp.where(xnp.asarray([True]), 1), ValueError, "where: either both"),
    (lambda: xnp.select([xnp.asarray([1])], [xnp.asarray([1])]), TypeError, "select"),
    (lambda: xnp.take(xnp.zeros(3), xnp.asarray([1.0])), TypeError, "take: expected integer"),
    (lambda: xnp.take(xnp.zeros(3), xnp.asarray([1]), mode="x"), ValueError, "take: expected"),
    (lambda: xnp.diagonal(xnp.zeros(3)), ValueError, "diagonal: expected rank"),
    (lambda: xnp.repeat(xnp.zeros(3), [1, 2]), ValueError, "repeat: expected 3 repeats"),
    (lambda: xnp.repeat(xnp.zeros(3), -1), ValueError, "repeat: expected non-negative"),
    (lambda: xnp.broadcast_to(xnp.zeros(3), (2, 2)), ValueError, "broadcast_to: cannot"),
    (lambda: xnp.broadcast_shapes((2,), (3,)), ValueError, "broadcast_shapes"),
    (lambda: xnp.delete(xnp.zeros(3), 5), IndexError, "delete: index out of bounds"),
    (lambda: xnp.insert(xnp.zeros(3), 5, 1.0), IndexError, "insert: index out of bounds"),
    (lambda: xnp.tril(xnp.zeros(3)), ValueError, "tril: expected m of rank"),
    (lambda: xnp.meshgrid(xnp.zeros(2), indexing="x"), ValueError, "meshgrid: expected"),
    (lambda: xnp.rot90(xnp.zeros((2, 2)), axes=(0, 0)), ValueError, "rot90: axes must"),
    (lambda: xnp.vsplit(xnp.zeros(3), 1), ValueError, "vsplit: expected rank"),
    (lambda: xnp.take_along_axis(xnp.zeros((2, 2)), xnp.asarray([0]), 0), ValueError,
     "take_along_axis: indices and arr"),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors(k):
    f, exc, match = ERRORS[k]
    with pytest.raises(exc, match=re.escape(match)):
        f()


def test_arange_needs_static_bounds():
    with pytest.raises(TypeError, match="arange: expected stop to be a static number"):
        jit(lambda x: xnp.arange(0, x), compiler="evaluator")(nx.tensor(3))


# the coverage table ---------------------------------------------------------------------------

def public_names() -> set:
    return {n for n in dir(jnp) if not n.startswith("_")}


def test_every_public_name_of_jax_numpy_has_a_row():
    missing = public_names() - set(coverage.JAX_NUMPY)
    assert not missing, (f"jax.numpy {jax.__version__} has {sorted(missing)}: add a row to "
                         "nxpy/numpy/coverage.py")


def test_every_row_is_a_name_of_jax_numpy_or_says_since_when():
    for name, (_, since) in coverage.JAX_NUMPY.items():
        if name not in public_names():
            assert since and _version(since) > JAX_VERSION, \
                f"jax.numpy {jax.__version__} has no {name}: give its row the version"
        else:
            assert since is None or _version(since) <= JAX_VERSION, name


def test_every_missing_name_gives_a_reason():
    for name, (ours, note) in coverage.rows().items():
        assert ours or note, f"{name}: no nxpy function and no reason"


def test_every_export_is_a_name_of_jax_numpy():
    extra = set(xnp.__all__) - set(coverage.JAX_NUMPY) - coverage.EXTRAS
    assert not extra, f"nxpy.numpy exports {sorted(extra)}, which jax.numpy lacks"


def test_common_functions_reach_the_bar():
    have = [n for n in coverage.COMMON if hasattr(xnp, n)]
    missing = sorted(set(coverage.COMMON) - set(have))
    assert len(have) >= coverage.BAR * len(coverage.COMMON), \
        f"{len(have)} of {len(coverage.COMMON)} common functions; missing {missing}"
    assert set(coverage.COMMON) <= set(coverage.JAX_NUMPY)


def _present_functions():
    return sorted(n for n in coverage.JAX_NUMPY if n in public_names() and hasattr(xnp, n)
                  and inspect.isfunction(getattr(xnp, n)))


def _positional(params) -> tuple[int, bool]:
    """How many positional arguments a signature takes, and whether any number."""
    ps = list(params.values())
    return (sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in ps),
            any(p.kind == p.VAR_POSITIONAL for p in ps))


#: functions of mathematics.py and reductions.py (another session's) whose signatures
#: differ from jax.numpy's and that declare no PARAMETER_GAPS yet: strict xfails, so that
#: fixing one (or declaring its gap) makes this list shrink
SIGNATURE_TODO: set = set()


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="signature differs; not "
                                                               "declared in the module"))
    if n in SIGNATURE_TODO else n for n in _present_functions()])
def test_accepts_jax_numpy_s_parameters(name):
    """nxpy's function takes the arguments JAX's does: as many positional ones (names of
    positional-only ones are free), every parameter that can be passed by keyword, by the
    same name and in the same place, save the placement ones (:data:`coverage.GENERIC_GAPS`),
    JAX's private ones (``_name``) and those declared in a module's ``PARAMETER_GAPS``; a
    ``jax.numpy`` ufunc (``*args``) by its number of inputs."""
    jf = getattr(jnp, name)
    ours = inspect.signature(getattr(xnp, name)).parameters
    n_ours, var_ours = _positional(ours)
    if hasattr(jf, "nin"):  # a ufunc: add(x, y), with out/where that JAX rejects
        assert var_ours or n_ours >= jf.nin, f"{name}: fewer than {jf.nin} positional inputs"
        return
    try:
        theirs = inspect.signature(jf).parameters
    except (TypeError, ValueError):
        pytest.skip(f"jax.numpy.{name} has no signature")
    gaps = coverage.parameter_gaps().get(name, {})
    skip = set(coverage.GENERIC_GAPS) | set(gaps)
    n_theirs, var_theirs = _positional({k: p for k, p in theirs.items() if k not in skip})
    assert var_ours or (n_ours >= n_theirs and not var_theirs), \
        f"{name}: takes {n_ours} positional arguments, jax.numpy {n_theirs}"
    ours_kw = {k: p for k, p in ours.items() if p.kind != p.POSITIONAL_ONLY}
    takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in ours.values())
    for k, p in theirs.items():
        if k in skip or k.startswith("_") or p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL,
                                                          p.VAR_KEYWORD):
            continue
        assert k in ours_kw or takes_kwargs, \
            f"{name}: no parameter {k!r} (jax.numpy: {inspect.signature(jf)})"
        if p.kind == p.POSITIONAL_OR_KEYWORD and k in ours_kw:
            assert list(theirs).index(k) == list(ours).index(k), \
                f"{name}: {k!r} is not where jax.numpy has it"
    for k, q in ours.items():
        if q.default is q.empty and q.kind == q.KEYWORD_ONLY:
            assert k in theirs and theirs[k].default is theirs[k].empty, \
                f"{name}: requires {k!r}"


def test_docs_numpy_md_is_current():
    text = DOC.read_text()
    assert text == coverage.with_table(text), \
        "docs/numpy.md's table is stale: run python -m nxpy.numpy.coverage"
