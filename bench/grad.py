"""Gradient cases: nxpy's ``grad`` / ``value_and_grad`` against ``jax.jit(jax.grad(...))``.

Two programs, each timed twice (trace + lower to StableHLO, no XLA compile; and a call of
the compiled program, waiting for its results):

* the gradient of ``sum(chain(x))``, the 200-op elementwise chain of ``trace_lower``
  (``bench/single_device.py``), on f32[4][4];
* one training step of a 2-layer MLP on one device, the model of ``examples/train.py``
  (256 points in the plane, 32 tanh hidden units, 2 classes, softmax cross-entropy):
  ``value_and_grad`` of the loss with respect to the four weights, then the update.

Each case's note also gives both programs' sizes: StableHLO ops in the module handed to
XLA, and HLO instructions (fusion bodies included) in the executable XLA compiled from
it (nxpy: ``pjrt.hlo_text`` of the EXLA executable; JAX: ``.compile().as_text()``), so
a reader sees whether the gradient graphs differ and whether XLA got the same program.
"""
from __future__ import annotations

import re

import numpy as np

from .core import Pair, case
from .single_device import CHAIN_BLOCKS, chain

LOWER_AIM = 0.5
CALL_AIM = 1.2
# compiled calls: more, shorter rounds than the default (7 x 250 ms), so the two sides
# alternate finely (XLA's threads share the 2 cores with Python; the machine's speed drifts)
CALL_TIMING = dict(rounds=15, round_seconds=0.1)

MLP_BATCH, MLP_HIDDEN, MLP_CLASSES, MLP_RATE = 256, 32, 2, 0.5


# ----------------------------------------------------------------------------------------
# Program sizes
# ----------------------------------------------------------------------------------------
_MLIR_OP = re.compile(r"(?m)^\s*%[\w.#-]+(:\d+)? = ")
_HLO_OP = re.compile(r"(?m)^\s*(ROOT )?%?[\w.-]+ = ")


def mlir_ops(text: str) -> int:
    """Ops of a StableHLO module (one ``%name = ...`` line each; generic or pretty form)."""
    return len(_MLIR_OP.findall(text))


def hlo_ops(text: str) -> int:
    """Instructions of a compiled HLO module, in every computation (fusion bodies too)."""
    return len(_HLO_OP.findall(text))


def _sizes(nx_module, jax_lowered):
    """Both programs' sizes; nxpy's executable is the one the process-wide cache holds for
    its module text (the one ``jit`` compiled: the same text, lowered again)."""
    from nxpy import pjrt
    a, b = mlir_ops(nx_module), mlir_ops(jax_lowered.as_text())
    c, d = hlo_ops(pjrt.hlo_text(pjrt.compile(nx_module, [0]))), hlo_ops(
        jax_lowered.compile().as_text())
    return (f"program sizes, nxpy vs JAX: {a} vs {b} StableHLO ops ({a / b:.2f}x), "
            f"{c} vs {d} HLO instructions after XLA's optimizations ({c / d:.2f}x)")


def _check(nx_out, jax_out, rtol, atol=1e-6):
    import jax
    nx_leaves = nx_out if isinstance(nx_out, (tuple, list)) else [nx_out]
    jax_leaves = jax.tree_util.tree_leaves(jax_out)
    assert len(nx_leaves) == len(jax_leaves)
    for a, b in zip(nx_leaves, jax_leaves):
        np.testing.assert_allclose(a.to_numpy(), np.asarray(b), rtol=rtol, atol=atol)


def _call_pair(nf, nargs, jf, jargs, info):
    import jax
    import nxpy as nx

    def nxpy_side():
        nx.block_until_ready(nf(*nargs))

    def jax_side():
        jax.block_until_ready(jf(*jargs))

    return Pair(nxpy=nxpy_side, jax=jax_side, info=info)


# ----------------------------------------------------------------------------------------
# (a) The gradient of the 200-op chain
# ----------------------------------------------------------------------------------------
def _chain_loss(m):
    return lambda x: m.sum(chain(m, x))


def _chain_sides():
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.compilers.exla import to_mlir
    from nxpy.defn import grad

    template = nx.template((4, 4), "f32")
    spec = jax.ShapeDtypeStruct((4, 4), jnp.float32)

    # fresh functions on both sides, every call: no trace or lowering cache hit
    def nxpy_lower():
        return to_mlir(grad(_chain_loss(nx)), template)

    def jax_lower():
        return jax.jit(jax.grad(_chain_loss(jnp))).lower(spec)

    return nxpy_lower, jax_lower


def _chain_operand():
    return (np.arange(16, dtype=np.float32).reshape(4, 4) / 7 - 1)


@case("grad_trace_lower", f"trace+lower: grad of the {4 * CHAIN_BLOCKS}-op chain",
      aim=LOWER_AIM)
def grad_trace_lower(cfg):
    nxpy_lower, jax_lower = _chain_sides()
    assert "stablehlo.cosine" in nxpy_lower()
    assert "stablehlo.cosine" in jax_lower().as_text()
    _, _, info = _chain_compiled()
    return Pair(nxpy=nxpy_lower, jax=jax_lower,
                info="grad(lambda x: sum(chain(x))) on f32[4][4], no XLA compile. nxpy: "
                     "to_mlir(grad(f), template) (trace, differentiate, StableHLO text). "
                     "JAX: jax.jit(jax.grad(f)).lower(spec), .as_text() not included. "
                     + info)


def _chain_compiled():
    import jax
    import nxpy as nx
    from nxpy.defn import grad, jit
    nxpy_lower, jax_lower = _chain_sides()
    a = _chain_operand()
    nf = jit(grad(_chain_loss(nx)), compiler="exla")
    jf = jax.jit(jax.grad(_chain_loss(jax.numpy)))
    x, jx = nx.tensor(a, backend="exla"), jax.device_put(a, jax.devices()[0])
    _check(nf(x), jf(jx), rtol=1e-5)
    return (nf, (x,), jf, (jx,)), jax_lower(), _sizes(nxpy_lower(), jax_lower())


@case("grad_call", f"call: compiled grad of the {4 * CHAIN_BLOCKS}-op chain, 4x4 f32",
      aim=CALL_AIM, **CALL_TIMING)
def grad_call(cfg):
    (nf, nargs, jf, jargs), _, info = _chain_compiled()
    return _call_pair(nf, nargs, jf, jargs,
                      info="jit(grad(f), compiler='exla') on an EXLA tensor vs "
                           "jax.jit(jax.grad(f)) on a device array, waiting for the result "
                           "(nx.block_until_ready / jax.block_until_ready). " + info)


# ----------------------------------------------------------------------------------------
# (b) One training step of the MLP, one device
# ----------------------------------------------------------------------------------------
def _mlp_step(m, value_and_grad):
    """``step(w1, b1, w2, b2, x, y) -> (loss, w1', b1', w2', b2')`` with op namespace
    ``m`` (nxpy or jax.numpy)."""
    is_nx = m.__name__ == "nxpy"

    def dot(a, b):
        return m.dot(a, b)

    def loss(w1, b1, w2, b2, x, y):
        logits = dot(m.tanh(dot(x, w1) + b1), w2) + b2
        if is_nx:
            top = m.reduce_max(logits, axes=[1], keep_axes=True)
            total = m.sum(m.exp(logits - top), axes=[1], keep_axes=True)
        else:
            top = m.max(logits, axis=1, keepdims=True)
            total = m.sum(m.exp(logits - top), axis=1, keepdims=True)
        return m.sum((m.log(total) + top - logits) * y) / x.shape[0]

    def step(w1, b1, w2, b2, x, y):
        value, grads = value_and_grad(loss, argnums=(0, 1, 2, 3))(w1, b1, w2, b2, x, y)
        return (value,) + tuple(p - MLP_RATE * g for p, g in zip((w1, b1, w2, b2), grads))

    return step


def _mlp_arrays():
    rng = np.random.default_rng(0)
    h, n, c = MLP_HIDDEN, MLP_BATCH, MLP_CLASSES
    x = rng.normal(size=(n, 2)).astype(np.float32)
    y = np.eye(c, dtype=np.float32)[rng.integers(0, c, n)]
    return [rng.normal(0, 2.0, (2, h)).astype(np.float32), np.zeros(h, np.float32),
            (rng.normal(size=(h, c)) / np.sqrt(h)).astype(np.float32),
            np.zeros(c, np.float32), x, y]


def _mlp_sides():
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.compilers.exla import to_mlir
    from nxpy.defn import value_and_grad

    arrays = _mlp_arrays()
    templates = [nx.template(a.shape, "f32") for a in arrays]
    specs = [jax.ShapeDtypeStruct(a.shape, jnp.float32) for a in arrays]

    def nxpy_lower():
        return to_mlir(_mlp_step(nx, value_and_grad), *templates)

    def jax_lower():
        return jax.jit(_mlp_step(jnp, jax.value_and_grad)).lower(*specs)

    return nxpy_lower, jax_lower, arrays


def _mlp_compiled():
    import jax
    import nxpy as nx
    from nxpy.defn import jit, value_and_grad
    nxpy_lower, jax_lower, arrays = _mlp_sides()
    nf = jit(_mlp_step(nx, value_and_grad), compiler="exla")
    jf = jax.jit(_mlp_step(jax.numpy, jax.value_and_grad))
    nargs = [nx.tensor(a, backend="exla") for a in arrays]
    jargs = [jax.device_put(a, jax.devices()[0]) for a in arrays]
    _check(nf(*nargs), jf(*jargs), rtol=2e-5)
    return (nf, nargs, jf, jargs), _sizes(nxpy_lower(), jax_lower())


MLP_TITLE = (f"MLP training step (value_and_grad + update), {MLP_BATCH}x2 batch, "
             f"{MLP_HIDDEN} hidden")
MLP_NOTE = (f"the MLP of examples/train.py on one device: loss = softmax cross-entropy "
            f"of tanh(x @ w1 + b1) @ w2 + b2, x f32[{MLP_BATCH}][2], {MLP_HIDDEN} hidden "
            f"units, {MLP_CLASSES} classes; step = value_and_grad(loss, argnums=(0, 1, 2, "
            f"3)), then p - {MLP_RATE} * g for each weight; 6 arguments, 5 results")


@case("mlp_trace_lower", f"trace+lower: {MLP_TITLE}", aim=LOWER_AIM)
def mlp_trace_lower(cfg):
    nxpy_lower, jax_lower, _ = _mlp_sides()
    _, info = _mlp_compiled()
    return Pair(nxpy=nxpy_lower, jax=jax_lower,
                info=f"{MLP_NOTE}. nxpy: to_mlir(step, *templates); JAX: "
                     f"jax.jit(step).lower(*specs), .as_text() not included. " + info)


@case("mlp_call", f"call: compiled {MLP_TITLE}", aim=CALL_AIM, **CALL_TIMING)
def mlp_call(cfg):
    (nf, nargs, jf, jargs), info = _mlp_compiled()
    return _call_pair(nf, nargs, jf, jargs,
                      info=f"{MLP_NOTE}. jit(step, compiler='exla') on EXLA tensors vs "
                           f"jax.jit(step) on device arrays, waiting for the 5 results. "
                           + info)
