"""checkpoint (remat) and its policies against jax.checkpoint: the same gradients on the
Evaluator and EXLA, a module that recomputes, vmap, nested checkpoints, static arguments,
and the compiled memory of a deep MLP's gradient side by side with JAX's."""
from __future__ import annotations

import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt
from nxpy.compilers.exla import to_mlir
from nxpy.stablehlo import load
from nxpy.defn import (checkpoint, checkpoint_name, checkpoint_policies, compile, grad, jit,
                       jvp, remat, value_and_grad, vmap)

from helpers import COMPILERS, close, on

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name as j_checkpoint_name

CP, JCP = checkpoint_policies, jax.checkpoint_policies
POLICIES = {
    "none": (None, None),
    "nothing_saveable": (CP.nothing_saveable, JCP.nothing_saveable),
    "everything_saveable": (CP.everything_saveable, JCP.everything_saveable),
    "dots_saveable": (CP.dots_saveable, JCP.dots_saveable),
    "dots_with_no_batch_dims_saveable": (CP.dots_with_no_batch_dims_saveable,
                                         JCP.dots_with_no_batch_dims_saveable),
    "save_only_these_names": (CP.save_only_these_names("h"), JCP.save_only_these_names("h")),
}

rng = np.random.default_rng(0)
WS = [rng.normal(size=(4, 4)).astype(np.float32) * 0.7 for _ in range(3)]
X = rng.normal(size=(2, 4)).astype(np.float32)




def layer(w, x):
    h = checkpoint_name(nx.dot(x, w), "h")
    return nx.tanh(nx.sin(h) + h)


def j_layer(w, x):
    h = j_checkpoint_name(x @ w, "h")
    return jnp.tanh(jnp.sin(h) + h)


def loss_fn(policy):
    f = checkpoint(layer, policy=policy)

    def loss(ws, x):
        for w in ws:
            x = f(w, x)
        return nx.sum(x * x)
    return loss


def j_loss_fn(policy):
    f = jax.checkpoint(j_layer, policy=policy)

    def loss(ws, x):
        for w in ws:
            x = f(w, x)
        return jnp.sum(x * x)
    return loss


def plain_loss(ws, x):
    for w in ws:
        x = layer(w, x)
    return nx.sum(x * x)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_same_gradients_as_jax_and_as_without(name, compiler):
    policy, j_policy = POLICIES[name]
    ws, x = [nx.tensor(w) for w in WS], nx.tensor(X)
    got_v, got = jit(value_and_grad(loss_fn(policy), argnums=(0, 1)), compiler=compiler)(ws, x)
    want_v, want = jax.value_and_grad(j_loss_fn(j_policy), argnums=(0, 1))(WS, X)
    close(got_v, want_v, rtol=1e-5, atol=1e-6)
    for g, w in zip(got[0], want[0]):
        close(g, w, rtol=1e-4, atol=1e-5)
    close(got[1], want[1], rtol=1e-4, atol=1e-5)
    plain = jit(grad(plain_loss, argnums=(0, 1)), compiler=compiler)(ws, x)
    for g, w in zip(got[0], plain[0]):
        close(g, np.asarray(w.tolist()), rtol=1e-5, atol=1e-6)


def _count(f, op, *args):
    return to_mlir(f, *args).count(f'"stablehlo.{op}"')


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_the_module_recomputes(name):
    policy, _ = POLICIES[name]
    ws, x = [nx.tensor(w) for w in WS], nx.tensor(X)
    plain = value_and_grad(plain_loss)
    remat_ = value_and_grad(loss_fn(policy))
    n_plain = _count(plain, "tanh", ws, x)
    n_remat = _count(remat_, "tanh", ws, x)
    if name == "everything_saveable":
        assert n_remat == n_plain
        assert _count(remat_, "optimization_barrier", ws, x) >= 1
    else:
        assert n_remat > n_plain, (n_plain, n_remat)
    # the dot is recomputed unless the policy saves it
    dots = _count(remat_, "dot_general", ws, x) - _count(plain, "dot_general", ws, x)
    saves_dots = name in ("everything_saveable", "dots_saveable",
                          "dots_with_no_batch_dims_saveable", "save_only_these_names")
    assert (dots == 0) if saves_dots else (dots > 0), (name, dots)


def test_without_grad_it_is_f():
    f = checkpoint(lambda x: nx.sin(x) * 2)
    assert remat is checkpoint
    x = nx.tensor([0.5, 1.0])
    close(f(x), np.sin([0.5, 1.0]) * 2, rtol=1e-5, atol=1e-6)
    text = to_mlir(f, x)
    assert "optimization_barrier" not in text and text.count('"stablehlo.sine"') == 1


def test_prevent_cse_false_has_no_barrier():
    f = checkpoint(lambda x: nx.tanh(nx.tanh(x)), prevent_cse=False)
    text = to_mlir(value_and_grad(lambda x: nx.sum(f(x))), nx.tensor([0.5]))
    assert "optimization_barrier" not in text


@pytest.mark.parametrize("compiler", COMPILERS)
def test_nested_checkpoints(compiler):
    inner = checkpoint(lambda x: nx.sin(nx.sin(x)))
    outer = checkpoint(lambda x: inner(inner(x) * 2.0) + x)
    j_inner = jax.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
    j_outer = jax.checkpoint(lambda x: j_inner(j_inner(x) * 2.0) + x)
    got = jit(grad(lambda x: nx.sum(outer(outer(x)))), compiler=compiler)(nx.tensor(X))
    close(got, jax.grad(lambda x: jnp.sum(j_outer(j_outer(x))))(X), rtol=1e-5, atol=1e-6)
    # a second derivative through a checkpoint
    g2 = jit(grad(lambda x: nx.sum(grad(lambda y: nx.sum(outer(y)))(x))), compiler=compiler)
    j2 = jax.grad(lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(j_outer(y)))(x)))
    close(g2(nx.tensor(X)), j2(X), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_vmap(compiler):
    f = checkpoint(layer, policy=CP.dots_saveable)
    jf = jax.checkpoint(j_layer, policy=JCP.dots_saveable)
    w, xs = nx.tensor(WS[0]), nx.tensor(np.stack([X, X * 2, -X]))
    jw, jxs = WS[0], np.stack([X, X * 2, -X])
    # the gradient of a vmapped checkpoint: the checkpoint is batched and kept
    g = jit(grad(lambda w, xs: nx.sum(vmap(f, in_axes=(None, 0))(w, xs))), compiler=compiler)
    jg = jax.grad(lambda w, xs: jnp.sum(jax.vmap(jf, in_axes=(None, 0))(w, xs)))
    close(g(w, xs), jg(jw, jxs), rtol=1e-4, atol=1e-5)
    text = to_mlir(value_and_grad(lambda w, xs: nx.sum(vmap(f, in_axes=(None, 0))(w, xs))),
                   w, xs)
    assert text.count('"stablehlo.tanh"') > 1 and "optimization_barrier" in text
    # per-example gradients through a checkpoint
    pg = jit(vmap(grad(lambda w, x: nx.sum(f(w, x))), in_axes=(None, 0)), compiler=compiler)
    jpg = jax.vmap(jax.grad(lambda w, x: jnp.sum(jf(w, x))), in_axes=(None, 0))
    close(pg(w, xs), jpg(jw, jxs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_static_argnums_containers_and_captures(compiler):
    scale = nx.tensor(3.0)

    def block(p, n, x):
        for _ in range(n):
            x = nx.tanh(nx.dot(x, p["w"]) + p["b"])
        return {"y": x * scale, "z": nx.sum(x)}
    f = checkpoint(block, static_argnums=(1,))

    def jblock(p, n, x):
        for _ in range(n):
            x = jnp.tanh(x @ p["w"] + p["b"])
        return {"y": x * 3.0, "z": jnp.sum(x)}
    jf = jax.checkpoint(jblock, static_argnums=(1,))
    p = {"w": nx.tensor(WS[1]), "b": nx.tensor(np.float32([0.1, -0.2, 0.3, 0.0]))}
    jp = {"w": WS[1], "b": np.float32([0.1, -0.2, 0.3, 0.0])}

    def loss(p, x):
        o = f(p, 2, x)
        return nx.sum(o["y"]) + o["z"]

    def jloss(p, x):
        o = jf(p, 2, x)
        return jnp.sum(o["y"]) + o["z"]
    got = jit(grad(loss, argnums=(0, 1)), compiler=compiler)(p, nx.tensor(X))
    want = jax.grad(jloss, argnums=(0, 1))(jp, X)
    close(got[0]["w"], want[0]["w"], rtol=1e-4, atol=1e-5)
    close(got[0]["b"], want[0]["b"], rtol=1e-4, atol=1e-5)
    close(got[1], want[1], rtol=1e-4, atol=1e-5)


def test_errors():
    with pytest.raises(TypeError, match="expected a function"):
        checkpoint(3)
    with pytest.raises(TypeError, match="policy must be a function"):
        checkpoint(lambda x: x, policy="dots")
    with pytest.raises(TypeError, match="static_argnums"):
        checkpoint(lambda x: x, static_argnums="a")
    with pytest.raises(ValueError, match="out of range"):
        grad(lambda x: nx.sum(checkpoint(lambda x: x, static_argnums=(2,))(x)))(nx.tensor(1.0))
    with pytest.raises(TypeError, match="name must be a string"):
        checkpoint_name(nx.tensor(1.0), 3)


# ----------------------------------------------------------------------------------------
# Memory: the compiled gradient of a 64-layer tanh MLP (width 512, batch 64)
# ----------------------------------------------------------------------------------------
L, WIDTH, BATCH = 64, 512, 64


def _tanh_layer(m, sigmoid):
    return lambda w, x: m.tanh(m.dot(x, w))


def _residual_layer(m, sigmoid):
    def f(w, x):
        h = m.dot(x, w)
        return x + m.tanh(h) * sigmoid(h)
    return f


def _nx_stats(make, seg, ck):
    layer = make(nx, nx.sigmoid)

    def block(ws, x):
        for w in ws:
            x = layer(w, x)
        return x
    f = ck(block)

    def loss(ws, x):
        for i in range(0, L, seg):
            x = f(ws[i:i + seg], x)
        return nx.sum(x * x)
    c = compile(lambda ws, x: grad(loss)(ws, x), [nx.template((WIDTH, WIDTH), "f32")] * L,
                nx.template((BATCH, WIDTH), "f32"), compiler="exla")
    return pjrt.memory_stats(c._run.executable)


def _jax_stats(make, seg, ck):
    layer = make(jnp, jax.nn.sigmoid)

    def block(ws, x):
        for w in ws:
            x = layer(w, x)
        return x
    f = ck(block)

    def loss(ws, x):
        for i in range(0, L, seg):
            x = f(ws[i:i + seg], x)
        return jnp.sum(x * x)
    ws = [jax.ShapeDtypeStruct((WIDTH, WIDTH), jnp.float32)] * L
    m = jax.jit(jax.grad(loss)).lower(ws, jax.ShapeDtypeStruct((BATCH, WIDTH), jnp.float32))
    m = m.compile().memory_analysis()
    return {"temp": m.temp_size_in_bytes, "output": m.output_size_in_bytes,
            "argument": m.argument_size_in_bytes}


@pytest.mark.parametrize("make,seg", [(_tanh_layer, 1), (_tanh_layer, 8),
                                      (_residual_layer, 1)])
def test_memory_side_by_side_with_jax(make, seg):
    """XLA's buffer assignment for nxpy's gradient, plain and checkpointed (per layer and
    per block of 8 layers), is JAX's for the same program, byte for byte.

    For ``x = tanh(x @ w)`` neither side gains from a per-layer checkpoint on the CPU
    client: the plain gradient keeps one activation per layer, the very set a per-layer
    checkpoint saves as its inputs (and XLA stores them in the gradients' output buffers,
    leaving 256 KiB of temporaries), so the issue's 0.5x is out of reach for JAX too. A
    layer with more intermediates (``x + tanh(h) * sigmoid(h)``, ``h = x @ w``) is where
    checkpoint pays: its temporaries drop to about half, on both sides."""
    stats = {}
    # byte for byte on every supported jax: XLA 0.12 schedules the recomputation late only
    # when the cotangent is in the recomputation's barrier (JAX's single barrier)
    for ck, j_ck in [(lambda f: f, lambda f: f), (checkpoint, jax.checkpoint)]:
        got, want = _nx_stats(make, seg, ck), _jax_stats(make, seg, j_ck)
        for k in ("temp", "output", "argument"):
            assert got[k] == want[k], (seg, k, got, want)
        stats[ck is checkpoint] = got
    if make is _residual_layer:
        assert stats[True]["temp"] < 0.55 * stats[False]["temp"], stats


def test_the_importer_reads_jax_remat_modules():
    """JAX lowers its checkpoint's recomputation through stablehlo.optimization_barrier:
    the importer reads it as nx.optimization_barrier, and the program runs as JAX's."""
    jf = jax.checkpoint(j_layer)
    text = jax.jit(jax.value_and_grad(lambda x: jnp.sum(jf(WS[0], x)))).lower(X).as_text()
    assert "optimization_barrier" in text
    got_v, got_g = load(text).jit("exla")(nx.tensor(X))
    want_v, want_g = jax.value_and_grad(lambda x: jnp.sum(jf(WS[0], x)))(X)
    close(got_v, want_v, rtol=1e-5, atol=1e-6)
    close(got_g, want_g, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------
# optimization_barrier of several values (what the recomputation reads through)
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", [None, *COMPILERS])
def test_optimization_barrier_of_several_values(compiler):
    def f(a, b):
        x, n = nx.optimization_barrier((nx.sin(a) * b, nx.tensor(3)))
        (y,) = nx.optimization_barrier([x * 2.0])
        return y + n
    a, b = np.float32([0.5, -1.0]), np.float32([2.0, 3.0])
    want = np.sin(a) * b * 2 + 3
    close(on(compiler, f)(nx.tensor(a), nx.tensor(b)), want, rtol=1e-5, atol=1e-6)
    # the identity for grad, jvp and vmap
    g = (grad if compiler is None else lambda h: jit(grad(h), compiler=compiler))(
        lambda a, b: nx.sum(f(a, b)))(nx.tensor(a), nx.tensor(b))
    close(g, 2 * np.cos(a) * b, rtol=1e-5, atol=1e-6)
    _, t = jit(lambda a, b: jvp(lambda a: f(a, b), (a,), (a * 0.0 + 1.0,)),
               compiler=compiler or "evaluator")(nx.tensor(a), nx.tensor(b))
    close(t, 2 * np.cos(a) * b, rtol=1e-5, atol=1e-6)
    v = vmap(f, in_axes=(0, None))(nx.tensor(np.stack([a, 2 * a])), nx.tensor(b))
    close(v, np.stack([want, np.sin(2 * a) * b * 2 + 3]), rtol=1e-5, atol=1e-6)


def test_optimization_barrier_of_several_values_is_one_op_and_reads_back():
    text = to_mlir(lambda a, b: nx.optimization_barrier((a, b)), nx.template((2,), "f32"),
                   nx.template((), "s32"))
    assert text.count("stablehlo.optimization_barrier") == 1
    assert "(tensor<2xf32>, tensor<i32>) -> (tensor<2xf32>, tensor<i32>)" in text
    jtext = jax.jit(lambda a, b: jax.lax.optimization_barrier((a, b))).lower(
        np.float32([1, 2]), np.int32(3)).as_text()
    a, b = load(jtext).jit("exla")(nx.tensor([1.0, 2.0]), nx.tensor(3))
    assert a.tolist() == [1.0, 2.0] and b.tolist() == 3
    assert nx.optimization_barrier(()) == ()


def test_checkpoint_barriers_the_cotangent_with_the_inputs():
    layer = checkpoint(lambda w, x: nx.tanh(nx.dot(x, w)))
    text = to_mlir(grad(lambda w, x: nx.sum(layer(w, x))), nx.template((3, 3), "f32"),
                   nx.template((2, 3), "f32"))
    (line,) = [ln for ln in text.splitlines() if "optimization_barrier" in ln]
    # w, x and the cotangent of the layer's output, in one barrier
    assert "(tensor<3x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)" in line
