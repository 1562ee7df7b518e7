"""Sharded cases, all on a 2x2 mesh (4 of the client's CPU devices): the global view
(``shard_jit``) and the local view's collectives (``shard_map`` inside ``shard_jit``), each
against the JAX program that does the same XLA work.

Both sides take arguments that already live on their devices (nxpy: one EXLA tensor per
device, on that device; JAX: one global array with a ``NamedSharding``) and every timed
call waits for all devices' results. Before timing, each case checks that nxpy's
per-device results equal JAX's addressable shards, device by device.

Sizes: ``4x4`` is a 4x4 f32 global array (2x2 per device: the cost of a call);
``64K`` / ``8M`` are 64 KiB / 8 MiB f32 shards per device (128x128 / 1024x2048 local).
"""
from __future__ import annotations

import numpy as np

from .core import Pair, case

MESH_SHAPE = (2, 2)
AXES = ("x", "y")
GLOBAL_AIM = 1.3  # the largest acceptable nxpy/JAX ratio for the global-view cases

# local (per-device) f32 shard shapes
LOCAL = {"4x4": (2, 2), "64K": (128, 128), "8M": (1024, 2048)}
SIZE_TITLE = {"4x4": "4x4 f32 global", "64K": "64 KiB f32 shards", "8M": "8 MiB f32 shards"}
# Per-side rounds in a full run: more and shorter than the default (7 x 250 ms), so that
# the sides alternate finely (four device threads share the cores with Python, and the
# machine's speed drifts); calls on 8 MiB shards take milliseconds: fewer rounds.
TIMING = {"4x4": dict(rounds=15, round_seconds=0.1), "64K": dict(rounds=15, round_seconds=0.1),
          "8M": dict(rounds=9, round_seconds=0.1)}

_ENV: dict = {}


def _env():
    """The nxpy mesh and the JAX mesh over the same four devices, in the same order."""
    if not _ENV:
        import jax
        import nxpy as nx
        from jax.sharding import Mesh as JMesh
        from nxpy.backend import get_backend
        from nxpy import pjrt
        mesh = nx.Mesh("bench", MESH_SHAPE, axis_names=AXES)
        client_devices = pjrt.devices()
        devs = np.empty(mesh.size, dtype=object)
        devs[:] = [client_devices[i] for i in mesh.devices]
        assert list(jax.devices()[:mesh.size]) == list(devs)
        _ENV.update(mesh=mesh, jmesh=JMesh(devs.reshape(MESH_SHAPE), AXES),
                    devices=list(devs), backend=get_backend("exla"))
    return _ENV


def _global_array(size, seed):
    local = LOCAL[size]
    shape = tuple(n * m for n, m in zip(local, MESH_SHAPE))
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape, dtype=np.float32)


def _nx_shards(arr, spec):
    """One EXLA tensor per device, each on its own device (partition order)."""
    from nxpy import types as T
    from nxpy.defn import sharding as SH
    env = _env()
    mesh, backend = env["mesh"], env["backend"]
    shards = SH.shard_array(arr, SH.normalize(spec, arr.shape, mesh), mesh)
    out = [backend.from_numpy(np.ascontiguousarray(s), T.F32, None, device_id=d)
           for s, d in zip(shards, mesh.devices)]
    assert [t.device_id for t in out] == list(mesh.devices), [t.device_id for t in out]
    return out


def _jax_array(arr, pspec):
    import jax
    from jax.sharding import NamedSharding
    x = jax.device_put(arr, NamedSharding(_env()["jmesh"], pspec))
    x.block_until_ready()
    return x


def _check(nx_outs, jax_out, what):
    """nxpy's per-device results against JAX's addressable shards, device by device."""
    env = _env()
    by_device = {s.device: np.asarray(s.data) for s in jax_out.addressable_shards}
    assert len(nx_outs) == len(env["devices"])
    for p, (o, dev) in enumerate(zip(nx_outs, env["devices"])):
        assert o.device_id == env["mesh"].devices[p]
        want, got = by_device[dev], o.to_numpy()
        if got.shape != want.shape:
            raise AssertionError(f"{what}, partition {p}: nxpy shape {got.shape}, JAX "
                                 f"{want.shape}")
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0,
                                   err_msg=f"{what}, partition {p}: nxpy != JAX")


def _pair(nf, nargs, jf, jargs, what, info):
    """Checks both sides once, then returns the timed callables (each waits for every
    device's result)."""
    import nxpy as nx
    _check(nf(nargs), jf(*jargs), what)

    def nxpy_side():  # one wait for all the per-device results, as JAX waits for its array
        nx.block_until_ready(nf(nargs))

    def jax_side():
        jf(*jargs).block_until_ready()

    return Pair(nxpy=nxpy_side, jax=jax_side, info=info)


# ----------------------------------------------------------------------------------------
# (A) Global view: shard_jit vs jax.jit on NamedSharding arrays
# ----------------------------------------------------------------------------------------
SPEC = {0: [0], 1: [1]}  # dim 0 over "x", dim 1 over "y"
WAITS = "; waits for every device's result"


def _elementwise(size):
    import jax
    from jax.sharding import PartitionSpec as P
    from nxpy.defn import shard_jit
    env = _env()
    a, b = _global_array(size, 0), _global_array(size, 1)
    xs, ys = _nx_shards(a, SPEC), _nx_shards(b, SPEC)
    nf = shard_jit(lambda x, y: x * 2 + y, env["mesh"], input_shardings=[SPEC, SPEC],
                   compiler="exla")
    jf = jax.jit(lambda x, y: x * 2 + y)
    return _pair(nf, [[x, y] for x, y in zip(xs, ys)], jf,
                 (_jax_array(a, P("x", "y")), _jax_array(b, P("x", "y"))),
                 f"shard_jit x * 2 + y, {size}",
                 info="shard_jit(f, input_shardings=[{0: [0], 1: [1]}] * 2) on per-device "
                      "EXLA tensors vs jax.jit(f) on NamedSharding(P('x', 'y')) arrays" + WAITS)


def _gather(size):
    import jax
    from jax.sharding import PartitionSpec as P
    from nxpy.defn import all_gather, shard_jit
    env = _env()
    a = _global_array(size, 0)
    nf = shard_jit(lambda x: all_gather(x, all_gather_dim=0), env["mesh"],
                   input_shardings=[SPEC], compiler="exla")
    jf = jax.jit(jax.shard_map(lambda v: jax.lax.all_gather(v, "x", axis=0, tiled=True),
                               mesh=env["jmesh"], in_specs=P("x", "y"),
                               out_specs=P(None, "y"), check_vma=False))
    return _pair(nf, [[x] for x in _nx_shards(a, SPEC)], jf, (_jax_array(a, P("x", "y")),),
                 f"shard_jit all_gather, {size}",
                 info="shard_jit(all_gather(x, all_gather_dim=0)), x sharded {0: [0], 1: [1]}, "
                      "vs jax.jit(jax.shard_map(lax.all_gather(v, 'x', axis=0, tiled=True), "
                      "P('x', 'y') -> P(None, 'y')))" + WAITS)


def _register_global():
    for size in ("4x4", "8M"):
        case(f"sj_elementwise_{size}", f"shard_jit x * 2 + y, {SIZE_TITLE[size]}",
             aim=GLOBAL_AIM, devices=4, **TIMING[size])(lambda cfg, s=size: _elementwise(s))
        case(f"sj_all_gather_{size}", f"shard_jit all_gather dim 0, {SIZE_TITLE[size]}",
             aim=GLOBAL_AIM, devices=4, **TIMING[size])(lambda cfg, s=size: _gather(s))


# ----------------------------------------------------------------------------------------
# (B) Local view: shard_map inside shard_jit vs jax.jit(jax.shard_map(...))
#
# nxpy runs shard_jit(lambda x: shard_map(body, ...)(x), input_shardings=[SPEC]) on the
# per-device shards: the module jax.jit(jax.shard_map(...)) compiles, with the same
# argument and result shardings. (A plain jit around shard_map would compile with
# replicated arguments and results instead: another program.)
# ----------------------------------------------------------------------------------------
def _collectives():
    """name -> (nxpy body, JAX body, out spec as a per-dim tuple, note). Inputs are
    sharded P("x", "y") on both sides."""
    import jax.numpy as jnp
    from jax import lax
    from nxpy.defn import (all_gather, all_to_all, collective_broadcast, ppermute, psum,
                           psum_scatter)
    ring = [(0, 1), (1, 0)]  # around "y" (size 2)
    return {
        "all_gather": (lambda v: all_gather(v, axes="x", all_gather_dim=0),
                       lambda v: lax.all_gather(v, "x", axis=0, tiled=True),
                       (None, "y"), "all_gather, tiled, over 'x', dim 0"),
        "psum": (lambda v: psum(v, "x"), lambda v: lax.psum(v, "x"), (None, "y"),
                 "psum over 'x'"),
        "psum_scatter": (lambda v: psum_scatter(v, "x", scatter_dimension=0, tiled=True),
                         lambda v: lax.psum_scatter(v, "x", scatter_dimension=0, tiled=True),
                         ("x", "y"), "psum_scatter, tiled, over 'x', dim 0"),
        "all_to_all": (lambda v: all_to_all(v, "x", 0, 1, tiled=True),
                       lambda v: lax.all_to_all(v, "x", 0, 1, tiled=True),
                       ("x", "y"), "all_to_all, tiled, over 'x', split dim 0, concat dim 1"),
        "ppermute": (lambda v: ppermute(v, "y", ring), lambda v: lax.ppermute(v, "y", ring),
                     ("x", "y"), "ppermute, a ring over 'y'"),
        # no JAX twin: JAX runs the program nxpy lowers it to (a masked psum)
        "bcast": (lambda v: collective_broadcast(v, "y", source=0),
                  lambda v: lax.psum(jnp.where(lax.axis_index("y") == 0, v,
                                               jnp.zeros_like(v)), "y"),
                  ("x", None),
                  "collective_broadcast over 'y' from index 0; JAX has no twin, so JAX runs "
                  "psum(where(axis_index('y') == 0, v, 0), 'y'): what nxpy lowers it to "
                  "(XLA:CPU has no collective_broadcast)"),
    }


def _collective(name, size):
    import jax
    from jax.sharding import PartitionSpec as P
    from nxpy.defn import shard_jit, shard_map
    env = _env()
    nx_body, jax_body, out_spec, note = _collectives()[name]
    mesh = env["mesh"]
    a = _global_array(size, 0)
    inner = shard_map(nx_body, mesh, in_specs=("x", "y"), out_specs=out_spec)
    nf = shard_jit(lambda x: inner(x), mesh, input_shardings=[SPEC], compiler="exla")
    jf = jax.jit(jax.shard_map(jax_body, mesh=env["jmesh"], in_specs=P("x", "y"),
                               out_specs=P(*out_spec), check_vma=False))
    return _pair(nf, [[x] for x in _nx_shards(a, SPEC)], jf, (_jax_array(a, P("x", "y")),),
                 f"shard_map {name}, {size}",
                 info=f"shard_jit(shard_map(body)) on per-device EXLA tensors vs "
                      f"jax.jit(jax.shard_map(body)) on a P('x', 'y') array; body: {note}; "
                      f"out_specs P{out_spec}" + WAITS)


COLLECTIVES = ["all_gather", "psum", "psum_scatter", "all_to_all", "ppermute", "bcast"]


def _register_local():
    for name in COLLECTIVES:
        for size in ("64K", "8M"):
            label = "collective_broadcast (JAX: masked psum)" if name == "bcast" else name
            case(f"sm_{name}_{size}", f"shard_map {label} in shard_jit, {SIZE_TITLE[size]}",
                 devices=4, **TIMING[size])(
                lambda cfg, n=name, s=size: _collective(n, s))


_register_global()
_register_local()
