"""Sharded programs: ``shard_map`` bodies with a collective and ``shard_jit`` programs on
2x2 and 2x4 meshes (:func:`generate_sharded`), compared per device between the
Evaluator's mesh simulation, EXLA and JAX, and their modules round-tripped through
StableHLO (:func:`check_sharded`; ``docs/fuzzing.md``)."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

import nxpy as nx
from ... import pjrt
from ...compilers.exla import to_mlir
from ...defn import (all_gather, all_to_all, axis_index, pmax, pmean, pmin, ppermute, psum,
                     psum_scatter, shard_jit, shard_map)
from ...defn.sharding import specs as SH
from ...layout import read_sharding
from ...stablehlo import load
from ...stablehlo.roundtrip import RoundTripError, compare_per_device
from .compare import _fail
from .generator import _Gen
from .program import Leaf, Mismatch, _numpy_backend
from .twins import _Jax

__all__ = ["ShardedProgram", "generate_sharded", "check_sharded"]


@dataclasses.dataclass
class ShardedProgram:
    """A ``shard_map`` body (``kind="shard_map"``: pre-op, collective, post-op, on the
    local shard) or a ``shard_jit`` program (``kind="shard_jit"``: an elementwise op, an
    optional reduction, an optional ``all_gather``) on a mesh."""
    seed: int
    index: int
    kind: str
    mesh_shape: tuple
    leaf: Leaf
    spec: tuple            # shard_map: the in_spec; shard_jit: {dim: [mesh axis]}
    pre: str
    collective: tuple      # (name, axes, options)
    post: str

    def __str__(self):
        return (f"sharded program seed={self.seed} index={self.index}: {self.kind} on mesh "
                f"{self.mesh_shape} (x, y)\n  x = {self.leaf}\n  spec {self.spec}\n"
                f"  body: {self.post}({self.collective[0]}({self.pre}(x), "
                f"axes={self.collective[1]!r}, {self.collective[2]}))")

    def repro(self):
        return (f"python -m nxpy.testing.fuzz --sharded --seed {self.seed} --index {self.index} "
                f"--show")


_SHARD_UNARY = {"identity": (lambda x: x, lambda J, x: x),
                "negate": (nx.negate, lambda J, x: -x),
                "abs": (nx.abs, lambda J, x: J.jnp.abs(x)),
                "square": (lambda x: x * x, lambda J, x: x * x)}
# the fuzzer's only module-level mutable state: each mesh built once, on first use
_MESHES: dict = {}
_JMESHES: dict = {}


def _mesh(shape):
    if shape not in _MESHES:
        _MESHES[shape] = nx.Mesh("fuzz", shape, axis_names=("x", "y"))
    return _MESHES[shape]


def _jmesh(jax, shape):
    if shape not in _JMESHES:
        devs = np.empty(int(np.prod(shape)), dtype=object)
        devs[:] = jax.devices()[:devs.size]
        _JMESHES[shape] = jax.sharding.Mesh(devs.reshape(shape), ("x", "y"))
    return _JMESHES[shape]


#: the primitive each collective the sharded programs draw traces to (read by
#: nxpy/testing/coverage.py's fuzz column)
COLLECTIVE_PRIMITIVES = {"psum": "all_reduce", "pmax": "all_reduce", "pmin": "all_reduce",
                         "pmean": "all_reduce", "all_gather": "all_gather",
                         "axis_index": "axis_index", "psum_scatter": "reduce_scatter",
                         "all_to_all": "all_to_all", "ppermute": "collective_permute"}


def _nx_collective(name, axes, kw):
    f = {"psum": psum, "pmax": pmax, "pmin": pmin, "pmean": pmean}.get(name)
    if f:
        return lambda a: f(a, axes)
    if name == "all_gather":
        return lambda a: all_gather(a, axes=axes, all_gather_dim=kw["dim"], tiled=kw["tiled"])
    if name == "psum_scatter":
        return lambda a: psum_scatter(a, axes, scatter_dimension=kw["dim"], tiled=True)
    if name == "all_to_all":
        return lambda a: all_to_all(a, axes, kw["split"], kw["concat"], tiled=True)
    if name == "ppermute":
        return lambda a: ppermute(a, axes, kw["perm"])
    if name == "axis_index":
        return lambda a: a + nx.as_type(axis_index(axes), a.type)
    if name == "sum":
        return lambda a: nx.sum(a, axes=[kw["dim"]], keep_axes=True)
    if name == "all_gather_global":
        return lambda a: all_gather(a, all_gather_dim=kw["dim"])
    return lambda a: a


def _jax_collective(J, name, axes, kw):
    lax = J.lax
    if name in ("psum", "pmax", "pmin", "pmean"):
        return lambda a: getattr(lax, name)(a, axes)
    if name == "all_gather":
        return lambda a: lax.all_gather(a, axes, axis=kw["dim"], tiled=kw["tiled"])
    if name == "psum_scatter":
        return lambda a: lax.psum_scatter(a, axes, scatter_dimension=kw["dim"], tiled=True)
    if name == "all_to_all":
        return lambda a: lax.all_to_all(a, axes, kw["split"], kw["concat"], tiled=True)
    if name == "ppermute":
        return lambda a: lax.ppermute(a, axes, kw["perm"])
    if name == "axis_index":
        return lambda a: a + lax.axis_index(axes).astype(a.dtype)
    if name == "sum":
        return lambda a: J.jnp.sum(a, axis=kw["dim"], keepdims=True)
    return lambda a: a


def generate_sharded(seed: int, index: int) -> ShardedProgram:
    rng = np.random.default_rng([seed, index, 1])
    g = _Gen(rng)
    mesh_shape = (2, 2) if rng.random() < 0.5 else (2, 4)
    size = {"x": mesh_shape[0], "y": mesh_shape[1]}
    t = g.pick(["f32", "s32"])
    shape = (8, 8) if rng.random() < 0.7 else (8, 8, 2)
    leaf = Leaf(shape, t, seed=int(rng.integers(2**31)))
    pre, post = g.pick(list(_SHARD_UNARY)), g.pick(list(_SHARD_UNARY))
    if rng.random() < 0.6:
        spec = g.pick([("x", "y"), ("x", None), (None, "y"), (("x", "y"), None), ("y", "x"),
                       (None, None)])
        axes = g.pick(["x", "y", ("x", "y")])
        n = int(np.prod([size[a] for a in (axes if isinstance(axes, tuple) else (axes,))]))
        local = [d // int(np.prod([size[a] for a in ((s,) if isinstance(s, str) else (s or ()))]))
                 for d, s in zip(shape, spec + (None,) * (len(shape) - len(spec)))]
        names = (["psum", "pmax", "pmin", "all_gather", "axis_index"]
                 + (["pmean"] if t == "f32" else []))
        names += [c for c, ok in (("psum_scatter", local[0] % n == 0),
                                  ("all_to_all", local[1] % n == 0),
                                  ("ppermute", isinstance(axes, str))) if ok]
        name = g.pick(names)
        kw = {}
        if name == "all_gather":
            kw = {"dim": int(rng.integers(len(shape))), "tiled": bool(rng.random() < 0.7)}
        elif name == "psum_scatter":
            kw = {"dim": 0}
        elif name == "all_to_all":
            kw = {"split": 1, "concat": 0}
        elif name == "ppermute":
            k = int(rng.integers(1, n))
            kw = {"perm": [(i, (i + k) % n) for i in range(n)]}
        return ShardedProgram(seed, index, "shard_map", mesh_shape, leaf, spec, pre,
                              (name, axes, kw), post)
    spec = g.pick([{0: ["x"], 1: ["y"]}, {0: ["x", "y"]}, {1: ["y"]}, {0: ["y"], 1: ["x"]}, {}])
    name = g.pick(["none", "sum", "all_gather_global"])
    kw = {"dim": int(rng.integers(2))}
    return ShardedProgram(seed, index, "shard_jit", mesh_shape, leaf, spec, pre, (name, None, kw),
                          post)


def _sharded_nx(p: ShardedProgram):
    pre, post = _SHARD_UNARY[p.pre][0], _SHARD_UNARY[p.post][0]
    coll = _nx_collective(*p.collective)
    return lambda a: post(coll(pre(a)))


def _shard_map(p: ShardedProgram, body, mesh, **opts):
    """``p``'s ``shard_map``: results concatenated along dim 0 in partition order."""
    return shard_map(body, mesh, in_specs=p.spec, out_specs=nx.P(("x", "y")), check_vma=False,
                     **opts)


def _sharded_round_trip(p: ShardedProgram, body, mesh, args, original) -> None:
    """Emits ``p``'s module (``to_mlir``, as EXLA compiles it), loads it back, runs it with
    ``Program.shard_jit`` (on the module's own mesh, ``prog.mesh()``) on EXLA and the
    Evaluator, and compares each device's results with the ``original`` ones of the same
    compiler (:func:`nxpy.stablehlo.roundtrip.compare_per_device`). ``args``: what the
    original took (the global input for ``shard_map``, per-device lists for ``shard_jit``)."""
    try:
        if p.kind == "shard_map":
            text = to_mlir(_shard_map(p, body, mesh), *args)
            per_device_args = [list(args)] * mesh.size
        else:
            text = to_mlir(body, args, mesh=mesh, input_shardings=[p.spec])
            per_device_args = args
        prog = load(text)
    except Exception as err:  # reported as a mismatch
        _fail(p, f"stablehlo failed: {type(err).__name__}: {err}")
    for compiler in ("exla", "evaluator"):
        try:
            loaded = prog.shard_jit(compiler)(per_device_args)
        except Exception as err:
            _fail(p, f"stablehlo/{compiler} failed: {type(err).__name__}: {err}\n"
                     f"--- module ---\n{text}")
        try:
            compare_per_device(original[compiler], loaded, f"stablehlo/{compiler} vs {compiler}")
        except RoundTripError as err:
            _fail(p, f"{err}\n--- module ---\n{text}")


def check_sharded(p: ShardedProgram) -> None:
    jax = pjrt.oracle()
    J = _Jax(jax)
    mesh = _mesh(p.mesh_shape)
    x = p.leaf.array()
    body = _sharded_nx(p)
    jpre, jpost = _SHARD_UNARY[p.pre][1], _SHARD_UNARY[p.post][1]
    jcoll = _jax_collective(J, *p.collective)
    def jbody(a):
        return jpost(J, jcoll(jpre(J, a)))
    got, per_device = {}, {}  # per_device: each compiler's result tensors, one per device
    with _numpy_backend(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for compiler in ("evaluator", "exla"):
            try:
                if p.kind == "shard_map":
                    f = _shard_map(p, body, mesh, compiler=compiler)
                    args = (nx.tensor(x),)
                    res = f(*args)
                    got[compiler] = np.split(np.asarray(res.to_numpy()), mesh.size, axis=0)
                    # jit of a shard_map: its module takes and returns global, replicated
                    # values, so every device of the loaded module holds the whole result
                    per_device[compiler] = [res] * mesh.size
                else:
                    f = shard_jit(body, mesh, input_shardings=[p.spec], compiler=compiler)
                    args = [[s] for s in SH.shard(nx.tensor(x), mesh, p.spec)]
                    res = f(args)
                    got[compiler] = [np.asarray(r.to_numpy()) for r in res]
                    got["out_sharding"] = read_sharding(f.output_shardings, res[0].shape, mesh)
                    per_device[compiler] = res
            except Exception as err:
                raise Mismatch(f"{compiler} failed: {type(err).__name__}: {err}\n{p}\n"
                               f"repro: {p.repro()}") from err
        _sharded_round_trip(p, body, mesh, args, per_device)
        P = jax.sharding.PartitionSpec
        with jax.enable_x64(False):
            if p.kind == "shard_map":
                jf = jax.jit(jax.shard_map(jbody, mesh=_jmesh(jax, p.mesh_shape),
                                           in_specs=P(*p.spec), out_specs=P(("x", "y")),
                                           check_vma=False))
                want = np.split(np.asarray(jf(x)), mesh.size, axis=0)
            else:
                full = np.asarray(jax.jit(jbody)(x))
                want = got["out_sharding"].shard_array(full)
    tol = (1e-5, 1e-5) if p.leaf.type == "f32" else (0, 0)
    for who in ("evaluator", "exla"):
        for d, (g, w) in enumerate(zip(got[who], want)):
            try:
                if g.shape != w.shape:
                    raise AssertionError(f"shape {g.shape}, JAX {w.shape}")
                np.testing.assert_allclose(g, w, rtol=tol[0],
                                           atol=tol[1] * max(1, np.abs(w).max(initial=0)))
            except AssertionError as err:
                raise Mismatch(f"{who}, device {d}, vs JAX: {err}\n{p}\n"
                               f"repro: {p.repro()}") from None
