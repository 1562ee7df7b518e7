"""optax inside nxpy and nxpy inside JAX (issue 29), through examples/optax_adamw.py:
``optax.adamw(...).update`` and ``optax.apply_updates`` called through ``from_jax`` inside
an nxpy ``value_and_grad`` training step give, over 5 steps, the losses, parameters and
optimizer state of the same training in plain JAX + optax, on the Evaluator and EXLA; the
nxpy loss called through ``to_jax`` inside a ``jax.jit`` step does too.

Tolerance: 1e-5 relative (to each leaf's largest entry). The nxpy step computes the loss
and its gradients with nxpy's own graph, so XLA fuses (and rounds) the gradient sums
differently from JAX's, and the Evaluator's NumPy matmuls and ``tanh`` round their own way;
AdamW's first steps divide by ``sqrt(nu)``, which keeps relative errors of the gradient
at their size (measured: below 1e-6)."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import nxpy as nx  # noqa: F401 - nxpy first: it starts XLA (conftest)

from helpers import COMPILERS, close, load_example

STEPS = 5


@pytest.fixture(scope="module")
def example():
    return load_example("optax_adamw")


@pytest.fixture(scope="module")
def reference(example):
    return example.train_jax(STEPS)


#: JAX's and optax's state: its containers and dtypes, atol relative to each leaf's magnitude
_close = partial(close, rtol=1e-5, atol=1e-5, dtypes=True, tree=True, scaled=1e-30)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_adamw_through_from_jax_equals_jax_and_optax(example, reference, compiler):
    losses, params, opt_state = example.train(compiler, STEPS)
    want_losses, want_params, want_state = reference
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    assert losses[-1] < losses[0]
    _close(params, want_params)
    _close(opt_state, want_state)           # count, mu, nu; the empty states
    assert int(opt_state[0].count.to_numpy()) == STEPS


def test_nxpy_loss_through_to_jax_in_a_jax_jit_step(example, reference):
    losses, params, opt_state = example.train_to_jax(STEPS)
    want_losses, want_params, want_state = reference
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    _close(params, want_params)
    _close(opt_state, want_state)

