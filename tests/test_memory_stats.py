"""``Compiled.memory_stats()``: the device memory a compiled program reserves (XLA's buffer
assignment), against JAX's ``compiled.memory_analysis()`` of the same function: argument,
output and alias bytes equal (on a mesh, per device), and for a gradient with and without
checkpoint the temporary bytes too.
"""
import numpy as np
import pytest

import nxpy as nx
from nxpy import P
from nxpy.defn import checkpoint, compile, grad, jit

import jax  # after nxpy (conftest)
import jax.numpy as jnp
from jax.sharding import Mesh as JMesh, NamedSharding as JNS, PartitionSpec as JP


def _jax_stats(f, *args, **jit_opts):
    m = jax.jit(f, **jit_opts).lower(*args).compile().memory_analysis()
    return {"argument": m.argument_size_in_bytes, "output": m.output_size_in_bytes,
            "alias": m.alias_size_in_bytes}


def _sizes(stats):
    return {k: stats[k] for k in ("argument", "output", "alias")}


def test_one_device_like_jax():
    def f(x, w):
        return nx.tanh(nx.dot(x, w)), nx.sum(x)
    x, w = np.ones((64, 32), np.float32), np.ones((32, 16), np.float32)
    got = compile(f, nx.template((64, 32), "f32"), nx.template((32, 16), "f32"),
                  compiler="exla").memory_stats()
    assert set(got) == {"argument", "output", "alias", "temp", "generated_code"}
    assert all(isinstance(v, int) and v >= 0 for v in got.values())
    assert _sizes(got) == _jax_stats(lambda x, w: (jnp.tanh(x @ w), jnp.sum(x)), x, w)
    assert got["argument"] == (64 * 32 + 32 * 16) * 4


def test_donated_argument_aliases_like_jax():
    f = compile(lambda x: x * 2, nx.template((1000,), "f32"), compiler="exla",
                donate_argnums=0)
    got = f.memory_stats()
    assert got["alias"] == 4000
    assert _sizes(got) == _jax_stats(lambda x: x * 2, np.ones(1000, np.float32),
                                     donate_argnums=0)


def test_sharded_per_device_like_jax():
    mesh = nx.Mesh("mem", (2,), axis_names=("data",))
    x = nx.device_put(nx.iota((8, 6), type="f32"), nx.NamedSharding(mesh, P("data")))
    got = compile(lambda x: nx.sin(x) * 2, x, compiler="exla").memory_stats()
    assert got["argument"] == 4 * 6 * 4  # this device's half
    jm = JMesh(np.array(jax.devices()[:2]), ("data",))
    jx = jax.device_put(np.zeros((8, 6), np.float32), JNS(jm, JP("data")))
    assert _sizes(got) == _jax_stats(lambda x: jnp.sin(x) * 2, jx)


def test_gradient_and_checkpoint_like_jax():
    """The gradient of a chain of 8 layers, plain and with each layer checkpointed: the
    same bytes as JAX's (temp included: XLA's buffer assignment of the same program)."""
    def layer(h, w):
        return nx.tanh(nx.dot(h, w))

    def loss(ws, x, remat):
        step = checkpoint(layer) if remat else layer
        h = x
        for i in range(8):
            h = step(h, ws[i])
        return nx.sum(h)

    def jax_loss(ws, x, remat):
        def jlayer(h, w):
            return jnp.tanh(h @ w)
        step = jax.checkpoint(jlayer) if remat else jlayer
        h = x
        for i in range(8):
            h = step(h, ws[i])
        return jnp.sum(h)

    t = [nx.template((8, 256, 256), "f32"), nx.template((256, 256), "f32")]
    ws, x = np.zeros((8, 256, 256), np.float32), np.zeros((256, 256), np.float32)
    for remat in (False, True):
        got = compile(grad(lambda ws, x: loss(ws, x, remat)), *t, compiler="exla").memory_stats()
        m = jax.jit(jax.grad(lambda ws, x: jax_loss(ws, x, remat))).lower(ws, x).compile() \
            .memory_analysis()
        assert (got["temp"], _sizes(got)) == (m.temp_size_in_bytes, {
            "argument": m.argument_size_in_bytes, "output": m.output_size_in_bytes,
            "alias": m.alias_size_in_bytes}), f"remat={remat}"


def test_not_reported_is_a_clear_error():
    f = compile(lambda x: x + 1, nx.template((3,), "f32"), compiler="evaluator")
    with pytest.raises(NotImplementedError, match="does not report the memory"):
        f.memory_stats()
    assert jit(lambda x: x + 1, compiler="evaluator")(nx.tensor([1.0])).tolist() == [2.0]
