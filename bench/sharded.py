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

import importlib.util
from pathlib import Path

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
    from nxpy.layout import read_sharding
    env = _env()
    mesh, backend = env["mesh"], env["backend"]
    shards = read_sharding(spec, arr.shape, mesh).shard_array(arr)
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


# ----------------------------------------------------------------------------------------
# (C) Sharded tensors (JAX's model): data that stays on the devices between calls.
# nxpy: nx.device_put(x, nx.NamedSharding(mesh, spec)) and jit on the sharded tensors;
# JAX: jax.device_put(x, NamedSharding(...)) and jax.jit. Each call's results stay on the
# devices and are the next call's arguments where they can be; every timed call waits.
# ----------------------------------------------------------------------------------------
TENSOR_AIM, PUT_AIM = 1.1, 1.2
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _put(arr, spec):
    import nxpy as nx
    return nx.device_put(arr, nx.NamedSharding(_env()["mesh"], nx.P(*spec)))


def _check_tensor(got, want, what):
    """An nxpy sharded tensor against JAX's array, device by device."""
    env = _env()
    assert got.sharding.spec == __import__("nxpy").P(*want.sharding.spec), (what, got.sharding)
    by_device = {s.device: np.asarray(s.data) for s in want.addressable_shards}
    for s in got.addressable_shards:
        np.testing.assert_allclose(s.data.to_numpy(), by_device[env["devices"][s.partition]],
                                   rtol=1e-5, atol=1e-6, err_msg=f"{what}, device {s.device_id}")


@case("st_call_4x4", "jit x * 2 + y on sharded tensors, 4x4 f32 P('x', 'y') (a call's cost)",
      aim=TENSOR_AIM, devices=4, **TIMING["4x4"])
def st_call(cfg):
    import jax
    import nxpy as nx
    from jax.sharding import PartitionSpec as P
    from nxpy.defn import jit
    a, b = _global_array("4x4", 0), _global_array("4x4", 1)
    x, y = _put(a, ("x", "y")), _put(b, ("x", "y"))
    jx, jy = _jax_array(a, P("x", "y")), _jax_array(b, P("x", "y"))
    f = jit(lambda u, v: u * 2 + v, compiler="exla")
    jf = jax.jit(lambda u, v: u * 2 + v)
    _check_tensor(f(x, y), jf(jx, jy), "x * 2 + y")
    return Pair(nxpy=lambda: nx.block_until_ready(f(x, y)),
                jax=lambda: jf(jx, jy).block_until_ready(),
                info="jit(f, compiler='exla')(x, y) on nx.device_put(..., NamedSharding(mesh, "
                     "P('x', 'y'))) tensors vs jax.jit(f) on jax.device_put(...) arrays" + WAITS)


@case("st_matmul_2x2", "jit x @ w on sharded tensors, 1024x1024 f32, x P('x'), w P(None, 'y')",
      aim=TENSOR_AIM, devices=4, rounds=11, round_seconds=0.1)
def st_matmul(cfg):
    import jax
    import nxpy as nx
    from jax.sharding import PartitionSpec as P
    from nxpy.defn import jit
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((1024, 1024), dtype=np.float32) for _ in range(2))
    x, w = _put(a, ("x",)), _put(b, (None, "y"))
    jx, jw = _jax_array(a, P("x")), _jax_array(b, P(None, "y"))
    f = jit(lambda u, v: nx.dot(u, v), compiler="exla")
    jf = jax.jit(lambda u, v: u @ v)
    _check_tensor(f(x, w), jf(jx, jw), "x @ w")
    return Pair(nxpy=lambda: nx.block_until_ready(f(x, w)),
                jax=lambda: jf(jx, jw).block_until_ready(),
                info="x @ w with x sharded by rows over 'x' and w by columns over 'y': the "
                     "result P('x', 'y'), no communication" + WAITS)


def _train_module():
    spec = importlib.util.spec_from_file_location("nxpy_example_train", EXAMPLES / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@case("st_train_step_2x2", "the MLP training step of examples/train.py on a 2x2 mesh, "
      "sharded tensors, parameters donated", aim=TENSOR_AIM, devices=4, rounds=11,
      round_seconds=0.1)
def st_train_step(cfg):
    import functools
    import jax
    import nxpy as nx
    from jax.sharding import NamedSharding, PartitionSpec as P
    from nxpy.defn import jit
    t = _train_module()
    x, y, _ = t.data()
    params, xs, ys, rate = t.place("exla", t.init_params(), x, y, t.LEARNING_RATE)
    step = jit(t.nx_step, compiler="exla", donate_argnums=0)
    mesh = t._jax_mesh()
    specs = tuple(P(*s) for s in t.IN_SPECS)
    loss_map = jax.shard_map(t._jax_body, mesh=mesh, in_specs=specs, out_specs=P())

    @functools.partial(jax.jit, donate_argnums=0)
    def jstep(p, x, y, lr):
        loss, grads = jax.value_and_grad(lambda p: loss_map(x, y, *p))(p)
        return loss, tuple(a - lr * g for a, g in zip(p, grads))

    def put(v, s):
        return jax.device_put(v, NamedSharding(mesh, s))
    jstate = [tuple(put(p, s) for p, s in zip(t.init_params(), specs[2:])),
              put(x, specs[0]), put(y, specs[1]), put(np.float32(t.LEARNING_RATE), P())]
    state = [params]
    loss, state[0] = step(state[0], xs, ys, rate)
    jloss, jstate[0] = jstep(*jstate)
    np.testing.assert_allclose(float(loss.to_numpy()), float(jloss), rtol=1e-6)
    for p, jp in zip(state[0], jstate[0]):
        _check_tensor(p, jp, "parameters after a step")

    def nxpy_side():
        loss, state[0] = step(state[0], xs, ys, rate)
        nx.block_until_ready((loss, state[0]))

    def jax_side():
        loss, jstate[0] = jstep(*jstate)
        jax.block_until_ready((loss, jstate[0]))
    return Pair(nxpy=nxpy_side, jax=jax_side,
                info="value_and_grad of the shard_map loss and the update, jitted, the "
                     "parameters (w1 P(None,'hidden'), b1 P('hidden'), w2 P('hidden'), b2 "
                     "P()) and the batch (P('batch')) placed once on both sides; each step's "
                     "parameters are the next step's arguments, donated; waits for the loss "
                     "and the parameters")


_64M = (4096, 4096)  # f32: 64 MiB


@case("st_device_put_64M", "device_put of a 64 MiB f32 host array, P('x', 'y')",
      aim=PUT_AIM, devices=4, rounds=9, round_seconds=0.2)
def st_device_put(cfg):
    import jax
    import nxpy as nx
    from jax.sharding import NamedSharding, PartitionSpec as P
    env = _env()
    a = np.random.default_rng(0).standard_normal(_64M, dtype=np.float32)
    s, js = nx.NamedSharding(env["mesh"], nx.P("x", "y")), NamedSharding(env["jmesh"], P("x", "y"))
    _check_tensor(nx.device_put(a, s), jax.device_put(a, js), "device_put")
    return Pair(nxpy=lambda: nx.block_until_ready(nx.device_put(a, s)),
                jax=lambda: jax.device_put(a, js).block_until_ready(),
                info="host NumPy array to four 16 MiB shards; both sides copy it (nxpy never "
                     "aliases host memory)" + WAITS)


@case("st_reshard_64M", "resharding 64 MiB f32 P('x', 'y') -> P('y', 'x') on the devices",
      aim=PUT_AIM, devices=4, rounds=9, round_seconds=0.2)
def st_reshard(cfg):
    import jax
    import nxpy as nx
    from jax.sharding import NamedSharding, PartitionSpec as P
    env = _env()
    a = np.random.default_rng(0).standard_normal(_64M, dtype=np.float32)
    x, jx = _put(a, ("x", "y")), _jax_array(a, P("x", "y"))
    s, js = nx.NamedSharding(env["mesh"], nx.P("y", "x")), NamedSharding(env["jmesh"], P("y", "x"))
    _check_tensor(nx.device_put(x, s), jax.device_put(jx, js), "reshard")
    return Pair(nxpy=lambda: nx.block_until_ready(nx.device_put(x, s)),
                jax=lambda: jax.device_put(jx, js).block_until_ready(),
                info="nx.device_put(x, NamedSharding(mesh, P('y', 'x'))) of a sharded tensor "
                     "(a compiled identity: XLA moves the blocks between the devices) vs "
                     "jax.device_put of the same array" + WAITS)
