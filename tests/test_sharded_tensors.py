"""Sharded tensors (JAX's model, issue 24): ``nx.NamedSharding``, ``nx.device_put``, jit on
sharded tensors with ``in_shardings``/``out_shardings``, ``with_sharding_constraint``,
resharding on the devices, donation, transfer counters, and eager ops on sharded tensors.
Every result is compared with JAX running the same program on the same devices: the
values, the output sharding JAX's partitioner chooses (``.compile().output_shardings``)
and each device's shard; the Evaluator's simulation of the mesh must hold the same shards
as EXLA."""
import itertools

import numpy as np
import pytest

import nxpy as nx
from nxpy import P, telemetry
from nxpy.defn import (jit, pmean, psum, shard_jit, shard_map, value_and_grad,
                       with_sharding_constraint)
from nxpy.defn.sharding.programs import MeshMixError

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp
from jax.sharding import Mesh as JMesh, NamedSharding as JNS, PartitionSpec as JP

BACKENDS = {"exla": "exla", "evaluator": "numpy"}  # compiler -> where its sharded data lives
_MESHES: dict = {}


def meshes(shape=(2, 2), names=("data", "model")):
    key = (shape, names)
    if key not in _MESHES:
        n = int(np.prod(shape))
        _MESHES[key] = (nx.Mesh("m", shape, axis_names=names),
                        JMesh(np.array(jax.devices()[:n]).reshape(shape), names))
    return _MESHES[key]


def arr(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def same_shards(got, want, what=""):
    """``got`` (an nxpy sharded tensor) holds JAX's array ``want`` device for device: the
    same global value, and each device the same slices with the same values."""
    np.testing.assert_allclose(got.to_numpy(), np.asarray(want), rtol=2e-5, atol=2e-6,
                               err_msg=what)
    devices = nx.pjrt.devices()
    jshards = {s.device: s for s in want.addressable_shards}
    assert len(got.addressable_shards) == len(jshards), what
    for s in got.addressable_shards:
        j = jshards[devices[s.device_id]]
        norm = tuple(slice(i.start or 0, i.stop if i.stop is not None else n)
                     for i, n in zip(j.index, want.shape))
        assert s.index == norm, f"{what}: device {s.device_id} holds {s.index}, JAX {norm}"
        np.testing.assert_allclose(s.data.to_numpy(), np.asarray(j.data), rtol=2e-5,
                                   atol=2e-6, err_msg=f"{what}: device {s.device_id}")


def all_specs(names, rank=2):
    """Every P of ``rank`` entries over mesh axes ``names`` (None, one axis or an ordered
    pair per dim, no axis twice)."""
    entries = [None, *names, *itertools.permutations(names, 2)]
    out = []
    for combo in itertools.product(entries, repeat=rank):
        used = [a for e in combo if e is not None for a in (e if isinstance(e, tuple) else (e,))]
        if len(used) == len(set(used)):
            out.append(combo)
    return out


# ----------------------------------------------------------------------------------------
# NamedSharding
# ----------------------------------------------------------------------------------------
def test_named_sharding_is_jaxs():
    m, _ = meshes()
    s = nx.NamedSharding(m, P("data", None))
    assert s.mesh is m and s.spec == P("data") and repr(s) == \
        "NamedSharding(mesh=Mesh('m', [data=2, model=2]), spec=P('data'))"
    assert s == nx.NamedSharding(m, P("data")) == nx.NamedSharding(m, {0: ["data"]}) \
        == nx.NamedSharding(m, P(0)) == nx.NamedSharding(m, JP("data"))
    assert hash(s) == hash(nx.NamedSharding(m, {0: "data"}))
    assert s != nx.NamedSharding(m, P(None, "data")) and s != nx.NamedSharding(m, P("model"))
    assert len({s, nx.NamedSharding(m, P("data", None)), nx.NamedSharding(m, P())}) == 2
    assert nx.NamedSharding(m, P()).is_fully_replicated and not s.is_fully_replicated
    assert nx.NamedSharding(nx.Mesh("one", (1, 4)), P(0)).is_fully_replicated
    assert s.shard_shape((8, 3)) == (4, 3) and s.num_devices == 4
    assert nx.NamedSharding(m, P(("model", "data"))).shard_shape((8,)) == (2,)
    with pytest.raises(AttributeError, match="immutable"):
        s.spec = P()
    with pytest.raises(ValueError, match="size must be divisible by 2"):
        s.shard_shape((3, 3))
    with pytest.raises(ValueError, match=r"P\('data'\) has 1 entries but the tensor has rank 0"):
        s.shard_shape(())
    with pytest.raises(ValueError, match="axis 'rows' is not an axis of mesh 'm'"):
        nx.NamedSharding(m, P("rows"))
    with pytest.raises(ValueError, match="uses a mesh axis twice"):
        nx.NamedSharding(m, P("data", "data"))
    with pytest.raises(TypeError, match="expected mesh to be an nx.Mesh"):
        nx.NamedSharding("m", P())
    with pytest.raises(TypeError, match="non-negative integer dims"):
        nx.NamedSharding(m, {"batch": ["data"]})
    with pytest.raises(TypeError, match="expected spec to be a P"):
        nx.NamedSharding(m, "data")


def test_devices_indices_map_is_jaxs():
    m, jm = meshes((2, 4), ("a", "b"))
    devices = nx.pjrt.devices()
    for spec in [("a", "b"), ("b", None), (("b", "a"),), (None, ("a", "b"))]:
        ours = nx.NamedSharding(m, P(*spec)).devices_indices_map((8, 16))
        theirs = JNS(jm, JP(*spec)).devices_indices_map((8, 16))
        for d, idx in ours.items():
            want = tuple(slice(i.start or 0, i.stop if i.stop is not None else n)
                         for i, n in zip(theirs[devices[d]], (8, 16)))
            assert idx == want, (spec, d)


# ----------------------------------------------------------------------------------------
# device_put: every spec of a 2x2 and a 2x4 mesh, JAX's shards device by device
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,names", [((2, 2), ("data", "model")), ((2, 4), ("a", "b"))])
@pytest.mark.parametrize("backend", ["exla", "numpy"])
def test_device_put_of_every_spec_gives_jaxs_shards(shape, names, backend):
    m, jm = meshes(shape, names)
    a = arr((8, 8))
    for spec in all_specs(names):
        t = nx.device_put(a, nx.NamedSharding(m, P(*spec)), backend=backend)
        assert t.backend.name == backend and t.shape == (8, 8) and t.type == nx.types.F32
        assert t.sharding == nx.NamedSharding(m, P(*spec)) and t.device_id is None
        same_shards(t, jax.device_put(a, JNS(jm, JP(*spec))), f"{spec} on {backend}")
        np.testing.assert_array_equal(np.asarray(t), a)
        assert t.tolist() == a.tolist()


def test_device_put_of_tensors_containers_and_to_one_device():
    m, jm = meshes()
    s = nx.NamedSharding(m, P("data"))
    x = nx.tensor([[1, 2], [3, 4]], names=["rows", "cols"])
    t = nx.device_put(x, s)
    assert t.names == ("rows", "cols") and t.type == nx.types.S32 and t.tolist() == x.tolist()
    assert t.addressable_shards[2].data.tolist() == [[3, 4]]
    tree = nx.device_put({"w": np.ones((4, 2), np.float32), "b": (np.zeros(2, np.float32),)},
                         {"w": s, "b": nx.NamedSharding(m, P())})
    assert tree["w"].sharding == s and tree["b"][0].sharding.spec == P()
    same = nx.device_put(tree, s)  # one sharding for every leaf: a prefix
    assert same["b"][0].sharding == s
    one = nx.device_put(t, 3)  # to one device: unsharded
    assert one.sharding is None and one.device_id == 3 and one.tolist() == x.tolist()
    assert nx.device_put(t, s) is t  # already so


def test_device_put_errors():
    m, _ = meshes()
    with pytest.raises(ValueError, match=r"device_put: the sharding of x: P\('data', 'model'\) "
                                         r"has 2 entries but the tensor has rank 1"):
        nx.device_put(np.ones(4), nx.NamedSharding(m, P("data", "model")))
    with pytest.raises(ValueError, match=r"cannot shard dim 0 of x \(size 3\) over mesh axes "
                                         r"\['data'\]"):
        nx.device_put(np.ones(3), nx.NamedSharding(m, P("data")))
    with pytest.raises(ValueError, match=r"device_put: the sharding of x: P\('data'\) names no "
                                         r"mesh and no mesh is set: .*nx.set_mesh\(mesh\)"):
        nx.device_put(np.ones(4), P("data"))
    with pytest.raises(TypeError, match="expected the sharding of x to be an nx.NamedSharding"):
        nx.device_put(np.ones(4), 2.5)


# ----------------------------------------------------------------------------------------
# Resharding on the devices
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["exla", "numpy"])
def test_resharding_is_jaxs_and_stays_on_the_devices(backend):
    m, jm = meshes()
    a = arr((8, 4))
    src = nx.device_put(a, nx.NamedSharding(m, P("data", "model")), backend=backend)
    want = jax.device_put(jax.device_put(a, JNS(jm, JP("data", "model"))),
                          JNS(jm, JP("model", "data")))
    dst = nx.device_put(src, nx.NamedSharding(m, P("model", "data")))
    same_shards(dst, want, "P('data','model') -> P('model','data')")
    before = telemetry.counters()
    for spec in [("model", "data"), (None, ("data", "model")), (), ("data", "model")]:
        dst = nx.device_put(src, nx.NamedSharding(m, P(*spec)))
        assert dst.sharding.spec == P(*spec) and dst.backend is src.backend
    after = telemetry.counters()
    if backend == "exla":  # the Evaluator's simulation reads its shards on the host
        for k in ("transfer_to_host", "transfer_to_device"):
            assert after.get(k, 0) == before.get(k, 0), k
    same_shards(dst, jax.device_put(a, JNS(jm, JP("data", "model"))), "back")


def test_resharding_reuses_the_blocks_that_stay():
    """A permutation of the blocks (as JAX does it): blocks that stay are the same
    buffers, the others are copied device to device; no program is compiled. Donating the
    result then takes the shared blocks from the source too, which says so."""
    m, jm = meshes()
    a = arr((8, 4))
    x = nx.device_put(a, nx.NamedSharding(m, P("data", "model")))
    before = telemetry.counters()
    y = nx.device_put(x, nx.NamedSharding(m, P("model", "data")))
    after = telemetry.counters()
    assert after.get("compile", 0) == before.get("compile", 0)
    ptr = [s.data.data.unsafe_buffer_pointer() for s in x.addressable_shards]
    assert [s.data.data.unsafe_buffer_pointer() == q
            for s, q in zip(y.addressable_shards, ptr)] == [True, False, False, True]
    same_shards(y, jax.device_put(jax.device_put(a, JNS(jm, JP("data", "model"))),
                                  JNS(jm, JP("model", "data"))), "moved blocks")
    jit(lambda t: t * 2, compiler="exla", donate_argnums=0)(y)
    with pytest.raises(nx.pjrt.BufferDeletedError, match="donated.*through another tensor "
                                                         "sharing it"):
        x.to_numpy()


# ----------------------------------------------------------------------------------------
# jit on sharded tensors: JAX's values and output shardings
# ----------------------------------------------------------------------------------------
CASES = {
    "elementwise": (lambda a: a * 2 + nx.exp(a), lambda a: a * 2 + jnp.exp(a),
                    [((8, 4), ("data", "model"))]),
    "binary, one operand sharded per dim": (lambda a, b: a - b, lambda a, b: a - b,
                                           [((8, 4), ("data", None)), ((8, 4), (None, "model"))]),
    "binary, operands in conflict": (lambda a, b: a * b, lambda a, b: a * b,
                                     [((8, 4), ("data", "model")), ((8, 4), ("model", None))]),
    "binary, one axis a prefix of two": (lambda a, b: a + b, lambda a, b: a + b,
                                         [((8, 4), (("data", "model"),)), ((8, 4), ("data",))]),
    "broadcast": (lambda a, b: a + b, lambda a, b: a + b,
                  [((8, 4), ("data", None)), ((4,), ("model",))]),
    "dot": (lambda a, b: nx.dot(a, b), lambda a, b: a @ b,
            [((8, 4), ("data", None)), ((4, 6), (None, "model"))]),
    "dot, contracted dim sharded": (lambda a, b: nx.dot(a, b), lambda a, b: a @ b,
                                    [((8, 4), ("data", "model")), ((4, 6), ("model", None))]),
    "sum over the sharded rows": (lambda a: nx.sum(a, axes=[0]), lambda a: a.sum(0),
                                  [((8, 4), ("data", "model"))]),
    "sum over the columns": (lambda a: nx.sum(a, axes=[1]), lambda a: a.sum(1),
                             [((8, 4), ("data", "model"))]),
    "sum of all": (lambda a: nx.sum(a), lambda a: a.sum(), [((8, 4), ("data", "model"))]),
    "reduce_max": (lambda a: nx.reduce_max(a, axes=[1]), lambda a: a.max(1),
                   [((8, 4), ("data", "model"))]),
    "two axes on one dim": (lambda a: nx.sum(nx.exp(a), axes=[1]),
                            lambda a: jnp.exp(a).sum(1), [((8, 4), (("data", "model"),))]),
    "transpose": (lambda a: nx.transpose(a), lambda a: a.T, [((8, 4), ("data", "model"))]),
    "transpose 3-d": (lambda a: nx.transpose(a, axes=[2, 0, 1]), lambda a: a.transpose(2, 0, 1),
                      [((4, 4, 2), ("data", None, "model"))]),
    "reshape merging": (lambda a: nx.reshape(a, (32,)), lambda a: a.reshape(32),
                        [((8, 4), ("data", "model"))]),
    "reshape splitting": (lambda a: nx.reshape(a, (8, 2, 2)), lambda a: a.reshape(8, 2, 2),
                          [((8, 4), ("data", "model"))]),
    "reshape regrouping": (lambda a: nx.reshape(a, (4, 8)), lambda a: a.reshape(4, 8),
                           [((8, 4), ("data", "model"))]),
    "reshape merging split dims": (lambda a: nx.reshape(a, (8, 4)), lambda a: a.reshape(8, 4),
                                   [((2, 4, 4), ("data", "model"))]),
    "reshape dealing two axes out": (lambda a: nx.reshape(a, (2, 4, 4)),
                                     lambda a: a.reshape(2, 4, 4),
                                     [((8, 4), (("model", "data"),))]),
    "softmax": (lambda a: nx.exp(a) / nx.sum(nx.exp(a), axes=[1], keep_axes=True),
                lambda a: jnp.exp(a) / jnp.exp(a).sum(1, keepdims=True),
                [((8, 4), ("data", "model"))]),
}


def _args(args, m, jm, backend):
    nxs, jxs = [], []
    for i, (shape, spec) in enumerate(args):
        a = arr(shape, seed=i)
        nxs.append(nx.device_put(a, nx.NamedSharding(m, P(*spec)), backend=backend))
        jxs.append(jax.device_put(a, JNS(jm, JP(*spec))))
    return nxs, jxs


@pytest.mark.parametrize("case", list(CASES))
def test_jit_on_sharded_tensors_gives_jaxs_values_and_output_shardings(case):
    m, jm = meshes()
    nf, jf, args = CASES[case]
    jargs = _args(args, m, jm, "exla")[1]
    want = jax.jit(jf)(*jargs)
    want_spec = jax.jit(jf).lower(*jargs).compile().output_shardings.spec
    results = {}
    for compiler, backend in BACKENDS.items():
        nargs = _args(args, m, jm, backend)[0]
        got = jit(nf, compiler=compiler)(*nargs)
        assert got.sharding == nx.NamedSharding(m, P(*want_spec)), (compiler, got.sharding)
        assert got.backend.name == backend
        same_shards(got, want, f"{case} on {compiler}")
        results[compiler] = got
    for a, b in zip(*(results[c].addressable_shards for c in BACKENDS)):
        assert (a.device_id, a.index) == (b.device_id, b.index)
        np.testing.assert_allclose(a.data.to_numpy(), b.data.to_numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("compiler", list(BACKENDS))
def test_out_shardings_and_in_shardings_are_honoured(compiler):
    m, jm = meshes()
    a, b = arr((8, 4)), arr((4, 6), 1)
    want = jax.jit(lambda x, y: x @ y, in_shardings=(JNS(jm, JP(None, "model")), None),
                   out_shardings=JNS(jm, JP("model", "data")))(a, b)
    f = jit(lambda x, y: nx.dot(x, y), compiler=compiler, mesh=m,
            in_shardings=(P(None, "model"), None), out_shardings=P("model", "data"))
    got = f(a, b)  # host arrays: placed as in_shardings says
    assert got.sharding == nx.NamedSharding(m, P("model", "data"))
    same_shards(got, want, compiler)
    # NamedShardings name the mesh themselves; containers of specs as prefixes
    g = jit(lambda p: {"s": p[0] + p[1], "d": p[0] - p[1]}, compiler=compiler,
            out_shardings={"s": nx.NamedSharding(m, P("data")), "d": nx.NamedSharding(m, P())})
    r = g((nx.device_put(a, nx.NamedSharding(m, P(None, "model"))), a))
    assert r["s"].sharding.spec == P("data") and r["d"].sharding.spec == P()
    np.testing.assert_allclose(r["s"].to_numpy(), 2 * a)
    assert [s.index for s in r["s"].addressable_shards][2] == (slice(4, 8), slice(0, 4))


@pytest.mark.parametrize("compiler", list(BACKENDS))
def test_compile_ahead_of_time_for_sharded_tensors(compiler):
    m, jm = meshes()
    a, b = arr((8, 4)), arr((4, 6), 1)
    x = nx.device_put(a, nx.NamedSharding(m, P("data")), backend=BACKENDS[compiler])
    w = nx.device_put(b, nx.NamedSharding(m, P(None, "model")), backend=BACKENDS[compiler])
    f = nx.defn.compile(lambda u, v: nx.dot(u, v), x, w, compiler=compiler)
    r = f(x, w)
    same_shards(r, jax.jit(lambda u, v: u @ v)(jax.device_put(a, JNS(jm, JP("data"))),
                                                jax.device_put(b, JNS(jm, JP(None, "model")))),
                compiler)
    with pytest.raises(ValueError, match=r"argument 0 \(u\): compiled for a tensor sharded "
                                         r"NamedSharding.*got one not sharded"):
        f(a, w)
    g = nx.defn.compile(lambda u: u * 2, nx.template((8, 4), "f32"), compiler=compiler,
                        in_shardings=P("model"), mesh=m)
    assert g(a).sharding == nx.NamedSharding(m, P("model"))


@pytest.mark.parametrize("compiler", list(BACKENDS))
def test_with_sharding_constraint_is_honoured(compiler):
    m, jm = meshes()
    a = arr((8, 4))

    def nf(x):
        y = with_sharding_constraint(nx.exp(x), nx.NamedSharding(m, P(None, "model")))
        return y * 2  # propagation continues from the constraint

    def jf(x):
        return jax.lax.with_sharding_constraint(jnp.exp(x), JNS(jm, JP(None, "model"))) * 2

    xs = jax.device_put(a, JNS(jm, JP("data")))
    want, spec = jax.jit(jf)(xs), jax.jit(jf).lower(xs).compile().output_shardings.spec
    got = jit(nf, compiler=compiler)(nx.device_put(a, nx.NamedSharding(m, P("data")),
                                                   backend=BACKENDS[compiler]))
    assert got.sharding == nx.NamedSharding(m, P(*spec)) == nx.NamedSharding(m, P(None, "model"))
    same_shards(got, want, compiler)
    # a P inside a program over a mesh; no sharded argument: the constraint names the mesh
    h = jit(lambda x: with_sharding_constraint(x + 1, nx.NamedSharding(m, P("data", "model"))),
            compiler=compiler)
    r = h(a)
    assert r.sharding.spec == P("data", "model")
    np.testing.assert_allclose(r.to_numpy(), a + 1, rtol=1e-6)
    k = jit(lambda x: with_sharding_constraint(x, P("model")), compiler=compiler)
    assert k(nx.device_put(a, nx.NamedSharding(m, P("data")))).sharding.spec == P("model")
    if compiler == "exla":
        assert "sdy.sharding_constraint" in module(h)


def _program_of(f):
    """The run of the one program jit ``f`` compiled (whatever its arguments)."""
    from nxpy.defn.core import PROGRAMS
    ((run, _),) = PROGRAMS.of(f.fun)._values.values()
    return run


def module(f):
    """The module text of the one program ``f`` compiled."""
    (run, _), = f._mixed.values()
    return run.module


def test_sharding_constraint_errors():
    m, _ = meshes()
    other = nx.Mesh("o", (2, 2), axis_names=("data", "model"), devices=[4, 5, 6, 7])
    with pytest.raises(ValueError, match="names no mesh and no mesh is set"):
        jit(lambda x: with_sharding_constraint(x, P("data")))(np.ones(4))
    with pytest.raises(ValueError, match="inside shard_map values are each device's own shard"):
        shard_map(lambda x: with_sharding_constraint(x, P()), m, in_specs=P("data"),
                  out_specs=P("data"))(np.ones(4))
    with pytest.raises(ValueError, match="one program runs over one mesh"):
        jit(lambda x: with_sharding_constraint(x, nx.NamedSharding(other, P())))(
            nx.device_put(np.ones(4), nx.NamedSharding(m, P("data"))))
    with pytest.raises(ValueError, match=r"P\('data', 'model'\) has 2 entries but the tensor "
                                         r"has rank 1"):
        jit(lambda x: with_sharding_constraint(x, P("data", "model")), mesh=m)(np.ones(4))


def test_a_mix_of_meshes_and_a_spec_longer_than_the_rank_are_clear_errors():
    m, _ = meshes()
    other = nx.Mesh("o", (2, 2), axis_names=("data", "model"), devices=[4, 5, 6, 7])
    x = nx.device_put(np.ones((4, 4), np.float32), nx.NamedSharding(m, P("data")))
    y = nx.device_put(np.ones((4, 4), np.float32), nx.NamedSharding(other, P("data")))
    f = jit(lambda a, b: a + b, compiler="exla")
    with pytest.raises(MeshMixError, match=r"argument 0 \(a\) is over Mesh\('m', \[data=2, "
                                           r"model=2\]\) \(devices \[0, 1, 2, 3\]\) but "
                                           r"argument 1 \(b\) is over Mesh\('o'.*nx.device_put"):
        f(x, y)
    with pytest.raises(MeshMixError, match=r"out_shardings NamedSharding.*but argument 0 \(a\)"):
        jit(lambda a: a, out_shardings=nx.NamedSharding(other, P()))(x)
    with pytest.raises(ValueError, match=r"in_shardings of argument 0 \(a\): P\('data', None, "
                                         r"'model'\) has 3 entries but the tensor has rank 2"):
        jit(lambda a: a, in_shardings=P("data", None, "model"), mesh=m)(np.ones((4, 4)))
    with pytest.raises(ValueError, match=r"out_sharding of output 0: P\('data', 'model'\) has "
                                         r"2 entries but the tensor has rank 1"):
        jit(lambda a: nx.sum(a, axes=[0]), out_shardings=P("data", "model"))(x)
    with pytest.raises(ValueError, match="in_shardings/out_shardings given as P .* need a mesh"):
        jit(lambda a: a, in_shardings=P("data"))(np.ones(4))
    with pytest.raises(ValueError, match=r"argument 0 \(a\) is laid out as P\('data'\) but the "
                                         r"program takes it as P\('model'\).*nx.device_put"):
        jit(lambda a: a, in_shardings=P("model"))(x)
    with pytest.raises(TypeError, match="expected mesh to be an nx.Mesh"):
        jit(lambda a: a, mesh="m")


# ----------------------------------------------------------------------------------------
# Donation, compile counts, transfers, eager ops
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", list(BACKENDS))
def test_donation_of_sharded_arguments(compiler):
    m, _ = meshes()
    s = nx.NamedSharding(m, P("data", "model"))
    w = nx.device_put(arr((8, 4)), s, backend=BACKENDS[compiler])
    g = nx.device_put(arr((8, 4), 1), s, backend=BACKENDS[compiler])
    want = w.to_numpy() - 0.5 * g.to_numpy()
    step = jit(lambda w, g: w - 0.5 * g, compiler=compiler, donate_argnums=0)
    w2 = step(w, g)
    assert w.donated and not g.donated and w2.sharding == s
    np.testing.assert_allclose(w2.to_numpy(), want, rtol=1e-6)
    with pytest.raises(nx.DonatedError, match="donated to <lambda>"):
        w.to_numpy()
    with pytest.raises(nx.DonatedError):
        step(w, g)
    w3 = step(w2, g)  # the hot path donates too
    assert w2.donated
    np.testing.assert_allclose(w3.to_numpy(), want - 0.5 * g.to_numpy(), rtol=1e-6)
    if compiler == "exla":
        assert "tf.aliasing_output" in module(step)


def test_renaming_and_returning_a_donated_argument_keep_the_sharding():
    m, _ = meshes()
    s = nx.NamedSharding(m, P("data"))
    x = nx.device_put(arr((4, 4)), s)
    assert nx.rename(x, ["r", "c"]).sharding == s
    f = jit(lambda a, b: (a, b * 2), compiler="exla", donate_argnums=0)
    same, _ = f(x, x + 1)
    assert x.donated and same.sharding == s and same.shape == (4, 4)


def test_exla_sharded_calls_compile_once_and_never_touch_the_host(compiles):
    m, _ = meshes()
    s = nx.NamedSharding(m, P("data", "model"))
    x, y = (nx.device_put(arr((8, 4), i), s) for i in range(2))
    f = jit(lambda a, b: a * 2 + b, compiler="exla")
    f(x, y)
    n = len(compiles)
    before = telemetry.counters()
    for _ in range(5):
        x = f(x, y)
    after = telemetry.counters()
    assert len(compiles) == n and f.trace_count == 1
    for k in ("transfer_to_host", "transfer_to_device", "trace", "compile"):
        assert after.get(k, 0) == before.get(k, 0), k
    x.to_numpy()
    assert telemetry.counters()["transfer_to_host"] == after.get("transfer_to_host", 0) + 4


def test_transfer_counters_count_buffers():
    m, _ = meshes()
    c = telemetry.counters
    b = c()
    t = nx.device_put(np.ones((4, 4), np.float32), nx.NamedSharding(m, P("data", "model")))
    assert c().get("transfer_to_device", 0) - b.get("transfer_to_device", 0) == 4
    b = c()
    t.to_numpy()
    assert c()["transfer_to_host"] - b.get("transfer_to_host", 0) == 4
    b = c()
    nx.device_put(t, nx.NamedSharding(m, P())).to_numpy()  # replicated: one buffer read
    assert c()["transfer_to_host"] - b.get("transfer_to_host", 0) == 1
    b = c()
    e = nx.backend_transfer(nx.tensor([1.0, 2.0]), "exla")
    e.to_numpy()
    assert c()["transfer_to_device"] - b.get("transfer_to_device", 0) == 1
    assert c()["transfer_to_host"] - b.get("transfer_to_host", 0) == 1


@pytest.mark.parametrize("backend", ["exla", "numpy"])
def test_eager_ops_on_sharded_tensors_run_as_sharded_programs(backend):
    m, jm = meshes()
    a, b = arr((8, 4)), arr((4, 6), 1)
    x = nx.device_put(a, nx.NamedSharding(m, P("data", "model")), backend=backend)
    w = nx.device_put(b, nx.NamedSharding(m, P(None, "model")), backend=backend)
    ja = jax.device_put(a, JNS(jm, JP("data", "model")))
    jw = jax.device_put(b, JNS(jm, JP(None, "model")))
    same_shards(x * 2 + 1, ja * 2 + 1, "x * 2 + 1")
    same_shards(nx.exp(x), jnp.exp(ja), "exp")
    same_shards(nx.dot(x, w), ja @ jw, "dot")
    same_shards(nx.sum(x, axes=[1]), ja.sum(1), "sum")
    same_shards(x.T, ja.T, "transpose")
    same_shards(x - a, ja - a, "with a host operand")
    top, idx = nx.top_k(x, k=2)  # an op with several results
    np.testing.assert_allclose(top.to_numpy(), jax.lax.top_k(a, 2)[0], rtol=1e-6)
    assert top.sharding.mesh == m
    assert str(x[1:3]).startswith("#Nx.Tensor<\n  f32[2][4]\n  NamedSharding(")


def test_a_shard_map_on_sharded_tensors_needs_no_resharding():
    """The shard_map's in_specs match the arguments' shardings: the module moves no data
    (no all-gather, no collective-permute), and the results are laid out as out_specs."""
    m, _ = meshes()
    x = nx.device_put(arr((8, 4)), nx.NamedSharding(m, P("data", "model")))
    f = jit(shard_map(lambda v: v * 2, m, in_specs=P("data", "model"),
                      out_specs=P("data", "model")), compiler="exla")
    y = f(x)
    assert y.sharding == x.sharding
    assert shard_map(lambda v: v * 2, m, in_specs=P("data", "model"), out_specs=P("data", "model"),
                     compiler="exla")(x).sharding == x.sharding  # called directly
    text = module(f)
    for op in ("all_gather", "all_to_all", "collective_permute", "all_reduce"):
        assert op not in text
    np.testing.assert_allclose(y.to_numpy(), 2 * x.to_numpy())


@pytest.mark.parametrize("compiler", list(BACKENDS))
def test_shard_jit_takes_global_tensors_too(compiler):
    m, jm = meshes()
    a = arr((8, 4))
    f = shard_jit(lambda x, y: x * 2 + y, m, input_shardings=[P("data"), P("data")],
                  compiler=compiler)
    x = nx.device_put(a, nx.NamedSharding(m, P("data")), backend=BACKENDS[compiler])
    r = f(x, a)  # a sharded tensor and a host array (placed)
    assert r.sharding == nx.NamedSharding(m, P("data"))
    same_shards(r, jax.jit(lambda u, v: u * 2 + v)(
        jax.device_put(a, JNS(jm, JP("data"))), jax.device_put(a, JNS(jm, JP("data")))),
        compiler)
    per_device = f([[s.data, s.data] for s in x.addressable_shards])  # Nx's form still
    np.testing.assert_allclose(per_device[2].to_numpy(), 3 * a[4:])


# ----------------------------------------------------------------------------------------
# The acceptance loop: a training step on a 2x2 mesh that never touches the host
# ----------------------------------------------------------------------------------------
def _nx_loss(mesh):
    def body(x, y, w1, w2):
        h = nx.tanh(nx.dot(x, w1))                        # this device's hidden units
        out = psum(nx.dot(h, w2), "model")                # the partial products, summed
        return pmean(nx.mean((out - y) ** 2), "data")     # the mean over the whole batch
    f = shard_map(body, mesh, in_specs=[P("data"), P("data"), P(None, "model"), P("model")],
                  out_specs=P())
    return lambda params, x, y: f(x, y, *params)


def _jax_loss(jm):
    def body(x, y, w1, w2):
        h = jnp.tanh(x @ w1)
        out = jax.lax.psum(h @ w2, "model")
        return jax.lax.pmean(jnp.mean((out - y) ** 2), "data")
    f = jax.shard_map(body, mesh=jm, in_specs=(JP("data"), JP("data"), JP(None, "model"),
                                               JP("model")), out_specs=JP())
    return lambda params, x, y: f(x, y, *params)


@pytest.mark.parametrize("compiler", list(BACKENDS))
def test_a_training_loop_stays_on_the_devices(compiler):
    m, jm = meshes()
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((16, 4)).astype(np.float32),
            rng.standard_normal((16, 3)).astype(np.float32))
    w1, w2 = (rng.standard_normal((4, 8)) * 0.5).astype(np.float32), \
        (rng.standard_normal((8, 3)) * 0.5).astype(np.float32)
    specs = (P(None, "model"), P("model"))
    loss = _nx_loss(m)

    def step(params, x, y):
        v, grads = value_and_grad(loss)(params, x, y)
        return v, tuple(p - 0.1 * g for p, g in zip(params, grads))

    nstep = jit(step, compiler=compiler, donate_argnums=0)
    b = BACKENDS[compiler]
    params = tuple(nx.device_put(p, nx.NamedSharding(m, s), backend=b)
                   for p, s in zip((w1, w2), specs))
    xs = nx.device_put(x, nx.NamedSharding(m, P("data")), backend=b)
    ys = nx.device_put(y, nx.NamedSharding(m, P("data")), backend=b)

    jloss = _jax_loss(jm)

    @jax.jit
    def jstep(params, x, y):
        v, grads = jax.value_and_grad(jloss)(params, x, y)
        return v, tuple(p - 0.1 * g for p, g in zip(params, grads))
    jparams = tuple(jax.device_put(p, JNS(jm, JP(*s))) for p, s in zip((w1, w2), specs))
    jx, jy = jax.device_put(x, JNS(jm, JP("data"))), jax.device_put(y, JNS(jm, JP("data")))

    losses, jlosses = [], []
    v, params = nstep(params, xs, ys)
    losses.append(v)
    before = telemetry.counters()
    for _ in range(7):
        v, params = nstep(params, xs, ys)
        losses.append(v)
    after = telemetry.counters()
    for k in ("trace", "compile", "transfer_to_host", "transfer_to_device"):
        assert after.get(k, 0) == before.get(k, 0), k
    assert [p.sharding.spec for p in params] == list(specs)
    assert nstep.trace_count == 1 and all(p.backend.name == b for p in params)
    if compiler == "exla":  # the weights stay sharded: XLA gathers nothing
        hlo = nx.pjrt.compile(_program_of(nstep).module, m.devices, spmd=True).get_hlo_text()
        assert "all-gather" not in hlo and "all-reduce" in hlo
    for _ in range(8):
        jv, jparams = jstep(jparams, jx, jy)
        jlosses.append(jv)
    np.testing.assert_allclose([float(v) for v in losses], [float(v) for v in jlosses],
                               rtol=2e-5)
    for p, jp in zip(params, jparams):
        same_shards(p, jp, "parameters after 8 steps")


def test_jaxs_sharding_constraint_imports_as_one():
    """``jax.lax.with_sharding_constraint`` in a JAX module loads as nxpy's constraint:
    the loaded program lays the value out as JAX's does, on both compilers."""
    from nxpy import stablehlo
    m, jm = meshes()
    a = arr((8, 4))

    def f(v):
        return jax.lax.with_sharding_constraint(jnp.exp(v), JNS(jm, JP(None, "model"))) * 2
    ja = jax.device_put(a, JNS(jm, JP("data")))
    prog = stablehlo.load(jax.jit(f).lower(ja).as_text())
    want = jax.jit(f)(ja)
    for compiler, backend in BACKENDS.items():
        got = prog.jit(compiler)(nx.device_put(a, nx.NamedSharding(m, P("data")),
                                               backend=backend))
        assert got.sharding == nx.NamedSharding(m, P(*want.sharding.spec))
        same_shards(got, want, compiler)
