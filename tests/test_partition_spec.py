"""``nx.P`` (PartitionSpec) and JAX's own ``PartitionSpec`` as sharding specs: in
``shard_map``'s ``in_specs``/``out_specs`` (a tuple of P is one spec per argument, as in
JAX), in ``shard_jit``'s shardings, in containers of specs matching container arguments,
and their errors. Results are compared device by device with JAX running the same
program with the same specs."""
import pickle
from collections import namedtuple

import numpy as np
import pytest

import nxpy as nx
from nxpy import P
from nxpy.defn import axis_index, pmean, psum, shard_jit, shard_map, value_and_grad
from nxpy.defn.sharding import specs as SH
from nxpy.layout import read_sharding

from helpers import COMPILERS, close

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp
from jax.sharding import Mesh as JMesh, NamedSharding, PartitionSpec as JP

Params = namedtuple("Params", "w b")
_MESHES: dict = {}


def mesh(shape=(4,), names=("data",)):
    key = (shape, names)
    if key not in _MESHES:
        _MESHES[key] = (nx.Mesh("m", shape, axis_names=names),
                        JMesh(np.array(jax.devices()[:int(np.prod(shape))]).reshape(shape), names))
    return _MESHES[key]


def data(seed=0, n=8):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, 3)).astype(np.float32),
            rng.standard_normal((n,)).astype(np.float32),
            Params(rng.standard_normal(3).astype(np.float32), np.float32(0.5)))




# ----------------------------------------------------------------------------------------
# P itself
# ----------------------------------------------------------------------------------------
def test_p_is_an_immutable_hashable_printable_spec():
    s = P("data", None, ("x", "y"))
    assert repr(s) == "P('data', None, ('x', 'y'))" == repr(JP("data", None, ("x", "y")))
    assert list(s) == ["data", None, ("x", "y")] and len(s) == 3 and s[0] == "data"
    assert s == P("data", None, ("x", "y")) and hash(s) == hash(P("data", None, ("x", "y")))
    assert s != P("data") and P() == P() and len({P("a"), P("a"), P()}) == 2
    assert nx.PartitionSpec is P and pickle.loads(pickle.dumps(s)) == s
    with pytest.raises(AttributeError, match="immutable"):
        s.x = 1
    for bad in (["x"], 1.5, ("x", None), True):
        with pytest.raises(TypeError, match="each entry must be None, a mesh axis"):
            P(bad)


def test_jax_partition_spec_is_recognised_without_jax_in_nxpy():
    from nxpy.layout import as_partition_spec
    assert as_partition_spec(JP("x", None, ("x", "y"))) == P("x", None, ("x", "y"))
    assert as_partition_spec(("x",)) is None and as_partition_spec({0: [0]}) is None
    with pytest.raises(ValueError, match="unreduced axes .* not supported"):
        as_partition_spec(JP("x", unreduced={"y"}))
    with pytest.raises(TypeError, match="UNCONSTRAINED is not supported"):
        as_partition_spec(JP(JP.UNCONSTRAINED))


def test_every_spelling_normalises_alike():
    m, _ = mesh((2, 2), ("x", "y"))
    want = nx.NamedSharding(m, P("y", None, "x"))
    for spec in (P("y", None, "x"), JP("y", None, "x"), ("y", None, "x"), {0: ["y"], 2: ["x"]},
                 {0: [1], -1: [0]}, P(("y",), None, ("x",)), want, ((1,), (), (0,))):
        got = read_sharding(spec, (4, 3, 2), m)
        assert got == want and got.axes(3) == ((1,), (), (0,)), spec
    assert read_sharding(P(), (4, 3), m) == read_sharding(None, (4, 3), m) == nx.NamedSharding(m)
    assert read_sharding(P("x"), (4, 3), m).axes(2) == ((0,), ())  # trailing dims replicated


# ----------------------------------------------------------------------------------------
# shard_map: the data-parallel step, against jax.shard_map with the same P
# ----------------------------------------------------------------------------------------
def _loss(L):
    def loss(p, x, y):
        return L.mean((L.dot(x, p.w) + p.b - y) ** 2)
    return loss


def nx_step(p, x, y):
    loss, g = value_and_grad(_loss(nx))(p, x, y)
    g = Params(pmean(g.w, "data"), pmean(g.b, "data"))
    return Params(p.w - 0.1 * g.w, p.b - 0.1 * g.b), pmean(loss, "data")


def jax_step(p, x, y):
    loss, g = jax.value_and_grad(_loss(jnp))(p, x, y)
    g = jax.tree_util.tree_map(lambda v: jax.lax.pmean(v, "data"), g)
    return (Params(p.w - 0.1 * g.w, p.b - 0.1 * g.b), jax.lax.pmean(loss, "data"))


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("spelling", ["nx.P", "jax P", "dicts", "container of specs"])
def test_data_parallel_step_matches_jax_shard_map(compiler, spelling):
    m, jm = mesh()
    x, y, p = data()
    in_specs = {"nx.P": (P(), P("data"), P("data")),
                "jax P": (JP(), JP("data"), JP("data")),
                "dicts": [{}, {0: ["data"]}, {0: ["data"]}],
                "container of specs": (Params(P(), P()), P("data"), {0: [0]})}[spelling]
    out_specs = (P(), P()) if spelling != "dicts" else ({}, {})
    f = shard_map(nx_step, m, in_specs=in_specs, out_specs=out_specs, compiler=compiler)
    got_p, got_loss = f(Params(nx.tensor(p.w), nx.tensor(p.b)), nx.tensor(x), nx.tensor(y))
    want_p, want_loss = jax.jit(jax.shard_map(
        jax_step, mesh=jm, in_specs=(JP(), JP("data"), JP("data")),
        out_specs=(JP(), JP())))(Params(jnp.asarray(p.w), jnp.asarray(p.b)), x, y)
    assert type(got_p) is Params
    close(got_p.w.to_numpy(), want_p.w, atol=2e-6, what="w")
    close(got_p.b.to_numpy(), want_p.b, atol=2e-6, what="b")
    close(got_loss.to_numpy(), want_loss, atol=2e-6, what="loss")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_out_specs_as_a_container_and_one_p_for_all_inputs(compiler):
    m, jm = mesh((2, 2), ("x", "y"))
    a = np.arange(32, dtype=np.float32).reshape(4, 8)

    def body(L, psum_):
        return lambda u, v: {"s": psum_(u * 2, "x"), "t": v + 1}
    f = shard_map(body(nx, psum), m, in_specs=P("x", "y"),
                  out_specs={"s": P(None, "y"), "t": P("x", "y")}, compiler=compiler)
    got = f(nx.tensor(a), nx.tensor(a))
    want = jax.jit(jax.shard_map(body(jnp, jax.lax.psum), mesh=jm, in_specs=JP("x", "y"),
                                 out_specs={"s": JP(None, "y"), "t": JP("x", "y")}))(a, a)
    assert set(got) == {"s", "t"}
    for k in got:
        close(got[k].to_numpy(), want[k], atol=2e-6, what=k)


def test_a_tuple_of_p_is_per_argument_a_plain_tuple_per_dim():
    m, _ = mesh((2, 2), ("x", "y"))
    a = nx.iota((4, 4), type="f32")
    per_dim = shard_map(lambda u: u * 1, m, in_specs=("x", "y"), out_specs=("x", "y"))(a)
    per_arg = shard_map(lambda u: u * 1, m, in_specs=(P("x", "y"),), out_specs=P("x", "y"))(a)
    np.testing.assert_array_equal(per_dim.to_numpy(), a.to_numpy())
    np.testing.assert_array_equal(per_arg.to_numpy(), a.to_numpy())
    # one per-dim tuple for two arguments (each sharded alike), as before
    two = shard_map(lambda u, v: u + v, m, in_specs=("x", None), out_specs=("x", None))(a, a)
    np.testing.assert_array_equal(two.to_numpy(), 2 * a.to_numpy())


# ----------------------------------------------------------------------------------------
# shard_jit with P, device by device against jax.jit with NamedSharding
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("shardings", [
    [P("x", "y"), P("x")], [JP("x", "y"), JP("x")], [{0: ["x"], 1: ["y"]}, {0: [0]}]],
    ids=["nx.P", "jax P", "dicts"])
def test_shard_jit_input_shardings_as_p(compiler, shardings):
    m, jm = mesh((2, 2), ("x", "y"))
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.arange(4, dtype=np.float32).reshape(4, 1)
    f = shard_jit(lambda u, v: u * 2 + v, m, input_shardings=shardings,
                  output_shardings=P("x", "y"), compiler=compiler)
    args = list(zip(SH.shard(nx.tensor(a), m, P("x", "y")), SH.shard(nx.tensor(b), m, P("x"))))
    got = f([list(t) for t in args])
    want = jax.jit(lambda u, v: u * 2 + v, out_shardings=NamedSharding(jm, JP("x", "y")))(
        jax.device_put(a, NamedSharding(jm, JP("x", "y"))),
        jax.device_put(b, NamedSharding(jm, JP("x"))))
    assert f.output_shardings == P("x", "y")  # what was passed
    assert f.output_sharding_dicts == {0: [0], 1: [1]}
    assert f.compile_for([list(t) for t in args]).input_shardings == [P("x", "y"), P("x")]
    shards = {s.device.id: np.asarray(s.data) for s in want.addressable_shards}
    for p, (t, d) in enumerate(zip(got, jm.devices.flat)):
        close(t.to_numpy(), shards[d.id], atol=2e-6, what=f"device {p}")
    close(SH.assemble(got, m, P("x", "y")).to_numpy(), np.asarray(want), atol=2e-6)


def test_shard_jit_one_p_for_every_argument_and_call_global():
    m, _ = mesh((2, 2), ("x", "y"))
    f = shard_jit(lambda u, v: u - v, m, input_shardings=P("x"), compiler="evaluator")
    u, v = nx.iota((4, 2), type="f32"), nx.full((4, 2), 1.0)
    out = f.call_global(u, v)
    np.testing.assert_array_equal(SH.assemble(out, m, f.output_shardings).to_numpy(),
                                  u.to_numpy() - 1)
    assert f.output_shardings == P("x")


# ----------------------------------------------------------------------------------------
# One spec or one per argument: the rule, against jax.shard_map as the oracle
# ----------------------------------------------------------------------------------------
def _fingerprint(L, index, tensors):
    """Each device's own number for what it holds: a position-weighted sum of each local
    shard, so a different shard, shape or order gives a different number."""
    total = 0.0
    for k, t in enumerate(tensors):
        w = L.reshape(L.arange(t.size) if L is jnp else nx.iota((t.size,), type="f32"), t.shape)
        total = total + L.sum(t * w) * (k + 1)
    dev = index("x") * 2 + index("y") + 1
    return L.reshape(total * dev, (1,))


def _smap_per_device(in_specs, args, jax_in_specs=None, compiler="evaluator"):
    """Per-device fingerprints from nxpy's shard_map with ``in_specs`` and from JAX's with
    ``jax_in_specs`` (default: the same), each device's on dim 0 of the result."""
    m, jm = mesh((2, 2), ("x", "y"))
    def leaves(a):
        return jax.tree_util.tree_leaves(a)
    got = shard_map(lambda *a: _fingerprint(nx, axis_index, leaves(a)), m, in_specs=in_specs,
                    out_specs=P(("x", "y")), compiler=compiler)(
        *jax.tree_util.tree_map(nx.tensor, args))
    want = jax.jit(jax.shard_map(
        lambda *a: _fingerprint(jnp, jax.lax.axis_index, leaves(a)), mesh=jm,
        in_specs=in_specs if jax_in_specs is None else jax_in_specs,
        out_specs=JP(("x", "y"))))(*args)
    return got.to_numpy(), np.asarray(want)


_A = np.arange(32, dtype=np.float32).reshape(4, 8) / 7
_B = np.arange(16, dtype=np.float32).reshape(8, 2) / 5 - 1

# in_specs JAX accepts (P and None leaves in a prefix of the arguments' tuple)
JAX_FORMS = [
    ("one P for the only argument", JP(None, "y"), (_A,)),
    ("a 1-tuple of P", (JP(None, "y"),), (_A,)),
    ("a P over two axes", JP(("x", "y")), (_A,)),
    ("a 1-tuple of a P over two dims", (JP("x", "y"),), (_A,)),
    ("None for all", None, (_A, _B)),
    ("a tuple of None", (None, None), (_A, _B)),
    ("one P for two arguments", JP("x"), (_A, _B)),
    ("a P and None", (JP("x"), None), (_A, _B)),
    ("two P", (JP("y", "x"), JP(None, "y")), (_A, _B)),
    ("a container prefix", ((JP("x"), JP(None, "y")), JP("y")), ((_A, _B), _B)),
    ("a dict prefix", ({"w": JP("x", "y"), "b": None},), ({"w": _A, "b": _B},)),
]


@pytest.mark.parametrize("name, in_specs, args", JAX_FORMS, ids=[f[0] for f in JAX_FORMS])
@pytest.mark.parametrize("compiler", COMPILERS)
def test_in_specs_jax_accepts_mean_the_same_in_nxpy(name, in_specs, args, compiler):
    got, want = _smap_per_device(in_specs, args, compiler=compiler)
    close(got, want, atol=2e-6, what=name)
    # nx.P in the same places reads the same
    as_nx = jax.tree_util.tree_map(lambda s: P(*s), in_specs,
                                   is_leaf=lambda s: isinstance(s, JP))
    close(_smap_per_device(as_nx, args, in_specs)[0], want, atol=2e-6, what=f"{name} (nx.P)")


# the pre-P per-dim tuples JAX rejects, read by the rule where only one reading exists;
# the oracle is JAX with the P they mean
LEGACY_FORMS = [
    ("a bare axis: one spec for both", ("x", None), (JP("x"), JP("x")), (_A, _B)),
    ("a bare axis: one spec for one", (None, "y"), JP(None, "y"), (_A,)),
    ("longer than the argument list", (("x", "y"), None), JP(("x", "y")), (_A,)),
    ("both readings agree", (("x",),), JP("x"), (_A,)),
    ("a tuple per argument holding None", ((None, "y"),), (JP(None, "y"),), (_A,)),
    ("a list per argument", [("x", None), (None, "y")], (JP("x"), JP(None, "y")), (_A, _B)),
]


@pytest.mark.parametrize("name, in_specs, jax_specs, args", LEGACY_FORMS,
                         ids=[f[0] for f in LEGACY_FORMS])
def test_per_dim_tuples_are_read_by_the_rule(name, in_specs, jax_specs, args):
    with pytest.raises(TypeError, match="must be a pytree of `jax.sharding.PartitionSpec`"):
        _smap_per_device(in_specs, args)  # JAX rejects them all
    got, want = _smap_per_device(in_specs, args, jax_specs)
    close(got, want, atol=2e-6, what=name)


AMBIGUOUS = [
    ((("x", "y"),), (_A,), P(("x", "y")), "(P('x', 'y'),)", "the 1 argument(s) (a)"),
    ((("x",), None), (_A, _B), P("x"), "(P('x'), P())", "the 2 argument(s) (a, b)"),
    ((("y",), ("x",)), (_A, _B), P("y", "x"), "(P('y'), P('x'))", "the 2 argument(s) (a, b)"),
]


@pytest.mark.parametrize("in_specs, args, one, each, where", AMBIGUOUS)
def test_an_ambiguous_tuple_is_an_error_before_xla(compiles, in_specs, args, one, each, where):
    m, _ = mesh((2, 2), ("x", "y"))
    body = (lambda a: a) if len(args) == 1 else (lambda a, b: a)
    f = shard_map(body, m, in_specs=in_specs, out_specs=P(), compiler="exla")
    message = (f"shard_map: in_specs for {where}: {in_specs!r} is ambiguous: a plain tuple of "
               f"axes reads as one spec for every entry, {one!r}, or as one spec per entry, "
               f"{each}. Write {one!r} for the first or {each} for the second")
    with pytest.raises(SH.AmbiguousSpecError) as e:
        f(*map(nx.tensor, args))
    assert str(e.value) == message
    assert compiles == []
    # each spelling the message offers runs, and they differ
    one_f = shard_map(body, m, in_specs=one, out_specs=one, compiler="evaluator")
    assert one_f(*map(nx.tensor, args)).shape == args[0].shape
    m_each = eval(each)  # the message's own spelling, P(...) only
    each_f = shard_map(body, m, in_specs=m_each, out_specs=m_each[0], compiler="evaluator")
    assert each_f(*map(nx.tensor, args)).shape == args[0].shape


def test_ambiguity_inside_a_container_and_in_results_names_where():
    m, _ = mesh((2, 2), ("x", "y"))
    a = nx.tensor(_A)
    f = shard_map(lambda p: p[0], m, in_specs=((("x",), None),), out_specs=P())
    with pytest.raises(SH.AmbiguousSpecError,
                       match=r"^shard_map: in_specs for p: \(\('x',\), None\) is ambiguous: .* "
                             r"one spec for every entry, P\('x'\), or as one spec per entry, "
                             r"\(P\('x'\), P\(\)\)"):
        f((a, a))
    g = shard_map(lambda u: u, m, in_specs=P("x"), out_specs=(("x", "y"),))
    with pytest.raises(SH.AmbiguousSpecError,
                       match=r"^shard_map: out_specs for the result \(tensor\): \(\('x', 'y'\),\) "
                             r"is ambiguous"):
        g(a)
    h = shard_map(lambda u: (u, u), m, in_specs=P("x"), out_specs=(("x",), ("y",)))
    with pytest.raises(SH.AmbiguousSpecError, match=r"out_specs for the result \(\(tensor, "
                                                    r"tensor\)\): \(\('x',\), \('y',\)\)"):
        h(a)
    k = shard_jit(lambda u: u * 2, m, input_shardings=[P("x")],
                  output_shardings=(("x", "y"),), compiler="evaluator")
    with pytest.raises(SH.AmbiguousSpecError, match=r"^output shardings for the result"):
        k([[t] for t in SH.shard(a, m, P("x"))])


# ----------------------------------------------------------------------------------------
# Errors name the argument
# ----------------------------------------------------------------------------------------
def _smap_call(in_specs, out_specs=P()):
    m, _ = mesh()
    x, y, p = data()
    f = shard_map(lambda p, x, y: pmean(nx.sum(p.w) + nx.sum(x) + nx.sum(y), "data"), m,
                  in_specs=in_specs, out_specs=out_specs)
    return lambda: f(Params(nx.tensor(p.w), nx.tensor(p.b)), nx.tensor(x), nx.tensor(y))


@pytest.mark.parametrize("in_specs, message", [
    ((P(), P("data", None, None), P("data")),
     r"in_specs of argument 1 \(x\): P\('data', None, None\) has 3 entries but the tensor "
     r"has rank 2"),
    ((P(), P("model"), P("data")),
     r"in_specs of argument 1 \(x\): axis 'model' is not an axis of mesh 'm' \(axes \['data'\]\)"),
    ((P(), P(("data", "data")), P("data")),
     r"axis 'data' was used twice in the same in_specs of argument 1 \(x\)"),
    ((P(), P("data"), P("data"), P()), r"expected 3 in_specs \(one per argument\), got 4"),
    ((Params(P("data"), P()), P("data"), P("data")),
     r"dim 0 of argument 0 \(p.w\) \(size 3\) is not divisible by 4"),
    ((Params(P(), P("data")), P("data"), P("data")),
     r"in_specs of argument 0 \(p.b\): P\('data'\) has 1 entries but the tensor has rank 0"),
    (({"w": P(), "c": {}}, P("data"), P("data")),
     r"in_specs for p: expected one spec, or a container of specs with the keys \['w', 'b'\] "
     r"\(as Params\(w=tensor, b=tensor\)\), got \{'w': P\(\), 'c': \{\}\}"),
    (((P(), P(), P()), P("data"), P("data")),
     r"in_specs for p: expected one spec, or a container of specs with the keys \['w', 'b'\]"),
    (([P(), P()], [P("data")], P("data")),
     r"expected in_specs of argument 1 \(x\) to be a dict of \{tensor_dim: \[mesh_axes\]\} or "
     r"a P\(...\) \(PartitionSpec\), got \[P\('data'\)\]"),
])
def test_shard_map_spec_errors_name_the_argument(in_specs, message):
    with pytest.raises((ValueError, TypeError), match=f"^shard_map: {message}"):
        _smap_call(in_specs)()


def test_shard_map_out_spec_errors():
    with pytest.raises(ValueError, match=r"out_specs of output 0: P\('data'\) has 1 entries but "
                                         r"the tensor has rank 0"):
        _smap_call((P(), P("data"), P("data")), out_specs=P("data"))()


@pytest.mark.parametrize("shardings, message", [
    ([P("x", None, None), P()], r"input sharding 0: P\('x', None, None\) has 3 entries"),
    ([P(), P("z")], r"input sharding 1: axis 'z' is not an axis of mesh 'm'"),
    ([P(("x", "x")), P()], r"axis 'x' was used twice in the same input sharding 0 \(dim 0\)"),
    ([P("x", "x"), P()], r"axis 'x' was used twice in the same input sharding 0 \(dims 0 and 1\)"),
    ([P()], r"expected 2 input sharding configuration\(s\), got 1"),
])
def test_shard_jit_spec_errors_name_the_argument(shardings, message):
    m, _ = mesh((2, 2), ("x", "y"))
    f = shard_jit(lambda u, v: u + v, m, input_shardings=shardings, compiler="evaluator")
    with pytest.raises((ValueError, TypeError), match=message):
        f([[nx.iota((2, 2)), nx.iota((2, 2))] for _ in range(4)])


def test_distributed_helpers_take_p():
    from nxpy import distributed
    m, _ = mesh((2, 2), ("x", "y"))
    t = nx.iota((4, 2), type="f32")
    shards = distributed.local_shards(t, m, P("x", "y"))
    assert [s.shape for s in shards] == [(2, 1)] * 4
    np.testing.assert_array_equal(distributed.fetch(shards, m, P("x", "y")).to_numpy(),
                                  t.to_numpy())
