"""Gradients through collectives and sharded programs, device by device against JAX.

Each program is written once against a small adapter (``NXL`` for nxpy, ``JXL`` for JAX),
so the nxpy program and its JAX twin are the same code. nxpy's local ``all_gather``
returns a value invariant along its axes, which is JAX's ``all_gather_invariant``
(``jax.lax.all_gather``'s result stays varying); cases that name ``L.ag_var`` use
``jax.lax.all_gather`` on the JAX side instead. Expected values are computed here by JAX
(``jax.grad`` of ``jax.shard_map`` with ``check_vma=True``), by nxpy on one device, or by
NumPy (``pmax``/``pmin``, which JAX cannot differentiate).
"""
import dataclasses
import functools
import zlib
from typing import Callable

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import (all_gather, all_to_all, axis_index, checkpoint, collective_broadcast,
                       grad, jit, jvp, pmax, pmean, pmin, ppermute, psum, psum_scatter,
                       scan, shard_jit, shard_map, value_and_grad, while_loop)
from nxpy.defn.sharding import specs as SH
from nxpy.layout import read_sharding

from helpers import COMPILERS, covering

import jax  # after nxpy started XLA (conftest), so both share the 8 host devices
import jax.numpy as jnp
from jax.sharding import Mesh as JMesh, PartitionSpec as P
from jax._src.lax import parallel as _parallel
# not re-exported by jax.lax; private (leading underscore) from jax 0.12
all_gather_invariant = getattr(_parallel, "all_gather_invariant", None) or \
    _parallel._all_gather_invariant

MESHES = [(2, 2), (2, 4)]
NAMES = ALL = ("x", "y")
RTOL, ATOL = 2e-5, 2e-5

_NX_MESHES: dict = {}
_JX_MESHES: dict = {}


def nx_mesh(shape, names=NAMES):
    key = (tuple(shape), tuple(names))
    if key not in _NX_MESHES:
        _NX_MESHES[key] = nx.Mesh("mesh", tuple(shape), axis_names=tuple(names))
    return _NX_MESHES[key]


def jx_mesh(shape, names=NAMES):
    key = (tuple(shape), tuple(names))
    if key not in _JX_MESHES:
        n = int(np.prod(shape))
        devs = np.empty(n, dtype=object)
        devs[:] = jax.devices()[:n]
        _JX_MESHES[key] = JMesh(devs.reshape(shape), tuple(names))
    return _JX_MESHES[key]


# ----------------------------------------------------------------------------------------
# One program, two libraries
# ----------------------------------------------------------------------------------------
class NXL:
    """nxpy's side of the adapter."""
    sin, cos, tanh = staticmethod(nx.sin), staticmethod(nx.cos), staticmethod(nx.tanh)
    dot = staticmethod(nx.dot)
    grad = staticmethod(grad)

    @staticmethod
    def sum(x):
        return nx.sum(x)

    @staticmethod
    def mean(x):
        return nx.mean(x)

    @staticmethod
    def const(a):
        return nx.tensor(np.asarray(a))

    @staticmethod
    def expand(v):
        return nx.new_axis(v, 0)

    @staticmethod
    def cond(pred, on_true, on_false):
        return nx.cond(pred, on_true, on_false)

    @staticmethod
    def idx(axes):
        return nx.as_type(axis_index(axes), "f32")

    @staticmethod
    def ag(v, axes, dim, tiled=True):
        return all_gather(v, axes=axes, all_gather_dim=dim, tiled=tiled)

    ag_var = ag

    psum, pmean, pmax, pmin = (staticmethod(f) for f in (psum, pmean, pmax, pmin))
    ppermute = staticmethod(ppermute)
    scan, remat, jvp = staticmethod(scan), staticmethod(checkpoint), staticmethod(jvp)

    @staticmethod
    def ppermute_given_order(v, axes, perm, m):
        return ppermute(v, axes, perm)

    @staticmethod
    def rs(v, axes, dim, tiled):
        return psum_scatter(v, axes, scatter_dimension=dim, tiled=tiled)

    @staticmethod
    def a2a(v, axes, split, concat, tiled):
        return all_to_all(v, axes, split, concat, tiled=tiled)

    @staticmethod
    def bcast(v, axes, source):
        return collective_broadcast(v, axes, source=source)

    @staticmethod
    def smap(f, mesh_shape, in_specs, out_specs, names=NAMES):
        return shard_map(f, nx_mesh(mesh_shape, names), in_specs=list(in_specs),
                         out_specs=nx.P(*out_specs) if isinstance(out_specs, tuple)
                         else list(out_specs))  # a tuple is one per-dim spec, as for JAX


class JXL:
    """JAX's side of the adapter."""
    sin, cos, tanh = staticmethod(jnp.sin), staticmethod(jnp.cos), staticmethod(jnp.tanh)
    dot = staticmethod(jnp.dot)
    grad = staticmethod(jax.grad)

    @staticmethod
    def sum(x):
        return jnp.sum(x)

    @staticmethod
    def mean(x):
        return jnp.mean(x)

    @staticmethod
    def const(a):
        return jnp.asarray(a)

    @staticmethod
    def expand(v):
        return v[None]

    @staticmethod
    def cond(pred, on_true, on_false):
        return jax.lax.cond(pred, on_true, on_false)

    @staticmethod
    def idx(axes):
        return jax.lax.axis_index(axes).astype(jnp.float32)

    @staticmethod
    def ag(v, axes, dim, tiled=True):
        return all_gather_invariant(v, axes, axis=dim, tiled=tiled)

    @staticmethod
    def ag_var(v, axes, dim, tiled=True):
        return jax.lax.all_gather(v, axes, axis=dim, tiled=tiled)

    psum, pmean = staticmethod(jax.lax.psum), staticmethod(jax.lax.pmean)
    ppermute = staticmethod(jax.lax.ppermute)
    scan, remat, jvp = staticmethod(jax.lax.scan), staticmethod(jax.checkpoint), \
        staticmethod(jax.jvp)

    @staticmethod
    def ppermute_given_order(v, axes, perm, m):
        """nxpy counts ppermute's indices along ``axes`` in the order given (as axis_index
        does): the same permutation, renumbered to mesh order, over the axes in mesh order
        (JAX 0.10 counted in mesh order whatever the order given; JAX 0.12 refuses axes
        out of mesh order)."""
        sizes = [m[NAMES.index(a)] for a in axes]
        order = sorted(range(len(axes)), key=lambda i: NAMES.index(axes[i]))

        def renumber(k):
            coords = np.unravel_index(k, sizes)
            return int(np.ravel_multi_index([coords[i] for i in order], [sizes[i] for i in order]))
        return jax.lax.ppermute(v, tuple(axes[i] for i in order),
                                [(renumber(s), renumber(d)) for s, d in perm])

    @staticmethod
    def rs(v, axes, dim, tiled):
        return jax.lax.psum_scatter(v, axes, scatter_dimension=dim, tiled=tiled)

    @staticmethod
    def a2a(v, axes, split, concat, tiled):
        if tiled:
            return jax.lax.all_to_all(v, axes, split, concat, tiled=True)
        # untiled, through the tiled op: JAX 0.10.2's transpose of the untiled op fails
        # ("Expected cotangent type float32[2,4,1] but got float32[2,1,4]")
        pos, sa = (concat, split + 1) if concat <= split else (concat + 1, split)
        out = jax.lax.all_to_all(jnp.expand_dims(v, pos), axes, sa, pos, tiled=True)
        return jnp.squeeze(out, sa)

    @staticmethod
    def bcast(v, axes, source):  # what nxpy lowers collective_broadcast to
        return jax.lax.psum(jnp.where(jax.lax.axis_index(axes) == source, v, 0), axes)

    @staticmethod
    def smap(f, mesh_shape, in_specs, out_specs, names=NAMES):
        outs = P(*out_specs) if isinstance(out_specs, tuple) else tuple(P(*s) for s in out_specs)
        return jax.shard_map(f, mesh=jx_mesh(mesh_shape, names),
                             in_specs=tuple(P(*s) for s in in_specs), out_specs=outs)


def inputs(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def blocks(arr, mesh_shape, spec, names=NAMES):
    """The local block of ``arr`` each device holds under ``spec`` (partition order)."""
    mesh = nx_mesh(mesh_shape, names)
    return read_sharding(spec, arr.shape, mesh).shard_array(np.asarray(arr))


def assert_close(got, want, what, rtol=RTOL, atol=ATOL):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * max(1.0, np.abs(want).max()),
                               err_msg=what)


def per_device(got, mesh_shape, want_per_device, what):
    """``got``: a (devices, ...) array, one row per device in partition order."""
    got = np.asarray(got)
    assert got.shape[0] == len(want_per_device) == int(np.prod(mesh_shape))
    for p, w in enumerate(want_per_device):
        assert_close(got[p], w, f"{what}, device {p}")


# ----------------------------------------------------------------------------------------
# 1. The gradient of a global function that calls shard_map (grad outside)
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    body: Callable          # body(L, mesh_shape, *local_args) -> local result
    in_specs: list          # one per-dim tuple per argument
    out_spec: tuple
    shapes: Callable        # shapes(mesh_shape) -> global argument shapes

    def __str__(self):
        return self.name


def _ring(n):
    return [(i, (i + 1) % n) for i in range(n)]


SH_XY = ("x", "y")
GLOBAL_CASES = [
    # all_gather, tiled, over one axis: the result is replicated over it
    Case("all_gather-x-tiled-replicated",
         lambda L, m, v: L.ag(v, "x", 0) * 1.5, [SH_XY], (None, "y"), lambda m: [(4, 8)]),
    # the same gather declared sharded over the axis it is invariant on (JAX: lax.all_gather)
    Case("all_gather-y-tiled-dim1-sharded",
         lambda L, m, v: L.ag_var(v * v, "y", 1), [SH_XY], ("x", "y"), lambda m: [(4, 8)]),
    Case("all_gather-x-untiled",
         lambda L, m, v: L.ag(v, "x", 0, tiled=False), [SH_XY], (None, None, "y"),
         lambda m: [(4, 8)]),
    # over two axes
    Case("all_gather-xy-tiled",
         lambda L, m, v: L.ag(L.sin(v), ("x", "y"), 0), [(("x", "y"), None)], (None, None),
         lambda m: [(16, 3)]),
    Case("all_gather-yx-untiled-dim1",
         lambda L, m, v: L.ag(v, ("y", "x"), 1, tiled=False), [(None, ("x", "y"))],
         (None, None, None), lambda m: [(3, 16)]),
    Case("psum-x-replicated",
         lambda L, m, v: L.psum(v * v, "x"), [SH_XY], (None, "y"), lambda m: [(4, 8)]),
    # an invariant value (psum over y) times a varying one, declared sharded
    Case("psum-y-times-input-sharded",
         lambda L, m, v: L.psum(v, "y") * v, [SH_XY], SH_XY, lambda m: [(4, 8)]),
    Case("pmean-xy-replicated",
         lambda L, m, v: L.pmean(L.sin(v), ("x", "y")), [SH_XY], (None, None), lambda m: [(4, 8)]),
    Case("psum_scatter-x-tiled",
         lambda L, m, v: L.rs(v * v, "x", 1, True), [SH_XY], (None, ("y", "x")),
         lambda m: [(4, 16)]),
    # a value replicated over x (a parameter) scattered over x: untiled
    Case("psum_scatter-x-untiled-replicated-input",
         lambda L, m, v: L.rs(L.sin(v), "x", 0, False), [(None, "y")], (("x", "y"),),
         lambda m: [(m[0], 8)]),
    Case("all_to_all-y-tiled",
         lambda L, m, v: L.a2a(v * v, "y", 1, 0, True), [SH_XY], SH_XY, lambda m: [(4, 8 * m[1])]),
    Case("all_to_all-x-untiled",
         lambda L, m, v: L.a2a(L.sin(v), "x", 0, 1, False), [SH_XY], ("y", "x"),
         lambda m: [(4, 8)]),
    Case("ppermute-y-ring",
         lambda L, m, v: L.ppermute(v, "y", _ring(m[1])) * L.sin(v),
         [SH_XY], SH_XY, lambda m: [(4, 8)]),
    Case("ppermute-xy-partial",
         lambda L, m, v: L.ppermute(v, ("x", "y"), [(0, 1), (1, 3), (2, 0)]) * v, [SH_XY], SH_XY,
         lambda m: [(4, 8)]),
    # over axes named out of mesh order (nxpy numbers them in the order given)
    Case("ppermute-yx-partial",
         lambda L, m, v: L.ppermute_given_order(
             v, ("y", "x"), [(0, m[0] * m[1] - 1), (m[0] * m[1] - 1, 1), (1, 0)], m) * L.sin(v),
         [SH_XY], SH_XY, lambda m: [(4, 8)]),
    Case("all_to_all-xy-then-x",
         lambda L, m, v: L.a2a(L.a2a(v, ALL, 1, 0, True), "x", 0, 1, True) * v[:1, :1],
         [(ALL, None)], (ALL, None), lambda m: [(2 * m[1], 16)]),
    Case("axis_index-y-then-psum-x",
         lambda L, m, v: L.psum(v * (L.idx("y") + 1), "x"), [SH_XY], (None, "y"),
         lambda m: [(4, 8)]),
    Case("axis_index-yx",
         lambda L, m, v: L.sin(v) * (L.idx(("y", "x")) + 1), [SH_XY], SH_XY, lambda m: [(4, 8)]),
    # a replicated parameter with data sharded over x
    Case("param-replicated-data-sharded",
         lambda L, m, w, v: L.psum(L.tanh(L.dot(v, w)), "x"), [(), ("x", None)], (None, None),
         lambda m: [(8, 3), (4, 8)]),
    # a parameter sharded over y (replicated over x) with data sharded over x
    # (scaled so that the loss's sin sees arguments near 1, not 100, where f32 is too
    # ill-conditioned to compare paths: jax 0.12's XLA orders the sums otherwise)
    Case("param-y-sharded-data-x-sharded",
         lambda L, m, w, v: L.psum(L.dot(v, w) ** 2, "x") * (L.idx("y") + 1) * 0.02,
         [(None, "y"), ("x", None)], (None, "y"), lambda m: [(8, 8), (4, 8)]),
    # collective_broadcast (JAX: psum(where(axis_index == source, v, 0)))
    Case("collective_broadcast-y-sharded",
         lambda L, m, v: L.bcast(v * v, "y", 1) * L.sin(v), [SH_XY], SH_XY, lambda m: [(4, 8)]),
    Case("collective_broadcast-xy-replicated",
         lambda L, m, v: L.bcast(L.sin(v), ALL, 3), [SH_XY], (None, None), lambda m: [(4, 8)]),
]

_EXPECTED: dict = {}


def _seed(*key):
    return zlib.crc32(repr(key).encode())


def _global_loss(L, case, m, weight):
    """``sum(sin(shard_map(body)(*args)) * weight)``: a cotangent different per element."""
    sm = L.smap(lambda *a: case.body(L, m, *a), m, case.in_specs, case.out_spec)

    def loss(*args):
        return L.sum(L.sin(sm(*args)) * L.const(weight))
    return loss


def _global_expected(case, m):
    key = (case.name, m)
    if key not in _EXPECTED:
        xs = inputs(case.shapes(m), _seed(case.name, m))
        sm = JXL.smap(lambda *a: case.body(JXL, m, *a), m, case.in_specs, case.out_spec)
        out_shape = jax.eval_shape(sm, *xs).shape
        weight = inputs([out_shape], _seed("weight", case.name, m))[0]
        loss = _global_loss(JXL, case, m, weight)
        value, grads = jax.jit(jax.value_and_grad(loss, argnums=tuple(range(len(xs)))))(*xs)
        _EXPECTED[key] = (xs, weight, np.asarray(value), [np.asarray(g) for g in grads])
    return _EXPECTED[key]


def _mesh_id(m):
    return "x".join(map(str, m))


def rotated(cases, options, case_id=str):
    """``(case, option, compiler)`` params: each case with each option on one compiler, in
    rotation, the options' order reversed case by case, so that every case and every
    option meets both compilers (checked below); every combination under ``make
    exhaustive``. Ids as the stacked parametrization gave them."""
    pairs = [(c, o) for i, c in enumerate(cases) for o in list(options)[::(-1) ** i]]
    return [pytest.param(c, o, comp, id=f"{case_id(c)}-{_mesh_id(o) if isinstance(o, tuple) else o}"
                                        f"-{comp}")
            for (c, o), comp in covering(pairs, COMPILERS)]


def test_rotation_meets_both_compilers_per_case_and_option():
    for cases, options in ((["a", "b", "c"], MESHES), (["a", "b"], ["u", "v"])):
        met: dict = {}
        for p in rotated(cases, options):
            c, o, comp = p.values
            met.setdefault(("case", c), set()).add(comp)
            met.setdefault(("option", o), set()).add(comp)
        assert all(v == set(COMPILERS) for v in met.values()), met


@pytest.mark.parametrize("case,m,compiler", rotated(GLOBAL_CASES, MESHES))
def test_grad_of_global_function(case, m, compiler):
    xs, weight, value, grads = _global_expected(case, m)
    loss = _global_loss(NXL, case, m, weight)
    f = jit(value_and_grad(loss, argnums=tuple(range(len(xs)))), compiler=compiler)
    v, gs = f(*[nx.tensor(x) for x in xs])
    assert_close(v.to_numpy(), value, "loss")
    for i, (g, want, spec) in enumerate(zip(gs, grads, case.in_specs)):
        got = blocks(g.to_numpy(), m, spec)
        for p, (gb, wb) in enumerate(zip(got, blocks(want, m, spec))):
            assert_close(gb, wb, f"gradient of argument {i}, device {p}")


# ----------------------------------------------------------------------------------------
# 2. grad inside the shard_map body: per-device gradients
# ----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Inside:
    name: str
    loss: Callable          # loss(L, mesh_shape, *local_args) -> a local scalar
    in_specs: list
    shapes: Callable        # shapes(mesh_shape) -> global argument shapes
    argnums: tuple = (0,)

    def __str__(self):
        return self.name


def wt(*shape):
    """A fixed weight of ``shape``, different per element."""
    n = int(np.prod(shape))
    return (np.cos(np.arange(n) * 0.7) + 0.1 * np.arange(n) / n).astype(np.float32).reshape(shape)


INSIDE_CASES = [
    Inside("all_gather-x-tiled",
           lambda L, m, v: L.sum(L.sin(L.ag(v, "x", 0)) * L.const(wt(4, 8 // m[1])))
           * (L.idx("y") + 1), [SH_XY], lambda m: [(4, 8)]),
    # the gathered value used as a varying one (JAX: lax.all_gather, transposed to
    # psum_scatter; nxpy: an invariant gather whose cotangent is summed over x)
    Inside("all_gather-x-tiled-varying-loss",
           lambda L, m, v: L.sum(L.sin(L.ag_var(v, "x", 0)) * L.const(wt(4, 8 // m[1]))
                                 * (L.idx("x") + 1)), [SH_XY], lambda m: [(4, 8)]),
    Inside("all_gather-xy-untiled",
           lambda L, m, v: L.sum(L.ag(v, ALL, 0, tiled=False) ** 2
                                 * L.const(wt(2 * m[1], 16 // (2 * m[1]), 3))),
           [(ALL, None)], lambda m: [(16, 3)]),
    Inside("psum-x",
           lambda L, m, v: L.sum(L.sin(L.psum(v * v, "x")) * L.const(wt(2, 8 // m[1]))),
           [SH_XY], lambda m: [(4, 8)]),
    Inside("psum-y-used-as-varying",
           lambda L, m, v: L.sum(L.psum(v, "y") * L.sin(v)), [SH_XY], lambda m: [(4, 8)]),
    # a replicated parameter and data sharded over both axes, pmean of the local losses
    Inside("pmean-xy-param-and-data",
           lambda L, m, w, v: L.pmean(L.sum(L.tanh(L.dot(v, w))), ALL),
           [(), (ALL, None)], lambda m: [(8, 3), (16, 8)], argnums=(0, 1)),
    # pmean over x only: the loss still varies along y
    Inside("pmean-x-param",
           lambda L, m, w, v: L.pmean(L.sum(L.tanh(L.dot(v, w))), "x"),
           [(), (ALL, None)], lambda m: [(8, 3), (16, 8)]),
    Inside("psum_scatter-y-tiled",
           lambda L, m, v: L.sum(L.sin(L.rs(v, "y", 1, True)) * L.const(wt(2, 8 // m[1]))),
           [SH_XY], lambda m: [(4, 8 * m[1])]),
    Inside("psum_scatter-x-untiled-param",
           lambda L, m, w: L.sum(L.sin(L.rs(w * w, "x", 0, False)) * L.const(wt(8))),
           [()], lambda m: [(2, 8)]),
    Inside("all_to_all-y-tiled",
           lambda L, m, v: L.sum(L.sin(L.a2a(v, "y", 1, 0, True))
                                 * L.const(wt(2 * m[1], 8 // m[1]))),
           [SH_XY], lambda m: [(4, 8 * m[1])]),
    Inside("all_to_all-x-untiled",
           lambda L, m, v: L.sum(L.sin(L.a2a(v, "x", 0, 1, False)) * L.const(wt(8 // m[1], 2))),
           [SH_XY], lambda m: [(4, 8)]),
    Inside("ppermute-y-ring",
           lambda L, m, v: L.sum(L.ppermute(v, "y", _ring(m[1])) * L.sin(v)),
           [SH_XY], lambda m: [(4, 8)]),
    Inside("axis_index-yx",
           lambda L, m, v: L.sum(L.sin(v) * (L.idx(("y", "x")) + 1)), [SH_XY],
           lambda m: [(4, 8)]),
    Inside("collective_broadcast-y",
           lambda L, m, v: L.sum(L.sin(L.bcast(v, "y", 1)) * L.const(wt(2, 8 // m[1])))
           * (L.idx("y") + 1), [SH_XY], lambda m: [(4, 8)]),
    Inside("collective_broadcast-x-replicated-input",
           lambda L, m, w: L.sum(L.bcast(w, "x", 1) * L.sin(w) * L.idx("y")), [()],
           lambda m: [(3, 5)]),
]

_EXPECTED_INSIDE: dict = {}


def _inside_program(L, case, m):
    """Each device's gradients, with a leading axis laid out over every mesh axis."""
    def body(*a):
        gs = L.grad(lambda *b: case.loss(L, m, *b), argnums=case.argnums)(*a)
        return tuple(L.expand(g) for g in gs)
    return L.smap(body, m, case.in_specs, [(ALL,)] * len(case.argnums))


def _inside_expected(case, m):
    key = (case.name, m)
    if key not in _EXPECTED_INSIDE:
        xs = inputs(case.shapes(m), _seed(case.name, m))
        outs = jax.jit(_inside_program(JXL, case, m))(*xs)
        _EXPECTED_INSIDE[key] = (xs, [np.asarray(o) for o in outs])
    return _EXPECTED_INSIDE[key]


@pytest.mark.parametrize("case,m,compiler", rotated(INSIDE_CASES, MESHES))
def test_grad_inside_shard_map(case, m, compiler):
    xs, want = _inside_expected(case, m)
    got = jit(_inside_program(NXL, case, m), compiler=compiler)(*[nx.tensor(x) for x in xs])
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        per_device(g.to_numpy(), m, w, f"gradient of argument {case.argnums[i]}")


# ----------------------------------------------------------------------------------------
# 3. Data parallelism: replicated parameters, data sharded on "batch"
# ----------------------------------------------------------------------------------------
D_IN, HIDDEN, D_OUT, BATCH = 5, 8, 2, 16


def _mlp_data(seed):
    w1, b1, w2, x, y = inputs([(D_IN, HIDDEN), (HIDDEN,), (HIDDEN, D_OUT), (BATCH, D_IN),
                               (BATCH, D_OUT)], seed)
    return (w1, b1, w2), (x, y)


def _full_loss(L):
    """The single-device loss over the whole batch."""
    def loss(w1, b1, w2, x, y):
        return L.mean((L.dot(L.tanh(L.dot(x, w1) + b1), w2) - y) ** 2)
    return loss


def _single_device_grads(compiler, params, data):
    """The whole batch's gradient: nxpy on one device, and JAX."""
    ours = jit(grad(_full_loss(NXL), argnums=(0, 1, 2)), compiler=compiler)(
        *[nx.tensor(a) for a in params + data])
    theirs = jax.jit(jax.grad(_full_loss(JXL), argnums=(0, 1, 2)))(*params, *data)
    ours, theirs = [g.to_numpy() for g in ours], [np.asarray(g) for g in theirs]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a, b, f"single-device gradient of parameter {i}")
    return ours, theirs


def _dp_local_loss(L, reduce):
    def loss(w1, b1, w2, x, y):
        sq = (L.dot(L.tanh(L.dot(x, w1) + b1), w2) - y) ** 2
        if reduce == "pmean":
            return L.pmean(L.mean(sq), "batch")
        return L.psum(L.sum(sq) / (BATCH * D_OUT), "batch")
    return loss


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("reduce", ["pmean", "psum"])
def test_data_parallel_step(compiler, reduce):
    m, names = (4,), ("batch",)
    params, data = _mlp_data(_seed("dp", reduce))
    ours, theirs = _single_device_grads(compiler, params, data)
    in_specs = [(), (), (), ("batch", None), ("batch", None)]
    args = [nx.tensor(a) for a in params + data]
    local = _dp_local_loss(NXL, reduce)

    # grad inside the body: every device holds the whole batch's gradient
    def step(*a):
        gs = grad(lambda w1, b1, w2: local(w1, b1, w2, a[3], a[4]), argnums=(0, 1, 2))(*a[:3])
        return tuple(nx.new_axis(g, 0) for g in gs)
    per_dev = jit(NXL.smap(step, m, in_specs, [("batch",)] * 3, names), compiler=compiler)(*args)
    for i, g in enumerate(per_dev):
        per_device(g.to_numpy(), m, [ours[i]] * 4, f"parameter {i} (against nxpy)")
        per_device(g.to_numpy(), m, [theirs[i]] * 4, f"parameter {i} (against JAX)")

    # grad outside: the global function's gradient is the same
    glob = NXL.smap(local, m, in_specs, (), names)
    gs = jit(grad(lambda *a: glob(*a), argnums=(0, 1, 2)), compiler=compiler)(*args)
    for i, g in enumerate(gs):
        assert_close(g.to_numpy(), theirs[i], f"parameter {i}, grad of the global function")


def _tp_local_loss(L, variant):
    """Hidden units sharded over "model": W1's columns, b1, W2's rows."""
    def loss(w1, b1, w2, x, y):
        h = L.tanh(L.dot(x, w1) + b1)                     # (local batch, local hidden)
        if variant == "psum":
            out = L.psum(L.dot(h, w2), "model")
        else:
            out = L.dot(L.ag(h, "model", 1), L.ag(w2, "model", 0))
        return L.pmean(L.mean((out - y) ** 2), "batch")
    return loss


TP_SPECS = [(None, "model"), ("model",), ("model", None), ("batch", None), ("batch", None)]


@pytest.mark.parametrize("m,variant,compiler", rotated([(2, 2), (2, 4)], ["psum", "all_gather"],
                                                      case_id=_mesh_id))
def test_data_and_model_parallel_step(m, variant, compiler):
    names = ("batch", "model")
    params, data = _mlp_data(_seed("tp", variant, m))
    ours, theirs = _single_device_grads(compiler, params, data)
    args = [nx.tensor(a) for a in params + data]
    local = _tp_local_loss(NXL, variant)

    def step(*a):
        gs = grad(lambda w1, b1, w2: local(w1, b1, w2, a[3], a[4]), argnums=(0, 1, 2))(*a[:3])
        return tuple(nx.new_axis(g, 0) for g in gs)
    per_dev = jit(NXL.smap(step, m, TP_SPECS, [(names,)] * 3, names), compiler=compiler)(*args)
    # device (i, j) holds the whole batch's gradient of its own hidden units
    for i, g in enumerate(per_dev):
        want = blocks(theirs[i], m, TP_SPECS[i], names)
        per_device(g.to_numpy(), m, want, f"parameter {i} (against JAX)")
        per_device(g.to_numpy(), m, blocks(ours[i], m, TP_SPECS[i], names),
                   f"parameter {i} (against nxpy)")

    # the same program's JAX twin, device by device
    jstep_local = _tp_local_loss(JXL, variant)

    def jstep(*a):
        gs = jax.grad(lambda w1, b1, w2: jstep_local(w1, b1, w2, a[3], a[4]),
                      argnums=(0, 1, 2))(*a[:3])
        return tuple(g[None] for g in gs)
    jouts = jax.jit(JXL.smap(jstep, m, TP_SPECS, [(names,)] * 3, names))(*params, *data)
    for i, (g, j) in enumerate(zip(per_dev, jouts)):
        assert_close(g.to_numpy(), np.asarray(j), f"parameter {i}, against jax.shard_map")

    # grad of the global function
    glob = NXL.smap(local, m, TP_SPECS, (), names)
    gs = jit(grad(lambda *a: glob(*a), argnums=(0, 1, 2)), compiler=compiler)(*args)
    for i, g in enumerate(gs):
        assert_close(g.to_numpy(), theirs[i], f"parameter {i}, grad of the global function")


# ----------------------------------------------------------------------------------------
# A Megatron-style layer stack as a scan in the body: each layer's hidden units over "y",
# its output summed over "y" by a psum; the scan's step (and a checkpoint inside it) is
# differentiated with the body's mesh (it had none: the psum's rule failed to trace),
# under grad and under jvp (which traces the scan's gradient too)
# ----------------------------------------------------------------------------------------
STACK_SPECS = [(None, None, "y"), (None, "y", None), (), ("x", None)]


def _stack_loss(L):
    """``w_in`` (layers, D, H) and ``w_out`` (layers, H, D) split over "y" along H, a
    replicated scale ``s`` (D,) the step closes over, ``h`` (batch, D) split over "x"."""
    def layer(h, w_in, w_out, s):
        return h + L.psum(L.dot(L.tanh(L.dot(h * s, w_in)), w_out), "y")

    def loss(w_in, w_out, s, h):
        def step(h, ws):
            h = layer(h, ws[0], ws[1], s)
            return L.remat(layer)(h, ws[0], ws[1], s), L.sum(h)
        h, ys = L.scan(step, h, (w_in, w_out))
        return L.psum(L.sum(L.sin(h)) + L.sum(ys * ys), "x")
    return loss


def _stack_program(L):
    """The gradient of the global function (grad outside), each device's gradient of its
    local loss (grad inside) and the loss's derivative along the arguments (jvp inside),
    in one program."""
    m, nums = (2, 2), (0, 1, 2, 3)
    loss = _stack_loss(L)
    glob = L.smap(loss, m, STACK_SPECS, ())
    inside = L.smap(lambda *a: tuple(L.expand(g) for g in L.grad(loss, argnums=nums)(*a)),
                    m, STACK_SPECS, [(ALL,)] * 4)
    forward = L.smap(lambda *a: L.jvp(loss, a, a)[1], m, STACK_SPECS, ())
    return lambda *a: (L.grad(glob, argnums=nums)(*a), inside(*a), forward(*a))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_of_psum_in_scan_in_shard_map(compiler):
    args = inputs([(3, 4, 8), (3, 8, 4), (4,), (4, 4)], _seed("layer stack"))
    args = [a * 0.5 for a in args]
    want = jax.jit(_stack_program(JXL))(*args)
    got = jit(_stack_program(NXL), compiler=compiler)(*[nx.tensor(a) for a in args])
    for i, (g, w) in enumerate(zip(got[0], want[0])):
        assert_close(g.to_numpy(), np.asarray(w), f"argument {i}, grad of the global function")
    for i, (g, w) in enumerate(zip(got[1], want[1])):
        per_device(g.to_numpy(), (2, 2), list(np.asarray(w)), f"argument {i}, grad inside")
    assert_close(got[2].to_numpy(), np.asarray(want[2]), "jvp inside")


# ----------------------------------------------------------------------------------------
# 4. grad under shard_jit (the global view)
# ----------------------------------------------------------------------------------------
def _sj_loss(L, gather, weight):
    """A loss over a replicated ``w`` and a sharded ``x``, gathering in the global view
    (``gather`` is the identity for the unsharded twins)."""
    def loss(w, x):
        g = gather(x * w)
        return L.sum(L.sin(g) * L.const(weight)) + L.sum(w * w) * 0.5
    return loss


SJ_CASES = [  # mesh, x's sharding, the dims all_gather gathers (in order)
    ((2, 2), {0: [0], 1: [1]}, (0,)),
    ((2, 2), {0: [0], 1: [1]}, (0, 1)),
    ((2, 4), {0: [0, 1]}, (0,)),
    ((2, 4), {1: [1]}, (1,)),
]


def _sj_args(m, x_sharding):
    w, x = inputs([(8,), (8, 8)], _seed("sj", m, repr(x_sharding)))
    mesh = nx_mesh(m)
    per_dev = [[nx.tensor(w), xs] for xs in SH.shard(nx.tensor(x), mesh, x_sharding)]
    return w, x, per_dev


def _sj_expected(m, x_sharding, weight):
    w, x, _ = _sj_args(m, x_sharding)
    def ident(v):
        return v
    ours = jit(grad(_sj_loss(NXL, ident, weight), argnums=(0, 1)))(nx.tensor(w), nx.tensor(x))
    theirs = jax.jit(jax.grad(_sj_loss(JXL, ident, weight), argnums=(0, 1)))(w, x)
    for a, b in zip(ours, theirs):
        assert_close(a.to_numpy(), np.asarray(b), "unsharded gradient, nxpy against JAX")
    return [np.asarray(b) for b in theirs]


def _gather_dims(dims):
    def gather(v):
        for d in dims:
            v = all_gather(v, all_gather_dim=d)
        return v
    return gather


def _check_sharded_results(f, outs, m, want):
    shardings = f.output_shardings
    assert isinstance(shardings, tuple) and len(shardings) == 2
    for k, (sh, w) in enumerate(zip(shardings, want)):
        for p, (out, block) in enumerate(zip(outs, blocks(w, m, sh))):
            assert out[k].device_id == p
            assert_close(out[k].to_numpy(), block, f"gradient {k}, device {p} (sharding {sh})")


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("m, x_sharding, dims", SJ_CASES, ids=lambda v: str(v).replace(" ", ""))
def test_grad_under_shard_jit(m, x_sharding, dims, compiler):
    weight = wt(8, 8)
    want = _sj_expected(m, x_sharding, weight)
    _, _, per_dev = _sj_args(m, x_sharding)
    g = grad(_sj_loss(NXL, _gather_dims(dims), weight), argnums=(0, 1))
    f = shard_jit(lambda w, x: g(w, x), nx_mesh(m), input_shardings=[{}, x_sharding],
                  compiler=compiler)
    _check_sharded_results(f, f(per_dev), m, want)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_jit_of_grad_object(compiler):
    m, x_sharding = (2, 2), {0: [0], 1: [1]}
    weight = wt(8, 8)
    want = _sj_expected(m, x_sharding, weight)
    _, _, per_dev = _sj_args(m, x_sharding)
    f = shard_jit(grad(_sj_loss(NXL, _gather_dims((0,)), weight), argnums=(0, 1)), nx_mesh(m),
                  input_shardings=[{}, x_sharding], compiler=compiler)
    _check_sharded_results(f, f(per_dev), m, want)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_of_shard_map_inside_shard_jit(compiler):
    """Global view around the local view: the gradient of a function whose shard_map
    gathers and sums, run by shard_jit, split by its result shardings."""
    m, x_sharding = (2, 4), {0: [0], 1: [1]}
    _, x, per_dev = _sj_args(m, x_sharding)
    per_dev = [[a[1]] for a in per_dev]

    def body(L):
        sm = L.smap(lambda v: L.psum(L.ag(v * v, "x", 0), "y"), m, [SH_XY], (None, None))
        return lambda v: L.sum(L.sin(sm(v)))
    want = np.asarray(jax.jit(jax.grad(body(JXL)))(x))
    f = shard_jit(lambda v: grad(body(NXL))(v), nx_mesh(m), input_shardings=[x_sharding],
                  compiler=compiler)
    outs = f(per_dev)
    for p, (out, block) in enumerate(zip(outs, blocks(want, m, f.output_shardings))):
        assert out.device_id == p
        assert_close(out.to_numpy(), block, f"device {p} (sharding {f.output_shardings})")


# ----------------------------------------------------------------------------------------
# 5. pmax / pmin (no JAX rule: against NumPy). The cotangent goes to the devices holding
#    the extreme value, split equally on ties.
# ----------------------------------------------------------------------------------------
def _tied_input(shape, seed):
    """Small integers, so that many elements tie across devices."""
    return np.random.default_rng(seed).integers(-2, 3, shape).astype(np.float32)


def _extreme_expected(x, m, op, axes, cotangent):
    """Per-device gradient blocks: ``cotangent(p, M)`` is device p's cotangent of the
    reduced value M it holds."""
    mesh = nx_mesh(m)
    red = {mesh.axis_index(a) for a in axes}
    bs = blocks(x, m, SH_XY)
    group = {}
    for p in range(mesh.size):
        key = tuple(c for a, c in enumerate(mesh.coords(p)) if a not in red)
        group.setdefault(key, []).append(p)
    out, ties = [], 1
    for p in range(mesh.size):
        key = tuple(c for a, c in enumerate(mesh.coords(p)) if a not in red)
        members = np.stack([bs[q] for q in group[key]])
        ext = members.max(0) if op == "pmax" else members.min(0)
        count = (members == ext).sum(0)
        ties = max(ties, int(count.max()))
        out.append(cotangent(p, ext) * (bs[p] == ext) / count)
    assert ties > 1, "the input should tie across devices"
    return out


EXTREME_CASES = [  # op, mesh, axes reduced over, out_spec of the global program
    ("pmax", (2, 4), "x", (None, "y")),
    ("pmax", (2, 4), "y", ("x", None)),
    ("pmin", (2, 2), ALL, (None, None)),
]


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("op, m, axes, out_spec", EXTREME_CASES,
                         ids=lambda v: str(v).replace(" ", ""))
def test_pmax_pmin_grad_of_global_function(op, m, axes, out_spec, compiler):
    x = _tied_input((4, 8), _seed(op, m, axes))
    red = getattr(NXL, op)
    sm = NXL.smap(lambda v: red(v, axes), m, [SH_XY], out_spec)
    out_shape = sm(nx.tensor(x)).shape
    weight = wt(*out_shape)
    got = jit(grad(lambda v: nx.sum(nx.sin(sm(v)) * nx.tensor(weight))), compiler=compiler)(
        nx.tensor(x)).to_numpy()
    w_blocks = blocks(weight, m, out_spec)
    want = _extreme_expected(x, m, op, (axes,) if isinstance(axes, str) else axes,
                             lambda p, ext: np.cos(ext) * w_blocks[p])
    for p, (g, w) in enumerate(zip(blocks(got, m, SH_XY), want)):
        assert_close(g, w, f"device {p}")


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("varying", [False, True], ids=["invariant-loss", "loss-varying-over-x"])
@pytest.mark.parametrize("op", ["pmax", "pmin"])
def test_pmax_pmin_grad_inside_shard_map(op, varying, compiler):
    m = (2, 4)
    x = _tied_input((4, 8), _seed(op, "inside"))
    red = getattr(NXL, op)
    local_w = wt(2, 2)

    def loss(v):
        r = nx.sum(nx.sin(red(v, "x")) * nx.tensor(local_w))
        return r * (NXL.idx("x") + 1) if varying else r
    f = NXL.smap(lambda v: nx.new_axis(grad(loss)(v), 0), m, [SH_XY], (ALL,))
    got = jit(f, compiler=compiler)(nx.tensor(x)).to_numpy()
    # the loss varies along x: the cotangent of the (invariant) reduced value is summed over x
    factor = sum(i + 1 for i in range(m[0])) if varying else 1
    want = _extreme_expected(x, m, op, ("x",), lambda p, ext: np.cos(ext) * local_w * factor)
    per_device(got, m, want, op)


# ----------------------------------------------------------------------------------------
# 6. Errors, and values a body closes over
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_closing_over_a_differentiated_value_is_an_error(compiler):
    mesh = nx_mesh((2, 2))

    def f(w, x):
        return nx.sum(shard_map(lambda v: v * w, mesh, in_specs=("x",), out_specs=("x",))(x))
    w, x = nx.tensor(2.0), nx.tensor([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="a shard_map body closes over a value being "
                       "differentiated; pass it to the shard_map as an argument"):
        jit(grad(f), compiler=compiler)(w, x)
    with pytest.raises(ValueError, match="closes over a value being differentiated"):
        jit(grad(f, argnums=(0, 1)), compiler=compiler)(w, x)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_closing_over_a_constant_value(compiler):
    """A captured value that is not differentiated is a constant of the body."""
    m = (2, 2)

    def make(L):
        def f(x, w):
            sm = L.smap(lambda v: L.psum(L.sin(v * w), "x"), m, [SH_XY], (None, "y"))
            return L.sum(sm(x) ** 2)
        return f
    x, w = inputs([(4, 8), ()], _seed("closure"))
    want = np.asarray(jax.jit(jax.grad(make(JXL)))(x, w))
    got = jit(grad(make(NXL)), compiler=compiler)(nx.tensor(x), nx.tensor(w)).to_numpy()
    assert_close(got, want, "gradient")


# ----------------------------------------------------------------------------------------
# Known engine bugs (see the reasons): the expected values are JAX's
# ----------------------------------------------------------------------------------------
def _ring_loop(L, loop):
    """Three steps of a ring over "y" in a counting loop."""
    def run(v):
        def step(i, s):
            acc, buf = s
            buf = L.ppermute(buf, "y", _ring(4))
            return acc + buf * L.sin(acc), buf
        return loop(0, 3, step, (v, v))[0]
    return run


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("where", ["outside", "inside"])
def test_grad_through_fori_loop_in_shard_map(where, compiler):
    m, x = (2, 4), inputs([(4, 8)], _seed("ring loop"))[0]

    def make(L, loop):
        run = _ring_loop(L, loop)
        if where == "outside":
            sm = L.smap(run, m, [SH_XY], SH_XY)
            return L.grad(lambda v: L.sum(L.sin(sm(v))))
        return L.smap(lambda v: L.expand(L.grad(lambda w: L.sum(L.sin(run(w))))(v)), m,
                      [SH_XY], (ALL,))
    want = np.asarray(jax.jit(make(JXL, jax.lax.fori_loop))(x))
    got = jit(make(NXL, nx.fori_loop), compiler=compiler)(nx.tensor(x)).to_numpy()
    assert_close(got, want, "gradient")


# ----------------------------------------------------------------------------------------
# Control flow in the body: the cotangent of a replicated value read inside a cond or a
# loop is summed over the devices once (it was summed twice), and, where the predicate
# varies, after the cond or loop (a psum inside it would be a collective that only some
# devices run: shard_map's check_vma rejects that)
# ----------------------------------------------------------------------------------------
def _uniform_pred(L, v):
    return L.psum(L.sum(v), ALL) > 0


def _varying_pred(L, v):
    return L.sum(v) > 0


def _branches(pred):
    def make(L):
        return lambda w, v: L.cond(pred(L, v), lambda: L.sin(v * w), lambda: v + w * w)
    return make


def _counting_loop(loop):
    def make(L):
        return lambda w, v: loop(0, 3, lambda i, s: s + L.sin(w * v + s), v * 0.0)
    return make


def _with_grad(L, body, m, where):
    """The gradient w.r.t. the replicated ``w`` of ``sum(sin(body(w, v)))``, taken outside
    the shard_map or inside it (one row per device)."""
    if where == "outside":
        sm = L.smap(body, m, [(), SH_XY], SH_XY)
        return L.grad(lambda w, v: L.sum(L.sin(sm(w, v))))
    return L.smap(lambda w, v: L.expand(L.grad(lambda w: L.sum(L.sin(body(w, v))))(w)), m,
                  [(), SH_XY], (ALL,))


def _control_inputs(m):
    """``w`` (4,) and ``v`` (4, 8), ``v``'s blocks on a 2x2 mesh summing to +/-8: the
    devices of every group disagree on ``sum(v) > 0``."""
    w, v = inputs([(4,), (4, 8)], _seed("control flow", m))
    v = v * 0.1 + np.kron(np.array([[1.0, -1.0], [-1.0, 1.0]], np.float32),
                          np.ones((2, 4), np.float32))
    return w, v.astype(np.float32)


@pytest.mark.parametrize("kind,where,compiler", rotated(["cond", "fori_loop"],
                                                       ["outside", "inside"]))
def test_grad_of_replicated_value_through_uniform_control_flow(kind, where, compiler):
    m = (2, 2)
    w, v = _control_inputs(m)
    if kind == "cond":
        nxb, jxb = _branches(_uniform_pred)(NXL), _branches(_uniform_pred)(JXL)
    else:
        nxb, jxb = _counting_loop(nx.fori_loop)(NXL), _counting_loop(jax.lax.fori_loop)(JXL)
    want = np.asarray(jax.jit(_with_grad(JXL, jxb, m, where))(w, v))
    got = jit(_with_grad(NXL, nxb, m, where), compiler=compiler)(nx.tensor(w),
                                                                 nx.tensor(v)).to_numpy()
    assert_close(got, want, "gradient")


def _nx_varying_trips(w, v):
    """Device p runs p + 1 iterations."""
    n = nx.as_type(axis_index(("x", "y")), "s32") + 1
    return while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] + nx.sin(w * v + s[1])),
                      (0, v * 0.0), max_iterations=4)[1]


@functools.lru_cache(maxsize=None)
def _varying_expected(kind, m):
    """JAX's gradient, device by device, each jitted (one compile, where eager JAX compiles
    every op), summed: the tests of every ``where`` and compiler share it."""
    w, v = _control_inputs(m)
    local = []
    for p, block in enumerate(blocks(v, m, SH_XY)):
        if kind == "cond":
            body = _branches(_varying_pred)(JXL)
        else:
            def body(w, b, n=p + 1):
                return jax.lax.fori_loop(0, n, lambda i, s: s + jnp.sin(w * b + s), b * 0.0)
        local.append(np.asarray(jax.jit(jax.grad(
            lambda w, b: jnp.sum(jnp.sin(body(w, b)))))(w, block)))
    return np.sum(local, axis=0)


@pytest.mark.parametrize("kind,where,compiler", rotated(["cond", "while_loop"],
                                                       ["outside", "inside"]))
def test_grad_of_replicated_value_through_varying_control_flow(kind, where, compiler):
    """Devices take different branches (run different numbers of iterations): the
    gradient is the sum of each device's own, computed by JAX device by device (JAX's
    own shard_map puts the psum inside the branch, which XLA deadlocks or mixes)."""
    m = (2, 2)
    w, v = _control_inputs(m)
    want = _varying_expected(kind, m)
    nxb = _branches(_varying_pred)(NXL) if kind == "cond" else _nx_varying_trips
    got = jit(_with_grad(NXL, nxb, m, where), compiler=compiler)(nx.tensor(w),
                                                                 nx.tensor(v)).to_numpy()
    assert_close(got, want if where == "outside" else np.tile(want, (4, 1)), "gradient")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_second_order_grad_inside_shard_map(compiler):
    m, x = (2, 4), inputs([(4, 8)], _seed("second order"))[0]

    def make(L):
        def body(v):
            def f(v):
                return L.sum(L.sin(L.psum(v * v, "x")))
            def g(v):
                return L.sum(L.grad(f)(v) * L.const(wt(2, 2)))
            return L.expand(L.grad(g)(v))
        return L.smap(body, m, [SH_XY], (ALL,))
    want = np.asarray(jax.jit(make(JXL))(x))
    got = jit(make(NXL), compiler=compiler)(nx.tensor(x)).to_numpy()
    per_device(got, m, want, "second-order gradient")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_second_order_grad_outside_shard_map(compiler):
    m, x = (2, 4), inputs([(4, 8)], _seed("second order outside"))[0]

    def make(L):
        sm = L.smap(lambda v: L.psum(L.sin(v) * v, "x"), m, [SH_XY], (None, "y"))
        def f(v):
            return L.sum(L.sin(sm(v)))
        return L.grad(lambda v: L.sum(L.grad(f)(v) ** 2))
    want = np.asarray(jax.jit(make(JXL))(x))
    got = jit(make(NXL), compiler=compiler)(nx.tensor(x)).to_numpy()
    assert_close(got, want, "second-order gradient")
