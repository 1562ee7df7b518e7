"""nxpy.interop.from_jax: JAX functions inside nxpy programs, against JAX itself — values on
the Evaluator and EXLA (and eagerly), containers both ways (dicts, namedtuples, lists,
None, empty states), Python scalars baked in per value, 64-bit types, grad and vmap
through the function against jax.grad and jax.vmap, an optimizer written in JAX driving an
nxpy training step, the import cache, and errors naming the JAX function."""
from __future__ import annotations

import collections
from functools import partial

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import grad, jit, value_and_grad, vmap
from nxpy.interop import from_jax, to_jax_array
from nxpy.stablehlo import UnsupportedOpError

from helpers import COMPILERS, close

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp
import jax.scipy.special

State = collections.namedtuple("State", ["count", "mu", "nu"])


def _x(shape=(3, 4), seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


#: JAX's result: its containers and dtypes, atol relative to each leaf's magnitude
_close = partial(close, rtol=2e-6, atol=2e-6, dtypes=True, tree=True, scaled=1)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("name", ["gelu", "logsumexp", "user"])
def test_values_inside_jit(name, compiler):
    fns = {"gelu": jax.nn.gelu,
           "logsumexp": lambda x: jax.scipy.special.logsumexp(x, axis=1),
           "user": lambda x: jnp.cumsum(jnp.sort(x, axis=0) ** 2, axis=1) / (1 + jnp.abs(x))}
    f, x = fns[name], _x()
    got = jit(lambda t: from_jax(f)(t) * 2, compiler=compiler)(nx.tensor(x))
    _close(got, f(x) * 2)


def test_eagerly_on_each_compiler():
    x = _x()
    for compiler in COMPILERS:
        _close(from_jax(jax.nn.softplus, compiler=compiler)(nx.tensor(x)), jax.nn.softplus(x))


def test_containers_both_ways():
    def f(params, state, extra, scale):
        out = {"w": params["w"] * scale + state.mu, "none": None, "empty": (),
               "list": [state.count + 1, jnp.sum(params["b"])]}
        return out, State(state.count + 1, state.mu * 0.5, state.nu)
    params = {"w": _x((2, 3)), "b": _x((3,), 1)}
    state = State(np.int32(3), _x((2, 3), 2), _x((2, 3), 3))
    nx_params = {k: nx.tensor(v) for k, v in params.items()}
    nx_state = State(*(nx.tensor(v) for v in state))
    for compiler in COMPILERS:
        got = jit(lambda p, s: from_jax(f)(p, s, None, 2.0), compiler=compiler)(
            nx_params, nx_state)
        _close(got, f(params, state, None, 2.0))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_dataclasses_and_unused_arguments_under_grad(compiler):
    """A registered dataclass (flax.struct's, with a static field) crosses both ways, and
    the gradient holds where JAX's vjp no longer needs an argument (``w`` enters
    linearly: jit would drop it from the vjp's module)."""
    from flax import struct

    @struct.dataclass
    class Params:
        w: jax.Array
        b: jax.Array
        name: str = struct.field(pytree_node=False, default="p")

    def f(p, x):
        return Params(w=p.w * 2.0, b=jnp.tanh(p.b + x), name=p.name + "'")

    def loss(p, x, m):
        out = (from_jax(f) if m is nx else f)(p, x)
        return m.sum(out.w * out.b[0]) + m.sum(out.b ** 2)

    w, b, x = _x((3,)), _x((2,), 1), np.float32(0.5)
    p = Params(w=nx.tensor(w), b=nx.tensor(b))
    out = jit(lambda p, x: from_jax(f)(p, x), compiler=compiler)(p, nx.tensor(x))
    assert isinstance(out, Params) and out.name == "p'"
    got = jit(grad(lambda p, x: loss(p, x, nx)), compiler=compiler)(p, nx.tensor(x))
    want = jax.grad(lambda p, x: loss(p, x, jnp))(Params(w=w, b=b), x)
    assert isinstance(got, Params)
    _close((got.w, got.b), (want.w, want.b), rtol=1e-5, atol=1e-5)


def test_python_scalars_are_baked_in_per_value():
    f = from_jax(lambda x, k: x * k)
    x = nx.tensor(_x((2,)))
    a, b = f(x, 2.0), f(x, 3.0)
    np.testing.assert_allclose(b.to_numpy(), a.to_numpy() * 1.5, rtol=1e-6)
    f(x, 2.0)
    f(nx.tensor(_x((2,), 1)), 2.0)              # same template, same scalar: cached
    assert len(f._imports) == 2
    f(nx.tensor(_x((3,))), 2.0)                 # a new shape: a new import
    assert len(f._imports) == 3


def test_64_bit_types():
    x = _x((3,), dtype=np.float64)
    got = from_jax(lambda v: jnp.exp(v) + 1)(nx.tensor(x))
    assert got.type == nx.Type("f", 64)
    with jax.enable_x64(True):
        np.testing.assert_allclose(got.to_numpy(), np.asarray(jnp.exp(x) + 1), rtol=1e-15)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_and_vmap_through_it(compiler):
    def loss(w, x):
        return jnp.sum(jax.nn.gelu(x @ w) ** 2) + jax.scipy.special.logsumexp(w)
    w, x = _x((4, 3)), _x((5, 4), 1)
    f = from_jax(loss)
    got = jit(grad(lambda w, x: f(w, x)), compiler=compiler)(nx.tensor(w), nx.tensor(x))
    _close(got, jax.grad(loss)(w, x), rtol=2e-5, atol=2e-5)
    xs = _x((6, 5, 4), 2)
    got = jit(vmap(lambda x: f(nx.tensor(w), x)), compiler=compiler)(nx.tensor(xs))
    _close(got, jax.vmap(lambda x: loss(w, x))(xs), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_is_jax_s_own_rule(compiler):
    """The module holds only the primal computation: the custom JVP of relu and logaddexp
    at their kinks, and stop_gradient, come from differentiating with JAX."""
    def f(x):
        return (jnp.sum(jax.nn.relu(x)) + jnp.sum(jnp.logaddexp(x, 0.0))
                + jnp.sum(x * jax.lax.stop_gradient(x)))
    x = np.array([0.0, -1.0, 2.0], np.float32)
    got = jit(grad(lambda t: from_jax(f)(t)), compiler=compiler)(nx.tensor(x))
    _close(got, jax.grad(f)(x))
    want = np.array([0.0 + 0.5 + 0.0, 0.0 + 0.26894143 - 1.0, 1.0 + 0.8807971 + 2.0])
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6)


def _adam(grads, state, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    """Adam written in JAX over a pytree, optax's way (a namedtuple state)."""
    count = state.count + 1
    mu = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
    nu = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state.nu, grads)
    c1, c2 = 1 - b1 ** count, 1 - b2 ** count
    updates = jax.tree_util.tree_map(lambda m, v: -lr * (m / c1) / (jnp.sqrt(v / c2) + eps),
                                     mu, nu)
    return updates, State(count, mu, nu)


def test_a_jax_optimizer_drives_an_nxpy_training_step():
    r = np.random.default_rng(0)
    params = {"w": r.standard_normal((4, 2)).astype(np.float32),
              "b": np.zeros((2,), np.float32)}
    x = r.standard_normal((16, 4)).astype(np.float32)
    y = r.standard_normal((16, 2)).astype(np.float32)
    zeros = jax.tree_util.tree_map(np.zeros_like, params)
    state = State(np.int32(0), zeros, zeros)
    update = from_jax(_adam)

    def nx_loss(p, x, y):
        return nx.mean((nx.tanh(nx.dot(x, p["w"]) + p["b"]) - y) ** 2)

    def step(p, s, x, y):
        loss, g = value_and_grad(nx_loss)(p, x, y)
        updates, s = update(g, s)
        return loss, {k: p[k] + updates[k] for k in p}, s

    def jax_loss(p, x, y):
        return jnp.mean((jnp.tanh(x @ p["w"] + p["b"]) - y) ** 2)

    @jax.jit
    def jax_step(p, s, x, y):
        loss, g = jax.value_and_grad(jax_loss)(p, x, y)
        updates, s = _adam(g, s)
        return loss, jax.tree_util.tree_map(lambda a, b: a + b, p, updates), s

    nx_step = jit(step, compiler="exla")
    p, s = jax.tree_util.tree_map(nx.tensor, (params, state))
    jp, js = params, state
    for _ in range(5):
        loss, p, s = nx_step(p, s, nx.tensor(x), nx.tensor(y))
        jloss, jp, js = jax_step(jp, js, x, y)
        np.testing.assert_allclose(loss.to_numpy(), np.asarray(jloss), rtol=1e-5)
    _close(p, jp, rtol=1e-5, atol=1e-5)
    assert int(s.count.to_numpy()) == 5


def test_errors_name_the_jax_function():
    def noisy(x):
        jax.debug.print("x {}", x)
        return x * 2
    x = nx.tensor(np.full((3,), 2.0, np.float32))
    with pytest.raises(UnsupportedOpError, match=r"from_jax\(noisy\).*calls back into Python"):
        from_jax(noisy)(x)
    with pytest.raises(TypeError, match="from_jax: expected fn to be a callable"):
        from_jax(3)


# ----------------------------------------------------------------------------------------
# Arrays both ways, DLPack
# ----------------------------------------------------------------------------------------
def test_arrays_cross_without_a_copy():
    from nxpy.interop import from_jax_array, to_jax_array
    a = jnp.ones((32 * 1024 * 1024,), jnp.float32)          # 128 MiB
    t = from_jax_array(a)
    assert t.backend.name == "exla" and t.shape == a.shape and t.type == nx.Type("f", 32)
    assert t.data is a and to_jax_array(t) is a               # the same buffer, both ways
    assert float(nx.sum(t).to_numpy()) == a.size
    e = nx.tensor(np.arange(6, dtype=np.float32), backend="exla")
    assert to_jax_array(e) is e.data
    tree = to_jax_array({"a": e, "n": None, "k": [1.5]})
    assert tree["a"] is e.data and tree["n"] is None and tree["k"] == [1.5]
    back = from_jax_array(tree)
    assert back["a"].data is e.data and back["k"] == [1.5]
    h = to_jax_array(nx.tensor(np.arange(3, dtype=np.int32)))    # NumPy backend: a copy
    np.testing.assert_array_equal(np.asarray(h), [0, 1, 2])


def test_sharded_arrays_cross_as_sharded_tensors():
    from nxpy.interop import from_jax_array, to_jax_array
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:4], dtype=object).reshape(2, 2),
                             ("x", "y"))
    spec = jax.sharding.PartitionSpec("x", None)
    a = jax.device_put(np.arange(16, dtype=np.float32).reshape(4, 4),
                       jax.sharding.NamedSharding(mesh, spec))
    t = from_jax_array(a)
    assert t.sharding is not None and t.sharding.mesh.shape == (2, 2)
    assert t.sharding.mesh.axis_names == ("x", "y") and to_jax_array(t) is a
    r = jit(lambda v: v * 2, compiler="exla")(t)
    assert r.sharding.spec == t.sharding.spec
    np.testing.assert_array_equal(r.to_numpy(), np.asarray(a) * 2)
    with pytest.raises(TypeError, match="expected a jax.Array"):
        nx.ops.core.from_jax_array(np.ones(2))


def test_ops_and_jit_take_jax_arrays_without_a_copy():
    """A ``jax.Array`` is an operand and a ``jit`` argument as it is: an EXLA tensor
    holding its buffer (``from_jax_array``), sharded as it is; a JAX tracer is an error
    that says to go through ``to_jax``."""
    a = jnp.arange(4.0, dtype=jnp.float32)
    assert nx.ops.to_tensor(a).data is a
    f = jit(lambda x, y: x * 2 + y, compiler="exla")
    r = f(a, a)
    assert r.backend.name == "exla" and r.tolist() == [0.0, 3.0, 6.0, 9.0]
    assert f(a, np.ones(4, np.float32)).tolist() == [1.0, 3.0, 5.0, 7.0]
    assert f(a, a).tolist() == [0.0, 3.0, 6.0, 9.0] and f.trace_count == 1
    assert jit(lambda x: x + 1)(a).tolist() == [1.0, 2.0, 3.0, 4.0]      # the Evaluator
    assert jit(grad(lambda x: nx.sum(x * x)), compiler="exla")(a).tolist() == [0, 2, 4, 6]
    e = nx.add(a, 1)
    assert e.backend.name == "exla" and (nx.tensor([1.0] * 4) + a).tolist() == [1, 2, 3, 4]
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:2], dtype=object), ("x",))
    s = jax.device_put(np.arange(8, dtype=np.float32),
                       jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x")))
    rs = jit(lambda v: v * 2, compiler="exla")(s)
    assert rs.sharding.spec == nx.P("x") and rs.tolist() == list(range(0, 16, 2))
    with pytest.raises(TypeError, match=r"^expected left operand to be a jax.Array with "
                                        r"values, got a JAX tracer .* nxpy.interop.to_jax"):
        jax.jit(lambda x: nx.add(x, 1))(a)
    with pytest.raises(TypeError, match=r"^argument 0 \(x\): expected it to be a jax.Array "
                                        r"with values, got a JAX tracer"):
        jax.jit(lambda x: f(x, x))(a)


def test_np_asarray_of_a_cpu_tensor_does_not_copy():
    """``np.asarray`` hands out the tensor's own host memory, read-only where it is a
    PJRT buffer's (as ``np.asarray`` of a CPU jax.Array is)."""
    t = nx.tensor(np.arange(4, dtype=np.float32))
    assert np.shares_memory(np.asarray(t), t.data)
    e = nx.tensor(np.arange(1 << 20, dtype=np.float32), backend="exla")
    a = np.asarray(e)
    assert np.shares_memory(a, np.asarray(e)) and not a.flags.writeable
    assert np.shares_memory(a, np.asarray(to_jax_array(e)))
    assert not np.shares_memory(np.asarray(e, copy=True), a)


def test_dlpack_both_ways():
    t = nx.tensor(np.arange(4, dtype=np.float32))
    a = np.from_dlpack(t)
    assert np.shares_memory(a, t.data)
    e = nx.tensor(np.arange(4, dtype=np.float32), backend="exla")
    j = jnp.from_dlpack(e)
    assert j.unsafe_buffer_pointer() == e.data.unsafe_buffer_pointer()
    assert e.__dlpack_device__() == e.data.__dlpack_device__()
    got = nx.from_dlpack(jnp.arange(3))
    assert got.backend.name == "exla" and got.tolist() == [0, 1, 2]
    assert nx.from_dlpack(np.arange(2, dtype=np.int64)).tolist() == [0, 1]
    with pytest.raises(TypeError, match="__dlpack__"):
        nx.from_dlpack([1, 2])


# ----------------------------------------------------------------------------------------
# nxpy functions inside JAX programs
# ----------------------------------------------------------------------------------------
def _nx_loss(params, x):
    h = nx.tanh(nx.dot(x, params["w"]) + params["b"])
    return {"loss": nx.mean(h ** 2), "h": h, "count": nx.tensor(3)}


def _jax_loss(params, x):
    h = jnp.tanh(x @ params["w"] + params["b"])
    return {"loss": jnp.mean(h ** 2), "h": h, "count": jnp.int32(3)}


def _params():
    return {"w": jnp.asarray(_x((4, 3))), "b": jnp.asarray(_x((3,), 1))}


def test_to_jax_eagerly_and_under_jit():
    from nxpy.interop import to_jax
    f = to_jax(_nx_loss)
    p, x = _params(), jnp.asarray(_x((5, 4), 2))
    for g in (f, jax.jit(f)):
        got, want = g(p, x), _jax_loss(p, x)
        assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            assert a.dtype == b.dtype
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6)
    text = jax.jit(f).lower(p, x).as_text()
    assert "custom_call" not in text          # embedded, compiled with the caller: no callback


def test_to_jax_under_grad():
    from nxpy.interop import to_jax
    f = to_jax(_nx_loss)
    p, x = _params(), jnp.asarray(_x((5, 4), 2))

    def through(fn):
        return lambda p, x: fn(p, x)["loss"] + 0.1 * jnp.sum(fn(p, x)["h"])
    want = jax.grad(through(_jax_loss), argnums=(0, 1))(p, x)
    for g in (jax.grad(through(f), argnums=(0, 1)), jax.jit(jax.grad(through(f), argnums=(0, 1)))):
        got = g(p, x)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=1e-7)
    v, gv = jax.value_and_grad(lambda p: f(p, x)["loss"])(p)
    np.testing.assert_allclose(float(v), float(_jax_loss(p, x)["loss"]), rtol=2e-6)


def test_to_jax_errors():
    from nxpy.interop import to_jax
    with pytest.raises(TypeError, match="to_jax: expected fn to be a callable"):
        to_jax(None)
    with pytest.raises(ValueError, match="to_jax: expected compiler to be 'exla'"):
        to_jax(lambda x: x, compiler="evaluator")
