"""Containers beyond tuples, lists and dicts: namedtuples, dataclasses and classes given to
``nxpy.defn.register_container``, as arguments and results of jit, compile, cond,
while_loop, grad, shard_jit and shard_map, with their non-tensor fields kept as static
data (part of the cache key). Oracles: NumPy, and JAX (which takes namedtuples as
pytrees) for gradients and sharded programs."""
import dataclasses
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import nxpy as nx
from nxpy import P
from nxpy.defn import (compile, grad, jit, register_container, shard_jit, shard_map,
                       value_and_grad)
from nxpy.defn.sharding import specs as SH
from nxpy.defn import tree as tree_mod

from helpers import COMPILERS, close, on

import jax  # after nxpy started XLA (conftest)
import jax.numpy as jnp

Params = namedtuple("Params", "w b")
Layer = namedtuple("Layer", "w b act")


@dataclasses.dataclass
class State:
    x: object
    i: object
    name: str = "state"


@dataclasses.dataclass(frozen=True)
class Frozen:
    x: object
    scale: object = dataclasses.field(default=2, metadata={"static": True})
    cached: object = dataclasses.field(default=None, init=False)


class Affine:
    """A plain class made a container by registration."""

    def __init__(self, scale, shift, name):
        self.scale, self.shift, self.name = scale, shift, name


register_container(Affine, lambda a: ((a.scale, a.shift), a.name),
                   lambda name, ch: Affine(*ch, name))


class Named:
    def __init__(self, parts, tag):
        self.parts, self.tag = parts, tag


register_container(Named, lambda n: (dict(n.parts), n.tag), lambda tag, ch: Named(ch, tag))


def arr(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)




# ----------------------------------------------------------------------------------------
# The tree
# ----------------------------------------------------------------------------------------
def test_flatten_keeps_types_and_static_fields():
    v = {"l": Layer(1.0, 2.0, "relu"), "s": State(3.0, 4, "n"), "a": Affine(5.0, 6.0, "f"),
         "f": Frozen(7.0)}
    leaves, tree = tree_mod.flatten(v)
    assert leaves == [1.0, 2.0, 3.0, 4, 5.0, 6.0, 7.0]
    back = tree_mod.unflatten(tree, [x * 10 for x in leaves])
    assert back["l"] == Layer(10.0, 20.0, "relu")
    assert back["s"] == State(30.0, 40, "n")
    assert (back["a"].scale, back["a"].shift, back["a"].name) == (50.0, 60.0, "f")
    assert type(back["f"]) is Frozen and back["f"].x == 70.0 and back["f"].scale == 2
    assert tree_mod.leaf_paths(tree, "v") == ["v['l'].w", "v['l'].b", "v['s'].x", "v['s'].i",
                                              "v['a'][0]", "v['a'][1]", "v['f'].x"]
    assert tree_mod.tree_str(tree) == (
        "{'l': Layer(w=tensor, b=tensor, act='relu'), 's': State(x=tensor, i=tensor, "
        "name='n'), 'a': Affine<[0]: tensor, [1]: tensor; static 'f'>, "
        "'f': Frozen(x=tensor, scale=2, cached=None)}")
    # subclasses of the built-in containers stay containers
    assert tree_mod.flatten(OrderedDict(a=1, b=2))[0] == [1, 2]


def test_static_fields_decide_the_tree():
    def t(v):
        return tree_mod.flatten(v)[1]
    assert t(Layer(1.0, 2.0, "relu")) == t(Layer(3.0, 4.0, "relu"))
    assert t(Layer(1.0, 2.0, "relu")) != t(Layer(1.0, 2.0, "tanh"))
    assert t(Params(1.0, 2.0)) != t((1.0, 2.0))  # the type is part of the structure
    assert t(State(1.0, 2, ["a", "b"])) == t(State(5.0, 6, ["a", "b"]))  # by content
    assert tree_mod.flatten(State(1.0, 2, 3))[0] == [1.0, 2, 3]  # a number field is data
    assert tree_mod.flatten(Layer(1.0, 2.0, ("a", "b")))[0] == [1.0, 2.0]  # holds no data


def test_register_container_errors():
    with pytest.raises(TypeError, match="expected a class"):
        register_container(Affine(1, 2, "x"), lambda a: ((), None), lambda a, c: None)
    with pytest.raises(ValueError, match="already handled"):
        register_container(tuple, lambda a: ((), None), lambda a, c: None)
    with pytest.raises(TypeError, match="must be callables"):
        register_container(type("K", (), {}), None, None)

    class Bad:
        pass
    register_container(Bad, lambda b: ((1.0,), {"unhashable": 1}), lambda a, c: Bad())
    with pytest.raises(TypeError, match=r"argument 0 \(b\): the static data \(aux\) Bad's "
                                        r"flatten returned must be hashable"):
        jit(lambda b: 1.0)(Bad())

    class Odd:
        pass
    register_container(Odd, lambda b: [1.0], lambda a, c: Odd())
    with pytest.raises(TypeError, match="must return a pair"):
        jit(lambda b: 1.0)(Odd())


# ----------------------------------------------------------------------------------------
# jit, compile: arguments, results, the cache key
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_jit_namedtuple_dataclass_and_registered_arguments_and_results(compiler):
    w, b, x = arr(3), arr(seed=1), arr(4, 3, seed=2)

    def f(layer, s, a):
        act = getattr(nx, layer.act)
        y = act(nx.dot(s.x, layer.w) + layer.b)
        return State(y * a.scale + a.shift, s.i + 1, s.name + "!"), Affine(a.scale, y, a.name)

    out_s, out_a = jit(f, compiler=compiler)(
        Layer(nx.tensor(w), nx.tensor(b), "tanh"), State(nx.tensor(x), 0, "s"),
        Affine(nx.tensor(2.0), 1.0, "aff"))
    y = np.tanh(x @ w + b)
    assert type(out_s) is State and type(out_a) is Affine
    close(out_s.x.to_numpy(), y * 2 + 1, atol=2e-6)
    assert out_s.i.tolist() == 1 and out_s.name == "s!" and out_a.name == "aff"
    close(out_a.shift.to_numpy(), y, atol=2e-6)
    if compiler == "exla":
        assert out_s.x.backend.name == "exla"


@pytest.mark.parametrize("compiler", COMPILERS)
def test_static_fields_are_part_of_the_cache_key(compiler):
    f = jit(lambda layer, x: getattr(nx, layer.act)(x * layer.w + layer.b), compiler=compiler)
    x = nx.tensor([0.5, -1.0])
    layer = Layer(nx.tensor(2.0), nx.tensor(0.1), "tanh")
    close(f(layer, x).to_numpy(), np.tanh(np.array([0.5, -1.0]) * 2 + 0.1), atol=2e-6)
    close(f(layer._replace(w=nx.tensor(3.0)), x).to_numpy(),
          np.tanh(np.array([0.5, -1.0]) * 3 + 0.1), atol=2e-6)
    assert f.trace_count == 1
    close(f(layer._replace(act="exp"), x).to_numpy(), np.exp(np.array([0.5, -1.0]) * 2 + 0.1),
          atol=2e-6)
    assert f.trace_count == 2
    # two namedtuple types with the same fields compile separately and keep their types
    Other = namedtuple("Other", "w b act")
    g = jit(lambda p: p, compiler=compiler)
    assert type(g(Layer(1.0, 2.0, "a"))) is Layer and type(g(Other(1.0, 2.0, "a"))) is Other
    assert g.trace_count == 2


def test_unhashable_static_field_is_explained():
    class NoHash:
        __hash__ = None
    with pytest.raises(TypeError, match=r"argument 0 \(s.name\): static data \(it is not a "
                                        r"tensor, an array, a number or a container of them\) "
                                        r"must be hashable, as it is part of the cache key; got "
                                        r"an unhashable NoHash"):
        jit(lambda s: s.x)(State(nx.tensor(1.0), 0, NoHash()))
    with pytest.raises(TypeError, match=r"argument 1 \(b\[0\]\['k'\].name\)"):
        jit(lambda a, b: a)(1.0, [{"k": State(1.0, 2, NoHash())}])
    # unhashable containers of hashable values are compared by content
    assert jit(lambda s: s)(State(1.0, 2, {"k": [1, 2]})).name == {"k": [1, 2]}


def test_dataclass_metadata_static_and_init_false_fields():
    f = jit(lambda fr: fr.x * fr.scale)
    assert f(Frozen(nx.tensor(3.0))).tolist() == 6.0
    assert f(Frozen(nx.tensor(3.0), 3)).tolist() == 9.0 and f.trace_count == 2
    out = jit(lambda fr: fr)(Frozen(nx.tensor(1.0)))
    assert type(out) is Frozen and out.cached is None and out.scale == 2


@pytest.mark.parametrize("compiler", COMPILERS)
def test_compile_with_container_templates(compiler):
    c = compile(lambda layer: layer.w * 2 + layer.b,
                Layer(nx.template((2,), "f32"), nx.template((), "f32"), "relu"),
                compiler=compiler)
    assert c(Layer(nx.tensor([1.0, 2.0]), nx.tensor(1.0), "relu")).tolist() == [3.0, 5.0]
    with pytest.raises(TypeError, match=r"compiled for arguments structured as "
                                        r"\(Layer\(w=tensor, b=tensor, act='relu'\),\), got "
                                        r"\(Layer\(w=tensor, b=tensor, act='tanh'\),\)"):
        c(Layer(nx.tensor([1.0, 2.0]), nx.tensor(1.0), "tanh"))
    with pytest.raises(ValueError,
                       match=r"argument 0 \(layer.w\): expected f32\[2\], got f32\[3\]"):
        c(Layer(nx.tensor([1.0, 2.0, 3.0]), nx.tensor(1.0), "relu"))


# ----------------------------------------------------------------------------------------
# cond and while_loop
# ----------------------------------------------------------------------------------------
def _loop(s):
    return nx.while_loop(lambda s: s.i < 5, lambda s: State(s.x * 2, s.i + 1, s.name), s)


def _branch(s):
    return nx.cond(nx.sum(s.x) > 0, lambda: Params(s.x, s.i), lambda: Params(-s.x, s.i * 2))


@pytest.mark.parametrize("compiler", [*COMPILERS, "eager"])
def test_while_loop_and_cond_with_container_state(compiler):
    x = np.array([1.0, -3.0], np.float32)
    out = on(compiler, _loop)(State(nx.tensor(x), nx.tensor(0), "loop"))
    assert type(out) is State and out.name == "loop" and out.i.tolist() == 5
    close(out.x.to_numpy(), x * 32, atol=2e-6)
    out = on(compiler, _branch)(State(nx.tensor(x), nx.tensor(3), "c"))
    assert type(out) is Params and out.b.tolist() == 6
    close(out.w.to_numpy(), -x, atol=2e-6)
    grow = on(compiler, lambda a: nx.while_loop(
        lambda a: a.scale < 10, lambda a: Affine(a.scale * 3, a.shift + 1, a.name), a))
    reg = grow(Affine(nx.tensor(1.0), nx.tensor(0.0), "r"))
    assert (reg.scale.tolist(), reg.shift.tolist(), reg.name) == (27.0, 3.0, "r")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_changed_static_field_is_a_structure_error(compiler):
    f = jit(lambda s: nx.while_loop(lambda s: s.i < 3, lambda s: State(s.x, s.i + 1, "other"), s),
            compiler=compiler)
    with pytest.raises(ValueError, match=r"while_loop: the body must return the state's "
                                         r"structure State\(x=tensor, i=tensor, name='a'\), got "
                                         r"State\(x=tensor, i=tensor, name='other'\) \(fields of "
                                         r"namedtuples and dataclasses that hold no tensor or "
                                         r"number are static data"):
        f(State(nx.tensor(1.0), 0, "a"))
    g = jit(lambda s: nx.cond(s.i > 0, lambda: Layer(s.x, s.i, "a"), lambda: Layer(s.x, s.i, "b")))
    with pytest.raises(ValueError, match=r"cond: both branches must return the same container "
                                         r"structure, got Layer\(w=tensor, b=tensor, act='a'\) "
                                         r"and Layer\(w=tensor, b=tensor, act='b'\)"):
        g(State(nx.tensor(1.0), 0, "a"))


# ----------------------------------------------------------------------------------------
# grad and value_and_grad, against jax.grad of the same namedtuple
# ----------------------------------------------------------------------------------------
def _mlp_loss(L):
    def loss(p, x, y):
        h = L.tanh(L.dot(x, p.w) + p.b)
        return L.mean((h - y) ** 2)
    return loss


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_of_a_namedtuple_returns_that_namedtuple(compiler):
    w, b, x, y = arr(3, 2), arr(2, seed=1), arr(5, 3, seed=2), arr(5, 2, seed=3)
    want_v, want_g = jax.value_and_grad(_mlp_loss(jnp))(Params(w, b), x, y)
    p = Params(nx.tensor(w), nx.tensor(b))
    v, g = jit(value_and_grad(_mlp_loss(nx)), compiler=compiler)(p, nx.tensor(x), nx.tensor(y))
    assert type(g) is Params
    close(v.to_numpy(), want_v, atol=2e-6)
    close(g.w.to_numpy(), want_g.w, atol=2e-6, what="w")
    close(g.b.to_numpy(), want_g.b, atol=2e-6, what="b")
    # grad called eagerly, with a static field riding along, and a dataclass
    g2 = grad(lambda layer, x, y: _mlp_loss(nx)(layer, x, y)
              * (2.0 if layer.act == "double" else 1.0))(
        Layer(nx.tensor(w), nx.tensor(b), "double"), nx.tensor(x), nx.tensor(y))
    assert type(g2) is Layer and g2.act == "double"
    close(g2.w.to_numpy(), 2 * want_g.w, atol=2e-6)
    gd = grad(lambda s: nx.sum(s.x ** 2) * s.i)(State(nx.tensor(w), nx.tensor(3.0), "d"))
    assert type(gd) is State and gd.name == "d"
    close(gd.x.to_numpy(), 6 * w, atol=2e-6)
    close(gd.i.to_numpy(), np.sum(w ** 2), atol=2e-6)
    ga = grad(lambda a: nx.sum(a.scale * a.shift))(Affine(nx.tensor(w), nx.tensor(w * 2), "a"))
    assert type(ga) is Affine and ga.name == "a"
    close(ga.scale.to_numpy(), 2 * w, atol=2e-6)


# ----------------------------------------------------------------------------------------
# shard_jit (per-device lists) and shard_map
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_jit_per_device_namedtuples(compiler):
    mesh = nx.Mesh("m", (2, 2), axis_names=("x", "y"))
    w, x = arr(4, 6), arr(4, 2, seed=1)
    f = shard_jit(lambda layer, v: Layer(layer.w * 2, nx.sum(v) + layer.b, layer.act), mesh,
                  input_shardings=[Layer(P("x", "y"), P(), None), P("x")], compiler=compiler)
    ws = SH.shard(nx.tensor(w), mesh, P("x", "y"))
    xs = SH.shard(nx.tensor(x), mesh, P("x"))
    outs = f([[Layer(ws[p], nx.tensor(1.0), "id"), xs[p]] for p in range(4)])
    assert all(type(o) is Layer and o.act == "id" for o in outs)
    assert f.output_shardings == Layer(P("x", "y"), P(), "id")
    assert f.output_sharding_dicts == Layer({0: [0], 1: [1]}, {}, "id")
    glob = SH.assemble(outs, mesh, f.output_shardings)
    close(glob.w.to_numpy(), w * 2, atol=2e-6)
    close(glob.b.to_numpy(), x.sum() + 1, atol=2e-6)
    # a different static field compiles another program
    outs = f([[Layer(ws[p], nx.tensor(1.0), "other"), xs[p]] for p in range(4)])
    assert outs[0].act == "other"
    with pytest.raises(ValueError, match="every device must get the same arguments"):
        f([[Layer(ws[p], nx.tensor(1.0), "id" if p else "x"), xs[p]] for p in range(4)])


@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_map_dataclass_in_and_out_against_jax(compiler):
    mesh = nx.Mesh("m", (4,), axis_names=("d",))
    jmesh = jax.sharding.Mesh(np.array(jax.devices()[:4]), ("d",))
    JP = jax.sharding.PartitionSpec
    w, x = arr(3), arr(8, 3, seed=1)

    def body(L, psum):
        return lambda p, v: Params(psum(L.sum(v * p.w), "d"), v * p.b)
    f = shard_map(body(nx, nx.defn.psum), mesh, in_specs=(P(), P("d")),
                  out_specs=Params(P(), P("d")), compiler=compiler)
    got = f(Params(nx.tensor(w), nx.tensor(2.0)), nx.tensor(x))
    want = jax.jit(jax.shard_map(body(jnp, jax.lax.psum), mesh=jmesh, in_specs=(JP(), JP("d")),
                                 out_specs=Params(JP(), JP("d"))))(Params(w, np.float32(2.0)), x)
    assert type(got) is Params
    close(got.w.to_numpy(), want.w, atol=2e-6)
    close(got.b.to_numpy(), want.b, atol=2e-6)
    s = shard_map(lambda st: State(st.x * 2, st.i, st.name), mesh, in_specs=P("d"),
                  out_specs=P("d"), compiler=compiler)(
        State(nx.tensor(x), nx.tensor([1, 2, 3, 4]), "k"))
    assert type(s) is State and s.name == "k"
    close(s.x.to_numpy(), 2 * x, atol=2e-6)


def test_existing_containers_keep_working():
    out = jit(lambda d: {"a": (d["x"] + 1, [d["y"] * 2, None]), "b": d["x"]})(
        {"x": nx.tensor(1.0), "y": nx.tensor([2, 3])})
    assert out["a"][0].tolist() == 2.0 and out["a"][1][0].tolist() == [4, 6]
    assert out["a"][1][1] is None and type(out["a"]) is tuple and type(out["a"][1]) is list
    nested = jit(lambda n: Named({"u": n.parts["u"] * 2, "v": [n.parts["v"][0] * 2]}, n.tag))(
        Named({"u": nx.tensor(1.0), "v": [nx.tensor(2.0)]}, "t"))
    assert nested.tag == "t" and nested.parts["u"].tolist() == 2.0
    assert nested.parts["v"][0].tolist() == 4.0
