"""JAX and nxpy in one training loop, both ways round (nxpy.interop, docs/interop.md).

1. An nxpy training step whose loss is nxpy and whose optimizer is optax's AdamW, called
   through ``from_jax``: ``jit(step)`` traces the loss, nxpy's ``value_and_grad`` gives the
   gradients, and optax's ``update`` and ``apply_updates`` are lowered by JAX and inlined
   into the same nxpy program (one compiled step).
2. The same nxpy loss inside a ``jax.jit`` training step through ``to_jax``: JAX
   differentiates it (its backward pass is nxpy's ``grad``) and optax updates the
   parameters in JAX.

Both print the loss of each step; ``python examples/optax_adamw.py [steps] [compiler]``
(``make optax-example``). tests/test_interop_optax.py checks the step against plain
JAX + optax.
"""
from __future__ import annotations

import sys

import numpy as np

import nxpy as nx
from nxpy import pjrt
from nxpy.defn import jit, value_and_grad
from nxpy.interop import from_jax, to_jax

pjrt.devices()                   # nxpy starts XLA first, so JAX shares its client
import jax  # noqa: E402 - after nxpy started XLA
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

LEARNING_RATE, WEIGHT_DECAY = 1e-2, 1e-4


def data(seed=0, n=64, d=8, h=16):
    """A regression problem (``x``, ``y``) and initial MLP parameters, as NumPy arrays."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = np.sin(x @ rng.standard_normal((d, 1))).astype(np.float32)
    params = {"w1": (rng.standard_normal((d, h)) / np.sqrt(d)).astype(np.float32),
              "b1": np.zeros(h, np.float32),
              "w2": (rng.standard_normal((h, 1)) / np.sqrt(h)).astype(np.float32),
              "b2": np.zeros(1, np.float32)}
    return params, x, y


def loss(params, x, y):
    """The model and its loss, in nxpy: a tanh MLP, mean squared error."""
    h = nx.tanh(nx.dot(x, params["w1"]) + params["b1"])
    return nx.mean((nx.dot(h, params["w2"]) + params["b2"] - y) ** 2)


def optimizer():
    return optax.adamw(LEARNING_RATE, weight_decay=WEIGHT_DECAY)


# ----------------------------------------------------------------------------------------
# 1. optax inside an nxpy step
# ----------------------------------------------------------------------------------------
def make_step(tx):
    """An nxpy training step: nxpy's loss and gradients, optax's update through
    ``from_jax``."""
    update, apply_updates = from_jax(tx.update), from_jax(optax.apply_updates)

    def step(params, opt_state, x, y):
        value, grads = value_and_grad(loss)(params, x, y)
        updates, opt_state = update(grads, opt_state, params)
        return value, apply_updates(params, updates), opt_state
    return step


def train(compiler="exla", steps=5, seed=0):
    """``steps`` AdamW steps of the nxpy step under ``jit(compiler=...)``: the losses, the
    final parameters and optimizer state (nxpy tensors)."""
    tx = optimizer()
    params, x, y = data(seed)
    opt_state = tx.init(params)               # optax's initial state, as JAX arrays
    to_nx = lambda tree: jax.tree_util.tree_map(lambda a: nx.tensor(np.asarray(a)), tree)  # noqa: E731
    params, opt_state, x, y = to_nx((params, opt_state, x, y))
    step = jit(make_step(tx), compiler=compiler)
    losses = []
    for _ in range(steps):
        value, params, opt_state = step(params, opt_state, x, y)
        losses.append(float(value.to_numpy()))
    return losses, params, opt_state


def jax_loss(p, x, y):
    """The loss written in ``jax.numpy``."""
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)


def train_in_jax(loss_fn, steps=5, seed=0):
    """``steps`` AdamW steps of a ``jax.jit`` step over ``loss_fn`` (gradients by
    ``jax.value_and_grad``, AdamW by optax in JAX)."""
    tx = optimizer()
    params, x, y = data(seed)

    @jax.jit
    def step(params, opt_state, x, y):
        value, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return value, optax.apply_updates(params, updates), opt_state
    opt_state, losses = tx.init(params), []
    for _ in range(steps):
        value, params, opt_state = step(params, opt_state, x, y)
        losses.append(float(value))
    return losses, params, opt_state


def train_jax(steps=5, seed=0):
    """The same training in plain JAX + optax (the loss written in ``jax.numpy``)."""
    return train_in_jax(jax_loss, steps, seed)


# ----------------------------------------------------------------------------------------
# 2. nxpy inside a jax.jit step
# ----------------------------------------------------------------------------------------
def train_to_jax(steps=5, seed=0):
    """The nxpy loss called from a ``jax.jit`` step through ``to_jax``; gradients by
    ``jax.value_and_grad`` (nxpy's backward pass), AdamW by optax in JAX."""
    return train_in_jax(to_jax(loss), steps, seed)


def main(argv):
    steps = int(argv[0]) if argv else 5
    compiler = argv[1] if len(argv) > 1 else "exla"
    nx_losses = train(compiler, steps)[0]
    jax_losses = train_to_jax(steps)[0]
    for i, (a, b) in enumerate(zip(nx_losses, jax_losses)):
        print(f"step {i}: nxpy step with optax (from_jax, {compiler}) loss {a:.6f}; "
              f"jax.jit step with the nxpy loss (to_jax) loss {b:.6f}")


if __name__ == "__main__":
    main(sys.argv[1:])
